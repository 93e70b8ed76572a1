/* Escaping text for the export formats (see escape.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "host/lib/util/escape.h"

#define REPLACEMENT_CHAR "\xef\xbf\xbd" /* U+FFFD in UTF-8 */
#define REPLACEMENT_LEN 3u

size_t escape_utf8_len(const unsigned char *p, size_t n)
{
	uint32_t c;
	size_t len, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1fu;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0fu;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07u;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3fu);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

void escape_xml(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), n;

	while (left) {
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		case '\t':
			fputs("&#9;", f);
			break;
		case '\n':
			fputs("&#10;", f);
			break;
		case '\r':
			fputs("&#13;", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fputs(REPLACEMENT_CHAR, f);
				break;
			}
			n = escape_utf8_len(p, left);
			if (!n) {
				fputs(REPLACEMENT_CHAR, f);
				break;
			}
			fwrite(p, 1, n, f);
			p += n;
			left -= n;
			continue;
		}
		p++;
		left--;
	}
}

/* The one JSON string writer: html also escapes what could end a <script>
 * element or a line in older JavaScript. */
static void json_literal(FILE *f, const char *s, bool html)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), n;

	fputc('"', f);
	while (left) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f || (html && (*p == '<' || *p == '>' || *p == '&'))) {
				fprintf(f, "\\u%04x", *p);
				break;
			}
			n = escape_utf8_len(p, left);
			if (!n) {
				fputs(REPLACEMENT_CHAR, f);
				break;
			}
			/* line and paragraph separators end a line in older JavaScript */
			if (html && n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
				fprintf(f, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
			else
				fwrite(p, 1, n, f);
			p += n;
			left -= n;
			continue;
		}
		p++;
		left--;
	}
	fputc('"', f);
}

void escape_json(FILE *f, const char *s)
{
	json_literal(f, s, true);
}

void escape_json_plain(FILE *f, const char *s)
{
	json_literal(f, s, false);
}

size_t escape_folded_frame(const char *s, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), out = 0, n;

	while (left) {
		const char *piece;
		char one;

		if (*p == ';' || *p < 0x20 || *p == 0x7f) {
			one = *p == ';' ? ':' : '?';
			piece = &one;
			n = 1;
		} else if (!(n = escape_utf8_len(p, left))) {
			piece = REPLACEMENT_CHAR;
			n = REPLACEMENT_LEN;
		} else {
			piece = (const char *)p;
		}
		if (out + n >= size)
			break;
		memcpy(buf + out, piece, n);
		out += n;
		if (piece == (const char *)p) {
			p += n;
			left -= n;
		} else {
			p++;
			left--;
		}
	}
	buf[out] = '\0';
	return out;
}
