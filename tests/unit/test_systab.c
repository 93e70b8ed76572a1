/* Unit test of common/systab: numbers and names on the three architectures,
 * --syscall-filter sets, and the exact text of arguments, results and
 * errno values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "tests/unit/check.h"

#define ARCH_COUNT 3

static const enum sys_arch arches[ARCH_COUNT] = { SYS_ARCH_X86_64, SYS_ARCH_AARCH64, SYS_ARCH_ARM };

/* The name sys_name gives, in a buffer that lives until the next call. */
static const char *name_of(enum sys_arch arch, uint32_t nr)
{
	static char buf[64];

	return sys_name(arch, nr, buf, sizeof(buf));
}

static void test_arch(void)
{
	enum sys_arch native = sys_arch_native();

#if defined(__x86_64__)
	CHECK_EQ_U64(native, SYS_ARCH_X86_64);
#elif defined(__aarch64__)
	CHECK_EQ_U64(native, SYS_ARCH_AARCH64);
#elif defined(__arm__)
	CHECK_EQ_U64(native, SYS_ARCH_ARM);
#endif
	CHECK_STR(sys_arch_name(SYS_ARCH_X86_64), "x86_64");
	CHECK_STR(sys_arch_name(SYS_ARCH_AARCH64), "aarch64");
	CHECK_STR(sys_arch_name(SYS_ARCH_ARM), "arm");
	CHECK_STR(sys_arch_name(SYS_ARCH_NONE), "none");
	CHECK_STR(sys_arch_name((enum sys_arch)9), "unknown");
}

struct known {
	const char *name;
	int nr[ARCH_COUNT]; /* x86-64, aarch64, arm; -1: none */
};

static const struct known known[] = {
	{ "read", { 0, 63, 3 } },
	{ "write", { 1, 64, 4 } },
	{ "open", { 2, -1, 5 } },
	{ "close", { 3, 57, 6 } },
	{ "openat", { 257, 56, 322 } },
	{ "getppid", { 110, 173, 64 } },
	{ "exit_group", { 231, 94, 248 } },
	{ "mmap", { 9, 222, -1 } },
	{ "mmap2", { -1, -1, 192 } },
	{ "fcntl", { 72, 25, 55 } },
	{ "fcntl64", { -1, -1, 221 } },
	{ "newfstatat", { 262, 79, -1 } },
	{ "fstatat64", { -1, -1, 327 } },
	{ "renameat", { 264, 38, 329 } },
	{ "getrlimit", { 97, 163, -1 } },
	{ "clone3", { 435, 435, 435 } },
	{ "memfd_secret", { 447, 447, -1 } },
	{ "_llseek", { -1, -1, 140 } },
	{ "arch_prctl", { 158, -1, -1 } },
	{ "set_mempolicy_home_node", { 450, 450, 450 } },
};

