/* The patch plan (see dpatch.h). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dyntrace/dpatch_impl.h"
#include "common/libcsig.h"

/* The ELF machine of the programs this build patches: its own. */
static uint16_t dpatch_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#elif defined(__arm__)
	return EM_ARM;
#else
	return EM_NONE;
#endif
}

bool dpatch_supported(void)
{
	return dpatch_machine() != EM_NONE;
}

/* The file's bytes at vaddr a, and how many follow in its segment. */
const uint8_t *dpatch_bytes_at(const struct dpatch *p, uint64_t a, size_t *avail)
{
	for (unsigned s = 0; s < p->nseg; s++)
		if (a >= p->seg[s].vaddr && a - p->seg[s].vaddr < p->seg[s].filesz) {
			*avail = (size_t)(p->seg[s].filesz - (a - p->seg[s].vaddr));
			return p->bytes[s] + (a - p->seg[s].vaddr);
		}
	*avail = 0;
	return NULL;
}

/* A reason with an offset in it, kept until the plan is freed. */
const char *dpatch_why_at(struct dpatch *p, const char *fmt, uint64_t off)
{
	char buf[160], *w;

	snprintf(buf, sizeof(buf), fmt, (unsigned long long)off);
	w = strdup(buf);
	if (!w)
		return "out of memory";
	p->owned[p->nowned++] = w;
	return w;
}

