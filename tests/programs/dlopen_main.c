/* Shared code: calls shared_fn in libshared.so (linked normally) four times,
 * then loads libplugin.so by path, calls plugin_run twice and unloads it
 * (unless --keep is given, which leaves it mapped until the process ends).
 * Usage: dlopen_main PATH/TO/libplugin.so [--keep] */
#include "plugin.h"
#include "prog.h"
#include "shared.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define SHARED_CALLS 4
#define PLUGIN_CALLS 2

int main(int argc, char **argv)
{
	int keep = argc > 2 && strcmp(argv[2], "--keep") == 0;
	plugin_run_fn run;
	void *handle;
	int sum = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: dlopen_main PATH/TO/libplugin.so [--keep]\n");
		return 2;
	}
	for (int i = 0; i < SHARED_CALLS; i++)
		sum += shared_fn(i);

	handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "dlopen_main: cannot load '%s': %s\n", argv[1], dlerror());
		return 1;
	}
	/* object-to-function pointer conversion, as POSIX allows for dlsym */
	*(void **)&run = dlsym(handle, PLUGIN_ENTRY);
	if (!run) {
		fprintf(stderr, "dlopen_main: no '%s' in '%s'\n", PLUGIN_ENTRY, argv[1]);
		dlclose(handle);
		return 1;
	}
	for (int i = 0; i < PLUGIN_CALLS; i++)
		sum += run(i);
	if (!keep)
		dlclose(handle);

	printf("dlopen_main: sum %d\n", sum);
	return 0;
}
