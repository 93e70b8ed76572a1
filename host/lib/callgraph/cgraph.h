/* The static call graph of ELF objects, read from the files alone: their
 * functions, the direct calls and tail calls between them, calls through
 * the PLT (or a GOT slot) to functions of other objects, indirect call
 * sites, and which functions no root reaches.  x86-64, aarch64 and 32-bit
 * ARM/Thumb objects are read on any host (elfutils' libelf for the file,
 * capstone for the code). */
#ifndef LP_CGRAPH_H
#define LP_CGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No function, no object: an index that is not one. */
#define CG_NONE UINT32_MAX

/* Bounds on what one object may hold; a file past them is refused
 * (-E2BIG) rather than read without limit. */
#define CG_FUNCS_MAX (4u << 20)
#define CG_EDGES_MAX (32u << 20)

enum cg_machine {
	CG_MACHINE_X86_64 = 1,
	CG_MACHINE_AARCH64,
	CG_MACHINE_ARM, /* ARM and Thumb code, 32-bit */
};

enum cg_func_kind {
	CG_FUNC_SYMBOL,  /* a function symbol (.symtab, else .dynsym) */
	CG_FUNC_UNNAMED, /* no symbol covers it: the entry point or a call's
	                  * target in a stripped object; named "sub_<hex>" */
	CG_FUNC_IMPORT,  /* a PLT entry or a GOT slot called through: a
	                  * function of another object, named "NAME@plt"
	                  * ("NAME@got" for a slot with no PLT entry) */
};

/* How a function is reached from the object's roots. */
enum cg_reach {
	CG_REACH_ROOT,    /* a root: the entry point, main, an init/fini array
	                   * entry, or (shared object) an exported function */
	CG_REACH_DIRECT,  /* reached from a root by direct and tail calls */
	CG_REACH_ADDRESS, /* not reached so, but its address is taken (code or
	                   * data refers to its start): it may run through a
	                   * pointer, or be reached only from such a function */
	CG_REACH_NONE,    /* unreachable: no root reaches it, its address is
	                   * never taken */
};

enum cg_func_flags {
	CG_FUNC_THUMB = 1u << 0,         /* Thumb code (32-bit ARM) */
	CG_FUNC_ADDRESS_TAKEN = 1u << 1, /* code or data holds its address */
	CG_FUNC_CRT = 1u << 2,           /* the C runtime's start-up code
	                                  * (crt1.o, crti.o, crtbegin.o: _start,
	                                  * _init, frame_dummy, ...) */
	CG_FUNC_PART = 1u << 3,          /* NAME.cold[.N]: a part of NAME
	                                  * reached by jumps, never called */
	CG_FUNC_EXPORTED = 1u << 4,      /* defined in .dynsym */
	CG_FUNC_IFUNC = 1u << 5,         /* an IFUNC: the symbol is its resolver */
	CG_FUNC_ENTRY = 1u << 6,         /* holds the ELF entry point */
	CG_FUNC_MAIN = 1u << 7,          /* main (by name, or found from the
	                                  * entry point in a stripped program) */
	CG_FUNC_INIT = 1u << 8,          /* in .init_array/.preinit_array/
	                                  * .fini_array, or .init/.fini itself */
};

struct cg_func {
	const char *name;   /* raw (mangled) symbol name, "NAME@plt",
	                     * "NAME@got" or "sub_<hex>"; owned by the object */
	const char *import; /* CG_FUNC_IMPORT: the symbol it calls ("puts");
	                     * else NULL */
	uint64_t addr;      /* ELF address, without the Thumb bit */
	uint64_t size;      /* bytes; a symbol of size 0 reaches to the next
	                     * function or its section's end */
	uint8_t kind;       /* enum cg_func_kind */
	uint8_t reach;      /* enum cg_reach */
	uint16_t flags;     /* enum cg_func_flags */
	uint32_t edges;     /* its calls are o->edges[edges, edges + nedges), */
	uint32_t nedges;    /* in the order of their sites */
	/* an import linked by cg_set_link: the object (index in the set) and
	 * function that define it; CG_NONE when unlinked or undefined */
	uint32_t link_obj, link_func;
};

