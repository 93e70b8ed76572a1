/* Function patterns (globs on demangled names) turned into the filter
 * stage's classes, with a cache so each address is matched once. */
#ifndef LP_CLASSIFY_H
#define LP_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/util/options.h"

struct symbolizer;
struct classifier;

/* Borrows sym and the pattern strings in f: they must outlive it.
 * Returns NULL on ENOMEM. */
struct classifier *classifier_new(struct symbolizer *sym, const struct filter_opts *f);
void classifier_free(struct classifier *c);
/* The filter_spec classify callback: ctx is a struct classifier. */
unsigned classifier_classify(void *ctx, uint32_t image, uint64_t addr);
/* Whether pattern i of the --only patterns (only) or of the --exclude
 * ones has matched a function classified so far. */
bool classifier_matched(const struct classifier *c, bool only, size_t i);
/* True when pattern matches the demangled name without the return type a
 * function template's name starts with, with or without the parameter
 * list (and the qualifiers after it), or is the whole name: "bool
 * ns::eq<int>(int, int)" is matched by "ns::*", "ns::eq<int>",
 * "ns::eq<int>(int, int)" and "bool ns::eq<int>(int, int)", not by
 * "bool*". */
int classifier_match(const char *pattern, const char *name);

#endif
