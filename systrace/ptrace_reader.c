/* Reading a stopped tracee for the ptrace backend; see ptrace_reader.h. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "systrace/ptrace_arch.h"
#include "systrace/ptrace_reader.h"

/* A frame-pointer walk stays within this distance above the stack pointer,
 * and reads the stack through a window of this many bytes. */
#define PT_STACK_SPAN (8u << 20)
#define PT_STACK_WINDOW 512u
/* Return addresses below this are not code. */
#define PT_MIN_CODE 0x1000u

/* The kernel's struct ptrace_syscall_info (Linux 5.3), declared here so the
 * build does not depend on the C library knowing it. */
#define PT_GET_SYSCALL_INFO 0x420e
struct pt_sysinfo {
	uint8_t op; /* enum pt_info_op */
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	union {
		struct {
			uint64_t nr, args[6];
		} entry;
		struct {
			int64_t rval;
			uint8_t is_error;
		} exit;
		struct {
			uint64_t nr, args[6];
			uint32_t ret_data;
		} seccomp;
	} u;
};

void pt_reader_init(struct pt_reader *r)
{
	long page = sysconf(_SC_PAGESIZE);

	r->page = page > 0 ? (size_t)page : 4096;
	r->have_info = true;
}

ssize_t pt_reader_mem(const struct pt_reader *r, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	size_t first = r->page - (size_t)(addr % r->page);
	struct iovec local = { buf, len };
	struct iovec remote[2] = { { (void *)(uintptr_t)addr, len }, { NULL, 0 } };
	int n = 1;

	if (first < len) {
		remote[0].iov_len = first;
		remote[1].iov_base = (void *)(uintptr_t)(addr + first);
		remote[1].iov_len = len - first;
		n = 2;
	}
	return process_vm_readv(tid, &local, 1, remote, (unsigned long)n, 0);
}

#if !defined(__arm__)
/* A window on the tracee's stack, refilled when a read falls outside. */
struct pt_stack {
	uint64_t base;
	size_t len;
	unsigned char buf[PT_STACK_WINDOW];
};

static bool stack_word(const struct pt_reader *r, pid_t tid, struct pt_stack *w, uint64_t addr, uint64_t *out)
{
	if (addr < w->base || addr - w->base + PT_WORD > w->len) {
		ssize_t n = pt_reader_mem(r, tid, addr, w->buf, sizeof(w->buf));

		if (n < (ssize_t)PT_WORD)
			return false;
		w->base = addr;
		w->len = (size_t)n;
	}
	if (PT_WORD == 8) {
		uint64_t v;

		memcpy(&v, w->buf + (addr - w->base), sizeof(v));
		*out = v;
	} else {
		uint32_t v;

		memcpy(&v, w->buf + (addr - w->base), sizeof(v));
		*out = v;
	}
	return true;
}
#endif

unsigned pt_reader_stack(const struct pt_reader *r, pid_t tid, uint64_t *out, unsigned max)
{
	struct pt_uregs regs;
	unsigned n = 0;

	if (!max || pt_regs_read(tid, &regs) < 0 || regs.compat)
		return 0;
#if defined(__arm__)
	if (regs.lr >= PT_MIN_CODE)
		out[n++] = regs.lr & ~(uint64_t)1;
	(void)r;
#else
	struct pt_stack w = { 0, 0, { 0 } };
	uint64_t fp = regs.fp, lo = regs.sp;

	while (n < max) {
		uint64_t next, ret;

		if (fp % PT_WORD || fp < lo || fp - regs.sp >= PT_STACK_SPAN)
			break;
		if (!stack_word(r, tid, &w, fp, &next) || !stack_word(r, tid, &w, fp + PT_WORD, &ret))
			break;
		if (ret < PT_MIN_CODE)
			break;
		out[n++] = ret;
		lo = fp + 2 * PT_WORD;
		fp = next;
	}
#endif
	return n;
}

int pt_reader_call(struct pt_reader *r, pid_t tid, struct pt_call *c)
{
	struct pt_uregs regs;
	int ret;

	memset(c, 0, sizeof(*c));
	if (r->have_info) {
		struct pt_sysinfo si;

		memset(&si, 0, sizeof(si));
		if (pt_req(PT_GET_SYSCALL_INFO, tid, sizeof(si), (uintptr_t)&si) > 0) {
			c->op = si.op;
			c->compat = si.arch != PT_AUDIT_ARCH;
			c->ip = si.ip;
			c->sp = si.sp;
			if (si.op == PT_INFO_ENTRY || si.op == PT_INFO_SECCOMP) {
				/* entry and seccomp share the layout of nr and args */
				c->nr = (uint32_t)si.u.entry.nr;
				memcpy(c->args, si.u.entry.args, sizeof(c->args));
			} else if (si.op == PT_INFO_EXIT) {
				c->ret = si.u.exit.rval;
			}
			return 0;
		}
		if (errno != EIO && errno != EINVAL)
			return -errno;
		r->have_info = false;
	}
	ret = pt_regs_read(tid, &regs);
	if (ret < 0)
		return ret;
	c->op = PT_INFO_NONE;
	c->compat = regs.compat;
	c->nr = regs.nr;
	memcpy(c->args, regs.args, sizeof(c->args));
	c->ret = regs.ret;
	c->ip = regs.ip;
	c->sp = regs.sp;
	return 0;
}
