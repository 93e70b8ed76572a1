/* Unit test of the C library functions --libcalls decodes: the table's
 * order and letters, the plan bits made from it, and the text of
 * arguments and results (numbers by type, strings cut and escaped, a
 * pointer without its memory, 32-bit words). */
#include <string.h>

#include "layerprof/format.h"
#include "common/libcsig.h"
#include "tests/unit/check.h"

static void test_table(void)
{
	size_t n;
	const struct libcsig *all = libcsig_all(&n);

	CHECK(n >= 80);
	for (size_t i = 0; i < n; i++) {
		CHECK(i == 0 || strcmp(all[i - 1].name, all[i].name) < 0);
		CHECK(strlen(all[i].args) <= LP_ARGS_MAX);
		CHECK(strspn(all[i].args, "iulxocpsSbO") == strlen(all[i].args));
		CHECK(strchr("iulxpv", all[i].ret) != NULL);
		CHECK(libcsig_find(all[i].name) == &all[i]);
	}
	CHECK(libcsig_find("write@plt") == libcsig_find("write"));
	CHECK(libcsig_find("writev") == NULL);
	CHECK(libcsig_find("writ") == NULL);
	CHECK(libcsig_find("@plt") == NULL);
	CHECK(libcsig_find("") == NULL);
}

static void test_plan(void)
{
	uint32_t a = libcsig_plan(libcsig_find("write"));

	CHECK_EQ_U64(LP_PLAN_ARGS_N(a), 3);
	CHECK(a & LP_PLAN_ARGS_RET);
	CHECK_EQ_U64(LP_PLAN_ARG_KIND(a, 0), LP_ARG_WORD);
	CHECK_EQ_U64(LP_PLAN_ARG_KIND(a, 1), LP_ARG_BUF);
	CHECK_EQ_U64(LP_PLAN_ARG_KIND(a, 2), LP_ARG_WORD);
	a = libcsig_plan(libcsig_find("free"));
	CHECK_EQ_U64(LP_PLAN_ARGS_N(a), 1);
	CHECK(!(a & LP_PLAN_ARGS_RET));
	a = libcsig_plan(libcsig_find("fopen"));
	CHECK_EQ_U64(LP_PLAN_ARG_KIND(a, 0), LP_ARG_STR);  /* the kernel reads the path */
	CHECK_EQ_U64(LP_PLAN_ARG_KIND(a, 1), LP_ARG_CSTR); /* fopen reads the mode */
	a = libcsig_plan(libcsig_find("getpid"));
	CHECK_EQ_U64(a, LP_PLAN_ARGS_RET);
}

static void test_format(void)
{
	char buf[256];
	struct libcsig_args a = { .words = { 1, 0x1000, 6 }, .n = 3 };
	const struct libcsig *w = libcsig_find("write"), *o = libcsig_find("open");

	a.mem[0] = (struct libcsig_mem){ .bytes = (const uint8_t *)"hi\n\t\"\\\x01", .len = 7, .index = 1 };
	a.nmem = 1;
	CHECK_STR(libcsig_format_args(w, &a, 64, buf, sizeof(buf)), "1, \"hi\\n\\t\\\"\\\\\\001\", 6");
	a.mem[0].cut = 1;
	CHECK_STR(libcsig_format_args(w, &a, 64, buf, sizeof(buf)), "1, \"hi\\n\\t\\\"\\\\\\001\"..., 6");
	a.nmem = 0; /* the memory was not readable */
	CHECK_STR(libcsig_format_args(w, &a, 64, buf, sizeof(buf)), "1, 0x1000, 6");
	a.words[1] = 0;
	CHECK_STR(libcsig_format_args(w, &a, 64, buf, sizeof(buf)), "1, NULL, 6");
	CHECK_STR(libcsig_format_ret(w, (uint64_t)-1, 64, buf, sizeof(buf)), "-1");
	CHECK_STR(libcsig_format_ret(w, 0xffffffffu, 32, buf, sizeof(buf)), "-1");
	CHECK_STR(libcsig_format_ret(libcsig_find("free"), 5, 64, buf, sizeof(buf)), "");
	CHECK_STR(libcsig_format_ret(libcsig_find("malloc"), 0, 64, buf, sizeof(buf)), "NULL");
	CHECK_STR(libcsig_format_ret(libcsig_find("close"), 0xffffffff00000003ull, 64, buf, sizeof(buf)), "3");
	/* open: the mode only with O_CREAT */
	a = (struct libcsig_args){ .words = { 0x2000, 0, 0777 }, .n = 3 };
	CHECK_STR(libcsig_format_args(o, &a, 64, buf, sizeof(buf)), "0x2000, 0x0");
	a.words[1] = 0101;
	CHECK_STR(libcsig_format_args(o, &a, 64, buf, sizeof(buf)), "0x2000, 0x41, 0777");
	/* a character, and a number that is none */
	a = (struct libcsig_args){ .words = { 0x3000, 'A', 5 }, .n = 3 };
	CHECK_STR(libcsig_format_args(libcsig_find("memset"), &a, 64, buf, sizeof(buf)), "0x3000, 'A', 5");
	a.words[1] = 0;
	CHECK_STR(libcsig_format_args(libcsig_find("memset"), &a, 64, buf, sizeof(buf)), "0x3000, 0, 5");
	/* a small buffer cuts, NUL-terminated */
	a.words[1] = 'A';
	CHECK_STR(libcsig_format_args(libcsig_find("memset"), &a, 64, buf, 8), "0x3000,");
}

int main(void)
{
	test_table();
	test_plan();
	test_format();
	return check_summary();
}