int dpatch_target_add(struct dpatch *p, uint64_t source, uint64_t target)
{
	if (p->ntargets == p->captargets) {
		size_t cap = p->captargets ? 2 * p->captargets : 4096;
		struct branch *t = realloc(p->targets, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		p->targets = t;
		p->captargets = cap;
	}
	p->targets[p->ntargets].source = source;
	p->targets[p->ntargets++].target = target;
	return 0;
}

static int cmp_target(const void *a, const void *b)
{
	uint64_t x = ((const struct branch *)a)->target, y = ((const struct branch *)b)->target;

	return x < y ? -1 : x > y;
}

void dpatch_targets_sort(struct dpatch *p)
{
	if (p->ntargets)
		qsort(p->targets, p->ntargets, sizeof(*p->targets), cmp_target);
}

const struct branch *dpatch_target_inside(const struct dpatch *p, uint64_t a, uint64_t end)
{
	size_t lo = 0, hi = p->ntargets;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->targets[mid].target <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->ntargets && p->targets[lo].target < end ? &p->targets[lo] : NULL;
}

/* Function f into the plan, with its relocated code. */
const char *dpatch_append(struct dpatch *p, const struct elfsyms_fn *f, uint32_t patch_len, const uint8_t *b,
                          const struct reloc_buf *rb)
{
	struct lp_plan_func *pf;

	if (p->ncode + rb->len > p->capcode) {
		uint32_t cap = 2 * (p->capcode + rb->len);
		uint8_t *c = realloc(p->code, cap);

		if (!c)
			return "out of memory";
		p->code = c;
		p->capcode = cap;
	}
	if (p->nrel + rb->nrel > p->caprel) {
		uint32_t cap = 2 * (p->caprel + rb->nrel);
		struct lp_plan_reloc *r = realloc(p->rel, cap * sizeof(*r));

		if (!r)
			return "out of memory";
		p->rel = r;
		p->caprel = cap;
	}
	pf = &p->fn[p->nfn];
	memset(pf, 0, sizeof(*pf));
	pf->addr = f->addr;
	pf->patch_len = patch_len;
	pf->code_off = p->ncode;
	pf->code_len = rb->len;
	pf->reloc_first = p->nrel;
	pf->nrelocs = rb->nrel;
	memcpy(pf->orig, b, patch_len);
	if (rb->len)
		memcpy(p->code + p->ncode, rb->code, rb->len);
	p->ncode += rb->len;
	if (rb->nrel)
		memcpy(p->rel + p->nrel, rb->rel, rb->nrel * sizeof(*rb->rel));
	p->nrel += rb->nrel;
	p->span[p->nfn] = patch_len;
	p->name[p->nfn++] = f->name;
	return NULL;
}

/* Plans function f for the file's machine. */
static const char *plan_function(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	switch (p->es->machine) {
	case EM_AARCH64:
		return dplan_a64(p, f);
	case EM_ARM:
		return dplan_arm(p, f, next);
	default:
		return dplan_x86(p, f, next);
	}
}

static void skip(struct dpatch *p, const char *name, const char *why)
{
	p->skipped[p->nskipped].name = name;
	p->skipped[p->nskipped++].why = why;
}

/* Library functions whose callers' return address must stay theirs: they
 * save it to come back to later (the setjmp and context families), return
 * twice into memory they share with the caller (vfork), or read it to find
 * the frames an exception unwinds. */
static const char *const libcall_never[] = {
	"setjmp",
	"_setjmp",
	"__sigsetjmp",
	"sigsetjmp",
	"vfork",
	"__vfork",
	"getcontext",
	"swapcontext",
	"savectx",
	"__libc_start_main",
	"__cxa_begin_catch",
	"_Unwind_Resume",
	"_Unwind_RaiseException",
	"_Unwind_Resume_or_Rethrow",
	"_Unwind_ForcedUnwind",
};

/* The first function of the file at or after a. */
static uint64_t next_function(const struct dpatch *p, uint64_t a)
{
	size_t lo = 0, hi = p->es->nfn;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->es->fn[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->es->nfn ? p->es->fn[lo].addr : UINT64_MAX;
}

/* --libcalls: each PLT stub of the program, planned as a function named
 * NAME@plt (as the host names it), so that a call into a shared library is
 * an entry and an exit under its caller.  Returns 0 or -ENOMEM. */
static int plan_libcalls(struct dpatch *p)
{
	for (size_t i = 0; i < p->es->nplt; i++) {
		const struct elfsyms_plt *s = &p->es->plt[i];
		const struct libcsig *sig;
		struct elfsyms_fn f = { .addr = s->stub, .size = (s->flags & ELFSYMS_PLT_GOT) ? 8 : 16 };

		/* arm: the ARM entry, which Thumb callers' entry leads to */
		if (p->es->machine == EM_ARM) {
			f.addr += (s->flags & ELFSYMS_PLT_THUMB_ENTRY) ? 4 : 0;
			f.size = 12;
		}
		char *name;
		const char *why = NULL;
		size_t n = strlen(s->name) + 5;

		if (!s->stub)
			continue;
		name = malloc(n);
		if (!name || p->nfn + p->nskipped >= p->cap) {
			free(name);
			return -ENOMEM;
		}
		snprintf(name, n, "%s@plt", s->name);
		p->owned[p->nowned++] = name;
		f.name = name;
		p->candidates++;
		for (size_t k = 0; k < sizeof(libcall_never) / sizeof(libcall_never[0]); k++)
			if (!strcmp(s->name, libcall_never[k]))
				why = "it needs its caller's own return address (setjmp, vfork, the unwinder)";
		if (!why)
			why = plan_function(p, &f, next_function(p, f.addr + 1));
		if (why)
			skip(p, name, why);
		else if ((sig = libcsig_find(s->name)))
			p->fn[p->nfn - 1].args = libcsig_plan(sig);
	}
	return 0;
}

/* The bytes of the file plan i's patch takes over: those it replaces, or
 * (a function moved whole) the function's. */
static void plan_span(const struct dpatch *p, uint32_t i, uint64_t *lo, uint64_t *hi)
{
	const struct lp_plan_func *f = &p->fn[i];

	*lo = f->addr;
	*hi = f->addr + (f->trap ? f->orig_len : p->span[i]);
}

/* --probe: each FUNCTION+OFFSET of the program planned as a probe (kind
 * LP_PLAN_PROBE).  One that names no instruction, or whose patch would
 * overlap another's, fails the plan: 0, or -EINVAL with err set. */
static int plan_probes(struct dpatch *p, const struct uprobes_config *cfg, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < cfg->nprobes; i++) {
		const char *loc = cfg->probes[i], *plus = strrchr(loc, '+'), *why;
		const struct elfsyms_fn *f = NULL;
		unsigned long long off;
		char *end, *name;
		size_t flen = plus ? (size_t)(plus - loc) : 0;

		errno = 0;
		off = plus ? strtoull(plus + 1, &end, 0) : 0;
		if (!plus || !flen || end == plus + 1 || *end || errno || !off) {
			snprintf(err, errlen, "--probe '%s': give FUNCTION+OFFSET (an offset above 0, e.g. main+0x1c)",
			         loc);
			return -EINVAL;
		}
		for (size_t k = 0; k < p->es->nfn && !f; k++)
			if (!strncmp(p->es->fn[k].name, loc, flen) && !p->es->fn[k].name[flen])
				f = &p->es->fn[k];
		if (!f) {
			snprintf(err, errlen, "--probe '%s': '%s' has no function '%.*s'", loc, p->path, (int)flen,
			         loc);
			return -EINVAL;
		}
		if (off >= f->size) {
			snprintf(err, errlen, "--probe '%s': beyond the end of %s (%llu bytes)", loc, f->name,
			         (unsigned long long)f->size);
			return -EINVAL;
		}
		name = malloc(flen + 24);
		if (!name)
			return -ENOMEM;
		snprintf(name, flen + 24, "%s+0x%llx", f->name, off);
		p->owned[p->nowned++] = name;
		why = p->es->machine == EM_AARCH64  ? dplan_a64_probe(p, f, f->addr + off, name)
		      : p->es->machine == EM_X86_64 ? dplan_x86_probe(p, f, f->addr + off, name)
		                                    : "probes are built for x86-64 and aarch64";
		if (why) {
			snprintf(err, errlen, "--probe '%s': %s", loc, why);
			return -EINVAL;
		}
		for (uint32_t k = 0; k + 1 < p->nfn; k++) {
			uint64_t lo, hi, plo, phi;

			plan_span(p, k, &lo, &hi);
			plan_span(p, p->nfn - 1, &plo, &phi);
			if (plo < hi && lo < phi) {
				snprintf(err, errlen,
				         "--probe '%s': its patch would overlap %s's (a function's first bytes or a "
				         "probe's)",
				         loc, p->name[k]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int read_segments(struct dpatch *p, char *err, size_t errlen)
{
	bool interp;
	int r = dsel_segments(p->path, p->es->elf_class, p->seg, &p->nseg, &interp);
	int fd;

	if (r) {
		snprintf(err, errlen, "'%s': cannot read its program headers", p->path);
		return r;
	}
	if (!interp && !p->lib) {
		snprintf(err, errlen,
		         "'%s' is statically linked: the runtime that patches it cannot be loaded into it (--backend "
		         "uprobe traces it)",
		         p->path);
		return -ENOTSUP;
	}
	fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", p->path, strerror(-r));
		return r;
	}
	for (unsigned s = 0; !r && s < p->nseg; s++) {
		p->bytes[s] = p->seg[s].filesz < (1ull << 31) ? malloc(p->seg[s].filesz ? p->seg[s].filesz : 1) : NULL;
		if (!p->bytes[s])
			r = -ENOMEM;
		else if (pread(fd, p->bytes[s], p->seg[s].filesz, (off_t)p->seg[s].offset) != (ssize_t)p->seg[s].filesz)
			r = -ENOEXEC;
	}
	close(fd);
	if (r)
		snprintf(err, errlen, "'%s': cannot read its code", p->path);
	return r;
}

/* One file's plan: the program (lib false), or a library whose functions
 * cfg's patterns choose. */
static struct dpatch *file_open(const struct uprobes_config *cfg, bool lib, char *err, size_t errlen)
{
	struct dpatch *p = calloc(1, sizeof(*p));
	struct stat st;
	size_t n;
	int r;

	if (!p || !(p->path = strdup(cfg->path))) {
		snprintf(err, errlen, "out of memory");
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	if (stat(p->path, &st)) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", p->path, strerror(-r));
		goto fail;
	}
	p->dev = (uint64_t)st.st_dev;
	p->ino = (uint64_t)st.st_ino;
	r = elfsyms_open(p->path, &p->es, err, errlen);
	if (r)
		goto fail;
	if (p->es->machine != dpatch_machine()) {
		snprintf(err, errlen,
		         "'%s': in-process patching is built for x86-64, aarch64 and 32-bit ARM programs, on their "
		         "own machines (--backend uprobe)",
		         p->path);
		r = -ENOTSUP;
		goto fail;
	}
	p->lib = lib;
	r = read_segments(p, err, errlen);
	if (r)
		goto fail;
	r = p->es->machine == EM_X86_64 ? dplan_x86_targets(p) : p->es->machine == EM_ARM ? dplan_arm_targets(p) : 0;
	n = p->es->nfn + p->es->nplt + cfg->nprobes + 1;
	p->cap = n;
	p->fn = calloc(n, sizeof(*p->fn));
	p->name = calloc(n, sizeof(*p->name));
	p->span = calloc(n, sizeof(*p->span));
	p->skipped = calloc(n, sizeof(*p->skipped));
	p->owned = calloc(2 * n, sizeof(*p->owned));
	if (r || !p->fn || !p->name || !p->skipped || !p->owned) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->es->nfn; i++) {
		const struct elfsyms_fn *f = &p->es->fn[i];
		const char *why;

		if (cfg->no_functions || !dsel_chosen(cfg, f->name) || (!lib && dsel_is_crt(f->name)) ||
		    dsel_is_part(f->name))
			continue;
		p->candidates++;
		if (f->flags & ELFSYMS_FN_IFUNC) {
			skip(p, f->name, "an IFUNC resolver (it runs in the loader)");
			continue;
		}
		why = plan_function(p, f, i + 1 < p->es->nfn ? p->es->fn[i + 1].addr : UINT64_MAX);
		if (why)
			skip(p, f->name, why);
	}
	if (cfg->libcalls)
		r = plan_libcalls(p);
	if (r) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!lib && cfg->nprobes) {
		r = plan_probes(p, cfg, err, errlen);
		if (r)
			goto fail;
	}
	p->planner_skipped = p->nskipped;
	if (!p->candidates && (lib || !cfg->nprobes)) {
		snprintf(err, errlen, "'%s': %s", p->path,
		         cfg->no_functions ? "no PLT stubs: it calls no shared library through a PLT"
		         : lib             ? "no function of the library matches --dynamic's patterns"
		         : cfg->npatterns  ? "no function of the program matches --dynamic's patterns"
		                           : "no function symbols (neither .symtab nor .dynsym has any)");
		r = -ENOENT;
		goto fail;
	}
	if (!p->nfn) {
		snprintf(err, errlen, "'%.512s': none of its %u functions can be patched (%s: %s)", p->path,
		         p->candidates, p->skipped[0].name, p->skipped[0].why);
		r = -ENOTSUP;
		goto fail;
	}
	return p;
fail:
	dpatch_free(p);
	errno = -r;
	return NULL;
}

#if defined(__x86_64__)
#define LIB_TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define LIB_TRIPLET "aarch64-linux-gnu"
#else
#define LIB_TRIPLET "arm-linux-gnueabihf"
#endif

static bool lib_try(const char *dir, size_t dirlen, const char *name, char *out, size_t outlen)
{
	struct stat st;

	if ((size_t)snprintf(out, outlen, "%.*s/%s", (int)dirlen, dir, name) >= outlen)
		return false;
	return !stat(out, &st) && S_ISREG(st.st_mode);
}

/* A library named by --dynamic: a path, or a name looked for in
 * LD_LIBRARY_PATH, the program's own directory and the system's library
 * directories.  The runtime patches a loaded object only when it is this
 * very file, so a wrong guess traces nothing (and the recording says the
 * library was not loaded), never the wrong code. */
static int lib_find(const char *name, const char *prog, char *out, size_t outlen)
{
	static const char *const system_dirs[] = { "/lib/" LIB_TRIPLET, "/usr/lib/" LIB_TRIPLET, "/lib",
		                                   "/usr/lib",          "/usr/local/lib",        "/lib64",
		                                   "/usr/lib64" };
	const char *llp = getenv("LD_LIBRARY_PATH"), *slash = strrchr(prog, '/');

	if (strchr(name, '/')) {
		struct stat st;

		if ((size_t)snprintf(out, outlen, "%s", name) >= outlen || stat(out, &st))
			return -ENOENT;
		return 0;
	}
	while (llp && *llp) {
		size_t n = strcspn(llp, ":");

		if (n && lib_try(llp, n, name, out, outlen))
			return 0;
		llp += n + (llp[n] == ':');
	}
	if (lib_try(slash ? prog : ".", slash ? (size_t)(slash - prog) : 1, name, out, outlen))
		return 0;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
		if (lib_try(system_dirs[i], strlen(system_dirs[i]), name, out, outlen))
			return 0;
	return -ENOENT;
}

/* Whether the file is a part of the C library (or its loader): the
 * runtime's own code calls into it, through its PLT too. */
static bool c_library(const char *path)
{
	static const char *const parts[] = { "libc.so",       "ld-linux", "ld-musl", "libc.musl",
		                             "libpthread.so", "libdl.so", "librt.so" };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (!strncmp(base, parts[i], strlen(parts[i])))
			return true;
	return false;
}

struct dpatch *dpatch_open(const struct uprobes_config *cfg, char *err, size_t errlen)
{
	bool functions = !cfg->no_functions && (cfg->npatterns || !cfg->nlibs);
	struct dpatch *head = NULL, **tail = &head;
	unsigned files = 0;

	if (functions || cfg->libcalls || cfg->nprobes) {
		struct uprobes_config main = *cfg;

		main.no_functions = !functions;
		head = file_open(&main, false, err, errlen);
		if (!head)
			return NULL;
		tail = &head->next;
		files++;
	}
	for (uint32_t i = 0; i < cfg->nlibs; i++) {
		struct uprobes_config lc = { .npatterns = 0 };
		char path[4096];
		bool seen = false;
		int r;

		for (uint32_t k = 0; k < i; k++)
			seen |= !strcmp(cfg->libs[k].file, cfg->libs[i].file);
		if (seen)
			continue;
		for (uint32_t k = i; k < cfg->nlibs; k++)
			if (!strcmp(cfg->libs[k].file, cfg->libs[i].file))
				lc.patterns[lc.npatterns++] = cfg->libs[k].glob;
		r = lib_find(cfg->libs[i].file, cfg->path, path, sizeof(path));
		if (r || files == LP_PLAN_FILES_MAX) {
			if (r)
				snprintf(err, errlen,
				         "cannot find the library '%.300s' (a path, or a name in LD_LIBRARY_PATH, the "
				         "program's directory or the system's library directories)",
				         cfg->libs[i].file);
			else
				snprintf(err, errlen, "more than %u files to patch", LP_PLAN_FILES_MAX);
			dpatch_free(head);
			errno = r ? -r : E2BIG;
			return NULL;
		}
		lc.path = path;
		/* --libcalls: the calls the library makes into others too,
		 * but not the C library's own (the runtime runs on them) */
		lc.libcalls = cfg->libcalls && !c_library(path);
		*tail = file_open(&lc, true, err, errlen);
		if (!*tail) {
			int e = errno;

			dpatch_free(head);
			errno = e;
			return NULL;
		}
		tail = &(*tail)->next;
		files++;
	}
	return head;
}

static int file_write(struct dpatch *p, const char *session, unsigned index, char *err, size_t errlen);

int dpatch_write(struct dpatch *p, const char *session, char *err, size_t errlen)
{
	int k = 0;

	for (; p; p = p->next) {
		int r = file_write(p, session, (unsigned)k++, err, errlen);

		if (r)
			return r;
	}
	return k;
}

static int file_write(struct dpatch *p, const char *session, unsigned index, char *err, size_t errlen)
{
	struct lp_plan_header h = {
		.magic = LP_PLAN_MAGIC,
		.version = LP_PLAN_VERSION,
		.arch = p->es->machine == EM_X86_64 ? LP_PLAN_X86_64
		        : p->es->machine == EM_ARM  ? LP_PLAN_ARM
		                                    : LP_PLAN_AARCH64,
		.nfuncs = p->nfn,
		.dev = p->dev,
		.ino = p->ino,
		.nrelocs = p->nrel,
		.code_bytes = p->ncode,
	};
	size_t size = sizeof(h) + (size_t)p->nfn * sizeof(*p->fn) + (size_t)p->nrel * sizeof(*p->rel) + p->ncode;
	char path[4096];
	uint8_t *buf;
	void *map;
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_NAME ".%u", session, index) >= sizeof(path)) {
		snprintf(err, errlen, "session path too long");
		return -ENAMETOOLONG;
	}
	buf = malloc(size);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), p->fn, (size_t)p->nfn * sizeof(*p->fn));
	if (p->nrel)
		memcpy(buf + sizeof(h) + (size_t)p->nfn * sizeof(*p->fn), p->rel, (size_t)p->nrel * sizeof(*p->rel));
	if (p->ncode)
		memcpy(buf + size - p->ncode, p->code, p->ncode);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		r = -errno;
	else if (write(fd, buf, size) != (ssize_t)size)
		r = errno ? -errno : -EIO;
	free(buf);
	if (!r) {
		map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			r = -errno;
		else {
			p->map = map;
			p->map_size = size;
		}
	}
	if (fd >= 0)
		close(fd);
	if (r)
		snprintf(err, errlen, "cannot write the patch plan '%s': %s", path, strerror(-r));
	return r;
}

