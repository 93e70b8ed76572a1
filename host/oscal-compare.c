/* layerprof oscal compare: two calibrations (two platforms, two
 * configurations of one) by the ratio K of their models, B over A, per
 * entry, per group and overall: the paper's Table 5. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/util/json.h"
#include "host/oscal.h"

static const char compare_usage[] = "usage: layerprof oscal compare [options] A.cal B.cal\n"
                                    "\n"
                                    "The ratio K of B's model over A's for each entry modelled in both (at each\n"
                                    "parameter value both measured; K its mean, Kmin and Kmax), then per group\n"
                                    "and over all entries: K (the mean), Kmax, Kmin, sd and sd %%.  K above 1:\n"
                                    "B is slower.  Entries in one file only, or without a model, are counted.\n"
                                    "\n"
                                    "      --format FMT      text or json (default text)\n"
                                    "  -o, --output FILE     write there (default stdout)\n"
                                    "  -h, --help            this text\n"
                                    "\n"
                                    "Exit status: 0 ok, 1 a missing or bad calibration, or a write error, 2 usage.\n";

/* Why an entry of x has no row: "only in A", "only in B", "unmodelled"
 * (NULL: it has one). */
static const char *why_left_out(const struct oscal_entry *e, const struct oscal_cal *other, bool in_a)
{
	const struct oscal_entry *o = oscal_cal_find(other, e->name);

	if (!o)
		return in_a ? "only in A" : "only in B";
	if (e->status != OSCAL_MEASURED || o->status != OSCAL_MEASURED || e->model.form == OSCAL_NONE ||
	    o->model.form == OSCAL_NONE)
		return in_a ? "unmodelled" : NULL; /* said once, from A's side */
	return NULL;
}

static bool has_row(const struct oscal_compare *cmp, const char *name)
{
	for (uint32_t i = 0; i < cmp->nrows; i++)
		if (!strcmp(cmp->rows[i].a->name, name))
			return true;
	return false;
}

static void compare_text(FILE *f, const struct oscal_cal *a, const struct oscal_cal *b, const char *pa, const char *pb,
                         const struct oscal_compare *cmp)
{
	fprintf(f, "A %s: host %s, %s, %s, Linux %s\n", pa, a->machine.host, a->machine.arch, a->source,
	        a->machine.kernel);
	fprintf(f, "B %s: host %s, %s, %s, Linux %s\n", pb, b->machine.host, b->machine.arch, b->source,
	        b->machine.kernel);
	fprintf(f, "K: B's model time over A's at each parameter value both measured (above 1: B slower)\n\n");
	fprintf(f, "%-26s %-7s %9s %9s %9s %6s\n", "name", "group", "K", "Kmin", "Kmax", "points");
	for (uint32_t i = 0; i < cmp->nrows; i++) {
		const struct oscal_k *k = &cmp->rows[i];

		fprintf(f, "%-26s %-7s %9.3f %9.3f %9.3f %6u\n", k->a->name, k->a->group, k->k, k->kmin, k->kmax,
		        k->points);
	}
	fprintf(f, "\n%-10s %5s %9s %9s %9s %9s %7s\n", "group", "n", "K", "Kmax", "Kmin", "sd", "sd %");
	for (uint32_t g = 0; g < cmp->ngroups; g++) {
		double k = cmp->groups[g].k, sd = cmp->groups[g].sd;

		fprintf(f, "%-10s %5u %9.3f %9.3f %9.3f %9.3f %7.2f\n", cmp->groups[g].group, cmp->groups[g].n, k,
		        cmp->groups[g].kmax, cmp->groups[g].kmin, sd, k ? 100 * sd / k : 0.0);
	}
	if (cmp->nrows)
		fprintf(f, "%-10s %5u %9.3f %9.3f %9.3f %9.3f %7.2f\n", "all", cmp->nrows, cmp->k, cmp->kmax, cmp->kmin,
		        cmp->sd, 100 * cmp->sd_rel);
	else
		fprintf(f, "%-10s %5u %9s %9s %9s %9s %7s\n", "all", 0u, "-", "-", "-", "-", "-");
	fprintf(f, "\nleft out: %u only in A, %u only in B, %u without a model in both\n", cmp->only_a, cmp->only_b,
	        cmp->unmodelled);
	for (uint32_t i = 0; i < a->nentries; i++) {
		const char *why = why_left_out(&a->entries[i], b, true);

		if (why && !has_row(cmp, a->entries[i].name))
			fprintf(f, "  %-26s %s\n", a->entries[i].name, why);
	}
	for (uint32_t i = 0; i < b->nentries; i++) {
		const char *why = why_left_out(&b->entries[i], a, false);

		if (why)
			fprintf(f, "  %-26s %s\n", b->entries[i].name, why);
	}
}

