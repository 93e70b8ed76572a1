/* The heap tracing options of a started program (record --memory,
 * --mem-depth, --keep-alive, --mem-fold; the agent's START keys memory,
 * mem_depth, keep_alive, mem_fold), checked in one place. */
#ifndef LP_COMMON_MEMOPTS_H
#define LP_COMMON_MEMOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* START mem_fold: at most an hour. */
#define MEMOPTS_FOLD_MAX_NS 3600000000000ull

struct memopts {
	bool on;          /* preload the heap interposers */
	bool keep_alive;  /* illegal releases are recorded, not passed to libc */
	unsigned depth;   /* frames per heap call stack; 0: the runtime's default */
	uint64_t fold_ns; /* fold blocks released within this; 0: no folding */
};

/* How the options are named in messages. */
enum memopts_names {
	MEMOPTS_OPTIONS, /* command-line options: --mem-depth, ... */
	MEMOPTS_START,   /* the agent's START keys: mem_depth, ... (docs/protocol.md) */
};

/* The frames per call stack the program gets: depth, or the default. */
unsigned memopts_depth(const struct memopts *m);

/* Sets the depth from val (1 to LP_MEM_DEPTH_MAX).  Returns 0, or -EINVAL
 * with the reason, naming the option as names says, in err. */
int memopts_set_depth(struct memopts *m, const char *val, enum memopts_names names, char *err, size_t errlen);

/* One START key: memory and keep_alive ("1" or "0"), mem_depth, mem_fold
 * (ns, 1 to MEMOPTS_FOLD_MAX_NS).  Returns 0, 1 when key is none of them,
 * or -EINVAL with the reason in err. */
int memopts_set_key(struct memopts *m, const char *key, const char *val, char *err, size_t errlen);

/* Once every option is known: the others need `on`.  Returns 0, or
 * -EINVAL with the reason in err. */
int memopts_check(const struct memopts *m, enum memopts_names names, char *err, size_t errlen);

#endif
