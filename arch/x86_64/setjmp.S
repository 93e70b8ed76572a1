/* setjmp-family trampolines for x86-64: note the jmp_buf's call depth, then
 * tail-jump to libc so that libc saves the caller's own context. */
	.text
.macro TRAMPOLINE name, which
	.globl \name
	.type \name, @function
\name:
	.cfi_startproc
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	mov $\which, %esi
	call lp_setjmp_note
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	jmp *%rax
	.cfi_endproc
	.size \name, .-\name
.endm

TRAMPOLINE setjmp, 0
TRAMPOLINE _setjmp, 1
TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack,"",@progbits
