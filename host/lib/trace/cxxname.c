/* Reading demangled names (see cxxname.h): one pass over the name with a
 * stack of the brackets it is inside, so that spaces and parentheses are
 * only taken where they separate the parts (not inside template arguments,
 * parameter lists, "(anonymous namespace)" or "{lambda(int)#1}"). */
#include "host/lib/trace/cxxname.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler; C-callable, returns a malloc'd string. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Brackets followed; a deeper name is read as one word. */
#define CXXNAME_NEST_MAX 256

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* The length of the operator symbol at p (after "operator" and its
 * blanks), whose '<', '>', '(' and '[' are no brackets: "operator<",
 * "operator()", "operator->*".  The longest that fits, so that
 * "operator!=<int>" is "!=" followed by template arguments.  0 for the
 * words (new, delete, a conversion's type), which read as usual. */
static size_t operator_symbol(const char *p)
{
	static const char *const symbols[] = {
		"->*", "<=>", "<<=", ">>=", "()", "[]", "->", "<<", ">>", "<=", ">=", "==",   "!=", "&&",
		"||",  "++",  "--",  "+=",  "-=", "*=", "/=", "%=", "^=", "&=", "|=", "\"\"", "+",  "-",
		"*",   "/",   "%",   "^",   "&",  "|",  "~",  "!",  "=",  "<",  ">",  ",",
	};
	size_t i;

	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		size_t n = strlen(symbols[i]);

		if (!strncmp(p, symbols[i], n))
			return n;
	}
	return 0;
}

static char closer_of(char open)
{
	switch (open) {
	case '(':
		return ')';
	case '[':
		return ']';
	case '{':
		return '}';
	default:
		return '>';
	}
}

void cxxname_split(const char *name, struct cxxname *out)
{
	size_t n = strlen(name), i, depth = 0, space = SIZE_MAX, op = SIZE_MAX, group = 0;
	char stack[CXXNAME_NEST_MAX];

	out->start = 0;
	out->params = n;
	out->len = n;
	out->has_params = false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (c == 'o' && !strncmp(name + i, "operator", 8) && (i == 0 || !is_ident(name[i - 1])) &&
		    !is_ident(name[i + 8])) {
			size_t j = i + 8, sym;

			if (!depth && op == SIZE_MAX && !out->has_params)
				op = i;
			while (name[j] == ' ')
				j++;
			sym = operator_symbol(name + j);
			i = sym ? j + sym - 1 : i + 7;
			continue;
		}
		switch (c) {
		case '<':
			/* inside (), [] and {} an angle may be a comparison: only
			 * their own brackets count there */
			if (depth && stack[depth - 1] != '<')
				break;
			__attribute__((fallthrough));
		case '(':
		case '[':
		case '{':
			if (depth == CXXNAME_NEST_MAX)
				goto unreadable;
			if (!depth)
				group = i;
			stack[depth++] = c;
			break;
		case '>':
			if (depth && stack[depth - 1] == '<')
				depth--;
			break;
		case ')':
		case ']':
		case '}':
			if (!depth || closer_of(stack[depth - 1]) != c)
				goto unreadable;
			depth--;
			/* a top-level (...) not followed by "::" is the parameter
			 * list: "(anonymous namespace)::f(int)" has one, at f */
			if (!depth && c == ')' && !out->has_params && strncmp(name + i + 1, "::", 2)) {
				out->params = group;
				out->has_params = true;
			}
			break;
		case ' ':
			if (!depth && op == SIZE_MAX && !out->has_params)
				space = i;
			break;
		default:
			break;
		}
	}
	if (depth)
		goto unreadable;
	/* the return type ends at the last blank before the name (or before
	 * "operator", whose own words may hold blanks: "operator new") */
	if (space != SIZE_MAX && space < out->params)
		out->start = space + 1;
	return;
unreadable:
	out->start = 0;
	out->params = n;
	out->has_params = false;
}

const char *cxxname_demangle(const char *raw, char *buf, size_t size)
{
	int status = -1;
	char *out;

	if (raw[0] != '_' || raw[1] != 'Z' || strlen(raw) > CXXNAME_DEMANGLE_MAX)
		return raw;
	out = __cxa_demangle(raw, NULL, NULL, &status);
	if (!out || status != 0) {
		free(out);
		return raw;
	}
	snprintf(buf, size, "%s", out);
	free(out);
	return buf;
}
