/* Prints what common/elfsyms reads from an ELF file, for the tests that
 * hold it against binutils (tests/integration/test_elfsyms.py):
 *
 *   elf CLASS TYPE MACHINE symtab|dynsym sections|phdrs
 *   fn ADDR SIZE BIND FLAGS ALIASES NAME     (addresses in hex, size decimal)
 *   plt GOT STUB FLAGS NAME
 *
 * BIND is g, w or l; a function's FLAGS are '-' or some of i (IFUNC), t
 * (Thumb), s (short); a slot's are '-' or t (a Thumb entry first) or g
 * (a .plt.got entry).
 * usage: elfsyms_dump FILE; exit status 1 with the error on stderr. */
#include <inttypes.h>
#include <stdio.h>

#include "common/elfsyms.h"

int main(int argc, char **argv)
{
	static const char binds[] = { 'l', 'g', 'w' };
	struct elfsyms *es;
	char err[512], flags[4];
	size_t i;
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: elfsyms_dump FILE\n");
		return 2;
	}
	if (elfsyms_open(argv[1], &es, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("elf %u %u %u %s %s\n", es->elf_class, es->type, es->machine, es->from_dynsym ? "dynsym" : "symtab",
	       es->from_phdrs ? "phdrs" : "sections");
	for (i = 0; i < es->nfn; i++) {
		const struct elfsyms_fn *f = &es->fn[i];

		n = 0;
		if (f->flags & ELFSYMS_FN_IFUNC)
			flags[n++] = 'i';
		if (f->flags & ELFSYMS_FN_THUMB)
			flags[n++] = 't';
		if (f->flags & ELFSYMS_FN_SHORT)
			flags[n++] = 's';
		if (!n)
			flags[n++] = '-';
		flags[n] = '\0';
		printf("fn %" PRIx64 " %" PRIu64 " %c %s %" PRIu32 " %s\n", f->addr, f->size, binds[f->bind], flags,
		       f->aliases, f->name);
	}
	for (i = 0; i < es->nplt; i++) {
		const char *pflags = "-";

		if (es->plt[i].flags & ELFSYMS_PLT_THUMB_ENTRY)
			pflags = "t";
		else if (es->plt[i].flags & ELFSYMS_PLT_GOT)
			pflags = "g";
		printf("plt %" PRIx64 " %" PRIx64 " %s %s\n", es->plt[i].got, es->plt[i].stub, pflags, es->plt[i].name);
	}
	elfsyms_free(es);
	return 0;
}
