/* Short-lived blocks between system calls, for record --syscalls with
 * --mem-fold: argv[1] rounds (default 1000) of malloc(40) in churn, a
 * getppid(), free; then 5 blocks of 24 bytes kept by keep() and a
 * getppid() after each.  Each syscall is made through syscall(2), so that
 * the C library cannot answer it from a cache. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile kept[5];

__attribute__((noinline)) static void *churn(void)
{
	return malloc(40);
}

__attribute__((noinline)) static void keep(int i)
{
	kept[i] = malloc(24);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;

	for (int i = 0; i < rounds; i++) {
		void *volatile p = churn();

		syscall(SYS_getppid);
		free(p);
	}
	for (int i = 0; i < 5; i++) {
		keep(i);
		syscall(SYS_getppid);
	}
	return 0;
}
