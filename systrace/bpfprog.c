/* eBPF programs and maps through bpf(2) (see bpfprog.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "systrace/bpfprog.h"

#define BPFPROG_LOG 65536u

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	long r = syscall(__NR_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : r;
}

static uint64_t ptr64(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

void bpfprog_init(struct bpfprog *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < BPFPROG_LABELS; i++)
		p->label[i] = -1;
}

void bpfprog_emit(struct bpfprog *p, struct bpf_insn insn)
{
	if (p->n == BPFPROG_MAX) {
		p->overflow = true;
		return;
	}
	p->insn[p->n++] = insn;
}

void bpfprog_jump(struct bpfprog *p, uint8_t op, uint8_t dst, int32_t imm, unsigned label)
{
	if (label >= BPFPROG_LABELS || p->nfix == BPFPROG_FIXES) {
		p->overflow = true;
		return;
	}
	p->fix[p->nfix].at = p->n;
	p->fix[p->nfix++].label = label;
	bpfprog_emit(p, BPF_I(BPF_JMP | op | BPF_K, op == BPF_JA ? 0 : dst, 0, 0, op == BPF_JA ? 0 : imm));
}

void bpfprog_label(struct bpfprog *p, unsigned label)
{
	if (label >= BPFPROG_LABELS) {
		p->overflow = true;
		return;
	}
	p->label[label] = (int32_t)p->n;
}

void bpfprog_map(struct bpfprog *p, uint8_t dst, int fd)
{
	bpfprog_emit(p, BPF_I(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, fd));
	bpfprog_emit(p, BPF_I(0, 0, 0, 0, 0));
}

int bpfprog_load(struct bpfprog *p, enum bpf_prog_type type, char *err, size_t errlen)
{
	union bpf_attr attr;
	char *log;
	long fd;

	for (uint32_t i = 0; i < p->nfix && !p->overflow; i++) {
		int32_t to = p->label[p->fix[i].label];

		if (to < 0)
			p->overflow = true;
		else
			p->insn[p->fix[i].at].off = (int16_t)(to - (int32_t)p->fix[i].at - 1);
	}
	if (p->overflow) {
		snprintf(err, errlen, "bpf program: too long or a jump to nowhere");
		return -EINVAL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = type;
	attr.insns = ptr64(p->insn);
	attr.insn_cnt = p->n;
	attr.license = ptr64("Dual BSD/GPL");
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd >= 0)
		return (int)fd;
	if (fd == -EPERM || fd == -EACCES || fd == -ENOSYS) {
		snprintf(err, errlen, "bpf: %s", strerror((int)-fd));
		return (int)fd;
	}
	/* load again for the verifier's reason: its last line */
	log = calloc(1, BPFPROG_LOG);
	if (!log) {
		snprintf(err, errlen, "bpf program refused: %s", strerror((int)-fd));
		return (int)fd;
	}
	attr.log_buf = ptr64(log);
	attr.log_size = BPFPROG_LOG;
	attr.log_level = 1;
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd < 0) {
		size_t len = strnlen(log, BPFPROG_LOG - 1);
		const char *last;

		while (len && log[len - 1] == '\n')
			log[--len] = '\0';
		last = strrchr(log, '\n');
		snprintf(err, errlen, "bpf program refused: %s%s%s", strerror((int)-fd), len ? ": " : "",
		         last ? last + 1 : log);
	}
	free(log);
	return (int)fd;
}

int bpf_map_new(enum bpf_map_type type, uint32_t key_size, uint32_t value_size, uint32_t max_entries, uint32_t flags)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = type;
	attr.key_size = key_size;
	attr.value_size = value_size;
	attr.max_entries = max_entries;
	attr.map_flags = flags;
	return (int)sys_bpf(BPF_MAP_CREATE, &attr);
}

int bpf_map_put(int fd, const void *key, const void *value, uint64_t flags)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)fd;
	attr.key = ptr64(key);
	attr.value = ptr64(value);
	attr.flags = flags;
	return (int)sys_bpf(BPF_MAP_UPDATE_ELEM, &attr);
}

int bpf_map_get(int fd, const void *key, void *value)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)fd;
	attr.key = ptr64(key);
	attr.value = ptr64(value);
	return (int)sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr);
}

int bpf_map_next(int fd, const void *key, void *next_key)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)fd;
	attr.key = ptr64(key);
	attr.next_key = ptr64(next_key);
	return (int)sys_bpf(BPF_MAP_GET_NEXT_KEY, &attr);
}

int bpf_raw_tracepoint(const char *name, int prog_fd)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.raw_tracepoint.name = ptr64(name);
	attr.raw_tracepoint.prog_fd = (uint32_t)prog_fd;
	return (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &attr);
}
