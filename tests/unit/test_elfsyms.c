/* Unit test of common/elfsyms: the test's own file (functions at the
 * addresses they run at, less the load bias; its PLT), the errors for
 * files that are not what it reads, and copies of the file truncated and
 * corrupted at many places (a pseudo-random sequence, the same every run),
 * each of which must give a consistent list or an error, never a crash or
 * a read out of bounds (the ASan build checks the latter).
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

static size_t regions_of(const uint8_t *f, size_t len, struct region *out, size_t max)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f;
	const ElfW(Shdr) * sh;
	size_t n = 0, i;

	out[n++] = (struct region){ 0, sizeof(*eh) };
	if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > len)
		return n;
	out[n++] = (struct region){ eh->e_shoff, (size_t)eh->e_shnum * sizeof(*sh) };
	sh = (const ElfW(Shdr) *)(f + eh->e_shoff);
	for (i = 0; i < eh->e_shnum && n < max; i++) {
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_STRTAB &&
		    sh[i].sh_type != SHT_RELA && sh[i].sh_type != SHT_REL)
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

static void test_damaged(const uint8_t *self, size_t len)
{
	static const uint8_t values[] = { 0x00, 0xff, 0x7f, 0x80, 0x01, 0x10 };
	struct region reg[64];
	size_t nreg = regions_of(self, len, reg, 64), k;
	unsigned i, ok = 0, failed = 0;
	int fd;

	CHECK(nreg >= 4);
	write_tmp(self, len);
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
			CHECK(pwrite(fd, self + off[k], 1, (off_t)off[k]) == 1);
	}
	close(fd);
	printf("corrupted %u times: %u read, %u refused\n", CORRUPTIONS, ok, failed);
	ok = failed = 0;
	for (i = 0; i < TRUNCATIONS; i++) {
		/* every length within the ELF header, then cuts into the tables */
		const struct region *r = &reg[next() % nreg];
		size_t cut = i < 80 ? i : next() % 2 ? r->off + next() % r->len : next() % len;

		write_tmp(self, cut);
		check_damaged(&ok, &failed);
	}
	printf("truncated %u times: %u read, %u refused\n", TRUNCATIONS, ok, failed);
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
	uint8_t *self;
	size_t len = 0;
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
		test_damaged(self, len);
	}
	if (fd >= 0)
		unlink(tmp_path);
	free(self);
	return check_summary();
}
