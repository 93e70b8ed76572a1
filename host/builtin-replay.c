/* layerprof replay: every entry and exit in time order, per thread,
 * indented by depth, with durations.  One pass over the trace; each
 * thread's lines go to a temporary file and are printed thread by thread. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/syncevent.h"
#include "common/systab.h"
#include "host/builtin.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/kformat.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/trace/cxxname.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

#define REPLAY_OPEN_FILES_MAX 4096u

static const char replay_usage[] =
    "usage: layerprof replay [options] [<trace dir>]\n"
    "\n"
    "Prints the calls of a trace (default layerprof.data) as they happened, thread\n"
    "by thread, indented by depth, with the duration of each call.  System calls\n"
    "(record --syscalls) appear inside the function that made them, as\n"
    "\"[sys] name(args) = result\"; heap operations (record --memory) as\n"
    "\"[mem] malloc(48) = 0x...  caller\"; kernel events (record --kernel) as\n"
    "\"[kernel] sched_switch: ...\", those during a system call under its line;\n"
    "synchronisation operations (record --sync) as \"[sync] mutex-lock 0x...\n"
    "flags=contended wait=12.500us obj2=0 tid=N site=caller+0x1c\".\n"
    "The C library calls of record --libcalls show their arguments and result,\n"
    "as \"write@plt(1, \"hi\\n\", 3) = 3\".  Counter values (record --counters) as\n"
    "\"[counters] entry work cycles=... page-faults=...\", one line each.\n"
    "\n"
    "      --format FMT      text (default) or json (one object per thread with\n"
    "                        its events)\n" FILTER_HELP "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 trace missing, empty, damaged or of another version.\n";

#define REPLAY_ARGS_MAX 512u

struct pending {
	bool set;
	uint64_t ns, addr;
	uint32_t depth;
	unsigned flags;
	bool has_args; /* --libcalls: the call's arguments, formatted */
	char args[REPLAY_ARGS_MAX];
};

struct rstream {
	FILE *f;
	struct pending p;
	/* the return value of the call of ret_addr whose exit comes next */
	bool has_ret;
	uint64_t ret_addr;
	char ret[64];
	uint64_t events;
	/* kernel events during the syscall under way: printed after it, whose
	 * line comes at its exit */
	char *kbuf;
	size_t klen, kcap;
	bool kbuf_over;
};

#define REPLAY_KBUF_MAX (16u << 20)

struct replay {
	struct walk w;
	const struct kformats *kf;
	bool json;
	uint64_t t0;
	int error;
};

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct replay *rp = ctx;
	struct rstream *rs;

	if (!rp->t0 || s->first_ns < rp->t0)
		rp->t0 = s->first_ns;
	if (s->index >= REPLAY_OPEN_FILES_MAX) {
		rp->error = -EMFILE;
		return;
	}
	rs = calloc(1, sizeof(*rs));
	if (!rs || !(rs->f = tmpfile())) {
		free(rs);
		rp->error = -errno;
		return;
	}
	s->user = rs;
}

static void time_col(const struct replay *rp, uint64_t ns, char *buf, size_t size)
{
	uint64_t t = ns > rp->t0 ? ns - rp->t0 : 0;

	snprintf(buf, size, "%llu.%06llu", (unsigned long long)(t / 1000000000u),
	         (unsigned long long)(t % 1000000000u / 1000u));
}

static void put_json_event(struct replay *rp, struct walk_stream *s, const char *type, uint64_t ns, uint64_t addr,
                           uint32_t depth, int64_t dur, unsigned flags, const char *args, const char *ret)
{
	struct rstream *rs = s->user;
	char name[1024];

	walk_name(&rp->w, s->image, addr, name, sizeof(name));
	fprintf(rs->f, "%s{\"type\":\"%s\",\"time_ns\":%llu,\"depth\":%u,\"name\":", rs->events ? "," : "", type,
	        (unsigned long long)ns, depth);
	json_write_string(rs->f, name);
	if (dur >= 0)
		fprintf(rs->f, ",\"duration_ns\":%lld", (long long)dur);
	if (flags & FILTER_UNFINISHED)
		fputs(",\"unfinished\":true", rs->f);
	if (flags & FILTER_INHERITED)
		fputs(",\"inherited\":true", rs->f);
	if (args) {
		fputs(",\"args\":", rs->f);
		json_write_string(rs->f, args);
	}
	if (ret) {
		fputs(",\"ret\":", rs->f);
		json_write_string(rs->f, ret);
	}
	fputc('}', rs->f);
	rs->events++;
}

