/* layerprof live: profiles a program on a target through its agent
 * (layerprofd, docs/protocol.md) and shows the flat profile while the trace
 * arrives; commands start and stop tracing, set filters that the runtime
 * applies, and save what arrives as a trace directory. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/chunk.h"
#include "common/varint.h"
#include "host/builtin.h"
#include "host/lib/classify.h"
#include "host/lib/json.h"
#include "host/lib/netclient.h"
#include "host/lib/options.h"
#include "host/lib/profile.h"
#include "host/lib/symbolizer.h"
#include "host/lib/walk.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define LIVE_DEFAULT_INTERVAL_NS NS_PER_S
#define LIVE_MIN_INTERVAL_NS (10 * NS_PER_MS)
#define LIVE_HEARTBEAT_NS NS_PER_S           /* send one after this long without sending */
#define LIVE_PEER_TIMEOUT_NS (5 * NS_PER_S)  /* an agent silent this long is gone */
#define LIVE_END_GRACE_NS (2 * NS_PER_S)     /* after the exit STATUS, wait this long for END */
#define LIVE_BYE_WAIT_NS NS_PER_S            /* after our BYE, take in what is still coming */
#define LIVE_SESSION_WAIT_NS (10 * NS_PER_S) /* START or ATTACH to SESSION */
#define LIVE_KEEP_MAX (64u << 20)            /* bytes kept in memory for a later `save` */
#define LIVE_PENDING_MAX (8u << 20)          /* CHUNK payloads held until SESSION names ours */
#define LIVE_EXITS_MAX 64
#define LIVE_FILTER_ADDRS_MAX 4096 /* addresses per only= or exclude= list */
#define LIVE_LINE_MAX 4096         /* one command line */
#define LIVE_WORDS_MAX 64          /* words in one command */
#define LIVE_ROWS_PLAIN 20         /* functions in a snapshot when not on a terminal */
#define LIVE_START_ARGS_MAX 256
#define LIVE_START_BYTES_MAX 65536u

static const char live_usage[] =
    "usage: layerprof live [options] -- <program> [<args>]\n"
    "   or: layerprof live [options] --attach PID\n"
    "\n"
    "Profiles a program on a target through its agent (layerprofd) and shows the\n"
    "flat profile as the trace arrives: the program is started by the agent, or an\n"
    "attachable program that runs already is traced.\n"
    "\n"
    "  -c, --connect ADDR    the agent: HOST:PORT or [IPV6]:PORT (default " NETCLIENT_DEFAULT_HOST
    ":" NETCLIENT_DEFAULT_PORT ")\n"
    "      --token-file F    authenticate with the token in F (first line)\n"
    "  -p, --attach PID      trace a running program instead of starting one\n"
    "  -i, --interval DUR    refresh the view every DUR (default 1s)\n"
    "  -o, --save DIR        write everything received as a trace directory\n"
    "  -d, --duration DUR    end the session after DUR\n"
    "      --format FMT      text (default) or json: one JSON object per refresh\n"
    "      --stopped         start with tracing off (command 'start' turns it on)\n"
    "  -F, --only FUNC       only calls inside FUNC (glob; repeatable)\n"
    "  -N, --exclude FUNC    leave out FUNC and what it calls (glob; repeatable)\n"
    "      --depth N         only calls up to N levels deep\n"
    "      --min-time DUR    leave out calls shorter than DUR (e.g. 10us)\n"
    "  -h, --help            this text\n"
    "\n"
    "Filters are applied by the runtime on the target; a filtered profile shows\n"
    "flat counts and times only (self time is unknown: callees may be missing).\n"
    "\n"
    "Commands, as lines on stdin (or keys on a terminal: s, t, f, w, q):\n"
    "  start | stop          turn tracing on or off\n"
    "  filter OPTIONS        new filters (-F, -N, --depth, --min-time); 'filter clear'\n"
    "  save DIR              save the trace from here on (with what was kept so far)\n"
    "  quit                  end the session (the program goes on untraced)\n"
    "\n"
    "Exit status: 0 the session ended (program exited, quit, --duration), 1 connection\n"
    "or agent failure, 2 usage.\n";

enum live_state {
	LIVE_CONNECTING, /* waiting for SESSION */
	LIVE_RUNNING,
	LIVE_CLOSING, /* BYE sent: taking in what is still coming */
	LIVE_DONE,    /* the session ended normally */
	LIVE_FAILED,  /* the agent or the connection failed */
};

enum live_prompt { PROMPT_NONE, PROMPT_FILTER, PROMPT_SAVE };

struct live_exit {
	uint32_t pid;
	int status; /* wait status; -1 unknown */
};

/* A growable string with a bound: the address lists of a CONTROL frame. */
struct live_text {
	char *p; /* owned, NUL-terminated when len > 0 */
	size_t len, cap;
};

/* The filters in force: patterns resolved to addresses whenever new code
 * becomes known. */
struct live_filter {
	struct filter_opts opts;
	char *words;               /* owned: the strings opts points into (NULL: argv) */
	struct live_text only, ex; /* the lists last sent */
	uint64_t maps_seen;        /* symbolizer_map_count when last resolved */
	bool active;
};

struct live_save {
	int fd; /* -1 when not saving */
	char dir[PATH_MAX];
	uint64_t bytes;
	bool failed;
};

struct live {
	/* options */
	const char *addr;
	const char *token_file;
	long attach_pid;
	char **argv;
	int argc;
	uint64_t interval_ns, duration_ns;
	bool json, stopped;
	const char *save_at_start;
	/* connection and session */
	struct netclient nc;
	enum live_state state;
	uint32_t session, pid;
	bool tracing;
	bool program_ended; /* the exit STATUS of the session's program came */
	bool end_seen;      /* the END chunk came: nothing more for the session */
	uint64_t ended_ns, closing_ns, session_wait_ns;
	struct live_exit exits[LIVE_EXITS_MAX];
	size_t nexits;
	uint64_t t0, last_rx, last_tx, next_draw;
	/* the trace */
	struct walk w;
	struct profile prof;
	struct walk_ops ops;
	bool walk_ended;
	uint64_t chunks, bytes, other_chunks, bad_chunks;
	uint64_t status_lost, trace_lost_seen, lost_at_ns;
	bool filtered_ever;
	/* CHUNK payloads ([u32 length][payload]...) that came before SESSION:
	 * the agent may send a new session's first chunks before naming it */
	uint8_t *pending;
	size_t pending_len, pending_cap;
	/* kept (until a save starts) and saved bytes */
	uint8_t *kept;
	size_t kept_len, kept_cap;
	bool kept_dropped;
	struct live_save save;
	struct live_filter filter;
	/* the terminal and stdin */
	bool tty_in, tty_out, raw;
	struct termios saved_tio;
	bool stdin_open;
	char line[LIVE_LINE_MAX];
	size_t line_len;
	bool line_too_long;
	enum live_prompt prompt;
	char note[512];
	struct json j;
};

static volatile sig_atomic_t quit_signal, resized;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		quit_signal = sig;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* A message about the session: shown in the view on a terminal, else
 * printed to stderr at once. */
static void live_say(struct live *lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void live_say(struct live *lv, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lv->note, sizeof(lv->note), fmt, ap);
	va_end(ap);
	if (!lv->tty_out) {
		fprintf(stderr, "layerprof live: %s\n", lv->note);
		fflush(stderr);
	}
}

/* ------------------------------------------------------------ strings */

static int text_add(struct live_text *t, const char *s, size_t max)
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

