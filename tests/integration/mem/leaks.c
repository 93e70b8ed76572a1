/* Leaks at several call sites, for test_memory.py to hold layerprof's
 * unfreed-at-exit sites against valgrind --leak-check=full and heaptrack:
 *   leak_a():      10 x malloc(100), dropped         1000 bytes lost
 *   leak_b():      3 x calloc(7, 8), dropped          168 bytes lost
 *   leak_c():      malloc(10) grown by realloc to 1000, dropped: 1000 bytes
 *   leak_strdup(): 5 x strdup("hello world"), dropped: 60 bytes, charged
 *                  to leak_strdup (the C library's frame is skipped)
 *   tidy():        20 x malloc(64), each freed
 * Exit status 0. */
#include <stdlib.h>
#include <string.h>

void *volatile sink;

__attribute__((noinline)) void leak_a(void)
{
	for (int i = 0; i < 10; i++)
		sink = malloc(100);
	sink = NULL;
}

__attribute__((noinline)) void leak_b(void)
{
	for (int i = 0; i < 3; i++)
		sink = calloc(7, 8);
	sink = NULL;
}

__attribute__((noinline)) void leak_c(void)
{
	char *p = malloc(10);

	p = realloc(p, 1000);
	sink = p;
	sink = NULL;
}

__attribute__((noinline)) void leak_strdup(void)
{
	for (int i = 0; i < 5; i++)
		sink = strdup("hello world");
	sink = NULL;
}

__attribute__((noinline)) void tidy(void)
{
	for (int i = 0; i < 20; i++) {
		sink = malloc(64);
		free(sink);
	}
	sink = NULL;
}

int main(void)
{
	leak_a();
	leak_b();
	leak_c();
	leak_strdup();
	tidy();
	return 0;
}