/* What follows a function's name on a call line: "()", unless the name
 * has its parameter list already (C++: "ns::f(int)", not "ns::f(int)()"). */
static const char *call_parens(const char *name)
{
	struct cxxname cn;

	cxxname_split(name, &cn);
	return cn.has_params ? "" : "()";
}

/* A pending entry is printed as "name() {" unless its exit comes next. */
static void flush_pending(struct replay *rp, struct walk_stream *s)
{
	struct rstream *rs = s->user;
	char t[32], name[1024], mark[32];
	int indent;

	if (!rs->p.set)
		return;
	rs->p.set = false;
	if (rp->json) {
		put_json_event(rp, s, "entry", rs->p.ns, rs->p.addr, rs->p.depth, -1, rs->p.flags,
		               rs->p.has_args ? rs->p.args : NULL, NULL);
		return;
	}
	time_col(rp, rs->p.ns, t, sizeof(t));
	walk_name(&rp->w, s->image, rs->p.addr, name, sizeof(name));
	indent = options_indent(rs->p.depth, mark, sizeof(mark));
	if (rs->p.has_args)
		fprintf(rs->f, "%14s %12s | %*s%s%s(%s) {\n", t, "", indent, "", mark, name, rs->p.args);
	else
		fprintf(rs->f, "%14s %12s | %*s%s%s%s {%s\n", t, "", indent, "", mark, name, call_parens(name),
		        rs->p.flags & FILTER_INHERITED ? "   /* entered before fork */" : "");
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;

	if (!rs)
		return;
	flush_pending(rp, s);
	rs->p.set = true;
	rs->p.ns = ns;
	rs->p.addr = addr;
	rs->p.depth = depth;
	rs->p.flags = flags;
	rs->p.has_args = false;
}

/* The arguments of the call just entered: kept with its pending line. */
static void on_args(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, const struct libcsig_args *a)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	const struct libcsig *sig;
	char name[1024];

	(void)ns;
	if (!rs || !rs->p.set || rs->p.addr != addr)
		return;
	walk_name(&rp->w, s->image, addr, name, sizeof(name));
	sig = libcsig_find(name);
	if (!sig)
		return;
	libcsig_format_args(sig, a, 64, rs->p.args, sizeof(rs->p.args));
	rs->p.has_args = true;
}

/* A probed instruction, as a leaf at the depth of the calls its function
 * makes: "[probe] work+0x10". */
static void on_probe(void *ctx, struct walk_stream *s, const struct walk_probe *pr)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], name[1024];

	if (!rs)
		return;
	flush_pending(rp, s);
	walk_name(&rp->w, s->image, pr->addr, name, sizeof(name));
	if (rp->json) {
		fprintf(rs->f, "%s{\"type\":\"probe\",\"time_ns\":%llu,\"depth\":%u,\"name\":", rs->events ? "," : "",
		        (unsigned long long)pr->ns, pr->depth);
		json_write_string(rs->f, name);
		fputc('}', rs->f);
		rs->events++;
		return;
	}
	time_col(rp, pr->ns, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | %*s[probe] %s\n", t, "", (int)(2 * pr->depth), "", name);
}

