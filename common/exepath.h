/* Finding files installed beside the running executable: layerprof and
 * layerprofd look for the runtime library (and layerprof config for its
 * response file) relative to the directory they were started from, in an
 * installed tree (<prefix>/bin, <prefix>/lib) and in the build tree.  C11
 * and libc only. */
#ifndef LP_EXEPATH_H
#define LP_EXEPATH_H

#include <stddef.h>

/* Writes the directory of the running executable (from /proc/self/exe)
 * into dir (size > 0 bytes; cut to fit).  Returns 0, or -ENOENT with dir
 * "" when it is unknown. */
int exepath_dir(char *dir, size_t size);

/* The first of the n paths rel[] (each starting with '/', relative to
 * directory dir: "/../lib/x.so") that names a readable file, resolved by
 * realpath into out (PATH_MAX bytes).  Returns 0 or -ENOENT. */
int exepath_find(const char *dir, const char *const *rel, size_t n, char *out);

/* exepath_find for liblayerprof.so: <dir>/../lib (installed), then
 * <dir>/../runtime (the build tree), then dir itself. */
int exepath_runtime(const char *dir, char *out);

#endif
