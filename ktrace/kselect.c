/* Which tracepoints the tracer opens (see ktrace_impl.h): the selection by
 * group:event patterns, the in-kernel filters, and the formats the trace
 * carries so that the host can decode the records. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kernevent.h"
#include "ktrace/ksystem.h"
#include "ktrace/ktrace_impl.h"

/* ---- the selection -------------------------------------------------------- */

static struct kt_event *event_find(struct ktrace *kt, const char *group, const char *name)
{
	for (uint32_t i = 0; i < kt->nev; i++)
		if (!strcmp(kt->ev[i].group, group) && !strcmp(kt->ev[i].name, name))
			return &kt->ev[i];
	return NULL;
}

static int event_add(struct ktrace *kt, const char *root, const char *group, const char *name, bool forward, char *err,
                     size_t errlen)
{
	static const char *const pidnames[KT_PIDFIELDS] = { "next_pid", "pid", "child_pid" };
	static const char *const commnames[KT_PIDFIELDS] = { "next_comm", "comm", "child_comm" };
	struct kt_event *e = event_find(kt, group, name), *grown;
	struct tracefs_field f;
	int r;

	if (e) {
		e->forward = e->forward || forward;
		return 0;
	}
	if (kt->nev == KTRACE_EVENTS_MAX) {
		snprintf(err, errlen, "more than %u tracepoints selected", KTRACE_EVENTS_MAX);
		return -E2BIG;
	}
	if (strlen(group) >= KT_NAME_MAX || strlen(name) >= KT_NAME_MAX) {
		snprintf(err, errlen, "tracepoint name too long: %s:%s", group, name);
		return -ENAMETOOLONG;
	}
	grown = realloc(kt->ev, (kt->nev + 1) * sizeof(*kt->ev));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	kt->ev = grown;
	e = &kt->ev[kt->nev];
	memset(e, 0, sizeof(*e));
	snprintf(e->group, sizeof(e->group), "%s", group);
	snprintf(e->name, sizeof(e->name), "%s", name);
	r = tracefs_format(root, group, name, &e->fmt, &e->id, err, errlen);
	if (r)
		return r;
	kt->nev++;
	e->forward = forward;
	e->fork = !strcmp(group, "sched") && !strcmp(name, "sched_process_fork");
	e->exec = !strcmp(group, "sched") && !strcmp(name, "sched_process_exec");
	if (e->fork && (!tracefs_field(e->fmt, "parent_pid", &e->parent) ||
	                !tracefs_field(e->fmt, "child_pid", &e->child) || e->parent.size != 4 || e->child.size != 4)) {
		snprintf(err, errlen, "cannot parse the sched:sched_process_fork format");
		return -EINVAL;
	}
	for (int i = 0; i < KT_PIDFIELDS; i++)
		if (tracefs_field(e->fmt, pidnames[i], &f) && f.size == 4) {
			if (!tracefs_field(e->fmt, commnames[i], &e->commf[e->npidf]) ||
			    e->commf[e->npidf].size != KSYSTEM_COMM)
				e->commf[e->npidf].size = 0;
			e->pidf[e->npidf++] = f;
		}
	if ((!tracefs_field(e->fmt, "prev_comm", &e->runcomm) && !tracefs_field(e->fmt, "parent_comm", &e->runcomm)) ||
	    e->runcomm.size != KSYSTEM_COMM)
		e->runcomm.size = 0;
	e->block = tracefs_field(e->fmt, "dev", &e->dev) && tracefs_field(e->fmt, "sector", &e->sector) &&
	           e->dev.size == 4 && e->sector.size == 8;
	e->complete = e->block && strstr(name, "_complete") != NULL;
	e->timer = !strcmp(group, "timer") &&
	           ((tracefs_field(e->fmt, "hrtimer", &e->tptr) || tracefs_field(e->fmt, "timer", &e->tptr)) &&
	            (e->tptr.size == 4 || e->tptr.size == 8));
	e->timer_start = e->timer && strstr(name, "_start") != NULL;
	e->timer_cancel = e->timer && strstr(name, "_cancel") != NULL;
	e->packed = tracefs_field(e->fmt, "common_type", &f) && f.off == 0 && f.size == 2 &&
	            tracefs_field(e->fmt, "common_flags", &f) && f.off == 2 && f.size == 1 &&
	            tracefs_field(e->fmt, "common_preempt_count", &f) && f.off == 3 && f.size == 1 &&
	            tracefs_field(e->fmt, "common_pid", &f) && f.off == 4 && f.size == 4;
	return 0;
}

