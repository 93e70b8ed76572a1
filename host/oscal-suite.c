/* layerprof-oscal as a child of layerprof: found, run (no shell; a
 * runner's words before it) in a process group of its own with its stdout
 * in a pipe, reaped, its --list read; and layerprof oscal list. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/oscal.h"

extern char **environ;

/* layerprof-oscal --list's output, at most. */
#define SUITE_LIST_MAX (1u << 20)
/* Arguments of the suite, at most (with the runner's). */
#define SUITE_ARGS_MAX (OSCAL_RUNNER_WORDS + 16u)

static const char list_usage[] = "usage: layerprof oscal list [--calls PATTERNS] [--runner 'CMD ARGS']\n"
                                 "\n"
                                 "The suite's entries (layerprof-oscal --list): name, call, condition,\n"
                                 "group, parameter, unit, description; '-' for none.\n";

enum list_opt_code {
	LIST_OPT_CALLS = 0x2200,
	LIST_OPT_RUNNER,
};

int oscal_suite_init(struct oscal_suite *s, const char *runner)
{
	char *p, *save = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	if (runner && strlen(runner) >= sizeof(s->runner_buf)) {
		fprintf(stderr, "layerprof oscal: invalid --runner: longer than %zu bytes\n",
		        sizeof(s->runner_buf) - 1);
		return LP_EXIT_USAGE;
	}
	if (runner) {
		memcpy(s->runner_buf, runner, strlen(runner) + 1);
		for (p = strtok_r(s->runner_buf, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
			if (s->nrunner == OSCAL_RUNNER_WORDS) {
				fprintf(stderr, "layerprof oscal: invalid --runner: more than %u words\n",
				        OSCAL_RUNNER_WORDS);
				return LP_EXIT_USAGE;
			}
			s->runner[s->nrunner++] = p;
		}
		if (!s->nrunner) {
			fprintf(stderr, "layerprof oscal: invalid --runner '%s': no command\n", runner);
			return LP_EXIT_USAGE;
		}
	}
	r = oscal_suite_path(s->path);
	if (r) {
		fprintf(stderr, "layerprof oscal: cannot find layerprof-oscal (set %s to its path): %s\n",
		        OSCAL_SUITE_ENV, strerror(-r));
		return LP_EXIT_FAILURE;
	}
	return 0;
}

pid_t oscal_suite_spawn(const struct oscal_suite *s, char *const *args, int *fd)
{
	char *argv[SUITE_ARGS_MAX + 1];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t dfl;
	uint32_t n = 0;
	int p[2], e;
	pid_t pid;

	for (uint32_t i = 0; i < s->nrunner; i++)
		argv[n++] = s->runner[i];
	argv[n++] = (char *)s->path;
	for (; *args && n < SUITE_ARGS_MAX; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC)) {
		e = errno;
		fprintf(stderr, "layerprof oscal: cannot run '%s': %s\n", argv[0], strerror(e));
		return -e;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&at);
	/* its own group: a terminal's Ctrl-C reaches layerprof only, which
	 * stops the suite's whole group (its children too) itself */
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
	if (s->nrunner)
		e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	else
		e = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (e) {
		close(p[0]);
		fprintf(stderr, "layerprof oscal: cannot run '%s': %s\n", argv[0], strerror(e));
		return -e;
	}
	*fd = p[0];
	return pid;
}

int oscal_suite_reap(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int oscal_suite_status_bad(const struct oscal_suite *s, int status)
{
	const char *who = s->nrunner ? s->runner[0] : s->path;

	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && s->nrunner)
		fprintf(stderr, "layerprof oscal: '%s' could not run the suite '%s' (exit 127)\n", who, s->path);
	else if (WIFEXITED(status))
		fprintf(stderr, "layerprof oscal: '%s' failed (exit %d)\n", who, WEXITSTATUS(status));
	else
		fprintf(stderr, "layerprof oscal: '%s' was killed by signal %d (%s)\n", who, WTERMSIG(status),
		        strsignal(WTERMSIG(status)));
	return -EIO;
}

