/* Unit test of host/lib/trace/symbolizer: looks up functions and variables of
 * real binaries built from symbolizer_fixtures/, with addresses taken from nm
 * and readelf. */
#include "host/lib/trace/symbolizer.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/symbolizer_fixtures/fixture_data.h"

/* Paths come from CMakeLists.symbolizer.cmake (or the compiler command). */
#ifndef SYMB_FIXTURE_NOPIE
#error "SYMB_FIXTURE_NOPIE must name the non-PIE fixture executable"
#endif
#ifndef SYMB_NM
#define SYMB_NM "nm"
#endif
#ifndef SYMB_OBJCOPY
#define SYMB_OBJCOPY "objcopy"
#endif
#ifndef SYMB_READELF
#define SYMB_READELF "readelf"
#endif

#define FIXTURE_MAIN_SRC SYMB_FIXTURE_DIR "/fixture_main.c"
#define FIXTURE_LIB_SRC SYMB_FIXTURE_DIR "/fixture_lib.c"
#define FIXTURE_CPP_SRC SYMB_FIXTURE_DIR "/fixture_cpp.cpp"

#define PIE_BASE 0x555555554000ull
#define PIE_BASE2 0x7f0012340000ull
#define MAP_SPAN 0x100000ull
#define ALL_FLAGS (SYMBOLIZER_DEMANGLE | SYMBOLIZER_LINES)
#define CMD_MAX (3 * PATH_MAX)

static int passed, failed;
static char tmpdir[] = "/tmp/lp-symbolizer-XXXXXX";

static void check_true(bool ok, const char *file, int line, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s:%d: %s\n", file, line, what);
}

static void check_str(const char *got, const char *want, const char *file, int line, const char *what)
{
	if ((!got && !want) || (got && want && strcmp(got, want) == 0)) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s:%d: %s is \"%s\", want \"%s\"\n", file, line, what, got ? got : "(null)",
	       want ? want : "(null)");
}

static void check_u64(uint64_t got, uint64_t want, const char *file, int line, const char *what)
{
	if (got == want) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s:%d: %s is %" PRIu64 " (0x%" PRIx64 "), want %" PRIu64 " (0x%" PRIx64 ")\n", file, line, what,
	       got, got, want, want);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n, m;

	if (!s)
		return false;
	n = strlen(s);
	m = strlen(tail);
	return n >= m && strcmp(s + n - m, tail) == 0;
}

#define CHECK(cond) check_true((cond), __FILE__, __LINE__, #cond)
#define CHECK_STR(got, want) check_str((got), (want), __FILE__, __LINE__, #got)
#define CHECK_U64(got, want) check_u64((got), (want), __FILE__, __LINE__, #got)
#define CHECK_INT(got, want) check_u64((uint64_t)(int64_t)(got), (uint64_t)(int64_t)(want), __FILE__, __LINE__, #got)

/* Fails the whole run: the test cannot go on without its inputs. */
static _Noreturn void die(const char *what, const char *arg)
{
	printf("FAIL %s: %s\n", what, arg);
	printf("%d passed, %d failed\n", passed, failed + 1);
	exit(1);
}

static void run(const char *cmd)
{
	if (system(cmd) != 0)
		die("command failed", cmd);
}

static void tmp_path(char *buf, size_t size, const char *name)
{
	if ((size_t)snprintf(buf, size, "%s/%s", tmpdir, name) >= size)
		die("path too long", name);
}

/* The ELF address of `sym` in `file` according to nm. */
static uint64_t nm_addr(const char *file, const char *sym)
{
	char cmd[CMD_MAX], line[4096];
	uint64_t addr = 0;
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --defined-only '%s'", SYMB_NM, file);
	p = popen(cmd, "r");
	if (!p)
		die("cannot run", cmd);
	while (fgets(line, sizeof(line), p)) {
		char type, name[1024];
		unsigned long long a;

		if (sscanf(line, "%llx %c %1023s", &a, &type, name) == 3 && strcmp(name, sym) == 0) {
			addr = a;
			found = true;
		}
	}
	pclose(p);
	if (!found)
		die("nm does not list", sym);
	return addr;
}

/* The GNU build id of `file` according to readelf; returns its length. */
static size_t readelf_build_id(const char *file, uint8_t *id, size_t max)
{
	char cmd[CMD_MAX], line[4096];
	size_t len = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s -n '%s'", SYMB_READELF, file);
	p = popen(cmd, "r");
	if (!p)
		die("cannot run", cmd);
	while (fgets(line, sizeof(line), p)) {
		const char *hex = strstr(line, "Build ID: ");
		unsigned byte;

		if (!hex || len)
			continue;
		for (hex += 10; len < max && sscanf(hex, "%2x", &byte) == 1; hex += 2)
			id[len++] = (uint8_t)byte;
	}
	pclose(p);
	if (!len)
		die("readelf shows no build id in", file);
	return len;
}

/* 1-based number of the first line of `file` containing `needle`. */
static unsigned source_line(const char *file, const char *needle)
{
	char line[4096];
	unsigned n = 0;
	FILE *f = fopen(file, "r");

	if (!f)
		die("cannot open", file);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, needle)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	die("no such line in fixture source", needle);
	return 0;
}

static bool has_section(const char *file, const char *section)
{
	char cmd[CMD_MAX];

	snprintf(cmd, sizeof(cmd), "%s -S -W '%s' | grep -q ' %s '", SYMB_READELF, file, section);
	return system(cmd) == 0;
}

/* File offset and size of a section according to readelf; false if absent. */
static bool section_range(const char *file, const char *section, size_t *off, size_t *size)
{
	char cmd[CMD_MAX], line[4096], want[256];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s -S -W '%s'", SYMB_READELF, file);
	snprintf(want, sizeof(want), "] %s ", section);
	p = popen(cmd, "r");
	if (!p)
		die("cannot run", cmd);
	while (fgets(line, sizeof(line), p)) {
		const char *at = strstr(line, want);
		unsigned long o, n;

		if (at && sscanf(at + strlen(want), "%*s %*x %lx %lx", &o, &n) == 2) {
			*off = o;
			*size = n;
			found = true;
		}
	}
	pclose(p);
	return found;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		die("cannot write", path);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long size;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0)
		die("cannot read", path);
	data = malloc((size_t)size);
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
		die("cannot read", path);
	fclose(f);
	*len = (size_t)size;
	return data;
}

