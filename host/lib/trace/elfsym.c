/* Reads the function and data symbols of one ELF object (its .symtab and
 * .dynsym, or a separate debug file found by build id), its loaded segments
 * and its DWARF line table. */
#include "host/lib/trace/elfsym.h"

#include <assert.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elfsyms.h"

/* libstdc++'s demangler; C-callable, returns a malloc'd string. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Bounds on what a file may make us hold. */
#define ELFSYM_MAX_FUNCS (1u << 24)     /* function symbols per object */
#define ELFSYM_MAX_DATA (1u << 24)      /* data symbols per object */
#define ELFSYM_MAX_LOADS 64u            /* PT_LOAD segments kept per object */
#define ELFSYM_MAX_NAME 65536u          /* longest symbol name kept */
#define ELFSYM_MAX_POOL (1u << 30)      /* bytes of names per object */
#define ELFSYM_MAX_DEMANGLE 8192u       /* longest name given to the demangler */
#define ELFSYM_MAX_CU_RANGES (1u << 22) /* address ranges of compile units */
#define ELFSYM_LOOKBACK 8               /* sized symbols checked for nesting */
#define ELFSYM_PATH_MAX 4096u
#define ELFSYM_PLT_NAME_MAX 1024u

/* Tie-breaks between aliases at one address: a sized symbol beats an
 * unsized one, then global beats weak beats local, then a name that does
 * not start with '_' (the public alias) beats one that does. */
enum elfsym_rank {
	RANK_PUBLIC = 1u << 0,
	RANK_WEAK = 1u << 1,
	RANK_GLOBAL = 1u << 2,
	RANK_SIZED = 1u << 3,
};

struct elfsym_sym {
	uint64_t start;
	uint64_t size;
	uint32_t name; /* offset in pool */
	uint32_t rank; /* enum elfsym_rank bits */
};

/* The symbols of one kind (functions or data), with their names demangled
 * on demand. */
struct elfsym_table {
	struct elfsym_sym *v; /* sorted by start, one per address */
	size_t n, cap;
	size_t max;       /* ELFSYM_MAX_FUNCS or ELFSYM_MAX_DATA */
	char **demangled; /* parallel to v, filled on demand */
};

/* A PT_LOAD segment: what the object occupies in memory, [start, end). */
struct elfsym_load {
	uint64_t start, end;
};

/* One compile unit's address range, for DWARF without .debug_aranges. */
struct cu_range {
	uint64_t low;
	uint64_t high;
	Dwarf_Off die; /* offset of the CU DIE */
};

struct elf_file {
	int fd;
	Elf *elf;
};

struct elfsym {
	struct elfsym_table funcs;
	struct elfsym_table data; /* sized objects inside a PT_LOAD segment */
	struct elfsym_load loads[ELFSYM_MAX_LOADS];
	size_t nloads;
	char *pool; /* NUL-terminated names */
	size_t pool_len;
	size_t pool_cap;
	struct elf_file dwarf_file; /* the file `dwarf` reads from */
	Dwarf *dwarf;
	struct cu_range *cus; /* sorted by low; built on first need */
	size_t ncus;
	bool cus_built;
};

static void file_close(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* Opens an ELF file for reading. O_NONBLOCK keeps a FIFO from hanging us;
 * ELF_C_READ (not mmap) means a file truncated under us gives read errors,
 * not SIGBUS. */
static int file_open(const char *path, struct elf_file *f)
{
	struct stat st;
	int rc;

	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	f->elf = NULL;
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) != 0) {
		rc = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto fail;
	}
	if (st.st_size == 0) {
		rc = -ENOEXEC;
		goto fail;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		rc = -ENOEXEC;
		goto fail;
	}
	{
		GElf_Ehdr eh;
		if (!gelf_getehdr(f->elf, &eh)) {
			rc = -ENOEXEC;
			goto fail;
		}
	}
	return 0;
fail:
	file_close(f);
	return rc;
}