/* The return value of the call whose exit comes next. */
static void on_retval(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint64_t value)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	const struct libcsig *sig;
	char name[1024];

	(void)ns;
	if (!rs)
		return;
	walk_name(&rp->w, s->image, addr, name, sizeof(name));
	sig = libcsig_find(name);
	rs->has_ret = sig && sig->ret != 'v';
	rs->ret_addr = addr;
	if (rs->has_ret)
		libcsig_format_ret(sig, value, 64, rs->ret, sizeof(rs->ret));
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], d[32], name[1024], mark[32];
	const char *note = flags & FILTER_UNFINISHED ? " (no exit)" : "";
	char ret[80] = "";
	bool has_ret;
	int indent;

	if (!rs)
		return;
	has_ret = rs->has_ret && rs->ret_addr == addr;
	rs->has_ret = false;
	if (rp->json) {
		flush_pending(rp, s);
		put_json_event(rp, s, "exit", ns, addr, depth, (int64_t)(ns - entry_ns), flags, NULL,
		               has_ret ? rs->ret : NULL);
		return;
	}
	if (has_ret)
		snprintf(ret, sizeof(ret), " = %s", rs->ret);
	options_format_duration(ns - entry_ns, d, sizeof(d));
	walk_name(&rp->w, s->image, addr, name, sizeof(name));
	indent = options_indent(depth, mark, sizeof(mark));
	if (rs->p.set && rs->p.depth == depth && rs->p.addr == addr) {
		rs->p.set = false;
		time_col(rp, entry_ns, t, sizeof(t));
		if (rs->p.has_args)
			fprintf(rs->f, "%14s %12s | %*s%s%s(%s)%s;%s\n", t, d, indent, "", mark, name, rs->p.args, ret,
			        note);
		else
			fprintf(rs->f, "%14s %12s | %*s%s%s%s%s;%s\n", t, d, indent, "", mark, name, call_parens(name),
			        ret, note);
		return;
	}
	flush_pending(rp, s);
	time_col(rp, ns, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | %*s%s}%s /* %s */%s\n", t, d, indent, "", mark, ret, name, note);
}

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32];

	if (!rs)
		return;
	flush_pending(rp, s);
	if (rp->json) {
		fprintf(rs->f, "%s{\"type\":\"lost\",\"time_ns\":%llu,\"count\":%llu}", rs->events ? "," : "",
		        (unsigned long long)ns, (unsigned long long)count);
		rs->events++;
		return;
	}
	time_col(rp, ns, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | *** %llu events lost ***\n", t, "", (unsigned long long)count);
}

/* Writes out the kernel events held for the syscall just printed. */
static void kbuf_flush(struct rstream *rs)
{
	if (rs->klen)
		fwrite(rs->kbuf, 1, rs->klen, rs->f);
	rs->klen = 0;
}

static void kbuf_put(struct rstream *rs, const char *line, size_t n)
{
	if (rs->klen + n > rs->kcap) {
		size_t cap = rs->kcap ? 2 * rs->kcap : 4096;
		char *g;

		while (cap < rs->klen + n)
			cap *= 2;
		g = cap <= REPLAY_KBUF_MAX ? realloc(rs->kbuf, cap) : NULL;
		if (!g) {
			/* a syscall with endless kernel events: print them now */
			kbuf_flush(rs);
			fwrite(line, 1, n, rs->f);
			rs->kbuf_over = true;
			return;
		}
		rs->kbuf = g;
		rs->kcap = cap;
	}
	memcpy(rs->kbuf + rs->klen, line, n);
	rs->klen += n;
}

/* What a kernel event means for the thread whose stream holds it. */
static const char *kernel_role(const struct kevent *ev, uint32_t tid)
{
	if (ev->kind == KEV_SWITCH && (uint32_t)ev->u.sw.prev_pid == tid)
		return "off CPU: ";
	if (ev->kind == KEV_SWITCH && (uint32_t)ev->u.sw.next_pid == tid)
		return "on CPU: ";
	if ((ev->kind == KEV_WAKEUP || ev->kind == KEV_WAKING) && (uint32_t)ev->u.wake.pid == tid &&
	    (uint32_t)ev->common_pid != tid)
		return "woken: ";
	if ((uint32_t)ev->common_pid != tid)
		return "for it: ";
	return "";
}

