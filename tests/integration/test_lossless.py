#!/usr/bin/env python3
"""Complete traces by default: `record` at its default settings loses no
event of the busy workloads (one thread and two, also beside CPU hogs that
take the recorder's CPU), and no system call record of a loop of getppid
with any backend the kernel allows; a recorder that stops draining (SIGSTOP,
SIGKILL) does not hold the program: it finishes, and the loss is counted
and named; `--discard` drops instead of waiting.  Exact counts only, no
timings: waits for conditions with generous deadlines.

usage: test_lossless.py --build BUILD_DIR [GROUP...]
groups: record, stall, syscalls, syscall_waits"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402
import run as it  # noqa: E402

TIMEOUT = 300
DEADLINE = 120.0  # seconds a condition may take on a loaded machine
CALLS = 3000000  # of each tiny function, per thread: bench/run's workload
RUNS = 3


class Hogs:
    """Busy loops on every CPU, started and ended by the caller: the
    recorder then gets a share of a CPU, not a CPU."""

    def __init__(self):
        self.procs = []

    def __enter__(self):
        for _ in range(os.cpu_count() or 2):
            p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            harness.started.append(p)
            self.procs.append(p)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def report(lp, out, *extra):
    r = lp("report", "--format", "json", *extra, out, timeout=TIMEOUT)
    return (json.loads(r.stdout) if r.returncode == 0 else None), r


def calls(rep):
    return {f["name"]: f["calls"] for f in rep["functions"]}


def check_complete(lp, out, r, what, want):
    """The record exited 0, its trace is whole, says wait mode, lost
    nothing and holds `want` calls of each function named."""
    if not check(r.returncode == 0, "%s: record exits 0" % what, r.stderr):
        return
    rep, rr = report(lp, out)
    if not check(rep is not None, "%s: report" % what, rr.stderr):
        return
    got = calls(rep)
    check(rep["lost_events"] == 0 and rep["complete"] and rep["ring_full"] == "wait" and
          all(got.get(f) == n for f, n in want.items()),
          "%s: no event lost, exact calls" % what,
          "lost %s, complete %s, mode %s, calls %s" % (rep["lost_events"], rep["complete"], rep["ring_full"],
                                                       {f: got.get(f) for f in want}))
    check("lost" not in r.stderr, "%s: no loss warning" % what, r.stderr)


def group_record(lp, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    busy, threads = b.prog("busy"), b.prog("busy_threads")
    one = {"tiny_a": CALLS, "tiny_b": CALLS}
    two = {"tiny_a": 2 * CALLS, "tiny_b": 2 * CALLS, "busy_thread": 2}
    for hogs in (False, True):
        beside = " beside CPU hogs" if hogs else ""
        with Hogs() if hogs else contextlib.nullcontext():
            for i in range(RUNS):
                out = os.path.join(tmp, "busy-%d-%d" % (hogs, i))
                r = lp("record", "-q", "-o", out, "--", busy, str(CALLS), timeout=TIMEOUT)
                check_complete(lp, out, r, "busy %d, run %d%s" % (CALLS, i + 1, beside), one)
                out = os.path.join(tmp, "threads-%d-%d" % (hogs, i))
                r = lp("record", "-q", "-o", out, "--", threads, str(CALLS), "2", timeout=TIMEOUT)
                check_complete(lp, out, r, "busy_threads %d 2, run %d%s" % (CALLS, i + 1, beside), two)
    out = os.path.join(tmp, "text")
    r = lp("record", "-q", "-o", out, "--", busy, "1000")
    text = lp("report", out).stdout
    check("# mode: wait" in text, "report says the trace was recorded in wait mode", text[:300])


def child_of(pid):
    """The first child of process pid, or None."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def state_of(pid):
    """The one-letter state of pid ('Z' zombie), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def maps_ring(pid):
    """True once pid has mapped a ring of a layerprof session."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            # the recorder renames a ring it mapped r.* -> d.*
            return any("/layerprof-" in line and ("/r." in line or "/d." in line) for line in f)
    except OSError:
        return False


