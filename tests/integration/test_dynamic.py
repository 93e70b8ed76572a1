#!/usr/bin/env python3
"""Tracing programs built without -finstrument-functions (`record
--dynamic`): the sample programs of tests/programs built plain, their
traces held against the same expectations (tests/programs/expect) as the
instrumented builds', and against the instrumented build's own trace;
function selection; refusals.

Needs root and the kernel's uprobe PMU; skips with the reason otherwise.

usage: test_dynamic.py --build BUILD [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
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

# The scenarios whose whole expectation holds under the uprobe backend,
# and why each other one is left out (said in the output, not hidden).
LEFT_OUT = {
    "killme": "timing-dependent (the programs group leaves it out too)",
    "busy": "timing-dependent (the programs group leaves it out too)",
    "busy_threads": "timing-dependent (the programs group leaves it out too)",
    "dlopen": "a shared library's functions: --dynamic traces the program's own so far",
    "dlopen_keep": "a shared library's functions: --dynamic traces the program's own so far",
    "execer_target": "a second program's functions: --dynamic probes the program it starts",
    "spawner_spawn": "a second program's functions: --dynamic probes the program it starts",
    "exceptions": "C++ exceptions: the uprobe backend refuses such programs (group refuse checks it)",
    "templates": "C++ with exception tables: the uprobe backend refuses such programs",
}

class PlainBuilder(samples.Builder):
    """The sample programs as a developer builds them: no instrumentation."""

    def flags(self):
        return [self.opt, "-g", "-pthread", "-I", samples.PROGS]


def group_programs(lp, tmp):
    for cc, cxx, opt in VARIANTS:
        if not samples.have(cc):
            skip("plain programs with %s" % cc, "%s is not installed" % cc)
            continue
        b = PlainBuilder(cc, cxx, opt, os.path.join(tmp, "plain"))
        for exp in samples.load_expectations():
            name = exp["_name"]
            why = LEFT_OUT.get(name) or next((v for k, v in LEFT_OUT.items()
                                               if k.endswith("_") and name.startswith(k)), None)
            if why:
                skip("%s %s %s --dynamic" % (name, cc, opt), why)
                continue
            tag = "%s %s %s --dynamic" % (name, cc, opt)
            binary = samples.prepare(exp, b)
            out = os.path.join(tmp, "d-%s-%s%s" % (name, cc, opt))
            r = samples.record(lp, out, [binary] + samples.prog_args(exp, b), extra=("--dynamic",))
            if not check(r.returncode == samples.expected_exit(exp), "%s: exit status passed through" % tag,
                         "got %d, stderr %s" % (r.returncode, r.stderr.strip()[-500:])):
                continue
            samples.check_expectations(tag, exp, lp.json("report", "--format", "json", out),
                                       lp.json("tree", "--format", "json", out))


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
int main(void)
{
	int s = 0;
	for (int i = 0; i < 100; i++)
		tiny();
	for (int i = 0; i < 7; i++)
		s += looped(3);
	printf("%d\n", s);
	return 0;
}
"""


def group_shapes(lp, tmp):
    """Functions of 1 byte and functions whose entry is a branch target are
    traced like any other: a probe is one trap instruction."""
    prog = build_c(tmp, "tiny", TINY, ("-fcf-protection=none",))
    r = subprocess.run(["nm", "-S", prog], stdout=subprocess.PIPE, universal_newlines=True)
    size = [ln.split()[1] for ln in r.stdout.splitlines() if ln.endswith(" tiny") and len(ln.split()) == 4]
    check(size == ["0000000000000001"], "tiny is 1 byte long (nm -S)", size)
    out = os.path.join(tmp, "tiny.t")
    r = lp("record", "-q", "--dynamic", "-o", out, "--", prog)
    check(r.returncode == 0 and r.stdout.strip() == "42", "tiny: record exits 0, the program's output unchanged",
          r.stdout + r.stderr)
    c = calls(lp, out)
    check(c.get("tiny") == 100 and c.get("looped") == 7 and c.get("main") == 1,
          "tiny: 100 calls of a 1-byte function, 7 of a function whose entry is a loop's target", c)


