/* libplugin.so: code mapped only after main has started (dlopen) and unmapped
 * again before the end (dlclose), so symbols must come from the mapping
 * recorded while it was loaded. */
#include "plugin.h"
#include "prog.h"

#define HELPER_CALLS 3

COUNTED int plugin_helper(int x)
{
	return x * 3;
}

COUNTED int plugin_run(int round)
{
	int sum = 0;

	for (int i = 0; i < HELPER_CALLS; i++)
		sum += plugin_helper(round + i);
	return sum;
}
