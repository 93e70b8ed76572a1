/* Chrome trace event JSON export (see export/chrome.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "common/varint.h"
#include "host/lib/trace/syncwake.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/export/chrome.h"
#include "host/lib/export/chromekernel.h"
#include "host/lib/export/chromesync.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/error.h"
#include "host/lib/util/escape.h"
#include "host/lib/util/hashindex.h"

#define CHROME_FIRST_NAMES 1024u
#define NS_PER_US 1000u
#define CHROME_FIRST_THREADS 256u

/* A function's name as a JSON string literal, cached by (image, address). */
struct chrome_name {
	uint64_t addr;
	uint32_t image;
	uint32_t len;
	char *json; /* owned */
};

/* A thread id of the trace, and whether more than one image (exec) uses it. */
struct chrome_thread {
	uint64_t key; /* pid << 32 | tid */
	uint32_t image;
	bool images; /* more than one */
};

/* Per stream: its "pid" and "tid" members, formatted once, and where its
 * events go. */
struct chrome_stream {
	char ids[64];
	size_t idlen;
	/* The streams of a thread that several images use (exec) each go to
	 * a temporary file, appended in time order at the end (see prepass).
	 * NULL: the output itself. */
	FILE *tmp;
};

struct chrome {
	struct walk *w;
	FILE *f;
	uint64_t zero_ns;          /* the first event's time: ts 0 */
	struct chrome_name *names; /* escaped names, cached */
	uint32_t ncap, nnames;
	struct hashindex name_index;   /* names by (image, addr) */
	uint64_t written;              /* events written to f */
	struct chrome_thread *threads; /* every (pid, tid) of the trace */
	uint32_t tcap, nthreads;
	struct hashindex thread_index; /* threads by key */
	uint32_t ntmp;                 /* streams with a temporary file */
	bool has_kernel;               /* the trace has tracepoint formats (record --kernel) */
	bool has_sync;                 /* the trace has sync events (record --sync) */
	bool oom, tmp_failed;
};

/* Appends a string literal to p; returns the new end. */
#define PUT_LIT(p, lit) ((char *)memcpy((p), (lit), sizeof(lit) - 1) + sizeof(lit) - 1)

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

/* Starts an event of stream cs: the separator, when one is due, and the
 * file the event goes to. */
static FILE *event_begin(struct chrome *c, const struct chrome_stream *cs)
{
	if (cs && cs->tmp) {
		fputs(",\n", cs->tmp);
		return cs->tmp;
	}
	if (c->written++)
		fputs(",\n", c->f);
	return c->f;
}

static bool name_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct chrome_name *e = &((const struct chrome *)ctx)->names[item], *k = key;

	return e->addr == k->addr && e->image == k->image;
}

/* Room for one more cached name; false when the cache is full or memory
 * ran out. */
static bool names_room(struct chrome *c)
{
	struct chrome_name *n;
	uint32_t cap;

	if (c->nnames >= EXPORT_CHROME_NAMES_MAX || hashindex_reserve(&c->name_index))
		return false;
	if (c->nnames < c->ncap)
		return true;
	cap = c->ncap ? 2 * c->ncap : CHROME_FIRST_NAMES;
	n = realloc(c->names, cap * sizeof(*n));
	if (!n)
		return false;
	c->names = n;
	c->ncap = cap;
	return true;
}

/* Writes the name of addr as a JSON string; cached after the first time. */
static void put_name(struct chrome *c, FILE *f, uint32_t image, uint64_t addr)
{
	struct chrome_name key = { .addr = addr, .image = image }, *e;
	uint64_t hash = hashindex_u64(addr ^ (uint64_t)image << 48);
	char buf[1024], *mem = NULL;
	size_t len = 0;
	int64_t found;
	FILE *m;

	found = hashindex_get(&c->name_index, hash, name_eq, c, &key);
	if (found >= 0) {
		e = &c->names[found];
		fwrite(e->json, 1, e->len, f);
		return;
	}
	walk_name(c->w, image, addr, buf, sizeof(buf));
	/* the cache only saves time: without memory for it, names are escaped
	 * at each use */
	if (!names_room(c) || !(m = open_memstream(&mem, &len))) {
		escape_json(f, buf);
		return;
	}
	escape_json(m, buf);
	if (fclose(m) || !len) {
		free(mem);
		escape_json(f, buf);
		return;
	}
	e = &c->names[c->nnames];
	e->addr = addr;
	e->image = image;
	e->json = mem;
	e->len = (uint32_t)len;
	hashindex_put(&c->name_index, hashindex_slot(&c->name_index, hash, name_eq, c, &key), hash, c->nnames++);
	fwrite(mem, 1, len, f);
}

