/* Process-wide part of the runtime: attaching to the recorder's session,
 * the clock choice, and keeping a forked child apart from its parent. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

struct lp_process lp_proc;

static const uint32_t boot_flags = LP_CTL_ENABLED; /* first gate sets up */
static const uint32_t off_flags;
const uint32_t *lp_ctl_flags = &boot_flags;
static char attach_session[600];

LP_NOINSTR uint64_t lp_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* When the calling thread last began a fork(), in the event clock. */
static __thread uint64_t fork_began __attribute__((tls_model("initial-exec")));

/* In the parent, before fork(): the forking thread's heap operations until
 * now are in its parent's heap, those after are not, so the child's FORK
 * record carries this time (the child's first record comes later, maybe
 * after the parent's next operations). */
static LP_NOINSTR void atfork_prepare(void)
{
	if (lp_proc.active)
		fork_began = lp_clock_now_ordered();
}

/* In the child of fork(): the calling thread is the only one left, and its
 * ring belongs to the parent.  Start a new image with a new ring on the next
 * gate; the stack inherited from the parent goes into the first record. */
static LP_NOINSTR void atfork_child(void)
{
	struct lp_thread *t = &lp_self;

	if (!lp_proc.active)
		return;
	lp_proc.image =
	    atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->next_image, 1, memory_order_relaxed);
	lp_proc.parent_pid = (uint32_t)getppid();
	lp_proc.fork_time = fork_began;
	atomic_store(&lp_proc.maps_written, 0);
	if (t->state == LP_THREAD_READY) {
		/* the parent's ring is not ours to write */
		munmap(t->ring, t->map_size);
		t->state = LP_THREAD_NEW;
		t->ring = NULL;
		t->cur = t->limit = NULL;
		t->lost_pending = t->dropped = 0;
		t->nested = 0;
		t->destructor_rounds = 0;
	}
	t->busy = 0;
	t->waiting = 0;
	t->wait_skip = 0;
	/* functions traced from outside make no gate call: the ring (and the
	 * image's code mappings) must not wait for one */
	if (atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->flags, memory_order_acquire) & LP_CTL_EAGER)
		lp_thread_start(t);
}

/* The clock of an attachable process's own session: the same choice the
 * recorder makes (the counter when the kernel trusts it). */
static LP_NOINSTR uint32_t choose_clock(void)
{
	char cs[16] = "";
	int fd;

	if (LP_ARCH_COUNTER != LP_CLOCK_TSC)
		return LP_ARCH_COUNTER;
	fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return LP_CLOCK_MONOTONIC;
	if (read(fd, cs, sizeof(cs) - 1) < 3)
		cs[0] = '\0';
	close(fd);
	return strncmp(cs, "tsc", 3) ? LP_CLOCK_MONOTONIC : LP_CLOCK_TSC;
}

/* Whether the directory open as fd is one we may keep our session in:
 * a directory of root's or ours, that others may only add to when it is
 * sticky (attach) or may not enter at all (own). */
static LP_NOINSTR bool dir_trusted(int fd, bool own)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISDIR(st.st_mode))
		return false;
	if (own)
		return st.st_uid == geteuid() && !(st.st_mode & (S_IRWXG | S_IRWXO));
	return (st.st_uid == 0 || st.st_uid == geteuid()) &&
	       (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX));
}

/* Without a recorder's session: when the agent's attach directory exists,
 * make a stopped session of our own there, so that the agent can attach
 * later.  Nothing another user made is used: not an attach directory of
 * theirs, nor a <pid> entry they made first (we then take <pid>.XXXXXX,
 * where the agent looks next).  Returns the session path, or NULL. */
