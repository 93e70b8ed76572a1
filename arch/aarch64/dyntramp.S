/* The common paths of patched functions (runtime/dynpatch.c), aarch64.
 *
 * Both keep every register the C code they call may change (x0-x15, x18,
 * q0-q31), not only those the calling convention asks for: a compiler
 * that sees a callee's code (-fipa-ra, link-time optimisation) lets the
 * caller keep values in the registers the callee does not touch, across
 * the call.  x16 and x17 are free at any call (veneers use them).
 *
 * lp_dyn_entry: reached from a function's trampoline with x16 = its record,
 * x30 = the caller's return address and sp as at the function's entry.
 * Calls lp_dyn_enter(record, &saved x30, sp) and branches where it says
 * (the function's relocated first instruction) with x30 as lp_dyn_enter
 * left it.
 *
 * lp_dyn_return: where a patched function returns to.  Calls
 * lp_dyn_exit(sp) and returns to the address it gives. */
	.text
	.globl lp_dyn_entry
	.hidden lp_dyn_entry
	.type lp_dyn_entry, %function
lp_dyn_entry:
	.cfi_startproc
	sub sp, sp, #672
	.cfi_def_cfa_offset 672
	stp x29, x30, [sp]
	.cfi_offset 29, -672
	.cfi_offset 30, -664
	stp x0, x1, [sp, #16]
	stp x2, x3, [sp, #32]
	stp x4, x5, [sp, #48]
	stp x6, x7, [sp, #64]
	stp x8, x9, [sp, #80]
	stp x10, x11, [sp, #96]
	stp x12, x13, [sp, #112]
	stp x14, x15, [sp, #128]
	str x18, [sp, #144]
	stp q0, q1, [sp, #160]
	stp q2, q3, [sp, #192]
	stp q4, q5, [sp, #224]
	stp q6, q7, [sp, #256]
	stp q8, q9, [sp, #288]
	stp q10, q11, [sp, #320]
	stp q12, q13, [sp, #352]
	stp q14, q15, [sp, #384]
	stp q16, q17, [sp, #416]
	stp q18, q19, [sp, #448]
	stp q20, q21, [sp, #480]
	stp q22, q23, [sp, #512]
	stp q24, q25, [sp, #544]
	stp q26, q27, [sp, #576]
	stp q28, q29, [sp, #608]
	stp q30, q31, [sp, #640]
	mov x0, x16
	add x1, sp, #8
	add x2, sp, #672
	bl lp_dyn_enter
	mov x16, x0
	ldp x0, x1, [sp, #16]
	ldp x2, x3, [sp, #32]
	ldp x4, x5, [sp, #48]
	ldp x6, x7, [sp, #64]
	ldp x8, x9, [sp, #80]
	ldp x10, x11, [sp, #96]
	ldp x12, x13, [sp, #112]
	ldp x14, x15, [sp, #128]
	ldr x18, [sp, #144]
	ldp q0, q1, [sp, #160]
	ldp q2, q3, [sp, #192]
	ldp q4, q5, [sp, #224]
	ldp q6, q7, [sp, #256]
	ldp q8, q9, [sp, #288]
	ldp q10, q11, [sp, #320]
	ldp q12, q13, [sp, #352]
	ldp q14, q15, [sp, #384]
	ldp q16, q17, [sp, #416]
	ldp q18, q19, [sp, #448]
	ldp q20, q21, [sp, #480]
	ldp q22, q23, [sp, #512]
	ldp q24, q25, [sp, #544]
	ldp q26, q27, [sp, #576]
	ldp q28, q29, [sp, #608]
	ldp q30, q31, [sp, #640]
	ldp x29, x30, [sp]
	add sp, sp, #672
	.cfi_def_cfa_offset 0
	br x16
	.cfi_endproc
	.size lp_dyn_entry, .-lp_dyn_entry

	.globl lp_dyn_return
	.hidden lp_dyn_return
	.type lp_dyn_return, %function
	/* the caller's frame is found through the real return address, which
	 * only the runtime knows: unwinders stop here.  An unwinder looks up
	 * a return address less one: the instruction before is this code's */
	.cfi_startproc
	.cfi_undefined x30
	nop
lp_dyn_return:
	sub sp, sp, #672
	stp x29, x30, [sp]
	stp x0, x1, [sp, #16]
	stp x2, x3, [sp, #32]
	stp x4, x5, [sp, #48]
	stp x6, x7, [sp, #64]
	stp x8, x9, [sp, #80]
	stp x10, x11, [sp, #96]
	stp x12, x13, [sp, #112]
	stp x14, x15, [sp, #128]
	str x18, [sp, #144]
	stp q0, q1, [sp, #160]
	stp q2, q3, [sp, #192]
	stp q4, q5, [sp, #224]
	stp q6, q7, [sp, #256]
	stp q8, q9, [sp, #288]
	stp q10, q11, [sp, #320]
	stp q12, q13, [sp, #352]
	stp q14, q15, [sp, #384]
	stp q16, q17, [sp, #416]
	stp q18, q19, [sp, #448]
	stp q20, q21, [sp, #480]
	stp q22, q23, [sp, #512]
	stp q24, q25, [sp, #544]
	stp q26, q27, [sp, #576]
	stp q28, q29, [sp, #608]
	stp q30, q31, [sp, #640]
	add x0, sp, #672
	bl lp_dyn_exit
	mov x16, x0
	ldp x0, x1, [sp, #16]
	ldp x2, x3, [sp, #32]
	ldp x4, x5, [sp, #48]
	ldp x6, x7, [sp, #64]
	ldp x8, x9, [sp, #80]
	ldp x10, x11, [sp, #96]
	ldp x12, x13, [sp, #112]
	ldp x14, x15, [sp, #128]
	ldr x18, [sp, #144]
	ldp q0, q1, [sp, #160]
	ldp q2, q3, [sp, #192]
	ldp q4, q5, [sp, #224]
	ldp q6, q7, [sp, #256]
	ldp q8, q9, [sp, #288]
	ldp q10, q11, [sp, #320]
	ldp q12, q13, [sp, #352]
	ldp q14, q15, [sp, #384]
	ldp q16, q17, [sp, #416]
	ldp q18, q19, [sp, #448]
	ldp q20, q21, [sp, #480]
	ldp q22, q23, [sp, #512]
	ldp q24, q25, [sp, #544]
	ldp q26, q27, [sp, #576]
	ldp q28, q29, [sp, #608]
	ldp q30, q31, [sp, #640]
	ldp x29, x30, [sp]
	add sp, sp, #672
	mov x30, x16
	ret
	.cfi_endproc
	.size lp_dyn_return, .-lp_dyn_return

	/* lp_dyn_probe: called (blr) from a probe's trampoline with x16 = the
	 * record (x16, x17 and x30 kept there): every other register the C
	 * code may change (x0-x15, x18, the whole of q0-q31), the flags and
	 * the floating-point status kept, lp_dyn_probe_hit(record) called */
	.globl lp_dyn_probe
	.hidden lp_dyn_probe
	.type lp_dyn_probe, %function
lp_dyn_probe:
	.cfi_startproc
	sub sp, sp, #688
	.cfi_def_cfa_offset 688
	stp x29, x30, [sp]
	.cfi_offset 29, -688
	.cfi_offset 30, -680
	stp x0, x1, [sp, #16]
	stp x2, x3, [sp, #32]
	stp x4, x5, [sp, #48]
	stp x6, x7, [sp, #64]
	stp x8, x9, [sp, #80]
	stp x10, x11, [sp, #96]
	stp x12, x13, [sp, #112]
	stp x14, x15, [sp, #128]
	mrs x0, nzcv
	mrs x1, fpsr
	stp x0, x1, [sp, #144]
	str x18, [sp, #160]
	stp q0, q1, [sp, #176]
	stp q2, q3, [sp, #208]
	stp q4, q5, [sp, #240]
	stp q6, q7, [sp, #272]
	stp q8, q9, [sp, #304]
	stp q10, q11, [sp, #336]
	stp q12, q13, [sp, #368]
	stp q14, q15, [sp, #400]
	stp q16, q17, [sp, #432]
	stp q18, q19, [sp, #464]
	stp q20, q21, [sp, #496]
	stp q22, q23, [sp, #528]
	stp q24, q25, [sp, #560]
	stp q26, q27, [sp, #592]
	stp q28, q29, [sp, #624]
	stp q30, q31, [sp, #656]
	mov x0, x16
	bl lp_dyn_probe_hit
	ldp q0, q1, [sp, #176]
	ldp q2, q3, [sp, #208]
	ldp q4, q5, [sp, #240]
	ldp q6, q7, [sp, #272]
	ldp q8, q9, [sp, #304]
	ldp q10, q11, [sp, #336]
	ldp q12, q13, [sp, #368]
	ldp q14, q15, [sp, #400]
	ldp q16, q17, [sp, #432]
	ldp q18, q19, [sp, #464]
	ldp q20, q21, [sp, #496]
	ldp q22, q23, [sp, #528]
	ldp q24, q25, [sp, #560]
	ldp q26, q27, [sp, #592]
	ldp q28, q29, [sp, #624]
	ldp q30, q31, [sp, #656]
	ldr x18, [sp, #160]
	ldp x0, x1, [sp, #144]
	msr nzcv, x0
	msr fpsr, x1
	ldp x0, x1, [sp, #16]
	ldp x2, x3, [sp, #32]
	ldp x4, x5, [sp, #48]
	ldp x6, x7, [sp, #64]
	ldp x8, x9, [sp, #80]
	ldp x10, x11, [sp, #96]
	ldp x12, x13, [sp, #112]
	ldp x14, x15, [sp, #128]
	ldp x29, x30, [sp]
	add sp, sp, #688
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size lp_dyn_probe, .-lp_dyn_probe

	/* __cxa_begin_catch, as the runtime wraps it: the catching frame's
	 * stack pointer goes with the exception */
	.globl __cxa_begin_catch
	.type __cxa_begin_catch, %function
__cxa_begin_catch:
	.cfi_startproc
	mov x1, sp
	b lp_dyn_begin_catch
	.cfi_endproc
	.size __cxa_begin_catch, .-__cxa_begin_catch

	.section .note.GNU-stack,"",@progbits
