/* The Sync tab's answer in the web UI's server (see serve/synctab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/export/syncreport.h"
#include "host/lib/serve/query.h"
#include "host/lib/serve/synctab.h"
#include "host/lib/util/error.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

#define NO_SYNC "no sync events in this trace: the Sync view needs a trace recorded with --sync"
#define LIVE_SYNC \
	"the Sync view needs a saved trace: end the session, then serve the directory of serve --connect --save DIR"

void servesync_init(struct servesync *sc)
{
	memset(sc, 0, sizeof(*sc));
	pthread_mutex_init(&sc->lock, NULL);
}

void servesync_release(struct servesync *sc)
{
	free(sc->doc);
	sc->doc = NULL;
	sc->done = false;
	pthread_mutex_destroy(&sc->lock);
}

static int no_sync(FILE *out, const char *reason)
{
	fputs("{\"has_sync\":false,\"reason\":", out);
	json_write_string(out, reason);
	fputs("}\n", out);
	return HTTP_OK;
}

/* Reads the trace and writes the answer.  Returns the HTTP status,
 * negated when the answer must not be kept (out of memory). */
static int sync_make(const char *dir, FILE *out)
{
	struct syncreport_opts o = { .fmt = EXPORT_REPORT_JSON };
	char err[LP_ERROR_MAX], damage[LP_ERROR_MAX], *doc = NULL;
	size_t len = 0;
	struct walk w;
	bool damaged;
	FILE *f;
	int r, status;

	r = walk_open(&w, dir, NULL, err, sizeof(err));
	if (r)
		return r == -ENOMEM ? -servequery_error(out, HTTP_SERVER_ERROR, "out of memory")
		                    : servequery_error(out, HTTP_SERVER_ERROR, err);
	w.quiet = true;
	f = open_memstream(&doc, &len);
	if (!f) {
		status = -servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		goto out;
	}
	r = syncreport_write(&w, &o, f);
	if (fclose(f) && !r)
		r = -ENOMEM;
	if (r == -ENODATA) {
		status = no_sync(out, NO_SYNC);
		goto out;
	}
	if (r) {
		status = -servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
		goto out;
	}
	damaged = walk_condition(&w, NULL, damage, sizeof(damage)) == -EBADMSG;
	/* the document is one object: ours become its last members */
	while (len && (doc[len - 1] == '\n' || doc[len - 1] == ' '))
		len--;
	if (!len || doc[len - 1] != '}') {
		status = servequery_error(out, HTTP_SERVER_ERROR, "report --sync wrote no JSON object");
		goto out;
	}
	fwrite(doc, 1, len - 1, out);
	fputs(",\"has_sync\":true", out);
	if (damaged) {
		fputs(",\"damage\":", out);
		json_write_string(out, damage);
	}
	fputs("}\n", out);
	status = HTTP_OK;
out:
	free(doc);
	walk_release(&w);
	return status;
}

int servesync_answer(struct servesync *sc, const char *dir, FILE *out)
{
	int status;

	if (!dir)
		return no_sync(out, LIVE_SYNC);
	pthread_mutex_lock(&sc->lock);
	if (!sc->done) {
		char *doc = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&doc, &len);

		status = f ? sync_make(dir, f) : -HTTP_SERVER_ERROR;
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
