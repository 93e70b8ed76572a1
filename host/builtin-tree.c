/* layerprof tree: the call tree of each thread, every node a call path,
 * with calls and inclusive/self time. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/builtin.h"
#include "host/lib/json.h"
#include "host/lib/walk.h"

#define TREE_NODES_MAX (1u << 24)
/* A syscall leaf's key in place of a function address (user addresses
 * never have the top bit set). */
#define TREE_SYSCALL_KEY(arch, nr) (UINT64_C(1) << 63 | (uint64_t)(arch) << 32 | (nr))
#define TREE_IS_SYSCALL(addr) ((addr) >> 63)

static const char tree_usage[] =
    "usage: layerprof tree [options] [<trace dir>]\n"
    "\n"
    "Call tree of each thread of a trace (default layerprof.data): every node is a\n"
    "call path with its calls, total (inclusive) and self time.  System calls\n"
    "(record --syscalls) are leaves \"[sys] name\" under the function that made\n"
    "them, with their errors; their time is not in the function's self time.\n"
    "\n"
    "      --focus FUNC      the trees of calls inside FUNC, FUNC at the root (glob)\n"
    "      --format FMT      text (default) or json\n" FILTER_HELP "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 trace missing, empty, damaged or of another version.\n";

struct node {
	uint64_t addr;
	uint32_t parent;                                /* index; 0 is the root */
	uint32_t first_child, next_sibling, last_child; /* 0: none */
	uint64_t calls, total_ns, self_ns, min_ns, max_ns;
	uint64_t errors; /* syscall leaves: calls that failed */
};

struct tstream {
	struct node *nodes;
	uint32_t n, cap;
	uint32_t *hash; /* node index, keyed by (parent, addr) */
	uint32_t hcap;
	uint32_t *path; /* node at each depth */
	uint64_t *child_ns;
	uint32_t path_cap;
};

struct tree {
	struct walk w;
	int oom;
};

static uint32_t node_hash(uint32_t parent, uint64_t addr, uint32_t cap)
{
	return (uint32_t)(((addr ^ ((uint64_t)parent << 40)) * 0x9e3779b97f4a7c15ull) >> 40) & (cap - 1);
}

static int hash_rebuild(struct tstream *t, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h)), i;

	if (!h)
		return -ENOMEM;
	for (i = 1; i < t->n; i++) {
		uint32_t k = node_hash(t->nodes[i].parent, t->nodes[i].addr, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = cap;
	return 0;
}

static uint32_t child_of(struct tree *tr, struct tstream *t, uint32_t parent, uint64_t addr)
{
	uint32_t k = node_hash(parent, addr, t->hcap), i;
	struct node *nd;

	while ((i = t->hash[k])) {
		if (t->nodes[i].parent == parent && t->nodes[i].addr == addr)
			return i;
		k = (k + 1) & (t->hcap - 1);
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct node *n;

		if (cap > TREE_NODES_MAX || !(n = realloc(t->nodes, cap * sizeof(*n)))) {
			tr->oom = 1;
			return 0;
		}
		t->nodes = n;
		t->cap = cap;
	}
	i = t->n++;
	nd = &t->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->addr = addr;
	nd->parent = parent;
	nd->min_ns = UINT64_MAX;
	if (t->nodes[parent].last_child)
		t->nodes[t->nodes[parent].last_child].next_sibling = i;
	else
		t->nodes[parent].first_child = i;
	t->nodes[parent].last_child = i;
	t->hash[k] = i;
	if (t->n * 2 > t->hcap && hash_rebuild(t, t->hcap * 2))
		tr->oom = 1;
	return i;
}

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct tree *tr = ctx;
	struct tstream *t = calloc(1, sizeof(*t));

	if (!t || !(t->nodes = calloc(64, sizeof(*t->nodes))) || !(t->hash = calloc(256, sizeof(*t->hash)))) {
		if (t)
			free(t->nodes);
		free(t);
		tr->oom = 1;
		return;
	}
	t->cap = 64;
	t->hcap = 256;
	t->n = 1; /* the root */
	s->user = t;
}

