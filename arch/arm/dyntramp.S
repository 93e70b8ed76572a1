/* The common paths of patched functions (runtime/dynpatch.c), 32-bit ARM
 * (EABI).  ARM state whatever the compiler's default: a trampoline enters
 * by a load of pc, a function returns by bx lr or a pop of pc, and both
 * switch state as the address's bit 0 says.
 *
 * lp_dyn_entry: reached from a function's trampoline with ip = its record,
 * lr = the caller's return address (bit 0 set for a Thumb caller) and sp as
 * at the function's entry.  Keeps every register a function may receive an
 * argument in (r0-r3; d0-d7 with the hard-float ABI), calls
 * lp_dyn_enter(record, &saved lr, sp) and goes where it says (the
 * function's relocated first instructions, bit 0 set for Thumb code) with
 * lr as lp_dyn_enter left it.
 *
 * lp_dyn_return: where a patched function returns to.  Keeps r0-r3 (and
 * d0-d7 with the hard-float ABI), calls
 * lp_dyn_exit(sp) and goes to the address it gives by bx. */
	.syntax unified
	.arm
#if defined(__ARM_PCS_VFP)
	.fpu vfpv3-d16
#endif
	.text

	.globl lp_dyn_entry
	.hidden lp_dyn_entry
	.type lp_dyn_entry, %function
	.p2align 2
lp_dyn_entry:
	.fnstart
	.cfi_startproc
	/* ip keeps the stack 8-byte aligned: lr lies at the entry's sp - 4 */
	push {r0, r1, r2, r3, ip, lr}
	.save {r0, r1, r2, r3, ip, lr}
	.cfi_def_cfa_offset 24
	.cfi_offset lr, -4
#if defined(__ARM_PCS_VFP)
	vpush {d0-d7}
	.vsave {d0-d7}
	.cfi_def_cfa_offset 88
#define ENTRY_FRAME 88
#else
#define ENTRY_FRAME 24
#endif
	mov r0, ip
	add r1, sp, #(ENTRY_FRAME - 4)
	add r2, sp, #ENTRY_FRAME
	bl lp_dyn_enter
	mov ip, r0
#if defined(__ARM_PCS_VFP)
	vpop {d0-d7}
#endif
	pop {r0, r1, r2, r3}
	add sp, sp, #4
	pop {lr}
	.cfi_def_cfa_offset 0
	.cfi_restore lr
	bx ip
	.cfi_endproc
	.fnend
	.size lp_dyn_entry, .-lp_dyn_entry

	.globl lp_dyn_return
	.hidden lp_dyn_return
	.type lp_dyn_return, %function
	.p2align 2
	/* the caller's frame is found through the real return address, which
	 * only the runtime knows: unwinders stop here.  An unwinder looks up
	 * a return address less 2: the instruction before is this code's */
	.fnstart
	.cantunwind
	nop
lp_dyn_return:
	push {r0, r1, r2, r3}
#if defined(__ARM_PCS_VFP)
	/* d4-d7 too: the C code may change them, and a caller that knows the
	 * callee does not (-fipa-ra) keeps values there across the call */
	vpush {d0-d7}
#define RETURN_FRAME 80
#else
#define RETURN_FRAME 16
#endif
	add r0, sp, #RETURN_FRAME
	bl lp_dyn_exit
	mov ip, r0
#if defined(__ARM_PCS_VFP)
	vpop {d0-d7}
#endif
	pop {r0, r1, r2, r3}
	bx ip
	.fnend
	.size lp_dyn_return, .-lp_dyn_return

	/* __cxa_begin_catch, as the runtime wraps it: the catching frame's
	 * stack pointer goes with the exception */
	.globl __cxa_begin_catch
	.type __cxa_begin_catch, %function
	.p2align 2
__cxa_begin_catch:
	.fnstart
	.cfi_startproc
	push {r4, lr}
	.save {r4, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset lr, -4
	add r1, sp, #8
	bl lp_dyn_begin_catch
	pop {r4, pc}
	.cfi_endproc
	.fnend
	.size __cxa_begin_catch, .-__cxa_begin_catch

	.section .note.GNU-stack,"",%progbits
