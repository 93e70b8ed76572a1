/* A small streaming JSON writer for --format json output. */
#ifndef LP_JSON_H
#define LP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* No bound on nesting: only the level being written needs to know
 * whether it has a member yet (a closed level was a member of its parent),
 * so a call tree as deep as its recursion is written whole. */
struct json {
	FILE *f;
	uint64_t depth;
	bool first; /* the level being written has no member yet */
};

/* key is NULL inside arrays and at the top level. */
void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
void json_str(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
/* Six significant digits; null for NaN and infinities. */
void json_f64(struct json *j, const char *key, double value);
/* With exactly decimals (0 to 9) digits after the point ("75.0"); null for
 * NaN and infinities. */
void json_fixed(struct json *j, const char *key, double value, int decimals);
/* The shortest text (at most 17 significant digits) that reads back as
 * exactly value, for files read again (the energy model); null for NaN
 * and infinities. */
void json_f64_exact(struct json *j, const char *key, double value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);
/* Writes s as a JSON string literal (quoted, escaped, invalid UTF-8 as
 * U+FFFD) to f: escape_json_plain. */
void json_write_string(FILE *f, const char *s);
/* Ends the document with a newline. */
void json_finish(struct json *j);

#endif
