/* The ptrace backend's tasks and their table; see ptrace_task.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "systrace/ptrace_task.h"

struct pt_task *pt_task_new(pid_t tid, pid_t tgid, uint32_t flags, bool started)
{
	struct pt_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->tgid = tgid;
	t->flags = flags;
	t->started = started;
	return t;
}

uint32_t pt_task_pid(struct pt_task *t)
{
	if (!t->tgid) {
		pid_t g = pt_proc_tgid(t->tid);

		t->tgid = g > 0 ? g : t->tid;
	}
	return (uint32_t)t->tgid;
}

struct pt_task *pt_tasks_find(struct pt_tasks *ts, pid_t tid)
{
	if (ts->last && ts->last->tid == tid)
		return ts->last;
	for (size_t i = 0; i < ts->n; i++) {
		if (ts->v[i]->tid == tid) {
			ts->last = ts->v[i];
			return ts->last;
		}
	}
	return NULL;
}

int pt_tasks_add(struct pt_tasks *ts, struct pt_task *t)
{
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 16;
		struct pt_task **v = cap <= PT_TASKS_MAX ? realloc(ts->v, cap * sizeof(*v)) : NULL;

		if (!v)
			return -ENOMEM;
		ts->v = v;
		ts->cap = cap;
	}
	ts->v[ts->n++] = t;
	return 0;
}

void pt_tasks_del(struct pt_tasks *ts, struct pt_task *t)
{
	for (size_t i = 0; i < ts->n; i++) {
		if (ts->v[i] == t) {
			ts->v[i] = ts->v[--ts->n];
			break;
		}
	}
	if (ts->last == t)
		ts->last = NULL;
}

struct pt_task *pt_tasks_pop(struct pt_tasks *ts)
{
	struct pt_task *t;

	if (!ts->n)
		return NULL;
	t = ts->v[--ts->n];
	if (ts->last == t)
		ts->last = NULL;
	return t;
}

void pt_tasks_release(struct pt_tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->v[i]);
	free(ts->v);
	ts->v = NULL;
	ts->n = ts->cap = 0;
	ts->last = NULL;
}

long pt_proc_status(pid_t tid, const char *field)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, field);
	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

pid_t pt_proc_tgid(pid_t tid)
{
	return (pid_t)pt_proc_status(tid, "\nTgid:");
}
