/* Unit test of the JSON reader (host/lib/util/jnode.c): values, escapes, exact
 * integers, every refusal with its offset, the depth bound, and random
 * damage to a snapshot-like document (never a crash or a read outside it:
 * run it under the sanitizer build). */
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/jnode.h"
#include "tests/unit/check.h"

static struct jnode *parse(const char *s, char *err, size_t errlen)
{
	err[0] = '\0';
	return jnode_parse(s, strlen(s), err, errlen);
}

static void test_values(void)
{
	static const char doc[] =
	    " {\"a\": 18446744073709551615, \"b\": -2.5e3, \"c\": [true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],"
	    " \"d\": {}, \"e\": [], \"f\": \"q\\\"\\\\\\/\\b\\f\\r\\t\", \"g\": 0} ";
	char err[128];
	struct jnode *j = parse(doc, err, sizeof(err));
	const struct jnode *c;

	if (!CHECK(j)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(j->type, JNODE_OBJECT);
	CHECK_EQ_U64(j->n, 7);
	CHECK_EQ_U64(jnode_u64(jnode_get(j, "a"), 0), UINT64_MAX);
	CHECK(jnode_f64(jnode_get(j, "b"), 0) == -2500.0);
	CHECK_EQ_U64(jnode_u64(jnode_get(j, "b"), 7), 7); /* not an exact integer */
	c = jnode_get(j, "c");
	CHECK_EQ_U64(c ? c->n : 0, 4);
	CHECK(jnode_bool(jnode_at(c, 0), false));
	CHECK(!jnode_bool(jnode_at(c, 1), true));
	CHECK_EQ_U64(jnode_at(c, 2) ? jnode_at(c, 2)->type : 99, JNODE_NULL);
	CHECK_STR(jnode_str(jnode_at(c, 3)), "x\xc3\xa9\xf0\x9f\x98\x80\n");
	CHECK(jnode_at(c, 4) == NULL);
	CHECK_STR(jnode_str(jnode_get(j, "f")), "q\"\\/\b\f\r\t");
	CHECK_EQ_U64(jnode_u64(jnode_get(j, "g"), 1), 0);
	CHECK_EQ_U64(jnode_get(j, "d")->n, 0);
	CHECK(jnode_get(j, "missing") == NULL);
	CHECK(jnode_str(jnode_get(j, "a")) == NULL);
	CHECK(jnode_get(jnode_get(j, "a"), "x") == NULL);
	jnode_free(j);
	jnode_free(NULL);
}

static void test_refusals(void)
{
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{ "", "unexpected end at byte 0" },
		{ "{", "expected a member name at byte 1" },
		{ "{\"a\" 1}", "expected ':' at byte 5" },
		{ "{\"a\":1,}", "expected a member name at byte 7" },
		{ "[1 2]", "expected ',' or ']' at byte 3" },
		{ "[1,]", "unexpected character at byte 3" },
		{ "\"abc", "unterminated string at byte 0" },
		{ "\"a\\qb\"", "bad escape in string" },
		{ "\"\\u12\"", "bad escape in string" },
		{ "\"\\ud800x\"", "bad escape in string" },
		{ "\"a\x01\"", "control character in string" },
		{ "tru", "unexpected character at byte 0" },
		{ "1 2", "trailing data at byte 2" },
		{ "-", "bad number at byte 0" },
		{ "1.2.3", "bad number at byte 0" },
		{ "{\"a\":[1,2}", "expected ',' or ']' at byte 9" },
	};
	char err[128], deep[200];
	struct jnode *j;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = parse(bad[i].doc, err, sizeof(err));
		if (!CHECK(j == NULL)) {
			printf("  accepted: %s\n", bad[i].doc);
			jnode_free(j);
			continue;
		}
		if (!CHECK(strstr(err, bad[i].msg) != NULL))
			printf("  '%s': got '%s', want '%s'\n", bad[i].doc, err, bad[i].msg);
	}
	/* nesting: JNODE_DEPTH_MAX levels are fine, one more is refused */
	memset(deep, '[', JNODE_DEPTH_MAX + 1);
	memset(deep + JNODE_DEPTH_MAX + 1, ']', JNODE_DEPTH_MAX + 1);
	j = jnode_parse(deep, 2 * (JNODE_DEPTH_MAX + 1), err, sizeof(err));
	CHECK(j != NULL);
	jnode_free(j);
	memset(deep, '[', JNODE_DEPTH_MAX + 2);
	memset(deep + JNODE_DEPTH_MAX + 2, ']', JNODE_DEPTH_MAX + 2);
	j = jnode_parse(deep, 2 * (JNODE_DEPTH_MAX + 2), err, sizeof(err));
	CHECK(j == NULL && strstr(err, "nested too deep"));
	/* a document is read only within its length */
	j = jnode_parse("[1, 2]xyz", 6, err, sizeof(err));
	CHECK(j && j->n == 2);
	jnode_free(j);
	CHECK(jnode_parse_file("/nonexistent/snapshot", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "cannot open '/nonexistent/snapshot'") != NULL);
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void test_damage(void)
{
	static const char doc[] = "{\"layerprof_snapshot\":1,\"trace\":\"t\\\"x\",\"sites\":[{\"key\":\"leaky+0x4\","
	                          "\"live_objects\":3,\"live_bytes\":144,\"stack\":[{\"address\":\"0x1\",\"line\":0}]},"
	                          "{\"key\":\"b\",\"file\":null,\"ok\":true}],\"f\":-1.5e-3}";
	const size_t n = sizeof(doc) - 1;
	uint64_t rng = 5;
	char err[128];
	unsigned round, parsed = 0;

	for (round = 0; round < 20000; round++) {
		char work[sizeof(doc)], *buf;
		size_t len = n, k, edits = 1 + lcg(&rng) % 4;
		struct jnode *j;

		memcpy(work, doc, n);
		for (k = 0; k < edits; k++)
			work[lcg(&rng) % n] = "{}[]\",:\\u0a-e."[lcg(&rng) % 15];
		if (round % 3 == 0)
			len = lcg(&rng) % n;
		/* exactly len bytes: anything read past them is a sanitizer error */
		buf = malloc(len ? len : 1);
		if (!buf)
			return;
		memcpy(buf, work, len);
		j = jnode_parse(buf, len, err, sizeof(err));
		parsed += j != NULL;
		jnode_free(j);
		free(buf);
	}
	CHECK(parsed > 0);
	CHECK(parsed < 20000);
}

int main(void)
{
	test_values();
	test_refusals();
	test_damage();
	return check_summary();
}