static bool file_has_build_id(Elf *elf, const uint8_t *id, size_t len)
{
	const void *found = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &found);

	return n > 0 && (size_t)n == len && memcmp(found, id, len) == 0;
}

/* Stores a name in the pool and returns its offset, or a negative errno:
 * -ENOSPC when the pool is at its bound, -ENOMEM. */
static int64_t pool_add(struct elfsym *e, const char *name, size_t len)
{
	size_t off = e->pool_len;

	if (len + 1 > ELFSYM_MAX_POOL - e->pool_len)
		return -ENOSPC;
	if (e->pool_len + len + 1 > e->pool_cap) {
		size_t cap = e->pool_cap ? e->pool_cap : 4096;
		char *p;

		while (cap < e->pool_len + len + 1)
			cap *= 2;
		if (cap > ELFSYM_MAX_POOL)
			cap = ELFSYM_MAX_POOL;
		p = realloc(e->pool, cap);
		if (!p)
			return -ENOMEM;
		e->pool = p;
		e->pool_cap = cap;
	}
	memcpy(e->pool + off, name, len);
	e->pool[off + len] = '\0';
	e->pool_len += len + 1;
	return (int64_t)off;
}

/* Adds a symbol to t.  Returns 0 (also when the name is skipped, or t is
 * at its bound: the rest of its kind is left out), -ENOSPC when the name
 * pool is full, or -ENOMEM. */
static int table_add(struct elfsym *e, struct elfsym_table *t, uint64_t start, uint64_t size, const char *name,
                     unsigned rank)
{
	size_t len = strnlen(name, ELFSYM_MAX_NAME + 1);
	int64_t off;

	if (len == 0 || len > ELFSYM_MAX_NAME)
		return 0; /* nothing useful to show; skip it */
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct elfsym_sym *p;

		if (t->cap >= t->max)
			return 0;
		if (cap > t->max)
			cap = t->max;
		p = realloc(t->v, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->v = p;
		t->cap = cap;
	}
	off = pool_add(e, name, len);
	if (off < 0)
		return (int)off;
	t->v[t->n].start = start;
	t->v[t->n].size = size;
	t->v[t->n].name = (uint32_t)off;
	t->v[t->n].rank = rank;
	t->n++;
	return 0;
}

static unsigned sym_rank(const GElf_Sym *sym, const char *name)
{
	unsigned rank = 0;

	if (sym->st_size)
		rank |= RANK_SIZED;
	if (GELF_ST_BIND(sym->st_info) == STB_GLOBAL)
		rank |= RANK_GLOBAL;
	else if (GELF_ST_BIND(sym->st_info) == STB_WEAK)
		rank |= RANK_WEAK;
	if (name[0] != '_')
		rank |= RANK_PUBLIC;
	return rank;
}

/* Adds the function and data symbols of one symbol table section.  Data
 * symbols are the sized objects (STT_OBJECT, and STT_COMMON should a
 * linked object have one); thread-local ones (STT_TLS) are left out: their
 * value is an offset in each thread's block, not an address. */
static int symbols_load_table(struct elfsym *e, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, bool thumb)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t i, n;

	if (!data || !entsize)
		return 0;
	n = data->d_size / entsize;
	/* Entry 0 is the reserved null symbol. */
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		struct elfsym_table *t;
		const char *name;
		unsigned type;
		uint64_t start;
		int rc;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_FUNC || type == STT_GNU_IFUNC)
			t = &e->funcs;
		else if ((type == STT_OBJECT || type == STT_COMMON) && sym.st_size)
			t = &e->data;
		else
			continue;
		if (sym.st_shndx == SHN_UNDEF || (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX))
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		start = sym.st_value;
		if (thumb && t == &e->funcs)
			start &= ~(uint64_t)1; /* bit 0 marks Thumb code, not an address */
		rc = table_add(e, t, start, sym.st_size, name, sym_rank(&sym, name));
		if (rc)
			return rc;
	}
	return 0;
}

