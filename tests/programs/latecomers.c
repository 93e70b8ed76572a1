/* Threads and a child process that start late: main calls before() once,
 * prints "ready <pid>" and waits for a line on standard input (or its
 * end), meanwhile a test may change the program's surroundings (remove
 * the profiler's session directory, say).  Then 3 threads each call
 * late_work() 50 times, and a forked child calls child_work() 10 times and
 * ends with _exit(0).  When all are waited for, main calls after() once,
 * prints "done" and exits 7. */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define LATE_THREADS 3
#define LATE_CALLS 50
#define CHILD_CALLS 10
#define EXIT_STATUS 7

static volatile int sink;

COUNTED void before(void)
{
	sink++;
}

COUNTED void after(void)
{
	sink--;
}

COUNTED void late_work(int i)
{
	sink += i;
}

COUNTED void child_work(int i)
{
	sink += i;
}

COUNTED void *late_thread(void *arg)
{
	for (int i = 0; i < LATE_CALLS; i++)
		late_work(i);
	return arg;
}

int main(void)
{
	pthread_t tids[LATE_THREADS];
	char line[64];
	int status;
	pid_t child;

	before();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0'; /* the end of the input: go on as well */
	for (int i = 0; i < LATE_THREADS; i++) {
		if (pthread_create(&tids[i], NULL, late_thread, NULL)) {
			fprintf(stderr, "latecomers: cannot create thread %d\n", i);
			return 1;
		}
	}
	for (int i = 0; i < LATE_THREADS; i++)
		pthread_join(tids[i], NULL);
	child = fork();
	if (child < 0) {
		perror("latecomers: fork");
		return 1;
	}
	if (child == 0) {
		for (int i = 0; i < CHILD_CALLS; i++)
			child_work(i);
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "latecomers: the child failed\n");
		return 1;
	}
	after();
	printf("done\n");
	return EXIT_STATUS;
}
