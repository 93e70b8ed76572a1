/* The tasks outside the traced processes (see ksystem.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktrace/ksystem.h"
#include "systrace/tracefs.h"

struct ksystem {
	struct ksystem_task *tasks; /* open addressing by tid */
	uint32_t cap, n;
};

static uint32_t ks_hash(uint32_t tid, uint32_t cap)
{
	return (tid * 0x9e3779b1u) & (cap - 1);
}

struct ksystem *ksystem_new(void)
{
	return calloc(1, sizeof(struct ksystem));
}

void ksystem_free(struct ksystem *ks)
{
	if (!ks)
		return;
	free(ks->tasks);
	free(ks);
}

uint32_t ksystem_read_task(uint32_t tid, char comm[KSYSTEM_COMM])
{
	char path[64], buf[512];
	const char *p;

	if (comm)
		comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	if (tracefs_read_file(path, buf, sizeof(buf)))
		return 0;
	if (comm && !strncmp(buf, "Name:\t", 6)) {
		size_t n = strcspn(buf + 6, "\n");

		if (n >= KSYSTEM_COMM)
			n = KSYSTEM_COMM - 1;
		memcpy(comm, buf + 6, n);
		comm[n] = '\0';
	}
	p = strstr(buf, "\nTgid:");
	return p ? (uint32_t)strtoul(p + 6, NULL, 10) : 0;
}

static struct ksystem_task *ks_find(struct ksystem *ks, uint32_t tid)
{
	if (!ks->cap)
		return NULL;
	for (uint32_t k = ks_hash(tid, ks->cap);; k = (k + 1) & (ks->cap - 1)) {
		if (ks->tasks[k].tid == tid)
			return &ks->tasks[k];
		if (!ks->tasks[k].tid)
			return NULL;
	}
}

/* A new entry for tid (not in the table), the table grown or, at its
 * bound, emptied first: those forgotten are learnt again as they come. */
static struct ksystem_task *ks_add(struct ksystem *ks, uint32_t tid)
{
	uint32_t k;

	if ((ks->n + 1) * 2 > ks->cap) {
		uint32_t cap = ks->cap ? 2 * ks->cap : 256;
		struct ksystem_task *t, *old = ks->tasks;

		if (cap > 2 * KSYSTEM_TASKS_MAX) {
			memset(ks->tasks, 0, ks->cap * sizeof(*ks->tasks));
			ks->n = 0;
		} else {
			t = calloc(cap, sizeof(*t));
			if (!t)
				return NULL;
			for (uint32_t i = 0; i < ks->cap; i++) {
				if (!old[i].tid)
					continue;
				for (k = ks_hash(old[i].tid, cap); t[k].tid; k = (k + 1) & (cap - 1))
					;
				t[k] = old[i];
			}
			free(old);
			ks->tasks = t;
			ks->cap = cap;
		}
	}
	for (k = ks_hash(tid, ks->cap); ks->tasks[k].tid; k = (k + 1) & (ks->cap - 1))
		;
	ks->n++;
	ks->tasks[k].tid = tid;
	return &ks->tasks[k];
}

const struct ksystem_task *ksystem_ran(struct ksystem *ks, uint32_t pid, uint32_t tid)
{
	struct ksystem_task *t = ks_find(ks, tid);

	if (t && t->pid == pid)
		return t;
	if (!t && !(t = ks_add(ks, tid)))
		return NULL;
	/* new, or the tid is another process's now: its name too */
	t->pid = pid;
	ksystem_read_task(tid, t->comm);
	return t;
}

const struct ksystem_task *ksystem_named(struct ksystem *ks, uint32_t tid)
{
	struct ksystem_task *t = ks_find(ks, tid);

	if (t && t->pid)
		return t;
	if (!t && !(t = ks_add(ks, tid)))
		return NULL;
	/* a task gone already is named by its tid */
	t->pid = ksystem_read_task(tid, t->comm);
	if (!t->pid)
		t->pid = tid;
	return t;
}

void ksystem_comm(struct ksystem *ks, uint32_t tid, const char *comm, size_t n)
{
	struct ksystem_task *t = ks_find(ks, tid);

	if (!t)
		return;
	n = strnlen(comm, n < KSYSTEM_COMM - 1 ? n : KSYSTEM_COMM - 1);
	if (!n)
		return;
	memcpy(t->comm, comm, n);
	t->comm[n] = '\0';
}

void ksystem_forget(struct ksystem *ks, uint32_t tid)
{
	struct ksystem_task *t = ks_find(ks, tid);

	if (t) {
		t->pid = 0;
		t->comm[0] = '\0';
	}
}