/* Adds the symbols of every symbol table of elf. Sets *has_symtab
 * when a full .symtab was there (so a debug file would add nothing).
 * Returns 0 or -ENOMEM; a table past the bounds is cut short. */
static int symbols_load(struct elfsym *e, Elf *elf, bool *has_symtab)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	bool thumb;

	if (!gelf_getehdr(elf, &eh))
		return 0;
	thumb = eh.e_machine == EM_ARM;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		int rc;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			*has_symtab = true;
		rc = symbols_load_table(e, elf, scn, &sh, thumb);
		if (rc == -ENOMEM)
			return rc;
		if (rc == -ENOSPC)
			return 0;
	}
	return 0;
}

/* The PLT's stubs, as NAME@plt (common/elfsyms.c finds them): a call into
 * a shared library traced at its stub (record --dynamic --libcalls), and
 * any address in a stub, gets a name.  Below every symbol at the same
 * address in rank. */
static int plt_load(struct elfsym *e, const char *path)
{
	struct elfsyms *es;
	char err[300];
	int rc = 0;

	if (elfsyms_open(path, &es, err, sizeof(err)))
		return 0; /* a file it cannot read has no stubs to name */
	for (size_t i = 0; !rc && i < es->nplt; i++) {
		const struct elfsyms_plt *p = &es->plt[i];
		uint64_t size = (p->flags & ELFSYMS_PLT_GOT) ? 8 : es->machine == EM_ARM ? 12 : 16;
		char name[ELFSYM_PLT_NAME_MAX];

		if (!p->stub)
			continue;
		if (p->flags & ELFSYMS_PLT_THUMB_ENTRY)
			size += 4;
		if ((size_t)snprintf(name, sizeof(name), "%s@plt", p->name) < sizeof(name))
			rc = table_add(e, &e->funcs, p->stub, size, name, 0);
	}
	elfsyms_free(es);
	return rc == -ENOMEM ? rc : 0;
}

static int sym_cmp(const void *pa, const void *pb)
{
	const struct elfsym_sym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	if (a->name != b->name)
		return a->name < b->name ? -1 : 1;
	return 0;
}

/* Sorts once and keeps the best-ranked symbol at each address. */
static void table_sort(struct elfsym_table *t)
{
	size_t i, kept = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), sym_cmp);
	for (i = 0; i < t->n; i++) {
		if (kept && t->v[kept - 1].start == t->v[i].start)
			continue;
		t->v[kept++] = t->v[i];
	}
	t->n = kept;
}

/* Keeps the PT_LOAD segments of elf (the first ELFSYM_MAX_LOADS): what a
 * data symbol must lie in to be in the process's memory. */
static void loads_read(struct elfsym *e, Elf *elf)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n) != 0)
		return;
	for (i = 0; i < n && e->nloads < ELFSYM_MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz ||
		    ph.p_memsz > UINT64_MAX - ph.p_vaddr)
			continue;
		e->loads[e->nloads].start = ph.p_vaddr;
		e->loads[e->nloads].end = ph.p_vaddr + ph.p_memsz;
		e->nloads++;
	}
}

/* Whether [start, start + size) lies in one PT_LOAD segment. */
static bool loads_hold(const struct elfsym *e, uint64_t start, uint64_t size)
{
	size_t i;

	for (i = 0; i < e->nloads; i++)
		if (start >= e->loads[i].start && start < e->loads[i].end && size <= e->loads[i].end - start)
			return true;
	return false;
}

/* Drops the data symbols outside the loaded segments (a corrupt size, a
 * section that is not loaded): whatever is left names process memory. */
static void data_keep_loaded(struct elfsym *e)
{
	size_t i, kept = 0;

	for (i = 0; i < e->data.n; i++)
		if (loads_hold(e, e->data.v[i].start, e->data.v[i].size))
			e->data.v[kept++] = e->data.v[i];
	e->data.n = kept;
}

