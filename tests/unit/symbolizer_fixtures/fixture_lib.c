/* Fixture for test_symbolizer: a shared library the test dlopens and then
 * symbolizes through its real load address. */

int fixture_lib_func(int x);
int fixture_lib_other(int x);

int fixture_lib_func(int x) {
	return x * 7;
}

int fixture_lib_other(int x) {
	return fixture_lib_func(x) - 1;
}
