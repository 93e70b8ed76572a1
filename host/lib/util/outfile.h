/* Files the host commands write, made so that no link or file another user
 * planted is written through: the output files a user names (-o FILE) and
 * the exclusive temporaries that the caches of `serve` are renamed from.
 * Library code: errors are returned, not printed. */
#ifndef LP_OUTFILE_H
#define LP_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define OUTFILE_TMP_RANDOM 12u /* letters and digits of a temporary's name */
#define OUTFILE_TMP_TRIES 64u

/* Opens `path` to write a command's output: created with mode 0644, or
 * emptied when it is a regular file.  In a directory that other users may
 * write to (group or other write permission, or owned by someone other
 * than the caller and root) a symbolic link at path is never followed and
 * a file there must be the caller's with a single name; elsewhere a link
 * is followed (/dev/stdout, a link the owner made).  A FIFO without a
 * reader does not make it block before these checks.  Returns a stream
 * the caller closes, or NULL with errno: ELOOP (a link in such a
 * directory), EPERM (another user's file, or a file with several names,
 * there), or open's error.  outfile_strerror names them. */
FILE *outfile_open(const char *path);
/* Like strerror, with words for outfile_open's ELOOP and EPERM. */
const char *outfile_strerror(int err);
/* Whether the directory holding `path` may be written by users other than
 * the caller (and root): group or other write permission, or another
 * owner.  True when it cannot be looked at. */
bool outfile_dir_shared(const char *path);

/* Creates an exclusive temporary for `name` in directory dirfd:
 * "<name>.tmp.<OUTFILE_TMP_RANDOM random letters>", opened with
 * O_CREAT|O_EXCL|O_NOFOLLOW (mode 0644), so that no planted name is
 * written through.  Its name goes to tmp.  Returns the descriptor (the
 * caller closes it) or -errno. */
int outfile_tmp_create(int dirfd, const char *name, char *tmp, size_t size);
/* Renames the finished temporary over `name` in dirfd (a link there is
 * replaced, not followed); on failure the temporary is removed.  Returns
 * 0 or -errno. */
int outfile_tmp_commit(int dirfd, const char *tmp, const char *name);
/* Writes `path` whole or not at all: write(f, ctx) fills an exclusive
 * temporary beside it (outfile_tmp_create), which is flushed to the disk
 * and renamed over path.  write returns 0 or -errno.  Returns 0, or -errno
 * (-EISDIR: path ends in '/'; write's own error), nothing left behind. */
int outfile_replace(const char *path, int (*write)(FILE *f, void *ctx), void *ctx);

#endif
