/* System call tables: names and numbers per architecture, the sets that
 * --syscall-filter selects, and how a call's arguments and result read. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/systab.h"

/* The generated tables, in common/systab_tables.c (scripts/gen-systab):
 * arrays indexed by number, entries without a name are holes.  arm's
 * private calls (cacheflush, set_tls, ...) sit apart at a high base. */
extern const struct sys_info systab_x86_64[], systab_aarch64[], systab_arm[], systab_arm_private[];
extern const uint32_t systab_x86_64_size, systab_aarch64_size, systab_arm_size;
extern const uint32_t systab_arm_private_base, systab_arm_private_size;
extern const char *const systab_errno_names[];
extern const int systab_errno_max;

/* Return values from -1 to -SYS_ERRNO_MAX are -errno (the kernel's
 * MAX_ERRNO); anything else is a result. */
#define SYS_ERRNO_MAX 4095

/* AT_FDCWD: the same on every Linux architecture. */
#define SYS_AT_FDCWD (-100)

/* Bytes of a path shown before it is cut with "...". */
#define SYS_PATH_SHOWN 200u

/* The longest name or pattern an item of a --syscall-filter list may be. */
#define SYS_PATTERN_MAX 64u

/* Error values the kernel uses inside and a tracer may see when a call is
 * interrupted by a signal; libc has no text for them. */
static const struct {
	int err;
	const char *name;
	const char *text;
} sys_errno_kernel[] = {
	{ 512, "ERESTARTSYS", "Interrupted, restarted if SA_RESTART is set" },
	{ 513, "ERESTARTNOINTR", "Interrupted, restarted" },
	{ 514, "ERESTARTNOHAND", "Interrupted, restarted if no handler" },
	{ 515, "ENOIOCTLCMD", "No such ioctl command" },
	{ 516, "ERESTART_RESTARTBLOCK", "Interrupted, restarted by restart_syscall" },
};

/* One architecture's main table. */
struct systab {
	const struct sys_info *calls;
	uint32_t size;
};

static bool systab_get(enum sys_arch arch, struct systab *tab)
{
	switch (arch) {
	case SYS_ARCH_X86_64:
		tab->calls = systab_x86_64;
		tab->size = systab_x86_64_size;
		return true;
	case SYS_ARCH_AARCH64:
		tab->calls = systab_aarch64;
		tab->size = systab_aarch64_size;
		return true;
	case SYS_ARCH_ARM:
		tab->calls = systab_arm;
		tab->size = systab_arm_size;
		return true;
	default:
		tab->calls = NULL;
		tab->size = 0;
		return false;
	}
}

enum sys_arch sys_arch_native(void)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	return SYS_ARCH_X86_64;
#elif defined(__aarch64__) && !defined(__ILP32__)
	return SYS_ARCH_AARCH64;
#elif defined(__arm__) && defined(__ARM_EABI__)
	return SYS_ARCH_ARM;
#else
	return SYS_ARCH_NONE;
#endif
}

const char *sys_arch_name(enum sys_arch arch)
{
	switch (arch) {
	case SYS_ARCH_NONE:
		return "none";
	case SYS_ARCH_X86_64:
		return "x86_64";
	case SYS_ARCH_AARCH64:
		return "aarch64";
	case SYS_ARCH_ARM:
		return "arm";
	}
	return "unknown";
}

const struct sys_info *sys_info(enum sys_arch arch, uint32_t nr)
{
	struct systab tab;

	if (!systab_get(arch, &tab))
		return NULL;
	if (nr < tab.size)
		return tab.calls[nr].name ? &tab.calls[nr] : NULL;
	if (arch == SYS_ARCH_ARM && nr - systab_arm_private_base < systab_arm_private_size) {
		const struct sys_info *info = &systab_arm_private[nr - systab_arm_private_base];

		return info->name ? info : NULL;
	}
	return NULL;
}

const char *sys_name(enum sys_arch arch, uint32_t nr, char *buf, size_t size)
{
	const struct sys_info *info = sys_info(arch, nr);

	if (!size)
		return buf;
	if (info)
		snprintf(buf, size, "%s", info->name);
	else
		snprintf(buf, size, "syscall_%" PRIu32, nr);
	return buf;
}

