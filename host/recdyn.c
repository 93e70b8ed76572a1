/* record's dynamic tracer (see recdyn.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dyntrace/udrain.h"
#include "host/recdyn.h"

#define RECDYN_SKIPPED_SHOWN 10

int recdyn_option(struct recdyn *rd, bool backend, const char *arg, char *err, size_t errlen)
{
	char why[300];

	if (backend) {
		if (!strcmp(arg, "auto"))
			rd->backend = RECDYN_AUTO;
		else if (!strcmp(arg, "patch"))
			rd->backend = RECDYN_PATCH;
		else if (!strcmp(arg, "uprobe"))
			rd->backend = RECDYN_UPROBE;
		else if (!strcmp(arg, "ptrace"))
			rd->backend = RECDYN_PTRACE;
		else {
			snprintf(err, errlen, "invalid --backend '%s': auto, patch, uprobe or ptrace", arg);
			return -EINVAL;
		}
		return 0;
	}
	rd->on = true;
	rd->functions = true;
	if (!arg)
		return 0;
	if (!*arg) {
		snprintf(err, errlen, "--dynamic= needs a list of function patterns");
		return -EINVAL;
	}
	free(rd->patterns);
	rd->patterns = strdup(arg);
	if (!rd->patterns) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (uprobes_patterns(&rd->cfg, rd->patterns, why, sizeof(why))) {
		snprintf(err, errlen, "--dynamic: %s", why);
		return -EINVAL;
	}
	return 0;
}

void recdyn_libcalls(struct recdyn *rd)
{
	rd->on = true;
	rd->cfg.libcalls = true;
}

int recdyn_probes(struct recdyn *rd, const char *list, char *err, size_t errlen)
{
	char *save = NULL, *tok;

	free(rd->probes);
	rd->probes = strdup(list);
	if (!rd->probes) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rd->cfg.nprobes = 0;
	for (tok = strtok_r(rd->probes, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (rd->cfg.nprobes == UPROBES_PATTERNS_MAX) {
			snprintf(err, errlen, "--probe: more than %u instructions", UPROBES_PATTERNS_MAX);
			return -EINVAL;
		}
		{
			const char *plus = strrchr(tok, '+');
			char *end = NULL;
			unsigned long long off = plus ? strtoull(plus + 1, &end, 0) : 0;

			if (!plus || plus == tok || end == plus + 1 || *end || !off) {
				snprintf(err, errlen,
				         "--probe '%s': give FUNCTION+OFFSET (an offset above 0, e.g. main+0x1c)", tok);
				return -EINVAL;
			}
		}
		rd->cfg.probes[rd->cfg.nprobes++] = tok;
	}
	if (!rd->cfg.nprobes) {
		snprintf(err, errlen, "--probe needs FUNCTION+OFFSET");
		return -EINVAL;
	}
	rd->on = true;
	return 0;
}

int recdyn_options_done(struct recdyn *rd, char *err, size_t errlen)
{
	rd->cfg.no_functions = (rd->cfg.libcalls || rd->cfg.nprobes) && !rd->functions;
	if (rd->cfg.libcalls && (rd->backend == RECDYN_UPROBE || rd->backend == RECDYN_PTRACE || !dpatch_supported())) {
		snprintf(err, errlen, "--libcalls needs the patch backend (x86-64, aarch64, 32-bit ARM)");
		return -EINVAL;
	}
	if (rd->cfg.nprobes && (rd->backend == RECDYN_UPROBE || rd->backend == RECDYN_PTRACE || !dpatch_supported())) {
		snprintf(err, errlen, "--probe needs the patch backend (x86-64, aarch64)");
		return -EINVAL;
	}
	return 0;
}

int recdyn_open(struct recdyn *rd, const char *prog, struct sysdrain *feed, char *err, size_t errlen)
{
	struct uprobes_ops ops = udrain_ops(feed);
	char perr[600];

	rd->cfg.path = prog;
	if (rd->backend == RECDYN_PTRACE) {
		rd->bp = bptrace_open(&rd->cfg, &ops, err, errlen);
		return rd->bp ? 0 : -errno;
	}
	if (rd->backend == RECDYN_PATCH || (rd->backend == RECDYN_AUTO && dpatch_supported())) {
		rd->dp = dpatch_open(&rd->cfg, perr, sizeof(perr));
		if (rd->dp)
			return 0;
		/* auto: a program the runtime cannot patch (static, or of
		 * another architecture) may still be probed */
		if (rd->backend == RECDYN_PATCH || rd->cfg.libcalls || rd->cfg.nprobes || errno != ENOTSUP) {
			snprintf(err, errlen, "%s", perr);
			return -errno;
		}
		rd->up = uprobes_open(&rd->cfg, &ops, err, errlen);
		if (!rd->up)
			snprintf(err, errlen, "%s", perr);
		return rd->up ? 0 : -ENOTSUP;
	}
	rd->up = uprobes_open(&rd->cfg, &ops, err, errlen);
	return rd->up ? 0 : -errno;
}

