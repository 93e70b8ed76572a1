/* The syscall benchmark's loop: N getppid calls (argv[1], default 500000). */
#include "prog.h"

#include <stdlib.h>
#include <unistd.h>

COUNTED long spin(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += getppid();
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 500000;

	return spin(n) > 0 ? 0 : 1;
}
