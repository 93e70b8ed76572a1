/* The memory group: the allocator, the string and memory functions, and
 * mappings.  The C functions are called through volatile pointers: the
 * compiler may neither inline them nor drop a call whose result is unused,
 * so that each sample times the library's own function, as a trace shows it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "oscal/suite.h"

static const long xs_mem[] = { 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576 };
static const long xs_grow[] = { 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 524288 };
static const long xs_map[] = { 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576 };

static void *(*volatile p_malloc)(size_t) = malloc;
static void (*volatile p_free)(void *) = free;
static void *(*volatile p_calloc)(size_t, size_t) = calloc;
static void *(*volatile p_realloc)(void *, size_t) = realloc;
static int (*volatile p_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;
static int (*volatile p_memcmp)(const void *, const void *, size_t) = memcmp;
static size_t (*volatile p_strlen)(const char *) = strlen;
static char *(*volatile p_strcpy)(char *, const char *) = strcpy;
static int (*volatile p_strcmp)(const char *, const char *) = strcmp;
static char *(*volatile p_strchr)(const char *, int) = strchr;

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static int setup_fill(struct suite_ctx *c)
{
	suite_fill(c->buf, c->buf2);
	return 0;
}

/* strings of x - 1 letters and their NUL in both buffers */
static int setup_str(struct suite_ctx *c)
{
	suite_fill(c->buf, c->buf2);
	c->buf[c->x - 1] = 0;
	c->buf2[c->x - 1] = 0;
	return 0;
}

static void done_fill(struct suite_ctx *c)
{
	suite_fill(c->buf, c->buf2);
}

/* ------------------------------------------------------------ the allocator */

static int one_malloc(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = p_malloc((size_t)c->x);
	T1;
	if (!p)
		return suite_err(c, "malloc");
	p_free(p);
	return 0;
}

static int one_free(struct suite_ctx *c, uint64_t *ns)
{
	void *p = p_malloc((size_t)c->x);
	if (!p)
		return suite_err(c, "malloc before free");
	T0;
	p_free(p);
	T1;
	return 0;
}

static int one_calloc(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = p_calloc(1, (size_t)c->x);
	T1;
	if (!p)
		return suite_err(c, "calloc");
	p_free(p);
	return 0;
}

static int one_realloc(struct suite_ctx *c, uint64_t *ns)
{
	void *p = p_malloc((size_t)c->x), *q;
	if (!p)
		return suite_err(c, "malloc before realloc");
	T0;
	q = p_realloc(p, 2 * (size_t)c->x);
	T1;
	if (!q) {
		p_free(p);
		return suite_err(c, "realloc");
	}
	p_free(q);
	return 0;
}

static int one_memalign(struct suite_ctx *c, uint64_t *ns)
{
	void *p = NULL;
	int r;
	T0;
	r = p_memalign(&p, 64, (size_t)c->x);
	T1;
	if (r) {
		errno = r;
		return suite_err(c, "posix_memalign");
	}
	p_free(p);
	return 0;
}

/* ------------------------------------------------------------ memory and strings */

static int one_memcpy(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	p_memcpy(c->buf2, c->buf, (size_t)c->x);
	T1;
	return 0;
}

static int one_memmove(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	p_memmove(c->buf + 1, c->buf, (size_t)c->x);
	T1;
	return 0;
}

static int one_memset(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	p_memset(c->buf2, 'z', (size_t)c->x);
	T1;
	return 0;
}

static int one_memcmp(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = p_memcmp(c->buf, c->buf2, (size_t)c->x);
	T1;
	c->what = "memcmp of equal buffers";
	return r ? -EIO : 0;
}

static int one_strlen(struct suite_ctx *c, uint64_t *ns)
{
	size_t n;
	T0;
	n = p_strlen((const char *)c->buf);
	T1;
	c->what = "strlen";
	return n + 1 == (size_t)c->x ? 0 : -EIO;
}

static int one_strcpy(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	p_strcpy((char *)c->buf2, (const char *)c->buf);
	T1;
	return 0;
}

static int one_strcmp(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = p_strcmp((const char *)c->buf, (const char *)c->buf2);
	T1;
	c->what = "strcmp of equal strings";
	return r ? -EIO : 0;
}

