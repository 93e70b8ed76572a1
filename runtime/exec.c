/* Programs started by exec or posix_spawn keep the runtime: the environment
 * they are given gets the runtime's variables it lacks (the session, the
 * preloaded layerprof libraries, the memory tracer's options), so that a
 * child started with an environment of its own is traced like one that
 * inherits the program's.  fork needs nothing here: the child inherits
 * everything.
 *
 * execve may run in the child of vfork (or of a clone that shares memory):
 * the wrappers take no lock and do not allocate; the new environment lives
 * on the stack, or in an anonymous mapping when it is large. */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"

extern char **environ;

/* What the runtime keeps: its LAYERPROF_* variables (at most EXEC_VARS_MAX,
 * EXEC_VARS_BYTES in all) and its entries of LD_PRELOAD, as the process
 * started with them. */
#define EXEC_VARS_MAX 16u
#define EXEC_VARS_BYTES 8192u
#define EXEC_PRELOAD_BYTES 4096u
/* An LD_PRELOAD the runtime extends: longer ones are passed unchanged. */
#define EXEC_PRELOAD_MAX 8192u
/* Pointer arrays up to this many entries live on the stack. */
#define EXEC_STACK_ENTRIES 256u
#define EXEC_VAR_PREFIX "LAYERPROF_"
#define EXEC_PRELOAD "LD_PRELOAD="
#define EXEC_PRELOAD_LEN (sizeof(EXEC_PRELOAD) - 1)

static struct {
	_Atomic int state; /* 0 not yet, 1 in progress, 2 done */
	unsigned nvars;
	const char *var[EXEC_VARS_MAX]; /* "NAME=value", in buf */
	size_t name_len[EXEC_VARS_MAX]; /* with the '=' */
	char buf[EXEC_VARS_BYTES];
	char preload[EXEC_PRELOAD_BYTES]; /* "LD_PRELOAD=" + ours, ':'-separated */
	size_t preload_len;               /* 0: none of ours */
} kept;

/* The next definitions of the wrapped functions (the C library's, or
 * another preloaded library's), resolved by the constructor: a child of
 * vfork must not run the dynamic linker's lookup. */
enum exec_next {
	NEXT_EXECVE,
	NEXT_EXECVPE,
	NEXT_FEXECVE,
	NEXT_EXECVEAT,
	NEXT_SPAWN,
	NEXT_SPAWNP,
	NEXT_COUNT,
};
static const char *const next_names[NEXT_COUNT] = { "execve",   "execvpe",     "fexecve",
	                                            "execveat", "posix_spawn", "posix_spawnp" };
static void *next_defs[NEXT_COUNT];

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

/* True when LD_PRELOAD entry e (len bytes) is one of the runtime's
 * libraries: liblayerprof.so (by its name or as this object was loaded)
 * or the memory tracer's liblayerprof-mem.so. */
static LP_NOINSTR bool preload_is_ours(const char *e, size_t len, const char *self)
{
	static const char *const names[] = { "liblayerprof.so", "liblayerprof-mem.so" };
	const char *base = e;
	size_t i, blen;

	for (i = 0; i < len; i++)
		if (e[i] == '/')
			base = e + i + 1;
	blen = len - (size_t)(base - e);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (blen == strlen(names[i]) && !memcmp(base, names[i], blen))
			return true;
	return self && strlen(self) == len && !memcmp(self, e, len);
}

static LP_NOINSTR bool preload_sep(char c)
{
	return c == ':' || c == ' ';
}

/* Our entries of the starting LD_PRELOAD value v, into kept.preload. */
static LP_NOINSTR void capture_preload(const char *v)
{
	Dl_info info;
	const char *self = NULL, *p = v;
	size_t n = EXEC_PRELOAD_LEN;

	if (dladdr((void *)capture_preload, &info) && info.dli_fname)
		self = info.dli_fname;
	memcpy(kept.preload, EXEC_PRELOAD, EXEC_PRELOAD_LEN);
	while (*p) {
		size_t len = 0;

		while (preload_sep(*p))
			p++;
		while (p[len] && !preload_sep(p[len]))
			len++;
		if (len && preload_is_ours(p, len, self) && n + len + 2 <= sizeof(kept.preload)) {
			if (n > EXEC_PRELOAD_LEN)
				kept.preload[n++] = ':';
			memcpy(kept.preload + n, p, len);
			n += len;
		}
		p += len;
	}
	kept.preload[n] = '\0';
	kept.preload_len = n > EXEC_PRELOAD_LEN ? n : 0;
}

/* Takes the runtime's variables from the environment the process started
 * with (before main, so before the program changed it). */
