/* The memory tracer's benchmark program: PAIRS malloc/free pairs (default
 * 2 000 000) over a window of 64 live blocks of 16 to 143 bytes; each
 * allocation two calls deep (main -> step -> make), so that stacks have
 * something to walk.  Built with frame pointers by bench/memory.
 * usage: memloop [PAIRS] */
#include <stdlib.h>

#define WINDOW 64

static void *window[WINDOW];

__attribute__((noinline)) static void *make(unsigned long i)
{
	char *p = malloc(16 + ((i * 7) & 127));

	if (p)
		p[0] = (char)i;
	return p;
}

__attribute__((noinline)) static void step(unsigned long i)
{
	unsigned slot = i & (WINDOW - 1);

	free(window[slot]);
	window[slot] = make(i);
	__asm__ __volatile__("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;

	/* the window first, so that every step is one free and one malloc */
	for (unsigned long i = 0; i < WINDOW; i++)
		window[i] = make(i);
	for (unsigned long i = 0; i < n; i++)
		step(i);
	for (unsigned long i = 0; i < WINDOW; i++)
		free(window[i]);
	return 0;
}