static void test_numbers(void)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		for (int a = 0; a < ARCH_COUNT; a++) {
			int nr = known[i].nr[a];

			if (!CHECK_EQ_U64(sys_lookup(arches[a], known[i].name), nr))
				printf("  %s on %s\n", known[i].name, sys_arch_name(arches[a]));
			if (nr >= 0)
				CHECK_STR(name_of(arches[a], (uint32_t)nr), known[i].name);
		}
	}
	/* holes, numbers past the tables, the private arm calls */
	CHECK_STR(name_of(SYS_ARCH_X86_64, 451), "syscall_451");
	CHECK_STR(name_of(SYS_ARCH_X86_64, 335), "syscall_335");
	CHECK_STR(name_of(SYS_ARCH_AARCH64, 1023), "syscall_1023");
	CHECK_STR(name_of(SYS_ARCH_ARM, 7), "syscall_7");
	CHECK_STR(name_of(SYS_ARCH_ARM, 0xf0005), "set_tls");
	CHECK_STR(name_of(SYS_ARCH_ARM, 0xf0002), "cacheflush");
	CHECK_STR(name_of(SYS_ARCH_ARM, 0xf0007), "syscall_983047");
	CHECK_STR(name_of(SYS_ARCH_X86_64, 0xf0005), "syscall_983045");
	CHECK_STR(name_of(SYS_ARCH_NONE, 1), "syscall_1");
	CHECK_STR(name_of(SYS_ARCH_X86_64, UINT32_MAX), "syscall_4294967295");
	CHECK(sys_info(SYS_ARCH_X86_64, 335) == NULL);
	CHECK(sys_info(SYS_ARCH_X86_64, SYS_NR_MAX) == NULL);
	CHECK(sys_info(SYS_ARCH_NONE, 1) == NULL);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_ARM, "set_tls"), 0xf0005);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_X86_64, "set_tls"), -1);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_X86_64, "nosuch"), -1);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_X86_64, ""), -1);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_X86_64, NULL), -1);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_NONE, "write"), -1);
	CHECK_EQ_U64(sys_lookup(SYS_ARCH_X86_64, "syscall_451"), -1);

	/* a short buffer is cut, a zero-sized one left alone */
	char small[4] = "xyz";
	CHECK_STR(sys_name(SYS_ARCH_X86_64, 1, small, sizeof(small)), "wri");
	CHECK_STR(sys_name(SYS_ARCH_X86_64, 1, small, 0), "wri");

	/* every name is unique within its architecture and found again */
	for (int a = 0; a < ARCH_COUNT; a++) {
		unsigned found = 0, bad = 0;

		for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++) {
			const struct sys_info *info = sys_info(arches[a], nr);

			if (!info)
				continue;
			found++;
			if (sys_lookup(arches[a], info->name) != (int)nr || info->nargs > 6)
				bad++;
			for (unsigned i = 0; i < info->nargs; i++)
				bad += info->arg[i] == SYS_ARG_NONE || info->arg[i] > SYS_ARG_SIZE;
		}
		CHECK_EQ_U64(bad, 0);
		CHECK(found > 300 && found < 460);
	}
}

static void test_kinds(void)
{
	const struct sys_info *info = sys_info(SYS_ARCH_X86_64, 1);

	if (!CHECK(info))
		return;
	CHECK_EQ_U64(info->nargs, 3);
	CHECK_EQ_U64(info->arg[0], SYS_ARG_FD);
	CHECK_EQ_U64(info->arg[1], SYS_ARG_HEX);
	CHECK_EQ_U64(info->arg[2], SYS_ARG_SIZE);
	CHECK_EQ_U64(info->ret_kind, SYS_ARG_SIZE);

	info = sys_info(SYS_ARCH_AARCH64, 56); /* openat */
	if (CHECK(info)) {
		CHECK_EQ_U64(info->nargs, 4);
		CHECK_EQ_U64(info->arg[1], SYS_ARG_PATH);
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_FD);
	}
	info = sys_info(SYS_ARCH_ARM, 192); /* mmap2 */
	if (CHECK(info)) {
		CHECK_EQ_U64(info->nargs, 6);
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_HEX);
	}
	info = sys_info(SYS_ARCH_X86_64, 110); /* getppid */
	if (CHECK(info)) {
		CHECK_EQ_U64(info->nargs, 0);
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_INT);
	}
	info = sys_info(SYS_ARCH_X86_64, 0); /* read */
	if (CHECK(info))
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_SIZE);
	info = sys_info(SYS_ARCH_X86_64, 41); /* socket */
	if (CHECK(info))
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_FD);
	info = sys_info(SYS_ARCH_X86_64, 246); /* kexec_load: arguments not described */
	if (CHECK(info)) {
		CHECK_STR(info->name, "kexec_load");
		CHECK_EQ_U64(info->nargs, 0);
		CHECK_EQ_U64(info->ret_kind, SYS_ARG_INT);
	}
}

