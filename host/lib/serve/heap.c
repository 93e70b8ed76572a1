/* The heap view of `layerprof serve` (see serve/heap.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "host/lib/export/report.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/view.h"
#include "host/lib/live/mem.h"
#include "host/lib/serve/heap.h"
#include "host/lib/serve/query.h"
#include "host/lib/serve/store.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"
#include "host/lib/util/outfile.h"

#define CACHE_MAGIC "LPSRVHP"
#define CACHE_HEADER_SIZE 56u
#define CACHE_BOM 0x01020304u
#define POINTS_MAX 100000u /* points= of one growth answer */

/* ------------------------------------------------------------ the pass */

/* The view of the heap h (settled), read from w: the document and the
 * growth samples of the whole heap and of its largest sites.  live: a
 * live session's heap state (h is its), whose own members the document
 * adds; NULL for a trace. */
static int view_build(struct serveheap *sh, struct walk *w, const struct heap *h, const struct heapfeed *feed,
                      const struct livemem *live, const char *trace)
{
	struct heapview_opts o = { .at_peak = false };
	uint64_t t[HEAP_SERIES_LEN], v[HEAP_SERIES_LEN];
	uint32_t *idx, n, i, k;
	struct json j;
	FILE *f;

	o.origin_ns = export_report_origin(w);
	f = open_memstream(&sh->doc, &sh->doc_len);
	if (!f)
		return -ENOMEM;
	/* the fields of report --memory --format json, then the view's own */
	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", trace);
	json_u64(&j, "lost_events", w->lost);
	json_bool(&j, "complete", !live && w->r.state == READER_OK && w->r.seen_end);
	json_u64(&j, "origin_ns", o.origin_ns);
	heapview_json(&j, w, h, feed, &o);
	if (live) {
		/* what `live --memory`'s JSON adds: how far the state goes */
		json_bool(&j, "live", true);
		json_u64(&j, "horizon_ns", feed->horizon_ns);
		json_bool(&j, "partial", h->partial);
		json_u64(&j, "covers_from_ns", h->partial ? livemem_covers_from(live) : 0);
		json_str(&j, "agent_memory", live->agent_mem[0] ? live->agent_mem : NULL);
		json_u64(&j, "heap_operations", w->mem_ops);
	}
	json_bool(&j, "heap", true);
	json_u64(&j, "first_ns", w->first_ns);
	json_object_end(&j);
	json_finish(&j);
	if (fclose(f))
		return -ENOMEM;

	sh->npoints = heapview_series(h, NULL, HEAP_SERIES_LEN, t, v);
	sh->interval_ns = h->step_ns;
	idx = heapview_sorted_sites(h, false, &n);
	if (!idx)
		return -ENOMEM;
	sh->nsites = n < SERVEHEAP_SERIES_SITES ? n : SERVEHEAP_SERIES_SITES;
	sh->t_ns = calloc(sh->npoints + 1, sizeof(*sh->t_ns));
	sh->all = calloc(sh->npoints + 1, sizeof(*sh->all));
	sh->site_bytes = calloc((size_t)sh->nsites * sh->npoints + 1, sizeof(*sh->site_bytes));
	if (!sh->t_ns || !sh->all || !sh->site_bytes) {
		free(idx);
		return -ENOMEM;
	}
	for (k = 0; k < sh->npoints; k++) {
		sh->t_ns[k] = t[k] > w->first_ns ? t[k] - w->first_ns : 0;
		sh->all[k] = v[k];
	}
	for (i = 0; i < sh->nsites; i++) {
		heapview_series(h, &h->sites[idx[i]].c, sh->npoints, t, v);
		memcpy(sh->site_bytes + (size_t)i * sh->npoints, v, sh->npoints * sizeof(*v));
	}
	free(idx);
	return 0;
}

