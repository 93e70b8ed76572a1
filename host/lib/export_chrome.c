/* Chrome trace event JSON export (see export_chrome.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/escape.h"
#include "host/lib/export_chrome.h"
#include "host/lib/sysstats.h"

#define CHROME_FIRST_NAMES 1024u
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull
#define NS_PER_US 1000u

/* A function's name as a JSON string literal, cached by (image, address). */
struct chrome_name {
	uint64_t addr;
	uint32_t image;
	uint32_t len; /* 0: empty slot */
	char *json;   /* owned */
};

/* Per stream: its "pid" and "tid" members, formatted once. */
struct chrome_stream {
	char ids[64];
	size_t idlen;
};

struct chrome {
	struct walk *w;
	FILE *f;
	uint64_t zero_ns; /* the first event's time: ts 0 */
	struct chrome_name *names;
	uint32_t ncap, nnames;
	uint64_t written; /* events written */
	bool oom;
};

/* Appends v in decimal to p; returns the new end. */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Appends a time in microseconds with three decimals (nanoseconds). */
static char *put_us(char *p, uint64_t ns)
{
	p = put_u64(p, ns / NS_PER_US);
	*p++ = '.';
	*p++ = (char)('0' + ns % 1000 / 100);
	*p++ = (char)('0' + ns % 100 / 10);
	*p++ = (char)('0' + ns % 10);
	return p;
}

/* ts relative to the first event (never negative: it is the minimum). */
static char *put_ts(const struct chrome *c, char *p, uint64_t ns)
{
	return put_us(p, ns > c->zero_ns ? ns - c->zero_ns : 0);
}

static void put_sep(struct chrome *c)
{
	if (c->written++)
		fputs(",\n", c->f);
}

static uint32_t name_slot(uint32_t image, uint64_t addr, uint32_t cap)
{
	return (uint32_t)(((addr ^ (uint64_t)image << 48) * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static int names_grow(struct chrome *c)
{
	uint32_t cap = c->ncap ? 2 * c->ncap : CHROME_FIRST_NAMES, i;
	struct chrome_name *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < c->ncap; i++) {
		uint32_t h;

		if (!c->names[i].len)
			continue;
		h = name_slot(c->names[i].image, c->names[i].addr, cap);
		while (n[h].len)
			h = (h + 1) & (cap - 1);
		n[h] = c->names[i];
	}
	free(c->names);
	c->names = n;
	c->ncap = cap;
	return 0;
}

/* Writes the name of addr as a JSON string; cached after the first time. */
static void put_name(struct chrome *c, uint32_t image, uint64_t addr)
{
	char buf[1024], *mem = NULL;
	size_t len = 0;
	struct chrome_name *e;
	FILE *m;
	uint32_t h = 0;

	if (c->nnames * 2 >= c->ncap && c->nnames < EXPORT_CHROME_NAMES_MAX && names_grow(c))
		c->oom = true;
	if (c->ncap) {
		h = name_slot(image, addr, c->ncap);
		while (c->names[h].len) {
			e = &c->names[h];
			if (e->addr == addr && e->image == image) {
				fwrite(e->json, 1, e->len, c->f);
				return;
			}
			h = (h + 1) & (c->ncap - 1);
		}
	}
	walk_name(c->w, image, addr, buf, sizeof(buf));
	if (!c->ncap || c->nnames * 2 >= c->ncap || !(m = open_memstream(&mem, &len))) {
		escape_json(c->f, buf);
		return;
	}
	escape_json(m, buf);
	if (fclose(m) || !len) {
		free(mem);
		escape_json(c->f, buf);
		return;
	}
	e = &c->names[h];
	e->addr = addr;
	e->image = image;
	e->json = mem;
	e->len = (uint32_t)len;
	c->nnames++;
	fwrite(mem, 1, len, c->f);
}

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = calloc(1, sizeof(*cs));

	s->user = cs;
	if (!cs) {
		c->oom = true;
		return;
	}
	cs->idlen = (size_t)snprintf(cs->ids, sizeof(cs->ids), ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, s->pid, s->tid);
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	char line[160], *p = line;

	(void)depth;
	if (!cs)
		return;
	put_sep(c);
	memcpy(p, "{\"ph\":\"B\",\"ts\":", 15);
	p = put_ts(c, p + 15, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	memcpy(p, ",\"cat\":\"function\",\"name\":", 26);
	p += 26;
	fwrite(line, 1, (size_t)(p - line), c->f);
	put_name(c, s->image, addr);
	fputs(flags & FILTER_INHERITED ? ",\"args\":{\"inherited\":true}}" : "}", c->f);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	char line[160], *p = line;

	(void)addr;
	(void)depth;
	(void)entry_ns;
	if (!cs)
		return;
	put_sep(c);
	memcpy(p, "{\"ph\":\"E\",\"ts\":", 15);
	p = put_ts(c, p + 15, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), c->f);
	fputs(flags & FILTER_UNFINISHED ? ",\"args\":{\"unfinished\":true}}" : "}", c->f);
}

/* A whole call known only by its end and duration (source filters). */
static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	char line[200], *p = line;

	if (!cs)
		return;
	put_sep(c);
	memcpy(p, "{\"ph\":\"X\",\"ts\":", 15);
	p = put_ts(c, p + 15, exit_ns - duration_ns);
	memcpy(p, ",\"dur\":", 7);
	p = put_us(p + 7, duration_ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	memcpy(p, ",\"cat\":\"function\",\"name\":", 26);
	p += 26;
	fwrite(line, 1, (size_t)(p - line), c->f);
	put_name(c, s->image, addr);
	fputc('}', c->f);
}

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	char line[200], *p = line;

	if (!cs)
		return;
	put_sep(c);
	memcpy(p, "{\"ph\":\"i\",\"s\":\"t\",\"ts\":", 23);
	p = put_ts(c, p + 23, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), c->f);
	fprintf(c->f, ",\"cat\":\"lost\",\"name\":\"lost events\",\"args\":{\"count\":%" PRIu64 "}}", count);
}

