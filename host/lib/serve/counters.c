/* The Counters tab's answer in the web UI's server (see serve/counters.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/export/ctrreport.h"
#include "host/lib/serve/counters.h"
#include "host/lib/serve/present.h"
#include "host/lib/util/json.h"
#include "layerprof/format.h"

#define NO_COUNTERS "no counter values in this trace: the Counters view needs a trace recorded with --counters"
#define LIVE_COUNTERS                                                                                                 \
	"the Counters view needs a saved trace: end the session, then serve the directory of serve --connect --save " \
	"DIR"

void servectr_init(struct servectr *sc)
{
	memset(sc, 0, sizeof(*sc));
	pthread_mutex_init(&sc->lock, NULL);
}

static void pass_release(struct servectr_pass *p)
{
	if (p->collected)
		ctrstats_result_release(&p->res);
	if (p->done && !p->status) {
		ctrstats_release(&p->st);
		walk_release(&p->w);
	}
	memset(p, 0, sizeof(*p));
}

void servectr_release(struct servectr *sc)
{
	pass_release(&sc->pass[0]);
	pass_release(&sc->pass[1]);
	pthread_mutex_destroy(&sc->lock);
}

/* ------------------------------------------------------------ presence */

bool servectr_present(const char *dir, const struct walk *model_w)
{
	if (model_w)
		return model_w->counter_events != 0;
	return dir && servepresent_meta(dir, "counters");
}

/* ------------------------------------------------------------ the pass */

/* Reads the trace once for p (per_thread: one function row per function
 * and thread).  A failure is kept in p (status, err) but for running out
 * of memory, which a later request tries again: returns -ENOMEM then. */
static int pass_make(struct servectr_pass *p, const char *dir, bool per_thread)
{
	struct walk_ops ops = { 0 };
	int r;

	memset(p, 0, sizeof(*p));
	r = walk_open(&p->w, dir, NULL, p->err, sizeof(p->err));
	if (r) {
		if (r == -ENOMEM)
			return r;
		p->status = HTTP_SERVER_ERROR;
		p->done = true;
		return 0;
	}
	p->w.quiet = true;
	ctrstats_init(&p->st, &p->w, per_thread ? CTRSTATS_PER_THREAD : 0);
	ctrstats_walk_ops(&p->st, &ops);
	r = walk_run(&p->w, &ops);
	if (r || p->st.oom) {
		ctrstats_release(&p->st);
		walk_release(&p->w);
		return -ENOMEM;
	}
	p->has = p->w.counter_events != 0;
	if (walk_condition(&p->w, NULL, p->damage, sizeof(p->damage)) != -EBADMSG)
		p->damage[0] = '\0';
	p->done = true;
	return 0;
}

/* p's rows in the order sort names ("": the default).  0; -EINVAL with
 * err saying why; -ENOMEM. */
static int pass_collect(struct servectr_pass *p, const char *sort, char *err, size_t errlen)
{
	struct ctrstats_order order;
	int r;

	if (p->collected && !strcmp(p->sort, sort))
		return 0;
	if (!*sort)
		ctrstats_order_default(&order);
	else if (ctrstats_order_parse(&order, sort)) {
		snprintf(err, errlen,
		         "sort: comma-separated keys of report --counters -s: incl:COUNTER, self:COUNTER, COUNTER, a "
		         "derived metric, calls or name");
		return -EINVAL;
	}
	if (p->collected)
		ctrstats_result_release(&p->res);
	p->collected = false;
	r = ctrstats_collect(&p->st, &order, &p->res, err, errlen);
	if (r)
		return r;
	p->collected = true;
	snprintf(p->sort, sizeof(p->sort), "%s", sort);
	return 0;
}

/* ------------------------------------------------------------ the answer */

static bool contains(const char *hay, const char *needle_lower)
{
	size_t n = strlen(needle_lower);

	for (; *hay; hay++) {
		size_t i;

		for (i = 0; i < n && hay[i] && tolower((unsigned char)hay[i]) == needle_lower[i]; i++)
			;
		if (i == n)
			return true;
	}
	return !n;
}

static int no_counters(FILE *out, const char *reason)
{
	fputs("{\"has_counters\":false,\"reason\":", out);
	json_write_string(out, reason);
	fputs("}\n", out);
	return HTTP_OK;
}

struct ctr_query {
	const char *sort, *text;
	bool asc;     /* the order answered: ascending */
	bool reverse; /* the reverse of the sort's own order */
	bool per_thread;
	uint64_t offset, limit;
};

