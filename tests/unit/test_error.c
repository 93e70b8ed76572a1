/* Unit test of host/lib's error messages and warnings (util/error.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/util/error.h"
#include "tests/unit/check.h"

struct seen {
	char lines[4][64];
	int n;
};

static void keep(void *ctx, const char *msg)
{
	struct seen *s = ctx;

	if (s->n < 4)
		snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", msg);
	s->n++;
}

static void test_set(void)
{
	char err[16], small[6];

	memset(err, 'x', sizeof(err));
	CHECK_EQ_U64(error_set(err, sizeof(err), -EINVAL, "bad '%s'", "v"), -EINVAL);
	CHECK_STR(err, "bad 'v'");
	/* cut to the buffer, always terminated */
	CHECK_EQ_U64(error_set(small, sizeof(small), -EIO, "cannot write '%s'", "out"), -EIO);
	CHECK_STR(small, "canno");
	/* no buffer: only the code */
	CHECK_EQ_U64(error_set(NULL, 0, -ENOMEM, "out of memory"), -ENOMEM);
	err[0] = 'k';
	CHECK_EQ_U64(error_set(err, 0, -ENOMEM, "out of memory"), -ENOMEM);
	CHECK(err[0] == 'k');
}

static void test_warn(void)
{
	struct seen s = { .n = 0 };
	struct lp_warner w = { keep, &s };
	struct lp_warner none = { NULL, &s };

	error_warn(&w, "warning: %s '%s'", "-F", "main");
	error_warn(&w, "second %d", 2);
	error_warn(&none, "dropped");
	error_warn(NULL, "dropped");
	CHECK_EQ_U64(s.n, 2);
	CHECK_STR(s.lines[0], "warning: -F 'main'");
	CHECK_STR(s.lines[1], "second 2");
}

int main(void)
{
	test_set();
	test_warn();
	return check_summary();
}