/* A system call as a complete event on its thread.  Unfinished ones (no
 * exit in the trace) last until the thread's last event before them. */
static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	char line[200], name[48], text[512], *p = line;
	uint64_t start = sc->has_enter ? sc->enter_ns : sc->exit_ns, end;

	if (!cs)
		return;
	end = sc->has_exit ? sc->exit_ns : (s->last_ns > start ? s->last_ns : start);
	put_sep(c);
	memcpy(p, "{\"ph\":\"X\",\"ts\":", 15);
	p = put_ts(c, p + 15, start);
	memcpy(p, ",\"dur\":", 7);
	p = put_us(p + 7, end - start);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), c->f);
	sys_name((enum sys_arch)sc->arch, sc->nr, name, sizeof(name));
	fputs(",\"cat\":\"syscall\",\"name\":", c->f);
	escape_json(c->f, name);
	fputs(",\"args\":{", c->f);
	if (sc->has_enter) {
		sys_format_args((enum sys_arch)sc->arch, sc->nr, sc->args, sc->nargs, sc->str, sc->str_len, text,
		                sizeof(text));
		fputs("\"args\":", c->f);
		escape_json(c->f, text);
	} else {
		fputs("\"entry_missing\":true", c->f);
	}
	if (sc->has_exit) {
		sys_format_ret((enum sys_arch)sc->arch, sc->nr, sc->ret, text, sizeof(text));
		fprintf(c->f, ",\"ret\":%" PRId64 ",\"result\":", sc->ret);
		escape_json(c->f, text);
	} else {
		fputs(",\"unfinished\":true", c->f);
	}
	fputs(",\"caller\":", c->f);
	escape_json(c->f, sysstats_caller(c->w, s, sc, text, sizeof(text)));
	fputs("}}", c->f);
}

static void put_meta(struct chrome *c, const struct walk_stream *s, const char *what)
{
	put_sep(c);
	fprintf(c->f,
	        "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":\"%s\",\"args\":{\"name\":", s->pid,
	        s->tid, what);
	escape_json(c->f, s->comm);
	fputs("}}", c->f);
}

/* Names last: a thread's name is known once its events are read. */
static void on_end(void *ctx, struct walk_stream *s)
{
	struct chrome *c = ctx;

	if (!s->user)
		return;
	put_meta(c, s, "thread_name");
	if (s->tid == s->pid)
		put_meta(c, s, "process_name");
}

/* The earliest event time of the trace: the smallest chunk base time (the
 * times in a chunk only grow from its base).  0 for a trace without events. */
static uint64_t first_event_ns(struct walk *w)
{
	const uint8_t *payload;
	struct chunk_info ci;
	uint64_t first = UINT64_MAX;

	reader_seek(&w->r, LP_FILE_HEADER_SIZE);
	while (reader_next(&w->r, &ci, &payload) > 0)
		if (ci.type == LP_CHUNK_EVENTS && !decoder_begin(w->dec, payload, ci.len) && w->dec->time < first)
			first = w->dec->time;
	return first == UINT64_MAX ? 0 : first;
}

int export_chrome(struct walk *w, FILE *f)
{
	struct walk_ops ops = { .begin = on_begin,
		                .entry = on_entry,
		                .exit = on_exit_ev,
		                .call = on_call,
		                .lost = on_lost,
		                .syscall = on_syscall,
		                .end = on_end };
	struct chrome c = { .w = w, .f = f };
	uint32_t i;
	int r;

	ops.ctx = &c;
	c.zero_ns = first_event_ns(w);
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
	r = walk_run(w, &ops);
	fputs("\n],\"otherData\":{\"generator\":\"layerprof\",\"trace\":", f);
	escape_json(f, w->dir ? w->dir : "");
	fprintf(f,
	        ",\"clock\":\"CLOCK_MONOTONIC\",\"time_zero_ns\":\"%" PRIu64 "\",\"events\":\"%" PRIu64
	        "\",\"lost_events\":\"%" PRIu64 "\",\"complete\":\"%s\"}}\n",
	        c.zero_ns, w->events, w->lost, w->r.state == READER_OK && w->r.seen_end ? "true" : "false");
	for (i = 0; i < w->nstreams; i++) {
		free(w->streams[i]->user);
		w->streams[i]->user = NULL;
	}
	for (i = 0; i < c.ncap; i++)
		free(c.names[i].json);
	free(c.names);
	if (r || c.oom)
		return -ENOMEM;
	return ferror(f) ? -EIO : 0;
}