static void text_release(struct live_text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

static const char *text_str(const struct live_text *t)
{
	return t->len ? t->p : "";
}

/* Splits a command line into words: blanks separate, 'single' and "double"
 * quotes group, a backslash takes the next character.  Writes the words
 * into buf (as big as line) and their starts into words[max].  Returns the
 * number of words or -EINVAL (an open quote, too many words). */
static int split_words(const char *line, char *buf, char **words, int max)
{
	const char *p = line;
	char *o = buf;
	int n = 0;

	for (;;) {
		char quote = 0;

		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			return n;
		if (n == max)
			return -EINVAL;
		words[n++] = o;
		for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\r')); p++) {
			if (quote && *p == quote)
				quote = 0;
			else if (!quote && (*p == '\'' || *p == '"'))
				quote = *p;
			else if (*p == '\\' && quote != '\'' && p[1])
				*o++ = *++p;
			else
				*o++ = *p;
		}
		if (quote)
			return -EINVAL;
		*o++ = '\0';
	}
}

static const char *describe_status(int status, char *buf, size_t size)
{
	if (status < 0)
		snprintf(buf, size, "ended (exit status unknown)");
	else if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
		         WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "ended with wait status %d", status);
	return buf;
}

/* ------------------------------------------------------------ sending */

static int live_send(struct live *lv, uint8_t type, const void *payload, size_t len)
{
	int r = netclient_send(&lv->nc, type, payload, len);

	if (r) {
		fprintf(stderr, "layerprof live: %s\n", lv->nc.error);
		lv->state = LIVE_FAILED;
		return r;
	}
	lv->last_tx = mono_ns();
	return 0;
}

static int send_tracing(struct live *lv, bool on)
{
	char msg[32];
	int n = snprintf(msg, sizeof(msg), "tracing=%s\n", on ? "on" : "off");
	int r = live_send(lv, LP_FRAME_CONTROL, msg, (size_t)n);

	if (!r)
		lv->tracing = on;
	return r;
}

/* ------------------------------------------------------------ filters */

struct resolve {
	const struct filter_opts *opts;
	uint32_t image;
	struct live_text *only, *ex;
	size_t n_only, n_ex;
	int error;
};

static int resolve_one(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct resolve *rs = ctx;
	char entry[48];
	size_t i;

	snprintf(entry, sizeof(entry), "%" PRIu32 ":%" PRIx64, rs->image, addr);
	for (i = 0; i < rs->opts->n_only; i++) {
		if (classifier_match(rs->opts->only[i], name)) {
			if (rs->n_only == LIVE_FILTER_ADDRS_MAX)
				return rs->error = -E2BIG;
			if ((rs->n_only && (rs->error = text_add(rs->only, ",", SIZE_MAX))) ||
			    (rs->error = text_add(rs->only, entry, SIZE_MAX)))
				return rs->error;
			rs->n_only++;
			break;
		}
	}
	for (i = 0; i < rs->opts->n_exclude; i++) {
		if (classifier_match(rs->opts->exclude[i], name)) {
			if (rs->n_ex == LIVE_FILTER_ADDRS_MAX)
				return rs->error = -E2BIG;
			if ((rs->n_ex && (rs->error = text_add(rs->ex, ",", SIZE_MAX))) ||
			    (rs->error = text_add(rs->ex, entry, SIZE_MAX)))
				return rs->error;
			rs->n_ex++;
			break;
		}
	}
	(void)size;
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The functions matching the patterns, as <image>:<hex address> lists,
 * over every process image the trace has shown so far. */
static int filter_resolve(struct live *lv, struct live_text *only, struct live_text *ex)
{
	struct resolve rs = { .opts = &lv->filter.opts, .only = only, .ex = ex };
	uint32_t *images, n = 0, i;
	int r = 0;

	images = malloc((lv->w.nstreams + 1) * sizeof(*images));
	if (!images)
		return -ENOMEM;
	for (i = 0; i < lv->w.nstreams; i++)
		images[n++] = lv->w.streams[i]->image;
	if (n > 1)
		qsort(images, n, sizeof(*images), u32_cmp);
	for (i = 0; i < n && !r; i++) {
		if (i && images[i] == images[i - 1])
			continue;
		rs.image = images[i];
		r = symbolizer_foreach_function(lv->w.sym, images[i], resolve_one, &rs);
		if (r == -ENOENT)
			r = 0; /* no code known for it yet */
	}
	free(images);
	lv->filter.maps_seen = symbolizer_map_count(lv->w.sym);
	return r;
}

/* Sends the filters in force as one CONTROL frame; with `patterns_only`,
 * only when new code changed what the patterns match. */
static int filter_send(struct live *lv, bool patterns_only)
{
	struct live_filter *f = &lv->filter;
	struct live_text only = { 0 }, ex = { 0 }, msg = { 0 };
	char head[96];
	int r;

	if (!f->active) {
		r = live_send(lv, LP_FRAME_CONTROL, "filters=clear\n", 14);
		text_release(&f->only);
		text_release(&f->ex);
		return r;
	}
	r = filter_resolve(lv, &only, &ex);
	if (r == -E2BIG) {
		live_say(lv, "the patterns match more than %d functions: give narrower ones", LIVE_FILTER_ADDRS_MAX);
		goto out;
	}
	if (r)
		goto nomem;
	/* nothing matches the --only patterns yet (the code that has them is
	 * not known yet): an address no function has keeps everything out */
	if (f->opts.n_only && !only.len && text_add(&only, "0:0", SIZE_MAX))
		goto nomem;
	if (patterns_only && !strcmp(text_str(&only), text_str(&f->only)) && !strcmp(text_str(&ex), text_str(&f->ex)))
		goto out;
	snprintf(head, sizeof(head), "depth=%" PRIu32 "\nmin_ns=%" PRIu64 "\nonly=", f->opts.depth, f->opts.min_ns);
	if (text_add(&msg, head, LP_WIRE_MAX_PAYLOAD) || text_add(&msg, text_str(&only), LP_WIRE_MAX_PAYLOAD) ||
	    text_add(&msg, "\nexclude=", LP_WIRE_MAX_PAYLOAD) || text_add(&msg, text_str(&ex), LP_WIRE_MAX_PAYLOAD) ||
	    text_add(&msg, "\n", LP_WIRE_MAX_PAYLOAD))
		goto nomem;
	r = live_send(lv, LP_FRAME_CONTROL, msg.p, msg.len);
	if (!r) {
		text_release(&f->only);
		text_release(&f->ex);
		f->only = only;
		f->ex = ex;
		only = (struct live_text){ 0 };
		ex = (struct live_text){ 0 };
	}
	goto out;
nomem:
	live_say(lv, "out of memory resolving the filters");
	r = -ENOMEM;
out:
	text_release(&only);
	text_release(&ex);
	text_release(&msg);
	return r;
}

static void filter_describe(const struct live_filter *f, char *buf, size_t size)
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
		         format_duration(f->opts.min_ns, d, sizeof(d)));
}

/* Parses the options of a `filter` command (words[0] is "filter").
 * Returns 0 with *out set, or -EINVAL after saying why. */
