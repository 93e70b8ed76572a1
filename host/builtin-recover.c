/* layerprof recover: finishes the trace of a recorder that was killed.  The
 * recorder's note in the trace directory names its session; the rings
 * there still hold what the program wrote after the recorder's last poll
 * (and, if the program outlived it, until they filled).  They are drained
 * into the trace from where the recorder stopped, what the recorder had
 * taken but not written is counted lost, and the session is removed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/drain.h"
#include "host/builtin.h"
#include "host/lib/trace/dir.h"
#include "host/lib/trace/file.h"
#include "host/lib/trace/reader.h"
#include "host/lib/trace/recording.h"

#define RECOVER_END_MAX 1024u

static const char recover_usage[] = "usage: layerprof recover [options] <trace dir>\n\n"
                                    "Finishes the trace of a `layerprof record` that was killed (SIGKILL, the\n"
                                    "OOM killer, a crash).  Such a trace ends at most some 200 ms before the\n"
                                    "recorder died; what the program wrote after that is still in the rings\n"
                                    "in shared memory.  recover adds it to the trace, counts as lost the events\n"
                                    "the recorder had taken but not written, ends the trace and removes the\n"
                                    "session.  Programs of the recording that still run go on untraced.\n"
                                    "Run it before the next record, which removes the sessions of dead\n"
                                    "recorders.\n"
                                    "\n"
                                    "  -q, --quiet           no summary line\n"
                                    "  -h, --help            this text\n"
                                    "\n"
                                    "Exit status: 0 when the trace is finished, 1 when it cannot be (the\n"
                                    "recorder still runs, its session is not the caller's, nothing to\n"
                                    "recover), 2 for a bad command line, 3 for a missing or unreadable trace.\n";

struct recover {
	struct tracefile tf;
	const char *dir;
	const char *cause; /* for the END chunk */
};

static int on_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	struct recover *rc = ctx;
	char end[RECOVER_END_MAX];
	int n, r;

	if (type != LP_CHUNK_END) {
		r = tracefile_write(&rc->tf, type, payload, len, events);
		if (r < 0)
			fprintf(stderr, "layerprof recover: cannot write trace '%s': %s\n", rc->dir, strerror(-r));
		return 0;
	}
	if (len > sizeof(end) / 2)
		len = sizeof(end) / 2;
	memcpy(end, payload, len);
	n = snprintf(end + len, sizeof(end) - len, "recovered=1\n");
	/* a cause of its own only when nothing else stopped the writing */
	if (!rc->tf.error)
		n += snprintf(end + len + n, sizeof(end) - len - (size_t)n, "lost_cause=%s\n", rc->cause);
	r = tracefile_end(&rc->tf, end, len + (size_t)n);
	if (r)
		fprintf(stderr, "layerprof recover: cannot end trace '%s': %s\n", rc->dir, strerror(-r));
	return 0;
}

/* Reads the trace as far as it is whole: its length, whether it ended,
 * whether it was recorded with filters, and its clock points (into d when
 * given).  Returns 0 or an exit code after a message. */
static int trace_scan(const char *dir, struct drain *d, off_t *valid, bool *ended, bool *filtered)
{
	struct chunk_info ci;
	const uint8_t *payload;
	struct reader r;
	char err[512];

	if (reader_open(&r, dir, err, sizeof(err))) {
		fprintf(stderr, "layerprof recover: %s\n", err);
		return LP_EXIT_TRACE;
	}
	*filtered = false;
	while (reader_next(&r, &ci, &payload)) {
		if (ci.type == LP_CHUNK_META)
			*filtered = memmem(payload, ci.len, "\nfiltered=1\n", 12) != NULL;
		else if (ci.type == LP_CHUNK_CLOCK && d)
			drain_clock_import(d, payload, ci.len);
	}
	*valid = r.offset;
	*ended = r.seen_end;
	reader_release(&r);
	return 0;
}