static int ensure_depth(struct tree *tr, struct tstream *t, uint32_t depth)
{
	if (depth < t->path_cap)
		return 0;
	{
		uint32_t cap = t->path_cap ? t->path_cap : 64;
		uint32_t *p;
		uint64_t *c;

		while (cap <= depth)
			cap *= 2;
		p = realloc(t->path, cap * sizeof(*p));
		if (p)
			t->path = p;
		c = realloc(t->child_ns, cap * sizeof(*c));
		if (c)
			t->child_ns = c;
		if (!p || !c) {
			tr->oom = 1;
			return -ENOMEM;
		}
		t->path_cap = cap;
	}
	return 0;
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct tree *tr = ctx;
	struct tstream *t = s->user;
	uint32_t parent, i;

	if (!t || ensure_depth(tr, t, depth))
		return;
	parent = depth ? t->path[depth - 1] : 0;
	i = child_of(tr, t, parent, addr);
	t->path[depth] = i;
	t->child_ns[depth] = 0;
	if (i && !(flags & FILTER_INHERITED))
		t->nodes[i].calls++;
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct tstream *t = s->user;
	uint64_t dur = ns - entry_ns;
	struct node *nd;

	if (!t || depth >= t->path_cap || !t->path[depth])
		return;
	nd = &t->nodes[t->path[depth]];
	nd->total_ns += dur;
	nd->self_ns += dur > t->child_ns[depth] ? dur - t->child_ns[depth] : 0;
	if (!(flags & FILTER_INHERITED)) {
		if (dur < nd->min_ns)
			nd->min_ns = dur;
		if (dur > nd->max_ns)
			nd->max_ns = dur;
	}
	if (depth)
		t->child_ns[depth - 1] += dur;
}

/* A syscall: a leaf under the function the thread was in. */
static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct tree *tr = ctx;
	struct tstream *t = s->user;
	uint64_t dur = sc->has_exit ? sc->exit_ns - sc->enter_ns : 0;
	struct node *nd;
	uint32_t parent, i;

	if (!t || !sc->has_enter || (sc->depth && (sc->depth > t->path_cap || !t->path[sc->depth - 1])))
		return;
	parent = sc->depth ? t->path[sc->depth - 1] : 0;
	i = child_of(tr, t, parent, TREE_SYSCALL_KEY(sc->arch, sc->nr));
	if (!i)
		return;
	nd = &t->nodes[i];
	nd->calls++;
	if (sc->has_exit && sc->ret < 0 && sc->ret >= -4095)
		nd->errors++;
	if (!sc->has_exit)
		return;
	nd->total_ns += dur;
	nd->self_ns += dur;
	if (dur < nd->min_ns)
		nd->min_ns = dur;
	if (dur > nd->max_ns)
		nd->max_ns = dur;
	if (sc->depth)
		t->child_ns[sc->depth - 1] += dur;
}

/* Children in order of total time, largest first. */
static const struct tstream *sort_stream;

