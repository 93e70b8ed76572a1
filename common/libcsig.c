/* The C library functions --libcalls decodes (see libcsig.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layerprof/format.h"
#include "common/libcsig.h"

/* open's flags on the targets (the generic values: x86-64, ARM) */
#define LIBCSIG_O_CREAT 0100u
#define LIBCSIG_O_TMPFILE 020000000u

/* Sorted by name (libcsig_find searches it). */
static const struct libcsig sigs[] = {
	{ "abort", "", 'v' },
	{ "accept", "ipp", 'i' },
	{ "access", "si", 'i' },
	{ "atoi", "S", 'i' },
	{ "atol", "S", 'l' },
	{ "bind", "ipu", 'i' },
	{ "calloc", "uu", 'p' },
	{ "chdir", "s", 'i' },
	{ "clock_gettime", "ip", 'i' },
	{ "close", "i", 'i' },
	{ "connect", "ipu", 'i' },
	{ "creat", "so", 'i' },
	{ "dup", "i", 'i' },
	{ "dup2", "ii", 'i' },
	{ "execv", "sp", 'i' },
	{ "execve", "spp", 'i' },
	{ "execvp", "sp", 'i' },
	{ "exit", "i", 'v' },
	{ "fclose", "p", 'i' },
	{ "fdopen", "iS", 'p' },
	{ "fflush", "p", 'i' },
	{ "fgets", "pip", 'p' },
	{ "fopen", "sS", 'p' },
	{ "fork", "", 'i' },
	{ "fprintf", "pS", 'i' },
	{ "fputc", "cp", 'i' },
	{ "fputs", "Sp", 'i' },
	{ "fread", "puup", 'u' },
	{ "free", "p", 'v' },
	{ "fsync", "i", 'i' },
	{ "fwrite", "puup", 'u' },
	{ "getenv", "S", 'p' },
	{ "getpid", "", 'i' },
	{ "getppid", "", 'i' },
	{ "gettimeofday", "pp", 'i' },
	{ "kill", "ii", 'i' },
	{ "listen", "ii", 'i' },
	{ "lseek", "ili", 'l' },
	{ "malloc", "u", 'p' },
	{ "memcmp", "ppu", 'i' },
	{ "memcpy", "ppu", 'p' },
	{ "memmove", "ppu", 'p' },
	{ "memset", "pcu", 'p' },
	{ "mkdir", "so", 'i' },
	{ "mmap", "puiiil", 'p' },
	{ "munmap", "pu", 'i' },
	{ "nanosleep", "pp", 'i' },
	{ "open", "sxO", 'i' },
	{ "openat", "isxO", 'i' },
	{ "pipe", "p", 'i' },
	{ "poll", "pui", 'i' },
	{ "pread", "ipul", 'l' },
	{ "printf", "S", 'i' },
	{ "pthread_cond_broadcast", "p", 'i' },
	{ "pthread_cond_signal", "p", 'i' },
	{ "pthread_cond_wait", "pp", 'i' },
	{ "pthread_create", "pppp", 'i' },
	{ "pthread_join", "up", 'i' },
	{ "pthread_mutex_lock", "p", 'i' },
	{ "pthread_mutex_unlock", "p", 'i' },
	{ "putchar", "c", 'i' },
	{ "puts", "S", 'i' },
	{ "pwrite", "ibul", 'l' },
	{ "raise", "i", 'i' },
	{ "read", "ipu", 'l' },
	{ "realloc", "pu", 'p' },
	{ "recv", "ipui", 'l' },
	{ "rename", "ss", 'i' },
	{ "rmdir", "s", 'i' },
	{ "send", "ibui", 'l' },
	{ "sleep", "u", 'u' },
	{ "snprintf", "puS", 'i' },
	{ "socket", "iii", 'i' },
	{ "sprintf", "pS", 'i' },
	{ "strchr", "Sc", 'p' },
	{ "strcmp", "SS", 'i' },
	{ "strcpy", "pS", 'p' },
	{ "strdup", "S", 'p' },
	{ "strlen", "S", 'u' },
	{ "strncmp", "ssu", 'i' },
	{ "strncpy", "psu", 'p' },
	{ "strrchr", "Sc", 'p' },
	{ "strstr", "SS", 'p' },
	{ "strtol", "Spi", 'l' },
	{ "system", "s", 'i' },
	{ "time", "p", 'l' },
	{ "unlink", "s", 'i' },
	{ "usleep", "u", 'i' },
	{ "waitpid", "ipi", 'i' },
	{ "write", "ibu", 'l' },
};

