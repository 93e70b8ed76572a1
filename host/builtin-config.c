/* layerprof config: where the parts of layerprof that a build of the
 * profiled program uses are, for build scripts; and a new token for the
 * agent and for serve. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/exepath.h"
#include "host/builtin.h"

static const char config_usage[] = "usage: layerprof config --wrap-flags\n"
                                   "   or: layerprof config --sync-wrap-flags\n"
                                   "   or: layerprof config --gen-token FILE\n"
                                   "\n"
                                   "Prints what a build needs to use layerprof.\n"
                                   "\n"
                                   "  --wrap-flags   the path of a linker response file that links a program with\n"
                                   "                 the memory tracer's interposers by ld --wrap (no LD_PRELOAD\n"
                                   "                 needed; record the program with plain 'layerprof record'):\n"
                                   "                   gcc ... -Wl,@$(layerprof config --wrap-flags)\n"
                                   "                 It holds the --wrap options for malloc, free, ..., new and\n"
                                   "                 delete, liblayerprof-memwrap.a, liblayerprof.so and an rpath\n"
                                   "                 to it. Only the program's own calls are seen, not those made\n"
                                   "                 inside shared libraries (libc's strdup, ...)\n"
                                   "  --sync-wrap-flags\n"
                                   "                 the same for the sync tracer's interposers (pthread mutexes,\n"
                                   "                 rwlocks, spinlocks, conditions, barriers, joins, semaphores,\n"
                                   "                 pthread_create): --wrap options, liblayerprof-syncwrap.a,\n"
                                   "                 liblayerprof.so and an rpath; both files may be given\n"
                                   "  --gen-token FILE\n"
                                   "                 write a new random token (64 hex digits) to FILE, a new\n"
                                   "                 file of mode 0600, for layerprofd --token-file and\n"
                                   "                 layerprof live/serve --token-file\n"
                                   "  -h, --help     this text\n";

/* A response file (memwrap.rsp, syncwrap.rsp): installed in
 * <prefix>/lib/layerprof, or in the build tree beside the runtime. */
static int find_wrap_flags(const char *name, char *out)
{
	char installed[64], built[64];
	const char *const rel[] = { installed, built };

	snprintf(installed, sizeof(installed), "/../lib/layerprof/%s", name);
	snprintf(built, sizeof(built), "/../runtime/%s", name);
	return exepath_find(layerprof_exe_dir(), rel, sizeof(rel) / sizeof(rel[0]), out);
}

int cmd_config(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "wrap-flags", no_argument, NULL, 'w' },
		{ "sync-wrap-flags", no_argument, NULL, 's' },
		{ "gen-token", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *gen_token = NULL, *rsp = "memwrap.rsp";
	char path[PATH_MAX];
	bool wrap = false;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
		case 's':
			if (wrap) {
				fputs(config_usage, stderr);
				return LP_EXIT_USAGE;
			}
			wrap = true;
			rsp = c == 's' ? "syncwrap.rsp" : "memwrap.rsp";
			break;
		case 'g':
			gen_token = optarg;
			break;
		case 'h':
			fputs(config_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(config_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (wrap == !!gen_token || optind < argc) {
		fputs(config_usage, stderr);
		return LP_EXIT_USAGE;
	}
	if (gen_token) {
		r = auth_token_generate(gen_token);
		if (r) {
			fprintf(stderr, "layerprof config: cannot write a token to '%s': %s\n", gen_token,
			        r == -EEXIST ? "something is there already (a new file is made, never overwritten)"
			                     : strerror(-r));
			return LP_EXIT_FAILURE;
		}
		printf("layerprof config: a new token is in '%s' (mode 0600)\n", gen_token);
		return LP_EXIT_OK;
	}
	if (find_wrap_flags(rsp, path)) {
		fprintf(stderr, "layerprof config: cannot find %s in '%s/../lib/layerprof' or '%s/../runtime'\n", rsp,
		        layerprof_exe_dir(), layerprof_exe_dir());
		return LP_EXIT_FAILURE;
	}
	printf("%s\n", path);
	return LP_EXIT_OK;
}
