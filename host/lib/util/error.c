/* The error messages and warnings of host/lib (error.h). */
#include "host/lib/util/error.h"

#include <stdarg.h>
#include <stdio.h>

int error_set(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return code;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

void error_warn(const struct lp_warner *w, const char *fmt, ...)
{
	char msg[LP_ERROR_MAX];
	va_list ap;

	if (!w || !w->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	w->fn(w->ctx, msg);
}
