/* The note `record` keeps in its trace directory while it runs (the file
 * TRACEDIR_RECORDING): who records and where its session is, so that
 * `layerprof recover` can finish the trace of a recorder that was killed.
 * The note also holds a reserve of disk space, which record gives back
 * when the disk is full so that the end of the trace still fits. */
#ifndef LP_RECORDING_H
#define LP_RECORDING_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Bytes kept for the end of a trace on a full disk: an END chunk and a
 * LOST chunk per stream (about 40 bytes each). */
#define RECORDING_RESERVE (64u << 10)

struct recording {
	pid_t pid;                /* the recorder */
	unsigned long long start; /* its start, in clock ticks after boot (/proc/<pid>/stat) */
	char session[PATH_MAX];   /* its session directory (absolute) */
	size_t text_len;          /* bytes of the note before its reserve */
};

/* Fills rc for the calling process and its session directory `session`
 * (made absolute).  Returns 0 or -errno. */
int recording_self(struct recording *rc, const char *session);
/* Creates the note in the trace directory dirfd (exclusively, never
 * through a link) with RECORDING_RESERVE bytes of reserve after the text.
 * Returns its descriptor (the caller closes it) or -errno. */
int recording_write(int dirfd, struct recording *rc);
/* Gives the reserve back (the note keeps its text).  Returns 0 or -errno. */
int recording_release_reserve(int fd, const struct recording *rc);
/* Reads the note of the trace directory dirfd.  Returns 0, -ENOENT (no
 * note: the recorder ended as it should), -EPERM (the directory or the
 * note is another user's) or -EBADMSG with err set. */
int recording_read(int dirfd, struct recording *rc, char *err, size_t errlen);
/* True when the recorder the note names still runs (same pid, same start,
 * not a zombie). */
bool recording_alive(const struct recording *rc);
/* Opens the session directory the note names, after checking it is a
 * directory (not a link) of the caller that others cannot write to.
 * Returns the descriptor or -errno with err set (-ENOENT: gone). */
int recording_session_open(const struct recording *rc, char *err, size_t errlen);
/* Removes the emptied session directory fd (from recording_session_open)
 * if its name still leads to it.  Returns 0 or -errno. */
int recording_session_remove(const struct recording *rc, int fd);

#endif
