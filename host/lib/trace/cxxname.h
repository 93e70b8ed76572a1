/* The parts of a demangled function name, as people write them: a C++
 * name as the demangler prints it may start with a return type (function
 * templates: "bool ns::eq<int>(int, int)") and ends with a parameter list
 * and qualifiers ("(int) const"); patterns and displays want the qualified
 * name without the return type, with or without the parameters. */
#ifndef LP_CXXNAME_H
#define LP_CXXNAME_H

#include <stdbool.h>
#include <stddef.h>

struct cxxname {
	size_t start;  /* where the qualified name begins (after a return type) */
	size_t params; /* where its parameter list begins; the name's length when it has none */
	size_t len;    /* the whole name's length */
	bool has_params;
};

/* Splits name (NUL-terminated) into *out.  Never fails: a name it cannot
 * read (unbalanced brackets, nesting deeper than it follows) is taken as a
 * qualified name without return type or parameters.  C names ("main") have
 * neither. */
void cxxname_split(const char *name, struct cxxname *out);

/* The demangled form of raw (a C++ "_Z..." symbol name) copied into buf
 * (size > 0; cut to fit, always NUL-terminated); returns buf, or raw itself
 * when it is not a mangled name, is longer than CXXNAME_DEMANGLE_MAX, or
 * the demangler refuses it.  Allocates and frees for the call. */
#define CXXNAME_DEMANGLE_MAX 8192u
const char *cxxname_demangle(const char *raw, char *buf, size_t size);

#endif