def wait_for(cond, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


groups = []


def kill_all(p):
    """Ends the recorder p and everything in its session (the program)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.wait()


def start_traced(lp, out, prog, extra=()):
    """Starts record of prog; returns (recorder Popen, program pid) once
    the program writes into its ring, or (Popen, None)."""
    # a session of its own: kill_all ends the program too when a check
    # failed early (a program that loops until told would run on)
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", out] + list(extra) + ["--"] + prog,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True,
                         start_new_session=True)
    harness.started.append(p)
    groups.append(p.pid)
    pid = None
    if wait_for(lambda: child_of(p.pid) is not None):
        pid = child_of(p.pid)
        if not wait_for(lambda: maps_ring(pid)):
            pid = None
    return p, pid


def group_stall(lp, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    busy = b.prog("busy")
    n = 20000000
    # a recorder stopped mid-run: the program waits for it a bounded time,
    # then goes on dropping, and ends while the recorder is still stopped
    for mode, extra in (("wait", []), ("discard", ["--discard"])):
        out = os.path.join(tmp, "stopped-" + mode)
        p, pid = start_traced(lp, out, [busy, str(n)], extra)
        if not check(pid is not None, "%s: the program starts tracing" % mode):
            kill_all(p)
            continue
        p.send_signal(signal.SIGSTOP)
        done = wait_for(lambda: state_of(pid) in ("Z", None))
        p.send_signal(signal.SIGCONT)
        check(done, "%s: the program ends while the recorder is stopped" % mode, state_of(pid))
        _, err = p.communicate(timeout=TIMEOUT)
        check(p.returncode == 0, "%s: record exits 0 after SIGCONT" % mode, err)
        rep, r = report(lp, out)
        if not check(rep is not None, "%s: report of the trace" % mode, r.stderr):
            continue
        got = calls(rep)
        check(rep["lost_events"] > 0 and got.get("tiny_a", 0) < n and rep["ring_full"] == mode,
              "%s: the loss is counted in the trace" % mode,
              "lost %s, tiny_a %s, mode %s" % (rep["lost_events"], got.get("tiny_a"), rep["ring_full"]))
        if mode == "wait":
            check("stopped waiting for the recorder" in err, "wait: the warning says the program gave up waiting",
                  err)
        else:
            check("with --discard" in err, "discard: the warning names --discard", err)
    jump_out_of_wait(lp, tmp, b)
    # a recorder killed mid-run: the program does not wait for it
    out = os.path.join(tmp, "killed")
    p, pid = start_traced(lp, out, [busy, str(n)])
    if check(pid is not None, "killed: the program starts tracing"):
        p.kill()
        p.wait()
        check(wait_for(lambda: state_of(pid) in ("Z", None)), "killed: the program ends without its recorder",
              state_of(pid))


FUTEX_NR = {"x86_64": 202, "aarch64": 98}


def in_futex(pid):
    """True while pid's main thread is in the futex system call."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0] == str(FUTEX_NR[os.uname().machine])
    except (OSError, IndexError):
        return False


def jump_out_of_wait(lp, tmp, b):
    """A signal handler that siglongjmps out of a wait for room abandons
    that gate: the thread goes on recording (it waits again, and its later
    calls are all in the trace)."""
    if os.uname().machine not in FUTEX_NR:
        skip("jump out of a wait", "no futex number known for " + os.uname().machine)
        return
    prog = b.prog("sig_jump")
    flag = os.path.join(tmp, "sig_jump.flag")
    out = os.path.join(tmp, "jump")
    n = 100000
    p, pid = start_traced(lp, out, [prog, flag, str(n)])
    if not check(pid is not None, "jump: the program starts tracing"):
        kill_all(p)
        return
    p.send_signal(signal.SIGSTOP)
    # the thread waits; every 2 ms the timer's handler jumps out of the
    # wait (or out of a gate), the loop calls again and waits again.  Not
    # asserted: a wait inside the handler itself (the timer signal is
    # blocked there) ends at the stall bound instead
    waiting = wait_for(lambda: in_futex(pid))
    time.sleep(0.2)  # a hundred timer periods while the recorder is stopped
    size = os.path.getsize(os.path.join(out, "data"))
    p.send_signal(signal.SIGCONT)
    check(waiting, "jump: the thread waits for the stopped recorder")
    # the recorder drains again (a thread that gave up waits again from its
    # next poll on): then the last phase
    wait_for(lambda: os.path.getsize(os.path.join(out, "data")) > size)
    open(flag, "w").close()
    _, err = p.communicate(timeout=TIMEOUT)
    if not check(p.returncode == 0, "jump: record exits 0", err):
        return
    rep, r = report(lp, out)
    got = calls(rep) if rep else {}
    check(got.get("after") == n and got.get("work", 0) > 0,
          "jump: every call after the jumps is in the trace", "after %s, work %s, lost %s" %
          (got.get("after"), got.get("work"), rep and rep["lost_events"]))


def group_syscalls(lp, tmp):
    prog = os.path.join(tmp, "sys_getppid")
    r = it.run(["gcc", "-O2", "-g", "-std=c11", "-I", it.PROGS, os.path.join(it.PROGS, "sys_getppid.c"), "-o", prog])
    if not check(r.returncode == 0, "build sys_getppid", r.stderr):
        return
    for bad in (["--syscalls", "--syscall-buffer", "1K"], ["--syscalls", "--syscall-buffer", "lots"],
                ["--syscall-buffer", "16M"]):
        r = lp("record", "-q", "-o", os.path.join(tmp, "bad"), *bad, "--", "/bin/true")
        check(r.returncode == 2 and r.stderr.startswith("layerprof record: "), "record %s exits 2" % " ".join(bad),
              r.stderr)
    for backend, n, runs in (("bpf", 1000000, 5), ("tracepoint", 1000000, 5), ("ptrace", 20000, 1)):
        out = os.path.join(tmp, "probe-" + backend)
        r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", "/bin/true")
        if r.returncode:
            skip("the %s backend" % backend, r.stderr.strip())
            continue
        if backend != "ptrace" and harness.sanitized(os.path.dirname(os.path.dirname(lp.exe))):
            # the kernel cannot make the program wait: a recorder slowed
            # down by the sanitizers reads records slower than a loop of
            # getppid makes them, and the buffer overflows
            skip("%s: 1M getppid without loss" % backend, "the recorder is built with the sanitizers")
            continue
        for i in range(runs):
            out = os.path.join(tmp, "getppid-%s-%d" % (backend, i))
            r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "getppid", "-o", out, "--", prog,
                   str(n), timeout=TIMEOUT)
            if not check(r.returncode == 0, "%s run %d: record exits 0" % (backend, i + 1), r.stderr):
                continue
            rep, rr = report(lp, out, "--syscalls")
            row = rep and next((s for s in rep["syscalls"] if s["name"] == "getppid"), None)
            check(row is not None and row["calls"] == n and rep["lost_events"] == 0,
                  "%s run %d: %d getppid calls, no record lost" % (backend, i + 1, n),
                  "%s, lost %s: %s" % (row and row["calls"], rep and rep["lost_events"], r.stderr.strip()))


