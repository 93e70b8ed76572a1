#!/usr/bin/env python3
"""Tracing programs built without -finstrument-functions (`record
--dynamic`): the sample programs of tests/programs built plain, their
traces held against the same expectations (tests/programs/expect) as the
instrumented builds', and against the instrumented build's own trace;
function selection; refusals.

Three backends: in-process patching (the patch_* groups; any user),
uprobes (the groups without a prefix; they need root and the kernel's
uprobe PMU, and skip with the reason otherwise) and ptrace breakpoints
(the ptrace_* groups; x86-64 and aarch64, where ptrace is allowed).

usage: test_dynamic.py --build BUILD [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as samples  # noqa: E402
from harness import check, run_groups, skip  # noqa: E402

NOBODY = 65534
UPROBE_PMU = "/sys/bus/event_source/devices/uprobe/type"
VARIANTS = [("gcc", "g++", "-O2"), ("clang", "clang++", "-O2")]

# The scenarios whose whole expectation holds under each backend,
# and why each other one is left out (said in the output, not hidden).
LEFT_OUT = {
    "killme": "timing-dependent (the programs group leaves it out too)",
    "busy": "timing-dependent (the programs group leaves it out too)",
    "busy_threads": "timing-dependent (the programs group leaves it out too)",
}

# Patterns for the scenarios whose functions live in shared libraries (the
# patch backend traces them): the program's, and each library's.
LIB_PATTERNS = {
    "dlopen": "*,libshared.so:*,libplugin.so:*",
    "dlopen_keep": "*,libshared.so:*,libplugin.so:*",
}

# and those left out under one backend only
BACKEND_LEFT_OUT = {
    "patch": {
        "early": "its .preinit_array code runs before any library's constructor, so before the runtime patches "
                 "the program (the uprobe backend traces it)",
    },
    "uprobe": {
        "dlopen": "a shared library's functions: the patch backend traces them",
        "dlopen_keep": "a shared library's functions: the patch backend traces them",
        "execer_target": "a second program's functions: the uprobe backend probes the program it starts",
        "spawner_spawn": "a second program's functions: the uprobe backend probes the program it starts",
        "exceptions": "C++ exceptions: the uprobe backend refuses such programs (its refuse group checks it)",
        "templates": "C++ with exception tables: the uprobe backend refuses such programs",
    },
    "ptrace": {
        "dlopen": "a shared library's functions: the patch backend traces them",
        "dlopen_keep": "a shared library's functions: the patch backend traces them",
        "execer_target": "a second program's functions: the ptrace backend traces the program it starts",
        "spawner_spawn": "a second program's functions: the ptrace backend traces the program it starts",
        "exceptions": "C++ exceptions: the ptrace backend refuses such programs (its refuse group checks it)",
        "templates": "C++ with exception tables: the ptrace backend refuses such programs",
    },
}


class PlainBuilder(samples.Builder):
    """The sample programs as a developer builds them: no instrumentation."""

    def flags(self):
        return [self.opt, "-g", "-pthread", "-I", samples.PROGS]


UPROBE = ("--dynamic", "--backend=uprobe")
PATCH = ("--dynamic", "--backend=patch")
PTRACE = ("--dynamic", "--backend=ptrace")


def uprobes_missing():
    """Why the uprobe backend cannot run here, or None."""
    if os.geteuid() != 0:
        return "uprobes need root"
    if not os.path.exists(UPROBE_PMU):
        return "this kernel has no uprobe PMU (%s)" % UPROBE_PMU
    return None


def patch_missing():
    """Why the patch backend cannot run here, or None."""
    if os.uname().machine != "x86_64":
        return "in-process patching is built for x86-64 so far"
    return None


def ptrace_missing():
    """Why the ptrace backend cannot run here, or None."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        return "the ptrace backend is built for x86-64 and aarch64"
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            if f.read().strip() == "3":
                return "ptrace is disabled (kernel.yama.ptrace_scope = 3)"
    except OSError:
        pass
    return None


def needs(what, tag):
    """Decorator: the group runs only where what() finds nothing missing."""
    def wrap(fn):
        def group(lp, tmp):
            why = what()
            if why:
                skip(tag, why)
                return
            fn(lp, tmp)
        return group
    return wrap


def programs(lp, tmp, backend, subdir):
    for cc, cxx, opt in VARIANTS:
        if not samples.have(cc):
            skip("plain programs with %s" % cc, "%s is not installed" % cc)
            continue
        b = PlainBuilder(cc, cxx, opt, os.path.join(tmp, subdir))
        for exp in samples.load_expectations():
            name = exp["_name"]
            why = LEFT_OUT.get(name) or BACKEND_LEFT_OUT[backend[-1][10:]].get(name) or \
                next((v for k, v in LEFT_OUT.items() if k.endswith("_") and name.startswith(k)), None)
            if why:
                skip("%s %s %s %s" % (name, cc, opt, " ".join(backend)), why.replace("BACKEND", backend[-1][10:]))
                continue
            tag = "%s %s %s %s" % (name, cc, opt, " ".join(backend))
            binary = samples.prepare(exp, b)
            out = os.path.join(tmp, "d-%s-%s%s-%s" % (name, cc, opt, backend[-1][10:]))
            extra = backend
            if name in LIB_PATTERNS:
                extra = tuple("--dynamic=" + LIB_PATTERNS[name] if a == "--dynamic" else a for a in backend)
            r = samples.record(lp, out, [binary] + samples.prog_args(exp, b), extra=extra)
            if not check(r.returncode == samples.expected_exit(exp), "%s: exit status passed through" % tag,
                         "got %d, stderr %s" % (r.returncode, r.stderr.strip()[-500:])):
                continue
            if backend == PTRACE:
                check("layerprof record: warning" not in r.stderr, "%s: no warning" % tag, r.stderr[-500:])
            tree = lp.json("tree", "--format", "json", out)
            if "--libcalls" in backend:
                # a handler or callback a library call runs sits under
                # NAME@plt: the expected edges skip those frames
                for t in tree["threads"]:
                    t["calls"] = splice_plt(t["calls"])
            samples.check_expectations(tag, exp, lp.json("report", "--format", "json", out), tree)


def splice_plt(nodes):
    """Tree json nodes with every NAME@plt node replaced by its children."""
    out = []
    for n in nodes:
        kids = splice_plt(n["children"])
        if n["name"].endswith("@plt"):
            out.extend(kids)
        else:
            out.append(dict(n, children=kids))
    return out


@needs(uprobes_missing, "uprobe programs")
def group_programs(lp, tmp):
    programs(lp, tmp, UPROBE, "plain")


@needs(ptrace_missing, "ptrace programs")
def group_ptrace_programs(lp, tmp):
    programs(lp, tmp, PTRACE, "plaint")


@needs(patch_missing, "patch programs")
def group_patch_programs(lp, tmp):
    programs(lp, tmp, PATCH, "plainp")


@needs(patch_missing, "patch programs with --libcalls")
def group_patch_programs_libcalls(lp, tmp):
    """The samples again with their library calls traced too: the same
    counts of the program's functions."""
    programs(lp, tmp, ("--libcalls",) + PATCH, "plainl")