/* A kernel event, as a leaf; during a syscall, under the syscall's line. */
static void on_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	const struct kformat_event *fe;
	char t[32], text[1024], line[1400], name[160];
	struct kevent ev;
	uint32_t depth = k->depth + (k->in_syscall ? 1 : 0);
	int n;

	if (!rs)
		return;
	flush_pending(rp, s);
	if (!rp->kf)
		rp->kf = klayer_formats(&rp->w, NULL, 0);
	fe = rp->kf ? kformats_find(rp->kf, k->id) : NULL;
	if (fe)
		snprintf(name, sizeof(name), "%s:%s", fe->system, fe->name);
	else
		snprintf(name, sizeof(name), "tracepoint %u", k->id);
	if (rp->kf)
		kevent_format(rp->kf, k->id, k->raw, k->raw_len, text, sizeof(text));
	else
		snprintf(text, sizeof(text), "%s: <no format in the trace>", name);
	if (rp->json) {
		/* in time order, not held: a reader sorts by time_ns */
		fprintf(rs->f, "%s{\"type\":\"kernel\",\"time_ns\":%llu,\"depth\":%u,\"event\":", rs->events ? "," : "",
		        (unsigned long long)k->ns, depth);
		json_write_string(rs->f, name);
		fprintf(rs->f, ",\"cpu\":%u,\"in_syscall\":%s,\"text\":", k->cpu, k->in_syscall ? "true" : "false");
		json_write_string(rs->f, text);
		fputc('}', rs->f);
		rs->events++;
		return;
	} else {
		const char *role = "";

		if (rp->kf && !kevent_decode(rp->kf, k->id, k->raw, k->raw_len, &ev))
			role = kernel_role(&ev, s->tid);
		time_col(rp, k->ns, t, sizeof(t));
		n = snprintf(line, sizeof(line), "%14s %12s | %*s[kernel] %s%s\n", t, "", (int)(2 * depth), "", role,
		             text);
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	if (k->in_syscall)
		kbuf_put(rs, line, (size_t)n);
	else
		fwrite(line, 1, (size_t)n, rs->f);
}

/* A system call, as a leaf at the depth of the calls its function makes. */
static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], d[32], name[48], args[512], ret[128];
	uint64_t ns = sc->has_enter ? sc->enter_ns : sc->exit_ns;

	if (!rs)
		return;
	flush_pending(rp, s);
	sys_name((enum sys_arch)sc->arch, sc->nr, name, sizeof(name));
	sys_format_args((enum sys_arch)sc->arch, sc->nr, sc->args, sc->nargs, sc->str, sc->str_len, args, sizeof(args));
	if (sc->has_exit)
		sys_format_ret((enum sys_arch)sc->arch, sc->nr, sc->ret, ret, sizeof(ret));
	else
		snprintf(ret, sizeof(ret), "?");
	if (rp->json) {
		fprintf(rs->f, "%s{\"type\":\"syscall\",\"time_ns\":%llu,\"depth\":%u,\"name\":\"%s\",\"args\":",
		        rs->events ? "," : "", (unsigned long long)ns, sc->depth, name);
		json_write_string(rs->f, sc->has_enter ? args : "");
		fputs(",\"caller\":", rs->f);
		json_write_string(rs->f, sysstats_caller(&rp->w, s, sc, args, sizeof(args)));
		if (sc->has_exit)
			fprintf(rs->f, ",\"ret\":%lld", (long long)sc->ret);
		if (sc->has_exit && sc->has_enter)
			fprintf(rs->f, ",\"duration_ns\":%llu", (unsigned long long)(sc->exit_ns - sc->enter_ns));
		if (!sc->has_exit)
			fputs(",\"unfinished\":true", rs->f);
		fputc('}', rs->f);
		rs->events++;
		return;
	}
	time_col(rp, ns, t, sizeof(t));
	if (sc->has_enter && sc->has_exit)
		options_format_duration(sc->exit_ns - sc->enter_ns, d, sizeof(d));
	else
		d[0] = '\0';
	fprintf(rs->f, "%14s %12s | %*s[sys] %s(%s) = %s\n", t, d, (int)(2 * sc->depth), "", name,
	        sc->has_enter ? args : "...", ret);
	kbuf_flush(rs);
}

