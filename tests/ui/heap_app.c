/* The heap view's test program (tests/ui/test_serve.py, group heap): a
 * known leak, a clean site and one double free, spread over time so that
 * the growth chart has samples.  Recorded with --memory --keep-alive (the
 * second free is kept from libc, so the program survives it):
 *   leaky():   100 x malloc(48), never freed, one every 2 ms
 *   tidy():    50 x malloc(24), each freed at once
 *   victim():  1 x malloc(40); release() frees it twice: one double free
 * Exit status 0. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEAKED 100
#define LEAK_SIZE 48
#define TIDY 50
#define TIDY_SIZE 24
#define VICTIM_SIZE 40

#define KEEP __attribute__((noinline, noipa, used))
#define BARRIER() __asm__ volatile("" ::: "memory")

void *volatile kept[LEAKED];

KEEP void leaky(int i)
{
	char *p = malloc(LEAK_SIZE);

	if (p)
		memset(p, i, LEAK_SIZE);
	kept[i] = p;
	BARRIER();
}

KEEP void tidy(int i)
{
	char *volatile p = malloc(TIDY_SIZE);

	if (p)
		p[0] = (char)i;
	BARRIER();
	free(p);
	BARRIER();
}

KEEP void *victim(void)
{
	void *p = malloc(VICTIM_SIZE);

	BARRIER();
	return p;
}

KEEP void release(void *p)
{
	free(p);
	BARRIER();
}

int main(void)
{
	struct timespec pause = { 0, 2000000 };
	void *v;

	for (int i = 0; i < LEAKED; i++) {
		leaky(i);
		if (i % 2 == 0)
			tidy(i / 2);
		nanosleep(&pause, NULL);
	}
	v = victim();
	release(v);
	release(v);
	return 0;
}