def build_c(tmp, name, source, flags=()):
    """A C program of its own for a check, built plain -O2 -g."""
    src = os.path.join(tmp, name + ".c")
    out = os.path.join(tmp, name)
    with open(src, "w") as f:
        f.write(source)
    r = subprocess.run(["gcc", "-O2", "-g", "-I", samples.PROGS, src, "-o", out] + list(flags),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode:
        raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
    return out


# 500 calls of a function that sleeps 2 ms: a program that runs 1 s
SLOWLOOP = r"""
#include "prog.h"
#include <stdio.h>
#include <time.h>
COUNTED void tick(void) { struct timespec t = { 0, 2000000 }; nanosleep(&t, NULL); }
int main(void)
{
	for (int i = 0; i < 500; i++)
		tick();
	puts("done");
	return 0;
}
"""


def calls(lp, trace):
    return {f["name"]: f["calls"] for f in lp.json("report", "--format", "json", trace)["functions"]}


TINY = r"""
#include "prog.h"
#include <stdio.h>
/* a function of one instruction (ret), and one whose first instruction
 * is the target of its own loop's branch */
COUNTED void tiny(void) { }
COUNTED int looped(int n)
{
	int s = 0;
	do {
		s += n;
		BARRIER();
	} while (--n > 0);
	return s;
}
/* a loop whose head is 2 bytes into the function: inside the 5 bytes a
 * jump at its entry would replace */
__asm__(".text\n.globl jumpy\n.type jumpy, @function\njumpy:\n\txor %eax, %eax\n1:\n\tadd $1, %eax\n"
        "\tcmp %edi, %eax\n\tjl 1b\n\tret\n.size jumpy, .-jumpy\n");
int jumpy(int n);
/* a function another one jumps into, 2 bytes in */
__asm__(".text\n.globl joined\n.type joined, @function\njoined:\n\txor %eax, %eax\n.Ljoin:\n\tinc %eax\n"
        "\tret\n.size joined, .-joined\n.globl joiner\n.type joiner, @function\njoiner:\n"
        "\tmov $5, %eax\n\tjmp .Ljoin\n.size joiner, .-joiner\n");
int joined(void);
int joiner(void);
int main(void)
{
	int s = 0, j = 0;
	for (int i = 0; i < 100; i++)
		tiny();
	for (int i = 0; i < 7; i++)
		s += looped(3);
	for (int i = 0; i < 9; i++)
		j += jumpy(5);
	for (int i = 0; i < 4; i++)
		j += joined() + joiner();
	printf("%d %d\n", s, j);
	return 0;
}
"""


def shapes(lp, tmp, backend):
    """Functions of 1 byte and functions whose entry is a branch target are
    traced like any other (a probe is one trap instruction; a patch covers
    the 1-byte function and the padding after it, and a branch back to
    the entry is no new call).  A function with a branch target inside its
    first 5 bytes: probed, or under the patch backend moved whole when only
    its own branches land there, else entered through a trap."""
    kind = backend[-1][10:]
    prog = build_c(tmp, "tiny", TINY, ("-fcf-protection=none",))
    r = subprocess.run(["nm", "-S", prog], stdout=subprocess.PIPE, universal_newlines=True)
    size = [ln.split()[1] for ln in r.stdout.splitlines() if ln.endswith(" tiny") and len(ln.split()) == 4]
    check(size == ["0000000000000001"], "tiny is 1 byte long (nm -S)", size)
    out = os.path.join(tmp, "tiny-%s.t" % kind)
    r = lp("record", "-o", out, *backend, "--", prog)
    check(r.returncode == 0 and r.stdout.strip() == "42 73",
          "tiny %s: record exits 0, the program's output unchanged" % kind, r.stdout + r.stderr)
    c = calls(lp, out)
    check(c.get("tiny") == 100 and c.get("looped") == 7 and c.get("main") == 1,
          "tiny %s: 100 calls of a 1-byte function, 7 of a function whose entry is a loop's target" % kind, c)
    check(c.get("jumpy") == 9 and c.get("joiner") == 4,
          "tiny %s: 9 calls of jumpy (its loop's head 2 bytes in), 4 of joiner" % kind, c)
    # joiner starts at an odd address: its probe once went 1 byte early;
    # under the patch backend joined's entry traps (another function jumps
    # in just after its first instruction)
    check(c.get("joined") == 4 and len(c) == 6 and "not traced" not in r.stderr,
          "tiny %s: 4 calls of joined, nothing else, nothing left untraced" % kind, "%s %s" % (c, r.stderr))


# Functions of 1 to 4 bytes packed one after another (-falign-functions=1):
# no room for a jump at their entries, so they trap.  Called directly,
# through a pointer, from a thread that blocks every signal, from a handler
# whose mask holds every signal; the program's own SIGTRAP handler still
# gets its raise(), and SIG_IGN ignores one.
TRAPS = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline, noipa)) int t_inc(int x) { return x + 1; }
__attribute__((noinline, noipa)) int t_dbl(int x) { return x * 2; }
__attribute__((noinline, noipa)) void t_nop(void) { }
static int (*volatile fp)(int) = t_inc;
static volatile sig_atomic_t got_trap, got_usr1;
static void on_trap(int sig) { (void)sig; got_trap++; }
static void on_usr1(int sig) { (void)sig; got_usr1 += t_inc(0); t_nop(); }
static void *blocked_thread(void *arg)
{
	sigset_t all, now;
	int s = 0;
	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	for (int i = 0; i < 10; i++)
		s = t_dbl(t_inc(s));
	return (void *)(long)(s + 10000 * !sigismember(&now, SIGUSR2));
}
int main(void)
{
	struct sigaction sa, old;
	pthread_t th;
	void *res;
	int s = 0;

	for (int i = 0; i < 20; i++)
		s = fp(s);
	for (int i = 0; i < 5; i++)
		t_nop();
	pthread_create(&th, NULL, blocked_thread, NULL);
	pthread_join(th, &res);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	sa.sa_handler = on_trap;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	sigaction(SIGTRAP, NULL, &old);
	raise(SIGTRAP);
	signal(SIGTRAP, SIG_IGN);
	raise(SIGTRAP);
	printf("%d %ld %d %d %d\n", s, (long)res, (int)got_usr1, (int)got_trap, old.sa_handler == on_trap);
	return 0;
}
"""


LASTFN = r"""
#include <stdio.h>
int roomy(int x);
int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += roomy(i);
	printf("%d\n", s);
	return 0;
}
__asm__(".text\n.p2align 4\n.globl roomy\n.type roomy, @function\nroomy:\n\tlea 3(%rdi), %eax\n\tret\n"
        ".size roomy, .-roomy\n");
"""


@needs(patch_missing, "patch traps")
def group_patch_traps(lp, tmp):
    """Functions with no room for a jump at their entry are traced through
    an int3 there (x86-64), exactly, whatever the program does with its
    signal masks and its own SIGTRAP handler; with each syscall backend
    (the ptrace one passes the traps on)."""
    if os.uname().machine != "x86_64":
        skip("patch traps", "int3 entries are x86-64's")
        return
    prog = build_c(tmp, "traps", TRAPS, ["-falign-functions=1", "-fcf-protection=none", "-pthread"])
    r = subprocess.run(["nm", "-S", prog], stdout=subprocess.PIPE, universal_newlines=True)
    sizes = {ln.split()[3]: int(ln.split()[1], 16) for ln in r.stdout.splitlines()
             if len(ln.split()) == 4 and ln.split()[3] in ("t_inc", "t_dbl", "t_nop")}
    check(len(sizes) == 3 and max(sizes.values()) <= 4, "traps: t_inc, t_dbl, t_nop of 4 bytes or less", sizes)
    native = subprocess.run([prog], stdout=subprocess.PIPE, universal_newlines=True)
    check(native.returncode == 0 and native.stdout == "20 2046 1 1 1\n", "traps: the program's own output",
          native.stdout)
    for extra in ([], ["--syscalls=ptrace"], ["--syscalls=tracepoint"]):
        tag = " ".join(["--dynamic"] + extra)
        out = os.path.join(tmp, "traps%d.t" % len(extra[0] if extra else ""))
        r = lp("record", "-q", "--dynamic", *extra, "-o", out, "--", prog)
        if not check(r.returncode == 0 and r.stdout == native.stdout and not r.stderr,
                     "traps %s: exit 0, the output unchanged, nothing said" % tag, r.stdout + r.stderr):
            continue
        c = calls(lp, out)
        check((c.get("t_inc"), c.get("t_dbl"), c.get("t_nop"), c.get("on_usr1"), c.get("on_trap")) ==
              (31, 10, 6, 1, 1), "traps %s: every call of the trapped functions, in every thread and handler" % tag,
              c)
    # a function of 4 bytes that ends .text: what follows it is the next
    # section's code (_fini), never padding; it traps (it once got a jump
    # over _fini's first byte, and the program died at its exit)
    last = build_c(tmp, "lastfn", LASTFN)
    r = subprocess.run(["nm", "-n", last], stdout=subprocess.PIPE, universal_newlines=True)
    syms = [ln.split() for ln in r.stdout.splitlines() if len(ln.split()) == 3]
    names = [x[2] for x in syms]
    if "roomy" in names and names.index("roomy") + 1 < len(names) and names[names.index("roomy") + 1] == "_fini":
        out = os.path.join(tmp, "lastfn.t")
        r = lp("record", "-q", "--dynamic=roomy", "-o", out, "--", last)
        check(r.returncode == 0 and r.stdout == "75\n" and calls(lp, out).get("roomy") == 10,
              "traps: a 4-byte function right before _fini: exit 0, its 10 calls", r.stdout + r.stderr)
    else:
        skip("traps: a function right before _fini", "the linker put something else after it: %s" % names[-8:])
    out = os.path.join(tmp, "traps-n.t")
    r = lp("record", "--dynamic", "-o", out, "--", prog)
    check("note: 3 functions have no room for a jump at their entry and trap instead" in r.stderr,
          "record says how many entries trap", r.stderr[-600:])


EDGES = r"""
#include "prog.h"
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
/* a vfork child that calls traced functions in its parent's memory, then
 * execs; a signal handler on an alternate stack that leaves by siglongjmp */
