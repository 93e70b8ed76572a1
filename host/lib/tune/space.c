/* The parameter space of `layerprof tune`: parsing the parameters, and
 * the substitution of {NAME} in the commands' words. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/tune/space.h"
#include "host/lib/util/error.h"

static bool name_char(char c, bool first)
{
	return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

/* A whole decimal integer (with an optional sign). */
static bool parse_ll(const char *s, size_t len, long long *out)
{
	char buf[32], *end;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[0]) && !((buf[0] == '-' || buf[0] == '+') && isdigit((unsigned char)buf[1])))
		return false;
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return !*end && !errno;
}

static int param_push(struct tune_param *p, const char *v, size_t len, char *err, size_t errlen)
{
	long long n;

	if (len >= TUNE_VALUE_MAX)
		return error_set(err, errlen, -E2BIG, "parameter %s: value '%.*s...' is longer than %d bytes", p->name,
		                 20, v, TUNE_VALUE_MAX - 1);
	if (p->nvalues == TUNE_VALUES_MAX)
		return error_set(err, errlen, -E2BIG, "parameter %s has more than %u values", p->name, TUNE_VALUES_MAX);
	if (p->nvalues == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : 16;
		void *nv = realloc(p->values, cap * sizeof(*p->values));

		if (!nv)
			return error_set(err, errlen, -ENOMEM, "out of memory");
		p->values = nv;
		nv = realloc(p->num, cap * sizeof(*p->num));
		if (!nv)
			return error_set(err, errlen, -ENOMEM, "out of memory");
		p->num = nv;
		p->cap = cap;
	}
	memcpy(p->values[p->nvalues], v, len);
	p->values[p->nvalues][len] = '\0';
	if (parse_ll(v, len, &n))
		p->num[p->nvalues] = n;
	else
		p->numeric = false;
	p->nvalues++;
	return 0;
}

/* "A..B[:STEP]" into p's values; 1 when spec is no range (a list). */
static int parse_range(struct tune_param *p, const char *spec, char *err, size_t errlen)
{
	const char *dots = strstr(spec, ".."), *colon;
	long long a, b, step = 1;
	char v[32];
	int r;

	if (!dots || strchr(spec, ','))
		return 1;
	colon = strchr(dots + 2, ':');
	if (!parse_ll(spec, (size_t)(dots - spec), &a) ||
	    !parse_ll(dots + 2, colon ? (size_t)(colon - dots - 2) : strlen(dots + 2), &b) ||
	    (colon && (!parse_ll(colon + 1, strlen(colon + 1), &step) || step <= 0)))
		return error_set(err, errlen, -EINVAL,
		                 "invalid range '%s=%s': A..B or A..B:STEP with integers, STEP above 0", p->name, spec);
	if (b < a)
		return error_set(err, errlen, -EINVAL, "empty range '%s=%s': %lld is above %lld", p->name, spec, a, b);
	if ((unsigned long long)(b - a) / (unsigned long long)step >= TUNE_VALUES_MAX)
		return error_set(err, errlen, -E2BIG, "range '%s=%s' has more than %u values", p->name, spec,
		                 TUNE_VALUES_MAX);
	for (long long x = a; x <= b; x += step) {
		int len = snprintf(v, sizeof(v), "%lld", x);

		r = param_push(p, v, (size_t)len, err, errlen);
		if (r)
			return r;
		if (x > LLONG_MAX - step)
			break;
	}
	return 0;
}

