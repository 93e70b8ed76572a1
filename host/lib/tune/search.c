/* The strategies of `layerprof tune`: grid, greedy (and corun, the same
 * over the joint space of several commands), pattern and
 * producer-consumer.  Each moves only on tune_improves (noise.c) and
 * picks among neighbours with tune_pick, so that its order does not hang
 * on the noise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/tune/tune.h"

/* Rounds of the producer-consumer strategy (threads, tile) at most. */
#define PRODCONS_ROUNDS_MAX 4

/* tune_eval's result as a search step: 1 measured (*idx set), 0 the
 * budget is spent, < 0 an error. */
static int eval_step(struct tune *t, const struct tune_config *c, uint32_t *idx, char *err, size_t errlen)
{
	int r = tune_eval(t, c, err, errlen);

	if (r == -ENOSPC) {
		snprintf(t->stop, sizeof(t->stop), "the budget of %u configurations is spent",
		         t->o.budget ? t->o.budget : TUNE_CONFIGS_MAX);
		return 0;
	}
	if (r < 0)
		return r;
	*idx = (uint32_t)r;
	return 1;
}

/* Moves t->best to cand when it improves on it.  1 moved, 0 not, < 0. */
static int try_move(struct tune *t, uint32_t cand, char *err, size_t errlen)
{
	int r;

	if (t->best == UINT32_MAX) {
		if (t->entries[cand].failed)
			return 0;
		t->best = cand;
		return 1;
	}
	r = tune_improves(t, cand, t->best, err, errlen);
	if (r > 0)
		t->best = cand;
	return r;
}

static int search_grid(struct tune *t, char *err, size_t errlen)
{
	uint64_t size = tune_space_size(t->sp);
	struct tune_config c;
	uint32_t idx;
	int r;

	if (!t->o.budget && size > TUNE_CONFIGS_MAX)
		return error_set(err, errlen, -E2BIG,
		                 "the grid has %llu configurations, more than %u: give a --budget or use --strategy "
		                 "pattern",
		                 (unsigned long long)size, TUNE_CONFIGS_MAX);
	memset(&c, 0, sizeof(c));
	for (;;) {
		r = eval_step(t, &c, &idx, err, errlen);
		if (r <= 0)
			return r;
		r = try_move(t, idx, err, errlen);
		if (r < 0)
			return r;
		/* the next one: the last parameter varies fastest */
		int p = (int)t->sp->nparams - 1;

		while (p >= 0 && ++c.idx[p] == t->sp->params[p].nvalues)
			c.idx[p--] = 0;
		if (p < 0)
			break;
	}
	snprintf(t->stop, sizeof(t->stop), "every configuration was run");
	return 0;
}

/* One step of greedy from t->best: the configurations one value up in
 * each parameter (up) or also one step of step[] down (pattern).  1 moved,
 * 0 no neighbour improves (or the budget), < 0. */
static int neighbours_step(struct tune *t, const uint32_t *step, bool down, const uint32_t *only, uint32_t nonly,
                           char *err, size_t errlen)
{
	uint32_t cand[2 * TUNE_PARAMS_MAX], n = 0, pick, idx;
	struct tune_config base = t->entries[t->best].c;
	int r;

	for (uint32_t k = 0; k < (only ? nonly : t->sp->nparams); k++) {
		uint32_t p = only ? only[k] : k, nv = t->sp->params[p].nvalues, s = step ? step[p] : 1;

		for (int dir = 0; dir < (down ? 2 : 1); dir++) {
			struct tune_config c = base;
			long v = (long)base.idx[p] + (dir ? -(long)s : (long)s);

			if (v < 0 || v >= (long)nv)
				continue;
			c.idx[p] = (uint16_t)v;
			r = eval_step(t, &c, &idx, err, errlen);
			if (r < 0)
				return r;
			if (!r)
				goto decide;
			cand[n++] = idx;
		}
	}
decide:
	pick = tune_pick(t, cand, n);
	if (pick == UINT32_MAX)
		return 0;
	return try_move(t, pick, err, errlen);
}

