/* Unit test of the shared option values: durations, sizes, their display
 * and the filter options. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/util/error.h"
#include "host/lib/util/options.h"
#include "tests/unit/check.h"

static void duration_ok(const char *s, uint64_t want, const char *file, int line)
{
	uint64_t ns = 12345;
	int r = options_parse_duration(s, &ns);

	if (check_eq_u64((uint64_t)r, 0, file, line, s, "accepted"))
		check_eq_u64(ns, want, file, line, s, "its value");
}

static void duration_bad(const char *s, const char *file, int line)
{
	uint64_t ns = 12345;

	check_eq_u64((uint64_t)options_parse_duration(s, &ns), (uint64_t)-EINVAL, file, line, s, "-EINVAL");
	check_eq_u64(ns, 12345, file, line, s, "left alone");
}

#define DURATION_OK(s, want) duration_ok((s), (want), __FILE__, __LINE__)
#define DURATION_BAD(s) duration_bad((s), __FILE__, __LINE__)

static void test_duration(void)
{
	DURATION_OK("0", 0);
	DURATION_OK("0.0", 0);
	DURATION_OK("10ns", 10);
	DURATION_OK("1.5us", 1500);
	DURATION_OK("2ms", 2000000);
	DURATION_OK("1s", 1000000000);
	DURATION_OK("0.25s", 250000000);
	DURATION_OK("2.5ns", 3); /* rounded to the nearest ns */
	DURATION_OK("0.4ns", 0);
	DURATION_OK("1.0004us", 1000);
	DURATION_OK("1000000000s", UINT64_C(1000000000000000000));

	/* a number needs its unit */
	DURATION_BAD("10");
	DURATION_BAD("5");
	DURATION_BAD("2.5");
	DURATION_BAD("");
	DURATION_BAD("ms");
	DURATION_BAD("-1us");
	DURATION_BAD("-1");
	DURATION_BAD("5 m");
	DURATION_BAD("5 ms");
	DURATION_BAD("5m");
	DURATION_BAD("5h");
	DURATION_BAD("5msx");
	DURATION_BAD("5MS");
	DURATION_BAD("1e30s");
	DURATION_BAD("1e30");
	DURATION_BAD("1000000001s");
	DURATION_BAD("nan");
	DURATION_BAD("infs");
	DURATION_BAD("x");
}

static void test_duration_hint(void)
{
	char buf[160];

	CHECK_STR(options_duration_hint("5", buf, sizeof(buf)), "a duration needs a unit: 5ns, 5us, 5ms or 5s");
	CHECK_STR(options_duration_hint("2.5", buf, sizeof(buf)),
	          "a duration needs a unit: 2.5ns, 2.5us, 2.5ms or 2.5s");
	CHECK_STR(options_duration_hint("fast", buf, sizeof(buf)), "expected a duration like 10us");
	CHECK_STR(options_duration_hint("5h", buf, sizeof(buf)), "expected a duration like 10us");
	CHECK_STR(options_duration_hint("-5", buf, sizeof(buf)), "expected a duration like 10us");
}

static void size_ok(const char *s, uint64_t want, const char *file, int line)
{
	uint64_t bytes = 12345;
	int r = options_parse_size(s, &bytes);

	if (check_eq_u64((uint64_t)r, 0, file, line, s, "accepted"))
		check_eq_u64(bytes, want, file, line, s, "its value");
}

static void size_bad(const char *s, const char *file, int line)
{
	uint64_t bytes = 12345;

	check_eq_u64((uint64_t)options_parse_size(s, &bytes), (uint64_t)-EINVAL, file, line, s, "-EINVAL");
	check_eq_u64(bytes, 12345, file, line, s, "left alone");
}

#define SIZE_OK(s, want) size_ok((s), (want), __FILE__, __LINE__)
#define SIZE_BAD(s) size_bad((s), __FILE__, __LINE__)

static void test_size(void)
{
	SIZE_OK("4096", 4096);
	SIZE_OK("0", 0);
	SIZE_OK("64K", 64 << 10);
	SIZE_OK("64k", 64 << 10);
	SIZE_OK("4M", 4 << 20);
	SIZE_OK("4m", 4 << 20);
	SIZE_OK("1G", 1 << 30);
	SIZE_OK("4MiB", 4 << 20);
	SIZE_OK("64KiB", 64 << 10);
	SIZE_OK("3GiB", UINT64_C(3) << 30);

	SIZE_BAD("");
	SIZE_BAD("x");
	SIZE_BAD("-1");
	SIZE_BAD("-1K");
	SIZE_BAD("K");
	SIZE_BAD("4T");
	SIZE_BAD("4 M");
	SIZE_BAD("4MiBx");
	SIZE_BAD("4Mx");
	SIZE_BAD("1.5M");
	SIZE_BAD("99999999999999999999");
	SIZE_BAD("17179869184G"); /* overflows 64 bits once scaled */
	SIZE_BAD(" -1");
	SIZE_BAD(" 4M");
	SIZE_BAD("4Mi");
	SIZE_OK("4MB", 4 << 20);
	SIZE_OK("17179869183G", UINT64_C(17179869183) << 30);
}