static int heap_pass(struct serveheap *sh, const char *dir, char *err, size_t errlen)
{
	struct filter_opts fopts = { 0 };
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	struct walk w;
	int r;

	r = walk_open(&w, dir, &fopts, err, errlen);
	if (r)
		return r;
	r = heapfeed_pass(&w, &h, &feed, 0);
	if (!r) {
		sh->has_heap = w.mem_ops != 0;
		if (sh->has_heap)
			r = view_build(sh, &w, &h, &feed, NULL, w.dir);
	}
	if (r)
		snprintf(err, errlen, "cannot read the heap of trace '%s': out of memory", dir);
	heapfeed_release(&feed);
	heap_release(&h);
	walk_release(&w);
	return r;
}

/* Recorded with --memory, says the trace's META. */
static bool recorded_with_memory(const char *dir)
{
	struct filter_opts fopts = { 0 };
	char err[512], buf[16];
	struct walk w;
	bool yes;

	if (walk_open(&w, dir, &fopts, err, sizeof(err)))
		return false;
	yes = walk_meta(&w, "memory", buf, sizeof(buf)) && strcmp(buf, "0");
	walk_release(&w);
	return yes;
}

/* ------------------------------------------------------------ the cache file */

struct data_key {
	uint64_t size, mtime_ns, ino;
};

static int data_key_of(const char *dir, struct data_key *k)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/data", dir);
	if (stat(path, &st))
		return -errno;
	memset(k, 0, sizeof(*k));
	k->size = (uint64_t)st.st_size;
	k->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	k->ino = (uint64_t)st.st_ino;
	return 0;
}

static void put(FILE *f, uint32_t *crc, uint64_t *len, const void *p, size_t n)
{
	fwrite(p, 1, n, f);
	*crc = crc32c(*crc, p, n);
	*len += n;
}

static int cache_write(const struct serveheap *sh, const char *dir, char *err, size_t errlen)
{
	uint8_t header[CACHE_HEADER_SIZE] = CACHE_MAGIC, has = sh->has_heap;
	uint32_t crc = 0, v32;
	uint64_t len = 0, doc_len = sh->doc_len;
	char tmp[SERVESTORE_NAME_MAX + 32];
	struct servestore st = { .dirfd = -1 };
	struct data_key key = { 0 };
	FILE *f;
	int r, fd;

	r = data_key_of(dir, &key);
	if (!r)
		r = servestore_open(&st, dir, SERVEHEAP_FILE);
	if (r)
		goto fail;
	/* an exclusive temporary renamed over the cache: nothing planted there is written through */
	fd = outfile_tmp_create(st.dirfd, st.name, tmp, sizeof(tmp));
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		r = fd < 0 ? fd : -errno;
		if (fd >= 0) {
			close(fd);
			unlinkat(st.dirfd, tmp, 0);
		}
		goto fail;
	}
	fwrite(header, 1, sizeof(header), f);
	put(f, &crc, &len, &has, 1);
	put(f, &crc, &len, &sh->npoints, 4);
	put(f, &crc, &len, &sh->nsites, 4);
	put(f, &crc, &len, &sh->interval_ns, 8);
	if (sh->npoints) {
		put(f, &crc, &len, sh->t_ns, sh->npoints * 8u);
		put(f, &crc, &len, sh->all, sh->npoints * 8u);
		put(f, &crc, &len, sh->site_bytes, (size_t)sh->nsites * sh->npoints * 8u);
	}
	put(f, &crc, &len, &doc_len, 8);
	if (doc_len)
		put(f, &crc, &len, sh->doc, doc_len);
	v32 = SERVEHEAP_VERSION;
	memcpy(header + 8, &v32, 4);
	v32 = CACHE_BOM;
	memcpy(header + 12, &v32, 4);
	memcpy(header + 16, &key.size, 8);
	memcpy(header + 24, &key.mtime_ns, 8);
	memcpy(header + 32, &key.ino, 8);
	memcpy(header + 40, &len, 8);
	memcpy(header + 48, &crc, 4);
	if (fseek(f, 0, SEEK_SET) || fwrite(header, 1, sizeof(header), f) != sizeof(header) || fflush(f) || ferror(f))
		r = -EIO;
	if (fclose(f) && !r)
		r = errno ? -errno : -EIO;
	if (r)
		unlinkat(st.dirfd, tmp, 0);
	else
		r = outfile_tmp_commit(st.dirfd, tmp, st.name);
	if (!r) {
		servestore_release(&st);
		return 0;
	}
