/* The power sources a machine shows in sysfs: RAPL domains through
 * powercap (energy counters in µJ), hwmon sensors (power in µW, energy in
 * µJ) and batteries (power_supply: power in µW, or current in µA times
 * voltage in µV).  The kernel's units are those of its ABI documents
 * (sysfs-class-powercap, hwmon sysfs-interface, sysfs-class-power). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/lib/energy/powerimpl.h"

/* Entries of one sysfs class directory looked at, at most. */
#define POWERSYS_ENTRIES_MAX 4096u
/* Sensors of one kind per hwmon chip, at most (powerK with K < this). */
#define POWERSYS_SENSORS_MAX 64u

static uint64_t powersys_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads the file at path (its leaf never through a link), at most
 * POWER_FILE_MAX - 1 bytes, without the trailing newline and blanks.
 * Returns its length or -errno. */
static int powersys_read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	return (int)n;
}

/* A file holding one decimal integer.  Returns 0, -EINVAL when it holds
 * something else, or -errno. */
static int powersys_read_i64(const char *path, int64_t *v)
{
	char buf[POWER_FILE_MAX], *end;
	int n = powersys_read_text(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (!n || *end || errno)
		return -EINVAL;
	return 0;
}

static bool powersys_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* dir/leaf into out.  false when it does not fit. */
static bool powersys_join(char *out, size_t size, const char *dir, const char *leaf)
{
	size_t d = strlen(dir), l = strlen(leaf);

	if (d + 1 + l >= size)
		return false;
	memmove(out, dir, d);
	out[d] = '/';
	memcpy(out + d + 1, leaf, l + 1);
	return true;
}

/* A class directory's entries whose names begin with prefix, sorted by
 * cmp (NULL: strcmp).  Returns how many (names malloc'd into *names, the
 * caller frees each and the array), or -errno (a missing directory: 0). */
static int powersys_entries(const char *dir, const char *prefix, char ***names, int (*cmp)(const void *, const void *))
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	int n = 0;

	*names = NULL;
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((e = readdir(d)) && n < (int)POWERSYS_ENTRIES_MAX) {
		char **nv;

		if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		nv = realloc(v, (size_t)(n + 1) * sizeof(*v));
		if (!nv || !(nv[n] = strdup(e->d_name))) {
			v = nv ? nv : v;
			for (int i = 0; i < n; i++)
				free(v[i]);
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), cmp);
	*names = v;
	return n;
}

static void powersys_free_entries(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Names with numbers sort by the numbers ("hwmon2" before "hwmon10",
 * "intel-rapl:0" before "intel-rapl:0:0" before "intel-rapl:1"). */
static int powersys_cmp_natural(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;

	while (*x && *y) {
		if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
			unsigned long long u = strtoull(x, (char **)&x, 10), v = strtoull(y, (char **)&y, 10);

			if (u != v)
				return u < v ? -1 : 1;
			continue;
		}
		if (*x != *y)
			return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
		x++;
		y++;
	}
	return *x ? 1 : *y ? -1 : 0;
}

/* Room for one more; false when out is full. */
static bool powersys_room(size_t n, size_t max)
{
	return n < max;
}

static bool powersys_readable(const char *path)
{
	char buf[POWER_FILE_MAX];

	return powersys_read_text(path, buf, sizeof(buf)) > 0;
}

/* The RAPL domains: intel-rapl:N (a package, "psys", ...) and their
 * subzones intel-rapl:N:M, named after their name files (AMD's drivers
 * use the same names).  The intel-rapl-mmio zones repeat the package's. */
static int powersys_list_rapl(const char *sysfs, struct power_desc *out, size_t max, size_t *n)
{
	char dir[PATH_MAX], zone[PATH_MAX], path[PATH_MAX], name[POWER_FILE_MAX], parent[POWER_FILE_MAX] = "";
	char **names;
	int count;

	snprintf(dir, sizeof(dir), "%s/class/powercap", sysfs);
	count = powersys_entries(dir, "intel-rapl:", &names, powersys_cmp_natural);
	if (count < 0)
		return count;
	for (int i = 0; i < count && powersys_room(*n, max); i++) {
		struct power_desc *d = &out[*n];
		bool sub = strchr(names[i] + strlen("intel-rapl:"), ':') != NULL;
		int64_t range;

		if (!powersys_join(zone, sizeof(zone), dir, names[i]) ||
		    !powersys_join(path, sizeof(path), zone, "energy_uj") || !powersys_exists(path))
			continue;
		if (!powersys_join(path, sizeof(path), zone, "name") ||
		    powersys_read_text(path, name, sizeof(name)) <= 0)
			snprintf(name, sizeof(name), "%s", names[i]);
		if (!sub)
			snprintf(parent, sizeof(parent), "%s", name);
		memset(d, 0, sizeof(*d));
		d->kind = POWER_RAPL;
		if (sub)
			snprintf(d->name, sizeof(d->name), "rapl:%.40s:%.40s", parent, name);
		else
			snprintf(d->name, sizeof(d->name), "rapl:%.80s", name);
		powersys_join(d->path, sizeof(d->path), zone, "energy_uj");
		d->energy = true;
		if (powersys_join(path, sizeof(path), zone, "max_energy_range_uj") &&
		    !powersys_read_i64(path, &range) && range > 0)
			d->range_uj = (uint64_t)range;
		d->readable = powersys_readable(d->path);
		(*n)++;
	}
	powersys_free_entries(names, count);
	return 0;
}