static void test_format_duration(void)
{
	char buf[32], small[6];

	CHECK_STR(options_format_duration(0, buf, sizeof(buf)), "0 ns");
	CHECK_STR(options_format_duration(123, buf, sizeof(buf)), "123 ns");
	CHECK_STR(options_format_duration(999, buf, sizeof(buf)), "999 ns");
	CHECK_STR(options_format_duration(1000, buf, sizeof(buf)), "1.000 us");
	CHECK_STR(options_format_duration(4567, buf, sizeof(buf)), "4.567 us");
	CHECK_STR(options_format_duration(999999, buf, sizeof(buf)), "999.999 us");
	CHECK_STR(options_format_duration(1000000, buf, sizeof(buf)), "1.000 ms");
	CHECK_STR(options_format_duration(1234000, buf, sizeof(buf)), "1.234 ms");
	CHECK_STR(options_format_duration(1234567, buf, sizeof(buf)), "1.235 ms");
	CHECK_STR(options_format_duration(1000000000, buf, sizeof(buf)), "1.000 s");
	CHECK_STR(options_format_duration(999999499, buf, sizeof(buf)), "999.999 ms");
	CHECK_STR(options_format_duration(999999500, buf, sizeof(buf)), "1.000 s");
	CHECK_STR(options_format_duration(999999999, buf, sizeof(buf)), "1.000 s");
	CHECK_STR(options_format_duration(2345000000u, buf, sizeof(buf)), "2.345 s");
	CHECK_STR(options_format_duration(UINT64_C(3600) * 1000000000, buf, sizeof(buf)), "3600.000 s");
	/* the result is the buffer, cut to its size */
	CHECK(options_format_duration(4567, buf, sizeof(buf)) == buf);
	CHECK_STR(options_format_duration(4567, small, sizeof(small)), "4.567");
}

/* The message of the last failing parse_bad(). */
static char bad[LP_ERROR_MAX];

/* Runs options_filter_parse on a value it should refuse, keeping its message. */
static int parse_bad(struct filter_opts *f, int code, const char *arg)
{
	bad[0] = '\0';
	return options_filter_parse(f, code, arg, bad, sizeof(bad));
}

static void test_filter_opts(void)
{
	struct filter_opts f;
	char pattern[16];
	int i;

	memset(&f, 0, sizeof(f));
	CHECK(!options_filter_any(&f));
	CHECK_EQ_U64(options_filter_parse(&f, 'z', "x", NULL, 0), 0); /* not a filter option */
	CHECK(!options_filter_any(&f));

	CHECK_EQ_U64(options_filter_parse(&f, OPT_ONLY, "main", NULL, 0), 1);
	CHECK_EQ_U64(options_filter_parse(&f, OPT_ONLY, "foo*", NULL, 0), 1);
	CHECK_EQ_U64(options_filter_parse(&f, OPT_EXCLUDE, "bar", NULL, 0), 1);
	CHECK_EQ_U64(f.n_only, 2);
	CHECK_STR(f.only[1], "foo*");
	CHECK_EQ_U64(f.n_exclude, 1);
	CHECK_STR(f.exclude[0], "bar");
	CHECK(options_filter_any(&f));
	CHECK_EQ_U64(parse_bad(&f, OPT_ONLY, ""), -EINVAL);
	CHECK_STR(bad, "empty function pattern");
	CHECK_EQ_U64(f.n_only, 2);
	for (i = 2; i < OPTIONS_PATTERNS_MAX; i++)
		CHECK_EQ_U64(options_filter_parse(&f, OPT_ONLY, "p", NULL, 0), 1);
	snprintf(pattern, sizeof(pattern), "one-too-many");
	CHECK_EQ_U64(parse_bad(&f, OPT_ONLY, pattern), -EINVAL);
	CHECK_STR(bad, "too many patterns (at most 64)");
	CHECK_EQ_U64(f.n_only, OPTIONS_PATTERNS_MAX);

	memset(&f, 0, sizeof(f));
	CHECK_EQ_U64(options_filter_parse(&f, OPT_DEPTH, "3", NULL, 0), 1);
	CHECK_EQ_U64(f.depth, 3);
	CHECK(options_filter_any(&f));
	CHECK_EQ_U64(parse_bad(&f, OPT_DEPTH, "0"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_DEPTH, "-1"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_DEPTH, "3x"), -EINVAL);
	CHECK_STR(bad, "invalid --depth '3x': expected a number from 1");
	CHECK_EQ_U64(parse_bad(&f, OPT_DEPTH, ""), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_DEPTH, "1000001"), -EINVAL);
	CHECK_EQ_U64(f.depth, 3);

	memset(&f, 0, sizeof(f));
	CHECK_EQ_U64(options_filter_parse(&f, OPT_MIN_TIME, "10us", NULL, 0), 1);
	CHECK_EQ_U64(f.min_ns, 10000);
	CHECK(options_filter_any(&f));
	CHECK_EQ_U64(parse_bad(&f, OPT_MIN_TIME, "10 us"), -EINVAL);

	memset(&f, 0, sizeof(f));
	CHECK_EQ_U64(options_filter_parse(&f, OPT_TID, "12,13", NULL, 0), 1);
	CHECK_EQ_U64(options_filter_parse(&f, OPT_TID, "4294967295", NULL, 0), 1);
	CHECK_EQ_U64(f.n_tids, 3);
	CHECK_EQ_U64(f.tids[0], 12);
	CHECK_EQ_U64(f.tids[1], 13);
	CHECK_EQ_U64(f.tids[2], UINT32_MAX);
	CHECK(options_filter_any(&f));
	CHECK_EQ_U64(parse_bad(&f, OPT_TID, "12,,13"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_TID, "0"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_TID, "4294967296"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_TID, "x"), -EINVAL);
	CHECK_EQ_U64(parse_bad(&f, OPT_TID, "12;13"), -EINVAL);
	CHECK_STR(bad, "invalid --tid '12;13': expected thread ids like 1234,1235");
	/* no error wanted: only the result */
	CHECK_EQ_U64(options_filter_parse(&f, OPT_TID, "x", NULL, 0), -EINVAL);
}

int main(void)
{
	test_duration();
	test_duration_hint();
	test_size();
	test_format_duration();
	test_filter_opts();
	return check_summary();
}
