/* The web page's files, compiled into the binary from ui/ at build time
 * (cmake/embed_assets.cmake), so that serve needs no file at run time. */
#ifndef LP_SERVE_ASSETS_H
#define LP_SERVE_ASSETS_H

#include <stddef.h>

struct serve_asset {
	const char *path; /* "/index.html" */
	const char *type; /* Content-Type */
	const unsigned char *data;
	size_t len;
};

extern const struct serve_asset serve_assets[];
extern const size_t serve_nassets;

/* The asset at path ("/" is "/index.html"), or NULL. */
const struct serve_asset *serve_asset_find(const char *path);

#endif
