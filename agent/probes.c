/* Sessions attached by probes (ATTACH with `dynamic`): a running program
 * without the runtime, traced from outside through uprobes on its
 * executable's functions, in a session directory of the agent's own; the
 * session ends with its host, and closing the probes takes them out. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/progpath.h"
#include "dyntrace/udrain.h"

/* Where the kernel lists its uprobe PMU: without it no probe can open. */
#define UPROBE_PMU_PATH "/sys/bus/event_source/devices/uprobe"

/* What can be told before anything is opened: the process, its user,
 * the agent's rights, and the file the probes go on (into path, size
 * bytes).  Returns 0, or -1 with the reason in err. */
static int probe_check(struct agent *a, pid_t pid, char *path, size_t size, char *err, size_t errlen)
{
	char proc[64];
	struct session *s;
	struct stat st;
	uid_t me = geteuid();
	int r;

	for (s = a->sessions; s; s = s->next) {
		if (s->pid == pid && !s->exited) {
			snprintf(err, errlen, "process %d is already traced (session %u)", (int)pid, s->id);
			return -1;
		}
	}
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if ((kill(pid, 0) && errno == ESRCH) || stat(proc, &st)) {
		snprintf(err, errlen, "no process %d", (int)pid);
		return -1;
	}
	/* /proc/<pid> is the process's effective user's (root's when it may
	 * not be looked into: a set-user-ID program) */
	if (me != 0 && st.st_uid != me) {
		snprintf(err, errlen,
		         "process %d is another user's (uid %u): an agent that is not root attaches only to its own "
		         "user's programs",
		         (int)pid, (unsigned)st.st_uid);
		return -1;
	}
	if (me != 0) {
		snprintf(err, errlen,
		         "dynamic: attaching to a running program needs root and the kernel's uprobe PMU (the agent "
		         "runs as uid %u)",
		         (unsigned)me);
		return -1;
	}
	if (access(UPROBE_PMU_PATH, F_OK)) {
		snprintf(err, errlen,
		         "dynamic: attaching to a running program needs root and the kernel's uprobe PMU (this kernel "
		         "has none: no " UPROBE_PMU_PATH ")");
		return -1;
	}
	r = progpath_running(pid, path, size);
	if (r == -ENOENT)
		snprintf(err, errlen,
		         "dynamic: process %d runs '%.300s', deleted or replaced since it started: probes on the file "
		         "there now would not reach it",
		         (int)pid, path);
	else if (r == -ESTALE)
		snprintf(err, errlen,
		         "dynamic: '%.300s' is another file now than the one process %d runs (replaced since it "
		         "started, or the process sees another mount namespace)",
		         path, (int)pid);
	else if (r == -ESRCH)
		snprintf(err, errlen, "no process %d with a program file (a kernel thread, or one that ended)",
		         (int)pid);
	else if (r)
		snprintf(err, errlen, "cannot tell the program file of process %d: %s", (int)pid, strerror(-r));
	return r ? -1 : 0;
}

static void probe_free(struct session *s)
{
	drain_free(s->drain);
	systrace_free(s->st);
	ktrace_free(s->kt);
	uprobes_free(s->up);
	free(s);
}

struct session *session_probe(struct agent *a, pid_t pid, const struct session_syscalls *sys, char *err, size_t errlen)
{
	struct uprobes_ops uops;
	struct uprobes_config cfg;
	struct uprobes_stats ust;
	struct drain_ops ops;
	struct session *s;
	char path[PATH_MAX], cmd[64], *cmd_argv[] = { cmd, NULL };

	if (probe_check(a, pid, path, sizeof(path), err, errlen))
		return NULL;
	s = session_new(a, SESSION_PROBED);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sessiondir_name(&a->private, "agent", s->dir, sizeof(s->dir))) {
		snprintf(err, errlen, "cannot name a session in '%s'", a->private.path);
		free(s);
		return NULL;
	}
	cfg = sys->ucfg;
	cfg.path = path;
	uops = udrain_ops(&s->feed);
	s->up = uprobes_open(&cfg, &uops, s->up_err, sizeof(s->up_err));
	if (!s->up) {
		snprintf(err, errlen, "dynamic: %s", s->up_err);
		free(s);
		return NULL;
	}
	if (session_kernel_open(s, sys, err, errlen)) {
		probe_free(s);
		return NULL;
	}
	ops = session_drain_ops(s, sys);
	s->drain = drain_new(s->dir, &a->cfg, &ops);
	if (!s->drain) {
		snprintf(err, errlen, "cannot create session '%s': %s", s->dir, strerror(errno));
		probe_free(s);
		return NULL;
	}
	s->feed.drain = s->drain;
	s->feed.on = a->tracing;
	if (drain_adopt_process(s->drain, pid)) {
		snprintf(err, errlen, "out of memory");
		probe_free(s);
		return NULL;
	}
	drain_set_enabled(s->drain, a->tracing);
	session_apply_filters(s);
	/* the probes go into the program now, and its threads are followed */
	if (uprobes_attach(s->up, pid, s->up_err, sizeof(s->up_err))) {
		snprintf(err, errlen, "dynamic: %s", s->up_err);
		probe_free(s);
		return NULL;
	}
	s->pid = pid;
	if (s->kt)
		ktrace_follow(s->kt, pid, false);
	if (session_syscalls_attach(s, pid, sys, err, errlen)) {
		probe_free(s);
		return NULL;
	}
	s->mem = SESSION_MEM_NONE; /* heap operations come by a ring, which is not there */
	session_link(s);
	snprintf(cmd, sizeof(cmd), "attach %d", (int)pid);
	session_send_meta(s, 1, cmd_argv);
	session_send_kformats(s);
	uprobes_get_stats(s->up, &ust);
	agent_log("session %u: attached to pid %d by uprobes on %u of %u functions of '%s'%s%s", s->id, (int)pid,
	          ust.functions, ust.candidates, path, s->st ? ", syscalls by " : "", s->st ? s->sys_why : "");
	return s;
}
