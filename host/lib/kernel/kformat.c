/* The tracepoint formats of a trace: KFORMAT payloads read, each format
 * text parsed by libtraceevent, the events classified and the offsets of
 * the fields the decoder reads cached (kformat.h). */
#include "host/lib/kernel/kformat.h"

#include <errno.h>
#include <event-parse.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/varint.h"
#include "host/lib/kernel/kftext.h"
#include "host/lib/util/error.h"
#include "host/lib/util/hashindex.h"

/* How deep a print fmt's argument tree is followed before it counts as
 * one kevent_format does not hand to libtraceevent. */
#define PRINT_ARG_DEPTH_MAX 64u

struct kformats {
	struct kformat_event **ev; /* in the order added; each allocated alone, so pointers stay */
	uint32_t n, cap;
	uint32_t undecodable;
	struct hashindex by_id; /* id -> index in ev */
	int long_size;          /* of the traced kernel, 0 until a format shows it */
};

static const char *const kind_names[KEV_KIND_COUNT] = {
	[KEV_OTHER] = "other",
	[KEV_SWITCH] = "switch",
	[KEV_WAKEUP] = "wakeup",
	[KEV_WAKING] = "waking",
	[KEV_FORK] = "fork",
	[KEV_EXEC] = "exec",
	[KEV_EXIT] = "exit",
	[KEV_FAULT_USER] = "fault_user",
	[KEV_FAULT_KERNEL] = "fault_kernel",
	[KEV_IRQ_ENTRY] = "irq_entry",
	[KEV_IRQ_EXIT] = "irq_exit",
	[KEV_SOFTIRQ_ENTRY] = "softirq_entry",
	[KEV_SOFTIRQ_EXIT] = "softirq_exit",
	[KEV_SOFTIRQ_RAISE] = "softirq_raise",
	[KEV_BLOCK_ISSUE] = "block_issue",
	[KEV_BLOCK_INSERT] = "block_insert",
	[KEV_BLOCK_COMPLETE] = "block_complete",
	[KEV_BIO_QUEUE] = "bio_queue",
	[KEV_HRTIMER_START] = "hrtimer_start",
	[KEV_HRTIMER_EXPIRE_ENTRY] = "hrtimer_expire_entry",
	[KEV_HRTIMER_EXPIRE_EXIT] = "hrtimer_expire_exit",
	[KEV_HRTIMER_CANCEL] = "hrtimer_cancel",
	[KEV_TIMER_START] = "timer_start",
	[KEV_TIMER_EXPIRE_ENTRY] = "timer_expire_entry",
	[KEV_TIMER_EXPIRE_EXIT] = "timer_expire_exit",
	[KEV_TIMER_CANCEL] = "timer_cancel",
};

const char *kev_kind_name(enum kev_kind kind)
{
	return (unsigned)kind < KEV_KIND_COUNT ? kind_names[kind] : "?";
}

/* The fields of each known event that go into its struct kevent member:
 * names ('|' between the names older kernels used), whether a number or a
 * string (char[N] or __data_loc char[]), and whether the kind needs it
 * (a format without a needed field makes the event KEV_OTHER; one without
 * an optional field decodes it as 0 or ""). */
enum slot_shape { SLOT_NONE = 0, SLOT_NUM, SLOT_STR };

struct slot_spec {
	const char *names;
	enum slot_shape shape;
	bool required;
};

struct kind_spec {
	const char *system, *name;
	enum kev_kind kind;
	const struct slot_spec *slot; /* KFORMAT_SLOTS of them */
};

