/* `report --sync` (see syncreport.h): one pass by time with the heap state
 * beside the synchronisation statistics (for the names of objects in heap
 * blocks; objects in global or static variables are named by their
 * symbol), then the tables as text, JSON or XML. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/export/syncreport.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/options.h"
#include "layerprof/format.h"

#define SYNCREPORT_TEXT_ROWS 40u /* rows of each table in text */
#define SYNCREPORT_TEXT_TOP 10u  /* longest waits in text */
#define SYNCREPORT_TEXT_TIDS 8u  /* threads listed per object in text */

/* ------------------------------------------------------------ naming by heap blocks and symbols */

struct objnamer {
	struct heap h;
	struct heapfeed feed;
	struct symbolizer *sym; /* the walk's, borrowed */
	struct syncstats *st;
};

/* "heap block from <allocation site>" (+0x<offset> when inside it); else,
 * for a global or static variable, its symbol ("queue_lock",
 * "stats+0x40"). */
static bool object_namer(void *ctx, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size)
{
	struct objnamer *hn = ctx;
	const struct heap_proc *p = heap_proc_find(&hn->h, image);
	uint64_t ptr, bsize;
	uint32_t site;

	/* the heap as it was at the object's first use: what happened before */
	heapfeed_watermark(&hn->feed, ns);
	if (!p || !heap_find_block(p, addr, &ptr, &bsize, &site) || site >= hn->h.nsites)
		return symbolizer_data_name(hn->sym, image, addr, ns, buf, size);
	if (addr == ptr)
		snprintf(buf, size, "heap block from %s", hn->h.sites[site].key);
	else
		snprintf(buf, size, "heap block from %s +0x%" PRIx64, hn->h.sites[site].key, addr - ptr);
	return true;
}

/* The pass's order: the operations up to ns first, each naming its object
 * with the heap brought up to that operation's time, then the heap up to
 * ns.  The other way round, a block freed after a lock's first use but
 * before ns would be gone when the lock is named. */
static void namer_watermark(void *ctx, uint64_t ns)
{
	struct objnamer *hn = ctx;

	syncstats_watermark(hn->st, ns);
	heapfeed_watermark(&hn->feed, ns);
}

/* ------------------------------------------------------------ helpers */

static const char *dur(uint64_t ns, char *buf, size_t size)
{
	return options_format_duration(ns, buf, size);
}

/* "tid 5" or "tids 5, 6" of one side of a pair. */
static void side_tids(const struct syncstats *st, const struct syncstats_pair *p, int side, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "tid%s", p->nside[side] > 1 ? "s" : "");

	for (uint32_t i = 0; i < p->nside[side] && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s %u", i ? "," : "", st->threads[p->side[side][i]].tid);
}

const char *syncreport_pair_text(const struct syncstats *st, const struct syncstats_pair *p, char *buf, size_t size)
{
	char tids[256];
	double prod = 100.0 * p->share[0], cons = 100.0 * p->share[1];

	if (p->slow == 0) {
		side_tids(st, p, 0, tids, sizeof(tids));
		snprintf(buf, size, "producer side (%s) is slow: consumers wait %.0f%% of the time, producers %.0f%%",
		         tids, cons, prod);
	} else if (p->slow == 1) {
		side_tids(st, p, 1, tids, sizeof(tids));
		snprintf(buf, size, "consumer side (%s) is slow: producers wait %.0f%% of the time, consumers %.0f%%",
		         tids, prod, cons);
	} else if (!p->wait_ns[0]) {
		snprintf(buf, size, "neither side waits for the other");
	} else {
		snprintf(buf, size,
		         "producers and consumers wait alike: producers %.0f%% of the time, consumers %.0f%%", prod,
		         cons);
	}
	return buf;
}