/* Adds a map for `file` loaded at `base` covering its text around elf_addr. */
static int add_file_map(struct symbolizer *s, uint32_t image, uint64_t base, uint64_t elf_addr, const char *file,
                        const uint8_t *id, size_t id_len)
{
	uint64_t page = elf_addr & ~0xfffull;

	return symbolizer_add_map(s, image, base, base + page, base + page + MAP_SPAN, page, id, id_len, file,
	                          strlen(file));
}

/* What the runtime records: the executable segments of a loaded object,
 * found through dl_iterate_phdr, with the build id read from memory. */
struct phdr_walk {
	struct symbolizer *s;
	uint32_t image;
	const char *want; /* substring of the object's name; "" for the program */
	int maps;
	uint64_t base;
};

static size_t note_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) * ph, const uint8_t **id)
{
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;

	while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
		size_t name = (n->n_namesz + 3) & ~3u, desc = (n->n_descsz + 3) & ~3u;

		if ((size_t)(end - p) < sizeof(*n) + name + desc)
			break;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(p + sizeof(*n), "GNU", 4) == 0) {
			*id = p + sizeof(*n) + name;
			return n->n_descsz;
		}
		p += sizeof(*n) + name + desc;
	}
	return 0;
}

static int phdr_add(struct dl_phdr_info *info, size_t size, void *data)
{
	struct phdr_walk *w = data;
	const uint8_t *id = NULL;
	size_t id_len = 0;
	char path[PATH_MAX];
	ssize_t n;
	int i;

	(void)size;
	if (w->want[0] ? !strstr(info->dlpi_name, w->want) : info->dlpi_name[0] != '\0')
		return 0;
	if (w->want[0]) {
		snprintf(path, sizeof(path), "%s", info->dlpi_name);
	} else {
		n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (n <= 0)
			die("cannot read", "/proc/self/exe");
		path[n] = '\0';
	}
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE && !id_len)
			id_len = note_build_id(info, &info->dlpi_phdr[i], &id);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (symbolizer_add_map(w->s, w->image, info->dlpi_addr, start, start + ph->p_memsz, ph->p_offset, id,
		                       id_len, path, strlen(path)) == 0)
			w->maps++;
	}
	w->base = info->dlpi_addr;
	return 1; /* the first match is the one */
}

static int add_loaded_maps(struct symbolizer *s, uint32_t image, const char *want, uint64_t *base)
{
	struct phdr_walk w = { s, image, want, 0, 0 };

	dl_iterate_phdr(phdr_add, &w);
	if (base)
		*base = w.base;
	return w.maps;
}