static int filter_parse(struct live *lv, int argc, char **argv, struct filter_opts *out)
{
	static const struct option longopts[] = {
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	memset(out, 0, sizeof(*out));
	optind = 0; /* start getopt over */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+F:N:", longopts, NULL)) != -1) {
		if (c == OPT_TID) {
			live_say(lv, "filter: --tid is not applied on the target; use report --tid on a saved trace");
			goto bad;
		}
		if (c == '?' || c == ':') {
			live_say(lv, "filter: unknown option or missing value in '%s'", argv[optind - 1]);
			goto bad;
		}
		r = filter_opts_parse(out, c, optarg, "live");
		if (r != 1)
			goto bad; /* it said why */
	}
	if (optind < argc) {
		live_say(lv, "filter: unexpected '%s' (patterns go after -F or -N)", argv[optind]);
		goto bad;
	}
	opterr = 1;
	return 0;
bad:
	opterr = 1;
	return -EINVAL;
}

/* Makes opts (whose strings live in words, now owned) the filters in force
 * and sends them. */
static void filter_set(struct live *lv, const struct filter_opts *opts, char *words)
{
	struct live_filter *f = &lv->filter;
	char desc[512];

	free(f->words);
	f->words = words;
	f->opts = *opts;
	f->active = filter_opts_any(opts);
	if (f->active)
		lv->filtered_ever = true;
	if (lv->state == LIVE_CONNECTING || lv->state == LIVE_RUNNING)
		filter_send(lv, false);
	filter_describe(f, desc, sizeof(desc));
	if (f->active)
		live_say(lv, "filters: %s", desc);
	else
		live_say(lv, "filters cleared");
}

/* ------------------------------------------------------------ saving */

/* An existing trace directory is kept as DIR.old, as record does; an empty
 * directory is used; anything else is refused. */
static int save_prepare(const char *dir, char *err, size_t errlen)
{
	char data[PATH_MAX + 16], old[PATH_MAX + 16], oldata[PATH_MAX + 32];
	struct stat st;

	if (stat(dir, &st) == 0) {
		snprintf(data, sizeof(data), "%s/%s", dir, LP_TRACE_DATA);
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is not a directory", dir);
			return -EEXIST;
		}
		if (access(data, F_OK)) {
			if (rmdir(dir) == 0 || errno != ENOTEMPTY)
				goto create;
			snprintf(err, errlen, "'%s' exists and is not a layerprof trace", dir);
			return -EEXIST;
		}
		snprintf(old, sizeof(old), "%s.old", dir);
		snprintf(oldata, sizeof(oldata), "%s/%s", old, LP_TRACE_DATA);
		unlink(oldata);
		rmdir(old);
		if (rename(dir, old)) {
			snprintf(err, errlen, "cannot move '%s' to '%s': %s", dir, old, strerror(errno));
			return -errno;
		}
	}
create:
	if (mkdir(dir, 0755)) {
		snprintf(err, errlen, "cannot create trace '%s': %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void save_write(struct live *lv, const void *buf, size_t len)
{
	struct live_save *sv = &lv->save;
	int r;

	if (sv->fd < 0)
		return;
	r = write_all(sv->fd, buf, len);
	if (r) {
		live_say(lv, "cannot write trace '%s': %s; saving stopped", sv->dir, strerror(-r));
		close(sv->fd);
		sv->fd = -1;
		sv->failed = true;
		return;
	}
	sv->bytes += len;
}

/* Starts saving into dir: the file header, then what was kept.  Returns 0,
 * or -errno with err set. */
static int save_open(struct live *lv, const char *dir, char *err, size_t errlen)
{
	struct live_save *sv = &lv->save;
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char data[PATH_MAX + 16];
	int r;

	if (strlen(dir) >= sizeof(sv->dir)) {
		snprintf(err, errlen, "path '%s' too long", dir);
		return -ENAMETOOLONG;
	}
	r = save_prepare(dir, err, errlen);
	if (r)
		return r;
	snprintf(data, sizeof(data), "%s/%s", dir, LP_TRACE_DATA);
	sv->fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (sv->fd < 0) {
		snprintf(err, errlen, "cannot create trace '%s': %s", data, strerror(errno));
		return -errno;
	}
	strcpy(sv->dir, dir);
	sv->bytes = 0;
	sv->failed = false;
	trace_header_put(hdr);
	save_write(lv, hdr, sizeof(hdr));
	if (lv->kept_len)
		save_write(lv, lv->kept, lv->kept_len);
	if (lv->kept_dropped)
		live_say(lv, "saving to '%s' from now on: the first chunks received were not kept (over %u MiB)", dir,
		         LIVE_KEEP_MAX >> 20);
	else if (lv->kept_len)
		live_say(lv, "saving to '%s': what was received so far (%zu bytes) and what follows", dir,
		         lv->kept_len);
	else if (lv->session)
		live_say(lv, "saving to '%s'", dir); /* else said when the session begins */
	free(lv->kept);
	lv->kept = NULL;
	lv->kept_len = lv->kept_cap = 0;
	if (sv->fd < 0) {
		snprintf(err, errlen, "cannot write trace '%s'", dir);
		return -EIO;
	}
	return 0;
}

/* Keeps a received chunk in memory for a later `save`, within LIVE_KEEP_MAX. */
static void keep_chunk(struct live *lv, const uint8_t *buf, size_t len)
{
	if (lv->kept_dropped)
		return;
	if (lv->kept_len + len > lv->kept_cap) {
		size_t cap = lv->kept_cap ? lv->kept_cap : (1u << 20);
		uint8_t *p;

		while (cap < lv->kept_len + len)
			cap *= 2;
		if (cap > LIVE_KEEP_MAX || !(p = realloc(lv->kept, cap))) {
			free(lv->kept);
			lv->kept = NULL;
			lv->kept_len = lv->kept_cap = 0;
			lv->kept_dropped = true;
			return;
		}
		lv->kept = p;
		lv->kept_cap = cap;
	}
	memcpy(lv->kept + lv->kept_len, buf, len);
	lv->kept_len += len;
}

/* Ends the saved trace.  After a clean end without the agent's END chunk
 * (quit, --duration) one is added, so that readers see a closed recording;
 * after a failure none is, and readers say the recording was cut. */
static int save_close(struct live *lv, bool clean)
{
	struct live_save *sv = &lv->save;
	char end[128];
	int n, r = sv->failed ? -EIO : 0;

	if (sv->fd < 0)
		return r;
	if (clean && !lv->end_seen) {
		uint8_t hdr[LP_CHUNK_HEADER_SIZE];

		n = snprintf(end, sizeof(end), "closed_by=host\nevents=%" PRIu64 "\n", lv->w.events);
		chunk_header_put(hdr, LP_CHUNK_END, end, (uint32_t)n);
		save_write(lv, hdr, sizeof(hdr));
		save_write(lv, end, (size_t)n);
	}
	if (sv->fd >= 0 && (fsync(sv->fd) || close(sv->fd))) {
		fprintf(stderr, "layerprof live: cannot write trace '%s': %s\n", sv->dir, strerror(errno));
		r = -EIO;
	}
	sv->fd = -1;
	if (!clean)
		fprintf(stderr, "layerprof live: the trace received so far is in '%s' (%" PRIu64 " bytes)\n", sv->dir,
		        sv->bytes);
	return sv->failed ? -EIO : r;
}

/* Removes a saved trace that never got a session: only its header. */
static void save_discard(struct live *lv)
{
	char data[PATH_MAX + 16];

	if (lv->save.fd < 0)
		return;
	close(lv->save.fd);
	lv->save.fd = -1;
	snprintf(data, sizeof(data), "%s/%s", lv->save.dir, LP_TRACE_DATA);
	unlink(data);
	rmdir(lv->save.dir);
	lv->save.dir[0] = '\0';
}

/* ------------------------------------------------------------ the trace */

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct live *lv = ctx;

	if (ns > lv->lost_at_ns)
		lv->lost_at_ns = ns;
}

static void on_begin(void *ctx, struct walk_stream *s)
{
	profile_begin(&((struct live *)ctx)->prof, s);
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	profile_entry(&((struct live *)ctx)->prof, s, ns, addr, depth, flags);
}

static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	profile_call(&((struct live *)ctx)->prof, s, exit_ns, addr, duration_ns);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	profile_exit(&((struct live *)ctx)->prof, s, ns, addr, depth, entry_ns, flags);
}