static LP_NOINSTR void capture(void)
{
	int expected = 0;
	size_t used = 0;
	unsigned i;
	char **e;

	if (!atomic_compare_exchange_strong(&kept.state, &expected, 1))
		return;
	for (e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = strlen(*e);

		if (!strncmp(*e, EXEC_PRELOAD, EXEC_PRELOAD_LEN)) {
			if (!kept.preload_len)
				capture_preload(*e + EXEC_PRELOAD_LEN);
			continue;
		}
		if (strncmp(*e, EXEC_VAR_PREFIX, sizeof(EXEC_VAR_PREFIX) - 1) || !eq || kept.nvars == EXEC_VARS_MAX ||
		    used + len + 1 > sizeof(kept.buf))
			continue;
		memcpy(kept.buf + used, *e, len + 1);
		kept.var[kept.nvars] = kept.buf + used;
		kept.name_len[kept.nvars] = (size_t)(eq - *e) + 1;
		kept.nvars++;
		used += len + 1;
	}
	for (i = 0; i < NEXT_COUNT; i++)
		next_defs[i] = dlsym(RTLD_NEXT, next_names[i]);
	atomic_store(&kept.state, 2);
}

__attribute__((constructor)) static LP_NOINSTR void exec_constructor(void)
{
	capture();
}

/* The environment to give a new program: env (NULL: empty) with the kept
 * variables it lacks appended, and our libraries appended to an LD_PRELOAD
 * that lacks them.  Returns env itself when nothing is missing. */
struct exec_env {
	char *stack[EXEC_STACK_ENTRIES];
	char **vec;
	size_t map_size; /* vec was mapped */
	char preload[EXEC_PRELOAD_MAX];
};

/* True when the ':'- or ' '-separated list v holds entry e (len bytes). */
static LP_NOINSTR bool list_has(const char *v, const char *e, size_t len)
{
	while (*v) {
		size_t n = 0;

		while (preload_sep(*v))
			v++;
		while (v[n] && !preload_sep(v[n]))
			n++;
		if (n == len && !memcmp(v, e, len))
			return true;
		v += n;
	}
	return false;
}

/* Writes into out the LD_PRELOAD entry `have` extended with the kept
 * entries it lacks; returns false when it lacks none or there is no room. */
static LP_NOINSTR bool preload_extend(const char *have, char *out, size_t size)
{
	const char *p = kept.preload + EXEC_PRELOAD_LEN;
	size_t n = strlen(have);
	bool added = false;

	if (n >= size)
		return false;
	memcpy(out, have, n);
	while (*p) {
		size_t len = 0;

		while (p[len] && p[len] != ':')
			len++;
		if (!list_has(have + EXEC_PRELOAD_LEN, p, len)) {
			bool sep = n > EXEC_PRELOAD_LEN;

			if (n + sep + len + 1 > size)
				return false;
			if (sep)
				out[n++] = ':';
			memcpy(out + n, p, len);
			n += len;
			added = true;
		}
		p += len;
		if (*p == ':')
			p++;
	}
	out[n] = '\0';
	return added;
}

static LP_NOINSTR char *const *env_fix(char *const *given, struct exec_env *x)
{
	static char *const empty[] = { NULL };
	char *const *env = given ? given : empty;
	const char *add[EXEC_VARS_MAX + 1];
	size_t n = 0, nadd = 0, i, j, at_preload = (size_t)-1;
	bool preload_new = false;

	x->vec = NULL;
	x->map_size = 0;
	if (atomic_load(&kept.state) != 2)
		capture();
	for (; env[n]; n++)
		if (at_preload == (size_t)-1 && !strncmp(env[n], EXEC_PRELOAD, EXEC_PRELOAD_LEN))
			at_preload = n;
	for (i = 0; i < kept.nvars; i++) {
		for (j = 0; j < n; j++)
			if (!strncmp(env[j], kept.var[i], kept.name_len[i]))
				break;
		if (j == n)
			add[nadd++] = kept.var[i];
	}
	if (kept.preload_len) {
		if (at_preload == (size_t)-1)
			add[nadd++] = kept.preload;
		else
			preload_new = preload_extend(env[at_preload], x->preload, sizeof(x->preload));
	}
	if (!nadd && !preload_new)
		return given;
	if (n + nadd + 1 <= EXEC_STACK_ENTRIES) {
		x->vec = x->stack;
	} else {
		size_t size = (n + nadd + 1) * sizeof(char *);
		void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (map == MAP_FAILED)
			return given; /* the child goes untraced */
		x->vec = map;
		x->map_size = size;
	}
	memcpy(x->vec, env, n * sizeof(char *));
	if (preload_new)
		x->vec[at_preload] = x->preload;
	for (i = 0; i < nadd; i++)
		x->vec[n + i] = (char *)add[i];
	x->vec[n + nadd] = NULL;
	return x->vec;
}

/* The next definition of a wrapped function: resolved by the constructor,
 * or here when a wrapper runs before it (code run by the loader's early
 * initialisers). */