static void test_nopie(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_add");
	uint64_t nosize = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_nosize");
	struct symbol sym;
	char buf[256];

	CHECK(s != NULL);
	/* Built with -O2: the entry address starts several line rows; the
	 * first is the line of the definition. */
	CHECK(add >= 0x400000); /* linked at its final address */
	CHECK_INT(add_file_map(s, 1, 0, add, SYMB_FIXTURE_NOPIE, NULL, 0), 0);

	CHECK_INT(symbolizer_lookup(s, 1, add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_U64(sym.offset, 0);
	CHECK_STR(sym.module, SYMB_FIXTURE_NOPIE);
	CHECK(ends_with(sym.file, "/symbolizer_fixtures/fixture_main.c"));
	CHECK_U64(sym.line, source_line(FIXTURE_MAIN_SRC, "int fixture_add(int a, int b) {"));

	CHECK_INT(symbolizer_lookup(s, 1, add + 2, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_U64(sym.offset, 2);
	CHECK_STR(symbolizer_format(s, 1, add + 2, buf, sizeof(buf)), "fixture_add+0x2");
	CHECK_STR(symbolizer_format(s, 1, add, buf, sizeof(buf)), "fixture_add");

	/* A symbol of size 0 covers up to the next symbol. */
	CHECK_INT(symbolizer_lookup(s, 1, nosize + 8, &sym), 0);
	CHECK_STR(sym.name, "fixture_nosize");
	CHECK_U64(sym.offset, 8);

	/* No map covers address 0x10; image 7 has no maps at all. */
	CHECK_INT(symbolizer_lookup(s, 1, 0x10, &sym), -ENOENT);
	CHECK(sym.name == NULL && sym.module == NULL && sym.file == NULL && sym.line == 0);
	CHECK_STR(symbolizer_format(s, 1, 0x10, buf, sizeof(buf)), "0x10");
	CHECK_INT(symbolizer_lookup(s, 7, add, &sym), -ENOENT);
	CHECK(sym.module == NULL);
	snprintf(buf, sizeof(buf), "0x%" PRIx64, add);
	{
		char got[64];

		CHECK_STR(symbolizer_format(s, 7, add, got, sizeof(got)), buf);
	}
	symbolizer_free(s);
}

static void test_pie(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint64_t local = nm_addr(SYMB_FIXTURE_PIE, "fixture_local");
	struct symbol sym, again;
	const char *module;
	int i, same = 0;

	CHECK(add < 0x400000); /* position independent: linked near 0 */
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_U64(sym.offset, 0);
	CHECK_U64(sym.line, source_line(FIXTURE_MAIN_SRC, "int fixture_add(int a, int b) {"));
	/* A local (static) function is only in .symtab (the PIE is -O0, so it
	 * is not inlined away). */
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + local, &sym), 0);
	CHECK_STR(sym.name, "fixture_local");
	CHECK_U64(sym.line, source_line(FIXTURE_MAIN_SRC, "static int fixture_local(int x) {"));
	/* The ELF address alone is not mapped in this image. */
	CHECK_INT(symbolizer_lookup(s, 1, add, &sym), -ENOENT);
	/* Where an address lies in its object: the load bias taken off. */
	{
		const char *mod = "x";
		uint64_t elf = 0;

		CHECK_INT(symbolizer_elf_addr(s, 1, PIE_BASE + add + 3, &mod, &elf), 0);
		CHECK_STR(mod, SYMB_FIXTURE_PIE);
		CHECK_U64(elf, add + 3);
		CHECK_INT(symbolizer_elf_addr(s, 1, add, &mod, &elf), -ENOENT);
		CHECK(mod == NULL);
		CHECK_U64(elf, add);
		CHECK_INT(symbolizer_elf_addr(s, 99, PIE_BASE + add, &mod, &elf), -ENOENT);
		CHECK(mod == NULL);
	}
	symbolizer_lookup(s, 1, PIE_BASE + add, &sym);
	module = sym.module;

	/* A second image maps the same file elsewhere: same object, shared. */
	CHECK_INT(add_file_map(s, 2, PIE_BASE2, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 2, PIE_BASE2 + add + 1, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_U64(sym.offset, 1);
	CHECK(sym.module == module);

	/* Sending a map again changes nothing. */
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	for (i = 0; i < 1000; i++) {
		symbolizer_lookup(s, 1, PIE_BASE + add, &again);
		same += again.name == sym.name && again.line == sym.line;
	}
	CHECK_INT(same, 1000);

	/* An answer given before a map arrived is replaced once it does. */
	CHECK_INT(add_file_map(s, 3, PIE_BASE2, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 3, PIE_BASE + add, &sym), -ENOENT);
	CHECK(sym.module == NULL);
	CHECK_INT(add_file_map(s, 3, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 3, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	symbolizer_free(s);
}

/* A map of file around elf_addr at base, as add_file_map, told at ns. */
static int add_file_map_at(struct symbolizer *s, uint32_t image, uint64_t ns, uint64_t base, uint64_t elf_addr,
                           const char *file)
{
	uint64_t page = elf_addr & ~0xfffull;

	return symbolizer_add_map_at(s, image, ns, base, base + page, base + page + MAP_SPAN, page, NULL, 0, file,
	                             strlen(file));
}

struct found {
	bool add, lib;
};

static int note_function(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct found *f = ctx;

	(void)addr;
	(void)size;
	f->add |= !strcmp(name, "fixture_add");
	f->lib |= !strcmp(name, "fixture_lib_func");
	return 0;
}

/* Two objects at the same addresses in turn (dlclose, then dlopen of
 * another): an address is named from the object mapped at the time. */
static void test_reuse(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint64_t lib = nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_func");
	uint64_t x = PIE_BASE + add, lib_base = x - lib, tag1 = x | UINT64_C(1) << SYMBOLIZER_TAG_SHIFT;
	uint64_t a_start = PIE_BASE + (add & ~0xfffull), b_start = lib_base + (lib & ~0xfffull), maps;
	struct found f = { false, false };
	struct symbol sym;
	char buf[128];

	/* object A at x, told at 10 */
	CHECK_INT(add_file_map_at(s, 20, 10, PIE_BASE, add, SYMB_FIXTURE_PIE), 0);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 50), x);
	CHECK_INT(symbolizer_lookup(s, 20, x, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	/* unmapped at 100: before, x is still A's; after, the code of a map
	 * not told yet */
	CHECK_INT(symbolizer_end_map(s, 20, a_start, a_start + 1, 100), 0);
	CHECK_INT(symbolizer_end_map(s, 20, a_start, a_start + MAP_SPAN, 100), 1);
	CHECK_INT(symbolizer_end_map(s, 20, a_start, a_start + MAP_SPAN, 110), 0);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 99), x);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 100), tag1);
	/* object B at x from 120 on: its own tag, A's calls keep theirs */
	CHECK_INT(add_file_map_at(s, 20, 120, lib_base, lib, SYMB_FIXTURE_LIB), 0);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 150), tag1);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 50), x);
	CHECK_U64(symbolizer_code_addr(s, 20, tag1, 50), tag1); /* tagged already */
	CHECK_INT(symbolizer_lookup(s, 20, tag1, &sym), 0);
	CHECK_STR(sym.name, "fixture_lib_func");
	/* a code address lies in the object of its tag, at that one's bias */
	{
		const char *mod = NULL;
		uint64_t elf = 0;

		CHECK_INT(symbolizer_elf_addr(s, 20, tag1 + 2, &mod, &elf), 0);
		CHECK_STR(mod, SYMB_FIXTURE_LIB);
		CHECK_U64(elf, lib + 2);
		CHECK_INT(symbolizer_elf_addr(s, 20, x, &mod, &elf), 0);
		CHECK_STR(mod, SYMB_FIXTURE_PIE);
		CHECK_U64(elf, add);
	}
	CHECK_STR(symbolizer_format(s, 20, tag1 + 2, buf, sizeof(buf)), "fixture_lib_func+0x2");
	CHECK_INT(symbolizer_lookup(s, 20, x, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	/* a trace read again tells A at 10 again: the same map, not a new one */
	maps = symbolizer_map_count(s);
	CHECK_INT(add_file_map_at(s, 20, 10, PIE_BASE, add, SYMB_FIXTURE_PIE), 0);
	CHECK_U64(symbolizer_map_count(s), maps);
	/* B goes at 200, A comes back at 300: A's tag again */
	CHECK_INT(symbolizer_end_map(s, 20, b_start, b_start + MAP_SPAN, 200), 1);
	CHECK_INT(add_file_map_at(s, 20, 300, PIE_BASE, add, SYMB_FIXTURE_PIE), 0);
	CHECK_U64(symbolizer_map_count(s), maps + 1);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 350), x);
	CHECK_U64(symbolizer_code_addr(s, 20, x, 150), tag1);
	/* a map counts from before its arrival (maps come in the stream of
	 * the thread that loaded them, other threads' events may come first) */
	CHECK_U64(symbolizer_code_addr(s, 20, x, 250), x);
	/* what is mapped now: A's functions, not B's */
	CHECK_INT(symbolizer_foreach_function(s, 20, note_function, &f), 0);
	CHECK(f.add && !f.lib);
	/* other images know nothing of it */
	CHECK_INT(add_file_map(s, 21, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_U64(symbolizer_code_addr(s, 21, x, 150), x);
	/* an unknown code address prints as its address */
	CHECK_STR(symbolizer_format(s, 21, UINT64_C(5) << SYMBOLIZER_TAG_SHIFT | 0x10, buf, sizeof(buf)), "0x10");
	symbolizer_free(s);
}

static void test_shared_lib(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	void *lib = dlopen(SYMB_FIXTURE_LIB, RTLD_NOW | RTLD_LOCAL);
	const char *name = strrchr(SYMB_FIXTURE_LIB, '/') + 1;
	void *func, *other;
	uint64_t base = 0;
	struct symbol sym;

	if (!lib)
		die("cannot dlopen", dlerror());
	func = dlsym(lib, "fixture_lib_func");
	other = dlsym(lib, "fixture_lib_other");
	CHECK(func != NULL && other != NULL);
	/* Maps as the runtime sees them after dlopen, sent twice. */
	CHECK(add_loaded_maps(s, 5, name, &base) > 0);
	CHECK(add_loaded_maps(s, 5, name, NULL) > 0);
	CHECK(base != 0);
	CHECK_INT(symbolizer_lookup(s, 5, (uintptr_t)func, &sym), 0);
	CHECK_STR(sym.name, "fixture_lib_func");
	CHECK_U64(sym.offset, 0);
	CHECK(ends_with(sym.module, name));
	CHECK(ends_with(sym.file, "/symbolizer_fixtures/fixture_lib.c"));
	CHECK_U64(sym.line, source_line(FIXTURE_LIB_SRC, "int fixture_lib_func(int x) {"));
	CHECK_INT(symbolizer_lookup(s, 5, (uintptr_t)other, &sym), 0);
	CHECK_STR(sym.name, "fixture_lib_other");
	CHECK_U64(sym.line, source_line(FIXTURE_LIB_SRC, "int fixture_lib_other(int x) {"));
	CHECK_U64((uintptr_t)func - base, nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_func"));
	symbolizer_free(s);
	dlclose(lib);
}

static void test_cpp(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	struct symbolizer *raw = symbolizer_new(0);
	void *lib = dlopen(SYMB_FIXTURE_CPP, RTLD_NOW | RTLD_LOCAL);
	const char *name = strrchr(SYMB_FIXTURE_CPP, '/') + 1;
	void *draw_int, *draw_double;
	struct symbol sym;
	char buf[256];

	if (!lib)
		die("cannot dlopen", dlerror());
	draw_int = dlsym(lib, "_ZN2ns6Widget4drawEi");
	draw_double = dlsym(lib, "_ZN2ns6Widget4drawEd");
	CHECK(draw_int != NULL && draw_double != NULL);
	CHECK(add_loaded_maps(s, 1, name, NULL) > 0);
	CHECK(add_loaded_maps(raw, 1, name, NULL) > 0);

	CHECK_INT(symbolizer_lookup(s, 1, (uintptr_t)draw_int, &sym), 0);
	CHECK_STR(sym.name, "ns::Widget::draw(int)");
	CHECK(ends_with(sym.file, "/symbolizer_fixtures/fixture_cpp.cpp"));
	CHECK_U64(sym.line, source_line(FIXTURE_CPP_SRC, "int Widget::draw(int x) {"));
	CHECK_INT(symbolizer_lookup(s, 1, (uintptr_t)draw_double, &sym), 0);
	CHECK_STR(sym.name, "ns::Widget::draw(double)");
	CHECK_U64(sym.line, source_line(FIXTURE_CPP_SRC, "int Widget::draw(double x) {"));
	CHECK_STR(symbolizer_format(s, 1, (uintptr_t)draw_double + 4, buf, sizeof(buf)),
	          "ns::Widget::draw(double)+0x4");

	/* Without the flags: the raw name, and no line. */
	CHECK_INT(symbolizer_lookup(raw, 1, (uintptr_t)draw_int, &sym), 0);
	CHECK_STR(sym.name, "_ZN2ns6Widget4drawEi");
	CHECK(sym.file == NULL && sym.line == 0);
	symbolizer_free(raw);
	symbolizer_free(s);
	dlclose(lib);
}

/* The test program itself, found the way the runtime finds the main
 * executable (dl_iterate_phdr gives it an empty name). */
static void test_self(void)
{
	struct symbolizer *s = symbolizer_new(SYMBOLIZER_DEMANGLE);
	struct symbol sym;

	CHECK(add_loaded_maps(s, 1, "", NULL) > 0);
	CHECK_INT(symbolizer_lookup(s, 1, (uintptr_t)test_self, &sym), 0);
	CHECK_STR(sym.name, "test_self");
	CHECK_U64(sym.offset, 0);
	symbolizer_free(s);
}

static void test_build_id(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint8_t id[SYMBOLIZER_BUILD_ID_MAX], wrong[SYMBOLIZER_BUILD_ID_MAX];
	size_t len = readelf_build_id(SYMB_FIXTURE_PIE, id, sizeof(id));
	const char *base = strrchr(SYMB_FIXTURE_PIE, '/') + 1;
	struct symbol sym;
	char buf[256], want[256];

	CHECK_INT(symbolizer_set_debug_dir(s, NULL), 0);
	memcpy(wrong, id, len);
	wrong[len - 1] ^= 0x5a;
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, SYMB_FIXTURE_PIE, id, len), 0);
	CHECK_INT(add_file_map(s, 2, PIE_BASE, add, SYMB_FIXTURE_PIE, wrong, len), 0);
	CHECK_INT(add_file_map(s, 3, PIE_BASE, add, SYMB_FIXTURE_PIE, id, len - 1), 0);

	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_INT(symbolizer_lookup(s, 2, PIE_BASE + add, &sym), -ENOENT);
	CHECK(sym.name == NULL && sym.file == NULL);
	CHECK_STR(sym.module, SYMB_FIXTURE_PIE);
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base, add);
	CHECK_STR(symbolizer_format(s, 2, PIE_BASE + add, buf, sizeof(buf)), want);
	CHECK_INT(symbolizer_lookup(s, 3, PIE_BASE + add, &sym), -ENOENT);
	symbolizer_free(s);
}

