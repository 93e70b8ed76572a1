/* Unit test of the live UDP channel over loopback: numbered datagrams in
 * and out of order, a gap, a late one, garbage, and the lost datagram and
 * event counts against the agent's STATUS. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/wire.h"
#include "host/lib/live/udp.h"
#include "tests/unit/check.h"

/* Sends one CHUNK frame numbered seq (any payload) to port. */
static void send_seq(int fd, unsigned port, uint32_t seq, const char *payload)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	uint8_t buf[256];
	size_t len = strlen(payload);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	wire_header_put(buf, LP_FRAME_CHUNK, seq, payload, (uint32_t)len);
	memcpy(buf + LP_WIRE_HEADER_SIZE, payload, len);
	CHECK(sendto(fd, buf, LP_WIRE_HEADER_SIZE + len, 0, (struct sockaddr *)&to, sizeof(to)) > 0);
}

/* Takes every waiting datagram; returns how many frames came. */
static int take(struct liveudp *u)
{
	struct pollfd pfd = { .fd = u->fd, .events = POLLIN };
	struct wire_frame f;
	int n = 0, r;

	poll(&pfd, 1, 1000);
	while ((r = liveudp_next(u, &f)) > 0) {
		n++;
		u->events += 10; /* the caller counts the events of each */
	}
	CHECK_EQ_U64(r, 0);
	return n;
}

int main(void)
{
	struct sockaddr_in lo = { .sin_family = AF_INET };
	struct liveudp u;
	unsigned port = 0;
	int local, out;

	/* the TCP connection's stand-in: a socket on the loopback address */
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	local = socket(AF_INET, SOCK_DGRAM, 0);
	out = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(local >= 0 && out >= 0 && !bind(local, (struct sockaddr *)&lo, sizeof(lo)));
	CHECK_EQ_U64(liveudp_open(&u, local, &port), 0);
	CHECK(port > 0 && u.fd >= 0);
	CHECK(u.rcvbuf > 0);

	send_seq(out, port, 0, "a");
	send_seq(out, port, 1, "b");
	send_seq(out, port, 3, "d"); /* 2 is missing, for now */
	CHECK_EQ_U64(take(&u), 3);
	CHECK_EQ_U64(u.gaps, 1);
	liveudp_status(&u, 4, 40);
	CHECK_EQ_U64(liveudp_lost_datagrams(&u), 1);
	CHECK_EQ_U64(liveudp_lost_events(&u), 10);

	send_seq(out, port, 2, "c"); /* late, not lost after all */
	CHECK_EQ_U64(take(&u), 1);
	CHECK_EQ_U64(u.late, 1);
	CHECK_EQ_U64(liveudp_lost_datagrams(&u), 0);
	CHECK_EQ_U64(liveudp_lost_events(&u), 0);

	/* garbage is skipped and counted; numbers sent but never seen are lost */
	{
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

		to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(sendto(out, "junk", 4, 0, (struct sockaddr *)&to, sizeof(to)) == 4);
	}
	send_seq(out, port, 6, "g");
	CHECK_EQ_U64(take(&u), 1);
	CHECK_EQ_U64(u.bad, 1);
	liveudp_status(&u, 8, 80);
	CHECK_EQ_U64(u.datagrams, 5);
	CHECK_EQ_U64(liveudp_lost_datagrams(&u), 3); /* 4, 5 and 7 */
	CHECK_EQ_U64(liveudp_lost_events(&u), 30);

	liveudp_release(&u);
	liveudp_release(&u); /* twice: harmless */
	close(local);
	close(out);
	return check_summary();
}
