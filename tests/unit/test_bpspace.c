/* Unit test of dyntrace/bpspace (the ptrace backend's traps and frames),
 * against a buffer of this process written through /proc/self/mem as the
 * tracer writes a tracee's code: a return address holds a trap while a
 * frame returns there and gets its bytes back with the last one; an
 * entry's trap stays; bytes changed under a removed trap (code loaded
 * anew) are the ones put back; a space whose memory is gone is not
 * written; restore and prune take the traps out.  Where the writes do not
 * land in this buffer (qemu-user maps guest memory elsewhere) it says so
 * and checks nothing. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "dyntrace/bptrace_impl.h"
#include "tests/unit/check.h"

static uint8_t code[256];
static const uint8_t trap[BP_LEN] = BP_INSN;

static uint64_t at(unsigned off)
{
	return (uint64_t)(uintptr_t)&code[off];
}

static int trapped(unsigned off)
{
	return !memcmp(&code[off], trap, BP_LEN);
}

static int original(unsigned off)
{
	for (unsigned i = 0; i < BP_LEN; i++)
		if (code[off + i] != (uint8_t)(off + i))
			return 0;
	return 1;
}

static void test_returns(struct bptrace *b, struct bp_task *t)
{
	struct bp_site *site;

	CHECK(frame_push(b, t, 0, 1000, at(16)));
	CHECK(trapped(16));
	CHECK(frame_push(b, t, 0, 900, at(16)));
	site = site_find(t->space, at(16));
	CHECK(site && site->refs == 2 && site->inserted && site->fn == BP_NO_FN);
	frame_pop(b, t);
	CHECK(trapped(16));
	frame_pop(b, t);
	CHECK(original(16));
	CHECK(site_find(t->space, at(16)) && !site_find(t->space, at(16))->inserted);
	CHECK_EQ_U64(t->depth, 0);
	/* a frame with no return address watched: no trap anywhere */
	CHECK(frame_push(b, t, 0, 800, 0));
	CHECK_EQ_U64(t->stack[0].ret, 0);
	frame_pop(b, t);
}

/* Code loaded anew where a removed trap was: the next trap there keeps
 * the new bytes, and they are what comes back. */
static void test_new_code(struct bptrace *b, struct bp_task *t)
{
	CHECK(frame_push(b, t, 0, 1000, at(32)));
	frame_pop(b, t);
	CHECK(original(32));
	code[32] ^= 0x5a;
	CHECK(frame_push(b, t, 0, 1000, at(32)));
	CHECK(trapped(32));
	frame_pop(b, t);
	CHECK_EQ_U64(code[32], (uint8_t)(32 ^ 0x5a));
	code[32] ^= 0x5a;
}

/* A traced function's entry (bias 0: this program's own entry point is
 * the file's) is trapped at the exec and stays trapped when a frame that
 * returned there is done. */
static void test_entry(struct bptrace *b)
{
	struct bp_space *s = space_new();
	struct bp_task *t = calloc(1, sizeof(*t));
	struct dsel_fn fn = { at(64), 0, "f" };

	if (!CHECK(s && t))
		return;
	space_join(t, s);
	b->e_entry = getauxval(AT_ENTRY);
	b->sel.fn = &fn;
	b->sel.nfn = 1;
	CHECK_EQ_U64(space_exec(b, s, getpid()), 0);
	CHECK_EQ_U64(s->bias, 0);
	CHECK(trapped(64));
	CHECK(site_find(s, at(64)) && site_find(s, at(64))->fn == 0);
	CHECK(frame_push(b, t, 0, 1000, at(64)));
	frame_pop(b, t);
	CHECK(trapped(64));
	/* prune leaves entries; restore takes every trap out */
	CHECK(frame_push(b, t, 0, 1000, at(96)));
	site_find(s, at(96))->refs = 0;
	space_prune(b, s);
	CHECK(original(96));
	CHECK(trapped(64));
	space_restore(b, s);
	CHECK(original(64));
	t->depth = 0;
	b->sel.fn = NULL;
	b->sel.nfn = 0;
	space_leave(t);
	free(t->stack);
	free(t);
}

/* Memory that is gone is never written. */
static void test_dead(struct bptrace *b, struct bp_task *t)
{
	t->space->dead = true;
	CHECK(frame_push(b, t, 0, 1000, at(128)));
	CHECK(original(128));
	CHECK_EQ_U64(t->stack[0].ret, 0);
	frames_drop(b, t);
	CHECK_EQ_U64(t->depth, 0);
	t->space->dead = false;
}

int main(void)
{
	struct bptrace *b = calloc(1, sizeof(*b));
	struct bp_task *t = calloc(1, sizeof(*t));
	struct bp_space *s = space_new();
	uint8_t probe = 0xa5;

	for (unsigned i = 0; i < sizeof(code); i++)
		code[i] = (uint8_t)i;
	if (!CHECK(b && t && s))
		return check_summary();
	if (!BP_SUPPORTED) {
		printf("skip: the ptrace backend is not built for this architecture\n");
		return check_summary();
	}
	s->memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (s->memfd < 0 || pwrite(s->memfd, &probe, 1, (off_t)at(200)) != 1 || code[200] != 0xa5) {
		printf("skip: /proc/self/mem does not write this process's memory here\n");
		return check_summary();
	}
	code[200] = 200;
	space_join(t, s);
	test_returns(b, t);
	test_new_code(b, t);
	test_dead(b, t);
	test_entry(b);
	CHECK(!b->werr[0]);
	space_leave(t);
	free(t->stack);
	free(t);
	free(b);
	return check_summary();
}