fail:
	snprintf(err, errlen, "cannot keep the heap view of trace '%s' in %s: %s", dir,
	         st.dirfd >= 0 ? st.name : SERVEHEAP_FILE, strerror(-r));
	servestore_release(&st);
	return r;
}

/* A bounded cursor over the payload. */
struct in {
	const uint8_t *p, *end;
	bool bad;
};

static bool take(struct in *c, void *out, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	memcpy(out, c->p, n);
	c->p += n;
	return true;
}

static int cache_parse(struct serveheap *sh, const uint8_t *p, uint64_t len)
{
	struct in c = { p, p + len, false };
	uint64_t doc_len = 0;
	size_t cells;
	uint8_t has = 0;

	take(&c, &has, 1);
	take(&c, &sh->npoints, 4);
	take(&c, &sh->nsites, 4);
	take(&c, &sh->interval_ns, 8);
	if (c.bad || has > 1 || sh->npoints > HEAP_SERIES_LEN || sh->nsites > SERVEHEAP_SERIES_SITES)
		return -EBADMSG;
	sh->has_heap = has;
	cells = (size_t)sh->nsites * sh->npoints;
	sh->t_ns = calloc(sh->npoints + 1, 8);
	sh->all = calloc(sh->npoints + 1, 8);
	sh->site_bytes = calloc(cells + 1, 8);
	if (!sh->t_ns || !sh->all || !sh->site_bytes)
		return -ENOMEM;
	if (sh->npoints) {
		take(&c, sh->t_ns, sh->npoints * 8u);
		take(&c, sh->all, sh->npoints * 8u);
		take(&c, sh->site_bytes, cells * 8u);
	}
	if (!take(&c, &doc_len, 8) || doc_len != (uint64_t)(c.end - c.p) || (has && !doc_len))
		return -EBADMSG;
	if (doc_len) {
		sh->doc = malloc(doc_len + 1);
		if (!sh->doc)
			return -ENOMEM;
		take(&c, sh->doc, doc_len);
		sh->doc[doc_len] = '\0';
		sh->doc_len = doc_len;
	}
	return c.bad ? -EBADMSG : 0;
}

/* Fills sh from dir/serve-heap: 0, -ENOENT, -ESTALE (another data file or
 * version), -EBADMSG, -ENOMEM. */
