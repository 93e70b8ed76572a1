/* Code mappings: which object is loaded where, so that the host can turn
 * addresses into names.  Written when an image's first ring opens and again
 * after every dlopen. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

#define MAP_RECORD_MAX 1024

struct maps_walk {
	struct lp_thread *t;
	bool first;
};

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

	if (w->first && (!path || !*path))
		path = lp_proc.exe;
	w->first = false;
	if (!path || !*path || !strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
		return 0;
	id_len = find_build_id(info, &id);
	path_len = strnlen(path, MAP_RECORD_MAX - sizeof(struct lp_ext_map) - 64);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct lp_ext_map m;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
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

LP_NOINSTR void lp_maps_write(struct lp_thread *t)
{
	struct maps_walk w = { .t = t, .first = true };

	if (!lp_proc.exe[0]) {
		ssize_t n = readlink("/proc/self/exe", lp_proc.exe, sizeof(lp_proc.exe) - 1);

		lp_proc.exe[n > 0 ? n : 0] = '\0';
	}
	t->busy = 1;
	dl_iterate_phdr(walk_object, &w);
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
	return handle;
}