static const struct slot_spec switch_slots[KFORMAT_SLOTS] = {
	[KS_SW_PREV_COMM] = { "prev_comm", SLOT_STR, true },   [KS_SW_PREV_PID] = { "prev_pid", SLOT_NUM, true },
	[KS_SW_PREV_STATE] = { "prev_state", SLOT_NUM, true }, [KS_SW_NEXT_COMM] = { "next_comm", SLOT_STR, true },
	[KS_SW_NEXT_PID] = { "next_pid", SLOT_NUM, true },
};
static const struct slot_spec wake_slots[KFORMAT_SLOTS] = {
	[KS_WAKE_COMM] = { "comm", SLOT_STR, true },
	[KS_WAKE_PID] = { "pid", SLOT_NUM, true },
	[KS_WAKE_TARGET_CPU] = { "target_cpu", SLOT_NUM, false },
};
static const struct slot_spec fork_slots[KFORMAT_SLOTS] = {
	[KS_FORK_PARENT_COMM] = { "parent_comm", SLOT_STR, true },
	[KS_FORK_PARENT_PID] = { "parent_pid", SLOT_NUM, true },
	[KS_FORK_CHILD_COMM] = { "child_comm", SLOT_STR, true },
	[KS_FORK_CHILD_PID] = { "child_pid", SLOT_NUM, true },
};
static const struct slot_spec exec_slots[KFORMAT_SLOTS] = {
	[KS_EXEC_FILENAME] = { "filename", SLOT_STR, true },
	[KS_EXEC_PID] = { "pid", SLOT_NUM, true },
	[KS_EXEC_OLD_PID] = { "old_pid", SLOT_NUM, true },
};
static const struct slot_spec exit_slots[KFORMAT_SLOTS] = {
	[KS_EXIT_COMM] = { "comm", SLOT_STR, true },
	[KS_EXIT_PID] = { "pid", SLOT_NUM, true },
};
static const struct slot_spec fault_slots[KFORMAT_SLOTS] = {
	[KS_FAULT_ADDRESS] = { "address", SLOT_NUM, true },
	[KS_FAULT_IP] = { "ip", SLOT_NUM, true },
	[KS_FAULT_ERROR_CODE] = { "error_code", SLOT_NUM, true },
};
static const struct slot_spec irq_entry_slots[KFORMAT_SLOTS] = {
	[KS_IRQ_IRQ] = { "irq", SLOT_NUM, true },
	[KS_IRQ_NAME] = { "name", SLOT_STR, true },
};
static const struct slot_spec irq_exit_slots[KFORMAT_SLOTS] = {
	[KS_IRQ_IRQ] = { "irq", SLOT_NUM, true },
	[KS_IRQ_RET] = { "ret", SLOT_NUM, true },
};
static const struct slot_spec softirq_slots[KFORMAT_SLOTS] = {
	[KS_SOFTIRQ_VEC] = { "vec", SLOT_NUM, true },
};
/* block_rq_issue, block_rq_insert (bytes: 0 where a kernel has none) */
static const struct slot_spec rq_slots[KFORMAT_SLOTS] = {
	[KS_BLOCK_DEV] = { "dev", SLOT_NUM, true },
	[KS_BLOCK_SECTOR] = { "sector", SLOT_NUM, true },
	[KS_BLOCK_NR_SECTOR] = { "nr_sector", SLOT_NUM, true },
	[KS_BLOCK_BYTES] = { "bytes", SLOT_NUM, false },
	[KS_BLOCK_RWBS] = { "rwbs", SLOT_STR, true },
};
/* block_rq_complete: older kernels call error "errors" */
static const struct slot_spec rq_complete_slots[KFORMAT_SLOTS] = {
	[KS_BLOCK_DEV] = { "dev", SLOT_NUM, true },
	[KS_BLOCK_SECTOR] = { "sector", SLOT_NUM, true },
	[KS_BLOCK_NR_SECTOR] = { "nr_sector", SLOT_NUM, true },
	[KS_BLOCK_ERROR] = { "error|errors", SLOT_NUM, false },
	[KS_BLOCK_RWBS] = { "rwbs", SLOT_STR, true },
};
static const struct slot_spec bio_slots[KFORMAT_SLOTS] = {
	[KS_BLOCK_DEV] = { "dev", SLOT_NUM, true },
	[KS_BLOCK_SECTOR] = { "sector", SLOT_NUM, true },
	[KS_BLOCK_NR_SECTOR] = { "nr_sector", SLOT_NUM, true },
	[KS_BLOCK_RWBS] = { "rwbs", SLOT_STR, true },
};
static const struct slot_spec hrtimer_start_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "hrtimer", SLOT_NUM, true },
	[KS_TIMER_FUNCTION] = { "function", SLOT_NUM, true },
	[KS_TIMER_EXPIRES] = { "expires", SLOT_NUM, true },
};
static const struct slot_spec hrtimer_entry_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "hrtimer", SLOT_NUM, true },
	[KS_TIMER_FUNCTION] = { "function", SLOT_NUM, true },
};
static const struct slot_spec hrtimer_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "hrtimer", SLOT_NUM, true },
};
static const struct slot_spec timer_start_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "timer", SLOT_NUM, true },
	[KS_TIMER_FUNCTION] = { "function", SLOT_NUM, true },
	[KS_TIMER_EXPIRES] = { "expires", SLOT_NUM, true },
};
static const struct slot_spec timer_entry_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "timer", SLOT_NUM, true },
	[KS_TIMER_FUNCTION] = { "function", SLOT_NUM, true },
};
static const struct slot_spec timer_slots[KFORMAT_SLOTS] = {
	[KS_TIMER_TIMER] = { "timer", SLOT_NUM, true },
};

