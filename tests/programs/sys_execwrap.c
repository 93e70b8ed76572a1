/* An instrumented program that replaces itself: main calls `run`, which
 * execs the program named by its arguments (the tests give sys_slowstart,
 * whose loader and .preinit_array run long before its runtime's ring).
 * Every system call the new image makes belongs to the new image's stream,
 * none to this one's (whose last call is the execve).
 * Usage: sys_execwrap PROGRAM [ARGS...] */
#include "prog.h"

#include <unistd.h>

COUNTED int run(char **argv)
{
	execv(argv[0], argv);
	return 127;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	return run(argv + 1);
}
