/* layerprof estimate's table of calls (estcall.h): which calibration entry
 * a traced call takes, its condition and its parameter x, and what the
 * calls tell of the processes' files and heap blocks on the way. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/libcsig.h"
#include "host/lib/oscal/estcall.h"

int estcall_grow(void **v, uint32_t *cap, uint32_t need, size_t size, uint32_t max)
{
	uint32_t n;
	void *g;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	if (n > max)
		n = max;
	g = realloc(*v, (size_t)n * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = n;
	return 0;
}

enum xrule {
	X_NONE = 0, /* the entry has no parameter */
	X_ARG,      /* argument a */
	X_RET_ARG,  /* the result when >= 0 (what the call did: bytes read), else argument a */
	X_RET,      /* the result when >= 0, else unknown */
	X_MUL,      /* argument a times argument b (calloc) */
	X_RET_MUL,  /* the result times argument b when >= 0, else a x b (fread: items x size) */
	X_USEC,     /* argument a microseconds, in ns (usleep) */
	X_SEC,      /* argument a seconds, in ns (sleep) */
	X_BLOCK,    /* the size of the heap block argument a points to (free; realloc: the old size, the
	             * suite's x, else argument b / 2) */
	X_UNKNOWN,  /* the trace does not hold it (nanosleep's timespec is behind a pointer) */
};

/* How a call's condition (or its being a wait) is told. */
enum condrule {
	C_NONE = 0,
	C_FD_READ,  /* a regular file opened in the trace: "file" ("eof" when it read 0 bytes), else a
	             * wait (pipe, socket, terminal) */
	C_FD_WRITE, /* a regular file: "file", else the call's first entry */
	C_LSEEK,    /* whence argument 2: "set", "cur", "end" */
	C_OPEN,     /* flags argument a: "create" with O_CREAT, else "existing"; failed: "missing" */
	C_STAT,     /* AT_EMPTY_PATH in flags argument a: fstat (glibc's fstat on newfstatat); else
	             * "existing", failed: "missing" */
	C_UNLINKAT, /* AT_REMOVEDIR in argument 2: rmdir */
	C_MMAP,     /* MAP_ANONYMOUS in flags argument 3: "anon", else "file" */
	C_FUTEX,    /* a wait operation: a wait; else "wake" */
	C_KILL,     /* the caller's own pid: "self"; no such task: "none"; else "other" */
	C_CLOCK,    /* clock id argument 0: "monotonic", "realtime", ... */
	C_WAIT,     /* always a wait */
	C_NEVER,    /* never modelled: the suite's entry of that name times more than the call */
};

/* System calls (the kernel's names) and C library calls (NAME@plt without
 * @plt) in one table: where both have a name, they mean the same call. */
