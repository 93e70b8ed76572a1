/* The IPC group: pipes, UNIX and loopback sockets by size, message
 * queues, eventfd and the readiness calls (poll, select, epoll).  Transfers
 * by size run in one thread (the bytes written, then read back); round
 * trips and wake-ups involve a second process or thread, on the shared
 * clock. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oscal/suite.h"

static const long xs_bytes[] = { 1, 16, 64, 256, 1024, 4096, 16384, 65536 };
static const long xs_udp[] = { 1, 16, 64, 256, 1024, 4096, 16384, 32768 };
static const long xs_mq[] = { 1, 64, 256, 1024, 4096, 8192 };
static const long xs_fds[] = { 1, 2, 4, 8, 16, 32, 64 };

#define MQ_MSG_MAX 8192 /* the default msgsize_max of Linux */

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static void done_fds(struct suite_ctx *c)
{
	suite_close_fds(c);
}

/* x bytes written to fd[1] and read back from fd[0] in this thread: fd[1]
 * is non-blocking (its setup's), so that a size above the channel's buffer moves in
 * turns instead of blocking the writer. */
static int xfer(struct suite_ctx *c, long x)
{
	long sent = 0, got = 0;
	while (got < x) {
		if (sent < x) {
			ssize_t n = write(c->fd[1], c->buf + sent, (size_t)(x - sent));
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return suite_err(c, "the write of the transfer");
			if (n > 0)
				sent += n;
		}
		if (got < sent) {
			ssize_t n = read(c->fd[0], c->buf2 + got, (size_t)(sent - got));
			if (n < 0 && errno != EINTR)
				return suite_err(c, "the read of the transfer");
			if (n == 0) {
				c->what = "the read of the transfer: end of file";
				return -EPIPE;
			}
			if (n > 0)
				got += n;
		}
	}
	return 0;
}

static int one_xfer(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int err = xfer(c, c->x);
	T1;
	return err;
}

/* ------------------------------------------------------------ pipes */

static int setup_pipe(struct suite_ctx *c)
{
	if (pipe2(c->fd, O_CLOEXEC) < 0)
		return suite_err(c, "pipe");
	if (fcntl(c->fd[1], F_SETFL, O_NONBLOCK) < 0)
		return suite_err(c, "fcntl O_NONBLOCK");
	return 0;
}

static int one_pipe(struct suite_ctx *c, uint64_t *ns)
{
	int p[2];
	T0;
	int r = pipe(p);
	T1;
	if (r < 0)
		return suite_err(c, "pipe");
	close(p[0]);
	close(p[1]);
	return 0;
}

static int one_write_pipe(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	ssize_t n = write(c->fd[1], c->buf, (size_t)c->x);
	T1;
	if (n != c->x)
		return n < 0 ? suite_err(c, "write to an empty pipe")
		             : (c->what = "write to an empty pipe: short", -EIO);
	return suite_read_all(c->fd[0], c->buf2, (size_t)c->x) < 0 ? suite_err(c, "read back of the pipe") : 0;
}

static int one_read_pipe(struct suite_ctx *c, uint64_t *ns)
{
	int err = suite_write_all(c->fd[1], c->buf, (size_t)c->x);
	if (err)
		return c->what = "write into the pipe before read", err;
	T0;
	ssize_t n = read(c->fd[0], c->buf2, (size_t)c->x);
	T1;
	if (n != c->x)
		return n < 0 ? suite_err(c, "read of a pipe") : (c->what = "read of a pipe: short", -EIO);
	return 0;
}

/* An echo process: reads a byte from fd[2], writes it to fd[1]... set up
 * as two pipes: parent writes fd[1] (to child), reads fd[0] (from child). */
