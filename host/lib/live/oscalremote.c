/* The OS-call timing suite run on an agent (see oscalremote.h): OSCAL with
 * the options, OSCALDATA frames cut back into lines, the exit's STATUS. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/lib/live/netclient.h"
#include "host/lib/live/oscalremote.h"

#define HEARTBEAT_MS 1000u /* send one after this long without sending */
#define SILENCE_MS 5000u   /* an agent silent this long is gone (it sends one every second) */
#define LINE_START 65536u  /* the line buffer's first size */
#define REASON_MAX 400     /* of the agent's ERROR or the suite's stderr, shown */

/* The suite's options a host may pass on: the agent knows these and no
 * other (docs/protocol.md, OSCAL). */
static const char *const option_keys[] = { "calls", "quick", "reps", "warmup", "skip", "list" };
#define OPTION_QUICK 1
#define OPTION_LIST 5

/* The suite's output so far, cut into lines for the caller. */
struct remote_lines {
	char *buf; /* the line being put together; owned */
	size_t len, cap;
	int (*line)(void *ctx, const char *text);
	void *ctx;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* args as the OSCAL frame's key=value lines, in out[size]; *len set.
 * Returns 0 or -EINVAL with err. */
static int build_request(char *const *args, char *out, size_t size, size_t *len, char *err, size_t errlen)
{
	bool seen[sizeof(option_keys) / sizeof(option_keys[0])] = { false };
	size_t n = 0;

	for (size_t i = 0; args && args[i]; i++) {
		const char *arg = args[i], *name = arg + 2, *eq = strchr(arg, '='), *val;
		size_t name_len = eq ? (size_t)(eq - name) : strlen(name), k;
		int w;

		if (strncmp(arg, "--", 2))
			return error_set(err, errlen, -EINVAL, "unexpected suite argument '%.100s'", arg);
		for (k = 0; k < sizeof(option_keys) / sizeof(option_keys[0]); k++)
			if (strlen(option_keys[k]) == name_len && !strncmp(name, option_keys[k], name_len))
				break;
		if (k == sizeof(option_keys) / sizeof(option_keys[0]))
			return error_set(err, errlen, -EINVAL,
			                 "the agent runs the suite with --calls, --quick, --reps, --warmup, --skip and "
			                 "--list only, not '%.100s'",
			                 arg);
		if (seen[k])
			return error_set(err, errlen, -EINVAL, "suite option --%s given twice", option_keys[k]);
		seen[k] = true;
		if (k == OPTION_QUICK || k == OPTION_LIST) {
			if (eq)
				return error_set(err, errlen, -EINVAL, "--%s takes no value", option_keys[k]);
			val = "1";
		} else if (eq) {
			val = eq + 1;
		} else if (args[i + 1]) {
			val = args[++i];
		} else {
			return error_set(err, errlen, -EINVAL, "suite option --%s needs a value", option_keys[k]);
		}
		if (strchr(val, '\n'))
			return error_set(err, errlen, -EINVAL, "the value of --%s holds a line break", option_keys[k]);
		w = snprintf(out + n, size - n, "%s=%s\n", option_keys[k], val);
		if (w < 0 || (size_t)w >= size - n)
			return error_set(err, errlen, -EINVAL, "the suite's options are too long (at most %zu bytes)",
			                 size);
		n += (size_t)w;
	}
	*len = n;
	return 0;
}

/* Adds n bytes to the line being put together.  Returns 0 or -EMSGSIZE. */
static int lines_append(struct remote_lines *l, const uint8_t *p, size_t n)
{
	size_t cap;
	char *b;

	if (l->len + n + 1 <= l->cap) {
		memcpy(l->buf + l->len, p, n);
		l->len += n;
		return 0;
	}
	if (l->len + n + 1 > OSCAL_REMOTE_LINE_MAX)
		return -EMSGSIZE;
	cap = l->cap ? l->cap : LINE_START;
	while (cap < l->len + n + 1)
		cap *= 2;
	if (cap > OSCAL_REMOTE_LINE_MAX)
		cap = OSCAL_REMOTE_LINE_MAX;
	b = realloc(l->buf, cap);
	if (!b)
		return -ENOMEM;
	l->buf = b;
	l->cap = cap;
	memcpy(l->buf + l->len, p, n);
	l->len += n;
	return 0;
}

/* The line put together goes to the caller.  Returns its answer. */
static int lines_emit(struct remote_lines *l)
{
	static char empty[] = "";
	char *text = l->buf ? l->buf : empty;

	if (l->buf)
		l->buf[l->len] = '\0';
	l->len = 0;
	return l->line(l->ctx, text);
}

/* An OSCALDATA payload: bytes of the suite's stdout, in order.  Returns 0,
 * the caller's nonzero answer, or -errno with err. */
static int lines_feed(struct remote_lines *l, const uint8_t *p, size_t n, char *err, size_t errlen)
{
	while (n) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t piece = nl ? (size_t)(nl - p) : n;
		int r = lines_append(l, p, piece);

		if (r == -EMSGSIZE)
			return error_set(err, errlen, r, "a line of the suite's output is longer than %u bytes",
			                 OSCAL_REMOTE_LINE_MAX);
		if (r)
			return error_set(err, errlen, r, "out of memory");
		if (!nl)
			break;
		r = lines_emit(l);
		if (r)
			return r;
		p = nl + 1;
		n -= piece + 1;
	}
	return 0;
}

/* A reason from the wire, for people: printable ASCII, cut. */
static void printable(char *out, size_t size, const uint8_t *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 1 < size; i++) {
		if (p[i] == '\n' && i + 1 == len)
			break;
		out[n++] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
	}
	out[n] = '\0';
}

