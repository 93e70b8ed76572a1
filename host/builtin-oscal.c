/* layerprof oscal: the subcommands' table (run, list, report, compare) and
 * what they share (oscal.h). */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/exepath.h"
#include "host/builtin.h"
#include "host/lib/util/outfile.h"
#include "host/oscal.h"

static const struct builtin_sub oscal_subs[] = {
	{ "run", oscal_run_cmd, "measure the calls of this machine (or a target's) into a calibration file" },
	{ "list", oscal_list_cmd, "the suite's entries: name, call, condition, group, parameter" },
	{ "report", oscal_report_cmd, "a calibration's statistics and models: text, JSON or an HTML page" },
	{ "compare", oscal_compare_cmd, "two calibrations: the ratio K per call, per group and overall" },
};

#define OSCAL_NSUBS (sizeof(oscal_subs) / sizeof(oscal_subs[0]))

const char oscal_outlier_rule[] = "a sample above median + 10 x MAD (MAD at least 5 % of the median) is an "
                                  "outlier: kept in the statistics, left out of the model";

static const char oscal_intro[] = "OS and C-library call timing: the suite layerprof-oscal measures each call in\n"
                                  "series over its parameter, each is summarised and modelled (constant, linear\n"
                                  "or piecewise-linear), two platforms are compared by the ratio of their models.\n"
                                  "See docs/oscal.md.\n";

int cmd_oscal(int argc, char **argv)
{
	return builtin_subcommand("oscal", oscal_intro, oscal_subs, OSCAL_NSUBS, argc, argv);
}

int oscal_suite_path(char *out)
{
	static const char *const rel[] = { "/layerprof-oscal", "/../oscal/layerprof-oscal" };

	return builtin_program_path(OSCAL_SUITE_ENV, rel, sizeof(rel) / sizeof(rel[0]), out);
}

int oscal_parse_format(const char *arg, bool html_ok, enum oscal_format *out)
{
	if (!strcmp(arg, "text"))
		*out = OSCAL_FMT_TEXT;
	else if (!strcmp(arg, "json"))
		*out = OSCAL_FMT_JSON;
	else if (html_ok && !strcmp(arg, "html"))
		*out = OSCAL_FMT_HTML;
	else {
		fprintf(stderr, "layerprof oscal: invalid --format '%s': text, json%s\n", arg,
		        html_ok ? " or html" : "");
		return -EINVAL;
	}
	return 0;
}

