/* Block requests with known counts, for the kernel-event layer.  Run on a
 * file of a block-device file system (the tests use a fresh ext4 on a loop
 * device): sync_writes opens PATH with O_DSYNC | O_CREAT | O_TRUNC and makes
 * K (default 8) writes of one 4096-byte block each; flush then calls fsync.
 * O_DSYNC makes each write return only when its block is on the device, so
 * each issues exactly one 4096-byte write request (rwbs "WS") from inside
 * its write(2), in the program's context (block:block_rq_issue; no
 * block:block_rq_insert, as the loop device's queue has no I/O scheduler),
 * and waits for it and for the journal commit (two switch-outs in state D).
 * Lower bounds only for the rest: on a fresh mount, open reads cold metadata
 * (more requests issued, some inserted, in the program's context); the
 * journal writes and cache flushes are issued by jbd2 and a kworker, and the
 * completions (block:block_rq_complete) run in softirq context, so none of
 * them is the program's.  flush issues no request (it waits once for a
 * commit).
 * Usage: kern_block PATH [K] */
#include "prog.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 8
#define BLOCK_SIZE 4096

static int blocks = BLOCKS;
static char block[BLOCK_SIZE];

/* returns the open file, or -1 when it cannot be opened or a write fails */
COUNTED int sync_writes(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	for (int i = 0; i < blocks; i++) {
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

COUNTED int flush(int fd)
{
	return fsync(fd);
}

int main(int argc, char **argv)
{
	int fd, bad;

	if (argc < 2)
		return 2;
	if (argc > 2)
		blocks = atoi(argv[2]);
	if (blocks < 0)
		return 2;
	memset(block, 'b', sizeof(block));
	fd = sync_writes(argv[1]);
	if (fd < 0)
		return 1;
	bad = flush(fd);
	return close(fd) || bad ? 1 : 0;
}
