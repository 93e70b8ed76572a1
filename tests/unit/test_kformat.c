/* Unit test of the kernel layer's host side: KFORMAT payloads read and
 * their formats parsed by libtraceevent (kformat.c), records decoded and
 * printed (kevent.c), kernel events as leaves of the call tree
 * (calltree.c).  The fixtures are the formats of a 6.18 x86_64
 * kernel as its tracefs gives them; this machine's own formats are loaded
 * too when its tracefs is readable. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/varint.h"
#include "host/lib/analysis/calltree.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/kformat.h"
#include "tests/unit/check.h"

/* libtraceevent 1.7.1 leaks a few bytes on the error paths of its parser,
 * which the damaged texts of the fuzz loops take: those loops run with
 * LeakSanitizer off (ASan builds).  Every other test, undecodable and
 * field-by-field entries included, is checked for leaks. */
#if defined(__SANITIZE_ADDRESS__)
#define KFORMAT_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KFORMAT_LSAN 1
#endif
#endif
#ifdef KFORMAT_LSAN
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK_OFF() __lsan_disable()
#define LEAK_CHECK_ON() __lsan_enable()
#else
#define LEAK_CHECK_OFF() ((void)0)
#define LEAK_CHECK_ON() ((void)0)
#endif

/* Rounds of the fuzz loops are multiplied by this (-DKFORMAT_FUZZ_SCALE=100
 * for a long run by hand). */
#ifndef KFORMAT_FUZZ_SCALE
#define KFORMAT_FUZZ_SCALE 1
#endif

/* ---- the kernel's own descriptions (events/<system>/<name>/format) ---- */

static const char fmt_sched_switch[] =
    "name: sched_switch\n"
    "ID: 372\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s"
    " next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio,"
    " (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 |"
    " 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state &"
    " ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 |"
    " 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" },"
    " { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, {"
    " 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 |"
    " 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 |"
    " 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

static const char fmt_sched_wakeup[] =
    "name: sched_wakeup\n"
    "ID: 374\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio,"
    " REC->target_cpu\n";

static const char fmt_sched_process_fork[] =
    "name: sched_process_fork\n"
    "ID: 366\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", __get_str(parent_comm),"
    " REC->parent_pid, __get_str(child_comm), REC->child_pid\n";

static const char fmt_page_fault_user[] =
    "name: page_fault_user\n"
    "ID: 190\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\n"
    "print fmt: \"address=%ps ip=%ps error_code=0x%lx\", (void *)REC->address, (void *)REC->ip,"
    " REC->error_code\n";

static const char fmt_irq_handler_entry[] =
    "name: irq_handler_entry\n"
    "ID: 225\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n";

static const char fmt_softirq_entry[] =
    "name: softirq_entry\n"
    "ID: 223\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"vec=%u [action=%s]\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1,"
    " \"TIMER\" }, { 2, \"NET_TX\" }, { 3, \"NET_RX\" }, { 4, \"BLOCK\" }, { 5, \"IRQ_POLL\" }, { 6,"
    " \"TASKLET\" }, { 7, \"SCHED\" }, { 8, \"HRTIMER\" }, { 9, \"RCU\" })\n";

static const char fmt_block_rq_issue[] =
    "name: block_rq_issue\n"
    "ID: 2104\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n"
    "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n"
    "\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n"
    "\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"%d,%d %s %u (%s) %llu + %u %s,%u,%u [%s]\", ((unsigned int) ((REC->dev) >>"
    " 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs, REC->bytes,"
    " __get_str(cmd), (unsigned long long)REC->sector, REC->nr_sector,"
    " __print_symbolic((((REC->ioprio) >> 13) & (8 - 1)), { IOPRIO_CLASS_NONE, \"none\" }, {"
    " IOPRIO_CLASS_RT, \"rt\" }, { IOPRIO_CLASS_BE, \"be\" }, { IOPRIO_CLASS_IDLE, \"idle\" }, {"
    " IOPRIO_CLASS_INVALID, \"invalid\"}), (((REC->ioprio) >> 3) & ((1 << 10) - 1)),"
    " ((REC->ioprio) & ((1 << 3) - 1)), REC->comm\n";

static const char fmt_block_rq_complete[] =
    "name: block_rq_complete\n"
    "ID: 2107\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
    "\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n"
    "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n"
    "\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", ((unsigned int) ((REC->dev) >> 20)),"
    " ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs, __get_str(cmd), (unsigned"
    " long long)REC->sector, REC->nr_sector, __print_symbolic((((REC->ioprio) >> 13) & (8 -"
    " 1)), { IOPRIO_CLASS_NONE, \"none\" }, { IOPRIO_CLASS_RT, \"rt\" }, { IOPRIO_CLASS_BE, \"be\""
    " }, { IOPRIO_CLASS_IDLE, \"idle\" }, { IOPRIO_CLASS_INVALID, \"invalid\"}), (((REC->ioprio)"
    " >> 3) & ((1 << 10) - 1)), ((REC->ioprio) & ((1 << 3) - 1)), REC->error\n";

static const char fmt_hrtimer_start[] =
    "name: hrtimer_start\n"
    "ID: 460\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n"
    "\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;\n"
    "\tfield:bool was_armed;\toffset:44;\tsize:1;\tsigned:0;\n"
    "\n"
    "print fmt: \"hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s was_armed=%d\","
    " REC->hrtimer, REC->function, (unsigned long long) REC->expires, (unsigned long long)"
    " REC->softexpires, __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, \"ABS\" }, {"
    " HRTIMER_MODE_REL, \"REL\" }, { HRTIMER_MODE_ABS_PINNED, \"ABS|PINNED\" }, {"
    " HRTIMER_MODE_REL_PINNED, \"REL|PINNED\" }, { HRTIMER_MODE_ABS_SOFT, \"ABS|SOFT\" }, {"
    " HRTIMER_MODE_REL_SOFT, \"REL|SOFT\" }, { HRTIMER_MODE_ABS_PINNED_SOFT, \"ABS|PINNED|SOFT\""
    " }, { HRTIMER_MODE_REL_PINNED_SOFT, \"REL|PINNED|SOFT\" }, { HRTIMER_MODE_ABS_HARD,"
    " \"ABS|HARD\" }, { HRTIMER_MODE_REL_HARD, \"REL|HARD\" }, { HRTIMER_MODE_ABS_PINNED_HARD,"
    " \"ABS|PINNED|HARD\" }, { HRTIMER_MODE_REL_PINNED_HARD, \"REL|PINNED|HARD\" }),"
    " REC->was_armed\n";

/* Their ids on that kernel (the text's "ID:" line). */
enum {
	ID_SWITCH = 372,
	ID_WAKEUP = 374,
	ID_FORK = 366,
	ID_FAULT_USER = 190,
	ID_IRQ_ENTRY = 225,
	ID_SOFTIRQ_ENTRY = 223,
	ID_RQ_ISSUE = 2104,
	ID_RQ_COMPLETE = 2107,
	ID_HRTIMER_START = 460,
};

static const struct fixture {
	uint32_t id;
	const char *system, *name, *text;
	enum kev_kind kind;
} fixtures[] = {
	{ ID_SWITCH, "sched", "sched_switch", fmt_sched_switch, KEV_SWITCH },
	{ ID_WAKEUP, "sched", "sched_wakeup", fmt_sched_wakeup, KEV_WAKEUP },
	{ ID_FORK, "sched", "sched_process_fork", fmt_sched_process_fork, KEV_FORK },
	{ ID_FAULT_USER, "exceptions", "page_fault_user", fmt_page_fault_user, KEV_FAULT_USER },
	{ ID_IRQ_ENTRY, "irq", "irq_handler_entry", fmt_irq_handler_entry, KEV_IRQ_ENTRY },
	{ ID_SOFTIRQ_ENTRY, "irq", "softirq_entry", fmt_softirq_entry, KEV_SOFTIRQ_ENTRY },
	{ ID_RQ_ISSUE, "block", "block_rq_issue", fmt_block_rq_issue, KEV_BLOCK_ISSUE },
	{ ID_RQ_COMPLETE, "block", "block_rq_complete", fmt_block_rq_complete, KEV_BLOCK_COMPLETE },
	{ ID_HRTIMER_START, "timer", "hrtimer_start", fmt_hrtimer_start, KEV_HRTIMER_START },
};
#define NFIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