static bool powersys_name_taken(const struct power_desc *out, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(out[i].name, name))
			return true;
	return false;
}

/* One hwmon chip's sensors of one kind ("power": powerK_input, else
 * powerK_average, in µW; "energy": energyK_input, in µJ), by K. */
static void powersys_list_chip(const char *chipdir, const char *entry, const char *chip, bool energy,
                               struct power_desc *out, size_t max, size_t *n)
{
	const char *what = energy ? "energy" : "power";
	char leaf[64], path[PATH_MAX], name[POWER_NAME_MAX];

	for (unsigned k = 0; k < POWERSYS_SENSORS_MAX && powersys_room(*n, max); k++) {
		struct power_desc *d = &out[*n];

		snprintf(leaf, sizeof(leaf), "%s%u_input", what, k);
		if (!powersys_join(path, sizeof(path), chipdir, leaf))
			return;
		if (!powersys_exists(path) && !energy) {
			snprintf(leaf, sizeof(leaf), "%s%u_average", what, k);
			powersys_join(path, sizeof(path), chipdir, leaf);
		}
		if (!powersys_exists(path))
			continue;
		memset(d, 0, sizeof(*d));
		d->kind = POWER_HWMON;
		snprintf(name, sizeof(name), "hwmon:%.60s:%s%u", chip, what, k);
		/* two chips of one name: the second by its hwmon directory */
		if (powersys_name_taken(out, *n, name))
			snprintf(name, sizeof(name), "hwmon:%.60s:%s%u", entry, what, k);
		snprintf(d->name, sizeof(d->name), "%s", name);
		snprintf(d->path, sizeof(d->path), "%s", path);
		snprintf(leaf, sizeof(leaf), "%s%u_label", what, k);
		if (powersys_join(path, sizeof(path), chipdir, leaf) &&
		    powersys_read_text(path, d->label, sizeof(d->label)) < 0)
			d->label[0] = '\0';
		d->energy = energy;
		d->readable = powersys_readable(d->path);
		(*n)++;
	}
}

static int powersys_list_hwmon(const char *sysfs, struct power_desc *out, size_t max, size_t *n)
{
	char dir[PATH_MAX], chipdir[PATH_MAX], path[PATH_MAX], chip[POWER_FILE_MAX];
	char **names;
	int count;

	snprintf(dir, sizeof(dir), "%s/class/hwmon", sysfs);
	count = powersys_entries(dir, "hwmon", &names, powersys_cmp_natural);
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		if (!powersys_join(chipdir, sizeof(chipdir), dir, names[i]))
			continue;
		/* the chip's name, also where older drivers put it */
		if ((!powersys_join(path, sizeof(path), chipdir, "name") ||
		     powersys_read_text(path, chip, sizeof(chip)) <= 0) &&
		    (!powersys_join(path, sizeof(path), chipdir, "device/name") ||
		     powersys_read_text(path, chip, sizeof(chip)) <= 0))
			snprintf(chip, sizeof(chip), "%s", names[i]);
		powersys_list_chip(chipdir, names[i], chip, false, out, max, n);
		powersys_list_chip(chipdir, names[i], chip, true, out, max, n);
	}
	powersys_free_entries(names, count);
	return 0;
}