/* The threads that used o, as "5, 6, 7 and 3 more". */
static void users_text(const struct syncstats *st, const struct syncstats_object *o, char *buf, size_t size)
{
	size_t n = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < o->nuses && i < SYNCREPORT_TEXT_TIDS && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%u", i ? ", " : "",
		                      st->threads[st->uses[o->first_use + i].thread].tid);
	if (o->nuses > SYNCREPORT_TEXT_TIDS && n < size)
		snprintf(buf + n, size - n, " and %u more", o->nuses - SYNCREPORT_TEXT_TIDS);
}

/* ------------------------------------------------------------ text */

static void text_header(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	fprintf(f,
	        "# layerprof report --sync: %llu operations, %u locks, %u conditions and semaphores, %u barriers, "
	        "%u threads, %llu events lost\n",
	        (unsigned long long)st->ops, r->nlocks, r->nconds, r->nbarriers, r->nthreads,
	        (unsigned long long)w->lost);
	fprintf(f, "# waits: from the call to its return; p99: nearest rank of the waits (a histogram bucket's middle "
	           "past 100 waits)\n");
	if (st->late)
		fprintf(f, "# %llu operations came after later ones in the merge by time: their wakers may be wrong\n",
		        (unsigned long long)st->late);
	if (w->sync_malformed)
		fprintf(f, "# %llu malformed sync events left out\n", (unsigned long long)w->sync_malformed);
}

static void text_locks(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	char a[32], b[32], c[32], d[32], e[32], name[SYNCSTATS_NAME_MAX], site[512], users[256];

	if (!r->nlocks)
		return;
	fprintf(f, "\n# locks\n");
	fprintf(f, "%10s %10s %8s %12s %12s %12s %12s %12s  %-8s %s\n", "Acquired", "Contended", "Failed", "Wait",
	        "Max wait", "p99 wait", "Hold", "Max hold", "Kind", "Lock");
	fprintf(f, "%10s %10s %8s %12s %12s %12s %12s %12s  %-8s %s\n", "========", "=========", "======", "==========",
	        "==========", "==========", "==========", "==========", "====", "====");
	for (uint32_t i = 0; i < r->nlocks && i < SYNCREPORT_TEXT_ROWS; i++) {
		const struct syncstats_object *o = &st->objects[r->locks[i]];

		users_text(st, o, users, sizeof(users));
		fprintf(f, "%10llu %10llu %8llu %12s %12s %12s%s %12s %12s  %-8s %s (first at %s; threads %s)\n",
		        (unsigned long long)o->acquisitions, (unsigned long long)o->contended,
		        (unsigned long long)(o->try_failures + o->failures), dur(o->waits.total_ns, a, sizeof(a)),
		        dur(o->waits.max_ns, b, sizeof(b)), dur(o->wait_p99_ns, c, sizeof(c)), o->p99_approx ? "~" : "",
		        dur(o->hold_ns, d, sizeof(d)), dur(o->hold_max_ns, e, sizeof(e)), syncstats_kind_name(o->kind),
		        syncstats_object_name(o, name, sizeof(name)), syncstats_object_site(w, o, site, sizeof(site)),
		        users);
	}
	if (r->nlocks > SYNCREPORT_TEXT_ROWS)
		fprintf(f, "# %u more locks: see --format json\n", r->nlocks - SYNCREPORT_TEXT_ROWS);
}

