/* Two objects at the same addresses in turn: loads libreuse_a.so, calls
 * reuse_a_run twice, unloads it, loads libreuse_b.so (the same layout, so
 * that it lands where the first was) and calls reuse_b_run three times.
 * Prints "dlreuse: same address" when reuse_b_run is at reuse_a_run's old
 * address, else "dlreuse: moved".
 * Usage: dlreuse DIR (the directory of libreuse_a.so and libreuse_b.so) */
#include "prog.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define A_CALLS 2
#define B_CALLS 3

typedef int (*run_fn)(int);

/* Loads DIR/lib<name>.so and finds <name>_run in it. */
static void *load(const char *dir, const char *name, run_fn *run)
{
	char path[4096], sym[64];
	void *handle;

	snprintf(path, sizeof(path), "%s/lib%s.so", dir, name);
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "dlreuse: cannot load '%s': %s\n", path, dlerror());
		exit(1);
	}
	snprintf(sym, sizeof(sym), "%s_run", name);
	/* object-to-function pointer conversion, as POSIX allows for dlsym */
	*(void **)run = dlsym(handle, sym);
	if (!*run) {
		fprintf(stderr, "dlreuse: no '%s' in '%s'\n", sym, path);
		exit(1);
	}
	return handle;
}

int main(int argc, char **argv)
{
	run_fn run_a, run_b;
	void *handle, *at_a;
	int sum = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: dlreuse DIR\n");
		return 2;
	}
	handle = load(argv[1], "reuse_a", &run_a);
	for (int i = 0; i < A_CALLS; i++)
		sum += run_a(i);
	at_a = *(void **)&run_a;
	dlclose(handle);

	handle = load(argv[1], "reuse_b", &run_b);
	for (int i = 0; i < B_CALLS; i++)
		sum += run_b(i);
	printf("dlreuse: %s\n", *(void **)&run_b == at_a ? "same address" : "moved");
	printf("dlreuse: sum %d\n", sum);
	dlclose(handle);
	return 0;
}
