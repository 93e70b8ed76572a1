/* Turns a runtime function address of a traced process image into a
 * function name, module and source line, from the code mappings in the trace.
 *
 * Not thread-safe: one thread at a time per symbolizer. */
#ifndef LP_SYMBOLIZER_H
#define LP_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

enum symbolizer_flags {
	SYMBOLIZER_DEMANGLE = 1u << 0, /* C++ names as source spells them */
	SYMBOLIZER_LINES = 1u << 1,    /* source file:line from DWARF */
};

/* Longest path and build id symbolizer_add_map() accepts. */
#define SYMBOLIZER_PATH_MAX 4096u
#define SYMBOLIZER_BUILD_ID_MAX 64u

/* Directory searched for separate debug files as <dir>/.build-id/xx/rest.debug
 * when an object is stripped or its file on disk is not the traced one. */
#define SYMBOLIZER_DEBUG_DIR "/usr/lib/debug"

/* Returns a new symbolizer with no maps, or NULL when memory runs out.
 * The caller frees it with symbolizer_free(). */
struct symbolizer *symbolizer_new(unsigned flags);

/* Frees s, closes every object file it opened (with SYMBOLIZER_LINES, one
 * descriptor stays open per object file with DWARF until here) and frees
 * every string it handed out. Accepts NULL. */
void symbolizer_free(struct symbolizer *s);

/* Sets the separate debug directory (copied; NULL: look for none). The
 * default is SYMBOLIZER_DEBUG_DIR. Applies to object files first used after
 * the call. Returns 0 or -ENOMEM. */
int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir);

/* Records that image `image` runs ELF object `path` (path_len bytes, no NUL
 * needed; may be empty) with load bias `base`, an executable segment
 * [start, end) read from file offset `offset`, and the given GNU build id
 * (may be empty: then any file at path is trusted). Copies everything it
 * needs; build_id and path need not stay valid. A map already known for the
 * image is ignored, so maps may be sent again (e.g. after dlopen). Object
 * files are opened on first lookup and shared by every image that maps the
 * same (path, build id). Addresses are translated with base alone (ELF
 * address = addr - base); offset only tells maps apart. When maps of an
 * image overlap, the one starting highest wins, and of equal starts the
 * one added last; a map unmapped (symbolizer_end_map) is sent again when
 * the object is mapped again, and then counts as new.
 * Returns 0, -EINVAL (end <= start, a NUL inside path, lengths above the
 * maxima), -ENOSPC (too many maps, images or objects) or -ENOMEM. */
int symbolizer_add_map(struct symbolizer *s, uint32_t image, uint64_t base, uint64_t start, uint64_t end,
                       uint64_t offset, const uint8_t *build_id, size_t build_id_len, const char *path,
                       size_t path_len);

/* Code addresses.  After an object is unmapped (dlclose), another may be
 * mapped at the same addresses; an address taken at a time (an event's)
 * names the object mapped then.  symbolizer_code_addr gives it as a code
 * address: the address, with a tag in bits 56-62 that tells the objects at
 * those addresses apart (0 for the first, and always 0 in an image where
 * nothing was unmapped), so that consumers keep them apart by address as
 * before; the lookups below take code addresses and plain ones alike.
 * Bit 63 stays clear (host/lib/analysis/calltree.h keys its leaves, system
 * calls and kernel events, with it). */
#define SYMBOLIZER_TAG_SHIFT 56
#define SYMBOLIZER_TAG_MAX 127u
#define SYMBOLIZER_ADDR(code) ((code) >> 63 ? (code) : (code) & ((UINT64_C(1) << SYMBOLIZER_TAG_SHIFT) - 1))
#define SYMBOLIZER_TAG(code) ((code) >> 63 ? 0u : (unsigned)((code) >> SYMBOLIZER_TAG_SHIFT))

/* The executable segment [start, end) of image, given before by
 * symbolizer_add_map with this start and end, is unmapped from time ns on.
 * Returns the number of maps it ended (0 when none matched). */
int symbolizer_end_map(struct symbolizer *s, uint32_t image, uint64_t start, uint64_t end, uint64_t ns);

/* The code address of addr in image at time ns: addr itself unless an
 * object was unmapped in image; then the tag of the map covering addr at
 * ns (of several, the first unmapped after ns), or, when every map that
 * covered addr was unmapped before ns, a tag for code whose map has not
 * arrived yet.  An address with a tag already is returned as it is. */
uint64_t symbolizer_code_addr(struct symbolizer *s, uint32_t image, uint64_t addr, uint64_t ns);

/* symbolizer_add_map for a map told at time ns: one that is the same as a
 * map unmapped after ns is that map told again (a trace read twice), not
 * a new one.  symbolizer_add_map takes every such map for a new one. */