def group_select(lp, tmp):
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "sel"))
    prog = b.prog("recursion")
    out = os.path.join(tmp, "sel.t")
    r = lp("record", "-q", "--dynamic=fi*,nothing", "-o", out, "--", prog)
    check(r.returncode == 0, "record --dynamic='fi*,nothing' exits 0", r.stderr)
    check(calls(lp, out) == {"fib": 1973}, "--dynamic='fi*': only fib, 1973 calls", calls(lp, out))
    for args, code, words in (
            (["--dynamic=zz*"], 1, "no function of the program matches"),
            (["--dynamic="], 2, "needs a list"),
            (["--dynamic=libc.so.6:malloc"], 2, "not traced yet"),
            (["--dynamic", "--backend=patch"], 2, "auto or uprobe"),
            (["--backend=uprobe"], 2, "--backend needs --dynamic"),
            (["--dynamic", "-F", "fib"], 2, "do not apply to --dynamic"),
            (["--dynamic", "--depth", "2"], 2, "do not apply to --dynamic")):
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
        r = lp("record", "-q", "--dynamic", "-o", out, "--", sprog)
        if rdynamic:
            check(r.returncode == 0 and calls(lp, out).get("fib") == 1973,
                  "stripped -rdynamic program: its exported functions traced, fib 1973",
                  r.stderr + str(calls(lp, out) if r.returncode == 0 else ""))
        else:
            check(r.returncode == 1 and "no function symbols" in r.stderr,
                  "stripped program without exports: exit 1, 'no function symbols'", r.stderr)


def group_syscalls(lp, tmp):
    """user -> syscall with neither rebuilt: sys_writer's 100 writes in
    writer, from --dynamic's functions and --syscalls together."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "sys"))
    prog = b.prog("sys_writer")
    out = os.path.join(tmp, "sys.t")
    r = lp("record", "-q", "--dynamic", "--syscalls", "--syscall-filter", "write", "-o", out, "--", prog)
    if not check(r.returncode == 0, "record --dynamic --syscalls of sys_writer exits 0", r.stderr):
        return
    rep = lp.json("report", "--syscalls", "--format", "json", out)
    rows = {(f["function"], f["syscall"]): f["calls"] for f in rep["by_function"]}
    check(rows.get(("writer", "write")) == 100, "100 writes attributed to writer", rows)
    check(calls(lp, out).get("writer") == 1, "writer called once", calls(lp, out))


def group_refuse(lp, tmp):
    """C++ programs, a user who may not define uprobes; nothing is left in
    tracefs after a recording."""
    b = PlainBuilder("gcc", "g++", "-O2", os.path.join(tmp, "ref"))
    prog = b.prog("exceptions")
    out = os.path.join(tmp, "ref.t")
    r = lp("record", "-q", "--dynamic", "-o", out, "--", prog)
    check(r.returncode == 1 and "C++ exceptions" in r.stderr and not os.path.exists(out),
          "a C++ program with exceptions: exit 1, the reason, no trace, the program not run", r.stderr)
    plain = b.prog("recursion")
    os.chmod(tmp, 0o755)
    os.chmod(os.path.dirname(plain), 0o755)
    udir = os.path.join(tmp, "nobody")
    os.makedirs(udir, exist_ok=True)
    os.chown(udir, NOBODY, NOBODY)
    r = subprocess.run([lp.exe, "record", "-q", "--dynamic", "-o", os.path.join(udir, "t"), "--", plain],
                       preexec_fn=lambda: (os.setgid(NOBODY), os.setuid(NOBODY)), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    check(r.returncode == 1 and "root" in r.stderr and "fib(15)" not in r.stdout,
          "as an unprivileged user: exit 1, the reason names root, the program not run",
          "%d: %s %s" % (r.returncode, r.stdout, r.stderr))
    # a recording's probes go with it (its group is named after its pid)
    rec = subprocess.Popen([lp.exe, "record", "-q", "--dynamic", "-o", os.path.join(tmp, "ref2.t"), "--", plain],
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
    loop = build_c(tmp, "slowloop", r"""
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
""")
    rec = subprocess.Popen([lp.exe, "record", "-q", "--dynamic", "-o", os.path.join(tmp, "killed.t"), "--", loop],
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
    r = lp("record", "-q", "--dynamic", "-o", os.path.join(tmp, "after.t"), "--", loop)
    check(r.returncode == 0 and r.stdout.strip() == "done" and calls(lp, os.path.join(tmp, "after.t")).get("tick") == 500,
          "the next recording: tick 500 times", r.stderr)
    check(not probes_of(path, rec.pid), "the next recording removed the killed recorder's probes")


def setup(build):
    if os.geteuid() != 0:
        skip("test_dynamic", "uprobes need root")
        return None
    if not os.path.exists(UPROBE_PMU):
        skip("test_dynamic", "this kernel has no uprobe PMU (%s)" % UPROBE_PMU)
        return None
    return (samples.Layerprof(build),)


GROUPS = {
    "programs": group_programs,
    "shapes": group_shapes,
    "select": group_select,
    "syscalls": group_syscalls,
    "refuse": group_refuse,
}

if __name__ == "__main__":
    sys.exit(run_groups(GROUPS, setup, prefix="layerprof-dynamic-"))
