/* Code mappings: which object is loaded where, so that the host can turn
 * addresses into names.  Written when an image's first ring opens and again
 * after every dlopen; after a dlclose, the segments that went are told, so
 * that an object loaded later at the same addresses is not taken for it. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

#define MAP_RECORD_MAX 1024
/* Executable segments followed for their unmapping; past this many, more
 * are told (MAP) but their end is not. */
#define MAPS_KNOWN_MAX 1024

/* The executable segments told to the trace and still mapped, as far as
 * the last look went.  Static: a forked child inherits it with the
 * mappings it describes. */
struct maps_known {
	uintptr_t start[MAPS_KNOWN_MAX], end[MAPS_KNOWN_MAX];
	uint8_t seen[MAPS_KNOWN_MAX];
	uint32_t n;
};

static struct maps_known maps_known;
/* The pid of the thread group using maps_known, 0 when none: taken over
 * by a forked child that copied it while its parent held it. */
static _Atomic pid_t maps_owner;

enum maps_pass {
	MAPS_MARK,  /* mark the known segments still mapped */
	MAPS_WRITE, /* write a MAP per segment; follow the new ones */
};

struct maps_walk {
	struct lp_thread *t;
	bool first;
	enum maps_pass pass;
};

/* Not on any hot path: dlopen, dlclose and the first ring of an image. */
static LP_NOINSTR void maps_lock(void)
{
	pid_t self = getpid(), held = 0;

	while (!atomic_compare_exchange_weak_explicit(&maps_owner, &held, self, memory_order_acquire,
	                                              memory_order_relaxed)) {
		/* only this process's threads take it under its own pid: any
		 * other holder is the parent, in the copy fork made */
		if (held != self && held != 0 &&
		    atomic_compare_exchange_strong_explicit(&maps_owner, &held, self, memory_order_acquire,
		                                            memory_order_relaxed))
			return;
		held = 0;
		sched_yield();
	}
}

static LP_NOINSTR void maps_unlock(void)
{
	atomic_store_explicit(&maps_owner, 0, memory_order_release);
}

static LP_NOINSTR int32_t known_find(uintptr_t start, uintptr_t end)
{
	uint32_t i;

	for (i = 0; i < maps_known.n; i++)
		if (maps_known.start[i] == start && maps_known.end[i] == end)
			return (int32_t)i;
	return -1;
}

static LP_NOINSTR size_t find_build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			size_t name_sz = (n->n_namesz + 3) & ~(size_t)3;
			size_t desc_sz = (n->n_descsz + 3) & ~(size_t)3;
			const char *name = p + sizeof(*n);

			if (name + name_sz + desc_sz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    n->n_descsz <= 64) {
				*id = (const uint8_t *)(name + name_sz);
				return n->n_descsz;
			}
			p = name + name_sz + desc_sz;
		}
	}
	return 0;
}

static LP_NOINSTR int walk_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct maps_walk *w = arg;
	unsigned char buf[MAP_RECORD_MAX];
	const char *path = info->dlpi_name;
	const uint8_t *id = NULL;
	size_t id_len, path_len;
	int i;

	(void)size;
	if (w->first && (!path || !*path))
		path = lp_proc.exe;
	w->first = false;
	if (!path || !*path || !strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
		return 0;
	id_len = find_build_id(info, &id);
	path_len = strnlen(path, MAP_RECORD_MAX - sizeof(struct lp_ext_map) - 64);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		struct lp_ext_map m;
		int32_t k;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		k = known_find(start, start + ph->p_memsz);
		if (w->pass == MAPS_MARK) {
			if (k >= 0)
				maps_known.seen[k] = 1;
			continue;
		}
		if (k < 0 && maps_known.n < MAPS_KNOWN_MAX) {
			maps_known.start[maps_known.n] = start;
			maps_known.end[maps_known.n] = start + ph->p_memsz;
			maps_known.n++;
		}
		m.base = info->dlpi_addr;
		m.start = info->dlpi_addr + ph->p_vaddr;
		m.end = m.start + ph->p_memsz;
		m.offset = ph->p_offset;
		m.build_id_len = (uint16_t)id_len;
		m.path_len = (uint16_t)path_len;
		m.reserved = 0;
		memcpy(buf, &m, sizeof(m));
		if (id_len)
			memcpy(buf + sizeof(m), id, id_len);
		memcpy(buf + sizeof(m) + id_len, path, path_len);
		lp_ring_put_ext(w->t, LP_EXT_MAP, buf, sizeof(m) + id_len + path_len);
	}
	return 0;
}

/* Tells the segments followed so far that are no longer mapped (one
 * UNMAP each, before any MAP of what may now lie there), and forgets them. */
static LP_NOINSTR void maps_write_unmapped(struct lp_thread *t)
{
	struct maps_walk w = { .t = t, .first = true, .pass = MAPS_MARK };
	uint32_t i = 0;

	memset(maps_known.seen, 0, maps_known.n);
	dl_iterate_phdr(walk_object, &w);
	while (i < maps_known.n) {
		struct lp_ext_unmap u;

		if (maps_known.seen[i]) {
			i++;
			continue;
		}
		u.start = maps_known.start[i];
		u.end = maps_known.end[i];
		lp_ring_put_ext(t, LP_EXT_UNMAP, &u, sizeof(u));
		maps_known.n--;
		maps_known.start[i] = maps_known.start[maps_known.n];
		maps_known.end[i] = maps_known.end[maps_known.n];
		maps_known.seen[i] = maps_known.seen[maps_known.n];
	}
}

LP_NOINSTR void lp_maps_write(struct lp_thread *t)
{
	struct maps_walk w = { .t = t, .first = true, .pass = MAPS_WRITE };

	if (!lp_proc.exe[0]) {
		ssize_t n = readlink("/proc/self/exe", lp_proc.exe, sizeof(lp_proc.exe) - 1);

		lp_proc.exe[n > 0 ? n : 0] = '\0';
	}
	t->busy = 1; /* before the lock: a signal handler's dlopen on this thread stays out */
	maps_lock();
	maps_write_unmapped(t);
	dl_iterate_phdr(walk_object, &w);
	maps_unlock();
	t->busy = 0;
}

/* dlopen is wrapped so that a newly loaded object's mapping reaches the
 * trace before its functions run. */
LP_EXPORT LP_NOINSTR void *dlopen(const char *file, int mode)
{
	static void *(*real_dlopen)(const char *, int);
	struct lp_thread *t = &lp_self;
	void *handle;

	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	if (!real_dlopen)
		return NULL;
	handle = real_dlopen(file, mode);
	if (handle && t->state == LP_THREAD_READY && !t->busy)
		lp_maps_write(t);
	/* its functions the plans name, before any of them runs */
	if (handle)
		lp_dynpatch_scan();
	return handle;
}

/* dlclose is wrapped so that the segments it unmapped are told when it
 * returns: calls made later at those addresses belong to whatever is
 * mapped there next.  A thread without a ring yet tells nothing here; the
 * next lp_maps_write (the next dlopen) tells it, before its MAPs. */
LP_EXPORT LP_NOINSTR int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	struct lp_thread *t = &lp_self;
	int r;

	if (!real_dlclose)
		real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	if (!real_dlclose)
		return -1;
	r = real_dlclose(handle);
	if (r == 0)
		lp_dynpatch_scan();
	if (r == 0 && t->state == LP_THREAD_READY && !t->busy) {
		t->busy = 1;
		maps_lock();
		maps_write_unmapped(t);
		maps_unlock();
		t->busy = 0;
	}
	return r;
}