static const char *status_why(uint32_t status)
{
	switch (status) {
	case LP_PLAN_CHANGED:
		return "its bytes in the running program were not those of the file";
	case LP_PLAN_FAR:
		return "no room for its trampoline within a jump's reach";
	case LP_PLAN_UNWRITABLE:
		return "the program's code could not be made writable";
	default:
		return "not applied";
	}
}

/* One file's outcome: added to st, its skipped functions to the first
 * plan's list. */
static void file_stats(struct dpatch *head, struct dpatch *p, struct uprobes_stats *st, bool *applied)
{
	const struct lp_plan_func *fn =
	    p->map ? (const struct lp_plan_func *)(p->map + sizeof(struct lp_plan_header)) : NULL;
	size_t first = p->nskipped = p->planner_skipped;

	*applied = false;
	st->candidates += p->candidates;
	for (uint32_t i = 0; fn && i < p->nfn; i++) {
		uint32_t s = __atomic_load_n(&fn[i].status, __ATOMIC_RELAXED);

		if (s != LP_PLAN_PENDING)
			*applied = true;
		if (s == LP_PLAN_PATCHED && fn[i].kind == LP_PLAN_PROBE) {
			st->probes++;
		} else if (s == LP_PLAN_PATCHED) {
			st->functions++;
			st->traps += fn[i].trap;
		} else if (s != LP_PLAN_PENDING)
			skip(p, p->name[i], status_why(s));
	}
	for (size_t i = 0; i < p->nskipped; i++)
		head->all[head->nall++] = p->skipped[i];
	/* a library the program never loaded: its functions, one line */
	if (p->lib && !*applied) {
		head->nall -= p->nskipped - first;
		head->all[head->nall].name = p->path;
		head->all[head->nall++].why = "the library was not loaded: none of its functions traced";
	}
}