static void add_exit(struct live *lv, uint32_t pid, int status)
{
	size_t i;

	for (i = 0; i < lv->nexits; i++) {
		if (lv->exits[i].pid == pid) {
			lv->exits[i].status = status;
			return;
		}
	}
	if (lv->nexits < LIVE_EXITS_MAX) {
		lv->exits[lv->nexits].pid = pid;
		lv->exits[lv->nexits].status = status;
		lv->nexits++;
	}
}

static uint64_t total_lost(const struct live *lv)
{
	return lv->w.lost > lv->status_lost ? lv->w.lost : lv->status_lost;
}

static void fail(struct live *lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct live *lv, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "layerprof live: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	lv->state = LIVE_FAILED;
}

/* Sends BYE and takes in, for a moment, what the agent still sends. */
static void begin_closing(struct live *lv)
{
	if (lv->state != LIVE_RUNNING && lv->state != LIVE_CONNECTING)
		return;
	if (live_send(lv, LP_FRAME_BYE, NULL, 0))
		return;
	lv->state = LIVE_CLOSING;
	lv->closing_ns = mono_ns();
}

/* Holds a CHUNK frame's payload until SESSION says whose it is. */
static void hold_chunk(struct live *lv, const struct wire_frame *f)
{
	size_t need = lv->pending_len + 4 + f->len;

	if (need > LIVE_PENDING_MAX) {
		lv->other_chunks++;
		return;
	}
	if (need > lv->pending_cap) {
		size_t cap = lv->pending_cap ? lv->pending_cap : 65536;
		uint8_t *p;

		while (cap < need)
			cap *= 2;
		p = realloc(lv->pending, cap);
		if (!p) {
			lv->other_chunks++;
			return;
		}
		lv->pending = p;
		lv->pending_cap = cap;
	}
	le32_put(lv->pending + lv->pending_len, f->len);
	memcpy(lv->pending + lv->pending_len + 4, f->payload, f->len);
	lv->pending_len = need;
}

static void on_chunk(struct live *lv, const struct wire_frame *f);

/* Handles the held chunks once the session is known (they were checked
 * when held; on_chunk checks them again). */
static void release_held(struct live *lv)
{
	size_t off = 0;

	while (off + 4 <= lv->pending_len && lv->state == LIVE_RUNNING) {
		struct wire_frame f = { .type = LP_FRAME_CHUNK };

		f.len = le32_get(lv->pending + off);
		f.payload = lv->pending + off + 4;
		if (f.len > lv->pending_len - off - 4)
			break;
		on_chunk(lv, &f);
		off += 4 + f.len;
	}
	free(lv->pending);
	lv->pending = NULL;
	lv->pending_len = lv->pending_cap = 0;
}

/* A CHUNK frame: session id, chunk header, payload.  Every size is checked
 * against the frame before use. */
static void on_chunk(struct live *lv, const struct wire_frame *f)
{
	struct chunk_info ci;
	uint32_t session;
	int r;

	if (f->len < 4 + LP_CHUNK_HEADER_SIZE) {
		fail(lv, "bad CHUNK frame from the agent at %s: %" PRIu32 " bytes", lv->nc.peer, f->len);
		return;
	}
	session = le32_get(f->payload);
	if (chunk_header_get(f->payload + 4, &ci) || ci.len != f->len - 4 - LP_CHUNK_HEADER_SIZE ||
	    chunk_verify(&ci, f->payload + 4 + LP_CHUNK_HEADER_SIZE)) {
		fail(lv, "bad chunk from the agent at %s (header, length or checksum)", lv->nc.peer);
		return;
	}
	if (!lv->session && lv->state == LIVE_CONNECTING) {
		hold_chunk(lv, f);
		return;
	}
	if (session != lv->session) {
		lv->other_chunks++; /* another host's session, still known to the agent */
		return;
	}
	lv->chunks++;
	lv->bytes += f->len - 4;
	if (lv->save.fd >= 0)
		save_write(lv, f->payload + 4, f->len - 4);
	else
		keep_chunk(lv, f->payload + 4, f->len - 4);
	if (ci.type == LP_CHUNK_END) {
		/* nothing more comes for the session; the exit STATUS, if the
		 * program exited, comes before our BYE is answered */
		lv->end_seen = true;
		begin_closing(lv);
		return;
	}
	if (lv->walk_ended)
		return;
	r = walk_feed(&lv->w, ci.type, f->payload + 4 + LP_CHUNK_HEADER_SIZE, ci.len);
	if (r == -ENOMEM) {
		fail(lv, "out of memory");
		return;
	}
	if (r)
		lv->bad_chunks++; /* its readable events are in; the rest is skipped */
	if (lv->filter.active && (lv->filter.opts.n_only || lv->filter.opts.n_exclude) &&
	    symbolizer_map_count(lv->w.sym) != lv->filter.maps_seen && lv->state == LIVE_RUNNING)
		filter_send(lv, true);
}

static void on_status(struct live *lv, const struct wire_frame *f)
{
	char val[64], what[160];
	unsigned long long v;
	uint32_t pid = lv->pid;
	int status = -1;

	if (!wire_kv_get(f->payload, f->len, "session", val, sizeof(val)) && strtoul(val, NULL, 10) != lv->session)
		return;
	if (wire_kv_get(f->payload, f->len, "event", val, sizeof(val)))
		return;
	if (!strcmp(val, "exit")) {
		if (!wire_kv_get(f->payload, f->len, "pid", val, sizeof(val)))
			pid = (uint32_t)strtoul(val, NULL, 10);
		if (!wire_kv_get(f->payload, f->len, "status", val, sizeof(val)))
			status = (int)strtol(val, NULL, 10);
		add_exit(lv, pid, status);
		live_say(lv, "process %" PRIu32 " %s", pid, describe_status(status, what, sizeof(what)));
		if (pid == lv->pid && !lv->program_ended) {
			lv->program_ended = true;
			lv->ended_ns = mono_ns();
			if (lv->end_seen)
				begin_closing(lv);
		}
	} else if (!strcmp(val, "lost")) {
		if (!wire_kv_get(f->payload, f->len, "lost", val, sizeof(val))) {
			v = strtoull(val, NULL, 10);
			lv->status_lost += v;
		}
		if (!wire_kv_get(f->payload, f->len, "time_ns", val, sizeof(val))) {
			v = strtoull(val, NULL, 10);
			if (v > lv->lost_at_ns)
				lv->lost_at_ns = v;
		}
	} else if (!strcmp(val, "tracing")) {
		if (!wire_kv_get(f->payload, f->len, "tracing", val, sizeof(val)))
			lv->tracing = !strcmp(val, "on");
	}
}

