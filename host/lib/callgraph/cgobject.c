/* An object's life: reading the file (or an image in memory), the
 * lookups by address and name, and the arrays and strings the build
 * grows; building the graph itself is cgraph.c's. */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elfsyms.h"
#include "host/lib/callgraph/cgraph_impl.h"

#define CG_BLOCK_SIZE 65536u

void *cg_grow(void *arr_p, uint32_t *n, uint32_t *cap, size_t size, uint32_t max, int *rc)
{
	void **arr = arr_p;
	char *p;

	if (*n >= max) {
		*rc = -E2BIG;
		return NULL;
	}
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 64;

		if (ncap > max)
			ncap = max;
		p = realloc(*arr, (size_t)ncap * size);
		if (!p) {
			*rc = -ENOMEM;
			return NULL;
		}
		*arr = p;
		*cap = ncap;
	}
	p = (char *)*arr + (size_t)(*n)++ * size;
	memset(p, 0, size);
	return p;
}

const char *cg_strdup(struct cg_build *b, const char *s)
{
	size_t len = strlen(s) + 1;
	struct cg_block *blk = b->priv->blocks;
	char *p;

	if (!blk || blk->cap - blk->used < len) {
		size_t cap = len > CG_BLOCK_SIZE ? len : CG_BLOCK_SIZE;

		blk = malloc(sizeof(*blk) + cap);
		if (!blk)
			return NULL;
		blk->next = b->priv->blocks;
		blk->used = 0;
		blk->cap = cap;
		b->priv->blocks = blk;
	}
	p = blk->bytes + blk->used;
	memcpy(p, s, len);
	blk->used += len;
	return p;
}

const char *cg_machine_name(unsigned machine)
{
	switch (machine) {
	case CG_MACHINE_X86_64:
		return "x86-64";
	case CG_MACHINE_AARCH64:
		return "aarch64";
	case CG_MACHINE_ARM:
		return "arm";
	default:
		return "unknown";
	}
}

void cg_object_free(struct cg_object *o)
{
	struct cg_priv *p;

	if (!o)
		return;
	p = o->impl;
	if (p) {
		while (p->blocks) {
			struct cg_block *next = p->blocks->next;

			free(p->blocks);
			p->blocks = next;
		}
		if (p->elf)
			elf_end(p->elf);
		free(p->exports);
		elfsyms_free(p->syms);
		free(p->image);
		free(p);
	}
	free(o->funcs);
	free(o->edges);
	free(o->needed);
	free(o);
}

uint32_t cg_bound(const void *base, uint32_t n, size_t stride, size_t off, uint64_t key)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + (size_t)mid * stride + off, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The index past the last element whose key is at most key. */
static uint32_t bound_above(const struct cg_func *funcs, uint32_t n, uint64_t key)
{
	return key == UINT64_MAX ? n : CG_BOUND(funcs, n, struct cg_func, addr, key + 1);
}

uint32_t cg_object_find(const struct cg_object *o, uint64_t addr)
{
	uint32_t lo, i, k;

	if (o->machine == CG_MACHINE_ARM)
		addr &= ~1ull;
	lo = bound_above(o->funcs, o->nfuncs, addr);
	/* the last start at or below addr; a function nested in another's
	 * range comes after it, so walk back a little for the one that holds
	 * addr */
	for (i = lo, k = 0; i > 0 && k < 16; i--, k++) {
		const struct cg_func *f = &o->funcs[i - 1];

		if (addr - f->addr < (f->size ? f->size : 1))
			return i - 1;
	}
	return CG_NONE;
}

uint32_t cg_object_lookup(const struct cg_object *o, const char *name)
{
	for (uint32_t i = 0; i < o->nfuncs; i++)
		if (!strcmp(o->funcs[i].name, name))
			return i;
	return CG_NONE;
}

const char *cg_object_runpath(const struct cg_object *o)
{
	return o->impl ? ((const struct cg_priv *)o->impl)->runpath : NULL;
}

uint32_t cg_object_export(const struct cg_object *o, const char *name)
{
	const struct cg_priv *p = o->impl;
	uint32_t lo = 0, hi = p ? p->nexports : 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->exports[mid].name, name);

		if (!c)
			return p->exports[mid].func;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return CG_NONE;
}

/* A new object owning image (len bytes), named path. */
static struct cg_object *object_new(uint8_t *image, size_t len, const char *path)
{
	struct cg_object *o = calloc(1, sizeof(*o));
	struct cg_priv *p = calloc(1, sizeof(*p));
	struct cg_build b = { .o = o, .priv = p };

	if (!o || !p) {
		free(o);
		free(p);
		return NULL;
	}
	o->impl = p;
	p->image = image;
	p->len = len;
	o->path = cg_strdup(&b, path);
	o->main = CG_NONE;
	if (!o->path) {
		cg_object_free(o);
		return NULL;
	}
	return o;
}

static int finish(struct cg_object *o, int rc, struct cg_object **out)
{
	if (rc) {
		cg_object_free(o);
		return rc;
	}
	*out = o;
	return 0;
}

int cg_object_open(const char *path, struct cg_object **out, char *err, size_t errlen)
{
	struct cg_object *o;
	struct stat st;
	uint8_t *image = NULL;
	size_t got = 0;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s", strerror(-rc));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		snprintf(err, errlen, "a directory, not an ELF file");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -ENOEXEC;
		snprintf(err, errlen, "not a regular file");
		goto fail;
	}
	if ((unsigned long long)st.st_size > CG_FILE_MAX) {
		rc = -E2BIG;
		snprintf(err, errlen, "larger than %llu bytes", (unsigned long long)CG_FILE_MAX);
		goto fail;
	}
	if (st.st_size == 0) {
		rc = -ENOEXEC;
		snprintf(err, errlen, "an empty file, not an ELF file");
		goto fail;
	}
	image = malloc((size_t)st.st_size);
	if (!image) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, image + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EBADMSG;
			snprintf(err, errlen, "%s", r < 0 ? strerror(errno) : "the file shrank while read");
			goto fail;
		}
		got += (size_t)r;
	}
	close(fd);
	o = object_new(image, got, path);
	if (!o) {
		free(image);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return finish(o, cg_object_build(o, path, err, errlen), out);
fail:
	free(image);
	close(fd);
	return rc;
}

int cg_object_read(const void *data, size_t len, const char *path, struct cg_object **out, char *err, size_t errlen)
{
	struct cg_object *o;
	uint8_t *image;
	char fdpath[64];
	size_t put = 0;
	int fd, rc;

	*out = NULL;
	if (!len) {
		snprintf(err, errlen, "an empty file, not an ELF file");
		return -ENOEXEC;
	}
	if (len > CG_FILE_MAX) {
		snprintf(err, errlen, "larger than %llu bytes", (unsigned long long)CG_FILE_MAX);
		return -E2BIG;
	}
	image = malloc(len);
	if (!image) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(image, data, len);
	/* the symbol reader reads a file: give it one in memory */
	fd = memfd_create("layerprof-callgraph", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		free(image);
		return rc;
	}
	while (put < len) {
		ssize_t w = write(fd, image + put, len - put);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			snprintf(err, errlen, "cannot copy the image: %s", strerror(-rc));
			close(fd);
			free(image);
			return rc;
		}
		put += (size_t)w;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	o = object_new(image, len, path);
	if (!o) {
		close(fd);
		free(image);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = cg_object_build(o, fdpath, err, errlen);
	close(fd);
	return finish(o, rc, out);
}