/* <dir>/.build-id/xx/rest.debug, the layout of Debian's -dbgsym packages. */
static bool debug_path(char *buf, size_t size, const char *dir, const uint8_t *id, size_t len)
{
	size_t used, i;
	int n;

	if (len < 2 || len > ELFSYM_BUILD_ID_MAX)
		return false;
	n = snprintf(buf, size, "%s/.build-id/%02x/", dir, id[0]);
	if (n < 0 || (size_t)n >= size)
		return false;
	used = (size_t)n;
	for (i = 1; i < len; i++) {
		if (used + 3 > size)
			return false;
		snprintf(buf + used, 3, "%02x", id[i]);
		used += 2;
	}
	n = snprintf(buf + used, size - used, ".debug");
	return n > 0 && (size_t)n < size - used;
}

/* libdw (0.188) runs strlen() on offsets into the DWARF string sections
 * without checking that they end in NUL, so a corrupt file could make it
 * read past them. Such a file's DWARF is not used. Compressed sections are
 * inflated here (libdw would do it next) so their real end is checked. */
static bool dwarf_strings_terminated(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7) != 0 ||
		    (!(sh.sh_flags & SHF_STRINGS) && strcmp(name, ".debug_str") != 0 &&
		     strcmp(name, ".debug_line_str") != 0))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return false;
		data = elf_getdata(scn, NULL);
		if (!data)
			return false;
		if (data->d_size && (!data->d_buf || ((const char *)data->d_buf)[data->d_size - 1]))
			return false;
	}
	return true;
}

/* Makes the file's DWARF the one elfsym_line() reads, when it has any.
 * Takes ownership of *f when it does. */
static void dwarf_adopt(struct elfsym *e, struct elf_file *f)
{
	Dwarf *dw;

	if (!dwarf_strings_terminated(f->elf))
		return;
	dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (!dw)
		return;
	e->dwarf = dw;
	e->dwarf_file = *f;
	f->fd = -1;
	f->elf = NULL;
}

struct elfsym *elfsym_open(const char *path, const uint8_t *build_id, size_t build_id_len, const char *debug_dir,
                           unsigned flags)
{
	struct elf_file main_file = { -1, NULL }, debug_file = { -1, NULL };
	struct elfsym *e = calloc(1, sizeof(*e));
	bool has_symtab = false, lines = flags & ELFSYM_LINES, ok = false;
	char dpath[ELFSYM_PATH_MAX];

	if (!e)
		return NULL;
	e->funcs.max = ELFSYM_MAX_FUNCS;
	e->data.max = ELFSYM_MAX_DATA;
	e->dwarf_file.fd = -1;
	elf_version(EV_CURRENT);

	if (path && path[0] && file_open(path, &main_file) == 0 && build_id_len &&
	    !file_has_build_id(main_file.elf, build_id, build_id_len))
		file_close(&main_file);
	if (main_file.elf) {
		loads_read(e, main_file.elf);
		if (symbols_load(e, main_file.elf, &has_symtab) || plt_load(e, path))
			goto out;
		if (lines)
			dwarf_adopt(e, &main_file);
	}

	if (debug_dir && (!has_symtab || (lines && !e->dwarf)) &&
	    debug_path(dpath, sizeof(dpath), debug_dir, build_id, build_id_len) && file_open(dpath, &debug_file) == 0 &&
	    file_has_build_id(debug_file.elf, build_id, build_id_len)) {
		bool unused = false;

		/* a debug file keeps the program headers of the object it is for */
		if (!e->nloads)
			loads_read(e, debug_file.elf);
		if (!has_symtab && symbols_load(e, debug_file.elf, &unused))
			goto out;
		if (lines && !e->dwarf)
			dwarf_adopt(e, &debug_file);
	}
	table_sort(&e->funcs);
	table_sort(&e->data);
	data_keep_loaded(e);
	ok = true;
out:
	file_close(&main_file);
	file_close(&debug_file);
	if (!ok) {
		elfsym_free(e);
		e = NULL;
	}
	return e;
}