static void on_session(struct live *lv, const struct wire_frame *f)
{
	char val[32];

	if (lv->state != LIVE_CONNECTING) {
		fail(lv, "the agent at %s sent an unexpected SESSION frame", lv->nc.peer);
		return;
	}
	if (wire_kv_get(f->payload, f->len, "session", val, sizeof(val)) || !(lv->session = strtoul(val, NULL, 10))) {
		fail(lv, "the agent at %s sent a SESSION frame without a session id", lv->nc.peer);
		return;
	}
	if (!wire_kv_get(f->payload, f->len, "pid", val, sizeof(val)))
		lv->pid = (uint32_t)strtoul(val, NULL, 10);
	lv->state = LIVE_RUNNING;
	if (lv->save.fd >= 0)
		live_say(lv, "saving to '%s'", lv->save.dir);
	if (lv->attach_pid)
		live_say(lv, "attached to process %" PRIu32 " (session %" PRIu32 ")", lv->pid, lv->session);
	else
		live_say(lv, "started '%s' as process %" PRIu32 " (session %" PRIu32 ")", lv->argv[0], lv->pid,
		         lv->session);
	release_held(lv);
}

static void on_frame(struct live *lv, const struct wire_frame *f)
{
	char reason[256];
	size_t i, n = f->len < sizeof(reason) - 1 ? f->len : sizeof(reason) - 1;

	switch (f->type) {
	case LP_FRAME_CHUNK:
		on_chunk(lv, f);
		break;
	case LP_FRAME_STATUS:
		on_status(lv, f);
		break;
	case LP_FRAME_SESSION:
		on_session(lv, f);
		break;
	case LP_FRAME_HEARTBEAT:
		break;
	case LP_FRAME_BYE:
		if (lv->state == LIVE_CLOSING) {
			lv->state = LIVE_DONE;
		} else {
			fail(lv, "the agent at %s ended the connection", lv->nc.peer);
		}
		break;
	case LP_FRAME_ERROR:
		for (i = 0; i < n; i++)
			reason[i] = f->payload[i] >= 0x20 && f->payload[i] < 0x7f ? (char)f->payload[i] : ' ';
		reason[n] = '\0';
		if (lv->state != LIVE_CONNECTING)
			fail(lv, "the agent at %s reported an error: %s", lv->nc.peer, reason);
		else if (lv->attach_pid)
			fail(lv, "cannot attach to process %ld: %s", lv->attach_pid, reason);
		else
			fail(lv, "cannot start '%s': %s", lv->argv[0], reason);
		break;
	default:
		fail(lv, "the agent at %s sent an unexpected %s frame", lv->nc.peer, wire_frame_name(f->type));
		break;
	}
}

/* Reads what the socket holds and handles every whole frame. */
static void on_socket(struct live *lv)
{
	struct wire_frame f;
	int r = netclient_receive(&lv->nc);

	if (r == -ECONNRESET) {
		if (lv->state == LIVE_CLOSING) {
			lv->state = LIVE_DONE; /* closed after our BYE: fine */
			return;
		}
		fail(lv, "connection to the agent lost (%s)", lv->nc.peer);
		return;
	}
	if (r < 0) {
		fail(lv, "%s", lv->nc.error);
		return;
	}
	if (r > 0)
		lv->last_rx = mono_ns();
	while (lv->state < LIVE_DONE && (r = netclient_next(&lv->nc, &f)) > 0)
		on_frame(lv, &f);
	if (r < 0 && lv->state < LIVE_DONE)
		fail(lv, "%s", lv->nc.error);
}

/* ------------------------------------------------------------ the view */

static const char *rel_time(const struct live *lv, uint64_t ns, char *buf, size_t size)
{
	char d[32];

	if (!ns)
		snprintf(buf, size, "an unknown time");
	else if (lv->w.first_ns && ns >= lv->w.first_ns)
		snprintf(buf, size, "+%s", format_duration(ns - lv->w.first_ns, d, sizeof(d)));
	else
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	return buf;
}

static bool live_filtered(const struct live *lv)
{
	return lv->filtered_ever || lv->w.filtered_at_record;
}

/* Processes that ended: the agent's word for the program, the trace's for
 * its children. */
static void collect_exits(struct live *lv)
{
	uint32_t i;

	for (i = 0; i < lv->w.nstreams; i++) {
		const struct walk_stream *s = lv->w.streams[i];
		size_t k;

		if (!s->exited || s->tid != s->pid)
			continue;
		for (k = 0; k < lv->nexits && lv->exits[k].pid != s->pid; k++)
			;
		if (k == lv->nexits)
			add_exit(lv, s->pid, (int)s->status);
	}
}