int sys_lookup(enum sys_arch arch, const char *name)
{
	struct systab tab;

	if (!name || !systab_get(arch, &tab))
		return -1;
	for (uint32_t nr = 0; nr < tab.size; nr++) {
		if (tab.calls[nr].name && !strcmp(tab.calls[nr].name, name))
			return (int)nr;
	}
	if (arch == SYS_ARCH_ARM) {
		for (uint32_t i = 0; i < systab_arm_private_size; i++) {
			if (systab_arm_private[i].name && !strcmp(systab_arm_private[i].name, name))
				return (int)(systab_arm_private_base + i);
		}
	}
	return -1;
}

void sys_set_all(struct sys_set *set)
{
	memset(set->bits, 0xff, sizeof(set->bits));
}

uint32_t sys_set_count(const struct sys_set *set)
{
	uint32_t count = 0;

	for (size_t i = 0; i < SYS_NR_MAX / 64; i++) {
		for (uint64_t v = set->bits[i]; v; v &= v - 1)
			count++;
	}
	return count;
}

static void sys_set_add(struct sys_set *set, uint32_t nr)
{
	if (nr < SYS_NR_MAX)
		set->bits[nr / 64] |= (uint64_t)1 << (nr % 64);
}

/* Adds the calls that one item (a name, a pattern or "all") selects.
 * Returns false when it selects none. */
static bool sys_set_add_item(struct sys_set *set, enum sys_arch arch, const char *item, size_t len)
{
	char pattern[SYS_PATTERN_MAX];
	struct systab tab;
	bool found = false;

	if (len >= sizeof(pattern))
		return false;
	memcpy(pattern, item, len);
	pattern[len] = '\0';
	if (!strcmp(pattern, "all")) {
		sys_set_all(set);
		return true;
	}
	systab_get(arch, &tab);
	for (uint32_t nr = 0; nr < tab.size; nr++) {
		if (tab.calls[nr].name && !fnmatch(pattern, tab.calls[nr].name, 0)) {
			sys_set_add(set, nr);
			found = true;
		}
	}
	return found;
}

int sys_set_parse(struct sys_set *set, enum sys_arch arch, const char *list, char *err, size_t errlen)
{
	struct sys_set removed;
	bool included = false;
	const char *p = list;

	memset(set, 0, sizeof(*set));
	memset(&removed, 0, sizeof(removed));
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *item = p;
		bool exclude;

		p = end ? end + 1 : NULL;
		while (len && isspace((unsigned char)*item)) {
			item++;
			len--;
		}
		while (len && isspace((unsigned char)item[len - 1]))
			len--;
		if (!len)
			continue;
		exclude = item[0] == '!';
		if (exclude) {
			item++;
			len--;
		}
		if (!exclude)
			included = true;
		if (!sys_set_add_item(exclude ? &removed : set, arch, item, len)) {
			if (err && errlen)
				snprintf(err, errlen, "unknown syscall '%.*s'", (int)len, item);
			memset(set, 0, sizeof(*set));
			return -EINVAL;
		}
	}
	if (!included)
		sys_set_all(set);
	for (size_t i = 0; i < SYS_NR_MAX / 64; i++)
		set->bits[i] &= ~removed.bits[i];
	return 0;
}

/* A bounded string being appended to: text beyond the end is dropped and
 * buf stays NUL-terminated. */
struct sys_out {
	char *buf;
	size_t size, len;
};