static sigjmp_buf jb;
static char altstack[65536];
COUNTED int helper(int x) { BARRIER(); return x * 2; }
COUNTED void child_path(void) { helper(3); execl("/bin/true", "true", (char *)NULL); _exit(127); }
COUNTED int spawn(void)
{
	int st;
	pid_t p = vfork();
	if (p == 0)
		child_path();
	waitpid(p, &st, 0);
	return WEXITSTATUS(st);
}
COUNTED void handler_work(void) { siglongjmp(jb, 1); }
COUNTED void handler(int s) { (void)s; handler_work(); }
COUNTED int round_trip(void)
{
	if (sigsetjmp(jb, 1))
		return 1;
	raise(SIGUSR1);
	return 0;
}
int main(void)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	int r = 0, n = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaltstack(&ss, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 5; i++)
		r += spawn();
	for (int i = 0; i < 20; i++)
		n += round_trip();
	printf("%d %d %d\n", r, n, helper(4));
	return 0;
}
"""


@needs(patch_missing, "patch edges")
def group_patch_edges(lp, tmp):
    """A vfork child calling patched functions before its exec, and a signal
    handler on an alternate stack leaving by siglongjmp: the program's
    output and exit status as without tracing, every call counted."""
    prog = build_c(tmp, "edges", EDGES)
    out = os.path.join(tmp, "edges.t")
    r = lp("record", "-q", *PATCH, "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout == "0 20 8\n", "edges: exit 0, the program's output", r.stdout + r.stderr)
    c = calls(lp, out) if r.returncode == 0 else {}
    check(c == {"main": 1, "spawn": 5, "child_path": 5, "helper": 6, "round_trip": 20, "handler": 20,
                "handler_work": 20}, "edges: every call counted", c)


@needs(ptrace_missing, "ptrace edges")
def group_ptrace_edges(lp, tmp):
    """The same vfork child and alternate-stack handler under breakpoints:
    the vfork child's traps are its parent's (shared memory), and the
    handler's siglongjmp leaves frames whose returns never come.  The
    vfork child's calls are counted, but the drain writes them into the
    image its exec starts (/bin/true's), where their addresses have no
    names (the uprobe backend's records would fare the same): the check
    counts them by number."""
    prog = build_c(tmp, "tedges", EDGES)
    out = os.path.join(tmp, "tedges.t")
    r = lp("record", "-q", *PTRACE, "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout == "0 20 8\n", "ptrace edges: exit 0, the program's output",
          r.stdout + r.stderr)
    c = calls(lp, out) if r.returncode == 0 else {}
    named = {k: v for k, v in c.items() if not k.startswith("0x")}
    check(named == {"main": 1, "spawn": 5, "helper": 1, "round_trip": 20, "handler": 20, "handler_work": 20},
          "ptrace edges: the parent's calls counted, the handler's 20 left by siglongjmp", c)
    check(sum(c.values()) == 77 and sum(v for k, v in c.items() if k.startswith("0x")) == 10,
          "ptrace edges: the vfork children's 5 calls of child_path and 5 of helper counted (by address)", c)


# Job control and a busy second thread: the program stops itself, a child
# continues it 200 ms later; meanwhile a thread calls a traced function
# in a loop, so that every step over a trap stops it too.
STOPPER = r"""
#include "prog.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile int stop_spinning;
COUNTED int spin(int x) { BARRIER(); return x + 1; }
COUNTED void *spinner(void *arg)
{
	long n = 0;
	(void)arg;
	while (!stop_spinning && n < 3000)
		n = spin((int)n);
	return (void *)n;
}
COUNTED void after_stop(void) { BARRIER(); }
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
int main(void)
{
	pthread_t th;
	void *n;
	double t0;
	pid_t waker = fork();
	if (waker == 0) {
		struct timespec d = { 0, 200000000 };
		nanosleep(&d, NULL);
		kill(getppid(), SIGCONT);
		_exit(0);
	}
	pthread_create(&th, NULL, spinner, NULL);
	t0 = now();
	raise(SIGSTOP);
	after_stop();
	printf("%s\n", now() - t0 >= 0.15 ? "stopped" : "never stopped");
	stop_spinning = 1;
	pthread_join(th, &n);
	printf("%s\n", (long)n > 0 ? "spun" : "no spin");
	return 0;
}
"""


@needs(ptrace_missing, "ptrace job control")
def group_ptrace_jobs(lp, tmp):
    """A program that stops itself (SIGSTOP) stays stopped under the
    tracer until SIGCONT comes, as without it; a second thread calling a
    traced function all along is held at each step and loses no call."""
    prog = build_c(tmp, "stopper", STOPPER, ("-pthread",))
    out = os.path.join(tmp, "stopper.t")
    r = lp("record", "-q", *PTRACE, "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout == "stopped\nspun\n",
          "ptrace: the program stopped until SIGCONT, its output as without tracing", r.stdout + r.stderr)
    c = calls(lp, out) if r.returncode == 0 else {}
    spun = c.get("spin", 0)
    check(c.get("main") == 1 and c.get("after_stop") == 1 and c.get("spinner") == 1 and 0 < spun <= 3000,
          "ptrace: main, after_stop, spinner once, spin %d times" % spun, c)
    tree = lp.json("tree", "--format", "json", out) if r.returncode == 0 else {"threads": []}
    under = [k["calls"] for t in tree["threads"] for n in t["calls"] if n["name"] == "spinner"
             for k in n["children"] if k["name"] == "spin"]
    check(under == [spun], "ptrace: every spin call under spinner", under)


@needs(ptrace_missing, "ptrace shapes")
def group_ptrace_shapes(lp, tmp):
    shapes(lp, tmp, PTRACE)


@needs(ptrace_missing, "ptrace select")
def group_ptrace_select(lp, tmp):
    """Patterns, the note, the refusals (each before the program runs, with
    no trace made), and a stripped program's exported functions."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "tsel"))
    prog = b.prog("recursion")
    out = os.path.join(tmp, "tsel.t")
    r = lp("record", "-q", "--dynamic=fi*,nothing", "--backend=ptrace", "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout == "fib(15) = 610\n" and r.stderr == "",
          "ptrace --dynamic='fi*,nothing' -q: exit 0, the output, nothing on stderr", r.stdout + r.stderr)
    check(calls(lp, out) == {"fib": 1973}, "ptrace --dynamic='fi*': only fib, 1973 calls", calls(lp, out))
    # without -q: the note, first; the program's output and status as without tracing
    plain = subprocess.run([b.prog("exit_deep")], stdout=subprocess.PIPE, universal_newlines=True)
    r = lp("record", *PTRACE, "-o", out, "--", b.prog("exit_deep"))
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check(first.startswith("layerprof record: note: the ptrace backend stops the program") and
          "much slower" in first, "ptrace: the note on stderr first", r.stderr[:300])
    check(r.returncode == plain.returncode == 3 and r.stdout == plain.stdout,
          "ptrace: exit_deep's exit status 3 and its output, as run alone",
          "%d/%d %r %r" % (r.returncode, plain.returncode, r.stdout, plain.stdout))
    bad = os.path.join(tmp, "tsel-bad.t")
    for args, code, words in (
            (["--dynamic=zz*"], 1, "no function of the program matches"),
            (["--dynamic=libc.so.6:malloc"], 1, "traced by the patch backend, not the ptrace backend"),
            (["--dynamic", "--libcalls"], 2, "--libcalls needs the patch backend"),
            (["--dynamic", "-F", "fib"], 2, "do not apply to the ptrace backend"),
            (["--dynamic", "--syscalls=ptrace"], 2,
             "--backend=ptrace and --syscalls=ptrace cannot both trace the program")):
        r = lp("record", "-q", "-o", bad, "--backend=ptrace", *args, "--", prog)
        check(r.returncode == code and words in r.stderr and "fib(15)" not in r.stdout,
              "record --backend=ptrace %s: exit %d, '%s', the program not run" % (" ".join(args), code, words),
              "%d: %s" % (r.returncode, r.stderr))
        check(not os.path.exists(bad), "record --backend=ptrace %s: no trace made" % " ".join(args))
    sb = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "tstrip"))
    sprog = sb.prog("recursion", ["-rdynamic"])
    subprocess.run(["strip", "--strip-all", sprog], check=True)
    r = lp("record", "-q", *PTRACE, "-o", out, "--", sprog)
    check(r.returncode == 0 and calls(lp, out).get("fib") == 1973,
          "ptrace: a stripped -rdynamic program's exported functions traced, fib 1973",
          r.stderr + str(calls(lp, out) if r.returncode == 0 else ""))