enum cg_edge_kind {
	CG_EDGE_CALL,     /* a call instruction to a known target */
	CG_EDGE_TAIL,     /* a jump (or conditional jump) to another
	                   * function's start: a tail call */
	CG_EDGE_INDIRECT, /* a call (or a jump that is no jump table: a tail
	                   * call) through a register or memory whose target
	                   * is not known statically */
};

struct cg_edge {
	uint64_t site;   /* ELF address of the call or jump instruction */
	uint32_t caller; /* index in o->funcs */
	uint32_t callee; /* index in o->funcs; CG_NONE for CG_EDGE_INDIRECT */
	uint8_t kind;    /* enum cg_edge_kind */
};

/* One object file read whole.  Everything it points to is owned by it and
 * lives until cg_object_free. */
struct cg_object {
	const char *path;   /* as given to cg_object_open */
	const char *soname; /* DT_SONAME, NULL when none */
	uint8_t machine;    /* enum cg_machine */
	bool is64;
	bool shared;   /* a shared library (ET_DYN that is not a PIE program) */
	bool pie;      /* a position-independent program */
	bool stripped; /* no .symtab: names come from .dynsym */
	uint64_t entry;
	/* the functions, sorted by address (imports among them, at their PLT
	 * entry or, "NAME@got", at their GOT slot's address), and the calls */
	struct cg_func *funcs;
	uint32_t nfuncs;
	struct cg_edge *edges; /* grouped by caller (cg_func.edges), each
	                        * caller's by site */
	uint32_t nedges;
	const char **needed; /* DT_NEEDED, in order */
	uint32_t nneeded;
	uint32_t main;        /* index of main, CG_NONE when not found */
	uint32_t unnamed;     /* functions found with no symbol */
	uint32_t undecodable; /* instructions capstone could not decode (each
	                       * skipped by the machine's smallest step) */
	uint64_t code_bytes;  /* bytes of the executable sections */
	void *impl;           /* private: the file's image and what reads it */
};

/* Reads the ELF object at path and builds its graph.  Returns 0 and sets
 * *out (free it with cg_object_free), or a negative errno with one line in
 * err: -ENOENT and the other open(2) errors, -ENOEXEC not an ELF file (or
 * not an executable or shared object), -EBADMSG truncated or corrupt,
 * -EPROTONOSUPPORT a machine this reader does not know, -E2BIG past the
 * bounds above, -ENOMEM.  Never crashes on any input. */
int cg_object_open(const char *path, struct cg_object **out, char *err, size_t errlen);

/* The same for an image already in memory (len bytes, borrowed for the
 * call only); path names it in messages and in o->path. */
int cg_object_read(const void *image, size_t len, const char *path, struct cg_object **out, char *err, size_t errlen);

/* Frees o and everything it owns.  Accepts NULL. */
void cg_object_free(struct cg_object *o);

/* The function whose [addr, addr + size) holds ELF address addr (a Thumb
 * address may carry bit 0), CG_NONE when none.  O(log n). */
uint32_t cg_object_find(const struct cg_object *o, uint64_t addr);

/* The first function (by address) named name, CG_NONE when none. O(n). */
uint32_t cg_object_lookup(const struct cg_object *o, const char *name);

/* The name of a machine ("x86-64", "aarch64", "arm"). */
const char *cg_machine_name(unsigned machine);

/* A set of objects: a program and the shared libraries it needs, so that
 * imports can be linked to their definitions as the dynamic linker
 * would (the first object in load order that defines the symbol). */
struct cg_set {
	struct cg_object **objs; /* owned; in load order: what was added, then
	                          * the libraries cg_set_add_needed found */
	uint32_t n, cap;
	char *sysroot; /* owned; prefixed to the library directories */
	/* libraries named by DT_NEEDED that were not found or not read, one
	 * line each ("libfoo.so.1: not found"); owned */
	char **missing;
	uint32_t nmissing;
};

