/* Prints what dyntrace/x86insn decodes in the functions of an x86-64 ELF
 * file, for tests/integration/test_x86insn.py to hold against objdump:
 * each function swept from its start to its end,
 *
 *   ADDR LEN KIND REL-TARGET RIP-TARGET   (hex; '-' for none)
 *   ADDR ?                                 (not decoded: the rest of the
 *                                           function is skipped)
 *
 * KIND is the enum x86_kind number.
 * usage: x86insn_dump FILE; exit status 1 with the error on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>

#include "common/elfsyms.h"
#include "dyntrace/dselect.h"
#include "dyntrace/x86insn.h"

int main(int argc, char **argv)
{
	struct elfsyms *es;
	struct dseg seg[DSEG_MAX];
	uint8_t *bytes[DSEG_MAX] = { NULL };
	unsigned nseg;
	char err[512];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: x86insn_dump FILE\n");
		return 2;
	}
	if (elfsyms_open(argv[1], &es, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || dsel_segments(argv[1], es->elf_class, seg, &nseg, NULL)) {
		fprintf(stderr, "%s: cannot read its segments\n", argv[1]);
		return 1;
	}
	for (unsigned s = 0; s < nseg; s++) {
		bytes[s] = malloc(seg[s].filesz ? seg[s].filesz : 1);
		if (!bytes[s] || pread(fd, bytes[s], seg[s].filesz, (off_t)seg[s].offset) != (ssize_t)seg[s].filesz) {
			fprintf(stderr, "%s: cannot read its code\n", argv[1]);
			return 1;
		}
	}
	for (size_t i = 0; i < es->nfn; i++) {
		const struct elfsyms_fn *f = &es->fn[i];

		for (unsigned s = 0; s < nseg; s++) {
			uint64_t off;

			if (f->addr < seg[s].vaddr || f->addr + f->size > seg[s].vaddr + seg[s].filesz)
				continue;
			off = f->addr - seg[s].vaddr;
			for (uint64_t at = 0; at < f->size;) {
				struct x86_insn in;
				unsigned len = x86_insn_decode(bytes[s] + off + at, (size_t)(f->size - at), &in);
				uint64_t a = f->addr + at;

				if (!len) {
					printf("%" PRIx64 " ?\n", a);
					break;
				}
				printf("%" PRIx64 " %u %u ", a, len, in.kind);
				if (in.kind == X86_JMP_REL || in.kind == X86_JCC_REL || in.kind == X86_CALL_REL ||
				    in.kind == X86_LOOP_REL || in.kind == X86_XBEGIN)
					printf("%" PRIx64, a + len + (uint64_t)in.rel);
				else
					printf("-");
				if (in.rip_off)
					printf(" %" PRIx64 "\n", a + len + (uint64_t)(int64_t)in.disp);
				else
					printf(" -\n");
				at += len;
			}
			break;
		}
	}
	for (unsigned s = 0; s < nseg; s++)
		free(bytes[s]);
	close(fd);
	elfsyms_free(es);
	return 0;
}