@needs(ptrace_missing, "ptrace syscalls")
def group_ptrace_syscalls(lp, tmp):
    """user -> syscall with neither rebuilt, the breakpoints beside the
    syscall tracer's kernel backends (ptrace's own is refused: see
    ptrace_select)."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "tsys"))
    prog = b.prog("sys_writer")
    for how in ("tracepoint", "bpf"):
        out = os.path.join(tmp, "tsys-%s.t" % how)
        r = lp("record", "-q", *PTRACE, "--syscalls=" + how, "--syscall-filter", "write", "-o", out, "--", prog)
        if r.returncode == 1 and "cannot trace syscalls" in r.stderr:
            skip("ptrace --syscalls=%s" % how, r.stderr.strip()[-200:])
            continue
        if not check(r.returncode == 0, "record --backend=ptrace --syscalls=%s of sys_writer exits 0" % how,
                     r.stderr):
            continue
        rep = lp.json("report", "--syscalls", "--format", "json", out)
        rows = {(f["function"], f["syscall"]): f["calls"] for f in rep["by_function"]}
        check(rows.get(("writer", "write")) == 100, "ptrace + %s: 100 writes attributed to writer" % how, rows)
        check(calls(lp, out).get("writer") == 1, "ptrace + %s: writer called once" % how, calls(lp, out))


# Two threads each calling a traced function every 2 ms, for 1 s.
SLOWTHREADS = r"""
#include "prog.h"
#include <pthread.h>
#include <stdio.h>
#include <time.h>
COUNTED void tick(void) { struct timespec t = { 0, 2000000 }; nanosleep(&t, NULL); }
COUNTED void *ticker(void *arg) { for (int i = 0; i < 500; i++) tick(); return arg; }
int main(void)
{
	pthread_t th;
	pthread_create(&th, NULL, ticker, NULL);
	ticker(NULL);
	pthread_join(th, NULL);
	puts("done");
	return 0;
}
"""


@needs(ptrace_missing, "ptrace interrupt")
def group_ptrace_interrupt(lp, tmp):
    """The recording interrupted (SIGINT twice) while the program runs:
    the tracer stops it, puts its code back and detaches, and the program
    runs on to its end, its two threads calling the functions that had
    traps.  A C++ program with exceptions is refused."""
    prog = build_c(tmp, "slowthreads", SLOWTHREADS, ("-pthread",))
    out = os.path.join(tmp, "tint.t")
    rec = subprocess.Popen([lp.exe, "record", "-q", *PTRACE, "-o", out, "--", prog], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    time.sleep(0.5)
    rec.send_signal(signal.SIGINT)
    time.sleep(0.05)
    rec.send_signal(signal.SIGINT)
    out_, err_ = rec.communicate(timeout=60)
    check(rec.returncode == 130 and "the program keeps running" in err_,
          "ptrace: record interrupted: exit 130, the program keeps running", "%d %s" % (rec.returncode, err_))
    check(out_ == "done\n", "ptrace: the program ran to its end after the detach (no trap left)", out_ + err_)
    c = calls(lp, out) if os.path.exists(out) else {}
    check(0 < c.get("tick", 0) < 1000 and c.get("ticker") == 2, "ptrace: the trace holds the ticks before "
          "the interrupt, both tickers", c)
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "tref"))
    r = lp("record", "-q", *PTRACE, "-o", os.path.join(tmp, "tref.t"), "--", b.prog("exceptions"))
    check(r.returncode == 1 and "C++ exceptions" in r.stderr and "ptrace backend" in r.stderr and
          not os.path.exists(os.path.join(tmp, "tref.t")),
          "ptrace: a C++ program with exceptions: exit 1, the reason, no trace, the program not run", r.stderr)


@needs(uprobes_missing, "uprobe shapes")
def group_shapes(lp, tmp):
    shapes(lp, tmp, UPROBE)


@needs(patch_missing, "patch shapes")
def group_patch_shapes(lp, tmp):
    shapes(lp, tmp, PATCH)


@needs(patch_missing, "patch select")
def group_patch_select(lp, tmp):
    """The recorder's filters apply to patched functions as to compiled-in
    gates; --dynamic's own list, with a library's functions (FILE:GLOB);
    a stripped program's dynamic symbols."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "psel"))
    prog = b.prog("recursion")
    for args, want in ((["--dynamic=fi*"], {"fib": 1973}),
                       (["--dynamic", "-F", "fib"], {"fib": 1973}),
                       (["--dynamic", "-N", "fib"], {"main": 1})):
        out = os.path.join(tmp, "psel.t")
        r = lp("record", "-q", "--backend=patch", "-o", out, *args, "--", prog)
        check(r.returncode == 0 and calls(lp, out) == want, "record --backend=patch %s: %s" % (" ".join(args), want),
              "%d %s %s" % (r.returncode, r.stderr, calls(lp, out) if r.returncode == 0 else ""))
    # a library's functions: found by name, or refused with the reason
    lib = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6")
               if os.path.exists(p))
    wprog = build_c(tmp, "libwriter", LIBCALLS)
    out = os.path.join(tmp, "plib.t")
    def under_writer(r):
        tree = lp.json("tree", "--format", "json", out) if r.returncode == 0 else {"threads": []}
        return [(k["name"], k["calls"]) for t in tree["threads"] for n in t["calls"] if n["name"] == "writer"
                for k in n["children"]]

    r = lp("record", "-q", "--dynamic=writer,libc.so.6:write", "-o", out, "--", wprog)
    under = under_writer(r)
    check(r.returncode == 0 and under == [("write", 100)],
          "--dynamic=writer,libc.so.6:write: libc's write 100 times under writer", "%s %s" % (r.stderr, under))
    for args, code, words in ((["--dynamic=writer,nosuch.so:*"], 1, "cannot find the library 'nosuch.so'"),
                              (["--dynamic=writer,libc.so.6:zz_none*"], 1,
                               "no function of the library matches"),
                              (["--dynamic=writer,libc.so.6:write", "--backend=uprobe"], 1,
                               "traced by the patch backend, not the uprobe backend"),
                              (["--dynamic=writer,:write"], 2, "FILE:PATTERN needs both")):
        r = lp("record", "-q", "-o", os.path.join(tmp, "plib-bad.t"), *args, "--", wprog)
        check(r.returncode == code and words in r.stderr and "xxx" not in r.stdout,
              "record %s: exit %d, '%s', the program not run" % (" ".join(args), code, words),
              "%d: %s" % (r.returncode, r.stderr))
    r = lp("record", "-q", "-o", out, "--dynamic=writer,%s:write" % lib, "--", wprog)
    under = under_writer(r)
    check(r.returncode == 0 and under == [("write", 100)], "a library named by its path: the same",
          "%s %s" % (r.stderr, under))
    plugin_dir = os.path.join(tmp, "plibdir")
    os.makedirs(plugin_dir, exist_ok=True)
    unused = os.path.join(plugin_dir, "libunused.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", unused, "-x", "c", "-"], input="int unused_fn(int x) "
                   "{ return x + 1; }\n", universal_newlines=True, check=True)
    r = lp("record", "-o", out, "--dynamic=writer,%s:*" % unused, "--", wprog)
    check(r.returncode == 0 and "%s (the library was not loaded: none of its functions traced)" % unused in r.stderr,
          "a library the program never loads: record says so", r.stderr)
    sb = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "pstrip"))
    sprog = sb.prog("recursion", ["-rdynamic"])
    subprocess.run(["strip", "--strip-all", sprog], check=True)
    out = os.path.join(tmp, "pstrip.t")
    r = lp("record", "-q", "--dynamic", "--backend=patch", "-o", out, "--", sprog)
    check(r.returncode == 0 and calls(lp, out).get("fib") == 1973,
          "patch: a stripped -rdynamic program's exported functions traced, fib 1973",
          r.stderr + str(calls(lp, out) if r.returncode == 0 else ""))


