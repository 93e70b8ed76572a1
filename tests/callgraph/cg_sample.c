/* A program whose static call graph is known exactly, for the tests of
 * `layerprof callgraph` and `coverage` (tests/integration/test_callgraph.py):
 * direct and mutual recursion, a tail call, calls through a table of
 * function pointers, a qsort callback, functions never called, one whose
 * address is only stored in data, and calls to libc through the PLT.
 *
 * Each argument runs one part, chosen by its first letter, so that a trace
 * holds an exactly known set of functions:
 *   f fact(5)   p ping(3)   t tail_a(1)   d dispatch(0, 2, 6, 7)
 *   s do_sort(SORT_N)   m measure(the argument)
 * It prints one line per part, then "compares N" (the comparator's calls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls stay calls at every -O level: gcc's noipa also stops clones
 * (fact.constprop.0) that would rename the functions. */
#if defined(__clang__)
#define KEEP __attribute__((noinline))
#else
#define KEEP __attribute__((noipa))
#endif

#define SORT_N 8

volatile int sink;
static unsigned compares;

/* direct recursion: the call is not in tail position (the store after it) */
KEEP int fact(int n)
{
	int r;

	if (n <= 1)
		return 1;
	r = fact(n - 1);
	sink = r;
	return n * r;
}

/* mutual recursion */
KEEP int pong(int n);

KEEP int ping(int n)
{
	int r;

	if (n <= 0)
		return 0;
	r = pong(n - 1);
	sink = r;
	return r + 1;
}

KEEP int pong(int n)
{
	int r;

	if (n <= 0)
		return 0;
	r = ping(n - 1);
	sink = r;
	return r + 2;
}

/* a tail call: with optimisation, a jump to tail_b */
KEEP int tail_b(int x)
{
	sink = x;
	return x * 3;
}

KEEP int tail_a(int x)
{
	return tail_b(x + 1);
}

/* reached only through the table */
static KEEP int op_add(int a, int b)
{
	sink = a;
	return a + b;
}

static KEEP int op_sub(int a, int b)
{
	sink = b;
	return a - b;
}

static KEEP int op_mul(int a, int b)
{
	sink = a + b;
	return a * b;
}

static int (*const ops[])(int, int) = { op_add, op_sub, op_mul };

/* two indirect call sites */
KEEP int dispatch(int i, int j, int a, int b)
{
	int r = ops[i](a, b);

	sink = r;
	r = ops[j](r, b);
	sink = r;
	return r;
}

/* qsort's callback */
static KEEP int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	compares++;
	return (x > y) - (x < y);
}

KEEP int do_sort(int n)
{
	static const int init[SORT_N] = { 5, 3, 8, 1, 9, 2, 7, 4 };
	int v[SORT_N];

	memcpy(v, init, sizeof(v));
	qsort(v, (size_t)n, sizeof(v[0]), cmp_ints);
	return v[0] * 10 + v[n - 1];
}

KEEP int measure(const char *s)
{
	puts(s);
	return (int)strlen(s);
}

/* never called; kept by the attribute though static */
static __attribute__((used)) KEEP int unused_static(int x)
{
	sink = x;
	return x + 1;
}

/* never called, global (not exported: a program's symbols are not) */
KEEP int unused_global(int x)
{
	int i, r = 0;

	for (i = 0; i < x; i++) {
		sink = i;
		r += i * x;
	}
	return r;
}

/* never called: its address is only stored in data */
static KEEP void only_in_data(void)
{
	sink = 42;
}

void (*keep_ptr)(void) = only_in_data;

/* calls, not tail calls: the store after them */
KEEP int run_step(const char *arg)
{
	int r = -1;

	if (arg[0] == 'f')
		r = fact(5);
	else if (arg[0] == 'p')
		r = ping(3);
	else if (arg[0] == 't')
		r = tail_a(1);
	else if (arg[0] == 'd')
		r = dispatch(0, 2, 6, 7);
	else if (arg[0] == 's')
		r = do_sort(SORT_N);
	else if (arg[0] == 'm')
		r = measure(arg);
	sink = r;
	return r;
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		printf("%c %d\n", argv[i][0], run_step(argv[i]));
	printf("compares %u\n", compares);
	return 0;
}