static const struct callrule callrules[] = {
	/* file */
	{ "read", "read", X_RET_ARG, 2, 0, C_FD_READ, 0 },
	{ "write", "write", X_RET_ARG, 2, 0, C_FD_WRITE, 0 },
	{ "pread64", "pread", X_RET_ARG, 2, 0, C_FD_READ, 0 },
	{ "pread", "pread", X_RET_ARG, 2, 0, C_FD_READ, 0 },
	{ "pwrite64", "pwrite", X_RET_ARG, 2, 0, C_FD_WRITE, 0 },
	{ "pwrite", "pwrite", X_RET_ARG, 2, 0, C_FD_WRITE, 0 },
	{ "readv", "readv", X_RET, 0, 0, C_FD_READ, 0 },
	{ "writev", "writev", X_RET, 0, 0, C_FD_WRITE, 0 },
	{ "sendfile", "sendfile", X_RET_ARG, 3, 0, C_NONE, 0 },
	{ "lseek", "lseek", X_NONE, 0, 0, C_LSEEK, 0 },
	{ "open", "open", X_NONE, 0, 0, C_OPEN, 1 },
	{ "openat", "open", X_NONE, 0, 0, C_OPEN, 2 },
	{ "creat", "open", X_NONE, 0, 0, C_OPEN, 9 },
	{ "close", "close", X_NONE, 0, 0, C_NONE, 0 },
	{ "stat", "stat", X_NONE, 0, 0, C_STAT, 9 },
	{ "lstat", "lstat", X_NONE, 0, 0, C_NONE, 0 },
	{ "newfstatat", "stat", X_NONE, 0, 0, C_STAT, 3 },
	{ "statx", "stat", X_NONE, 0, 0, C_STAT, 2 },
	{ "fstat", "fstat", X_NONE, 0, 0, C_NONE, 0 },
	{ "access", "access", X_NONE, 0, 0, C_NONE, 0 },
	{ "faccessat", "access", X_NONE, 0, 0, C_NONE, 0 },
	{ "faccessat2", "access", X_NONE, 0, 0, C_NONE, 0 },
	{ "unlinkat", "unlink", X_NONE, 0, 0, C_UNLINKAT, 0 },
	{ "renameat", "rename", X_NONE, 0, 0, C_NONE, 0 },
	{ "renameat2", "rename", X_NONE, 0, 0, C_NONE, 0 },
	{ "mkdirat", "mkdir", X_NONE, 0, 0, C_NONE, 0 },
	{ "dup3", "dup2", X_NONE, 0, 0, C_NONE, 0 },
	{ "getdents64", "getdents64", X_UNKNOWN, 0, 0, C_NONE, 0 },
	{ "fread", "fread", X_RET_MUL, 2, 1, C_NONE, 0 },
	{ "fwrite", "fwrite", X_RET_MUL, 2, 1, C_NONE, 0 },
	/* memory */
	{ "malloc", "malloc", X_ARG, 0, 0, C_NONE, 0 },
	{ "free", "free", X_BLOCK, 0, 0, C_NONE, 0 },
	{ "calloc", "calloc", X_MUL, 0, 1, C_NONE, 0 },
	{ "realloc", "realloc", X_BLOCK, 0, 1, C_NONE, 0 },
	{ "memcpy", "memcpy", X_ARG, 2, 0, C_NONE, 0 },
	{ "memmove", "memmove", X_ARG, 2, 0, C_NONE, 0 },
	{ "memset", "memset", X_ARG, 2, 0, C_NONE, 0 },
	{ "memcmp", "memcmp", X_ARG, 2, 0, C_NONE, 0 },
	{ "strlen", "strlen", X_RET, 0, 0, C_NONE, 0 },
	{ "strcpy", "strcpy", X_UNKNOWN, 0, 0, C_NONE, 0 },
	{ "mmap", "mmap", X_ARG, 1, 0, C_MMAP, 3 },
	{ "munmap", "munmap", X_ARG, 1, 0, C_NONE, 0 },
	{ "mprotect", "mprotect", X_ARG, 1, 0, C_NONE, 0 },
	/* processes and threads: creation is followed by the time line, its
	 * suite entries time the child's run too */
	{ "clone", "clone", X_NONE, 0, 0, C_NEVER, 0 },
	{ "clone3", "clone", X_NONE, 0, 0, C_NEVER, 0 },
	{ "fork", "fork", X_NONE, 0, 0, C_NEVER, 0 },
	{ "vfork", "vfork", X_NONE, 0, 0, C_NEVER, 0 },
	{ "execve", "execve", X_NONE, 0, 0, C_NEVER, 0 },
	{ "system", "system", X_NONE, 0, 0, C_NEVER, 0 },
	{ "wait4", "wait4", X_NONE, 0, 0, C_WAIT, 0 },
	{ "waitid", "waitid", X_NONE, 0, 0, C_WAIT, 0 },
	{ "waitpid", "waitpid", X_NONE, 0, 0, C_WAIT, 0 },
	{ "pthread_join", "pthread_join", X_NONE, 0, 0, C_WAIT, 0 },
	/* sync */
	{ "futex", "futex", X_NONE, 0, 0, C_FUTEX, 1 },
	{ "pthread_cond_wait", "pthread_cond_wait", X_NONE, 0, 0, C_WAIT, 0 },
	{ "sem_wait", "sem_wait", X_NONE, 0, 0, C_WAIT, 0 },
	/* ipc */
	{ "pipe2", "pipe", X_NONE, 0, 0, C_NONE, 0 },
	{ "eventfd2", "eventfd", X_NONE, 0, 0, C_NONE, 0 },
	{ "recv", "recv", X_NONE, 0, 0, C_WAIT, 0 },
	{ "recvfrom", "recvfrom", X_NONE, 0, 0, C_WAIT, 0 },
	{ "recvmsg", "recvmsg", X_NONE, 0, 0, C_WAIT, 0 },
	{ "accept", "accept", X_NONE, 0, 0, C_WAIT, 0 },
	{ "accept4", "accept", X_NONE, 0, 0, C_WAIT, 0 },
	{ "poll", "poll", X_NONE, 0, 0, C_WAIT, 0 },
	{ "ppoll", "poll", X_NONE, 0, 0, C_WAIT, 0 },
	{ "select", "select", X_NONE, 0, 0, C_WAIT, 0 },
	{ "pselect6", "select", X_NONE, 0, 0, C_WAIT, 0 },
	{ "epoll_wait", "epoll_wait", X_NONE, 0, 0, C_WAIT, 0 },
	{ "epoll_pwait", "epoll_wait", X_NONE, 0, 0, C_WAIT, 0 },
	{ "epoll_pwait2", "epoll_wait", X_NONE, 0, 0, C_WAIT, 0 },
	{ "msgrcv", "msgrcv", X_NONE, 0, 0, C_WAIT, 0 },
	{ "mq_timedreceive", "mq_receive", X_NONE, 0, 0, C_WAIT, 0 },
	/* signals */
	{ "kill", "kill", X_NONE, 0, 0, C_KILL, 0 },
	{ "tgkill", "raise", X_NONE, 0, 0, C_NONE, 0 },
	{ "rt_sigaction", "sigaction", X_NONE, 0, 0, C_NONE, 0 },
	{ "rt_sigprocmask", "sigprocmask", X_NONE, 0, 0, C_NONE, 0 },
	{ "pause", "pause", X_NONE, 0, 0, C_WAIT, 0 },
	{ "rt_sigsuspend", "sigsuspend", X_NONE, 0, 0, C_WAIT, 0 },
	{ "rt_sigtimedwait", "sigtimedwait", X_NONE, 0, 0, C_WAIT, 0 },
	/* time */
	{ "clock_gettime", "clock_gettime", X_NONE, 0, 0, C_CLOCK, 0 },
	{ "nanosleep", "nanosleep", X_UNKNOWN, 0, 0, C_NONE, 0 },
	{ "clock_nanosleep", "clock_nanosleep", X_UNKNOWN, 0, 0, C_NONE, 0 },
	{ "usleep", "usleep", X_USEC, 0, 0, C_NONE, 0 },
	{ "sleep", "nanosleep", X_SEC, 0, 0, C_NONE, 0 },
};

