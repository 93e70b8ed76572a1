/* Unit test of the counter names (common/ctrnames.c): every name perf
 * lists for the generic, cache and software events gives exactly the type
 * and config perf opens, raw events parse as hex, and lists with unknown
 * names, duplicates (also under another name) and too many are refused. */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "common/ctrnames.h"
#include "common/launch.h"
#include "tests/unit/check.h"

static void want(const char *name, uint32_t type, uint64_t config)
{
	struct ctrname c;

	if (!CHECK_EQ_U64(ctrname_lookup(name, &c), 0)) {
		printf("  (name '%s')\n", name);
		return;
	}
	CHECK_EQ_U64(c.type, type);
	if (!CHECK_EQ_U64(c.config, config))
		printf("  (name '%s')\n", name);
	CHECK_STR(c.name, name);
}

static void test_generic(void)
{
	want("cycles", 0, 0);
	want("cpu-cycles", 0, 0);
	want("instructions", 0, 1);
	want("cache-references", 0, 2);
	want("cache-misses", 0, 3);
	want("branches", 0, 4);
	want("branch-instructions", 0, 4);
	want("branch-misses", 0, 5);
	want("bus-cycles", 0, 6);
	want("stalled-cycles-frontend", 0, 7);
	want("idle-cycles-frontend", 0, 7);
	want("stalled-cycles-backend", 0, 8);
	want("idle-cycles-backend", 0, 8);
	want("ref-cycles", 0, 9);
}

static void test_software(void)
{
	want("cpu-clock", 1, 0);
	want("task-clock", 1, 1);
	want("page-faults", 1, 2);
	want("faults", 1, 2);
	want("context-switches", 1, 3);
	want("cs", 1, 3);
	want("cpu-migrations", 1, 4);
	want("migrations", 1, 4);
	want("minor-faults", 1, 5);
	want("major-faults", 1, 6);
	want("alignment-faults", 1, 7);
	want("emulation-faults", 1, 8);
}

static void test_cache(void)
{
	/* config = cache | op << 8 | result << 16 */
	want("L1-dcache-loads", 3, 0x00000);
	want("L1-dcache-load-misses", 3, 0x10000);
	want("L1-dcache-stores", 3, 0x00100);
	want("L1-dcache-store-misses", 3, 0x10100);
	want("L1-dcache-prefetches", 3, 0x00200);
	want("L1-dcache-prefetch-misses", 3, 0x10200);
	want("L1-icache-loads", 3, 0x00001);
	want("L1-icache-load-misses", 3, 0x10001);
	want("LLC-loads", 3, 0x00002);
	want("LLC-load-misses", 3, 0x10002);
	want("LLC-stores", 3, 0x00102);
	want("LLC-store-misses", 3, 0x10102);
	want("dTLB-loads", 3, 0x00003);
	want("dTLB-load-misses", 3, 0x10003);
	want("dTLB-stores", 3, 0x00103);
	want("dTLB-store-misses", 3, 0x10103);
	want("iTLB-loads", 3, 0x00004);
	want("iTLB-load-misses", 3, 0x10004);
	want("branch-loads", 3, 0x00005);
	want("branch-load-misses", 3, 0x10005);
	want("node-loads", 3, 0x00006);
	want("node-load-misses", 3, 0x10006);
	want("node-stores", 3, 0x00106);
	want("node-store-misses", 3, 0x10106);
	/* perf reads cache names in any case */
	want("l1-dcache-load-misses", 3, 0x10000);
	want("llc-LOADS", 3, 0x00002);
}

