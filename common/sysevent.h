/* System call events in the trace (LP_EV_SYSCALL_ENTER / _EXIT): their
 * encoding, written by the drain, and their parsing, done by readers.  The
 * bodies follow the generic "varint length, bytes" form of types 6..13, so
 * readers that do not know them skip them. */
#ifndef LP_SYSEVENT_H
#define LP_SYSEVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/encoder.h"
#include "common/event.h"

#define SYSEVENT_IPS_MAX 16u
#define SYSEVENT_STR_MAX 256u

enum sysevent_flags {
	SYSEVENT_STR_LATE = 1u << 0, /* the path was read after the call began */
};

/* A parsed syscall event.  str points into the event (the chunk): valid
 * until the next chunk is read. */
struct sysevent {
	bool enter;     /* LP_EV_SYSCALL_ENTER; else EXIT */
	uint8_t arch;   /* enum sys_arch */
	uint32_t nr;    /* syscall number */
	uint32_t flags; /* enum sysevent_flags */
	/* ENTER */
	uint32_t nargs;
	uint64_t args[6];
	uint32_t nips; /* user return addresses, innermost first */
	uint64_t ips[SYSEVENT_IPS_MAX];
	const char *str; /* path argument, when read; not NUL-terminated */
	uint32_t str_len;
	/* EXIT */
	int64_t ret;
};

/* Appends an ENTER event: nargs at most 6, nips at most SYSEVENT_IPS_MAX,
 * str_len at most SYSEVENT_STR_MAX (longer ones are cut). */
void encoder_syscall_enter(struct encoder *e, uint64_t ns, unsigned arch, uint32_t nr, uint32_t flags,
                           const uint64_t *args, uint32_t nargs, const uint64_t *ips, uint32_t nips, const char *str,
                           uint32_t str_len);
void encoder_syscall_exit(struct encoder *e, uint64_t ns, unsigned arch, uint32_t nr, int64_t ret);

/* Parses a decoded LP_EV_SYSCALL_ENTER or _EXIT event.  Returns 0, or
 * -EBADMSG when the body is malformed (the event is then ignored). */
int sysevent_parse(const struct lp_event *ev, struct sysevent *out);

#endif
