/* The unit tests' checking helpers: each check counts a pass or prints
 * "FAIL file:line: ..." and counts a failure; check_summary() ends a test.
 * Meant for one test program per translation unit (the counters are static). */
#ifndef LP_TEST_CHECK_H
#define LP_TEST_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A loop that goes wrong fails thousands of times; the first failures say
 * enough, the rest are only counted. */
#define CHECK_PRINT_MAX 50u

static unsigned long check_passed, check_failed;

static inline int check_fail_shown(const char *file, int line)
{
	check_failed++;
	if (check_failed > CHECK_PRINT_MAX) {
		if (check_failed == CHECK_PRINT_MAX + 1)
			printf("FAIL %s:%d: more failures, not shown\n", file, line);
		return 0;
	}
	printf("FAIL %s:%d: ", file, line);
	return 1;
}

static inline int check_true(int ok, const char *file, int line, const char *expr)
{
	if (ok) {
		check_passed++;
		return 1;
	}
	if (check_fail_shown(file, line))
		printf("%s\n", expr);
	return 0;
}

/* Prints a value both ways, so that negative errno codes read as such. */
static inline void check_print_u64(uint64_t v)
{
	printf("%" PRIu64 " (%#" PRIx64, v, v);
	if (v >> 63)
		printf(", %" PRId64, (int64_t)v);
	printf(")");
}

static inline int check_eq_u64(uint64_t got, uint64_t want, const char *file, int line, const char *got_expr,
                               const char *want_expr)
{
	if (got == want) {
		check_passed++;
		return 1;
	}
	if (check_fail_shown(file, line)) {
		printf("%s == %s: got ", got_expr, want_expr);
		check_print_u64(got);
		printf(", want ");
		check_print_u64(want);
		printf("\n");
	}
	return 0;
}

static inline int check_str(const char *got, const char *want, const char *file, int line, const char *got_expr)
{
	if ((!got && !want) || (got && want && !strcmp(got, want))) {
		check_passed++;
		return 1;
	}
	if (check_fail_shown(file, line))
		printf("%s:\n  got  \"%s\"\n  want \"%s\"\n", got_expr, got ? got : "(null)", want ? want : "(null)");
	return 0;
}

/* Each evaluates its arguments once and yields 1 when the check passed,
 * so that a test can stop early: if (!CHECK(p)) return; */
#define CHECK(cond) check_true(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ_U64(a, b) check_eq_u64((uint64_t)(a), (uint64_t)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_STR(a, b) check_str((a), (b), __FILE__, __LINE__, #a)

/* Prints "N passed, N failed" and returns the test's exit code. */
static inline int check_summary(void)
{
	printf("%lu passed, %lu failed\n", check_passed, check_failed);
	fflush(stdout);
	return check_failed ? 1 : 0;
}

#endif