/* One request: "DEV INO PATH".  Returns a plan for it, or NULL with the
 * reason in err ("" when there is nothing to do: a plan is there); the
 * path it names in what (for the reason). */
static struct dpatch *serve_one(struct dpatch *p, const struct uprobes_config *cfg, int dirfd, const char *name,
                                char *what, size_t whatlen, char *err, size_t errlen)
{
	char buf[4200], *path;
	unsigned long long dev, ino;
	struct uprobes_config xc;
	struct dpatch *x;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	err[0] = '\0';
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlinkat(dirfd, name, 0);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (sscanf(buf, "%llu %llu", &dev, &ino) != 2 || !(path = strchr(buf, '/')))
		return NULL;
	snprintf(what, whatlen, "%s", path);
	if (!cfg) {
		snprintf(err, errlen, "a program it execs is planned by record only");
		return NULL;
	}
	for (struct dpatch *q = p; q; q = q->next)
		if (q->dev == dev && q->ino == ino)
			return NULL;
	xc = *cfg;
	xc.path = path;
	xc.nlibs = 0;
	x = file_open(&xc, false, err, errlen);
	if (x && (x->dev != dev || x->ino != ino)) {
		snprintf(err, errlen, "the file was replaced");
		dpatch_free(x);
		return NULL;
	}
	return x;
}

