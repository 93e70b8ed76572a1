/* I/O-heavy: copies a 4 MiB file by 4 KiB blocks (read, write), 32 times,
 * and prints a checksum of the copy.  Usage: ex_copy [DIR] */
#include "common.h"

#define FILE_BYTES (4u << 20)
#define BLOCK 4096u
#define ROUNDS 32

int main(int argc, char **argv)
{
	static unsigned char buf[65536];
	char src_path[4096], dst_path[4096];
	int src = ex_scratch("ex_copy", argc, argv, "ex_copy.src", src_path, sizeof(src_path));
	int dst = ex_scratch("ex_copy", argc, argv, "ex_copy.dst", dst_path, sizeof(dst_path));
	unsigned long sum = 0;
	unsigned i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	for (i = 0; i < FILE_BYTES / sizeof(buf); i++)
		if (write(src, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			ex_die("ex_copy", "write");
	for (int r = 0; r < ROUNDS; r++) {
		ssize_t n;

		if (lseek(src, 0, SEEK_SET) < 0 || lseek(dst, 0, SEEK_SET) < 0)
			ex_die("ex_copy", "lseek");
		while ((n = read(src, buf, BLOCK)) > 0)
			if (write(dst, buf, (size_t)n) != n)
				ex_die("ex_copy", "write");
		if (n < 0)
			ex_die("ex_copy", "read");
	}
	if (lseek(dst, 0, SEEK_SET) < 0)
		ex_die("ex_copy", "lseek");
	for (ssize_t n; (n = read(dst, buf, sizeof(buf))) > 0;)
		for (ssize_t k = 0; k < n; k++)
			sum = sum * 31 + buf[k];
	close(src);
	close(dst);
	unlink(src_path);
	unlink(dst_path);
	printf("copied %u bytes %d times, checksum %lu\n", FILE_BYTES, ROUNDS, sum);
	return 0;
}