int tune_space_add(struct tune_space *sp, const char *spec, uint32_t prog, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '='), *s;
	struct tune_param *p;
	size_t len;
	int r;

	if (sp->nparams == TUNE_PARAMS_MAX)
		return error_set(err, errlen, -E2BIG, "more than %u parameters", TUNE_PARAMS_MAX);
	len = eq ? (size_t)(eq - spec) : 0;
	if (!eq || !len || len >= TUNE_NAME_MAX || !name_char(spec[0], true))
		return error_set(err, errlen, -EINVAL,
		                 "invalid parameter '%s': NAME=A..B[:STEP] or NAME=v1,v2,... (NAME: letters, digits, "
		                 "_)",
		                 spec);
	for (size_t i = 1; i < len; i++)
		if (!name_char(spec[i], false))
			return error_set(err, errlen, -EINVAL, "invalid parameter name '%.*s': letters, digits and _",
			                 (int)len, spec);
	for (uint32_t i = 0; i < sp->nparams; i++)
		if (strlen(sp->params[i].name) == len && !memcmp(sp->params[i].name, spec, len))
			return error_set(err, errlen, -EINVAL, "parameter %.*s is given twice", (int)len, spec);
	p = &sp->params[sp->nparams];
	memset(p, 0, sizeof(*p));
	memcpy(p->name, spec, len);
	p->prog = prog;
	p->numeric = true;
	if (!eq[1]) {
		r = error_set(err, errlen, -EINVAL, "empty parameter '%s': give a range or a list of values", spec);
		goto fail;
	}
	r = parse_range(p, eq + 1, err, errlen);
	if (r < 0)
		goto fail;
	for (s = eq + 1; r == 1;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);

		if (!n) {
			r = error_set(err, errlen, -EINVAL, "invalid list '%s': an empty value", spec);
			goto fail;
		}
		for (uint32_t i = 0; i < p->nvalues; i++)
			if (strlen(p->values[i]) == n && !memcmp(p->values[i], s, n)) {
				r = error_set(err, errlen, -EINVAL, "invalid list '%s': %.*s is given twice", spec,
				              (int)n, s);
				goto fail;
			}
		r = param_push(p, s, n, err, errlen);
		if (r)
			goto fail;
		if (!comma)
			break;
		s = comma + 1;
		r = 1;
	}
	sp->nparams++;
	return 0;
fail:
	free(p->values);
	free(p->num);
	memset(p, 0, sizeof(*p));
	return r;
}

int tune_space_add_prog(struct tune_space *sp, char **argv, char *err, size_t errlen)
{
	size_t n = 0;

	if (sp->nprogs == TUNE_PROGS_MAX)
		return error_set(err, errlen, -E2BIG, "more than %u commands", TUNE_PROGS_MAX);
	while (argv[n])
		n++;
	if (!n)
		return error_set(err, errlen, -EINVAL, "an empty command");
	if (n > TUNE_ARGS_MAX)
		return error_set(err, errlen, -E2BIG, "a command of more than %u words", TUNE_ARGS_MAX);
	sp->progs[sp->nprogs++] = argv;
	return 0;
}

static int param_find(const struct tune_space *sp, const char *name, size_t len)
{
	for (uint32_t i = 0; i < sp->nparams; i++)
		if (strlen(sp->params[i].name) == len && !memcmp(sp->params[i].name, name, len))
			return (int)i;
	return -1;
}

/* Substitutes word under c into out (size bytes), or with c NULL only
 * checks it, marking the parameters used.  "{{" and "}}" are literal
 * braces; "{NAME}" with NAME no parameter is an error; a brace that opens
 * no name is kept.  0, -EINVAL (unknown name), -E2BIG (too long). */
static int word_subst(const struct tune_space *sp, const struct tune_config *c, const char *word, char *out,
                      size_t size, bool *used, char *err, size_t errlen)
{
	size_t n = 0;

	for (const char *s = word; *s;) {
		const char *v = s;
		size_t len = 1;

		if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
			s += 2;
		} else if (s[0] == '{' && name_char(s[1], true)) {
			const char *e = s + 1;
			int p;

			while (name_char(*e, false))
				e++;
			if (*e != '}') {
				s++;
				goto copy;
			}
			p = param_find(sp, s + 1, (size_t)(e - s - 1));
			if (p < 0)
				return error_set(err, errlen, -EINVAL, "unknown parameter {%.*s} in '%s'",
				                 (int)(e - s - 1), s + 1, word);
			if (used)
				used[p] = true;
			if (c) {
				v = sp->params[p].values[c->idx[p]];
				len = strlen(v);
			}
			s = e + 1;
		} else {
			s++;
		}
	copy:
		if (out) {
			if (n + len >= size)
				return error_set(err, errlen, -E2BIG, "a word longer than %zu bytes", size - 1);
			memcpy(out + n, v, len);
			n += len;
		}
	}
	if (out)
		out[n] = '\0';
	return 0;
}

