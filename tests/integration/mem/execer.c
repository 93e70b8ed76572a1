/* exec and the heap, for test_memory.py:
 *   execer a   before_exec() keeps 5 x malloc(100), then the process
 *              execs itself as "execer b" (those blocks go with the image)
 *   execer b   after_exec() keeps 2 x malloc(50); exit status 0
 * So: 5 blocks dropped at exec, 2 unfreed at exit. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile kept[5];

__attribute__((noinline)) void before_exec(void)
{
	for (int i = 0; i < 5; i++)
		kept[i] = malloc(100);
}

__attribute__((noinline)) void after_exec(void)
{
	for (int i = 0; i < 2; i++)
		kept[i] = malloc(50);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "a")) {
		char *args[] = { argv[0], "b", NULL };

		before_exec();
		execv("/proc/self/exe", args);
		return 1;
	}
	after_exec();
	return 0;
}
