/* The uprobe backend's traced tasks (see uprobes_impl.h): the set of
 * tids whose hits are kept, each process's load bias, and each thread's
 * frames, which tell a longjmp and what a forked child inherits. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dyntrace/uprobes_impl.h"

uint32_t *tid_find(struct uprobes *u, uint32_t tid, bool make)
{
	uint32_t k, *gone = NULL;

	if (!u->tids_cap)
		return NULL;
	k = (tid * 2654435761u) & (u->tids_cap - 1);
	for (uint32_t n = 0; n < u->tids_cap; n++, k = (k + 1) & (u->tids_cap - 1)) {
		if (u->tids[k] == tid)
			return &u->tids[k];
		if (u->tids[k] == UP_TID_GONE && !gone)
			gone = &u->tids[k];
		if (!u->tids[k]) {
			if (!make)
				return NULL;
			if (!gone) {
				gone = &u->tids[k];
				u->nused++;
			}
			*gone = tid;
			u->ntids++;
			return gone;
		}
	}
	return NULL;
}

/* Adds a traced task (the table grows at half full).  0 or -ENOMEM. */
int tid_add(struct uprobes *u, uint32_t tid)
{
	if ((u->nused + 1) * 2 > u->tids_cap) {
		uint32_t *old = u->tids, cap = u->tids_cap;
		uint32_t ncap = u->ntids * 4 > 64 ? u->ntids * 4 : 64;

		while (ncap & (ncap - 1))
			ncap &= ncap - 1;
		ncap *= 2;
		u->tids = calloc(ncap, sizeof(*u->tids));
		if (!u->tids) {
			u->tids = old;
			return -ENOMEM;
		}
		u->tids_cap = ncap;
		u->ntids = u->nused = 0;
		for (uint32_t i = 0; i < cap; i++)
			if (old[i] && old[i] != UP_TID_GONE)
				tid_find(u, old[i], true);
		free(old);
	}
	return tid_find(u, tid, true) ? 0 : -ENOMEM;
}

/* Every thread of a running process: those /proc lists now.  Called
 * after the events are open, so that a thread made since comes by its
 * fork record instead (one made in between comes both ways). */
int tid_add_threads(struct uprobes *u, uint32_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!r && (e = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && !*end && tid <= UINT32_MAX)
			r = tid_add(u, (uint32_t)tid);
	}
	closedir(d);
	return r;
}

void tid_remove(struct uprobes *u, uint32_t tid)
{
	uint32_t *t = tid_find(u, tid, false);

	if (t) {
		*t = UP_TID_GONE;
		u->ntids--;
	}
}

/* The process's slot (made when make; NULL when the table is full). */
struct up_pid *pid_slot(struct uprobes *u, uint32_t pid, bool make)
{
	uint32_t k = (pid * 2654435761u) % UP_PIDS;

	for (uint32_t n = 0; n < UP_PIDS; n++, k = (k + 1) % UP_PIDS) {
		if (u->pids[k].pid == pid)
			return &u->pids[k];
		if (!u->pids[k].pid) {
			if (!make)
				return NULL;
			u->pids[k].pid = pid;
			return &u->pids[k];
		}
	}
	/* full: the oldest processes are long gone; start over */
	if (!make)
		return NULL;
	memset(u->pids, 0, sizeof(u->pids));
	u->pids[pid % UP_PIDS].pid = pid;
	return &u->pids[pid % UP_PIDS];
}

struct up_thread *thread_slot(struct uprobes *u, uint32_t tid)
{
	uint32_t k = (tid * 2654435761u) % UP_THREADS;

	if (!u->threads)
		return NULL;
	for (uint32_t n = 0; n < UP_THREADS; n++, k = (k + 1) % UP_THREADS) {
		if (u->threads[k].tid == tid)
			return &u->threads[k];
		if (!u->threads[k].tid) {
			u->threads[k].tid = tid;
			return &u->threads[k];
		}
	}
	return NULL; /* full: longjmps of more threads are not seen */
}

/* An entry at stack pointer sp: frames entered at or below it are gone
 * (a callee's entry is always below its caller's), and the thread's
 * stream is told to how many frames it returned. */
void entry_unwind(struct uprobes *u, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t sp, uint32_t fn)
{
	struct up_thread *t = thread_slot(u, tid);
	uint32_t depth;

	if (!t)
		return;
	/* frames entered below sp are gone; one entered at sp is gone too
	 * once the stack went up (a longjmp, then a call at that level), but
	 * not when it is the top (a tail call: the callee reuses its frame) */
	depth = t->depth;
	while (depth && t->stack[depth - 1].sp < sp)
		depth--;
	if (depth < t->depth)
		while (depth && t->stack[depth - 1].sp == sp)
			depth--;
	if (depth < t->depth) {
		u->unwound += t->depth - depth;
		t->depth = depth;
		if (u->ops.longjmp)
			u->ops.longjmp(u->ops.ctx, pid, tid, ns, depth);
	}
	if (!t->stack && !(t->stack = malloc(UP_STACK_MAX * sizeof(*t->stack))))
		return;
	if (t->depth < UP_STACK_MAX) {
		t->stack[t->depth].sp = sp;
		t->stack[t->depth++].fn = fn;
	}
}

/* A return of fn: it and the frames above it are done. */
void exit_unwind(struct uprobes *u, uint32_t tid, uint32_t fn)
{
	struct up_thread *t = thread_slot(u, tid);

	if (!t)
		return;
	for (uint32_t d = t->depth; d > 0; d--)
		if (t->stack[d - 1].fn == fn) {
			t->depth = d - 1;
			return;
		}
}

/* A fork by thread tid of process pid: the child keeps a copy of the
 * thread's frames until its first record says whether it is a process
 * (which inherits them) or a thread (which starts with none). */
void fork_frames(struct uprobes *u, uint32_t pid, uint32_t tid, uint32_t child, uint64_t ns)
{
	struct up_thread *t = thread_slot(u, tid), *c;

	if (!t || !t->depth)
		return;
	c = thread_slot(u, child);
	if (!c || (!c->stack && !(c->stack = malloc(UP_STACK_MAX * sizeof(*c->stack)))))
		return;
	memcpy(c->stack, t->stack, t->depth * sizeof(*t->stack));
	c->depth = t->depth;
	c->forker = pid;
	c->fork_ns = ns;
}

/* The first record of a forked task: a child process's stream begins
 * with the frames it inherited, entered at the fork (addresses as in the
 * parent: fork keeps the layout). */
void inherit_frames(struct uprobes *u, struct up_thread *c, uint32_t pid, uint32_t tid)
{
	struct up_pid *parent = pid_slot(u, c->forker, false), *p;
	uint64_t bias = parent ? parent->bias : 0;

	if (pid == c->forker || !parent) {
		c->depth = 0; /* a thread, or a parent never seen entering */
	} else {
		uint64_t frames[UPROBES_INHERIT_MAX];
		uint32_t n = c->depth < UPROBES_INHERIT_MAX ? c->depth : UPROBES_INHERIT_MAX;

		p = pid_slot(u, pid, true);
		p->bias = bias;
		for (uint32_t d = 0; d < n; d++)
			frames[d] = bias + u->sel.fn[c->stack[d].fn].addr;
		if (u->ops.fork)
			u->ops.fork(u->ops.ctx, pid, tid, c->fork_ns, c->forker, frames, n);
	}
	c->forker = 0;
}
