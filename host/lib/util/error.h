/* How host/lib tells its callers what went wrong.  Library code never prints
 * and never chooses an exit code.  A function that can fail returns 0 or a
 * negative errno (or a result its header describes) and takes `char *err,
 * size_t errlen`: on failure it leaves there one line for the user, without
 * the command's "layerprof <command>: " prefix and without '\n'.  The errno
 * is the kind of failure (its header says which mean what, e.g. -EINVAL for
 * a bad option value).  Warnings it gives while it goes on working go, in
 * order, to a struct lp_warner.  Only the commands (host/builtin-*.c,
 * host/layerprof.c) print both, behind their prefix, and map the errno to
 * their exit code. */
#ifndef LP_ERROR_H
#define LP_ERROR_H

#include <stddef.h>

/* Room for one message: two paths and a reason. */
#define LP_ERROR_MAX 1024u

/* Writes the printf-formatted message into err (errlen bytes, cut to fit;
 * err NULL or errlen 0: nothing written) and returns code, so that a
 * failing function can end with `return error_set(err, errlen, -EINVAL, ...)`. */
int error_set(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Where library code sends a warning: fn gets ctx and one line without the
 * command's prefix and without '\n' (the line is the library's: fn copies
 * what it keeps).  fn NULL, or no warner at all: warnings are dropped. */
struct lp_warner {
	void (*fn)(void *ctx, const char *msg);
	void *ctx;
};

/* Formats a warning (cut at LP_ERROR_MAX - 1 bytes) and gives it to w. */
void error_warn(const struct lp_warner *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
