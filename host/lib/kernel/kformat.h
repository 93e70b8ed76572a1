/* The tracepoint formats of one trace (its KFORMAT chunks, docs/format.md):
 * each entry's format text parsed by libtraceevent, classified into the
 * kinds the analyses understand, with the offsets of the fields the decoder
 * (kevent.h) reads cached per event, so that decoding a record is a few
 * loads. */
#ifndef LP_KFORMAT_H
#define LP_KFORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of a KFORMAT payload: beyond them a payload is malformed. */
#define KFORMAT_COUNT_MAX 4096u      /* entries in one payload */
#define KFORMAT_NAME_MAX 64u         /* bytes of a system or event name */
#define KFORMAT_TEXT_MAX (64u << 10) /* bytes of one format text */
#define KFORMAT_ID_MAX 0xffffu       /* records name their tracepoint in a u16 */
/* A format whose fields reach past this is undecodable: a __data_loc gives
 * its offset and length in 16 bits each, so no record is longer. */
#define KFORMAT_RECORD_MAX 0xffffu

/* What a tracepoint is, for the analyses: the events they understand, and
 * KEV_OTHER for every other one (still decoded generically: kevent_format,
 * kevent_field_u64). */
enum kev_kind {
	KEV_OTHER = 0,
	KEV_SWITCH,               /* sched:sched_switch */
	KEV_WAKEUP,               /* sched:sched_wakeup, sched:sched_wakeup_new */
	KEV_WAKING,               /* sched:sched_waking */
	KEV_FORK,                 /* sched:sched_process_fork */
	KEV_EXEC,                 /* sched:sched_process_exec */
	KEV_EXIT,                 /* sched:sched_process_exit */
	KEV_FAULT_USER,           /* exceptions:page_fault_user */
	KEV_FAULT_KERNEL,         /* exceptions:page_fault_kernel */
	KEV_IRQ_ENTRY,            /* irq:irq_handler_entry */
	KEV_IRQ_EXIT,             /* irq:irq_handler_exit */
	KEV_SOFTIRQ_ENTRY,        /* irq:softirq_entry */
	KEV_SOFTIRQ_EXIT,         /* irq:softirq_exit */
	KEV_SOFTIRQ_RAISE,        /* irq:softirq_raise */
	KEV_BLOCK_ISSUE,          /* block:block_rq_issue */
	KEV_BLOCK_INSERT,         /* block:block_rq_insert */
	KEV_BLOCK_COMPLETE,       /* block:block_rq_complete */
	KEV_BIO_QUEUE,            /* block:block_bio_queue */
	KEV_HRTIMER_START,        /* timer:hrtimer_start */
	KEV_HRTIMER_EXPIRE_ENTRY, /* timer:hrtimer_expire_entry */
	KEV_HRTIMER_EXPIRE_EXIT,  /* timer:hrtimer_expire_exit */
	KEV_HRTIMER_CANCEL,       /* timer:hrtimer_cancel */
	KEV_TIMER_START,          /* timer:timer_start */
	KEV_TIMER_EXPIRE_ENTRY,   /* timer:timer_expire_entry */
	KEV_TIMER_EXPIRE_EXIT,    /* timer:timer_expire_exit */
	KEV_TIMER_CANCEL,         /* timer:timer_cancel */
	KEV_KIND_COUNT
};

/* The kind's name ("switch", "fault_user", ...; "other"); "?" out of range. */
const char *kev_kind_name(enum kev_kind kind);

/* Private to kformat.c and kevent.c: where one field of a record is. */
enum kformat_field_flags {
	KFIELD_SIGNED = 1 << 0,
	KFIELD_DYNAMIC = 1 << 1,  /* __data_loc: u32, offset in the low 16 bits, length in the high 16 */
	KFIELD_RELATIVE = 1 << 2, /* __rel_loc: the offset counts from the end of the field */
};

struct kformat_field {
	uint16_t offset, size; /* size 0: the format has no such field */
	uint16_t flags;        /* enum kformat_field_flags */
};

/* Private: which field sits in which slot of struct kformat_event, per kind
 * (kformat.c fills them, kevent.c reads them into struct kevent). */