static void text_conds(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	char a[32], b[32], c[32], name[SYNCSTATS_NAME_MAX], site[512], tn[64];

	if (!r->nconds)
		return;
	fprintf(f, "\n# conditions and semaphores: who waits, who signals or posts\n");
	fprintf(f, "%10s %10s %12s %12s %12s %10s  %-9s %s\n", "Calls", "Waits", "Wait", "Max wait", "p99 wait",
	        "Signals", "Kind", "Object");
	fprintf(f, "%10s %10s %12s %12s %12s %10s  %-9s %s\n",
	        "========", "========", "==========", "==========", "==========", "========", "====", "======");
	for (uint32_t i = 0; i < r->nconds && i < SYNCREPORT_TEXT_ROWS; i++) {
		const struct syncstats_object *o = &st->objects[r->conds[i]];

		fprintf(f, "%10llu %10llu %12s %12s %12s%s %10llu  %-9s %s (first at %s)\n",
		        (unsigned long long)o->calls, (unsigned long long)o->waits.n,
		        dur(o->waits.total_ns, a, sizeof(a)), dur(o->waits.max_ns, b, sizeof(b)),
		        dur(o->wait_p99_ns, c, sizeof(c)), o->p99_approx ? "~" : "",
		        (unsigned long long)(o->signals + o->broadcasts + o->posts), syncstats_kind_name(o->kind),
		        syncstats_object_name(o, name, sizeof(name)), syncstats_object_site(w, o, site, sizeof(site)));
		for (uint32_t k = 0; k < o->nuses; k++) {
			const struct syncstats_use *u = &st->uses[o->first_use + k];
			const struct syncstats_thread *t = &st->threads[u->thread];

			if (u->calls)
				fprintf(f, "%10s waiter %s: %llu calls, %llu waits, %s, longest %s\n", "",
				        syncstats_thread_name(t, tn, sizeof(tn)), (unsigned long long)u->calls,
				        (unsigned long long)u->waits.n, dur(u->waits.total_ns, a, sizeof(a)),
				        dur(u->waits.max_ns, b, sizeof(b)));
			if (u->signals)
				fprintf(f, "%10s %s %s: %llu\n", "", o->kind == SYNCSTATS_SEM ? "poster" : "signaller",
				        syncstats_thread_name(t, tn, sizeof(tn)), (unsigned long long)u->signals);
		}
	}
}

static void text_barriers(FILE *f, const struct syncstats *st, const struct syncstats_result *r)
{
	char a[32], b[32], name[SYNCSTATS_NAME_MAX], tn[64];

	if (!r->nbarriers)
		return;
	fprintf(f, "\n# barriers: each thread's waits (the fast ones wait for the slow)\n");
	for (uint32_t i = 0; i < r->nbarriers && i < SYNCREPORT_TEXT_ROWS; i++) {
		const struct syncstats_object *o = &st->objects[r->barriers[i]];

		fprintf(f, "barrier %s: %llu calls, waited %s in all, longest %s\n",
		        syncstats_object_name(o, name, sizeof(name)), (unsigned long long)o->calls,
		        dur(o->waits.total_ns, a, sizeof(a)), dur(o->waits.max_ns, b, sizeof(b)));
		for (uint32_t k = 0; k < o->nuses; k++) {
			const struct syncstats_use *u = &st->uses[o->first_use + k];

			fprintf(f, "%12s %10llu calls  %s\n", dur(u->waits.total_ns, a, sizeof(a)),
			        (unsigned long long)u->calls,
			        syncstats_thread_name(&st->threads[u->thread], tn, sizeof(tn)));
		}
	}
}

static void text_futexes(FILE *f, const struct syncstats *st, const struct syncstats_result *r)
{
	char a[32], b[32], c[32], name[SYNCSTATS_NAME_MAX], users[256];

	if (!r->nfutexes)
		return;
	fprintf(f, "\n# futex waits of other code (FUTEX_WAIT* system calls outside the interposed functions)\n");
	fprintf(f, "%10s %10s %12s %12s %12s %8s  %s\n", "Calls", "Waits", "Wait", "Max wait", "p99 wait", "Wakes",
	        "Futex");
	fprintf(f, "%10s %10s %12s %12s %12s %8s  %s\n",
	        "========", "========", "==========", "==========", "==========", "=====", "=====");
	for (uint32_t i = 0; i < r->nfutexes && i < SYNCREPORT_TEXT_ROWS; i++) {
		const struct syncstats_object *o = &st->objects[r->futexes[i]];

		users_text(st, o, users, sizeof(users));
		fprintf(f, "%10llu %10llu %12s %12s %12s%s %8llu  %s (threads %s)\n", (unsigned long long)o->calls,
		        (unsigned long long)o->waits.n, dur(o->waits.total_ns, a, sizeof(a)),
		        dur(o->waits.max_ns, b, sizeof(b)), dur(o->wait_p99_ns, c, sizeof(c)), o->p99_approx ? "~" : "",
		        (unsigned long long)o->signals, syncstats_object_name(o, name, sizeof(name)), users);
	}
}