/* A stripped copy gives addresses only, unless a debug file with the same
 * build id sits under <debug dir>/.build-id/. */
static void test_stripped(void)
{
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint8_t id[SYMBOLIZER_BUILD_ID_MAX];
	size_t len = readelf_build_id(SYMB_FIXTURE_PIE, id, sizeof(id)), i;
	char stripped[PATH_MAX], dbgdir[PATH_MAX], dbgfile[PATH_MAX], cmd[CMD_MAX];
	char buf[256], want[256], hex[2 * SYMBOLIZER_BUILD_ID_MAX + 1] = "";
	struct symbolizer *s;
	struct symbol sym;

	tmp_path(stripped, sizeof(stripped), "fixture_stripped");
	snprintf(cmd, sizeof(cmd), "%s --strip-all '%s' '%s'", SYMB_OBJCOPY, SYMB_FIXTURE_PIE, stripped);
	run(cmd);

	s = symbolizer_new(ALL_FLAGS);
	CHECK_INT(symbolizer_set_debug_dir(s, NULL), 0);
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, stripped, id, len), 0);
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), -ENOENT);
	CHECK(sym.name == NULL && sym.file == NULL && sym.line == 0);
	CHECK_STR(sym.module, stripped);
	snprintf(want, sizeof(want), "fixture_stripped+0x%" PRIx64, add);
	CHECK_STR(symbolizer_format(s, 1, PIE_BASE + add, buf, sizeof(buf)), want);
	symbolizer_free(s);

	tmp_path(dbgdir, sizeof(dbgdir), "debug");
	for (i = 1; i < len; i++)
		snprintf(hex + 2 * (i - 1), 3, "%02x", id[i]);
	if ((size_t)snprintf(dbgfile, sizeof(dbgfile), "%s/.build-id/%02x", dbgdir, id[0]) >= sizeof(dbgfile))
		die("path too long", dbgdir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dbgfile);
	run(cmd);
	if ((size_t)snprintf(dbgfile, sizeof(dbgfile), "%s/.build-id/%02x/%s.debug", dbgdir, id[0], hex) >=
	    sizeof(dbgfile))
		die("path too long", dbgdir);
	snprintf(cmd, sizeof(cmd), "%s --only-keep-debug '%s' '%s'", SYMB_OBJCOPY, SYMB_FIXTURE_PIE, dbgfile);
	run(cmd);

	s = symbolizer_new(ALL_FLAGS);
	CHECK_INT(symbolizer_set_debug_dir(s, dbgdir), 0);
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, stripped, id, len), 0);
	CHECK_INT(add_file_map(s, 2, PIE_BASE, add, stripped, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK_STR(sym.module, stripped);
	CHECK(ends_with(sym.file, "/symbolizer_fixtures/fixture_main.c"));
	CHECK_U64(sym.line, source_line(FIXTURE_MAIN_SRC, "int fixture_add(int a, int b) {"));
	/* Without a build id in the trace there is no debug file to find. */
	CHECK_INT(symbolizer_lookup(s, 2, PIE_BASE + add, &sym), -ENOENT);
	symbolizer_free(s);
}

/* DWARF without .debug_aranges (clang's default) still gives lines. */
static void test_no_aranges(void)
{
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	char path[PATH_MAX], cmd[CMD_MAX];
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	struct symbol sym;

	tmp_path(path, sizeof(path), "fixture_no_aranges");
	snprintf(cmd, sizeof(cmd), "%s --remove-section=.debug_aranges '%s' '%s'", SYMB_OBJCOPY, SYMB_FIXTURE_PIE,
	         path);
	run(cmd);
	CHECK(!has_section(path, ".debug_aranges"));
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, path, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), 0);
	CHECK(ends_with(sym.file, "/symbolizer_fixtures/fixture_main.c"));
	CHECK_U64(sym.line, source_line(FIXTURE_MAIN_SRC, "int fixture_add(int a, int b) {"));
	symbolizer_free(s);
}

