/* A trace's tracepoint format texts, checked before libtraceevent reads
 * them.
 *
 * libtraceevent 1.7.1 trusts format texts: it dies of SIGSEGV parsing a
 * __print_symbolic or __print_flags of a field the event does not have,
 * of SIGFPE folding a constant division by zero ("1 / 0"), and recurses
 * once per parenthesis.  A trace is input like any other, so a text goes
 * to libtraceevent only in the shape the kernel writes, first with its
 * print fmt left out (KFTEXT_NO_PRINT_FMT) for the fields alone; the print
 * fmt follows, in a second parse, only when every field it names is one
 * libtraceevent found, it nests at most KFTEXT_DEPTH_MAX deep, divides
 * only by nonzero numbers and takes no width from the record ('*').
 * Otherwise records are printed field by field (kformat.c). */
#ifndef LP_KFTEXT_H
#define LP_KFTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tep_event;

#define KFTEXT_DEPTH_MAX 32u
/* The print fmt given libtraceevent for the fields alone. */
#define KFTEXT_NO_PRINT_FMT "print fmt: \"\"\n"

/* Whether text (len bytes, entry name and id) has the kernel's shape:
 * "name: NAME\nID: ID\nformat:\n", field lines with blank lines between
 * their groups, "print fmt: ...", in printable ASCII.  libtraceevent takes
 * the event's name and id from the first lines; one that disagrees with
 * its entry would be decoded with the fields of another event.
 * *print_at: where the print fmt line starts. */
bool kftext_well_formed(const char *text, size_t len, const char *name, uint32_t id, size_t *print_at);

/* Whether the print fmt [p, end) (after "print fmt: ") may go to
 * libtraceevent, given the fields it found in the text (tev). */
bool kftext_print_fmt_usable(const char *p, const char *end, struct tep_event *tev);

#endif
