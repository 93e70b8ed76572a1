/* layerprof flow: the flow of one call across the layers, as an indented
 * tree (or JSON): the functions it called, their system calls, the kernel
 * events they caused, its time off the CPU and who woke it; with --all,
 * every call of the function, one line each with its time per layer. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/kernel/kflow.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"

static const char flow_usage[] = "usage: layerprof flow [options] [<trace dir>] <function>[#N]\n"
                                 "\n"
                                 "The whole flow of the Nth call (default 1) of a function, calls numbered by\n"
                                 "their start over all threads: the functions it called, their system calls\n"
                                 "(record --syscalls), the kernel events they caused (record --kernel: page\n"
                                 "faults, time off the CPU with who woke the thread, block requests, irqs),\n"
                                 "heap operations (record --memory), synchronisation waits with the thread that\n"
                                 "released them (record --sync), with times, and the call's time per layer.\n"
                                 "\n"
                                 "      --thread TID      number the calls of this thread only\n"
                                 "      --all             every call of the function, one line each, with its\n"
                                 "                        time per layer\n"
                                 "      --format FMT      text (default) or json\n"
                                 "  -h, --help            this text\n"
                                 "\n"
                                 "Exit status: 0 ok, 1 no such call, 2 usage, 3 trace missing, empty, damaged or\n"
                                 "of another version.\n";

static void layers_line(const struct kflow_call *c, char *buf, size_t size)
{
	char t[32], u[32], s[32], o[32], i[32];
	const struct klayer_parts *p = &c->parts;

	options_format_duration(c->end_ns - c->start_ns, t, sizeof(t));
	options_format_duration(p->ns[KL_USER], u, sizeof(u));
	options_format_duration(p->ns[KL_SYSCALL], s, sizeof(s));
	options_format_duration(klayer_off_ns(p), o, sizeof(o));
	options_format_duration(p->ns[KL_IRQ] + p->ns[KL_SOFTIRQ], i, sizeof(i));
	snprintf(buf, size,
	         "total %s: user %s, syscall %s, off-CPU %s, irq %s; %llu syscalls, %llu page faults, %llu "
	         "switches",
	         t, u, s, o, i, (unsigned long long)p->syscalls, (unsigned long long)p->faults,
	         (unsigned long long)(p->switches_vol + p->switches_invol));
}

static void print_all_text(const char *func, const struct kflow_call *calls, size_t n)
{
	char line[400];

	printf("# %zu calls of %s\n", n, func);
	for (size_t i = 0; i < n; i++) {
		layers_line(&calls[i], line, sizeof(line));
		printf("%s#%llu  thread %u: %s%s\n", func, (unsigned long long)calls[i].n, calls[i].tid, line,
		       calls[i].unfinished ? " (unfinished)" : "");
	}
}

static void print_json(const char *func, const struct kflow *kf, bool all)
{
	struct json j;

	json_init(&j, stdout);
	if (all)
		kflow_json_calls(&j, func, kf, UINT64_MAX, false);
	else
		kflow_json_call(&j, func, kf, UINT64_MAX, false);
	json_finish(&j);
}

static void print_flow_text(const char *func, const struct kflow_call *c, const struct kflow_node *nodes, size_t n,
                            uint64_t dropped)
{
	char line[400], t[32], d[32];

	layers_line(c, line, sizeof(line));
	printf("# flow of %s#%llu, thread %u, process %u\n# %s\n", func, (unsigned long long)c->n, c->tid, c->pid,
	       line);
	printf("#%13s %12s | %s\n", "TIME (s)", "DURATION", "STEP");
	for (size_t i = 0; i < n; i++) {
		const struct kflow_node *nd = &nodes[i];
		uint64_t rel = nd->ns > c->start_ns ? nd->ns - c->start_ns : 0;

		snprintf(t, sizeof(t), "%llu.%06llu", (unsigned long long)(rel / 1000000000u),
		         (unsigned long long)(rel % 1000000000u / 1000u));
		if (nd->dur_ns || nd->type == KFLOW_CALL || nd->type == KFLOW_SYSCALL || nd->type == KFLOW_OFFCPU)
			options_format_duration(nd->dur_ns, d, sizeof(d));
		else
			d[0] = '\0';
		switch (nd->type) {
		case KFLOW_CALL:
			printf("%14s %12s | %*s%s()\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		case KFLOW_SYSCALL:
			printf("%14s %12s | %*s[sys] %s\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		case KFLOW_OFFCPU:
			printf("%14s %12s | %*s[kernel] %s\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		case KFLOW_KERNEL:
			printf("%14s %12s | %*s[kernel] %s\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		case KFLOW_MEM:
			printf("%14s %12s | %*s[mem] %s\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		case KFLOW_SYNC:
			printf("%14s %12s | %*s[wait] %s\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		default:
			printf("%14s %12s | %*s*** %s ***\n", t, d, (int)(2 * nd->depth), "", nd->text);
			break;
		}
	}
	if (dropped)
		printf("# %llu more steps not shown (over %u)\n", (unsigned long long)dropped, KFLOW_NODES_MAX);
}

/* "name#N": the name and N (1 without "#N").  False for a bad N. */
static bool parse_target(const char *arg, char *name, size_t size, uint64_t *nth)
{
	const char *hash = strrchr(arg, '#');
	char *end;

	*nth = 1;
	if (!hash) {
		snprintf(name, size, "%s", arg);
		return *arg != '\0';
	}
	snprintf(name, size, "%.*s", (int)(hash - arg), arg);
	*nth = strtoull(hash + 1, &end, 10);
	return hash > arg && hash[1] && !*end && *nth > 0;
}

