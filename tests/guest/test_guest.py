#!/usr/bin/env python3
"""The target side on a real ARM kernel: a Debian 12 guest under
qemu-system (tests/guest/guestvm.py), the project cross-built against the
guest's root file system and copied in, and the tests run inside it on its
own kernel, or from this machine against its agent over qemu's user-mode
network.

groups (in this order):
  probe     what the guest kernel allows (ptrace, perf events, tracepoints,
            uprobes, eBPF), tried by a small program; printed for docs/
  unit      the target side's unit tests and fuzz corpora (scripts/cross-test's
            build), which under qemu-user cannot reach a kernel
  samples   every sample program of tests/programs under `layerprof record` in
            the guest, with the exact counts of tests/programs/expect
  memory    `record --memory` in the guest: leaks, threads, fork
  syscalls  `record --syscalls` with each backend: ptrace and tracepoints on
            both guests, eBPF where the kernel has it (required on aarch64)
  kernel    `record --kernel`: test_kernel's page faults (the software event,
            ARM having no exceptions:page_fault_user), sleeps and their timer
            wake-ups, pipe wake-ups by the writer, preemption
  sync      `record --sync`: test_sync's exact operations per kind on the
            sync_* programs, armhf also built with 64-bit time; report
            --sync's producer/consumer verdict on sync_prodcons
  counters  `record --counters`: what each guest cannot count and why,
            per-function page faults and task-clock of ctr_pages; on
            aarch64 cycles, read(2) and with perf_user_access=1 (rdpmc)
  live      the guest's agent driven by this machine's `layerprof live`:
            exact counts, --syscalls, --memory, start/stop, filters
  noboot    a guest that cannot boot fails in time, with its console

--quick runs the subset CI runs: probe, a few samples, the syscall backends
on sys_writer, the kernel layer on kern_sleep, one live session with its
syscalls, and noboot.

usage: test_guest.py --arch aarch64|armhf --host-build DIR [--cross-build DIR]
                     [--quick] [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import argparse
import copy
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INTEGRATION = os.path.join(ROOT, "tests", "integration")
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
sys.path.insert(0, INTEGRATION)
import guestvm  # noqa: E402
import harness  # noqa: E402
import run as it  # noqa: E402  (the sample programs' builders and expectations)
import test_live as tl  # noqa: E402
import test_memory as tm  # noqa: E402
import test_kernel as tk  # noqa: E402
import test_syscalls as ts  # noqa: E402
import test_sync as tsync  # noqa: E402
import test_counters as tc  # noqa: E402
from harness import check, skip  # noqa: E402

OPT = guestvm.OPT
LP = OPT + "/bin/layerprof"
AGENT_TOKEN = "/root/agent-token"
# the sample programs of the quick run
QUICK_SAMPLES = ["recursion", "threads", "forker", "signals", "longjmp", "dlopen", "execer"]
# the peers (valgrind, heaptrack, strace) run on this machine: not on the
# guest's programs
tm.PEERS = False
ts.PEERS = False
tk.PEERS = False


class Ctx:
    """What every group gets: the guest, this machine's layerprof, the
    architecture, the directory of programs (the same path in the guest) and
    the options."""

    def __init__(self, guest, arch, host_build, cross_build, progs, tmp, quick):
        self.guest = guest
        self.arch = arch
        self.a = guestvm.ARCHES[arch]
        self.host_lp = it.Layerprof(host_build)
        self.cross_build = cross_build
        self.progs = progs
        self.tmp = tmp
        self.quick = quick
        self.probe = {}


class GuestLayerprof(tm.Layerprof):
    """The layerprof command in the guest, with the interface of the suites'
    own Layerprof classes (test_memory's: json() gives (document or None,
    completed process), as test_syscalls' does): lp(*args) runs it there,
    where the directories the tests name exist at the same paths."""

    def __init__(self, guest):
        self.g = guest
        self.exe = LP

    def __call__(self, *args, timeout=300, env=None, **kw):
        return self.g.run("exec %s %s" % (LP, " ".join(shlex.quote(a) for a in args)), timeout=timeout,
                          check=False)


def batch(guest, steps, workdir, timeout=1800):
    """Runs [(name, command line)] one after the other in the guest with a
    single ssh connection, and returns {name: (exit status, stdout,
    stderr)}; workdir (a path of this machine's, made in the guest too)
    holds their outputs."""
    script = ["set +e", "mkdir -p %s" % shlex.quote(workdir), "cd %s" % shlex.quote(workdir)]
    for name, cmd in steps:
        script.append("(%s) >%s.out 2>%s.err </dev/null; echo $? >%s.rc" % (cmd, name, name, name))
    guest.run("\n".join(script), timeout=timeout)
    local = workdir + ".got"
    guest.get(workdir, local)
    out = {}
    for name, _ in steps:
        def read(ext):
            try:
                with open(os.path.join(local, name + ext), errors="replace") as f:
                    return f.read()
            except OSError:
                return ""
        rc = read(".rc").strip()
        out[name] = (int(rc) if rc.lstrip("-").isdigit() else None, read(".out"), read(".err"))
    return out


def cc(ctx, src, out, *flags, cxx=False):
    comp = ctx.a["prefix"] + ("g++" if cxx else "gcc")
    r = it.run([comp, "-O2", "-g", "-pthread", "-I", PROGS] + list(flags) + [src, "-o", out])
    if r.returncode:
        raise RuntimeError("cannot build %s: %s" % (out, r.stderr))
    return out


# ---------------------------------------------------------------- groups

def group_probe(ctx):
    probe = cc(ctx, os.path.join(HERE, "probe.c"), os.path.join(ctx.progs, "probe"), "-std=c11", "-D_GNU_SOURCE")
    ctx.guest.put(ctx.progs, ctx.progs)
    r = ctx.guest.run(probe, check=False)
    try:
        ctx.probe = json.loads(r.stdout)
    except ValueError:
        ctx.probe = {}
    if not check(r.returncode == 0 and ctx.probe, "%s: the probe runs in the guest" % ctx.arch, r.stderr):
        return
    want = "aarch64" if ctx.arch == "aarch64" else "armv7l"
    check(ctx.probe["machine"] == want, "%s: the guest is %s" % (ctx.arch, want), ctx.probe["machine"])
    print("probe %s: kernel %s: %s" % (ctx.arch, ctx.probe["kernel"], json.dumps(ctx.probe["facilities"],
                                                                                  sort_keys=True)))
    f = ctx.probe["facilities"]
    # what layerprof needs of any kernel it supports
    for what in ("ptrace", "perf_sw", "perf_clockid", "tracepoint"):
        check(f.get(what) is True, "%s: the kernel allows %s" % (ctx.arch, what), f.get(what))


def facility(ctx, name):
    return ctx.probe.get("facilities", {}).get(name) is True


def group_unit(ctx):
    """The unit tests of the cross-test build, on the guest's kernel."""
    build = ctx.cross_build
    if not build or not os.path.exists(os.path.join(build, "CTestTestfile.cmake")):
        skip("%s unit tests" % ctx.arch, "no cross-test build (scripts/cross-test %s makes build-%s)"
             % (ctx.arch, ctx.arch))
        return
    r = it.run(["ctest", "--show-only=json-v1"], cwd=build)
    tests = json.loads(r.stdout)["tests"]
    ctx.guest.put(build, build)
    for d in ("fuzz/corpus", "fuzz/corpus_wire"):
        if os.path.isdir(os.path.join(ROOT, d)):
            ctx.guest.put(os.path.join(ROOT, d), os.path.join(ROOT, d))
    steps = []
    for t in tests:
        cmd = t["command"]
        # drop the emulator (qemu-user and its -L) that ctest runs them with
        while cmd and not cmd[0].startswith(build):
            cmd = cmd[1:]
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        cwd = props.get("WORKING_DIRECTORY", build)
        steps.append((t["name"], "cd %s && timeout 600 %s" % (shlex.quote(cwd), " ".join(shlex.quote(c)
                                                                                        for c in cmd))))
    t0 = time.monotonic()
    got = batch(ctx.guest, steps, os.path.join(ctx.tmp, "unit"), timeout=3600)
    for name, _ in steps:
        rc, out, err = got[name]
        check(rc == 0, "%s guest: %s" % (ctx.arch, name), "exit %s: %s" % (rc, (out + err)[-1500:]))
    print("time %s: unit tests in the guest: %.0f s" % (ctx.arch, time.monotonic() - t0))


def group_samples(ctx):
    """Every sample program (C, and C++ when the cross g++ is there) under
    `layerprof record` in the guest; report and tree there too."""
    b = it.Builder(ctx.a["prefix"] + "gcc", ctx.a["prefix"] + "g++", "-O2", ctx.progs)
    have_cxx = shutil.which(ctx.a["prefix"] + "g++") is not None
    cases = []
    for exp in it.load_expectations():
        name = exp["_name"]
        if name in ("killme", "busy", "busy_threads"):
            continue
        if ctx.quick and name not in QUICK_SAMPLES:
            continue
        if exp.get("build") == "c++" and not have_cxx:
            skip("%s %s" % (ctx.arch, name), "%sg++ is not installed" % ctx.a["prefix"])
            continue
        cases.append(exp)
    record_samples(ctx, b, cases, "samples", (), "")


def record_samples(ctx, b, cases, what, opts, suffix):
    """Records the sample programs of cases (built by b) in the guest with
    `record -q OPTS`, in one batch, and holds report and tree there to each
    one's expectations."""
    steps = []
    out_dir = os.path.join(ctx.tmp, what)
    for exp in cases:
        name = exp["_name"]
        binary = it.prepare(exp, b)
        trace = os.path.join(out_dir, "t-" + name)
        argv = " ".join(shlex.quote(a) for a in [binary] + it.prog_args(exp, b))
        steps += [("rec-" + name, "%s record -q %s -o %s -- %s" % (LP, " ".join(opts), trace, argv)),
                  ("rep-" + name, "%s report --format json %s" % (LP, trace)),
                  ("tree-" + name, "%s tree --format json %s" % (LP, trace))]
    ctx.guest.put(ctx.progs, ctx.progs)
    got = batch(ctx.guest, steps, out_dir)
    for exp in cases:
        name = exp["_name"]
        tag = "%s %s%s" % (ctx.arch, name, suffix)
        rc, _, err = got["rec-" + name]
        if not check(rc == it.expected_exit(exp), "%s: record in the guest, exit status passed through" % tag,
                     "got %s, stderr %s" % (rc, err.strip()[-500:])):
            continue
        try:
            rep = json.loads(got["rep-" + name][1])
            tree = json.loads(got["tree-" + name][1])
        except ValueError:
            check(False, "%s: report and tree in the guest" % tag, got["rep-" + name][2] + got["tree-" + name][2])
            continue
        it.check_expectations(tag, exp, rep, tree)

DYNAMIC_SAMPLES = ["recursion", "mutual", "threads", "forker", "signals", "longjmp", "execer"]


def group_dynamic(ctx):
    """record --dynamic on the guest's kernel: sample programs built without
    instrumentation, traced by in-process patching and held to the
    instrumented builds' expectations, with the C++ samples `exceptions`
    and `templates` (exceptions unwinding through patched frames), and
    --libcalls.  On aarch64 through uprobes too; on armhf each sample is
    built twice, ARM code (-marm) and Thumb code (-mthumb), uprobes are
    refused there (probed ARM-code programs died on the guest's kernel), and
    armshapes.c's entries check what the ARM planner moves or refuses."""
    class Plain(it.Builder):
        def __init__(self, mode, root):
            self.mode = mode
            super().__init__(ctx.a["prefix"] + "gcc", ctx.a["prefix"] + "g++", "-O2", root)

        def flags(self):
            return [self.opt, "-g", "-pthread", "-I", PROGS] + ([self.mode] if self.mode else [])

    cases = [exp for exp in it.load_expectations() if exp["_name"] in DYNAMIC_SAMPLES and
             (not ctx.quick or exp["_name"] in QUICK_SAMPLES)]
    # C++ exceptions through patched frames (the runtime gives each frame's
    # saved return address back while one unwinds): in-process patching only
    cxx = [exp for exp in it.load_expectations() if exp["_name"] in ("exceptions", "templates")]
    modes = ["-marm", "-mthumb"] if ctx.arch == "armhf" else [""]
    for mode in modes:
        b = Plain(mode, os.path.join(ctx.progs, "plain" + mode))
        record_samples(ctx, b, cases + cxx, "dynamic" + mode, ("--dynamic", "--backend=patch"),
                       "%s --dynamic --backend=patch" % (" " + mode if mode else ""))
    if ctx.arch == "armhf":
        armhf_refusals(ctx)
        armhf_shapes(ctx)
    else:
        b = Plain("", os.path.join(ctx.progs, "plain"))
        record_samples(ctx, b, cases, "dynamic-uprobe", ("--dynamic", "--backend=uprobe"),
                       " --dynamic --backend=uprobe")
    for mode in modes:
        libcalls(ctx, mode)
    if ctx.arch == "aarch64":
        d = os.path.join(ctx.progs, "plain")
        os.makedirs(d, exist_ok=True)
        probe_instructions(ctx, d)


def armhf_refusals(ctx):
    """armhf: --backend=uprobe (and --libcalls with it) refused with the
    reason, the program not run."""
    d = os.path.join(ctx.progs, "plain")
    os.makedirs(d, exist_ok=True)
    prog = cc(ctx, os.path.join(PROGS, "recursion.c"), os.path.join(d, "recursion-marm"), "-marm")
    out = os.path.join(ctx.tmp, "dynamic", "t-uprobe")
    ctx.guest.put(ctx.progs, ctx.progs)
    got = batch(ctx.guest, [("uprobe", "%s record -q --dynamic --backend=uprobe -o %s -- %s" % (LP, out, prog)),
                            ("libcalls", "%s record -q --libcalls --backend=uprobe -o %s-l -- %s" % (LP, out, prog))],
                os.path.join(ctx.tmp, "dynamic"))
    rc, out, err = got["uprobe"]
    check(rc == 1 and "32-bit ARM" in err and "fib(15)" not in out,
          "armhf: record --dynamic --backend=uprobe is refused with the reason, the program not run",
          "%s %s" % (rc, err))
    rc, out, err = got["libcalls"]
    check(rc != 0 and "--libcalls needs the patch backend" in err and "fib(15)" not in out,
          "armhf: --libcalls --backend=uprobe is refused with the reason", "%s %s" % (rc, err))


ARMSHAPES_PATCHED = {"t_literal": 3, "t_adr": 3, "t_cbz": 6, "t_bcond": 6, "t_it": 6, "t_addpc": 3, "t_push_bl": 3,
                     "t_tail": 3, "t_vldr": 3, "a_literal": 3, "a_adr": 3, "a_addpc": 3, "a_tail": 3, "a_vldr": 3,
                     "helper": 9, "main": 1}
ARMSHAPES_REFUSED = {"t_loop2": "a branch lands at +2, inside the 4 bytes a b.w would replace",
                     "t_ldrex": "it starts with a load-exclusive", "a_ldrex": "it starts with a load-exclusive"}


def armhf_shapes(ctx):
    """armhf: tests/guest/armshapes.c (its main as ARM and as Thumb code)
    under record --dynamic: its output as without, each movable entry's
    calls counted, the refused ones listed with their reasons."""
    d = os.path.join(ctx.progs, "plain")
    os.makedirs(d, exist_ok=True)
    steps = []
    for mode in ("-marm", "-mthumb"):
        prog = cc(ctx, os.path.join(HERE, "armshapes.c"), os.path.join(d, "armshapes" + mode), mode)
        out = os.path.join(ctx.tmp, "dynamic", "t-armshapes" + mode)
        steps += [("plain" + mode, prog),
                  ("rec" + mode, "%s record --dynamic -o %s -- %s" % (LP, out, prog)),
                  ("rep" + mode, "%s report --format json %s" % (LP, out))]
    ctx.guest.put(ctx.progs, ctx.progs)
    got = batch(ctx.guest, steps, os.path.join(ctx.tmp, "dynamic"))
    for mode in ("-marm", "-mthumb"):
        tag = "armhf armshapes %s --dynamic" % mode
        rc, out, err = got["rec" + mode]
        want = got["plain" + mode][1]
        if not check(rc == 0 and out == want and "t_literal 1234567" in want,
                     "%s: record exits 0, the output as without it" % tag, "%s %s\n%s" % (rc, err[-800:], out)):
            continue
        try:
            calls = {f["name"]: f["calls"] for f in json.loads(got["rep" + mode][1])["functions"]}
        except (ValueError, KeyError):
            calls = {}
        got_calls = {k: calls.get(k) for k in ARMSHAPES_PATCHED}
        check(got_calls == ARMSHAPES_PATCHED,
              "%s: ARM and Thumb entries with PC-relative loads, adr, add pc, cbz, b<cond>, an IT block, "
              "push + bl, tail branches, vldr: every call counted" % tag, "%s" % got_calls)
        check(not any(k in calls for k in ARMSHAPES_REFUSED) and
              all("%s (%s" % (k, why) in err for k, why in ARMSHAPES_REFUSED.items()),
              "%s: a loop to a Thumb entry's second instruction and load-exclusive loops: listed with the "
              "reason, not traced" % tag, err[-800:])


def libcalls(ctx, mode):
    """--libcalls: each PLT stub patched (its first instruction, an adrp on
    aarch64, an add ip, pc on armhf, rewritten): the 100 writes of
    sys_writer as write@plt under writer, the write syscalls under those,
    and replay's lines of the C library calls with their arguments and
    results, read from the registers the common entry path keeps."""
    d = os.path.join(ctx.progs, "plain")
    os.makedirs(d, exist_ok=True)
    tag = ctx.arch + (" " + mode if mode else "")
    prog = cc(ctx, os.path.join(PROGS, "sys_writer.c"), os.path.join(d, "sys_writer" + mode),
              *([mode] if mode else []))
    out = os.path.join(ctx.tmp, "dynamic", "t-libcalls" + mode)
    ctx.guest.put(ctx.progs, ctx.progs)
    got = batch(ctx.guest, [("rec", "%s record -q --dynamic --libcalls --syscalls --syscall-filter write -o %s -- %s"
                             % (LP, out, prog)),
                            ("tree", "%s tree --format json %s" % (LP, out)),
                            ("sys", "%s report --syscalls --format json %s" % (LP, out)),
                            ("replay", "%s replay %s" % (LP, out))],
                os.path.join(ctx.tmp, "dynamic" + mode))
    rc, _, err = got["rec"]
    if not check(rc == 0, "%s: record --dynamic --libcalls --syscalls in the guest exits 0" % tag, err[-500:]):
        return
    try:
        tree = json.loads(got["tree"][1])
        rows = {(f["function"], f["syscall"]): f["calls"] for f in json.loads(got["sys"][1])["by_function"]}
    except ValueError:
        tree, rows = {"threads": []}, {}
    under = [(k["name"], k["calls"]) for t in tree["threads"] for m in t["calls"] if m["name"] == "main"
             for n in m["children"] if n["name"] == "writer" for k in n["children"]]
    check(("write@plt", 100) in under and rows.get(("write@plt", "write")) == 100,
          "%s: write@plt 100 times under writer, the 100 write syscalls under it" % tag, "%s %s" % (under, rows))
    calls = [ln.split("| ", 1)[1].strip() for ln in got["replay"][1].splitlines() if "| " in ln]
    # (each write holds its write syscall: an entry line, a closing line)
    calls = [c for c in calls if c.split("@plt(")[0] in ("open", "write", "close") or
             c == "} = 1024 /* write@plt */"]
    wline = 'write@plt(3, "%s"..., 1024) {' % ("\\000" * 48)
    want = (['open@plt("/dev/null", 0x1) = 3;'] + [wline, "} = 1024 /* write@plt */"] * 100 +
            ['open@plt("/nonexistent/layerprof-test", 0x0) = -1;', "close@plt(3) = 0;"])
    check(calls == want, "%s: --libcalls: open, write and close with their arguments and results" % tag,
          "\n".join(calls[:3] + calls[-3:]))


def probe_instructions(ctx, d):
    """record --probe on the guest's kernel (aarch64)."""
    # --probe: instructions of an aarch64 loop (its places known): the
    # loop's head, a csel between the cmp and the b.ne that reads its
    # flags, the b.ne itself and a b.le (moved and rewritten), a literal
    # load (moved through its own register), the ret
    src = os.path.join(d, "probed.c")
    with open(src, "w") as f:
        f.write(PROBED_A64)
    prog = cc(ctx, src, os.path.join(d, "probed"))
    ctx.guest.put(ctx.progs, ctx.progs)
    out = os.path.join(ctx.tmp, "dynamic", "t-probes")
    got = batch(ctx.guest, [("plain", "%s 30" % prog),
                            ("rec", "%s record -q --probe work+0xc,work+0x10,work+0x18,work+0x24,work+0x28,"
                             "work+0x2c,work+0x34 -o %s -- %s 30" % (LP, out, prog)),
                            ("rep", "%s report --format json %s" % (LP, out))],
                os.path.join(ctx.tmp, "dynamic"))
    rc, sout, err = got["rec"]
    if check(rc == 0 and sout == got["plain"][1] == "5780\n",
             "%s: record --probe: exit 0, the program's own output (registers and flags kept)" % ctx.arch,
             "%s %r %r %s" % (rc, sout, got["plain"][1], err[-300:])):
        try:
            probes = {p["name"]: p["hits"] for p in json.loads(got["rep"][1]).get("probes", [])}
        except ValueError:
            probes = {}
        check(probes == {"work+0xc": 2, "work+0x10": 45, "work+0x18": 45, "work+0x24": 45, "work+0x28": 45,
                         "work+0x2c": 2, "work+0x34": 2},
              "%s: record --probe: every run of each probed instruction" % ctx.arch, probes)


# An aarch64 loop whose instructions' places are known (record --probe)
PROBED_A64 = r"""
#include <stdio.h>
#include <stdlib.h>
__asm__(".text\n.globl work\n.type work, %function\nwork:\n"
        "\tmov w2, 0\n\tmov w1, 0\n\tcmp w0, 0\n\tb.le 2f\n"
        "1:\n\tadd w3, w1, w1, lsl 3\n\tsub w3, w3, w1, lsl 1\n\tadd w2, w2, w3\n\tadd w1, w1, 1\n"
        "\tcmp w0, w1\n\tcsel w4, w2, w2, ne\n\tb.ne 1b\n"
        "2:\n\tldr w5, 3f\n\tadd w0, w2, w5\n\tret\n\t.p2align 2\n3:\n\t.word 1000\n.size work, .-work\n");
int work(int n);
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;
	printf("%d\n", work(n) + work(n / 2));
	return 0;
}
"""


def mem_programs(ctx):
    d = os.path.join(ctx.progs, "mem")
    os.makedirs(d, exist_ok=True)
    for name in ("mem_leaky", "mem_threads", "mem_fork"):
        cc(ctx, os.path.join(PROGS, name + ".c"), os.path.join(d, name), "-std=c11")
    cc(ctx, os.path.join(PROGS, "mem_leaky.c"), os.path.join(d, "mem_leaky_fp"), "-std=c11",
       "-fno-omit-frame-pointer")
    cc(ctx, os.path.join(PROGS, "mem_leaky.c"), os.path.join(d, "mem_leaky_instr"), "-std=c11",
       "-finstrument-functions")
    return d


def group_memory(ctx):
    """test_memory's checks, with the layerprof of the guest."""
    d = mem_programs(ctx)
    ctx.guest.put(ctx.progs, ctx.progs)
    tmp = os.path.join(ctx.tmp, "memory")
    ctx.guest.run("mkdir -p %s" % tmp)
    lp = GuestLayerprof(ctx.guest)
    tm.FRAME_WALK = ctx.arch != "armhf"
    tm.test_leaky(lp, tmp, d)
    tm.test_threads(lp, tmp, d)
    tm.test_fork(lp, tmp, d)


def sys_programs(ctx):
    d = os.path.join(ctx.progs, "sys")
    os.makedirs(d, exist_ok=True)
    out = {}
    for name in ("sys_writer", "sys_threads", "sys_fork", "sys_slowstart"):
        out[name] = cc(ctx, os.path.join(PROGS, name + ".c"), os.path.join(d, name), "-std=c11",
                       "-finstrument-functions")
    out["sys_writer_plain"] = cc(ctx, os.path.join(PROGS, "sys_writer.c"), os.path.join(d, "sys_writer_plain"),
                                 "-std=c11")
    return out


def group_syscalls(ctx):
    """test_syscalls' checks with each backend, with the layerprof of the
    guest: ptrace and tracepoints must work on both guests, eBPF on the
    aarch64 one and wherever the probe found it."""
    progs = sys_programs(ctx)
    ctx.guest.put(ctx.progs, ctx.progs)
    tmp = os.path.join(ctx.tmp, "syscalls")
    ctx.guest.run("mkdir -p %s" % tmp)
    lp = GuestLayerprof(ctx.guest)
    for backend in ("ptrace", "tracepoint", "bpf"):
        required = backend != "bpf" or ctx.arch == "aarch64" or facility(ctx, "bpf")
        ok, why = ts.backend_usable(lp, tmp, backend)
        if not ok and not required:
            skip("%s --syscalls=%s" % (ctx.arch, backend), "the guest kernel refuses it: %s" % why)
            continue
        if not check(ok, "%s: --syscalls=%s works on the guest kernel" % (ctx.arch, backend), why):
            continue
        ts.test_writer(lp, tmp, backend, progs["sys_writer"])
        if ctx.quick:
            continue
        ts.test_threads(lp, tmp, backend, progs["sys_threads"])
        ts.test_fork(lp, tmp, backend, progs["sys_fork"])
        ts.test_plain(lp, tmp, backend, progs["sys_writer_plain"])
        ts.test_slow_start(lp, tmp, backend, progs["sys_slowstart"])


class GuestKernelLayerprof(tk.Layerprof):
    """The layerprof command in the guest with test_kernel's interface:
    lp(*args, env=) runs it there, json() checks and parses, record()
    records; the paths the tests name exist at the same paths there."""

    def __init__(self, guest):
        self.g = guest
        self.exe = LP
        self.env = {}

    def read_text(self, path):
        return self.g.run("cat %s" % shlex.quote(path), check=False).stdout

    def __call__(self, *args, timeout=300, env=None, **kw):
        assign = "".join("%s=%s " % (k, shlex.quote(v)) for k, v in (env or {}).items())
        return self.g.run("%sexec %s %s" % (assign, LP, " ".join(shlex.quote(str(a)) for a in args)),
                          timeout=timeout, check=False)


def group_kernel(ctx):
    """test_kernel's checks on the guest's kernel: kernel events through
    perf_event_open, page faults from the software event (no
    exceptions:page_fault_user on ARM), switches, wake-ups and their wakers,
    preemption, the refusals."""
    d = os.path.join(ctx.progs, "kern")
    os.makedirs(d, exist_ok=True)
    progs = {}
    for name in ("kern_faults", "kern_sleep", "kern_pipe", "kern_preempt", "sys_writer"):
        progs[name] = cc(ctx, os.path.join(PROGS, name + ".c"), os.path.join(d, name), "-std=c11",
                         "-finstrument-functions")
    ctx.guest.put(ctx.progs, ctx.progs)
    tmp = os.path.join(ctx.tmp, "kernel")
    ctx.guest.run("mkdir -p %s" % tmp)
    lp = GuestKernelLayerprof(ctx.guest)
    probe = lp("record", "-q", "--kernel", "-o", os.path.join(tmp, "probe"), "--", "/bin/true")
    if not check(probe.returncode == 0, "%s: record --kernel works on the guest kernel" % ctx.arch,
                 probe.stderr.strip()):
        return
    tk.group_sleep(lp, progs, tmp)
    if ctx.quick:
        return
    tk.group_faults(lp, progs, tmp)
    tk.group_pipe(lp, progs, tmp)
    tk.group_preempt(lp, progs, tmp)
    tk.group_kfunctions(lp, progs, tmp)


SYNC_PROGS = ["sync_mutex", "sync_prodcons", "sync_barrier", "sync_sem", "sync_misc"]
# the C library's condition variables: one version each on ARM (no compat
# ones from before 2.3.2, as x86 has), which an unversioned dlsym finds
COND_VERSIONS = {"aarch64": "GLIBC_2.17", "armhf": "GLIBC_2.4"}


def group_sync(ctx):
    """record --sync in the guest: test_sync's checks (exact operations and
    failures per kind, waits, contention, thread starts and joins) on the
    sync_* programs, on armhf also built with 64-bit time (what Debian's
    armhf packages use since trixie: the timed calls are glibc's
    __*_time64 entries); report --sync's producer/consumer verdict."""
    d = os.path.join(ctx.progs, "sync")
    os.makedirs(d, exist_ok=True)
    variants = [("", ())]
    if ctx.arch == "armhf":
        variants.append(("_t64", ("-D_FILE_OFFSET_BITS=64", "-D_TIME_BITS=64")))
    for suffix, flags in variants:
        for name in SYNC_PROGS:
            cc(ctx, os.path.join(PROGS, name + ".c"), os.path.join(d, name + suffix), *flags)
    libc = os.path.join(ctx.guest.img.rootfs, "lib", ctx.a["triplet"], "libc.so.6")
    r = it.run([ctx.a["prefix"] + "objdump", "-T", libc])
    vers = sorted({ln.split()[-2] for ln in r.stdout.splitlines() if ln.split()[-1:] == ["pthread_cond_wait"]})
    check(vers == [COND_VERSIONS[ctx.arch]], "%s: the guest's libc has one pthread_cond_wait, %s" % (
        ctx.arch, COND_VERSIONS[ctx.arch]), vers)
    ctx.guest.put(ctx.progs, ctx.progs)
    tmp = os.path.join(ctx.tmp, "sync")
    ctx.guest.run("mkdir -p %s" % tmp)
    lp = GuestLayerprof(ctx.guest)
    tests = {"sync_mutex": tsync.test_mutex, "sync_prodcons": tsync.test_prodcons,
             "sync_barrier": tsync.test_barrier, "sync_sem": tsync.test_sem, "sync_misc": tsync.test_misc}
    for suffix, _ in variants:
        for name in SYNC_PROGS:
            if ctx.quick and suffix:
                continue
            tests[name](lp, tmp, d, os.path.join(d, name + suffix), "%s %s%s" % (ctx.arch, name, suffix))
    # the producer/consumer pair of sync_prodcons: the producer is slow
    r = lp("report", "--sync", "--format", "json", os.path.join(tmp, "%s sync_prodcons" % ctx.arch))
    try:
        pairs = json.loads(r.stdout)["pairs"]
    except (ValueError, KeyError):
        pairs = None
    check(pairs is not None and len(pairs) == 1 and len(pairs[0]["producers"]) == 1 and
          len(pairs[0]["consumers"]) == 1 and pairs[0]["slow"] == "producer" and
          pairs[0]["text"].startswith("producer side"),
          "%s sync_prodcons: report --sync: one producer, one consumer, the producer side slow" % ctx.arch,
          "%s %s" % (pairs, r.stderr[-300:]))


def guest_meta(ctx, trace):
    """The counters META keys of a trace in the guest."""
    r = ctx.guest.run("grep -a -E '^counters[a-z.]*=' %s/data | head -n 8" % shlex.quote(trace), check=False)
    out = {}
    for ln in r.stdout.splitlines():
        k, _, v = ln.partition("=")
        out.setdefault(k, v)
    return out


def ctr_record(ctx, lp, tmp, name, prog, counters, pre=""):
    """record --counters=COUNTERS of prog in the guest (after the shell
    command pre): (result, META keys, replay's document or None)."""
    trace = os.path.join(tmp, name)
    opt = "--counters" + ("=" + counters if counters else "")
    r = ctx.guest.run("%s%s record -q %s -o %s -- %s" % (pre, LP, opt, trace, prog), check=False, timeout=300)
    rep = None
    if r.returncode == tc.STATUS:
        p = lp("replay", "--format", "json", trace)
        try:
            rep = json.loads(p.stdout)
        except ValueError:
            pass
    return r, guest_meta(ctx, trace), rep


def group_counters(ctx):
    """record --counters in the guest: the default set says what the guest
    cannot count and why (armhf: no PMU; aarch64: qemu's PMU counts cycles,
    not instructions); software events give per-function values for
    ctr_pages; aarch64: cycles per function, read with read(2) and, with
    perf_user_access=1, from user space."""
    d = os.path.join(ctx.progs, "ctr")
    os.makedirs(d, exist_ok=True)
    prog = cc(ctx, os.path.join(PROGS, "ctr_pages.c"), os.path.join(d, "ctr_pages"), "-std=c11",
              "-finstrument-functions")
    ctx.guest.put(ctx.progs, ctx.progs)
    tmp = os.path.join(ctx.tmp, "counters")
    ctx.guest.run("mkdir -p %s" % tmp)
    lp = GuestLayerprof(ctx.guest)
    tag = "%s counters" % ctx.arch
    # software events, per function and per thread
    r, meta, rep = ctr_record(ctx, lp, tmp, "sw", prog, "task-clock,page-faults")
    if check(rep is not None and r.stdout.startswith(tc.OUTPUT), "%s: ctr_pages recorded, its output and status "
             "unchanged" % tag, "%s %s" % (r.returncode, r.stderr[-500:])):
        check(meta.get("counters") == "task-clock,page-faults" and meta.get("counters.read") == "read" and
              "counters.unavailable" not in meta, "%s: META: both software events, read with read(2)" % tag, meta)
        by = tc.threads_by_pages(rep)
        faults = sorted(f for t, f in by.values())
        want = sorted((tc.MAIN_PAGES,) + tc.THREAD_PAGES)
        check(len(faults) == 3 and all(p <= f <= p + tc.PAGE_SLACK for p, f in zip(want, faults)),
              "%s: each touch_pages(N) counts N page faults (+%d at most), N = %s" % (tag, tc.PAGE_SLACK, want),
              faults)
        main = [t for t in rep["threads"] if t["pid"] == t["tid"]]
        spun = tc.calls(main[0], "spin", "task-clock") if main else []
        # the spin stops at the thread's CPU time: at least its 50 ms, and
        # a tick of the emulated guest's clock more at most
        check(len(spun) == 1 and tc.MAIN_SPIN_MS * 0.9e6 <= spun[0] <= tc.MAIN_SPIN_MS * 1.5e6,
              "%s: spin(%d ms) counts its task-clock" % (tag, tc.MAIN_SPIN_MS), spun)
    # the default set: what this guest cannot count, and why
    r, meta, rep = ctr_record(ctx, lp, tmp, "default", prog, None)
    print("     %s default set: counters=%s; unavailable: %s; read=%s" % (
        ctx.arch, meta.get("counters"), meta.get("counters.unavailable"), meta.get("counters.read")))
    hw = ["cycles", "instructions", "cache-misses", "branch-misses"]
    missing = hw if ctx.arch == "armhf" else [n for n in hw if n != "cycles"]
    una = meta.get("counters.unavailable", "")
    got = [n for n in meta.get("counters", "").split(",") if n]
    check(rep is not None and got == [n for n in hw if n not in missing] + ["task-clock", "page-faults",
                                                                            "context-switches"] and
          una == "; ".join("%s: not supported by this CPU or kernel" % n for n in missing),
          "%s: the default set: %s unavailable, said with the reason" % (tag, ", ".join(missing)),
          "%s / %s / %s" % (got, una, r.stderr.strip()[-400:]))
    if ctx.arch != "aarch64" or ctx.quick:
        return
    counters_cycles(ctx, lp, tmp, prog, tag)


def counters_cycles(ctx, lp, tmp, prog, tag):
    """aarch64: cycles per function from qemu's PMU, read with read(2)
    (with a software event: the recorder reads from user space only when
    every event is a hardware one), and cycles alone with
    perf_user_access=1, where the recorder reads them with mrs."""
    old = ctx.guest.run("cat /proc/sys/kernel/perf_user_access", check=False).stdout.strip()
    for access in ("0", "1"):
        pre = "echo %s >/proc/sys/kernel/perf_user_access && " % access if old else ""
        r, meta, rep = ctr_record(ctx, lp, tmp, "cycles" + access, prog,
                                  "cycles,page-faults" if access == "0" else "cycles", pre)
        print("     %s perf_user_access=%s: counters=%s read=%s unavailable=%s" % (
            ctx.arch, access if old else "(none)", meta.get("counters"), meta.get("counters.read"),
            meta.get("counters.unavailable")))
        if not check(rep is not None and meta.get("counters") == ("cycles,page-faults" if access == "0" else "cycles"),
                     "%s: cycles recorded (perf_user_access=%s)" % (tag, access),
                     "%s %s %s" % (r.returncode, meta, r.stderr[-400:])):
            continue
        want_read = "rdpmc" if access == "1" and old else "read"
        check(meta.get("counters.read") == want_read, "%s: perf_user_access=%s: counters.read=%s" % (
            tag, access, want_read), meta.get("counters.read"))
        for t in rep["threads"]:
            if t["pid"] == t["tid"]:
                continue
            w, tp, sp = (tc.calls(t, n, "cycles") for n in ("worker", "touch_pages", "spin"))
            ok = (len(w) == len(tp) == len(sp) == 1 and tp[0] > 0 and sp[0] > 0 and w[0] >= tp[0] + sp[0])
            if not check(ok, "%s: perf_user_access=%s: cycles per function, nonzero, worker's covering its "
                         "touch_pages and spin" % (tag, access), (w, tp, sp)):
                break
            print("     %s cycles: worker %d, touch_pages %d, spin %d" % (ctx.arch, w[0], tp[0], sp[0]))
            break
    if old:
        ctx.guest.run("echo %s >/proc/sys/kernel/perf_user_access" % old, check=False)
    else:
        print("     %s: the guest kernel has no /proc/sys/kernel/perf_user_access" % ctx.arch)


class GuestAgent:
    """layerprofd in the guest on its TCP port, which qemu forwards to
    guest.agent_port on this machine's loopback; the token is in
    tmp/agent-token here and AGENT_TOKEN there."""

    def __init__(self, ctx, args=()):
        self.g = ctx.guest
        self.token = os.path.join(ctx.tmp, "agent-token")
        if not os.path.exists(self.token):
            with open(os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(os.urandom(24).hex() + "\n")
        with open(self.token) as f:
            self.g.run("umask 077 && cat >%s" % AGENT_TOKEN, input=f.read())
        self.token_args = ["--token-file", self.token]
        self.addr = "127.0.0.1:%d" % self.g.agent_port
        self.g.run("pkill -x layerprofd; rm -f /tmp/agent.log; setsid %s/bin/layerprofd --listen 0.0.0.0:%d "
                   "--token-file %s --lib %s/lib/liblayerprof.so %s >/tmp/agent.log 2>&1 </dev/null &" % (
                       OPT, guestvm.GUEST_USER_PORT, AGENT_TOKEN, OPT, " ".join(shlex.quote(a) for a in args)))
        self.ok = False
        for _ in range(60):
            if "listening on" in self.log():
                self.ok = True
                break
            time.sleep(1)

    def log(self):
        return self.g.run("cat /tmp/agent.log 2>/dev/null", check=False).stdout

    def stop(self):
        self.g.run("pkill -x layerprofd; pkill -x killme", check=False)


def live(ctx, agent, args, stdin=subprocess.DEVNULL):
    return tl.Live(ctx.host_lp, agent.addr, agent.token_args + list(args), stdin=stdin)


def group_live(ctx):
    """This machine's `layerprof live` against the guest's agent."""
    b = it.Builder(ctx.a["prefix"] + "gcc", ctx.a["prefix"] + "g++", "-O2", ctx.progs)
    exps = {e["_name"]: e for e in it.load_expectations()}
    names = ["threads"] if ctx.quick else ["recursion", "threads", "forker", "signals"]
    bins = {n: it.prepare(exps[n], b) for n in names + ([] if ctx.quick else ["killme"])}
    writer = sys_programs(ctx)["sys_writer"]
    if not ctx.quick:
        mem_programs(ctx)
    ctx.guest.put(ctx.progs, ctx.progs)
    agent = GuestAgent(ctx)
    if not check(agent.ok, "%s: the guest's agent starts" % ctx.arch, agent.log()):
        return
    try:
        live_counts(ctx, agent, exps, bins, names)
        live_syscalls(ctx, agent, writer)
        live_oscal(ctx, agent)
        if ctx.quick:
            return
        live_filters(ctx, agent, bins["killme"])
        live_control(ctx, agent, bins["killme"])
        live_memory(ctx, agent)
    finally:
        agent.stop()


def live_counts(ctx, agent, exps, bins, names):
    for name in names:
        exp = exps[name]
        tag = "%s live %s" % (ctx.arch, name)
        save = os.path.join(ctx.tmp, "live-" + name)
        s = live(ctx, agent, ["--format", "json", "--interval", "200ms", "--save", save, "--", bins[name]])
        rc = s.wait(timeout=180)
        last = s.final()
        if not check(rc == 0 and last and last["final"], "%s: the session ends with exit 0 and a final view" % tag,
                     "rc %s, stderr %s" % (rc, s.err.text()[-800:])):
            continue
        got = tl.counts(last)
        bad = {k: (got.get(k, 0), v) for k, v in exp["calls"].items() if got.get(k, 0) != v}
        check(not bad and last.get("lost_events", 0) == 0, "%s: the exact counts, nothing lost" % tag,
              "(got, want) %s, lost %s" % (bad, last.get("lost_events")))
        check(tl.exited_as(last, last["pid"], exp), "%s: the program ended as expected" % tag, last.get("exited"))
        rep, r = tl.report_counts(ctx.host_lp, save)
        check(rep is not None and {f["name"]: f["calls"] for f in rep["functions"]} == got,
              "%s: this machine's report of the saved trace agrees" % tag, r.stderr)


def live_syscalls(ctx, agent, writer):
    backends = ["auto"] if ctx.quick else ["ptrace", "tracepoint"] + (
        ["bpf"] if ctx.arch == "aarch64" or facility(ctx, "bpf") else [])
    for backend in backends:
        tag = "%s live --syscalls=%s" % (ctx.arch, backend)
        save = os.path.join(ctx.tmp, "live-sys-" + backend)
        s = live(ctx, agent, ["--format", "json", "--interval", "200ms", "--syscalls=" + backend, "--save", save,
                              "--", writer])
        rc = s.wait(timeout=180)
        last = s.final()
        if not check(rc == 0 and last and last["final"], "%s: the session ends with exit 0" % tag,
                     "rc %s, stderr %s" % (rc, s.err.text()[-800:])):
            continue
        w = tl.sys_row(last, "write")
        check(w and w["calls"] == 100 and w["errors"] == 0, "%s: 100 writes, no errors" % tag, w)
        f = tl.sys_by_function(last, "writer", "write")
        check(len(f) == 1 and f[0]["calls"] == 100, "%s: the writes are attributed to writer" % tag, f)
        f = tl.sys_by_function(last, "opener", "openat")
        check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["errors"] == 1, "%s: opener's failing openat" % tag, f)


def live_oscal(ctx, agent):
    """`layerprof oscal run --connect` from this machine: the guest's agent
    runs its layerprof-oscal on the guest's kernel; the calibration is the
    guest's."""
    tag = "%s oscal run --connect" % ctx.arch
    out = os.path.join(ctx.tmp, "guest.cal")
    names = ("getpid", "read", "write", "kill-self", "kill-other", "kill-none")
    r = ctx.host_lp("oscal", "run", "--connect", agent.addr, *agent.token_args, "--quick", "--calls",
                    "getpid,read,write,kill*", "-o", out)
    if not check(r.returncode == 0 and os.path.exists(out), "%s: exit 0, the file written" % tag, r.stderr[-800:]):
        return
    with open(out) as f:
        cal = json.load(f)
    arch = ctx.guest.run("uname -m").stdout.strip()
    check(cal["machine"]["arch"] == arch and cal["source"] == "agent " + agent.addr and cal["complete"],
          "%s: the guest's machine (%s), source the agent, complete" % (tag, arch),
          (cal["machine"], cal["source"], cal["complete"]))
    ents = {e["name"]: e for e in cal["entries"]}
    check(all(ents.get(n, {}).get("status") == "measured" for n in names), "%s: %s measured" % (tag, ", ".join(names)),
          {n: ents.get(n, {}).get("status") for n in names})
    for n in ("read", "write"):
        m = ents.get(n, {}).get("model", {})
        p = m.get("pieces") or [{}]
        lo = p[0].get("m", 0) * p[0].get("x0", 0) + p[0].get("q", 0)
        hi = p[-1].get("m", 0) * p[-1].get("x1", 0) + p[-1].get("q", 0)
        check(m.get("form") in ("linear", "piecewise") and hi > lo,
              "%s: %s grows with its bytes (%s)" % (tag, n, m.get("form")), m)


def live_filters(ctx, agent, killme):
    """-F tick on killme: the host resolves the filter from the program's
    symbols once it runs and the runtime in the guest applies it."""
    tag = "%s live -F tick" % ctx.arch
    s = live(ctx, agent, ["--format", "json", "--interval", "200ms", "-F", "tick", "--", killme],
             stdin=subprocess.PIPE)
    try:
        v = s.wait_view(lambda v: tl.counts(v).get("tick", 0) > 0, 60)
        check(v is not None and v["filtered"] and set(k for k, n in tl.counts(v).items() if n) == {"tick"},
              "%s: only tick is recorded" % tag, "%s %s" % (v and tl.counts(v), s.err.text()[-500:]))
    finally:
        s.say("quit")
        s.wait(timeout=60)
        ctx.guest.run("pkill -x killme", check=False)


def live_control(ctx, agent, killme):
    """--stopped, then start and stop as commands: ticks arrive only while
    tracing is on; the program is killed at the end."""
    tag = "%s live start/stop" % ctx.arch
    s = live(ctx, agent, ["--format", "json", "--interval", "200ms", "--stopped", "--", killme],
             stdin=subprocess.PIPE)
    try:
        v = s.wait_view(lambda v: v.get("pid"), 60)
        if not check(v is not None and not v["tracing"] and tl.counts(v).get("tick", 0) == 0,
                     "%s: started with tracing off, no ticks" % tag, s.err.text()[-500:]):
            return
        s.say("start")
        v = s.wait_view(lambda v: v["tracing"] and tl.counts(v).get("tick", 0) > 0, 60)
        check(v is not None, "%s: start: ticks arrive" % tag, s.err.text()[-500:])
        s.say("stop")
        v = s.wait_view(lambda v: not v["tracing"] and tl.counts(v).get("tick", 0) > 0, 60)
        if check(v is not None, "%s: stop: tracing is off" % tag):
            n = tl.counts(v).get("tick", 0)
            time.sleep(1.5)
            later = s.views()[-1]
            check(tl.counts(later).get("tick", 0) == n, "%s: stopped: no more ticks" % tag,
                  (n, tl.counts(later).get("tick")))
    finally:
        s.say("quit")
        s.wait(timeout=60)
        ctx.guest.run("pkill -x killme", check=False)


def live_memory(ctx, agent):
    tag = "%s live --memory" % ctx.arch
    prog = os.path.join(ctx.progs, "mem", "mem_leaky")
    save = os.path.join(ctx.tmp, "live-mem")
    s = live(ctx, agent, ["--memory", "--format", "json", "--interval", "200ms", "--save", save, "--", prog])
    rc = s.wait(timeout=180)
    if not check(rc == 0, "%s: the session ends with exit 0" % tag, s.err.text()[-800:]):
        return
    r = ctx.host_lp("report", "--memory", "--format", "json", save)
    rep = json.loads(r.stdout) if r.returncode == 0 else None
    if not check(rep is not None, "%s: this machine reports the saved heap" % tag, r.stderr):
        return
    leaky = tm.fn(rep, "leaky")
    check(tm.counts(leaky, "live_objects", "live_bytes", "allocs", "frees") == (100, 4800, 100, 0),
          "%s: leaky holds 100 x 48 bytes" % tag, leaky)
    check(tm.counts(tm.fn(rep, "tidy"), "allocs", "frees", "live_objects") == (50, 50, 0),
          "%s: tidy: 50 allocations, 50 releases" % tag, tm.fn(rep, "tidy"))


def group_noboot(ctx):
    """A guest that does not come up fails within its time limit, saying so
    with its console, and leaves no qemu behind: here a kernel image that is
    only zeros."""
    bad = copy.copy(ctx.guest.img)
    bad.kernel = os.path.join(ctx.tmp, "zeros.img")
    with open(bad.kernel, "wb") as f:
        f.write(bytes(1 << 20))
    work = os.path.join(ctx.tmp, "noboot")
    os.makedirs(work)
    g = guestvm.Guest(bad, work)
    t0 = time.monotonic()
    try:
        g.boot(timeout=20)
        check(False, "%s: a guest that cannot boot fails" % ctx.arch, "it answered")
        g.stop()
        return
    except guestvm.GuestError as e:
        took = time.monotonic() - t0
        msg = str(e)
    check(("did not answer within 20 s" in msg or "qemu ended" in msg) and "the guest's console" in msg
          and took < 60, "%s: a guest that cannot boot fails within its limit, with its console" % ctx.arch,
          "after %.0f s: %s" % (took, msg[:300]))
    check(g.proc is None, "%s: its qemu is stopped" % ctx.arch)


GROUPS = [("probe", group_probe), ("unit", group_unit), ("samples", group_samples), ("memory", group_memory),
          ("syscalls", group_syscalls), ("kernel", group_kernel), ("dynamic", group_dynamic), ("sync", group_sync),
          ("counters", group_counters), ("live", group_live),
          ("noboot", group_noboot)]
QUICK = ["probe", "samples", "syscalls", "kernel", "dynamic", "live", "noboot"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True, choices=sorted(guestvm.ARCHES))
    ap.add_argument("--host-build", required=True, help="this machine's build (its layerprof reads and drives)")
    ap.add_argument("--cross-build", help="scripts/cross-test's build for the unit tests (default build-ARCH)")
    ap.add_argument("--guest-build", help="where to cross-build the project for the guest (default build-guest-ARCH)")
    ap.add_argument("--quick", action="store_true", help="the subset CI runs")
    ap.add_argument("--boot-timeout", type=int, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("groups", nargs="*", metavar="GROUP", help=", ".join(n for n, _ in GROUPS))
    args = ap.parse_args()
    names = [n for n, _ in GROUPS]
    for g in args.groups:
        if g not in names:
            ap.error("unknown group '%s': %s" % (g, ", ".join(names)))
    wanted = args.groups or (QUICK if args.quick else names)
    # a SIGTERM (scripts/test's time limit) still stops the guest's qemu
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.monotonic()
    times = {}
    image = guestvm.Image(args.arch)
    guest = None
    tmp = tempfile.mkdtemp(prefix="lp-guest-%s-" % args.arch)
    try:
        try:
            t0 = time.monotonic()
            image.build()
            times["image"] = time.monotonic() - t0
            t0 = time.monotonic()
            guest_build = os.path.abspath(args.guest_build or os.path.join(ROOT, "build-guest-" + args.arch))
            print("== cross build for the %s guest (%s)" % (args.arch, guest_build), flush=True)
            guestvm.cross_build(image, guest_build)
            times["cross build"] = time.monotonic() - t0
            guest = guestvm.Guest(image, tmp)
            print("== booting the %s guest" % args.arch, flush=True)
            times["boot"] = guest.boot(timeout=args.boot_timeout)
            print("booted in %.0f s" % times["boot"], flush=True)
        except guestvm.GuestError as e:
            check(False, "%s: the guest is built and boots" % args.arch, str(e))
            return harness.summary()
        check(True, "%s: the guest is built and boots" % args.arch)
        progs = os.path.join(tmp, "progs")
        os.makedirs(progs)
        ctx = Ctx(guest, args.arch, os.path.abspath(args.host_build),
                  os.path.abspath(args.cross_build or os.path.join(ROOT, "build-" + args.arch)), progs, tmp,
                  args.quick)
        guestvm.install(guest, guest_build, os.path.join(tmp, "opt"))
        for name, fn in GROUPS:
            if name not in wanted:
                continue
            t0 = time.monotonic()
            print("== %s guest: %s" % (args.arch, name), flush=True)
            try:
                fn(ctx)
            except Exception as e:  # a broken step fails the group, loudly
                check(False, "%s: group %s ran to the end" % (args.arch, name), "%s: %s" % (type(e).__name__, e))
            times[name] = time.monotonic() - t0
    finally:
        if guest:
            if harness.failed():
                print(guest.console_tail(30))
            guest.stop()
        harness.kill_started()
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    times["all"] = time.monotonic() - t_start
    print("time %s: %s" % (args.arch, ", ".join("%s %.0f s" % kv for kv in times.items())))
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
