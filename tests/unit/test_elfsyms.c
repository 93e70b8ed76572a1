/* Unit test of common/elfsyms: the test's own file (functions at the
 * addresses they run at, less the load bias; its PLT), a copy of it
 * without section headers (as sstrip leaves it: the same PLT slots and
 * stubs, found through PT_DYNAMIC), the errors for files that are not what
 * it reads, and copies of the file, with and without section headers,
 * truncated and corrupted at many places (a pseudo-random sequence, the
 * same every run), each of which must give a consistent list or an error,
 * never a crash or a read out of bounds (the ASan build checks the
 * latter).
 *
 * usage: test_elfsyms PATH-OF-THIS-PROGRAM */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elfsyms.h"
#include "tests/unit/check.h"

#define CORRUPTIONS 4000
#define TRUNCATIONS 400
#define FILE_MAX (64u << 20)

static char tmp_path[] = "/tmp/lp-test-elfsyms.XXXXXX";

/* A function of this file, local and kept out of line, to be found. */
__attribute__((noinline)) static int elfsyms_test_local(int x)
{
	return x * 3 + 1;
}

static int (*volatile local_ptr)(int) = elfsyms_test_local;

int main(int argc, char **argv);

static int first_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1; /* the first is the executable */
}

static const struct elfsyms_fn *find_fn(const struct elfsyms *es, const char *name)
{
	size_t i;

	for (i = 0; i < es->nfn; i++)
		if (!strcmp(es->fn[i].name, name))
			return &es->fn[i];
	return NULL;
}

/* What any successful open must give: sorted distinct addresses, sizes,
 * names that can be read to their end. */
static int consistent(const struct elfsyms *es)
{
	size_t i, len = 0;

	for (i = 0; i < es->nfn; i++) {
		if (!es->fn[i].size || (i && es->fn[i].addr <= es->fn[i - 1].addr) || es->fn[i].bind > ELFSYMS_WEAK)
			return 0;
		len += strlen(es->fn[i].name);
	}
	for (i = 0; i < es->nplt; i++)
		len += strlen(es->plt[i].name);
	return len != (size_t)-1;
}

/* A copy of the file f without section headers, as sstrip leaves it:
 * e_shoff, e_shnum and e_shstrndx 0, and the section header table cut off
 * when it ends the file.  *len: f's length, then the copy's. */
static uint8_t *without_sections(const uint8_t *f, size_t *len)
{
	ElfW(Ehdr) eh;
	uint8_t *copy = malloc(*len);

	if (!copy)
		return NULL;
	memcpy(copy, f, *len);
	memcpy(&eh, f, sizeof(eh));
	if (eh.e_shoff && eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize == *len)
		*len = eh.e_shoff;
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	memcpy(copy, &eh, sizeof(eh));
	return copy;
}

