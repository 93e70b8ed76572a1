/* I/O-heavy, small calls: writes 60 000 log lines of 64 bytes one write
 * each, reads them back by 512 bytes, prints a checksum.  Usage: ex_logw [DIR] */
#include "common.h"

#define LINES 60000
#define LINE 64

int main(int argc, char **argv)
{
	char path[4096], line[LINE + 1], buf[512];
	int fd = ex_scratch("ex_logw", argc, argv, "ex_logw.log", path, sizeof(path));
	unsigned long sum = 0;
	ssize_t n;

	for (int i = 0; i < LINES; i++) {
		snprintf(line, sizeof(line), "%08d event %-46s\n", i, i % 3 ? "tick" : "tock");
		if (write(fd, line, LINE) != LINE)
			ex_die("ex_logw", "write");
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		ex_die("ex_logw", "lseek");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t k = 0; k < n; k++)
			sum = sum * 131 + (unsigned char)buf[k];
	close(fd);
	unlink(path);
	printf("%d lines, checksum %lu\n", LINES, sum);
	return 0;
}
