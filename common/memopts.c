/* The heap tracing options: their values' ranges and how they depend on
 * each other, for the recorder's command line and the agent's START. */
#include "common/memopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layerprof/format.h"

unsigned memopts_depth(const struct memopts *m)
{
	return m->depth ? m->depth : LP_MEM_DEPTH_DEFAULT;
}

int memopts_set_depth(struct memopts *m, const char *val, enum memopts_names names, char *err, size_t errlen)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || *end || end == val || v < 1 || v > LP_MEM_DEPTH_MAX) {
		if (names == MEMOPTS_OPTIONS)
			snprintf(err, errlen, "invalid --mem-depth '%s': expected 1 to %u", val, LP_MEM_DEPTH_MAX);
		else
			snprintf(err, errlen, "invalid mem_depth '%.64s': 1 to %u", val, LP_MEM_DEPTH_MAX);
		return -EINVAL;
	}
	m->depth = (unsigned)v;
	return 0;
}

/* A boolean START value: "1" or "0". */
static int bool_value(const char *key, const char *val, bool *out, char *err, size_t errlen)
{
	if (strcmp(val, "1") && strcmp(val, "0")) {
		snprintf(err, errlen, "invalid %s '%.64s': 1 or 0", key, val);
		return -EINVAL;
	}
	*out = val[0] == '1';
	return 0;
}

int memopts_set_key(struct memopts *m, const char *key, const char *val, char *err, size_t errlen)
{
	if (!strcmp(key, "memory"))
		return bool_value(key, val, &m->on, err, errlen);
	if (!strcmp(key, "keep_alive"))
		return bool_value(key, val, &m->keep_alive, err, errlen);
	if (!strcmp(key, "mem_depth"))
		return memopts_set_depth(m, val, MEMOPTS_START, err, errlen);
	if (!strcmp(key, "mem_fold")) {
		unsigned long long ns;
		char *end;

		errno = 0;
		ns = strtoull(val, &end, 10);
		if (errno || *end || end == val || val[0] == '-' || !ns || ns > MEMOPTS_FOLD_MAX_NS) {
			snprintf(err, errlen, "invalid mem_fold '%.64s': 1 to %llu ns", val, MEMOPTS_FOLD_MAX_NS);
			return -EINVAL;
		}
		m->fold_ns = ns;
		return 0;
	}
	return 1;
}

int memopts_check(const struct memopts *m, enum memopts_names names, char *err, size_t errlen)
{
	if (m->on || !(m->keep_alive || m->depth || m->fold_ns))
		return 0;
	if (names == MEMOPTS_OPTIONS)
		snprintf(err, errlen, "--keep-alive, --mem-depth and --mem-fold need --memory");
	else
		snprintf(err, errlen, "keep_alive, mem_depth and mem_fold need memory=1");
	return -EINVAL;
}
