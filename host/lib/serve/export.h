/* GET /api/export of `layerprof serve`: the served trace in the formats
 * the command line writes, by the very same writers (`report --format
 * text|json|xml|html`, with --syscalls and --memory, `dump --chrome`,
 * `dump --folded`), and the raw trace as a tar archive.  Each export reads
 * the trace again (its own walk, never the server's model), so it can run
 * beside the page's other requests. */
#ifndef LP_SERVE_EXPORT_H
#define LP_SERVE_EXPORT_H

#include <stddef.h>
#include <stdio.h>

struct serveexport_format {
	const char *name;   /* the format= value */
	const char *type;   /* Content-Type */
	const char *suffix; /* of the file name offered: <trace name><suffix> */
};

/* The format called name, or NULL. */
const struct serveexport_format *serveexport_find(const char *name);
/* The formats, in the order the page shows them (NULL-terminated by name). */
extern const struct serveexport_format serveexport_formats[];

/* The file name offered for the export of dir in fmt: the directory's last
 * component (characters other than letters, digits, '.', '_' and '-'
 * replaced by '_') and the format's suffix.  Returns buf. */
const char *serveexport_filename(const char *dir, const struct serveexport_format *fmt, char *buf, size_t size);

/* Writes the export of the trace in dir to f (seekable or not).  Returns
 * 0, or -errno with a message in err: the trace reader's codes
 * (walk_open), -ENOMEM, -EIO (f or a file of the trace failed). */
int serveexport_write(const char *dir, const struct serveexport_format *fmt, FILE *f, char *err, size_t errlen);

#endif
