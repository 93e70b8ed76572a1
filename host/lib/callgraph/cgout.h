/* Printing the static call graph (a cg_set) and the tree of possible call
 * paths (a cg_paths) as text, Graphviz DOT or JSON, for `layerprof
 * callgraph` and `layerprof coverage`.  The forms are described in
 * docs/callgraph.md; the JSON keys are fixed there. */
#ifndef LP_CGOUT_H
#define LP_CGOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/callgraph/cgraph.h"

struct json;

enum cgout_format {
	CGOUT_TEXT,
	CGOUT_DOT,
	CGOUT_JSON,
};

enum cgout_opts {
	CGOUT_DEMANGLE = 1u << 0, /* C++ names demangled (else raw symbols) */
	CGOUT_ALL = 1u << 1,      /* cgout_graph: every object of the set, not
	                           * only the first (callgraph --libs) */
	CGOUT_MARKS = 1u << 2,    /* cgout_paths: coverage's marks, from each
	                           * node's CG_PATH_RUN flag and calls: JSON
	                           * "run" and "calls" on every node; text "* "
	                           * (ran) or "  " before each line and
	                           * "(N calls)" after a node that ran; DOT: a
	                           * node that ran is filled, one that never ran
	                           * grey */
};

/* Parses "text", "dot" or "json" into *fmt.  Returns 0 or -EINVAL. */
int cgout_parse_format(const char *s, enum cgout_format *fmt);

/* The display name of function func of o, written into buf (size > 0) or
 * pointing into o: its symbol name, demangled with CGOUT_DEMANGLE (an
 * import's "NAME@plt" with NAME demangled), "sub_<hex>" for an unnamed
 * one.  Valid until buf is reused or o freed.  func CG_NONE or out of
 * range: "*indirect*". */
const char *cgout_func_name(const struct cg_object *o, uint32_t func, unsigned opts, char *buf, size_t size);

/* A short name of object o for lines about several objects: its DT_SONAME,
 * else the last part of its path.  Points into o. */
const char *cgout_object_name(const struct cg_object *o);

/* Prints the graph of s's objects (the first only, or all with CGOUT_ALL)
 * to f in fmt; JSON ends with s->missing.  Returns 0, -ENOMEM, or -EIO
 * when f reports a write error. */
int cgout_graph(FILE *f, const struct cg_set *s, enum cgout_format fmt, unsigned opts);

/* Prints the tree p (built from s by cg_paths_build) to f in fmt, with
 * coverage's marks under CGOUT_MARKS.  Returns 0 or -EIO. */
int cgout_paths(FILE *f, const struct cg_set *s, const struct cg_paths *p, enum cgout_format fmt, unsigned opts);

/* The same JSON object as cgout_paths writes, as a member key of the
 * document j is writing (key NULL inside an array or at the top): coverage
 * nests it under "paths". */
void cgout_paths_json(struct json *j, const char *key, const struct cg_set *s, const struct cg_paths *p, unsigned opts);

#endif
