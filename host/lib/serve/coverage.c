/* The Coverage tab's answer in the web UI's server (see serve/coverage.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/serve/coverage.h"
#include "host/lib/serve/query.h"
#include "host/lib/util/json.h"

#ifdef LP_HAVE_CAPSTONE
#include "host/lib/callgraph/coverage.h"
#include "host/lib/util/error.h"
#endif

void servecov_init(struct servecov *sc)
{
	memset(sc, 0, sizeof(*sc));
	pthread_mutex_init(&sc->lock, NULL);
}

void servecov_release(struct servecov *sc)
{
	free(sc->doc);
	sc->doc = NULL;
	sc->done = false;
	pthread_mutex_destroy(&sc->lock);
}

#ifdef LP_HAVE_CAPSTONE

/* The warnings of one reading, in order; past SERVECOV_WARNINGS_MAX only
 * counted. */
struct cov_warnings {
	char *msg[SERVECOV_WARNINGS_MAX];
	unsigned n, more;
};

/* lp_warner.fn: keeps a copy of msg (without a "warning: " of its own:
 * the page says what it is). */
static void warning_keep(void *ctx, const char *msg)
{
	struct cov_warnings *w = ctx;

	if (!strncmp(msg, "warning: ", 9))
		msg += 9;
	if (w->n < SERVECOV_WARNINGS_MAX && (w->msg[w->n] = strdup(msg)))
		w->n++;
	else
		w->more++;
}

static void warnings_free(struct cov_warnings *w)
{
	for (unsigned i = 0; i < w->n; i++)
		free(w->msg[i]);
}

/* The answer when the program could not be read: the warnings, which say
 * which binary and why, as one line. */
static int program_unread(const struct cov_warnings *w, FILE *out)
{
	char msg[2048];
	size_t at;
	unsigned i;

	at = (size_t)snprintf(msg, sizeof(msg), "coverage needs the binaries the trace ran");
	for (i = 0; i < w->n && at < sizeof(msg); i++)
		at += (size_t)snprintf(msg + at, sizeof(msg) - at, "%s%s", i ? "; " : ": ", w->msg[i]);
	return servequery_error(out, HTTP_NOT_FOUND, msg);
}

/* Reads the trace and its binaries and writes the answer.  Returns the
 * HTTP status, negated when the answer must not be kept (out of memory). */
static int cov_make(const char *dir, FILE *out)
{
	struct cov_warnings w = { 0 };
	const struct lp_warner warner = { warning_keep, &w };
	const struct coverage_opts o = { .paths = true, .flags = COVERAGE_DEMANGLE, .warn = &warner };
	struct coverage *c = NULL;
	char err[LP_ERROR_MAX], damage[LP_ERROR_MAX], *doc = NULL;
	size_t len = 0;
	bool damaged;
	FILE *f;
	int r, status = HTTP_OK;

	r = coverage_build(dir, &o, &c, err, sizeof(err));
	if (r) {
		status = r == -ENOMEM   ? -servequery_error(out, HTTP_SERVER_ERROR, "out of memory")
		         : r == -EINVAL ? servequery_error(out, HTTP_NOT_FOUND, err)
		                        : servequery_error(out, HTTP_SERVER_ERROR, err);
		goto out;
	}
	damaged = coverage_condition(c, damage, sizeof(damage)) != 0;
	f = open_memstream(&doc, &len);
	if (!f) {
		status = -servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		goto out;
	}
	r = coverage_write_json(f, c);
	if (fclose(f) || r) {
		status = -servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		goto out;
	}
	/* without the program there is no path tree ("paths": null, which no
	 * string of the document can hold: its quotes are escaped) */
	if (coverage_unread(c) && strstr(doc, "\"paths\":null")) {
		status = program_unread(&w, out);
		goto out;
	}
	/* the document is one object: the warnings become its last members */
	while (len && (doc[len - 1] == '\n' || doc[len - 1] == ' '))
		len--;
	if (!len || doc[len - 1] != '}') {
		status = servequery_error(out, HTTP_SERVER_ERROR, "coverage wrote no JSON object");
		goto out;
	}
	fwrite(doc, 1, len - 1, out);
	fputs(",\"warnings\":[", out);
	for (unsigned i = 0; i < w.n; i++) {
		if (i)
			fputc(',', out);
		json_write_string(out, w.msg[i]);
	}
	if (w.more)
		fprintf(out, "%s\"%u more warnings\"", w.n ? "," : "", w.more);
	fputc(']', out);
	if (damaged) {
		fputs(",\"damage\":", out);
		json_write_string(out, damage);
	}
	fputs("}\n", out);
out:
	free(doc);
	coverage_free(c);
	warnings_free(&w);
	return status;
}

#else

static int cov_make(const char *dir, FILE *out)
{
	(void)dir;
	return servequery_error(out, HTTP_NOT_FOUND,
	                        "coverage was left out of this layerprof: it was built without capstone (install "
	                        "libcapstone-dev and build again)");
}

#endif

int servecov_answer(struct servecov *sc, const char *dir, FILE *out)
{
	int status;

	if (!dir)
		return servequery_error(out, HTTP_NOT_FOUND,
		                        "coverage needs a saved trace: a live session has none to read yet (end it, "
		                        "then serve the directory of serve --connect --save DIR)");
	pthread_mutex_lock(&sc->lock);
	if (!sc->done) {
		char *doc = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&doc, &len);

		status = f ? cov_make(dir, f) : -HTTP_SERVER_ERROR;
		if (!f || fclose(f) || status < 0) {
			free(doc);
			pthread_mutex_unlock(&sc->lock);
			return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		}
		sc->doc = doc;
		sc->len = len;
		sc->status = status;
		sc->done = true;
	}
	fwrite(sc->doc, 1, sc->len, out);
	status = sc->status;
	pthread_mutex_unlock(&sc->lock);
	return status;
}
