/* Another process for record --kernel-system, with an exact count of
 * voluntary switches: it opens FIFO for reading (which waits for a
 * writer), waits in read() for one byte, then makes N (default 5)
 * nanosleep system calls of 1 ms, each one switch-out in state S, and
 * exits.  Started before a recording and released during it, its life
 * after the read lies inside the recording: exactly N switch-outs in
 * state S (its last switch-out, at its exit, is in state Z or X).
 * Usage: kern_other FIFO [N] */
#include "prog.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLEEPS 5
#define SLEEP_NS 1000000L /* 1 ms */

int main(int argc, char **argv)
{
	struct timespec t = { 0, SLEEP_NS };
	int n = argc > 2 ? atoi(argv[2]) : SLEEPS, fd, bad = 0;
	char c;

	if (argc < 2 || n < 0)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || read(fd, &c, 1) != 1)
		return 1;
	for (int i = 0; i < n; i++)
		if (syscall(SYS_nanosleep, &t, NULL))
			bad++;
	return bad ? 1 : 0;
}
