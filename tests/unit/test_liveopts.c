/* Unit test of live/opts: the word splitter shared by the commands typed to
 * `live` (with backslashes) and the filter words serve's page sends (in
 * place, without them); the rules on --attach with the dynamic tracer. */
#include <errno.h>
#include <string.h>

#include "host/lib/live/opts.h"
#include "tests/unit/check.h"

#define WORDS_MAX 8

/* Splits line and joins the words with '|' into out. */
static int split(const char *line, bool backslash, bool in_place, char *out, size_t size)
{
	char copy[256], buf[256], *words[WORDS_MAX];
	int n, i;
	size_t len = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	n = liveopts_split_words(copy, in_place ? copy : buf, words, WORDS_MAX, backslash);
	out[0] = '\0';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? "|" : "", words[i]);
	return n;
}

static void test_words(void)
{
	static const struct {
		const char *line;
		bool backslash;
		int n;
		const char *words;
	} cases[] = {
		{ "", true, 0, "" },
		{ " \t\r\n", true, 0, "" },
		{ "filter -F 'a b*'", true, 3, "filter|-F|a b*" },
		{ "  save  \"my dir\"  ", true, 2, "save|my dir" },
		{ "a\\ b c", true, 2, "a b|c" },
		{ "a\\ b c", false, 3, "a\\|b|c" },
		{ "'a\\b' \"c\\\"d\"", true, 2, "a\\b|c\"d" },
		{ "x\ny\rz", false, 3, "x|y|z" },
		{ "ab''cd \"\"", true, 2, "abcd|" },
	};
	char out[256];
	size_t i;
	int k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (k = 0; k < 2; k++) {
			int n = split(cases[i].line, cases[i].backslash, k, out, sizeof(out));

			CHECK_EQ_U64((uint64_t)n, (uint64_t)cases[i].n);
			CHECK_STR(out, cases[i].words);
		}
	}
	CHECK_EQ_U64((uint64_t)split("a 'b", true, false, out, sizeof(out)), (uint64_t)-EINVAL); /* open quote */
	CHECK_EQ_U64((uint64_t)split("1 2 3 4 5 6 7 8 9", true, true, out, sizeof(out)), (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)split("1 2 3 4 5 6 7 8", true, true, out, sizeof(out)), 8);
	CHECK_STR(out, "1|2|3|4|5|6|7|8");
}

/* The options given (LIVEOPT_* codes, arguments) checked together with
 * --attach 42: 0, or -EINVAL with the reason's start in want. */
static void attach_case(const int *codes, const char *const *args, size_t n, int want, const char *why)
{
	struct liveopts o;
	char err[256] = "";
	size_t i;

	liveopts_init(&o);
	o.connect = "unix:/nowhere/agent.sock";
	CHECK_EQ_U64((uint64_t)liveopts_parse(&o, LIVEOPT_ATTACH, "42", err, sizeof(err)), 1);
	for (i = 0; i < n; i++)
		CHECK_EQ_U64((uint64_t)liveopts_parse(&o, codes[i], args[i], err, sizeof(err)), 1);
	CHECK_EQ_U64((uint64_t)liveopts_check(&o, NULL, 0, true, err, sizeof(err)), (uint64_t)want);
	if (why)
		CHECK(!strncmp(err, why, strlen(why)));
}

static void test_attach(void)
{
	static const int dyn[] = { LIVEOPT_DYNAMIC }, dyn_glob[] = { LIVEOPT_DYNAMIC, LIVEOPT_SYSCALLS },
	                 lib[] = { LIVEOPT_DYNAMIC, LIVEOPT_LIBCALLS }, mem[] = { LIVEOPT_DYNAMIC, LIVEOPT_MEMORY };
	static const char *const none[] = { NULL, NULL }, *glob[] = { "f*,g", NULL };

	/* a running program traced by uprobes: --dynamic[=LIST] with --attach */
	attach_case(dyn, none, 1, 0, NULL);
	attach_case(dyn_glob, glob, 2, 0, NULL);
	/* the patch backend is set up as a program starts */
	attach_case(lib, none, 2, -EINVAL, "--libcalls needs the patch backend");
	attach_case(lib + 1, none, 1, -EINVAL, "--libcalls needs the patch backend");
	/* heap operations come through the runtime's rings */
	attach_case(mem, none, 2, -EINVAL, "--memory with --attach --dynamic");
}

int main(void)
{
	test_words();
	test_attach();
	return check_summary();
}
