/* IPC: a parent and its child send a 64-byte message to and fro through
 * two pipes 20 000 times; prints the rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 20000
#define MSG 64

int main(void)
{
	int up[2], down[2], status;
	char msg[MSG] = "ping";
	pid_t pid;

	if (pipe(up) || pipe(down))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < ROUNDS; i++)
			if (read(down[0], msg, MSG) != MSG || write(up[1], msg, MSG) != MSG)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++)
		if (write(down[1], msg, MSG) != MSG || read(up[0], msg, MSG) != MSG)
			return 1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	printf("%d round trips of %d bytes\n", ROUNDS, MSG);
	return 0;
}
