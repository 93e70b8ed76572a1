/* Unit test of common/meta: the META text for given values, as the
 * recorder and the agent write it (docs/format.md), and the command cut to
 * the buffer. */
#include <string.h>

#include "common/meta.h"
#include "common/systab.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

static void fixed(struct meta *m)
{
	meta_init(m);
	m->version = "0.1.0";
	strcpy(m->uts.nodename, "board");
	strcpy(m->uts.release, "6.1.0");
	m->arch = "x86_64";
	m->start_monotonic_ns = 123456789;
}

static void test_record(void)
{
	char *argv[] = { "./prog", "a b", "two\nlines", NULL };
	char buf[META_MAX], want[512];
	struct meta m;
	size_t n;

	fixed(&m);
	m.clock = LP_CLOCK_MONOTONIC;
	m.buffer_size = 1048576;
	m.ring_wait = true;
	m.has_realtime = true;
	m.start_realtime = 1700000000;
	m.filtered = true;
	m.syscalls = true;
	m.mem = META_MEM_OPTIONS;
	m.mem_depth = 16;
	m.mem_keep_alive = true;
	m.mem_fold_ns = 1000000;
	m.argc = 3;
	m.argv = argv;
	n = meta_format(&m, buf, sizeof(buf));
	snprintf(want, sizeof(want),
	         "layerprof=0.1.0\nhost=board\nkernel=6.1.0\narch=x86_64\nclock=monotonic\nbuffer_size=1048576\n"
	         "ring_full=wait\nstart_monotonic_ns=123456789\nstart_realtime=1700000000\nfiltered=1\n"
	         "syscall_arch=%s\nmemory=1\nmem_depth=16\nmem_keep_alive=1\nmem_fold_ns=1000000\n"
	         "command=./prog a b two lines\n",
	         sys_arch_name(sys_arch_native()));
	CHECK_STR(buf, want);
	CHECK_EQ_U64(n, strlen(want));
}

static void test_agent(void)
{
	char *argv[] = { "attach 42", NULL };
	char buf[META_MAX];
	struct meta m;

	fixed(&m);
	m.clock = LP_CLOCK_TSC;
	m.has_session = true;
	m.session = 3;
	m.pid = 42;
	m.attached = true;
	m.mem = META_MEM_ON;
	m.argc = 1;
	m.argv = argv;
	meta_format(&m, buf, sizeof(buf));
	CHECK_STR(buf, "layerprof=0.1.0\nhost=board\nkernel=6.1.0\narch=x86_64\nclock=counter\nsession=3\npid=42\n"
	               "ring_full=discard\nstart_monotonic_ns=123456789\nfiltered=0\nattached=1\nmemory=1\n"
	               "command=attach 42\n");
}

static void test_cut(void)
{
	char *argv[] = { "0123456789", "abcdefghij", NULL };
	char buf[META_MAX], small[META_MAX];
	struct meta m;
	size_t n, head, cut;

	fixed(&m);
	m.argc = 2;
	m.argv = argv;
	n = meta_format(&m, buf, sizeof(buf));
	head = n - strlen("command=0123456789 abcdefghij\n");
	CHECK_STR(buf + head, "command=0123456789 abcdefghij\n");
	/* a buffer too small for it all: the command is cut, its line ends */
	memset(small, 'x', sizeof(small));
	cut = meta_format(&m, small, head + 16);
	CHECK_EQ_U64(cut, head + 15);
	CHECK_STR(small + head, "command=012345\n");
	CHECK_EQ_U64(small[head + 16], 'x'); /* nothing past the size */
	/* a header longer than the buffer: still one line end, bounded */
	memset(small, 'x', sizeof(small));
	cut = meta_format(&m, small, 64);
	CHECK_EQ_U64(cut, 63);
	CHECK_EQ_U64(small[62], '\n');
	CHECK_EQ_U64(small[63], '\0');
	CHECK_EQ_U64(small[64], 'x');
	CHECK(!memcmp(small, buf, 62));
}

int main(void)
{
	test_record();
	test_agent();
	test_cut();
	return check_summary();
}