static LP_NOINSTR const char *attach_register(void)
{
	const char *base = getenv(LP_ENV_ATTACH_DIR);
	struct lp_control c;
	char path[700];
	bool ok;
	int fd, n;

	if (!base || !*base)
		base = LP_ATTACH_DIR_DEFAULT;
	if (strlen(base) > 500)
		return NULL;
	fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ok = dir_trusted(fd, false);
	close(fd);
	if (!ok)
		return NULL;
	n = snprintf(attach_session, sizeof(attach_session), "%s/%d", base, (int)getpid());
	if (n <= 0 || (size_t)n >= sizeof(attach_session) - 8)
		return NULL;
	if (mkdir(attach_session, 0700) && errno != EEXIST)
		return NULL;
	fd = open(attach_session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ok = fd >= 0 && dir_trusted(fd, true);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		strcat(attach_session, ".XXXXXX");
		if (!mkdtemp(attach_session))
			return NULL;
	}
	/* after exec the pid's session exists already: the new image goes on
	 * in it (its image ids continue, so ring names do not collide) */
	snprintf(path, sizeof(path), "%s/" LP_CONTROL_NAME, attach_session);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t got = read(fd, &c, sizeof(c));

		close(fd);
		if (got == (ssize_t)sizeof(c) && c.magic == LP_CONTROL_MAGIC && c.version == LP_SHM_VERSION)
			return attach_session;
	}
	memset(&c, 0, sizeof(c));
	c.magic = LP_CONTROL_MAGIC;
	c.version = LP_SHM_VERSION;
	c.clock = choose_clock();
	c.ring_chunks = LP_ATTACH_RING_CHUNKS;
	c.chunk_slots = LP_ATTACH_CHUNK_SLOTS;
	c.flags = 0;
	c.next_image = 1;
	unlink(path); /* not a control block of this version */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (write(fd, &c, sizeof(c)) != (ssize_t)sizeof(c)) {
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	return attach_session;
}

/* The session named by LP_ENV_SESSION in the environment the process
 * started with.  Code run from .preinit_array or another initialiser of
 * the loader's can reach a gate before the C library has set up `environ`
 * (getenv finds nothing then): the variable is read from
 * /proc/self/environ, or else from the initial stack, which the loader
 * keeps at __libc_stack_end (glibc). */
enum session_find {
	SESSION_FOUND = 0,  /* *dir: the path, or NULL when there is none */
	SESSION_NOT_YET = 1 /* before the C library's start, no way to look */
};

extern char **environ;
/* glibc's loader exports it: the initial stack (argc, argv, envp).  Weak:
 * absent from other C libraries. */
extern void *__libc_stack_end __attribute__((weak));

static char session_env[600];

/* Finds name=value among the NUL-separated entries read from fd; copies
 * value into out.  Returns 0, -ENOENT, -ENAMETOOLONG or -errno. */
static LP_NOINSTR int environ_file_find(int fd, const char *name, char *out, size_t size)
{
	size_t nlen = strlen(name), pos = 0, vlen = 0;
	bool match = true;
	char buf[1024];

	for (;;) {
		ssize_t got = read(fd, buf, sizeof(buf)), i;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0) {
			/* the last entry may end without its NUL */
			if (!match || pos <= nlen)
				return -ENOENT;
			out[vlen] = '\0';
			return 0;
		}
		for (i = 0; i < got; i++) {
			char c = buf[i];

			if (c == '\0') {
				if (match && pos > nlen) {
					out[vlen] = '\0';
					return 0;
				}
				pos = vlen = 0;
				match = true;
				continue;
			}
			if (!match)
				continue;
			if (pos < nlen)
				match = c == name[pos];
			else if (pos == nlen)
				match = c == '=';
			else if (vlen + 1 < size)
				out[vlen++] = c;
			else
				return -ENAMETOOLONG;
			pos++;
		}
	}
}

/* The same from the initial stack: argc, argv[argc + 1], envp[]. */
static LP_NOINSTR int stack_env_find(const char *name, char *out, size_t size)
{
	const long *sp = &__libc_stack_end ? (const long *)__libc_stack_end : NULL;
	size_t nlen = strlen(name), len;
	char *const *argv, *const *envp;
	long argc;

	if (!sp)
		return -ENOSYS;
	argc = sp[0];
	argv = (char *const *)(sp + 1);
	if (argc < 0 || argc > (1l << 20) || argv[argc])
		return -ENOSYS; /* not the layout expected */
	for (envp = argv + argc + 1; *envp; envp++) {
		if (strncmp(*envp, name, nlen) || (*envp)[nlen] != '=')
			continue;
		len = strlen(*envp + nlen + 1);
		if (len >= size)
			return -ENAMETOOLONG;
		memcpy(out, *envp + nlen + 1, len + 1);
		return 0;
	}
	return -ENOENT;
}