#define NRULES (sizeof(callrules) / sizeof(callrules[0]))

static const char *const clock_conds[] = {
	"realtime",      "monotonic",       "process",          "thread",
	"monotonic_raw", "realtime_coarse", "monotonic_coarse", "boottime",
};

const struct callrule *estcall_rule(const char *name)
{
	for (size_t i = 0; i < NRULES; i++)
		if (!strcmp(callrules[i].name, name))
			return &callrules[i];
	return NULL;
}

/* ------------------------------------------------------------ processes' files */

static struct estcall_proc *proc_get(struct estcall *p, uint32_t pid)
{
	for (uint32_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	if (estcall_grow((void **)&p->procs, &p->procs_cap, p->nprocs + 1, sizeof(*p->procs), ESTIMATE_THREADS_MAX))
		return NULL;
	memset(&p->procs[p->nprocs], 0, sizeof(p->procs[0]));
	p->procs[p->nprocs].pid = pid;
	return &p->procs[p->nprocs++];
}

static bool fd_bit(const uint8_t *set, int64_t fd)
{
	return fd >= 0 && fd < ESTIMATE_FDS_MAX && (set[fd / 8] >> (fd % 8) & 1);
}

static void fd_set_bit(uint8_t *set, int64_t fd, bool on)
{
	if (fd < 0 || fd >= ESTIMATE_FDS_MAX)
		return;
	if (on)
		set[fd / 8] |= (uint8_t)(1u << (fd % 8));
	else
		set[fd / 8] &= (uint8_t) ~(1u << (fd % 8));
}

static bool fd_is_file(struct estcall_proc *pr, int64_t fd)
{
	return pr && fd_bit(pr->files, fd);
}

/* A file descriptor's state: a file, and at its end. */
static void fd_state(struct estcall_proc *pr, int64_t fd, bool file, bool at_end)
{
	if (!pr)
		return;
	fd_set_bit(pr->files, fd, file);
	fd_set_bit(pr->at_end, fd, file && at_end);
}

/* Open flags (x86-64, arm and aarch64 alike) that leave the new
 * descriptor at its file's end: O_TRUNC, O_APPEND, or O_CREAT|O_EXCL (a
 * new file). */
static bool opens_at_end(uint64_t flags)
{
	return (flags & 01000) || (flags & 02000) || (flags & 0300) == 0300;
}

/* What a finished call does to the process's table of files. */
void estcall_follow_fd(struct estcall *p, uint32_t pid, const char *name, const uint64_t *args, int64_t ret)
{
	struct estcall_proc *pr;
	int64_t fd = (int64_t)(int32_t)args[0];

	if (ret < 0)
		return;
	pr = proc_get(p, pid);
	if (!pr)
		return;
	if (!strcmp(name, "open"))
		fd_state(pr, ret, true, opens_at_end(args[1]));
	else if (!strcmp(name, "openat"))
		fd_state(pr, ret, true, opens_at_end(args[2]));
	else if (!strcmp(name, "creat"))
		fd_state(pr, ret, true, true);
	else if (!strcmp(name, "close"))
		fd_state(pr, fd, false, false);
	else if (!strcmp(name, "dup"))
		fd_state(pr, ret, fd_is_file(pr, fd), fd_bit(pr->at_end, fd));
	else if (!strcmp(name, "dup2") || !strcmp(name, "dup3"))
		fd_state(pr, (int64_t)(int32_t)args[1], fd_is_file(pr, fd), fd_bit(pr->at_end, fd));
	else if ((!strcmp(name, "read") || !strcmp(name, "readv")) && ret > 0)
		fd_set_bit(pr->at_end, fd, false); /* (at the end, a read gives 0) */
	else if (!strcmp(name, "lseek") || !strcmp(name, "ftruncate"))
		/* SEEK_END by 0 is the end; another move, or a new size, may not be */
		fd_set_bit(pr->at_end, fd,
		           !strcmp(name, "lseek") && args[1] == 0 && args[2] == 2 && fd_is_file(pr, fd));
}

/* ------------------------------------------------------------ heap blocks */

static bool block_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct estcall_block *b = &((const struct estcall *)ctx)->blocks[item], *k = key;

