/* System call statistics (see sysstats.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/json.h"

#define SYSSTATS_KEYS_MAX (1u << 22)

struct sysstats_key {
	uint32_t image, tid;
	uint64_t addr; /* function or stack frame; 0: unknown */
	bool frame;    /* addr is a return address, not a function entry */
	uint8_t arch;
	uint32_t nr;
	uint64_t calls, errors, total_ns;
};

void sysstats_init(struct sysstats *st, struct walk *w, unsigned flags)
{
	memset(st, 0, sizeof(*st));
	st->w = w;
	st->flags = flags;
}

void sysstats_release(struct sysstats *st)
{
	unsigned a;
	uint32_t i;

	for (a = 0; a < 4; a++) {
		if (!st->rows[a])
			continue;
		for (i = 0; i < SYS_NR_MAX; i++)
			free(st->rows[a][i].hist);
		free(st->rows[a]);
	}
	free(st->keys);
	hashindex_release(&st->keyindex);
	memset(st, 0, sizeof(*st));
}

static uint32_t hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 64)
		return (uint32_t)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - 5;
	return (shift + 1) * 32 + (uint32_t)((v >> shift) - 32);
}

/* The middle of a bucket's range. */
static uint64_t hist_value(uint32_t idx)
{
	unsigned shift;
	uint64_t lo;

	if (idx < 64)
		return idx;
	shift = idx / 32 - 1;
	lo = (uint64_t)(idx % 32 + 32) << shift;
	return lo + ((UINT64_C(1) << shift) >> 1);
}

static struct sysstats_row *row_get(struct sysstats *st, uint8_t arch, uint32_t nr)
{
	struct sysstats_row *r;

	if (arch >= 4 || nr >= SYS_NR_MAX)
		return NULL;
	if (!st->rows[arch]) {
		st->rows[arch] = calloc(SYS_NR_MAX, sizeof(*st->rows[arch]));
		if (!st->rows[arch])
			return NULL;
	}
	r = &st->rows[arch][nr];
	if (!r->hist) {
		r->hist = calloc(SYSSTATS_HIST_BUCKETS, sizeof(*r->hist));
		if (!r->hist)
			return NULL;
		r->arch = arch;
		r->nr = nr;
		r->min_ns = UINT64_MAX;
		sys_name((enum sys_arch)arch, nr, r->name, sizeof(r->name));
	}
	return r;
}

/* The frame the call is attributed to without an instrumented function:
 * the first return address outside the C library and the loader, else
 * the innermost one; 0 without a stack. */
static uint64_t caller_frame(struct walk *w, uint32_t image, const struct walk_syscall *sc)
{
	uint32_t i;

	for (i = 0; i < sc->nips; i++) {
		struct symbol sym;

		if (!sc->ips[i])
			continue;
		if (symbolizer_lookup(w->sym, image, sc->ips[i], &sym) == -ENOMEM)
			break;
		if (sym.module && !symbolizer_system_module(sym.module))
			return sc->ips[i];
	}
	return sc->nips ? sc->ips[0] : 0;
}

const char *sysstats_caller(struct walk *w, const struct walk_stream *s, const struct walk_syscall *sc, char *buf,
                            size_t size)
{
	uint64_t frame;
	struct symbol sym;

	if (sc->func)
		return walk_name(w, s->image, sc->func, buf, size);
	frame = caller_frame(w, s->image, sc);
	if (!frame) {
		snprintf(buf, size, "[unknown]");
		return buf;
	}
	if (symbolizer_lookup(w->sym, s->image, frame - 1, &sym) == 0 && sym.name) {
		snprintf(buf, size, "%s", sym.name);
		return buf;
	}
	return walk_name(w, s->image, frame, buf, size);
}

static uint64_t key_hash(const struct sysstats_key *k)
{
	return hashindex_u64(k->addr ^ hashindex_u64((uint64_t)k->image << 32 | k->tid) ^
	                     hashindex_u64((uint64_t)k->arch << 33 | (uint64_t)k->nr << 1 | k->frame));
}

static bool key_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct sysstats_key *a = &((const struct sysstats *)ctx)->keys[item], *b = key;

	return a->addr == b->addr && a->image == b->image && a->tid == b->tid && a->arch == b->arch && a->nr == b->nr &&
	       a->frame == b->frame;
}

static struct sysstats_key *key_get(struct sysstats *st, const struct sysstats_key *k)
{
	uint64_t hash = key_hash(k);
	uint32_t slot;

