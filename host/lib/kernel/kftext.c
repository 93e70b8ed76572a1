/* Format texts checked before libtraceevent reads them (kftext.h). */
#include "host/lib/kernel/kftext.h"

#include <event-parse.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/kernel/kformat.h"

#define TEXT_IDENT_MAX 128u

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool starts(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && !memcmp(p, word, n);
}

/* Reads "N;" (decimal, at most 9 digits) at *p. */
static bool read_number(const char **p, const char *end)
{
	const char *q = *p;

	while (q < end && q - *p < 10 && *q >= '0' && *q <= '9')
		q++;
	if (q == *p || q - *p > 9 || q >= end || *q != ';')
		return false;
	*p = q + 1;
	return true;
}

/* A field's declaration as the kernel writes one: type words and '*',
 * "[]" right after a word (__data_loc char[] name), the name last, then
 * maybe [N] (N a number, or an expression as sizeof(struct x)) or []
 * (ftrace's own events end in a flexible array: char buf[]). */
static bool decl_well_formed(const char *q, const char *e)
{
	bool named = false;

	while (q < e) {
		if (*q == ' ' || *q == '*') {
			q++;
		} else if (is_ident(*q)) {
			while (q < e && is_ident(*q))
				q++;
			named = true;
			if (e - q >= 2 && q[0] == '[' && q[1] == ']') {
				q += 2;
				named = q == e; /* char buf[] last: a flexible array */
			}
		} else if (*q == '[' && named && is_ident(q[-1])) {
			for (q++; q < e && *q != ']'; q++)
				if (!is_ident(*q) && *q != ' ' && *q != '(' && *q != ')' && *q != '*')
					return false;
			return q + 1 == e;
		} else {
			return false;
		}
	}
	return named;
}

/* One "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;\n" line at *p. */
static bool read_field_line(const char **p, const char *end)
{
	const char *q = *p + strlen("\tfield:"), *decl = q;

	while (q < end && *q != ';' && *q != '\n')
		q++;
	if (q >= end || *q != ';' || !decl_well_formed(decl, q))
		return false;
	q++;
	if (!starts(q, end, "\toffset:"))
		return false;
	q += strlen("\toffset:");
	if (!read_number(&q, end) || !starts(q, end, "\tsize:"))
		return false;
	q += strlen("\tsize:");
	if (!read_number(&q, end) || !starts(q, end, "\tsigned:"))
		return false;
	q += strlen("\tsigned:");
	if (!read_number(&q, end) || q >= end || *q != '\n')
		return false;
	*p = q + 1;
	return true;
}

bool kftext_well_formed(const char *text, size_t len, const char *name, uint32_t id, size_t *print_at)
{
	const char *p = text, *end = text + len;
	char head[KFORMAT_NAME_MAX + 48];
	unsigned fields = 0;
	int n;
	size_t i;

	for (i = 0; i < len; i++)
		if ((text[i] < ' ' && text[i] != '\t' && text[i] != '\n') || (unsigned char)text[i] > '~')
			return false;
	n = snprintf(head, sizeof(head), "name: %s\nID: %" PRIu32 "\nformat:\n", name, id);
	if (n <= 0 || (size_t)n >= sizeof(head) || len < (size_t)n || memcmp(text, head, (size_t)n))
		return false;
	for (p += n; p < end && (*p == '\n' || starts(p, end, "\tfield:"));) {
		if (*p == '\n')
			p++;
		else if (read_field_line(&p, end))
			fields++;
		else
			return false;
	}
	if (!fields || !starts(p, end, "print fmt: "))
		return false;
	*print_at = (size_t)(p - text);
	return true;
}

/* Whether the identifier at p names a field libtraceevent found. */
static bool declared(struct tep_event *tev, const char *p, const char *end)
{
	char name[TEXT_IDENT_MAX];
	size_t n = 0;

	while (p + n < end && n < sizeof(name) - 1 && is_ident(p[n]))
		n++;
	if (!n || n == sizeof(name) - 1)
		return false;
	memcpy(name, p, n);
	name[n] = '\0';
	return tep_find_any_field(tev, name) != NULL;
}

/* Whether a divisor (what follows '/' or '%') is a nonzero number. */
static bool nonzero_divisor(const char *p, const char *end)
{
	char num[24];
	size_t n = 0;

	while (p < end && *p == ' ')
		p++;
	while (p + n < end && n < sizeof(num) - 1 && is_ident(p[n]))
		n++;
	if (!n || n == sizeof(num) - 1 || p[0] < '0' || p[0] > '9')
		return false;
	memcpy(num, p, n);
	num[n] = '\0';
	return strtoull(num, NULL, 0) != 0;
}

bool kftext_print_fmt_usable(const char *p, const char *end, struct tep_event *tev)
{
	const char *start = p;
	char open[KFTEXT_DEPTH_MAX];
	unsigned depth = 0, literals = 0;

	while (end > p && end[-1] == '\n')
		end--;
	if (p >= end || *p != '"')
		return false;
	while (p < end) {
		char c = *p;

		if (c == '"') {
			/* a string literal; the first is the format, where a '*'
			 * would take a width from the record */
			for (p++; p < end && *p != '"'; p++) {
				if (*p == '\\')
					p++;
				else if (!literals && *p == '*')
					return false;
			}
			if (p >= end)
				return false;
			literals++;
			p++;
			continue;
		}
		if (c == '[' &&
		    (p == start || !(is_ident(p[-1]) || p[-1] == ')' || p[-1] == ']') || p + 1 >= end || p[1] == ']'))
			return false; /* an index follows a name: REC->args[0] */
		if (c == '-' && p + 1 < end && p[1] == '>')
			return false; /* "->" only in REC->, below */
		if (c == '(' || c == '[' || c == '{') {
			if (depth == KFTEXT_DEPTH_MAX)
				return false;
			open[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
		} else if (c == ')' || c == ']' || c == '}') {
			if (!depth || open[--depth] != c)
				return false;
		} else if ((c == '/' || c == '%') && !nonzero_divisor(p + 1, end)) {
			return false;
		} else if (starts(p, end, "REC->")) {
			p += strlen("REC->");
			if (!declared(tev, p, end))
				return false;
			continue;
		} else if (starts(p, end, "__get_")) {
			/* __get_str(field), __get_dynamic_array(field), ... */
			while (p < end && is_ident(*p))
				p++;
			while (p < end && *p == ' ')
				p++;
			if (p >= end || *p != '(' || depth == KFTEXT_DEPTH_MAX)
				return false;
			open[depth++] = ')';
			for (p++; p < end && *p == ' '; p++)
				;
			if (!declared(tev, p, end))
				return false;
			continue;
		} else if (is_ident(c)) {
			while (p < end && is_ident(*p))
				p++;
			continue;
		} else if (!strchr(" \t,?:+-*/%&|^~!<>=", c)) {
			return false; /* '.', ';', '\'', ... the kernel writes none */
		}
		p++;
	}
	return depth == 0;
}
