/* In-process patching (see dynpatch.c), applying the recorder's plans
 * (LP_PLAN_NAME, include/layerprof/format.h): trampolines within a jump's
 * reach of each planned object's code, the relocated first instructions in
 * them, and the jumps at the functions' entries (arch/<arch>/lp_dynarch.h
 * writes the architecture's).
 *
 * A plan is applied in the constructor, before any of the program's code
 * runs and while no other thread exists, and to a library in the dlopen
 * that loaded it, before the call returns: no thread has been in the bytes
 * being replaced.  A function whose bytes in memory are not the plan's is
 * left alone. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

#if defined(LP_HAVE_DYNTRAMP)

#include "lp_dynarch.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* arch/<arch>/dyntramp.S (lp_dyn_return: runtime.h) */
void lp_dyn_entry(void);
void lp_dyn_probe(void);

/* A trampoline's stub, before its relocated code, and where the patched
 * instruction's jump lands in it: a probe's (where the architecture has
 * them: DYN_PROBE_STUB) saves more. */
static LP_NOINSTR uint32_t stub_size(const struct lp_plan_func *f)
{
#ifdef DYN_PROBE_STUB
	if (f->kind == LP_PLAN_PROBE)
		return DYN_PROBE_STUB;
#else
	(void)f;
#endif
	return DYN_STUB_SIZE;
}

static LP_NOINSTR uint32_t stub_entry(const struct lp_plan_func *f)
{
#ifdef DYN_PROBE_STUB
	if (f->kind == LP_PLAN_PROBE)
		return DYN_PROBE_ENTRY;
#else
	(void)f;
#endif
	return 0;
}

/* The bytes a function's trampoline takes: its stub, its code. */
static LP_NOINSTR size_t tramp_size(const struct lp_plan_func *f)
{
	return ((stub_size(f) + 7u) & ~7u) + ((f->code_len + 7u) & ~7u);
}

/* The distance from a to b, signed (addresses compared as unsigned
 * numbers: 32-bit ones above 2 GiB too). */
static LP_NOINSTR intptr_t dist(uintptr_t a, uintptr_t b)
{
	return (intptr_t)(b - a);
}

static LP_NOINSTR bool within(intptr_t d)
{
	return d >= -DYN_REACH && d <= DYN_REACH;
}

/* Room for the trampolines within a rel32 jump of every entry in
 * [lo, hi): tried at 1 MiB steps beyond hi, then below lo. */
static LP_NOINSTR void *near_map(uintptr_t lo, uintptr_t hi, size_t size)
{
	const uintptr_t step = 1u << 20;

	for (int dir = 0; dir < 2; dir++) {
		for (uintptr_t k = 1; k < 1024; k++) {
			uintptr_t at = dir == 0 ? ((hi + step - 1) & ~(step - 1)) + k * step
			                        : ((lo & ~(step - 1)) - k * step - ((size + step - 1) & ~(step - 1)));
			void *p;

			if (dir == 1 && at > lo)
				break;
			if (!within(dist(lo, at + size)) || !within(dist(at, hi)))
				break;
			p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			/* a kernel without MAP_FIXED_NOREPLACE takes it as a hint */
			if ((uintptr_t)p != at) {
				munmap(p, size);
				continue;
			}
			return p;
		}
	}
	return NULL;
}

static LP_NOINSTR void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* Fills in relocation r of the code c; false when out of reach. */
static LP_NOINSTR bool reloc_apply(uint8_t *c, uint32_t len, const struct lp_plan_reloc *r, uintptr_t bias)
{
	uint64_t v = r->target + bias;
	intptr_t d;
	uint32_t insn;

	switch (r->kind) {
	case LP_PLAN_REL32:
		d = (intptr_t)v - (intptr_t)(c + r->end);
		if (r->at + 4 > len || r->end > len || d < INT32_MIN || d > INT32_MAX)
			return false;
		put32(c + r->at, (int32_t)d);
		return true;
	case LP_PLAN_ABS64:
		if (r->at + 8 > len)
			return false;
		memcpy(c + r->at, &v, 8);
		return true;
	case LP_PLAN_ABS32: {
		uint32_t w = (uint32_t)v;

		if (r->at + 4 > len || sizeof(uintptr_t) != 4)
			return false;
		memcpy(c + r->at, &w, 4);
		return true;
	}
	case LP_PLAN_B26:
		d = (intptr_t)v - (intptr_t)(c + r->at);
		if (r->at + 4 > len || (d & 3) || d < -(1ll << 27) || d >= (1ll << 27))
			return false;
		memcpy(&insn, c + r->at, 4);
		insn = (insn & 0xfc000000u) | ((uint32_t)(d >> 2) & 0x3ffffffu);
		memcpy(c + r->at, &insn, 4);
		return true;
	default:
		return false;
	}
}