	if (hashindex_reserve(&st->keyindex))
		return NULL;
	slot = hashindex_slot(&st->keyindex, hash, key_eq, st, k);
	if (st->keyindex.val[slot])
		return &st->keys[st->keyindex.val[slot] - 1];
	if (st->nkeys == st->keys_cap) {
		uint32_t cap = st->keys_cap ? 2 * st->keys_cap : 128;
		struct sysstats_key *n;

		/* half the index's bound, as when the keys were the index */
		if (cap > SYSSTATS_KEYS_MAX / 2 || !(n = realloc(st->keys, cap * sizeof(*n))))
			return NULL;
		st->keys = n;
		st->keys_cap = cap;
	}
	st->keys[st->nkeys] = *k;
	hashindex_put(&st->keyindex, slot, hash, st->nkeys);
	return &st->keys[st->nkeys++];
}

void sysstats_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct sysstats *st = ctx;
	struct sysstats_row *r;
	struct sysstats_key k, *kp;
	bool error = sc->has_exit && sc->ret < 0 && sc->ret >= -4095;
	uint64_t dur = 0;

	/* an exit whose entry is elsewhere (exec: the entry is in the old
	 * image's stream) is counted there */
	if (!sc->has_enter)
		return;
	r = row_get(st, sc->arch, sc->nr);
	if (!r) {
		st->oom = true;
		return;
	}
	r->calls++;
	st->calls++;
	if (error) {
		r->errors++;
		st->errors++;
	}
	if (sc->has_exit) {
		dur = sc->exit_ns > sc->enter_ns ? sc->exit_ns - sc->enter_ns : 0;
		r->timed++;
		r->total_ns += dur;
		if (dur < r->min_ns)
			r->min_ns = dur;
		if (dur > r->max_ns)
			r->max_ns = dur;
		r->hist[hist_index(dur)]++;
	} else {
		r->unfinished++;
	}
	memset(&k, 0, sizeof(k));
	k.image = s->image;
	k.tid = (st->flags & SYSSTATS_PER_THREAD) ? s->tid : 0;
	k.arch = sc->arch;
	k.nr = sc->nr;
	k.addr = sc->func;
	if (!k.addr) {
		k.addr = caller_frame(st->w, s->image, sc);
		k.frame = true;
	}
	kp = key_get(st, &k);
	if (!kp) {
		st->oom = true;
		return;
	}
	kp->calls++;
	kp->errors += error;
	kp->total_ns += dur;
}

void sysstats_walk_ops(struct sysstats *st, struct walk_ops *ops)
{
	ops->ctx = st;
	ops->syscall = sysstats_syscall;
}

