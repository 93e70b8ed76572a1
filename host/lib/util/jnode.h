/* A small JSON reader: parses a whole document into a tree of nodes (for
 * snapshot files and tests).  Bounded: documents up to JNODE_INPUT_MAX
 * bytes, nesting up to JNODE_DEPTH_MAX; anything else is refused with a
 * message naming the byte offset.  Numbers that are non-negative integers
 * below 2^64 are kept exactly. */
#ifndef LP_JNODE_H
#define LP_JNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JNODE_INPUT_MAX (256u << 20)
#define JNODE_DEPTH_MAX 64

enum jnode_type {
	JNODE_NULL,
	JNODE_BOOL,
	JNODE_NUMBER,
	JNODE_STRING,
	JNODE_ARRAY,
	JNODE_OBJECT,
};

struct jnode {
	enum jnode_type type;
	char *key;  /* member name inside an object, else NULL */
	char *str;  /* STRING: NUL-terminated (a \u0000 ends it early) */
	double num; /* NUMBER */
	uint64_t u; /* NUMBER: exact when is_uint */
	bool is_uint;
	bool b;                     /* BOOL */
	size_t n;                   /* ARRAY, OBJECT: children */
	struct jnode *child, *next; /* first child; next sibling */
};

/* Parses text[0..len).  Returns the root (free with jnode_free), or NULL
 * with a message in err ("out of memory" or what is wrong, and where). */
struct jnode *jnode_parse(const char *text, size_t len, char *err, size_t errlen);
/* Reads a whole file and parses it; messages name the path. */
struct jnode *jnode_parse_file(const char *path, char *err, size_t errlen);
void jnode_free(struct jnode *n);

/* Lookups that accept NULL and wrong types (then they answer NULL or the
 * default), so that a chain needs one check at its end. */
const struct jnode *jnode_get(const struct jnode *obj, const char *key);
const struct jnode *jnode_at(const struct jnode *arr, size_t i);
uint64_t jnode_u64(const struct jnode *n, uint64_t dflt);
double jnode_f64(const struct jnode *n, double dflt);
const char *jnode_str(const struct jnode *n); /* NULL unless a string */
bool jnode_bool(const struct jnode *n, bool dflt);

#endif