static int powersys_list_battery(const char *sysfs, struct power_desc *out, size_t max, size_t *n)
{
	char dir[PATH_MAX], supply[PATH_MAX], path[PATH_MAX], type[POWER_FILE_MAX];
	char **names;
	int count;

	snprintf(dir, sizeof(dir), "%s/class/power_supply", sysfs);
	count = powersys_entries(dir, "", &names, powersys_cmp_natural);
	if (count < 0)
		return count;
	for (int i = 0; i < count && powersys_room(*n, max); i++) {
		struct power_desc *d = &out[*n];
		char volts[PATH_MAX];

		if (!powersys_join(supply, sizeof(supply), dir, names[i]) ||
		    !powersys_join(path, sizeof(path), supply, "type") ||
		    powersys_read_text(path, type, sizeof(type)) <= 0 || strcmp(type, "Battery"))
			continue;
		memset(d, 0, sizeof(*d));
		if (!powersys_join(d->path, sizeof(d->path), supply, "power_now") || !powersys_exists(d->path)) {
			if (!powersys_join(d->path, sizeof(d->path), supply, "current_now") ||
			    !powersys_join(volts, sizeof(volts), supply, "voltage_now") || !powersys_exists(d->path) ||
			    !powersys_exists(volts))
				continue;
		}
		d->kind = POWER_BATTERY;
		snprintf(d->name, sizeof(d->name), "battery:%.80s", names[i]);
		d->readable = powersys_readable(d->path);
		(*n)++;
	}
	powersys_free_entries(names, count);
	return 0;
}

int power_list(const char *sysfs, struct power_desc *out, size_t max)
{
	size_t n = 0;
	int r;

	if (!sysfs)
		sysfs = power_sysfs_root();
	r = powersys_list_rapl(sysfs, out, max, &n);
	if (!r)
		r = powersys_list_hwmon(sysfs, out, max, &n);
	if (!r)
		r = powersys_list_battery(sysfs, out, max, &n);
	return r ? r : (int)n;
}

/* The file d names, as a source reads it. */
static void powersys_file(struct power_file *f, const struct power_desc *d)
{
	const char *leaf = strrchr(d->path, '/');

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", d->path);
	f->range_uj = d->range_uj;
	if (d->energy) {
		f->unit = POWER_UNIT_UJ;
	} else if (leaf && !strcmp(leaf, "/current_now")) {
		f->unit = POWER_UNIT_UA_UV;
		snprintf(f->path2, sizeof(f->path2), "%.*s/voltage_now", (int)(leaf - d->path), d->path);
	} else {
		f->unit = POWER_UNIT_UW;
	}
}

/* A RAPL package domain (the top of its tree, named package-N). */
static bool powersys_is_package(const struct power_desc *d)
{
	return d->kind == POWER_RAPL && !strncmp(d->name, "rapl:package-", 13) && !strchr(d->name + 5, ':');
}

/* Every readable package domain, summed into ps.  Returns how many. */
static uint32_t powersys_take_packages(struct power_source *ps, const struct power_desc *v, int n)
{
	for (int i = 0; i < n && ps->nfiles < POWER_FILES_MAX; i++)
		if (powersys_is_package(&v[i]) && v[i].readable)
			powersys_file(&ps->files[ps->nfiles++], &v[i]);
	ps->kind = POWER_RAPL;
	ps->energy = true;
	return ps->nfiles;
}

static void powersys_take(struct power_source *ps, const struct power_desc *d)
{
	ps->kind = d->kind;
	ps->energy = d->energy;
	snprintf(ps->name, sizeof(ps->name), "%s", d->name);
	powersys_file(&ps->files[0], d);
	ps->nfiles = 1;
}

/* Why a source may be unreadable, for its message. */
static const char *powersys_hint(const struct power_desc *d)
{
	return d->kind == POWER_RAPL ? " (RAPL's energy_uj is root's alone since Linux 5.10: run as root, or let "
	                               "this user read it)"
	                             : "";
}

/* "auto": the first readable of the packages, a hwmon sensor, a battery. */
static int powersys_open_auto(struct power_source *ps, const struct power_desc *v, int n, const char *sysfs, char *err,
                              size_t errlen)
{
	int unreadable = -1;

	if (powersys_take_packages(ps, v, n)) {
		snprintf(ps->name, sizeof(ps->name), "rapl");
		for (int i = 0; ps->nfiles == 1 && i < n; i++)
			if (!strcmp(v[i].path, ps->files[0].path))
				snprintf(ps->name, sizeof(ps->name), "%s", v[i].name);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (v[i].readable && (v[i].kind == POWER_HWMON || v[i].kind == POWER_BATTERY)) {
			powersys_take(ps, &v[i]);
			return 0;
		}
		if (!v[i].readable && unreadable < 0)
			unreadable = i;
	}
	if (unreadable >= 0) {
		snprintf(err, errlen, "no readable power source: %s ('%s') cannot be read by this user%s",
		         v[unreadable].name, v[unreadable].path, powersys_hint(&v[unreadable]));
		return -EACCES;
	}
	power_none_why(sysfs, err, errlen);
	return -ENOENT;
}