static void test_sets(void)
{
	struct sys_set set;
	char err[128];
	int all_count;

	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "read,write,open*", err, sizeof(err)), 0);
	CHECK(sys_set_has(&set, 0));
	CHECK(sys_set_has(&set, 1));
	CHECK(sys_set_has(&set, 2));   /* open */
	CHECK(sys_set_has(&set, 257)); /* openat */
	CHECK(sys_set_has(&set, 437)); /* openat2 */
	CHECK(sys_set_has(&set, 304)); /* open_by_handle_at */
	CHECK(sys_set_has(&set, 428)); /* open_tree */
	CHECK(!sys_set_has(&set, 3));  /* close */
	CHECK(!sys_set_has(&set, SYS_NR_MAX));
	CHECK_EQ_U64(sys_set_count(&set), 7);

	/* the same list on aarch64: no open */
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_AARCH64, "read,write,open*", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), 6);
	CHECK(sys_set_has(&set, 56) && sys_set_has(&set, 63) && sys_set_has(&set, 64));

	/* all: every number, named or not */
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "all", err, sizeof(err)), 0);
	all_count = (int)sys_set_count(&set);
	CHECK_EQ_U64(all_count, SYS_NR_MAX);
	CHECK(sys_set_has(&set, 1000));
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), SYS_NR_MAX);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, NULL, err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), SYS_NR_MAX);
	sys_set_all(&set);
	CHECK_EQ_U64(sys_set_count(&set), SYS_NR_MAX);

	/* removals after additions, in any order; removals alone start from all */
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "all,!close", err, sizeof(err)), 0);
	CHECK(!sys_set_has(&set, 3));
	CHECK(sys_set_has(&set, 2));
	CHECK_EQ_U64(sys_set_count(&set), SYS_NR_MAX - 1);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "!close", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), SYS_NR_MAX - 1);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "!openat*,open*", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), 3); /* open, open_by_handle_at, open_tree */
	CHECK(sys_set_has(&set, 2) && !sys_set_has(&set, 257));
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, " read , ,write,", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), 2);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "!all", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), 0);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_ARM, "get*id*", err, sizeof(err)), 0);
	CHECK(sys_set_has(&set, 64) && sys_set_has(&set, 20) && sys_set_has(&set, 224)); /* gettid */
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "[rw]*v", err, sizeof(err)), 0);
	CHECK_EQ_U64(sys_set_count(&set), 2); /* readv, writev */

	/* errors */
	strcpy(err, "untouched");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "read,nosuch", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "unknown syscall 'nosuch'");
	CHECK_EQ_U64(sys_set_count(&set), 0);
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "all,!nosuch*", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "unknown syscall 'nosuch*'");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_AARCH64, "open", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "unknown syscall 'open'");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "!", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "unknown syscall ''");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64,
	                           "a_name_far_longer_than_any_system_call_has_ever_had_in_linux_or_will_have", err,
	                           sizeof(err)),
	             -EINVAL);
	CHECK_STR(err, "unknown syscall 'a_name_far_longer_than_any_system_call_has_ever_had_in_linux_or_will_have'");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "nosuch", err, 10), -EINVAL);
	CHECK_STR(err, "unknown s");
	CHECK_EQ_U64(sys_set_parse(&set, SYS_ARCH_X86_64, "nosuch", NULL, 0), -EINVAL);
}

/* sys_format_args into a buffer that lives until the next call; checks
 * that the returned length is the string's. */
static const char *args_of(enum sys_arch arch, uint32_t nr, const uint64_t *args, uint32_t nargs, const char *path)
{
	static char buf[512];
	size_t len = sys_format_args(arch, nr, args, nargs, path, path ? (uint32_t)strlen(path) : 0, buf, sizeof(buf));

	CHECK_EQ_U64(len, strlen(buf));
	return buf;
}

static const char *ret_of(enum sys_arch arch, uint32_t nr, int64_t ret)
{
	static char buf[128];
	size_t len = sys_format_ret(arch, nr, ret, buf, sizeof(buf));

	CHECK_EQ_U64(len, strlen(buf));
	return buf;
}