static const struct kind_spec kind_specs[] = {
	{ "sched", "sched_switch", KEV_SWITCH, switch_slots },
	{ "sched", "sched_wakeup", KEV_WAKEUP, wake_slots },
	{ "sched", "sched_wakeup_new", KEV_WAKEUP, wake_slots },
	{ "sched", "sched_waking", KEV_WAKING, wake_slots },
	{ "sched", "sched_process_fork", KEV_FORK, fork_slots },
	{ "sched", "sched_process_exec", KEV_EXEC, exec_slots },
	{ "sched", "sched_process_exit", KEV_EXIT, exit_slots },
	{ "exceptions", "page_fault_user", KEV_FAULT_USER, fault_slots },
	{ "exceptions", "page_fault_kernel", KEV_FAULT_KERNEL, fault_slots },
	{ "irq", "irq_handler_entry", KEV_IRQ_ENTRY, irq_entry_slots },
	{ "irq", "irq_handler_exit", KEV_IRQ_EXIT, irq_exit_slots },
	{ "irq", "softirq_entry", KEV_SOFTIRQ_ENTRY, softirq_slots },
	{ "irq", "softirq_exit", KEV_SOFTIRQ_EXIT, softirq_slots },
	{ "irq", "softirq_raise", KEV_SOFTIRQ_RAISE, softirq_slots },
	{ "block", "block_rq_issue", KEV_BLOCK_ISSUE, rq_slots },
	{ "block", "block_rq_insert", KEV_BLOCK_INSERT, rq_slots },
	{ "block", "block_rq_complete", KEV_BLOCK_COMPLETE, rq_complete_slots },
	{ "block", "block_bio_queue", KEV_BIO_QUEUE, bio_slots },
	{ "timer", "hrtimer_start", KEV_HRTIMER_START, hrtimer_start_slots },
	{ "timer", "hrtimer_expire_entry", KEV_HRTIMER_EXPIRE_ENTRY, hrtimer_entry_slots },
	{ "timer", "hrtimer_expire_exit", KEV_HRTIMER_EXPIRE_EXIT, hrtimer_slots },
	{ "timer", "hrtimer_cancel", KEV_HRTIMER_CANCEL, hrtimer_slots },
	{ "timer", "timer_start", KEV_TIMER_START, timer_start_slots },
	{ "timer", "timer_expire_entry", KEV_TIMER_EXPIRE_ENTRY, timer_entry_slots },
	{ "timer", "timer_expire_exit", KEV_TIMER_EXPIRE_EXIT, timer_slots },
	{ "timer", "timer_cancel", KEV_TIMER_CANCEL, timer_slots },
};

/* sched_switch's prev_state bits as 6.x kernels (since 4.14) print them,
 * for a format whose print fmt has no table we can read:
 * include/linux/sched.h TASK_REPORT bits S 0x01, D 0x02, T 0x04, t 0x08,
 * X 0x10, Z 0x20, P 0x40, I 0x80 (TASK_REPORT_IDLE), and TASK_REPORT_MAX
 * 0x100 for a preempted task ("R+"). */
static const struct kformat_states states_6x = {
	.S = 0x01,
	.D = 0x02,
	.T = 0x04 | 0x08,
	.X = 0x10,
	.Z = 0x20,
	.other = 0x40,
	.I = 0x80,
	.preempt = 0x100,
};

/* ---- libtraceevent's view of one format ---- */

/* The kformat_field of a libtraceevent field, or false when its place is
 * out of bounds. */
static bool field_place(const struct tep_format_field *f, struct kformat_field *out)
{
	if (f->offset < 0 || f->size < 0 || (uint64_t)f->offset + (uint64_t)f->size > KFORMAT_RECORD_MAX)
		return false;
	if ((f->flags & TEP_FIELD_IS_DYNAMIC) && f->size != 4)
		return false;
	out->offset = (uint16_t)f->offset;
	out->size = (uint16_t)f->size;
	out->flags = 0;
	if (f->flags & TEP_FIELD_IS_SIGNED)
		out->flags |= KFIELD_SIGNED;
	if (f->flags & TEP_FIELD_IS_DYNAMIC)
		out->flags |= KFIELD_DYNAMIC;
	if (f->flags & TEP_FIELD_IS_RELATIVE)
		out->flags |= KFIELD_RELATIVE;
	return true;
}

