/* Streaming JSON writer (see json.h). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "host/lib/util/json.h"

#include "host/lib/util/escape.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first = true;
}

void json_write_string(FILE *f, const char *s)
{
	escape_json_plain(f, s);
}

static void sep(struct json *j, const char *key)
{
	if (!j->first)
		fputc(',', j->f);
	j->first = false;
	if (key) {
		json_write_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_level(struct json *j, const char *key, char c)
{
	sep(j, key);
	fputc(c, j->f);
	j->depth++;
	j->first = true;
}

void json_object_begin(struct json *j, const char *key)
{
	open_level(j, key, '{');
}

void json_object_end(struct json *j)
{
	fputc('}', j->f);
	if (j->depth)
		j->depth--;
	j->first = false;
}

void json_array_begin(struct json *j, const char *key)
{
	open_level(j, key, '[');
}

void json_array_end(struct json *j)
{
	fputc(']', j->f);
	if (j->depth)
		j->depth--;
	j->first = false;
}

void json_str(struct json *j, const char *key, const char *value)
{
	sep(j, key);
	if (value)
		json_write_string(j->f, value);
	else
		fputs("null", j->f);
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
	sep(j, key);
	fprintf(j->f, "%" PRIu64, value);
}

void json_i64(struct json *j, const char *key, int64_t value)
{
	sep(j, key);
	fprintf(j->f, "%" PRId64, value);
}

void json_f64(struct json *j, const char *key, double value)
{
	sep(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6g", value);
	else
		fputs("null", j->f);
}

void json_fixed(struct json *j, const char *key, double value, int decimals)
{
	sep(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.*f", decimals < 0 ? 0 : decimals > 9 ? 9 : decimals, value);
	else
		fputs("null", j->f);
}

void json_f64_exact(struct json *j, const char *key, double value)
{
	char buf[40];
	int prec;

	sep(j, key);
	if (!isfinite(value)) {
		fputs("null", j->f);
		return;
	}
	if (value == 0 && signbit(value)) {
		fputs("-0.0", j->f); /* "-0" would read back as the integer 0 */
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, value);
		if (strtod(buf, NULL) == value)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", value);
	fputs(buf, j->f);
}

void json_bool(struct json *j, const char *key, bool value)
{
	sep(j, key);
	fputs(value ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	sep(j, key);
	fputs("null", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
}