HEAP = r"""
#include "prog.h"
#include <stdio.h>
#include <stdlib.h>
COUNTED void *alloc_one(int n) { return malloc(n); }
COUNTED void leak_some(void) { for (int i = 0; i < 10; i++) alloc_one(100 + i); }
int main(void) { leak_some(); free(alloc_one(5)); puts("ok"); return 0; }
"""


@needs(patch_missing, "patch memory")
def group_patch_memory(lp, tmp):
    """--memory with patched functions: the heap stacks walk through the
    return addresses the runtime replaced (frame pointers kept), and name
    the real callers."""
    prog = build_c(tmp, "heapy", HEAP, ("-fno-omit-frame-pointer",))
    out = os.path.join(tmp, "heapy.t")
    r = lp("record", "-q", "--memory", *PATCH, "-o", out, "--", prog)
    if not check(r.returncode == 0 and r.stdout == "ok\n", "patch --memory: exit 0, the output", r.stderr):
        return
    heap = lp.json("report", "--memory", "--format", "json", out)
    stacks = sorted([f["function"] for f in x["stack"]][:3] for x in heap["sites"] if x["allocs"] >= 10)
    check(stacks == [["alloc_one", "leak_some", "main"]] or stacks == [["leak_some", "main",
                                                                         "__libc_start_call_main"]],
          "patch --memory: the 10 blocks' stack names their callers, no trampoline", stacks)


LIBCALLS = r"""
#include "prog.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
COUNTED void writer(int n)
{
	for (int i = 0; i < n; i++)
		if (write(1, "x", 1) != 1)
			return;
}
int main(int argc, char **argv)
{
	writer(100);
	puts("");
	printf("%zu\n", strlen(argv[0]) > 0 ? (size_t)argc : 0);
	return 0;
}
"""


@needs(patch_missing, "patch libcalls")
def group_patch_libcalls(lp, tmp):
    """--libcalls: each call through the program's PLT is NAME@plt under
    its caller, exactly the calls ltrace -c counts (and .plt.got's
    __cxa_finalize of the C runtime's exit code, which ltrace leaves out);
    user -> library -> syscall with --syscalls."""
    prog = build_c(tmp, "libcalls", LIBCALLS)
    want_out = "x" * 100 + "\n1\n"
    out = os.path.join(tmp, "lc.t")
    r = lp("record", "-q", "--dynamic", "--libcalls", "-o", out, "--", prog)
    if not check(r.returncode == 0 and r.stdout == want_out, "--dynamic --libcalls: exit 0, the output", r.stderr):
        return
    tree = lp.json("tree", "--format", "json", out)
    main = [n for t in tree["threads"] for n in t["calls"] if n["name"] == "main"]
    kids = {c["name"]: c for c in main[0]["children"]} if main else {}
    check(set(kids) == {"writer", "puts@plt", "printf@plt"} and kids["puts@plt"]["calls"] == 1 and
          kids["printf@plt"]["calls"] == 1 and
          [(c["name"], c["calls"]) for c in kids["writer"]["children"]] == [("write@plt", 100)],
          "--dynamic --libcalls: main -> writer -> write@plt x100, main -> puts@plt, printf@plt",
          json.dumps(main)[:800])
    out2 = os.path.join(tmp, "lc2.t")
    r = lp("record", "-q", "--libcalls", "-o", out2, "--", prog)
    c = calls(lp, out2) if r.returncode == 0 else {}
    check(r.returncode == 0 and c.get("write@plt") == 100 and "writer" not in c and "main" not in c,
          "--libcalls alone: the library calls, none of the program's functions", "%s %s" % (r.stderr, c))
    if samples.have("ltrace"):
        lt = os.path.join(tmp, "ltrace.txt")
        subprocess.run(["ltrace", "-c", "-o", lt, prog], stdout=subprocess.PIPE, check=True)
        with open(lt) as f:
            rows = [ln.split() for ln in f if ln.strip() and ln.split()[0][0].isdigit() and len(ln.split()) == 5]
        want = {row[4] + "@plt": int(row[3]) for row in rows}
        extra = {k: v for k, v in c.items() if k not in want}
        check(want and all(c.get(k) == v for k, v in want.items()) and set(extra) <= {"__cxa_finalize@plt"},
              "--libcalls: the counts ltrace -c gives, for each of its functions", "ltrace %s, layerprof %s" %
              (want, c))
    else:
        skip("--libcalls against ltrace -c", "ltrace is not installed")
    out3 = os.path.join(tmp, "lc3.t")
    r = lp("record", "-q", "--dynamic", "--libcalls", "--syscalls", "--syscall-filter", "write", "-o", out3,
           "--", prog)
    if check(r.returncode == 0, "--dynamic --libcalls --syscalls: exit 0", r.stderr):
        rep = lp.json("report", "--syscalls", "--format", "json", out3)
        rows = {(f["function"], f["syscall"]): f["calls"] for f in rep["by_function"]}
        check(rows.get(("write@plt", "write")) == 100, "user -> library -> syscall: 100 writes under write@plt",
              rows)
    r = lp("record", "-q", "--dynamic", "--libcalls", "--backend=uprobe", "-o", out3 + "x", "--", prog)
    check(r.returncode == 2 and "--libcalls needs the patch backend" in r.stderr,
          "--libcalls with the uprobe backend: usage error", r.stderr)


# C library calls whose arguments and results --libcalls decodes: strings
# (one cut at 48 bytes), a buffer as long as its count, an unreadable
# buffer (its pointer), NULL, open's mode only with O_CREAT, void free
LIBARGS = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char *p = malloc(100);
	int fd = open("/nonexistent/x", O_RDONLY);
	char path[4096];

	snprintf(path, sizeof(path), "%s.out", argv[0]);
	if (write(1, "hello\n", 6) != 6)
		return 1;
	strcpy(p, "a string that is quite a bit longer than forty-eight bytes, to be cut");
	printf("%zu %d\n", strlen(p), fd);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	if (write(fd, "tab\tquote\"", 10) != 10 || write(fd, NULL, 0) != 0)
		return 1;
	close(fd);
	if (write(-1, (void *)16, 5) != -1)
		return 1;
	free(p);
	free(NULL);
	return argc - 1;
}
"""


def replay_calls(lp, trace, *extra):
    """The replay's call lines of the first thread, without time columns."""
    r = lp("replay", *extra, trace)
    return [ln.split("| ", 1)[1] for ln in r.stdout.splitlines() if "| " in ln and not ln.startswith("#")]


