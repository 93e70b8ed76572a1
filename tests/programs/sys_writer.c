/* Syscalls with exact counts: `writer` makes exactly 100 write calls of
 * 1024 bytes to /dev/null, and `opener` one open of a missing path (fails
 * with ENOENT).  No stdio, so these are the program's only write calls. */
#include "prog.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define WRITES 100
#define WRITE_SIZE 1024

static char buf[WRITE_SIZE];

COUNTED int writer(int fd)
{
	int bad = 0;

	for (int i = 0; i < WRITES; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			bad++;
	return bad;
}

COUNTED int opener(void)
{
	int fd = open("/nonexistent/layerprof-test", O_RDONLY);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == ENOENT ? 0 : 1;
}

int main(void)
{
	int fd = open("/dev/null", O_WRONLY);
	int bad;

	if (fd < 0)
		return 2;
	bad = writer(fd);
	bad += opener();
	close(fd);
	return bad ? 1 : 0;
}