static int setup_echo(struct suite_ctx *c)
{
	int to[2], from[2];
	if (pipe2(to, O_CLOEXEC) < 0)
		return suite_err(c, "pipe");
	c->fd[2] = to[0];
	c->fd[1] = to[1];
	if (pipe2(from, O_CLOEXEC) < 0)
		return suite_err(c, "pipe");
	c->fd[0] = from[0];
	c->fd[3] = from[1];
	c->pid = fork();
	if (c->pid < 0)
		return suite_err(c, "fork of the echo process");
	if (c->pid == 0) {
		char b;
		close(to[1]);
		close(from[0]);
		while (read(to[0], &b, 1) == 1)
			if (write(from[1], &b, 1) != 1)
				break;
		_exit(0);
	}
	suite_child_add(c->pid);
	close(c->fd[2]);
	close(c->fd[3]);
	c->fd[2] = c->fd[3] = -1;
	return 0;
}

static void done_echo(struct suite_ctx *c)
{
	suite_close_fds(c); /* the echo process reads end of file and exits */
	if (c->pid > 0) {
		waitpid(c->pid, NULL, 0);
		suite_child_forget(c->pid);
	}
}

static int one_pingpong(struct suite_ctx *c, uint64_t *ns)
{
	char b = 'p';
	T0;
	if (write(c->fd[1], &b, 1) != 1)
		return suite_err(c, "write to the echo process");
	ssize_t n = read(c->fd[0], &b, 1);
	T1;
	return n == 1 ? 0 : n == 0 ? (c->what = "the echo process ended", -EPIPE) : suite_err(c, "read of the echo");
}

/* A thread blocked in read(2) of a pipe, woken by one byte. */
struct pipe_waker {
	int fd;
	pthread_t th;
	pid_t tid;
	atomic_int ready, returned, stop;
	uint64_t ret;
};

static void *pipe_reader(void *arg)
{
	struct pipe_waker *w = arg;
	char b;
	w->tid = suite_gettid();
	for (;;) {
		atomic_fetch_add(&w->ready, 1);
		if (read(w->fd, &b, 1) != 1)
			break;
		w->ret = suite_now();
		if (atomic_load(&w->stop))
			break;
		atomic_fetch_add(&w->returned, 1);
	}
	return NULL;
}

static int setup_pipe_wake(struct suite_ctx *c)
{
	struct pipe_waker *w;
	int r;
	if (pipe2(c->fd, O_CLOEXEC) < 0)
		return suite_err(c, "pipe");
	if (!(w = calloc(1, sizeof(*w))))
		return suite_err(c, "calloc");
	w->fd = c->fd[0];
	if ((r = pthread_create(&w->th, NULL, pipe_reader, w))) {
		free(w);
		errno = r;
		return suite_err(c, "pthread_create of the reader");
	}
	c->priv = w;
	return 0;
}

static void done_pipe_wake(struct suite_ctx *c)
{
	struct pipe_waker *w = c->priv;
	if (w) {
		char b = 's';
		atomic_store(&w->stop, 1);
		if (write(c->fd[1], &b, 1) != 1)
			close(c->fd[1]); /* end of file ends the reader too */
		pthread_join(w->th, NULL);
		free(w);
		c->priv = NULL;
	}
	suite_close_fds(c);
}

static int one_pipe_wake(struct suite_ctx *c, uint64_t *ns)
{
	struct pipe_waker *w = c->priv;
	int want = atomic_load(&w->returned) + 1;
	char b = 'w';
	while (atomic_load(&w->ready) < want)
		sched_yield();
	suite_wait_sleeping(w->tid, 1);
	uint64_t t0 = suite_now();
	if (write(c->fd[1], &b, 1) != 1)
		return suite_err(c, "write to the pipe");
	while (atomic_load(&w->returned) < want)
		sched_yield();
	*ns = w->ret - t0;
	return 0;
}

/* ------------------------------------------------------------ sockets */

static int setup_pair(struct suite_ctx *c, int type)
{
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, c->fd) < 0)
		return suite_err(c, "socketpair AF_UNIX");
	return 0;
}