/* The record layout of the software page fault event (KT_SW_FAULT_SIZE
 * bytes): x86's exceptions:page_fault_user, whose name the readers know. */
static const char kt_sw_fault_format[] =
    "name: page_fault_user\n"
    "ID: %u\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\n"
    "print fmt: \"address=0x%%lx ip=0x%%lx error_code=0x%%lx\", REC->address, REC->ip, REC->error_code\n";

/* Where exceptions:page_fault_user is missing (every architecture but
 * x86), the faults come from perf's page-faults software event, under an
 * id no tracepoint of the selection has.  LAYERPROF_KTRACE_SW_FAULTS=1
 * takes this way on x86 too (for tests). */
static int add_sw_faults(struct ktrace *kt, char *err, size_t errlen)
{
	uint32_t id = 0xffff;
	struct kt_event *e, *grown;
	bool taken;

	do {
		taken = false;
		for (uint32_t i = 0; i < kt->nev; i++)
			taken = taken || kt->ev[i].id == id;
	} while (taken && --id);
	grown = realloc(kt->ev, (kt->nev + 1) * sizeof(*kt->ev));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	kt->ev = grown;
	e = &kt->ev[kt->nev];
	memset(e, 0, sizeof(*e));
	snprintf(e->group, sizeof(e->group), "exceptions");
	snprintf(e->name, sizeof(e->name), "page_fault_user");
	e->id = id;
	e->forward = true;
	e->sw_fault = true;
	e->packed = true;
	e->fmt = malloc(sizeof(kt_sw_fault_format) + 16);
	if (!e->fmt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(e->fmt, sizeof(kt_sw_fault_format) + 16, kt_sw_fault_format, id);
	kt->nev++;
	return 0;
}

static bool want_sw_faults(void)
{
	const char *v = getenv("LAYERPROF_KTRACE_SW_FAULTS");

	return v && !strcmp(v, "1");
}

static bool tracefs_root_has(const char *root, const char *group, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, group, name);
	return access(path, R_OK) == 0;
}

static bool is_dir_entry(const struct dirent *de)
{
	return de->d_name[0] != '.' && (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN);
}

/* Adds the events matching one "group:event" spec (globs allowed).
 * Returns how many matched, or -errno. */
static long select_spec(struct ktrace *kt, const char *root, const char *spec, char *err, size_t errlen)
{
	char group[KT_NAME_MAX * 2], path[512];
	const char *name = "*", *colon = strchr(spec, ':');
	struct dirent *gd;
	DIR *groups;
	long n = 0;

	if (colon) {
		snprintf(group, sizeof(group), "%.*s", (int)(colon - spec), spec);
		name = colon + 1;
	} else {
		snprintf(group, sizeof(group), "%s", spec);
	}
	if (!*group || !*name || strchr(name, ':') || strchr(group, '/') || strchr(name, '/')) {
		snprintf(err, errlen, "invalid tracepoint '%s': expected group:event, e.g. sched:sched_switch", spec);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/events", root);
	groups = opendir(path);
	if (!groups) {
		int r = -errno;

		snprintf(err, errlen, "cannot list '%s': %s", path, strerror(-r));
		return r;
	}
	while ((gd = readdir(groups))) {
		struct dirent *ed;
		DIR *events;

		if (!is_dir_entry(gd) || fnmatch(group, gd->d_name, 0))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, gd->d_name);
		events = opendir(path);
		if (!events)
			continue;
		while ((ed = readdir(events))) {
			char fmt[sizeof(path) + 2 * KT_NAME_MAX];
			int r;

			if (!is_dir_entry(ed) || fnmatch(name, ed->d_name, 0) || strlen(ed->d_name) >= KT_NAME_MAX)
				continue;
			snprintf(fmt, sizeof(fmt), "%s/%.63s/format", path, ed->d_name);
			if (access(fmt, R_OK))
				continue;
			r = event_add(kt, root, gd->d_name, ed->d_name, true, err, errlen);
			if (!r && (strpbrk(spec, "*?[") || !colon)) {
				struct kt_event *added = event_find(kt, gd->d_name, ed->d_name);

				if (added)
					added->glob = true;
			}
			if (r) {
				closedir(events);
				closedir(groups);
				return r;
			}
			n++;
		}
		closedir(events);
	}
	closedir(groups);
	return n;
}

