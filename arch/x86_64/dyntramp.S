/* The common paths of patched functions (runtime/dynpatch.c), x86-64.
 *
 * Both keep every register the C code they call may change, not only
 * those the calling convention asks for: a compiler that sees a callee's
 * code (its own, -fipa-ra, or a link-time optimised program) lets the
 * caller keep values in the registers the callee does not touch, across
 * the call.
 *
 * lp_dyn_entry: reached from a function's trampoline with %r11 = its
 * record, the caller's %r11 just below the return address (the stub
 * pushed it) and the stack otherwise as at the function's entry.  Calls
 * lp_dyn_enter(record, &return address, stack pointer at the entry), then
 * gives every register back (%r11 last) and goes where it says (the
 * function's relocated first instructions).
 *
 * lp_dyn_return: where a patched function returns to.  Calls
 * lp_dyn_exit(the function's stack pointer at its entry), gives every
 * register back and returns to the address it gives (the x87 stack is not
 * touched by the runtime). */
	.text
	.globl lp_dyn_entry
	.hidden lp_dyn_entry
	.type lp_dyn_entry, @function
lp_dyn_entry:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	sub $8, %rsp /* where the continuation goes */
	.cfi_adjust_cfa_offset 8
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %rcx
	.cfi_adjust_cfa_offset 8
	push %r8
	.cfi_adjust_cfa_offset 8
	push %r9
	.cfi_adjust_cfa_offset 8
	push %r10
	.cfi_adjust_cfa_offset 8
	/* 10 words below a stack that was 8 off 16 bytes: 264 more align it */
	sub $264, %rsp
	.cfi_adjust_cfa_offset 264
	movups %xmm0, 0(%rsp)
	movups %xmm1, 16(%rsp)
	movups %xmm2, 32(%rsp)
	movups %xmm3, 48(%rsp)
	movups %xmm4, 64(%rsp)
	movups %xmm5, 80(%rsp)
	movups %xmm6, 96(%rsp)
	movups %xmm7, 112(%rsp)
	movups %xmm8, 128(%rsp)
	movups %xmm9, 144(%rsp)
	movups %xmm10, 160(%rsp)
	movups %xmm11, 176(%rsp)
	movups %xmm12, 192(%rsp)
	movups %xmm13, 208(%rsp)
	movups %xmm14, 224(%rsp)
	movups %xmm15, 240(%rsp)
	mov %r11, %rdi
	lea 344(%rsp), %rsi
	mov %rsi, %rdx
	call lp_dyn_enter
	mov %rax, 328(%rsp)
	movups 0(%rsp), %xmm0
	movups 16(%rsp), %xmm1
	movups 32(%rsp), %xmm2
	movups 48(%rsp), %xmm3
	movups 64(%rsp), %xmm4
	movups 80(%rsp), %xmm5
	movups 96(%rsp), %xmm6
	movups 112(%rsp), %xmm7
	movups 128(%rsp), %xmm8
	movups 144(%rsp), %xmm9
	movups 160(%rsp), %xmm10
	movups 176(%rsp), %xmm11
	movups 192(%rsp), %xmm12
	movups 208(%rsp), %xmm13
	movups 224(%rsp), %xmm14
	movups 240(%rsp), %xmm15
	add $264, %rsp
	.cfi_adjust_cfa_offset -264
	pop %r10
	.cfi_adjust_cfa_offset -8
	pop %r9
	.cfi_adjust_cfa_offset -8
	pop %r8
	.cfi_adjust_cfa_offset -8
	pop %rcx
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	/* the caller's %r11 back, the two words dropped, and a jump through
	 * the continuation's slot, now in the red zone (a signal frame goes
	 * below it): a ret would unbalance the return predictor */
	mov 8(%rsp), %r11
	lea 16(%rsp), %rsp
	.cfi_adjust_cfa_offset -16
	jmp *-16(%rsp)
	.cfi_endproc
	.size lp_dyn_entry, .-lp_dyn_entry

	.globl lp_dyn_return
	.hidden lp_dyn_return
	.type lp_dyn_return, @function
	/* the caller's frame is found through the real return address, which
	 * only the runtime knows: unwinders stop here.  An unwinder looks up
	 * a return address less one: the byte before is this code's too */
	.cfi_startproc
	.cfi_undefined rip
	nop
