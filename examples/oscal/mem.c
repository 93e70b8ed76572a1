/* Memory-heavy: 150 000 rounds of malloc, memset, malloc, memcpy, free,
 * free on blocks of 8 KiB to 64 KiB (below the mmap threshold); prints a checksum.  Its calls are C
 * library calls: record it with --dynamic --libcalls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 150000

int main(void)
{
	unsigned long sum = 0;

	for (int i = 0; i < ROUNDS; i++) {
		size_t size = (size_t)8192 << (i % 4);
		unsigned char *p = malloc(size), *q;

		if (!p)
			return 1;
		memset(p, i & 0xff, size);
		q = malloc(size);
		if (!q)
			return 1;
		memcpy(q, p, size);
		sum += q[size / 2] + q[size - 1];
		free(p);
		free(q);
	}
	printf("%d rounds, checksum %lu\n", ROUNDS, sum);
	return 0;
}
