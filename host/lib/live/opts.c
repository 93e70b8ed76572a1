/* The shared options of a live session; see live/opts.h. */
#include "host/lib/live/opts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/live/netclient.h"
#include "host/lib/live/session.h"
#include "host/lib/util/options.h"
#include "layerprof/format.h"
#include "systrace/systrace.h"

void liveopts_init(struct liveopts *o, const char *cmd)
{
	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
}

int liveopts_parse(struct liveopts *o, int c, const char *arg)
{
	enum systrace_backend backend;
	unsigned long n;
	char *end;

	switch (c) {
	case LIVEOPT_CONNECT:
		o->connect = arg;
		return 1;
	case LIVEOPT_ATTACH:
		errno = 0;
		o->attach_pid = strtol(arg, &end, 10);
		if (errno || *end || o->attach_pid <= 0 || o->attach_pid > INT_MAX) {
			fprintf(stderr, "layerprof %s: invalid --attach '%s': expected a process id\n", o->cmd, arg);
			return -1;
		}
		break;
	case LIVEOPT_STOPPED:
		o->stopped = true;
		break;
	case LIVEOPT_UDP:
		o->udp = true;
		break;
	case LIVEOPT_SYSCALLS:
		if (systrace_backend_parse(arg, &backend)) {
			fprintf(stderr, "layerprof %s: invalid --syscalls '%s': auto, bpf, tracepoint or ptrace\n",
			        o->cmd, arg);
			return -1;
		}
		o->syscalls = arg ? arg : "auto";
		break;
	case LIVEOPT_SYSCALL_FILTER:
		if (!arg[0] || strchr(arg, '\n')) {
			fprintf(stderr, "layerprof %s: invalid --syscall-filter: expected a list of syscalls\n",
			        o->cmd);
			return -1;
		}
		o->syscall_filter = arg;
		break;
	case LIVEOPT_MEMORY:
		o->memory = true;
		break;
	case LIVEOPT_MEM_DEPTH:
		errno = 0;
		n = strtoul(arg, &end, 10);
		if (errno || *end || n < 1 || n > LP_MEM_DEPTH_MAX) {
			fprintf(stderr, "layerprof %s: invalid --mem-depth '%s': expected 1 to %u\n", o->cmd, arg,
			        LP_MEM_DEPTH_MAX);
			return -1;
		}
		o->mem_depth = (unsigned)n;
		break;
	case LIVEOPT_KEEP_ALIVE:
		o->keep_alive = true;
		break;
	case LIVEOPT_MEM_FOLD:
		if (options_parse_duration(arg, &o->mem_fold_ns) || !o->mem_fold_ns) {
			fprintf(stderr,
			        "layerprof %s: invalid --mem-fold '%s': expected a duration such as 500us or 10ms\n",
			        o->cmd, arg);
			return -1;
		}
		break;
	default:
		return 0;
	}
	o->any = true;
	return 1;
}

int liveopts_check(struct liveopts *o, char **argv, int argc, bool need_target)
{
	if (netclient_check_address(o->connect)) {
		fprintf(stderr, "layerprof %s: invalid --connect '%s': expected HOST:PORT, [IPV6]:PORT or unix:PATH\n",
		        o->cmd, o->connect ? o->connect : "");
		return -EINVAL;
	}
	if (o->udp && wire_unix_path(o->connect)) {
		fprintf(stderr,
		        "layerprof %s: --udp is for an agent over TCP (--connect HOST:PORT): its UNIX socket has no "
		        "datagram channel\n",
		        o->cmd);
		return -EINVAL;
	}
	o->argv = argv;
	o->argc = argc;
	if (o->syscall_filter && !o->syscalls) {
		fprintf(stderr, "layerprof %s: --syscall-filter needs --syscalls\n", o->cmd);
		return -EINVAL;
	}
	if ((o->mem_depth || o->keep_alive || o->mem_fold_ns) && !o->memory) {
		fprintf(stderr, "layerprof %s: --mem-depth, --keep-alive and --mem-fold need --memory\n", o->cmd);
		return -EINVAL;
	}
	if ((o->mem_depth || o->keep_alive || o->mem_fold_ns) && o->attach_pid) {
		fprintf(stderr,
		        "layerprof %s: --mem-depth, --keep-alive and --mem-fold are set when a program starts, not "
		        "when attaching\n",
		        o->cmd);
		return -EINVAL;
	}
	if (o->attach_pid && o->argc) {
		fprintf(stderr, "layerprof %s: --attach and a program to start exclude each other\n", o->cmd);
		return -EINVAL;
	}
	if (need_target && !o->attach_pid && !o->argc) {
		fprintf(stderr, "layerprof %s: no program to start and no --attach PID\n", o->cmd);
		return -EINVAL;
	}
	if (o->argc > LIVESESSION_START_ARGS_MAX) {
		fprintf(stderr, "layerprof %s: too many arguments for the agent (at most %d)\n", o->cmd,
		        LIVESESSION_START_ARGS_MAX);
		return -EINVAL;
	}
	return 0;
}

void liveopts_apply(const struct liveopts *o, struct livesession *ls)
{
	ls->cmd = o->cmd;
	ls->addr = o->connect;
	ls->token_file = o->token_file;
	ls->attach_pid = o->attach_pid;
	ls->argv = o->argv;
	ls->argc = o->argc;
	ls->udp_wanted = o->udp;
	ls->syscalls = o->syscalls;
	ls->syscall_filter = o->syscall_filter;
	ls->memory = o->memory;
	ls->mem_depth = o->mem_depth;
	ls->keep_alive = o->keep_alive;
	ls->mem_fold_ns = o->mem_fold_ns;
}