/* A DWARF string section that does not end in NUL would make libdw read
 * past it: the names stay, the lines go. ASan builds catch a regression. */
static void test_unterminated_strings(void)
{
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	char path[PATH_MAX];
	size_t len, off, size;
	uint8_t *elf = read_file(SYMB_FIXTURE_PIE, &len);
	struct symbol sym;

	if (!section_range(SYMB_FIXTURE_PIE, ".debug_line_str", &off, &size) &&
	    !section_range(SYMB_FIXTURE_PIE, ".debug_str", &off, &size))
		die("no DWARF string section in", SYMB_FIXTURE_PIE);
	CHECK(size > 0 && off + size <= len);
	memset(elf + off, 'x', size);
	tmp_path(path, sizeof(path), "fixture_bad_strings");
	write_file(path, elf, len);
	free(elf);
	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, path, NULL, 0), 0);
	CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK(sym.file == NULL && sym.line == 0);
	symbolizer_free(s);
}

/* Looks up one address in `path` mapped at PIE_BASE: the result must be
 * "no name" and the formatted text "<basename>+0x1234". */
static void expect_unusable(const char *path, const char *shown, int line)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	struct symbol sym;
	char buf[256], want[256];

	symbolizer_set_debug_dir(s, NULL);
	check_u64((uint64_t)(int64_t)add_file_map(s, 1, PIE_BASE, 0x1234, path, NULL, 0), 0, __FILE__, line,
	          "add_file_map");
	check_u64((uint64_t)(int64_t)symbolizer_lookup(s, 1, PIE_BASE + 0x1234, &sym), (uint64_t)(int64_t)-ENOENT,
	          __FILE__, line, "symbolizer_lookup");
	check_true(sym.name == NULL && sym.file == NULL, __FILE__, line, "no name, no file");
	check_str(sym.module, path, __FILE__, line, "sym.module");
	snprintf(want, sizeof(want), "%s+0x1234", shown);
	check_str(symbolizer_format(s, 1, PIE_BASE + 0x1234, buf, sizeof(buf)), want, __FILE__, line,
	          "symbolizer_format");
	symbolizer_free(s);
}