static bool shape_fits(const struct tep_format_field *f, enum slot_shape shape)
{
	unsigned long flags = f->flags;

	if (shape == SLOT_NUM)
		return !(flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) &&
		       (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
	if (flags & TEP_FIELD_IS_DYNAMIC)
		return true; /* __data_loc char[] (the flags say string) */
	return (flags & TEP_FIELD_IS_ARRAY) && ((flags & TEP_FIELD_IS_STRING) || f->elementsize == 1);
}

/* The field of the first of names ("a|b") the event has. */
static struct tep_format_field *find_field(struct tep_event *tev, const char *names)
{
	char name[KFORMAT_NAME_MAX + 1];

	while (*names) {
		size_t n = strcspn(names, "|");
		struct tep_format_field *f;

		if (n < sizeof(name)) {
			memcpy(name, names, n);
			name[n] = '\0';
			f = tep_find_field(tev, name);
			if (f)
				return f;
		}
		names += n + (names[n] == '|');
	}
	return NULL;
}

/* Caches where every field is: the common header, the end of the fixed
 * part, the __data_loc fields.  Returns 0, -EINVAL when a field is out of
 * bounds or common_type is not a number, -ENOMEM. */
static int cache_layout(struct kformat_event *e, struct tep_event *tev)
{
	static const char *const common_names[KC_COUNT] = {
		[KC_TYPE] = "common_type",
		[KC_FLAGS] = "common_flags",
		[KC_PREEMPT_COUNT] = "common_preempt_count",
		[KC_PID] = "common_pid",
	};
	struct tep_format_field *f;
	struct kformat_field place;
	uint32_t ndyn = 0, i;

	for (f = tev->format.common_fields; f; f = f->next) {
		if (!field_place(f, &place))
			return -EINVAL;
		if (place.offset + place.size > e->fixed_end)
			e->fixed_end = place.offset + place.size;
	}
	for (f = tev->format.fields; f; f = f->next) {
		if (!field_place(f, &place))
			return -EINVAL;
		if (place.offset + place.size > e->fixed_end)
			e->fixed_end = place.offset + place.size;
		if (place.flags & KFIELD_DYNAMIC)
			ndyn++;
	}
	for (i = 0; i < KC_COUNT; i++) {
		f = tep_find_common_field(tev, common_names[i]);
		if (f && shape_fits(f, SLOT_NUM))
			field_place(f, &e->common[i]);
		else if (i == KC_TYPE)
			return -EINVAL;
	}
	if (!ndyn)
		return 0;
	e->dynamic = calloc(ndyn, sizeof(*e->dynamic));
	if (!e->dynamic)
		return -ENOMEM;
	for (f = tev->format.fields; f; f = f->next)
		if (f->flags & TEP_FIELD_IS_DYNAMIC)
			field_place(f, &e->dynamic[e->ndynamic++]);
	return 0;
}

/* Fills the slots of a known event; false when a field its kind needs is
 * missing or of another shape. */
static bool cache_slots(struct kformat_event *e, struct tep_event *tev, const struct kind_spec *spec)
{
	unsigned i;

	for (i = 0; i < KFORMAT_SLOTS; i++) {
		const struct slot_spec *s = &spec->slot[i];
		struct tep_format_field *f;

		if (s->shape == SLOT_NONE)
			continue;
		f = find_field(tev, s->names);
		if (f && shape_fits(f, s->shape))
			field_place(f, &e->slot[i]);
		else if (s->required)
			return false;
	}
	return true;
}

/* Walks a print fmt's argument tree depth first, calling fn on each node
 * until it returns true.  Returns true when fn did, or the tree is deeper
 * than PRINT_ARG_DEPTH_MAX. */
typedef bool (*arg_visit)(const struct tep_print_arg *a, void *ctx);

static bool arg_walk(const struct tep_print_arg *a, unsigned depth, arg_visit fn, void *ctx)
{
	for (; a; a = a->next) {
		if (depth > PRINT_ARG_DEPTH_MAX || fn(a, ctx))
			return true;
		switch (a->type) {
		case TEP_PRINT_FLAGS:
			if (arg_walk(a->flags.field, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_SYMBOL:
			if (arg_walk(a->symbol.field, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_TYPE:
			if (arg_walk(a->typecast.item, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_OP:
			if (arg_walk(a->op.left, depth + 1, fn, ctx) || arg_walk(a->op.right, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_HEX:
		case TEP_PRINT_HEX_STR:
			if (arg_walk(a->hex.field, depth + 1, fn, ctx) || arg_walk(a->hex.size, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_INT_ARRAY:
			if (arg_walk(a->int_array.field, depth + 1, fn, ctx) ||
			    arg_walk(a->int_array.count, depth + 1, fn, ctx) ||
			    arg_walk(a->int_array.el_size, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_FUNC:
			if (arg_walk(a->func.args, depth + 1, fn, ctx))
				return true;
			break;
		case TEP_PRINT_DYNAMIC_ARRAY:
			if (arg_walk(a->dynarray.index, depth + 1, fn, ctx))
				return true;
			break;
		default:
			break;
		}
	}
	return false;
}

static bool atom_value(const struct tep_print_arg *a, long long *v)
{
	char *end;

	if (!a || a->type != TEP_PRINT_ATOM || !a->atom.atom)
		return false;
	errno = 0;
	*v = strtoll(a->atom.atom, &end, 0);
	if (errno || end == a->atom.atom)
		return false;
	end += strspn(end, "uUlL"); /* 1000L */
	return !*end;
}

static bool is_dynamic(const struct tep_format_field *f)
{
	return f && (f->flags & TEP_FIELD_IS_DYNAMIC);
}

/* Whether libtraceevent, printing this node, reads only what kevent.c
 * checked (the fixed fields, the __data_loc areas, and a few bytes past a
 * string in its zero padding) and cannot fault.  libtraceevent 1.7.1
 * trusts the record: a length taken from a field (__print_hex(x, REC->len),
 * __print_array), a __get_str of a field that is no __data_loc, an index
 * into an array ([REC->i]) read where they point, and REC->a / REC->b
 * divides by zero (SIGFPE).  Such an event is printed field by field. */
static bool arg_unsafe(const struct tep_print_arg *a, void *ctx)
{
	struct tep_event *tev = ctx;
	long long v;

	switch (a->type) {
	case TEP_PRINT_NULL:
	case TEP_PRINT_ATOM:
	case TEP_PRINT_FLAGS:
	case TEP_PRINT_SYMBOL:
	case TEP_PRINT_TYPE:
		return false;
	case TEP_PRINT_FIELD:
		return !a->field.field && !(a->field.name && tep_find_any_field(tev, a->field.name));
	case TEP_PRINT_STRING:
		return !is_dynamic(a->string.field ? a->string.field : tep_find_any_field(tev, a->string.string));
	case TEP_PRINT_BITMASK:
	case TEP_PRINT_CPUMASK:
		return !is_dynamic(a->bitmask.field ? a->bitmask.field : tep_find_any_field(tev, a->bitmask.bitmask));
	case TEP_PRINT_DYNAMIC_ARRAY:
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		return !is_dynamic(a->dynarray.field) || a->dynarray.index;
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
		/* only __print_hex(__get_dynamic_array(x), __get_dynamic_array_len(x)) */
		return !a->hex.field || !a->hex.size || a->hex.field->type != TEP_PRINT_DYNAMIC_ARRAY ||
		       a->hex.size->type != TEP_PRINT_DYNAMIC_ARRAY_LEN ||
		       a->hex.field->dynarray.field != a->hex.size->dynarray.field;
	case TEP_PRINT_OP:
		if (!a->op.op)
			return true;
		if (!strcmp(a->op.op, "/") || !strcmp(a->op.op, "%"))
			return !atom_value(a->op.right, &v) || v == 0;
		if (!strcmp(a->op.op, "[")) {
			const struct tep_format_field *f = NULL;

			if (a->op.left && a->op.left->type == TEP_PRINT_FIELD)
				f = a->op.left->field.field ? a->op.left->field.field
				                            : tep_find_any_field(tev, a->op.left->field.name);
			return !f || !(f->flags & TEP_FIELD_IS_ARRAY) || (f->flags & TEP_FIELD_IS_DYNAMIC) ||
			       !atom_value(a->op.right, &v) || v < 0 || (unsigned long long)v >= f->arraylen;
		}
		return false;
	default: /* __print_array, functions, bprint strings */
		return true;
	}
}

struct state_search {
	const struct tep_print_arg *flags; /* the __print_flags of prev_state */
};

static bool arg_is_prev_state(const struct tep_print_arg *a, void *ctx)
{
	(void)ctx;
	return a->type == TEP_PRINT_FIELD && a->field.name && !strcmp(a->field.name, "prev_state");
}

static bool arg_flags_of_state(const struct tep_print_arg *a, void *ctx)
{
	struct state_search *s = ctx;

	if (a->type != TEP_PRINT_FLAGS || !arg_walk(a->flags.field, 0, arg_is_prev_state, NULL))
		return false;
	s->flags = a;
	return true;
}

/* The prev_state bit of each state letter, from the kernel's own table in
 * sched_switch's print fmt: __print_flags(REC->prev_state & mask, "|",
 * { 0x01, "S" }, ...) : "R", with the preempted mark ("+") the bit above
 * the table's highest (TASK_REPORT_MAX on 4.14 and later, TASK_STATE_MAX
 * before).  The 6.x values when the table is not there. */
static void cache_states(struct kformat_event *e, struct tep_event *tev)
{
	struct state_search s = { NULL };
	const struct tep_print_flag_sym *sym;
	struct kformat_states st = { 0 };
	uint64_t top = 0;

	e->states = states_6x;
	arg_walk(tev->print_fmt.args, 0, arg_flags_of_state, &s);
	if (!s.flags)
		return;
	for (sym = s.flags->flags.flags; sym; sym = sym->next) {
		unsigned long long v;
		char *end;

		if (!sym->value || !sym->str)
			continue;
		errno = 0;
		v = strtoull(sym->value, &end, 0);
		if (errno || end == sym->value || *end || !v)
			continue;
		switch (sym->str[0] && !sym->str[1] ? sym->str[0] : '?') {
		case 'S':
			st.S |= v;
			break;
		case 'D':
			st.D |= v;
			break;
		case 'T':
		case 't':
			st.T |= v;
			break;
		case 'I':
			st.I |= v;
			break;
		case 'X':
			st.X |= v;
			break;
		case 'Z':
			st.Z |= v;
			break;
		default:
			st.other |= v;
			break;
		}
		if (v > top)
			top = v;
	}
	if (!st.S || !st.D || top >> 62)
		return;
	while (top & (top - 1))
		top &= top - 1;
	st.preempt = top << 1;
	e->states = st;
}

/* The word size of the traced kernel, from a long or pointer field (4 on
 * armhf), or 0. */
static int long_size_of(struct tep_event *tev)
{
	struct tep_format_field *f;

	for (f = tev->format.fields; f; f = f->next)
		if ((f->flags & (TEP_FIELD_IS_LONG | TEP_FIELD_IS_POINTER)) &&
		    !(f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) && (f->size == 4 || f->size == 8))
			return f->size;
	return 0;
}

/* Parses one text in a libtraceevent handle of its own: a handle finds an
 * event's id (tep_print_event) and the common_type of every record from
 * the first event it holds, so events sharing one could let one entry's
 * text decide how another's records are read.  Returns the event (free
 * with tep_free(tev->tep)), or NULL when the text did not parse or names
 * another event (*err 0) or memory ran out (*err -ENOMEM). */
static struct tep_event *parse_one(const struct kformat_event *e, const char *text, size_t len, int *err)
{
	struct tep_handle *tep = tep_alloc();
	struct tep_event *tev = NULL;

	*err = 0;
	if (!tep) {
		*err = -ENOMEM;
		return NULL;
	}
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN); /* every trace is (docs/format.md) */
	/* returns 0 also when the text did not parse: that shows in the
	 * event's flags (a failed field list: no print fmt read either) */
	tep_parse_format(tep, &tev, text, len, e->system);
	if (!tev || (unsigned)tev->id != e->id || !tev->name || strcmp(tev->name, e->name) ||
	    ((tev->flags & TEP_EVENT_FL_FAILED) && !tev->print_fmt.format)) {
		tep_free(tep);
		return NULL;
	}
	return tev;
}

/* Parses the text into e: the fields alone, then the whole text when its
 * print fmt is usable.  Leaves e->decodable false when the text does not
 * parse.  Returns 0 or -ENOMEM. */
static int parse_text(struct kformats *kf, struct kformat_event *e, const char *text, size_t len)
{
	const struct kind_spec *spec = NULL;
	struct tep_event *tev, *whole;
	char *fields_only;
	size_t print_at = 0, i;
	int ret, ls;

	if (!kftext_well_formed(text, len, e->name, e->id, &print_at))
		return 0;
	fields_only = malloc(print_at + sizeof(KFTEXT_NO_PRINT_FMT));
	if (!fields_only)
		return -ENOMEM;
	memcpy(fields_only, text, print_at);
	memcpy(fields_only + print_at, KFTEXT_NO_PRINT_FMT, sizeof(KFTEXT_NO_PRINT_FMT));
	tev = parse_one(e, fields_only, print_at + sizeof(KFTEXT_NO_PRINT_FMT) - 1, &ret);
	free(fields_only);
	if (!tev)
		return ret;
	if (kftext_print_fmt_usable(text + print_at + strlen("print fmt: "), text + len, tev)) {
		whole = parse_one(e, text, len, &ret);
		if (ret < 0) {
			tep_free(tev->tep);
			return ret;
		}
		if (whole && !(whole->flags & TEP_EVENT_FL_FAILED)) {
			tep_free(tev->tep);
			tev = whole;
			e->print_safe = true;
		} else if (whole) {
			tep_free(whole->tep);
		}
	}
	ret = cache_layout(e, tev);
	if (ret < 0) {
		free(e->dynamic);
		e->dynamic = NULL;
		e->ndynamic = 0;
		e->print_safe = false;
		tep_free(tev->tep);
		return ret == -ENOMEM ? ret : 0;
	}
	e->tep = tev;
	e->decodable = true;
	ls = long_size_of(tev);
	if (ls && !kf->long_size)
		kf->long_size = ls;
	if (ls || kf->long_size)
		tep_set_long_size(tev->tep, ls ? ls : kf->long_size);
	e->print_safe =
	    e->print_safe && e->common[KC_TYPE].size >= 2 && !arg_walk(tev->print_fmt.args, 0, arg_unsafe, tev);
	for (i = 0; i < sizeof(kind_specs) / sizeof(kind_specs[0]); i++)
		if (!strcmp(kind_specs[i].system, e->system) && !strcmp(kind_specs[i].name, e->name)) {
			spec = &kind_specs[i];
			break;
		}
	if (spec && cache_slots(e, tev, spec)) {
		e->kind = spec->kind;
		if (e->kind == KEV_SWITCH)
			cache_states(e, tev);
	} else {
		memset(e->slot, 0, sizeof(e->slot));
	}
	return 0;
}

/* ---- the set ---- */

static bool id_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct kformats *kf = ctx;

	return kf->ev[item]->id == *(const uint32_t *)key;
}

int kformats_new(struct kformats **out)
{
	struct kformats *kf = calloc(1, sizeof(*kf));

	*out = NULL;
	if (!kf)
		return -ENOMEM;
	/* libtraceevent warns about formats it cannot parse on stderr: we
	 * count them instead (its level is the process's) */
	tep_set_loglevel(TEP_LOG_NONE);
	*out = kf;
	return 0;
}

static void event_free(struct kformat_event *e)
{
	if (!e)
		return;
	if (e->tep)
		tep_free(e->tep->tep);
	free(e->dynamic);
	free(e);
}

void kformats_free(struct kformats *kf)
{
	uint32_t i;

	if (!kf)
		return;
	for (i = 0; i < kf->n; i++)
		event_free(kf->ev[i]);
	free(kf->ev);
	hashindex_release(&kf->by_id);
	free(kf);
}

uint32_t kformats_count(const struct kformats *kf)
{
	return kf->n;
}

uint32_t kformats_undecodable(const struct kformats *kf)
{
	return kf->undecodable;
}

const struct kformat_event *kformats_at(const struct kformats *kf, uint32_t i)
{
	return i < kf->n ? kf->ev[i] : NULL;
}

const struct kformat_event *kformats_find(const struct kformats *kf, uint32_t id)
{
	int64_t item = hashindex_get(&kf->by_id, hashindex_u64(id), id_eq, kf, &id);

	return item < 0 ? NULL : kf->ev[item];
}

/* One entry of a payload, its bytes borrowed from the payload. */
struct entry {
	uint32_t id;
	const uint8_t *system, *name, *text;
	size_t system_len, name_len, text_len;
};

/* Reads a varint length and the bytes it counts. */
static const char *read_bytes(const uint8_t **p, const uint8_t *end, size_t max, const uint8_t **bytes, size_t *len)
{
	uint64_t n;

	if (varint_get(p, end, &n) < 0)
		return "length cut short";
	if (n > max)
		return "too long";
	if (n > (uint64_t)(end - *p))
		return "past the end of the payload";
	*bytes = *p;
	*len = (size_t)n;
	*p += n;
	return NULL;
}

static bool printable_name(const uint8_t *s, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* Reads entry i of the payload at *p; returns NULL or what is wrong (the
 * caller names the entry). */
static const char *read_entry(const uint8_t **p, const uint8_t *end, struct entry *en, char *why, size_t whylen)
{
	const char *bad;
	uint64_t id;

	if (varint_get(p, end, &id) < 0)
		return "id cut short";
	if (id > KFORMAT_ID_MAX) {
		snprintf(why, whylen, "id %" PRIu64 " over %u", id, KFORMAT_ID_MAX);
		return why;
	}
	en->id = (uint32_t)id;
	bad = read_bytes(p, end, KFORMAT_NAME_MAX, &en->system, &en->system_len);
	if (bad) {
		snprintf(why, whylen, "system name %s (at most %u bytes)", bad, KFORMAT_NAME_MAX);
		return why;
	}
	if (!printable_name(en->system, en->system_len))
		return "system name empty or not printable ASCII";
	bad = read_bytes(p, end, KFORMAT_NAME_MAX, &en->name, &en->name_len);
	if (bad) {
		snprintf(why, whylen, "event name %s (at most %u bytes)", bad, KFORMAT_NAME_MAX);
		return why;
	}
	if (!printable_name(en->name, en->name_len))
		return "event name empty or not printable ASCII";
	bad = read_bytes(p, end, KFORMAT_TEXT_MAX, &en->text, &en->text_len);
	if (bad) {
		snprintf(why, whylen, "format text %s (at most %u bytes)", bad, KFORMAT_TEXT_MAX);
		return why;
	}
	return NULL;
}

/* Checks the whole payload's framing before anything is added. */
static int check_payload(const uint8_t *payload, size_t len, uint32_t *count, char *err, size_t errlen)
{
	const uint8_t *p, *end;
	char why[128];
	uint64_t n;
	uint32_t i;

	if (!len) /* payload may be NULL */
		return error_set(err, errlen, -EBADMSG, "malformed kernel formats: count cut short");
	p = payload;
	end = payload + len;
	if (varint_get(&p, end, &n) < 0)
		return error_set(err, errlen, -EBADMSG, "malformed kernel formats: count cut short");
	if (n > KFORMAT_COUNT_MAX)
		return error_set(err, errlen, -EBADMSG, "malformed kernel formats: %" PRIu64 " entries (at most %u)", n,
		                 KFORMAT_COUNT_MAX);
	for (i = 0; i < n; i++) {
		struct entry en;
		const char *bad = read_entry(&p, end, &en, why, sizeof(why));

		if (bad)
			return error_set(err, errlen, -EBADMSG,
			                 "malformed kernel formats: entry %" PRIu32 " of %" PRIu64 ": %s", i + 1, n,
			                 bad);
	}
	if (p != end)
		return error_set(err, errlen, -EBADMSG, "malformed kernel formats: %zu bytes after the last entry",
		                 (size_t)(end - p));
	*count = (uint32_t)n;
	return 0;
}

static int add_entry(struct kformats *kf, const struct entry *en)
{
	struct kformat_event *e;
	uint64_t hash = hashindex_u64(en->id);
	uint32_t slot;
	char *s;
	int ret;

	ret = hashindex_reserve(&kf->by_id);
	if (ret < 0)
		return ret;
	slot = hashindex_slot(&kf->by_id, hash, id_eq, kf, &en->id);
	if (kf->by_id.val[slot])
		return 0; /* the first format of an id stays */
	if (kf->n == kf->cap) {
		uint32_t cap = kf->cap ? kf->cap * 2 : 64;
		struct kformat_event **ev = realloc(kf->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		kf->ev = ev;
		kf->cap = cap;
	}
	e = calloc(1, sizeof(*e) + en->system_len + 1 + en->name_len + 1);
	if (!e)
		return -ENOMEM;
	s = (char *)(e + 1);
	memcpy(s, en->system, en->system_len);
	e->system = s;
	s += en->system_len + 1;
	memcpy(s, en->name, en->name_len);
	e->name = s;
	e->id = en->id;
	e->kind = KEV_OTHER;
	ret = parse_text(kf, e, (const char *)en->text, en->text_len);
	if (ret < 0) {
		event_free(e);
		return ret;
	}
	if (!e->decodable)
		kf->undecodable++;
	kf->ev[kf->n] = e;
	hashindex_put(&kf->by_id, slot, hash, kf->n);
	kf->n++;
	return 0;
}

int kformats_add(struct kformats *kf, const uint8_t *payload, size_t len, char *err, size_t errlen)
{
	const uint8_t *p, *end;
	uint32_t count = 0, i;
	uint64_t n;
	char why[128];
	int ret;

	ret = check_payload(payload, len, &count, err, errlen);
	if (ret < 0)
		return ret;
	p = payload;
	end = payload + len;
	varint_get(&p, end, &n);
	for (i = 0; i < count; i++) {
		struct entry en;

		read_entry(&p, end, &en, why, sizeof(why));
		ret = add_entry(kf, &en);
		if (ret < 0)
			return error_set(err, errlen, ret, "cannot keep kernel format %" PRIu32 ": out of memory",
			                 en.id);
	}
	return 0;
}
