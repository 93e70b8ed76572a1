/* What building one object's call graph shares between its steps: the
 * ELF file's facts (cgelf.c, through libelf), the decoded branches
 * (cgscan.c, through capstone) and the graph made of them (cgraph.c). */
#ifndef LP_CGRAPH_IMPL_H
#define LP_CGRAPH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/callgraph/cgraph.h"

/* Longest file cg_object_open reads. */
#define CG_FILE_MAX (1ull << 31)

/* What an object keeps beyond its public fields (cg_object.impl). */
struct cg_block {
	struct cg_block *next;
	size_t used, cap;
	char bytes[];
};

/* A function another object may call: a defined dynamic symbol. */
struct cg_export {
	uint64_t addr;
	const char *name; /* in libelf's memory */
	uint32_t func;    /* index in funcs once they are made */
};

struct cg_priv {
	void *elf;                 /* libelf's handle on image: names point into it */
	struct cg_export *exports; /* sorted by name, each a function */
	uint32_t nexports;
	const char *runpath;  /* DT_RUNPATH, else DT_RPATH; NULL when none */
	struct elfsyms *syms; /* common/elfsyms.c's lists: function names point into them */
	uint8_t *image;       /* the file, owned */
	size_t len;
	struct cg_block *blocks; /* strings made while building */
};

/* A stretch of the file mapped at an address: an executable section, or
 * a data section scanned for function addresses. */
struct cg_region {
	uint64_t addr, size;
	const uint8_t *data; /* size bytes, in the object's image */
	bool plt;            /* .plt, .plt.sec, .plt.got: stubs, not functions */
	bool exec;
	bool pointers; /* data that may hold code addresses: contents,
	                * init/fini arrays, the GOT (not symbol or relocation
	                * tables, strings, hashes, unwind tables) */
};

/* ARM and aarch64 mapping symbols: where code of one kind, or data,
 * starts inside an executable section. */
enum cg_mapkind { CG_MAP_ARM = 'a', CG_MAP_THUMB = 't', CG_MAP_DATA = 'd', CG_MAP_A64 = 'x' };

struct cg_mapsym {
	uint64_t addr;
	char kind; /* enum cg_mapkind */
};

/* A GOT slot with a symbol bound to it (JUMP_SLOT, GLOB_DAT), or one the
 * loader fills with an address of this object (RELATIVE: value). */
struct cg_slot {
	uint64_t addr;
	const char *name; /* NULL for a RELATIVE slot */
	uint64_t value;
	bool has_value;
};

/* A function start found while building: a symbol, a PLT stub, or an
 * address a call reaches that no symbol names. */
struct cg_cand {
	uint64_t addr, size; /* size 0: up to the next start */
	const char *name;
	const char *import;
	uint8_t kind;
	uint8_t bind; /* enum elfsyms_bind of a symbol */
	uint16_t flags;
};

/* A branch the scan found, before functions are known. */
enum cg_rec_kind {
	CG_REC_CALL,     /* call to target */
	CG_REC_JUMP,     /* jump to target (maybe a tail call) */
	CG_REC_ICALL,    /* call through a register or memory */
	CG_REC_IJUMP,    /* jump through a register or memory that is no
	                  * jump table: an indirect tail call */
	CG_REC_SLOTCALL, /* call through the GOT slot at target */
	CG_REC_SLOTJUMP, /* jump through the GOT slot at target */
};

struct cg_rec {
	uint64_t site, target;
	uint8_t kind;
};

/* Growable arrays of the build, each bounded. */
struct cg_build {
	struct cg_object *o;
	const uint8_t *image;
	size_t len;
	bool rela; /* the machine's dynamic relocations carry addends (not arm) */

	struct cg_region *regions;
	uint32_t nregions, regions_cap;
	struct cg_mapsym *maps; /* sorted by address */
	uint32_t nmaps, maps_cap;
	struct cg_slot *slots; /* sorted by address */
	uint32_t nslots, slots_cap;
	uint64_t *refs; /* addresses code or data holds (maybe functions') */
	uint32_t nrefs, refs_cap;
	uint64_t *roots; /* init/fini arrays, DT_INIT, DT_FINI */
	uint32_t nroots, roots_cap;
	uint64_t init_addr, fini_addr; /* DT_INIT, DT_FINI */
	bool entry_thumb;              /* arm: the entry point is Thumb code */
	/* function starts the unwind tables give (.eh_frame_hdr's search
	 * table, .ARM.exidx): a stripped object's functions */
	uint64_t *unwind;
	uint32_t nunwind, unwind_cap;
	struct cg_export *exported; /* defined dynamic function symbols, by address */
	uint32_t nexported, exported_cap;
	struct cg_cand *zsyms; /* function symbols of size 0 (.symtab, else .dynsym) */
	uint32_t nzsyms, zsyms_cap;
	struct cg_cand *cands;
	uint32_t ncands, cands_cap;
	struct cg_rec *recs;
	uint32_t nrecs, recs_cap;
	uint64_t main_addr;  /* found from the entry point, 0 when not */
	const char *runpath; /* DT_RUNPATH, else DT_RPATH; in the image */

	struct cg_priv *priv; /* o->impl */

	char *err;
	size_t errlen;
};

/* Appends one element of size bytes to *arr (n of cap), growing it up to
 * max elements.  Returns a pointer to the new element (zeroed) or NULL
 * (-ENOMEM or past max: *rc says which). */
void *cg_grow(void *arr_p, uint32_t *n, uint32_t *cap, size_t size, uint32_t max, int *rc);

/* In an array of n elements of stride bytes sorted by the uint64_t at
 * offset off of each, the first whose key is at least key (n when none).
 * Every sorted-by-address lookup of the build goes through it. */
uint32_t cg_bound(const void *base, uint32_t n, size_t stride, size_t off, uint64_t key);
#define CG_BOUND(arr, n, type, field, key) cg_bound((arr), (n), sizeof(type), offsetof(type, field), (key))

/* A copy of s in the object's string blocks (freed with it); NULL when
 * memory runs out. */
const char *cg_strdup(struct cg_build *b, const char *s);

/* cgelf.c: reads sections, dynamic symbols, relocations, the dynamic
 * section and mapping symbols into b.  Returns 0 or -errno with b->err. */
int cg_elf_read(struct cg_build *b);

/* The value of a word at ELF address addr (4 or 8 bytes by the object's
 * class) if a region with file data holds it. */
bool cg_elf_word(const struct cg_build *b, uint64_t addr, unsigned width, uint64_t *value);

/* The region holding addr, or NULL. */
const struct cg_region *cg_region_at(const struct cg_build *b, uint64_t addr);

/* The slot at addr, or NULL. */
const struct cg_slot *cg_slot_at(const struct cg_build *b, uint64_t addr);

/* cgraph.c: builds o's graph from its image (o->impl), reading the
 * function symbols through elfsyms_path (a path to the same bytes).
 * Returns 0 or -errno with one line in err. */
int cg_object_build(struct cg_object *o, const char *elfsyms_path, char *err, size_t errlen);

/* The exported function of o named name, CG_NONE when none. */
uint32_t cg_object_export(const struct cg_object *o, const char *name);

/* The object's DT_RUNPATH (else DT_RPATH), NULL when none. */
const char *cg_object_runpath(const struct cg_object *o);

/* cgscan.c: decodes every executable region (PLT stubs aside) and
 * records calls, jumps and address references; finds main from the entry
 * point.  Returns 0 or -errno with b->err. */
int cg_scan(struct cg_build *b);

/* The mapping symbol in force at addr (0 when none). */
char cg_map_at(const struct cg_build *b, uint64_t addr);

#endif