static int search_greedy(struct tune *t, char *err, size_t errlen)
{
	struct tune_config c;
	uint32_t idx;
	int r;

	memset(&c, 0, sizeof(c));
	r = eval_step(t, &c, &idx, err, errlen);
	if (r <= 0)
		return r;
	if (t->entries[idx].failed)
		return error_set(err, errlen, -ECHILD, "the starting configuration failed: %s", t->entries[idx].why);
	t->best = idx;
	while ((r = neighbours_step(t, NULL, false, NULL, 0, err, errlen)) > 0)
		;
	if (!r && !t->budget_hit)
		snprintf(t->stop, sizeof(t->stop), "no step up in any parameter improves");
	return r < 0 ? r : 0;
}

static int search_pattern(struct tune *t, char *err, size_t errlen)
{
	uint32_t step[TUNE_PARAMS_MAX];
	bool all_one;
	int r;

	for (uint32_t p = 0; p < t->sp->nparams; p++) {
		uint32_t nv = t->sp->params[p].nvalues;

		step[p] = (nv + 1) / 4 ? (nv + 1) / 4 : 1; /* a quarter of the range, rounded */
	}
	t->best = t->baseline;
	for (;;) {
		r = neighbours_step(t, step, true, NULL, 0, err, errlen);
		if (r < 0)
			return r;
		if (t->budget_hit)
			return 0;
		if (r)
			continue;
		all_one = true;
		for (uint32_t p = 0; p < t->sp->nparams; p++) {
			all_one &= step[p] == 1;
			step[p] = step[p] / 2 ? step[p] / 2 : 1;
		}
		if (all_one)
			break;
	}
	snprintf(t->stop, sizeof(t->stop), "no step of 1 in any direction improves");
	return 0;
}

/* The producer-consumer strategy's thread phase: steps of the slow side
 * up while they improve.  1 when it moved. */
static int threads_up(struct tune *t, uint32_t p, char *err, size_t errlen)
{
	int r, moved = 0;

	while ((r = neighbours_step(t, NULL, false, &p, 1, err, errlen)) > 0)
		moved = 1;
	return r < 0 ? r : moved;
}

/* The tile phase: tile = N / n for n = from, from + 1, ... while it
 * improves (a size equal to the current one is passed over).  *next is
 * left at the first n not taken. */
static int tile_down(struct tune *t, long long tile_n, uint32_t *next, char *err, size_t errlen)
{
	uint32_t tp = t->o.tile, idx;
	int r, moved = 0;

	for (uint32_t n = *next;; n++) {
		struct tune_config c = t->entries[t->best].c;
		long long v = tile_n / n;
		char buf[32];
		int vi;

		*next = n;
		if (v < 1)
			break;
		if (v == t->sp->params[tp].num[c.idx[tp]])
			continue;
		snprintf(buf, sizeof(buf), "%lld", v);
		vi = tune_space_value_add(t->sp, tp, buf);
		if (vi < 0)
			return error_set(err, errlen, vi, "too many tile sizes");
		c.idx[tp] = (uint16_t)vi;
		r = eval_step(t, &c, &idx, err, errlen);
		if (r <= 0)
			return r < 0 ? r : moved;
		r = try_move(t, idx, err, errlen);
		if (r <= 0)
			return r < 0 ? r : moved;
		moved = 1;
	}
	return moved;
}