/* ---- building KFORMAT payloads ---- */

struct payload {
	uint8_t *buf;
	size_t len, cap;
};

static void pl_bytes(struct payload *p, const void *b, size_t n)
{
	if (p->len + n > p->cap) {
		p->cap = (p->len + n) * 2 + 64;
		p->buf = realloc(p->buf, p->cap);
		if (!p->buf)
			abort();
	}
	memcpy(p->buf + p->len, b, n);
	p->len += n;
}

static void pl_varint(struct payload *p, uint64_t v)
{
	uint8_t b[VARINT_MAX];

	pl_bytes(p, b, varint_put(b, v));
}

static void pl_string(struct payload *p, const char *s, size_t n)
{
	pl_varint(p, n);
	pl_bytes(p, s, n);
}

static void pl_entry(struct payload *p, uint32_t id, const char *system, const char *name, const char *text)
{
	pl_varint(p, id);
	pl_string(p, system, strlen(system));
	pl_string(p, name, strlen(name));
	pl_string(p, text, strlen(text));
}

static void pl_fixtures(struct payload *p)
{
	size_t i;

	pl_varint(p, NFIXTURES);
	for (i = 0; i < NFIXTURES; i++)
		pl_entry(p, fixtures[i].id, fixtures[i].system, fixtures[i].name, fixtures[i].text);
}

static void pl_free(struct payload *p)
{
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

/* A set holding the fixtures. */
static struct kformats *fixture_set(void)
{
	struct payload p = { 0 };
	struct kformats *kf = NULL;
	char err[256] = "";

	if (kformats_new(&kf) < 0)
		abort();
	pl_fixtures(&p);
	if (!CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0))
		printf("  %s\n", err);
	pl_free(&p);
	return kf;
}

/* ---- building records as the kernel writes them (little-endian) ---- */

static void put16(uint8_t *r, size_t off, uint16_t v)
{
	r[off] = (uint8_t)v;
	r[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *r, size_t off, uint32_t v)
{
	put16(r, off, (uint16_t)v);
	put16(r, off + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *r, size_t off, uint64_t v)
{
	put32(r, off, (uint32_t)v);
	put32(r, off + 4, (uint32_t)(v >> 32));
}

/* A __data_loc: offset in the low 16 bits, length in the high 16. */
static void put_loc(uint8_t *r, size_t off, uint16_t data_off, uint16_t data_len)
{
	put32(r, off, (uint32_t)data_len << 16 | data_off);
}

static void put_common(uint8_t *r, uint16_t type, uint8_t flags, uint8_t preempt_count, int32_t pid)
{
	put16(r, 0, type);
	r[2] = flags;
	r[3] = preempt_count;
	put32(r, 4, (uint32_t)pid);
}

/* sched_switch on 6.18: prev_comm 8, prev_pid 24, prev_prio 28,
 * prev_state 32 (long), next_comm 40, next_pid 56, next_prio 60; 64 bytes. */
static void switch_record(uint8_t *r, const char *prev, int32_t prev_pid, int64_t state, const char *next,
                          int32_t next_pid)
{
	memset(r, 0, 64);
	put_common(r, ID_SWITCH, 0x01, 0x02, prev_pid);
	memcpy(r + 8, prev, strnlen(prev, 16));
	put32(r, 24, (uint32_t)prev_pid);
	put32(r, 28, 120);
	put64(r, 32, (uint64_t)state);
	memcpy(r + 40, next, strnlen(next, 16));
	put32(r, 56, (uint32_t)next_pid);
	put32(r, 60, 120);
}

static const char *formatted(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len)
{
	static char line[1024];

	kevent_format(kf, id, raw, len, line, sizeof(line));
	return line;
}

/* ---- the checks ---- */

static void test_kinds(void)
{
	struct kformats *kf = fixture_set();
	size_t i;

	CHECK_EQ_U64(kformats_count(kf), NFIXTURES);
	CHECK_EQ_U64(kformats_undecodable(kf), 0);
	for (i = 0; i < NFIXTURES; i++) {
		const struct kformat_event *e = kformats_find(kf, fixtures[i].id);

		if (!CHECK(e))
			continue;
		CHECK_EQ_U64(e->id, fixtures[i].id);
		CHECK_STR(e->system, fixtures[i].system);
		CHECK_STR(e->name, fixtures[i].name);
		CHECK_EQ_U64(e->kind, fixtures[i].kind);
		CHECK(e->decodable);
		CHECK(kformats_at(kf, (uint32_t)i) == e);
	}
	CHECK(!kformats_find(kf, 4242));
	CHECK(!kformats_at(kf, NFIXTURES));
	CHECK_STR(kev_kind_name(KEV_SWITCH), "switch");
	CHECK_STR(kev_kind_name(KEV_FAULT_USER), "fault_user");
	CHECK_STR(kev_kind_name(KEV_TIMER_CANCEL), "timer_cancel");
	CHECK_STR(kev_kind_name(KEV_OTHER), "other");
	CHECK_STR(kev_kind_name(KEV_KIND_COUNT), "?");
	for (i = 0; i < KEV_KIND_COUNT; i++)
		CHECK(kev_kind_name((enum kev_kind)i) && strcmp(kev_kind_name((enum kev_kind)i), "?"));
	kformats_free(kf);
	kformats_free(NULL);
}

static void test_switch(void)
{
	struct kformats *kf = fixture_set();
	struct kevent ev;
	uint8_t r[64];
	uint64_t v;
	static const struct {
		int64_t state;
		char letter;
		const char *printed;
	} states[] = {
		{ 0x001, 'S', "S" }, { 0x002, 'D', "D" }, { 0x000, 'R', "R" },  { 0x100, 'R', "R+" },
		{ 0x080, 'I', "I" }, { 0x004, 'T', "T" }, { 0x008, 'T', "t" },  { 0x010, 'X', "X" },
		{ 0x020, 'Z', "Z" }, { 0x040, '?', "P" }, { 0x101, 'S', "S+" }, { 0x003, 'S', "S|D" },
		{ 0x200, '?', "R" },
	};
	size_t i;

	/* a comm of 16 bytes has no '\0' in the record */
	switch_record(r, "0123456789abcdef", 1234, 1, "swapper/1", 0);
	r[2] = 0x08 | 0x10 | 0x40;
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, sizeof(r), &ev), 0);
	CHECK(ev.fmt == kformats_find(kf, ID_SWITCH));
	CHECK_EQ_U64(ev.kind, KEV_SWITCH);
	CHECK_EQ_U64(ev.common_pid, 1234);
	CHECK_EQ_U64(ev.common_flags, 0x58);
	CHECK_EQ_U64(ev.common_preempt_count, 2);
	CHECK(ev.in_hardirq && ev.in_softirq && ev.in_nmi);
	CHECK_STR(ev.u.sw.prev_comm, "0123456789abcdef");
	CHECK_EQ_U64(ev.u.sw.prev_pid, 1234);
	CHECK_EQ_U64(ev.u.sw.prev_state, 1);
	CHECK_STR(ev.u.sw.next_comm, "swapper/1");
	CHECK_EQ_U64(ev.u.sw.next_pid, 0);

	r[2] = 0x01;
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, sizeof(r), &ev), 0);
	CHECK(!ev.in_hardirq && !ev.in_softirq && !ev.in_nmi);

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		char want[256];

		switch_record(r, "bash", 4321, states[i].state, "kworker/0:1", 17);
		CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, sizeof(r), &ev), 0);
		CHECK_EQ_U64(ev.u.sw.prev_state, states[i].state);
		if (!CHECK_EQ_U64(kevent_switch_state(&ev), states[i].letter))
			printf("  prev_state %#llx\n", (unsigned long long)states[i].state);
		snprintf(want, sizeof(want),
		         "sched_switch: prev_comm=bash prev_pid=4321 prev_prio=120 prev_state=%s ==> "
		         "next_comm=kworker/0:1 next_pid=17 next_prio=120",
		         states[i].printed);
		CHECK_STR(formatted(kf, ID_SWITCH, r, sizeof(r)), want);
	}
	/* a negative pid and state, sign-extended */
	switch_record(r, "x", -2, -1, "y", 3);
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, sizeof(r), &ev), 0);
	CHECK_EQ_U64(ev.u.sw.prev_pid, (uint64_t)(int64_t)-2);
	CHECK_EQ_U64(ev.u.sw.prev_state, (uint64_t)(int64_t)-1);

	/* fields by name */
	switch_record(r, "bash", 4321, 2, "sh", 17);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "prev_prio", &v), 0);
	CHECK_EQ_U64(v, 120);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "prev_state", &v), 0);
	CHECK_EQ_U64(v, 2);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "common_pid", &v), 0);
	CHECK_EQ_U64(v, 4321);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "common_type", &v), 0);
	CHECK_EQ_U64(v, ID_SWITCH);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "prev_comm", &v), -EINVAL);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r), "no_such_field", &v), -ENOENT);
	CHECK_EQ_U64(kevent_field_u64(kf, 4242, r, sizeof(r), "prev_prio", &v), -ENOENT);
	CHECK_EQ_U64(kevent_field_u64(kf, ID_SWITCH, r, sizeof(r) - 1, "prev_prio", &v), -EBADMSG);

	/* unknown id, short record */
	CHECK_EQ_U64(kevent_decode(kf, 4242, r, sizeof(r), &ev), -ENOENT);
	CHECK(!ev.fmt);
	CHECK_EQ_U64(ev.kind, KEV_OTHER);
	CHECK_STR(formatted(kf, 4242, r, sizeof(r)), "tracepoint 4242: <no format>");
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, sizeof(r) - 1, &ev), -EBADMSG);
	CHECK(ev.fmt == kformats_find(kf, ID_SWITCH));
	CHECK_EQ_U64(ev.kind, KEV_OTHER);
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, 0, &ev), -EBADMSG);
	CHECK_STR(formatted(kf, ID_SWITCH, r, 63), "sched_switch: <63 bytes, undecodable>");
	{
		char small[16];

		CHECK_EQ_U64(kevent_format(kf, ID_SWITCH, r, sizeof(r), small, sizeof(small)), 15);
		CHECK_STR(small, "sched_switch: p");
		CHECK_EQ_U64(kevent_format(kf, ID_SWITCH, r, sizeof(r), small, 0), 0);
	}
	/* control characters of a comm do not reach the terminal */
	switch_record(r, "evil\x1b[2Jname\n", 5, 0, "ok", 6);
	CHECK_STR(formatted(kf, ID_SWITCH, r, sizeof(r)),
	          "sched_switch: prev_comm=evil?[2Jname  prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=ok "
	          "next_pid=6 next_prio=120");
	kformats_free(kf);
}

