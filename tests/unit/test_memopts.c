/* Unit test of common/memopts: the heap options accepted and refused, with
 * the messages of the command line and of the agent's START. */
#include <errno.h>
#include <string.h>

#include "common/memopts.h"
#include "runtime/memtrace.h"
#include "tests/unit/check.h"

static void test_depth(void)
{
	struct memopts m = { 0 };
	char err[256] = "";

	CHECK_EQ_U64(memopts_depth(&m), LP_MEM_DEPTH_DEFAULT);
	CHECK_EQ_U64(memopts_set_depth(&m, "1", MEMOPTS_OPTIONS, err, sizeof(err)), 0);
	CHECK_EQ_U64(m.depth, 1);
	CHECK_EQ_U64(memopts_set_depth(&m, "64", MEMOPTS_OPTIONS, err, sizeof(err)), 0);
	CHECK_EQ_U64(memopts_depth(&m), 64);
	CHECK_EQ_U64(memopts_set_depth(&m, "65", MEMOPTS_OPTIONS, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid --mem-depth '65': expected 1 to 64");
	CHECK_EQ_U64(m.depth, 64); /* unchanged */
	CHECK_EQ_U64(memopts_set_depth(&m, "0", MEMOPTS_OPTIONS, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(memopts_set_depth(&m, "", MEMOPTS_OPTIONS, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid --mem-depth '': expected 1 to 64");
	CHECK_EQ_U64(memopts_set_depth(&m, "8x", MEMOPTS_START, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid mem_depth '8x': 1 to 64");
	CHECK_EQ_U64(memopts_set_depth(&m, "99999999999999999999999", MEMOPTS_START, err, sizeof(err)), -EINVAL);
}

static void test_start_keys(void)
{
	struct memopts m = { 0 };
	char err[256] = "";

	CHECK_EQ_U64(memopts_set_key(&m, "memory", "1", err, sizeof(err)), 0);
	CHECK(m.on);
	CHECK_EQ_U64(memopts_set_key(&m, "keep_alive", "1", err, sizeof(err)), 0);
	CHECK(m.keep_alive);
	CHECK_EQ_U64(memopts_set_key(&m, "keep_alive", "yes", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid keep_alive 'yes': 1 or 0");
	CHECK_EQ_U64(memopts_set_key(&m, "mem_depth", "32", err, sizeof(err)), 0);
	CHECK_EQ_U64(m.depth, 32);
	CHECK_EQ_U64(memopts_set_key(&m, "mem_fold", "1000", err, sizeof(err)), 0);
	CHECK_EQ_U64(m.fold_ns, 1000);
	CHECK_EQ_U64(memopts_set_key(&m, "mem_fold", "3600000000000", err, sizeof(err)), 0);
	CHECK_EQ_U64(memopts_set_key(&m, "mem_fold", "3600000000001", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid mem_fold '3600000000001': 1 to 3600000000000 ns");
	CHECK_EQ_U64(memopts_set_key(&m, "mem_fold", "0", err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(memopts_set_key(&m, "mem_fold", "-5", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "invalid mem_fold '-5': 1 to 3600000000000 ns");
	CHECK_EQ_U64(m.fold_ns, 3600000000000ull);
	CHECK_EQ_U64(memopts_set_key(&m, "syscalls", "1", err, sizeof(err)), 1); /* not a memory key */
	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_START, err, sizeof(err)), 0);
}

static void test_check(void)
{
	struct memopts m = { 0 };
	char err[256] = "";

	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_OPTIONS, err, sizeof(err)), 0);
	m.keep_alive = true;
	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_OPTIONS, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "--keep-alive, --mem-depth and --mem-fold need --memory");
	m.keep_alive = false;
	m.fold_ns = 5;
	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_START, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "keep_alive, mem_depth and mem_fold need memory=1");
	m.fold_ns = 0;
	m.depth = 4;
	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_START, err, sizeof(err)), -EINVAL);
	m.on = true;
	CHECK_EQ_U64(memopts_check(&m, MEMOPTS_START, err, sizeof(err)), 0);
}

int main(void)
{
	test_depth();
	test_start_keys();
	test_check();
	return check_summary();
}
