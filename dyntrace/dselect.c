/* The dynamic tracer's shared choices (see dselect.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dyntrace/dselect.h"

/* crt1.o, crti.o, crtbegin.o: tracing them would put main under _start,
 * and _start never returns. */
static const char *const crt_names[] = { "_start",
	                                 "_init",
	                                 "_fini",
	                                 "deregister_tm_clones",
	                                 "register_tm_clones",
	                                 "__do_global_dtors_aux",
	                                 "frame_dummy",
	                                 "__libc_csu_init",
	                                 "__libc_csu_fini",
	                                 "_dl_relocate_static_pie",
	                                 "__x86.get_pc_thunk.bx" };

bool dsel_is_crt(const char *name)
{
	for (size_t i = 0; i < sizeof(crt_names) / sizeof(crt_names[0]); i++)
		if (!strcmp(name, crt_names[i]))
			return true;
	return false;
}

bool dsel_is_part(const char *name)
{
	const char *c = strstr(name, ".cold");

	/* NAME.cold or NAME.cold.N: the unlikely paths GCC moved out of
	 * NAME, reached by a jump, never called */
	if (!c)
		return false;
	c += 5;
	if (*c == '.')
		c++;
	while (*c >= '0' && *c <= '9')
		c++;
	return !*c;
}

bool dsel_chosen(const struct uprobes_config *cfg, const char *name)
{
	if (!cfg->npatterns)
		return true;
	for (uint32_t i = 0; i < cfg->npatterns; i++)
		if (!fnmatch(cfg->patterns[i], name, 0))
			return true;
	return false;
}

/* A return address replaced with a trampoline (the kernel's for a return
 * probe, the runtime's for a patched function) is one the unwinder cannot
 * step through: an exception that passes the frame would end the program
 * (std::terminate, or a crash). */
static const char *const unwind_names[] = {
	"__cxa_throw", "_Unwind_RaiseException", "_Unwind_Resume", "__gxx_personality_v0", "__cxa_rethrow",
};

const char *dsel_unwinds(const struct elfsyms *es)
{
	for (size_t k = 0; k < sizeof(unwind_names) / sizeof(unwind_names[0]); k++) {
		for (size_t i = 0; i < es->nplt; i++)
			if (!strcmp(es->plt[i].name, unwind_names[k]))
				return unwind_names[k];
		for (size_t i = 0; i < es->nfn; i++)
			if (!strcmp(es->fn[i].name, unwind_names[k]))
				return unwind_names[k];
	}
	return NULL;
}

/* One program header, either class, as the fields used here. */
static int phdr_read(int fd, uint8_t elf_class, uint64_t phoff, unsigned i, uint32_t *type, uint32_t *flags,
                     struct dseg *s)
{
	if (elf_class == ELFCLASS64) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return -ENOEXEC;
		*type = ph.p_type;
		*flags = ph.p_flags;
		s->vaddr = ph.p_vaddr;
		s->offset = ph.p_offset;
		s->filesz = ph.p_filesz;
	} else {
		Elf32_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return -ENOEXEC;
		*type = ph.p_type;
		*flags = ph.p_flags;
		s->vaddr = ph.p_vaddr;
		s->offset = ph.p_offset;
		s->filesz = ph.p_filesz;
	}
	return 0;
}

int dsel_segments(const char *path, uint8_t elf_class, struct dseg *seg, unsigned *nseg, bool *interp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	uint64_t phoff = 0;
	unsigned phnum = 0;
	int r = 0;

	*nseg = 0;
	if (interp)
		*interp = false;
	if (fd < 0)
		return -errno;
	if (elf_class == ELFCLASS64) {
		Elf64_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phentsize != sizeof(Elf64_Phdr))
			r = -ENOEXEC;
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
	} else {
		Elf32_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phentsize != sizeof(Elf32_Phdr))
			r = -ENOEXEC;
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
	}
	for (unsigned i = 0; !r && i < phnum; i++) {
		uint32_t type, flags;
		struct dseg s;

		r = phdr_read(fd, elf_class, phoff, i, &type, &flags, &s);
		if (r)
			break;
		if (type == PT_INTERP && interp)
			*interp = true;
		if (type == PT_LOAD && (flags & PF_X) && *nseg < DSEG_MAX)
			seg[(*nseg)++] = s;
	}
	close(fd);
	return r;
}

