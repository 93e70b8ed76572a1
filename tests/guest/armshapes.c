/* Entries the 32-bit ARM patch planner must move (PC-relative loads and
 * address computations, branches and calls, an IT block, a 16-bit and a
 * 32-bit instruction together) or refuse (a loop whose head is a Thumb
 * function's second instruction, load-exclusive loops), for
 * test_guest.py's dynamic group on armhf.  Each function returns what its
 * code computes, patched or not: the program prints the results, which
 * must be the same under `record --dynamic`.  Build with
 * arm-linux-gnueabihf-gcc -O2 (hard-float ABI). */
#include <stdio.h>

int t_literal(void);
int t_adr(void);
int t_cbz(int x);
int t_bcond(int x);
int t_it(int x);
int t_addpc(void);
int t_push_bl(int x);
int t_tail(int x);
double t_vldr(void);
int t_loop2(int n);
int t_ldrex(int *p);
int a_literal(void);
int a_adr(void);
int a_addpc(int off);
int a_tail(int x);
double a_vldr(void);
int a_ldrex(int *p);
int helper(int x);
extern const int a_data;

__asm__(".syntax unified\n"
        ".text\n"
        /* Thumb */
        ".thumb\n"
        ".p2align 2\n"
        ".globl t_literal\n.type t_literal, %function\n.thumb_func\n"
        "t_literal: ldr r0, 1f\n bx lr\n.p2align 2\n1: .word 1234567\n.size t_literal, .-t_literal\n"
        ".p2align 2\n"
        ".globl t_adr\n.type t_adr, %function\n.thumb_func\n"
        "t_adr: adr r0, 1f\n ldr r0, [r0]\n bx lr\n.p2align 2\n1: .word 7654321\n.size t_adr, .-t_adr\n"
        ".p2align 2\n"
        ".globl t_cbz\n.type t_cbz, %function\n.thumb_func\n"
        "t_cbz: cbz r0, 1f\n movs r0, #2\n bx lr\n1: movs r0, #3\n bx lr\n.size t_cbz, .-t_cbz\n"
        ".p2align 2\n"
        ".globl t_bcond\n.type t_bcond, %function\n.thumb_func\n"
        "t_bcond: cmp r0, #0\n beq 1f\n movs r0, #8\n bx lr\n1: movs r0, #9\n bx lr\n.size t_bcond, .-t_bcond\n"
        ".p2align 2\n"
        ".globl t_it\n.type t_it, %function\n.thumb_func\n"
        "t_it: cmp r0, #0\n ite eq\n moveq r0, #5\n movne r0, #6\n bx lr\n.size t_it, .-t_it\n"
        ".p2align 2\n"
        ".globl t_addpc\n.type t_addpc, %function\n.thumb_func\n"
        "t_addpc: ldr r0, 2f\n1: add r0, pc\n ldr r0, [r0]\n bx lr\n"
        ".p2align 2\n2: .word a_data - (1b + 4)\n.size t_addpc, .-t_addpc\n"
        ".p2align 2\n"
        ".globl t_push_bl\n.type t_push_bl, %function\n.thumb_func\n"
        "t_push_bl: push {r4, lr}\n bl helper\n adds r0, #1\n pop {r4, pc}\n.size t_push_bl, .-t_push_bl\n"
        ".p2align 2\n"
        ".globl t_tail\n.type t_tail, %function\n.thumb_func\n"
        "t_tail: b.w helper\n.size t_tail, .-t_tail\n"
        ".p2align 2\n"
        ".globl t_vldr\n.type t_vldr, %function\n.thumb_func\n"
        "t_vldr: vldr d0, 1f\n bx lr\n.p2align 3\n1: .double 2.5\n.size t_vldr, .-t_vldr\n"
        ".p2align 2\n"
        ".globl t_loop2\n.type t_loop2, %function\n.thumb_func\n"
        "t_loop2: movs r1, #0\n1: adds r1, #1\n cmp r1, r0\n bne 1b\n mov r0, r1\n bx lr\n.size t_loop2, .-t_loop2\n"
        ".p2align 2\n"
        ".globl t_ldrex\n.type t_ldrex, %function\n.thumb_func\n"
        "t_ldrex: ldrex r1, [r0]\n adds r1, #1\n strex r2, r1, [r0]\n cmp r2, #0\n bne t_ldrex\n mov r0, r1\n bx lr\n"
        ".size t_ldrex, .-t_ldrex\n"
        ".p2align 2\n"
        ".globl helper\n.type helper, %function\n.thumb_func\n"
        "helper: adds r0, #100\n bx lr\n.size helper, .-helper\n"
        /* ARM */
        ".arm\n"
        ".p2align 2\n"
        ".globl a_literal\n.type a_literal, %function\n"
        "a_literal: ldr r0, 1f\n bx lr\n1: .word 2345678\n.size a_literal, .-a_literal\n"
        ".globl a_adr\n.type a_adr, %function\n"
        "a_adr: adr r0, 1f\n ldr r0, [r0]\n bx lr\n1: .word 8765432\n.size a_adr, .-a_adr\n"
        ".globl a_addpc\n.type a_addpc, %function\n"
        "a_addpc: add r0, pc, r0\n ldr r0, [r0]\n bx lr\n.size a_addpc, .-a_addpc\n"
        ".globl a_tail\n.type a_tail, %function\n"
        "a_tail: b helper\n.size a_tail, .-a_tail\n"
        ".globl a_vldr\n.type a_vldr, %function\n"
        "a_vldr: vldr d0, 1f\n bx lr\n.p2align 3\n1: .double 4.25\n.size a_vldr, .-a_vldr\n"
        ".globl a_ldrex\n.type a_ldrex, %function\n"
        "a_ldrex: ldrex r1, [r0]\n add r1, r1, #1\n strex r2, r1, [r0]\n cmp r2, #0\n bne a_ldrex\n"
        " mov r0, r1\n bx lr\n.size a_ldrex, .-a_ldrex\n"
        ".section .rodata\n.p2align 2\n.globl a_data\na_data: .word 3456789\n"
        ".text\n");

int main(void)
{
	int counter = 0;
	/* a_addpc adds pc (its own address + 8) to its argument */
	int off = (int)((const char *)&a_data - ((const char *)a_addpc + 8));

	for (int i = 0; i < 3; i++) {
		printf("t_literal %d t_adr %d t_cbz %d %d t_bcond %d %d t_it %d %d\n", t_literal(), t_adr(), t_cbz(0),
		       t_cbz(i + 1), t_bcond(0), t_bcond(i + 1), t_it(0), t_it(i + 1));
		printf("t_addpc %d t_push_bl %d t_tail %d t_vldr %g t_loop2 %d t_ldrex %d\n", t_addpc(), t_push_bl(i),
		       t_tail(i), t_vldr(), t_loop2(i + 1), t_ldrex(&counter));
		printf("a_literal %d a_adr %d a_addpc %d a_tail %d a_vldr %g a_ldrex %d\n", a_literal(), a_adr(),
		       a_addpc(off), a_tail(i), a_vldr(), a_ldrex(&counter));
	}
	return 0;
}