static void text_threads(FILE *f, const struct syncstats *st, const struct syncstats_result *r)
{
	static const unsigned kinds[] = { SYNCSTATS_MUTEX, SYNCSTATS_RWLOCK,  SYNCSTATS_SPIN, SYNCSTATS_COND,
		                          SYNCSTATS_SEM,   SYNCSTATS_BARRIER, SYNCSTATS_JOIN, SYNCSTATS_FUTEX };
	char a[32], k[32], tn[64];

	fprintf(f, "\n# threads: time waiting by kind\n");
	fprintf(f, "%12s %6s %10s %10s %10s %10s %10s %10s %10s %10s %9s %12s  %s\n", "Wait", "Wait%", "Mutex",
	        "Rwlock", "Spin", "Cond", "Sem", "Barrier", "Join", "Futex", "Acquired", "Hold", "Thread");
	fprintf(f, "%12s %6s %10s %10s %10s %10s %10s %10s %10s %10s %9s %12s  %s\n", "==========", "=====", "=====",
	        "======", "====", "====", "===", "=======", "====", "=====", "========", "==========", "======");
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct syncstats_thread *t = &st->threads[r->threads[i]];

		fprintf(f, "%12s %5.1f%%", dur(t->wait_ns, a, sizeof(a)), 100.0 * t->wait_share);
		for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++)
			fprintf(f, " %10s", dur(t->waits[kinds[j]].total_ns, k, sizeof(k)));
		fprintf(f, " %9llu %12s  %s\n", (unsigned long long)t->acquisitions, dur(t->hold_ns, a, sizeof(a)),
		        syncstats_thread_name(t, tn, sizeof(tn)));
	}
}

static void text_joins(FILE *f, const struct syncstats *st)
{
	char a[32], tn[64], jn[64];

	if (!st->njoins)
		return;
	fprintf(f, "\n# joins: who waited for whom\n");
	for (uint32_t i = 0; i < st->njoins && i < SYNCREPORT_TEXT_ROWS; i++) {
		const struct syncstats_join *j = &st->joins[i];

		if (j->joined)
			syncstats_thread_name(&st->threads[j->joined - 1], jn, sizeof(jn));
		else
			snprintf(jn, sizeof(jn), "pthread 0x%llx", (unsigned long long)j->pthread);
		fprintf(f, "%12s  %s joined %s%s\n", dur(j->wait_ns, a, sizeof(a)),
		        syncstats_thread_name(&st->threads[j->thread], tn, sizeof(tn)), jn,
		        j->failed ? " (failed)" : "");
	}
	if (st->njoins > SYNCREPORT_TEXT_ROWS)
		fprintf(f, "# %u more joins: see --format json\n", st->njoins - SYNCREPORT_TEXT_ROWS);
}

static void text_pairs(FILE *f, const struct syncstats *st, const struct syncstats_result *r)
{
	char line[512], name[SYNCSTATS_NAME_MAX];

	if (!r->npairs)
		return;
	fprintf(f,
	        "\n# producer/consumer balance (share of the pair's span each side waits on what the other signals)\n");
	for (uint32_t i = 0; i < r->npairs; i++) {
		const struct syncstats_pair *p = &r->pairs[i];

		fprintf(f, "%s\n", syncreport_pair_text(st, p, line, sizeof(line)));
		fprintf(f, "    through");
		for (uint32_t k = 0; k < p->nobjects && k < SYNCSTATS_PAIR_OBJECTS; k++) {
			const struct syncstats_object *o = &st->objects[p->objects[k]];

			fprintf(f, "%s %s %s", k ? "," : "", syncstats_kind_name(o->kind),
			        syncstats_object_name(o, name, sizeof(name)));
		}
		fprintf(f, "%s\n", p->nobjects > SYNCSTATS_PAIR_OBJECTS ? " and more" : "");
	}
}