unsigned dpatch_serve(struct dpatch *p, const struct uprobes_config *cfg, const char *session, unsigned nplans)
{
	int dirfd = open(session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dirfd < 0 ? NULL : fdopendir(dirfd);
	struct dirent *de;
	struct dpatch *tail = p;

	if (!d) {
		if (dirfd >= 0)
			close(dirfd);
		return nplans;
	}
	while (tail->next)
		tail = tail->next;
	while ((de = readdir(d))) {
		char err[600], what[4200] = "";
		struct dpatch *x;

		if (strncmp(de->d_name, LP_PLAN_WANT_NAME ".", sizeof(LP_PLAN_WANT_NAME)))
			continue;
		x = serve_one(p, cfg, dirfd, de->d_name, what, sizeof(what), err, sizeof(err));
		if (x && nplans < LP_PLAN_FILES_MAX && file_write(x, session, nplans, err, sizeof(err)) == 0) {
			tail->next = x;
			tail = x;
			nplans++;
			continue;
		}
		if (x && !err[0])
			snprintf(err, sizeof(err), "more than %u files to patch", LP_PLAN_FILES_MAX);
		if (err[0] && p->nxs < DPATCH_EXEC_FAILS_MAX) {
			p->xs[p->nxs].name = strdup(what);
			p->xs[p->nxs].why = strdup(err);
			if (p->xs[p->nxs].name && p->xs[p->nxs].why)
				p->nxs++;
		}
		dpatch_free(x);
	}
	closedir(d);
	return nplans;
}

void dpatch_get_stats(struct dpatch *p, struct uprobes_stats *st, bool *applied)
{
	size_t n = p->nxs;

	memset(st, 0, sizeof(*st));
	*applied = false;
	for (struct dpatch *q = p; q; q = q->next)
		n += q->cap + 1;
	free(p->all);
	p->nall = 0;
	p->all = calloc(n, sizeof(*p->all));
	if (!p->all)
		return;
	for (struct dpatch *q = p; q; q = q->next) {
		bool a;

		file_stats(p, q, st, &a);
		if (!q->lib || q == p)
			*applied |= a;
	}
	for (size_t i = 0; i < p->nxs; i++)
		p->all[p->nall++] = p->xs[i];
	st->skipped = p->all;
	st->nskipped = p->nall;
}

void dpatch_free(struct dpatch *p)
{
	if (!p)
		return;
	dpatch_free(p->next);
	free(p->all);
	for (size_t i = 0; i < p->nxs; i++) {
		free((char *)p->xs[i].name);
		free((char *)p->xs[i].why);
	}
	if (p->map)
		munmap((void *)p->map, p->map_size);
	for (size_t i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	for (unsigned s = 0; s < p->nseg; s++)
		free(p->bytes[s]);
	free(p->targets);
	free(p->fn);
	free(p->name);
	free(p->span);
	free(p->rel);
	free(p->code);
	free(p->skipped);
	elfsyms_free(p->es);
	free(p->path);
	free(p);
}