bool recdyn_patching(const struct recdyn *rd)
{
	return rd->dp != NULL;
}

int recdyn_session(struct recdyn *rd, struct drain *d, const char *session, char *err, size_t errlen)
{
	int n = rd->dp ? dpatch_write(rd->dp, session, err, errlen) : 0;

	if (n > 0) {
		drain_set_plans(d, (uint32_t)n);
		rd->nplans = (unsigned)n;
	}
	return n < 0 ? n : 0;
}

int recdyn_held(void *ctx, pid_t pid)
{
	struct recdyn *rd = ctx;

	if (rd->bp)
		return bptrace_attach(rd->bp, pid, rd->err, sizeof(rd->err));
	return rd->up ? uprobes_attach(rd->up, pid, rd->err, sizeof(rd->err)) : 0;
}

int recdyn_held_sys(void *ctx, pid_t pid, char *err, size_t errlen)
{
	struct recdyn *rd = ctx;
	int r = recdyn_held(rd, pid);

	if (r)
		snprintf(err, errlen, "%s", rd->err);
	return r;
}

bool recdyn_reaps(const struct recdyn *rd)
{
	return rd->bp != NULL;
}

bool recdyn_exited(struct recdyn *rd, int *status)
{
	return bptrace_exited(rd->bp, status);
}

const char *recdyn_backend_name(const struct recdyn *rd)
{
	return rd->bp ? "ptrace" : rd->up ? "uprobe" : rd->dp ? "patch" : "";
}

void recdyn_poll(struct recdyn *rd, struct drain *d, const char *session)
{
	uint32_t wants;

	if (rd->up)
		uprobes_poll(rd->up);
	if (rd->bp)
		bptrace_poll(rd->bp);
	if (!rd->dp || !d)
		return;
	/* a process whose executable has no plan (exec'd) waits for one */
	wants = drain_plan_wants(d);
	if (wants == rd->answered)
		return;
	rd->nplans = dpatch_serve(rd->dp, &rd->cfg, session, rd->nplans);
	drain_set_plans(d, rd->nplans);
	drain_plan_answered(d, wants);
	rd->answered = wants;
}

void recdyn_finish(struct recdyn *rd)
{
	uprobes_finish(rd->up);
	bptrace_finish(rd->bp);
}

static void skipped_warning(const struct uprobes_stats *st)
{
	fprintf(stderr, "layerprof record: warning: %zu of %u functions not traced:", st->nskipped, st->candidates);
	for (size_t i = 0; i < st->nskipped && i < RECDYN_SKIPPED_SHOWN; i++)
		fprintf(stderr, "%s %s (%s)", i ? "," : "", st->skipped[i].name, st->skipped[i].why);
	fprintf(stderr, "%s\n", st->nskipped > RECDYN_SKIPPED_SHOWN ? ", ..." : "");
}