static void test_sched_others(void)
{
	struct kformats *kf = fixture_set();
	struct kevent ev;
	uint8_t r[64];

	/* sched_wakeup: comm 8, pid 24, prio 28, target_cpu 32; 36 bytes */
	memset(r, 0, sizeof(r));
	put_common(r, ID_WAKEUP, 0x00, 0x00, 99);
	memcpy(r + 8, "kworker/u8:2", 12);
	put32(r, 24, 77);
	put32(r, 28, 120);
	put32(r, 32, 3);
	CHECK_EQ_U64(kevent_decode(kf, ID_WAKEUP, r, 36, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_WAKEUP);
	CHECK_EQ_U64(ev.common_pid, 99);
	CHECK_STR(ev.u.wake.comm, "kworker/u8:2");
	CHECK_EQ_U64(ev.u.wake.pid, 77);
	CHECK_EQ_U64(ev.u.wake.target_cpu, 3);
	CHECK_STR(formatted(kf, ID_WAKEUP, r, 36), "sched_wakeup: comm=kworker/u8:2 pid=77 prio=120 target_cpu=003");
	CHECK_EQ_U64(kevent_decode(kf, ID_WAKEUP, r, 35, &ev), -EBADMSG);

	/* sched_process_fork on 6.18: __data_loc parent_comm 8, parent_pid 12,
	 * __data_loc child_comm 16, child_pid 20; the strings after */
	memset(r, 0, sizeof(r));
	put_common(r, ID_FORK, 0x00, 0x00, 100);
	put_loc(r, 8, 24, 3);
	put32(r, 12, 100);
	put_loc(r, 16, 27, 7);
	put32(r, 20, 101);
	memcpy(r + 24, "sh\0worker\0", 10);
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 34, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_FORK);
	CHECK_STR(ev.u.fork.parent_comm, "sh");
	CHECK_EQ_U64(ev.u.fork.parent_pid, 100);
	CHECK_STR(ev.u.fork.child_comm, "worker");
	CHECK_EQ_U64(ev.u.fork.child_pid, 101);
	CHECK_STR(formatted(kf, ID_FORK, r, 34), "sched_process_fork: comm=sh pid=100 child_comm=worker child_pid=101");
	/* the record ends inside child_comm's area, or it points past it */
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 33, &ev), -EBADMSG);
	CHECK_STR(formatted(kf, ID_FORK, r, 33), "sched_process_fork: <33 bytes, undecodable>");
	put_loc(r, 16, 200, 7);
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 34, &ev), -EBADMSG);
	put_loc(r, 16, 27, 0xffff);
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 34, &ev), -EBADMSG);
	/* a string without its '\0' stops at the end of its area */
	put_loc(r, 16, 27, 3);
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 34, &ev), 0);
	CHECK_STR(ev.u.fork.child_comm, "wor");
	/* a comm longer than a comm is cut at 16 bytes */
	memset(r + 24, 'a', 40);
	put_loc(r, 8, 24, 40);
	CHECK_EQ_U64(kevent_decode(kf, ID_FORK, r, 64, &ev), 0);
	CHECK_STR(ev.u.fork.parent_comm, "aaaaaaaaaaaaaaaa");
	kformats_free(kf);
}

