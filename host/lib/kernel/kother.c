/* Other processes' kernel events, kept apart (see kother.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/kernel/kother.h"
#include "host/lib/util/slots.h"

struct ko_count {
	uint32_t id;
	uint64_t count;
};

struct ko_proc {
	uint32_t pid;
	char comm[17];
	bool main_seen; /* comm is the main thread's */
	uint32_t threads;
	uint64_t events, on_cpu_ns, switches, vol, invol;
	struct ko_count *ids;
	uint32_t nids, ids_cap;
};

/* One thread (stream): its process, and since when it is on a CPU. */
struct ko_thread {
	uint32_t proc; /* index in procs */
	bool on;
	uint64_t on_ns;
};

struct kother {
	struct ko_thread **threads; /* by stream index */
	uint32_t nthreads;
	struct ko_proc *procs;
	uint32_t nprocs, procs_cap;
	bool oom;
};

struct kother *kother_new(void)
{
	return calloc(1, sizeof(struct kother));
}

void kother_free(struct kother *ko)
{
	if (!ko)
		return;
	for (uint32_t i = 0; i < ko->nthreads; i++)
		free(ko->threads[i]);
	free(ko->threads);
	for (uint32_t i = 0; i < ko->nprocs; i++)
		free(ko->procs[i].ids);
	free(ko->procs);
	free(ko);
}

static int proc_of(struct kother *ko, uint32_t pid)
{
	for (uint32_t i = 0; i < ko->nprocs; i++)
		if (ko->procs[i].pid == pid)
			return (int)i;
	if (ko->nprocs == KOTHER_PROCS_MAX)
		return -1;
	if (ko->nprocs == ko->procs_cap) {
		uint32_t cap = ko->procs_cap ? 2 * ko->procs_cap : 64;
		struct ko_proc *g = realloc(ko->procs, cap * sizeof(*g));

		if (!g)
			return -1;
		ko->procs = g;
		ko->procs_cap = cap;
	}
	memset(&ko->procs[ko->nprocs], 0, sizeof(ko->procs[0]));
	ko->procs[ko->nprocs].pid = pid;
	return (int)ko->nprocs++;
}

/* The thread of stream s, made on its first event (a process is looked
 * up once per thread, not per event). */
static struct ko_thread *thread_of(struct kother *ko, const struct walk_stream *s)
{
	struct ko_thread *t;
	struct ko_proc *p;
	int pi;

	if (s->index >= ko->nthreads) {
		struct ko_thread **g = slots_grow(ko->threads, sizeof(*g), &ko->nthreads, s->index);

		if (!g)
			return NULL;
		ko->threads = g;
	}
	if (ko->threads[s->index])
		return ko->threads[s->index];
	pi = proc_of(ko, s->pid);
	if (pi < 0 || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->proc = (uint32_t)pi;
	ko->threads[s->index] = t;
	p = &ko->procs[pi];
	p->threads++;
	if (!p->main_seen && (s->tid == s->pid || !p->comm[0])) {
		memcpy(p->comm, s->comm, sizeof(p->comm));
		p->main_seen = s->tid == s->pid;
	}
	return t;
}

static void count_id(struct kother *ko, struct ko_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nids; i++)
		if (p->ids[i].id == id) {
			p->ids[i].count++;
			return;
		}
	if (p->nids == p->ids_cap) {
		uint32_t cap = p->ids_cap ? 2 * p->ids_cap : 16;
		struct ko_count *g = cap <= KOTHER_IDS_MAX ? realloc(p->ids, cap * sizeof(*g)) : NULL;

		if (!g) {
			ko->oom = true;
			return;
		}
		p->ids = g;
		p->ids_cap = cap;
	}
	p->ids[p->nids].id = id;
	p->ids[p->nids++].count = 1;
}

void kother_kernel(struct kother *ko, const struct walk_stream *s, const struct walk_kernel *k, const struct kevent *ev)
{
	struct ko_thread *t = thread_of(ko, s);
	struct ko_proc *p;

	if (!t) {
		ko->oom = true;
		return;
	}
	p = &ko->procs[t->proc];
	p->events++;
	count_id(ko, p, k->id);
	if (!ev || ev->kind != KEV_SWITCH)
		return;
	if ((uint32_t)ev->u.sw.next_pid == s->tid) {
		t->on = true;
		t->on_ns = k->ns;
	} else if ((uint32_t)ev->u.sw.prev_pid == s->tid) {
		char state = kevent_switch_state(ev);

		if (t->on && k->ns > t->on_ns)
			p->on_cpu_ns += k->ns - t->on_ns;
		t->on = false;
		p->switches++;
		p->vol += state == 'S' || state == 'D';
		p->invol += state == 'R';
	}
}

static int evcount_cmp(const void *a, const void *b)
{
	const struct kother_evcount *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int proc_cmp(const void *a, const void *b)
{
	const struct kother_proc *x = a, *y = b;

	if (x->on_cpu_ns != y->on_cpu_ns)
		return x->on_cpu_ns < y->on_cpu_ns ? 1 : -1;
	if (x->events != y->events)
		return x->events < y->events ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int kother_collect(const struct kother *ko, const struct kformats *kf, struct kother_proc **out, size_t *n)
{
	struct kother_evcount *all = NULL;
	uint32_t most = 0;

	*out = NULL;
	*n = 0;
	if (!ko->nprocs)
		return 0;
	for (uint32_t i = 0; i < ko->nprocs; i++)
		if (ko->procs[i].nids > most)
			most = ko->procs[i].nids;
	*out = calloc(ko->nprocs, sizeof(**out));
	all = calloc(most ? most : 1, sizeof(*all));
	if (!*out || !all) {
		free(*out);
		free(all);
		*out = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ko->nprocs; i++) {
		const struct ko_proc *p = &ko->procs[i];
		struct kother_proc *o = &(*out)[i];

		o->pid = p->pid;
		memcpy(o->comm, p->comm, sizeof(o->comm));
		o->threads = p->threads;
		o->events = p->events;
		o->on_cpu_ns = p->on_cpu_ns;
		o->switches = p->switches;
		o->switches_vol = p->vol;
		o->switches_invol = p->invol;
		for (uint32_t j = 0; j < p->nids; j++) {
			const struct kformat_event *e = kf ? kformats_find(kf, p->ids[j].id) : NULL;

			if (e)
				snprintf(all[j].name, sizeof(all[j].name), "%s:%s", e->system, e->name);
			else
				snprintf(all[j].name, sizeof(all[j].name), "tracepoint %u", p->ids[j].id);
			all[j].count = p->ids[j].count;
		}
		qsort(all, p->nids, sizeof(*all), evcount_cmp);
		o->ntop = p->nids < KOTHER_TOP ? p->nids : KOTHER_TOP;
		memcpy(o->top, all, o->ntop * sizeof(*all));
	}
	free(all);
	*n = ko->nprocs;
	qsort(*out, *n, sizeof(**out), proc_cmp);
	return 0;
}

bool kother_oom(const struct kother *ko)
{
	return ko->oom;
}