def end_value(trace, key):
    """An integer of the trace's END chunk (key=value text), or None."""
    with open(os.path.join(trace, "data"), "rb") as f:
        data = f.read()
    at = data.rfind(b"\n" + key.encode() + b"=")
    if at < 0:
        return None
    return int(data[at + len(key) + 2:].split(b"\n", 1)[0])


def group_syscall_waits(lp, tmp):
    """The runtime's futex calls while waiting for room stay out of the
    syscall trace: as many futex calls as with --discard, which never
    waits (the runtime's setup makes one)."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    busy = b.prog("busy")
    for backend in ("bpf", "tracepoint", "ptrace"):
        out = os.path.join(tmp, "probe-w-" + backend)
        if lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", "/bin/true").returncode:
            skip("the %s backend" % backend, "not usable here")
            continue
        out = os.path.join(tmp, "nowait-" + backend)
        r = lp("record", "-q", "--discard", "--syscalls=" + backend, "-o", out, "--", busy, "1000")
        rep, rr = report(lp, out, "--syscalls")
        if not check(r.returncode == 0 and rep is not None, "%s: record --discard of busy" % backend, r.stderr):
            continue
        base = [s["calls"] for s in rep["syscalls"] if s["name"] == "futex"]
        out = os.path.join(tmp, "waits-" + backend)
        with Hogs():
            r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", busy, str(CALLS), timeout=TIMEOUT)
        if not check(r.returncode == 0, "%s: record of busy with its syscalls" % backend, r.stderr):
            continue
        waits = end_value(out, "waits")
        if not waits:
            skip("%s: runtime futex calls" % backend, "the program never waited for the recorder")
            continue
        rep, rr = report(lp, out, "--syscalls")
        futex = [s["calls"] for s in rep["syscalls"] if s["name"] == "futex"] if rep else None
        check(futex == base and rep["lost_events"] == 0,
              "%s: the %d waits for room add no futex call to the syscall trace" % (backend, waits),
              "%s, without waits %s: %s" % (futex, base, rr.stderr))


GROUPS = {"record": group_record, "stall": group_stall, "syscalls": group_syscalls,
          "syscall_waits": group_syscall_waits}


def setup(build):
    return (it.Layerprof(build),)


if __name__ == "__main__":
    try:
        rc = harness.run_groups(GROUPS, setup, prefix="layerprof-lossless-")
    finally:
        for g in groups:  # the programs of recordings a failed check left
            try:
                os.killpg(g, signal.SIGKILL)
            except OSError:
                pass
    sys.exit(rc)
