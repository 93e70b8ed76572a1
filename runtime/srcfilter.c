/* Source filters: the gates' path while the agent has set filters (live
 * profiling).  Only functions that pass are recorded, so filtered events
 * are never produced or sent.  Slower than the plain gates (a binary search
 * per call), and used only while filters are set. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime.h"

/* Maps the session's filter file once; NULL when it cannot be had (then
 * nothing is recorded while filtered: failing closed costs data, not the
 * program). */
static LP_NOINSTR const struct lp_filter_file *filters_get(void)
{
	const struct lp_filter_file *ff = atomic_load_explicit(&lp_proc.filters, memory_order_acquire);
	char path[700];
	void *map;
	int fd;

	if (likely(ff))
		return ff;
	snprintf(path, sizeof(path), "%s/" LP_FILTER_NAME, lp_proc.session_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	map = mmap(NULL, sizeof(struct lp_filter_file), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	ff = map;
	if (ff->magic != LP_FILTER_MAGIC) {
		munmap(map, sizeof(struct lp_filter_file));
		return NULL;
	}
	if (!atomic_compare_exchange_strong(&lp_proc.filters, &(const struct lp_filter_file *){ NULL }, ff)) {
		munmap(map, sizeof(struct lp_filter_file));
		ff = atomic_load(&lp_proc.filters);
	}
	return ff;
}

static LP_NOINSTR bool in_sorted(const uint64_t *a, uint32_t n, uint64_t key)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && a[lo] == key;
}

static LP_NOINSTR bool passes(uintptr_t fn)
{
	const struct lp_filter_file *ff = filters_get();
	const struct lp_filter_set *set;
	uint32_t n_only, n_exclude;

	if (!ff)
		return false;
	set = &ff->set[atomic_load_explicit((const _Atomic uint32_t *)&ff->active, memory_order_acquire) & 1];
	n_only = set->n_only;
	n_exclude = set->n_exclude;
	if (n_only > LP_FILTER_ADDRS_MAX || n_exclude > LP_FILTER_ADDRS_MAX - n_only)
		return false;
	if (n_only && !in_sorted(set->addr, n_only, fn))
		return false;
	return !n_exclude || !in_sorted(set->addr + n_only, n_exclude, fn);
}

LP_NOINSTR void lp_gate_filtered(struct lp_thread *t, uintptr_t fn, bool entry)
{
	const struct lp_control *c = lp_proc.control;
	uint32_t max_depth = c->max_depth, d;
	uint64_t min_raw = c->min_raw;

	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (entry) {
		d = t->depth++;
		if (d < LP_SHADOW_MAX) {
			t->shadow[d] = fn;
			t->entry_time[d] = 0;
		}
		if ((max_depth && d >= max_depth) || !passes(fn))
			goto out;
		if (min_raw) {
			/* decided at the exit; 0 marks "not kept".  The call's
			 * record (LP_EXT_CALL) carries no counter values: keeping
			 * them per open call would take LP_SHADOW_MAX sets per
			 * thread */
			if (d < LP_SHADOW_MAX)
				t->entry_time[d] = lp_clock_now() | 1;
			goto out;
		}
		/* record --counters: the counter record stands for the entry */
		if (t->ctr)
			lp_ctr_gate(t, LP_CTR_ENTRY, fn);
		else
			lp_gate_write(t, LP_RAW_ENTRY, fn);
	} else {
		if (!t->depth)
			goto out;
		d = --t->depth;
		if ((max_depth && d >= max_depth) || !passes(fn))
			goto out;
		if (min_raw) {
			struct lp_ext_call call;
			uint64_t now;

			if (d >= LP_SHADOW_MAX || !t->entry_time[d])
				goto out;
			now = lp_clock_now();
			call.addr = fn;
			call.entry = t->entry_time[d];
			t->entry_time[d] = 0;
			if (now - call.entry >= min_raw)
				lp_ring_put_ext(t, LP_EXT_CALL, &call, sizeof(call));
			goto out;
		}
		if (t->ctr)
			lp_ctr_gate(t, LP_CTR_EXIT, fn);
		else
			lp_gate_write(t, LP_RAW_EXIT, fn);
	}
out:
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}
