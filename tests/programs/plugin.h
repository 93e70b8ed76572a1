/* libplugin.so: an instrumented shared object that dlopen_main loads by path */
#ifndef LP_TEST_PLUGIN_H
#define LP_TEST_PLUGIN_H

#define PLUGIN_ENTRY "plugin_run"

typedef int (*plugin_run_fn)(int round);

int plugin_run(int round);

#endif