static void test_self(const char *path)
{
	struct elfsyms *es = NULL;
	const struct elfsyms_fn *f;
	uintptr_t bias = 0;
	char err[256];
	size_t i;

	if (!CHECK_EQ_U64(elfsyms_open(path, &es, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(es->elf_class, sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32);
#if defined(__x86_64__)
	CHECK_EQ_U64(es->machine, EM_X86_64);
#elif defined(__aarch64__)
	CHECK_EQ_U64(es->machine, EM_AARCH64);
#elif defined(__arm__)
	CHECK_EQ_U64(es->machine, EM_ARM);
#endif
	CHECK(es->type == ET_DYN || es->type == ET_EXEC);
	CHECK(!es->from_dynsym);
	CHECK(consistent(es));
	dl_iterate_phdr(first_bias, &bias);
	f = find_fn(es, "main");
	if (CHECK(f)) {
		CHECK_EQ_U64(f->addr, (uintptr_t)main - bias);
		CHECK_EQ_U64(f->bind, ELFSYMS_GLOBAL);
	}
	f = find_fn(es, "elfsyms_test_local");
	if (CHECK(f)) {
		CHECK_EQ_U64(f->addr, (uintptr_t)local_ptr - bias);
		CHECK_EQ_U64(f->bind, ELFSYMS_LOCAL);
		CHECK(f->size >= elfsyms_jump_size(es->machine) && !(f->flags & ELFSYMS_FN_SHORT));
	}
	f = find_fn(es, "elfsyms_open");
	CHECK(f && f->addr == (uintptr_t)elfsyms_open - bias);
	for (i = 0; i < es->nplt; i++)
		if (!strcmp(es->plt[i].name, "malloc"))
			break;
	if (CHECK(i < es->nplt))
		CHECK(es->plt[i].got != 0);
	elfsyms_free(es);
	elfsyms_free(NULL);
}

/* Writes len bytes of data to tmp_path (replacing it). */
static void write_tmp(const void *data, size_t len)
{
	int fd = open(tmp_path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (!CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len))
		perror(tmp_path);
	if (fd >= 0)
		close(fd);
}

/* The copy without section headers (in tmp_path) against the file at
 * path: the same PLT slots, less the .plt.got entries, with the same
 * stubs; functions that are the file's. */
static void test_no_sections(const char *path)
{
	struct elfsyms *es = NULL, *full = NULL;
	char err[256];
	size_t i, j;

	if (!CHECK_EQ_U64(elfsyms_open(path, &full, err, sizeof(err)), 0) ||
	    !CHECK_EQ_U64(elfsyms_open(tmp_path, &es, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		goto out;
	}
	CHECK(es->from_phdrs && es->from_dynsym && !full->from_phdrs);
	CHECK(consistent(es));
	CHECK_EQ_U64(es->machine, full->machine);
	for (i = 0; i < es->nfn; i++) {
		for (j = 0; j < full->nfn && full->fn[j].addr != es->fn[i].addr; j++)
			;
		if (!CHECK(j < full->nfn))
			printf("  %s at %#llx is no function\n", es->fn[i].name, (unsigned long long)es->fn[i].addr);
	}
	for (i = j = 0; i < full->nplt; i++) {
		const struct elfsyms_plt *a = &full->plt[i], *b = &es->plt[j];

		if (a->flags & ELFSYMS_PLT_GOT)
			continue;
		if (!CHECK(j < es->nplt))
			break;
		if (!CHECK(!strcmp(a->name, b->name) && a->got == b->got && a->stub == b->stub && a->flags == b->flags))
			printf("  slot %zu: %s %#llx %#llx, want %s %#llx %#llx\n", j, b->name,
			       (unsigned long long)b->got, (unsigned long long)b->stub, a->name,
			       (unsigned long long)a->got, (unsigned long long)a->stub);
		j++;
	}
	CHECK_EQ_U64(j, es->nplt);
	for (i = 0; i < es->nplt && strcmp(es->plt[i].name, "malloc"); i++)
		;
	if (CHECK(i < es->nplt))
		CHECK(es->plt[i].got != 0);
#if defined(__x86_64__) || defined(__aarch64__)
	/* the linker's usual PLT: every stub found in the executable segment */
	if (CHECK(i < es->nplt))
		CHECK(es->plt[i].stub != 0);
#endif
out:
	elfsyms_free(es);
	elfsyms_free(full);
}

/* elfsyms_open(path) gives code, and a message when it fails. */
static void check_open(const char *path, int code, const char *what)
{
	struct elfsyms *es = (struct elfsyms *)1;
	char err[256];
	int ret = elfsyms_open(path, &es, err, sizeof(err));

	if (!CHECK_EQ_U64(ret, code))
		printf("  %s: %s\n", what, err);
	CHECK(es == NULL);
	CHECK(err[0] != '\0');
	if (ret == 0)
		elfsyms_free(es);
}

static void test_errors(const uint8_t *self, size_t len)
{
	uint8_t hdr[64];

	check_open("/nonexistent/elfsyms", -ENOENT, "missing file");
	check_open("/", -ENOEXEC, "directory");
	write_tmp("", 0);
	check_open(tmp_path, -ENOEXEC, "empty file");
	write_tmp("#!/bin/sh\necho not elf\n", 23);
	check_open(tmp_path, -ENOEXEC, "script");
	memcpy(hdr, self, sizeof(hdr));
	hdr[EI_DATA] = ELFDATA2MSB;
	write_tmp(hdr, sizeof(hdr));
	check_open(tmp_path, -ENOTSUP, "big-endian");
	memcpy(hdr, self, sizeof(hdr));
	hdr[EI_CLASS] = 3;
	write_tmp(hdr, sizeof(hdr));
	check_open(tmp_path, -ENOTSUP, "class 3");
	memcpy(hdr, self, sizeof(hdr));
	hdr[18] = EM_386; /* e_machine, both classes */
	hdr[19] = 0;
	write_tmp(hdr, sizeof(hdr));
	check_open(tmp_path, -ENOTSUP, "i386");
	memcpy(hdr, self, sizeof(hdr));
	hdr[16] = ET_REL; /* e_type */
	write_tmp(hdr, sizeof(hdr));
	check_open(tmp_path, -ENOTSUP, "relocatable");
	write_tmp(self, len / 2 < 64 ? len : 64);
	check_open(tmp_path, -ENOEXEC, "header only");
}

/* Files without section headers that cannot be read. */
static void test_no_sections_errors(const uint8_t *copy, size_t len)
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph;
	uint8_t *bad = malloc(len);
	size_t i;

	if (!CHECK(bad))
		return;
	memcpy(&eh, copy, sizeof(eh));
	memcpy(bad, copy, len);
	((ElfW(Ehdr) *)bad)->e_phoff = 0;
	write_tmp(bad, len);
	check_open(tmp_path, -ENOEXEC, "no headers at all");
	/* PT_DYNAMIC beyond the end of the file, then pointing at tables
	 * outside every PT_LOAD (its d_ptr values moved far away) */
	for (i = 0; i < eh.e_phnum; i++) {
		memcpy(&ph, copy + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_DYNAMIC)
			continue;
		memcpy(bad, copy, len);
		((ElfW(Phdr) *)(bad + eh.e_phoff))[i].p_offset = len;
		write_tmp(bad, len);
		check_open(tmp_path, -ENOEXEC, "PT_DYNAMIC beyond the end");
		memcpy(bad, copy, len);
		for (ElfW(Dyn) *d = (ElfW(Dyn) *)(bad + ph.p_offset);
		     (uint8_t *)(d + 1) <= bad + ph.p_offset + ph.p_filesz && d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_SYMTAB || d->d_tag == DT_JMPREL)
				d->d_un.d_ptr += (ElfW(Addr))1 << (sizeof(void *) * 8 - 2);
		write_tmp(bad, len);
		check_open(tmp_path, -ENOEXEC, "tables outside the segments");
	}
	free(bad);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The parts elfsyms reads, where corruption matters: the ELF header, the
 * section header table and the symbol, string and relocation tables. */
struct region {
	size_t off, len;
};

/* The regions of f (len bytes), whose section headers are those of the
 * file self; without section headers (no_shdrs), the program headers and
 * the tables PT_DYNAMIC points at (and the PLT) instead. */
static size_t regions_of(const uint8_t *self, size_t len, bool no_shdrs, struct region *out, size_t max)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)self;
	const ElfW(Shdr) * sh;
	size_t n = 0, i;

	out[n++] = (struct region){ 0, sizeof(*eh) };
	if (no_shdrs)
		out[n++] = (struct region){ eh->e_phoff, (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) };
	if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > (size_t)-1 / 2)
		return n;
	if (!no_shdrs && eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) <= len)
		out[n++] = (struct region){ eh->e_shoff, (size_t)eh->e_shnum * sizeof(*sh) };
	sh = (const ElfW(Shdr) *)(self + eh->e_shoff);
	for (i = 0; i < eh->e_shnum && n < max; i++) {
		bool dyn = sh[i].sh_type == SHT_DYNAMIC || sh[i].sh_type == SHT_HASH || sh[i].sh_type == SHT_GNU_HASH ||
		           ((sh[i].sh_flags & SHF_EXECINSTR) && sh[i].sh_entsize); /* the PLT */

		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_STRTAB &&
		    sh[i].sh_type != SHT_RELA && sh[i].sh_type != SHT_REL && !(no_shdrs && dyn))
			continue;
		if (sh[i].sh_size && sh[i].sh_offset + sh[i].sh_size <= len)
			out[n++] = (struct region){ sh[i].sh_offset, sh[i].sh_size };
	}
	return n;
}

