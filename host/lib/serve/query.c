/* The query string and error answers of the web UI's server (see
 * serve/query.h). */
#include <errno.h>
#include <stdlib.h>

#include "host/lib/serve/query.h"
#include "host/lib/util/json.h"

int servequery_error(FILE *out, int status, const char *msg)
{
	fputs("{\"error\":", out);
	json_write_string(out, msg);
	fputs("}\n", out);
	return status;
}

bool servequery_u64(const struct serve_query *q, const char *key, uint64_t def, uint64_t max, uint64_t *out)
{
	const char *s = q->get(q->ctx, key);
	char *end;

	*out = def;
	if (!s || !*s)
		return true;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end && *out <= max;
}