static void sys_out_add(struct sys_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sys_out_add(struct sys_out *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (out->len + 1 >= out->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out->buf + out->len, out->size - out->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	out->len += (size_t)n;
	if (out->len >= out->size)
		out->len = out->size - 1;
}

/* A path as a C string literal: quotes, backslashes and control characters
 * escaped, bytes outside printable ASCII in octal, cut after
 * SYS_PATH_SHOWN bytes with "..." after the closing quote. */
static void sys_out_path(struct sys_out *out, const char *path, uint32_t path_len)
{
	const char *nul = memchr(path, '\0', path_len);
	size_t len = nul ? (size_t)(nul - path) : path_len;
	size_t shown = len > SYS_PATH_SHOWN ? SYS_PATH_SHOWN : len;

	sys_out_add(out, "\"");
	for (size_t i = 0; i < shown; i++) {
		unsigned char c = (unsigned char)path[i];

		switch (c) {
		case '"':
			sys_out_add(out, "\\\"");
			break;
		case '\\':
			sys_out_add(out, "\\\\");
			break;
		case '\n':
			sys_out_add(out, "\\n");
			break;
		case '\t':
			sys_out_add(out, "\\t");
			break;
		case '\r':
			sys_out_add(out, "\\r");
			break;
		default:
			if (c < 0x20 || c >= 0x7f)
				sys_out_add(out, "\\%03o", c);
			else
				sys_out_add(out, "%c", c);
		}
	}
	sys_out_add(out, shown < len ? "\"..." : "\"");
}

/* 32-bit arm passes and returns 32-bit values; a trace may hold them zero-
 * or sign-extended, so only the low half counts. */
static uint64_t sys_unsigned(enum sys_arch arch, uint64_t v)
{
	return arch == SYS_ARCH_ARM ? (uint32_t)v : v;
}

static int64_t sys_signed(enum sys_arch arch, uint64_t v)
{
	return arch == SYS_ARCH_ARM ? (int32_t)(uint32_t)v : (int64_t)v;
}

size_t sys_format_args(enum sys_arch arch, uint32_t nr, const uint64_t *args, uint32_t nargs, const char *path,
                       uint32_t path_len, char *buf, size_t size)
{
	const struct sys_info *info = sys_info(arch, nr);
	struct sys_out out = { buf, size, 0 };
	uint32_t n = info && info->nargs < nargs ? info->nargs : nargs;
	bool path_used = false;
	const char *sep = "";

	if (!size)
		return 0;
	buf[0] = '\0';
	if (!info)
		return 0;
	for (uint32_t i = 0; i < n && i < 6; i++) {
		uint64_t v = args[i];
		int32_t fd;

		switch (info->arg[i]) {
		case SYS_ARG_INT:
			sys_out_add(&out, "%s%" PRId64, sep, sys_signed(arch, v));
			break;
		case SYS_ARG_UINT:
		case SYS_ARG_SIZE:
			sys_out_add(&out, "%s%" PRIu64, sep, sys_unsigned(arch, v));
			break;
		case SYS_ARG_HEX:
			sys_out_add(&out, "%s0x%" PRIx64, sep, sys_unsigned(arch, v));
			break;
		case SYS_ARG_FD:
			/* the kernel reads an int: the low half, on every architecture */
			fd = (int32_t)(uint32_t)v;
			if (fd == SYS_AT_FDCWD)
				sys_out_add(&out, "%sAT_FDCWD", sep);
			else
				sys_out_add(&out, "%s%" PRId32, sep, fd);
			break;
		case SYS_ARG_PATH:
			/* a backend copies one string: the first path argument's */
			if (path && !path_used) {
				sys_out_add(&out, "%s", sep);
				sys_out_path(&out, path, path_len);
				path_used = true;
			} else {
				sys_out_add(&out, "%s0x%" PRIx64, sep, sys_unsigned(arch, v));
			}
			break;
		default:
			continue;
		}
		sep = ", ";
	}
	return out.len;
}

const char *sys_errno_name(int err)
{
	if (err >= 1 && err <= systab_errno_max)
		return systab_errno_names[err];
	for (size_t i = 0; i < sizeof(sys_errno_kernel) / sizeof(sys_errno_kernel[0]); i++) {
		if (sys_errno_kernel[i].err == err)
			return sys_errno_kernel[i].name;
	}
	return NULL;
}

/* The text of an errno value: libc's for the ones programs see. */
static const char *sys_errno_text(int err)
{
	for (size_t i = 0; i < sizeof(sys_errno_kernel) / sizeof(sys_errno_kernel[0]); i++) {
		if (sys_errno_kernel[i].err == err)
			return sys_errno_kernel[i].text;
	}
	return strerror(err);
}

size_t sys_format_ret(enum sys_arch arch, uint32_t nr, int64_t ret, char *buf, size_t size)
{
	const struct sys_info *info = sys_info(arch, nr);
	struct sys_out out = { buf, size, 0 };
	int64_t r = sys_signed(arch, (uint64_t)ret);

	if (!size)
		return 0;
	buf[0] = '\0';
	if (r < 0 && r >= -SYS_ERRNO_MAX) {
		int err = (int)-r;
		const char *name = sys_errno_name(err);

		if (name)
			sys_out_add(&out, "-1 %s (%s)", name, sys_errno_text(err));
		else
			sys_out_add(&out, "-1 errno %d", err);
		return out.len;
	}
	switch (info ? info->ret_kind : SYS_ARG_INT) {
	case SYS_ARG_HEX:
		sys_out_add(&out, "0x%" PRIx64, sys_unsigned(arch, (uint64_t)ret));
		break;
	case SYS_ARG_UINT:
		sys_out_add(&out, "%" PRIu64, sys_unsigned(arch, (uint64_t)ret));
		break;
	default:
		sys_out_add(&out, "%" PRId64, r);
	}
	return out.len;
}
