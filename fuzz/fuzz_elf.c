/* libFuzzer target for the static call graph's ELF reader: the input is an
 * ELF file given to cg_object_read; what it builds must keep the promises of
 * host/lib/callgraph/cgraph.h, and so must the tree of paths built on it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: abort, so that the fuzzer keeps the input. */
#define ENSURE(cond)                                                                         \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "fuzz_elf: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                             \
		}                                                                            \
	} while (0)

/* Small limits: the tree is walked whole for each input. */
#define FUZZ_PATH_DEPTH 6
#define FUZZ_PATH_NODES 2000

/* The function array: sorted, each one found at its own address, names and
 * kinds consistent; the edges grouped by caller, in bounds. */
static void object_check(const struct cg_object *o)
{
	uint64_t edges = 0;
	uint32_t i, e;

	ENSURE(o->machine == CG_MACHINE_X86_64 || o->machine == CG_MACHINE_AARCH64 || o->machine == CG_MACHINE_ARM);
	ENSURE(strcmp(cg_machine_name(o->machine), "") != 0);
	ENSURE(o->nfuncs <= CG_FUNCS_MAX && o->nedges <= CG_EDGES_MAX);
	ENSURE(o->main == CG_NONE || o->main < o->nfuncs);
	for (i = 0; i < o->nneeded; i++)
		ENSURE(o->needed[i] != NULL);
	for (i = 0; i < o->nfuncs; i++) {
		const struct cg_func *f = &o->funcs[i];
		uint32_t found;

		ENSURE(f->name != NULL);
		ENSURE(f->kind <= CG_FUNC_IMPORT && f->reach <= CG_REACH_NONE);
		ENSURE((f->kind == CG_FUNC_IMPORT) == (f->import != NULL));
		ENSURE(i == 0 || o->funcs[i - 1].addr <= f->addr);
		ENSURE(f->edges <= o->nedges && f->nedges <= o->nedges - f->edges);
		edges += f->nedges;
		/* its address falls in a function that starts there (two may
		 * share an address: the first such one is fine) */
		found = cg_object_find(o, f->addr);
		if (f->size) {
			ENSURE(found != CG_NONE && found < o->nfuncs);
			ENSURE(o->funcs[found].addr <= f->addr);
		}
		ENSURE(cg_object_lookup(o, f->name) != CG_NONE);
		/* read alone: nothing is linked */
		ENSURE(f->link_obj == CG_NONE && f->link_func == CG_NONE);
		for (e = f->edges; e < f->edges + f->nedges; e++) {
			const struct cg_edge *x = &o->edges[e];

			ENSURE(x->caller == i);
			ENSURE(x->kind <= CG_EDGE_INDIRECT);
			ENSURE((x->kind == CG_EDGE_INDIRECT) == (x->callee == CG_NONE));
			ENSURE(x->callee == CG_NONE || x->callee < o->nfuncs);
			ENSURE(e == f->edges || o->edges[e - 1].site <= x->site);
		}
	}
	/* every edge belongs to one caller */
	ENSURE(edges == o->nedges);
	ENSURE(cg_object_find(o, 0) == CG_NONE || o->funcs[cg_object_find(o, 0)].addr == 0);
}

/* The possible paths from main (or the entry's function): a preorder tree
 * within its limits. */
static void paths_check(struct cg_object *o)
{
	struct cg_set s = { .objs = &o, .n = 1, .cap = 1 };
	struct cg_paths p = { 0 };
	uint32_t i, root = o->main;

	for (i = 0; root == CG_NONE && i < o->nfuncs; i++)
		if (o->funcs[i].flags & CG_FUNC_ENTRY)
			root = i;
	if (root == CG_NONE)
		return;
	if (cg_paths_build(&s, 0, root, FUZZ_PATH_DEPTH, FUZZ_PATH_NODES, 0, &p)) {
		ENSURE(p.n == 0);
		cg_paths_release(&p);
		return;
	}
	ENSURE(p.n >= 1 && p.n <= FUZZ_PATH_NODES);
	ENSURE(p.nodes[0].parent == CG_NONE && p.nodes[0].depth == 0 && p.nodes[0].func == root);
	for (i = 1; i < p.n; i++) {
		const struct cg_path_node *n = &p.nodes[i];

		ENSURE(n->parent < i && n->depth == p.nodes[n->parent].depth + 1 && n->depth <= FUZZ_PATH_DEPTH);
		ENSURE(n->obj == 0);
		ENSURE((n->flags & CG_PATH_INDIRECT) ? n->func == CG_NONE : n->func < o->nfuncs);
	}
	cg_paths_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cg_object *o = NULL;
	char err[256];
	int ret;

	err[0] = '\0';
	ret = cg_object_read(data, size, "fuzz", &o, err, sizeof(err));
	if (ret) {
		/* one line, saying why, and one of the promised errors */
		ENSURE(err[0] != '\0' && !strchr(err, '\n'));
		ENSURE(ret == -ENOEXEC || ret == -EBADMSG || ret == -EPROTONOSUPPORT || ret == -E2BIG ||
		       ret == -ENOMEM);
		return 0;
	}
	ENSURE(o != NULL);
	object_check(o);
	paths_check(o);
	cg_object_free(o);
	return 0;
}
