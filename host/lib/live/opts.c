/* The shared options of a live session; see live/opts.h. */
#include "host/lib/live/opts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/live/netclient.h"
#include "host/lib/live/session.h"
#include "host/lib/util/error.h"
#include "host/lib/util/options.h"
#include "systrace/systrace.h"

void liveopts_init(struct liveopts *o)
{
	memset(o, 0, sizeof(*o));
}

int liveopts_parse(struct liveopts *o, int c, const char *arg, char *err, size_t errlen)
{
	enum systrace_backend backend;
	char *end;
	int r;

	switch (c) {
	case LIVEOPT_CONNECT:
		o->connect = arg;
		return 1;
	case LIVEOPT_ATTACH:
		errno = 0;
		o->attach_pid = strtol(arg, &end, 10);
		if (errno || *end || o->attach_pid <= 0 || o->attach_pid > INT_MAX)
			return error_set(err, errlen, -EINVAL, "invalid --attach '%s': expected a process id", arg);
		break;
	case LIVEOPT_STOPPED:
		o->stopped = true;
		break;
	case LIVEOPT_UDP:
		o->udp = true;
		break;
	case LIVEOPT_SYSCALLS:
		if (systrace_backend_parse(arg, &backend))
			return error_set(err, errlen, -EINVAL,
			                 "invalid --syscalls '%s': auto, bpf, tracepoint or ptrace", arg);
		o->syscalls = arg ? arg : "auto";
		break;
	case LIVEOPT_SYSCALL_FILTER:
		if (!arg[0] || strchr(arg, '\n'))
			return error_set(err, errlen, -EINVAL, "invalid --syscall-filter: expected a list of syscalls");
		o->syscall_filter = arg;
		break;
	case LIVEOPT_MEMORY:
		o->mem.on = true;
		break;
	case LIVEOPT_KERNEL:
		if (arg && (!arg[0] || strchr(arg, '\n')))
			return error_set(err, errlen, -EINVAL, "invalid --kernel: expected a list of tracepoints");
		o->kernel = arg ? arg : "default";
		break;
	case LIVEOPT_KERNEL_FUNCTIONS:
		if (!arg[0] || strchr(arg, '\n'))
			return error_set(err, errlen, -EINVAL, "invalid --kernel-functions: expected kernel functions");
		o->kernel_functions = arg;
		break;
	case LIVEOPT_KERNEL_SYSTEM:
		o->kernel_system = true;
		break;
	case LIVEOPT_DYNAMIC:
		if (arg && (!arg[0] || strchr(arg, '\n')))
			return error_set(err, errlen, -EINVAL,
			                 "invalid --dynamic: expected function globs (a library's as FILE:GLOB)");
		o->dynamic = arg ? arg : "all";
		break;
	case LIVEOPT_LIBCALLS:
		o->libcalls = true;
		break;
	case LIVEOPT_KERNEL_FILTER:
		if (!arg[0] || strchr(arg, '\n'))
			return error_set(err, errlen, -EINVAL, "invalid --kernel-filter: expected a filter expression");
		o->kernel_filter = arg;
		break;
	case LIVEOPT_MEM_DEPTH:
		r = memopts_set_depth(&o->mem, arg, MEMOPTS_OPTIONS, err, errlen);
		if (r)
			return r;
		break;
	case LIVEOPT_KEEP_ALIVE:
		o->mem.keep_alive = true;
		break;
	case LIVEOPT_MEM_FOLD:
		if (options_parse_duration(arg, &o->mem.fold_ns) || !o->mem.fold_ns)
			return error_set(err, errlen, -EINVAL,
			                 "invalid --mem-fold '%s': expected a duration such as 500us or 10ms", arg);
		break;
	default:
		return 0;
	}
	o->any = true;
	return 1;
}

