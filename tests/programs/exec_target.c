/* The second program for execer: run as `exec_target --after-exec`, it calls
 * after_exec five times, like execer's own second image. */
#include "prog.h"

#include <stdio.h>
#include <string.h>

#define AFTER_EXEC_FLAG "--after-exec"
#define AFTER_CALLS 5

static volatile int sink;

COUNTED void after_exec(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], AFTER_EXEC_FLAG) != 0) {
		fprintf(stderr, "usage: exec_target " AFTER_EXEC_FLAG "\n");
		return 2;
	}
	for (int i = 0; i < AFTER_CALLS; i++)
		after_exec(i);
	return 0;
}
