/* Unit test of reading heap snapshot files (host/lib/heap/snapshot.c with
 * json-c through host/lib/util/jsonread.c): values, escapes, exact
 * integers, every malformed document refused with its message, the depth
 * and range bounds, what the snapshot reader itself refuses, and random
 * damage to a snapshot-like document (never a crash or a read outside it:
 * run it under the sanitizer build). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/heap/snapshot.h"
#include "host/lib/util/jsonread.h"
#include "tests/unit/check.h"

static char dir[] = "/tmp/lp-test-snapshot-XXXXXX";
static char path[sizeof(dir) + 16];

static struct json_object *parse(const char *s, char *err, size_t errlen)
{
	err[0] = '\0';
	return jsonread_parse(s, strlen(s), err, errlen);
}

/* Writes doc as the snapshot file and reads it. */
static int read_doc(const char *doc, struct snapshot *snap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");

	err[0] = '\0';
	if (!f || fputs(doc, f) == EOF || fclose(f)) {
		printf("  cannot write %s\n", path);
		return -EIO;
	}
	return snapshot_read(path, snap, err, errlen);
}

static void test_values(void)
{
	static const char doc[] =
	    " {\"a\": 18446744073709551615, \"b\": -2.5e3, \"c\": [true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],"
	    " \"d\": {}, \"e\": [], \"f\": \"q\\\"\\\\\\/\\b\\f\\r\\t\", \"g\": 0, \"h\": -1} ";
	char err[128];
	struct json_object *j = parse(doc, err, sizeof(err));
	struct json_object *c;

	if (!CHECK(j)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(jsonread_count(j), 8);
	CHECK_EQ_U64(jsonread_u64(jsonread_get(j, "a"), 0), UINT64_MAX);
	CHECK(jsonread_f64(jsonread_get(j, "b"), 0) == -2500.0);
	CHECK_EQ_U64(jsonread_u64(jsonread_get(j, "b"), 7), 7); /* not an exact integer */
	CHECK_EQ_U64(jsonread_u64(jsonread_get(j, "h"), 7), 7); /* not a count */
	CHECK(jsonread_f64(jsonread_get(j, "h"), 0) == -1.0);
	c = jsonread_get(j, "c");
	CHECK(jsonread_is_array(c));
	CHECK_EQ_U64(jsonread_count(c), 4);
	CHECK(jsonread_bool(jsonread_at(c, 0), false));
	CHECK(!jsonread_bool(jsonread_at(c, 1), true));
	/* a null element is there (the count says so) and reads as nothing */
	CHECK(jsonread_at(c, 2) == NULL);
	CHECK(jsonread_bool(jsonread_at(c, 2), true));
	CHECK_STR(jsonread_str(jsonread_at(c, 3)), "x\xc3\xa9\xf0\x9f\x98\x80\n");
	CHECK(jsonread_at(c, 4) == NULL);
	CHECK_STR(jsonread_str(jsonread_get(j, "f")), "q\"\\/\b\f\r\t");
	CHECK_EQ_U64(jsonread_u64(jsonread_get(j, "g"), 1), 0);
	CHECK(!jsonread_is_array(jsonread_get(j, "d")));
	CHECK_EQ_U64(jsonread_count(jsonread_get(j, "d")), 0);
	CHECK(jsonread_is_array(jsonread_get(j, "e")));
	CHECK_EQ_U64(jsonread_count(jsonread_get(j, "a")), 0);
	CHECK(jsonread_get(j, "missing") == NULL);
	CHECK(jsonread_str(jsonread_get(j, "a")) == NULL);
	CHECK(jsonread_get(jsonread_get(j, "a"), "x") == NULL);
	CHECK(jsonread_at(j, 0) == NULL);
	jsonread_release(j);
	jsonread_release(NULL);
}

/* Every malformed document is refused, with what is wrong and where. */
static void test_refusals(void)
{
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{ "", "unexpected end of data at byte 0" },
		{ "{", "unexpected end of data at byte 1" },
		{ "{\"a\" 1}", "object property name separator ':' expected at byte 5" },
		{ "{\"a\":1,}", "unexpected character at byte 7" },
		{ "[1 2]", "array value separator ',' expected at byte 3" },
		{ "[1,]", "unexpected character at byte 3" },
		{ "\"abc", "unexpected end of data at byte 4" },
		{ "\"a\\qb\"", "invalid string sequence at byte 3" },
		{ "\"\\u12\"", "invalid string sequence at byte 5" },
		{ "\"\\ud800x\"", "bad escape in string at byte 1" },
		{ "[\"\\ud800\\u0041\"]", "bad escape in string at byte 2" },
		{ "\"a\x01\"", "control character in string at byte 2" },
		{ "\"a\tb\"", "control character in string at byte 2" },
		{ "tru", "unexpected end of data at byte 3" },
		{ "1 2", "unexpected character at byte 2" },
		{ "-", "unexpected end of data at byte 1" },
		{ "1.2.3", "unexpected character at byte 3" },
		{ "{\"a\":[1,2}", "array value separator ',' expected at byte 9" },
		{ "[1] x", "unexpected character at byte 4" },
		{ "01", "unexpected end of data at byte 2" },
		{ "[NaN]", "unexpected character at byte 1" },
		{ "[1, -Infinity]", "unexpected character at byte 5" },
		{ "{\"a\": 18446744073709551616}", "integer out of range at byte 6" },
		{ "[-9223372036854775809]", "integer out of range at byte 1" },
	};
	char err[256], want[256], deep[200];
	struct json_object *j;
	struct snapshot snap;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = read_doc(bad[i].doc, &snap, err, sizeof(err));

		snprintf(want, sizeof(want), "'%s' is not valid JSON: %s", path, bad[i].msg);
		if (!CHECK_EQ_U64(r, -EBADMSG))
			printf("  accepted: %s\n", bad[i].doc);
		if (!CHECK_STR(err, want))
			printf("  document: %s\n", bad[i].doc);
		snapshot_release(&snap);
	}
	/* at the edges of the ranges integers are kept */
	j = parse("[18446744073709551615, -9223372036854775808, 1e400]", err, sizeof(err));
	CHECK_EQ_U64(jsonread_u64(jsonread_at(j, 0), 0), UINT64_MAX);
	CHECK(jsonread_f64(jsonread_at(j, 1), 0) == -9223372036854775808.0);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(j, 2), 3), 3);
	jsonread_release(j);
	/* a number inside a string is not checked as one */
	j = parse("[\"18446744073709551616 NaN\"]", err, sizeof(err));
	CHECK_STR(jsonread_str(jsonread_at(j, 0)), "18446744073709551616 NaN");
	jsonread_release(j);
	/* nesting: JSONREAD_DEPTH_MAX levels below the top are fine, one more is refused */
	memset(deep, '[', JSONREAD_DEPTH_MAX + 1);
	memset(deep + JSONREAD_DEPTH_MAX + 1, ']', JSONREAD_DEPTH_MAX + 1);
	j = jsonread_parse(deep, 2 * (JSONREAD_DEPTH_MAX + 1), err, sizeof(err));
	CHECK(j != NULL);
	jsonread_release(j);
	memset(deep, '[', JSONREAD_DEPTH_MAX + 2);
	memset(deep + JSONREAD_DEPTH_MAX + 2, ']', JSONREAD_DEPTH_MAX + 2);
	j = jsonread_parse(deep, 2 * (JSONREAD_DEPTH_MAX + 2), err, sizeof(err));
	CHECK(j == NULL);
	CHECK_STR(err, "nested too deep at byte 65");
	/* a document is read only within its length, and not over the limit */
	j = jsonread_parse("[1, 2]xyz", 6, err, sizeof(err));
	CHECK_EQ_U64(jsonread_count(j), 2);
	jsonread_release(j);
	CHECK(jsonread_parse("[1, 2]", JSONREAD_INPUT_MAX + 1ul, err, sizeof(err)) == NULL);
	CHECK_STR(err, "document of 268435457 bytes is over the limit");
	/* files that cannot be read */
	CHECK_EQ_U64(snapshot_read("/nonexistent/snapshot", &snap, err, sizeof(err)), -EIO);
	CHECK_STR(err, "cannot open '/nonexistent/snapshot': No such file or directory");
	CHECK_EQ_U64(snapshot_read(dir, &snap, err, sizeof(err)), -EIO);
	snprintf(want, sizeof(want), "cannot read '%s': not a regular file of at most 268435456 bytes", dir);
	CHECK_STR(err, want);
}