static void compare_json(FILE *f, const struct oscal_cal *a, const struct oscal_cal *b, const char *pa, const char *pb,
                         const struct oscal_compare *cmp)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "format", "layerprof-oscal-compare");
	json_u64(&j, "version", 1);
	json_object_begin(&j, "a");
	json_str(&j, "file", pa);
	oscal_json_head(&j, a);
	json_object_end(&j);
	json_object_begin(&j, "b");
	json_str(&j, "file", pb);
	oscal_json_head(&j, b);
	json_object_end(&j);
	json_array_begin(&j, "entries");
	for (uint32_t i = 0; i < cmp->nrows; i++) {
		const struct oscal_k *k = &cmp->rows[i];

		json_object_begin(&j, NULL);
		json_str(&j, "name", k->a->name);
		json_str(&j, "call", k->a->call);
		json_str(&j, "group", k->a->group);
		json_f64_exact(&j, "k", k->k);
		json_f64_exact(&j, "kmin", k->kmin);
		json_f64_exact(&j, "kmax", k->kmax);
		json_u64(&j, "points", k->points);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "groups");
	for (uint32_t g = 0; g < cmp->ngroups; g++) {
		json_object_begin(&j, NULL);
		json_str(&j, "group", cmp->groups[g].group);
		json_u64(&j, "n", cmp->groups[g].n);
		json_f64_exact(&j, "k", cmp->groups[g].k);
		json_f64_exact(&j, "kmax", cmp->groups[g].kmax);
		json_f64_exact(&j, "kmin", cmp->groups[g].kmin);
		json_f64_exact(&j, "sd", cmp->groups[g].sd);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_begin(&j, "all");
	json_u64(&j, "n", cmp->nrows);
	json_f64_exact(&j, "k", cmp->nrows ? cmp->k : NAN);
	json_f64_exact(&j, "kmax", cmp->nrows ? cmp->kmax : NAN);
	json_f64_exact(&j, "kmin", cmp->nrows ? cmp->kmin : NAN);
	json_f64_exact(&j, "sd", cmp->nrows ? cmp->sd : NAN);
	json_f64_exact(&j, "sd_rel", cmp->nrows ? cmp->sd_rel : NAN);
	json_object_end(&j);
	json_object_begin(&j, "left_out");
	json_u64(&j, "only_a", cmp->only_a);
	json_u64(&j, "only_b", cmp->only_b);
	json_u64(&j, "unmodelled", cmp->unmodelled);
	json_array_begin(&j, "entries");
	for (int side = 0; side < 2; side++) {
		const struct oscal_cal *x = side ? b : a, *y = side ? a : b;

		for (uint32_t i = 0; i < x->nentries; i++) {
			const char *why = why_left_out(&x->entries[i], y, !side);

			if (!why || (!side && has_row(cmp, x->entries[i].name)))
				continue;
			json_object_begin(&j, NULL);
			json_str(&j, "name", x->entries[i].name);
			json_str(&j, "why", why);
			json_object_end(&j);
		}
	}
	json_array_end(&j);
	json_object_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

int oscal_compare_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum oscal_format fmt = OSCAL_FMT_TEXT;
	struct oscal_cal *cal = NULL;
	struct oscal_compare cmp;
	const char *out = NULL;
	bool have_cmp = false;
	int c, ret = LP_EXIT_FAILURE;
	FILE *f;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (oscal_parse_format(optarg, false, &fmt))
				return LP_EXIT_USAGE;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(compare_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(compare_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "layerprof oscal: compare takes two calibration files (A B), not %d\n", argc - optind);
		return LP_EXIT_USAGE;
	}
	cal = calloc(2, sizeof(*cal));
	if (!cal) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	if (oscal_load(argv[optind], &cal[0]))
		goto out_free;
	if (oscal_load(argv[optind + 1], &cal[1])) {
		oscal_cal_release(&cal[0]);
		goto out_free;
	}
	memset(&cmp, 0, sizeof(cmp));
	if (oscal_compare(&cal[0], &cal[1], &cmp)) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		goto out;
	}
	have_cmp = true;
	f = oscal_output_open(out);
	if (!f)
		goto out;
	if (fmt == OSCAL_FMT_JSON)
		compare_json(f, &cal[0], &cal[1], argv[optind], argv[optind + 1], &cmp);
	else
		compare_text(f, &cal[0], &cal[1], argv[optind], argv[optind + 1], &cmp);
	ret = oscal_output_close(f, out) ? LP_EXIT_FAILURE : LP_EXIT_OK;
out:
	if (have_cmp)
		oscal_compare_release(&cmp);
	oscal_cal_release(&cal[0]);
	oscal_cal_release(&cal[1]);
out_free:
	free(cal);
	return ret;
}
