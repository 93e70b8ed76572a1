/* Preloaded by bench/run into a tracer and the program it runs: at exit,
 * each process appends its own CPU time and peak RSS to $LP_BENCH_RUSAGE,
 * so that the recorder's cost can be told apart from the program's.  The
 * peak RSS is VmHWM, that of the process image: ru_maxrss survives execve,
 * so a program forked by a large recorder would report the recorder's. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* VmHWM in KiB, or -1. */
static long image_hwm_kb(void)
{
	char buf[4096], *p;
	long kb = -1;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nVmHWM:");
	if (p)
		kb = strtol(p + 7, NULL, 10);
	return kb;
}

static void __attribute__((destructor)) probe_report(void)
{
	const char *path = getenv("LP_BENCH_RUSAGE");
	char comm[64] = "?", line[256];
	struct rusage ru;
	long hwm = image_hwm_kb();
	int fd, n;

	if (!path || !*path || getrusage(RUSAGE_SELF, &ru))
		return;
	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (int)read(fd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(fd);
	}
	/* one line per process: pid comm user_us sys_us maxrss_kb */
	n = snprintf(line, sizeof(line), "%d %s %ld %ld %ld\n", (int)getpid(), comm,
	             (long)ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
	             (long)ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, hwm >= 0 ? hwm : ru.ru_maxrss);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing to report to */
	}
	close(fd);
}
