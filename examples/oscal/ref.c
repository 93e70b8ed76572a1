/* The reference for the recorder's cost per call (bench/oscal/estimate):
 * nothing but calls.  "ex_ref sys N [DIR]": N pread(2) of 1 byte of a file;
 * "ex_ref lib N": N memset(3) of 16 bytes through the PLT.  Not one of the
 * benchmark programs: it calibrates the instrument, as a timer's overhead
 * is calibrated. */
#include "common.h"

int main(int argc, char **argv)
{
	static char buf[64];
	long n = argc > 2 ? atol(argv[2]) : 0;
	size_t len = argc > 1 ? strlen(argv[1]) + 13 : 16; /* 16, not known to the compiler */

	if (argc < 3 || n <= 0) {
		fprintf(stderr, "usage: ex_ref sys|lib N [DIR]\n");
		return 2;
	}
	if (!strcmp(argv[1], "sys")) {
		char path[4096];
		int fd = ex_scratch("ex_ref", argc - 2, argv + 2, "ex_ref", path, sizeof(path));

		if (write(fd, "x", 1) != 1)
			ex_die("ex_ref", "write");
		for (long i = 0; i < n; i++)
			if (pread(fd, buf, 1, 0) != 1)
				ex_die("ex_ref", "pread");
		close(fd);
		unlink(path);
	} else {
		for (long i = 0; i < n; i++)
			memset(buf, (int)i, len);
	}
	printf("%ld calls\n", n);
	return 0;
}
