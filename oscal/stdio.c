/* The file group's C-library streams: fopen, fread, fwrite, fgetc... on
 * the regular file f of the suite's directory (file.c makes and removes it). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "oscal/suite.h"

#define FILE_LEN SUITE_FILE_LEN

static const long xs_bytes[] = { 1, 16, 64, 256, 1024, 4096, 16384, 65536 };

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static int setup_stdio(struct suite_ctx *c)
{
	char path[PATH_MAX];
	int err = suite_file_setup(c);
	if (err)
		return err;
	if ((err = suite_path(c, "f", path)) < 0)
		return err;
	/* the file f was made exclusively above: fopen opens that one */
	if (!(c->p = fopen(path, "r+e")))
		return suite_err(c, "fopen of the file");
	return 0;
}

/* ------------------------------------------------------------ stdio */

static int one_fopen(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	FILE *f;
	int err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	T0;
	f = fopen(path, "re");
	T1;
	if (!f)
		return suite_err(c, "fopen");
	fclose(f);
	return 0;
}

static int one_fclose(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	FILE *f;
	int r, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	if (!(f = fopen(path, "re")))
		return suite_err(c, "fopen before fclose");
	T0;
	r = fclose(f);
	T1;
	return r ? suite_err(c, "fclose") : 0;
}

static int one_fread(struct suite_ctx *c, uint64_t *ns)
{
	size_t n;
	rewind(c->p);
	T0;
	n = fread(c->buf, 1, (size_t)c->x, c->p);
	T1;
	return suite_io_result(c, (ssize_t)n, c->x, "fread");
}

static int one_fwrite(struct suite_ctx *c, uint64_t *ns)
{
	size_t n;
	rewind(c->p); /* flushes the previous sample's bytes */
	T0;
	n = fwrite(c->buf, 1, (size_t)c->x, c->p);
	T1;
	return suite_io_result(c, (ssize_t)n, c->x, "fwrite");
}

static int one_fgetc(struct suite_ctx *c, uint64_t *ns)
{
	int ch;
	if (ftell(c->p) >= FILE_LEN)
		rewind(c->p);
	T0;
	ch = fgetc(c->p);
	T1;
	return ch == EOF ? suite_err(c, "fgetc") : 0;
}

static int one_fputc(struct suite_ctx *c, uint64_t *ns)
{
	int ch;
	if (ftell(c->p) >= FILE_LEN)
		rewind(c->p);
	T0;
	ch = fputc('x', c->p);
	T1;
	return ch == EOF ? suite_err(c, "fputc") : 0;
}

static int one_fseek(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = fseek(c->p, 100, SEEK_SET);
	T1;
	return r ? suite_err(c, "fseek") : 0;
}

static int one_ftell(struct suite_ctx *c, uint64_t *ns)
{
	long r;
	T0;
	r = ftell(c->p);
	T1;
	return r < 0 ? suite_err(c, "ftell") : 0;
}

static int one_fflush(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	rewind(c->p);
	if (fputc('x', c->p) == EOF)
		return suite_err(c, "fputc before fflush");
	T0;
	r = fflush(c->p);
	T1;
	return r ? suite_err(c, "fflush") : 0;
}

static int setup_fgets(struct suite_ctx *c)
{
	int err;
	/* lines of 64 bytes: f is written from buf, which is put back after */
	for (size_t i = 63; i < FILE_LEN; i += 64)
		c->buf[i] = '\n';
	err = setup_stdio(c);
	for (size_t i = 63; i < FILE_LEN; i += 64)
		c->buf[i] = c->buf2[i];
	return err;
}

static int one_fgets(struct suite_ctx *c, uint64_t *ns)
{
	char *r;
	if (ftell(c->p) >= FILE_LEN - 64)
		rewind(c->p);
	T0;
	r = fgets((char *)c->buf2, 128, c->p);
	T1;
	return r ? 0 : suite_err(c, "fgets");
}

#define F(name, call, cond, param, unit, xs, setup, one, desc)                               \
	{                                                                                    \
		name, call, cond, "file", param, unit, xs, setup, one, suite_file_done, desc \
	}

const struct suite_def suite_stdio[] = {
	F("fopen", "fopen", "", "", "", SUITE_NOX, suite_file_setup, one_fopen,
	  "fopen(3) \"r\" of a file (fclose not timed)"),
	F("fclose", "fclose", "", "", "", SUITE_NOX, suite_file_setup, one_fclose,
	  "fclose(3) of a file opened for reading"),
	F("fread", "fread", "", "bytes", "B", SUITE_XS(xs_bytes), setup_stdio, one_fread,
	  "fread(3) from the start of a file (rewind not timed)"),
	F("fwrite", "fwrite", "", "bytes", "B", SUITE_XS(xs_bytes), setup_stdio, one_fwrite,
	  "fwrite(3) into an empty full buffer (the flush not timed)"),
	F("fgetc", "fgetc", "", "", "", SUITE_NOX, setup_stdio, one_fgetc,
	  "fgetc(3) of successive bytes of a file (the buffer's refills included)"),
	F("fgets", "fgets", "", "", "", SUITE_NOX, setup_fgets, one_fgets,
	  "fgets(3) of successive 64-byte lines of a file"),
	F("fputc", "fputc", "", "", "", SUITE_NOX, setup_stdio, one_fputc,
	  "fputc(3) of successive bytes to a file (the buffer's flushes included)"),
	F("fseek", "fseek", "", "", "", SUITE_NOX, setup_stdio, one_fseek, "fseek(3) SEEK_SET"),
	F("ftell", "ftell", "", "", "", SUITE_NOX, setup_stdio, one_ftell, "ftell(3)"),
	F("fflush", "fflush", "", "", "", SUITE_NOX, setup_stdio, one_fflush, "fflush(3) of one buffered byte"),
};
const size_t suite_stdio_n = sizeof(suite_stdio) / sizeof(suite_stdio[0]);