static void row_percentiles(struct sysstats_row *r)
{
	uint64_t seen = 0, p50 = (r->timed + 1) / 2, p99 = r->timed - r->timed / 100;
	uint32_t i;

	r->p50_ns = r->p99_ns = 0;
	if (!r->timed)
		return;
	for (i = 0; i < SYSSTATS_HIST_BUCKETS; i++) {
		uint64_t v;

		if (!r->hist[i])
			continue;
		seen += r->hist[i];
		/* within the extremes the bucket's middle; never outside them */
		v = hist_value(i);
		v = v < r->min_ns ? r->min_ns : v > r->max_ns ? r->max_ns : v;
		if (!r->p50_ns && seen >= p50)
			r->p50_ns = v;
		if (seen >= p99) {
			r->p99_ns = v;
			break;
		}
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct sysstats_row *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int fn_cmp(const void *a, const void *b)
{
	const struct sysstats_fn *x = a, *y = b;
	int c;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	c = strcmp(x->syscall, y->syscall);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Same name, syscall and thread: one row. */
static int fn_merge_cmp(const void *a, const void *b)
{
	const struct sysstats_fn *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	c = strcmp(x->syscall, y->syscall);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static char *key_name(struct sysstats *st, const struct sysstats_key *k)
{
	char buf[1024];
	struct symbol sym;

	if (!k->addr)
		snprintf(buf, sizeof(buf), "[unknown]");
	else if (!k->frame)
		walk_name(st->w, k->image, k->addr, buf, sizeof(buf));
	else if (symbolizer_lookup(st->w->sym, k->image, k->addr - 1, &sym) == 0 && sym.name)
		snprintf(buf, sizeof(buf), "%s", sym.name);
	else
		walk_name(st->w, k->image, k->addr, buf, sizeof(buf));
	return strdup(buf);
}

int sysstats_collect(struct sysstats *st, struct sysstats_result *out)
{
	size_t n = 0, i, j;
	unsigned a;
	uint32_t nr;

	memset(out, 0, sizeof(*out));
	for (a = 0; a < 4; a++)
		for (nr = 0; st->rows[a] && nr < SYS_NR_MAX; nr++)
			n += st->rows[a][nr].calls > 0;
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	out->fns = calloc(st->nkeys ? st->nkeys : 1, sizeof(*out->fns));
	if (!out->rows || !out->fns)
		goto oom;
	for (a = 0; a < 4; a++) {
		for (nr = 0; st->rows[a] && nr < SYS_NR_MAX; nr++) {
			struct sysstats_row *r = &st->rows[a][nr];

			if (!r->calls)
				continue;
			row_percentiles(r);
			out->rows[out->nrows] = *r;
			out->rows[out->nrows].hist = NULL;
			if (!r->timed)
				out->rows[out->nrows].min_ns = 0;
			out->nrows++;
		}
	}
	qsort(out->rows, out->nrows, sizeof(*out->rows), row_cmp);
	for (i = 0; i < st->nkeys; i++) {
		const struct sysstats_key *k = &st->keys[i];
		struct sysstats_fn *f = &out->fns[out->nfns];

		f->name = key_name(st, k);
		if (!f->name)
			goto oom;
		out->nfns++;
		f->tid = k->tid;
		f->arch = k->arch;
		f->nr = k->nr;
		sys_name((enum sys_arch)k->arch, k->nr, f->syscall, sizeof(f->syscall));
		f->calls = k->calls;
		f->errors = k->errors;
		f->total_ns = k->total_ns;
	}
	/* several addresses may have one name (images of one program) */
	if (out->nfns > 1)
		qsort(out->fns, out->nfns, sizeof(*out->fns), fn_merge_cmp);
	for (i = j = 0; i < out->nfns; i++) {
		if (j && !fn_merge_cmp(&out->fns[j - 1], &out->fns[i])) {
			out->fns[j - 1].calls += out->fns[i].calls;
			out->fns[j - 1].errors += out->fns[i].errors;
			out->fns[j - 1].total_ns += out->fns[i].total_ns;
			free(out->fns[i].name);
		} else {
			out->fns[j++] = out->fns[i];
		}
	}
	out->nfns = j;
	qsort(out->fns, out->nfns, sizeof(*out->fns), fn_cmp);
	return 0;
oom:
	sysstats_result_release(out);
	return -ENOMEM;
}

void sysstats_result_release(struct sysstats_result *r)
{
	size_t i;

	for (i = 0; r->fns && i < r->nfns; i++)
		free(r->fns[i].name);
	free(r->fns);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

void sysstats_json(struct json *j, const struct sysstats_result *res, bool with_tid)
{
	size_t i;

	json_array_begin(j, "syscalls");
	for (i = 0; i < res->nrows; i++) {
		const struct sysstats_row *r = &res->rows[i];

		json_object_begin(j, NULL);
		json_str(j, "name", r->name);
		json_u64(j, "nr", r->nr);
		json_str(j, "arch", sys_arch_name((enum sys_arch)r->arch));
		json_u64(j, "calls", r->calls);
		json_u64(j, "errors", r->errors);
		json_u64(j, "unfinished", r->unfinished);
		json_u64(j, "total_ns", r->total_ns);
		json_u64(j, "avg_ns", r->timed ? r->total_ns / r->timed : 0);
		json_u64(j, "min_ns", r->min_ns);
		json_u64(j, "max_ns", r->max_ns);
		json_u64(j, "p50_ns", r->p50_ns);
		json_u64(j, "p99_ns", r->p99_ns);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "by_function");
	for (i = 0; i < res->nfns; i++) {
		const struct sysstats_fn *fn = &res->fns[i];

		json_object_begin(j, NULL);
		json_str(j, "function", fn->name);
		json_str(j, "syscall", fn->syscall);
		if (with_tid)
			json_u64(j, "tid", fn->tid);
		json_u64(j, "calls", fn->calls);
		json_u64(j, "errors", fn->errors);
		json_u64(j, "total_ns", fn->total_ns);
		json_object_end(j);
	}
	json_array_end(j);
}