static const char *ptr_text(uint64_t p, char *buf, size_t size)
{
	if (p)
		snprintf(buf, size, "0x%llx", (unsigned long long)p);
	else
		snprintf(buf, size, "NULL");
	return buf;
}

/* A heap operation, as a leaf like a syscall, named with its call site. */
static void on_mem(void *ctx, struct walk_stream *s, const struct walk_mem *m)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], what[256], caller[1024], a[32], b[32];
	uint64_t frame;

	if (!rs)
		return;
	flush_pending(rp, s);
	frame = heapfeed_site_frame(&rp->w, s->image, m->ips, m->nips);
	if (frame)
		walk_name(&rp->w, s->image, frame, caller, sizeof(caller));
	else if (m->func)
		walk_name(&rp->w, s->image, m->func, caller, sizeof(caller));
	else
		snprintf(caller, sizeof(caller), "[unknown]");
	if (rp->json) {
		fprintf(rs->f, "%s{\"type\":\"mem\",\"time_ns\":%llu,\"depth\":%u,\"op\":\"%s\"", rs->events ? "," : "",
		        (unsigned long long)m->time, m->depth, heap_op_name(m->op));
		if (m->op == LP_MEM_FOLD)
			fprintf(rs->f, ",\"count\":%llu,\"bytes\":%llu,\"lifetime_ns\":%llu",
			        (unsigned long long)m->count, (unsigned long long)m->bytes,
			        (unsigned long long)m->lifetime_ns);
		else
			fprintf(rs->f, ",\"ptr\":\"0x%llx\",\"size\":%llu", (unsigned long long)m->ptr,
			        (unsigned long long)m->size);
		if (m->op == LP_MEM_REALLOC)
			fprintf(rs->f, ",\"old\":\"0x%llx\"", (unsigned long long)m->old);
		if (m->flags & LP_MEM_FAILED)
			fputs(",\"failed\":true", rs->f);
		if (m->flags & LP_MEM_KEPT)
			fputs(",\"kept\":true", rs->f);
		fputs(",\"caller\":", rs->f);
		json_write_string(rs->f, caller);
		fputc('}', rs->f);
		rs->events++;
		return;
	}
	switch (m->op) {
	case LP_MEM_FREE:
	case LP_MEM_DELETE:
	case LP_MEM_DELETE_ARRAY:
		snprintf(what, sizeof(what), "%s(%s)", heap_op_name(m->op), ptr_text(m->ptr, a, sizeof(a)));
		break;
	case LP_MEM_REALLOC:
		snprintf(what, sizeof(what), "realloc(%s, %llu) = %s", ptr_text(m->old, a, sizeof(a)),
		         (unsigned long long)m->size, ptr_text(m->ptr, b, sizeof(b)));
		break;
	case LP_MEM_FOLD:
		snprintf(what, sizeof(what), "fold: %llu blocks, %llu bytes, each freed within %llu ns",
		         (unsigned long long)m->count, (unsigned long long)m->bytes,
		         (unsigned long long)m->lifetime_ns);
		break;
	default:
		snprintf(what, sizeof(what), "%s(%llu) = %s", heap_op_name(m->op), (unsigned long long)m->size,
		         ptr_text(m->ptr, a, sizeof(a)));
		break;
	}
	time_col(rp, m->time, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | %*s[mem] %s  %s%s\n", t, "", (int)(2 * m->depth), "", what, caller,
	        (m->flags & LP_MEM_KEPT) ? " [kept from libc]" : "");
}

static void sync_flags_text(uint32_t flags, char *buf, size_t size)
{
	static const char *const names[] = { "contended", "try", "failed", "timed", "timedout", "serial" };
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & (1u << i))
			n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? "," : "", names[i]);
	if (!n)
		snprintf(buf, size, "-");
}

/* A synchronisation operation, as a leaf like a syscall: its object, how
 * it went, how long it waited, its call site. */