int cmd_flow(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "thread", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data", *target;
	char func[1024];
	bool all = false, json = false;
	uint64_t nth, tid = 0;
	struct kflow *kf;
	struct walk w;
	int c, code, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': {
			char *end;

			tid = strtoull(optarg, &end, 10);
			if (!*optarg || *end || !tid || tid > UINT32_MAX) {
				fprintf(stderr, "layerprof flow: invalid --thread '%s': a thread id\n", optarg);
				return LP_EXIT_USAGE;
			}
			break;
		}
		case 'a':
			all = true;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof flow: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(flow_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(flow_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (argc - optind == 2) {
		dir = argv[optind];
		target = argv[optind + 1];
	} else if (argc - optind == 1) {
		target = argv[optind];
	} else {
		fprintf(stderr, "layerprof flow: %s\n", argc - optind ? "too many operands" : "which function?");
		fputs(flow_usage, stderr);
		return LP_EXIT_USAGE;
	}
	if (!parse_target(target, func, sizeof(func), &nth)) {
		fprintf(stderr, "layerprof flow: invalid call '%s': a function name, then #N for its Nth call\n",
		        target);
		return LP_EXIT_USAGE;
	}
	code = builtin_trace_open("flow", &w, dir, &fopts);
	if (code)
		return code;
	kf = kflow_new(&w, func, all ? 0 : nth, (uint32_t)tid);
	r = kf ? kflow_run(kf) : -ENOMEM;
	if (r) {
		fprintf(stderr, "layerprof flow: cannot read '%s': %s\n", dir, strerror(r < 0 ? -r : ENOMEM));
		kflow_free(kf);
		walk_release(&w);
		return LP_EXIT_FAILURE;
	}
	code = layerprof_trace_condition(&w, "flow");
	{
		size_t ncalls, nnodes;
		uint64_t dropped;
		const struct kflow_call *calls = kflow_calls(kf, &ncalls), *ch = kflow_chosen(kf);
		const struct kflow_node *nodes = kflow_nodes(kf, &nnodes, &dropped);

		if (all && json)
			print_json(func, kf, true);
		else if (all)
			print_all_text(func, calls, ncalls);
		else if (!ch) {
			char in[48] = "";

			if (tid)
				snprintf(in, sizeof(in), " in thread %llu", (unsigned long long)tid);
			fprintf(stderr, "layerprof flow: '%s' has %zu call%s%s, no call #%llu\n", func, ncalls,
			        ncalls == 1 ? "" : "s", in, (unsigned long long)nth);
			if (!code)
				code = LP_EXIT_FAILURE;
		} else if (json)
			print_json(func, kf, false);
		else
			print_flow_text(func, ch, nodes, nnodes, dropped);
	}
	if (fflush(stdout) && !code)
		code = LP_EXIT_FAILURE;
	kflow_free(kf);
	walk_release(&w);
	return code;
}