static void test_bad_files(void)
{
	char path[PATH_MAX], cmd[CMD_MAX];
	uint8_t junk[8192];
	uint8_t *elf;
	size_t len, i;
	uint32_t x = 12345;

	expect_unusable("/nonexistent/dir/libgone.so.1", "libgone.so.1", __LINE__);
	expect_unusable(tmpdir, strrchr(tmpdir, '/') + 1, __LINE__); /* a directory */
	expect_unusable("/dev/null", "null", __LINE__);

	tmp_path(path, sizeof(path), "empty.so");
	write_file(path, "", 0);
	expect_unusable(path, "empty.so", __LINE__);

	tmp_path(path, sizeof(path), "fifo.so");
	CHECK(mkfifo(path, 0600) == 0);
	expect_unusable(path, "fifo.so", __LINE__); /* must not block */

	for (i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (uint8_t)(x >> 16);
	}
	tmp_path(path, sizeof(path), "garbage.so");
	write_file(path, junk, sizeof(junk));
	expect_unusable(path, "garbage.so", __LINE__);
	memcpy(junk, "\177ELF\2\1\1", 7); /* an ELF header, then garbage */
	tmp_path(path, sizeof(path), "badelf.so");
	write_file(path, junk, sizeof(junk));
	expect_unusable(path, "badelf.so", __LINE__);

	/* Truncated copies of a real executable. */
	elf = read_file(SYMB_FIXTURE_PIE, &len);
	tmp_path(path, sizeof(path), "short.so");
	write_file(path, elf, 64);
	expect_unusable(path, "short.so", __LINE__);
	write_file(path, elf, 1000);
	expect_unusable(path, "short.so", __LINE__);

	/* Corrupt copies: whatever they give, they must not crash. */
	tmp_path(path, sizeof(path), "corrupt.so");
	for (i = 0; i < 40; i++) {
		uint8_t *copy = malloc(len);
		struct symbolizer *s = symbolizer_new(ALL_FLAGS);
		struct symbol sym;
		char buf[64];
		size_t j, cut = i % 4 == 3 ? len / 2 : len;

		memcpy(copy, elf, len);
		for (j = 0; j < 64; j++) {
			x = x * 1103515245u + 12345u;
			copy[(x >> 8) % len] = (uint8_t)(x >> 24);
		}
		write_file(path, copy, cut);
		symbolizer_set_debug_dir(s, NULL);
		add_file_map(s, 1, PIE_BASE, 0, path, NULL, 0);
		for (j = 0; j < 0x3000; j += 0x40) {
			symbolizer_lookup(s, 1, PIE_BASE + j, &sym);
			symbolizer_format(s, 1, PIE_BASE + j, buf, sizeof(buf));
		}
		symbolizer_free(s);
		free(copy);
	}
	passed++;
	free(elf);

	/* An empty path names nothing: the raw address is shown. */
	{
		struct symbolizer *s = symbolizer_new(ALL_FLAGS);
		struct symbol sym;
		char buf[64];

		CHECK_INT(symbolizer_add_map(s, 1, PIE_BASE, PIE_BASE, PIE_BASE + 0x1000, 0, NULL, 0, "", 0), 0);
		CHECK_INT(symbolizer_lookup(s, 1, PIE_BASE + 0x10, &sym), -ENOENT);
		CHECK_STR(sym.module, "");
		CHECK_STR(symbolizer_format(s, 1, PIE_BASE + 0x10, buf, sizeof(buf)), "0x555555554010");
		symbolizer_free(s);
	}
	snprintf(cmd, sizeof(cmd), "rm -f '%s'", path);
	run(cmd);
}

static void test_api_edges(void)
{
	struct symbolizer *s = symbolizer_new(0);
	uint64_t add = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_add");
	uint8_t big[SYMBOLIZER_BUILD_ID_MAX + 1] = { 0 };
	char buf[8];

	symbolizer_free(NULL);
	CHECK_INT(symbolizer_add_map(s, 1, 0, 0x2000, 0x2000, 0, NULL, 0, "x", 1), -EINVAL);
	CHECK_INT(symbolizer_add_map(s, 1, 0, 0x2000, 0x1000, 0, NULL, 0, "x", 1), -EINVAL);
	CHECK_INT(symbolizer_add_map(s, 1, 0, 0x1000, 0x2000, 0, NULL, 0, "a\0b", 3), -EINVAL);
	CHECK_INT(symbolizer_add_map(s, 1, 0, 0x1000, 0x2000, 0, big, sizeof(big), "x", 1), -EINVAL);
	CHECK_INT(add_file_map(s, 1, 0, add, SYMB_FIXTURE_NOPIE, NULL, 0), 0);

	/* Output is cut to the buffer and always terminated. */
	CHECK_STR(symbolizer_format(s, 1, add, buf, 5), "fixt");
	buf[0] = 'x';
	CHECK(symbolizer_format(s, 1, add, buf, 0) == buf && buf[0] == 'x');
	CHECK_STR(symbolizer_format(s, 1, add, buf, 1), "");
	symbolizer_free(s);
}

/* Many images sharing one object, many objects, and more answers than the
 * cache keeps: every answer stays right. */