const struct libcsig *libcsig_all(size_t *n)
{
	*n = sizeof(sigs) / sizeof(sigs[0]);
	return sigs;
}

const struct libcsig *libcsig_find(const char *name)
{
	size_t lo = 0, hi = sizeof(sigs) / sizeof(sigs[0]);
	size_t len = strlen(name);

	if (len > 4 && !strcmp(name + len - 4, "@plt"))
		len -= 4;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strncmp(sigs[mid].name, name, len);

		if (!c && sigs[mid].name[len])
			c = 1;
		if (!c)
			return &sigs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint32_t libcsig_plan(const struct libcsig *sig)
{
	uint32_t n = (uint32_t)strlen(sig->args), a;

	if (n > LP_ARGS_MAX)
		n = LP_ARGS_MAX;
	a = LP_PLAN_ARGS(n, sig->ret != 'v');
	for (uint32_t k = 0; k < n; k++) {
		if (sig->args[k] == 's')
			a |= LP_PLAN_ARG(k, LP_ARG_STR);
		else if (sig->args[k] == 'S')
			a |= LP_PLAN_ARG(k, LP_ARG_CSTR);
		else if (sig->args[k] == 'b' && k + 1 < n)
			a |= LP_PLAN_ARG(k, LP_ARG_BUF);
	}
	return a;
}

/* A bounded writer into buf. */
struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len + 1 >= o->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->size ? o->len + (size_t)n : o->size - 1;
}

static void put_quoted(struct out *o, const struct libcsig_mem *m)
{
	put(o, "\"");
	for (uint32_t i = 0; i < m->len; i++) {
		uint8_t c = m->bytes[i];

		if (c == '\n')
			put(o, "\\n");
		else if (c == '\t')
			put(o, "\\t");
		else if (c == '\r')
			put(o, "\\r");
		else if (c == '"' || c == '\\')
			put(o, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			put(o, "%c", c);
		else
			put(o, "\\%03o", c);
	}
	put(o, "\"%s", m->cut ? "..." : "");
}

static uint64_t word(uint64_t v, unsigned ptr_bits)
{
	return ptr_bits == 32 ? (uint32_t)v : v;
}

static int64_t sword(uint64_t v, unsigned ptr_bits)
{
	return ptr_bits == 32 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

/* One value of type t. */
static void put_value(struct out *o, char t, uint64_t v, unsigned ptr_bits)
{
	switch (t) {
	case 'i':
		put(o, "%d", (int)(int32_t)(uint32_t)v);
		break;
	case 'u':
		put(o, "%" PRIu64, word(v, ptr_bits));
		break;
	case 'l':
		put(o, "%" PRId64, sword(v, ptr_bits));
		break;
	case 'x':
		put(o, "0x%" PRIx32, (uint32_t)v);
		break;
	case 'o':
	case 'O':
		put(o, "0%" PRIo32, (uint32_t)v);
		break;
	case 'c':
		if ((uint32_t)v >= 0x20 && (uint32_t)v < 0x7f && (uint32_t)v != '\'' && (uint32_t)v != '\\')
			put(o, "'%c'", (char)v);
		else
			put(o, "%d", (int)(int32_t)(uint32_t)v);
		break;
	default: /* p, and s, S or b without their memory */
		if (word(v, ptr_bits))
			put(o, "0x%" PRIx64, word(v, ptr_bits));
		else
			put(o, "NULL");
		break;
	}
}

char *libcsig_format_args(const struct libcsig *sig, const struct libcsig_args *a, unsigned ptr_bits, char *buf,
                          size_t size)
{
	struct out o = { buf, size, 0 };
	size_t n = strlen(sig->args);

	if (size)
		buf[0] = '\0';
	for (uint32_t k = 0; k < a->n && k < n; k++) {
		const struct libcsig_mem *m = NULL;

		/* open's mode is an argument only with O_CREAT or O_TMPFILE */
		if (sig->args[k] == 'O' && !(k && (a->words[k - 1] & (LIBCSIG_O_CREAT | LIBCSIG_O_TMPFILE))))
			continue;
		if (k)
			put(&o, ", ");
		for (uint32_t i = 0; i < a->nmem; i++)
			if (a->mem[i].index == k)
				m = &a->mem[i];
		if (m && strchr("sSb", sig->args[k]) && word(a->words[k], ptr_bits))
			put_quoted(&o, m);
		else
			put_value(&o, sig->args[k], a->words[k], ptr_bits);
	}
	return buf;
}

char *libcsig_format_ret(const struct libcsig *sig, uint64_t v, unsigned ptr_bits, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	if (sig->ret != 'v')
		put_value(&o, sig->ret, v, ptr_bits);
	return buf;
}
