/* Shared by the sample programs: keeps every counted function a real,
 * separately called function at every optimisation level, so that call
 * counts and callers are exact. */
#ifndef LP_TEST_PROG_H
#define LP_TEST_PROG_H

/* The programs use POSIX and GNU calls (fork, sigaction, nanosleep, dlopen);
 * the build may or may not pass -D_GNU_SOURCE already. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

/* noipa stops inlining, cloning (foo.constprop.0), identical-code folding and
 * return-value propagation, any of which would change what a tracer sees.
 * Compilers without it (clang) get noinline; BARRIER below does the rest. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define COUNTED __attribute__((noinline, noipa, used))
#endif
#endif
#ifndef COUNTED
#define COUNTED __attribute__((noinline, used))
#endif

/* An empty asm with a memory clobber: a side effect the optimiser can
 * neither move nor drop.  Placed after a recursive call it keeps the call
 * out of tail position, so recursion never becomes a loop; placed in a
 * function without side effects it stops repeated calls being merged into
 * one.  Clang does both when it instruments after inlining, and it has no
 * noipa to stop it. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

#endif