static int node_cmp(const void *a, const void *b)
{
	const struct node *x = &sort_stream->nodes[*(const uint32_t *)a];
	const struct node *y = &sort_stream->nodes[*(const uint32_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint32_t *sorted_children(const struct tstream *t, uint32_t i, uint32_t *count)
{
	uint32_t n = 0, c, *v;

	for (c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		n++;
	*count = n;
	if (!n)
		return NULL;
	v = malloc(n * sizeof(*v));
	if (!v)
		return NULL;
	n = 0;
	for (c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		v[n++] = c;
	sort_stream = t;
	qsort(v, n, sizeof(*v), node_cmp);
	return v;
}

/* Printing walks the tree with an explicit stack: call trees of deep
 * recursion are as deep as the recursion. */
struct frame {
	uint32_t *kids;
	uint32_t n, next;
};

static int print_tree(struct tree *tr, const struct walk_stream *s, struct json *j)
{
	const struct tstream *t = s->user;
	struct frame *stack;
	uint32_t sp = 0, cap = 64;
	char a[32], b[32], name[1024];

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[0].kids = sorted_children(t, 0, &stack[0].n);
	stack[0].next = 0;
	for (;;) {
		struct frame *f = &stack[sp];
		const struct node *nd;
		uint32_t i;

		if (f->next == f->n) {
			free(f->kids);
			if (j)
				json_array_end(j);
			if (!sp)
				break;
			sp--;
			if (j)
				json_object_end(j);
			continue;
		}
		i = f->kids[f->next++];
		nd = &t->nodes[i];
		if (TREE_IS_SYSCALL(nd->addr)) {
			char sys[48];

			sys_name((enum sys_arch)(nd->addr >> 32 & 0xff), (uint32_t)nd->addr, sys, sizeof(sys));
			snprintf(name, sizeof(name), "%s%s", j ? "" : "[sys] ", sys);
		} else {
			walk_name(&tr->w, s->image, nd->addr, name, sizeof(name));
		}
		if (j) {
			json_object_begin(j, NULL);
			json_str(j, "name", name);
			if (TREE_IS_SYSCALL(nd->addr)) {
				json_bool(j, "syscall", true);
				json_u64(j, "errors", nd->errors);
			}
			json_u64(j, "calls", nd->calls);
			json_u64(j, "total_ns", nd->total_ns);
			json_u64(j, "self_ns", nd->self_ns);
			json_u64(j, "min_ns", nd->min_ns == UINT64_MAX ? 0 : nd->min_ns);
			json_u64(j, "max_ns", nd->max_ns);
			json_array_begin(j, "children");
		} else {
			printf("%12s %12s %10llu  %*s%s", format_duration(nd->total_ns, a, sizeof(a)),
			       format_duration(nd->self_ns, b, sizeof(b)), (unsigned long long)nd->calls, (int)(2 * sp),
			       "", name);
			if (nd->errors)
				printf(" (%llu failed)", (unsigned long long)nd->errors);
			printf("\n");
		}
		if (sp + 1 == cap) {
			struct frame *ns = realloc(stack, 2 * cap * sizeof(*ns));

			if (!ns) {
				tr->oom = 1;
				break;
			}
			stack = ns;
			cap *= 2;
		}
		sp++;
		stack[sp].kids = sorted_children(t, i, &stack[sp].n);
		stack[sp].next = 0;
	}
	while (sp) /* only after running out of memory */
		free(stack[sp--].kids);
	free(stack);
	return 0;
}

int cmd_tree(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "focus", required_argument, NULL, 'O' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct walk_ops ops = { .begin = on_begin, .entry = on_entry, .exit = on_exit_ev, .syscall = on_syscall };
	struct tree tr = { 0 };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data";
	bool json = false;
	struct json j;
	char err[512];
	uint32_t i;
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 'O':
			r = filter_opts_parse(&fopts, OPT_ONLY, optarg, "tree");
			if (r != 1)
				return LP_EXIT_USAGE;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof tree: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(tree_usage, stdout);
			return LP_EXIT_OK;
		default:
			r = filter_opts_parse(&fopts, c, optarg, "tree");
			if (r == 1)
				break;
			if (r == 0)
				fputs(tree_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc)
		dir = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "layerprof tree: one trace at a time ('%s' is extra)\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	r = walk_open(&tr.w, dir, &fopts, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof tree: %s\n", err);
		return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	ops.ctx = &tr;
	walk_run(&tr.w, &ops);
	code = walk_report_condition(&tr.w, "tree");
	if (json) {
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_str(&j, "trace", dir);
		json_u64(&j, "lost_events", tr.w.lost);
		json_array_begin(&j, "threads");
	}
	for (i = 0; i < tr.w.nstreams && !tr.oom; i++) {
		const struct walk_stream *s = tr.w.streams[i];

		if (!s->user)
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
	for (i = 0; i < tr.w.nstreams; i++) {
		struct tstream *t = tr.w.streams[i]->user;

		if (t) {
			free(t->nodes);
			free(t->hash);
			free(t->path);
			free(t->child_ns);
			free(t);
		}
	}
	walk_release(&tr.w);
	return code;
}