static void text_top(FILE *f, const struct syncstats *st)
{
	char a[32];

	if (!st->ntop)
		return;
	fprintf(f, "\n# longest waits\n");
	for (uint32_t i = 0; i < st->ntop && i < SYNCREPORT_TEXT_TOP; i++) {
		const struct syncstats_wait *wt = &st->top[i];

		fprintf(f, "%12s  tid %u, %s 0x%llx", dur(wt->end_ns - wt->begin_ns, a, sizeof(a)), wt->tid,
		        syncstats_kind_name(wt->kind), (unsigned long long)wt->obj);
		if (wt->waker_tid)
			fprintf(f, ", ended by tid %u\n", wt->waker_tid);
		else
			fprintf(f, "\n");
	}
}

static void text_overflow(FILE *f, struct walk *w, const struct syncstats *st)
{
	const struct syncstats_overflow *o = &st->over;

	if (o->objects || o->threads || o->uses || o->held || o->joins || o->pairs)
		fprintf(f,
		        "\n# over the bounds, left out: %llu operations on objects, %llu of threads, %llu of object "
		        "uses, %llu holds, %llu joins, %llu producer/consumer objects\n",
		        (unsigned long long)o->objects, (unsigned long long)o->threads, (unsigned long long)o->uses,
		        (unsigned long long)o->held, (unsigned long long)o->joins, (unsigned long long)o->pairs);
	if (o->hists)
		fprintf(f, "# %llu objects without a histogram: their p99 (~) is the longest wait\n",
		        (unsigned long long)o->hists);
	if (w->lost)
		fprintf(f, "\n# %llu events lost: the numbers are incomplete\n", (unsigned long long)w->lost);
}

static void write_text(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	text_header(f, w, st, r);
	text_locks(f, w, st, r);
	text_conds(f, w, st, r);
	text_barriers(f, st, r);
	text_futexes(f, st, r);
	text_threads(f, st, r);
	text_joins(f, st);
	text_pairs(f, st, r);
	text_top(f, st);
	text_overflow(f, w, st);
}

/* ------------------------------------------------------------ JSON */

static void json_waits(struct json *j, const struct syncstats_waits *w)
{
	json_u64(j, "waits", w->n);
	json_u64(j, "wait_ns", w->total_ns);
	json_u64(j, "wait_max_ns", w->max_ns);
}

static void json_object_head(struct json *j, struct walk *w, const struct syncstats_object *o)
{
	char buf[SYNCSTATS_NAME_MAX], site[512];

	json_str(j, "name", syncstats_object_name(o, buf, sizeof(buf)));
	json_str(j, "kind", syncstats_kind_name(o->kind));
	snprintf(buf, sizeof(buf), "0x%" PRIx64, o->addr);
	json_str(j, "addr", buf);
	json_u64(j, "image", o->image);
	json_u64(j, "pid", o->pid);
	if (o->site)
		json_str(j, "first_site", syncstats_object_site(w, o, site, sizeof(site)));
	else
		json_null(j, "first_site");
	json_u64(j, "first_ns", o->first_ns);
	json_u64(j, "last_ns", o->last_ns);
	json_waits(j, &o->waits);
	json_u64(j, "wait_p99_ns", o->wait_p99_ns);
	json_bool(j, "wait_p99_approx", o->p99_approx);
}