static void test_format_args(void)
{
	const uint64_t write_args[6] = { 1, 0x7ffd1234abcd, 1024, 7, 7, 7 };
	const uint64_t openat_args[6] = { (uint64_t)-100, 0x5581c0, 0, 0 };
	const uint64_t open_args[3] = { 0x5581c0, 0x241, 0644 };
	const uint64_t arm_openat[4] = { 0xffffff9c, 0x4a0c0, 0x80000, 0 };
	const uint64_t mmap_args[6] = { 0, 8192, 3, 0x22, (uint64_t)-1, 0 };
	const uint64_t arm_mmap[6] = { 0, 8192, 3, 0x22, 0xffffffff, 0 };
	const uint64_t lseek_args[3] = { 3, (uint64_t)-10, 2 };
	const uint64_t arm_lseek[3] = { 3, 0xfffffff6, 2 };
	const uint64_t renameat_args[4] = { 5, 0x1000, (uint64_t)-100, 0x2000 };

	CHECK_STR(args_of(SYS_ARCH_X86_64, 1, write_args, 6, NULL), "1, 0x7ffd1234abcd, 1024");
	CHECK_STR(args_of(SYS_ARCH_AARCH64, 64, write_args, 3, NULL), "1, 0x7ffd1234abcd, 1024");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 1, write_args, 2, NULL), "1, 0x7ffd1234abcd");
	CHECK_STR(args_of(SYS_ARCH_ARM, 4, write_args, 3, NULL), "1, 0x1234abcd, 1024");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 257, openat_args, 6, "/etc/passwd"), "AT_FDCWD, \"/etc/passwd\", 0x0, 0x0");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 257, openat_args, 4, NULL), "AT_FDCWD, 0x5581c0, 0x0, 0x0");
	CHECK_STR(args_of(SYS_ARCH_ARM, 322, arm_openat, 4, "lib.so"), "AT_FDCWD, \"lib.so\", 0x80000, 0x0");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 2, open_args, 3, "out.txt"), "\"out.txt\", 0x241, 0x1a4");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 9, mmap_args, 6, NULL), "0x0, 8192, 0x3, 0x22, -1, 0x0");
	CHECK_STR(args_of(SYS_ARCH_ARM, 192, arm_mmap, 6, NULL), "0x0, 8192, 0x3, 0x22, -1, 0x0");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 8, lseek_args, 3, NULL), "3, -10, 2");
	CHECK_STR(args_of(SYS_ARCH_ARM, 19, arm_lseek, 3, NULL), "3, -10, 2");
	CHECK_STR(args_of(SYS_ARCH_AARCH64, 62, arm_lseek, 3, NULL), "3, 4294967286, 2");
	/* only the first path argument shows the copied string */
	CHECK_STR(args_of(SYS_ARCH_X86_64, 264, renameat_args, 4, "old"), "5, \"old\", AT_FDCWD, 0x2000");
	/* no arguments, unknown arguments, unknown calls */
	CHECK_STR(args_of(SYS_ARCH_X86_64, 110, write_args, 6, NULL), "");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 246, write_args, 6, NULL), "");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 451, write_args, 6, NULL), "");

	/* escapes, NUL ending the copy, the cut after 200 bytes */
	const uint64_t unlink_args[1] = { 0x1000 };
	char path[300], want[300];
	char buf[64];

	CHECK_STR(args_of(SYS_ARCH_X86_64, 87, unlink_args, 1, "a\"b\\c\nd\te\rf\033g\177h\xc3\xa9"),
	          "\"a\\\"b\\\\c\\nd\\te\\rf\\033g\\177h\\303\\251\"");
	CHECK_EQ_U64(sys_format_args(SYS_ARCH_X86_64, 87, unlink_args, 1, "ab\0cd", 5, buf, sizeof(buf)), 4);
	CHECK_STR(buf, "\"ab\"");
	memset(path, 'p', 250);
	path[250] = '\0';
	memset(want, 'p', 202);
	want[0] = '"';
	strcpy(want + 201, "\"...");
	CHECK_STR(args_of(SYS_ARCH_X86_64, 87, unlink_args, 1, path), want);
	path[200] = '\0';
	want[201] = '"';
	want[202] = '\0';
	CHECK_STR(args_of(SYS_ARCH_X86_64, 87, unlink_args, 1, path), want);

	/* output cut to the buffer */
	CHECK_EQ_U64(sys_format_args(SYS_ARCH_X86_64, 1, write_args, 3, NULL, 0, buf, 8), 7);
	CHECK_STR(buf, "1, 0x7f");
	CHECK_EQ_U64(sys_format_args(SYS_ARCH_X86_64, 1, write_args, 3, NULL, 0, buf, 1), 0);
	CHECK_STR(buf, "");
	CHECK_EQ_U64(sys_format_args(SYS_ARCH_X86_64, 1, write_args, 3, NULL, 0, buf, 0), 0);
}