static void view_json(struct live *lv, const struct profile_rows *rows, bool final)
{
	struct json *j = &lv->j;
	bool filtered = live_filtered(lv);
	char desc[512];
	size_t i;

	json_init(j, stdout);
	json_object_begin(j, NULL);
	json_u64(j, "time_ns", mono_ns() - lv->t0);
	json_bool(j, "final", final);
	json_str(j, "agent", lv->nc.agent);
	json_str(j, "agent_caps", lv->nc.caps);
	json_u64(j, "session", lv->session);
	json_u64(j, "pid", lv->pid);
	json_bool(j, "tracing", lv->tracing);
	json_u64(j, "events", lv->w.events);
	json_u64(j, "chunks", lv->chunks);
	json_u64(j, "lost_events", total_lost(lv));
	if (lv->lost_at_ns)
		json_u64(j, "lost_at_ns", lv->lost_at_ns);
	else
		json_null(j, "lost_at_ns");
	json_bool(j, "filtered", filtered);
	filter_describe(&lv->filter, desc, sizeof(desc));
	json_str(j, "filters", desc);
	if (lv->save.fd >= 0 || lv->save.dir[0])
		json_str(j, "saving", lv->save.dir);
	else
		json_null(j, "saving");
	json_array_begin(j, "exited");
	for (i = 0; i < lv->nexits; i++) {
		int st = lv->exits[i].status;

		json_object_begin(j, NULL);
		json_u64(j, "pid", lv->exits[i].pid);
		json_i64(j, "status", st);
		if (st >= 0 && WIFEXITED(st))
			json_u64(j, "exit_code", (uint64_t)WEXITSTATUS(st));
		else if (st >= 0 && WIFSIGNALED(st))
			json_u64(j, "signal", (uint64_t)WTERMSIG(st));
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "functions");
	for (i = 0; i < rows->n; i++) {
		const struct profile_row *r = &rows->row[i];

		json_object_begin(j, NULL);
		json_str(j, "name", r->name);
		json_u64(j, "calls", r->calls);
		json_u64(j, "total_ns", r->total_ns);
		if (filtered)
			json_null(j, "self_ns");
		else
			json_u64(j, "self_ns", r->self_ns);
		json_u64(j, "avg_ns", profile_row_avg(r));
		json_u64(j, "min_ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		json_u64(j, "max_ns", r->max_ns);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
	json_finish(j);
}

/* The lines above the table: connection, state, counts, messages. */
static void view_header(struct live *lv, FILE *out, const char *eol)
{
	char a[32], b[64], what[160];
	size_t i;

	fprintf(out, "layerprof live  %s  session %" PRIu32 "  pid %" PRIu32 "  %s%s", lv->nc.peer, lv->session,
	        lv->pid, format_duration(mono_ns() - lv->t0, a, sizeof(a)), eol);
	fprintf(out, "tracing %s  %" PRIu64 " events  %" PRIu64 " chunks", lv->tracing ? "on" : "off", lv->w.events,
	        lv->chunks);
	if (lv->save.fd >= 0)
		fprintf(out, "  saving to '%s' (%" PRIu64 " bytes)", lv->save.dir, lv->save.bytes);
	fprintf(out, "%s", eol);
	if (total_lost(lv))
		fprintf(out, "%" PRIu64 " events lost (at %s)%s", total_lost(lv),
		        rel_time(lv, lv->lost_at_ns, b, sizeof(b)), eol);
	for (i = 0; i < lv->nexits; i++)
		fprintf(out, "process %" PRIu32 " %s%s", lv->exits[i].pid,
		        describe_status(lv->exits[i].status, what, sizeof(what)), eol);
	if (lv->bad_chunks)
		fprintf(out, "%" PRIu64 " chunks held undecodable events (skipped)%s", lv->bad_chunks, eol);
	if (lv->filter.active) {
		char desc[512];

		filter_describe(&lv->filter, desc, sizeof(desc));
		fprintf(out, "filters: %s%s", desc, eol);
	}
	if (live_filtered(lv))
		fprintf(out, "call tree hidden: filtered profiling leaves gaps in the call paths%s", eol);
}

static void view_table(struct live *lv, const struct profile_rows *rows, size_t max, int width, FILE *out,
                       const char *eol)
{
	bool filtered = live_filtered(lv);
	char a[32], b[32], c[32], d[32];
	size_t i;

	fprintf(out, "%12s %12s %10s %12s %12s  %s%s", "Total", "Self", "Calls", "Avg", "Max", "Function", eol);
	for (i = 0; i < rows->n && i < max; i++) {
		const struct profile_row *r = &rows->row[i];
		int room = width > 66 ? width - 66 : 10;

		fprintf(out, "%12s %12s %10" PRIu64 " %12s %12s  %.*s%s", format_duration(r->total_ns, a, sizeof(a)),
		        filtered ? "-" : format_duration(r->self_ns, b, sizeof(b)), r->calls,
		        format_duration(profile_row_avg(r), c, sizeof(c)), format_duration(r->max_ns, d, sizeof(d)),
		        width ? room : INT_MAX, r->name, eol);
	}
	if (rows->n > max)
		fprintf(out, "(%zu more functions)%s", rows->n - max, eol);
}

static void view_text(struct live *lv, const struct profile_rows *rows, bool final)
{
	struct winsize ws = { 0 };
	int height = 0, width = 0;
	size_t max = LIVE_ROWS_PLAIN;

	if (lv->tty_out && !final) {
		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
			height = ws.ws_row;
			width = ws.ws_col;
		}
		max = height > 14 ? (size_t)height - 12 : 2;
		/* home, then each line cleared as it is written: no flicker */
		fputs("\033[H", stdout);
		view_header(lv, stdout, "\033[K\n");
		fputs("\033[K\n", stdout);
		view_table(lv, rows, max, width, stdout, "\033[K\n");
		fputs("\033[K\n", stdout);
		if (lv->prompt == PROMPT_FILTER)
			printf("filter> %.*s\033[K", (int)lv->line_len, lv->line);
		else if (lv->prompt == PROMPT_SAVE)
			printf("save to> %.*s\033[K", (int)lv->line_len, lv->line);
		else
			printf("keys: s start  t stop  f filter  w save  q quit   %s\033[K", lv->note);
		fputs("\033[J", stdout);
	} else {
		printf("--- %s%s\n", final ? "final " : "", "profile");
		view_header(lv, stdout, "\n");
		printf("\n");
		view_table(lv, rows, final ? SIZE_MAX : max, 0, stdout, "\n");
		printf("\n");
	}
	fflush(stdout);
}

static void live_draw(struct live *lv, bool final)
{
	static const struct profile_order by_total = { .keys = { PROFILE_TOTAL }, .nkeys = 1 };
	struct profile_rows rows;

	collect_exits(lv);
	if (profile_collect(&lv->w, 0, &by_total, &rows)) {
		live_say(lv, "out of memory drawing the profile");
		return;
	}
	if (lv->json) {
		view_json(lv, &rows, final);
		fflush(stdout);
	} else {
		view_text(lv, &rows, final);
	}
	profile_rows_release(&rows);
}

/* ------------------------------------------------------------ commands */

static void command_save(struct live *lv, const char *dir)
{
	char err[PATH_MAX + 128];

	if (lv->save.fd >= 0) {
		live_say(lv, "already saving to '%s'", lv->save.dir);
		return;
	}
	if (save_open(lv, dir, err, sizeof(err)))
		live_say(lv, "cannot save: %s", err);
}

static void command_filter(struct live *lv, const char *line)
{
	char *buf = malloc(strlen(line) + 1), *words[LIVE_WORDS_MAX];
	struct filter_opts opts;
	char desc[512];
	int n;

	if (!buf) {
		live_say(lv, "out of memory");
		return;
	}
	n = split_words(line, buf, words, LIVE_WORDS_MAX);
	if (n < 0) {
		live_say(lv, "filter: unbalanced quotes or too many words");
		free(buf);
		return;
	}
	if (n == 1) {
		filter_describe(&lv->filter, desc, sizeof(desc));
		live_say(lv, "filters: %s", lv->filter.active ? desc : "none");
		free(buf);
		return;
	}
	if (n == 2 && !strcmp(words[1], "clear")) {
		memset(&opts, 0, sizeof(opts));
		filter_set(lv, &opts, NULL);
		free(buf);
		return;
	}
	if (filter_parse(lv, n, words, &opts)) {
		free(buf);
		return;
	}
	filter_set(lv, &opts, buf);
}

static void command_run(struct live *lv, const char *line)
{
	char buf[LIVE_LINE_MAX], *words[LIVE_WORDS_MAX];
	int n = split_words(line, buf, words, LIVE_WORDS_MAX);

	if (n <= 0) {
		if (n < 0)
			live_say(lv, "unbalanced quotes or too many words");
		return;
	}
	if (!strcmp(words[0], "start") || !strcmp(words[0], "stop")) {
		if (n > 1)
			live_say(lv, "%s takes no arguments", words[0]);
		else if (lv->state == LIVE_RUNNING && !send_tracing(lv, !strcmp(words[0], "start")))
			live_say(lv, "tracing %s", lv->tracing ? "on" : "off");
	} else if (!strcmp(words[0], "filter")) {
		command_filter(lv, line);
	} else if (!strcmp(words[0], "save")) {
		if (n != 2)
			live_say(lv, "usage: save DIR");
		else
			command_save(lv, words[1]);
	} else if (!strcmp(words[0], "quit") || !strcmp(words[0], "q") || !strcmp(words[0], "exit")) {
		begin_closing(lv);
	} else if (!strcmp(words[0], "help")) {
		live_say(lv, "commands: start, stop, filter OPTIONS, filter clear, save DIR, quit");
	} else {
		live_say(lv, "unknown command '%s' (start, stop, filter OPTIONS, filter clear, save DIR, quit)",
		         words[0]);
	}
}

/* One key on a terminal in raw mode: a command, or editing of a prompt. */
static void on_key(struct live *lv, unsigned char k)
{
	char cmd[LIVE_LINE_MAX + 16];

	if (lv->prompt != PROMPT_NONE) {
		if (k == '\r' || k == '\n') {
			snprintf(cmd, sizeof(cmd), "%s %.*s", lv->prompt == PROMPT_FILTER ? "filter" : "save",
			         (int)lv->line_len, lv->line);
			lv->prompt = PROMPT_NONE;
			lv->line_len = 0;
			command_run(lv, cmd);
		} else if (k == 0x7f || k == '\b') {
			if (lv->line_len)
				lv->line_len--;
		} else if (k == 0x1b) {
			lv->prompt = PROMPT_NONE; /* escape: never mind */
			lv->line_len = 0;
		} else if (k >= 0x20 && k < 0x7f && lv->line_len < sizeof(lv->line) - 1) {
			lv->line[lv->line_len++] = (char)k;
		}
		return;
	}
	switch (k) {
	case 's':
		command_run(lv, "start");
		break;
	case 't':
		command_run(lv, "stop");
		break;
	case 'f':
		lv->prompt = PROMPT_FILTER;
		break;
	case 'w':
		lv->prompt = PROMPT_SAVE;
		break;
	case 'q':
		command_run(lv, "quit");
		break;
	default:
		break;
	}
}

/* Takes what stdin holds: keys on a terminal, command lines otherwise. */
static void on_stdin(struct live *lv)
{
	char buf[1024];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	ssize_t i;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		lv->stdin_open = false; /* no more commands; the session goes on */
		return;
	}
	for (i = 0; i < n; i++) {
		if (lv->raw) {
			on_key(lv, (unsigned char)buf[i]);
			continue;
		}
		if (buf[i] != '\n') {
			if (lv->line_len < sizeof(lv->line) - 1)
				lv->line[lv->line_len++] = buf[i];
			else
				lv->line_too_long = true;
			continue;
		}
		lv->line[lv->line_len] = '\0';
		if (lv->line_too_long)
			live_say(lv, "command line too long (at most %d bytes)", LIVE_LINE_MAX - 1);
		else
			command_run(lv, lv->line);
		lv->line_len = 0;
		lv->line_too_long = false;
	}
	if (lv->raw && lv->tty_out && !lv->json)
		live_draw(lv, false);
}

