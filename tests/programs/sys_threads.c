/* Reads from two threads: thread A's `reader` reads /dev/zero 30 times, thread
 * B's 50 times, 512 bytes each; main joins both and reads nothing. */
#include "prog.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#define READ_SIZE 512

struct job {
	int fd;
	int reads;
	int bad;
};

COUNTED void reader(struct job *j)
{
	char buf[READ_SIZE];

	for (int i = 0; i < j->reads; i++)
		if (read(j->fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			j->bad++;
}

COUNTED void *thread_main(void *arg)
{
	reader(arg);
	return NULL;
}

int main(void)
{
	struct job a = { -1, 30, 0 }, b = { -1, 50, 0 };
	pthread_t ta, tb;

	a.fd = open("/dev/zero", O_RDONLY);
	b.fd = open("/dev/zero", O_RDONLY);
	if (a.fd < 0 || b.fd < 0)
		return 2;
	/* one after the other: the threads' tids are in a known order */
	if (pthread_create(&ta, NULL, thread_main, &a))
		return 2;
	pthread_join(ta, NULL);
	if (pthread_create(&tb, NULL, thread_main, &b))
		return 2;
	pthread_join(tb, NULL);
	close(a.fd);
	close(b.fd);
	return a.bad || b.bad ? 1 : 0;
}