static void test_format_ret(void)
{
	char buf[16];

	CHECK_STR(ret_of(SYS_ARCH_X86_64, 1, 1024), "1024");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 257, 3), "3");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 257, -2), "-1 ENOENT (No such file or directory)");
	CHECK_STR(ret_of(SYS_ARCH_AARCH64, 63, -11), "-1 EAGAIN (Resource temporarily unavailable)");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 451, -38), "-1 ENOSYS (Function not implemented)");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 8, -4095), "-1 errno 4095");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 8, -4096), "-4096");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 0, -512), "-1 ERESTARTSYS (Interrupted, restarted if SA_RESTART is set)");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 9, 0x7f12a000c000), "0x7f12a000c000");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 12, 0), "0x0");
	CHECK_STR(ret_of(SYS_ARCH_X86_64, 110, 4242), "4242");
	/* arm: 32-bit results, zero- or sign-extended in the trace */
	CHECK_STR(ret_of(SYS_ARCH_ARM, 192, 0xb6f00000), "0xb6f00000");
	CHECK_STR(ret_of(SYS_ARCH_ARM, 5, 0xfffffffe), "-1 ENOENT (No such file or directory)");
	CHECK_STR(ret_of(SYS_ARCH_ARM, 5, -2), "-1 ENOENT (No such file or directory)");
	CHECK_STR(ret_of(SYS_ARCH_ARM, 4, 1024), "1024");
	CHECK_STR(ret_of(SYS_ARCH_NONE, 4, 7), "7");

	CHECK_EQ_U64(sys_format_ret(SYS_ARCH_X86_64, 257, -2, buf, sizeof(buf)), 15);
	CHECK_STR(buf, "-1 ENOENT (No s");
	CHECK_EQ_U64(sys_format_ret(SYS_ARCH_X86_64, 257, -2, buf, 0), 0);
}

static void test_errno(void)
{
	CHECK_STR(sys_errno_name(1), "EPERM");
	CHECK_STR(sys_errno_name(2), "ENOENT");
	CHECK_STR(sys_errno_name(11), "EAGAIN");
	CHECK_STR(sys_errno_name(35), "EDEADLK");
	CHECK_STR(sys_errno_name(38), "ENOSYS");
	CHECK_STR(sys_errno_name(95), "EOPNOTSUPP");
	CHECK_STR(sys_errno_name(110), "ETIMEDOUT");
	CHECK_STR(sys_errno_name(133), "EHWPOISON");
	CHECK_STR(sys_errno_name(516), "ERESTART_RESTARTBLOCK");
	CHECK(sys_errno_name(0) == NULL);
	CHECK(sys_errno_name(-2) == NULL);
	CHECK(sys_errno_name(41) == NULL); /* a hole */
	CHECK(sys_errno_name(134) == NULL);
	CHECK(sys_errno_name(4095) == NULL);
	/* the table agrees with this libc's values on the machine running the test */
	CHECK_EQ_U64(ENOENT, 2);
	CHECK_EQ_U64(EAGAIN, 11);
	CHECK_EQ_U64(ENOSYS, 38);
	CHECK_STR(sys_errno_name(ECONNREFUSED), "ECONNREFUSED");
	CHECK_STR(sys_errno_name(EINPROGRESS), "EINPROGRESS");
}

int main(void)
{
	test_arch();
	test_numbers();
	test_kinds();
	test_sets();
	test_format_args();
	test_format_ret();
	test_errno();
	return check_summary();
}