/* The pages of [a, a + n) writable (true) or back to read and execute.
 * They stay executable while written: the runtime's own calls run code on
 * them meanwhile when the object is a library (the C library's mprotect,
 * when its plan's functions lie on both sides of it).  Where the system
 * refuses writable and executable pages, writable only: then a plan whose
 * range holds what the runtime calls cannot be applied safely, which only
 * such a library's may. */
static LP_NOINSTR bool text_writable(uintptr_t a, size_t n, bool on)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = a & ~(page - 1), hi = (a + n + page - 1) & ~(page - 1);

	if (!on)
		return !mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
	return !mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) ||
	       !mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
}

/* The trapped entries of a plan's functions made ready (recs filled in):
 * known to the trap handler before their int3s are written.  False
 * without memory for them. */
static LP_NOINSTR bool traps_add(const struct lp_plan_func *fn, uint32_t n, const struct lp_dynrec *recs,
                                 uintptr_t bias)
{
#if defined(__x86_64__)
	uintptr_t *addr;
	const struct lp_dynrec **rec;
	size_t k = 0;
	int r;

	for (uint32_t i = 0; i < n; i++)
		k += fn[i].status == LP_PLAN_PATCHED && fn[i].trap;
	if (!k)
		return true;
	addr = malloc(k * sizeof(*addr));
	rec = malloc(k * sizeof(*rec));
	k = 0;
	for (uint32_t i = 0; addr && rec && i < n; i++)
		if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap) {
			addr[k] = (uintptr_t)fn[i].addr + bias;
			rec[k++] = &recs[i];
		}
	r = addr && rec ? lp_dyntrap_add(addr, rec, k) : -ENOMEM;
	free(addr);
	free(rec);
	return r == 0;
#else
	(void)fn;
	(void)n;
	(void)recs;
	(void)bias;
	return true;
#endif
}

/* Applies the plan mapped at map to the object loaded with that bias. */
static LP_NOINSTR void apply(uint8_t *map, uintptr_t bias)
{
	struct lp_plan_header *h = (struct lp_plan_header *)map;
	struct lp_plan_func *fn = (struct lp_plan_func *)(map + sizeof(*h));
	const struct lp_plan_reloc *rel = (const struct lp_plan_reloc *)(fn + h->nfuncs);
	const uint8_t *code = (const uint8_t *)(rel + h->nrelocs);
	struct lp_dynrec *recs;
	uint8_t *tramp;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t tsize, off;

	tsize = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = dyn_entry_addr(fn[i].addr, bias);

		if ((fn[i].trap ? fn[i].patch_len != 1 || !fn[i].orig_len || fn[i].orig_len > LP_PLAN_ORIG_MAX ||
		                      DYN_PLAN_ARCH != LP_PLAN_X86_64
		                : fn[i].patch_len < DYN_JUMP || fn[i].patch_len > LP_PLAN_ORIG_MAX) ||
		    (fn[i].kind == LP_PLAN_PROBE && stub_size(&fn[i]) == DYN_STUB_SIZE) ||
		    (uint64_t)fn[i].code_off + fn[i].code_len > h->code_bytes ||
		    (uint64_t)fn[i].reloc_first + fn[i].nrelocs > h->nrelocs)
			return; /* not a plan the recorder wrote */
		lo = a < lo ? a : lo;
		hi = a + fn[i].patch_len > hi ? a + fn[i].patch_len : hi;
		tsize += tramp_size(&fn[i]);
	}
	tramp = near_map(lo, hi, tsize);
	recs =
	    mmap(NULL, (size_t)h->nfuncs * sizeof(*recs), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!tramp || recs == MAP_FAILED) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			fn[i].status = LP_PLAN_FAR;
		if (tramp)
			munmap(tramp, tsize);
		return;
	}
	/* the trampolines first, all of them; then the entries */
	off = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = dyn_entry_addr(fn[i].addr, bias);
		uint8_t *t = tramp + off, *c = t + stub_size(&fn[i]);
		bool ok = true;

		off += tramp_size(&fn[i]);
		if (memcmp((const void *)a, fn[i].orig, fn[i].trap ? fn[i].orig_len : fn[i].patch_len)) {
			fn[i].status = LP_PLAN_CHANGED;
			continue;
		}
		memcpy(c, code + fn[i].code_off, fn[i].code_len);
		for (uint32_t k = 0; ok && k < fn[i].nrelocs; k++)
			ok = reloc_apply(c, fn[i].code_len, &rel[fn[i].reloc_first + k], bias);
		if (!ok || !within(dist(a, (uintptr_t)t))) {
			fn[i].status = LP_PLAN_FAR;
			continue;
		}
		recs[i].fn = fn[i].kind == LP_PLAN_PROBE ? a : LP_ARCH_FUNC(a);
		recs[i].cont = dyn_code_addr(fn[i].addr, c);
		recs[i].args = fn[i].trap ? 0 : fn[i].args; /* a trap's registers are not on the stack */
		recs[i].kind = fn[i].kind;