static bool thread_eq(const void *ctx, uint32_t item, const void *key)
{
	return ((const struct chrome *)ctx)->threads[item].key == *(const uint64_t *)key;
}

/* The entry of (pid, tid), added when new (with image); NULL when memory
 * runs out.  Valid until the next call. */
static struct chrome_thread *thread_get(struct chrome *c, uint32_t pid, uint32_t tid, uint32_t image)
{
	uint64_t key = (uint64_t)pid << 32 | tid, hash = hashindex_u64(key);
	struct chrome_thread *t;
	uint32_t slot;

	if (hashindex_reserve(&c->thread_index))
		return NULL;
	slot = hashindex_slot(&c->thread_index, hash, thread_eq, c, &key);
	if (c->thread_index.val[slot])
		return &c->threads[c->thread_index.val[slot] - 1];
	if (c->nthreads == c->tcap) {
		uint32_t cap = c->tcap ? 2 * c->tcap : CHROME_FIRST_THREADS;

		t = realloc(c->threads, cap * sizeof(*t));
		if (!t)
			return NULL;
		c->threads = t;
		c->tcap = cap;
	}
	t = &c->threads[c->nthreads];
	memset(t, 0, sizeof(*t));
	t->key = key;
	t->image = image;
	hashindex_put(&c->thread_index, slot, hash, c->nthreads++);
	return t;
}

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = calloc(1, sizeof(*cs));
	struct chrome_thread *t;

	s->user = cs;
	if (!cs) {
		c->oom = true;
		return;
	}
	cs->idlen = (size_t)snprintf(cs->ids, sizeof(cs->ids), ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, s->pid, s->tid);
	t = thread_get(c, s->pid, s->tid, s->image);
	if (t && t->images && c->ntmp < EXPORT_CHROME_TMP_MAX) {
		cs->tmp = tmpfile();
		if (cs->tmp)
			c->ntmp++;
		else
			c->tmp_failed = true;
	}
}

/* Appends a stream's temporary file to the output. */
static int append_tmp(struct chrome *c, FILE *tmp)
{
	char buf[65536];
	size_t n;
	bool first = true;

	if (ferror(tmp) || fflush(tmp) || fseek(tmp, 0, SEEK_SET))
		return -EIO;
	while ((n = fread(buf, 1, sizeof(buf), tmp)) > 0) {
		size_t skip = 0;

		/* its events all begin with a separator: none before the first */
		if (first && !c->written++)
			skip = n < 2 ? n : 2;
		first = false;
		fwrite(buf + skip, 1, n - skip, c->f);
	}
	return ferror(tmp) ? -EIO : 0;
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	FILE *f;
	char line[160], *p = line;

	(void)depth;
	if (!cs)
		return;
	f = event_begin(c, cs);
	p = PUT_LIT(p, "{\"ph\":\"B\",\"ts\":");
	p = put_ts(c, p, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	p = PUT_LIT(p, ",\"cat\":\"function\",\"name\":");
	fwrite(line, 1, (size_t)(p - line), f);
	put_name(c, f, s->image, addr);
	fputs(flags & FILTER_INHERITED ? ",\"args\":{\"inherited\":true}}" : "}", f);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	FILE *f;
	char line[160], *p = line;

	(void)addr;
	(void)depth;
	(void)entry_ns;
	if (!cs)
		return;
	f = event_begin(c, cs);
	p = PUT_LIT(p, "{\"ph\":\"E\",\"ts\":");
	p = put_ts(c, p, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), f);
	fputs(flags & FILTER_UNFINISHED ? ",\"args\":{\"unfinished\":true}}" : "}", f);
}

/* A whole call known only by its end and duration (source filters). */
static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	FILE *f;
	char line[200], *p = line;

	if (!cs)
		return;
	f = event_begin(c, cs);
	p = PUT_LIT(p, "{\"ph\":\"X\",\"ts\":");
	p = put_ts(c, p, exit_ns - duration_ns);
	p = PUT_LIT(p, ",\"dur\":");
	p = put_us(p, duration_ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	p = PUT_LIT(p, ",\"cat\":\"function\",\"name\":");
	fwrite(line, 1, (size_t)(p - line), f);
	put_name(c, f, s->image, addr);
	fputc('}', f);
}

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	FILE *f;
	char line[200], *p = line;

	if (!cs)
		return;
	f = event_begin(c, cs);
	p = PUT_LIT(p, "{\"ph\":\"i\",\"s\":\"t\",\"ts\":");
	p = put_ts(c, p, ns);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), f);
	fprintf(f, ",\"cat\":\"lost\",\"name\":\"lost events\",\"args\":{\"count\":%" PRIu64 "}}", count);
}