int powersys_open(struct power_source *ps, const char *spec, char *err, size_t errlen)
{
	const char *sysfs = power_sysfs_root();
	struct power_desc *v = calloc(POWER_SOURCES_MAX, sizeof(*v));
	size_t slen = strlen(spec);
	int n, found = -1, r = 0;

	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = power_list(sysfs, v, POWER_SOURCES_MAX);
	if (n < 0) {
		snprintf(err, errlen, "cannot list the power sources under '%s': %s", sysfs, strerror(-n));
		r = n;
		goto out;
	}
	if (!strcmp(spec, "auto")) {
		r = powersys_open_auto(ps, v, n, sysfs, err, errlen);
		goto out;
	}
	if (!strcmp(spec, "rapl")) {
		if (!powersys_take_packages(ps, v, n)) {
			snprintf(err, errlen, "no readable RAPL package domain under %s/class/powercap", sysfs);
			r = -ENOENT;
			goto out;
		}
		snprintf(ps->name, sizeof(ps->name), "rapl");
		goto out;
	}
	/* the name, else the first that continues it with ':' */
	for (int i = 0; i < n && found < 0; i++)
		if (!strcmp(v[i].name, spec))
			found = i;
	for (int i = 0; i < n && found < 0; i++)
		if (!strncmp(v[i].name, spec, slen) && v[i].name[slen] == ':')
			found = i;
	if (found < 0) {
		snprintf(err, errlen,
		         "no power source '%s' on this machine (`layerprof energy sources` lists them; an external "
		         "meter is cmd:COMMAND or csv:FILE)",
		         spec);
		r = -ENOENT;
		goto out;
	}
	if (!v[found].readable) {
		snprintf(err, errlen, "power source %s: cannot read '%s'%s", v[found].name, v[found].path,
		         powersys_hint(&v[found]));
		r = -EACCES;
		goto out;
	}
	powersys_take(ps, &v[found]);
out:
	free(v);
	return r;
}

/* One file's reading: µW (power), or µJ (energy). */
static int powersys_read_file(const struct power_file *f, double *value, uint64_t *uj, char *err, size_t errlen)
{
	int64_t a, b = 0;
	int r = powersys_read_i64(f->path, &a);

	if (!r && f->unit == POWER_UNIT_UA_UV)
		r = powersys_read_i64(f->path2, &b);
	if (r) {
		snprintf(err, errlen, "cannot read '%s': %s",
		         r == -EINVAL || f->unit != POWER_UNIT_UA_UV ? f->path : f->path2,
		         r == -EINVAL ? "not a number" : strerror(-r));
		return r;
	}
	switch (f->unit) {
	case POWER_UNIT_UJ:
		*uj = (uint64_t)(a < 0 ? 0 : a);
		break;
	case POWER_UNIT_UA_UV:
		/* a discharging battery's current may be negative */
		*value = (a < 0 ? -(double)a : (double)a) * (b < 0 ? -(double)b : (double)b) * 1e-6;
		break;
	default:
		*value = a < 0 ? -(double)a : (double)a;
		break;
	}
	return 0;
}

int powersys_read(struct power_source *ps, struct power_sample *s, char *err, size_t errlen)
{
	uint64_t uj[POWER_FILES_MAX], now, delta = 0;
	double uw = 0;
	bool first;

	for (uint32_t i = 0; i < ps->nfiles; i++) {
		double v = 0;
		int r = powersys_read_file(&ps->files[i], &v, &uj[i], err, errlen);

		if (r)
			return r;
		uw += v;
	}
	now = powersys_now_ns();
	s->ns = now;
	if (!ps->energy) {
		s->watts = uw * 1e-6;
		return 0;
	}
	first = !ps->have_last;
	for (uint32_t i = 0; i < ps->nfiles; i++) {
		struct power_file *f = &ps->files[i];

		if (!first && uj[i] >= f->last_uj)
			delta += uj[i] - f->last_uj;
		else if (!first && f->range_uj && f->last_uj <= f->range_uj)
			delta += f->range_uj - f->last_uj + uj[i]; /* wrapped at range */
		else if (!first)
			delta += uj[i]; /* wrapped at an unknown range: from 0 */
		f->last_uj = uj[i];
	}
	s->watts = first || now <= ps->last_ns ? 0 : (double)delta * 1e-6 / ((double)(now - ps->last_ns) * 1e-9);
	ps->have_last = true;
	ps->last_ns = now;
	return first ? 1 : 0;
}
