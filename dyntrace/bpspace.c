/* The ptrace backend's address spaces (see bptrace_impl.h): the traps in
 * each, written through /proc/<tid>/mem, and the threads' frames, whose
 * return addresses hold a trap while a frame returns there.  Tracer
 * thread only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dyntrace/bptrace_impl.h"

static const uint8_t bp_trap[BP_LEN] = BP_INSN;

struct bp_space *space_new(void)
{
	struct bp_space *s = calloc(1, sizeof(*s));

	if (s)
		s->memfd = -1;
	return s;
}

static void space_free(struct bp_space *s)
{
	if (s->memfd >= 0)
		close(s->memfd);
	free(s->sites);
	free(s);
}

void space_leave(struct bp_task *t)
{
	struct bp_space *s = t->space;

	t->space = NULL;
	if (s && !--s->users)
		space_free(s);
}

void space_join(struct bp_task *t, struct bp_space *s)
{
	if (t->space == s)
		return;
	space_leave(t);
	t->space = s;
	s->users++;
}

static int space_open(struct bp_space *s, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	s->memfd = open(path, O_RDWR | O_CLOEXEC);
	return s->memfd < 0 ? -errno : 0;
}

int space_read(struct bp_space *s, uint64_t addr, void *out, size_t len)
{
	ssize_t n;

	if (s->memfd < 0 || s->dead)
		return -ESRCH;
	n = pread(s->memfd, out, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* The slot of addr: its site, or the empty slot where it would go. */
static struct bp_site *site_slot(const struct bp_space *s, uint64_t addr)
{
	uint32_t k = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (s->cap - 1);

	while (s->sites[k].addr && s->sites[k].addr != addr)
		k = (k + 1) & (s->cap - 1);
	return &s->sites[k];
}

struct bp_site *site_find(const struct bp_space *s, uint64_t addr)
{
	struct bp_site *site;

	if (!s || !s->cap)
		return NULL;
	site = site_slot(s, addr);
	return site->addr ? site : NULL;
}

/* The table doubled (at half full); false when out of memory. */
static bool sites_grow(struct bp_space *s)
{
	struct bp_site *old = s->sites;
	uint32_t cap = s->cap;

	s->cap = cap ? cap * 2 : 256;
	s->sites = calloc(s->cap, sizeof(*s->sites));
	if (!s->sites) {
		s->sites = old;
		s->cap = cap;
		return false;
	}
	for (uint32_t i = 0; i < cap; i++)
		if (old[i].addr)
			*site_slot(s, old[i].addr) = old[i];
	free(old);
	return true;
}

/* The site at addr, made (no function, no frame, no trap) when new. */
static struct bp_site *site_get(struct bp_space *s, uint64_t addr)
{
	struct bp_site *site;

	if ((s->used + 1) * 2 > s->cap && !sites_grow(s))
		return NULL;
	site = site_slot(s, addr);
	if (!site->addr) {
		site->addr = addr;
		site->fn = BP_NO_FN;
		s->used++;
	}
	return site;
}

static void write_failed(struct bptrace *b, const struct bp_site *site, int r)
{
	if (!b->werr[0])
		snprintf(b->werr, sizeof(b->werr), "cannot write a trap at %#llx: %s", (unsigned long long)site->addr,
		         strerror(-r));
}

int site_write(struct bptrace *b, struct bp_space *s, struct bp_site *site, bool insert)
{
	ssize_t n;
	int r;

	if (s->memfd < 0 || s->dead)
		return -ESRCH;
	/* what lies there now: code loaded anew at an old return address
	 * (dlclose, dlopen) must not get stale bytes back */
	if (insert && (r = space_read(s, site->addr, site->orig, BP_LEN)) < 0) {
		write_failed(b, site, r);
		return r;
	}
	n = pwrite(s->memfd, insert ? bp_trap : site->orig, BP_LEN, (off_t)site->addr);
	if (n != (ssize_t)BP_LEN) {
		/* a trap not taken out (the memory is going: the frames of a
		 * thread that died) is still known, and passed through */
		r = n < 0 ? -errno : -EIO;
		if (insert)
			write_failed(b, site, r);
		return r;
	}
	site->inserted = insert;
	return 0;
}

