/* libshared.so: an instrumented shared library linked the ordinary way. */
#ifndef LP_TEST_SHARED_H
#define LP_TEST_SHARED_H

int shared_fn(int x);

#endif
