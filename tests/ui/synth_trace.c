/* Writes the traces of the tests of the Counters and Sync tabs
 * (tests/ui/test_serve.py, groups counters and sync): counter and sync
 * records as record --counters and --sync write them, encoded here with
 * known values (the capture itself is tested by tests/integration), naming
 * this program's own functions, so that every figure of /api/counters and
 * /api/sync is known exactly.
 *
 * usage: synth_trace DIR counters|plain|sync
 *   counters: META counters=instructions,cycles,cache-misses,
 *     cache-references (two asked for and unavailable, read(2), user
 *     space); thread 10 runs ctr_main { ctr_outer { ctr_inner; ctr_inner } },
 *     thread 11 ctr_inner once and ends multiplexed (cycles counted half
 *     the time, scaled x2); the recorder's CPU 0 and 1 and PROCESS totals.
 *     Exact values: the comments below and test_serve.py's CTR_*.
 *   plain: the same calls of thread 10 without a counter record.
 *   sync: META sync=preload; threads 10 and 11 on a mutex, a producer
 *     (40) and a consumer (41) of a queue of two semaphores, a signaller
 *     (42) and a waiter (43) on a condition variable and its mutex; the
 *     values: the comments of the sync part and test_serve.py's SYNC_*.
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
#include "common/syncevent.h"
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
	fprintf(stderr, "synth_trace: %s: %s\n", what, strerror(errno));
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
	uint64_t ns = *(const uint64_t *)data;
	char exe[512];
	ssize_t n;

	(void)size;
	if (info->dlpi_name && *info->dlpi_name)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			encoder_map(&enc, ns, info->dlpi_addr, info->dlpi_addr + ph->p_vaddr,
			            info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset, NULL, 0, exe,
			            strlen(exe));
	}
	return 1;
}

/* The events of thread tid (of process 10) from ns on; the first thread
 * also maps this executable. */