int liveopts_check(struct liveopts *o, char **argv, int argc, bool need_target, char *err, size_t errlen)
{
	if (netclient_check_address(o->connect))
		return error_set(err, errlen, -EINVAL,
		                 "invalid --connect '%s': expected HOST:PORT, [IPV6]:PORT or unix:PATH",
		                 o->connect ? o->connect : "");
	if (o->udp && wire_unix_path(o->connect))
		return error_set(err, errlen, -EINVAL,
		                 "--udp is for an agent over TCP (--connect HOST:PORT): its UNIX socket has no "
		                 "datagram channel");
	o->argv = argv;
	o->argc = argc;
	if (o->syscall_filter && !o->syscalls)
		return error_set(err, errlen, -EINVAL, "--syscall-filter needs --syscalls");
	if ((o->kernel_filter || o->kernel_functions || o->kernel_system) && !o->kernel)
		return error_set(err, errlen, -EINVAL,
		                 "--kernel-filter, --kernel-functions and --kernel-system need --kernel");
	if (memopts_check(&o->mem, MEMOPTS_OPTIONS, err, errlen))
		return -EINVAL;
	if ((o->mem.depth || o->mem.keep_alive || o->mem.fold_ns) && o->attach_pid)
		return error_set(err, errlen, -EINVAL,
		                 "--mem-depth, --keep-alive and --mem-fold are set when a program starts, not "
		                 "when attaching");
	if (o->libcalls && o->attach_pid)
		return error_set(err, errlen, -EINVAL,
		                 "--libcalls needs the patch backend, which is set up in a program the agent starts: "
		                 "not with --attach (--dynamic traces a running program's own functions by uprobes)");
	if (o->mem.on && o->dynamic && o->attach_pid)
		return error_set(err, errlen, -EINVAL,
		                 "--memory with --attach --dynamic: heap operations come through the program's "
		                 "runtime, which a program attached by probes does not use");
	if (o->attach_pid && o->argc)
		return error_set(err, errlen, -EINVAL, "--attach and a program to start exclude each other");
	if (need_target && !o->attach_pid && !o->argc)
		return error_set(err, errlen, -EINVAL, "no program to start and no --attach PID");
	if (o->argc > LIVESESSION_START_ARGS_MAX)
		return error_set(err, errlen, -EINVAL, "too many arguments for the agent (at most %d)",
		                 LIVESESSION_START_ARGS_MAX);
	return 0;
}

void liveopts_apply(const struct liveopts *o, struct livesession *ls)
{
	ls->addr = o->connect;
	ls->token_file = o->token_file;
	ls->attach_pid = o->attach_pid;
	ls->argv = o->argv;
	ls->argc = o->argc;
	ls->udp_wanted = o->udp;
	ls->syscalls = o->syscalls;
	ls->syscall_filter = o->syscall_filter;
	ls->kernel = o->kernel;
	ls->kernel_filter = o->kernel_filter;
	ls->kernel_functions = o->kernel_functions;
	ls->kernel_system = o->kernel_system;
	ls->dynamic = o->dynamic;
	ls->libcalls = o->libcalls;
	ls->memory = o->mem.on;
	ls->mem_depth = o->mem.depth;
	ls->keep_alive = o->mem.keep_alive;
	ls->mem_fold_ns = o->mem.fold_ns;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int liveopts_split_words(const char *line, char *buf, char **words, int max, bool backslash)
{
	const char *p = line;
	char *o = buf;
	int n = 0;

	for (;;) {
		char quote = 0;

		while (is_blank(*p))
			p++;
		if (!*p)
			return n;
		if (n == max)
			return -EINVAL;
		words[n++] = o;
		for (; *p && (quote || !is_blank(*p)); p++) {
			if (quote && *p == quote)
				quote = 0;
			else if (!quote && (*p == '\'' || *p == '"'))
				quote = *p;
			else if (backslash && *p == '\\' && quote != '\'' && p[1])
				*o++ = *++p;
			else
				*o++ = *p;
		}
		if (quote)
			return -EINVAL;
		if (*p)
			p++; /* past the blank first: in place, o may have reached it */
		*o++ = '\0';
	}
}
