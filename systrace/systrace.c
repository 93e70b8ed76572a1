/* The syscall tracer's front: chooses a backend and forwards to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>
#include <unistd.h>

#include "common/progpath.h"
#include "common/sysevent.h"
#include "systrace/backend.h"

/* The backends in the order SYSTRACE_AUTO tries them. */
static const struct backend_ops {
	enum systrace_backend id;
	const char *name;
	const char *how; /* why it was chosen, when it is the first to work */
	int (*probe)(char *err, size_t errlen);
	int (*spawn)(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen);
	int (*attach)(struct systrace *st, pid_t pid, char *err, size_t errlen);
	long (*poll)(struct systrace *st);
	void (*release)(struct systrace *st);
} backends[] = {
	{ SYSTRACE_BPF, "bpf", "raw_syscalls with eBPF pairing", eb_probe, eb_spawn, eb_attach, eb_poll, eb_release },
	{ SYSTRACE_TRACEPOINT, "tracepoint", "raw_syscalls through perf_event_open", tp_probe, tp_spawn, tp_attach,
	  tp_poll, tp_release },
	{ SYSTRACE_PTRACE, "ptrace", "ptrace with a seccomp filter", pt_probe, pt_spawn, pt_attach, pt_poll,
	  pt_release },
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

static const struct backend_ops *backend_of(enum systrace_backend id)
{
	for (size_t i = 0; i < NBACKENDS; i++)
		if (backends[i].id == id)
			return &backends[i];
	return NULL;
}

const char *systrace_backend_name(enum systrace_backend id)
{
	const struct backend_ops *b = backend_of(id);

	return b ? b->name : "auto";
}

int systrace_backend_parse(const char *name, enum systrace_backend *out)
{
	if (!name || !strcmp(name, "auto")) {
		*out = SYSTRACE_AUTO;
		return 0;
	}
	for (size_t i = 0; i < NBACKENDS; i++)
		if (!strcmp(name, backends[i].name)) {
			*out = backends[i].id;
			return 0;
		}
	return -EINVAL;
}

struct start_args {
	char *const *argv, *const *envp; /* spawn; NULL: attach */
	pid_t *pid;
};

/* Runs the chosen backend, or each in order for SYSTRACE_AUTO until one
 * starts: a spawn, or an attach to *a->pid. */
static struct systrace *systrace_start(const struct systrace_config *cfg, const struct systrace_ops *ops,
                                       const struct start_args *a, char *why, size_t whylen, char *err, size_t errlen)
{
	char reasons[NBACKENDS][256], failed[NBACKENDS * 300];
	struct systrace *st = calloc(1, sizeof(*st));
	size_t len = 0, nfailed = 0;
	int r = -ENOSYS;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	st->cfg = *cfg;
	st->ops = *ops;
	failed[0] = '\0';
	if (a->argv) {
		r = progpath_find(a->argv[0], st->path, sizeof(st->path));
		if (r) {
			snprintf(err, errlen, "cannot run '%s': %s", a->argv[0], strerror(-r));
			goto fail;
		}
	}
	for (size_t i = 0; i < NBACKENDS; i++) {
		const struct backend_ops *b = &backends[i];
		char *reason = reasons[i];

		if (cfg->backend != SYSTRACE_AUTO && cfg->backend != b->id)
			continue;
		st->backend = b->id;
		reason[0] = '\0';
		r = b->probe(reason, sizeof(reasons[i]));
		if (!r)
			r = a->argv ? b->spawn(st, a->argv, a->envp, a->pid, reason, sizeof(reasons[i]))
			            : b->attach(st, *a->pid, reason, sizeof(reasons[i]));
		if (!r) {
			if (cfg->backend != SYSTRACE_AUTO)
				snprintf(why, whylen, "%s: chosen by the user", b->name);
			else if (!nfailed)
				snprintf(why, whylen, "%s: %s", b->name, b->how);
			else
				snprintf(why, whylen, "%s: %s (%s)", b->name, b->how, failed);
			return st;
		}
		if (cfg->backend != SYSTRACE_AUTO) {
			snprintf(err, errlen, "%s backend: %s", b->name, reason);
			goto fail;
		}
		len += (size_t)snprintf(failed + len, sizeof(failed) - len, "%s%s: %s", nfailed ? "; " : "", b->name,
		                        reason);
		if (len >= sizeof(failed))
			len = sizeof(failed) - 1;
		nfailed++;
	}
	snprintf(err, errlen, "no syscall backend works: %s", failed);
fail:
	free(st);
	errno = -r;
	return NULL;
}

struct systrace *systrace_spawn(char *const argv[], char *const envp[], const struct systrace_config *cfg,
                                const struct systrace_ops *ops, pid_t *pid, char *why, size_t whylen, char *err,
                                size_t errlen)
{
	struct start_args a = { argv, envp, pid };

	return systrace_start(cfg, ops, &a, why, whylen, err, errlen);
}

struct systrace *systrace_attach(pid_t pid, const struct systrace_config *cfg, const struct systrace_ops *ops,
                                 char *why, size_t whylen, char *err, size_t errlen)
{
	struct start_args a = { NULL, NULL, &pid };

	return systrace_start(cfg, ops, &a, why, whylen, err, errlen);
}

void sysrec_to_event(const struct sysrec *r, struct sysevent *ev)
{
	const struct sys_info *si;

	memset(ev, 0, sizeof(*ev));
	ev->enter = r->kind == SYSREC_ENTER;
	ev->arch = r->arch;
	ev->nr = r->nr;
	if (!ev->enter) {
		ev->ret = r->ret;
		return;
	}
	si = sys_info((enum sys_arch)r->arch, r->nr);
	ev->flags = r->str_late ? SYSEVENT_STR_LATE : 0;
	ev->nargs = si ? si->nargs : 6;
	memcpy(ev->args, r->args, sizeof(ev->args));
	ev->nips = r->nips < SYSEVENT_IPS_MAX ? r->nips : SYSEVENT_IPS_MAX;
	memcpy(ev->ips, r->ips, ev->nips * sizeof(ev->ips[0]));
	ev->str = r->str;
	ev->str_len = r->str ? r->str_len : 0;
}

int systrace_check_program(const char *prog)
{
	char path[PATH_MAX];

	return progpath_find(prog, path, sizeof(path));
}

enum systrace_backend systrace_backend(const struct systrace *st)
{
	return st->backend;
}

long systrace_poll(struct systrace *st)
{
	return backend_of(st->backend)->poll(st);
}

bool systrace_backlog(const struct systrace *st)
{
	return st->backlog;
}

bool systrace_exited(struct systrace *st, int *status)
{
	return st->backend == SYSTRACE_PTRACE && pt_exited(st, status);
}

void systrace_get_stats(const struct systrace *st, struct systrace_stats *out)
{
	*out = st->stats;
}

void systrace_free(struct systrace *st)
{
	if (!st)
		return;
	backend_of(st->backend)->release(st);
	free(st);
}