/* AT_ENTRY of task tid's auxiliary vector, or 0. */
static uint64_t auxv_entry(pid_t tid)
{
	unsigned long pair[2], entry = 0; /* the auxiliary vector's words */
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, pair, sizeof(pair)) == (ssize_t)sizeof(pair) && pair[0] != AT_NULL)
		if (pair[0] == AT_ENTRY)
			entry = pair[1];
	close(fd);
	return entry;
}

int space_exec(struct bptrace *b, struct bp_space *s, pid_t tid)
{
	uint64_t entry = auxv_entry(tid);
	int r = space_open(s, tid);

	if (r) {
		snprintf(b->werr, sizeof(b->werr), "cannot open /proc/%d/mem: %s", (int)tid, strerror(-r));
		return r;
	}
	if (!entry) {
		snprintf(b->werr, sizeof(b->werr), "cannot read the entry point of %d from /proc/%d/auxv", (int)tid,
		         (int)tid);
		return -EIO;
	}
	s->bias = entry - b->e_entry;
	s->traced = true;
	b->spaces++;
	for (uint32_t i = 0; i < b->sel.nfn; i++) {
		struct bp_site *site = site_get(s, s->bias + b->sel.fn[i].addr);

		if (!site)
			return -ENOMEM;
		site->fn = i;
		r = site_write(b, s, site, true);
		if (r)
			return r;
	}
	return 0;
}

struct bp_space *space_fork(struct bptrace *b, const struct bp_space *parent, pid_t child)
{
	struct bp_space *s = space_new();
	int r;

	if (!s || !parent->cap)
		return s;
	s->sites = calloc(parent->cap, sizeof(*s->sites));
	if (!s->sites) {
		free(s);
		return NULL;
	}
	memcpy(s->sites, parent->sites, parent->cap * sizeof(*s->sites));
	s->cap = parent->cap;
	s->used = parent->used;
	s->bias = parent->bias;
	s->traced = parent->traced;
	r = space_open(s, child);
	if (r && !b->werr[0])
		snprintf(b->werr, sizeof(b->werr), "cannot open /proc/%d/mem: %s", (int)child, strerror(-r));
	/* the child's memory is the parent's as it was at the fork, which
	 * other threads of the parent may have changed since: it says which
	 * traps the child holds */
	for (uint32_t i = 0; i < s->cap; i++) {
		struct bp_site *site = &s->sites[i];
		uint8_t now[BP_LEN];

		if (!site->addr)
			continue;
		site->refs = 0;
		site->inserted = !r && !space_read(s, site->addr, now, BP_LEN) && !memcmp(now, bp_trap, BP_LEN);
	}
	return s;
}

void space_prune(struct bptrace *b, struct bp_space *s)
{
	for (uint32_t i = 0; i < s->cap; i++) {
		struct bp_site *site = &s->sites[i];

		if (site->addr && site->inserted && !site->refs && site->fn == BP_NO_FN)
			site_write(b, s, site, false);
	}
}

void space_restore(struct bptrace *b, struct bp_space *s)
{
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->sites[i].addr && s->sites[i].inserted)
			site_write(b, s, &s->sites[i], false);
}

bool frame_push(struct bptrace *b, struct bp_task *t, uint32_t fn, uint64_t sp, uint64_t ret)
{
	struct bp_site *site;

	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct bp_frame *st;

		if (cap > BP_STACK_MAX || !(st = realloc(t->stack, cap * sizeof(*st)))) {
			b->too_deep++;
			return false;
		}
		t->stack = st;
		t->cap = cap;
	}
	/* a return address the trap cannot go to is one never seen */
	site = ret ? site_get(t->space, ret) : NULL;
	if (site && !site->refs && !site->inserted && site_write(b, t->space, site, true))
		site = NULL;
	if (site)
		site->refs++;
	t->stack[t->depth].sp = sp;
	t->stack[t->depth].ret = site ? ret : 0;
	t->stack[t->depth++].fn = fn;
	return true;
}

void frame_pop(struct bptrace *b, struct bp_task *t)
{
	const struct bp_frame *f = &t->stack[--t->depth];
	struct bp_site *site = f->ret ? site_find(t->space, f->ret) : NULL;

	if (!site || !site->refs)
		return;
	/* the last frame returning here: the trap goes, unless it is an entry */
	if (!--site->refs && site->fn == BP_NO_FN && site->inserted)
		site_write(b, t->space, site, false);
}

void frames_drop(struct bptrace *b, struct bp_task *t)
{
	while (t->depth && t->space && !t->space->dead)
		frame_pop(b, t);
	t->depth = 0;
}