static void table_release(struct elfsym_table *t)
{
	size_t i;

	if (t->demangled) {
		for (i = 0; i < t->n; i++)
			free(t->demangled[i]);
		free(t->demangled);
	}
	free(t->v);
}

void elfsym_free(struct elfsym *e)
{
	if (!e)
		return;
	table_release(&e->funcs);
	table_release(&e->data);
	if (e->dwarf)
		dwarf_end(e->dwarf);
	file_close(&e->dwarf_file);
	free(e->cus);
	free(e->pool);
	free(e);
}

/* The number of symbols of t starting at or below addr. */
static size_t table_upper(const struct elfsym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Of the sized symbols among the lo lowest of t, the highest (a few
 * looked at) whose [start, start + size) holds addr; lo when none does. */
static size_t table_enclosing(const struct elfsym_table *t, size_t lo, uint64_t addr)
{
	size_t k;

	/* Past the end of the nearest sized symbol, a few below may still
	 * enclose addr (a large symbol with a smaller one nested inside). */
	for (k = 0; k < ELFSYM_LOOKBACK && k < lo; k++) {
		const struct elfsym_sym *f = &t->v[lo - 1 - k];

		if (f->size && addr - f->start < f->size)
			return lo - 1 - k;
	}
	return lo;
}

static void hit_fill(const struct elfsym *e, const struct elfsym_table *t, size_t i, struct elfsym_hit *hit)
{
	hit->name = e->pool + t->v[i].name;
	hit->start = t->v[i].start;
	hit->size = t->v[i].size;
	hit->index = i;
	hit->data = t == &e->data;
}

bool elfsym_find(struct elfsym *e, uint64_t addr, struct elfsym_hit *hit)
{
	size_t lo = table_upper(&e->funcs, addr), i;

	if (lo == 0)
		return false;
	/* A symbol without size reaches up to the next one. */
	i = lo - 1;
	if (e->funcs.v[i].size != 0) {
		i = table_enclosing(&e->funcs, lo, addr);
		if (i == lo)
			return false;
	}
	hit_fill(e, &e->funcs, i, hit);
	return true;
}

bool elfsym_find_data(struct elfsym *e, uint64_t addr, struct elfsym_hit *hit)
{
	size_t lo = table_upper(&e->data, addr), i = table_enclosing(&e->data, lo, addr);

	if (i == lo)
		return false;
	hit_fill(e, &e->data, i, hit);
	return true;
}

const char *elfsym_demangle(struct elfsym *e, const struct elfsym_hit *hit)
{
	struct elfsym_table *t = hit->data ? &e->data : &e->funcs;
	const char *raw = hit->name;
	char *out;
	int status = -1;

	if (raw[0] != '_' || raw[1] != 'Z' || strlen(raw) > ELFSYM_MAX_DEMANGLE)
		return raw;
	assert(hit->index < t->n);
	if (!t->demangled) {
		t->demangled = calloc(t->n, sizeof(*t->demangled));
		if (!t->demangled)
			return NULL;
	}
	if (t->demangled[hit->index])
		return t->demangled[hit->index];
	out = __cxa_demangle(raw, NULL, NULL, &status);
	if (!out || status != 0) {
		/* Keep a copy so the failure is not retried on every call. */
		free(out);
		out = strdup(raw);
		if (!out)
			return NULL;
	}
	t->demangled[hit->index] = out;
	return out;
}

int elfsym_foreach(struct elfsym *e, bool demangle,
                   int (*cb)(void *ctx, const char *name, uint64_t start, uint64_t size), void *ctx)
{
	size_t i;
	int r;

	for (i = 0; i < e->funcs.n; i++) {
		struct elfsym_hit hit;
		const char *name;

		hit_fill(e, &e->funcs, i, &hit);
		name = demangle ? elfsym_demangle(e, &hit) : hit.name;
		if (!name)
			return -ENOMEM;
		r = cb(ctx, name, hit.start, hit.size);
		if (r)
			return r;
	}
	return 0;
}

static int cu_range_cmp(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;

	if (a->low != b->low)
		return a->low < b->low ? -1 : 1;
	return 0;
}

/* Collects the address ranges of all compile units: the fallback when the
 * producer wrote no .debug_aranges (clang by default) and libdw cannot map
 * an address to its unit. Runs once per object. */
static void cus_build(struct elfsym *e)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	size_t cap = 0;

	e->cus_built = true;
	while (dwarf_get_units(e->dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Addr base, low, high;
		ptrdiff_t pos = 0;

		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		while ((pos = dwarf_ranges(&cudie, pos, &base, &low, &high)) > 0) {
			/* Functions dropped by the linker keep address 0. */
			if (low == 0 || high <= low)
				continue;
			if (e->ncus == cap) {
				struct cu_range *p;

				if (cap >= ELFSYM_MAX_CU_RANGES)
					goto out;
				cap = cap ? cap * 2 : 64;
				p = realloc(e->cus, cap * sizeof(*p));
				if (!p)
					goto out;
				e->cus = p;
			}
			e->cus[e->ncus].low = low;
			e->cus[e->ncus].high = high;
			e->cus[e->ncus].die = dwarf_dieoffset(&cudie);
			e->ncus++;
		}
	}
out:
	if (e->ncus)
		qsort(e->cus, e->ncus, sizeof(*e->cus), cu_range_cmp);
}

static bool cus_find(struct elfsym *e, uint64_t addr, Dwarf_Die *cudie)
{
	size_t lo = 0, hi, k;

	if (!e->cus_built)
		cus_build(e);
	hi = e->ncus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->cus[mid].low <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < ELFSYM_LOOKBACK && k < lo; k++) {
		const struct cu_range *r = &e->cus[lo - 1 - k];

		if (addr < r->high)
			return dwarf_offdie(e->dwarf, r->die, cudie) != NULL;
	}
	return false;
}