static int search_prodcons(struct tune *t, char *err, size_t errlen)
{
	const struct tune_param *tile = t->o.tile != UINT32_MAX ? &t->sp->params[t->o.tile] : NULL;
	uint32_t both[2] = { t->o.producers, t->o.consumers }, next = 2, idx;
	struct tune_config c, before;
	char **argv;
	int r;

	if (tile && (!tile->numeric || tile->num[0] < 2))
		return error_set(err, errlen, -EINVAL,
		                 "the tile parameter %s needs an integer first value above 1 "
		                 "(the untiled size)",
		                 tile->name);
	memset(&c, 0, sizeof(c));
	argv = tune_space_argv(t->sp, &c, 0);
	if (!argv)
		return error_set(err, errlen, -ENOMEM, "out of memory");
	r = t->o.verdict(t->o.verdict_ctx, argv, &t->slow, t->verdict, sizeof(t->verdict), err, errlen);
	free(argv);
	if (r)
		return r;
	t->runs++;
	r = eval_step(t, &c, &idx, err, errlen);
	if (r <= 0)
		return r;
	if (t->entries[idx].failed)
		return error_set(err, errlen, -ECHILD, "the starting configuration failed: %s", t->entries[idx].why);
	t->best = idx;
	/* the slow side's threads; without a verdict, each side in turn */
	if (t->slow == 0 || t->slow == 1) {
		r = threads_up(t, both[t->slow], err, errlen);
	} else {
		r = threads_up(t, both[0], err, errlen);
		if (r >= 0 && !t->budget_hit)
			r = threads_up(t, both[1], err, errlen);
	}
	if (!t->budget_hit)
		snprintf(t->stop, sizeof(t->stop), "%d rounds of threads and tile", PRODCONS_ROUNDS_MAX);
	for (int round = 0; r >= 0 && !t->budget_hit && round < PRODCONS_ROUNDS_MAX; round++) {
		if (tile) {
			r = tile_down(t, tile->num[0], &next, err, errlen);
			if (r < 0 || t->budget_hit)
				break;
		}
		/* threads again: a step up or down on either side */
		before = t->entries[t->best].c;
		while ((r = neighbours_step(t, NULL, true, both, 2, err, errlen)) > 0)
			;
		if (r < 0 || t->budget_hit)
			break;
		if (t->entries[t->best].c.idx[both[0]] == before.idx[both[0]] &&
		    t->entries[t->best].c.idx[both[1]] == before.idx[both[1]]) {
			snprintf(t->stop, sizeof(t->stop), "the threads did not change%s",
			         tile ? " after the tile" : "");
			break;
		}
	}
	return r < 0 ? r : 0;
}

int tune_run(struct tune *t, char *err, size_t errlen)
{
	struct tune_config start;
	char cfg[512];
	int r;

	memset(&start, 0, sizeof(start));
	if (t->o.has_baseline) {
		start = t->o.baseline;
	} else if (t->o.strategy == TUNE_PATTERN) {
		for (uint32_t p = 0; p < t->sp->nparams; p++)
			start.idx[p] = (uint16_t)((t->sp->params[p].nvalues - 1) / 2);
	}
	r = tune_eval(t, &start, err, errlen);
	if (r == -ENOSPC)
		return error_set(err, errlen, -EINVAL, "a --budget of at least 1 is needed");
	if (r < 0)
		return r;
	t->baseline = (uint32_t)r;
	if (t->entries[r].failed)
		return error_set(err, errlen, -ECHILD, "the baseline %s failed: %s",
		                 tune_space_format(t->sp, &start, cfg, sizeof(cfg)), t->entries[r].why);
	t->baseline_spread = t->entries[r].spread;
	if (t->baseline_spread > t->noise)
		t->noise = t->baseline_spread;
	switch (t->o.strategy) {
	case TUNE_GRID:
		r = search_grid(t, err, errlen);
		break;
	case TUNE_GREEDY:
	case TUNE_CORUN:
		r = search_greedy(t, err, errlen);
		break;
	case TUNE_PATTERN:
		r = search_pattern(t, err, errlen);
		break;
	case TUNE_PRODCONS:
		r = search_prodcons(t, err, errlen);
		break;
	default:
		r = error_set(err, errlen, -EINVAL, "unknown strategy");
	}
	if (r)
		return r;
	/* the baseline itself may be the best (or all else failed) */
	if (t->best == UINT32_MAX)
		t->best = t->baseline;
	if (t->entries[t->best].failed)
		return error_set(err, errlen, -ECHILD, "no configuration ran without failing");
	return 0;
}