	return b->pid == k->pid && b->ptr == k->ptr;
}

static uint64_t block_hash(uint32_t pid, uint64_t ptr)
{
	return hashindex_u64(ptr ^ ((uint64_t)pid << 40));
}

/* The size of the block at ptr in pid, 0 when unknown or freed. */
static uint64_t block_get(const struct estcall *p, uint32_t pid, uint64_t ptr)
{
	struct estcall_block k = { pid, ptr, 0 };
	int64_t i = hashindex_get(&p->block_index, block_hash(pid, ptr), block_eq, p, &k);

	return i < 0 ? 0 : p->blocks[i].size;
}

static void block_set(struct estcall *p, uint32_t pid, uint64_t ptr, uint64_t size)
{
	struct estcall_block k = { pid, ptr, size };
	uint64_t h = block_hash(pid, ptr);
	uint32_t slot;

	if (!ptr)
		return;
	if (p->nblocks >= ESTIMATE_BLOCKS_MAX) {
		hashindex_clear(&p->block_index);
		p->nblocks = 0;
	}
	if (hashindex_reserve(&p->block_index) ||
	    estcall_grow((void **)&p->blocks, &p->blocks_cap, p->nblocks + 1, sizeof(*p->blocks), ESTIMATE_BLOCKS_MAX))
		return; /* not followed: later calls on it have no x */
	slot = hashindex_slot(&p->block_index, h, block_eq, p, &k);
	if (p->block_index.val[slot]) {
		p->blocks[p->block_index.val[slot] - 1].size = size;
		return;
	}
	p->blocks[p->nblocks] = k;
	hashindex_put(&p->block_index, slot, h, p->nblocks++);
}

