/* setjmp-family trampolines for aarch64: note the jmp_buf's call depth, then
 * tail-branch to libc so that libc saves the caller's own context. */
	.text
.macro TRAMPOLINE name, which
	.globl \name
	.type \name, %function
\name:
	.cfi_startproc
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	stp x0, x1, [sp, #16]
	mov w1, #\which
	bl lp_setjmp_note
	mov x16, x0
	ldp x0, x1, [sp, #16]
	ldp x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	br x16
	.cfi_endproc
	.size \name, .-\name
.endm

TRAMPOLINE setjmp, 0
TRAMPOLINE _setjmp, 1
TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack,"",@progbits
