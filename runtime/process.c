/* Process-wide part of the runtime: attaching to the recorder's session,
 * the clock choice, and keeping a forked child apart from its parent. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* Without a recorder's session: when the agent's attach directory exists,
 * make a stopped session of our own there, so that the agent can attach
 * later.  Returns the session path, or NULL. */
static LP_NOINSTR const char *attach_register(void)
{
	const char *base = getenv(LP_ENV_ATTACH_DIR);
	struct lp_control c;
	struct stat st;
	char path[700];
	int fd, n;

	if (!base || !*base)
		base = LP_ATTACH_DIR_DEFAULT;
	if (strlen(base) > 500 || stat(base, &st) || !S_ISDIR(st.st_mode))
		return NULL;
	n = snprintf(attach_session, sizeof(attach_session), "%s/%d", base, (int)getpid());
	if (n <= 0 || (size_t)n >= sizeof(attach_session))
		return NULL;
	if (mkdir(attach_session, 0700) && errno != EEXIST)
		return NULL;
	/* after exec the pid's session exists already: the new image goes on
	 * in it (its image ids continue, so ring names do not collide) */
	snprintf(path, sizeof(path), "%s/" LP_CONTROL_NAME, attach_session);
	fd = open(path, O_RDONLY | O_CLOEXEC);
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

static LP_NOINSTR bool session_attach(void)
{
	const char *dir = getenv(LP_ENV_SESSION);
	char path[600];
	struct stat st;
	void *map;
	int fd;

	if (!dir || !*dir)
		dir = attach_register();
	if (!dir || !*dir || strlen(dir) > 500)
		return false;
	strcpy(path, dir);
	strcat(path, "/" LP_CONTROL_NAME);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(struct lp_control)) {
		close(fd);
		return false;
	}
	map = mmap(NULL, sizeof(struct lp_control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	lp_proc.control = map;
	if (lp_proc.control->magic != LP_CONTROL_MAGIC || lp_proc.control->version != LP_SHM_VERSION) {
		munmap(map, sizeof(struct lp_control));
		lp_proc.control = NULL;
		return false;
	}
	lp_proc.session_dir = dir;
	lp_proc.clock = lp_proc.control->clock == LP_ARCH_COUNTER ? LP_ARCH_COUNTER : LP_CLOCK_MONOTONIC;
	lp_proc.image =
	    atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->next_image, 1, memory_order_relaxed);
	return true;
}

/* Attaches once per process image.  Called from the first gate of every
 * thread and from the constructor; concurrent callers that lose the race
 * see tracing off until the winner is done (their events are not counted:
 * the session is not set up yet, so there is nowhere to count them). */
LP_NOINSTR bool lp_process_init(void)
{
	int expected = 0;
	uint8_t saved_guard;

	if (atomic_load_explicit(&lp_proc.init, memory_order_acquire) == 2)
		return lp_proc.active;
	if (!atomic_compare_exchange_strong(&lp_proc.init, &expected, 1))
		return false;
	saved_guard = lp_memhook.guard; /* libc's allocations for us are not the program's */
	lp_memhook.guard = 1;
	lp_proc.active = session_attach();
	if (lp_proc.active)
		pthread_atfork(NULL, NULL, atfork_child);
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
	for (waited = 0; waited < LP_HOLD_MAX_MS; waited++) {
		if (!(atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->flags, memory_order_acquire) &
		      LP_CTL_HOLD))
			break;
		nanosleep(&pause, NULL);
	}
}