/* File offsets of the functions: through the executable PT_LOAD segment
 * that holds each (UINT64_MAX: none). */
static int file_offsets(struct dsel_funcs *s, const char *path, char *err, size_t errlen)
{
	struct dseg seg[DSEG_MAX];
	unsigned nseg = 0;
	int r = dsel_segments(path, s->es->elf_class, seg, &nseg, NULL);

	if (r) {
		snprintf(err, errlen, "'%s': cannot read its program headers", path);
		return r;
	}
	for (uint32_t i = 0; i < s->nfn; i++) {
		uint64_t a = s->fn[i].addr; /* never Thumb (odd): those are skipped */

		s->fn[i].offset = UINT64_MAX;
		for (unsigned k = 0; k < nseg; k++)
			if (a >= seg[k].vaddr && a - seg[k].vaddr < seg[k].filesz)
				s->fn[i].offset = a - seg[k].vaddr + seg[k].offset;
	}
	return 0;
}

static void skip_fn(struct dsel_funcs *s, const char *name, const char *why)
{
	s->skipped[s->nskipped].name = name;
	s->skipped[s->nskipped++].why = why;
}

int dsel_functions(struct dsel_funcs *s, const char *path, const struct uprobes_config *cfg, const char *thumb_why,
                   char *err, size_t errlen)
{
	const struct elfsyms *es = s->es;
	uint32_t kept = 0;
	int r;

	s->fn = calloc(es->nfn ? es->nfn : 1, sizeof(*s->fn));
	s->skipped = calloc(es->nfn ? es->nfn : 1, sizeof(*s->skipped));
	if (!s->fn || !s->skipped) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < es->nfn; i++) {
		const struct elfsyms_fn *f = &es->fn[i];

		if (!dsel_chosen(cfg, f->name) || dsel_is_crt(f->name) || dsel_is_part(f->name))
			continue;
		s->candidates++;
		if (f->flags & ELFSYMS_FN_IFUNC) {
			skip_fn(s, f->name, "an IFUNC resolver (it runs in the loader)");
			continue;
		}
		if (f->flags & ELFSYMS_FN_THUMB) {
			skip_fn(s, f->name, thumb_why);
			continue;
		}
		s->fn[s->nfn].addr = f->addr;
		s->fn[s->nfn++].name = f->name;
	}
	if (!s->nfn && s->nskipped) {
		snprintf(err, errlen, "'%.512s': none of its %u functions can be probed (%s: %s)%s", path,
		         s->candidates, s->skipped[0].name, s->skipped[0].why,
		         es->machine == EM_ARM ? "; build it with -marm" : "");
		return -ENOTSUP;
	}
	if (!s->nfn) {
		snprintf(err, errlen, "'%s': %s", path,
		         cfg->npatterns ? "no function of the program matches --dynamic's patterns"
		                        : "no function symbols (neither .symtab nor .dynsym has any)");
		return -ENOENT;
	}
	r = file_offsets(s, path, err, errlen);
	for (uint32_t i = 0; !r && i < s->nfn; i++) {
		if (s->fn[i].offset != UINT64_MAX)
			s->fn[kept++] = s->fn[i];
		else
			skip_fn(s, s->fn[i].name, "not in an executable segment");
	}
	if (!r)
		s->nfn = kept;
	return r;
}

void dsel_release(struct dsel_funcs *s)
{
	if (!s)
		return;
	free(s->fn);
	free(s->skipped);
	elfsyms_free(s->es);
	memset(s, 0, sizeof(*s));
}