@needs(patch_missing, "patch libargs")
def group_patch_libargs(lp, tmp):
    """--libcalls decodes the arguments and results of the C library
    functions of docs/libcalls.md; the program's own output and exit status
    stay its own."""
    prog = build_c(tmp, "libargs", LIBARGS, ["-fno-builtin"])
    out = os.path.join(tmp, "la.t")
    r = lp("record", "-q", "--libcalls", "-o", out, "--", prog, "x")
    if not check(r.returncode == 1 and r.stdout == "hello\n69 -1\n", "--libcalls with arguments: exit status "
                 "and output the program's", r.stdout + r.stderr):
        return
    lines = [ln for ln in replay_calls(lp, out) if not ln.startswith("__cxa_finalize")]
    ptr = lines[0].rsplit("= ", 1)[1].rstrip(";") if lines else "?"
    want = [
        "malloc@plt(100) = %s;" % ptr,
        'open@plt("/nonexistent/x", 0x0) = -1;',
        'snprintf@plt(%s, 4096, "%%s.out") = %d;' % ("0x", len(prog) + 4),
        'write@plt(1, "hello\\n", 6) = 6;',
        'strcpy@plt(%s, "a string that is quite a bit longer than forty-e"...) = %s;' % (ptr, ptr),
        'strlen@plt("a string that is quite a bit longer than forty-e"...) = 69;',
        'printf@plt("%zu %d\\n") = 6;',
        'open@plt("%s.out", 0x241, 0640) = 3;' % prog,
        'write@plt(3, "tab\\tquote\\"", 10) = 10;',
        "write@plt(3, NULL, 0) = 0;",
        "close@plt(3) = 0;",
        "write@plt(-1, 0x10, 5) = -1;",
        "free@plt(%s);" % ptr,
        "free@plt(NULL);",
    ]
    # snprintf's first argument is a stack address: compare its shape
    got = [re.sub(r"^snprintf@plt\(0x[0-9a-f]+,", "snprintf@plt(0x,", ln) for ln in lines]
    check(ptr.startswith("0x") and got == want, "--libcalls: each C library call with its arguments and result",
          "\n".join("%s | %s" % (a, b) for a, b in zip(got + [""] * len(want), want)))
    js = lp.json("replay", "--format", "json", out)
    ev = [e for e in js["threads"][0]["events"] if e["name"] == "close@plt"]
    check([(e["type"], e.get("args"), e.get("ret")) for e in ev] == [("entry", "3", None), ("exit", None, "0")],
          "replay --format json: args on the entry, ret on the exit", ev)
    # source filters: the calls kept keep their arguments
    out2 = os.path.join(tmp, "la2.t")
    r = lp("record", "-q", "--libcalls", "-F", "write@plt", "-o", out2, "--", prog, "x")
    got = replay_calls(lp, out2) if r.returncode == 1 else r.stderr
    check(got == [ln for ln in want if ln.startswith("write@plt")], "--libcalls -F write@plt: those calls, "
          "with their arguments", got)
    # the whole C library patched: the runtime's own calls into it (errno,
    # the clock, mmap, ...) run untraced instead of recursing (they once
    # overflowed the stack at the first call); the program's run unchanged
    out4 = os.path.join(tmp, "la4.t")
    r = lp("record", "-q", "--dynamic=main,libc.so.6:*", "-o", out4, "--", prog, "x")
    c = calls(lp, out4) if r.returncode == 1 else {}
    check(r.returncode == 1 and r.stdout == "hello\n69 -1\n" and c.get("main") == 1 and c.get("free", 0) >= 2 and
          "__nanosleep" not in c and "dl_iterate_phdr" not in c,
          "--dynamic=main,libc.so.6:*: the program's output and status, main and libc's free traced, none of the "
          "runtime's own calls", "%s %s %s" % (r.returncode, r.stdout + r.stderr, sorted(c)[:40]))
    # a library --dynamic names (FILE:GLOB): its own calls into the C
    # library nest under its function, under the program's call into it
    lib = os.path.join(tmp, "libsay.so")
    with open(lib + ".c", "w") as f:
        f.write("#include <string.h>\n#include <unistd.h>\n"
                "int lib_say(const char *s) { return (int)write(1, s, strlen(s)); }\n")
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-fno-builtin", "-o", lib, lib + ".c"], check=True)
    user = build_c(tmp, "usesay", 'int lib_say(const char *s);\n'
                   'int main(void) { lib_say("one\\n"); lib_say("two\\n"); return 0; }\n',
                   ["-L", tmp, "-lsay", "-Wl,-rpath," + tmp])
    out3 = os.path.join(tmp, "la3.t")
    r = lp("record", "-q", "--dynamic=*,libsay.so:*", "--libcalls", "-o", out3, "--", user)
    got = [ln.strip() for ln in replay_calls(lp, out3)] if r.returncode == 0 else [r.stderr]
    want = ["main() {"]
    for word in ("one", "two"):
        want += ["lib_say@plt() {", "lib_say() {", 'strlen@plt("%s\\n") = 4;' % word,
                 'write@plt(1, "%s\\n", 4) = 4;' % word, "} /* lib_say */", "} /* lib_say@plt */"]
    want += ["} /* main */", "__cxa_finalize@plt();", "__cxa_finalize@plt();"]
    check(r.stdout == "one\ntwo\n" and got == want, "--libcalls with a library's functions: its calls into the "
          "C library nested under it, with their arguments", "\n".join(got))


# A loop whose instructions' places are known (x86-64): probes at +8 (a
# jump over imul, add), +13 (add, cmp) and +18 (a trap: the loop's exit
# lands inside the bytes a jump would take; between the cmp and the jne
# that reads its flags), and at +22 (ret, reached once)
PROBED = r"""
#include <stdio.h>
#include <stdlib.h>
__asm__(".text\n.globl work\n.type work, @function\nwork:\n"
        "\txor %eax, %eax\n\txor %ecx, %ecx\n\ttest %edi, %edi\n\tjle 2f\n"
        "1:\n\timul $7, %ecx, %edx\n\tadd %edx, %eax\n\tadd $1, %ecx\n\tcmp %ecx, %edi\n"
        "\tmov %eax, %edx\n\tjne 1b\n2:\n\tret\n.size work, .-work\n");
int work(int n);
__attribute__((noinline)) int twice(int n) { return work(n) + work(n / 2); }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;
	printf("%d\n", twice(n));
	return 0;
}
"""


def report_probes(lp, trace):
    return {p["name"]: p["hits"] for p in lp.json("report", "--format", "json", trace).get("probes", [])}