static void thread_begin(uint32_t tid, const char *comm, uint64_t ns)
{
	encoder_init(&enc, 1, 10, tid);
	encoder_task(&enc, ns, LP_TASK_START, 0, comm, strlen(comm), NULL, 0);
	if (!mapped)
		dl_iterate_phdr(map_cb, &ns);
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
	thread_begin(10, "ctr_app", 1);
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
	thread_begin(11, "ctr_worker", 1);
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

/* ------------------------------------------------------------ sync */

#define MUTEX 0x1000u
#define ITEMS 0x6000u
#define SLOTS 0x6100u
#define COND_MUTEX 0x7000u
#define COND 0x7100u

/* One operation at its end, having waited wait_ns (since ns - wait_ns). */
static void op(uint64_t ns, uint8_t o, uint32_t flags, uint64_t obj, uint64_t wait_ns, uint64_t obj2)
{
	struct syncevent y = { .op = o, .flags = flags, .obj = obj, .obj2 = obj2, .wait_ns = wait_ns };

	/* the call sites: inside ctr_outer */
	y.site = FN(ctr_outer) + 4;
	encoder_sync(&enc, ns, &y);
}

/* Threads 10 and 11 on MUTEX: 3 acquisitions, 2 of them contended (11
 * waits 300 ns from 1300, inside ctr_inner; 10 waits 500 ns from 2200),
 * holds 500 + 1000 + 200 ns; 11's trylock at 2800 finds it busy. */
static void sync_mutex(void)
{
	thread_begin(10, "ten", 900);
	op(1000, LP_SYNC_MUTEX_LOCK, 0, MUTEX, 0, 0);
	op(1500, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	op(2700, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, MUTEX, 500, 0);
	op(2900, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	flush();
	thread_begin(11, "eleven", 900);
	encoder_entry(&enc, 1250, FN(ctr_inner));
	op(1600, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, MUTEX, 300, 0);
	encoder_exit(&enc, 1650, FN(ctr_inner));
	op(2600, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	op(2800, LP_SYNC_MUTEX_LOCK, LP_SYNC_TRY | LP_SYNC_FAILED, MUTEX, 0, 0);
	flush();
}

/* A queue: the producer (40) waits for a free slot and posts an item, the
 * consumer (41) waits for an item and posts a slot, 4 times; the consumer
 * waits 1010 + 3 x 890 ns for items, the producer 50 ns once for a slot. */
static void sync_queue(void)
{
	thread_begin(40, "producer", 9000);
	for (unsigned k = 0; k < 4; k++) {
		op(10005 + 1000 * k + (k == 3 ? 95 : 0), LP_SYNC_SEM_WAIT, 0, SLOTS, k == 3 ? 50 : 0, 0);
		op(11000 + 1000 * k, LP_SYNC_SEM_POST, 0, ITEMS, 0, 0);
	}
	flush();
	thread_begin(41, "consumer", 9000);
	for (unsigned k = 0; k < 4; k++) {
		uint64_t end = 11010 + 1000 * k, began = k ? 11120 + 1000 * (k - 1) : 10000;

		op(end, LP_SYNC_SEM_WAIT, 0, ITEMS, end - began, 0);
		op(end + 100, LP_SYNC_SEM_POST, 0, SLOTS, 0, 0);
	}
	flush();
}

/* A condition: 43 waits on COND twice (1000 ns, ended by 42's signal;
 * 900 ns, timed out), letting go of COND_MUTEX, which 42 waits 30 ns for. */
static void sync_cond(void)
{
	thread_begin(42, "signaller", 1000);
	op(1040, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, COND_MUTEX, 30, 0);
	op(2010, LP_SYNC_COND_SIGNAL, 0, COND, 0, 0);
	op(2020, LP_SYNC_MUTEX_UNLOCK, 0, COND_MUTEX, 0, 0);
	flush();
	thread_begin(43, "waiter", 1000);
	op(1000, LP_SYNC_MUTEX_LOCK, 0, COND_MUTEX, 0, 0);
	op(2030, LP_SYNC_COND_WAIT, 0, COND, 1000, COND_MUTEX);
	op(2100, LP_SYNC_MUTEX_UNLOCK, 0, COND_MUTEX, 0, 0);
	op(3000, LP_SYNC_MUTEX_LOCK, 0, COND_MUTEX, 0, 0);
	op(4000, LP_SYNC_COND_WAIT, LP_SYNC_TIMED | LP_SYNC_TIMEDOUT, COND, 900, COND_MUTEX);
	op(4050, LP_SYNC_MUTEX_UNLOCK, 0, COND_MUTEX, 0, 0);
	flush();
}

int main(int argc, char **argv)
{
	static const char end[] = "events=0\nlost=0\nstreams=0\n";
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char path[4096], meta[1024];
	const char *kind = argc == 3 ? argv[2] : "";
	bool counting = !strcmp(kind, "counters"), sync = !strcmp(kind, "sync");
	int n;

	if (!counting && !sync && strcmp(kind, "plain")) {
		fprintf(stderr, "usage: synth_trace DIR counters|plain|sync\n");
		return 2;
	}
	if (mkdir(argv[1], 0700) && errno != EEXIST)
		die("cannot make the trace directory");
	snprintf(path, sizeof(path), "%s/%s", argv[1], LP_TRACE_DATA);
	data_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (data_fd < 0)
		die("cannot make the data file");
	trace_header_put(hdr);
	if (write(data_fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		die("cannot write the file header");
	n = snprintf(meta, sizeof(meta), "layerprof=test\nclock=monotonic\ncommand=synth_app\n%s",
	             counting ? "counters=instructions,cycles,cache-misses,cache-references\n"
	                        "counters.unavailable=LLC-loads: not supported; bus-cycles: no PMU\n"
	                        "counters.read=read\ncounters.scope=user\n"
	             : sync   ? "sync=preload\n"
	                      : "");
	chunk(LP_CHUNK_META, meta, (size_t)n);
	if (sync) {
		sync_mutex();
		sync_queue();
		sync_cond();
	} else {
		thread10(counting);
	}
	if (counting) {
		thread11();
		totals();
	}
	chunk(LP_CHUNK_END, end, sizeof(end) - 1);
	if (close(data_fd))
		die("cannot write the data file");
	return 0;
}