static LP_NOINSTR void *next_fn(enum exec_next which)
{
	return next_defs[which] ? next_defs[which] : dlsym(RTLD_NEXT, next_names[which]);
}

static LP_NOINSTR void env_release(struct exec_env *x)
{
	if (x->map_size)
		munmap(x->vec, x->map_size);
}

LP_EXPORT LP_NOINSTR int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_env x;
	char *const *env = env_fix(envp, &x);
	int r, e;
	execve_fn next = (execve_fn)next_fn(NEXT_EXECVE);

	if (next)
		r = next(path, argv, env);
	else
		r = (int)syscall(SYS_execve, path, argv, env);
	e = errno;
	env_release(&x);
	errno = e;
	return r;
}

LP_EXPORT LP_NOINSTR int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

LP_EXPORT LP_NOINSTR int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_env x;
	char *const *env;
	int r, e;

	execve_fn next;

	env = env_fix(envp, &x);
	next = (execve_fn)next_fn(NEXT_EXECVPE);
	if (!next) {
		env_release(&x);
		errno = ENOSYS;
		return -1;
	}
	r = next(file, argv, env);
	e = errno;
	env_release(&x);
	errno = e;
	return r;
}

LP_EXPORT LP_NOINSTR int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

LP_EXPORT LP_NOINSTR int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_env x;
	char *const *env;
	int r, e;

	fexecve_fn next;

	env = env_fix(envp, &x);
	next = (fexecve_fn)next_fn(NEXT_FEXECVE);
	if (!next) {
		env_release(&x);
		errno = ENOSYS;
		return -1;
	}
	r = next(fd, argv, env);
	e = errno;
	env_release(&x);
	errno = e;
	return r;
}

LP_EXPORT LP_NOINSTR int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	struct exec_env x;
	char *const *env = env_fix(envp, &x);
	execveat_fn next = (execveat_fn)next_fn(NEXT_EXECVEAT);
	int r, e;

	if (next)
		r = next(dirfd, path, argv, env, flags);
	else
		r = (int)syscall(SYS_execveat, dirfd, path, argv, env, flags);
	e = errno;
	env_release(&x);
	errno = e;
	return r;
}

/* The execl family: the arguments into an array (on the stack, or mapped
 * when there are many), then the array form.  With want_env, the pointer
 * after the terminating NULL is the environment (execle). */
enum exec_list_kind {
	EXEC_LIST_PATH = 0, /* execl */
	EXEC_LIST_ENV = 1,  /* execle */
	EXEC_LIST_FILE = 2, /* execlp: searched in PATH */
};

static LP_NOINSTR int exec_list(const char *path, const char *arg0, va_list ap, enum exec_list_kind kind)
{
	char *stack[EXEC_STACK_ENTRIES];
	char **argv = stack, *const *envp = environ;
	size_t argc = 1, size = 0, i;
	va_list count;
	int r, e;

	va_copy(count, ap);
	while (va_arg(count, const char *))
		argc++;
	va_end(count);
	if (argc + 1 > EXEC_STACK_ENTRIES) {
		void *map;

		size = (argc + 1) * sizeof(char *);
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED) {
			errno = E2BIG;
			return -1;
		}
		argv = map;
	}
	argv[0] = (char *)arg0;
	for (i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *); /* the last is the NULL */
	if (kind == EXEC_LIST_ENV)
		envp = va_arg(ap, char *const *);
	if (kind == EXEC_LIST_FILE)
		r = execvpe(path, argv, envp);
	else
		r = execve(path, argv, envp);
	e = errno;
	if (size)
		munmap(argv, size);
	errno = e;
	return r;
}

LP_EXPORT LP_NOINSTR int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg0);
	r = exec_list(path, arg0, ap, EXEC_LIST_PATH);
	va_end(ap);
	return r;
}

LP_EXPORT LP_NOINSTR int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg0);
	r = exec_list(path, arg0, ap, EXEC_LIST_ENV);
	va_end(ap);
	return r;
}

LP_EXPORT LP_NOINSTR int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg0);
	r = exec_list(file, arg0, ap, EXEC_LIST_FILE);
	va_end(ap);
	return r;
}

/* posix_spawn and posix_spawnp: the new environment is made here, in the
 * parent, before the C library's child runs. */
static LP_NOINSTR int spawn(bool search, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct exec_env x;
	char *const *env = env_fix(envp, &x);
	spawn_fn next = (spawn_fn)next_fn(search ? NEXT_SPAWNP : NEXT_SPAWN);
	int r;

	r = next ? next(pid, path, fa, attr, argv, env) : ENOSYS;
	env_release(&x);
	return r;
}

LP_EXPORT LP_NOINSTR int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                                     const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(false, pid, path, fa, attr, argv, envp);
}

LP_EXPORT LP_NOINSTR int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                                      const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(true, pid, file, fa, attr, argv, envp);
}
