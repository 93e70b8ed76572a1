/* layerprof memdiff: what grew between two heap snapshots, per call site. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/heap/snapshot.h"
#include "host/lib/util/json.h"

static const char memdiff_usage[] = "usage: layerprof memdiff [options] <snapshot 1> <snapshot 2>\n"
                                    "\n"
                                    "Per call site, the change of live objects and bytes from the first snapshot\n"
                                    "(layerprof snapshot) to the second, largest growth first.\n"
                                    "\n"
                                    "      --all             also the sites that did not change\n"
                                    "      --format FMT      text (default) or json\n"
                                    "  -h, --help            this text\n"
                                    "\n"
                                    "Exit status: 0 ok, 1 out of memory, 2 usage, 3 a snapshot missing, damaged\n"
                                    "or of another version.\n";

static void print_text(const char *p1, const struct snapshot *a, const char *p2, const struct snapshot *b,
                       const struct snapshot_change *c, size_t n, bool all)
{
	uint64_t dt = b->time_ns > a->time_ns ? b->time_ns - a->time_ns : 0;
	size_t i;

	printf("# layerprof memdiff: %s (%llu objects, %llu bytes live) -> %s (%llu objects, %llu bytes live), "
	       "%.3f s later\n",
	       p1, (unsigned long long)a->live_objects, (unsigned long long)a->live_bytes, p2,
	       (unsigned long long)b->live_objects, (unsigned long long)b->live_bytes, (double)dt / 1e9);
	printf("# live: %+lld objects, %+lld bytes\n", (long long)(b->live_objects - a->live_objects),
	       (long long)(b->live_bytes - a->live_bytes));
	if ((a->partial || b->partial) && a->covers_from_ns != b->covers_from_ns)
		printf("# note: the snapshots cover different streams (%s the last %.3f s, %s the last %.3f s): each "
		       "counts only the blocks allocated since its stream began\n",
		       p1, (double)(a->time_ns - a->covers_from_ns) / 1e9, p2,
		       (double)(b->time_ns - b->covers_from_ns) / 1e9);
	printf("#\n");
	printf("%10s %12s %10s %12s %10s %12s %10s  %s\n", "+Objects", "+Bytes", "Objs 1", "Bytes 1", "Objs 2",
	       "Bytes 2", "+Allocs", "Function  Call site");
	printf("%10s %12s %10s %12s %10s %12s %10s  %s\n",
	       "========", "======", "======", "=======", "======", "=======", "=======", "========  =========");
	for (i = 0; i < n; i++) {
		const struct snapshot_change *ch = &c[i];

		if (!all && !ch->objects_change && !ch->bytes_change)
			continue;
		printf("%+10lld %+12lld %10llu %12llu %10llu %12llu %+10lld  %s  %s", (long long)ch->objects_change,
		       (long long)ch->bytes_change, (unsigned long long)ch->objects_before,
		       (unsigned long long)ch->bytes_before, (unsigned long long)ch->objects_after,
		       (unsigned long long)ch->bytes_after, (long long)ch->allocs_change,
		       ch->site->function ? ch->site->function : "[unknown]", ch->site->key);
		if (ch->site->file)
			printf(" (%s:%u)", ch->site->file, ch->site->line);
		printf("\n");
	}
}

static void json_side(struct json *j, const char *key, const char *path, const struct snapshot *s)
{
	json_object_begin(j, key);
	json_str(j, "file", path);
	json_str(j, "trace", s->trace);
	json_bool(j, "partial", s->partial);
	json_u64(j, "covers_from_ns", s->covers_from_ns);
	json_u64(j, "time_ns", s->time_ns);
	json_u64(j, "live_objects", s->live_objects);
	json_u64(j, "live_bytes", s->live_bytes);
	json_object_end(j);
}

static void print_json(const char *p1, const struct snapshot *a, const char *p2, const struct snapshot *b,
                       const struct snapshot_change *c, size_t n, bool all)
{
	uint64_t dt = b->time_ns > a->time_ns ? b->time_ns - a->time_ns : 0;
	struct json *j = malloc(sizeof(*j));
	size_t i;

	if (!j)
		return;
	json_init(j, stdout);
	json_object_begin(j, NULL);
	json_side(j, "from", p1, a);
	json_side(j, "to", p2, b);
	json_u64(j, "interval_ns", dt);
	json_i64(j, "live_objects_change", (int64_t)(b->live_objects - a->live_objects));
	json_i64(j, "live_bytes_change", (int64_t)(b->live_bytes - a->live_bytes));
	json_array_begin(j, "sites");
	for (i = 0; i < n; i++) {
		const struct snapshot_change *ch = &c[i];

		if (!all && !ch->objects_change && !ch->bytes_change)
			continue;
		json_object_begin(j, NULL);
		json_str(j, "call_site", ch->site->key);
		json_str(j, "function", ch->site->function);
		json_str(j, "file", ch->site->file);
		json_u64(j, "line", ch->site->line);
		json_u64(j, "live_objects_before", ch->objects_before);
		json_u64(j, "live_objects_after", ch->objects_after);
		json_i64(j, "live_objects_change", ch->objects_change);
		json_u64(j, "live_bytes_before", ch->bytes_before);
		json_u64(j, "live_bytes_after", ch->bytes_after);
		json_i64(j, "live_bytes_change", ch->bytes_change);
		json_i64(j, "allocs_change", ch->allocs_change);
		json_f64(j, "bytes_per_s", dt ? (double)ch->bytes_change * 1e9 / (double)dt : 0);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
	json_finish(j);
	free(j);
}

int cmd_memdiff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct snapshot a = { 0 }, b = { 0 };
	struct snapshot_change *c = NULL;
	bool json = false, all = false;
	char err[512];
	size_t n;
	int opt, r, code = LP_EXIT_OK;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof memdiff: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'a':
			all = true;
			break;
		case 'h':
			fputs(memdiff_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(memdiff_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "layerprof memdiff: give two snapshot files\n");
		fputs(memdiff_usage, stderr);
		return LP_EXIT_USAGE;
	}
	r = snapshot_read(argv[optind], &a, err, sizeof(err));
	if (!r)
		r = snapshot_read(argv[optind + 1], &b, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof memdiff: %s\n", err);
		code = r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
		goto out;
	}
	if (snapshot_diff(&a, &b, &c, &n)) {
		fprintf(stderr, "layerprof memdiff: out of memory\n");
		code = LP_EXIT_FAILURE;
		goto out;
	}
	if (json)
		print_json(argv[optind], &a, argv[optind + 1], &b, c, n, all);
	else
		print_text(argv[optind], &a, argv[optind + 1], &b, c, n, all);
out:
	free(c);
	snapshot_release(&a);
	snapshot_release(&b);
	return code;
}