static int one_strchr(struct suite_ctx *c, uint64_t *ns)
{
	char *r;
	T0;
	r = p_strchr((const char *)c->buf, '#');
	T1;
	c->what = "strchr of a character not in the string";
	return r ? -EIO : 0;
}

/* ------------------------------------------------------------ mappings */

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void touch(void *p, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < len; i += (size_t)page)
		((volatile unsigned char *)p)[i] = 1;
}

static int one_mmap_anon(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = map_anon((size_t)c->x);
	T1;
	if (!p)
		return suite_err(c, "mmap of anonymous memory");
	munmap(p, (size_t)c->x);
	return 0;
}

static int one_mmap_touch(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = map_anon((size_t)c->x);
	if (p)
		touch(p, (size_t)c->x);
	T1;
	if (!p)
		return suite_err(c, "mmap of anonymous memory");
	munmap(p, (size_t)c->x);
	return 0;
}

static int unmap_touched(struct suite_ctx *c, uint64_t *ns, int touched)
{
	void *p = map_anon((size_t)c->x);
	int r;
	if (!p)
		return suite_err(c, "mmap before munmap");
	if (touched)
		touch(p, (size_t)c->x);
	T0;
	r = munmap(p, (size_t)c->x);
	T1;
	return r < 0 ? suite_err(c, "munmap") : 0;
}

static int one_munmap(struct suite_ctx *c, uint64_t *ns)
{
	return unmap_touched(c, ns, 0);
}

static int one_munmap_touched(struct suite_ctx *c, uint64_t *ns)
{
	return unmap_touched(c, ns, 1);
}

static int setup_mapfile(struct suite_ctx *c)
{
	c->fd[0] = suite_make_file(c, "m", SUITE_BUF_MAX);
	return c->fd[0] < 0 ? c->fd[0] : 0;
}

static void done_mapfile(struct suite_ctx *c)
{
	suite_close_fds(c);
	suite_remove(c, "m");
}

static int one_mmap_file(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = mmap(NULL, (size_t)c->x, PROT_READ, MAP_SHARED, c->fd[0], 0);
	T1;
	if (p == MAP_FAILED)
		return suite_err(c, "mmap of a file");
	munmap(p, (size_t)c->x);
	return 0;
}

/* a touched mapping of x bytes, kept from setup to done */
static int setup_region(struct suite_ctx *c)
{
	if (!(c->p = map_anon((size_t)c->x)))
		return suite_err(c, "mmap of the region");
	c->len = (size_t)c->x;
	touch(c->p, c->len);
	return 0;
}

static void done_region(struct suite_ctx *c)
{
	if (c->p)
		munmap(c->p, c->len);
	c->p = NULL;
}

static int one_mprotect(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = mprotect(c->p, c->len, PROT_READ);
	T1;
	if (r < 0)
		return suite_err(c, "mprotect PROT_READ");
	if (mprotect(c->p, c->len, PROT_READ | PROT_WRITE) < 0)
		return suite_err(c, "mprotect back to PROT_READ|PROT_WRITE");
	return 0;
}

static int one_madvise(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	touch(c->p, c->len);
	T0;
	r = madvise(c->p, c->len, MADV_DONTNEED);
	T1;
	return r < 0 ? suite_err(c, "madvise MADV_DONTNEED") : 0;
}

static int one_mlock(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = mlock(c->p, c->len);
	T1;
	if (r < 0) {
		c->why = "locking memory needs CAP_IPC_LOCK or RLIMIT_MEMLOCK";
		return suite_err(c, "mlock");
	}
	munlock(c->p, c->len);
	return 0;
}

static int one_sbrk(struct suite_ctx *c, uint64_t *ns)
{
	void *p;
	T0;
	p = sbrk(0);
	T1;
	return p == (void *)-1 ? suite_err(c, "sbrk(0)") : 0;
}

#define M(name, call, cond, param, unit, xs, setup, one, done, desc)                \
	{                                                                           \
		name, call, cond, "memory", param, unit, xs, setup, one, done, desc \
	}