static void test_fault_irq(void)
{
	struct kformats *kf = fixture_set();
	struct kevent ev;
	uint8_t r[64];

	/* page_fault_user: address 8, ip 16, error_code 24; 32 bytes */
	memset(r, 0, sizeof(r));
	put_common(r, ID_FAULT_USER, 0x00, 0x00, 555);
	put64(r, 8, 0x7f0012345000ull);
	put64(r, 16, 0x55555555a123ull);
	put64(r, 24, 6);
	CHECK_EQ_U64(kevent_decode(kf, ID_FAULT_USER, r, 32, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_FAULT_USER);
	CHECK_EQ_U64(ev.common_pid, 555);
	CHECK_EQ_U64(ev.u.fault.address, 0x7f0012345000ull);
	CHECK_EQ_U64(ev.u.fault.ip, 0x55555555a123ull);
	CHECK_EQ_U64(ev.u.fault.error_code, 6);
	CHECK_STR(formatted(kf, ID_FAULT_USER, r, 32),
	          "page_fault_user: address=0x7f0012345000 ip=0x55555555a123 error_code=0x6");
	CHECK_EQ_U64(kevent_decode(kf, ID_FAULT_USER, r, 31, &ev), -EBADMSG);

	/* irq_handler_entry: irq 8, __data_loc name 12; name after */
	memset(r, 0, sizeof(r));
	put_common(r, ID_IRQ_ENTRY, 0x09, 0x01, 0);
	put32(r, 8, 24);
	put_loc(r, 12, 16, 5);
	memcpy(r + 16, "eth0", 5);
	CHECK_EQ_U64(kevent_decode(kf, ID_IRQ_ENTRY, r, 21, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_IRQ_ENTRY);
	CHECK(ev.in_hardirq && !ev.in_softirq);
	CHECK_EQ_U64(ev.u.irq.irq, 24);
	CHECK_STR(ev.u.irq.name, "eth0");
	CHECK_EQ_U64(ev.u.irq.ret, 0);
	CHECK_STR(formatted(kf, ID_IRQ_ENTRY, r, 21), "irq_handler_entry: irq=24 name=eth0");

	/* softirq_entry: vec 8; 12 bytes */
	memset(r, 0, sizeof(r));
	put_common(r, ID_SOFTIRQ_ENTRY, 0x10, 0x00, 0);
	put32(r, 8, 3);
	CHECK_EQ_U64(kevent_decode(kf, ID_SOFTIRQ_ENTRY, r, 12, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_SOFTIRQ_ENTRY);
	CHECK(ev.in_softirq && !ev.in_hardirq);
	CHECK_EQ_U64(ev.u.softirq.vec, 3);
	CHECK_STR(formatted(kf, ID_SOFTIRQ_ENTRY, r, 12), "softirq_entry: vec=3 [action=NET_RX]");
	kformats_free(kf);
}

static void test_block_timer(void)
{
	struct kformats *kf = fixture_set();
	struct kevent ev;
	uint8_t r[80];

	/* block_rq_issue: dev 8, sector 16, nr_sector 24, bytes 28, ioprio 32,
	 * rwbs[10] 34, comm[16] 44, __data_loc cmd 60; 64 bytes and cmd */
	memset(r, 0, sizeof(r));
	put_common(r, ID_RQ_ISSUE, 0x00, 0x00, 321);
	put32(r, 8, 8u << 20 | 16);
	put64(r, 16, 123456789012ull);
	put32(r, 24, 8);
	put32(r, 28, 4096);
	put16(r, 32, 2 << 13 | 4); /* best effort, level 4 */
	memcpy(r + 34, "WS", 2);
	memcpy(r + 44, "kworker/0:1H", 12);
	put_loc(r, 60, 64, 1);
	CHECK_EQ_U64(kevent_decode(kf, ID_RQ_ISSUE, r, 65, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_BLOCK_ISSUE);
	CHECK_EQ_U64(ev.u.block.dev, 8u << 20 | 16);
	CHECK_EQ_U64(ev.u.block.sector, 123456789012ull);
	CHECK_EQ_U64(ev.u.block.nr_sector, 8);
	CHECK_EQ_U64(ev.u.block.bytes, 4096);
	CHECK_EQ_U64(ev.u.block.error, 0);
	CHECK_STR(ev.u.block.rwbs, "WS");
	CHECK_STR(formatted(kf, ID_RQ_ISSUE, r, 65),
	          "block_rq_issue: 8,16 WS 4096 () 123456789012 + 8 0x2,0,4 [kworker/0:1H]");
	/* an rwbs of 10 bytes without its '\0' */
	memcpy(r + 34, "RWFSMDABCE", 10);
	CHECK_EQ_U64(kevent_decode(kf, ID_RQ_ISSUE, r, 65, &ev), 0);
	CHECK_STR(ev.u.block.rwbs, "RWFSMDABCE");

	/* block_rq_complete: dev 8, sector 16, nr_sector 24, error 28,
	 * ioprio 32, rwbs 34, __data_loc cmd 44; 48 bytes and cmd */
	memset(r, 0, sizeof(r));
	put_common(r, ID_RQ_COMPLETE, 0x18, 0x00, 0);
	put32(r, 8, 259u << 20 | 1);
	put64(r, 16, 2048);
	put32(r, 24, 16);
	put32(r, 28, (uint32_t)-5);
	memcpy(r + 34, "R", 1);
	put_loc(r, 44, 48, 1);
	CHECK_EQ_U64(kevent_decode(kf, ID_RQ_COMPLETE, r, 49, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_BLOCK_COMPLETE);
	CHECK_EQ_U64(ev.u.block.dev, 259u << 20 | 1);
	CHECK_EQ_U64(ev.u.block.sector, 2048);
	CHECK_EQ_U64(ev.u.block.nr_sector, 16);
	CHECK_EQ_U64(ev.u.block.bytes, 0);
	CHECK_EQ_U64(ev.u.block.error, (uint64_t)(int64_t)-5);
	CHECK_STR(ev.u.block.rwbs, "R");
	CHECK_STR(formatted(kf, ID_RQ_COMPLETE, r, 49), "block_rq_complete: 259,1 R () 2048 + 16 0x0,0,0 [-5]");

	/* hrtimer_start: hrtimer 8, function 16, expires 24, softexpires 32,
	 * mode 40, was_armed 44; 48 bytes */
	memset(r, 0, sizeof(r));
	put_common(r, ID_HRTIMER_START, 0x00, 0x00, 0);
	put64(r, 8, 0xffff888012345678ull);
	put64(r, 16, 0xffffffff81234560ull);
	put64(r, 24, 5000000000ull);
	put64(r, 32, 4999950000ull);
	put32(r, 40, 1);
	r[44] = 1;
	CHECK_EQ_U64(kevent_decode(kf, ID_HRTIMER_START, r, 48, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_HRTIMER_START);
	CHECK_EQ_U64(ev.u.timer.timer, 0xffff888012345678ull);
	CHECK_EQ_U64(ev.u.timer.function, 0xffffffff81234560ull);
	CHECK_EQ_U64(ev.u.timer.expires, 5000000000ull);
	CHECK_STR(formatted(kf, ID_HRTIMER_START, r, 48),
	          "hrtimer_start: hrtimer=0xffff888012345678 function=0xffffffff81234560 expires=5000000000 "
	          "softexpires=4999950000 mode=0x1 was_armed=1");
	kformats_free(kf);
}

/* Formats that do not parse, or that libtraceevent parses but cannot be
 * trusted to print, kept beside good ones. */
static const char fmt_garbage[] = "garbage garbage\n";
static const char fmt_bad_print[] = "name: bad_print\n"
                                    "ID: 901\n"
                                    "format:\n"
                                    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                                    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
                                    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
                                    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
                                    "\n"
                                    "\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n"
                                    "\n"
                                    "print fmt: \"x=%d\", no_such_function(REC->x)\n";
/* REC->x / REC->y: libtraceevent 1.7.1 divides, and dies of SIGFPE at y 0 */
static const char fmt_divide[] = "name: divide\n"
                                 "ID: 902\n"
                                 "format:\n"
                                 "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                                 "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
                                 "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
                                 "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
                                 "\n"
                                 "\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n"
                                 "\tfield:int y;\toffset:12;\tsize:4;\tsigned:1;\n"
                                 "\n"
                                 "print fmt: \"q=%d\", REC->x / REC->y\n";
/* fields past what any record can hold */
static const char fmt_huge[] = "name: huge\n"
                               "ID: 903\n"
                               "format:\n"
                               "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                               "\n"
                               "\tfield:char x[70000];\toffset:8;\tsize:70000;\tsigned:0;\n"
                               "\n"
                               "print fmt: \"x=%s\", REC->x\n";

static void test_undecodable(void)
{
	struct kformats *kf = NULL;
	struct payload p = { 0 };
	struct kevent ev;
	char err[256] = "";
	uint8_t r[64];
	const struct kformat_event *e;

	CHECK_EQ_U64(kformats_new(&kf), 0);
	pl_varint(&p, 7);
	pl_entry(&p, ID_SWITCH, "sched", "sched_switch", fmt_sched_switch);
	pl_entry(&p, 999, "x", "y", fmt_garbage);
	/* the text is sched_switch's: its ID line disagrees with the entry */
	pl_entry(&p, 998, "sched", "sched_switch", fmt_sched_switch);
	pl_entry(&p, 901, "test", "bad_print", fmt_bad_print);
	pl_entry(&p, 902, "test", "divide", fmt_divide);
	pl_entry(&p, 903, "test", "huge", fmt_huge);
	pl_entry(&p, ID_WAKEUP, "sched", "sched_wakeup", fmt_sched_wakeup);
	if (!CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0))
		printf("  %s\n", err);
	CHECK_EQ_U64(kformats_count(kf), 7);
	CHECK_EQ_U64(kformats_undecodable(kf), 3);

	e = kformats_find(kf, 999);
	CHECK(e && !e->decodable && e->kind == KEV_OTHER);
	memset(r, 0, sizeof(r));
	CHECK_EQ_U64(kevent_decode(kf, 999, r, 16, &ev), -EBADMSG);
	CHECK(ev.fmt == e);
	CHECK_STR(formatted(kf, 999, r, 16), "y: <16 bytes, undecodable>");
	e = kformats_find(kf, 998);
	CHECK(e && !e->decodable && e->kind == KEV_OTHER);
	e = kformats_find(kf, 903);
	CHECK(e && !e->decodable);
	CHECK_EQ_U64(kevent_field_u64(kf, 903, r, sizeof(r), "x", &(uint64_t){ 0 }), -EBADMSG);

	/* the print fmt failed, the fields did not: printed field by field */
	e = kformats_find(kf, 901);
	CHECK(e && e->decodable && e->kind == KEV_OTHER);
	put_common(r, 901, 0, 0, 1);
	put32(r, 8, (uint32_t)-7);
	CHECK_EQ_U64(kevent_decode(kf, 901, r, 12, &ev), 0);
	CHECK_STR(formatted(kf, 901, r, 12), "bad_print: x=-7");
	/* a division by a field is never evaluated */
	e = kformats_find(kf, 902);
	CHECK(e && e->decodable && !e->print_safe);
	put_common(r, 902, 0, 0, 1);
	put32(r, 8, 10);
	put32(r, 12, 0);
	CHECK_STR(formatted(kf, 902, r, 16), "divide: x=10 y=0");

	/* the others are whole */
	switch_record(r, "a", 1, 0, "b", 2);
	CHECK_EQ_U64(kevent_decode(kf, ID_SWITCH, r, 64, &ev), 0);
	CHECK_EQ_U64(ev.kind, KEV_SWITCH);
	CHECK(kformats_find(kf, ID_WAKEUP) && kformats_find(kf, ID_WAKEUP)->decodable);
	pl_free(&p);
	kformats_free(kf);
}

/* A payload that must be refused whole, with a message. */
static void refused(struct kformats *kf, const struct payload *p, const char *what)
{
	char err[256] = "";
	uint32_t before = kformats_count(kf);

	if (!CHECK_EQ_U64(kformats_add(kf, p->buf, p->len, err, sizeof(err)), -EBADMSG))
		printf("  payload: %s\n", what);
	CHECK(!strncmp(err, "malformed kernel formats: ", 26));
	CHECK_EQ_U64(kformats_count(kf), before);
}

static void test_malformed(void)
{
	struct kformats *kf = NULL;
	struct payload p = { 0 };
	char err[256] = "";
	char *text;
	size_t i;

	CHECK_EQ_U64(kformats_new(&kf), 0);
	refused(kf, &p, "empty");
	CHECK_EQ_U64(kformats_add(kf, (const uint8_t *)"", 0, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: count cut short");

	pl_varint(&p, KFORMAT_COUNT_MAX + 1);
	refused(kf, &p, "count over the limit");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: 4097 entries (at most 4096)");
	pl_free(&p);

	/* two entries announced, one there: the first is not kept either */
	pl_varint(&p, 2);
	pl_entry(&p, ID_SWITCH, "sched", "sched_switch", fmt_sched_switch);
	refused(kf, &p, "entry missing");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: entry 2 of 2: id cut short");
	/* every cut of a whole payload */
	pl_free(&p);
	pl_fixtures(&p);
	for (i = 0; i < p.len; i++) {
		struct payload cut = { p.buf, i, i };

		refused(kf, &cut, "cut");
	}
	/* bytes after the last entry */
	pl_bytes(&p, "", 1);
	refused(kf, &p, "trailing byte");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: 1 bytes after the last entry");
	pl_free(&p);

	pl_varint(&p, 1);
	pl_entry(&p, 70000, "sched", "sched_switch", fmt_sched_switch);
	refused(kf, &p, "id over 65535");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: entry 1 of 1: id 70000 over 65535");
	pl_free(&p);

	pl_varint(&p, 1);
	pl_entry(&p, 1, "ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssX", "n", "t");
	refused(kf, &p, "system name of 65 bytes");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: entry 1 of 1: system name too long (at most 64 bytes)");
	pl_free(&p);

	pl_varint(&p, 1);
	pl_entry(&p, 1, "s", "", "t");
	refused(kf, &p, "empty event name");
	pl_free(&p);
	pl_varint(&p, 1);
	pl_entry(&p, 1, "s", "a\nb", "t");
	refused(kf, &p, "event name with a newline");
	pl_free(&p);

	text = malloc(KFORMAT_TEXT_MAX + 2);
	if (!text)
		abort();
	memset(text, 'x', KFORMAT_TEXT_MAX + 1);
	text[KFORMAT_TEXT_MAX + 1] = '\0';
	pl_varint(&p, 1);
	pl_entry(&p, 1, "s", "n", text);
	refused(kf, &p, "text over 64 KiB");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(err, "malformed kernel formats: entry 1 of 1: format text too long (at most 65536 bytes)");
	pl_free(&p);
	/* 64 KiB exactly is a text, if not a format */
	text[KFORMAT_TEXT_MAX] = '\0';
	pl_varint(&p, 1);
	pl_entry(&p, 1, "s", "n", text);
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0);
	CHECK_EQ_U64(kformats_count(kf), 1);
	CHECK_EQ_U64(kformats_undecodable(kf), 1);
	pl_free(&p);
	free(text);

	/* a text length past the payload's end */
	pl_varint(&p, 1);
	pl_varint(&p, 5);
	pl_string(&p, "s", 1);
	pl_string(&p, "n", 1);
	pl_varint(&p, 100);
	pl_bytes(&p, "name: n\n", 8);
	refused(kf, &p, "text past the end");
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), -EBADMSG);
	CHECK_STR(
	    err,
	    "malformed kernel formats: entry 1 of 1: format text past the end of the payload (at most 65536 bytes)");
	pl_free(&p);
	kformats_free(kf);
}

/* sched_switch as a 32-bit 4.x kernel writes it, modelled on 4.9: prev_state
 * is a 4-byte long, the state table is the older one (TASK_STATE_MAX 2048
 * marks a preempted task, no I) and the layout shifts after prev_state. */
static const char fmt_switch_4x_32[] =
    "name: sched_switch\n"
    "ID: 273\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:4;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:36;\tsize:16;\tsigned:1;\n"
    "\tfield:pid_t next_pid;\toffset:52;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d "
    "next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state & (2048-1) ? "
    "__print_flags(REC->prev_state & (2048-1), \"|\", { 1, \"S\"} , { 2, \"D\" }, { 4, \"T\" }, { 8, \"t\" }, "
    "{ 16, \"Z\" }, { 32, \"X\" }, { 64, \"x\" }, { 128, \"K\" }, { 256, \"W\" }, { 512, \"P\" }, { 1024, \"N\" }) "
    ": \"R\", REC->prev_state & 2048 ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

/* The letters come from the trace's own table, whatever the kernel. */
static void test_switch_4x_32(void)
{
	static const struct {
		int64_t state;
		char letter;
		const char *printed;
	} states[] = {
		{ 0, 'R', "R" },    { 2048, 'R', "R+" }, { 1, 'S', "S" },    { 2, 'D', "D" },  { 0x82, 'D', "D|K" },
		{ 4, 'T', "T" },    { 8, 'T', "t" },     { 16, 'Z', "Z" },   { 32, 'X', "X" }, { 64, '?', "x" },
		{ 1024, '?', "N" }, { 2049, 'S', "S+" }, { 4096, '?', "R" },
	};
	struct kformats *kf = NULL;
	struct payload p = { 0 };
	struct kevent ev;
	char err[256] = "";
	uint8_t r[60];
	size_t i;

	CHECK_EQ_U64(kformats_new(&kf), 0);
	pl_varint(&p, 1);
	pl_entry(&p, 273, "sched", "sched_switch", fmt_switch_4x_32);
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0);
	CHECK_EQ_U64(kformats_find(kf, 273)->kind, KEV_SWITCH);
	CHECK(kformats_find(kf, 273)->print_safe);
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		char want[256];

		memset(r, 0, sizeof(r));
		put_common(r, 273, 0, 0, 10);
		memcpy(r + 8, "app", 3);
		put32(r, 24, 10);
		put32(r, 28, 120);
		put32(r, 32, (uint32_t)states[i].state);
		memcpy(r + 36, "swapper", 7);
		put32(r, 52, 0);
		put32(r, 56, 120);
		CHECK_EQ_U64(kevent_decode(kf, 273, r, sizeof(r), &ev), 0);
		CHECK_EQ_U64(ev.u.sw.prev_state, states[i].state);
		CHECK_STR(ev.u.sw.next_comm, "swapper");
		if (!CHECK_EQ_U64(kevent_switch_state(&ev), states[i].letter))
			printf("  prev_state %#llx\n", (unsigned long long)states[i].state);
		snprintf(want, sizeof(want),
		         "sched_switch: prev_comm=app prev_pid=10 prev_prio=120 prev_state=%s ==> next_comm=swapper "
		         "next_pid=0 next_prio=120",
		         states[i].printed);
		CHECK_STR(formatted(kf, 273, r, sizeof(r)), want);
	}
	/* a 4-byte long sign-extends */
	put32(r, 32, (uint32_t)-1);
	CHECK_EQ_U64(kevent_decode(kf, 273, r, sizeof(r), &ev), 0);
	CHECK_EQ_U64(ev.u.sw.prev_state, (uint64_t)(int64_t)-1);
	CHECK_EQ_U64(kevent_decode(kf, 273, r, 59, &ev), -EBADMSG);
	pl_free(&p);
	kformats_free(kf);
}

/* Live sessions can send formats in several payloads; an id sent again
 * keeps its first format. */
static void test_several_payloads(void)
{
	struct kformats *kf = NULL;
	struct payload p = { 0 };
	char err[256] = "";

	CHECK_EQ_U64(kformats_new(&kf), 0);
	pl_varint(&p, 1);
	pl_entry(&p, ID_SWITCH, "sched", "sched_switch", fmt_sched_switch);
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0);
	pl_free(&p);
	pl_varint(&p, 2);
	pl_entry(&p, ID_SWITCH, "sched", "sched_switch", fmt_garbage);
	pl_entry(&p, ID_HRTIMER_START, "timer", "hrtimer_start", fmt_hrtimer_start);
	CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0);
	CHECK_EQ_U64(kformats_count(kf), 2);
	CHECK_EQ_U64(kformats_undecodable(kf), 0);
	CHECK(kformats_find(kf, ID_SWITCH)->decodable);
	CHECK_EQ_U64(kformats_find(kf, ID_HRTIMER_START)->kind, KEV_HRTIMER_START);
	pl_free(&p);
	kformats_free(kf);
}