static void json_locks(struct json *j, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	json_array_begin(j, "locks");
	for (uint32_t i = 0; i < r->nlocks; i++) {
		const struct syncstats_object *o = &st->objects[r->locks[i]];

		json_object_begin(j, NULL);
		json_object_head(j, w, o);
		json_u64(j, "acquisitions", o->acquisitions);
		json_u64(j, "read_acquisitions", o->rd_acquisitions);
		json_u64(j, "contended", o->contended);
		json_u64(j, "try_failures", o->try_failures);
		json_u64(j, "failures", o->failures);
		json_u64(j, "holds", o->holds);
		json_u64(j, "hold_ns", o->hold_ns);
		json_u64(j, "hold_max_ns", o->hold_max_ns);
		json_u64(j, "held_ns", o->held_ns);
		json_u64(j, "releases", o->releases);
		json_u64(j, "unmatched_releases", o->unmatched_releases);
		json_u64(j, "held_at_end", o->held_at_end);
		json_array_begin(j, "threads");
		for (uint32_t k = 0; k < o->nuses; k++) {
			const struct syncstats_use *u = &st->uses[o->first_use + k];

			json_object_begin(j, NULL);
			json_u64(j, "tid", st->threads[u->thread].tid);
			json_u64(j, "acquisitions", u->acquisitions);
			json_u64(j, "holds", u->holds);
			json_u64(j, "hold_ns", u->hold_ns);
			json_waits(j, &u->waits);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

/* Conditions, semaphores, barriers and futexes: calls and waits, with the
 * waiting and the signalling threads. */
static void json_waitables(struct json *j, struct walk *w, const struct syncstats *st, const char *key,
                           const uint32_t *idx, uint32_t n)
{
	json_array_begin(j, key);
	for (uint32_t i = 0; i < n; i++) {
		const struct syncstats_object *o = &st->objects[idx[i]];

		json_object_begin(j, NULL);
		json_object_head(j, w, o);
		json_u64(j, "calls", o->calls);
		json_u64(j, "timeouts", o->timeouts);
		json_u64(j, "failures", o->failures);
		json_u64(j, "try_failures", o->try_failures);
		if (o->kind == SYNCSTATS_COND) {
			json_u64(j, "signals", o->signals);
			json_u64(j, "broadcasts", o->broadcasts);
		} else if (o->kind == SYNCSTATS_SEM) {
			json_u64(j, "posts", o->posts);
		} else if (o->kind == SYNCSTATS_FUTEX) {
			json_u64(j, "wakes", o->signals);
		}
		json_array_begin(j, "waiters");
		for (uint32_t k = 0; k < o->nuses; k++) {
			const struct syncstats_use *u = &st->uses[o->first_use + k];

			if (!u->calls)
				continue;
			json_object_begin(j, NULL);
			json_u64(j, "tid", st->threads[u->thread].tid);
			json_u64(j, "calls", u->calls);
			json_waits(j, &u->waits);
			json_object_end(j);
		}
		json_array_end(j);
		if (o->kind != SYNCSTATS_BARRIER) {
			json_array_begin(j, "signallers");
			for (uint32_t k = 0; k < o->nuses; k++) {
				const struct syncstats_use *u = &st->uses[o->first_use + k];

				if (!u->signals)
					continue;
				json_object_begin(j, NULL);
				json_u64(j, "tid", st->threads[u->thread].tid);
				json_u64(j, "count", u->signals);
				json_object_end(j);
			}
			json_array_end(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_threads(struct json *j, const struct syncstats *st, const struct syncstats_result *r)
{
	json_array_begin(j, "threads");
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct syncstats_thread *t = &st->threads[r->threads[i]];

		json_object_begin(j, NULL);
		json_u64(j, "tid", t->tid);
		json_u64(j, "pid", t->pid);
		json_u64(j, "image", t->image);
		json_str(j, "comm", t->comm);
		if (t->pthread) {
			char buf[32];

			snprintf(buf, sizeof(buf), "0x%" PRIx64, t->pthread);
			json_str(j, "pthread", buf);
		} else {
			json_null(j, "pthread");
		}
		json_u64(j, "operations", t->ops);
		json_u64(j, "wait_ns", t->wait_ns);
		json_f64(j, "wait_share", t->wait_share);
		json_object_begin(j, "waits_by_kind");
		for (unsigned k = 0; k < SYNCSTATS_KINDS; k++) {
			json_object_begin(j, syncstats_kind_name(k));
			json_waits(j, &t->waits[k]);
			json_object_end(j);
		}
		json_object_end(j);
		json_u64(j, "acquisitions", t->acquisitions);
		json_u64(j, "holds", t->holds);
		json_u64(j, "hold_ns", t->hold_ns);
		json_u64(j, "signals", t->signals);
		json_u64(j, "posts", t->posts);
		json_u64(j, "creates", t->creates);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_tid_list(struct json *j, const char *key, const struct syncstats *st, const struct syncstats_pair *p,
                          int side)
{
	json_array_begin(j, key);
	for (uint32_t i = 0; i < p->nside[side]; i++)
		json_u64(j, NULL, st->threads[p->side[side][i]].tid);
	json_array_end(j);
}

static void json_rest(struct json *j, const struct syncstats *st, const struct syncstats_result *r)
{
	char buf[SYNCSTATS_NAME_MAX];

	json_array_begin(j, "joins");
	for (uint32_t i = 0; i < st->njoins; i++) {
		const struct syncstats_join *jn = &st->joins[i];

		json_object_begin(j, NULL);
		json_u64(j, "tid", st->threads[jn->thread].tid);
		if (jn->joined)
			json_u64(j, "joined_tid", st->threads[jn->joined - 1].tid);
		else
			json_null(j, "joined_tid");
		snprintf(buf, sizeof(buf), "0x%" PRIx64, jn->pthread);
		json_str(j, "pthread", buf);
		json_u64(j, "ns", jn->ns);
		json_u64(j, "wait_ns", jn->wait_ns);
		json_bool(j, "failed", jn->failed);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "pairs");
	for (uint32_t i = 0; i < r->npairs; i++) {
		const struct syncstats_pair *p = &r->pairs[i];

		json_object_begin(j, NULL);
		json_tid_list(j, "producers", st, p, 0);
		json_tid_list(j, "consumers", st, p, 1);
		json_array_begin(j, "objects");
		for (uint32_t k = 0; k < p->nobjects && k < SYNCSTATS_PAIR_OBJECTS; k++)
			json_str(j, NULL, syncstats_object_name(&st->objects[p->objects[k]], buf, sizeof(buf)));
		json_array_end(j);
		json_u64(j, "objects_total", p->nobjects);
		json_u64(j, "span_ns", p->span_ns);
		json_u64(j, "producer_wait_ns", p->wait_ns[0]);
		json_u64(j, "consumer_wait_ns", p->wait_ns[1]);
		json_f64(j, "producer_share", p->share[0]);
		json_f64(j, "consumer_share", p->share[1]);
		json_str(j, "slow", p->slow == 0 ? "producer" : p->slow == 1 ? "consumer" : "neither");
		json_str(j, "text", syncreport_pair_text(st, p, buf, sizeof(buf)));
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "longest_waits");
	for (uint32_t i = 0; i < st->ntop; i++) {
		const struct syncstats_wait *wt = &st->top[i];

		json_object_begin(j, NULL);
		json_u64(j, "tid", wt->tid);
		json_str(j, "kind", syncstats_kind_name(wt->kind));
		snprintf(buf, sizeof(buf), "0x%" PRIx64, wt->obj);
		json_str(j, "object", buf);
		json_u64(j, "begin_ns", wt->begin_ns);
		json_u64(j, "end_ns", wt->end_ns);
		json_u64(j, "wait_ns", wt->end_ns - wt->begin_ns);
		if (wt->waker_tid) {
			json_u64(j, "waker_tid", wt->waker_tid);
			json_u64(j, "waker_ns", wt->waker_ns);
		} else {
			json_null(j, "waker_tid");
		}
		json_object_end(j);
	}
	json_array_end(j);
	json_object_begin(j, "overflow");
	json_u64(j, "objects", st->over.objects);
	json_u64(j, "threads", st->over.threads);
	json_u64(j, "uses", st->over.uses);
	json_u64(j, "holds", st->over.held);
	json_u64(j, "futex_pending", st->over.pending);
	json_u64(j, "joins", st->over.joins);
	json_u64(j, "pair_objects", st->over.pairs);
	json_u64(j, "histograms", st->over.hists);
	json_object_end(j);
}

void syncreport_json_members(struct json *j, const struct walk *w, const struct syncstats *st,
                             const struct syncstats_result *r)
{
	struct walk *ww = (struct walk *)w; /* names are looked up (cached) */

	json_u64(j, "lost_events", w->lost);
	json_bool(j, "complete", w->r.state == READER_OK && w->r.seen_end);
	json_u64(j, "malformed_sync_events", w->sync_malformed);
	/* the operations of the threads selected (w->sync_events counts
	 * every stream's, and each pass over the trace again) */
	json_u64(j, "operations", st->ops);
	json_u64(j, "late_operations", st->late);
	json_u64(j, "futex_waits", st->futex_waits);
	json_u64(j, "futex_waits_inside_operations", st->futex_waits_inside);
	json_locks(j, ww, st, r);
	json_waitables(j, ww, st, "conditions", r->conds, r->nconds);
	json_waitables(j, ww, st, "barriers", r->barriers, r->nbarriers);
	json_waitables(j, ww, st, "futexes", r->futexes, r->nfutexes);
	json_threads(j, st, r);
	json_rest(j, st, r);
}

static void write_json(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir ? w->dir : "");
	syncreport_json_members(&j, w, st, r);
	json_object_end(&j);
	json_finish(&j);
}

/* ------------------------------------------------------------ the pass */

int syncreport_write(struct walk *w, const struct syncreport_opts *o, FILE *f)
{
	struct walk_ops heap_ops = { 0 }, sync_ops = { 0 }, order_ops = { 0 };
	struct objnamer *hn = calloc(1, sizeof(*hn));
	struct syncstats st;
	struct syncstats_result res = { 0 };
	int r = -ENOMEM;

	if (o->fmt != EXPORT_REPORT_TEXT && o->fmt != EXPORT_REPORT_JSON && o->fmt != EXPORT_REPORT_XML) {
		free(hn);
		return -EINVAL;
	}
	syncstats_init(&st, w);
	if (!hn || heap_init(&hn->h) || heapfeed_init(&hn->feed, w, &hn->h))
		goto out;
	/* both hold their items back to apply them in time order; one
	 * watermark for the two (namer_watermark) keeps the heap from getting
	 * ahead of the operations that are named by it */
	heapfeed_walk_ops(&hn->feed, &heap_ops);
	syncstats_walk_ops(&st, &sync_ops);
	heap_ops.watermark = NULL;
	sync_ops.watermark = NULL;
	order_ops.ctx = hn;
	order_ops.watermark = namer_watermark;
	heap_ops.next = &sync_ops;
	sync_ops.next = &order_ops;
	hn->sym = w->sym;
	hn->st = &st;
	syncstats_set_namer(&st, object_namer, hn);
	if (walk_run_by_time(w, &heap_ops))
		goto out;
	if (!w->sync_events) {
		r = -ENODATA;
		goto out;
	}
	syncstats_flush(&st);
	heapfeed_flush(&hn->feed, 0);
	if (hn->h.oom || hn->feed.oom || syncstats_collect(&st, &o->order, &res))
		goto out;
	if (o->fmt == EXPORT_REPORT_JSON)
		write_json(f, w, &st, &res);
	else if (o->fmt == EXPORT_REPORT_XML)
		syncreport_xml(f, w, &st, &res);
	else
		write_text(f, w, &st, &res);
	r = ferror(f) ? -EIO : 0;
out:
	syncstats_result_release(&res);
	syncstats_release(&st);
	if (hn) {
		heapfeed_release(&hn->feed);
		heap_release(&hn->h);
		free(hn);
	}
	return r;
}