/* A system call as a complete event on its thread.  Unfinished ones (no
 * exit in the trace) last until the thread's last event before them. */
static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct chrome *c = ctx;
	struct chrome_stream *cs = s->user;
	FILE *f;
	char line[200], name[48], text[512], *p = line;
	uint64_t start = sc->has_enter ? sc->enter_ns : sc->exit_ns, end;

	if (!cs)
		return;
	end = sc->has_exit ? sc->exit_ns : (s->last_ns > start ? s->last_ns : start);
	f = event_begin(c, cs);
	p = PUT_LIT(p, "{\"ph\":\"X\",\"ts\":");
	p = put_ts(c, p, start);
	p = PUT_LIT(p, ",\"dur\":");
	p = put_us(p, end - start);
	memcpy(p, cs->ids, cs->idlen);
	p += cs->idlen;
	fwrite(line, 1, (size_t)(p - line), f);
	sys_name((enum sys_arch)sc->arch, sc->nr, name, sizeof(name));
	fputs(",\"cat\":\"syscall\",\"name\":", f);
	escape_json(f, name);
	fputs(",\"args\":{", f);
	if (sc->has_enter) {
		sys_format_args((enum sys_arch)sc->arch, sc->nr, sc->args, sc->nargs, sc->str, sc->str_len, text,
		                sizeof(text));
		fputs("\"args\":", f);
		escape_json(f, text);
	} else {
		fputs("\"entry_missing\":true", f);
	}
	if (sc->has_exit) {
		sys_format_ret((enum sys_arch)sc->arch, sc->nr, sc->ret, text, sizeof(text));
		fprintf(f, ",\"ret\":%" PRId64 ",\"result\":", sc->ret);
		escape_json(f, text);
	} else {
		fputs(",\"unfinished\":true", f);
	}
	fputs(",\"caller\":", f);
	escape_json(f, sysstats_caller(c->w, s, sc, text, sizeof(text)));
	fputs("}}", f);
}