static int cache_read(struct serveheap *sh, const char *dir)
{
	uint8_t header[CACHE_HEADER_SIZE], *buf = NULL;
	struct data_key key, had;
	uint32_t version, bom, crc;
	uint64_t len;
	struct servestore where;
	struct stat st;
	int fd, r;

	if (servestore_open(&where, dir, SERVEHEAP_FILE))
		return -ENOENT;
	fd = servestore_read(&where);
	servestore_release(&where);
	if (fd < 0)
		return fd == -ENOENT ? -ENOENT : -EBADMSG;
	r = data_key_of(dir, &key);
	if (r)
		goto out;
	r = -EBADMSG;
	if (fstat(fd, &st) || read(fd, header, sizeof(header)) != (ssize_t)sizeof(header) ||
	    memcmp(header, CACHE_MAGIC, 8))
		goto out;
	memcpy(&version, header + 8, 4);
	memcpy(&bom, header + 12, 4);
	memset(&had, 0, sizeof(had));
	memcpy(&had.size, header + 16, 8);
	memcpy(&had.mtime_ns, header + 24, 8);
	memcpy(&had.ino, header + 32, 8);
	memcpy(&len, header + 40, 8);
	memcpy(&crc, header + 48, 4);
	if (version != SERVEHEAP_VERSION || bom != CACHE_BOM || memcmp(&had, &key, sizeof(key))) {
		r = -ESTALE;
		goto out;
	}
	if (len > SERVEHEAP_MAX || len != (uint64_t)st.st_size - sizeof(header))
		goto out;
	buf = malloc(len + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	if (read(fd, buf, len) != (ssize_t)len || crc32c(0, buf, len) != crc)
		goto out;
	r = cache_parse(sh, buf, len);
out:
	free(buf);
	close(fd);
	if (r)
		serveheap_release(sh);
	return r;
}

/* ------------------------------------------------------------ load */

int serveheap_load(struct serveheap *sh, const char *dir, const struct walk *model_w, bool read_cache, bool write_cache,
                   char *err, size_t errlen)
{
	int r = -ENOENT;

	memset(sh, 0, sizeof(*sh));
	if (read_cache) {
		r = cache_read(sh, dir);
		if (r == -ENOMEM) {
			snprintf(err, errlen, "cannot read the heap view of trace '%s': out of memory", dir);
			return r;
		}
		if (!r) {
			sh->from_file = true;
			return 0;
		}
		if (r != -ENOENT)
			snprintf(sh->note, sizeof(sh->note), "%s/%s is out of date or damaged: reading the heap again",
			         dir, SERVEHEAP_FILE);
	}
	if (!(model_w && model_w->mem_ops) && !recorded_with_memory(dir))
		return 0;
	r = heap_pass(sh, dir, err, errlen);
	if (r)
		return r;
	if (write_cache && cache_write(sh, dir, sh->note, sizeof(sh->note)))
		return 0; /* a cache we cannot write: read again next time */
	return 0;
}

int serveheap_from_live(struct serveheap *sh, struct livemem *m, const char *trace)
{
	int r;

	memset(sh, 0, sizeof(*sh));
	sh->has_heap = true;
	r = view_build(sh, m->w, &m->h, &m->feed, m, trace);
	if (r)
		serveheap_release(sh);
	return r;
}

void serveheap_release(struct serveheap *sh)
{
	free(sh->doc);
	free(sh->t_ns);
	free(sh->all);
	free(sh->site_bytes);
	memset(sh, 0, sizeof(*sh));
}

/* ------------------------------------------------------------ answers */

static int answer_growth(const struct serveheap *sh, const struct serve_query *q, FILE *out)
{
	const char *site_arg = q->get(q->ctx, "site");
	const uint64_t *v = sh->all;
	uint64_t site = 0, points;
	uint32_t n = sh->npoints, k;
	struct json j;

	if (!servequery_u64(q, "points", HEAP_SERIES_LEN, POINTS_MAX, &points) || !points)
		return servequery_error(out, HTTP_BAD_REQUEST, "points: 1 to 100000");
	if (site_arg && *site_arg) {
		if (!servequery_u64(q, "site", 0, UINT32_MAX, &site))
			return servequery_error(out, HTTP_BAD_REQUEST, "site: the index of a site in /api/heap");
		if (site >= sh->nsites)
			return servequery_error(out, HTTP_NOT_FOUND, "no growth samples for that site");
		v = sh->site_bytes + site * n;
	}
	if (points > n)
		points = n;
	json_init(&j, out);
	json_object_begin(&j, NULL);
	if (site_arg && *site_arg)
		json_u64(&j, "site", site);
	else
		json_null(&j, "site");
	json_u64(&j, "interval_ns", sh->interval_ns);
	json_u64(&j, "samples", n);
	json_array_begin(&j, "points");
	for (k = 0; k < points; k++) {
		/* the value at the end of the k-th of `points` merged intervals */
		uint32_t at = (uint32_t)(((uint64_t)k + 1) * n / points) - 1;

		json_array_begin(&j, NULL);
		json_u64(&j, NULL, sh->t_ns[at]);
		json_u64(&j, NULL, v[at]);
		json_array_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
	return HTTP_OK;
}

int serveheap_answer(const struct serveheap *sh, const char *what, const char *reason, const struct serve_query *q,
                     FILE *out)
{
	if (!sh->has_heap || !sh->doc) {
		if (strcmp(what, "heap"))
			return servequery_error(out, HTTP_NOT_FOUND, reason);
		fputs("{\"heap\":false,\"reason\":", out);
		json_write_string(out, reason);
		fputs("}\n", out);
		return HTTP_OK;
	}
	if (!strcmp(what, "heap")) {
		fwrite(sh->doc, 1, sh->doc_len, out);
		return HTTP_OK;
	}
	if (!strcmp(what, "heap/growth"))
		return answer_growth(sh, q, out);
	return servequery_error(out, HTTP_NOT_FOUND, "no such API");
}
