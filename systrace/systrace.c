/* The syscall tracer's front: chooses a backend and forwards to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>
#include <unistd.h>

#include "common/sysevent.h"
#include "systrace/backend.h"

static struct systrace *systrace_new(const struct systrace_config *cfg, const struct systrace_ops *ops)
{
	struct systrace *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->cfg = *cfg;
	st->ops = *ops;
	return st;
}

/* Runs the chosen backend, or both in order for SYSTRACE_AUTO.  `start`
 * does the spawn or the attach. */
static struct systrace *systrace_start(const struct systrace_config *cfg, const struct systrace_ops *ops,
                                       int (*start)(struct systrace *, void *, char *, size_t), void *arg, char *why,
                                       size_t whylen, char *err, size_t errlen)
{
	char tp_err[256] = "", pt_err[256] = "";
	struct systrace *st = systrace_new(cfg, ops);
	int r;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (cfg->backend != SYSTRACE_PTRACE) {
		st->backend = SYSTRACE_TRACEPOINT;
		r = tp_probe(tp_err, sizeof(tp_err));
		if (!r)
			r = start(st, arg, tp_err, sizeof(tp_err));
		if (!r) {
			snprintf(why, whylen, "tracepoint: raw_syscalls through perf_event_open");
			return st;
		}
		if (cfg->backend == SYSTRACE_TRACEPOINT) {
			snprintf(err, errlen, "tracepoint backend: %s", tp_err);
			goto fail;
		}
	}
	st->backend = SYSTRACE_PTRACE;
	r = pt_probe(pt_err, sizeof(pt_err));
	if (!r)
		r = start(st, arg, pt_err, sizeof(pt_err));
	if (!r) {
		if (cfg->backend == SYSTRACE_PTRACE)
			snprintf(why, whylen, "ptrace: chosen by the user");
		else
			snprintf(why, whylen, "ptrace: the tracepoint backend is not available (%s)", tp_err);
		return st;
	}
	if (cfg->backend == SYSTRACE_PTRACE)
		snprintf(err, errlen, "ptrace backend: %s", pt_err);
	else
		snprintf(err, errlen, "no syscall backend works: tracepoint: %s; ptrace: %s", tp_err, pt_err);
fail:
	free(st);
	errno = -r;
	return NULL;
}

struct spawn_args {
	char *const *argv, *const *envp;
	pid_t *pid;
};

static int start_spawn(struct systrace *st, void *arg, char *err, size_t errlen)
{
	struct spawn_args *a = arg;

	if (st->backend == SYSTRACE_TRACEPOINT)
		return tp_spawn(st, a->argv, a->envp, a->pid, err, errlen);
	return pt_spawn(st, a->argv, a->envp, a->pid, err, errlen);
}

static int start_attach(struct systrace *st, void *arg, char *err, size_t errlen)
{
	pid_t pid = *(pid_t *)arg;

	if (st->backend == SYSTRACE_TRACEPOINT)
		return tp_attach(st, pid, err, errlen);
	return pt_attach(st, pid, err, errlen);
}

struct systrace *systrace_spawn(char *const argv[], char *const envp[], const struct systrace_config *cfg,
                                const struct systrace_ops *ops, pid_t *pid, char *why, size_t whylen, char *err,
                                size_t errlen)
{
	struct spawn_args a = { argv, envp, pid };

	return systrace_start(cfg, ops, start_spawn, &a, why, whylen, err, errlen);
}

struct systrace *systrace_attach(pid_t pid, const struct systrace_config *cfg, const struct systrace_ops *ops,
                                 char *why, size_t whylen, char *err, size_t errlen)
{
	return systrace_start(cfg, ops, start_attach, &pid, why, whylen, err, errlen);
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
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(prog, '/'))
		return access(prog, X_OK) ? -errno : 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", prog);
		if (!access(buf, X_OK))
			return 0;
		path += len + (end ? 1 : 0);
	}
	return -ENOENT;
}

enum systrace_backend systrace_backend(const struct systrace *st)
{
	return st->backend;
}

long systrace_poll(struct systrace *st)
{
	return st->backend == SYSTRACE_TRACEPOINT ? tp_poll(st) : pt_poll(st);
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
	if (st->backend == SYSTRACE_TRACEPOINT)
		tp_release(st);
	else
		pt_release(st);
	free(st);
}