/* Starts an empty set; sysroot (copied, NULL or "" for none) is put in
 * front of every library directory searched. Returns 0 or -ENOMEM. */
int cg_set_init(struct cg_set *s, const char *sysroot);

/* Reads path and adds it at the end (an object already in the set by the
 * same path is not read again).  *index (may be NULL) gets its index.
 * Returns as cg_object_open. */
int cg_set_add(struct cg_set *s, const char *path, uint32_t *index, char *err, size_t errlen);

/* Adds the shared libraries the set's objects need, breadth first as the
 * dynamic linker loads them: each DT_NEEDED name is looked for in the
 * object's DT_RUNPATH/DT_RPATH ($ORIGIN expanded), LD_LIBRARY_PATH, then
 * the machine's library directories (multiarch and plain, under the
 * sysroot, and /usr/<triplet>/lib of a cross toolchain); a library of
 * another machine or word size is passed over.  Those not found are listed
 * in s->missing.  Returns 0 or -ENOMEM. */
int cg_set_add_needed(struct cg_set *s);

/* Links every import of every object to its definition (cg_func.link_obj,
 * link_func): the first object of the set, in order, that exports a
 * function of that name. */
void cg_set_link(struct cg_set *s);

/* Frees the objects and strings.  The set may be initialised again. */
void cg_set_release(struct cg_set *s);

/* The tree of possible call paths from one root: each node a function
 * reached through a chain of calls (direct, tail, PLT), in depth-first
 * order.  A function already on the path (recursion) is shown once more,
 * marked, and not expanded; a node at the depth limit, or past the node
 * budget, is not expanded either and counts the callees it left out. */
enum cg_path_flags {
	CG_PATH_RECURSIVE = 1u << 0, /* the function is already on the path */
	CG_PATH_INDIRECT = 1u << 1,  /* stands for the function's indirect call
	                              * sites (func is CG_NONE) */
	CG_PATH_RUN = 1u << 2,       /* set by coverage: this path ran */
	CG_PATH_LIBS = 1u << 3,      /* cg_paths_build option: follow linked
	                              * imports into the libraries */
};

struct cg_path_node {
	uint32_t obj, func; /* index in the set, in its object */
	uint32_t parent;    /* index in the node array, CG_NONE for the root */
	uint32_t depth;     /* the root is 0 */
	uint8_t kind;       /* enum cg_edge_kind of the call that leads here */
	uint8_t flags;      /* enum cg_path_flags */
	uint32_t cut;       /* distinct callees not shown below it (depth
	                     * limit or budget) */
	uint64_t calls;     /* set by coverage: times the path ran */
};

struct cg_paths {
	struct cg_path_node *nodes; /* owned; preorder: a node's subtree follows it */
	uint32_t n, cap;
	uint32_t max_depth, max_nodes; /* the limits it was built with */
	uint64_t cut_nodes;            /* nodes with callees left out */
	uint64_t cut_paths;            /* callees left out, summed */
	uint32_t recursive;            /* nodes marked CG_PATH_RECURSIVE */
};

/* Builds the tree from function root of object obj of s: at most depth
 * levels below the root and max_nodes nodes; the callees of a function are
 * its distinct direct and tail callees in site order (less the
 * instrumentation's imports __cyg_profile_func_enter/exit), then one
 * CG_PATH_INDIRECT node when it has indirect call sites.  An import is a
 * leaf unless flags has CG_PATH_LIBS and it is linked.  Returns 0 or
 * -ENOMEM (out then empty).  Free with cg_paths_release. */
int cg_paths_build(const struct cg_set *s, uint32_t obj, uint32_t root, uint32_t depth, uint32_t max_nodes,
                   unsigned flags, struct cg_paths *out);

void cg_paths_release(struct cg_paths *p);

#endif