#ifdef DYN_PROBE_STUB
		if (fn[i].kind == LP_PLAN_PROBE)
			dyn_probe_stub_write(t, (uintptr_t)&recs[i], (uintptr_t)lp_dyn_probe);
		else
#endif
			dyn_stub_write(t, (uintptr_t)&recs[i], (uintptr_t)lp_dyn_entry, fn[i].addr);
		fn[i].status = LP_PLAN_PATCHED; /* for now: the entry's turn below */
	}
	if (mprotect(tramp, tsize, PROT_READ | PROT_EXEC)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED)
				fn[i].status = LP_PLAN_UNWRITABLE;
		return;
	}
	mprotect(recs, (size_t)h->nfuncs * sizeof(*recs), PROT_READ);
	/* the program's code is written while no other thread runs it (none
	 * exists yet, or the object is being loaded) */
	if (!traps_add(fn, h->nfuncs, recs, bias)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap)
				fn[i].status = LP_PLAN_UNWRITABLE;
	}
	if (!text_writable(lo, hi - lo, true)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED)
				fn[i].status = LP_PLAN_UNWRITABLE;
		return;
	}
	__builtin___clear_cache((char *)tramp, (char *)tramp + tsize);
	off = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = dyn_entry_addr(fn[i].addr, bias);
		uint8_t *t = tramp + off;

		off += tramp_size(&fn[i]);
		if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap)
			*(volatile uint8_t *)a = 0xcc;
		else if (fn[i].status == LP_PLAN_PATCHED)
			dyn_entry_write(a, (uintptr_t)(t + stub_entry(&fn[i])), fn[i].patch_len, fn[i].addr);
	}
	text_writable(lo, hi - lo, false);
	__builtin___clear_cache((char *)lo, (char *)hi);
}

/* The session's plans (plan.0, plan.1, ...: the program's, then each
 * library's), mapped at the first call, and the objects they were applied
 * to. */
static struct dynplan {
	uint8_t *map;
	size_t size;
} plans[LP_PLAN_FILES_MAX];
static unsigned nplans;

static struct dynapplied {
	unsigned plan;
	uintptr_t bias;
	bool seen;
} applied[LP_PLAN_APPLIED_MAX];
static unsigned napplied;

static LP_NOINSTR bool plan_valid(const uint8_t *map, size_t size)
{
	const struct lp_plan_header *h = (const struct lp_plan_header *)map;
	size_t need;

	if (size < sizeof(*h) || h->magic != LP_PLAN_MAGIC || h->version != LP_PLAN_VERSION ||
	    h->arch != DYN_PLAN_ARCH || !h->nfuncs)
		return false;
	need = sizeof(*h) + (size_t)h->nfuncs * sizeof(struct lp_plan_func) +
	       (size_t)h->nrelocs * sizeof(struct lp_plan_reloc) + h->code_bytes;
	return need <= size;
}

static LP_NOINSTR void plans_load(void)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->plans, memory_order_acquire);

	for (unsigned k = nplans; k < n && k < LP_PLAN_FILES_MAX; k++) {
		char path[4096];
		struct stat st;
		void *map;
		int fd;

		if ((size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_NAME ".%u", lp_proc.session_dir, k) >=
		    sizeof(path))
			return;
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			close(fd);
			return;
		}
		map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			return;
		if (!plan_valid(map, (size_t)st.st_size)) {
			munmap(map, (size_t)st.st_size);
			return;
		}
		plans[nplans].map = map;
		plans[nplans++].size = (size_t)st.st_size;
	}
}

/* A loaded object a plan is for, not yet patched. */
struct dynmatch {
	unsigned objects;  /* seen so far: the first is the program */
	bool main_planned; /* a plan is the program's */
	unsigned n;
	struct {
		unsigned plan;
		uintptr_t bias;
	} m[LP_PLAN_APPLIED_MAX];
};

/* Whether the object is a part of the C library (or its loader), whose
 * functions the runtime itself calls. */
static LP_NOINSTR bool c_library(const char *path)
{
	static const char *const parts[] = { "libc.so", "libc-", "ld-linux", "ld-musl", "libc.musl", "libpthread" };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (!strncmp(base, parts[i], strlen(parts[i])))
			return true;
	return false;
}

