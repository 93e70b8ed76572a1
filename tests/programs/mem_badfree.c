/* Memory tracer: illegal releases, one per run, chosen by argv[1]:
 *   double    victim() mallocs 40 bytes; release() frees it twice: 1 MALLOC(40),
 *             2 FREE of the same pointer (glibc aborts at the second)
 *   stack     release() frees a pointer 32 bytes into a zeroed 64-byte array
 *             on main's stack: 1 FREE of a pointer never allocated (glibc
 *             aborts: the zero bytes before it, read as a chunk size, make it
 *             an invalid pointer)
 *   interior  victim() callocs 64 bytes (1 CALLOC(64)); release() frees the
 *             pointer 16 bytes into it (glibc aborts: the bytes before it,
 *             read as a chunk size, are zero)
 * With record --memory --keep-alive the illegal FREE is recorded with KEPT
 * and not passed to libc: the program prints "survived" and exits 0.
 * Without it glibc aborts (SIGABRT).  Bad argument: exit 2. */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOUBLE_SIZE 40
#define STACK_SIZE 64
#define STACK_OFFSET 32
#define INTERIOR_SIZE 64
#define INTERIOR_OFFSET 16

COUNTED void *victim(size_t size, int zeroed)
{
	void *p = zeroed ? calloc(1, size) : malloc(size);

	BARRIER();
	return p;
}

/* not visible to the compiler as a free of anything in particular */
COUNTED void release(void *p)
{
	free(p);
	BARRIER();
}

int main(int argc, char **argv)
{
	char local[STACK_SIZE];

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "double")) {
		char *p = victim(DOUBLE_SIZE, 0);

		release(p);
		release(p);
	} else if (!strcmp(argv[1], "stack")) {
		memset(local, 0, sizeof(local));
		release(local + STACK_OFFSET);
	} else if (!strcmp(argv[1], "interior")) {
		char *p = victim(INTERIOR_SIZE, 1);

		release(p + INTERIOR_OFFSET);
	} else {
		return 2;
	}
	puts("survived");
	return 0;
}