/* The agent's ERROR in answer to OSCAL: its reason in err, the kind of
 * refusal as the errno. */
static int refused(const struct netclient *c, const struct wire_frame *f, char *err, size_t errlen)
{
	char reason[REASON_MAX];

	printable(reason, sizeof(reason), f->payload, f->len);
	if (strstr(reason, "busy"))
		return error_set(err, errlen, -EBUSY, "the agent at %s is busy: %s", c->peer, reason);
	return error_set(err, errlen, strstr(reason, "no suite") ? -ENOENT : -EINVAL,
	                 "the agent at %s refused to run the suite: %s", c->peer, reason);
}

/* STATUS event=oscal_exit: the suite's exit status (err: its stderr), or
 * 1 for another STATUS, which is not ours to read. */
static int exit_status(const struct wire_frame *f, char *err, size_t errlen)
{
	char val[32], text[REASON_MAX];
	long status;
	char *end;

	if (wire_kv_get(f->payload, f->len, "event", val, sizeof(val)) || strcmp(val, "oscal_exit"))
		return 1;
	if (wire_kv_get(f->payload, f->len, "status", val, sizeof(val)))
		return error_set(err, errlen, -EPROTO, "the agent's end of the suite says no status");
	status = strtol(val, &end, 10);
	if (*end || end == val || status < 0 || status > 255)
		return error_set(err, errlen, -EPROTO, "the agent's end of the suite says status '%.20s'", val);
	if (!wire_kv_get(f->payload, f->len, "stderr", text, sizeof(text)))
		error_set(err, errlen, 0, "%s", text);
	else if (err && errlen)
		err[0] = '\0';
	return (int)status;
}

/* Reads frames until the suite's end.  Returns as oscal_remote_run. */
static int follow(struct netclient *c, const struct oscal_remote_opts *o, struct remote_lines *l, char *err,
                  size_t errlen)
{
	uint64_t last_rx = now_ms(), last_tx = last_rx;
	struct wire_frame f;
	int r;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		uint64_t now;

		while ((r = netclient_next(c, &f)) > 0) {
			last_rx = now_ms();
			switch (f.type) {
			case LP_FRAME_OSCALDATA:
				r = lines_feed(l, f.payload, f.len, err, errlen);
				if (r)
					return r;
				break;
			case LP_FRAME_STATUS:
				r = exit_status(&f, err, errlen);
				if (r == 1)
					break;
				/* a last line without its '\n' */
				if (r >= 0 && l->len) {
					int rl = lines_emit(l);

					if (rl)
						return rl;
				}
				return r;
			case LP_FRAME_ERROR:
				return refused(c, &f, err, errlen);
			case LP_FRAME_BYE:
				return error_set(err, errlen, -ECONNRESET,
				                 "the agent at %s stopped before the suite ended", c->peer);
			default:
				/* HEARTBEAT; CHUNK of a session another host started,
				 * sent before our CONTROL took effect */
				break;
			}
		}
		if (r < 0)
			return error_set(err, errlen, r, "%s", c->error);
		if (o->stop && *o->stop)
			return error_set(err, errlen, -EINTR, "interrupted");
		now = now_ms();
		if (now - last_rx >= SILENCE_MS)
			return error_set(err, errlen, -ETIMEDOUT, "the agent at %s stopped responding", c->peer);
		if (now - last_tx >= HEARTBEAT_MS) {
			r = netclient_send(c, LP_FRAME_HEARTBEAT, NULL, 0);
			if (r)
				return error_set(err, errlen, r, "%s", c->error);
			last_tx = now;
		}
		r = poll(&pfd, 1, OSCAL_REMOTE_TICK_MS);
		if (r < 0 && errno != EINTR)
			return error_set(err, errlen, -errno, "cannot wait for the agent at %s: %s", c->peer,
			                 strerror(errno));
		if (r > 0) {
			r = netclient_receive(c);
			if (r < 0)
				return error_set(err, errlen, r, "%s%s", c->error,
				                 r == -ECONNRESET ? " before the suite ended" : "");
		}
	}
}

int oscal_remote_run(const struct oscal_remote_opts *o, char *const *args, int (*line)(void *ctx, const char *text),
                     void *ctx, char *err, size_t errlen)
{
	static const char tracing_off[] = "tracing=off\n";
	struct remote_lines l = { .line = line, .ctx = ctx };
	char request[OSCAL_REMOTE_REQUEST_MAX];
	struct netclient c;
	size_t len = 0;
	int r;

	r = build_request(args, request, sizeof(request), &len, err, errlen);
	if (r)
		return r;
	netclient_init(&c);
	r = netclient_open(&c, o->addr, o->token_file, &o->warn);
	if (r) {
		error_set(err, errlen, r, "%s", c.error);
		goto out;
	}
	if (!netclient_has_cap(&c, "oscal")) {
		r = error_set(err, errlen, -EOPNOTSUPP,
		              "the agent at %s (%s) cannot run the suite: no capability oscal (an older agent, or no "
		              "layerprof-oscal beside it)",
		              c.peer, c.agent[0] ? c.agent : "unknown");
		goto bye;
	}
	/* programs other hosts started stay untraced while we are here: none
	 * of their chunks come to us */
	r = netclient_send(&c, LP_FRAME_CONTROL, tracing_off, sizeof(tracing_off) - 1);
	if (!r)
		r = netclient_send(&c, LP_FRAME_OSCAL, request, len);
	if (r) {
		error_set(err, errlen, r, "%s", c.error);
		goto out;
	}
	r = follow(&c, o, &l, err, errlen);
bye:
	/* a run given up: the agent stops the suite when we go */
	netclient_send(&c, LP_FRAME_BYE, NULL, 0);
out:
	netclient_release(&c);
	free(l.buf);
	return r;
}