int cmd_recover(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct recover rc = { .tf = { .fd = -1 } };
	struct drain_ops ops = { .ctx = &rc, .chunk = on_chunk };
	struct drain_stats st;
	struct recording note;
	struct drain *d = NULL;
	int c, r, dirfd = -1, sfd = -1, exit_code = LP_EXIT_FAILURE, quiet = 0;
	bool ended, filtered;
	char err[PATH_MAX + 200];
	off_t valid;
	long n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(recover_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(recover_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "layerprof recover: expected one trace directory\n");
		fputs(recover_usage, stderr);
		return LP_EXIT_USAGE;
	}
	rc.dir = argv[optind];
	dirfd = open(rc.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		fprintf(stderr, "layerprof recover: cannot open trace '%s': %s\n", rc.dir, strerror(errno));
		return LP_EXIT_TRACE;
	}
	r = recording_read(dirfd, &note, err, sizeof(err));
	if (r == -ENOENT) {
		fprintf(stderr,
		        "layerprof recover: trace '%s' has no recorder's note: its recording ended in order, "
		        "nothing to recover\n",
		        rc.dir);
		goto out;
	}
	if (r) {
		fprintf(stderr, "layerprof recover: trace '%s': %s\n", rc.dir, err);
		goto out;
	}
	if (recording_alive(&note)) {
		fprintf(stderr,
		        "layerprof recover: the recorder of '%s' (pid %d) still runs: nothing to recover (Ctrl-C or "
		        "SIGINT ends it in order)\n",
		        rc.dir, (int)note.pid);
		goto out;
	}
	rc.cause = "the recorder was killed; 'layerprof recover' added what its rings held";
	sfd = recording_session_open(&note, err, sizeof(err));
	if (sfd == -ENOENT) {
		/* removed already (by a later record): the trace can still end */
		fprintf(stderr, "layerprof recover: warning: %s: the events it held are lost\n", err);
		rc.cause = "the recorder was killed and its session was gone: what its rings held is lost";
	} else if (sfd < 0) {
		fprintf(stderr, "layerprof recover: %s\n", err);
		goto out;
	} else {
		d = drain_salvage(sfd, &ops);
		if (!d) {
			fprintf(stderr, "layerprof recover: cannot use the recorder's session '%s': %s\n", note.session,
			        errno == EPROTO ? "not a layerprof session of this version" : strerror(errno));
			goto out;
		}
	}
	r = trace_scan(rc.dir, d, &valid, &ended, &filtered);
	if (r) {
		exit_code = r;
		goto out;
	}
	if (!ended) {
		r = tracefile_append(&rc.tf, dirfd, valid);
		if (r) {
			fprintf(stderr, "layerprof recover: cannot write trace '%s': %s\n", rc.dir, strerror(-r));
			goto out;
		}
		/* the record-time filters' state (open calls, depth) died with
		 * the recorder: the rings' events are counted, not added */
		if (filtered)
			tracefile_discard(&rc.tf, "the recorder was killed, and the events left in its rings were not "
			                          "added: the recording used record-time filters");
		if (d) {
			while ((n = drain_poll(d)) > 0)
				;
			r = n < 0 ? (int)n : drain_finish(d);
		} else {
			r = on_chunk(&rc, LP_CHUNK_END, (const uint8_t *)"", 0, 0);
		}
		if (r) {
			fprintf(stderr, "layerprof recover: cannot recover '%s': %s\n", rc.dir, strerror(-r));
			goto out;
		}
		if (rc.tf.error && !rc.tf.cause) {
			fprintf(stderr, "layerprof recover: trace '%s' is not finished: %s\n", rc.dir,
			        strerror(-rc.tf.error));
			goto out;
		}
	}
	if (d) {
		drain_get_stats(d, &st);
		drain_free(d);
		d = NULL;
		r = recording_session_remove(&note, sfd);
		if (r)
			fprintf(stderr, "layerprof recover: warning: cannot remove the session '%s': %s\n",
			        note.session, strerror(-r));
		if (!quiet && !ended)
			fprintf(stderr, "layerprof recover: %llu events from %llu threads added to '%s', %llu lost\n",
			        (unsigned long long)(st.events - rc.tf.unwritten), (unsigned long long)st.streams,
			        rc.dir, (unsigned long long)(st.lost + rc.tf.unwritten));
	}
	if (ended && !quiet)
		fprintf(stderr, "layerprof recover: trace '%s' was complete already\n", rc.dir);
	if (unlinkat(dirfd, TRACEDIR_RECORDING, 0) && errno != ENOENT)
		fprintf(stderr, "layerprof recover: warning: cannot remove '%s/%s': %s\n", rc.dir, TRACEDIR_RECORDING,
		        strerror(errno));
	exit_code = LP_EXIT_OK;
out:
	drain_free(d);
	if (sfd >= 0)
		close(sfd);
	r = tracefile_close(&rc.tf);
	if (r && exit_code == LP_EXIT_OK) {
		fprintf(stderr, "layerprof recover: cannot write trace '%s': %s\n", rc.dir, strerror(-r));
		exit_code = LP_EXIT_FAILURE;
	}
	close(dirfd);
	return exit_code;
}