static uint64_t line_addr(Dwarf_Lines *lines, size_t i)
{
	Dwarf_Addr a = 0;

	dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
	return a;
}

static bool line_ends_sequence(Dwarf_Lines *lines, size_t i)
{
	bool end = true;

	dwarf_lineendsequence(dwarf_onesrcline(lines, i), &end);
	return end;
}

/* Picks the row for addr in a CU's address-sorted rows. Rows sharing an
 * address are a group: at the group's own address the first row is taken
 * (a function's entry gives the line that opens it, not the first statement
 * that starts at the same address); inside the range that follows, the last
 * row is, as it is the one in force. A group of end-of-sequence rows only
 * is a gap between sequences. */
static Dwarf_Line *lines_pick(Dwarf_Lines *lines, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n, first, i;
	uint64_t at;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (line_addr(lines, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	at = line_addr(lines, lo - 1);
	for (first = lo - 1; first > 0 && line_addr(lines, first - 1) == at; first--)
		;
	if (at == addr) {
		for (i = first; i < lo; i++)
			if (!line_ends_sequence(lines, i))
				return dwarf_onesrcline(lines, i);
	} else {
		for (i = lo; i > first; i--)
			if (!line_ends_sequence(lines, i - 1))
				return dwarf_onesrcline(lines, i - 1);
	}
	return NULL;
}

bool elfsym_line(struct elfsym *e, uint64_t addr, const char **file, unsigned *line)
{
	Dwarf_Die cudie;
	Dwarf_Lines *lines;
	Dwarf_Line *row;
	size_t n;
	int lineno;
	const char *src;

	if (!e->dwarf)
		return false;
	if (!dwarf_addrdie(e->dwarf, addr, &cudie) && !cus_find(e, addr, &cudie))
		return false;
	if (dwarf_getsrclines(&cudie, &lines, &n) != 0 || n == 0)
		return false;
	row = lines_pick(lines, n, addr);
	if (!row || dwarf_lineno(row, &lineno) != 0 || lineno <= 0)
		return false;
	src = dwarf_linesrc(row, NULL, NULL);
	if (!src)
		return false;
	*file = src;
	*line = (unsigned)lineno;
	return true;
}