int tune_space_check(const struct tune_space *sp, char *err, size_t errlen)
{
	bool used[TUNE_PARAMS_MAX] = { false };
	int r;

	for (uint32_t k = 0; k < sp->nprogs; k++)
		for (char **w = sp->progs[k]; *w; w++) {
			r = word_subst(sp, NULL, *w, NULL, 0, used, err, errlen);
			if (r)
				return r;
		}
	for (uint32_t i = 0; i < sp->nparams; i++)
		if (!used[i])
			return error_set(err, errlen, -EINVAL, "parameter %s is used by no command (write {%s} in it)",
			                 sp->params[i].name, sp->params[i].name);
	return 0;
}

int tune_space_value_find(const struct tune_space *sp, uint32_t p, const char *v)
{
	for (uint32_t i = 0; i < sp->params[p].nvalues; i++)
		if (!strcmp(sp->params[p].values[i], v))
			return (int)i;
	return -1;
}

int tune_space_value_add(struct tune_space *sp, uint32_t p, const char *v)
{
	int i = tune_space_value_find(sp, p, v), r;

	if (i >= 0)
		return i;
	r = param_push(&sp->params[p], v, strlen(v), NULL, 0);
	return r ? r : (int)sp->params[p].nvalues - 1;
}

uint64_t tune_space_size(const struct tune_space *sp)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < sp->nparams; i++) {
		if (n > UINT64_MAX / sp->params[i].nvalues)
			return UINT64_MAX;
		n *= sp->params[i].nvalues;
	}
	return n;
}

int tune_space_config_parse(const struct tune_space *sp, const char *s, struct tune_config *c, char *err, size_t errlen)
{
	bool seen[TUNE_PARAMS_MAX] = { false };

	memset(c, 0, sizeof(*c));
	while (*s) {
		const char *eq = strchr(s, '='), *comma;
		char v[TUNE_VALUE_MAX];
		size_t len;
		int p, i;

		if (!eq)
			return error_set(err, errlen, -EINVAL, "invalid configuration '%s': NAME=VALUE,...", s);
		p = param_find(sp, s, (size_t)(eq - s));
		if (p < 0)
			return error_set(err, errlen, -EINVAL, "unknown parameter '%.*s' in '%s'", (int)(eq - s), s, s);
		comma = strchr(eq + 1, ',');
		len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (len >= sizeof(v))
			return error_set(err, errlen, -EINVAL, "value of %s too long", sp->params[p].name);
		memcpy(v, eq + 1, len);
		v[len] = '\0';
		i = tune_space_value_find(sp, (uint32_t)p, v);
		if (i < 0)
			return error_set(err, errlen, -EINVAL, "%s=%s is not among the values of %s",
			                 sp->params[p].name, v, sp->params[p].name);
		c->idx[p] = (uint16_t)i;
		seen[p] = true;
		s = comma ? comma + 1 : eq + 1 + len;
	}
	for (uint32_t p = 0; p < sp->nparams; p++)
		if (!seen[p])
			return error_set(err, errlen, -EINVAL, "the configuration gives no value of %s",
			                 sp->params[p].name);
	return 0;
}

const char *tune_space_format(const struct tune_space *sp, const struct tune_config *c, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < sp->nparams && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", i ? " " : "", sp->params[i].name,
		                      sp->params[i].values[c->idx[i]]);
	return buf;
}

char **tune_space_argv(const struct tune_space *sp, const struct tune_config *c, uint32_t prog)
{
	char *const *words = sp->progs[prog];
	char word[TUNE_WORD_MAX], **argv, *text;
	size_t n = 0, room = 0, used = 0;

	/* two passes: the words' lengths, then the block of the right size */
	while (words[n])
		n++;
	for (size_t i = 0; i < n; i++) {
		if (word_subst(sp, c, words[i], word, sizeof(word), NULL, NULL, 0)) {
			errno = E2BIG;
			return NULL;
		}
		room += strlen(word) + 1;
	}
	argv = malloc((n + 1) * sizeof(*argv) + room);
	if (!argv) {
		errno = ENOMEM;
		return NULL;
	}
	text = (char *)(argv + n + 1);
	for (size_t i = 0; i < n; i++) {
		word_subst(sp, c, words[i], text + used, room - used, NULL, NULL, 0);
		argv[i] = text + used;
		used += strlen(text + used) + 1;
	}
	argv[n] = NULL;
	return argv;
}

void tune_space_release(struct tune_space *sp)
{
	for (uint32_t i = 0; i < sp->nparams; i++) {
		free(sp->params[i].values);
		free(sp->params[i].num);
	}
	memset(sp, 0, sizeof(*sp));
}
