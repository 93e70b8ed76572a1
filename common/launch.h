/* Starting a program to be traced, shared by the recorder and the agent:
 * its environment (the session, the runtime preloaded before the
 * program's own LD_PRELOAD, the heap options) and the fork and exec, with
 * a failed exec reported back to the caller. */
#ifndef LP_COMMON_LAUNCH_H
#define LP_COMMON_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The counters a started program's runtime opens in each of its threads
 * (record --counters): LAUNCH_COUNTERS_ENV="read=HOW;scope=SCOPE;events=
 * TYPE:CONFIG,TYPE:CONFIG,..." with HOW rdpmc (user-space reads of the
 * hardware counters through their mmap pages), read (a read(2) of each
 * group) or none (the counters are not read at function entry and exit),
 * SCOPE user (exclude_kernel and exclude_hv set: all that
 * perf_event_paranoid allows an unprivileged user) or all, and each event
 * as its perf_event_attr type (decimal) and config (hex with 0x), in the
 * order of the trace's counter set (META "counters"), at most
 * LP_COUNTERS_MAX.  docs/format.md describes it too. */
#define LAUNCH_COUNTERS_ENV "LAYERPROF_COUNTERS"

/* What layerprof adds to a started program's environment. */
struct launch_env {
	const char *session; /* LAYERPROF_SESSION: the session's directory */
	const char *preload; /* the runtime (and heap interposers), colon-separated */
	bool memory;         /* set LAYERPROF_MEM_DEPTH and LAYERPROF_MEM_KEEPALIVE */
	unsigned mem_depth;  /* with memory: frames per heap call stack */
	bool mem_keep_alive; /* with memory: LAYERPROF_MEM_KEEPALIVE=1, else =0 */
	const char *sync;    /* LAUNCH_SYNC_ENV's value ("1": every sync operation,
	                      * "threads": thread starts only); NULL: left as it is */
	/* LAYERPROF_COUNTERS's value (launch_counters_env), or NULL */
	const char *counters;
};

/* What the sync tracer's interposers record (runtime/synctrace.h, LP_SYNC_ENV). */
#define LAUNCH_SYNC_ENV "LAYERPROF_SYNC"

struct ctrname;
/* Writes LAUNCH_COUNTERS_ENV's value for n events (how: "rdpmc", "read" or
 * "none"; user: count user space only) into buf.  Returns its length, or
 * -ENAMETOOLONG when size is too small (512 bytes always do). */
int launch_counters_env(const struct ctrname *c, uint32_t n, const char *how, bool user, char *buf, size_t size);

/* The environment of a started program: base's entries except those le
 * sets, then LAYERPROF_SESSION, LD_PRELOAD (le->preload, followed by
 * base's own LD_PRELOAD when it has a non-empty one, so that the program
 * keeps the libraries it asked for), with le->memory the heap options,
 * with le->sync LAUNCH_SYNC_ENV, and with le->counters LAYERPROF_COUNTERS
 * (a LAYERPROF_COUNTERS of base is always left out: only the recorder
 * asks for counters).  Returns a NULL-terminated array in one malloc'd
 * block (free it with free()); the entries taken from base are borrowed
 * and must outlive it.  NULL with errno ENOMEM when out of memory. */
char **launch_env_new(char *const *base, const struct launch_env *le);

/* The step of launch_spawn that failed. */
enum launch_step {
	LAUNCH_PIPE, /* the pipe that reports the exec's failure */
	LAUNCH_FORK,
	LAUNCH_EXEC, /* the program could not be run (it was reaped) */
	LAUNCH_HELD, /* cmd->held refused (the child was killed and reaped) */
};

/* How to start the program. */
struct launch_cmd {
	const char *path;  /* the file to run, from progpath_find */
	char *const *argv; /* its arguments, argv[0] first; borrowed */
	char *const *envp; /* its environment (launch_env_new); borrowed */
	bool stdin_null;   /* stdin from /dev/null instead of the caller's */
	/* above 2: made the child's stdout and stderr (the caller closes its
	 * copies, and makes them close-on-exec); 0, as a zeroed struct has
	 * them: the caller's own */
	int stdout_fd, stderr_fd;
	/* the child leads a process group of its own (setpgid before the
	 * exec), so that it and the processes it makes can be signalled as
	 * one: kill(-pid, sig) */
	bool new_group;
	sigset_t reset; /* signals set back to their default in the child */
	/* when set: called with the child's pid while it waits before its
	 * exec; nonzero stops the launch (the child is killed and reaped,
	 * launch_spawn fails with LAUNCH_HELD and that value) */
	int (*held)(void *ctx, pid_t pid);
	void *held_ctx;
};

/* Forks and runs cmd->path in the child.  Returns the child's pid once the
 * exec has succeeded, or -errno with *failed saying which step failed: for
 * LAUNCH_EXEC, -errno is the exec's own error (ENOENT, EACCES, ...), and
 * the child has been reaped.  Blocks until the exec is done or failed. */
pid_t launch_spawn(const struct launch_cmd *cmd, enum launch_step *failed);

#endif
