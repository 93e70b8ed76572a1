/* Escaping text for the export formats (XML and HTML, JSON inside and
 * outside HTML, folded-stack frames).  Every function writes valid UTF-8:
 * bytes that do not form a UTF-8 sequence become U+FFFD, so a function or
 * thread name with stray bytes cannot make a whole document unreadable. */
#ifndef LP_ESCAPE_H
#define LP_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* The length of the well-formed UTF-8 sequence at p (at most n bytes
 * available): 1 to 4, or 0 when the bytes there are not one (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, cut
 * short).  n must be at least 1. */
size_t escape_utf8_len(const unsigned char *p, size_t n);

/* Writes s for XML and HTML text and attribute values: & < > " ' as
 * entities, tab, newline and carriage return as character references
 * (kept through attribute normalisation), other control characters (not
 * allowed in XML 1.0) and invalid UTF-8 as U+FFFD. */
void escape_xml(FILE *f, const char *s);

/* Writes s as a quoted JSON string literal that is also safe inside an
 * HTML <script> element: < > & and U+2028/U+2029 as \u escapes, control
 * characters escaped, invalid UTF-8 as U+FFFD. */
void escape_json(FILE *f, const char *s);

/* The same for JSON outside HTML (report --format json, live --json, the
 * serve API): < > & and U+2028/U+2029 stay as they are. */
void escape_json_plain(FILE *f, const char *s);

/* Copies s into buf (size > 0) as one frame of a folded stack line: ';'
 * separates frames there, so it becomes ':'; control characters become
 * '?', invalid UTF-8 U+FFFD.  Cuts at a character boundary to fit; always
 * NUL-terminates.  Returns the length written. */
size_t escape_folded_frame(const char *s, char *buf, size_t size);

#endif
