/* bench/probes' workload (x86-64): N rounds of a loop whose instructions'
 * places are known: work+8 (imul, add: room for a jump), work+0x12 (mov
 * before the loop's branch, whose exit lands 4 bytes on: a trap), and two
 * functions of 4 bytes packed together (their entries trap under
 * --dynamic) beside one of 4 bytes with padding after it (a jump over
 * both). */
#include <stdio.h>
#include <stdlib.h>

__asm__(".text\n.globl work\n.type work, @function\nwork:\n"
        "\txor %eax, %eax\n\txor %ecx, %ecx\n\ttest %edi, %edi\n\tjle 2f\n"
        "1:\n\timul $7, %ecx, %edx\n\tadd %edx, %eax\n\tadd $1, %ecx\n\tcmp %ecx, %edi\n"
        "\tmov %eax, %edx\n\tjne 1b\n2:\n\tret\n.size work, .-work\n"
        ".globl tiny_a\n.type tiny_a, @function\ntiny_a:\n\tlea 1(%rdi), %eax\n\tret\n.size tiny_a, .-tiny_a\n"
        ".globl tiny_b\n.type tiny_b, @function\ntiny_b:\n\tlea 2(%rdi), %eax\n\tret\n.size tiny_b, .-tiny_b\n"
        ".p2align 4\n.globl roomy\n.type roomy, @function\nroomy:\n\tlea 3(%rdi), %eax\n\tret\n"
        ".size roomy, .-roomy\n.p2align 4\n.globl after_roomy\n.type after_roomy, @function\n"
        "after_roomy:\n\tret\n.size after_roomy, .-after_roomy\n");
int work(int n);
int tiny_a(int x);
int tiny_b(int x);
int roomy(int x);

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "loop";
	long n = argc > 2 ? atol(argv[2]) : 100000;
	long s = 0;

	if (what[0] == 'l')
		s = work((int)n);
	else if (what[0] == 't')
		for (long i = 0; i < n; i++)
			s += tiny_a((int)i);
	else
		for (long i = 0; i < n; i++)
			s += roomy((int)i);
	printf("%ld\n", s);
	return 0;
}