const struct suite_def suite_mem[] = {
	M("malloc", "malloc", "", "bytes", "B", SUITE_XS(xs_mem), NULL, one_malloc, NULL,
	  "malloc(3) of x bytes (its free not timed)"),
	M("free", "free", "", "bytes", "B", SUITE_XS(xs_mem), NULL, one_free, NULL, "free(3) of a block of x bytes"),
	M("calloc", "calloc", "", "bytes", "B", SUITE_XS(xs_mem), NULL, one_calloc, NULL,
	  "calloc(3) of x bytes (its free not timed)"),
	M("realloc", "realloc", "grow", "bytes", "B", SUITE_XS(xs_grow), NULL, one_realloc, NULL,
	  "realloc(3) of a block of x bytes to 2x"),
	M("posix_memalign", "posix_memalign", "", "bytes", "B", SUITE_XS(xs_mem), NULL, one_memalign, NULL,
	  "posix_memalign(3) of x bytes aligned to 64"),
	M("memcpy", "memcpy", "", "bytes", "B", SUITE_XS(xs_mem), setup_fill, one_memcpy, done_fill,
	  "memcpy(3) of x bytes between two buffers"),
	M("memmove", "memmove", "overlap", "bytes", "B", SUITE_XS(xs_mem), setup_fill, one_memmove, done_fill,
	  "memmove(3) of x bytes one byte up in the same buffer"),
	M("memset", "memset", "", "bytes", "B", SUITE_XS(xs_mem), setup_fill, one_memset, done_fill,
	  "memset(3) of x bytes"),
	M("memcmp", "memcmp", "equal", "bytes", "B", SUITE_XS(xs_mem), setup_fill, one_memcmp, done_fill,
	  "memcmp(3) of two equal buffers of x bytes"),
	M("strlen", "strlen", "", "bytes", "B", SUITE_XS(xs_mem), setup_str, one_strlen, done_fill,
	  "strlen(3) of a string of x bytes with its NUL"),
	M("strcpy", "strcpy", "", "bytes", "B", SUITE_XS(xs_mem), setup_str, one_strcpy, done_fill,
	  "strcpy(3) of a string of x bytes with its NUL"),
	M("strcmp", "strcmp", "equal", "bytes", "B", SUITE_XS(xs_mem), setup_str, one_strcmp, done_fill,
	  "strcmp(3) of two equal strings of x bytes with their NUL"),
	M("strchr", "strchr", "absent", "bytes", "B", SUITE_XS(xs_mem), setup_str, one_strchr, done_fill,
	  "strchr(3) of a character not in a string of x bytes"),
	M("mmap-anon", "mmap", "anon", "bytes", "B", SUITE_XS(xs_map), NULL, one_mmap_anon, NULL,
	  "mmap(2) of x bytes of private anonymous memory (munmap not timed)"),
	M("mmap-touch", "mmap", "touch", "bytes", "B", SUITE_XS(xs_map), NULL, one_mmap_touch, NULL,
	  "mmap(2) of x bytes of anonymous memory and a write to each page (the page faults)"),
	M("mmap-file", "mmap", "file", "bytes", "B", SUITE_XS(xs_map), setup_mapfile, one_mmap_file, done_mapfile,
	  "mmap(2) MAP_SHARED PROT_READ of x bytes of a regular file"),
	M("munmap", "munmap", "", "bytes", "B", SUITE_XS(xs_map), NULL, one_munmap, NULL,
	  "munmap(2) of x bytes of untouched anonymous memory"),
	M("munmap-touched", "munmap", "touched", "bytes", "B", SUITE_XS(xs_map), NULL, one_munmap_touched, NULL,
	  "munmap(2) of x bytes of anonymous memory every page of which was written"),
	M("mprotect", "mprotect", "", "bytes", "B", SUITE_XS(xs_map), setup_region, one_mprotect, done_region,
	  "mprotect(2) of x bytes of touched memory to read-only"),
	M("madvise-dontneed", "madvise", "dontneed", "bytes", "B", SUITE_XS(xs_map), setup_region, one_madvise,
	  done_region, "madvise(2) MADV_DONTNEED of x bytes of touched memory"),
	M("mlock", "mlock", "", "bytes", "B", SUITE_XS(xs_map), setup_region, one_mlock, done_region,
	  "mlock(2) of x bytes of touched memory (munlock not timed)"),
	M("sbrk", "sbrk", "query", "", "", SUITE_NOX, NULL, one_sbrk, NULL, "sbrk(0): the program break"),
};
const size_t suite_mem_n = sizeof(suite_mem) / sizeof(suite_mem[0]);