static int select_events(struct ktrace *kt, const char *root, const char *events, char *warn, size_t warnlen, char *err,
                         size_t errlen)
{
	bool dflt = !events, sw_faults = false;
	char *list = strdup(events ? events : KTRACE_DEFAULT_EVENTS), *save = NULL;
	size_t wn = 0;
	int r = 0;

	if (!list) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (char *spec = strtok_r(list, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
		long n;

		while (*spec == ' ')
			spec++;
		if (!strcmp(spec, "exceptions:page_fault_user") &&
		    (want_sw_faults() || !tracefs_root_has(root, "exceptions", "page_fault_user"))) {
			sw_faults = true;
			continue;
		}
		n = select_spec(kt, root, spec, err, errlen);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (n == 0 && dflt) {
			int w = snprintf(warn + wn, warnlen - wn, "%s%s",
			                 wn ? ", " : "not on this kernel, left out: ", spec);

			if (w > 0 && (size_t)w < warnlen - wn)
				wn += (size_t)w;
		} else if (n == 0) {
			snprintf(err, errlen, "no tracepoint matches '%s' (see %s/available_events)", spec, root);
			r = -ENOENT;
			break;
		}
	}
	free(list);
	if (!r && sw_faults)
		r = add_sw_faults(kt, err, errlen);
	if (!r && !kt->nev) {
		snprintf(err, errlen, "no tracepoint selected");
		r = -ENOENT;
	}
	/* followed in any case: the children of traced threads */
	if (!r)
		r = event_add(kt, root, "sched", "sched_process_fork", false, err, errlen);
	if (!r)
		r = event_add(kt, root, "sched", "sched_process_exec", false, err, errlen);
	return r;
}

/* Gives each event its filter: "group:event=EXPR" names one, "EXPR" all
 * forwarded ones.  Returns 0, or -EINVAL for an unknown event. */
static int assign_filters(struct ktrace *kt, const struct ktrace_config *cfg, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < cfg->nfilters; i++) {
		const char *f = cfg->filters[i], *eq = strchr(f, '='), *colon = NULL;
		bool named = eq && eq[1] != '=';

		/* "group:event=" before the expression: names and one colon only */
		for (const char *c = f; named && c < eq; c++) {
			if (*c == ':' && !colon)
				colon = c;
			else if (!(*c == '_' || *c == '*' || *c == '?' || (*c >= '0' && *c <= '9') ||
			           (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
				named = false;
		}
		named = named && colon && colon > f && colon + 1 < eq;
		if (!named) {
			for (uint32_t e = 0; e < kt->nev; e++)
				if (kt->ev[e].forward)
					kt->ev[e].filter = f;
			continue;
		}
		{
			char group[KT_NAME_MAX], name[KT_NAME_MAX];
			struct kt_event *e;

			snprintf(group, sizeof(group), "%.*s", (int)(colon - f), f);
			snprintf(name, sizeof(name), "%.*s", (int)(eq - colon - 1), colon + 1);
			e = event_find(kt, group, name);
			if (!e || !e->forward) {
				snprintf(err, errlen,
				         "--kernel-filter '%s': %s:%s is not among the selected tracepoints", f, group,
				         name);
				return -EINVAL;
			}
			e->filter = eq + 1;
		}
	}
	return 0;
}

/* A filtered event that the tracer follows internally gets an unfiltered
 * twin that only the tracer reads. */
static int split_filtered_internal(struct ktrace *kt, char *err, size_t errlen)
{
	uint32_t n = kt->nev;

	for (uint32_t i = 0; i < n; i++) {
		struct kt_event *e = &kt->ev[i], *twin, *grown;

		if (!(e->fork || e->exec) || !e->filter || !e->forward)
			continue;
		grown = realloc(kt->ev, (kt->nev + 1) * sizeof(*kt->ev));
		if (!grown) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		kt->ev = grown;
		e = &kt->ev[i];
		twin = &kt->ev[kt->nev++];
		*twin = *e;
		twin->fmt = strdup(e->fmt);
		twin->forward = false;
		twin->filter = NULL;
		e->fork = e->exec = false;
		if (!twin->fmt) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/* ---- the formats for the trace -------------------------------------------- */

/* The formats in chunks of at most KT_FORMAT_CHUNK bytes (a selection of
 * every tracepoint outgrows one chunk), each "varint count, entries". */
static int build_formats(struct ktrace *kt, char *err, size_t errlen)
{
	size_t sel = 1, start = 0, n = 0;
	uint32_t count = 0;
	uint8_t *buf;

	for (uint32_t i = 0; i < kt->nev; i++)
		if (kt->ev[i].forward) {
			size_t need =
			    4 * VARINT_MAX + strlen(kt->ev[i].group) + strlen(kt->ev[i].name) + strlen(kt->ev[i].fmt);

			n += need + VARINT_MAX;
			sel += strlen(kt->ev[i].group) + strlen(kt->ev[i].name) + 2;
		}
	buf = malloc(n + VARINT_MAX);
	kt->selection = malloc(sel);
	kt->chunk_end = calloc((size_t)kt->nev + 1, sizeof(*kt->chunk_end));
	if (!buf || !kt->selection || !kt->chunk_end) {
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	kt->formats = buf;
	kt->selection[0] = '\0';
	n = 0;
	for (uint32_t i = 0; i <= kt->nev; i++) {
		const struct kt_event *e = i < kt->nev ? &kt->ev[i] : NULL;
		uint8_t entry[4 * VARINT_MAX];
		size_t elen = 0, size = 0;

		if (e && !e->forward)
			continue;
		if (e) {
			const char *parts[3] = { e->group, e->name, e->fmt };

			elen = varint_put(entry, e->id);
			for (int p = 0; p < 3; p++)
				size += strlen(parts[p]) + VARINT_MAX;
		}
		/* close the chunk being built: at the end, or when full */
		if (count && (!e || n - start + elen + size > KT_FORMAT_CHUNK)) {
			uint8_t head[VARINT_MAX];
			size_t hl = varint_put(head, count);

			memmove(buf + start + hl, buf + start + VARINT_MAX, n - start - VARINT_MAX);
			memcpy(buf + start, head, hl);
			n -= VARINT_MAX - hl;
			kt->chunk_end[kt->nchunks++] = n;
			start = n;
			count = 0;
		}
		if (!e)
			break;
		if (!count)
			n += VARINT_MAX; /* room for the count */
		memcpy(buf + n, entry, elen);
		n += elen;
		{
			const char *parts[3] = { e->group, e->name, e->fmt };

			for (int p = 0; p < 3; p++) {
				size_t len = strlen(parts[p]);

				n += varint_put(buf + n, len);
				memcpy(buf + n, parts[p], len);
				n += len;
			}
		}
		count++;
		if (kt->selection[0])
			strcat(kt->selection, ",");
		strcat(kt->selection, e->group);
		strcat(kt->selection, ":");
		strcat(kt->selection, e->name);
	}
	return 0;
}

int kselect(struct ktrace *kt, const struct ktrace_config *cfg, const char *root, char *warn, size_t warnlen, char *err,
            size_t errlen)
{
	int r = select_events(kt, root, cfg->events, warn, warnlen, err, errlen);

	if (!r && kt->kgroup[0]) {
		long n = select_spec(kt, root, kt->kgroup, err, errlen);

		r = n < 0 ? (int)n : 0;
	}
	if (!r)
		r = assign_filters(kt, cfg, err, errlen);
	if (!r)
		r = split_filtered_internal(kt, err, errlen);
	if (!r)
		r = build_formats(kt, err, errlen);
	return r;
}