enum kformat_slot {
	KS_SW_PREV_COMM = 0,
	KS_SW_PREV_PID,
	KS_SW_PREV_STATE,
	KS_SW_NEXT_COMM,
	KS_SW_NEXT_PID,
	KS_WAKE_COMM = 0,
	KS_WAKE_PID,
	KS_WAKE_TARGET_CPU,
	KS_FORK_PARENT_COMM = 0,
	KS_FORK_PARENT_PID,
	KS_FORK_CHILD_COMM,
	KS_FORK_CHILD_PID,
	KS_EXEC_FILENAME = 0,
	KS_EXEC_PID,
	KS_EXEC_OLD_PID,
	KS_EXIT_COMM = 0,
	KS_EXIT_PID,
	KS_FAULT_ADDRESS = 0,
	KS_FAULT_IP,
	KS_FAULT_ERROR_CODE,
	KS_IRQ_IRQ = 0,
	KS_IRQ_NAME,
	KS_IRQ_RET,
	KS_SOFTIRQ_VEC = 0,
	KS_BLOCK_DEV = 0,
	KS_BLOCK_SECTOR,
	KS_BLOCK_NR_SECTOR,
	KS_BLOCK_BYTES,
	KS_BLOCK_ERROR,
	KS_BLOCK_RWBS,
	KS_TIMER_TIMER = 0,
	KS_TIMER_FUNCTION,
	KS_TIMER_EXPIRES,
	KFORMAT_SLOTS = 6
};

enum kformat_common { KC_TYPE, KC_FLAGS, KC_PREEMPT_COUNT, KC_PID, KC_COUNT };

/* Private: sched_switch's prev_state bits, read from the kernel's own
 * __print_flags table in the event's print fmt (the 6.x values when it has
 * none): the bits of each state letter, and the bit that marks a
 * preempted task (TASK_REPORT_MAX, printed "R+"). */
struct kformat_states {
	uint64_t S, D, T, I, X, Z, other, preempt;
};

struct tep_event;

/* One tracepoint's format.  Owned by its set: valid until kformats_free. */
struct kformat_event {
	uint32_t id;               /* the tracepoint id: common_type of its records */
	const char *system, *name; /* as the entry names it: "sched", "sched_switch" */
	/* KEV_OTHER also for a known event whose format lacks a field its
	 * kind's struct kevent member needs (an unexpected kernel), and for
	 * an undecodable one. */
	enum kev_kind kind;
	/* false: the format text did not parse, or disagrees with its entry
	 * (name or ID line); its records are counted, never decoded. */
	bool decodable;

	/* Private to kformat.c and kevent.c. */
	struct tep_event *tep; /* NULL when undecodable */
	bool print_safe;       /* the print fmt reads only checked bytes (kevent_format) */
	uint32_t fixed_end;    /* every record has at least this many bytes */
	struct kformat_field common[KC_COUNT];
	struct kformat_field slot[KFORMAT_SLOTS];
	struct kformat_field *dynamic; /* every __data_loc/__rel_loc field, checked per record */
	uint32_t ndynamic;
	struct kformat_states states; /* KEV_SWITCH only */
};

struct kformats;

/* Makes an empty set.  Returns 0 or -ENOMEM.  Free with kformats_free.
 * Also turns libtraceevent's own log off for the process (it would print
 * parse warnings on the user's terminal): libtraceevent's log level is
 * global. */
int kformats_new(struct kformats **out);

/* Adds the entries of one KFORMAT chunk payload (several may be added: a
 * live session can send more).  Every entry's format text is handed to
 * libtraceevent, after a check that it has the shape the kernel writes
 * (libtraceevent crashes on some malformed texts, see kformat.c); one that
 * does not parse, or whose "name:"/"ID:" lines disagree with its entry, is
 * kept as known but undecodable (counted by kformats_undecodable), never
 * fatal.  An id already in the set keeps its first format; the later
 * entry is ignored.
 * Returns 0; -EBADMSG when the payload is malformed (a varint past the end,
 * a name of 0 or more than KFORMAT_NAME_MAX bytes or not printable ASCII,
 * a text over KFORMAT_TEXT_MAX, a count over KFORMAT_COUNT_MAX, an id over
 * KFORMAT_ID_MAX, bytes after the last entry), with one line in err and
 * nothing added; -ENOMEM.
 * Costs two libtraceevent parses per entry (about 60 us here).
 * Not thread-safe, not even across sets: libtraceevent's parser keeps its
 * input in globals.  Pointers given out before stay valid. */
int kformats_add(struct kformats *kf, const uint8_t *payload, size_t len, char *err, size_t errlen);

/* Frees the set and every event of it; NULL is fine. */
void kformats_free(struct kformats *kf);

/* Entries kept (decodable or not), and those of them undecodable. */
uint32_t kformats_count(const struct kformats *kf);
uint32_t kformats_undecodable(const struct kformats *kf);

/* The i-th entry kept (0 <= i < kformats_count), in the order added. */
const struct kformat_event *kformats_at(const struct kformats *kf, uint32_t i);

/* The event of tracepoint id, or NULL when the trace holds no format for
 * it.  Called once per record: a hash probe.  Safe from several threads
 * while nothing is added. */
const struct kformat_event *kformats_find(const struct kformats *kf, uint32_t id);

#endif