int symbolizer_add_map_at(struct symbolizer *s, uint32_t image, uint64_t ns, uint64_t base, uint64_t start,
                          uint64_t end, uint64_t offset, const uint8_t *build_id, size_t build_id_len, const char *path,
                          size_t path_len);

struct symbol {
	const char *name;   /* demangled when SYMBOLIZER_DEMANGLE, else raw; NULL when unknown */
	uint64_t offset;    /* addr - symbol start */
	const char *module; /* path of the object ("" when the trace had none),
	                     * NULL when no map covers addr */
	const char *file;   /* source file from DWARF, NULL when unknown or !SYMBOLIZER_LINES */
	unsigned line;      /* 0 when unknown */
};

/* Fills *out for runtime address (or code address) addr of image: a code
 * address is named from the map of its tag. All strings are owned by s
 * and stay valid until symbolizer_free(). Answers are cached (a bounded
 * cache that starts over when full): looking the same (image, addr) up
 * again costs one hash probe. Never crashes on object files that are
 * missing, stripped, truncated or garbage: they just give no name.
 * Returns 0 when a name was found, -ENOENT otherwise (out->module and
 * out->file may still be set), -ENOMEM when memory ran out (out cleared). */
int symbolizer_lookup(struct symbolizer *s, uint32_t image, uint64_t addr, struct symbol *out);

/* The object that holds runtime address (or code address) addr of image
 * and where addr lies in it: *module gets the object's path as the trace
 * names it ("" when the trace had none; owned by s, valid until
 * symbolizer_free), *elf_addr the ELF address (addr less the load bias of
 * the covering map: what the object's own symbols and code use).  Cached
 * with symbolizer_lookup's answers, and it opens the object file as that
 * does.  Returns 0; -ENOENT when no map covers addr (*module NULL,
 * *elf_addr the plain address); -ENOMEM (*module NULL). */
int symbolizer_elf_addr(struct symbolizer *s, uint32_t image, uint64_t addr, const char **module, uint64_t *elf_addr);

/* Names a variable of the program's or its libraries' own data (a global
 * or static lock, or a member of one) at runtime address addr of image, at
 * time ns: the data symbol (elfsym_find_data) covering addr less the load
 * bias of an object the image had mapped at ns (a map not unmapped by
 * then; of several that hold addr, the one told last).  Writes "name" or
 * "name+0x<offset>" into buf (demangled with SYMBOLIZER_DEMANGLE, cut to
 * size, NUL-terminated when size > 0) and returns true; returns false
 * when no object of the image has a data symbol there (the heap, a stack,
 * code, a gap between symbols, a stripped object), for an unknown image,
 * when size is 0, or when memory ran out.  The maps tell only executable
 * segments, but every object is mapped at one load bias, so its data lies
 * at that bias too.  Opens the object files of the image it has not opened
 * yet.  Costs a symbol search per map of the image: meant for naming
 * objects once each, not per event; not cached. */
bool symbolizer_data_name(struct symbolizer *s, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size);

/* Calls cb for every function symbol of the objects mapped into image (not
 * unmapped since) whose
 * runtime address (ELF address + load bias) lies in one of the image's
 * maps of that object: its name (demangled with SYMBOLIZER_DEMANGLE; owned
 * by s, valid until symbolizer_free), runtime address and size (0 when
 * unknown).  Opens the object files it has not opened yet.  Stops at the
 * first nonzero return of cb and returns it; else 0, -ENOENT for an image
 * with no maps, or -ENOMEM. */
int symbolizer_foreach_function(struct symbolizer *s, uint32_t image,
                                int (*cb)(void *ctx, const char *name, uint64_t addr, uint64_t size), void *ctx);

/* How many maps symbolizer_add_map has taken (repeats not counted): when
 * it changes, code has become known that was not before. */
uint64_t symbolizer_map_count(const struct symbolizer *s);

/* Whether module (a path, or NULL) is one of the system libraries calls
 * pass through between the program and the kernel or the allocator: the C
 * library and its parts (libpthread, libdl, librt), the loader, the C++
 * and unwinding runtimes, the vDSO and layerprof's own runtime.  The
 * syscall and heap call sites skip their frames. */
bool symbolizer_system_module(const char *module);

/* Formats addr for display into buf (always NUL-terminated when size > 0,
 * cut to size): "name", "name+0x<off>" inside a function, else
 * "<module basename>+0x<elf address>" (what addr2line -e <module> wants),
 * else "0x<addr>". Returns buf. */
const char *symbolizer_format(struct symbolizer *s, uint32_t image, uint64_t addr, char *buf, size_t size);

#endif