/* What a finished C library call does to the heap blocks. */
void estcall_follow_heap(struct estcall *p, uint32_t pid, const char *name, const uint64_t *args, uint64_t ret)
{
	if (!strcmp(name, "malloc"))
		block_set(p, pid, ret, args[0]);
	else if (!strcmp(name, "calloc"))
		block_set(p, pid, ret, args[0] * args[1]);
	else if (!strcmp(name, "realloc")) {
		if (ret) {
			block_set(p, pid, args[0], 0);
			block_set(p, pid, ret, args[1]);
		}
	} else if (!strcmp(name, "free"))
		block_set(p, pid, args[0], 0);
}

/* ------------------------------------------------------------ deciding a call */

static uint64_t arg(const struct estcall_in *c, unsigned i)
{
	return i < c->nargs ? c->args[i] : 0;
}

/* The entry for c under rule r (NULL: r unknown, then the call by name).
 * Sets *fate to WAIT, NEVER-as-NO_ENTRY, NO_ENTRY or NO_MODEL when no
 * modelled entry applies. */
const struct oscal_entry *estcall_entry(struct estcall *st, const struct oscal_cal *cal, const struct callrule *r,
                                        const struct estcall_in *c, enum estimate_fate *fate)
{
	const char *call = r ? r->call : c->name, *cond = NULL;
	const struct oscal_entry *en;
	struct estcall_proc *pr;
	int64_t fd;

	*fate = ESTIMATE_MODELLED;
	switch (r ? r->cond : C_NONE) {
	case C_NEVER:
		*fate = ESTIMATE_NO_ENTRY;
		return NULL;
	case C_WAIT:
		*fate = ESTIMATE_WAIT;
		return NULL;
	case C_FD_READ:
	case C_FD_WRITE:
		if (!c->has_args)
			break;
		fd = (int64_t)(int32_t)arg(c, 0);
		pr = proc_get(st, c->pid);
		if (fd_is_file(pr, fd) && r->cond == C_FD_READ)
			cond = c->has_ret && c->ret == 0 ? "eof" : "file";
		else if (fd_is_file(pr, fd))
			/* write and writev at the end append (the entry of that
			 * condition when the calibration has it, else "file") */
			cond = fd_bit(pr->at_end, fd) && strcmp(call, "pwrite") ? "append" : "file";
		else if (r->cond == C_FD_READ) {
			*fate = ESTIMATE_WAIT;
			return NULL;
		}
		break;
	case C_LSEEK:
		if (c->has_args)
			cond = arg(c, 2) == 0 ? "set" : arg(c, 2) == 1 ? "cur" : arg(c, 2) == 2 ? "end" : NULL;
		break;
	case C_OPEN:
		if (c->has_ret && c->ret < 0)
			cond = "missing";
		else if (r->ca == 9)
			cond = "create";
		else if (c->has_args)
			cond = arg(c, r->ca) & 0100 ? "create" : "existing";
		break;
	case C_STAT:
		if (r->ca != 9 && c->has_args && (arg(c, r->ca) & 0x1000))
			call = "fstat";
		else
			cond = c->has_ret && c->ret < 0 ? "missing" : "existing";
		break;
	case C_UNLINKAT:
		if (c->has_args && (arg(c, 2) & 0x200))
			call = "rmdir";
		break;
	case C_MMAP:
		if (c->has_args)
			cond = arg(c, r->ca) & 0x20 ? "anon" : "file";
		break;
	case C_FUTEX: {
		unsigned op = (unsigned)arg(c, r->ca) & 127u;

		/* WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2 */
		if (!c->has_args || op == 0 || op == 6 || op == 9 || op == 11 || op == 13) {
			*fate = ESTIMATE_WAIT;
			return NULL;
		}
		cond = "wake";
		break;
	}
	case C_KILL:
		if (c->has_ret && c->ret < 0 && (!c->libcall ? c->ret == -ESRCH : true))
			cond = "none";
		else if (c->has_args && (uint32_t)arg(c, 0) == c->pid)
			cond = "self";
		else if (c->has_args)
			cond = "other";
		break;
	case C_CLOCK:
		if (c->has_args && arg(c, 0) < sizeof(clock_conds) / sizeof(clock_conds[0]))
			cond = clock_conds[arg(c, 0)];
		break;
	default:
		break;
	}
	en = cond ? oscal_cal_find_call(cal, call, cond) : NULL;
	if (!en)
		en = oscal_cal_find_call(cal, call, NULL);
	if (!en) {
		*fate = ESTIMATE_NO_ENTRY;
		return NULL;
	}
	if (en->status != OSCAL_MEASURED || en->model.form == OSCAL_NONE) {
		*fate = ESTIMATE_NO_MODEL;
		return en;
	}
	return en;
}

