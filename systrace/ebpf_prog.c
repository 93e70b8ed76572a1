/* The eBPF backend's programs, written instruction by instruction (see
 * ebpf.c for what they do together).  Registers: r6 the context, r7 the
 * thread's call slot, r8 and r9 what must survive helper calls; the stack
 * below r10 holds map keys. */
#include "systrace/ebpf_impl.h"

/* Jump targets inside one program. */
enum eb_label {
	L_OUT,
	L_READ,
	L_EMIT,
	L_DEL,
	L_WRITTEN,
	L_FAILED,
	L_ARG, /* L_ARG + i: the test for argument i */
};

/* r0 = the value of `map` under the key stored at r10 + off (0: none). */
static void eb_emit_lookup(struct bpfprog *p, int map, int16_t off)
{
	bpfprog_emit(p, BI_MOV(BPF_REG_2, BPF_REG_10));
	bpfprog_emit(p, BI_ADDI(BPF_REG_2, off));
	bpfprog_map(p, BPF_REG_1, map);
	bpfprog_emit(p, BI_CALL(BPF_FUNC_map_lookup_elem));
}

/* r0 = the tasks map's value of the current thread (0: not traced), the
 * key at r10-4; r8 = pid_tgid when keep_id. */
static void eb_emit_lookup_self(struct bpfprog *p, const struct eb_state *eb, bool keep_id)
{
	bpfprog_emit(p, BI_CALL(BPF_FUNC_get_current_pid_tgid));
	if (keep_id)
		bpfprog_emit(p, BI_MOV(BPF_REG_8, BPF_REG_0));
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_10, BPF_REG_0, -4));
	/* the gate first: an array lookup the verifier inlines, so that the
	 * other tasks of the system pay little */
	bpfprog_emit(p, BI_ANDI(BPF_REG_0, EB_GATE_SIZE - 1));
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_10, BPF_REG_0, -16));
	eb_emit_lookup(p, eb->maps[EB_GATE], -16);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_LDX(BPF_W, BPF_REG_1, BPF_REG_0, 0));
	bpfprog_jump(p, BPF_JEQ, BPF_REG_1, 0, L_OUT);
	eb_emit_lookup(p, eb->maps[EB_TASKS], -4);
}

/* Every program returns 1: a tracepoint program's 0 would stop the kernel
 * from writing that tracepoint's records for every other perf event on it
 * (the kernel layer's sched_process_fork, or another tool's); a raw
 * tracepoint program's value is ignored. */
static void eb_emit_out(struct bpfprog *p)
{
	bpfprog_label(p, L_OUT);
	bpfprog_emit(p, BI_MOVI(BPF_REG_0, 1));
	bpfprog_emit(p, BI_EXIT());
}

/* raw_syscalls:sys_enter (raw: ctx = { regs, id }): note the call in the
 * thread's slot with its registers, stack words and path. */
