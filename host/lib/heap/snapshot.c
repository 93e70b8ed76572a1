/* Heap snapshot files: writing from a heap state, reading (see snapshot.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/heap/snapshot.h"
#include "host/lib/heap/view.h"
#include "host/lib/util/json.h"
#include "host/lib/util/jsonread.h"

#define SNAPSHOT_MAGIC_KEY "layerprof_snapshot"

int snapshot_write(FILE *f, struct walk *w, const struct heap *h, const struct snapshot_meta *m)
{
	uint32_t *idx, n, i;
	struct json *j = malloc(sizeof(*j));

	if (!j)
		return -ENOMEM;
	json_init(j, f);
	json_object_begin(j, NULL);
	json_u64(j, SNAPSHOT_MAGIC_KEY, SNAPSHOT_VERSION);
	json_str(j, "source", m->source);
	json_str(j, "trace", m->trace);
	json_str(j, "command", m->command);
	json_u64(j, "time_ns", m->time_ns);
	json_u64(j, "origin_ns", m->origin_ns);
	json_u64(j, "since_start_ns", m->time_ns > m->origin_ns ? m->time_ns - m->origin_ns : 0);
	json_bool(j, "partial", m->partial);
	json_u64(j, "covers_from_ns", m->partial && m->since_ns ? m->since_ns : m->origin_ns);
	if (m->partial)
		json_str(j, "note",
		         "the stream began after the program: only blocks allocated since covers_from_ns are known; "
		         "releases of older blocks are counted in released_unknown");
	json_object_begin(j, "totals");
	json_u64(j, "live_objects", h->live_objects);
	json_u64(j, "live_bytes", h->live_bytes);
	json_u64(j, "allocs", h->allocs);
	json_u64(j, "frees", h->frees);
	json_u64(j, "bytes_allocated", h->bytes_allocated);
	json_u64(j, "peak_bytes", h->peak_bytes);
	json_u64(j, "released_unknown", h->released_unknown);
	json_u64(j, "listed_objects", h->listed_objects);
	json_u64(j, "listed_bytes", h->listed_bytes);
	json_object_end(j);
	json_array_begin(j, "processes");
	for (i = 0; i < h->nprocs; i++) {
		const struct heap_proc *p = &h->procs[i];

		if (!p->ops && !p->inherited_objects)
			continue;
		json_object_begin(j, NULL);
		json_u64(j, "pid", p->pid);
		json_u64(j, "image", p->image);
		json_u64(j, "live_objects", p->live_objects);
		json_u64(j, "live_bytes", p->live_bytes);
		json_bool(j, "exited", p->exited);
		json_bool(j, "execed", p->execed);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "sites");
	idx = heapview_sorted_sites(h, false, &n);
	for (i = 0; idx && i < n; i++) {
		const struct heap_site *s = &h->sites[idx[i]];

		json_object_begin(j, NULL);
		json_str(j, "key", s->key);
		json_str(j, "function", s->function);
		json_str(j, "file", s->file);
		json_u64(j, "line", s->line);
		json_u64(j, "live_objects", s->c.live_objects);
		json_u64(j, "live_bytes", s->c.live_bytes);
		json_u64(j, "allocs", s->c.allocs);
		json_u64(j, "frees", s->c.frees);
		json_u64(j, "bytes_allocated", s->c.bytes_allocated);
		json_u64(j, "peak_bytes", s->c.peak_bytes);
		heapview_json_stack(j, "stack", w, h, s->stack);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
	json_finish(j);
	free(j);
	if (!idx)
		return -ENOMEM;
	free(idx);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

#define COUNTS 6

/* The counters a snapshot keeps for the whole heap and for each site: those
 * of obj, in the order of the keys, into to[]. */
static void read_counts(struct json_object *obj, uint64_t *const to[COUNTS])
{
	static const char *const keys[COUNTS] = { "live_objects", "live_bytes",      "allocs",
		                                  "frees",        "bytes_allocated", "peak_bytes" };
	size_t i;

	for (i = 0; i < COUNTS; i++)
		*to[i] = jsonread_u64(jsonread_get(obj, keys[i]), 0);
}