static LP_NOINSTR int object_match(struct dl_phdr_info *info, size_t size, void *data)
{
	struct dynmatch *dm = data;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
	struct stat st;

	(void)size;
	/* the program itself, first, has no name here: /proc names it, or
	 * (without /proc) the path it was started by */
	if (!name && dm->objects++ == 0) {
		name = "/proc/self/exe";
		if (stat(name, &st))
			name = (const char *)getauxval(AT_EXECFN);
	} else if (name)
		dm->objects++;
	if (!name || stat(name, &st))
		return 0;
	for (unsigned k = 0; k < nplans; k++) {
		const struct lp_plan_header *h = (const struct lp_plan_header *)plans[k].map;
		bool done = false;

		if ((uint64_t)st.st_dev != h->dev || (uint64_t)st.st_ino != h->ino)
			continue;
		if (c_library(name))
			lp_dyn_libc_patched = 1;
		if (dm->objects == 1)
			dm->main_planned = true;
		for (unsigned i = 0; i < napplied; i++)
			if (applied[i].plan == k && applied[i].bias == info->dlpi_addr) {
				applied[i].seen = true;
				done = true;
			}
		if (!done && dm->n < LP_PLAN_APPLIED_MAX) {
			dm->m[dm->n].plan = k;
			dm->m[dm->n++].bias = info->dlpi_addr;
		}
	}
	return 0;
}

/* Applies the plans to what is loaded; true when one is the program's. */
static LP_NOINSTR bool scan(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct dynmatch dm = { .n = 0 };
	unsigned kept = 0;
	int saved = errno; /* after dlopen and dlclose: theirs, not ours */

	if (!nplans)
		return false;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < napplied; i++)
		applied[i].seen = false;
	dl_iterate_phdr(object_match, &dm);
	/* objects unloaded since (dlclose): loaded again, they are new */
	for (unsigned i = 0; i < napplied; i++)
		if (applied[i].seen)
			applied[kept++] = applied[i];
	napplied = kept;
	for (unsigned i = 0; i < dm.n && napplied < LP_PLAN_APPLIED_MAX; i++) {
		apply(plans[dm.m[i].plan].map, dm.m[i].bias);
		applied[napplied].plan = dm.m[i].plan;
		applied[napplied].bias = dm.m[i].bias;
		applied[napplied++].seen = true;
	}
	pthread_mutex_unlock(&lock);
	errno = saved;
	return dm.main_planned;
}

LP_NOINSTR void lp_dynpatch_scan(void)
{
	uint8_t was = lp_self.dyn_inside;

	/* the runtime's own calls (a patched C library's): untraced */
	lp_self.dyn_inside = 1;
	scan();
	lp_self.dyn_inside = was;
}

/* This process's executable has no plan (the program exec'd it): the
 * drain is asked for one (LP_PLAN_WANT_NAME in struct lp_control), and
 * waited for, at most LP_PLAN_WAIT_MS, less when the drain is gone. */
static LP_NOINSTR bool plan_request(void)
{
	_Atomic uint32_t *answers = (_Atomic uint32_t *)&lp_proc.control->plan_answers;
	char exe[4096], path[4096], line[4200];
	struct timespec pause = { 0, 1000000 };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;
	uint32_t ticket;
	int fd, len;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	if (exe[0] != '/' || stat(exe, &st) ||
	    (size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_WANT_NAME ".%d", lp_proc.session_dir, (int)getpid()) >=
	        sizeof(path))
		return false;
	len = snprintf(line, sizeof(line), "%llu %llu %s\n", (unsigned long long)st.st_dev,
	               (unsigned long long)st.st_ino, exe);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	n = write(fd, line, (size_t)len);
	close(fd);
	if (n != len)
		return false;
	ticket =
	    atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->plan_wants, 1, memory_order_acq_rel) + 1;
	for (unsigned waited = 0; waited < LP_PLAN_WAIT_MS; waited++) {
		if ((int32_t)(atomic_load_explicit(answers, memory_order_acquire) - ticket) >= 0)
			return true;
		if (waited % 50 == 49 && lp_proc.control->drain_pid && kill((pid_t)lp_proc.control->drain_pid, 0) &&
		    errno == ESRCH)
			return false;
		nanosleep(&pause, NULL);
	}
	return false;
}

LP_NOINSTR void lp_dynpatch_apply(void)
{
	static bool done;
	int saved = errno;

	if (done || !lp_proc.session_dir || !lp_proc.control || !lp_proc.control->plans)
		return;
	done = true;
	lp_self.dyn_inside = 1;
	plans_load();
	if (nplans)
		lp_dyntrap_arm();
	if (!scan() && plan_request()) {
		lp_dyntrap_arm();
		plans_load();
		scan();
	}
	lp_self.dyn_inside = 0;
	errno = saved;
}

#else

LP_NOINSTR void lp_dynpatch_apply(void)
{
}

LP_NOINSTR void lp_dynpatch_scan(void)
{
}

#endif
