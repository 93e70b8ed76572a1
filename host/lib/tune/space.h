/* The parameter space of `layerprof tune`: parameters given as
 * NAME=A..B[:STEP] (integers) or NAME=v1,v2,... (words), the commands
 * whose argv words name them as {NAME}, and one configuration (a value of
 * each parameter) turned into the argv of each command.  No shell: a word
 * stays one word whatever the value holds. */
#ifndef LP_TUNE_SPACE_H
#define LP_TUNE_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parameters at most, values of one parameter at most, and the longest
 * name and value (bytes with the NUL). */
#define TUNE_PARAMS_MAX 8u
#define TUNE_VALUES_MAX 1024u
#define TUNE_NAME_MAX 32
#define TUNE_VALUE_MAX 64
/* Commands run at once (tune --corun), words of one command, and the
 * length of one word after substitution. */
#define TUNE_PROGS_MAX 8u
#define TUNE_ARGS_MAX 256u
#define TUNE_WORD_MAX 4096u

struct tune_param {
	char name[TUNE_NAME_MAX];
	char (*values)[TUNE_VALUE_MAX]; /* owned; nvalues of them, in the order given */
	long long *num;                 /* owned; each value as an integer, when numeric */
	uint32_t nvalues, cap;
	bool numeric;  /* every value is an integer (a range always is) */
	uint32_t prog; /* the command it was given for (tune --corun: before it) */
};

struct tune_space {
	struct tune_param params[TUNE_PARAMS_MAX];
	uint32_t nparams;
	char **progs[TUNE_PROGS_MAX]; /* the commands' argv (NULL-terminated), borrowed */
	uint32_t nprogs;
};

/* One configuration: the index of each parameter's value. */
struct tune_config {
	uint16_t idx[TUNE_PARAMS_MAX];
};

/* Adds the parameter spec ("T=1..4", "T=1..64:8", "O=-O1,-O2,-Os") of
 * command prog.  0, or -EINVAL with err (a bad name or range, an empty
 * range or list, a name given twice), -E2BIG (more than TUNE_PARAMS_MAX
 * parameters or TUNE_VALUES_MAX values, a value longer than
 * TUNE_VALUE_MAX - 1), -ENOMEM. */
int tune_space_add(struct tune_space *sp, const char *spec, uint32_t prog, char *err, size_t errlen);
/* Adds a command (argv stays the caller's and must outlive sp).  0, or
 * -E2BIG past TUNE_PROGS_MAX or TUNE_ARGS_MAX words. */
int tune_space_add_prog(struct tune_space *sp, char **argv, char *err, size_t errlen);
/* After everything was added: every {NAME} of the commands names a
 * parameter, and every parameter is named by a command.  0 or -EINVAL
 * with err ("unknown parameter {X} in 'x={X}'", "parameter T is used by
 * no command"). */
int tune_space_check(const struct tune_space *sp, char *err, size_t errlen);

/* The index of value v of parameter p, or -1. */
int tune_space_value_find(const struct tune_space *sp, uint32_t p, const char *v);
/* Appends value v to parameter p (the producer-consumer strategy's tile
 * sizes), or finds it there.  Its index, or -E2BIG, -ENOMEM. */
int tune_space_value_add(struct tune_space *sp, uint32_t p, const char *v);
/* The number of configurations (UINT64_MAX when it does not fit). */
uint64_t tune_space_size(const struct tune_space *sp);

/* Parses "T=2,U=2" (every parameter named once) into c.  0 or -EINVAL
 * with err (unknown name, a value not among the parameter's, one
 * missing). */
int tune_space_config_parse(const struct tune_space *sp, const char *s, struct tune_config *c, char *err,
                            size_t errlen);
/* "T=2 U=2" into buf; returns buf. */
const char *tune_space_format(const struct tune_space *sp, const struct tune_config *c, char *buf, size_t size);
/* The argv of command prog under c: one malloc'd block (free() it)
 * holding the NULL-terminated array and its words.  NULL with errno
 * ENOMEM, or E2BIG when a word grows past TUNE_WORD_MAX. */
char **tune_space_argv(const struct tune_space *sp, const struct tune_config *c, uint32_t prog);

/* Frees the values; the commands were borrowed.  Accepts a zeroed space. */
void tune_space_release(struct tune_space *sp);

#endif
