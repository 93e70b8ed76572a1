/* The flow of one call across the layers in the web UI's server (see
 * serve/flow.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/kernel/kflow.h"
#include "host/lib/serve/flow.h"
#include "host/lib/serve/query.h"
#include "host/lib/util/json.h"

void serveflow_init(struct serveflow *sf)
{
	memset(sf, 0, sizeof(*sf));
}

static void entry_free(struct serveflow_entry *e)
{
	free(e->key);
	free(e->doc);
	memset(e, 0, sizeof(*e));
}

void serveflow_release(struct serveflow *sf)
{
	for (unsigned i = 0; i < sf->n; i++)
		entry_free(&sf->kept[i]);
	memset(sf, 0, sizeof(*sf));
}

/* ------------------------------------------------------------ the documents */

/* Reads the trace and writes the answer.  Returns the HTTP status. */
static int flow_read(const char *dir, const char *func, uint64_t nth, uint64_t tid, bool all, uint64_t limit, FILE *out)
{
	struct filter_opts fopts = { 0 };
	char err[600], msg[1400];
	struct kflow *kf = NULL;
	struct walk w;
	struct json j;
	const struct kflow_call *ch;
	size_t ncalls;
	int r, status = HTTP_OK;

	r = walk_open(&w, dir, &fopts, err, sizeof(err));
	if (r)
		return servequery_error(out, HTTP_SERVER_ERROR, err);
	w.quiet = true;
	kf = kflow_new(&w, func, all ? 0 : nth, (uint32_t)tid);
	r = kf ? kflow_run(kf) : -ENOMEM;
	if (r) {
		snprintf(msg, sizeof(msg), "cannot read trace '%s': %s", dir, strerror(r < 0 ? -r : ENOMEM));
		status = servequery_error(out, HTTP_SERVER_ERROR, msg);
		goto out;
	}
	kflow_calls(kf, &ncalls);
	ch = kflow_chosen(kf);
	json_init(&j, out);
	if (all) {
		kflow_json_calls(&j, func, kf, limit, true);
	} else if (!ch) {
		char in[48] = "";

		if (tid)
			snprintf(in, sizeof(in), " in thread %llu", (unsigned long long)tid);
		snprintf(msg, sizeof(msg), "'%s' has %zu call%s%s, no call #%llu", func, ncalls, ncalls == 1 ? "" : "s",
		         in, (unsigned long long)nth);
		status = servequery_error(out, HTTP_NOT_FOUND, msg);
		goto out;
	} else {
		kflow_json_call(&j, func, kf, limit, true);
	}
	json_finish(&j);
out:
	kflow_free(kf);
	walk_release(&w);
	return status;
}

/* ------------------------------------------------------------ the answers kept */

static struct serveflow_entry *kept_find(struct serveflow *sf, const char *key)
{
	for (unsigned i = 0; i < sf->n; i++)
		if (!strcmp(sf->kept[i].key, key)) {
			struct serveflow_entry e = sf->kept[i];

			/* the newest first */
			memmove(&sf->kept[1], &sf->kept[0], i * sizeof(e));
			sf->kept[0] = e;
			return &sf->kept[0];
		}
	return NULL;
}

/* Keeps an answer (doc owned from now on), letting go of the oldest. */
static void kept_add(struct serveflow *sf, char *key, char *doc, size_t len, int status)
{
	if (len > SERVEFLOW_CACHE_BYTES) {
		free(key);
		free(doc);
		return;
	}
	while (sf->n && (sf->n == SERVEFLOW_CACHE || sf->bytes + len > SERVEFLOW_CACHE_BYTES)) {
		sf->bytes -= sf->kept[sf->n - 1].len;
		entry_free(&sf->kept[--sf->n]);
	}
	memmove(&sf->kept[1], &sf->kept[0], sf->n * sizeof(sf->kept[0]));
	sf->kept[0] = (struct serveflow_entry){ .key = key, .doc = doc, .len = len, .status = status };
	sf->n++;
	sf->bytes += len;
}

int serveflow_answer(struct serveflow *sf, const char *dir, bool keep, const struct serve_query *q, FILE *out)
{
	const char *func = q->get(q->ctx, "func");
	uint64_t nth, tid, all, limit;
	struct serveflow_entry *e;
	char *key = NULL, *doc = NULL;
	size_t len = 0;
	FILE *f;
	int status;

	if (!func || !*func || strlen(func) > SERVEFLOW_FUNC_MAX)
		return servequery_error(out, HTTP_BAD_REQUEST, "func: a function's name as the profile shows it");
	if (!servequery_u64(q, "n", 1, UINT64_MAX / 2, &nth) || !nth ||
	    !servequery_u64(q, "tid", 0, UINT32_MAX, &tid) || !servequery_u64(q, "all", 0, 1, &all))
		return servequery_error(out, HTTP_BAD_REQUEST,
		                        "n: a call's number (1 the first); tid: a thread id; all: 0 or 1");
	if (!servequery_u64(q, "limit", all ? SERVEFLOW_CALLS_DEFAULT : SERVEFLOW_STEPS_DEFAULT, SERVEFLOW_LIMIT_MAX,
	                    &limit) ||
	    !limit)
		return servequery_error(out, HTTP_BAD_REQUEST, "limit: 1 to 200000");
	if (!dir)
		return servequery_error(out, HTTP_NOT_FOUND, "no trace to read");
	if (asprintf(&key, "%s\n%llu\n%llu\n%llu\n%llu", func, (unsigned long long)nth, (unsigned long long)tid,
	             (unsigned long long)all, (unsigned long long)limit) < 0)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	e = keep ? kept_find(sf, key) : NULL;
	if (e) {
		free(key);
		fwrite(e->doc, 1, e->len, out);
		return e->status;
	}
	f = open_memstream(&doc, &len);
	if (!f) {
		free(key);
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	}
	status = flow_read(dir, func, nth, tid, all != 0, limit, f);
	if (fclose(f)) {
		free(key);
		free(doc);
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	}
	fwrite(doc, 1, len, out);
	if (keep && status != HTTP_SERVER_ERROR)
		kept_add(sf, key, doc, len, status);
	else {
		free(key);
		free(doc);
	}
	return status;
}