void eb_prog_enter(struct bpfprog *p, const struct eb_state *eb)
{
#ifndef EB_NO_ARCH
	bpfprog_init(p);
	bpfprog_emit(p, BI_MOV(BPF_REG_6, BPF_REG_1));
	eb_emit_lookup_self(p, eb, true);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_MOV(BPF_REG_7, BPF_REG_0));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_8, EB_OFF(tid)));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_8, BPF_REG_6, 8));
	bpfprog_jump(p, BPF_JGT, BPF_REG_8, SYS_NR_MAX - 1, L_OUT); /* also -1: no syscall */
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_10, BPF_REG_8, -8));
	eb_emit_lookup(p, eb->maps[EB_SEL], -8);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_LDX(BPF_W, BPF_REG_9, BPF_REG_0, 0));
	bpfprog_jump(p, BPF_JEQ, BPF_REG_9, 0, L_OUT);
	bpfprog_emit(p, BI_CALL(BPF_FUNC_ktime_get_ns));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_0, EB_OFF(t_enter)));
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_7, BPF_REG_8, EB_OFF(nr)));
	bpfprog_emit(p, BI_ST(BPF_DW, BPF_REG_7, EB_OFF(str_len), 0));
	/* the registers, from the kernel's copy */
	bpfprog_emit(p, BI_MOV(BPF_REG_1, BPF_REG_7));
	bpfprog_emit(p, BI_ADDI(BPF_REG_1, EB_OFF(regs)));
	bpfprog_emit(p, BI_MOVI(BPF_REG_2, (int32_t)EB_REGS_SIZE));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, 0));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_probe_read_kernel));
	bpfprog_emit(p, BI_LDX(EB_REG_SIZE, BPF_REG_1, BPF_REG_7, EB_OFF(regs) + EB_IP_OFF));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_1, EB_OFF(ip)));
	bpfprog_emit(p, BI_LDX(EB_REG_SIZE, BPF_REG_1, BPF_REG_7, EB_OFF(regs) + EB_SP_OFF));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_1, EB_OFF(sp)));
	for (int i = 0; i < 6; i++) {
		bpfprog_emit(p, BI_LDX(EB_REG_SIZE, BPF_REG_1, BPF_REG_7, EB_OFF(regs) + eb_arg_off[i]));
		bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_1, EB_OFF(args) + 8 * i));
	}
	/* the words above the user stack pointer (zeroed when unreadable) */
	bpfprog_emit(p, BI_MOV(BPF_REG_1, BPF_REG_7));
	bpfprog_emit(p, BI_ADDI(BPF_REG_1, EB_OFF(stack)));
	bpfprog_emit(p, BI_MOVI(BPF_REG_2, (int32_t)(EB_STACK_WORDS * 8)));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_3, BPF_REG_7, EB_OFF(sp)));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_probe_read_user));
	/* the path argument, now, before the call can change it */
	bpfprog_emit(p, BI_RSHI(BPF_REG_9, EB_SEL_PATH_SHIFT));
	for (int i = 0; i < 6; i++) {
		bpfprog_jump(p, BPF_JNE, BPF_REG_9, i + 1, L_ARG + (unsigned)i);
		bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_3, BPF_REG_7, EB_OFF(args) + 8 * i));
		bpfprog_jump(p, BPF_JA, 0, 0, L_READ);
		bpfprog_label(p, L_ARG + (unsigned)i);
	}
	bpfprog_jump(p, BPF_JA, 0, 0, L_OUT);
	bpfprog_label(p, L_READ);
	bpfprog_emit(p, BI_MOV(BPF_REG_1, BPF_REG_7));
	bpfprog_emit(p, BI_ADDI(BPF_REG_1, EB_OFF(str)));
	bpfprog_emit(p, BI_MOVI(BPF_REG_2, (int32_t)SYSREC_STR_MAX));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_probe_read_user_str));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_0, EB_OFF(str_len)));
	eb_emit_out(p);
#else
	(void)eb;
	bpfprog_init(p);
	p->overflow = true;
#endif
}

/* counters[which] += 1; then at label `done`.  Uses r10-12. */
static void eb_emit_count(struct bpfprog *p, const struct eb_state *eb, enum eb_counter which, unsigned done)
{
	bpfprog_emit(p, BI_ST(BPF_W, BPF_REG_10, -12, (int32_t)which));
	eb_emit_lookup(p, eb->maps[EB_COUNTERS], -12);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, done);
	bpfprog_emit(p, BI_MOVI(BPF_REG_1, 1));
	bpfprog_emit(p, BI_XADD(BPF_REG_0, BPF_REG_1, 0));
	bpfprog_label(p, done);
}

/* Writes the call at r7 (r6: ctx, r5: its size): into the ring buffer,
 * counting it when there is no room, or into this CPU's perf ring (whose
 * losses the kernel counts). */
static void eb_emit_output(struct bpfprog *p, const struct eb_state *eb)
{
	if (eb->rb.fd >= 0) {
		bpfprog_map(p, BPF_REG_1, eb->rb.fd);
		bpfprog_emit(p, BI_MOV(BPF_REG_2, BPF_REG_7));
		bpfprog_emit(p, BI_MOV(BPF_REG_3, BPF_REG_5));
		bpfprog_emit(p, BI_MOVI(BPF_REG_4, BPF_RB_NO_WAKEUP)); /* we poll */
		bpfprog_emit(p, BI_CALL(BPF_FUNC_ringbuf_output));
		bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_WRITTEN);
		eb_emit_count(p, eb, EB_CALLS_LOST, L_WRITTEN);
		return;
	}
	bpfprog_emit(p, BI_MOV(BPF_REG_1, BPF_REG_6));
	bpfprog_map(p, BPF_REG_2, eb->maps[EB_OUT]);
	bpfprog_emit(p, BI_MOV32I(BPF_REG_3, -1)); /* BPF_F_CURRENT_CPU */
	bpfprog_emit(p, BI_MOV(BPF_REG_4, BPF_REG_7));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_perf_event_output));
}

/* raw_syscalls:sys_exit (raw: ctx = { regs, ret }): completes the call
 * and writes it. */
