/* The ptrace backend's record queue: records are written whole into the
 * filling buffer and read back in pt_poll; see ptrace_queue.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "systrace/ptrace_queue.h"

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Makes room for `need` more bytes and two records (a record and a lost
 * marker ahead of it).  `force` ignores the bounds. */
static bool buf_reserve(struct pt_buf *b, size_t need, bool force)
{
	size_t cap = b->cap ? b->cap : PT_QUEUE_FIRST;
	unsigned char *buf;

	if (!force && (b->count + 2 > PT_QUEUE_RECORDS || b->len + need > PT_QUEUE_BYTES))
		return false;
	if (b->len + need <= b->cap)
		return true;
	while (cap < b->len + need)
		cap *= 2;
	if (!force && cap > PT_QUEUE_BYTES)
		cap = PT_QUEUE_BYTES;
	buf = realloc(b->buf, cap);
	if (!buf)
		return false;
	b->buf = buf;
	b->cap = cap;
	return true;
}

static void buf_put(struct pt_buf *b, const struct pt_entry *e, const uint64_t *ips, const char *str)
{
	unsigned char *p = b->buf + b->len;

	memcpy(p, e, sizeof(*e));
	p += sizeof(*e);
	if (ips && e->nips) {
		memcpy(p, ips, e->nips * sizeof(*ips));
		p += e->nips * sizeof(*ips);
	}
	if (str && e->str_len != PT_NO_STR && e->str_len)
		memcpy(p, str, e->str_len);
	b->len += e->size;
	b->count++;
}

void pt_queue_put_lost(struct pt_queue *q, uint32_t pid, uint32_t tid, uint64_t *lost, bool force)
{
	struct pt_entry e;

	if (!*lost)
		return;
	if (!buf_reserve(&q->fill, sizeof(e), force)) {
		q->lost_nothread += *lost;
		*lost = 0;
		return;
	}
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.kind = PT_LOST;
	e.pid = pid;
	e.tid = tid;
	e.str_len = PT_NO_STR;
	e.ret = (int64_t)*lost;
	buf_put(&q->fill, &e, NULL, NULL);
	*lost = 0;
}

/* Under the lock: room for `need` bytes, waiting a little for the caller
 * to empty the queue the first time it is full. */
static bool queue_room(struct pt_queue *q, pthread_mutex_t *lock, pthread_cond_t *cond, size_t need)
{
	struct timespec deadline;
	int64_t wait_ns;

	if (buf_reserve(&q->fill, need, false))
		return true;
	if (q->dropping)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	wait_ns = q->full_wait_ms ? (int64_t)q->full_wait_ms * 1000000 : PT_FULL_WAIT_NS;
	deadline.tv_sec += (time_t)(wait_ns / 1000000000);
	deadline.tv_nsec += (long)(wait_ns % 1000000000);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!buf_reserve(&q->fill, need, false)) {
		if (pthread_cond_timedwait(cond, lock, &deadline) == ETIMEDOUT) {
			q->dropping = true;
			return buf_reserve(&q->fill, need, false);
		}
	}
	return true;
}

bool pt_queue_push(struct pt_queue *q, pthread_mutex_t *lock, pthread_cond_t *cond, struct pt_entry *e,
                   const uint64_t *ips, const char *str, uint64_t *lost)
{
	size_t need = sizeof(*e) + e->nips * sizeof(*ips) + (e->str_len == PT_NO_STR ? 0 : e->str_len);

	e->size = (uint32_t)round8(need);
	if (!queue_room(q, lock, cond, e->size + (*lost ? sizeof(*e) : 0))) {
		pt_queue_lose(q, lost);
		return false;
	}
	pt_queue_put_lost(q, e->pid, e->tid, lost, false);
	buf_put(&q->fill, e, ips, str);
	return true;
}

void pt_queue_lose(struct pt_queue *q, uint64_t *lost)
{
	(*lost)++;
	q->lost_total++;
}

void pt_queue_take(struct pt_queue *q, struct pt_buf *out, uint64_t *lost_nothread)
{
	*out = q->fill;
	q->fill = q->spare;
	q->dropping = false;
	*lost_nothread = q->lost_nothread;
	q->lost_nothread = 0;
}

long pt_queue_deliver(struct pt_queue *q, struct pt_buf *b, uint64_t lost_nothread, const struct systrace_ops *ops)
{
	long n = 0;

	for (size_t off = 0; off < b->len;) {
		const struct pt_entry *e = (const struct pt_entry *)(const void *)(b->buf + off);
		struct sysrec rec;

		off += e->size;
		if (e->kind == PT_LOST) {
			if (ops->lost)
				ops->lost(ops->ctx, e->pid, e->tid, (uint64_t)e->ret);
			continue;
		}
		memset(&rec, 0, sizeof(rec));
		rec.kind = e->kind;
		rec.arch = e->arch;
		rec.nips = e->nips;
		rec.pid = e->pid;
		rec.tid = e->tid;
		rec.nr = e->nr;
		rec.ns = e->ns;
		memcpy(rec.args, e->args, sizeof(rec.args));
		rec.ret = e->ret;
		memcpy(rec.ips, e + 1, e->nips * sizeof(uint64_t));
		if (e->str_len != PT_NO_STR) {
			rec.str = (const char *)(e + 1) + e->nips * sizeof(uint64_t);
			rec.str_len = e->str_len;
		}
		if (ops->sys)
			ops->sys(ops->ctx, &rec);
		n++;
	}
	if (lost_nothread && ops->lost)
		ops->lost(ops->ctx, 0, 0, lost_nothread);
	b->len = 0;
	b->count = 0;
	q->spare = *b;
	return n;
}

void pt_queue_release(struct pt_queue *q)
{
	free(q->fill.buf);
	free(q->spare.buf);
	q->fill = (struct pt_buf){ NULL, 0, 0, 0 };
	q->spare = q->fill;
}