static void on_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], flags[96], site[1024];

	if (!rs)
		return;
	flush_pending(rp, s);
	sync_flags_text(y->flags, flags, sizeof(flags));
	if (y->site)
		walk_name(&rp->w, s->image, y->site, site, sizeof(site));
	else
		snprintf(site, sizeof(site), "[unknown]");
	if (rp->json) {
		fprintf(
		    rs->f,
		    "%s{\"type\":\"sync\",\"time_ns\":%llu,\"depth\":%u,\"tid\":%u,\"op\":\"%s\",\"obj\":\"0x%llx\","
		    "\"flags\":\"%s\",\"wait_ns\":%llu,\"obj2\":\"0x%llx\",\"site\":",
		    rs->events ? "," : "", (unsigned long long)y->ns, y->depth, s->tid, syncevent_op_name(y->op),
		    (unsigned long long)y->obj, flags, (unsigned long long)y->wait_ns, (unsigned long long)y->obj2);
		json_write_string(rs->f, site);
		fputc('}', rs->f);
		rs->events++;
		return;
	}
	time_col(rp, y->ns, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | %*s[sync] %s 0x%llx flags=%s wait=%llu.%03uus obj2=0x%llx tid=%u site=%s\n", t, "",
	        (int)(2 * y->depth), "", syncevent_op_name(y->op), (unsigned long long)y->obj, flags,
	        (unsigned long long)(y->wait_ns / 1000), (unsigned)(y->wait_ns % 1000), (unsigned long long)y->obj2,
	        s->tid, site);
}

static const char *const replay_ctr_kinds[] = {
	[LP_CTR_BEGIN] = "begin", [LP_CTR_ENTRY] = "entry",     [LP_CTR_EXIT] = "exit",     [LP_CTR_END] = "end",
	[LP_CTR_CPU] = "cpu",     [LP_CTR_PROCESS] = "process", [LP_CTR_SAMPLE] = "sample",
};

/* The i-th counter's name (META counters), or "counterI". */
static const char *ctr_name(const struct replay *rp, uint32_t i, char *buf, size_t size)
{
	if (i < rp->w.ncounters)
		return rp->w.counters[i];
	snprintf(buf, size, "counter%u", i);
	return buf;
}

/* Counter values (record --counters), one line each, at the depth of the
 * calls their function makes: "[counters] entry work cycles=... ...";
 * a thread's and the program's totals name no function. */
static void on_counter(void *ctx, struct walk_stream *s, const struct walk_counter *c)
{
	struct replay *rp = ctx;
	struct rstream *rs = s->user;
	char t[32], fname[1024] = "", nbuf[32];
	const char *kind =
	    c->kind < sizeof(replay_ctr_kinds) / sizeof(replay_ctr_kinds[0]) ? replay_ctr_kinds[c->kind] : NULL;
	uint32_t i;

	if (!rs)
		return;
	flush_pending(rp, s);
	if (c->fn)
		walk_name(&rp->w, s->image, c->fn, fname, sizeof(fname));
	if (rp->json) {
		fprintf(rs->f, "%s{\"type\":\"counter\",\"time_ns\":%llu,\"depth\":%u,\"kind\":\"%s\"",
		        rs->events ? "," : "", (unsigned long long)c->ns, c->depth, kind ? kind : "unknown");
		if (c->fn) {
			fputs(",\"name\":", rs->f);
			json_write_string(rs->f, fname);
		}
		if (c->kind == LP_CTR_CPU)
			fprintf(rs->f, ",\"cpu\":%u", c->cpu);
		if (c->flags & LP_CTR_SCALED)
			fputs(",\"scaled\":true", rs->f);
		fputs(",\"values\":{", rs->f);
		for (i = 0; i < c->n; i++) {
			fputs(i ? "," : "", rs->f);
			json_write_string(rs->f, ctr_name(rp, i, nbuf, sizeof(nbuf)));
			fprintf(rs->f, ":%llu", (unsigned long long)c->values[i]);
		}
		fputc('}', rs->f);
		if (c->enabled) {
			fputs(",\"enabled_ns\":[", rs->f);
			for (i = 0; i < c->n; i++)
				fprintf(rs->f, "%s%llu", i ? "," : "", (unsigned long long)c->enabled[i]);
			fputs("],\"running_ns\":[", rs->f);
			for (i = 0; i < c->n; i++)
				fprintf(rs->f, "%s%llu", i ? "," : "", (unsigned long long)c->running[i]);
			fputc(']', rs->f);
		}
		fputc('}', rs->f);
		rs->events++;
		return;
	}
	time_col(rp, c->ns, t, sizeof(t));
	fprintf(rs->f, "%14s %12s | %*s[counters] %s", t, "", (int)(2 * c->depth), "", kind ? kind : "unknown");
	if (c->fn)
		fprintf(rs->f, " %s", fname);
	if (c->kind == LP_CTR_CPU)
		fprintf(rs->f, " %u", c->cpu);
	for (i = 0; i < c->n; i++)
		fprintf(rs->f, " %s=%llu", ctr_name(rp, i, nbuf, sizeof(nbuf)), (unsigned long long)c->values[i]);
	fputs(c->flags & LP_CTR_SCALED ? " (scaled)\n" : "\n", rs->f);
}

