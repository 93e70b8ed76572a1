/* One kernel tracepoint record decoded with its trace's formats
 * (kformat.h): the common header and, for the kinds the analyses
 * understand, their fields; every record as one line of text; any numeric
 * field by name.  Records come from the trace (LP_EV_KERNEL events): every
 * offset is checked against the record's length before it is read. */
#ifndef LP_KEVENT_H
#define LP_KEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/kernel/kformat.h"

/* common_flags bits, as include/linux/trace_events.h (enum
 * trace_flag_type) has them from 3.x to 6.x. */
#define KEV_FLAG_HARDIRQ 0x08u /* TRACE_FLAG_HARDIRQ: in a hard interrupt handler */
#define KEV_FLAG_SOFTIRQ 0x10u /* TRACE_FLAG_SOFTIRQ: in a softirq */
#define KEV_FLAG_NMI 0x40u     /* TRACE_FLAG_NMI */

/* Room for a task's comm (TASK_COMM_LEN 16) and its '\0'. */
#define KEV_COMM_SIZE 17

struct kevent {
	const struct kformat_event *fmt; /* NULL: no format for the id */
	/* fmt's kind when the record decoded, KEV_OTHER when it did not;
	 * only the union member of the kind is written */
	enum kev_kind kind;
	int32_t common_pid;
	/* common_preempt_count: on 5.14 and later, the preemption depth in
	 * the low 4 bits and the migrate-disable depth in the high 4 */
	uint8_t common_flags, common_preempt_count;
	bool in_hardirq, in_softirq, in_nmi; /* from common_flags, KEV_FLAG_* */
	union {
		struct { /* KEV_SWITCH */
			int32_t prev_pid, next_pid;
			int64_t prev_state; /* see kevent_switch_state */
			char prev_comm[KEV_COMM_SIZE], next_comm[KEV_COMM_SIZE];
		} sw;
		struct { /* KEV_WAKEUP, KEV_WAKING */
			int32_t pid, target_cpu;
			char comm[KEV_COMM_SIZE];
		} wake;
		struct { /* KEV_FORK */
			int32_t parent_pid, child_pid;
			char parent_comm[KEV_COMM_SIZE], child_comm[KEV_COMM_SIZE];
		} fork;
		struct { /* KEV_EXEC */
			int32_t pid, old_pid;
			char filename[256]; /* cut at 255 bytes */
		} exec;
		struct { /* KEV_EXIT */
			int32_t pid;
			char comm[KEV_COMM_SIZE];
		} exit;
		struct { /* KEV_FAULT_USER, KEV_FAULT_KERNEL */
			uint64_t address, ip, error_code;
		} fault;
		struct { /* KEV_IRQ_ENTRY (irq, name), KEV_IRQ_EXIT (irq, ret) */
			int32_t irq;
			char name[32]; /* cut at 31 bytes */
			int32_t ret;
		} irq;
		struct { /* KEV_SOFTIRQ_* */
			uint32_t vec;
		} softirq;
		/* KEV_BLOCK_*, KEV_BIO_QUEUE: dev as the kernel keeps it (major
		 * << 20 | minor); bytes (issue, insert) and error (complete) are
		 * 0 where the event has none */
		struct {
			uint32_t dev, nr_sector, bytes;
			int32_t error;
			uint64_t sector;
			char rwbs[12];
		} block;
		/* KEV_HRTIMER_*, KEV_TIMER_*: function (start, expire_entry) and
		 * expires (start) are 0 where the event has none */
		struct {
			uint64_t timer, function, expires;
		} timer;
	} u;
};

/* Decodes raw (the whole record, common header first, as the kernel wrote
 * it; len bytes) of tracepoint id into ev.  Returns 0; -ENOENT when the
 * trace has no format for id (ev->fmt NULL); -EBADMSG when the format is
 * undecodable, the record is shorter than its format's fixed fields, or a
 * __data_loc points outside it (ev->fmt set, kind KEV_OTHER).  Never reads
 * outside raw.  Called once per record: a hash probe and a few loads,
 * no allocation; thread-safe. */
int kevent_decode(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, struct kevent *ev);

/* The state a task left the CPU in, from a KEV_SWITCH's prev_state, with
 * the bits the kernel's own print fmt gives each letter (6.x: S 0x01,
 * D 0x02, T 0x04, t 0x08, X 0x10, Z 0x20, P 0x40, I 0x80): 'R' preempted
 * (prev_state 0, or only TASK_REPORT_MAX 0x100, printed "R+"), 'S'
 * sleeping (TASK_INTERRUPTIBLE), 'D' blocked (TASK_UNINTERRUPTIBLE), 'I'
 * idle kernel thread, 'T' stopped or traced, 'X' or 'Z' dead, '?' anything
 * else (parked, unknown bits, not a KEV_SWITCH).  Several state bits: the
 * lowest wins, as one task has one. */
char kevent_switch_state(const struct kevent *ev);

/* Writes one line for the record into buf (size bytes, cut to fit, always
 * '\0'-terminated when size > 0): "name: " and the record as the event's
 * print fmt shows it, printed by libtraceevent ("sched_switch:
 * prev_comm=a prev_pid=1 ... next_prio=120"); "name: field=value ..." for
 * an event whose print fmt libtraceevent cannot be trusted with (see
 * kformat.c); "name: <N bytes, undecodable>" for a record that does not
 * decode; "tracepoint ID: <no format>".  Control characters (a comm is
 * whatever the task set) are written as '?', newlines and tabs as spaces.
 * Returns the length written, without the '\0'.  Allocates; not
 * thread-safe on one set (libtraceevent's printing caches in the event). */
size_t kevent_format(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, char *buf, size_t size);

/* The numeric field (common fields too) named field of a record, for
 * KEV_OTHER users (filters, generic dumps): signed fields sign-extended
 * to 64 bits.  Returns 0; -ENOENT when there is no format for id or it
 * has no such field; -EINVAL when the field is no number (array, string,
 * __data_loc, size other than 1, 2, 4, 8); -EBADMSG as kevent_decode. */
int kevent_field_u64(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, const char *field,
                     uint64_t *val);

#endif
