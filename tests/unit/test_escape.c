/* Unit test of the export escaping: XML/HTML, JSON safe inside <script>,
 * folded-stack frames, and UTF-8 checking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/escape.h"
#include "tests/unit/check.h"

/* Runs one writer into memory and returns what it wrote (static buffer). */
static const char *written(void (*fn)(FILE *, const char *), const char *in)
{
	static char out[4096];
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);

	if (!f)
		return "(open_memstream failed)";
	fn(f, in);
	fclose(f);
	snprintf(out, sizeof(out), "%s", mem ? mem : "");
	free(mem);
	return out;
}

static void test_utf8(void)
{
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"a", 1), 1);
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xc3\xa9", 2), 2);         /* é */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xe2\x82\xac", 3), 3);     /* € */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4); /* emoji */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xc3\xa9", 1), 0);         /* cut short */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\x80", 1), 0);             /* stray continuation */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xc0\xaf", 2), 0);         /* overlong '/' */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);     /* overlong */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xed\xa0\x80", 3), 0);     /* surrogate */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0); /* past U+10FFFF */
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xff", 1), 0);
	CHECK_EQ_U64(escape_utf8_len((const unsigned char *)"\xc3\x28", 2), 0); /* bad continuation */
}

static void test_xml(void)
{
	CHECK_STR(written(escape_xml, "plain"), "plain");
	CHECK_STR(written(escape_xml, ""), "");
	CHECK_STR(written(escape_xml, "a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
	CHECK_STR(written(escape_xml, "std::vector<int, std::allocator<int> >::push_back(int const&)"),
	          "std::vector&lt;int, std::allocator&lt;int&gt; &gt;::push_back(int const&amp;)");
	CHECK_STR(written(escape_xml, "tab\tnl\ncr\r"), "tab&#9;nl&#10;cr&#13;");
	/* control characters are not allowed in XML 1.0, even as references */
	CHECK_STR(written(escape_xml, "a\x01z\x7f"), "a\xef\xbf\xbdz\xef\xbf\xbd");
	CHECK_STR(written(escape_xml, "caf\xc3\xa9"), "caf\xc3\xa9");
	CHECK_STR(written(escape_xml, "bad\xff\xfe!"), "bad\xef\xbf\xbd\xef\xbf\xbd!");
	CHECK_STR(written(escape_xml, "cut\xe2\x82"), "cut\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_STR(written(escape_xml, "]]>"), "]]&gt;");
}

static void test_json(void)
{
	CHECK_STR(written(escape_json, "main"), "\"main\"");
	CHECK_STR(written(escape_json, ""), "\"\"");
	CHECK_STR(written(escape_json, "q\"b\\"), "\"q\\\"b\\\\\"");
	CHECK_STR(written(escape_json, "a\nb\tc\rd\x01"), "\"a\\nb\\tc\\rd\\u0001\"");
	/* safe inside <script>: no "</script>" can appear */
	CHECK_STR(written(escape_json, "</script><b>&"), "\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\"");
	CHECK_STR(written(escape_json, "x\xe2\x80\xa8y\xe2\x80\xa9"), "\"x\\u2028y\\u2029\"");
	CHECK_STR(written(escape_json, "caf\xc3\xa9 \xe2\x82\xac"), "\"caf\xc3\xa9 \xe2\x82\xac\"");
	CHECK_STR(written(escape_json, "\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
}

/* JSON outside HTML: the same escapes and UTF-8 checking, with < > & and
 * the line separators left as they are. */
static void test_json_plain(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "main", "\"main\"" },
		{ "", "\"\"" },
		{ "q\"b\\", "\"q\\\"b\\\\\"" },
		{ "a\nb\tc\rd\x01\x7f", "\"a\\nb\\tc\\rd\\u0001\\u007f\"" },
		{ "bool ns::Box<int>::operator<(int const&)", "\"bool ns::Box<int>::operator<(int const&)\"" },
		{ "x\xe2\x80\xa8y", "\"x\xe2\x80\xa8y\"" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
		{ "odd\xff\xfename", "\"odd\xef\xbf\xbd\xef\xbf\xbdname\"" },
		{ "cut\xe2\x82", "\"cut\xef\xbf\xbd\xef\xbf\xbd\"" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_STR(written(escape_json_plain, cases[i].in), cases[i].want);
}

static void test_folded(void)
{
	char buf[64];

	CHECK_EQ_U64(escape_folded_frame("main", buf, sizeof(buf)), 4);
	CHECK_STR(buf, "main");
	escape_folded_frame("a;b", buf, sizeof(buf));
	CHECK_STR(buf, "a:b");
	escape_folded_frame("operator()(int) const", buf, sizeof(buf));
	CHECK_STR(buf, "operator()(int) const");
	escape_folded_frame("new\nline\x01", buf, sizeof(buf));
	CHECK_STR(buf, "new?line?");
	escape_folded_frame("x\xff", buf, sizeof(buf));
	CHECK_STR(buf, "x\xef\xbf\xbd");
	/* cut at a character boundary, always terminated */
	CHECK_EQ_U64(escape_folded_frame("abcdef", buf, 4), 3);
	CHECK_STR(buf, "abc");
	CHECK_EQ_U64(escape_folded_frame("a\xc3\xa9", buf, 3), 1);
	CHECK_STR(buf, "a");
	CHECK_EQ_U64(escape_folded_frame("abc", buf, 1), 0);
	CHECK_STR(buf, "");
}

int main(void)
{
	test_utf8();
	test_xml();
	test_json();
	test_json_plain();
	test_folded();
	return check_summary();
}
