/* The event walk (see walk.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctrevent.h"
#include "common/kernevent.h"
#include "common/syncevent.h"
#include "common/varint.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/dir.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/error.h"

void walk_chain(struct walk_ops *list, struct walk_ops *more)
{
	while (list->next)
		list = list->next;
	list->next = more;
}

/* The consumers that take function entries and exits, the events of
 * almost every chunk, in arrays: a call per consumer that wants the event,
 * not a visit of every one.  Made again before each chunk, so that a list
 * that grew between chunks (a live session's) is seen whole. */
static int index_consumers(struct walk *w)
{
	const struct walk_ops *o;
	uint32_t n = 0;

	w->nentry = w->nexit = 0;
	for (o = w->ops; o; o = o->next) {
		if (++n > WALK_CONSUMERS_MAX)
			return -E2BIG;
		if (o->entry)
			w->entry_ops[w->nentry++] = o;
		if (o->exit)
			w->exit_ops[w->nexit++] = o;
	}
	return 0;
}

int walk_open(struct walk *w, const char *dir, const struct filter_opts *fopts, char *err, size_t errlen)
{
	int r;

	memset(w, 0, sizeof(*w));
	w->dir = dir;
	if (fopts)
		w->fopts = *fopts;
	if (dir) {
		r = reader_open(&w->r, dir, err, errlen);
		if (r)
			return r;
		if (w->r.size == LP_FILE_HEADER_SIZE) {
			/* the recorder writes its META chunk at once: a trace
			 * that ends after the file header holds nothing */
			snprintf(err, errlen, "trace '%s' is empty: it ends after the file header", dir);
			reader_release(&w->r);
			return -ENODATA;
		}
	}
	w->dec = malloc(sizeof(*w->dec));
	w->sym = symbolizer_new(SYMBOLIZER_DEMANGLE | SYMBOLIZER_LINES);
	if (!w->dec || !w->sym)
		goto nomem;
	if (w->fopts.n_only || w->fopts.n_exclude) {
		w->cls = classifier_new(w->sym, &w->fopts);
		if (!w->cls)
			goto nomem;
		w->spec.classify = classifier_classify;
		w->spec.ctx = w->cls;
	}
	w->spec.has_only = w->fopts.n_only > 0;
	w->spec.max_depth = w->fopts.depth;
	w->spec.min_ns = w->fopts.min_ns;
	return 0;
nomem:
	snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
	walk_release(w);
	return -ENOMEM;
}

/* A stream's key in the walk's index, looked up once per chunk. */
struct stream_key {
	uint32_t image, tid;
};

static uint64_t stream_hash(const struct stream_key *k)
{
	return hashindex_u64((uint64_t)k->image << 32 | k->tid);
}

static bool stream_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct walk_stream *s = ((const struct walk *)ctx)->streams[item];
	const struct stream_key *k = key;

	return s->image == k->image && s->tid == k->tid;
}

/* The stream of (image, tid), or NULL when it has none yet. */
static struct walk_stream *stream_find(const struct walk *w, uint32_t image, uint32_t tid)
{
	struct stream_key k = { image, tid };
	int64_t i = hashindex_get(&w->index, stream_hash(&k), stream_eq, w, &k);

	return i < 0 ? NULL : w->streams[i];
}

/* Puts streams[i] in the index, which has room for it. */
static void stream_put(struct walk *w, uint32_t i)
{
	struct stream_key k = { w->streams[i]->image, w->streams[i]->tid };
	uint64_t hash = stream_hash(&k);

	hashindex_put(&w->index, hashindex_slot(&w->index, hash, stream_eq, w, &k), hash, i);
}

static bool tid_selected(const struct walk *w, uint32_t tid)
{
	size_t i;

	if (!w->fopts.n_tids)
		return true;
	for (i = 0; i < w->fopts.n_tids; i++)
		if (w->fopts.tids[i] == tid)
			return true;
	return false;
}

/* The filter stage's sink: forwards to the consumers.  The loops over
 * several consumers are apart from the sinks, so that a single consumer
 * is a tail call, without keeping the arguments for a next one. */
static __attribute__((noinline)) void entry_each(struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth,
                                                 unsigned flags)
{
	const struct walk *w = s->w;
	uint32_t i;

	for (i = 0; i < w->nentry; i++)
		w->entry_ops[i]->entry(w->entry_ops[i]->ctx, s, ns, addr, depth, flags);
}

static __attribute__((noinline)) void exit_each(struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth,
                                                uint64_t entry_ns, unsigned flags)
{
	const struct walk *w = s->w;
	uint32_t i;

	for (i = 0; i < w->nexit; i++)
		w->exit_ops[i]->exit(w->exit_ops[i]->ctx, s, ns, addr, depth, entry_ns, flags);
}

static void sink_entry(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct walk_stream *s = ctx;
	const struct walk *w = s->w;

	if (w->nentry == 1)
		w->entry_ops[0]->entry(w->entry_ops[0]->ctx, s, ns, addr, depth, flags);
	else
		entry_each(s, ns, addr, depth, flags);
}