static void on_end(void *ctx, struct walk_stream *s)
{
	struct rstream *rs = s->user;

	if (rs) {
		flush_pending(ctx, s);
		kbuf_flush(rs);
	}
}

static int copy_out(FILE *f)
{
	char buf[65536];
	size_t n;

	rewind(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, n, stdout) != n)
			return -EIO;
	return ferror(f) ? -EIO : 0;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct walk_ops ops = { .begin = on_begin,
		                .entry = on_entry,
		                .exit = on_exit_ev,
		                .lost = on_lost,
		                .args = on_args,
		                .retval = on_retval,
		                .probe = on_probe,
		                .syscall = on_syscall,
		                .mem = on_mem,
		                .sync = on_sync,
		                .kernel = on_kernel,
		                .counter = on_counter,
		                .end = on_end };
	struct replay rp = { 0 };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data";
	uint32_t i, shown = 0;
	int c, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof replay: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			rp.json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return LP_EXIT_OK;
		default:
			if (builtin_filter_option(&fopts, c, optarg, "replay", replay_usage))
				break;
			return LP_EXIT_USAGE;
		}
	}
	if (builtin_trace_operand("replay", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	code = builtin_trace_open("replay", &rp.w, dir, &fopts);
	if (code)
		return code;
	ops.ctx = &rp;
	/* by time: the code mappings are known before any thread's events,
	 * whatever chunk of the file brings them */
	if (walk_run_by_time(&rp.w, &ops))
		rp.error = -ENOMEM;
	code = layerprof_trace_condition(&rp.w, "replay");
	if (rp.error) {
		fprintf(stderr, "layerprof replay: cannot buffer thread output: %s\n", strerror(-rp.error));
		code = LP_EXIT_FAILURE;
	}
	if (rp.json) {
		printf("{\"trace\":");
		json_write_string(stdout, dir);
		printf(",\"lost_events\":%llu,\"threads\":[", (unsigned long long)rp.w.lost);
	}
	for (i = 0; i < rp.w.nstreams; i++) {
		const struct walk_stream *s = rp.w.streams[i];
		struct rstream *rs = s->user;

		if (!rs)
			continue; /* not selected, or another process's (--kernel-system) */
		if (rp.json) {
			printf("%s{\"pid\":%u,\"tid\":%u,\"comm\":", shown++ ? "," : "", s->pid, s->tid);
			json_write_string(stdout, s->comm);
			printf(",\"events\":[");
		} else {
			printf("%s# thread %u (%s), process %u", shown++ ? "\n" : "", s->tid, s->comm, s->pid);
			if (s->parent_pid)
				printf(", forked from %u", s->parent_pid);
			else if (s->after_exec)
				printf(" (after exec)");
			printf("\n#%13s %12s | %s\n", "TIME (s)", "DURATION", "FUNCTION");
		}
		if (copy_out(rs->f))
			code = LP_EXIT_FAILURE;
		if (rp.json)
			printf("]}");
		fclose(rs->f);
		free(rs->kbuf);
		free(rs);
	}
	if (rp.json)
		printf("]}\n");
	walk_release(&rp.w);
	return code;
}
