/* Performance counter names -> perf_event_attr type and config (see
 * ctrnames.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ctrnames.h"

struct ctrname_entry {
	const char *name;
	uint32_t type;
	uint64_t config;
};

/* The generic and software events, aliases included, as perf spells them. */
static const struct ctrname_entry ctrname_table[] = {
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
};

/* Hardware cache events: <cache>-<op>s counts accesses, <cache>-<op>-misses
 * misses (config: cache | op << 8 | result << 16). */
static const char *const ctrname_caches[] = {
	[PERF_COUNT_HW_CACHE_L1D] = "L1-dcache", [PERF_COUNT_HW_CACHE_L1I] = "L1-icache",
	[PERF_COUNT_HW_CACHE_LL] = "LLC",        [PERF_COUNT_HW_CACHE_DTLB] = "dTLB",
	[PERF_COUNT_HW_CACHE_ITLB] = "iTLB",     [PERF_COUNT_HW_CACHE_BPU] = "branch",
	[PERF_COUNT_HW_CACHE_NODE] = "node",
};

static const char *const ctrname_ops[][2] = {
	/* access, miss */
	[PERF_COUNT_HW_CACHE_OP_READ] = { "loads", "load-misses" },
	[PERF_COUNT_HW_CACHE_OP_WRITE] = { "stores", "store-misses" },
	[PERF_COUNT_HW_CACHE_OP_PREFETCH] = { "prefetches", "prefetch-misses" },
};

static void ctrname_set(struct ctrname *out, const char *name, uint32_t type, uint64_t config)
{
	out->type = type;
	out->config = config;
	snprintf(out->name, sizeof(out->name), "%s", name);
}

static int ctrname_cache(const char *name, struct ctrname *out)
{
	size_t c, op, res;

	for (c = 0; c < sizeof(ctrname_caches) / sizeof(ctrname_caches[0]); c++) {
		size_t k = strlen(ctrname_caches[c]);

		if (strncasecmp(name, ctrname_caches[c], k) || name[k] != '-')
			continue;
		for (op = 0; op < sizeof(ctrname_ops) / sizeof(ctrname_ops[0]); op++)
			for (res = 0; res < 2; res++)
				if (!strcasecmp(name + k + 1, ctrname_ops[op][res])) {
					ctrname_set(out, name, PERF_TYPE_HW_CACHE, c | op << 8 | res << 16);
					return 0;
				}
	}
	return -ENOENT;
}

int ctrname_lookup(const char *name, struct ctrname *out)
{
	size_t i;

	if (strlen(name) >= CTRNAME_MAX)
		return -ENOENT;
	for (i = 0; i < sizeof(ctrname_table) / sizeof(ctrname_table[0]); i++)
		if (!strcmp(name, ctrname_table[i].name)) {
			ctrname_set(out, name, ctrname_table[i].type, ctrname_table[i].config);
			return 0;
		}
	/* rNNNN: a raw event code of the CPU, in hex */
	if (name[0] == 'r' && name[1]) {
		char *end;
		unsigned long long v;

		for (i = 1; name[i]; i++)
			if (!strchr("0123456789abcdefABCDEF", name[i]))
				return -ENOENT;
		if (i > 17)
			return -ENOENT;
		errno = 0;
		v = strtoull(name + 1, &end, 16);
		if (errno || *end)
			return -ENOENT;
		ctrname_set(out, name, PERF_TYPE_RAW, v);
		return 0;
	}
	return ctrname_cache(name, out);
}

int ctrnames_parse(const char *list, struct ctrname *out, uint32_t *n, char *err, size_t errlen)
{
	const char *p = list;

	*n = 0;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[CTRNAME_MAX];
		struct ctrname c;
		uint32_t i;

		if (!len) {
			snprintf(err, errlen, "empty counter name in '%s'", list);
			return -EINVAL;
		}
		if (len >= sizeof(name) || (memcpy(name, p, len), name[len] = '\0', ctrname_lookup(name, &c))) {
			snprintf(err, errlen, "unknown counter '%.*s' (see `perf list`; raw events as rNNNN, hex)",
			         (int)(len > 200 ? 200 : len), p);
			return -EINVAL;
		}
		for (i = 0; i < *n; i++)
			if (out[i].type == c.type && out[i].config == c.config) {
				if (!strcmp(out[i].name, c.name))
					snprintf(err, errlen, "counter '%s' given twice", c.name);
				else
					snprintf(err, errlen, "counters '%s' and '%s' are the same event", out[i].name,
					         c.name);
				return -EINVAL;
			}
		if (*n == LP_COUNTERS_MAX) {
			snprintf(err, errlen, "too many counters: at most %u", LP_COUNTERS_MAX);
			return -E2BIG;
		}
		out[(*n)++] = c;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

bool ctrname_is_software(const struct ctrname *c)
{
	return c->type == PERF_TYPE_SOFTWARE;
}
