/* Parsing of the options shared by subcommands (see options.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/error.h"
#include "host/lib/util/options.h"

int options_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0 || !isfinite(v))
		return -EINVAL;
	if (!*end && v != 0)
		return -EINVAL; /* "5" could mean any unit: it must be said */
	if (!*end || !strcmp(end, "ns"))
		;
	else if (!strcmp(end, "us"))
		v *= 1e3;
	else if (!strcmp(end, "ms"))
		v *= 1e6;
	else if (!strcmp(end, "s"))
		v *= 1e9;
	else
		return -EINVAL;
	if (v > 1e18)
		return -EINVAL;
	*ns = (uint64_t)(v + 0.5);
	return 0;
}

const char *options_duration_hint(const char *s, char *buf, size_t size)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && !*end && !errno && v > 0 && isfinite(v) && strlen(s) < 16)
		snprintf(buf, size, "a duration needs a unit: %sns, %sus, %sms or %ss", s, s, s, s);
	else
		snprintf(buf, size, "expected a duration like 10us");
	return buf;
}

int options_parse_size(const char *s, uint64_t *bytes)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL; /* no sign, no blanks */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}

int options_indent(uint32_t depth, char *mark, size_t size)
{
	if (depth < TEXT_INDENT_LEVELS) {
		if (size)
			mark[0] = '\0';
		return (int)(2 * depth);
	}
	snprintf(mark, size, "[depth %llu] ", (unsigned long long)depth + 1);
	return (int)(2 * TEXT_INDENT_LEVELS);
}

const char *options_format_duration(uint64_t ns, char *buf, size_t size)
{
	/* choose the unit on the rounded value, so 999999999 ns is "1.000 s" */
	if (ns < 1000)
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.3f us", ns / 1e3);
	else if (ns < 999999500u)
		snprintf(buf, size, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
	return buf;
}

static int parse_tids(struct filter_opts *f, const char *arg, char *err, size_t errlen)
{
	const char *p = arg;

	while (*p) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(p, &end, 10);
		if (end == p || errno || v == 0 || v > 0xffffffffu || (*end && *end != ',')) {
			return error_set(err, errlen, -EINVAL, "invalid --tid '%s': expected thread ids like 1234,1235",
			                 arg);
		}
		if (f->n_tids == OPTIONS_TIDS_MAX) {
			return error_set(err, errlen, -EINVAL, "too many --tid values (at most %d)", OPTIONS_TIDS_MAX);
		}
		f->tids[f->n_tids++] = (uint32_t)v;
		p = *end ? end + 1 : end;
	}
	return 1;
}

int options_filter_parse(struct filter_opts *f, int code, const char *arg, char *err, size_t errlen)
{
	unsigned long v;
	char *end;

	switch (code) {
	case OPT_ONLY:
	case OPT_EXCLUDE: {
		const char **list = code == OPT_ONLY ? f->only : f->exclude;
		size_t *n = code == OPT_ONLY ? &f->n_only : &f->n_exclude;

		if (*n == OPTIONS_PATTERNS_MAX) {
			return error_set(err, errlen, -EINVAL, "too many patterns (at most %d)", OPTIONS_PATTERNS_MAX);
		}
		if (!*arg) {
			return error_set(err, errlen, -EINVAL, "empty function pattern");
		}
		if (code == OPT_ONLY)
			f->only_opt[*n] = "-F";
		list[(*n)++] = arg;
		return 1;
	}
	case OPT_DEPTH:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (end == arg || *end || errno || v == 0 || v > 1000000 || *arg == '-') {
			return error_set(err, errlen, -EINVAL, "invalid --depth '%s': expected a number from 1", arg);
		}
		f->depth = (uint32_t)v;
		return 1;
	case OPT_MIN_TIME:
		if (options_parse_duration(arg, &f->min_ns)) {
			char unit[160];

			return error_set(err, errlen, -EINVAL, "invalid --min-time '%s': %s", arg,
			                 options_duration_hint(arg, unit, sizeof(unit)));
		}
		return 1;
	case OPT_TID:
		return parse_tids(f, arg, err, errlen);
	default:
		return 0;
	}
}

bool options_filter_any(const struct filter_opts *f)
{
	return f->n_only || f->n_exclude || f->depth || f->min_ns || f->n_tids;
}