/* The parameter x of c under r for entry en; false when unknown. */
static bool param_for(struct estcall *st, const struct oscal_entry *en, const struct callrule *r,
                      const struct estcall_in *c, double *x)
{
	uint64_t size;

	*x = 0;
	if (!en->param[0])
		return true;
	if (!r || !c->has_args)
		return false;
	switch (r->x) {
	case X_ARG:
		*x = (double)arg(c, r->a);
		return true;
	case X_RET_ARG:
		*x = c->has_ret && c->ret >= 0 ? (double)c->ret : (double)arg(c, r->a);
		return true;
	case X_RET:
		*x = (double)c->ret;
		return c->has_ret && c->ret >= 0;
	case X_MUL:
		*x = (double)arg(c, r->a) * (double)arg(c, r->b);
		return true;
	case X_RET_MUL:
		*x = c->has_ret && c->ret >= 0 ? (double)c->ret * (double)arg(c, r->b)
		                               : (double)arg(c, r->a) * (double)arg(c, r->b);
		return true;
	case X_USEC:
		*x = (double)arg(c, r->a) * 1e3;
		return true;
	case X_SEC:
		*x = (double)arg(c, r->a) * 1e9;
		return true;
	case X_BLOCK:
		size = block_get(st, c->pid, arg(c, r->a));
		if (!size && r->b && c->libcall) {
			*x = (double)(arg(c, r->b) / 2);
			return true;
		}
		*x = (double)size;
		return size > 0;
	default:
		return false;
	}
}

/* Decides c: its fate, entry, x and model time. */
enum estimate_fate estcall_decide(struct estcall *st, const struct oscal_cal *cal, const struct estcall_in *c,
                                  const struct oscal_entry **enp, double *x, double *model)
{
	const struct callrule *r = estcall_rule(c->name);
	enum estimate_fate fate;
	const struct oscal_entry *en = estcall_entry(st, cal, r, c, &fate);

	*enp = en;
	*x = 0;
	*model = 0;
	if (fate != ESTIMATE_MODELLED)
		return fate;
	if (!param_for(st, en, r, c, x)) {
		/* a sleep whose request is behind a pointer is a wait for time */
		if (r && !strcmp(r->call, "nanosleep"))
			return ESTIMATE_WAIT;
		return ESTIMATE_NO_PARAM;
	}
	*model = oscal_model_eval(&en->model, *x);
	if (!isfinite(*model))
		return ESTIMATE_NO_MODEL;
	if (*model < 0)
		*model = 0;
	return ESTIMATE_MODELLED;
}

void estcall_fork(struct estcall *p, uint32_t parent, uint32_t child)
{
	struct estcall_proc *from, *to;

	from = proc_get(p, parent);
	to = proc_get(p, child);
	from = proc_get(p, parent); /* the table may have moved */
	if (from && to && from != to) {
		memcpy(to->files, from->files, sizeof(to->files));
		memcpy(to->at_end, from->at_end, sizeof(to->at_end));
	}
}

void estcall_release(struct estcall *p)
{
	free(p->procs);
	free(p->blocks);
	hashindex_release(&p->block_index);
	memset(p, 0, sizeof(*p));
}
