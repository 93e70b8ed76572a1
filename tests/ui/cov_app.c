/* The Coverage tab's sample (tests/ui/test_serve.py, group coverage):
 * built with -O0 -finstrument-functions, run without arguments.  Known
 * outcome: main, sort_some, fact (recursive: 4 calls) and cmp_ints (the
 * qsort callback: a call outside the static graph, from sort_some) run;
 * never_called and tiny_unused, which only never_called calls, never run.
 * Functions 4/6, static calls 3/5 (fact->fact, main->sort_some, main->fact
 * ran; main->never_called, never_called->tiny_unused did not). */
#include <stdio.h>
#include <stdlib.h>

static int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int fact(int n)
{
	return n <= 1 ? 1 : n * fact(n - 1);
}

static int tiny_unused(int n)
{
	return n + 1;
}

/* larger than tiny_unused: first in the never-run list */
static int never_called(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += i * i % 7 + tiny_unused(i);
	printf("never %d\n", s);
	return s;
}

static int sort_some(void)
{
	int v[5] = { 5, 3, 4, 1, 2 };

	qsort(v, 5, sizeof(v[0]), cmp_ints);
	return v[0];
}

int main(int argc, char **argv)
{
	(void)argv;
	if (sort_some() != 1)
		return 1;
	if (argc > 5)
		never_called(argc);
	return fact(4) == 24 ? 0 : 1;
}
