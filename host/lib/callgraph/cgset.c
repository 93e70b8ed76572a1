/* A program and the shared libraries it needs, found as the dynamic
 * linker would find them, and each import linked to its definition. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/callgraph/cgraph_impl.h"

/* Most objects in one set, and most libraries listed as missing. */
#define CG_SET_MAX 4096u

int cg_set_init(struct cg_set *s, const char *sysroot)
{
	memset(s, 0, sizeof(*s));
	if (sysroot && *sysroot) {
		size_t len = strlen(sysroot);

		while (len > 1 && sysroot[len - 1] == '/')
			len--;
		s->sysroot = strndup(sysroot, len);
		if (!s->sysroot)
			return -ENOMEM;
	}
	return 0;
}

void cg_set_release(struct cg_set *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		cg_object_free(s->objs[i]);
	for (i = 0; i < s->nmissing; i++)
		free(s->missing[i]);
	free(s->objs);
	free(s->missing);
	free(s->sysroot);
	memset(s, 0, sizeof(*s));
}

static int set_push(struct cg_set *s, struct cg_object *o)
{
	if (s->n >= CG_SET_MAX)
		return -E2BIG;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		struct cg_object **p = realloc(s->objs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->objs = p;
		s->cap = cap;
	}
	s->objs[s->n++] = o;
	return 0;
}

int cg_set_add(struct cg_set *s, const char *path, uint32_t *index, char *err, size_t errlen)
{
	struct cg_object *o;
	int rc;

	for (uint32_t i = 0; i < s->n; i++)
		if (!strcmp(s->objs[i]->path, path)) {
			if (index)
				*index = i;
			return 0;
		}
	rc = cg_object_open(path, &o, err, errlen);
	if (rc)
		return rc;
	rc = set_push(s, o);
	if (rc) {
		cg_object_free(o);
		snprintf(err, errlen, rc == -E2BIG ? "more than %u objects" : "out of memory", CG_SET_MAX);
		return rc;
	}
	if (index)
		*index = s->n - 1;
	return 0;
}

static int add_missing(struct cg_set *s, const char *name, const char *why)
{
	char line[PATH_MAX + 128];
	char **p;

	if (s->nmissing >= CG_SET_MAX)
		return 0;
	p = realloc(s->missing, (s->nmissing + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->missing = p;
	snprintf(line, sizeof(line), "%s: %s", name, why);
	if (!(s->missing[s->nmissing] = strdup(line)))
		return -ENOMEM;
	s->nmissing++;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Whether the set holds a library by this DT_NEEDED name already. */
static bool set_has(const struct cg_set *s, const char *name)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct cg_object *o = s->objs[i];

		if ((o->soname && !strcmp(o->soname, name)) || !strcmp(base_name(o->path), name))
			return true;
	}
	return false;
}

static const char *triplet(const struct cg_object *o)
{
	switch (o->machine) {
	case CG_MACHINE_X86_64:
		return "x86_64-linux-gnu";
	case CG_MACHINE_AARCH64:
		return "aarch64-linux-gnu";
	default:
		return "arm-linux-gnueabihf";
	}
}

/* Tries dir/name: the library when it is an object of from's machine and
 * word size.  1 when added, 0 when not there or not fitting. */
static int try_dir(struct cg_set *s, const struct cg_object *from, const char *dir, size_t dirlen, const char *name,
                   bool under_sysroot)
{
	char path[PATH_MAX], err[256];
	struct cg_object *o;
	int n;

	if (!dirlen)
		return 0;
	n = snprintf(path, sizeof(path), "%s%.*s/%s", under_sysroot && s->sysroot ? s->sysroot : "", (int)dirlen, dir,
	             name);
	if (n < 0 || (size_t)n >= sizeof(path) || access(path, R_OK) != 0)
		return 0;
	if (cg_object_open(path, &o, err, sizeof(err)))
		return 0;
	if (o->machine != from->machine || o->is64 != from->is64) {
		cg_object_free(o);
		return 0;
	}
	if (set_push(s, o)) {
		cg_object_free(o);
		return -ENOMEM;
	}
	return 1;
}

/* Tries each directory of a colon-separated list, $ORIGIN as the
 * directory of from. */
static int try_list(struct cg_set *s, const struct cg_object *from, const char *list, const char *name,
                    bool under_sysroot)
{
	char dir[PATH_MAX];
	const char *p = list;
	int rc;

	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len >= 7 && !strncmp(p, "$ORIGIN", 7)) {
			const char *slash = strrchr(from->path, '/');
			int n = snprintf(dir, sizeof(dir), "%.*s%.*s", slash ? (int)(slash - from->path) : 1,
			                 slash ? from->path : ".", (int)(len - 7), p + 7);

			/* the object's own path already holds the sysroot */
			if (n > 0 && (size_t)n < sizeof(dir) && (rc = try_dir(s, from, dir, (size_t)n, name, false)))
				return rc;
		} else if ((rc = try_dir(s, from, p, len, name, under_sysroot))) {
			return rc;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

static int find_library(struct cg_set *s, const struct cg_object *from, const char *runpath, const char *name)
{
	char dirs[1024];
	const char *t = triplet(from);
	int rc;

	if (strchr(name, '/'))
		return try_dir(s, from, ".", 1, name, true) > 0 ? 1 : 0;
	if (runpath && (rc = try_list(s, from, runpath, name, true)))
		return rc;
	if (!s->sysroot && (rc = try_list(s, from, getenv("LD_LIBRARY_PATH"), name, false)))
		return rc;
	snprintf(dirs, sizeof(dirs), "/lib/%s:/usr/lib/%s:/lib:/usr/lib%s", t, t,
	         from->is64 ? ":/lib64:/usr/lib64" : "");
	if ((rc = try_list(s, from, dirs, name, true)))
		return rc;
	if (!s->sysroot) {
		/* a cross toolchain's libraries (gcc-aarch64-linux-gnu, ...) */
		snprintf(dirs, sizeof(dirs), "/usr/%s/lib", t);
		if ((rc = try_list(s, from, dirs, name, false)))
			return rc;
	}
	return 0;
}

int cg_set_add_needed(struct cg_set *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct cg_object *o = s->objs[i];

		for (uint32_t k = 0; k < o->nneeded; k++) {
			const char *name = o->needed[k];
			int rc;

			if (!name || set_has(s, name))
				continue;
			rc = find_library(s, o, cg_object_runpath(o), name);
			/* s->objs may have moved: o is looked up again */
			o = s->objs[i];
			if (rc < 0)
				return rc;
			if (!rc && (rc = add_missing(s, name, "not found")))
				return rc;
		}
	}
	return 0;
}

void cg_set_link(struct cg_set *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		struct cg_object *o = s->objs[i];

		for (uint32_t f = 0; f < o->nfuncs; f++) {
			struct cg_func *fn = &o->funcs[f];

			if (fn->kind != CG_FUNC_IMPORT)
				continue;
			fn->link_obj = fn->link_func = CG_NONE;
			for (uint32_t j = 0; j < s->n; j++) {
				uint32_t k = cg_object_export(s->objs[j], fn->import);

				if (k != CG_NONE) {
					fn->link_obj = j;
					fn->link_func = k;
					break;
				}
			}
		}
	}
}