/* Valid JSON that is not a usable snapshot. */
static void test_not_snapshots(void)
{
	static const struct {
		const char *doc, *msg;
		int r;
	} bad[] = {
		{ "{\"a\":1}", "'%s' is not a layerprof heap snapshot", -EBADMSG },
		{ "[1]", "'%s' is not a layerprof heap snapshot", -EBADMSG },
		{ "{\"layerprof_snapshot\":\"1\"}", "'%s' is not a layerprof heap snapshot", -EBADMSG },
		{ "{\"layerprof_snapshot\":-1}", "'%s' is not a layerprof heap snapshot", -EBADMSG },
		{ "{\"layerprof_snapshot\":1.5}", "'%s' is not a layerprof heap snapshot", -EBADMSG },
		{ "{\"layerprof_snapshot\":2,\"sites\":[]}",
		  "snapshot '%s' is of version 2; this layerprof reads version 1", -EPROTONOSUPPORT },
		{ "{\"layerprof_snapshot\":18446744073709551615}",
		  "snapshot '%s' is of version 18446744073709551615; this layerprof reads version 1",
		  -EPROTONOSUPPORT },
		{ "{\"layerprof_snapshot\":1}", "snapshot '%s' has no usable sites array", -EBADMSG },
		{ "{\"layerprof_snapshot\":1,\"sites\":{}}", "snapshot '%s' has no usable sites array", -EBADMSG },
		{ "{\"layerprof_snapshot\":1,\"sites\":[{\"key\":\"a\"},{\"key\":3}]}",
		  "snapshot '%s': site 1 has no key", -EBADMSG },
		{ "{\"layerprof_snapshot\":1,\"sites\":[null]}", "snapshot '%s': site 0 has no key", -EBADMSG },
	};
	char err[256], want[256];
	struct snapshot snap;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_U64(read_doc(bad[i].doc, &snap, err, sizeof(err)), bad[i].r);
		snprintf(want, sizeof(want), bad[i].msg, path);
		if (!CHECK_STR(err, want))
			printf("  document: %s\n", bad[i].doc);
		snapshot_release(&snap);
	}
}

