/* Reading JSON with json-c (see jsonread.h): the tokener does the parsing;
 * this file bounds it and refuses the few things json-c 0.16 lets through
 * that are not JSON or that would not keep their value. */
#include <errno.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/util/jsonread.h"

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_hex4(const char *p, size_t avail, unsigned lo, unsigned hi)
{
	char buf[5], *end;
	unsigned long v;

	if (avail < 4)
		return false;
	memcpy(buf, p, 4);
	buf[4] = '\0';
	v = strtoul(buf, &end, 16);
	return *end == '\0' && buf[0] != '-' && buf[0] != '+' && v >= lo && v <= hi;
}

/* An integer literal at p[0..n) (digits after an optional '-'): false when
 * json-c would clamp it, i.e. below -2^63 or above 2^64-1. */
static bool integer_fits(const char *p, size_t n)
{
	const char *limit = "18446744073709551615";

	if (*p == '-') {
		p++;
		n--;
		limit = "9223372036854775808";
	}
	return n < strlen(limit) || (n == strlen(limit) && memcmp(p, limit, n) <= 0);
}

/* A number literal starting at text[i]: its length, and whether it is an
 * integer (no fraction, no exponent). */
static size_t number_len(const char *text, size_t len, size_t i, bool *integer)
{
	size_t j = i;

	*integer = true;
	while (j < len && text[j] && strchr("0123456789.eE+-", text[j])) {
		if (text[j] == '.' || text[j] == 'e' || text[j] == 'E')
			*integer = false;
		j++;
	}
	return j - i;
}

/* Runs on a document json-c accepted, so its structure is sound: a quote
 * outside a string opens one, and outside strings there are only
 * punctuation, literals and numbers.  Answers what is wrong, or NULL. */
static const char *strict_check(const char *text, size_t len, size_t *at)
{
	bool in_string = false, integer;
	size_t i, n;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		*at = i;
		if (!in_string) {
			if (c == '"')
				in_string = true;
			else if (c == 'N' || c == 'I') /* NaN, Infinity */
				return "unexpected character";
			else if (c == '-' || (c >= '0' && c <= '9')) {
				n = number_len(text, len, i, &integer);
				if (integer && !integer_fits(text + i, n))
					return "integer out of range";
				i += n - 1;
			}
			continue;
		}
		if (c == '"')
			in_string = false;
		else if (c < 0x20)
			return "control character in string";
		else if (c == '\\' && i + 1 < len && text[i + 1] == 'u') {
			/* a high surrogate must be followed by a low one */
			if (is_hex4(text + i + 2, len - i - 2, 0xd800, 0xdbff) &&
			    (len - i < 12 || text[i + 6] != '\\' || text[i + 7] != 'u' ||
			     !is_hex4(text + i + 8, len - i - 8, 0xdc00, 0xdfff)))
				return "bad escape in string";
			i += 5;
		} else if (c == '\\')
			i++;
	}
	return NULL;
}

struct json_object *jsonread_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error e;
	const char *what = NULL;
	size_t at = 0;

	if (len > JSONREAD_INPUT_MAX) {
		snprintf(err, errlen, "document of %zu bytes is over the limit", len);
		return NULL;
	}
	/* depth counts the top value too */
	tok = json_tokener_new_ex(JSONREAD_DEPTH_MAX + 1);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	e = json_tokener_get_error(tok);
	at = json_tokener_get_parse_end(tok);
	if (!root && e == json_tokener_continue) {
		/* a terminator ends a number or literal at the end of text */
		root = json_tokener_parse_ex(tok, "", 1);
		e = json_tokener_get_error(tok);
		at = len;
	}
	if (!root)
		what = e == json_tokener_error_depth ? "nested too deep" : json_tokener_error_desc(e);
	else {
		while (at < len && is_ws(text[at]))
			at++;
		if (at < len)
			what = "trailing data";
		else
			what = strict_check(text, len, &at);
	}
	json_tokener_free(tok);
	if (what) {
		snprintf(err, errlen, "%s at byte %zu", what, at);
		json_object_put(root);
		return NULL;
	}
	return root;
}

struct json_object *jsonread_file(const char *path, int *res, char *err, size_t errlen)
{
	struct json_object *root = NULL;
	struct stat st;
	char *buf = NULL, msg[256];
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*res = 0;
	if (fd < 0 || fstat(fd, &st)) {
		*res = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > JSONREAD_INPUT_MAX) {
		*res = -EINVAL;
		snprintf(err, errlen, "cannot read '%s': not a regular file of at most %u bytes", path,
		         JSONREAD_INPUT_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		*res = -ENOMEM;
		snprintf(err, errlen, "cannot read '%s': out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*res = r ? -errno : -EIO;
			snprintf(err, errlen, "cannot read '%s': %s", path, r ? strerror(errno) : "file shrank");
			goto out;
		}
		got += (size_t)r;
	}
	root = jsonread_parse(buf, got, msg, sizeof(msg));
	if (!root) {
		*res = -EBADMSG;
		snprintf(err, errlen, "'%s' is not valid JSON: %s", path, msg);
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return root;
}

void jsonread_release(struct json_object *root)
{
	json_object_put(root);
}

static bool is(const struct json_object *n, enum json_type type)
{
	return n && json_object_get_type(n) == type;
}

bool jsonread_is_array(const struct json_object *n)
{
	return is(n, json_type_array);
}

struct json_object *jsonread_get(const struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;

	if (!is(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

struct json_object *jsonread_at(const struct json_object *arr, size_t i)
{
	if (!is(arr, json_type_array) || i >= json_object_array_length(arr))
		return NULL;
	return json_object_array_get_idx(arr, i);
}

size_t jsonread_count(const struct json_object *n)
{
	if (is(n, json_type_array))
		return json_object_array_length(n);
	if (is(n, json_type_object))
		return (size_t)json_object_object_length(n);
	return 0;
}

uint64_t jsonread_u64(const struct json_object *n, uint64_t dflt)
{
	/* json-c keeps integers above INT64_MAX unsigned and answers
	 * INT64_MAX for their signed value; negative ones are not counts */
	if (!is(n, json_type_int) || json_object_get_int64(n) < 0)
		return dflt;
	return json_object_get_uint64(n);
}

double jsonread_f64(const struct json_object *n, double dflt)
{
	if (!is(n, json_type_int) && !is(n, json_type_double))
		return dflt;
	return json_object_get_double(n);
}

const char *jsonread_str(const struct json_object *n)
{
	/* json-c's getter takes a non-const object but does not change a string */
	return is(n, json_type_string) ? json_object_get_string((struct json_object *)n) : NULL;
}

bool jsonread_bool(const struct json_object *n, bool dflt)
{
	return is(n, json_type_boolean) ? json_object_get_boolean(n) : dflt;
}
