/* Writes the traces of the Counters tab's tests (tests/ui/test_serve.py,
 * group counters): counter records as record --counters writes them,
 * encoded here with known values (the capture itself is tested by
 * tests/integration/test_counters.py), naming this program's own
 * functions, so that every figure of /api/counters is known exactly.
 *
 * usage: ctr_trace DIR counters|plain
 *   counters: META counters=instructions,cycles,cache-misses,
 *     cache-references (two asked for and unavailable, read(2), user
 *     space); thread 10 runs ctr_main { ctr_outer { ctr_inner; ctr_inner } },
 *     thread 11 ctr_inner once and ends multiplexed (cycles counted half
 *     the time, scaled x2); the recorder's CPU 0 and 1 and PROCESS totals.
 *     Exact values: the comments below and test_serve.py's CTR_*.
 *   plain: the same calls of thread 10 without a counter record.
 * The trace directory DIR is made; exit status 0, or 2 with a message. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/ctrevent.h"
#include "common/encoder.h"
#include "layerprof/format.h"

/* The functions the trace calls: named by serve from this file's symbols. */
#define BODY __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop")
__attribute__((noinline, used)) void ctr_main(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_outer(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_inner(void)
{
	BODY;
}

#define FN(f) ((uint64_t)(uintptr_t)(f))
#define V(...) ((const uint64_t[]){ __VA_ARGS__ })
#define NCTR 4u

static int data_fd = -1;
static struct encoder enc;
static bool mapped;

static void die(const char *what)
{
	fprintf(stderr, "ctr_trace: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void chunk(uint8_t type, const void *p, size_t len)
{
	if (chunk_write_fd(data_fd, type, p, (uint32_t)len))
		die("cannot write a chunk");
}

static void flush(void)
{
	const uint8_t *p;
	size_t len = encoder_take(&enc, &p);

	if (len)
		chunk(LP_CHUNK_EVENTS, p, len);
}

/* MAP events of this executable's code. */
static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	char exe[512];
	ssize_t n;

	(void)size;
	(void)data;
	if (info->dlpi_name && *info->dlpi_name)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			encoder_map(&enc, 1, info->dlpi_addr, info->dlpi_addr + ph->p_vaddr,
			            info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset, NULL, 0, exe,
			            strlen(exe));
	}
	return 1;
}

static void thread_begin(uint32_t tid, const char *comm)
{
	encoder_init(&enc, 1, 10, tid);
	encoder_task(&enc, 1, LP_TASK_START, 0, comm, strlen(comm), NULL, 0);
	if (!mapped)
		dl_iterate_phdr(map_cb, NULL);
	mapped = true;
}

static void put(uint64_t ns, uint8_t kind, uint64_t fn, const uint64_t *v)
{
	struct ctrevent c = { .kind = kind, .fn = fn, .n = NCTR };

	memcpy(c.values, v, NCTR * sizeof(v[0]));
	encoder_counter(&enc, ns, &c);
}

/* An END, CPU or PROCESS record with times. */
static void put_times(uint64_t ns, uint8_t kind, uint32_t cpu, const uint64_t *v, const uint64_t *running, bool scaled)
{
	struct ctrevent c = { .kind = kind, .cpu = cpu, .n = NCTR, .flags = LP_CTR_HAS_TIMES };

	if (scaled)
		c.flags |= LP_CTR_SCALED;
	for (uint32_t i = 0; i < NCTR; i++) {
		c.values[i] = v[i];
		c.enabled[i] = 1000;
		c.running[i] = running[i];
	}
	encoder_counter(&enc, ns, &c);
}

/* A function's entry or exit, with its counter values when counting. */
static void call(bool counting, uint64_t ns, bool entry, uint64_t fn, const uint64_t *v)
{
	if (entry)
		encoder_entry(&enc, ns, fn);
	else
		encoder_exit(&enc, ns, fn);
	if (counting)
		put(ns, entry ? LP_CTR_ENTRY : LP_CTR_EXIT, fn, v);
}

/* instructions, cycles, cache-misses, cache-references.  Thread 10:
 * inner 2 calls (400, 200, 4, 20) self the same; outer (900, 600, 8, 60)
 * self (500, 400, 4, 40); main (2000, 2000, 10, 100) self (1100, 1400, 2,
 * 40); the thread (2100, 2100, 11, 110). */
static void thread10(bool counting)
{
	thread_begin(10, "ctr_app");
	if (counting)
		put(100, LP_CTR_BEGIN, 0, V(0, 0, 0, 0));
	call(counting, 200, true, FN(ctr_main), V(10, 20, 0, 0));
	call(counting, 300, true, FN(ctr_outer), V(110, 120, 1, 10));
	call(counting, 400, true, FN(ctr_inner), V(210, 220, 2, 20));
	call(counting, 500, false, FN(ctr_inner), V(410, 320, 4, 30));
	call(counting, 600, true, FN(ctr_inner), V(510, 420, 5, 40));
	call(counting, 700, false, FN(ctr_inner), V(710, 520, 7, 50));
	call(counting, 800, false, FN(ctr_outer), V(1010, 720, 9, 70));
	call(counting, 900, false, FN(ctr_main), V(2010, 2020, 10, 100));
	if (counting)
		put_times(1000, LP_CTR_END, 0, V(2100, 2100, 11, 110), V(1000, 1000, 1000, 1000), false);
	flush();
}

/* Thread 11: inner (300, 100, 3, 30); the thread (400, 400, 4, 40),
 * cycles multiplexed (running 500 of 1000 ns: scaled x2). */
static void thread11(void)
{
	thread_begin(11, "ctr_worker");
	put(110, LP_CTR_BEGIN, 0, V(0, 0, 0, 0));
	call(true, 150, true, FN(ctr_inner), V(50, 100, 0, 0));
	call(true, 250, false, FN(ctr_inner), V(350, 200, 3, 30));
	put_times(300, LP_CTR_END, 0, V(400, 400, 4, 40), V(1000, 500, 1000, 1000), true);
	flush();
}

/* The recorder's totals, in the main thread's stream: CPU 1 (1000, 1100,
 * 5, 50), CPU 0 (1500, 1400, 10, 100), the program (2500, 2500, 15, 150). */
static void totals(void)
{
	encoder_init(&enc, 1, 10, 10);
	put_times(1100, LP_CTR_CPU, 1, V(1000, 1100, 5, 50), V(600, 600, 600, 600), false);
	put_times(1100, LP_CTR_CPU, 0, V(1500, 1400, 10, 100), V(400, 400, 400, 400), false);
	put_times(1101, LP_CTR_PROCESS, 0, V(2500, 2500, 15, 150), V(1000, 1000, 1000, 1000), false);
	flush();
}

int main(int argc, char **argv)
{
	static const char end[] = "events=0\nlost=0\nstreams=0\n";
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char path[4096], meta[1024];
	bool counting;
	int n;

	if (argc != 3 || (strcmp(argv[2], "counters") && strcmp(argv[2], "plain"))) {
		fprintf(stderr, "usage: ctr_trace DIR counters|plain\n");
		return 2;
	}
	counting = !strcmp(argv[2], "counters");
	if (mkdir(argv[1], 0700) && errno != EEXIST)
		die("cannot make the trace directory");
	snprintf(path, sizeof(path), "%s/%s", argv[1], LP_TRACE_DATA);
	data_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (data_fd < 0)
		die("cannot make the data file");
	trace_header_put(hdr);
	if (write(data_fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		die("cannot write the file header");
	n = snprintf(meta, sizeof(meta), "layerprof=test\nclock=monotonic\ncommand=ctr_app\n%s",
	             counting ? "counters=instructions,cycles,cache-misses,cache-references\n"
	                        "counters.unavailable=LLC-loads: not supported; bus-cycles: no PMU\n"
	                        "counters.read=read\ncounters.scope=user\n"
	                      : "");
	chunk(LP_CHUNK_META, meta, (size_t)n);
	thread10(counting);
	if (counting) {
		thread11();
		totals();
	}
	chunk(LP_CHUNK_END, end, sizeof(end) - 1);
	if (close(data_fd))
		die("cannot write the data file");
	return 0;
}