/* xorshift64*: the same bytes on every run (-DKFORMAT_FUZZ_SEED=N for
 * others, by hand) */
#ifndef KFORMAT_FUZZ_SEED
#define KFORMAT_FUZZ_SEED 0x9e3779b97f4a7c15ull
#endif
static uint64_t rnd_state = KFORMAT_FUZZ_SEED;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dull;
}

/* Random records, and a valid one cut at every length, for every format
 * of the set: decoding and printing must never fail otherwise than by
 * their return value (run under ASan to see a stray read). */
static unsigned long fuzz_records(const struct kformats *kf, unsigned rounds)
{
	static uint8_t r[1024];
	unsigned long decoded = 0;
	uint32_t i;
	unsigned k;

	for (i = 0; i < kformats_count(kf); i++) {
		const struct kformat_event *e = kformats_at(kf, i);
		size_t base = e->fixed_end ? e->fixed_end : 16;

		for (k = 0; k < rounds; k++) {
			struct kevent ev;
			char line[512];
			uint64_t v;
			size_t len = (size_t)(rnd() % (base + 64 < sizeof(r) ? base + 64 : sizeof(r)));
			size_t j;

			for (j = 0; j < len; j++)
				r[j] = (uint8_t)rnd();
			/* often a __data_loc that points inside, as real ones do */
			if (len >= 4 && e->ndynamic && (k & 1)) {
				const struct kformat_field *d = &e->dynamic[rnd() % e->ndynamic];

				if (d->offset + 4u <= len)
					put_loc(r, d->offset, (uint16_t)(rnd() % len), (uint16_t)(rnd() % 16));
			}
			if (len >= 2)
				put16(r, 0, (uint16_t)e->id);
			if (kevent_decode(kf, e->id, r, len, &ev) == 0) {
				decoded++;
				kevent_switch_state(&ev);
			}
			kevent_format(kf, e->id, r, len, line, sizeof(line));
			kevent_field_u64(kf, e->id, r, len, "common_pid", &v);
		}
	}
	return decoded;
}