static LP_NOINSTR enum session_find session_find(const char **dir)
{
	int fd, r = -ENOSYS;

	*dir = NULL;
	if (environ) {
		*dir = getenv(LP_ENV_SESSION);
		return SESSION_FOUND;
	}
	fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		r = environ_file_find(fd, LP_ENV_SESSION, session_env, sizeof(session_env));
		close(fd);
	}
	if (r != 0 && r != -ENOENT)
		r = stack_env_find(LP_ENV_SESSION, session_env, sizeof(session_env));
	if (r == 0)
		*dir = session_env;
	/* without a recorder's session, an attachable one is made once the
	 * C library is set up (its directory may be named in the environment) */
	return r == 0 ? SESSION_FOUND : SESSION_NOT_YET;
}

/* Returns 1 attached, 0 no session, -EAGAIN: too early to tell. */
static LP_NOINSTR int session_attach(void)
{
	const char *dir;
	char path[600];
	struct stat st;
	void *map;
	int fd;

	if (session_find(&dir) == SESSION_NOT_YET)
		return -EAGAIN;
	if (!dir || !*dir)
		dir = attach_register();
	if (!dir || !*dir || strlen(dir) > 500)
		return 0;
	strcpy(path, dir);
	strcat(path, "/" LP_CONTROL_NAME);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(struct lp_control)) {
		close(fd);
		return 0;
	}
	map = mmap(NULL, sizeof(struct lp_control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 0;
	lp_proc.control = map;
	if (lp_proc.control->magic != LP_CONTROL_MAGIC || lp_proc.control->version != LP_SHM_VERSION) {
		munmap(map, sizeof(struct lp_control));
		lp_proc.control = NULL;
		return 0;
	}
	lp_proc.session_dir = dir;
	lp_proc.clock = lp_proc.control->clock == LP_ARCH_COUNTER ? LP_ARCH_COUNTER : LP_CLOCK_MONOTONIC;
	lp_proc.image =
	    atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->next_image, 1, memory_order_relaxed);
	return 1;
}

/* Attaches once per process image.  Called from the first gate of every
 * thread and from the constructor; concurrent callers that lose the race
 * see tracing off until the winner is done (their events are not counted:
 * the session is not set up yet, so there is nowhere to count them).  Too
 * early to find the session (see session_find), it stays undone and the
 * next caller tries again. */
LP_NOINSTR bool lp_process_init(void)
{
	int expected = 0, r;
	uint8_t saved_guard;

	if (atomic_load_explicit(&lp_proc.init, memory_order_acquire) == 2)
		return lp_proc.active;
	if (!atomic_compare_exchange_strong(&lp_proc.init, &expected, 1))
		return false;
	saved_guard = lp_memhook.guard; /* libc's allocations for us are not the program's */
	lp_memhook.guard = 1;
	r = session_attach();
	if (r == -EAGAIN) {
		lp_memhook.guard = saved_guard;
		atomic_store_explicit(&lp_proc.init, 0, memory_order_release);
		return false;
	}
	lp_proc.active = r == 1;
	if (lp_proc.active)
		pthread_atfork(atfork_prepare, NULL, atfork_child);
	lp_memhook.guard = saved_guard;
	lp_ctl_flags = lp_proc.active ? &lp_proc.control->flags : &off_flags;
	atomic_store_explicit(&lp_proc.init, 2, memory_order_release);
	return lp_proc.active;
}

/* Attach as early as possible so that the first gate is cheap, and open the
 * main thread's ring at once, tracing or not: its first records name the
 * code mappings, which a live host needs before it can choose filters.
 * A session started on hold waits here (bounded) for the host. */
__attribute__((constructor)) static LP_NOINSTR void runtime_constructor(void)
{
	struct timespec pause = { 0, 1000000 };
	int waited;

	if (!lp_process_init())
		return;
	if (lp_self.state == LP_THREAD_NEW)
		lp_thread_start(&lp_self);
	lp_dynpatch_apply();
	for (waited = 0; waited < LP_HOLD_MAX_MS; waited++) {
		if (!(atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->flags, memory_order_acquire) &
		      LP_CTL_HOLD))
			break;
		nanosleep(&pause, NULL);
	}
}
