/* A trace set beside the static call graph of the objects it ran: which
 * functions and static calls ran, how often, which calls ran that the
 * static graph does not have, and (on request) which of the possible call
 * paths from a root ran.  docs/coverage.md says what every figure means. */
#ifndef LP_COVERAGE_H
#define LP_COVERAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct coverage;
struct lp_warner;

enum coverage_flags {
	COVERAGE_DEMANGLE = 1u << 0, /* C++ names as source spells them */
};

/* Default limits of the call path tree (as layerprof callgraph --paths). */
#define COVERAGE_DEPTH 8u
#define COVERAGE_MAX_NODES 100000u

struct coverage_opts {
	const char *sysroot; /* put in front of every object path the trace
	                      * names (NULL or "": none); borrowed */
	bool paths;          /* also the call path tree, executed paths marked */
	const char *root;    /* its root: a function of the program (raw or
	                      * demangled name); NULL: main, else the function
	                      * holding the entry point; borrowed */
	uint32_t depth;      /* levels below the root; 0: COVERAGE_DEPTH */
	uint32_t max_nodes;  /* nodes at most; 0: COVERAGE_MAX_NODES */
	unsigned flags;      /* enum coverage_flags */
	/* where warnings go (an object that cannot be read, a recording
	 * that was interrupted, paths not followed); NULL: dropped */
	const struct lp_warner *warn;
};

/* Reads the trace in trace_dir once and every ELF object holding a
 * function it traced (each once, with o->sysroot in front), and sets them
 * side by side.  Returns 0 and sets *out (free it with coverage_free), or
 * a negative errno with one line in err and *out NULL:
 * - the trace's errors as walk_open gives them (missing, empty, not a
 *   trace, another version);
 * - -EINVAL: o->paths and no function named o->root in the program;
 * - -E2BIG: more distinct functions or calls than coverage holds;
 * - -ENOMEM.
 * A damaged trace is not an error here: its readable part is taken, and
 * coverage_condition says so (functions that ran in the rest show as never
 * run).
 * An object that cannot be read is not an error: it is warned about
 * (`cannot read 'x': ...`), its traced addresses count as unmatched, and
 * coverage_unread() counts it.  The paths need the program object: when
 * it cannot be read, or the trace names none, there is no path tree (a
 * warning says so). */
int coverage_build(const char *trace_dir, const struct coverage_opts *o, struct coverage **out, char *err,
                   size_t errlen);

/* The objects that held traced functions but could not be read. */
uint32_t coverage_unread(const struct coverage *c);

/* The trace's damage: -EBADMSG with walk_condition's line in err when the
 * trace was damaged (the figures cover its readable part), else 0. */
int coverage_condition(const struct coverage *c, char *err, size_t errlen);

/* Writes c as text (the table, the functions that never ran, the calls
 * outside the static graph, the marked path tree) or as one JSON document
 * (docs/coverage.md).  Return 0, or -EIO when writing to f failed. */
int coverage_write_text(FILE *f, const struct coverage *c);
int coverage_write_json(FILE *f, const struct coverage *c);

/* Frees c and all it holds.  Accepts NULL. */
void coverage_free(struct coverage *c);

#endif
