/* exec: the first image calls before_exec and replaces itself with a new
 * image (itself again, or the program named in argv[1]) that calls
 * after_exec.  The first image's main frame is never closed.
 * Usage: execer [PROGRAM]   (PROGRAM defaults to this executable) */
#include "prog.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define AFTER_EXEC_FLAG "--after-exec"
#define AFTER_CALLS 5

static volatile int sink;

COUNTED void before_exec(void)
{
	sink++;
}

COUNTED void after_exec(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	const char *target = argc > 1 ? argv[1] : self;
	ssize_t len;

	if (argc > 1 && strcmp(argv[1], AFTER_EXEC_FLAG) == 0) {
		for (int i = 0; i < AFTER_CALLS; i++)
			after_exec(i);
		return 0;
	}
	/* the real path, not /proc/self/exe, so the new image's comm and
	 * mapping name are "execer" like the first one's */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		perror("execer: readlink /proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	before_exec();
	fflush(stdout);
	execl(target, target, AFTER_EXEC_FLAG, (char *)NULL);
	fprintf(stderr, "execer: cannot exec '%s'\n", target);
	return 127;
}