static void sink_exit(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns, unsigned flags)
{
	struct walk_stream *s = ctx;
	const struct walk *w = s->w;

	if (w->nexit == 1)
		w->exit_ops[0]->exit(w->exit_ops[0]->ctx, s, ns, addr, depth, entry_ns, flags);
	else
		exit_each(s, ns, addr, depth, entry_ns, flags);
}

/* Calls deeper than the filter stage tracks: lost events, as the
 * target's are, shown wherever those are. */
static void sink_lost(void *ctx, uint64_t ns, uint64_t events)
{
	const struct walk_ops *o;
	struct walk_stream *s = ctx;

	s->lost += events;
	s->w->lost += events;
	for (o = s->w->ops; o; o = o->next)
		if (o->lost)
			o->lost(o->ctx, s, ns, events);
}

/* Whether consumer o gets the events of stream s: a selected stream's,
 * and another process's (record --kernel-system) when o takes those. */
static inline bool takes(const struct walk_ops *o, const struct walk_stream *s)
{
	return s->selected || (s->other && o->others);
}

/* True when the chunk d begins with a TASK START flagged
 * LP_TASK_START_OTHER: read before its stream is made, so that consumers
 * know from their begin on that the thread is not the program's. */
static bool opens_other(const struct decoder *d)
{
	const uint8_t *p = d->p;
	uint64_t delta, value;

	if (p >= d->end || (*p & 15) != LP_EV_TASK || (*p >> 4) != LP_TASK_START)
		return false;
	p++;
	return !varint_get(&p, d->end, &delta) && !varint_get(&p, d->end, &value) && (value & LP_TASK_START_OTHER);
}