/* Opens tmp_path as it is now: a consistent list or an error. */
static void check_damaged(unsigned *ok, unsigned *failed)
{
	struct elfsyms *es = NULL;
	char err[256];
	int ret = elfsyms_open(tmp_path, &es, err, sizeof(err));

	if (ret == 0) {
		CHECK(es && consistent(es));
		(*ok)++;
	} else {
		CHECK(ret < 0 && !es && err[0]);
		(*failed)++;
	}
	elfsyms_free(es);
}

/* Copies of file (len bytes; self: the file with section headers it is,
 * or was before they went) corrupted and truncated. */
static void test_damaged(const uint8_t *self, const uint8_t *file, size_t len, bool no_shdrs)
{
	static const uint8_t values[] = { 0x00, 0xff, 0x7f, 0x80, 0x01, 0x10 };
	struct region reg[64];
	size_t nreg = regions_of(self, len, no_shdrs, reg, 64), k;
	unsigned i, ok = 0, failed = 0;
	int fd;

	CHECK(nreg >= 4);
	write_tmp(file, len);
	fd = open(tmp_path, O_WRONLY | O_CLOEXEC);
	if (!CHECK(fd >= 0))
		return;
	for (i = 0; i < CORRUPTIONS; i++) {
		size_t off[4];
		unsigned n = 1 + (unsigned)(next() % 4);

		for (k = 0; k < n; k++) {
			/* one in four anywhere, the rest where elfsyms reads */
			const struct region *r = &reg[next() % nreg];
			uint8_t v = next() % 2 ? values[next() % sizeof(values)] : (uint8_t)next();

			off[k] = next() % 4 ? r->off + next() % r->len : next() % len;
			CHECK(pwrite(fd, &v, 1, (off_t)off[k]) == 1);
		}
		check_damaged(&ok, &failed);
		for (k = 0; k < n; k++)
			CHECK(pwrite(fd, file + off[k], 1, (off_t)off[k]) == 1);
	}
	close(fd);
	printf("%s: corrupted %u times: %u read, %u refused\n", no_shdrs ? "without section headers" : "whole file",
	       CORRUPTIONS, ok, failed);
	ok = failed = 0;
	for (i = 0; i < TRUNCATIONS; i++) {
		/* every length within the ELF header, then cuts into the tables */
		const struct region *r = &reg[next() % nreg];
		size_t cut = i < 80 ? i : next() % 2 ? r->off + next() % r->len : next() % len;

		write_tmp(file, cut);
		check_damaged(&ok, &failed);
	}
	printf("%s: truncated %u times: %u read, %u refused\n", no_shdrs ? "without section headers" : "whole file",
	       TRUNCATIONS, ok, failed);
}

/* Reads the whole of path (at most FILE_MAX bytes); NULL on failure. */
static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) || st.st_size <= 0 || (uint64_t)st.st_size > FILE_MAX)
		goto out;
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != (ssize_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	*len = (size_t)st.st_size;
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

int main(int argc, char **argv)
{
	uint8_t *self, *copy = NULL;
	size_t len = 0, copy_len;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: test_elfsyms PATH-OF-THIS-PROGRAM\n");
		return 2;
	}
	CHECK_EQ_U64(local_ptr(1), 4);
	test_self(argv[1]);
	self = slurp(argv[1], &len);
	fd = mkstemp(tmp_path);
	if (CHECK(self && len > 64) && CHECK(fd >= 0)) {
		close(fd);
		test_errors(self, len);
		test_damaged(self, self, len, false);
		copy_len = len;
		copy = without_sections(self, &copy_len);
	}
	if (copy && CHECK(copy_len < len)) {
		write_tmp(copy, copy_len);
		test_no_sections(argv[1]);
		test_no_sections_errors(copy, copy_len);
		test_damaged(self, copy, copy_len, true);
	}
	if (fd >= 0)
		unlink(tmp_path);
	free(copy);
	free(self);
	return check_summary();
}