/* live_objects, live_bytes, allocs, frees, bytes_allocated, peak_bytes */
static void check_counts(const uint64_t got[6], const uint64_t want[6])
{
	for (int i = 0; i < 6; i++)
		if (!CHECK_EQ_U64(got[i], want[i]))
			printf("  counter %d\n", i);
}

static void test_read(void)
{
	static const char doc[] =
	    "{\"layerprof_snapshot\":1,\"source\":\"live\",\"trace\":\"t.trace\",\"command\":\"./a\","
	    "\"time_ns\":18446744073709551615,\"origin_ns\":100,\"partial\":true,\"covers_from_ns\":150,"
	    "\"totals\":{\"live_objects\":3,\"live_bytes\":144,\"allocs\":5,\"frees\":2,\"bytes_allocated\":400,"
	    "\"peak_bytes\":300},\"processes\":[{\"pid\":1},{\"pid\":2}],"
	    "\"sites\":[{\"key\":\"leaky+0x4\",\"function\":\"leaky\",\"file\":\"a.c\",\"line\":12,\"live_objects\":3,"
	    "\"live_bytes\":144,\"allocs\":4,\"frees\":1,\"bytes_allocated\":300,\"peak_bytes\":200},"
	    "{\"key\":\"b\",\"file\":null,\"line\":-3,\"live_bytes\":1.5}]}";
	char err[256];
	struct snapshot s;

	if (!CHECK_EQ_U64(read_doc(doc, &s, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(s.version, 1);
	CHECK_STR(s.source, "live");
	CHECK_STR(s.trace, "t.trace");
	CHECK_EQ_U64(s.time_ns, UINT64_MAX);
	CHECK_EQ_U64(s.origin_ns, 100);
	CHECK(s.partial);
	CHECK_EQ_U64(s.covers_from_ns, 150);
	check_counts(
	    (const uint64_t[]){ s.live_objects, s.live_bytes, s.allocs, s.frees, s.bytes_allocated, s.peak_bytes },
	    (const uint64_t[]){ 3, 144, 5, 2, 400, 300 });
	CHECK_EQ_U64(s.nprocesses, 2);
	if (CHECK_EQ_U64(s.nsites, 2)) {
		CHECK_STR(s.sites[0].key, "leaky+0x4");
		CHECK_STR(s.sites[0].function, "leaky");
		CHECK_STR(s.sites[0].file, "a.c");
		CHECK_EQ_U64(s.sites[0].line, 12);
		check_counts((const uint64_t[]){ s.sites[0].live_objects, s.sites[0].live_bytes, s.sites[0].allocs,
		                                 s.sites[0].frees, s.sites[0].bytes_allocated, s.sites[0].peak_bytes },
		             (const uint64_t[]){ 3, 144, 4, 1, 300, 200 });
		CHECK_STR(s.sites[1].key, "b");
		CHECK(s.sites[1].function == NULL);
		CHECK(s.sites[1].file == NULL);
		CHECK_EQ_U64(s.sites[1].line, 0);       /* not a count: the default */
		CHECK_EQ_U64(s.sites[1].live_bytes, 0); /* not an integer */
	}
	snapshot_release(&s);
	/* what is missing takes its default: covers_from_ns the origin */
	if (CHECK_EQ_U64(
	        read_doc("{\"layerprof_snapshot\":1,\"origin_ns\":7,\"partial\":1,\"sites\":[]}", &s, err, sizeof(err)),
	        0)) {
		CHECK_EQ_U64(s.covers_from_ns, 7);
		CHECK(!s.partial);
		CHECK(s.source == NULL);
		CHECK_EQ_U64(s.nsites, 0);
		CHECK_EQ_U64(s.nprocesses, 0);
	}
	snapshot_release(&s);
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
		struct json_object *j;

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
		j = jsonread_parse(buf, len, err, sizeof(err));
		parsed += j != NULL;
		jsonread_release(j);
		free(buf);
	}
	CHECK(parsed > 0);
	CHECK(parsed < 20000);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	test_values();
	test_refusals();
	test_not_snapshots();
	test_read();
	test_damage();
	unlink(path);
	rmdir(dir);
	return check_summary();
}