int oscal_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno || v < min || v > max) {
		fprintf(stderr, "layerprof oscal: invalid %s '%s': a number from %u to %u\n", opt, arg, min, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int oscal_parse_f64(const char *opt, const char *arg, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < min || v > max) {
		fprintf(stderr, "layerprof oscal: invalid %s '%s': a number from %g to %g\n", opt, arg, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

bool oscal_calls_match(const char *patterns, const char *name, const char *call)
{
	char pat[256];
	const char *p = patterns;

	if (!p || !*p)
		return true;
	while (*p) {
		size_t w = strcspn(p, ",");

		if (w && w < sizeof(pat)) {
			memcpy(pat, p, w);
			pat[w] = '\0';
			if (!fnmatch(pat, name, 0) || !fnmatch(pat, call, 0))
				return true;
		}
		p += w;
		if (*p == ',')
			p++;
	}
	return false;
}

int oscal_load(const char *path, struct oscal_cal *cal)
{
	char err[512];
	bool analysed = true;
	int r;

	r = oscal_cal_read(path, cal, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof oscal: %s\n", err);
		return r;
	}
	/* a file written without its analysis (made by hand, by another
	 * tool): the models from its samples */
	for (uint32_t i = 0; i < cal->nentries; i++)
		if (cal->entries[i].status == OSCAL_MEASURED && !cal->entries[i].st.n)
			analysed = false;
	if (!analysed) {
		r = oscal_cal_analyse(cal);
		if (r) {
			fprintf(stderr, "layerprof oscal: cannot analyse '%s': %s\n", path, strerror(-r));
			oscal_cal_release(cal);
			return r;
		}
	}
	return 0;
}

int oscal_file_check(const char *path)
{
	struct stat st;
	char head[256];
	ssize_t k;
	int fd, e;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	/* the directory first: a run of an hour is not made for nothing */
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (slash && !slash[1]) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': no file name\n", path);
		return -EINVAL;
	}
	e = access(dir, W_OK | X_OK) ? errno : lstat(path, &st) ? errno : 0;
	if (e == ENOENT && access(dir, W_OK | X_OK) == 0)
		return 0; /* the file is not there yet */
	if (e) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': %s\n", path, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "layerprof oscal: '%s' is a symbolic link: not overwritten (remove it first)\n", path);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "layerprof oscal: '%s' is not a regular file: not overwritten\n", path);
		return -EEXIST;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	k = fd < 0 ? -1 : read(fd, head, sizeof(head) - 1);
	if (fd >= 0)
		close(fd);
	if (k < 0) {
		e = errno;
		fprintf(stderr, "layerprof oscal: cannot read '%s': %s\n", path, strerror(e));
		return -e;
	}
	head[k] = '\0';
	if (k == 0 || strstr(head, "\"format\":\"" OSCAL_FORMAT "\""))
		return 0;
	fprintf(stderr, "layerprof oscal: '%s' exists and is not a layerprof calibration: not overwritten\n", path);
	return -EEXIST;
}

static int write_cal(FILE *f, void *cal)
{
	return oscal_cal_write(f, cal);
}

int oscal_file_write(const struct oscal_cal *cal, const char *path)
{
	int r = outfile_replace(path, write_cal, (void *)cal);

	if (r)
		fprintf(stderr, "layerprof oscal: cannot write calibration '%s': %s\n", path, strerror(-r));
	return r;
}

FILE *oscal_output_open(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = outfile_open(path);
	if (!f)
		fprintf(stderr, "layerprof oscal: cannot write '%s': %s\n", path, outfile_strerror(errno));
	return f;
}

int oscal_output_close(FILE *f, const char *path)
{
	int bad;

	if (f == stdout)
		bad = fflush(f) || ferror(f);
	else
		bad = ferror(f) | fclose(f);
	if (bad) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': %s\n", f == stdout || !path ? "stdout" : path,
		        strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

const char *oscal_fmt_ns(double ns, char *buf, size_t size)
{
	double a = fabs(ns);

	if (isnan(ns))
		snprintf(buf, size, "-");
	else if (a < 10)
		snprintf(buf, size, "%.2f", ns);
	else if (a < 100)
		snprintf(buf, size, "%.1f", ns);
	else
		snprintf(buf, size, "%.0f", ns);
	return buf;
}

const char *oscal_piece_text(const struct oscal_entry *e, const struct oscal_piece *p, char *buf, size_t size)
{
	const char *unit = e->unit[0] ? e->unit : e->param;

	if (p->m == 0) {
		/* a constant piece */
		snprintf(buf, size, "%.4g ns", p->q);
		return buf;
	}
	snprintf(buf, size, "%.4g ns/%s \xc3\x97 %s %c %.4g ns", p->m, unit, e->param, p->q < 0 ? '-' : '+',
	         fabs(p->q));
	return buf;
}

const char *oscal_model_text(const struct oscal_entry *e, char *buf, size_t size)
{
	const struct oscal_model *m = &e->model;

	switch (m->form) {
	case OSCAL_CONSTANT:
		snprintf(buf, size, "constant %.4g ns", m->npieces ? m->pieces[0].q : NAN);
		break;
	case OSCAL_LINEAR:
		/* "linear " and the piece */
		if (size > 7) {
			memcpy(buf, "linear ", 7);
			oscal_piece_text(e, &m->pieces[0], buf + 7, size - 7);
		} else if (size) {
			buf[0] = '\0';
		}
		break;
	case OSCAL_PIECEWISE:
		snprintf(buf, size, "piecewise %u", m->npieces);
		break;
	default:
		snprintf(buf, size, "none");
		break;
	}
	return buf;
}