int oscal_suite_list(const struct oscal_suite *s, const char *calls, struct oscal_listed **out, uint32_t *nout)
{
	char *args[] = { (char *)"--list", NULL };
	char *buf = malloc(SUITE_LIST_MAX + 1);
	size_t len = 0;
	int fd = -1, e = 0;
	ssize_t k;
	pid_t pid;

	if (!buf) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return -ENOMEM;
	}
	pid = oscal_suite_spawn(s, args, &fd);
	if (pid < 0) {
		free(buf);
		return pid;
	}
	while ((k = read(fd, buf + len, SUITE_LIST_MAX - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			e = errno;
			break;
		}
		len += (size_t)k;
		if (len == SUITE_LIST_MAX) {
			kill(-pid, SIGKILL); /* a list this long is no list of the suite's */
			e = E2BIG;
			break;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (oscal_suite_status_bad(s, oscal_suite_reap(pid))) {
		free(buf);
		return -EIO;
	}
	if (e) {
		fprintf(stderr, "layerprof oscal: cannot read '%s --list': %s\n", s->path, strerror(e));
		free(buf);
		return -e;
	}
	e = oscal_listed_parse(buf, s->path, calls, out, nout);
	free(buf);
	return e;
}

int oscal_listed_parse(char *text, const char *who, const char *calls, struct oscal_listed **out, uint32_t *nout)
{
	struct oscal_listed *listed = NULL;
	uint32_t nlisted = 0;
	size_t cap = 0;
	char *p;

	for (p = text; *p;) {
		char *eol = strchr(p, '\n');
		char name[OSCAL_NAME_MAX], call[OSCAL_NAME_MAX];
		int off = 0;

		if (eol)
			*eol = '\0';
		if (sscanf(p, "%63s %63s %n", name, call, &off) == 2 && off > 0 &&
		    oscal_calls_match(calls, name, call)) {
			if (nlisted == cap) {
				size_t ncap = cap ? 2 * cap : 128;
				void *n = ncap > OSCAL_ENTRIES_MAX ? NULL : realloc(listed, ncap * sizeof(*listed));

				if (!n) {
					fprintf(stderr, "layerprof oscal: '%s --list': more than %u entries\n", who,
					        OSCAL_ENTRIES_MAX);
					free(listed);
					return -E2BIG;
				}
				listed = n;
				cap = ncap;
			}
			snprintf(listed[nlisted].name, OSCAL_NAME_MAX, "%s", name);
			snprintf(listed[nlisted].call, OSCAL_NAME_MAX, "%s", call);
			snprintf(listed[nlisted].rest, sizeof(listed[0].rest), "%s", p + off);
			nlisted++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	if (!nlisted) {
		if (calls)
			fprintf(stderr, "layerprof oscal: no entry matches '%s'\n", calls);
		else
			fprintf(stderr, "layerprof oscal: '%s --list' gave no entry\n", who);
		return -ENOENT;
	}
	*out = listed;
	*nout = nlisted;
	return 0;
}

int oscal_list_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "calls", required_argument, NULL, LIST_OPT_CALLS },
		{ "runner", required_argument, NULL, LIST_OPT_RUNNER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct oscal_suite *s = calloc(1, sizeof(*s));
	struct oscal_listed *listed = NULL;
	const char *calls = NULL, *runner = NULL;
	uint32_t nlisted = 0;
	int c, ret = LP_EXIT_USAGE;

	if (!s) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case LIST_OPT_CALLS:
			calls = optarg;
			break;
		case LIST_OPT_RUNNER:
			runner = optarg;
			break;
		case 'h':
			fputs(list_usage, stdout);
			ret = LP_EXIT_OK;
			goto out;
		default:
			fputs(list_usage, stderr);
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprof oscal: list takes no operand ('%s')\n", argv[optind]);
		goto out;
	}
	ret = oscal_suite_init(s, runner);
	if (ret)
		goto out;
	c = oscal_suite_list(s, calls, &listed, &nlisted);
	if (c) {
		ret = c == -ENOENT && calls ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
		goto out;
	}
	printf("%-28s %-24s %s\n", "name", "call", "cond group param unit description");
	for (uint32_t i = 0; i < nlisted; i++)
		printf("%-28s %-24s %s\n", listed[i].name, listed[i].call, listed[i].rest);
	ret = fflush(stdout) ? LP_EXIT_FAILURE : LP_EXIT_OK;
out:
	free(listed);
	free(s);
	return ret;
}
