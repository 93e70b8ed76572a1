/* Looking up the page's compiled-in files (see serve/assets.h). */
#include <string.h>

#include "host/lib/serve/assets.h"

const struct serve_asset *serve_asset_find(const char *path)
{
	size_t i;

	if (!strcmp(path, "/"))
		path = "/index.html";
	for (i = 0; i < serve_nassets; i++)
		if (!strcmp(serve_assets[i].path, path))
			return &serve_assets[i];
	return NULL;
}
