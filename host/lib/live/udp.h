/* The UDP data channel of `layerprof live` (docs/protocol.md, "UDP"): a
 * datagram socket beside the TCP connection, with a large receive buffer,
 * that takes the agent's numbered CHUNK datagrams and counts the datagrams
 * and events that never came.  Not thread-safe: the live session owns it. */
#ifndef LP_LIVEUDP_H
#define LP_LIVEUDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define LIVEUDP_RCVBUF (16u << 20) /* asked for; the kernel may give less */
#define LIVEUDP_DATAGRAM_MAX 65536u
#define LIVEUDP_BATCH 64 /* datagrams taken per liveudp_receive call, at most */

struct liveudp {
	int fd;               /* -1 when closed */
	int rcvbuf;           /* receive buffer the kernel granted, bytes */
	bool forced;          /* granted through SO_RCVBUFFORCE (root) */
	uint32_t next_seq;    /* one past the highest seq received */
	bool any;             /* a datagram has been received */
	uint64_t datagrams;   /* received and valid */
	uint64_t gaps;        /* seq numbers skipped: lost, or late */
	uint64_t late;        /* came after a higher seq (counted in gaps before) */
	uint64_t bad;         /* not a CHUNK frame, or broken */
	uint64_t events;      /* events in the received datagrams (the caller adds them) */
	uint64_t sent_seq;    /* from the agent's STATUS event=udp: datagrams numbered */
	uint64_t sent_events; /* and the events they held */
	bool told;            /* the agent has sent such a STATUS */
	uint8_t *buf;         /* owned: LIVEUDP_DATAGRAM_MAX bytes */
};

/* Opens a datagram socket on local_fd's local address (any port) and asks
 * for a LIVEUDP_RCVBUF receive buffer (SO_RCVBUFFORCE, else SO_RCVBUF).
 * Returns 0 with u->fd set, or -errno; *port is the port to tell the agent.
 * Release with liveudp_release (also after a failure). */
int liveudp_open(struct liveudp *u, int local_fd, unsigned *port);
void liveudp_release(struct liveudp *u);

/* Takes one waiting datagram without blocking.  Returns 1 with *f set (a
 * CHUNK frame; its payload is valid until the next call), 0 when none is
 * waiting, or -errno when the socket failed.  Broken datagrams and other
 * frame types are counted in u->bad and skipped. */
int liveudp_next(struct liveudp *u, struct wire_frame *f);

/* The agent's STATUS event=udp: next_seq and events so far. */
void liveudp_status(struct liveudp *u, uint64_t next_seq, uint64_t events);

/* Datagrams lost: numbered by the agent and never received (so far). */
uint64_t liveudp_lost_datagrams(const struct liveudp *u);
/* Events lost: the events the agent says it sent in datagrams, minus those
 * received.  Exact once every datagram sent before the agent's last STATUS
 * has arrived or is gone; until then it may count some in flight. */
uint64_t liveudp_lost_events(const struct liveudp *u);

#endif
