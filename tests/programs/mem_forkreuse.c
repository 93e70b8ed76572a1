/* Memory tracer: a fork whose parent goes on with its heap before the child
 * makes its first heap operation, as a shell does around $(...).  Before
 * the fork, main's before() mallocs 4 x 48 bytes (held) and 1 x 32 (freed
 * at once: the allocator keeps that chunk for the next malloc(32)).  After
 * the fork the parent's after() mallocs 32 bytes (that chunk, in the
 * parent's heap) and frees held[0]; only then does the child, which waited
 * on a pipe, run child_work(): it mallocs 32 bytes (the same chunk, which
 * is free in the child's heap), frees held[0] (live in the child's heap)
 * and held[1], and _exit(0)s.  The parent collects it with waitpid, frees
 * what it holds and exits 0.  So the child inherits exactly the 4 blocks
 * of 48 bytes, its malloc overlaps nothing and its frees are legal; it ends
 * with 2 x 48 and 1 x 32 unfreed, the parent with nothing. */
#include "prog.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define HELD 4
#define HELD_SIZE 48
#define SMALL 32

static void *volatile held[HELD];
static void *volatile small;

COUNTED void before(void)
{
	void *volatile p;

	for (int i = 0; i < HELD; i++)
		held[i] = malloc(HELD_SIZE);
	p = malloc(SMALL);
	free(p);
	BARRIER();
}

COUNTED void after(void)
{
	small = malloc(SMALL);
	free(held[0]);
	held[0] = NULL;
	BARRIER();
}

COUNTED void child_work(void)
{
	small = malloc(SMALL);
	free(held[0]);
	free(held[1]);
	BARRIER();
}

COUNTED void parent_end(void)
{
	free(small);
	for (int i = 0; i < HELD; i++)
		free(held[i]);
	BARRIER();
}

int main(void)
{
	int go[2], status = 0;
	char c = 0;
	pid_t pid;

	if (pipe(go))
		return 1;
	before();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		child_work();
		_exit(0);
	}
	close(go[0]);
	after();
	if (write(go[1], &c, 1) != 1)
		return 1;
	close(go[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	parent_end();
	return 0;
}