static void put_meta(struct chrome *c, const struct walk_stream *s, const char *what)
{
	FILE *f = event_begin(c, s->user);

	fprintf(f, "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":\"%s\",\"args\":{\"name\":", s->pid,
	        s->tid, what);
	escape_json(f, s->comm);
	fputs("}}", f);
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

/* A pass over the trace before the walk, for what the walk learns too late
 * for a stream written as it is read:
 * - the earliest event time (the smallest chunk base time: times in a chunk
 *   only grow from its base; 0 without events);
 * - every code mapping, so that a thread's functions are named even when
 *   its events come before the maps of its process in the file (the walk
 *   adds them again, which the symbolizer ignores);
 * - whether the trace has kernel events (their formats), for the kernel
 *   tracks (chromekernel.h), and sync events, for the waits (chromesync.h);
 * - the threads that more than one image uses (after exec).  Their streams
 *   all go through temporary files, appended in time order at the end: the
 *   drain may write a new image's events before the last ones of the image
 *   it replaced, and the walk closes the calls an image left open only at
 *   the end of the trace, while within a thread the events must come in
 *   time order. */
static void prepass(struct chrome *c)
{
	struct walk *w = c->w;
	struct decoder *d = w->dec;
	const uint8_t *payload;
	struct chunk_info ci;
	struct lp_event ev;
	uint64_t first = UINT64_MAX;

	reader_seek(&w->r, LP_FILE_HEADER_SIZE);
	while (reader_next(&w->r, &ci, &payload) > 0) {
		struct chrome_thread *t;

		if (ci.type == LP_CHUNK_KFORMAT)
			c->has_kernel = true;
		if (ci.type != LP_CHUNK_EVENTS || decoder_begin(d, payload, ci.len))
			continue;
		if (d->time < first)
			first = d->time;
		t = thread_get(c, d->pid, d->tid, d->image);
		if (!t)
			c->oom = true;
		else if (t->image != d->image)
			t->images = true;
		while (decoder_next(d, &ev) > 0) {
			if (ev.type == LP_EV_SYNC)
				c->has_sync = true;
			if (ev.type == LP_EV_MAP) {
				symbolizer_add_map_at(w->sym, d->image, ev.time, ev.base, ev.start, ev.end, ev.offset,
				                      ev.build_id, ev.build_id_len, ev.str, ev.str_len);
			} else if (ev.type == LP_EV_EXTENDED && ev.value == LP_XEV_UNMAP) {
				const uint8_t *p = (const uint8_t *)ev.str, *end = p + ev.str_len;
				uint64_t start, stop;

				if (!varint_get(&p, end, &start) && !varint_get(&p, end, &stop) &&
				    symbolizer_end_map(w->sym, d->image, start, stop, ev.time))
					w->unmaps++;
			}
		}
	}
	c->zero_ns = first == UINT64_MAX ? 0 : first;
}

/* chromekernel_out.begin: an event of stream s (NULL: of none). */
static FILE *kernel_event_begin(void *ctx, const struct walk_stream *s)
{
	if (s && !s->user)
		return NULL;
	return event_begin(ctx, s ? s->user : NULL);
}

int export_chrome(struct walk *w, FILE *f, const struct lp_warner *warn)
{
	struct walk_ops ops = { .begin = on_begin,
		                .entry = on_entry,
		                .exit = on_exit_ev,
		                .call = on_call,
		                .lost = on_lost,
		                .syscall = on_syscall,
		                .end = on_end };
	struct chrome c = { .w = w, .f = f };
	struct chromekernel *ck = NULL;
	struct chromesync *cy = NULL;
	uint64_t unjoined, sync_dropped;
	bool tmp_error = false;
	uint32_t i;
	int r;

	ops.ctx = &c;
	prepass(&c);
	if (c.has_kernel) {
		struct chromekernel_out out = { .ctx = &c, .begin = kernel_event_begin, .zero_ns = c.zero_ns };

		ck = chromekernel_new(w, &out);
		if (!ck)
			c.oom = true;
		else
			chromekernel_chain(ck, &ops);
	}
	if (c.has_sync) {
		struct chromekernel_out out = { .ctx = &c, .begin = kernel_event_begin, .zero_ns = c.zero_ns };

		cy = chromesync_new(w, &out);
		if (!cy)
			c.oom = true;
		else
			chromesync_chain(cy, &ops);
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
	r = walk_run(w, &ops);
	if (!r && ck && chromekernel_finish(ck))
		c.oom = true;
	if (!r && cy && chromesync_finish(cy))
		c.oom = true;
	unjoined = ck ? chromekernel_unjoined(ck) : 0;
	sync_dropped = cy ? chromesync_dropped(cy) : 0;
	chromekernel_free(ck);
	chromesync_free(cy);
	/* streams in order of their first event: an image after exec follows
	 * the one it replaced */
	for (i = 0; i < w->nstreams; i++) {
		struct chrome_stream *cs = w->streams[i]->user;

		if (cs && cs->tmp) {
			if (append_tmp(&c, cs->tmp))
				tmp_error = true;
			fclose(cs->tmp);
		}
		free(cs);
		w->streams[i]->user = NULL;
	}
	fputs("\n],\"otherData\":{\"generator\":\"layerprof\",\"trace\":", f);
	escape_json(f, w->dir ? w->dir : "");
	fprintf(f,
	        ",\"clock\":\"CLOCK_MONOTONIC\",\"time_zero_ns\":\"%" PRIu64 "\",\"events\":\"%" PRIu64
	        "\",\"lost_events\":\"%" PRIu64 "\",\"complete\":\"%s\"}}\n",
	        c.zero_ns, w->events, w->lost, w->r.state == READER_OK && w->r.seen_end ? "true" : "false");
	for (i = 0; i < c.nnames; i++)
		free(c.names[i].json);
	free(c.names);
	hashindex_release(&c.name_index);
	free(c.threads);
	hashindex_release(&c.thread_index);
	if (r || c.oom)
		return -ENOMEM;
	if (c.tmp_failed)
		error_warn(warn, "warning: cannot make a temporary file: a thread's events after exec may come out of "
		                 "time order");
	if (unjoined)
		error_warn(warn,
		           "warning: %" PRIu64 " wake-ups past the %u kept have no flow (their off-CPU slices name "
		           "the waker by tid only)",
		           unjoined, EXPORT_CHROME_KERNEL_KEPT_MAX);
	if (sync_dropped)
		error_warn(warn, "warning: %" PRIu64 " sync events past the %u kept are not shown", sync_dropped,
		           SYNCWAKE_EVENTS_MAX);
	return ferror(f) || tmp_error ? -EIO : 0;
}