static void terminal_raw(struct live *lv)
{
	struct termios t;

	if (!lv->tty_in || tcgetattr(STDIN_FILENO, &lv->saved_tio))
		return;
	t = lv->saved_tio;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(STDIN_FILENO, TCSANOW, &t))
		lv->raw = true;
}

static void terminal_restore(struct live *lv)
{
	if (lv->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &lv->saved_tio);
	lv->raw = false;
	if (lv->tty_out && !lv->json)
		fputs("\n", stdout);
}

/* ------------------------------------------------------------ the session */

static int send_start(struct live *lv)
{
	struct live_text args = { 0 };
	int i, r;

	if (lv->attach_pid) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "pid=%ld\n", lv->attach_pid);

		return live_send(lv, LP_FRAME_ATTACH, msg, (size_t)n);
	}
	/* NUL-terminated strings back to back: text_add keeps each NUL */
	for (i = 0; i < lv->argc; i++) {
		r = text_add(&args, lv->argv[i], LIVE_START_BYTES_MAX);
		if (r) {
			text_release(&args);
			fail(lv, "the command line is too long for the agent (at most %u bytes)", LIVE_START_BYTES_MAX);
			return r;
		}
		args.len++; /* past the NUL */
	}
	r = live_send(lv, LP_FRAME_START, args.p, args.len);
	text_release(&args);
	return r;
}

static int load_token(const char *path, char *token, size_t size)
{
	bool warn = false;
	int r = auth_token_load(path, token, size, &warn);

	if (r == -EINVAL) {
		fprintf(stderr, "layerprof live: token file '%s' holds no usable token (one line of 1 to %u bytes)\n",
		        path, AUTH_TOKEN_MAX);
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "layerprof live: cannot read token file '%s': %s\n", path, strerror(-r));
		return r;
	}
	if (warn)
		fprintf(stderr, "layerprof live: warning: token file '%s' is readable by other users\n", path);
	return r;
}

/* Connects and authenticates.  Returns 0 or an exit code. */
static int live_connect(struct live *lv)
{
	char token[AUTH_TOKEN_MAX + 2];
	int len = 0, r;

	if (lv->token_file) {
		len = load_token(lv->token_file, token, sizeof(token));
		if (len < 0)
			return LP_EXIT_FAILURE;
	}
	r = netclient_connect(&lv->nc, lv->addr);
	if (!r)
		r = netclient_handshake(&lv->nc, lv->token_file ? token : NULL, (size_t)len);
	explicit_bzero(token, sizeof(token));
	if (r == -EACCES) {
		fprintf(stderr, "layerprof live: agent refused the connection: %s\n", lv->nc.error);
		return LP_EXIT_FAILURE;
	}
	if (r) {
		fprintf(stderr, "layerprof live: %s\n", lv->nc.error);
		return r == -EINVAL ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
	}
	lv->last_rx = lv->last_tx = mono_ns();
	return 0;
}

/* What the poll loop should wait for next, in ms. */
static int next_timeout(const struct live *lv, uint64_t now)
{
	uint64_t next = lv->last_tx + LIVE_HEARTBEAT_NS;

	if (lv->last_rx + LIVE_PEER_TIMEOUT_NS < next)
		next = lv->last_rx + LIVE_PEER_TIMEOUT_NS;
	if (lv->state == LIVE_RUNNING && lv->next_draw < next)
		next = lv->next_draw;
	if (lv->duration_ns && lv->t0 + lv->duration_ns < next)
		next = lv->t0 + lv->duration_ns;
	if (lv->program_ended && lv->ended_ns + LIVE_END_GRACE_NS < next)
		next = lv->ended_ns + LIVE_END_GRACE_NS;
	if (lv->state == LIVE_CLOSING && lv->closing_ns + LIVE_BYE_WAIT_NS < next)
		next = lv->closing_ns + LIVE_BYE_WAIT_NS;
	if (lv->state == LIVE_CONNECTING && lv->session_wait_ns < next)
		next = lv->session_wait_ns;
	return next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS);
}

/* The timers: heartbeat, silence, refresh, --duration, the end grace. */
static void on_time(struct live *lv, uint64_t now)
{
	if (now - lv->last_rx >= LIVE_PEER_TIMEOUT_NS) {
		fail(lv, "agent at %s stopped responding", lv->nc.peer);
		return;
	}
	if (lv->state == LIVE_CONNECTING && now >= lv->session_wait_ns) {
		fail(lv, "the agent at %s did not answer %s", lv->nc.peer, lv->attach_pid ? "ATTACH" : "START");
		return;
	}
	if (lv->state == LIVE_CLOSING && now - lv->closing_ns >= LIVE_BYE_WAIT_NS) {
		lv->state = LIVE_DONE; /* no BYE back: fine, we are done */
		return;
	}
	if (now - lv->last_tx >= LIVE_HEARTBEAT_NS && live_send(lv, LP_FRAME_HEARTBEAT, NULL, 0))
		return;
	if (lv->state == LIVE_RUNNING && lv->duration_ns && now - lv->t0 >= lv->duration_ns) {
		live_say(lv, "--duration reached");
		begin_closing(lv);
	}
	if (lv->state == LIVE_RUNNING && lv->program_ended && now - lv->ended_ns >= LIVE_END_GRACE_NS)
		begin_closing(lv); /* the agent sent no END: end anyway */
	if (lv->state == LIVE_RUNNING && now >= lv->next_draw) {
		live_draw(lv, false);
		lv->next_draw = now + lv->interval_ns;
	}
}

