/* What the uprobe backend probes (see uprobes_impl.h): tracefs and its
 * uprobe_events, the executable's functions the patterns choose and their
 * file offsets, and the probe definitions. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dyntrace/dselect.h"
#include "dyntrace/uprobes_impl.h"
#include "systrace/tprobes.h"

#define UPROBES_GROUP_PREFIX "layerprofu_"

/* The scheduler tracepoints that follow the traced tasks. */
const char *const follow_names[4] = { NULL, "sched_process_fork", "sched_process_exec", "sched_process_exit" };

/* Where tracefs is, and whether this kernel defines uprobes there. */
int tracefs_probe(struct uprobes *u, char *err, size_t errlen)
{
	char path[256];

	u->root = tracefs_root("sched", "sched_switch", err, errlen);
	if (!u->root) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l, ": uprobes are defined through tracefs, which needs root");
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/uprobe_events", u->root);
	if (access(path, W_OK)) {
		int r = -errno;

		snprintf(err, errlen,
		         "cannot define uprobes (%s: %s): the kernel needs CONFIG_UPROBE_EVENTS, and "
		         "layerprof root",
		         path, strerror(-r));
		return r;
	}
	return 0;
}

/* A path the probe definitions can carry: absolute, without blanks or
 * control characters (the definition is a line of words). */
int probe_path(struct uprobes *u, const char *path, char *err, size_t errlen)
{
	char *abs = realpath(path, NULL);

	if (!abs) {
		int r = -errno;

		snprintf(err, errlen, "'%s': %s", path, strerror(-r));
		return r;
	}
	for (const unsigned char *c = (const unsigned char *)abs; *c; c++)
		if (*c <= ' ' || *c == 0x7f) {
			snprintf(err, errlen, "'%.512s': a path with blanks or control characters cannot be probed",
			         abs);
			free(abs);
			return -EINVAL;
		}
	if (strlen(abs) + 64 > TPROBES_LINE_MAX) {
		snprintf(err, errlen, "'%.256s...': path too long to probe", abs);
		free(abs);
		return -ENAMETOOLONG;
	}
	u->path = abs;
	return 0;
}

int select_functions(struct uprobes *u, const struct uprobes_config *cfg, char *err, size_t errlen)
{
	const char *cxx = dsel_unwinds(u->sel.es);

	/* measured on a Debian armhf kernel (6.1, in the test guest): every
	 * probed program, built as ARM code, died (SIGILL, SIGSEGV) */
	if (u->sel.es->machine == EM_ARM) {
		snprintf(err, errlen,
		         "'%.512s': 32-bit ARM: the uprobe backend is not offered there (probed programs died with "
		         "SIGILL in tests on a Debian armhf kernel)",
		         u->path);
		return -ENOTSUP;
	}
	if (cxx) {
		snprintf(err, errlen,
		         "'%s' uses C++ exceptions (it links %s): the uprobe backend's return probes would make "
		         "an exception that passes a traced function end the program, so it does not trace it",
		         u->path, cxx);
		return -ENOTSUP;
	}
	/* the 32-bit ARM kernel decodes a probed instruction as ARM code:
	 * a probe in Thumb code would break the program */
	return dsel_functions(&u->sel, u->path, cfg, "Thumb code, which uprobes cannot probe", err, errlen);
}

/* The scheduler tracepoints' ids, and where fork names its child. */
int follow_formats(struct uprobes *u, char *err, size_t errlen)
{
	for (int k = UP_FORK; k <= UP_EXIT; k++) {
		char *fmt = NULL;
		int r = tracefs_format(u->root, "sched", follow_names[k], &fmt, &u->follow_id[k], err, errlen);

		if (!r && k == UP_FORK && (!tracefs_field(fmt, "child_pid", &u->child_pid) || u->child_pid.size != 4)) {
			snprintf(err, errlen, "cannot parse the sched:sched_process_fork format");
			r = -EINVAL;
		}
		free(fmt);
		if (r)
			return r;
	}
	return 0;
}

/* Each function's entry and return probes in our group of
 * uprobe_events, and their tracepoint ids.  What is defined before a
 * failure is removed by uprobes_free. */
int define_probes(struct uprobes *u, char *err, size_t errlen)
{
	u->tp_id = calloc((size_t)u->sel.nfn * 2, sizeof(*u->tp_id));
	if (!u->tp_id) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tprobes_sweep(u->root, "uprobe_events", UPROBES_GROUP_PREFIX);
	tprobes_group(UPROBES_GROUP_PREFIX, u->group, sizeof(u->group));
	for (uint32_t i = 0; i < u->sel.nfn; i++) {
		for (int exit = 0; exit < 2; exit++) {
			char cmd[TPROBES_LINE_MAX], name[32], *fmt = NULL;
			uint32_t id = 0;
			int r;

			snprintf(name, sizeof(name), "%c%u", exit ? 'r' : 'f', i);
			snprintf(cmd, sizeof(cmd), "%c:%s/%s %s:0x%llx\n", exit ? 'r' : 'p', u->group, name, u->path,
			         (unsigned long long)u->sel.fn[i].offset);
			r = tprobes_write(u->root, "uprobe_events", cmd);
			if (r) {
				snprintf(err, errlen, "cannot define the %s probe of %s in %s: %s",
				         exit ? "return" : "entry", u->sel.fn[i].name, u->path, strerror(-r));
				return r;
			}
			r = tracefs_format(u->root, u->group, name, &fmt, &id, err, errlen);
			free(fmt);
			if (r)
				return r;
			u->tp_id[2 * i + (uint32_t)exit] = id;
		}
	}
	return 0;
}

int uprobes_patterns(struct uprobes_config *cfg, char *list, char *err, size_t errlen)
{
	char *p, *save = NULL;

	cfg->npatterns = 0;
	cfg->nlibs = 0;
	for (p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(p, ':');

		if (cfg->npatterns + cfg->nlibs == UPROBES_PATTERNS_MAX) {
			snprintf(err, errlen, "more than %u function patterns", UPROBES_PATTERNS_MAX);
			return -EINVAL;
		}
		if (!colon) {
			cfg->patterns[cfg->npatterns++] = p;
			continue;
		}
		*colon = '\0';
		if (!*p || !colon[1]) {
			snprintf(err, errlen, "'%.200s:%.200s': FILE:PATTERN needs both", p, colon + 1);
			return -EINVAL;
		}
		cfg->libs[cfg->nlibs].file = p;
		cfg->libs[cfg->nlibs++].glob = colon + 1;
	}
	if (!cfg->npatterns && !cfg->nlibs) {
		snprintf(err, errlen, "an empty list of function patterns");
		return -EINVAL;
	}
	return 0;
}
