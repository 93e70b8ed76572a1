/* The live UDP data channel: receiving numbered datagrams and counting what
 * was lost (see live/udp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "host/lib/live/udp.h"

int liveudp_open(struct liveudp *u, int local_fd, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), olen;
	int size = (int)LIVEUDP_RCVBUF;

	memset(u, 0, sizeof(*u));
	u->fd = -1;
	u->buf = malloc(LIVEUDP_DATAGRAM_MAX);
	if (!u->buf)
		return -ENOMEM;
	if (getsockname(local_fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		return -EAFNOSUPPORT;
	u->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (u->fd < 0)
		return -errno;
	/* a full buffer drops datagrams in the host's kernel: ask for a big
	 * one, past rmem_max when we may (root) */
	if (setsockopt(u->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) == 0)
		u->forced = true;
	else
		setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	olen = sizeof(u->rcvbuf);
	getsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &u->rcvbuf, &olen);
	if (bind(u->fd, (struct sockaddr *)&ss, len))
		return -errno;
	len = sizeof(ss);
	if (getsockname(u->fd, (struct sockaddr *)&ss, &len))
		return -errno;
	*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

void liveudp_release(struct liveudp *u)
{
	if (u->fd >= 0)
		close(u->fd);
	free(u->buf);
	u->fd = -1;
	u->buf = NULL;
}

/* Counts a received seq: a jump forward skips (loses, so far) the numbers
 * between; one below the highest seen is late and was counted skipped. */
static void count_seq(struct liveudp *u, uint32_t seq)
{
	if (!u->any) {
		u->gaps += seq;
		u->next_seq = seq + 1;
		u->any = true;
	} else if ((int32_t)(seq - u->next_seq) >= 0) {
		u->gaps += seq - u->next_seq;
		u->next_seq = seq + 1;
	} else {
		u->late++;
	}
}

int liveudp_next(struct liveudp *u, struct wire_frame *f)
{
	for (;;) {
		ssize_t n = recv(u->fd, u->buf, LIVEUDP_DATAGRAM_MAX, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		if (wire_parse_datagram(u->buf, (size_t)n, f) || f->type != LP_FRAME_CHUNK) {
			u->bad++;
			continue;
		}
		count_seq(u, f->seq);
		u->datagrams++;
		return 1;
	}
}

void liveudp_status(struct liveudp *u, uint64_t next_seq, uint64_t events)
{
	u->sent_seq = next_seq;
	u->sent_events = events;
	u->told = true;
}

uint64_t liveudp_lost_datagrams(const struct liveudp *u)
{
	uint64_t numbered = u->sent_seq > u->next_seq ? u->sent_seq : u->next_seq;

	return numbered > u->datagrams ? numbered - u->datagrams : 0;
}

uint64_t liveudp_lost_events(const struct liveudp *u)
{
	return u->sent_events > u->events ? u->sent_events - u->events : 0;
}