static void live_loop(struct live *lv)
{
	while (lv->state < LIVE_DONE) {
		struct pollfd pfd[2] = { { .fd = lv->nc.fd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
		uint64_t now = mono_ns();
		int r;

		if (quit_signal) {
			quit_signal = 0;
			if (lv->state == LIVE_CLOSING)
				break;
			live_say(lv, "interrupted: ending the session");
			begin_closing(lv);
			continue;
		}
		if (resized) {
			resized = 0;
			if (lv->tty_out && !lv->json && lv->state == LIVE_RUNNING)
				live_draw(lv, false);
		}
		if (lv->stdin_open && lv->state == LIVE_RUNNING)
			pfd[1].fd = STDIN_FILENO;
		r = poll(pfd, 2, next_timeout(lv, now));
		if (r < 0 && errno != EINTR) {
			fail(lv, "poll: %s", strerror(errno));
			break;
		}
		if (r > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			on_socket(lv);
		if (r > 0 && lv->state == LIVE_RUNNING && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			on_stdin(lv);
		if (lv->state < LIVE_DONE)
			on_time(lv, mono_ns());
	}
}

/* The summary after the session, on stderr. */
static void live_summary(struct live *lv)
{
	char b[64];

	if (total_lost(lv))
		fprintf(stderr, "layerprof live: warning: %" PRIu64 " events lost (the last at %s)\n", total_lost(lv),
		        rel_time(lv, lv->lost_at_ns, b, sizeof(b)));
	if (lv->bad_chunks)
		fprintf(stderr, "layerprof live: warning: %" PRIu64 " chunks held undecodable events\n",
		        lv->bad_chunks);
}

static int parse_options(struct live *lv, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "attach", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "save", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "stopped", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	char *end, host[256], port[16];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+c:p:i:o:d:hF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			lv->addr = optarg;
			break;
		case 'T':
			lv->token_file = optarg;
			break;
		case 'p':
			errno = 0;
			lv->attach_pid = strtol(optarg, &end, 10);
			if (errno || *end || lv->attach_pid <= 0 || lv->attach_pid > INT_MAX) {
				fprintf(stderr, "layerprof live: invalid --attach '%s': expected a process id\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case 'i':
			if (parse_duration(optarg, &lv->interval_ns) || lv->interval_ns < LIVE_MIN_INTERVAL_NS) {
				fprintf(stderr,
				        "layerprof live: invalid --interval '%s': expected a duration from 10ms\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			lv->save_at_start = optarg;
			break;
		case 'd':
			if (parse_duration(optarg, &lv->duration_ns) || !lv->duration_ns) {
				fprintf(stderr,
				        "layerprof live: invalid --duration '%s': expected a duration like 10s\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof live: invalid --format '%s': text or json\n", optarg);
				return -EINVAL;
			}
			lv->json = !strcmp(optarg, "json");
			break;
		case 'S':
			lv->stopped = true;
			break;
		case 'h':
			fputs(live_usage, stdout);
			return 1;
		case OPT_TID:
			fprintf(stderr, "layerprof live: --tid is not applied on the target; use report --tid on a "
			                "saved trace\n");
			return -EINVAL;
		default:
			r = filter_opts_parse(&lv->filter.opts, c, optarg, "live");
			if (r == 1)
				break;
			if (r == 0)
				fputs(live_usage, stderr);
			return -EINVAL;
		}
	}
	if (netclient_split_address(lv->addr, host, sizeof(host), port, sizeof(port))) {
		fprintf(stderr, "layerprof live: invalid --connect '%s': expected HOST:PORT or [IPV6]:PORT\n",
		        lv->addr);
		return -EINVAL;
	}
	lv->argv = argv + optind;
	lv->argc = argc - optind;
	if (lv->attach_pid && lv->argc) {
		fprintf(stderr, "layerprof live: --attach and a program to start exclude each other\n");
		return -EINVAL;
	}
	if (!lv->attach_pid && !lv->argc) {
		fprintf(stderr, "layerprof live: no program to start and no --attach PID\n");
		fputs(live_usage, stderr);
		return -EINVAL;
	}
	if (lv->argc > LIVE_START_ARGS_MAX) {
		fprintf(stderr, "layerprof live: too many arguments for the agent (at most %d)\n", LIVE_START_ARGS_MAX);
		return -EINVAL;
	}
	return 0;
}

int cmd_live(int argc, char **argv)
{
	struct live *lv = calloc(1, sizeof(*lv));
	struct sigaction sa = { .sa_handler = on_signal };
	char err[PATH_MAX + 128];
	int code = LP_EXIT_FAILURE, r;

	if (!lv) {
		fprintf(stderr, "layerprof live: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	lv->addr = NETCLIENT_DEFAULT_HOST ":" NETCLIENT_DEFAULT_PORT;
	lv->interval_ns = LIVE_DEFAULT_INTERVAL_NS;
	lv->save.fd = -1;
	netclient_init(&lv->nc);
	r = parse_options(lv, argc, argv);
	if (r) {
		code = r > 0 ? LP_EXIT_OK : LP_EXIT_USAGE;
		goto out;
	}
	lv->filter.active = filter_opts_any(&lv->filter.opts);
	lv->filtered_ever = lv->filter.active;
	/* the runtime filters; the host shows what arrives */
	if (walk_open(&lv->w, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, "layerprof live: out of memory\n");
		goto out;
	}
	profile_init(&lv->prof);
	lv->ops = (struct walk_ops){
		.ctx = lv, .begin = on_begin, .entry = on_entry, .exit = on_exit_ev, .lost = on_lost, .call = on_call
	};
	walk_begin(&lv->w, &lv->ops);

	code = live_connect(lv);
	if (code)
		goto out;
	code = LP_EXIT_FAILURE;
	/* the trace directory is made before anything runs, so that a bad one
	 * stops us first */
	if (lv->save_at_start && save_open(lv, lv->save_at_start, err, sizeof(err))) {
		fprintf(stderr, "layerprof live: cannot save: %s\n", err);
		goto out;
	}
	lv->t0 = mono_ns();
	lv->tracing = true;
	lv->state = LIVE_CONNECTING;
	lv->session_wait_ns = lv->t0 + LIVE_SESSION_WAIT_NS;
	lv->next_draw = lv->t0 + lv->interval_ns;
	/* settings first, so that the new session starts with them */
	if ((lv->stopped && send_tracing(lv, false)) || (lv->filter.active && filter_send(lv, false)) || send_start(lv))
		goto out;

	lv->tty_in = isatty(STDIN_FILENO);
	lv->tty_out = isatty(STDOUT_FILENO) && !lv->json;
	lv->stdin_open = true;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	terminal_raw(lv);
	if (lv->tty_out)
		fputs("\033[H\033[2J", stdout);
	live_loop(lv);
	terminal_restore(lv);

	if (!lv->session)
		save_discard(lv); /* nothing ran: no trace either */
	if (lv->session) {
		walk_end(&lv->w);
		lv->walk_ended = true;
		live_draw(lv, true);
	}
	if (lv->state == LIVE_DONE)
		code = LP_EXIT_OK;
	if (lv->end_seen && !lv->program_ended)
		live_say(lv, "the agent closed the session");
	if (lv->tty_out && lv->note[0] && lv->state == LIVE_DONE)
		fprintf(stderr, "layerprof live: %s\n", lv->note);
	live_summary(lv);
	if (save_close(lv, lv->state == LIVE_DONE))
		code = LP_EXIT_FAILURE;
	if (lv->prof.oom) {
		fprintf(stderr, "layerprof live: out of memory: the profile misses some calls\n");
		code = LP_EXIT_FAILURE;
	}
out:
	if (!lv->session)
		save_discard(lv);
	if (lv->save.fd >= 0)
		close(lv->save.fd);
	netclient_release(&lv->nc);
	profile_release(&lv->prof);
	walk_release(&lv->w);
	free(lv->filter.words);
	text_release(&lv->filter.only);
	text_release(&lv->filter.ex);
	free(lv->kept);
	free(lv->pending);
	free(lv);
	return code;
}