int snapshot_read(const char *path, struct snapshot *out, char *err, size_t errlen)
{
	struct json_object *root, *v, *totals, *sites, *c;
	uint64_t version;
	size_t i, nsites;
	int r = 0;

	memset(out, 0, sizeof(*out));
	root = jsonread_file(path, &r, err, errlen);
	if (!root)
		return r == -EBADMSG ? r : -EIO;
	/* a non-negative integer: no default of the lookup can be one */
	v = jsonread_get(root, SNAPSHOT_MAGIC_KEY);
	version = jsonread_u64(v, 0);
	if (jsonread_u64(v, 1) != version) {
		snprintf(err, errlen, "'%s' is not a layerprof heap snapshot", path);
		r = -EBADMSG;
		goto out;
	}
	out->version = (unsigned)version;
	if (version != SNAPSHOT_VERSION) {
		snprintf(err, errlen, "snapshot '%s' is of version %llu; this layerprof reads version %u", path,
		         (unsigned long long)version, SNAPSHOT_VERSION);
		r = -EPROTONOSUPPORT;
		goto out;
	}
	out->source = dup_or_null(jsonread_str(jsonread_get(root, "source")));
	out->trace = dup_or_null(jsonread_str(jsonread_get(root, "trace")));
	out->time_ns = jsonread_u64(jsonread_get(root, "time_ns"), 0);
	out->origin_ns = jsonread_u64(jsonread_get(root, "origin_ns"), 0);
	out->partial = jsonread_bool(jsonread_get(root, "partial"), false);
	out->covers_from_ns = jsonread_u64(jsonread_get(root, "covers_from_ns"), out->origin_ns);
	totals = jsonread_get(root, "totals");
	read_counts(totals, (uint64_t *const[COUNTS]){ &out->live_objects, &out->live_bytes, &out->allocs, &out->frees,
	                                               &out->bytes_allocated, &out->peak_bytes });
	c = jsonread_get(root, "processes");
	out->nprocesses = jsonread_is_array(c) ? (uint32_t)jsonread_count(c) : 0;
	sites = jsonread_get(root, "sites");
	nsites = jsonread_count(sites);
	if (!jsonread_is_array(sites) || nsites > SNAPSHOT_SITES_MAX) {
		snprintf(err, errlen, "snapshot '%s' has no usable sites array", path);
		r = -EBADMSG;
		goto out;
	}
	out->sites = calloc(nsites ? nsites : 1, sizeof(*out->sites));
	if (!out->sites)
		goto oom;
	for (i = 0; i < nsites; i++) {
		struct snapshot_site *s = &out->sites[i];
		const char *key;

		c = jsonread_at(sites, i);
		key = jsonread_str(jsonread_get(c, "key"));
		if (!key) {
			snprintf(err, errlen, "snapshot '%s': site %zu has no key", path, i);
			r = -EBADMSG;
			goto out;
		}
		s->key = strdup(key);
		s->function = dup_or_null(jsonread_str(jsonread_get(c, "function")));
		s->file = dup_or_null(jsonread_str(jsonread_get(c, "file")));
		out->nsites++;
		if (!s->key)
			goto oom;
		s->line = (unsigned)jsonread_u64(jsonread_get(c, "line"), 0);
		read_counts(c, (uint64_t *const[COUNTS]){ &s->live_objects, &s->live_bytes, &s->allocs, &s->frees,
		                                          &s->bytes_allocated, &s->peak_bytes });
	}
	goto out;
oom:
	snprintf(err, errlen, "cannot read snapshot '%s': out of memory", path);
	r = -ENOMEM;
out:
	jsonread_release(root);
	return r;
}

void snapshot_release(struct snapshot *s)
{
	size_t i;

	for (i = 0; s->sites && i < s->nsites; i++) {
		free(s->sites[i].key);
		free(s->sites[i].function);
		free(s->sites[i].file);
	}
	free(s->sites);
	free(s->source);
	free(s->trace);
	memset(s, 0, sizeof(*s));
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct snapshot_site *const *)a)->key, (*(const struct snapshot_site *const *)b)->key);
}

static int change_cmp(const void *a, const void *b)
{
	const struct snapshot_change *x = a, *y = b;

	if (x->bytes_change != y->bytes_change)
		return x->bytes_change > y->bytes_change ? -1 : 1;
	if (x->objects_change != y->objects_change)
		return x->objects_change > y->objects_change ? -1 : 1;
	return strcmp(x->site->key, y->site->key);
}

static const struct snapshot_site **by_key(const struct snapshot *s)
{
	const struct snapshot_site **v = malloc((s->nsites ? s->nsites : 1) * sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < s->nsites; i++)
		v[i] = &s->sites[i];
	qsort(v, s->nsites, sizeof(*v), key_cmp);
	return v;
}

int snapshot_diff(const struct snapshot *a, const struct snapshot *b, struct snapshot_change **out, size_t *n)
{
	const struct snapshot_site **x = by_key(a), **y = by_key(b);
	static const struct snapshot_site none;
	struct snapshot_change *c = NULL;
	size_t i = 0, k = 0, m = 0;

	*out = NULL;
	*n = 0;
	if (!x || !y || !(c = calloc(a->nsites + b->nsites + 1, sizeof(*c)))) {
		free(x);
		free(y);
		return -ENOMEM;
	}
	while (i < a->nsites || k < b->nsites) {
		int cmp = i >= a->nsites ? 1 : k >= b->nsites ? -1 : strcmp(x[i]->key, y[k]->key);
		const struct snapshot_site *before = cmp <= 0 ? x[i++] : &none;
		const struct snapshot_site *after = cmp >= 0 ? y[k++] : &none;

		c[m].site = after != &none ? after : before;
		c[m].objects_before = before->live_objects;
		c[m].bytes_before = before->live_bytes;
		c[m].objects_after = after->live_objects;
		c[m].bytes_after = after->live_bytes;
		c[m].objects_change = (int64_t)(after->live_objects - before->live_objects);
		c[m].bytes_change = (int64_t)(after->live_bytes - before->live_bytes);
		c[m].allocs_change = (int64_t)(after->allocs - before->allocs);
		m++;
	}
	qsort(c, m, sizeof(*c), change_cmp);
	free(x);
	free(y);
	*out = c;
	*n = m;
	return 0;
}
