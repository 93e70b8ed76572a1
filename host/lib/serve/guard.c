/* The pending connections of `layerprof serve` (see serve/guard.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/lib/serve/guard.h"

/* The longest the watch thread sleeps with nothing pending. */
#define WATCH_IDLE_MS 1000u

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Cuts a pending connection (lock held): its server thread sees the end
 * of the stream and closes it, then serveguard_close frees the entry. */
static void conn_cut(struct serveguard *g, struct serveguard_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->pending = false;
	g->pending--;
}

static void *watch(void *arg)
{
	struct serveguard *g = arg;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		uint64_t now = now_ms(), next = now + WATCH_IDLE_MS;
		struct serveguard_conn *c;
		struct timespec until;

		for (c = g->conns; c; c = c->next) {
			if (!c->pending)
				continue;
			if (now - c->since_ms >= SERVEGUARD_DEADLINE_MS) {
				conn_cut(g, c);
				g->cut_deadline++;
			} else if (c->since_ms + SERVEGUARD_DEADLINE_MS < next) {
				next = c->since_ms + SERVEGUARD_DEADLINE_MS;
			}
		}
		/* the condition variable waits on CLOCK_REALTIME: the same
		 * span from now on that clock */
		clock_gettime(CLOCK_REALTIME, &until);
		next -= now;
		until.tv_sec += (time_t)(next / 1000u);
		until.tv_nsec += (long)(next % 1000u) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->cond, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int serveguard_start(struct serveguard *g)
{
	int r;

	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	r = pthread_create(&g->thread, NULL, watch, g);
	if (r)
		return -r;
	g->running = true;
	return 0;
}

void serveguard_stop(struct serveguard *g)
{
	struct serveguard_conn *c, *next;

	if (!g->running)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	g->running = false;
	for (c = g->conns; c; c = next) {
		next = c->next;
		close(c->fd);
		free(c);
	}
	g->conns = NULL;
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

static void address_key(const struct sockaddr *sa, char *key, size_t size)
{
	char text[INET6_ADDRSTRLEN] = "?";

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof(text));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof(text));
	snprintf(key, size, "%s", text);
}

/* Makes room for one more pending connection from key (lock held). */
static void make_room(struct serveguard *g, const char *key)
{
	struct serveguard_conn *c, *oldest = NULL, *oldest_same = NULL;
	unsigned same = 0;

	for (c = g->conns; c; c = c->next) {
		if (!c->pending)
			continue;
		/* the list is newest first: the last one seen is the oldest */
		oldest = c;
		if (!strcmp(c->key, key)) {
			same++;
			oldest_same = c;
		}
	}
	if (same >= SERVEGUARD_PENDING_PER_IP) {
		conn_cut(g, oldest_same);
		g->cut_pushed++;
	} else if (g->pending >= SERVEGUARD_PENDING_MAX && oldest) {
		conn_cut(g, oldest);
		g->cut_pushed++;
	}
}

struct serveguard_conn *serveguard_open(struct serveguard *g, int fd, const struct sockaddr *sa)
{
	struct serveguard_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* our own descriptor of the socket: cutting through it can never hit
	 * a descriptor number the server closed and reused meanwhile */
	c->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	address_key(sa, c->key, sizeof(c->key));
	c->since_ms = now_ms();
	c->pending = true;
	pthread_mutex_lock(&g->lock);
	make_room(g, c->key);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->pending++;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return c;
}

void serveguard_authorised(struct serveguard *g, struct serveguard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->pending) {
		c->pending = false;
		g->pending--;
	}
	pthread_mutex_unlock(&g->lock);
}

void serveguard_close(struct serveguard *g, struct serveguard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->pending)
		g->pending--;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&g->lock);
	close(c->fd);
	free(c);
}