lp_dyn_return:
	/* the function has returned: the stack is as its caller left it
	 * before the call, 16-byte aligned */
	sub $8, %rsp /* the real return address goes here */
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	push %r11
	sub $256, %rsp
	movups %xmm0, 0(%rsp)
	movups %xmm1, 16(%rsp)
	movups %xmm2, 32(%rsp)
	movups %xmm3, 48(%rsp)
	movups %xmm4, 64(%rsp)
	movups %xmm5, 80(%rsp)
	movups %xmm6, 96(%rsp)
	movups %xmm7, 112(%rsp)
	movups %xmm8, 128(%rsp)
	movups %xmm9, 144(%rsp)
	movups %xmm10, 160(%rsp)
	movups %xmm11, 176(%rsp)
	movups %xmm12, 192(%rsp)
	movups %xmm13, 208(%rsp)
	movups %xmm14, 224(%rsp)
	movups %xmm15, 240(%rsp)
	lea 328(%rsp), %rdi /* where the return address was: the entry's stack pointer */
	call lp_dyn_exit
	mov %rax, 328(%rsp)
	movups 0(%rsp), %xmm0
	movups 16(%rsp), %xmm1
	movups 32(%rsp), %xmm2
	movups 48(%rsp), %xmm3
	movups 64(%rsp), %xmm4
	movups 80(%rsp), %xmm5
	movups 96(%rsp), %xmm6
	movups 112(%rsp), %xmm7
	movups 128(%rsp), %xmm8
	movups 144(%rsp), %xmm9
	movups 160(%rsp), %xmm10
	movups 176(%rsp), %xmm11
	movups 192(%rsp), %xmm12
	movups 208(%rsp), %xmm13
	movups 224(%rsp), %xmm14
	movups 240(%rsp), %xmm15
	add $256, %rsp
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	ret
	.cfi_endproc
	.size lp_dyn_return, .-lp_dyn_return

	/* lp_dyn_probe: called from a probe's trampoline (its return address
	 * on the stack, %r11 = the record, the caller's %r11 below it and the
	 * red zone stepped over): every register and the flags kept,
	 * lp_dyn_probe_hit(record) called on a 16-byte aligned stack */
	.globl lp_dyn_probe
	.hidden lp_dyn_probe
	.type lp_dyn_probe, @function
lp_dyn_probe:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	cld
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rcx
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %r8
	.cfi_adjust_cfa_offset 8
	push %r9
	.cfi_adjust_cfa_offset 8
	push %r10
	.cfi_adjust_cfa_offset 8
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -88
	mov %rsp, %rbx
	.cfi_def_cfa_register rbx
	and $-16, %rsp
	sub $256, %rsp
	movups %xmm0, 0(%rsp)
	movups %xmm1, 16(%rsp)
	movups %xmm2, 32(%rsp)
	movups %xmm3, 48(%rsp)
	movups %xmm4, 64(%rsp)
	movups %xmm5, 80(%rsp)
	movups %xmm6, 96(%rsp)
	movups %xmm7, 112(%rsp)
	movups %xmm8, 128(%rsp)
	movups %xmm9, 144(%rsp)
	movups %xmm10, 160(%rsp)
	movups %xmm11, 176(%rsp)
	movups %xmm12, 192(%rsp)
	movups %xmm13, 208(%rsp)
	movups %xmm14, 224(%rsp)
	movups %xmm15, 240(%rsp)
	mov %r11, %rdi
	call lp_dyn_probe_hit
	movups 0(%rsp), %xmm0
	movups 16(%rsp), %xmm1
	movups 32(%rsp), %xmm2
	movups 48(%rsp), %xmm3
	movups 64(%rsp), %xmm4
	movups 80(%rsp), %xmm5
	movups 96(%rsp), %xmm6
	movups 112(%rsp), %xmm7
	movups 128(%rsp), %xmm8
	movups 144(%rsp), %xmm9
	movups 160(%rsp), %xmm10
	movups 176(%rsp), %xmm11
	movups 192(%rsp), %xmm12
	movups 208(%rsp), %xmm13
	movups 224(%rsp), %xmm14
	movups 240(%rsp), %xmm15
	mov %rbx, %rsp
	.cfi_def_cfa_register rsp
	pop %rbx
	.cfi_adjust_cfa_offset -8
	pop %r10
	.cfi_adjust_cfa_offset -8
	pop %r9
	.cfi_adjust_cfa_offset -8
	pop %r8
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rcx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	popfq
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size lp_dyn_probe, .-lp_dyn_probe

	/* __cxa_begin_catch, as the runtime wraps it: the catching frame's
	 * stack pointer (after this call returns) goes with the exception */
	.globl __cxa_begin_catch
	.type __cxa_begin_catch, @function
__cxa_begin_catch:
	.cfi_startproc
	lea 8(%rsp), %rsi
	jmp lp_dyn_begin_catch
	.cfi_endproc
	.size __cxa_begin_catch, .-__cxa_begin_catch

	.section .note.GNU-stack,"",@progbits