static struct walk_stream *stream_get(struct walk *w, uint32_t image, uint32_t pid, uint32_t tid, uint64_t ns,
                                      bool other)
{
	const struct walk_ops *o;
	struct filter_sink sink = { .entry = sink_entry, .exit = sink_exit, .lost = sink_lost };
	struct walk_stream *s = stream_find(w, image, tid);

	if (s)
		return s;
	if (w->nstreams >= WALK_STREAMS_MAX || hashindex_reserve(&w->index))
		return NULL;
	if (w->nstreams == w->cap) {
		uint32_t cap = w->cap ? 2 * w->cap : 64;
		struct walk_stream **n = realloc(w->streams, cap * sizeof(*n));

		if (!n)
			return NULL;
		w->streams = n;
		w->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->image = image;
	s->pid = pid;
	s->tid = tid;
	s->first_ns = s->last_ns = ns;
	s->index = w->nstreams;
	s->w = w;
	s->other = other;
	w->nother += other;
	s->selected =
	    !other && tid_selected(w, tid) && (!w->restrict_stream || (image == w->only_image && tid == w->only_tid));
	sink.ctx = s;
	if (filter_stream_init(&s->fs, &w->spec, &sink, image)) {
		free(s);
		return NULL;
	}
	w->streams[w->nstreams] = s;
	stream_put(w, w->nstreams++);
	for (o = w->ops; o; o = o->next)
		if (takes(o, s) && o->begin)
			o->begin(o->ctx, s);
	return s;
}

/* A function address of the stream's image at time ns as a code address
 * (symbolizer.h): itself, unless code of the image was unmapped. */
static inline uint64_t code_addr(const struct walk *w, const struct walk_stream *s, uint64_t addr, uint64_t ns)
{
	if (__builtin_expect(!w->unmaps, 1))
		return addr;
	return symbolizer_code_addr(w->sym, s->image, addr, ns);
}

static void on_task(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	const struct walk_ops *o;
	uint32_t i;

	switch (ev->arg) {
	case LP_TASK_FORK:
		s->parent_pid = (uint32_t)ev->value;
		for (i = 0; i < ev->nframes; i++)
			filter_inherit(&s->fs, ev->time, code_addr(w, s, ev->frames[i], ev->time));
		__attribute__((fallthrough)); /* the name is the comm */
	case LP_TASK_START: {
		size_t n = ev->str_len < 16 ? ev->str_len : 16;

		/* a thread's kernel records may come in a stream the recorder
		 * opened after the thread was gone from /proc, unnamed: the
		 * name its other stream gave stays */
		if (!n && s->comm[0])
			break;
		memcpy(s->comm, ev->str, n);
		s->comm[n] = '\0';
		break;
	}
	case LP_TASK_END:
		s->ended = true;
		break;
	case LP_TASK_EXIT:
		s->exited = true;
		s->status = (uint32_t)ev->value;
		break;
	default:
		break;
	}
	for (o = w->ops; o; o = o->next)
		if (takes(o, s) && o->task)
			o->task(o->ctx, s, ev->time, ev->arg, ev->value);
}

/* The innermost function the consumer has seen entered and not exited
 * (0: none), and the depth of the calls it sees. */
static uint64_t innermost_open(const struct walk_stream *s, uint32_t *depth)
{
	const struct filter_stream *fs = &s->fs;
	uint32_t i = fs->depth;

	*depth = fs->emitted;
	while (i > 0 && !(fs->stack[i - 1].visible && fs->stack[i - 1].emitted))
		i--;
	return i > 0 ? fs->stack[i - 1].addr : 0;
}

static void syscall_attribute(const struct walk_stream *s, struct walk_syscall *sc)
{
	sc->func = innermost_open(s, &sc->depth);
}

/* LP_XEV_ARGS to the consumers.  Returns 0, or -EBADMSG for a body that
 * does not hold what it says. */
static int on_args(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	struct libcsig_args a;
	uint64_t fn, n, v, len;
	const struct walk_ops *o;

	memset(&a, 0, sizeof(a));
	if (varint_get(&p, end, &fn) || varint_get(&p, end, &n) || n > LP_ARGS_MAX)
		return -EBADMSG;
	a.n = (uint32_t)n;
	for (uint32_t i = 0; i < a.n; i++)
		if (varint_get(&p, end, &a.words[i]))
			return -EBADMSG;
	if (varint_get(&p, end, &n) || n > LP_ARGS_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		struct libcsig_mem *m = &a.mem[a.nmem++];

		if (varint_get(&p, end, &v) || varint_get(&p, end, &len) || len > LP_ARGS_MEM_MAX ||
		    len > (uint64_t)(end - p) || (v & ~(uint64_t)LP_ARGS_MEM_CUT) >= a.n)
			return -EBADMSG;
		m->index = (uint8_t)(v & ~(uint64_t)LP_ARGS_MEM_CUT);
		m->cut = (v & LP_ARGS_MEM_CUT) != 0;
		m->len = (uint32_t)len;
		m->bytes = p;
		p += len;
	}
	for (o = w->ops; o; o = o->next)
		if (s->selected && o->args)
			o->args(o->ctx, s, ev->time, code_addr(w, s, fn, ev->time), &a);
	return 0;
}

static void on_kernel(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	uint8_t buf[KERNEVENT_RAW_MAX];
	struct kernevent ke;
	struct walk_kernel k;
	const struct walk_ops *o;

	if (kernevent_parse(ev, &ke, buf)) {
		w->kernel_malformed++;
		return;
	}
	w->kernel_events++;
	w->other_kernel_events += s->other;
	s->kernel_events++;
	if (!s->selected && !s->other)
		return;
	k.ns = ev->time;
	k.id = ke.id;
	k.cpu = ke.cpu;
	k.raw = ke.raw;
	k.raw_len = ke.raw_len;
	k.func = innermost_open(s, &k.depth);
	k.in_syscall = s->sc_pending && s->sc.has_enter && !s->sc.has_exit;
	k.sc_arch = k.in_syscall ? s->sc.arch : 0;
	k.sc_nr = k.in_syscall ? s->sc.nr : 0;
	k.sc_enter_ns = k.in_syscall ? s->sc.enter_ns : 0;
	for (o = w->ops; o; o = o->next)
		if (o->kernel && takes(o, s))
			o->kernel(o->ctx, s, &k);
}

/* Keeps a KFORMAT payload for the kernel layer's decoders. */
static int keep_kformat(struct walk *w, const uint8_t *payload, size_t len)
{
	uint32_t n32 = (uint32_t)len;

	if (len > LP_CHUNK_MAX_PAYLOAD)
		return 0;
	if (w->kformat_len + 4 + len > w->kformat_cap) {
		size_t cap = w->kformat_cap ? 2 * w->kformat_cap : 65536;
		uint8_t *n;

		while (cap < w->kformat_len + 4 + len)
			cap *= 2;
		n = realloc(w->kformat, cap);
		if (!n)
			return -ENOMEM;
		w->kformat = n;
		w->kformat_cap = cap;
	}
	memcpy(w->kformat + w->kformat_len, &n32, 4);
	memcpy(w->kformat + w->kformat_len + 4, payload, len);
	w->kformat_len += 4 + len;
	w->kformat_gen++;
	return 0;
}

static void syscall_deliver(struct walk *w, struct walk_stream *s)
{
	const struct walk_ops *o;

	for (o = w->ops; o; o = o->next)
		if (s->sc_pending && s->selected && o->syscall)
			o->syscall(o->ctx, s, &s->sc);
	s->sc_pending = false;
}

static void on_syscall(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	struct sysevent se;
	uint32_t i;

	if (sysevent_parse(ev, &se))
		return; /* a malformed body: this one event is unusable */
	w->syscalls++;
	if (se.enter) {
		syscall_deliver(w, s); /* an entry without exit before it */
		memset(&s->sc, 0, sizeof(s->sc));
		s->sc.arch = se.arch;
		s->sc.nr = se.nr;
		s->sc.has_enter = true;
		s->sc.enter_ns = ev->time;
		s->sc.nargs = se.nargs;
		memcpy(s->sc.args, se.args, sizeof(se.args));
		s->sc.nips = se.nips;
		for (i = 0; i < se.nips; i++)
			s->sc.ips[i] = code_addr(w, s, se.ips[i], ev->time);
		if (se.str_len) {
			memcpy(s->sc_str, se.str, se.str_len);
			s->sc.str = s->sc_str;
			s->sc.str_len = se.str_len;
		}
		s->sc.str_late = se.flags & SYSEVENT_STR_LATE;
		syscall_attribute(s, &s->sc);
		s->sc_pending = true;
		s->syscalls++;
		return;
	}
	if (!s->sc_pending || s->sc.nr != se.nr || s->sc.arch != se.arch) {
		syscall_deliver(w, s);
		memset(&s->sc, 0, sizeof(s->sc));
		s->sc.arch = se.arch;
		s->sc.nr = se.nr;
		syscall_attribute(s, &s->sc);
		s->syscalls++;
	}
	s->sc.has_exit = true;
	s->sc.exit_ns = ev->time;
	s->sc.ret = se.ret;
	s->sc_pending = true;
	syscall_deliver(w, s);
}

/* A stream's stack definition, found by id through the stream's
 * stack_index (looked up on every heap operation). */
struct walk_stack_def {
	uint32_t id;
	uint32_t n;
	uint64_t cache; /* the consumer's (walk_mem.cache) */
	uint64_t *ips;
};

static uint64_t stack_hash(uint32_t id)
{
	return hashindex_fibonacci(id, 32);
}

static bool stack_eq(const void *ctx, uint32_t item, const void *key)
{
	return ((const struct walk_stream *)ctx)->stacks[item].id == *(const uint32_t *)key;
}

static struct walk_stack_def *stack_find(const struct walk_stream *s, uint32_t id)
{
	int64_t i = hashindex_get(&s->stack_index, stack_hash(id), stack_eq, s, &id);

	return i < 0 ? NULL : &s->stacks[i];
}

/* Puts stacks[i] in the index, which has room for it. */
static void stack_put(struct walk_stream *s, uint32_t i)
{
	uint32_t id = s->stacks[i].id;
	uint64_t hash = stack_hash(id);

	hashindex_put(&s->stack_index, hashindex_slot(&s->stack_index, hash, stack_eq, s, &id), hash, i);
}

/* Makes room for one more definition.  Returns 0 or -ENOMEM. */
static int stacks_reserve(struct walk_stream *s)
{
	if (s->nstacks == s->stacks_cap) {
		uint32_t cap = s->stacks_cap ? 2 * s->stacks_cap : 64;
		struct walk_stack_def *n = realloc(s->stacks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->stacks = n;
		s->stacks_cap = cap;
	}
	return hashindex_reserve(&s->stack_index);
}

static void stacks_release(struct walk *w, struct walk_stream *s)
{
	uint32_t i;

	for (i = 0; i < s->nstacks; i++) {
		w->stack_addrs -= s->stacks[i].n;
		free(s->stacks[i].ips);
	}
	free(s->stacks);
	hashindex_release(&s->stack_index);
	s->stacks = NULL;
	s->nstacks = s->stacks_cap = 0;
}

/* A full table forgets its older half: ids only grow in a stream (each
 * time tracing is turned on again, stacks get new ids), so the lowest are
 * the least likely to be used again.  O(n) once per WALK_STACKS_MAX / 2
 * definitions. */
static void stacks_forget_old(struct walk *w, struct walk_stream *s)
{
	uint32_t i, kept = 0, keep_from = s->max_stack_id - WALK_STACKS_MAX / 2;

	for (i = 0; i < s->nstacks; i++) {
		if (s->stacks[i].id > keep_from) {
			s->stacks[kept++] = s->stacks[i];
		} else {
			w->stack_addrs -= s->stacks[i].n;
			free(s->stacks[i].ips);
			w->mem_stacks_forgotten++;
		}
	}
	s->nstacks = kept;
	hashindex_clear(&s->stack_index);
	for (i = 0; i < kept; i++)
		stack_put(s, i);
}

/* A STACK event: defines (or redefines) one of the stream's stack ids. */
static void on_stack(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	struct stackevent se;
	struct walk_stack_def *d;
	uint64_t *ips = NULL;
	uint32_t i;

	if (stackevent_parse(ev, &se) || !se.id) {
		w->mem_malformed++;
		return;
	}
	if (se.id > s->max_stack_id)
		s->max_stack_id = se.id;
	d = stack_find(s, se.id);
	if (!d && s->nstacks >= WALK_STACKS_MAX)
		stacks_forget_old(w, s);
	if (!d && (s->nstacks >= WALK_STACKS_MAX || stacks_reserve(s))) {
		w->mem_stacks_dropped++;
		return;
	}
	if (w->stack_addrs - (d ? d->n : 0) + se.n > WALK_STACK_ADDRS_MAX ||
	    (se.n && !(ips = malloc(se.n * sizeof(*ips))))) {
		w->mem_stacks_dropped++;
		return;
	}
	for (i = 0; i < se.n; i++)
		ips[i] = code_addr(w, s, se.ips[i], ev->time);
	if (!d) {
		d = &s->stacks[s->nstacks];
		d->id = se.id;
		stack_put(s, s->nstacks++);
	} else {
		w->stack_addrs -= d->n;
		free(d->ips);
	}
	d->n = se.n;
	d->ips = ips;
	d->cache = 0;
	w->stack_addrs += se.n;
}

static void on_mem(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	const struct walk_ops *o;
	struct walk_stack_def *d = NULL;
	struct walk_mem m = { 0 };
	struct memevent me;

	if (memevent_parse(ev, &me)) {
		w->mem_malformed++;
		return;
	}
	w->mem_ops++;
	s->mem_ops++;
	if (me.stack) {
		d = stack_find(s, me.stack);
		if (!d)
			w->mem_unknown_stacks++;
	}
	if (!s->selected)
		return;
	m.op = me.op;
	m.flags = me.flags;
	m.time = ev->time;
	m.ptr = me.ptr;
	m.size = me.size;
	m.old = me.old;
	m.count = me.count;
	m.bytes = me.bytes;
	m.lifetime_ns = me.lifetime_ns;
	m.tid = s->tid;
	m.stack_id = me.stack;
	if (d) {
		m.ips = d->ips;
		m.nips = d->n;
		m.cache = &d->cache;
	}
	m.func = innermost_open(s, &m.depth);
	for (o = w->ops; o; o = o->next) {
		if (o->mem) {
			o->mem(o->ctx, s, &m);
			m.cache = NULL; /* the first consumer's (walk.h) */
		}
	}
}

static void on_sync(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	const struct walk_ops *o;
	struct walk_sync y = { 0 };
	struct syncevent se;

	if (syncevent_parse(ev, &se)) {
		w->sync_malformed++;
		return;
	}
	w->sync_events++;
	if (!s->selected)
		return;
	y.ns = ev->time;
	y.op = se.op;
	y.flags = se.flags;
	y.obj = se.obj;
	y.obj2 = se.obj2;
	y.wait_ns = se.wait_ns;
	y.site = se.site ? code_addr(w, s, se.site, ev->time) : 0;
	y.func = innermost_open(s, &y.depth);
	for (o = w->ops; o; o = o->next)
		if (o->sync)
			o->sync(o->ctx, s, &y);
}

static void on_counter(struct walk *w, struct walk_stream *s, const struct lp_event *ev)
{
	const struct walk_ops *o;
	struct walk_counter c = { 0 };
	struct ctrevent ce;

	if (ctrevent_parse(ev, &ce)) {
		w->counter_malformed++;
		return;
	}
	w->counter_events++;
	if (!s->selected)
		return;
	c.ns = ev->time;
	c.kind = ce.kind;
	c.flags = ce.flags;
	c.fn = ce.fn ? code_addr(w, s, ce.fn, ev->time) : 0;
	c.cpu = ce.cpu;
	c.n = ce.n;
	c.values = ce.values;
	if (ce.flags & LP_CTR_HAS_TIMES) {
		c.enabled = ce.enabled;
		c.running = ce.running;
	}
	c.func = innermost_open(s, &c.depth);
	for (o = w->ops; o; o = o->next)
		if (o->counter)
			o->counter(o->ctx, s, &c);
}

static int walk_events(struct walk *w, const uint8_t *payload, size_t len)
{
	const struct walk_ops *o;
	struct decoder *d = w->dec;
	struct walk_stream *s;
	struct lp_event ev;
	int r;

	if (decoder_begin(d, payload, len))
		return -EBADMSG;
	s = stream_get(w, d->image, d->pid, d->tid, d->time, opens_other(d));
	if (!s)
		return -ENOMEM;
	while ((r = decoder_next(d, &ev)) > 0) {
		w->events++;
		/* a syscall still open when the thread calls or returns did
		 * not finish (its exit is missing): it ends where it was */
		if (__builtin_expect(s->sc_pending, 0) && ev.type <= LP_EV_EXIT)
			syscall_deliver(w, s);
		switch (ev.type) {
		case LP_EV_ENTRY:
			s->calls++;
			if (s->selected)
				filter_entry(&s->fs, ev.time, code_addr(w, s, ev.value, ev.time));
			break;
		case LP_EV_EXIT:
			if (s->selected)
				filter_exit(&s->fs, ev.time, code_addr(w, s, ev.value, ev.time));
			break;
		case LP_EV_LONGJMP:
			if (s->selected)
				filter_longjmp(&s->fs, ev.time, ev.value);
			break;
		case LP_EV_LOST:
			s->lost += ev.value;
			w->lost += ev.value;
			for (o = w->ops; o; o = o->next)
				if (takes(o, s) && o->lost)
					o->lost(o->ctx, s, ev.time, ev.value);
			break;
		case LP_EV_MAP:
			symbolizer_add_map_at(w->sym, d->image, ev.time, ev.base, ev.start, ev.end, ev.offset,
			                      ev.build_id, ev.build_id_len, ev.str, ev.str_len);
			break;
		case LP_EV_TASK:
			on_task(w, s, &ev);
			break;
		case LP_EV_SYSCALL_ENTER:
		case LP_EV_SYSCALL_EXIT:
			on_syscall(w, s, &ev);
			break;
		case LP_EV_ALLOC:
			on_mem(w, s, &ev);
			break;
		case LP_EV_KERNEL:
			on_kernel(w, s, &ev);
			break;
		case LP_EV_STACK:
			on_stack(w, s, &ev);
			break;
		case LP_EV_SYNC:
			on_sync(w, s, &ev);
			break;
		case LP_EV_COUNTER:
			on_counter(w, s, &ev);
			break;
		case LP_EV_EXTENDED: {
			const uint8_t *p = (const uint8_t *)ev.str, *end = p + ev.str_len;
			uint64_t a, b;

			if (ev.value == LP_XEV_CALL) {
				if (varint_get(&p, end, &a) || varint_get(&p, end, &b))
					return -EBADMSG;
				s->calls++;
				w->source_filtered = true;
				for (o = w->ops; o; o = o->next)
					if (s->selected && o->call)
						o->call(o->ctx, s, ev.time, code_addr(w, s, a, ev.time), b);
			} else if (ev.value == LP_XEV_ARGS) {
				if (on_args(w, s, &ev))
					return -EBADMSG;
			} else if (ev.value == LP_XEV_RETVAL) {
				if (varint_get(&p, end, &a) || varint_get(&p, end, &b))
					return -EBADMSG;
				for (o = w->ops; o; o = o->next)
					if (s->selected && o->retval)
						o->retval(o->ctx, s, ev.time, code_addr(w, s, a, ev.time), b);
			} else if (ev.value == LP_XEV_PROBE) {
				struct walk_probe pr;

				if (varint_get(&p, end, &a))
					return -EBADMSG;
				pr.ns = ev.time;
				pr.addr = code_addr(w, s, a, ev.time);
				pr.func = innermost_open(s, &pr.depth);
				for (o = w->ops; o; o = o->next)
					if (s->selected && o->probe)
						o->probe(o->ctx, s, &pr);
			} else if (ev.value == LP_XEV_UNMAP) {
				if (varint_get(&p, end, &a) || varint_get(&p, end, &b))
					return -EBADMSG;
				if (symbolizer_end_map(w->sym, d->image, a, b, ev.time))
					w->unmaps++;
			}
			break;
		}
		default:
			break;
		}
		s->last_ns = ev.time;
	}
	if (!w->first_ns || s->first_ns < w->first_ns)
		w->first_ns = s->first_ns;
	if (s->last_ns > w->last_ns)
		w->last_ns = s->last_ns;
	return r < 0 ? -EBADMSG : 0;
}

static void reset_streams(struct walk *w)
{
	uint32_t i;

	for (i = 0; i < w->nstreams; i++) {
		filter_stream_release(&w->streams[i]->fs);
		stacks_release(w, w->streams[i]);
		free(w->streams[i]);
	}
	w->nstreams = w->nother = 0;
	hashindex_clear(&w->index);
	w->events = w->lost = w->syscalls = 0;
	w->mem_ops = w->mem_malformed = w->mem_unknown_stacks = w->mem_stacks_dropped = 0;
	w->mem_stacks_forgotten = 0;
	w->sync_events = w->sync_malformed = w->counter_events = w->counter_malformed = 0;
	w->kernel_events = w->other_kernel_events = w->kernel_malformed = 0;
	w->kformat_len = 0;
	w->first_ns = w->last_ns = 0;
}

static int stream_cmp(const void *a, const void *b)
{
	const struct walk_stream *x = *(const struct walk_stream *const *)a;
	const struct walk_stream *y = *(const struct walk_stream *const *)b;

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Streams in order of their first event (file order follows draining, not
 * time), and a process's main thread marked when an earlier image of the
 * same pid exists: that image called exec. */
static void order_streams(struct walk *w)
{
	uint32_t i, k;

	if (w->nstreams > 1)
		qsort(w->streams, w->nstreams, sizeof(*w->streams), stream_cmp);
	for (i = 0; i < w->nstreams; i++) {
		struct walk_stream *s = w->streams[i];

		if (s->tid != s->pid || s->parent_pid)
			continue;
		for (k = 0; k < i; k++) {
			const struct walk_stream *e = w->streams[k];

			if (e->pid == s->pid && e->tid == e->pid && e->image != s->image)
				s->after_exec = true;
		}
	}
	hashindex_clear(&w->index); /* the streams have new indices */
	for (i = 0; i < w->nstreams; i++)
		stream_put(w, i);
}

/* Progress for big traces, to the command's hook (walk_set_progress). */
#define WALK_PROGRESS_MIN_BYTES (64 << 20)
#define WALK_PROGRESS_STEP (16 << 20)

static void (*progress_hook)(const char *dir, int percent);

void walk_set_progress(void (*fn)(const char *dir, int percent))
{
	progress_hook = fn;
}

int walk_begin(struct walk *w, const struct walk_ops *ops)
{
	w->ops = ops;
	reset_streams(w);
	return index_consumers(w);
}

/* The trace's counter set: META "counters", comma-separated names. */
static void meta_counters(struct walk *w)
{
	char buf[LP_COUNTERS_MAX * 64];
	const char *p;

	w->ncounters = 0;
	if (!walk_meta(w, "counters", buf, sizeof(buf)))
		return;
	for (p = buf; *p && w->ncounters < LP_COUNTERS_MAX;) {
		size_t n = strcspn(p, ",");

		if (n && n < sizeof(w->counters[0])) {
			memcpy(w->counters[w->ncounters], p, n);
			w->counters[w->ncounters++][n] = '\0';
		}
		p += n + (p[n] == ',');
	}
}

/* A chunk's events and facts, without the consumers' chunk hooks. */
static int feed_payload(struct walk *w, uint8_t type, const uint8_t *payload, size_t len)
{
	switch (type) {
	case LP_CHUNK_EVENTS:
		return walk_events(w, payload, len);
	case LP_CHUNK_META: {
		size_t n = len < sizeof(w->meta) - 1 ? len : sizeof(w->meta) - 1;

		memcpy(w->meta, payload, n);
		w->meta[n] = '\0';
		w->filtered_at_record = strstr(w->meta, "\nfiltered=1") != NULL;
		meta_counters(w);
		return 0;
	}
	case LP_CHUNK_KFORMAT:
		return keep_kformat(w, payload, len);
	default:
		return 0; /* chunk types this reader does not use */
	}
}

/* A chunk between the consumers' chunk hooks: returns what the walk made
 * of it (as walk_feed), with *stop the value a consumer stopped the pass
 * with (0: none; then the chunk may not have been read). */
static int feed_chunk(struct walk *w, const struct walk_chunk *c, int *stop)
{
	const struct walk_ops *o;
	int r;

	*stop = index_consumers(w);
	if (*stop)
		return 0;
	for (o = w->ops; o; o = o->next)
		if (o->chunk_begin && (*stop = o->chunk_begin(o->ctx, c)))
			return 0;
	r = feed_payload(w, c->type, c->payload, c->len);
	for (o = w->ops; o; o = o->next)
		if (o->chunk_end && (*stop = o->chunk_end(o->ctx, c)))
			break;
	return r;
}

int walk_feed(struct walk *w, uint8_t type, const uint8_t *payload, size_t len)
{
	struct walk_chunk c = { .type = type, .offset = -1, .payload = payload, .len = len };
	int stop, r = feed_chunk(w, &c, &stop);

	return stop ? stop : r;
}

void walk_end(struct walk *w)
{
	const struct walk_ops *o;
	uint32_t i;

	order_streams(w);
	index_consumers(w); /* past the bound: the first consumers only */
	for (i = 0; i < w->nstreams; i++) {
		struct walk_stream *s = w->streams[i];

		if (s->selected) {
			syscall_deliver(w, s);
			filter_finish(&s->fs, s->last_ns);
		}
		for (o = w->ops; o; o = o->next)
			if (o->end && takes(o, s))
				o->end(o->ctx, s);
	}
}

/* Notes where an EVENTS or META chunk lies and when it begins: META
 * first, a thread's chunks never before its earlier ones. */
static int index_chunk(struct walk *w, off_t offset, uint8_t type, const uint8_t *payload, size_t len)
{
	struct walk_chunk_ref *c;
	uint64_t ns = 0;

	if (type != LP_CHUNK_EVENTS && type != LP_CHUNK_META && type != LP_CHUNK_KFORMAT)
		return 0;
	if (type == LP_CHUNK_EVENTS) {
		struct walk_stream *s;

		if (decoder_begin(w->dec, payload, len))
			return 0;
		ns = w->dec->time;
		s = stream_find(w, w->dec->image, w->dec->tid);
		if (s) {
			if (ns < s->order_ns)
				ns = s->order_ns;
			s->order_ns = ns;
		}
	}
	if (w->norder == w->order_cap) {
		size_t cap = w->order_cap ? 2 * w->order_cap : 1024;
		struct walk_chunk_ref *n = realloc(w->order, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->order = n;
		w->order_cap = cap;
	}
	c = &w->order[w->norder++];
	c->offset = offset;
	c->ns = ns;
	return 0;
}

static int run_file(struct walk *w, const struct walk_ops *ops, bool index)
{
	void (*progress)(const char *, int) = !w->quiet && w->r.size >= WALK_PROGRESS_MIN_BYTES ? progress_hook : NULL;
	off_t next_progress = WALK_PROGRESS_STEP;
	struct walk_chunk c;
	struct chunk_info ci;
	int r, stop;

	r = walk_begin(w, ops);
	if (r)
		return r;
	reader_seek(&w->r, LP_FILE_HEADER_SIZE);
	w->r.state = READER_OK;
	w->r.chunks = 0;
	w->r.seen_end = false;
	for (c.offset = w->r.offset; reader_next(&w->r, &ci, &c.payload) > 0; c.offset = w->r.offset) {
		if (progress && w->r.offset >= next_progress) {
			progress(w->dir, (int)(100 * w->r.offset / w->r.size));
			next_progress = w->r.offset + WALK_PROGRESS_STEP;
		}
		c.type = ci.type;
		c.len = ci.len;
		r = feed_chunk(w, &c, &stop);
		if (stop)
			return stop;
		if (r == -ENOMEM)
			return r;
		if (r) {
			w->r.state = READER_DAMAGED;
			snprintf(w->r.damage, sizeof(w->r.damage),
			         "undecodable events in the chunk ending at byte %lld", (long long)w->r.offset);
			break;
		}
		if (index && index_chunk(w, c.offset, c.type, c.payload, c.len))
			return -ENOMEM;
	}
	if (progress)
		progress(w->dir, -1);
	walk_end(w);
	return 0;
}

int walk_run(struct walk *w, const struct walk_ops *ops)
{
	return run_file(w, ops, false);
}

static int chunk_ref_cmp(const void *a, const void *b)
{
	const struct walk_chunk_ref *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int walk_run_by_time(struct walk *w, const struct walk_ops *ops)
{
	const struct walk_ops *o;
	enum reader_state state;
	struct walk_chunk c;
	struct chunk_info ci;
	size_t i;
	int r, stop;

	if (!w->order_ready) {
		w->norder = 0;
		r = run_file(w, NULL, true);
		if (r)
			return r;
		if (w->norder > 1) /* none at all when no chunk was readable */
			qsort(w->order, w->norder, sizeof(*w->order), chunk_ref_cmp);
		w->order_ready = true;
	}
	/* the first pass said where the damage is; the chunks it indexed are
	 * all before it, and read again as they are */
	state = w->r.state;
	w->r.state = READER_OK;
	r = walk_begin(w, ops);
	if (r) {
		w->r.state = state;
		return r;
	}
	for (i = 0; i < w->norder; i++) {
		for (o = w->ops; o; o = o->next)
			if (o->watermark)
				o->watermark(o->ctx, w->order[i].ns);
		c.offset = w->order[i].offset;
		if (reader_seek(&w->r, c.offset) || reader_next(&w->r, &ci, &c.payload) <= 0)
			break;
		c.type = ci.type;
		c.len = ci.len;
		r = feed_chunk(w, &c, &stop);
		if (stop) {
			w->r.state = state;
			return stop;
		}
		if (r == -ENOMEM)
			return r;
		if (r)
			break; /* the first pass found the damage and said so */
	}
	walk_end(w);
	w->r.state = state;
	return 0;
}

const char *walk_name(struct walk *w, uint32_t image, uint64_t addr, char *buf, size_t size)
{
	return symbolizer_format(w->sym, image, addr, buf, size);
}

const char *walk_meta(const struct walk *w, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = w->meta;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t llen = nl ? (size_t)(nl - p) : strlen(p);

		if (llen > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t n = llen - klen - 1;

			if (n >= size)
				n = size - 1;
			memcpy(buf, p + klen + 1, n);
			buf[n] = '\0';
			return buf;
		}
		p += llen + (nl ? 1 : 0);
	}
	return NULL;
}

/* Says which of the user's filters matched nothing: a pattern no
 * function called in the trace matched, a thread id no thread had. */
static void warn_filters(const struct walk *w, const struct lp_warner *warn)
{
	size_t i;
	uint32_t k;

	for (i = 0; w->cls && i < w->fopts.n_only; i++)
		if (!classifier_matched(w->cls, true, i))
			error_warn(warn, "warning: %s '%s' matches no function called in trace '%s'",
			           w->fopts.only_opt[i] ? w->fopts.only_opt[i] : "-F", w->fopts.only[i], w->dir);
	for (i = 0; w->cls && i < w->fopts.n_exclude; i++)
		if (!classifier_matched(w->cls, false, i))
			error_warn(warn, "warning: -N '%s' matches no function called in trace '%s'",
			           w->fopts.exclude[i], w->dir);
	for (i = 0; i < w->fopts.n_tids; i++) {
		for (k = 0; k < w->nstreams && w->streams[k]->tid != w->fopts.tids[i]; k++)
			;
		if (k == w->nstreams)
			error_warn(warn, "warning: --tid %u: trace '%s' has no thread %u", w->fopts.tids[i], w->dir,
			           w->fopts.tids[i]);
	}
}

int walk_condition(const struct walk *w, const struct lp_warner *warn, char *err, size_t errlen)
{
	uint64_t deep = 0;
	uint32_t i;

	warn_filters(w, warn);
	for (i = 0; i < w->nstreams; i++)
		deep += w->streams[i]->fs.deep_calls;
	if (deep)
		error_warn(warn, "warning: %llu calls deeper than %u levels were left out (counted as lost events)",
		           (unsigned long long)deep, w->spec.stack_max ? w->spec.stack_max : FILTER_STACK_MAX);
	if (w->r.state == READER_DAMAGED)
		return error_set(err, errlen, -EBADMSG, "trace '%s' is damaged: %s; results cover the readable part",
		                 w->dir, w->r.damage);
	if (!w->r.seen_end) {
		char note[PATH_MAX];
		bool killed;

		/* a recorder that was killed left its note: recover can add more */
		snprintf(note, sizeof(note), "%s/%s", w->dir, TRACEDIR_RECORDING);
		killed = !access(note, F_OK);
		error_warn(warn, "warning: trace '%s' has no end record: the recording was interrupted%s%s%s", w->dir,
		           killed ? "; 'layerprof recover " : "", killed ? w->dir : "",
		           killed ? "' adds what the killed recorder left in its rings" : "");
	}
	return 0;
}

void walk_release(struct walk *w)
{
	reset_streams(w);
	free(w->streams);
	hashindex_release(&w->index);
	free(w->order);
	free(w->dec);
	if (w->kformat_cache && w->kformat_cache_free)
		w->kformat_cache_free(w->kformat_cache);
	free(w->kformat);
	classifier_free(w->cls);
	symbolizer_free(w->sym);
	reader_release(&w->r);
	memset(w, 0, sizeof(*w));
}
