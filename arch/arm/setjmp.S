/* setjmp-family trampolines for 32-bit ARM (EABI): note the jmp_buf's call
 * depth, then tail-branch to libc with sp, lr and every callee-saved
 * register as the caller left them, so that libc saves the caller's own
 * context. ARM state (not Thumb) whatever the compiler's default: bx to
 * libc's address switches state as its low bit says. */
	.syntax unified
	.arm
	.text
.macro TRAMPOLINE name, which
	.globl \name
	.type \name, %function
	.p2align 2
\name:
	.fnstart
	.cfi_startproc
	/* r2 only keeps the stack 8-byte aligned for the call */
	push {r0, r1, r2, lr}
	.save {r0, r1, r2, lr}
	.cfi_def_cfa_offset 16
	.cfi_offset lr, -4
	mov r1, #\which
	bl lp_setjmp_note
	mov ip, r0
	pop {r0, r1, r2, lr}
	.cfi_def_cfa_offset 0
	.cfi_restore lr
	bx ip
	.cfi_endproc
	.fnend
	.size \name, .-\name
.endm

TRAMPOLINE setjmp, 0
TRAMPOLINE _setjmp, 1
TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack,"",%progbits