# A caller that keeps values in registers the calling convention lets a
# callee change, because it knows this callee does not (what -fipa-ra and
# link-time optimisation do): the patched callee's entry and return paths
# must give every register back (python3 died of this under --dynamic)
KEEPREGS = r"""
#include <stdio.h>
__asm__(".text\n.p2align 4\n.globl leaf\n.type leaf, @function\nleaf:\n\tlea 1(%rdi), %eax\n\tret\n"
        ".size leaf, .-leaf\n.p2align 4\n.globl keeper\n.type keeper, @function\nkeeper:\n"
        "\tmov $0x1111, %r11\n\tmov $0x2222, %rsi\n\tmov $0x3333, %rcx\n\tmov $0x4444, %r8\n"
        "\tmov $0x5555, %r9\n\tmov $0x6666, %r10\n\tmov $0x7777, %rdx\n\tmovq %rdx, %xmm9\n"
        "\tmovq %rdx, %xmm15\n\tmov $5, %edi\n\tsub $8, %rsp\n\tcall leaf\n\tadd $8, %rsp\n"
        "\txor $0x1111, %r11\n\txor $0x2222, %rsi\n\txor $0x3333, %rcx\n\txor $0x4444, %r8\n"
        "\txor $0x5555, %r9\n\txor $0x6666, %r10\n\txor $5, %rdi\n\tmovq %xmm9, %rax\n\txor $0x7777, %rax\n"
        "\tor %rax, %r11\n\tmovq %xmm15, %rax\n\txor $0x7777, %rax\n\tor %rax, %r11\n"
        "\tor %rsi, %r11\n\tor %rcx, %r11\n\tor %r8, %r11\n\tor %r9, %r11\n\tor %r10, %r11\n"
        "\tor %rdi, %r11\n\tmov %r11, %rax\n\tret\n.size keeper, .-keeper\n");
long keeper(void);
int main(void)
{
	long bad = 0;
	for (int i = 0; i < 3; i++)
		bad |= keeper();
	printf("%ld\n", bad);
	return 0;
}
"""


@needs(patch_missing, "patch registers")
def group_patch_registers(lp, tmp):
    """Every register a caller keeps across a call to a patched function
    (not only those the calling convention keeps) is as it was (x86-64)."""
    if os.uname().machine != "x86_64":
        skip("patch registers", "the program is x86-64 assembly")
        return
    prog = build_c(tmp, "keepregs", KEEPREGS)
    out = os.path.join(tmp, "keepregs.t")
    r = lp("record", "-q", "--dynamic=leaf", "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout == "0\n" and calls(lp, out) == {"leaf": 3},
          "--dynamic=leaf: r8-r11, rcx, rsi, rdi, xmm9, xmm15 kept across its 3 calls", r.stdout + r.stderr)


