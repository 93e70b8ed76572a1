/* Encoder of one stream's events into EVENTS chunk payloads: delta times,
 * varints and a per-chunk table of function addresses. */
#ifndef LP_ENCODER_H
#define LP_ENCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENCODER_HASH 8192u
#define ENCODER_REFS_MAX 4096u
/* Largest single event the encoder writes (a MAP or TASK with frames). */
#define ENCODER_EVENT_MAX 8192u
#define ENCODER_CAP (LP_CHUNK_TARGET_PAYLOAD + ENCODER_EVENT_MAX + 64)

struct encoder {
	uint32_t image, pid, tid;
	uint64_t last_ns;
	uint64_t events; /* in the current payload */
	size_t len;
	uint32_t nrefs;
	uint32_t gen; /* table entries with another generation are empty */
	uint64_t keys[ENCODER_HASH];
	uint32_t vals[ENCODER_HASH];
	uint32_t gens[ENCODER_HASH];
	uint8_t buf[ENCODER_CAP];
};

/* The caller owns the struct (about 180 KiB: allocate it). */
void encoder_init(struct encoder *e, uint32_t image, uint32_t pid, uint32_t tid);

void encoder_entry(struct encoder *e, uint64_t ns, uint64_t addr);
void encoder_exit(struct encoder *e, uint64_t ns, uint64_t addr);
void encoder_lost(struct encoder *e, uint64_t ns, uint64_t count);
void encoder_longjmp(struct encoder *e, uint64_t ns, uint64_t depth);
/* Strings over LP_STRING_MAX and frames over 256 are cut. */
void encoder_map(struct encoder *e, uint64_t ns, uint64_t base, uint64_t start, uint64_t end, uint64_t offset,
                 const uint8_t *build_id, size_t build_id_len, const char *path, size_t path_len);
void encoder_task(struct encoder *e, uint64_t ns, unsigned kind, uint64_t arg, const char *name, size_t name_len,
                  const uint64_t *frames, size_t nframes);

/* True when the payload should be flushed before more events are added. */
static inline bool encoder_full(const struct encoder *e)
{
	return e->len >= LP_CHUNK_TARGET_PAYLOAD || e->nrefs >= ENCODER_REFS_MAX;
}

/* Hands out the payload built so far (pointer into e, valid until the next
 * event) and starts a new one.  Returns its length; 0 when empty. */
size_t encoder_take(struct encoder *e, const uint8_t **payload);

#endif
