/* What a kernel lets layerprof use, tried the way layerprof uses it: one
 * JSON object on stdout, one member per facility, each true, or the error
 * that refused it. Cross-built for the test guests (tests/guest); it runs on
 * any Linux.
 *
 *   ptrace       PTRACE_TRACEME child stopped and resumed
 *   perf_sw      perf_event_open of a software counter (task clock)
 *   perf_clockid the same with use_clockid = CLOCK_MONOTONIC
 *   perf_hw_cycles, perf_hw_instructions  hardware counters: a PMU, and
 *                which of the two generic events it counts
 *   tracepoint   perf_event_open of raw_syscalls:sys_enter (tracefs id)
 *   uprobe_pmu   perf_event_open of a uprobe on a function of this program
 *   uprobe_pmu_arm_state  (32-bit ARM built for Thumb only) the same on a
 *                function built for the ARM instruction set
 *   uprobe_tracefs  tracefs uprobe_events is there and writable
 *   bpf          bpf(BPF_PROG_LOAD) of a tracepoint program
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int first = 1;

static void member(const char *name, int err)
{
	printf("%s\"%s\": ", first ? "" : ", ", name);
	first = 0;
	if (err == 0)
		printf("true");
	else
		printf("\"%s\"", strerror(err));
}

static int perf_open(struct perf_event_attr *attr)
{
	int fd = (int)syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int try_ptrace(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(1);
		raise(SIGSTOP);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return errno;
	if (!WIFSTOPPED(status)) {
		return EPERM;
	}
	if (ptrace(PTRACE_CONT, pid, NULL, NULL))
		return errno;
	if (waitpid(pid, &status, 0) != pid)
		return errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : EPERM;
}

/* a counting event of this thread; clockid >= 0: its times on that clock */
static int counter(uint32_t type, uint64_t config, int clockid)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	attr.exclude_kernel = type == PERF_TYPE_HARDWARE;
	if (clockid >= 0) {
		attr.use_clockid = 1;
		attr.clockid = clockid;
	}
	return perf_open(&attr);
}

/* a number from a file of one line (tracefs ids, PMU types) */
static int read_number(const char *path, long *out)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return errno;
	ok = fscanf(f, "%ld", out) == 1;
	fclose(f);
	return ok ? 0 : EINVAL;
}

static int tracepoint(void)
{
	struct perf_event_attr attr;
	long id;
	int err = read_number("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", &id);

	if (err)
		err = read_number("/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id", &id);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)id;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_RAW;
	return perf_open(&attr);
}

/* the file offset of the code at fn in this program, from /proc/self/maps */
static int code_offset(uintptr_t fn, char *path, size_t size, uint64_t *off)
{
	uintptr_t want = fn & ~(uintptr_t)1; /* bit 0: the Thumb bit on 32-bit ARM */
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char file[4096];

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end, &pgoff, file) == 4 && want >= start &&
		    want < end) {
			fclose(f);
			snprintf(path, size, "%s", file);
			*off = want - start + pgoff;
			return 0;
		}
	}
	fclose(f);
	return ENOENT;
}

static int uprobe_pmu(uintptr_t fn)
{
	struct perf_event_attr attr;
	char path[4096];
	uint64_t off = 0;
	long type;
	int err = read_number("/sys/bus/event_source/devices/uprobe/type", &type);

	if (err)
		return err;
	err = code_offset(fn, path, sizeof(path), &off);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t)path;
	attr.config2 = off;
	return perf_open(&attr);
}

#if defined(__arm__) && defined(__thumb__)
__attribute__((target("arm"), noinline)) static int arm_state(int x)
{
	return x + 1;
}
#endif

static int uprobe_tracefs(void)
{
	if (access("/sys/kernel/tracing/uprobe_events", W_OK) == 0)
		return 0;
	return errno;
}

static int bpf_tracepoint(void)
{
	struct bpf_insn insns[2];
	union bpf_attr attr;
	int fd;

	memset(insns, 0, sizeof(insns));
	insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K; /* r0 = 0 */
	insns[0].dst_reg = BPF_REG_0;
	insns[1].code = BPF_JMP | BPF_EXIT;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

int main(void)
{
	struct utsname u;

	uname(&u);
	printf("{\"machine\": \"%s\", \"kernel\": \"%s\", ", u.machine, u.release);
	printf("\"facilities\": {");
	member("ptrace", try_ptrace());
	member("perf_sw", counter(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, -1));
	member("perf_clockid", counter(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, CLOCK_MONOTONIC));
	member("perf_hw_cycles", counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, -1));
	member("perf_hw_instructions", counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, -1));
	member("tracepoint", tracepoint());
	member("uprobe_pmu", uprobe_pmu((uintptr_t)&try_ptrace));
#if defined(__arm__) && defined(__thumb__)
	member("uprobe_pmu_arm_state", uprobe_pmu((uintptr_t)&arm_state));
#endif
	member("uprobe_tracefs", uprobe_tracefs());
	member("bpf", bpf_tracepoint());
	printf("}}\n");
	return 0;
}