static void test_raw(void)
{
	struct ctrname c;

	want("r1", 4, 0x1);
	want("r003c", 4, 0x3c);
	want("r01C2", 4, 0x1c2);
	want("rffffffffffffffff", 4, UINT64_MAX);
	CHECK_EQ_U64(ctrname_lookup("r", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("r12g", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("r10000000000000000", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("rx1", &c), -ENOENT);
}

static void test_unknown(void)
{
	struct ctrname c;

	CHECK_EQ_U64(ctrname_lookup("bogus", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("Cycles", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("L1-dcache", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("L1-dcache-load-miss", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("L2-dcache-loads", &c), -ENOENT);
	CHECK_EQ_U64(ctrname_lookup("L1-dcacheXloads", &c), -ENOENT);
}

static void test_lists(void)
{
	struct ctrname c[LP_COUNTERS_MAX];
	char err[200];
	uint32_t n = 99;

	CHECK_EQ_U64(ctrnames_parse(CTRNAMES_DEFAULT, c, &n, err, sizeof(err)), 0);
	CHECK_EQ_U64(n, 7);
	CHECK_STR(c[0].name, "cycles");
	CHECK_EQ_U64(c[0].type, 0);
	CHECK_EQ_U64(c[1].config, 1);
	CHECK_EQ_U64(c[4].type, 1);
	CHECK_EQ_U64(c[4].config, 1);
	CHECK_EQ_U64(c[6].config, 3);
	CHECK(!ctrname_is_software(&c[3]));
	CHECK(ctrname_is_software(&c[5]));

	CHECK_EQ_U64(ctrnames_parse("task-clock", c, &n, err, sizeof(err)), 0);
	CHECK_EQ_U64(n, 1);

	CHECK_EQ_U64(ctrnames_parse("task-clock,bogus", c, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "unknown counter 'bogus' (see `perf list`; raw events as rNNNN, hex)");
	CHECK_EQ_U64(ctrnames_parse("task-clock,,cs", c, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "empty counter name in 'task-clock,,cs'");
	CHECK_EQ_U64(ctrnames_parse("", c, &n, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(ctrnames_parse("cs,page-faults,cs", c, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "counter 'cs' given twice");
	CHECK_EQ_U64(ctrnames_parse("cycles,cpu-cycles", c, &n, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "counters 'cycles' and 'cpu-cycles' are the same event");
	CHECK_EQ_U64(ctrnames_parse("r0,cycles", c, &n, err, sizeof(err)), 0); /* raw 0 is not hardware 0 */

	CHECK_EQ_U64(ctrnames_parse("cycles,instructions,cache-references,cache-misses,branches,branch-misses,"
	                            "bus-cycles,ref-cycles,task-clock,page-faults,cs,migrations",
	                            c, &n, err, sizeof(err)),
	             0);
	CHECK_EQ_U64(n, LP_COUNTERS_MAX);
	CHECK_EQ_U64(ctrnames_parse("cycles,instructions,cache-references,cache-misses,branches,branch-misses,"
	                            "bus-cycles,ref-cycles,task-clock,page-faults,cs,migrations,minor-faults",
	                            c, &n, err, sizeof(err)),
	             -E2BIG);
	CHECK_STR(err, "too many counters: at most 12");
}

/* What the recorder hands the runtime (LAYERPROF_COUNTERS). */
static void test_env(void)
{
	struct ctrname c[LP_COUNTERS_MAX];
	char err[200], buf[512], small[40];
	uint32_t n;

	CHECK_EQ_U64(ctrnames_parse("task-clock,L1-dcache-load-misses,r1a2b,cycles", c, &n, err, sizeof(err)), 0);
	CHECK_EQ_U64(launch_counters_env(c, n, "read", false, buf, sizeof(buf)), 57);
	CHECK_STR(buf, "read=read;scope=all;events=1:0x1,3:0x10000,4:0x1a2b,0:0x0");
	CHECK_EQ_U64(launch_counters_env(c, 1, "rdpmc", true, buf, sizeof(buf)), 34);
	CHECK_STR(buf, "read=rdpmc;scope=user;events=1:0x1");
	CHECK_EQ_U64(launch_counters_env(c, n, "none", true, small, sizeof(small)), -ENAMETOOLONG);
}

int main(void)
{
	test_env();
	test_generic();
	test_software();
	test_cache();
	test_raw();
	test_unknown();
	test_lists();
	return check_summary();
}
