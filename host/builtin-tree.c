/* layerprof tree: the call tree of each thread, every node a call path
 * (a function, a system call or kernel event leaf), with calls and
 * inclusive/self time. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/analysis/calltree.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

static const char tree_usage[] =
    "usage: layerprof tree [options] [<trace dir>]\n"
    "\n"
    "Call tree of each thread of a trace (default layerprof.data): every node is a\n"
    "call path with its calls, total (inclusive) and self time.  System calls\n"
    "(record --syscalls) are leaves \"[sys] name\" under the function that made\n"
    "them, with their errors.  Kernel events (record --kernel) are leaves\n"
    "\"[kernel] group:event\" under the system call or function under way when\n"
    "they happened, with their count; a switch-out (sched:sched_switch) holds the\n"
    "time off the CPU until the thread's switch-in, an irq or softirq entry the\n"
    "handler's time, other events none.  Synchronisation waits (record --sync: a\n"
    "lock, condition, semaphore, barrier or join that had to wait) are leaves\n"
    "\"[wait] operation 0xobject\" under the function that waited, one per operation\n"
    "and object, with their count and the time waited.  A leaf's time is not in\n"
    "the self time of what it is under.  In JSON, such nodes have \"syscall\",\n"
    "\"kernel\" or \"sync\": true.\n"
    "\n"
    "      --focus FUNC      the trees of calls inside FUNC, FUNC at the root (glob)\n"
    "      --sync-all        every sync operation a leaf, also those that did not wait\n"
    "                        (\"[sync] mutex-unlock 0x...\": releases, posts, signals)\n"
    "      --format FMT      text (default) or json\n" FILTER_HELP "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 trace missing, empty, damaged or of another version.\n";

struct tree {
	struct walk w;
	struct calltree ct;
	int oom;
};

/* Prints one thread's tree, as text or into the JSON document j (each node
 * an object with its children in "children"; the caller has opened the
 * thread's "calls" array, which this closes). */
static void print_tree(struct tree *tr, const struct walk_stream *s, struct json *j)
{
	const struct calltree_stream *t = calltree_stream(&tr->ct, s->index);
	struct calltree_iter it;
	uint32_t i, depth, open = 0;
	char a[32], b[32], name[1024];

	if (calltree_iter_init(&it, t)) {
		tr->oom = 1;
		if (j)
			json_array_end(j);
		return;
	}
	while ((i = calltree_iter_next(&it, &depth))) {
		const struct calltree_node *nd = &t->nodes[i];

		calltree_node_name(&tr->w, s, nd, !j, name, sizeof(name));
		if (!j) {
			char mark[32];
			int indent = options_indent(depth, mark, sizeof(mark));

			printf("%12s %12s %10llu  %*s%s%s", options_format_duration(nd->total_ns, a, sizeof(a)),
			       options_format_duration(nd->self_ns, b, sizeof(b)), (unsigned long long)nd->calls,
			       indent, "", mark, name);
			if (nd->errors)
				printf(" (%llu failed)", (unsigned long long)nd->errors);
			printf("\n");
			continue;
		}
		for (; open > depth; open--) {
			json_array_end(j);
			json_object_end(j);
		}
		json_object_begin(j, NULL);
		json_str(j, "name", name);
		calltree_node_json(j, nd);
		json_array_begin(j, "children");
		open++;
	}
	if (it.oom)
		tr->oom = 1;
	calltree_iter_release(&it);
	if (j) {
		for (; open; open--) {
			json_array_end(j);
			json_object_end(j);
		}
		json_array_end(j);
	}
}

int cmd_tree(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "focus", required_argument, NULL, 'O' },
		{ "format", required_argument, NULL, 'f' },
		{ "sync-all", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct walk_ops ops = { 0 };
	struct tree tr = { 0 };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data";
	bool json = false, sync_all = false;
	struct json j;
	uint32_t i;
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 'O':
			r = layerprof_filter_parse(&fopts, OPT_ONLY, optarg, "tree");
			if (r != 1)
				return LP_EXIT_USAGE;
			fopts.only_opt[fopts.n_only - 1] = "--focus";
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof tree: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'S':
			sync_all = true;
			break;
		case 'h':
			fputs(tree_usage, stdout);
			return LP_EXIT_OK;
		default:
			if (builtin_filter_option(&fopts, c, optarg, "tree", tree_usage))
				break;
			return LP_EXIT_USAGE;
		}
	}
	if (builtin_trace_operand("tree", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	code = builtin_trace_open("tree", &tr.w, dir, &fopts);
	if (code)
		return code;
	calltree_init(&tr.ct);
	calltree_walk_ops(&tr.ct, &ops);
	ops.sync = calltree_sync;
	tr.ct.sync_all = sync_all;
	walk_run(&tr.w, &ops);
	if (tr.ct.oom)
		tr.oom = 1;
	code = layerprof_trace_condition(&tr.w, "tree");
	if (json) {
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_str(&j, "trace", dir);
		json_u64(&j, "lost_events", tr.w.lost);
		json_array_begin(&j, "threads");
	}
	for (i = 0; i < tr.w.nstreams && !tr.oom; i++) {
		const struct walk_stream *s = tr.w.streams[i];

		if (!calltree_stream(&tr.ct, s->index))
			continue;
		if (json) {
			json_object_begin(&j, NULL);
			json_u64(&j, "pid", s->pid);
			json_u64(&j, "tid", s->tid);
			json_u64(&j, "image", s->image);
			json_str(&j, "comm", s->comm);
			json_bool(&j, "after_exec", s->after_exec);
			json_u64(&j, "lost_events", s->lost);
			if (s->parent_pid)
				json_u64(&j, "parent_pid", s->parent_pid);
			json_array_begin(&j, "calls");
			print_tree(&tr, s, &j);
			json_object_end(&j);
		} else {
			printf("%s# thread %u (%s), process %u%s", i ? "\n" : "", s->tid, s->comm, s->pid,
			       s->parent_pid || s->after_exec ? "" : "\n");
			if (s->parent_pid)
				printf(", forked from %u\n", s->parent_pid);
			else if (s->after_exec)
				printf(" (after exec)\n");
			if (s->lost)
				printf("# %llu events lost in this thread: the tree is incomplete\n",
				       (unsigned long long)s->lost);
			printf("%12s %12s %10s  %s\n", "Total", "Self", "Calls", "Function");
			print_tree(&tr, s, NULL);
		}
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
	}
	if (tr.oom) {
		fprintf(stderr, "layerprof tree: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
	}
	calltree_release(&tr.ct);
	walk_release(&tr.w);
	return code;
}
