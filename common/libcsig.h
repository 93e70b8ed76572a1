/* The C library functions whose arguments and return values `record
 * --libcalls` keeps (docs/libcalls.md lists them): each with the types of
 * its arguments and of its result, from which the recorder makes the patch
 * plan's lp_plan_func.args and the host writes a call as
 * `write(1, "hi\n", 3) = 3`.  C11 and libc only: the recorder uses it on
 * the target. */
#ifndef LP_LIBCSIG_H
#define LP_LIBCSIG_H

#include <stddef.h>
#include <stdint.h>

/* Argument and result types, one letter each:
 *   i  int                 u  size_t, unsigned long   l  long, ssize_t, off_t
 *   x  flags (hex)         o  mode (octal)            c  a character (int)
 *   p  pointer             s  C string                b  buffer, as long as the next argument
 *   S  C string the function reads itself (s: one it hands to the kernel)
 *   O  open's mode: shown only when the flags before it create a file
 *   v  (result) nothing */
struct libcsig {
	const char *name;
	const char *args; /* at most LP_ARGS_MAX letters */
	char ret;
};

/* The function called name, or name@plt; NULL when it is not in the set. */
const struct libcsig *libcsig_find(const char *name);
/* The set, for its documentation and tests. */
const struct libcsig *libcsig_all(size_t *n);
/* The plan's lp_plan_func.args for sig. */
uint32_t libcsig_plan(const struct libcsig *sig);

/* A call's arguments as the trace has them: the words, and the memory kept
 * for some (index, bytes, cut: more followed). */
struct libcsig_mem {
	const uint8_t *bytes;
	uint32_t len;
	uint8_t index;
	uint8_t cut;
};
struct libcsig_args {
	uint64_t words[6];
	uint32_t n;
	struct libcsig_mem mem[6];
	uint32_t nmem;
};

/* Writes the arguments as C would show them, comma-separated, into buf
 * (cut to size, NUL-terminated): numbers by type, strings and buffers
 * quoted with C escapes (what was kept of them; "..." when cut), a
 * pointer in hex or NULL.  ptr_bits: the program's word size (32 or 64).
 * Returns buf. */
char *libcsig_format_args(const struct libcsig *sig, const struct libcsig_args *a, unsigned ptr_bits, char *buf,
                          size_t size);
/* The result value v by sig's result type; "" for a function with none. */
char *libcsig_format_ret(const struct libcsig *sig, uint64_t v, unsigned ptr_bits, char *buf, size_t size);

#endif
