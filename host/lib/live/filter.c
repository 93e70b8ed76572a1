/* Live source filters: patterns to addresses, and the CONTROL payload that
 * carries them (see live/filter.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "host/lib/live/filter.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/symbolizer.h"

/* A growable string with a bound: the address lists of a CONTROL frame. */
struct text {
	char *p; /* owned, NUL-terminated when len > 0 */
	size_t len, cap;
};

static int text_add(struct text *t, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (t->len + n + 1 > max)
		return -E2BIG;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *p;

		while (cap < t->len + n + 1)
			cap *= 2;
		p = realloc(t->p, cap);
		if (!p)
			return -ENOMEM;
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n + 1);
	t->len += n;
	return 0;
}

static void text_release(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

void livefilter_init(struct livefilter *f)
{
	memset(f, 0, sizeof(*f));
}

void livefilter_release(struct livefilter *f)
{
	free(f->words);
	free(f->only);
	free(f->ex);
	memset(f, 0, sizeof(*f));
}

struct resolve {
	const struct filter_opts *opts;
	uint32_t image;
	struct text *only, *ex;
	size_t n_only, n_ex;
	int error;
};

/* Adds "image:addr" to a list when one of the patterns matches name. */
static int match_into(struct resolve *rs, const char *const *pats, size_t npats, const char *name, const char *entry,
                      struct text *list, size_t *count)
{
	size_t i;

	for (i = 0; i < npats; i++) {
		if (!classifier_match(pats[i], name))
			continue;
		if (*count == LIVEFILTER_ADDRS_MAX)
			return rs->error = -E2BIG;
		if ((*count && (rs->error = text_add(list, ",", SIZE_MAX))) ||
		    (rs->error = text_add(list, entry, SIZE_MAX)))
			return rs->error;
		(*count)++;
		break;
	}
	return 0;
}

static int resolve_one(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct resolve *rs = ctx;
	char entry[48];
	int r;

	(void)size;
	snprintf(entry, sizeof(entry), "%" PRIu32 ":%" PRIx64, rs->image, addr);
	r = match_into(rs, rs->opts->only, rs->opts->n_only, name, entry, rs->only, &rs->n_only);
	if (!r)
		r = match_into(rs, rs->opts->exclude, rs->opts->n_exclude, name, entry, rs->ex, &rs->n_ex);
	return r;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The functions matching the patterns, as <image>:<hex address> lists,
 * over every process image the walk has shown so far. */
static int resolve(struct livefilter *f, struct walk *w, struct text *only, struct text *ex)
{
	struct resolve rs = { .opts = &f->opts, .only = only, .ex = ex };
	uint32_t *images, n = 0, i;
	int r = 0;

	images = malloc((w->nstreams + 1) * sizeof(*images));
	if (!images)
		return -ENOMEM;
	for (i = 0; i < w->nstreams; i++)
		images[n++] = w->streams[i]->image;
	if (n > 1)
		qsort(images, n, sizeof(*images), u32_cmp);
	for (i = 0; i < n && !r; i++) {
		if (i && images[i] == images[i - 1])
			continue;
		rs.image = images[i];
		r = symbolizer_foreach_function(w->sym, images[i], resolve_one, &rs);
		if (r == -ENOENT)
			r = 0; /* no code known for it yet */
	}
	free(images);
	f->maps_seen = symbolizer_map_count(w->sym);
	return r;
}

bool livefilter_stale(const struct livefilter *f, const struct walk *w)
{
	return f->active && (f->opts.n_only || f->opts.n_exclude) && symbolizer_map_count(w->sym) != f->maps_seen;
}

int livefilter_control(struct livefilter *f, struct walk *w, bool patterns_only, char **msg, size_t *len)
{
	struct text only = { 0 }, ex = { 0 }, out = { 0 };
	char head[96];
	int r;

	*msg = NULL;
	*len = 0;
	if (!f->active) {
		free(f->only);
		free(f->ex);
		f->only = f->ex = NULL;
		r = text_add(&out, "filters=clear\n", LP_WIRE_MAX_PAYLOAD);
		goto done;
	}
	r = resolve(f, w, &only, &ex);
	if (r)
		goto out;
	/* nothing matches the --only patterns yet (the code that has them is
	 * not known yet): an address no function has keeps everything out */
	if (f->opts.n_only && !only.len && (r = text_add(&only, "0:0", SIZE_MAX)))
		goto out;
	if (patterns_only && !strcmp(str_or_empty(only.p), str_or_empty(f->only)) &&
	    !strcmp(str_or_empty(ex.p), str_or_empty(f->ex))) {
		r = 1;
		goto out;
	}
	snprintf(head, sizeof(head), "depth=%" PRIu32 "\nmin_ns=%" PRIu64 "\nonly=", f->opts.depth, f->opts.min_ns);
	if ((r = text_add(&out, head, LP_WIRE_MAX_PAYLOAD)) ||
	    (r = text_add(&out, str_or_empty(only.p), LP_WIRE_MAX_PAYLOAD)) ||
	    (r = text_add(&out, "\nexclude=", LP_WIRE_MAX_PAYLOAD)) ||
	    (r = text_add(&out, str_or_empty(ex.p), LP_WIRE_MAX_PAYLOAD)) ||
	    (r = text_add(&out, "\n", LP_WIRE_MAX_PAYLOAD)))
		goto out;
	free(f->only);
	free(f->ex);
	f->only = only.len ? only.p : NULL;
	f->ex = ex.len ? ex.p : NULL;
	if (f->only)
		only = (struct text){ 0 };
	if (f->ex)
		ex = (struct text){ 0 };
done:
	if (!r) {
		*msg = out.p;
		*len = out.len;
		out = (struct text){ 0 };
	}
out:
	text_release(&only);
	text_release(&ex);
	text_release(&out);
	return r;
}

void livefilter_describe(const struct livefilter *f, char *buf, size_t size)
{
	char d[32];
	size_t n = 0, i;

	buf[0] = '\0';
	for (i = 0; i < f->opts.n_only && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s-F '%s'", n ? " " : "", f->opts.only[i]);
	for (i = 0; i < f->opts.n_exclude && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s-N '%s'", n ? " " : "", f->opts.exclude[i]);
	if (f->opts.depth && n < size)
		n += (size_t)snprintf(buf + n, size - n, "%s--depth %" PRIu32, n ? " " : "", f->opts.depth);
	if (f->opts.min_ns && n < size)
		snprintf(buf + n, size - n, "%s--min-time %s", n ? " " : "",
		         options_format_duration(f->opts.min_ns, d, sizeof(d)));
}

int livefilter_parse(int argc, char **argv, struct filter_opts *out, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, r = -EINVAL;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	optind = 0; /* start getopt over */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+F:N:", longopts, NULL)) != -1) {
		if (c == OPT_TID) {
			snprintf(err, errlen,
			         "filter: --tid is not applied on the target; use report --tid on a saved trace");
			goto out;
		}
		if (c == '?' || c == ':') {
			snprintf(err, errlen, "filter: unknown option or missing value in '%s'", argv[optind - 1]);
			goto out;
		}
		if (options_filter_parse(out, c, optarg, err, errlen) != 1)
			goto out;
	}
	if (optind < argc) {
		snprintf(err, errlen, "filter: unexpected '%s' (patterns go after -F or -N)", argv[optind]);
		goto out;
	}
	r = 0;
out:
	opterr = 1;
	return r;
}

void livefilter_set(struct livefilter *f, const struct filter_opts *opts, char *words)
{
	free(f->words);
	f->words = words;
	f->opts = *opts;
	f->active = options_filter_any(opts);
	free(f->only);
	free(f->ex);
	f->only = f->ex = NULL;
}