/* Payloads and format texts with random damage: each is kept, refused or
 * undecodable, and what is kept decodes random records safely. */
static void test_fuzz(void)
{
	/* pieces of print fmts and field lines, written over a text */
	static const char *const tokens[] = {
		"REC->",
		"REC->prev_pid",
		"REC->nosuch",
		"__print_symbolic(",
		"__print_flags(",
		"__get_str(",
		"__get_str(nosuch)",
		"__get_dynamic_array(",
		"__print_hex(",
		"__print_array(",
		"{ 0, \"a\" }",
		"(",
		")",
		"{",
		"}",
		"[",
		"]",
		",",
		"\"",
		"/ 0",
		"% 0",
		"/ REC->prev_pid",
		"*",
		"?",
		":",
		"sizeof(",
		"(int)",
		"0x",
		"-",
		"\tfield:",
		";",
		"\n",
		"\t",
		"offset:99999;",
		"size:0;",
		"[]",
		"char[] x",
		"__data_loc ",
		"print fmt: ",
		"%s",
		"%d",
		"%pI6",
		"%*s",
		"%.*s",
		"<<",
		">> 70",
	};
	struct kformats *kf = fixture_set();
	struct payload p = { 0 };
	unsigned long decoded, printed = 0, by_fields = 0;
	unsigned k;

	decoded = fuzz_records(kf, 3000);
	CHECK(decoded > 0);
	kformats_free(kf);

	LEAK_CHECK_OFF();
	pl_fixtures(&p);
	for (k = 0; k < 300 * KFORMAT_FUZZ_SCALE; k++) {
		uint8_t *copy = malloc(p.len);
		struct kformats *set = NULL;
		char err[256];
		unsigned flips = 1 + (unsigned)(rnd() % 8), j;
		int ret;

		if (!copy || kformats_new(&set) < 0)
			abort();
		memcpy(copy, p.buf, p.len);
		for (j = 0; j < flips; j++)
			copy[rnd() % p.len] = (uint8_t)rnd();
		ret = kformats_add(set, copy, p.len, err, sizeof(err));
		CHECK(ret == 0 || ret == -EBADMSG);
		fuzz_records(set, 20);
		kformats_free(set);
		free(copy);
	}
	/* damage inside the texts only: the framing stays */
	for (k = 0; k < 600 * KFORMAT_FUZZ_SCALE; k++) {
		const struct fixture *fx = &fixtures[k % NFIXTURES];
		size_t n = strlen(fx->text), from, j;
		char *text = malloc(n + 1);
		struct kformats *set = NULL;
		struct payload q = { 0 };
		char err[256];

		if (!text || kformats_new(&set) < 0)
			abort();
		memcpy(text, fx->text, n + 1);
		/* a third of the rounds damage only the print fmt */
		from = k % 3 ? 20 : (size_t)(strstr(text, "print fmt: ") - text) + 11;
		for (j = 0; j < 1 + rnd() % 4; j++) {
			size_t at = from + (size_t)(rnd() % (n - from));
			const char *tok = tokens[rnd() % (sizeof(tokens) / sizeof(tokens[0]))];

			if (k & 2)
				text[at] = "0123456789 ;:()[]{}\"\\,|&*+-/%<>?!._xRECprint"[rnd() % 45];
			else if (strlen(tok) < n - at)
				memcpy(text + at, tok, strlen(tok));
		}
		if (k & 1)
			text[from + rnd() % (n - from)] = '\0';
		pl_varint(&q, 1);
		pl_entry(&q, fx->id, fx->system, fx->name, text);
		CHECK_EQ_U64(kformats_add(set, q.buf, q.len, err, sizeof(err)), 0);
		if (kformats_count(set) == 1 && kformats_at(set, 0)->decodable)
			kformats_at(set, 0)->print_safe ? printed++ : by_fields++;
		fuzz_records(set, 50);
		pl_free(&q);
		kformats_free(set);
		free(text);
	}
	pl_free(&p);
	LEAK_CHECK_ON();
	printf("fuzz: %lu random records of the fixtures decoded; of the damaged texts, %lu printed with their print "
	       "fmt, %lu field by field, the rest undecodable\n",
	       decoded, printed, by_fields);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How many sched_switch records a second decode (printed, not checked:
 * it depends on the machine and the build). */
static void test_throughput(void)
{
	struct kformats *kf = fixture_set();
	enum { N = 5000000 };
	static uint8_t r[8][64];
	struct kevent ev;
	uint64_t sum = 0;
	double t0, t;
	unsigned i;

	for (i = 0; i < 8; i++)
		switch_record(r[i], "bash", (int32_t)(100 + i), i & 1, "kworker/0:1", (int32_t)(200 + i));
	t0 = now_s();
	for (i = 0; i < N; i++) {
		if (kevent_decode(kf, ID_SWITCH, r[i & 7], 64, &ev) == 0)
			sum += (uint64_t)ev.u.sw.next_pid + (uint64_t)kevent_switch_state(&ev);
	}
	t = now_s() - t0;
	CHECK(sum > 0);
	printf("throughput: sched_switch decode %.1f M events/s (%d records in %.3f s)\n", N / t / 1e6, N, t);
	t0 = now_s();
	for (i = 0; i < N / 50; i++) {
		char line[256];

		kevent_format(kf, ID_SWITCH, r[i & 7], 64, line, sizeof(line));
	}
	t = now_s() - t0;
	printf("throughput: sched_switch format %.2f M events/s\n", N / 50 / t / 1e6);
	kformats_free(kf);

	t0 = now_s();
	for (i = 0; i < 200; i++)
		kformats_free(fixture_set());
	t = now_s() - t0;
	printf("throughput: kformats_add %.1f us per format\n", t / 200 / NFIXTURES * 1e6);
}

/* ---- this machine's formats ---- */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(KFORMAT_TEXT_MAX + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, KFORMAT_TEXT_MAX, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* Every format of the groups the analyses read, from tracefs: each must
 * parse, each known event must get its kind. */
static void test_tracefs(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events" };
	static const char *const groups[] = { "sched", "irq", "exceptions", "block", "timer" };
	const char *root = NULL;
	struct kformats *kf = NULL;
	unsigned known = 0, printed = 0, n = 0;
	size_t g, i;
	char path[512];

	for (i = 0; i < 2 && !root; i++) {
		snprintf(path, sizeof(path), "%s/sched/sched_switch/format", roots[i]);
		if (access(path, R_OK) == 0)
			root = roots[i];
	}
	if (!root) {
		printf("tracefs: skipped, no readable /sys/kernel/tracing/events/sched/sched_switch/format (%s)\n",
		       strerror(errno));
		return;
	}
	CHECK_EQ_U64(kformats_new(&kf), 0);
	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		struct payload p = { 0 }, entries = { 0 };
		unsigned count = 0;
		struct dirent *de;
		char err[256] = "";
		DIR *d;

		snprintf(path, sizeof(path), "%s/%s", root, groups[g]);
		d = opendir(path);
		if (!d) {
			printf("tracefs: no group %s here\n", groups[g]);
			continue;
		}
		while ((de = readdir(d))) {
			char *text, *idtext;
			size_t len = 0, idlen = 0;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s/format", root, groups[g], de->d_name);
			text = read_file(path, &len);
			snprintf(path, sizeof(path), "%s/%s/%s/id", root, groups[g], de->d_name);
			idtext = read_file(path, &idlen);
			if (text && idtext) {
				pl_varint(&entries, strtoul(idtext, NULL, 10));
				pl_string(&entries, groups[g], strlen(groups[g]));
				pl_string(&entries, de->d_name, strlen(de->d_name));
				pl_string(&entries, text, len);
				count++;
			}
			free(text);
			free(idtext);
		}
		closedir(d);
		pl_varint(&p, count);
		pl_bytes(&p, entries.buf, entries.len);
		if (!CHECK_EQ_U64(kformats_add(kf, p.buf, p.len, err, sizeof(err)), 0))
			printf("  %s: %s\n", groups[g], err);
		pl_free(&p);
		pl_free(&entries);
	}
	for (i = 0; i < kformats_count(kf); i++) {
		const struct kformat_event *e = kformats_at(kf, (uint32_t)i);

		n++;
		if (!CHECK(e->decodable))
			printf("  %s:%s does not parse\n", e->system, e->name);
		if (e->kind != KEV_OTHER)
			known++;
		if (e->print_safe)
			printed++;
		else
			printf("tracefs: %s:%s is printed field by field\n", e->system, e->name);
	}
	/* every known event this kernel has is classified */
	{
		static const char *const names[] = {
			"sched_switch",       "sched_wakeup",         "sched_wakeup_new",    "sched_waking",
			"sched_process_fork", "sched_process_exec",   "sched_process_exit",  "irq_handler_entry",
			"irq_handler_exit",   "softirq_entry",        "softirq_exit",        "softirq_raise",
			"block_rq_issue",     "block_rq_insert",      "block_rq_complete",   "block_bio_queue",
			"hrtimer_start",      "hrtimer_expire_entry", "hrtimer_expire_exit", "hrtimer_cancel",
			"timer_start",        "timer_expire_entry",   "timer_expire_exit",   "timer_cancel",
			"page_fault_user",    "page_fault_kernel"
		};
		size_t j;

		for (j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			for (i = 0; i < kformats_count(kf); i++) {
				const struct kformat_event *e = kformats_at(kf, (uint32_t)i);

				if (!strcmp(e->name, names[j]) && !CHECK(e->kind != KEV_OTHER))
					printf("  %s:%s not classified\n", e->system, e->name);
			}
	}
	fuzz_records(kf, 200);
	printf("tracefs: %u formats of sched, irq, exceptions, block, timer from %s parsed, %u of known kinds, %u "
	       "printed with their print fmt\n",
	       n, root, known, printed);
	kformats_free(kf);
}

/* ---- kernel events as leaves of the call tree ---- */

/* One kernel event of thread s: record r (len bytes) of tracepoint id at
 * ns, with depth functions open, in the system call entered at sc_enter_ns
 * (0: none). */
static void tree_event(struct calltree *ct, struct walk_stream *s, uint32_t id, const uint8_t *r, size_t len,
                       uint64_t ns, uint32_t depth, uint64_t sc_enter_ns)
{
	struct walk_kernel k = { .ns = ns, .id = id, .raw = r, .raw_len = (uint32_t)len, .depth = depth };

	k.in_syscall = sc_enter_ns != 0;
	k.sc_nr = k.in_syscall ? 35 : 0;
	k.sc_enter_ns = sc_enter_ns;
	calltree_kernel(ct, s, &k);
}

/* The child of node i with key addr, 0 when none. */
static uint32_t tree_child(const struct calltree_stream *t, uint32_t i, uint64_t addr)
{
	for (i = t->nodes[i].first_child; i; i = t->nodes[i].next_sibling)
		if (t->nodes[i].addr == addr)
			return i;
	return 0;
}

static void test_calltree_leaves(void)
{
	enum { TID = 100, MAIN = 0x1000, SLEEPER = 0x2000 };
	const uint64_t sys_key = CALLTREE_SYSCALL_KEY(0, 35), sw_key = CALLTREE_KERNEL_KEY(ID_SWITCH);
	struct walk_syscall sc = { .nr = 35,
		                   .has_enter = true,
		                   .has_exit = true,
		                   .enter_ns = 100,
		                   .exit_ns = 2300,
		                   .depth = 2,
		                   .func = SLEEPER };
	struct walk_stream s = { .tid = TID };
	const struct calltree_stream *t;
	const struct calltree_node *nd;
	struct payload p = { 0 };
	uint32_t len, m, sl, sys, sw, i;
	struct calltree ct;
	struct walk w;
	uint8_t r[64];
	char name[64];

	CHECK(CALLTREE_IS_SYSCALL(sys_key) && !CALLTREE_IS_KERNEL(sys_key) && CALLTREE_IS_LEAF(sys_key));
	CHECK(CALLTREE_IS_KERNEL(sw_key) && !CALLTREE_IS_SYSCALL(sw_key) && CALLTREE_IS_LEAF(sw_key));
	CHECK(!CALLTREE_IS_LEAF(0x7fffffffffffffffull) && CALLTREE_KERNEL_ID(sw_key) == ID_SWITCH);
	/* a walk that holds the fixtures as a trace's KFORMAT payload */
	memset(&w, 0, sizeof(w));
	pl_bytes(&p, "\0\0\0\0", 4);
	pl_fixtures(&p);
	len = (uint32_t)p.len - 4;
	memcpy(p.buf, &len, 4);
	w.kformat = p.buf;
	w.kformat_len = p.len;
	s.w = &w;
	calltree_init(&ct);
	calltree_begin(&ct, &s);
	calltree_entry(&ct, &s, 0, MAIN, 0, 0);
	calltree_entry(&ct, &s, 10, SLEEPER, 1, 0);
	/* in nanosleep (entered at 100): off the CPU from 200 to 2200; the
	 * switch-in is no event of its own */
	switch_record(r, "app", TID, 1, "swapper/0", 0);
	tree_event(&ct, &s, ID_SWITCH, r, 64, 200, 2, 100);
	switch_record(r, "swapper/0", 0, 0, "app", TID);
	tree_event(&ct, &s, ID_SWITCH, r, 64, 2200, 2, 100);
	calltree_syscall(&ct, &s, &sc);
	/* in sleeper: a fault, then a softirq interrupted by an irq, their
	 * exits not delivered: they end at sleeper's exit */
	memset(r, 0, sizeof(r));
	put_common(r, ID_FAULT_USER, 0, 0, TID);
	tree_event(&ct, &s, ID_FAULT_USER, r, 32, 2400, 2, 0);
	memset(r, 0, sizeof(r));
	put_common(r, ID_SOFTIRQ_ENTRY, 0x10, 0, TID);
	tree_event(&ct, &s, ID_SOFTIRQ_ENTRY, r, 12, 2500, 2, 0);
	memset(r, 0, sizeof(r));
	put_common(r, ID_IRQ_ENTRY, 0x09, 0, TID);
	put_loc(r, 12, 16, 5);
	memcpy(r + 16, "eth0", 5);
	tree_event(&ct, &s, ID_IRQ_ENTRY, r, 21, 2550, 2, 0);
	calltree_exit(&ct, &s, 2600, SLEEPER, 1, 10, 0);
	/* in main: preempted at 2700, switched out again at 2800 (the
	 * switch-in between not delivered), back at 3000 */
	switch_record(r, "app", TID, 0, "other", 7);
	tree_event(&ct, &s, ID_SWITCH, r, 64, 2700, 1, 0);
	tree_event(&ct, &s, ID_SWITCH, r, 64, 2800, 1, 0);
	switch_record(r, "other", 7, 1, "app", TID);
	tree_event(&ct, &s, ID_SWITCH, r, 64, 3000, 1, 0);
	calltree_exit(&ct, &s, 3100, MAIN, 0, 0, 0);

	t = calltree_stream(&ct, 0);
	if (!CHECK(t && !ct.oom))
		goto out;
	m = tree_child(t, 0, MAIN);
	sl = tree_child(t, m, SLEEPER);
	sys = tree_child(t, sl, sys_key);
	sw = tree_child(t, sys, sw_key);
	if (!CHECK(m && sl && sys && sw))
		goto out;
	CHECK_EQ_U64(t->nodes[sys].nchildren, 1);
	nd = &t->nodes[sw];
	CHECK_EQ_U64(nd->calls, 1);
	CHECK_EQ_U64(nd->total_ns, 2000);
	CHECK_EQ_U64(nd->self_ns, 2000);
	CHECK_EQ_U64(t->nodes[sys].calls, 1);
	CHECK_EQ_U64(t->nodes[sys].total_ns, 2200);
	CHECK_EQ_U64(t->nodes[sys].self_ns, 200);
	i = tree_child(t, sl, CALLTREE_KERNEL_KEY(ID_FAULT_USER));
	CHECK(i && t->nodes[i].calls == 1 && t->nodes[i].total_ns == 0 && t->nodes[i].min_ns == UINT64_MAX);
	i = tree_child(t, sl, CALLTREE_KERNEL_KEY(ID_SOFTIRQ_ENTRY));
	CHECK(i && t->nodes[i].calls == 1 && t->nodes[i].total_ns == 100 && t->nodes[i].self_ns == 50);
	i = tree_child(t, sl, CALLTREE_KERNEL_KEY(ID_IRQ_ENTRY));
	CHECK(i && t->nodes[i].calls == 1 && t->nodes[i].total_ns == 50 && t->nodes[i].self_ns == 50);
	/* sleeper's self time: its 2590 ns less the syscall and the handlers */
	CHECK_EQ_U64(t->nodes[sl].total_ns, 2590);
	CHECK_EQ_U64(t->nodes[sl].self_ns, 2590 - 2200 - 100);
	CHECK_EQ_U64(t->nodes[sl].prof_self_ns, 2590);
	i = tree_child(t, m, sw_key);
	CHECK(i && t->nodes[i].calls == 2 && t->nodes[i].total_ns == 300 && t->nodes[i].min_ns == 100 &&
	      t->nodes[i].max_ns == 200);
	CHECK_EQ_U64(t->nodes[m].self_ns, 3100 - 2590 - 300);
	CHECK_EQ_U64(t->nodes[m].prof_self_ns, 3100 - 2590);
	CHECK_EQ_U64(t->nodes[m].nchildren, 2);

	CHECK_STR(calltree_key_name(&w, 0, sw_key, true, name, sizeof(name)), "[kernel] sched:sched_switch");
	CHECK_STR(calltree_key_name(&w, 0, sw_key, false, name, sizeof(name)), "sched:sched_switch");
	CHECK_STR(calltree_key_name(&w, 0, CALLTREE_KERNEL_KEY(4242), true, name, sizeof(name)),
	          "[kernel] tracepoint 4242");
	CHECK_STR(calltree_key_name(NULL, 0, sw_key, false, name, sizeof(name)), "tracepoint 372");
	CHECK_STR(calltree_key_name(NULL, 0, 0x1234, false, name, sizeof(name)), "0x1234");
out:
	calltree_release(&ct);
	if (w.kformat_cache)
		w.kformat_cache_free(w.kformat_cache);
	pl_free(&p);
}

int main(void)
{
	test_kinds();
	test_switch();
	test_sched_others();
	test_fault_irq();
	test_block_timer();
	test_undecodable();
	test_malformed();
	test_switch_4x_32();
	test_several_payloads();
	test_calltree_leaves();
	test_fuzz();
	test_tracefs();
	test_throughput();
	return check_summary();
}
