/* Fixture for test_symbolizer: a shared library the test dlopens and then
 * symbolizes through its real load address. */

#include "fixture_data.h"

/* A global array and a static lock, looked up at the library's real load
 * address. */
int fixture_lib_table[8] = { 7 };
__attribute__((used)) static pthread_mutex_t fixture_lib_lock = PTHREAD_MUTEX_INITIALIZER;

int fixture_lib_func(int x);
int fixture_lib_other(int x);

int fixture_lib_func(int x) {
	return x * 7;
}

int fixture_lib_other(int x) {
	return fixture_lib_func(x) - 1;
}