@needs(patch_missing, "patch probes")
def group_patch_probes(lp, tmp):
    """--probe FUNCTION+OFFSET: an instruction of the program probed (one
    engine with the function patches: a jump to a trampoline, or a trap
    where no jump fits), each run of it an event, its registers and flags
    untouched; report counts the hits, replay shows them inside their
    function; bad locations are refused with the reason."""
    if os.uname().machine != "x86_64":
        skip("patch probes", "the probed program is x86-64 assembly (the aarch64 guest has its own)")
        return
    prog = build_c(tmp, "probed", PROBED)
    native = subprocess.run([prog, "30"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    check(native == "%d\n" % (7 * 30 * 29 // 2 + 7 * 15 * 14 // 2), "probed: the program's own output", native)
    out = os.path.join(tmp, "probes.t")
    locs = "work+8,work+13,work+0x12,work+22"
    r = lp("record", "-q", "--probe", locs, "-o", out, "--", prog, "30")
    if check(r.returncode == 0 and r.stdout == native and not r.stderr,
             "--probe: exit 0, the output the program's own (registers and flags kept)", r.stdout + r.stderr):
        got = report_probes(lp, out)
        check(got == {"work+0x8": 45, "work+0xd": 45, "work+0x12": 45, "work+0x16": 2},
              "--probe: every run of each instruction (30 + 15 rounds, 2 returns)", got)
        check(calls(lp, out) == {}, "--probe alone: no function traced", calls(lp, out))
    out2 = os.path.join(tmp, "probes2.t")
    r = lp("record", "-q", "--dynamic", "--probe", "work+0x12", "-o", out2, "--", prog, "3")
    if check(r.returncode == 0 and r.stdout == "%d\n" % (7 * 3 + 0), "--dynamic --probe: exit 0, the output",
             r.stdout + r.stderr):
        lines = [ln.strip() for ln in replay_calls(lp, out2)]
        want = (["main() {", "twice() {", "work() {"] + ["[probe] work+0x12"] * 3 + ["} /* work */", "work() {",
                "[probe] work+0x12", "} /* work */", "} /* twice */", "} /* main */"])
        check(lines == want, "--dynamic --probe: replay shows each hit inside its function", "\n".join(lines))
    for loc, code, words in (("work", 2, "give FUNCTION+OFFSET"), ("work+0", 2, "give FUNCTION+OFFSET"),
                             ("work+1", 1, "not an instruction boundary (an instruction starts at +0)"),
                             ("nosuch+4", 1, "has no function 'nosuch'"),
                             ("work+100", 1, "beyond the end of work (23 bytes)"),
                             ("work+8,work+11", 1, "--probe 'work+11': its patch would overlap work+0x8's")):
        r = lp("record", "-q", "--probe", loc, "-o", os.path.join(tmp, "bad.t"), "--", prog, "3")
        check(r.returncode == code and words in r.stderr and r.stdout == "",
              "--probe %s: exit %d, the reason, the program not run" % (loc, code), "%d %s" % (r.returncode, r.stderr))
    r = lp("record", "-q", "--dynamic", "--probe", "work+2", "-o", os.path.join(tmp, "bad.t"), "--", prog, "3")
    check(r.returncode == 1 and "its patch would overlap work's" in r.stderr,
          "--dynamic --probe work+2: refused (inside the entry's patch)", r.stderr)
    r = lp("record", "-q", "--backend=uprobe", "--probe", "work+8", "-o", os.path.join(tmp, "bad.t"), "--", prog)
    check(r.returncode == 2 and "--probe needs the patch backend" in r.stderr, "--probe with uprobes: usage error",
          r.stderr)


@needs(patch_missing, "patch refuse")
def group_patch_refuse(lp, tmp):
    """What the patch backend refuses, with the reason and without running
    the program; an unprivileged user needs nothing more.  (C++ programs
    with exceptions are traced on x86-64: the programs group holds them to
    their expectations.)"""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "pref"))
    out = os.path.join(tmp, "pref.t")
    static = b.prog("recursion", ["-static"])
    r = lp("record", "-q", "--dynamic", "--backend=patch", "-o", out, "--", static)
    check(r.returncode == 1 and "statically linked" in r.stderr and "fib(15)" not in r.stdout,
          "patch: a static program: exit 1, the reason, the program not run", r.stdout + r.stderr)
    # the recorder killed: the patched program runs on to its end, its
    # output whole (its runtime stops waiting for a drain that is gone)
    loop = build_c(tmp, "pslowloop", SLOWLOOP)
    rec = subprocess.Popen([lp.exe, "record", "-q", "--dynamic", "--backend=patch", "-o",
                            os.path.join(tmp, "pkilled.t"), "--", loop], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    time.sleep(0.3)
    rec.kill()
    out_, err_ = rec.communicate(timeout=60)
    check(out_.strip() == "done", "patch: the program runs to its end without its recorder", out_ + err_)
    plain = b.prog("recursion")
    os.chmod(tmp, 0o755)
    for d in (os.path.dirname(plain), os.path.dirname(os.path.dirname(plain))):
        os.chmod(d, 0o755)
    udir = os.path.join(tmp, "pnobody")
    os.makedirs(udir, exist_ok=True)
    os.chown(udir, NOBODY, NOBODY)
    if os.geteuid() == 0:
        r = subprocess.run([lp.exe, "record", "-q", "--dynamic", "--backend=patch", "-o", os.path.join(udir, "t"),
                            "--", plain], preexec_fn=lambda: (os.setgid(NOBODY), os.setuid(NOBODY)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        check(r.returncode == 0 and calls(lp, os.path.join(udir, "t")).get("fib") == 1973,
              "patch as an unprivileged user: exit 0, fib 1973 calls", "%d: %s" % (r.returncode, r.stderr))


@needs(uprobes_missing, "uprobe select")
def group_select(lp, tmp):
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "sel"))
    prog = b.prog("recursion")
    out = os.path.join(tmp, "sel.t")
    r = lp("record", "-q", "--dynamic=fi*,nothing", "--backend=uprobe", "-o", out, "--", prog)
    check(r.returncode == 0, "record --dynamic='fi*,nothing' exits 0", r.stderr)
    check(calls(lp, out) == {"fib": 1973}, "--dynamic='fi*': only fib, 1973 calls", calls(lp, out))
    for args, code, words in (
            (["--dynamic=zz*"], 1, "no function of the program matches"),
            (["--dynamic="], 2, "needs a list"),
            (["--dynamic=libc.so.6:malloc", "--backend=uprobe"], 1, "not the uprobe backend"),
            (["--dynamic", "--backend=breakpoints"], 2, "auto, patch, uprobe or ptrace"),
            (["--backend=uprobe"], 2, "--backend needs --dynamic"),
            (["--dynamic", "--backend=uprobe", "-F", "fib"], 2, "do not apply to the uprobe backend"),
            (["--dynamic", "--backend=uprobe", "--depth", "2"], 2, "do not apply to the uprobe backend")):
        r = lp("record", "-q", "-o", os.path.join(tmp, "sel-bad.t"), *args, "--", prog)
        check(r.returncode == code and words in r.stderr and r.stderr.count("\n") <= 2 + (code == 2) * 40,
              "record %s: exit %d, '%s'" % (" ".join(args), code, words), "%d: %s" % (r.returncode, r.stderr))
        check(not os.path.exists(os.path.join(tmp, "sel-bad.t")), "record %s: no trace made" % " ".join(args))
    # a stripped program: its dynamic symbols (-rdynamic exports them), or none
    for rdynamic in (True, False):
        sb = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "strip%d" % rdynamic))
        sprog = sb.prog("recursion", ["-rdynamic"] if rdynamic else [])
        subprocess.run(["strip", "--strip-all", sprog], check=True)
        out = os.path.join(tmp, "strip%d.t" % rdynamic)
        r = lp("record", "-q", *UPROBE, "-o", out, "--", sprog)
        if rdynamic:
            check(r.returncode == 0 and calls(lp, out).get("fib") == 1973,
                  "stripped -rdynamic program: its exported functions traced, fib 1973",
                  r.stderr + str(calls(lp, out) if r.returncode == 0 else ""))
        else:
            check(r.returncode == 1 and "no function symbols" in r.stderr,
                  "stripped program without exports: exit 1, 'no function symbols'", r.stderr)


@needs(uprobes_missing, "uprobe syscalls")
def group_syscalls(lp, tmp):
    """user -> syscall with neither rebuilt: sys_writer's 100 writes in
    writer, from --dynamic's functions and --syscalls together."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "sys"))
    prog = b.prog("sys_writer")
    out = os.path.join(tmp, "sys.t")
    r = lp("record", "-q", *UPROBE, "--syscalls", "--syscall-filter", "write", "-o", out, "--", prog)
    if not check(r.returncode == 0, "record --dynamic --syscalls of sys_writer exits 0", r.stderr):
        return
    rep = lp.json("report", "--syscalls", "--format", "json", out)
    rows = {(f["function"], f["syscall"]): f["calls"] for f in rep["by_function"]}
    check(rows.get(("writer", "write")) == 100, "100 writes attributed to writer", rows)
    check(calls(lp, out).get("writer") == 1, "writer called once", calls(lp, out))


@needs(uprobes_missing, "uprobe refuse")
def group_refuse(lp, tmp):
    """C++ programs, a user who may not define uprobes; nothing is left in
    tracefs after a recording."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "ref"))
    prog = b.prog("exceptions")
    out = os.path.join(tmp, "ref.t")
    r = lp("record", "-q", *UPROBE, "-o", out, "--", prog)
    check(r.returncode == 1 and "C++ exceptions" in r.stderr and not os.path.exists(out),
          "a C++ program with exceptions: exit 1, the reason, no trace, the program not run", r.stderr)
    plain = b.prog("recursion")
    os.chmod(tmp, 0o755)
    os.chmod(os.path.dirname(plain), 0o755)
    udir = os.path.join(tmp, "nobody")
    os.makedirs(udir, exist_ok=True)
    os.chown(udir, NOBODY, NOBODY)
    r = subprocess.run([lp.exe, "record", "-q", *UPROBE, "-o", os.path.join(udir, "t"), "--", plain],
                       preexec_fn=lambda: (os.setgid(NOBODY), os.setuid(NOBODY)), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    check(r.returncode == 1 and "root" in r.stderr and "fib(15)" not in r.stdout,
          "as an unprivileged user: exit 1, the reason names root, the program not run",
          "%d: %s %s" % (r.returncode, r.stdout, r.stderr))
    # a recording's probes go with it (its group is named after its pid)
    rec = subprocess.Popen([lp.exe, "record", "-q", *UPROBE, "-o", os.path.join(tmp, "ref2.t"), "--", plain],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    out_, err_ = rec.communicate(timeout=60)
    check(rec.returncode == 0, "a recording for the probe check exits 0", err_)
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        path = os.path.join(root, "uprobe_events")
        if os.path.exists(path):
            with open(path) as f:
                left = [ln for ln in f if ":layerprofu_%d/" % rec.pid in ln]
            check(not left, "the recording's probes are gone from %s" % path, left[:3])
            killed_recorder(lp, tmp, path)
            break


def probes_of(path, pid):
    with open(path) as f:
        return [ln for ln in f if ":layerprofu_%d/" % pid in ln]


def killed_recorder(lp, tmp, path):
    """A recorder killed with SIGKILL leaves its probe definitions (they
    trap nothing once its events are closed): the program runs on to its
    end, and the next recording removes them."""
    loop = build_c(tmp, "slowloop", SLOWLOOP)
    rec = subprocess.Popen([lp.exe, "record", "-q", *UPROBE, "-o", os.path.join(tmp, "killed.t"), "--", loop],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.time() + 10
    while time.time() < deadline and not probes_of(path, rec.pid):
        time.sleep(0.01)
    time.sleep(0.2)
    check(bool(probes_of(path, rec.pid)), "a running recording's probes are defined")
    rec.kill()
    # the program holds the pipe until its end: its output says it ran on
    out_, err_ = rec.communicate(timeout=30)
    check(out_.strip() == "done", "the program ran to its end without its recorder", out_ + err_)
    check(bool(probes_of(path, rec.pid)), "the killed recorder's probe definitions are left")
    r = lp("record", "-q", *UPROBE, "-o", os.path.join(tmp, "after.t"), "--", loop)
    check(r.returncode == 0 and r.stdout.strip() == "done" and calls(lp, os.path.join(tmp, "after.t")).get("tick") == 500,
          "the next recording: tick 500 times", r.stderr)
    check(not probes_of(path, rec.pid), "the next recording removed the killed recorder's probes")


def setup(build):
    return (samples.Layerprof(build),)


GROUPS = {
    "patch_programs": group_patch_programs,
    "patch_programs_libcalls": group_patch_programs_libcalls,
    "patch_shapes": group_patch_shapes,
    "patch_select": group_patch_select,
    "patch_refuse": group_patch_refuse,
    "patch_memory": group_patch_memory,
    "patch_libcalls": group_patch_libcalls,
    "patch_libargs": group_patch_libargs,
    "patch_traps": group_patch_traps,
    "patch_probes": group_patch_probes,
    "patch_registers": group_patch_registers,
    "patch_edges": group_patch_edges,
    "ptrace_programs": group_ptrace_programs,
    "ptrace_edges": group_ptrace_edges,
    "ptrace_jobs": group_ptrace_jobs,
    "ptrace_shapes": group_ptrace_shapes,
    "ptrace_select": group_ptrace_select,
    "ptrace_syscalls": group_ptrace_syscalls,
    "ptrace_interrupt": group_ptrace_interrupt,
    "programs": group_programs,
    "shapes": group_shapes,
    "select": group_select,
    "syscalls": group_syscalls,
    "refuse": group_refuse,
}

if __name__ == "__main__":
    sys.exit(run_groups(GROUPS, setup, prefix="layerprof-dynamic-"))