static unsigned long long ptrace_summary(const struct recdyn *rd, bool quiet, bool verbose)
{
	struct uprobes_stats st;
	struct bptrace_stats bst;

	bptrace_get_stats(rd->bp, &st, &bst);
	if (st.nskipped && !quiet)
		skipped_warning(&st);
	if (bst.error[0])
		fprintf(stderr, "layerprof record: warning: ptrace backend: %s: calls through it were not traced\n",
		        bst.error);
	if (st.lost)
		fprintf(stderr,
		        "layerprof record: warning: %llu function records lost (the recorder fell behind the ptrace "
		        "tracer)\n",
		        (unsigned long long)st.lost);
	if (bst.too_deep)
		fprintf(stderr,
		        "layerprof record: warning: %llu calls deeper than %u frames: their returns were not "
		        "watched\n",
		        (unsigned long long)bst.too_deep, BP_STACK_DEPTH_MAX);
	if (verbose)
		fprintf(stderr,
		        "layerprof record: dynamic (ptrace): %u functions, %llu entries and %llu exits; %llu stops, "
		        "%llu single steps, %llu stops of other threads\n",
		        st.functions, (unsigned long long)st.entries, (unsigned long long)st.exits,
		        (unsigned long long)bst.stops, (unsigned long long)bst.steps, (unsigned long long)bst.held);
	return (unsigned long long)st.lost;
}

unsigned long long recdyn_summary(const struct recdyn *rd, bool quiet, bool verbose)
{
	struct uprobes_stats st;

	if (rd->dp) {
		bool applied;

		dpatch_get_stats(rd->dp, &st, &applied);
		if (!applied)
			fprintf(stderr,
			        "layerprof record: warning: no process of '%s' applied the patch plan, so none of its "
			        "functions was traced (the runtime was not loaded into it: a set-user-ID program, or "
			        "one that cleared LD_PRELOAD)\n",
			        rd->cfg.path);
		else if (st.nskipped && !quiet)
			skipped_warning(&st);
		if (st.probes && verbose)
			fprintf(stderr, "layerprof record: dynamic (patch): %u instructions probed\n", st.probes);
		if (st.traps && !quiet && !verbose)
			fprintf(stderr,
			        "layerprof record: note: %u functions have no room for a jump at their entry and trap "
			        "instead (about a microsecond more per call)\n",
			        st.traps);
		if (verbose)
			fprintf(stderr,
			        "layerprof record: dynamic (patch): %u of %u functions patched, %u with a trap at the "
			        "entry\n",
			        st.functions, st.candidates, st.traps);
		return 0;
	}
	if (rd->bp)
		return ptrace_summary(rd, quiet, verbose);
	if (!rd->up)
		return 0;
	uprobes_get_stats(rd->up, &st);
	if (st.nskipped && !quiet)
		skipped_warning(&st);
	if (st.lost)
		fprintf(stderr,
		        "layerprof record: warning: %llu function records lost (uprobe buffers full: the recorder "
		        "fell behind)\n",
		        (unsigned long long)st.lost);
	if (st.unattributed)
		fprintf(stderr, "layerprof record: warning: %llu function exits of processes not seen entering one\n",
		        (unsigned long long)st.unattributed);
	if (st.others && !quiet)
		fprintf(stderr,
		        "layerprof record: note: %llu probe hits of other processes running '%s' were left out (they "
		        "paid for the traps)\n",
		        (unsigned long long)st.others, rd->cfg.path);
	if (verbose)
		fprintf(stderr, "layerprof record: dynamic (uprobe): %u functions, %llu entries and %llu exits read\n",
		        st.functions, (unsigned long long)st.entries, (unsigned long long)st.exits);
	return (unsigned long long)st.lost; /* among the drain's lost events */
}

void recdyn_free(struct recdyn *rd)
{
	uprobes_free(rd->up);
	rd->up = NULL;
	bptrace_free(rd->bp);
	rd->bp = NULL;
	dpatch_free(rd->dp);
	rd->dp = NULL;
	free(rd->patterns);
	rd->patterns = NULL;
	free(rd->probes);
	rd->probes = NULL;
}
