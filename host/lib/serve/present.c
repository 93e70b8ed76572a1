/* An optional layer named in the trace's META (see serve/present.h). */
#include <stdio.h>
#include <string.h>

#include "host/lib/serve/present.h"
#include "host/lib/trace/reader.h"
#include "layerprof/format.h"

#define KEY_MAX 64u

bool servepresent_meta(const char *dir, const char *key)
{
	const uint8_t *payload;
	struct chunk_info ci;
	struct reader r;
	char err[256], line[KEY_MAX + 2];
	size_t n;
	bool yes = false;

	/* the first line is layerprof=...: a key is after a newline */
	n = (size_t)snprintf(line, sizeof(line), "\n%s=", key);
	if (n >= sizeof(line) || reader_open(&r, dir, err, sizeof(err)))
		return false;
	while (!yes && reader_next(&r, &ci, &payload) > 0 && ci.type != LP_CHUNK_EVENTS) {
		const uint8_t *at;

		if (ci.type != LP_CHUNK_META)
			continue;
		at = memmem(payload, ci.len, line, n);
		yes = at && at + n < payload + ci.len && at[n] != '\n';
	}
	reader_release(&r);
	return yes;
}
