/* Runs the fuzz target over saved inputs without libFuzzer, so that CI
 * replays the corpus with any compiler: fuzz_decode_replay DIR|FILE... */
#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs are read whole; anything bigger is not a useful fuzz input. */
#define REPLAY_INPUT_MAX (64u << 20)

/* Set in sanitizer builds: called before a sanitizer ends the process. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static const char *current;

/* Names the input that crashed: a crash report alone does not. */
static void say_current(void)
{
	if (current) {
		static const char msg[] = "fuzz_decode_replay: crashed on input ";

		if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, current, strlen(current)) < 0 ||
		    write(2, "\n", 1) < 0)
			return;
	}
}

static void on_signal(int sig)
{
	say_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Returns 0, or -1 after a message when the file cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	struct stat st;
	int ret = -1;

	if (!f) {
		fprintf(stderr, "fuzz_decode_replay: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) || st.st_size < 0 || (uint64_t)st.st_size > REPLAY_INPUT_MAX) {
		fprintf(stderr, "fuzz_decode_replay: cannot read '%s': not a regular file under %u bytes\n", path,
		        REPLAY_INPUT_MAX);
		goto out;
	}
	/* exactly the file's size, so that a read past the input is caught */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fprintf(stderr, "fuzz_decode_replay: cannot read '%s'\n", path);
		goto out;
	}
	current = path;
	LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
	current = NULL;
	ret = 0;
out:
	free(buf);
	fclose(f);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays the regular files of a directory, in name order. */
static int replay_dir(const char *dir, unsigned long *count)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d) {
		fprintf(stderr, "fuzz_decode_replay: cannot open '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*nn));

			if (!nn) {
				ret = -1;
				goto out;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			ret = -1;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(path))
			ret = -1;
		else
			++*count;
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return ret;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
	unsigned long count = 0;
	int i, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fuzz_decode_replay DIR|FILE...\n");
		return 2;
	}
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(say_current);
	for (i = 0; i < (int)(sizeof(sigs) / sizeof(sigs[0])); i++)
		signal(sigs[i], on_signal);
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "fuzz_decode_replay: cannot open '%s': %s\n", argv[i], strerror(errno));
			failed = 1;
		} else if (S_ISDIR(st.st_mode)) {
			failed |= replay_dir(argv[i], &count) != 0;
		} else if (replay_file(argv[i])) {
			failed = 1;
		} else {
			count++;
		}
	}
	printf("%lu inputs replayed\n", count);
	/* an empty corpus proves nothing: treat it as an error */
	return failed || !count;
}