static int nonblocking_writer(struct suite_ctx *c)
{
	return fcntl(c->fd[1], F_SETFL, O_NONBLOCK) < 0 ? suite_err(c, "fcntl O_NONBLOCK") : 0;
}

static int setup_unix_stream(struct suite_ctx *c)
{
	int err = setup_pair(c, SOCK_STREAM);
	return err ? err : nonblocking_writer(c);
}

static int setup_unix_dgram(struct suite_ctx *c)
{
	int size = 4 * 65536;
	int err = setup_pair(c, SOCK_DGRAM);
	if (!err) {
		setsockopt(c->fd[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
		setsockopt(c->fd[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	}
	return err;
}

static int one_socketpair(struct suite_ctx *c, uint64_t *ns)
{
	int p[2];
	T0;
	int r = socketpair(AF_UNIX, SOCK_STREAM, 0, p);
	T1;
	if (r < 0)
		return suite_err(c, "socketpair AF_UNIX SOCK_STREAM");
	close(p[0]);
	close(p[1]);
	return 0;
}

static int one_dgram(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	ssize_t n = send(c->fd[1], c->buf, (size_t)c->x, MSG_NOSIGNAL);
	if (n != c->x)
		return n < 0 ? suite_err(c, "send of a datagram") : (c->what = "send of a datagram: short", -EIO);
	n = recv(c->fd[0], c->buf2, (size_t)c->x, 0);
	T1;
	if (n != c->x)
		return n < 0 ? suite_err(c, "recv of a datagram") : (c->what = "recv of a datagram: short", -EIO);
	return 0;
}

static struct sockaddr_in loopback(void)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* fd[2]: a listening TCP socket on 127.0.0.1, its address in *a */
static int listen_tcp(struct suite_ctx *c, struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	*a = loopback();
	c->fd[2] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd[2] < 0)
		return suite_err(c, "socket AF_INET SOCK_STREAM");
	if (bind(c->fd[2], (struct sockaddr *)a, sizeof(*a)) < 0 || listen(c->fd[2], 8) < 0 ||
	    getsockname(c->fd[2], (struct sockaddr *)a, &len) < 0)
		return suite_err(c, "bind and listen on 127.0.0.1");
	return 0;
}

static int setup_tcp(struct suite_ctx *c)
{
	struct sockaddr_in a;
	int one = 1, err = listen_tcp(c, &a);
	if (err)
		return err;
	c->fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd[1] < 0)
		return suite_err(c, "socket AF_INET SOCK_STREAM");
	if (connect(c->fd[1], (struct sockaddr *)&a, sizeof(a)) < 0)
		return suite_err(c, "connect to 127.0.0.1");
	c->fd[0] = accept4(c->fd[2], NULL, NULL, SOCK_CLOEXEC);
	if (c->fd[0] < 0)
		return suite_err(c, "accept");
	setsockopt(c->fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return nonblocking_writer(c);
}

static int setup_udp(struct suite_ctx *c)
{
	struct sockaddr_in a = loopback();
	socklen_t len = sizeof(a);
	c->fd[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	c->fd[1] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c->fd[0] < 0 || c->fd[1] < 0)
		return suite_err(c, "socket AF_INET SOCK_DGRAM");
	if (bind(c->fd[0], (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(c->fd[0], (struct sockaddr *)&a, &len) < 0)
		return suite_err(c, "bind to 127.0.0.1");
	if (connect(c->fd[1], (struct sockaddr *)&a, sizeof(a)) < 0)
		return suite_err(c, "connect to 127.0.0.1");
	return 0;
}

static int one_tcp_connect(struct suite_ctx *c, uint64_t *ns)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s, t;
	if (getsockname(c->fd[2], (struct sockaddr *)&a, &len) < 0)
		return suite_err(c, "getsockname");
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return suite_err(c, "socket AF_INET SOCK_STREAM");
	T0;
	int r = connect(s, (struct sockaddr *)&a, sizeof(a));
	T1;
	if (r < 0) {
		close(s);
		return suite_err(c, "connect to 127.0.0.1");
	}
	t = accept4(c->fd[2], NULL, NULL, SOCK_CLOEXEC);
	close(s);
	if (t < 0)
		return suite_err(c, "accept");
	close(t);
	return 0;
}

static int setup_listen(struct suite_ctx *c)
{
	struct sockaddr_in a;
	return listen_tcp(c, &a);
}

static int socket_of(struct suite_ctx *c, uint64_t *ns, int family, int type)
{
	T0;
	int s = socket(family, type, 0);
	T1;
	if (s < 0)
		return suite_err(c, "socket");
	close(s);
	return 0;
}

static int one_socket_tcp(struct suite_ctx *c, uint64_t *ns)
{
	return socket_of(c, ns, AF_INET, SOCK_STREAM);
}

static int one_socket_udp(struct suite_ctx *c, uint64_t *ns)
{
	return socket_of(c, ns, AF_INET, SOCK_DGRAM);
}

static int one_socket_unix(struct suite_ctx *c, uint64_t *ns)
{
	return socket_of(c, ns, AF_UNIX, SOCK_STREAM);
}

/* bind(2) of an AF_UNIX socket to a new name in the suite's directory: bind
 * makes the name itself and fails when it exists (never follows a link) */
static int one_unix_bind(struct suite_ctx *c, uint64_t *ns)
{
	struct sockaddr_un a;
	int s, n;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/s", c->dir);
	if (n < 0 || (size_t)n >= sizeof(a.sun_path)) {
		c->what = "the socket's path (too long for AF_UNIX)";
		c->unavailable = 1;
		return -ENAMETOOLONG;
	}
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return suite_err(c, "socket AF_UNIX");
	T0;
	int r = bind(s, (struct sockaddr *)&a, sizeof(a));
	T1;
	close(s);
	if (r < 0)
		return suite_err(c, "bind AF_UNIX in the suite's directory");
	unlink(a.sun_path);
	return 0;
}

static void done_unix_bind(struct suite_ctx *c)
{
	suite_remove(c, "s");
}

/* ------------------------------------------------------------ message queues */

static int setup_mq(struct suite_ctx *c)
{
	struct mq_attr at;
	mqd_t q;
	memset(&at, 0, sizeof(at));
	at.mq_maxmsg = 4;
	at.mq_msgsize = MQ_MSG_MAX;
	snprintf(suite_mq, sizeof(suite_mq), "/layerprof-oscal-%d", (int)getpid());
	q = mq_open(suite_mq, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &at);
	if (q == (mqd_t)-1) {
		suite_mq[0] = 0;
		if (errno == ENOSYS)
			c->why = "no POSIX message queues in this kernel";
		return suite_err(c, "mq_open (O_CREAT|O_EXCL)");
	}
	/* unlinked at once: nothing is left if the suite is killed */
	mq_unlink(suite_mq);
	suite_mq[0] = 0;
	c->fd[0] = (int)q;
	return 0;
}

static void done_mq(struct suite_ctx *c)
{
	if (c->fd[0] >= 0)
		mq_close((mqd_t)c->fd[0]);
	c->fd[0] = -1;
}

static int one_mq_send(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = mq_send((mqd_t)c->fd[0], (const char *)c->buf, (size_t)c->x, 0);
	T1;
	if (r < 0)
		return suite_err(c, "mq_send");
	return mq_receive((mqd_t)c->fd[0], (char *)c->buf2, MQ_MSG_MAX, NULL) < 0 ? suite_err(c, "mq_receive") : 0;
}

static int one_mq_receive(struct suite_ctx *c, uint64_t *ns)
{
	if (mq_send((mqd_t)c->fd[0], (const char *)c->buf, (size_t)c->x, 0) < 0)
		return suite_err(c, "mq_send");
	T0;
	ssize_t n = mq_receive((mqd_t)c->fd[0], (char *)c->buf2, MQ_MSG_MAX, NULL);
	T1;
	return n < 0 ? suite_err(c, "mq_receive") : 0;
}

/* ------------------------------------------------------------ eventfd and readiness */

static int one_eventfd(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int fd = eventfd(0, EFD_CLOEXEC);
	T1;
	if (fd < 0)
		return suite_err(c, "eventfd");
	close(fd);
	return 0;
}

static int setup_eventfd(struct suite_ctx *c)
{
	c->fd[0] = eventfd(0, EFD_CLOEXEC);
	return c->fd[0] < 0 ? suite_err(c, "eventfd") : 0;
}

static int one_eventfd_write(struct suite_ctx *c, uint64_t *ns)
{
	uint64_t v = 1;
	T0;
	ssize_t n = write(c->fd[0], &v, sizeof(v));
	T1;
	if (n != (ssize_t)sizeof(v))
		return suite_err(c, "write of an eventfd");
	return read(c->fd[0], &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : suite_err(c, "read of an eventfd");
}

static int one_eventfd_read(struct suite_ctx *c, uint64_t *ns)
{
	uint64_t v = 1;
	if (write(c->fd[0], &v, sizeof(v)) != (ssize_t)sizeof(v))
		return suite_err(c, "write of an eventfd");
	T0;
	ssize_t n = read(c->fd[0], &v, sizeof(v));
	T1;
	return n == (ssize_t)sizeof(v) ? 0 : suite_err(c, "read of an eventfd");
}

/* x descriptors, all readable: dups of an eventfd at 1 (c->p: the array) */
static int setup_ready(struct suite_ctx *c)
{
	uint64_t v = 1;
	int *fds;
	int err = setup_eventfd(c);
	if (err)
		return err;
	if (write(c->fd[0], &v, sizeof(v)) != (ssize_t)sizeof(v))
		return suite_err(c, "write of an eventfd");
	if (!(fds = calloc((size_t)c->x, sizeof(*fds))))
		return suite_err(c, "calloc");
	c->p = fds;
	for (long i = 0; i < c->x; i++)
		fds[i] = -1;
	for (long i = 0; i < c->x; i++)
		if ((fds[i] = dup(c->fd[0])) < 0 || fds[i] >= FD_SETSIZE)
			return fds[i] < 0 ? suite_err(c, "dup") : (c->what = "dup: past FD_SETSIZE", -EMFILE);
	return 0;
}

static void done_ready(struct suite_ctx *c)
{
	int *fds = c->p;
	if (fds) {
		for (long i = 0; i < c->x; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(fds);
		c->p = NULL;
	}
	suite_close_fds(c);
}

static int one_poll(struct suite_ctx *c, uint64_t *ns)
{
	struct pollfd p[64];
	const int *fds = c->p;
	for (long i = 0; i < c->x; i++) {
		p[i].fd = fds[i];
		p[i].events = POLLIN;
		p[i].revents = 0;
	}
	T0;
	int r = poll(p, (nfds_t)c->x, 0);
	T1;
	if (r != c->x)
		return r < 0 ? suite_err(c, "poll") : (c->what = "poll: not every descriptor ready", -EIO);
	return 0;
}

static int one_select(struct suite_ctx *c, uint64_t *ns)
{
	const int *fds = c->p;
	struct timeval tv = { 0, 0 };
	fd_set set;
	int max = 0;
	FD_ZERO(&set);
	for (long i = 0; i < c->x; i++) {
		FD_SET(fds[i], &set);
		if (fds[i] > max)
			max = fds[i];
	}
	T0;
	int r = select(max + 1, &set, NULL, NULL, &tv);
	T1;
	if (r != c->x)
		return r < 0 ? suite_err(c, "select") : (c->what = "select: not every descriptor ready", -EIO);
	return 0;
}

static int one_epoll_create(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int fd = epoll_create1(EPOLL_CLOEXEC);
	T1;
	if (fd < 0)
		return suite_err(c, "epoll_create1");
	close(fd);
	return 0;
}

/* fd[1]: an epoll instance watching fd[0], an eventfd at 1 */
static int setup_epoll(struct suite_ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t v = 1;
	int err = setup_eventfd(c);
	if (err)
		return err;
	if (write(c->fd[0], &v, sizeof(v)) != (ssize_t)sizeof(v))
		return suite_err(c, "write of an eventfd");
	if ((c->fd[1] = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return suite_err(c, "epoll_create1");
	if (epoll_ctl(c->fd[1], EPOLL_CTL_ADD, c->fd[0], &ev) < 0)
		return suite_err(c, "epoll_ctl EPOLL_CTL_ADD");
	return 0;
}

static int one_epoll_wait(struct suite_ctx *c, uint64_t *ns)
{
	struct epoll_event ev;
	T0;
	int r = epoll_wait(c->fd[1], &ev, 1, 0);
	T1;
	if (r != 1)
		return r < 0 ? suite_err(c, "epoll_wait") : (c->what = "epoll_wait: the ready eventfd not seen", -EIO);
	return 0;
}

static int one_epoll_ctl_mod(struct suite_ctx *c, uint64_t *ns)
{
	struct epoll_event ev = { .events = EPOLLIN };
	T0;
	int r = epoll_ctl(c->fd[1], EPOLL_CTL_MOD, c->fd[0], &ev);
	T1;
	return r < 0 ? suite_err(c, "epoll_ctl EPOLL_CTL_MOD") : 0;
}

#define I(name, call, cond, param, unit, xs, setup, one, done, desc)             \
	{                                                                        \
		name, call, cond, "ipc", param, unit, xs, setup, one, done, desc \
	}

const struct suite_def suite_ipc[] = {
	I("pipe", "pipe", "", "", "", SUITE_NOX, NULL, one_pipe, NULL, "pipe(2) (both ends' close not timed)"),
	I("write-pipe", "write", "pipe", "bytes", "B", SUITE_XS(xs_bytes), setup_pipe, one_write_pipe, done_fds,
	  "write(2) of x bytes into an empty pipe"),
	I("read-pipe", "read", "pipe", "bytes", "B", SUITE_XS(xs_bytes), setup_pipe, one_read_pipe, done_fds,
	  "read(2) of the x bytes a pipe holds"),
	I("pipe-rw", "write", "pipe-rw", "bytes", "B", SUITE_XS(xs_bytes), setup_pipe, one_xfer, done_fds,
	  "write(2) of x bytes into a pipe and read(2) of them back, in one thread"),
	I("pipe-pingpong", "read", "pipe-roundtrip", "", "", SUITE_NOX, setup_echo, one_pingpong, done_echo,
	  "one byte to another process through a pipe and back through another (write, then read's return)"),
	I("pipe-wake", "write", "pipe-wake", "", "", SUITE_NOX, setup_pipe_wake, one_pipe_wake, done_pipe_wake,
	  "write(2) of one byte to a pipe to the return of read(2) in the thread blocked on it"),
	I("socketpair", "socketpair", "", "", "", SUITE_NOX, NULL, one_socketpair, NULL,
	  "socketpair(2) AF_UNIX SOCK_STREAM (close not timed)"),
	I("unix-stream", "send", "unix-stream", "bytes", "B", SUITE_XS(xs_bytes), setup_unix_stream, one_xfer, done_fds,
	  "send(2) of x bytes on an AF_UNIX stream pair and read(2) of them, in one thread"),
	I("unix-dgram", "send", "unix-dgram", "bytes", "B", SUITE_XS(xs_bytes), setup_unix_dgram, one_dgram, done_fds,
	  "send(2) of a datagram of x bytes on an AF_UNIX pair and recv(2) of it, in one thread"),
	I("tcp-loopback", "send", "tcp-loopback", "bytes", "B", SUITE_XS(xs_bytes), setup_tcp, one_xfer, done_fds,
	  "send(2) of x bytes on a TCP connection over 127.0.0.1 (TCP_NODELAY) and read(2) of them, in one thread"),
	I("udp-loopback", "send", "udp-loopback", "bytes", "B", SUITE_XS(xs_udp), setup_udp, one_dgram, done_fds,
	  "send(2) of a UDP datagram of x bytes to 127.0.0.1 and recv(2) of it, in one thread"),
	I("tcp-connect", "connect", "tcp-loopback", "", "", SUITE_NOX, setup_listen, one_tcp_connect, done_fds,
	  "connect(2) to a listening socket on 127.0.0.1 (accept and close not timed)"),
	I("socket-tcp", "socket", "tcp", "", "", SUITE_NOX, NULL, one_socket_tcp, NULL,
	  "socket(2) AF_INET SOCK_STREAM (close not timed)"),
	I("socket-udp", "socket", "udp", "", "", SUITE_NOX, NULL, one_socket_udp, NULL,
	  "socket(2) AF_INET SOCK_DGRAM (close not timed)"),
	I("socket-unix", "socket", "unix", "", "", SUITE_NOX, NULL, one_socket_unix, NULL,
	  "socket(2) AF_UNIX SOCK_STREAM (close not timed)"),
	I("unix-bind", "bind", "unix", "", "", SUITE_NOX, NULL, one_unix_bind, done_unix_bind,
	  "bind(2) of an AF_UNIX socket to a new name in the suite's directory (unlink not timed)"),
	I("mq-send", "mq_send", "", "bytes", "B", SUITE_XS(xs_mq), setup_mq, one_mq_send, done_mq,
	  "mq_send(3) of a message of x bytes to an empty POSIX message queue"),
	I("mq-receive", "mq_receive", "", "bytes", "B", SUITE_XS(xs_mq), setup_mq, one_mq_receive, done_mq,
	  "mq_receive(3) of the message of x bytes a POSIX message queue holds"),
	I("eventfd", "eventfd", "", "", "", SUITE_NOX, NULL, one_eventfd, NULL, "eventfd(2) (close not timed)"),
	I("eventfd-write", "write", "eventfd", "", "", SUITE_NOX, setup_eventfd, one_eventfd_write, done_fds,
	  "write(2) of 1 to an eventfd at 0"),
	I("eventfd-read", "read", "eventfd", "", "", SUITE_NOX, setup_eventfd, one_eventfd_read, done_fds,
	  "read(2) of an eventfd above 0"),
	I("poll", "poll", "ready", "fds", "fds", SUITE_XS(xs_fds), setup_ready, one_poll, done_ready,
	  "poll(2) with timeout 0 of x descriptors, all readable"),
	I("select", "select", "ready", "fds", "fds", SUITE_XS(xs_fds), setup_ready, one_select, done_ready,
	  "select(2) with timeout 0 of x descriptors, all readable"),
	I("epoll_create", "epoll_create1", "", "", "", SUITE_NOX, NULL, one_epoll_create, NULL,
	  "epoll_create1(2) (close not timed)"),
	I("epoll_wait", "epoll_wait", "ready", "", "", SUITE_NOX, setup_epoll, one_epoll_wait, done_fds,
	  "epoll_wait(2) with timeout 0 of an instance with one readable descriptor"),
	I("epoll_ctl-mod", "epoll_ctl", "mod", "", "", SUITE_NOX, setup_epoll, one_epoll_ctl_mod, done_fds,
	  "epoll_ctl(2) EPOLL_CTL_MOD of a watched descriptor"),
};
const size_t suite_ipc_n = sizeof(suite_ipc) / sizeof(suite_ipc[0]);
