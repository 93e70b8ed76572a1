/* System call tables: numbers, names and argument kinds for the
 * architectures layerprof traces (x86-64, aarch64, arm EABI), independent
 * of the machine it runs on, so a host reads a target's trace.  C11 and
 * libc only; the tables are generated (scripts/gen-systab) from the kernel
 * headers and committed. */
#ifndef LP_SYSTAB_H
#define LP_SYSTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values written in traces: never renumber. */
enum sys_arch {
	SYS_ARCH_NONE = 0,
	SYS_ARCH_X86_64 = 1,
	SYS_ARCH_AARCH64 = 2,
	SYS_ARCH_ARM = 3, /* EABI */
};

/* Syscall numbers are below this on every supported architecture. */
#define SYS_NR_MAX 1024u

/* How an argument is shown and which ones a backend reads from the tracee. */
enum sys_arg_kind {
	SYS_ARG_NONE = 0, /* not shown */
	SYS_ARG_INT,      /* signed decimal */
	SYS_ARG_UINT,     /* unsigned decimal */
	SYS_ARG_HEX,      /* pointers, flags */
	SYS_ARG_FD,       /* a file descriptor (AT_FDCWD shown as such) */
	SYS_ARG_PATH,     /* a user pointer to a NUL-terminated path: backends copy it */
	SYS_ARG_SIZE,     /* a byte count */
};

struct sys_info {
	const char *name; /* NULL: no such syscall */
	uint8_t nargs;
	uint8_t arg[6]; /* enum sys_arg_kind */
	/* SYS_ARG_FD for calls returning a new fd, SYS_ARG_SIZE for byte
	 * counts, SYS_ARG_HEX for addresses (mmap, brk), SYS_ARG_INT otherwise */
	uint8_t ret_kind;
};

/* The architecture layerprof itself was built for (the tracer's own). */
enum sys_arch sys_arch_native(void);
/* "x86_64", "aarch64", "arm", "none"; "unknown" for other values. */
const char *sys_arch_name(enum sys_arch arch);

/* The entry for syscall `nr`, or NULL when it is not known.  The pointer is
 * to static data.  arm's private calls (set_tls = 0xf0005, ...) are known
 * too, although they are above SYS_NR_MAX.  Calls whose arguments the
 * tables do not describe have nargs 0. */
const struct sys_info *sys_info(enum sys_arch arch, uint32_t nr);
/* Writes the name of `nr` ("write", or "syscall_451" when unknown) into
 * buf and returns buf. */
const char *sys_name(enum sys_arch arch, uint32_t nr, char *buf, size_t size);
/* The number of the syscall called `name`, or -1. */
int sys_lookup(enum sys_arch arch, const char *name);

/* A set of syscall numbers, as selected by --syscall-filter. */
struct sys_set {
	uint64_t bits[SYS_NR_MAX / 64];
};

/* Parses a comma-separated list of names and fnmatch(3) patterns ("read,
 * write,open*", "!close" to remove, "all") into set.  Removals apply after
 * all additions, whatever their order; a list of removals only ("!close")
 * starts from all.  "all" (and an empty list or NULL) is every number below
 * SYS_NR_MAX, those the tables do not name included.  Items are trimmed of
 * spaces.  Returns 0, or -EINVAL with "unknown syscall 'x'" in err (x
 * without its "!"; a pattern that matches nothing counts as unknown) and
 * set emptied. */
int sys_set_parse(struct sys_set *set, enum sys_arch arch, const char *list, char *err, size_t errlen);
void sys_set_all(struct sys_set *set);
static inline bool sys_set_has(const struct sys_set *set, uint32_t nr)
{
	return nr < SYS_NR_MAX && (set->bits[nr / 64] >> (nr % 64) & 1);
}
/* Number of syscalls in the set. */
uint32_t sys_set_count(const struct sys_set *set);

/* Formats the arguments of a call for display, e.g. "1, 0x5581c0, 1024" or
 * "AT_FDCWD, \"/etc/passwd\", 0x0, 0x0": args from the trace (nargs of
 * them; the entry's nargs are shown, fewer if the trace has fewer; none for
 * unknown calls), path the copied string (path_len bytes, a NUL ends it
 * early; may be NULL).  By kind: SYS_ARG_INT signed decimal, UINT and SIZE
 * unsigned decimal, HEX "0x1a4", FD decimal or "AT_FDCWD", PATH the string
 * in double quotes with \" \\ \n \t \r and octal (\033) escapes, cut after
 * 200 bytes as "abc"... ; only the first PATH argument shows path, others
 * and a NULL path show the pointer in hex.  On arm only the low 32 bits of
 * each argument count.  Returns the length written (cut to fit size,
 * NUL-terminated; 0 when size is 0). */
size_t sys_format_args(enum sys_arch arch, uint32_t nr, const uint64_t *args, uint32_t nargs, const char *path,
                       uint32_t path_len, char *buf, size_t size);
/* Formats a return value: "1024", "3", "0x7f12a000" (SYS_ARG_HEX) or, for
 * -4095..-1, "-1 ENOENT (No such file or directory)" (the text is
 * strerror's; "-1 errno 600" when the value has no name).  On arm only the
 * low 32 bits count.  Returns the length written, as sys_format_args. */
size_t sys_format_ret(enum sys_arch arch, uint32_t nr, int64_t ret, char *buf, size_t size);
/* errno name for a positive errno value ("ENOENT"), or NULL.  Linux errno
 * values are the same on the three architectures; the kernel's internal
 * ERESTARTSYS (512) to ERESTART_RESTARTBLOCK (516), which a tracer sees
 * when a signal interrupts a call, are named too. */
const char *sys_errno_name(int err);

#endif