/* The query's parameters into c; 0, or the status of the error written. */
static int query_read(const struct serve_query *q, struct ctr_query *c, FILE *out)
{
	const char *dir = q->get(q->ctx, "dir"), *per = q->get(q->ctx, "per_thread");

	c->sort = q->get(q->ctx, "sort");
	c->text = q->get(q->ctx, "q");
	if (!c->sort)
		c->sort = "";
	if (!c->text)
		c->text = "";
	if (strlen(c->sort) >= SERVECTR_TEXT_MAX)
		return servequery_error(out, HTTP_BAD_REQUEST, "sort: too long");
	if (strlen(c->text) >= SERVECTR_TEXT_MAX)
		return servequery_error(out, HTTP_BAD_REQUEST, "q: too long");
	if (dir && *dir && strcmp(dir, "asc") && strcmp(dir, "desc"))
		return servequery_error(out, HTTP_BAD_REQUEST, "dir: asc or desc");
	/* a sort's own order: names alphabetical, numbers largest first */
	c->asc = !strncmp(c->sort, "name", 4) && (!c->sort[4] || c->sort[4] == ',');
	c->reverse = dir && *dir && strcmp(dir, c->asc ? "asc" : "desc") != 0;
	c->asc = c->asc != c->reverse;
	if (per && *per && strcmp(per, "0") && strcmp(per, "1"))
		return servequery_error(out, HTTP_BAD_REQUEST, "per_thread: 0 or 1");
	c->per_thread = per && !strcmp(per, "1");
	if (!servequery_u64(q, "offset", 0, UINT32_MAX, &c->offset) ||
	    !servequery_u64(q, "limit", SERVECTR_ROWS_DEFAULT, SERVECTR_ROWS_MAX, &c->limit))
		return servequery_error(out, HTTP_BAD_REQUEST, "offset and limit: numbers (limit at most 100000)");
	return 0;
}

/* The document of p's rows for c. */
static int answer_write(struct servectr_pass *p, const struct ctr_query *c, FILE *out)
{
	struct ctrstats_result page = p->res;
	struct ctrstats_fn_row *rows;
	char needle[SERVECTR_TEXT_MAX];
	size_t i, n = 0, k;
	struct json j;

	for (i = 0; c->text[i]; i++)
		needle[i] = (char)tolower((unsigned char)c->text[i]);
	needle[i] = '\0';
	/* the rows asked for, copied (their strings stay the result's) */
	rows = malloc((p->res.nfns + 1) * sizeof(*rows));
	if (!rows)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	for (i = 0; i < p->res.nfns; i++) {
		const struct ctrstats_fn_row *r = &p->res.fns[c->reverse ? p->res.nfns - 1 - i : i];

		if (contains(r->name, needle))
			rows[n++] = *r;
	}
	k = c->offset < n ? (size_t)c->offset : n;
	page.fns = rows + k;
	page.nfns = n - k < c->limit ? n - k : (size_t)c->limit;
	json_init(&j, out);
	json_object_begin(&j, NULL);
	json_bool(&j, "has_counters", true);
	json_str(&j, "trace", p->w.dir);
	json_u64(&j, "lost_events", p->w.lost);
	json_bool(&j, "complete", p->w.r.state == READER_OK && p->w.r.seen_end);
	if (p->damage[0])
		json_str(&j, "damage", p->damage);
	if (*c->sort || !p->res.n) {
		json_str(&j, "sort", *c->sort ? c->sort : "incl");
	} else {
		char key[CTRSTATS_NAME_MAX + 8];

		snprintf(key, sizeof(key), "incl:%s", p->res.names[0]);
		json_str(&j, "sort", key);
	}
	json_str(&j, "dir", c->asc ? "asc" : "desc");
	json_bool(&j, "per_thread", c->per_thread);
	json_str(&j, "q", c->text);
	json_u64(&j, "total_functions", n);
	json_u64(&j, "offset", k);
	ctrreport_json_members(&j, &p->w, &p->st, &page, c->per_thread);
	json_object_end(&j);
	json_finish(&j);
	free(rows);
	return HTTP_OK;
}

int servectr_answer(struct servectr *sc, const char *dir, const struct serve_query *q, FILE *out)
{
	struct ctr_query c;
	struct servectr_pass *p;
	char err[512];
	int status, r;

	status = query_read(q, &c, out);
	if (status)
		return status;
	if (!dir)
		return no_counters(out, LIVE_COUNTERS);
	pthread_mutex_lock(&sc->lock);
	p = &sc->pass[c.per_thread];
	if (!p->done && pass_make(p, dir, c.per_thread)) {
		status = servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		goto out;
	}
	if (p->status) {
		status = servequery_error(out, p->status, p->err);
		goto out;
	}
	if (!p->has) {
		status = no_counters(out, NO_COUNTERS);
		goto out;
	}
	r = pass_collect(p, c.sort, err, sizeof(err));
	if (r) {
		status = servequery_error(out, r == -EINVAL ? HTTP_BAD_REQUEST : HTTP_SERVER_ERROR,
		                          r == -EINVAL ? err : "out of memory");
		goto out;
	}
	status = answer_write(p, &c, out);
out:
	pthread_mutex_unlock(&sc->lock);
	return status;
}
