/* A small JSON reader (see jnode.h): recursive descent, depth-bounded. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/util/jnode.h"

struct parser {
	const char *p, *start, *end;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *ps, const char *what)
{
	if (!ps->failed)
		snprintf(ps->err, ps->errlen, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
	ps->failed = true;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int hex4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (ps->end - ps->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = *ps->p++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at ps->p (at its opening quote); the decoded text is
 * never longer than the literal. */
static char *parse_string(struct parser *ps)
{
	const char *q = ps->p + 1;
	char *out, *o;

	while (q < ps->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	if (q >= ps->end) {
		fail(ps, "unterminated string");
		return NULL;
	}
	out = o = malloc((size_t)(q - ps->p) + 1);
	if (!out) {
		fail(ps, "out of memory");
		return NULL;
	}
	ps->p++;
	while (*ps->p != '"') {
		char c = *ps->p++;
		unsigned cp, lo;

		if ((unsigned char)c < 0x20) {
			fail(ps, "control character in string");
			goto bad;
		}
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		c = *ps->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			*o++ = c;
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			if (hex4(ps, &cp))
				goto badesc;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
					goto badesc;
				ps->p += 2;
				if (hex4(ps, &lo) || lo < 0xdc00 || lo >= 0xe000)
					goto badesc;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			/* 6 or 12 escaped bytes give at most 4 */
			o += put_utf8(o, cp);
			break;
		default:
			goto badesc;
		}
	}
	ps->p++;
	*o = '\0';
	return out;
badesc:
	fail(ps, "bad escape in string");
bad:
	free(out);
	return NULL;
}

static struct jnode *node_new(struct parser *ps, enum jnode_type type)
{
	struct jnode *n = calloc(1, sizeof(*n));

	if (!n)
		fail(ps, "out of memory");
	else
		n->type = type;
	return n;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return false;
	ps->p += n;
	return true;
}

static struct jnode *parse_value(struct parser *ps, int depth);

static struct jnode *parse_number(struct parser *ps)
{
	const char *s = ps->p;
	char buf[64], *endp;
	struct jnode *n;
	size_t len;
	bool integer = true;

	if (ps->p < ps->end && *ps->p == '-') {
		ps->p++;
		integer = false;
	}
	while (ps->p < ps->end && ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' || *ps->p == 'e' ||
	                           *ps->p == 'E' || *ps->p == '+' || *ps->p == '-')) {
		if (*ps->p < '0' || *ps->p > '9')
			integer = false;
		ps->p++;
	}
	len = (size_t)(ps->p - s);
	if (!len || len >= sizeof(buf)) {
		fail(ps, "bad number");
		return NULL;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	n = node_new(ps, JNODE_NUMBER);
	if (!n)
		return NULL;
	errno = 0;
	n->num = strtod(buf, &endp);
	if (*endp) {
		ps->p = s;
		fail(ps, "bad number");
		free(n);
		return NULL;
	}
	if (integer) {
		errno = 0;
		n->u = strtoull(buf, &endp, 10);
		n->is_uint = !errno && !*endp;
	}
	return n;
}

/* Members or elements up to the closing bracket. */
static struct jnode *parse_container(struct parser *ps, int depth, bool object)
{
	struct jnode *n = node_new(ps, object ? JNODE_OBJECT : JNODE_ARRAY), **link;
	char close = object ? '}' : ']';

	if (!n)
		return NULL;
	link = &n->child;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return n;
	}
	for (;;) {
		char *key = NULL;
		struct jnode *c;

		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"') {
				fail(ps, "expected a member name");
				break;
			}
			key = parse_string(ps);
			if (!key)
				break;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				fail(ps, "expected ':'");
				break;
			}
			ps->p++;
		}
		c = parse_value(ps, depth + 1);
		if (!c) {
			free(key);
			break;
		}
		c->key = key;
		*link = c;
		link = &c->next;
		n->n++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return n;
		}
		fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		break;
	}
	jnode_free(n);
	return NULL;
}

static struct jnode *parse_value(struct parser *ps, int depth)
{
	struct jnode *n;

	if (depth > JNODE_DEPTH_MAX) {
		fail(ps, "nested too deep");
		return NULL;
	}
	skip_ws(ps);
	if (ps->p >= ps->end) {
		fail(ps, "unexpected end");
		return NULL;
	}
	switch (*ps->p) {
	case '{':
		return parse_container(ps, depth, true);
	case '[':
		return parse_container(ps, depth, false);
	case '"': {
		char *s = parse_string(ps);

		if (!s)
			return NULL;
		n = node_new(ps, JNODE_STRING);
		if (!n) {
			free(s);
			return NULL;
		}
		n->str = s;
		return n;
	}
	default:
		break;
	}
	if (literal(ps, "true") || literal(ps, "false")) {
		n = node_new(ps, JNODE_BOOL);
		if (n)
			n->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
		return n;
	}
	if (literal(ps, "null"))
		return node_new(ps, JNODE_NULL);
	if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
		return parse_number(ps);
	fail(ps, "unexpected character");
	return NULL;
}

struct jnode *jnode_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser ps = { text, text, text + len, err, errlen, false };
	struct jnode *root;

	if (len > JNODE_INPUT_MAX) {
		snprintf(err, errlen, "document of %zu bytes is over the limit", len);
		return NULL;
	}
	root = parse_value(&ps, 0);
	if (root) {
		skip_ws(&ps);
		if (ps.p != ps.end) {
			fail(&ps, "trailing data");
			jnode_free(root);
			root = NULL;
		}
	}
	return root;
}

struct jnode *jnode_parse_file(const char *path, char *err, size_t errlen)
{
	struct jnode *root = NULL;
	struct stat st;
	char *buf = NULL, msg[256];
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > JNODE_INPUT_MAX) {
		snprintf(err, errlen, "cannot read '%s': not a regular file of at most %u bytes", path,
		         JNODE_INPUT_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(err, errlen, "cannot read '%s': out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "cannot read '%s': %s", path, r ? strerror(errno) : "file shrank");
			goto out;
		}
		got += (size_t)r;
	}
	root = jnode_parse(buf, got, msg, sizeof(msg));
	if (!root)
		snprintf(err, errlen, "'%s' is not valid JSON: %s", path, msg);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return root;
}

void jnode_free(struct jnode *n)
{
	while (n) {
		struct jnode *next = n->next;

		jnode_free(n->child);
		free(n->key);
		free(n->str);
		free(n);
		n = next;
	}
}

const struct jnode *jnode_get(const struct jnode *obj, const char *key)
{
	const struct jnode *c;

	if (!obj || obj->type != JNODE_OBJECT)
		return NULL;
	for (c = obj->child; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

const struct jnode *jnode_at(const struct jnode *arr, size_t i)
{
	const struct jnode *c;

	if (!arr || arr->type != JNODE_ARRAY)
		return NULL;
	for (c = arr->child; c && i; c = c->next)
		i--;
	return c;
}

uint64_t jnode_u64(const struct jnode *n, uint64_t dflt)
{
	return n && n->type == JNODE_NUMBER && n->is_uint ? n->u : dflt;
}

double jnode_f64(const struct jnode *n, double dflt)
{
	return n && n->type == JNODE_NUMBER ? n->num : dflt;
}

const char *jnode_str(const struct jnode *n)
{
	return n && n->type == JNODE_STRING ? n->str : NULL;
}

bool jnode_bool(const struct jnode *n, bool dflt)
{
	return n && n->type == JNODE_BOOL ? n->b : dflt;
}
