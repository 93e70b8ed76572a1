/* Compute with few calls: the CRC-32 (bit by bit) of a 6 MiB file read in
 * 64 KiB blocks, computed twice; prints it.  Usage: ex_crc [DIR] */
#include <stdint.h>

#include "common.h"

#define FILE_BYTES (6u << 20)
#define BLOCK 65536u

static uint32_t crc32_bits(uint32_t crc, const unsigned char *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return crc;
}

int main(int argc, char **argv)
{
	static unsigned char buf[BLOCK];
	char path[4096];
	int fd = ex_scratch("ex_crc", argc, argv, "ex_crc.in", path, sizeof(path));
	uint32_t x = 12345, crc = 0;
	ssize_t n;

	for (unsigned i = 0; i < FILE_BYTES / BLOCK; i++) {
		for (unsigned k = 0; k < BLOCK; k++) {
			x = x * 1103515245u + 12345u;
			buf[k] = (unsigned char)(x >> 16);
		}
		if (write(fd, buf, BLOCK) != (ssize_t)BLOCK)
			ex_die("ex_crc", "write");
	}
	for (int pass = 0; pass < 2; pass++) {
		if (lseek(fd, 0, SEEK_SET) < 0)
			ex_die("ex_crc", "lseek");
		crc = 0xffffffffu;
		while ((n = read(fd, buf, BLOCK)) > 0)
			crc = crc32_bits(crc, buf, (size_t)n);
		if (n < 0)
			ex_die("ex_crc", "read");
	}
	close(fd);
	unlink(path);
	printf("crc32 %08x of %u bytes\n", crc ^ 0xffffffffu, FILE_BYTES);
	return 0;
}