void eb_prog_exit(struct bpfprog *p, const struct eb_state *eb)
{
	bpfprog_init(p);
	bpfprog_emit(p, BI_MOV(BPF_REG_6, BPF_REG_1));
	eb_emit_lookup_self(p, eb, true);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_MOV(BPF_REG_7, BPF_REG_0));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_1, BPF_REG_7, EB_OFF(t_enter)));
	bpfprog_jump(p, BPF_JEQ, BPF_REG_1, 0, L_OUT);
	bpfprog_emit(p, BI_CALL(BPF_FUNC_ktime_get_ns));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_0, EB_OFF(t_exit)));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_0, EB_OFF(key_ns)));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, 8));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_1, EB_OFF(ret)));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_8, EB_OFF(tid)));
	bpfprog_emit(p, BI_MOVI(BPF_REG_5, EB_OUT_SHORT));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_1, BPF_REG_7, EB_OFF(str_len)));
	bpfprog_jump(p, BPF_JSLE, BPF_REG_1, 0, L_EMIT);
	bpfprog_emit(p, BI_MOVI(BPF_REG_5, EB_OUT_FULL));
	bpfprog_label(p, L_EMIT);
	eb_emit_output(p, eb);
	bpfprog_emit(p, BI_ST(BPF_DW, BPF_REG_7, EB_OFF(t_enter), 0));
	eb_emit_out(p);
}

/* sched:sched_process_fork (ctx: the raw record): a traced task's new
 * thread or child is traced too.  A full map counts a task not followed. */
void eb_prog_fork(struct bpfprog *p, const struct eb_state *eb, uint32_t child_off)
{
	bpfprog_init(p);
	bpfprog_emit(p, BI_MOV(BPF_REG_6, BPF_REG_1));
	eb_emit_lookup_self(p, eb, false);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_LDX(BPF_W, BPF_REG_1, BPF_REG_6, (int16_t)child_off));
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_10, BPF_REG_1, -8));
	bpfprog_emit(p, BI_ST(BPF_W, BPF_REG_10, -12, 0));
	eb_emit_lookup(p, eb->maps[EB_ZERO], -12);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_MOV(BPF_REG_3, BPF_REG_0));
	bpfprog_map(p, BPF_REG_1, eb->maps[EB_TASKS]);
	bpfprog_emit(p, BI_MOV(BPF_REG_2, BPF_REG_10));
	bpfprog_emit(p, BI_ADDI(BPF_REG_2, -8));
	bpfprog_emit(p, BI_MOVI(BPF_REG_4, BPF_ANY));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_map_update_elem));
	bpfprog_jump(p, BPF_JNE, BPF_REG_0, 0, L_FAILED);
	/* open the child's gate */
	bpfprog_emit(p, BI_LDX(BPF_W, BPF_REG_1, BPF_REG_10, -8));
	bpfprog_emit(p, BI_ANDI(BPF_REG_1, EB_GATE_SIZE - 1));
	bpfprog_emit(p, BI_STX(BPF_W, BPF_REG_10, BPF_REG_1, -16));
	eb_emit_lookup(p, eb->maps[EB_GATE], -16);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_ST(BPF_W, BPF_REG_0, 0, 1));
	bpfprog_jump(p, BPF_JA, 0, 0, L_OUT);
	bpfprog_label(p, L_FAILED);
	eb_emit_count(p, eb, EB_TASKS_MISSED, L_WRITTEN);
	eb_emit_out(p);
}

/* sched:sched_process_exit: writes the call the thread is leaving inside
 * (no exit time) and forgets the thread. */
void eb_prog_task_exit(struct bpfprog *p, const struct eb_state *eb)
{
	bpfprog_init(p);
	bpfprog_emit(p, BI_MOV(BPF_REG_6, BPF_REG_1));
	eb_emit_lookup_self(p, eb, true);
	bpfprog_jump(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	bpfprog_emit(p, BI_MOV(BPF_REG_7, BPF_REG_0));
	bpfprog_emit(p, BI_LDX(BPF_DW, BPF_REG_1, BPF_REG_7, EB_OFF(t_enter)));
	bpfprog_jump(p, BPF_JEQ, BPF_REG_1, 0, L_DEL);
	bpfprog_emit(p, BI_ST(BPF_DW, BPF_REG_7, EB_OFF(t_exit), 0));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_ktime_get_ns));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_0, EB_OFF(key_ns)));
	bpfprog_emit(p, BI_STX(BPF_DW, BPF_REG_7, BPF_REG_8, EB_OFF(tid)));
	bpfprog_emit(p, BI_MOVI(BPF_REG_5, EB_OUT_SHORT));
	eb_emit_output(p, eb);
	bpfprog_label(p, L_DEL);
	bpfprog_map(p, BPF_REG_1, eb->maps[EB_TASKS]);
	bpfprog_emit(p, BI_MOV(BPF_REG_2, BPF_REG_10));
	bpfprog_emit(p, BI_ADDI(BPF_REG_2, -4));
	bpfprog_emit(p, BI_CALL(BPF_FUNC_map_delete_elem));
	eb_emit_out(p);
}
