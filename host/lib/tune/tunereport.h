/* What `layerprof tune` prints of a search (struct tune after tune_run):
 * every configuration in the order tried with its median time, energy,
 * objective, runs, spread and status; the best, the baseline and the gain
 * over it; as a text table, JSON, or a self-contained HTML page with the
 * table and an SVG plot (the objective per configuration in the order
 * tried; for two parameters also a heat map). */
#ifndef LP_TUNE_TUNEREPORT_H
#define LP_TUNE_TUNEREPORT_H

#include <stdio.h>

#include "host/lib/tune/tune.h"

/* Each writes to f and returns 0, or -EIO when f reports an error. */
int tunereport_text(FILE *f, const struct tune *t);
int tunereport_json(FILE *f, const struct tune *t);
int tunereport_html(FILE *f, const struct tune *t);

/* The gain of the best over the baseline in % of the baseline's median
 * (positive: better), for time (energy false) or energy (NAN without). */
double tunereport_gain(const struct tune *t, bool energy);

#endif
