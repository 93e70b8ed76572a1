/* Reading JSON documents (heap snapshot files, tests) with json-c, within
 * the bounds layerprof sets: documents up to JSONREAD_INPUT_MAX bytes,
 * nesting up to JSONREAD_DEPTH_MAX levels below the top value, strict
 * RFC 8259 text.  Non-negative integers below 2^64 are kept exactly.  The
 * lookups accept NULL and wrong types (then they answer NULL or the
 * default), so that a chain of them needs one check at its end.  The
 * header does not include json-c's: its json_bool and the writer's
 * (util/json.h) would clash. */
#ifndef LP_JSONREAD_H
#define LP_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONREAD_INPUT_MAX (256u << 20)
#define JSONREAD_DEPTH_MAX 64

struct json_object; /* json-c's */

/* Parses text[0..len).  Returns the root, owned by the caller (release
 * with jsonread_release), or NULL with a message in err: "out of memory",
 * or what is wrong "at byte N". */
struct json_object *jsonread_parse(const char *text, size_t len, char *err, size_t errlen);
/* Reads a whole regular file and parses it.  NULL with a message naming
 * the path in err and in *res -errno when the file could not be read
 * (-EINVAL: not a regular file or too large), -EBADMSG when its text is
 * not JSON. */
struct json_object *jsonread_file(const char *path, int *res, char *err, size_t errlen);
/* Releases a root and all below it; accepts NULL. */
void jsonread_release(struct json_object *root);

struct json_object *jsonread_get(const struct json_object *obj, const char *key);
struct json_object *jsonread_at(const struct json_object *arr, size_t i);
/* Members of an object or elements of an array; 0 for anything else. */
size_t jsonread_count(const struct json_object *n);
uint64_t jsonread_u64(const struct json_object *n, uint64_t dflt);
double jsonread_f64(const struct json_object *n, double dflt);
const char *jsonread_str(const struct json_object *n); /* NULL unless a string */
bool jsonread_bool(const struct json_object *n, bool dflt);
bool jsonread_is_array(const struct json_object *n);

#endif