static void test_many(void)
{
	struct symbolizer *s = symbolizer_new(SYMBOLIZER_DEMANGLE);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	char path[64], buf[128], want[128];
	const char *module = NULL;
	struct symbol sym;
	uint32_t i, bad = 0;

	for (i = 1; i <= 300; i++) {
		bad += add_file_map(s, i, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0) != 0;
		snprintf(path, sizeof(path), "/nonexistent/lp-lib%u.so", i);
		bad += symbolizer_add_map(s, 1, 0x10000000ull * i, 0x10000000ull * i, 0x10000000ull * i + MAP_SPAN, 0,
		                          NULL, 0, path, strlen(path)) != 0;
	}
	CHECK_INT(bad, 0);
	for (i = 1, bad = 0; i <= 300; i++) {
		bad +=
		    symbolizer_lookup(s, i, PIE_BASE + add, &sym) != 0 || !sym.name || strcmp(sym.name, "fixture_add");
		module = module ? module : sym.module;
		bad += sym.module != module; /* one object for every image */
		snprintf(want, sizeof(want), "lp-lib%u.so+0x%x", i, i);
		bad += strcmp(symbolizer_format(s, 1, 0x10000000ull * i + i, buf, sizeof(buf)), want) != 0;
	}
	CHECK_INT(bad, 0);
	/* 600000 answers: the cache empties on the way */
	for (i = 0, bad = 0; i < 600000; i++) {
		snprintf(want, sizeof(want), "lp-lib1.so+0x%" PRIx64, (uint64_t)(i % MAP_SPAN));
		bad += strcmp(symbolizer_format(s, 1, 0x10000000ull + i % MAP_SPAN, buf, sizeof(buf)), want) != 0;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(symbolizer_lookup(s, 7, PIE_BASE + add, &sym), 0);
	CHECK_STR(sym.name, "fixture_add");
	CHECK(sym.module == module);
	CHECK_STR(symbolizer_format(s, 300, PIE_BASE + add + 2, buf, sizeof(buf)), "fixture_add+0x2");
	CHECK_INT(symbolizer_lookup(s, 301, PIE_BASE + add, &sym), -ENOENT); /* no such image */
	symbolizer_free(s);
}

/* A lock and an array of the test program itself, named through its own
 * maps (test_data_self). */
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
int self_counts[4];

/* symbolizer_data_name into a buffer of its own: the name, or NULL when it
 * gives none. */
static const char *data_name(struct symbolizer *s, uint32_t image, uint64_t addr, uint64_t ns)
{
	static char buf[256];

	return symbolizer_data_name(s, image, addr, ns, buf, sizeof(buf)) ? buf : NULL;
}

/* Global and static variables of a PIE mapped with a load bias and of the
 * non-PIE: named by their symbol, with the offset when inside; code, gaps,
 * unbiased addresses and unknown images give no name. */
static void test_data(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint64_t lock = nm_addr(SYMB_FIXTURE_PIE, "fixture_lock");
	uint64_t stats = nm_addr(SYMB_FIXTURE_PIE, "fixture_stats");
	uint64_t table = nm_addr(SYMB_FIXTURE_PIE, "fixture_table");
	uint64_t dynamic = nm_addr(SYMB_FIXTURE_PIE, "_DYNAMIC");
	uint64_t np_add = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_add");
	uint64_t np_stats = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_stats");
	uint64_t np_lock = nm_addr(SYMB_FIXTURE_NOPIE, "fixture_lock");
	const char *past;
	char buf[64], want[64];

	CHECK_INT(add_file_map(s, 1, PIE_BASE, add, SYMB_FIXTURE_PIE, NULL, 0), 0);
	CHECK_STR(data_name(s, 1, PIE_BASE + lock, 0), "fixture_lock");
	snprintf(want, sizeof(want), "fixture_lock+0x%zx", sizeof(pthread_mutex_t) - 1);
	CHECK_STR(data_name(s, 1, PIE_BASE + lock + sizeof(pthread_mutex_t) - 1, 0), want);
	/* a static struct with a lock at 0x40 in it */
	CHECK_STR(data_name(s, 1, PIE_BASE + stats, 0), "fixture_stats");
	CHECK_STR(data_name(s, 1, PIE_BASE + stats + FIXTURE_STATS_LOCK, 0), "fixture_stats+0x40");
	snprintf(want, sizeof(want), "fixture_stats+0x%zx", sizeof(struct fixture_stats) - 1);
	CHECK_STR(data_name(s, 1, PIE_BASE + stats + sizeof(struct fixture_stats) - 1, 0), want);
	/* an element of an initialised array (.data) */
	CHECK_STR(data_name(s, 1, PIE_BASE + table + 5 * sizeof(int), 0), "fixture_table+0x14");
	/* just past the array it is not the array's (another symbol or none) */
	past = data_name(s, 1, PIE_BASE + table + FIXTURE_TABLE_LEN * sizeof(int), 0);
	CHECK(!past || strncmp(past, "fixture_table", 13) != 0);
	/* code, a section without sized symbols, the ELF address without the
	 * load bias, an address no object holds, an image without maps */
	CHECK_STR(data_name(s, 1, PIE_BASE + add, 0), NULL);
	CHECK_STR(data_name(s, 1, PIE_BASE + add + 4, 0), NULL);
	CHECK_STR(data_name(s, 1, PIE_BASE + dynamic + 8, 0), NULL);
	CHECK_STR(data_name(s, 1, lock, 0), NULL);
	CHECK_STR(data_name(s, 1, 0x10, 0), NULL);
	CHECK_STR(data_name(s, 9, PIE_BASE + lock, 0), NULL);
	/* cut to the buffer; nothing written without room */
	CHECK(symbolizer_data_name(s, 1, PIE_BASE + stats + FIXTURE_STATS_LOCK, 0, buf, 8));
	CHECK_STR(buf, "fixture");
	buf[0] = 'x';
	CHECK(!symbolizer_data_name(s, 1, PIE_BASE + lock, 0, buf, 0) && buf[0] == 'x');

	/* the non-PIE (-O2) at its link address, beside a library's data at
	 * another bias in the same image: each address finds its object */
	CHECK_INT(add_file_map(s, 2, 0, np_add, SYMB_FIXTURE_NOPIE, NULL, 0), 0);
	CHECK_INT(
	    add_file_map(s, 2, PIE_BASE2, nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_func"), SYMB_FIXTURE_LIB, NULL, 0), 0);
	CHECK_STR(data_name(s, 2, np_stats + FIXTURE_STATS_LOCK, 0), "fixture_stats+0x40");
	CHECK_STR(data_name(s, 2, np_lock, 0), "fixture_lock");
	CHECK_STR(data_name(s, 2, PIE_BASE2 + nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_lock"), 0), "fixture_lib_lock");
	CHECK_STR(data_name(s, 2, PIE_BASE2 + nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_table") + 4, 0),
	          "fixture_lib_table+0x4");
	CHECK_STR(data_name(s, 2, PIE_BASE + lock, 0), NULL);
	symbolizer_free(s);
}

/* An object unmapped at 100 names its data before then only. */
static void test_data_unmapped(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS);
	uint64_t add = nm_addr(SYMB_FIXTURE_PIE, "fixture_add");
	uint64_t table = nm_addr(SYMB_FIXTURE_PIE, "fixture_table");
	uint64_t start = PIE_BASE + (add & ~0xfffull);

	CHECK_INT(add_file_map_at(s, 3, 10, PIE_BASE, add, SYMB_FIXTURE_PIE), 0);
	CHECK_STR(data_name(s, 3, PIE_BASE + table, 50), "fixture_table");
	CHECK_INT(symbolizer_end_map(s, 3, start, start + MAP_SPAN, 100), 1);
	CHECK_STR(data_name(s, 3, PIE_BASE + table, 99), "fixture_table");
	CHECK_STR(data_name(s, 3, PIE_BASE + table, 100), NULL);
	CHECK_STR(data_name(s, 3, PIE_BASE + table, 150), NULL);
	/* mapped again at another bias: named there from then on */
	CHECK_INT(add_file_map_at(s, 3, 200, PIE_BASE2, add, SYMB_FIXTURE_PIE), 0);
	CHECK_STR(data_name(s, 3, PIE_BASE2 + table + 8, 250), "fixture_table+0x8");
	CHECK_STR(data_name(s, 3, PIE_BASE + table, 250), NULL);
	symbolizer_free(s);
}

/* Variables of loaded objects at their real addresses: a dlopened
 * library's, a C++ static member (demangled, and raw without
 * SYMBOLIZER_DEMANGLE), and the test program's own. */
static void test_data_loaded(void)
{
	struct symbolizer *s = symbolizer_new(ALL_FLAGS), *raw = symbolizer_new(0);
	void *lib = dlopen(SYMB_FIXTURE_LIB, RTLD_NOW | RTLD_LOCAL);
	void *cpp = dlopen(SYMB_FIXTURE_CPP, RTLD_NOW | RTLD_LOCAL);
	uint64_t base = 0;
	char *table, *counts;

	if (!lib || !cpp)
		die("cannot dlopen", dlerror());
	table = dlsym(lib, "fixture_lib_table");
	counts = dlsym(cpp, "_ZN2ns6Widget6countsE");
	CHECK(table != NULL && counts != NULL);
	CHECK(add_loaded_maps(s, 1, strrchr(SYMB_FIXTURE_LIB, '/') + 1, &base) > 0);
	CHECK(add_loaded_maps(s, 1, strrchr(SYMB_FIXTURE_CPP, '/') + 1, NULL) > 0);
	CHECK(add_loaded_maps(s, 1, "", NULL) > 0);
	CHECK(add_loaded_maps(raw, 1, strrchr(SYMB_FIXTURE_CPP, '/') + 1, NULL) > 0);

	CHECK_STR(data_name(s, 1, (uintptr_t)table + 12, 0), "fixture_lib_table+0xc");
	CHECK_STR(data_name(s, 1, base + nm_addr(SYMB_FIXTURE_LIB, "fixture_lib_lock"), 0), "fixture_lib_lock");
	CHECK_STR(data_name(s, 1, (uintptr_t)counts + 2 * sizeof(long), 0), "ns::Widget::counts+0x10");
	CHECK_STR(data_name(raw, 1, (uintptr_t)counts + 2 * sizeof(long), 0), "_ZN2ns6Widget6countsE+0x10");
	CHECK_STR(data_name(s, 1, (uintptr_t)&self_lock, 0), "self_lock");
	CHECK_STR(data_name(s, 1, (uintptr_t)&self_counts[2], 0), "self_counts+0x8");
	/* the heap and the stack are no object's */
	{
		int local = 0;
		char *heap = malloc(64);

		CHECK_STR(data_name(s, 1, (uintptr_t)heap, 0), NULL);
		CHECK_STR(data_name(s, 1, (uintptr_t)&local, 0), NULL);
		free(heap);
	}
	symbolizer_free(raw);
	symbolizer_free(s);
	dlclose(cpp);
	dlclose(lib);
}

/* The libraries syscall and heap call sites look past, by base name. */
static void test_system_module(void)
{
	static const char *const sys[] = { "/lib/x86_64-linux-gnu/libc.so.6",
		                           "/lib/libc-2.31.so",
		                           "/lib64/ld-linux-x86-64.so.2",
		                           "/lib/ld-musl-aarch64.so.1",
		                           "/lib64/ld64.so.2",
		                           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		                           "/lib/x86_64-linux-gnu/libgcc_s.so.1",
		                           "/lib/x86_64-linux-gnu/libpthread.so.0",
		                           "/lib/x86_64-linux-gnu/libdl.so.2",
		                           "/lib/x86_64-linux-gnu/librt.so.1",
		                           "/opt/lp/lib/liblayerprof.so",
		                           "linux-vdso.so.1",
		                           "[vdso]" };
	static const char *const user[] = { "/usr/bin/app", "/usr/lib/libcrypto.so.3",         "/usr/lib/libldap.so.2",
		                            "/home/u/libc", "/lib/x86_64-linux-gnu/libm.so.6", "/tmp/x/" };
	size_t i;

	for (i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		check_true(symbolizer_system_module(sys[i]), __FILE__, __LINE__, sys[i]);
	for (i = 0; i < sizeof(user) / sizeof(user[0]); i++)
		check_true(!symbolizer_system_module(user[i]), __FILE__, __LINE__, user[i]);
	CHECK(!symbolizer_system_module(NULL));
	CHECK(!symbolizer_system_module(""));
}

int main(void)
{
	char cmd[CMD_MAX];

	if (!mkdtemp(tmpdir))
		die("cannot create a temporary directory", strerror(errno));
	test_nopie();
	test_pie();
	test_reuse();
	test_shared_lib();
	test_cpp();
	test_self();
	test_build_id();
	test_stripped();
	test_no_aranges();
	test_unterminated_strings();
	test_bad_files();
	test_api_edges();
	test_many();
	test_system_module();
	test_data();
	test_data_unmapped();
	test_data_loaded();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("cannot remove %s\n", tmpdir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
