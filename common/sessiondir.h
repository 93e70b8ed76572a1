/* Directories for session state in a place every user may write (/dev/shm,
 * /tmp): each user's private base directory, the agent's attach directory,
 * unpredictable session names inside them, and the removal of sessions left
 * by killed recorders and agents.  A name another user holds is never used
 * (another one is chosen, so that nobody can stop a recorder by taking its
 * name first), no link is followed, and only the caller's own entries are
 * ever removed.  Used by `layerprof record` and by the agent; C11 and libc
 * only.
 *
 * Layout (docs/format.md, "Session directory"):
 *   <parent>/layerprof-u<euid>/             the caller's base, mode 0700
 *   <parent>/layerprof-u<euid>.XXXXXX/      the same when that name is taken
 *   <base>/<kind>-<pid>-<16 hex digits>/    one session (drain_new makes it):
 *                                           kind "rec" (record), "agent";
 *                                           pid: the recorder or agent */
#ifndef LP_SESSIONDIR_H
#define LP_SESSIONDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SESSIONDIR_PATH_MAX 400u /* a base directory's path, NUL included */
#define SESSIONDIR_NAME_MAX 64u  /* a session's name in its base, NUL included */
#define SESSIONDIR_KIND_MAX 16u  /* a session kind, NUL included */
#define SESSIONDIR_PREFIX "layerprof-u"
#define SESSIONDIR_RANDOM_BYTES 8 /* of a session name: 16 hex digits */

/* The modes sessiondir_open gives a directory it makes. */
/* A session of a recorder names its trace directory in this file (one
 * line, the absolute path); the trace directory holds the recorder's note
 * SESSIONDIR_TRACE_NOTE, with a line "session=<the session's path>", until
 * the trace is complete (`layerprof recover` completes a killed recorder's) */
#define SESSIONDIR_TRACE_FILE "trace"
#define SESSIONDIR_TRACE_NOTE "recording"
#define SESSIONDIR_PRIVATE 0700 /* the caller's sessions */
#define SESSIONDIR_SHARED 01777 /* every user may add entries, sticky as /tmp */

struct sessiondir {
	int fd;                           /* the directory, O_DIRECTORY; -1: none */
	char path[SESSIONDIR_PATH_MAX];   /* its path */
	bool fallback;                    /* the name asked for was taken: path is another */
	char wanted[SESSIONDIR_PATH_MAX]; /* with fallback: the name asked for */
	bool taken_not_dir;               /* with fallback: the name is not a directory (a link, a file) */
	uid_t taken_by;                   /* with fallback and a directory there: its owner */
};

/* Opens the directory `path`, made with `mode` (SESSIONDIR_PRIVATE or
 * SESSIONDIR_SHARED) when missing, never through a link, and checks that
 * it is a directory of the caller's effective uid that no other user may
 * write to (SESSIONDIR_SHARED: sticky), correcting the mode of one of its
 * own.  When the name is taken (another user's directory, a link, a file),
 * opens "<path>.XXXXXX" instead: one that passes the same checks left by an
 * earlier call, else a new one (mkdtemp); sd->fallback then tells, for a
 * warning.  Returns 0 or -errno (sd->fd is -1 then).  Release with
 * sessiondir_release. */
int sessiondir_open(struct sessiondir *sd, const char *path, unsigned mode);
/* The caller's private base: <parent>/layerprof-u<euid>, parent being
 * /dev/shm when the caller may write there, else /tmp. */
int sessiondir_open_private(struct sessiondir *sd);
/* With sd->fallback: "'<wanted>' belongs to uid N: using '<path>' instead"
 * (or "is not a directory"), for the caller's warning.  Returns buf. */
const char *sessiondir_fallback_why(const struct sessiondir *sd, char *buf, size_t size);
/* Closes the directory.  Accepts a zeroed struct only after sessiondir_open
 * set it up; the directory itself stays. */
void sessiondir_release(struct sessiondir *sd);

/* True when the open directory `fd` is a directory owned by `uid` that no
 * other user may enter (mode 0700 or less), or, when `shared`, that no
 * other user may write to unless it is sticky (others then only add and
 * remove their own entries). */
bool sessiondir_check_fd(int fd, uid_t uid, bool shared);

/* Writes "<sd->path>/<kind>-<pid>-<16 random hex digits>" into buf: the
 * path of a new session (not created: drain_new makes it).  kind is a
 * short lowercase word.  Returns 0 or -errno (-ENAMETOOLONG, or the error
 * of getrandom). */
int sessiondir_name(const struct sessiondir *sd, const char *kind, char *buf, size_t size);
/* Splits a session name made by sessiondir_name (its last path component)
 * into its kind (at most SESSIONDIR_KIND_MAX bytes with the NUL) and pid;
 * false when it is not one. */
bool sessiondir_parse(const char *name, char *kind, size_t kind_size, pid_t *pid);

/* Whether some process still maps a file of session `name` in sd (a
 * traced program keeps its session's control file and its rings mapped,
 * also after its recorder was killed).  Reads /proc/<pid>/maps of every
 * process the caller may read.  Returns 1, 0 or -errno. */
int sessiondir_in_use(const struct sessiondir *sd, const char *name);

/* Removes the sessions in sd that nobody uses any more: a session whose
 * process (the pid in its name) is gone and whose files no process maps
 * (see sessiondir_in_use), a directory of the caller's, emptied and
 * removed through directory descriptors without following any link.
 * Sessions of a killed recorder whose program still runs are kept (their
 * rings can still be salvaged), and so are those whose trace directory's
 * note still names them (see SESSIONDIR_TRACE_FILE: `recover` can finish
 * that trace).  Entries of other names are left alone.
 * Returns the number of sessions removed, or -errno. */
int sessiondir_sweep(const struct sessiondir *sd);

/* Writes SESSIONDIR_TRACE_FILE into the session directory `session`
 * (exclusively, never through a link): `trace_path` is the absolute path
 * of the trace directory whose note names the session.  Returns 0 or
 * -errno. */
int sessiondir_note_trace(const char *session, const char *trace_path);

/* Fills buf with len random bytes (getrandom, else /dev/urandom).
 * Returns 0 or -errno. */
int sessiondir_random(void *buf, size_t len);

#endif
