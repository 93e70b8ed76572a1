#!/usr/bin/env python3
"""The sync tracer with real programs: `record --sync` on the programs with
known synchronisation operations (tests/programs/sync_*, built by CMake),
preloaded and linked with the --wrap interposers (syncwrap.rsp), then
`replay`'s [sync] lines with exact expectations: operations counted per
kind, failures and their flags, waits at least as long as the programs'
known sleeps, contention where the programs force it, thread starts matched
with their creations and joins; the programs' output and exit status
unchanged, their pthread errors (EDEADLK, EBUSY, EPERM, ETIMEDOUT,
EOWNERDEAD) kept; through the drain's folding and filter stages, and the
agent's (`live --save` of a --wrap build).  Counts are held against
`valgrind --tool=drd`'s traces of the same programs where drd runs.

usage: test_sync.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import collections
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

MS = 1000000

SYNC_LINE = re.compile(r"\[sync\] (\S+) (0x[0-9a-f]+) flags=(\S+) wait=(\d+)\.(\d+)us obj2=(0x[0-9a-f]+) "
                       r"tid=(\d+) site=(.*)$")

# What each program prints, and its operations: {op: (count, failed)}.
EXPECT = {
    "sync_mutex": ("count=13\n", {"mutex-lock": (13, 0), "mutex-unlock": (13, 0), "create": (2, 0),
                                   "thread": (2, 0), "join": (2, 0)}),
    "sync_prodcons": ("consumed=5\n", {"mutex-lock": (6, 0), "mutex-unlock": (6, 0), "cond-wait": (5, 0),
                                       "cond-signal": (5, 0), "create": (2, 0), "thread": (2, 0),
                                       "join": (2, 0)}),
    "sync_barrier": ("rounds=2 serial=2\n", {"barrier-wait": (6, 0), "create": (3, 0), "thread": (3, 0),
                                             "join": (3, 0)}),
    "sync_sem": ("got=4 trywait=EAGAIN timedwait=ETIMEDOUT last=0\n",
                 {"sem-post": (5, 0), "sem-wait": (7, 2), "create": (1, 0), "thread": (1, 0), "join": (1, 0)}),
    "sync_misc": ("recursive=0 trylock=0,EBUSY errorcheck=EDEADLK,EPERM rwlock=EBUSY,EBUSY spin=EBUSY "
                  "timedlock=ETIMEDOUT tryjoin=EBUSY selfjoin=EDEADLK robust=EOWNERDEAD cond=ETIMEDOUT,ETIMEDOUT "
                  "errno=kept\n",
                  {"mutex-lock": (11, 3), "mutex-unlock": (8, 1), "rwlock-rdlock": (3, 1),
                   "rwlock-wrlock": (2, 1), "rwlock-unlock": (3, 0), "spin-lock": (2, 1), "spin-unlock": (1, 0),
                   "join": (4, 2), "create": (2, 0), "thread": (2, 0), "cond-wait": (2, 0),
                   "cond-broadcast": (1, 0)}),
}


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, **kw)


class Layerprof:
    def __init__(self, build_dir):
        self.exe = os.path.join(build_dir, "host", "layerprof")

    def __call__(self, *args, timeout=120):
        return run([self.exe] + list(args), timeout=timeout)


class Event:
    def __init__(self, m):
        self.op = m.group(1)
        self.obj = int(m.group(2), 16)
        self.flags = set() if m.group(3) == "-" else set(m.group(3).split(","))
        self.wait_ns = int(m.group(4)) * 1000 + int(m.group(5))
        self.obj2 = int(m.group(6), 16)
        self.tid = int(m.group(7))
        self.site = m.group(8)

    def __repr__(self):
        return "%s 0x%x %s wait=%dns tid=%d %s" % (self.op, self.obj, ",".join(sorted(self.flags)) or "-",
                                                   self.wait_ns, self.tid, self.site)


def replay_sync(lp, trace):
    """The trace's sync events, in replay's order (thread by thread)."""
    r = lp("replay", trace)
    if r.returncode:
        return None, r.stderr
    return [Event(m) for m in (SYNC_LINE.search(line) for line in r.stdout.splitlines()) if m], r.stdout


def meta(trace):
    """The trace's META keys (the first chunk's text)."""
    with open(os.path.join(trace, "data"), "rb") as f:
        data = f.read(65536)
    out = {}
    for line in data.decode("latin-1").split("\n"):
        k, sep, v = line.partition("=")
        if sep and re.fullmatch(r"[a-z_.]+", k):
            out.setdefault(k, v)
    return out


def tally(events):
    c = collections.Counter(e.op for e in events)
    f = collections.Counter(e.op for e in events if "failed" in e.flags)
    return {op: (c[op], f[op]) for op in c}


def record(lp, tmp, name, prog, opts=("--sync",)):
    """Records prog; returns (events, program output, record result) or
    None after a failed check."""
    out = os.path.join(tmp, name)
    r = lp("record", "-q", *opts, "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: records, exit 0" % name, r.stderr):
        return None
    events, text = replay_sync(lp, out)
    if not check(events is not None, "%s: replay" % name, text):
        return None
    return events, r, out


def check_program(lp, tmp, progs, prog_name, prog, label, opts=("--sync",)):
    want_out, want_ops = EXPECT[prog_name]
    res = record(lp, tmp, label, prog, opts)
    if not res:
        return None
    events, r, out = res
    check(r.stdout == want_out, "%s: the program's output unchanged" % label, r.stdout)
    got = tally(events)
    check(got == want_ops, "%s: operations and failures per kind %s" % (label, sorted(want_ops.items())),
          sorted(got.items()))
    # every thread start is a creation, every join names a thread made (a
    # joined thread's pthread_t may come again for the next one)
    created = sorted(e.obj for e in events if e.op == "create")
    started = sorted(e.obj for e in events if e.op == "thread")
    joined = {e.obj for e in events if e.op == "join" and "failed" not in e.flags}
    check(created == started and joined <= set(created) and len(created) == want_ops["create"][0],
          "%s: each thread's start is one of its creations, each join one of them" % label,
          (created, started, joined))
    return events, out


def by_op(events, op):
    return [e for e in events if e.op == op]


def test_mutex(lp, tmp, progs, prog=None, label="sync_mutex"):
    res = check_program(lp, tmp, progs, "sync_mutex", prog or os.path.join(progs, "sync_mutex"), label)
    if not res:
        return
    events = res[0]
    locks = by_op(events, "mutex-lock")
    taker = [e for e in locks if e.site.startswith("taker")]
    check(len(taker) == 10 and "contended" in taker[0].flags and taker[0].wait_ns >= 10 * MS,
          "%s: the taker's first lock is contended and waits for the holder's 20 ms (>= 10 ms)" % label, taker[:2])
    check(all(e.wait_ns == 0 for e in locks if "contended" not in e.flags),
          "%s: uncontended locks did not wait" % label)
    check(len({e.obj for e in locks}) == 1, "%s: one mutex" % label)


def test_prodcons(lp, tmp, progs, prog=None, label="sync_prodcons"):
    res = check_program(lp, tmp, progs, "sync_prodcons", prog or os.path.join(progs, "sync_prodcons"), label)
    if not res:
        return
    events = res[0]
    waits = by_op(events, "cond-wait")
    mutex = {e.obj for e in by_op(events, "mutex-lock")}
    cond = {e.obj for e in by_op(events, "cond-signal")}
    check(all(e.wait_ns >= 10 * MS for e in waits), "%s: each cond-wait lasts the producer's 10 ms" % label, waits)
    check(len(mutex) == 1 and {e.obj2 for e in waits} == mutex and {e.obj for e in waits} == cond,
          "%s: cond-wait names the condition signalled and the mutex locked" % label, (waits, mutex, cond))
    check(all(e.site.startswith("consumer") for e in waits), "%s: the waits are the consumer's" % label, waits)


def test_barrier(lp, tmp, progs, prog=None, label="sync_barrier"):
    res = check_program(lp, tmp, progs, "sync_barrier", prog or os.path.join(progs, "sync_barrier"), label)
    if not res:
        return
    waits = by_op(res[0], "barrier-wait")
    check(sum("serial" in e.flags for e in waits) == 2, "%s: one serial thread per round" % label, waits)
    check(sum(e.wait_ns >= 30 * MS for e in waits) >= 2,
          "%s: in each round the first worker waits for the last one's 40 ms (>= 30 ms)" % label, waits)


def test_sem(lp, tmp, progs, prog=None, label="sync_sem"):
    res = check_program(lp, tmp, progs, "sync_sem", prog or os.path.join(progs, "sync_sem"), label)
    if not res:
        return
    waits = by_op(res[0], "sem-wait")
    tries = [e for e in waits if "try" in e.flags]
    timed = [e for e in waits if "timed" in e.flags]
    check(len(tries) == 2 and sorted("failed" in e.flags for e in tries) == [False, True],
          "%s: two sem_trywait, the first failed" % label, tries)
    check(len(timed) == 1 and {"failed", "timedout"} <= timed[0].flags,
          "%s: sem_timedwait timed out" % label, timed)
    check(len({e.obj for e in waits + by_op(res[0], "sem-post")}) == 1, "%s: one semaphore" % label)


def test_misc(lp, tmp, progs, prog=None, label="sync_misc"):
    res = check_program(lp, tmp, progs, "sync_misc", prog or os.path.join(progs, "sync_misc"), label)
    if not res:
        return
    events = res[0]
    timed = [e for e in by_op(events, "mutex-lock") if "timed" in e.flags]
    check(len(timed) == 1 and {"failed", "timedout", "contended"} <= timed[0].flags and timed[0].wait_ns >= 20 * MS,
          "%s: the timedlock waited the 30 ms (>= 20 ms) and timed out" % label, timed)
    tries = [e for e in by_op(events, "mutex-lock") if "try" in e.flags]
    check([("failed" in e.flags) for e in tries] == [False, True], "%s: trylock succeeds, then fails" % label,
          tries)
    deadlk = [e for e in by_op(events, "mutex-lock") if "failed" in e.flags and not e.flags & {"try", "timed"}]
    check(len(deadlk) == 1 and deadlk[0].wait_ns == 0 and "contended" not in deadlk[0].flags,
          "%s: the error-checking mutex's EDEADLK failed without a wait" % label, deadlk)
    joins = by_op(events, "join")
    check(sorted(",".join(sorted(e.flags)) or "-" for e in joins) == ["-", "-", "failed", "failed,try"],
          "%s: tryjoin EBUSY and the self-join fail, the two joins do not" % label, joins)
    conds = by_op(events, "cond-wait")
    normal = [e.obj for e in tries]
    check(len(conds) == 2 and all({"timed", "timedout"} <= e.flags and "failed" not in e.flags for e in conds) and
          conds[0].wait_ns >= 15 * MS and conds[1].wait_ns >= 5 * MS and {e.obj2 for e in conds} == set(normal),
          "%s: cond_timedwait (20 ms) and cond_clockwait (10 ms) timed out, the mutex held again" % label, conds)
    spins = by_op(events, "spin-lock")
    check([",".join(sorted(e.flags)) or "-" for e in spins] == ["-", "failed,try"],
          "%s: spin_lock, then a failed spin_trylock" % label, spins)


def test_wrap(lp, tmp, progs):
    """The programs linked with ld --wrap through syncwrap.rsp: recorded
    with and without --sync (the preloaded library then passes their calls
    on: each operation once), META sync=wrap."""
    rsp = os.path.join(os.path.dirname(lp.exe), "..", "runtime", "syncwrap.rsp")
    if not check(os.path.exists(rsp), "syncwrap.rsp is built", rsp):
        return
    src = os.path.join(HERE, "..", "programs")
    tests = {"sync_mutex": test_mutex, "sync_prodcons": test_prodcons, "sync_barrier": test_barrier,
             "sync_sem": test_sem, "sync_misc": test_misc}
    for name, fn in sorted(tests.items()):
        prog = os.path.join(tmp, name + "_wrap")
        b = run(["gcc", "-O2", "-pthread", os.path.join(src, name + ".c"), "-o", prog, "-Wl,@" + os.path.abspath(rsp)])
        if not check(b.returncode == 0, "%s builds with syncwrap.rsp" % name, b.stderr):
            continue
        direct = run([prog])
        check(direct.returncode == 0 and direct.stdout == EXPECT[name][0],
              "%s --wrap: alone, without a recorder, same output and exit 0" % name, direct.stdout + direct.stderr)
        fn(lp, tmp, progs, prog, name + "_wrap_sync")
        if name == "sync_mutex":
            m = meta(os.path.join(tmp, name + "_wrap_sync"))
            check(m.get("sync") == "wrap", "%s --wrap: META sync=wrap" % name, m.get("sync"))
        res = check_program(lp, tmp, progs, name, prog, name + "_wrap_nosync", opts=())
        if res and name == "sync_mutex":
            check("sync" not in meta(res[1]), "%s --wrap without --sync: no META sync" % name)
        if name == "sync_mutex":
            test_threads_mode(lp, tmp, prog)


def test_threads_mode(lp, tmp, prog):
    """LAYERPROF_SYNC=threads (what --counters asks for): only the thread
    starts and creations; LAYERPROF_SYNC=0: nothing."""
    for mode, want in (("threads", {"create": (2, 0), "thread": (2, 0)}), ("0", {})):
        out = os.path.join(tmp, "threads_mode_" + mode)
        env = dict(os.environ, LAYERPROF_SYNC=mode)
        r = run([lp.exe, "record", "-q", "-o", out, "--", prog], env=env)
        if not check(r.returncode == 0 and r.stdout == EXPECT["sync_mutex"][0], "LAYERPROF_SYNC=%s: records" % mode,
                     r.stderr):
            continue
        events, text = replay_sync(lp, out)
        check(events is not None and tally(events) == want, "LAYERPROF_SYNC=%s: only %s" % (mode, want),
              events and tally(events))


def test_meta_help(lp, tmp, progs):
    res = record(lp, tmp, "meta", os.path.join(progs, "sync_mutex"))
    if res:
        check(meta(res[2]).get("sync") == "preload", "record --sync: META sync=preload", meta(res[2]))
    res = record(lp, tmp, "nosync", os.path.join(progs, "sync_mutex"), opts=())
    if res:
        check(res[0] == [] and "sync" not in meta(res[2]), "record without --sync: no sync events, no META sync",
              res[0][:3])
    check("--sync" in lp("record", "--help").stdout, "record --help tells --sync")


def test_stages(lp, tmp, progs):
    """Through the drain's folding stage (--memory --mem-fold) and its
    filter stage (--depth): the same events."""
    prog = os.path.join(progs, "sync_prodcons")
    for label, opts in (("fold", ("--sync", "--memory", "--mem-fold", "1ms")), ("filter", ("--sync", "--depth", "3")),
                        ("discard", ("--sync", "--discard"))):
        res = check_program(lp, tmp, progs, "sync_prodcons", prog, "prodcons_" + label, opts)
        if res:
            check(all(e.wait_ns >= 10 * MS for e in by_op(res[0], "cond-wait")),
                  "prodcons_%s: the waits are kept" % label)


def test_live_wrap(lp, tmp, progs):
    """The agent's drain (live): a program linked with the --wrap
    interposers, started by `live --save`, leaves the same sync events in
    the saved trace."""
    build = os.path.dirname(os.path.dirname(lp.exe))
    agent = os.path.join(build, "agent", "layerprofd")
    rsp = os.path.join(build, "runtime", "syncwrap.rsp")
    if not os.path.exists(agent):
        skip("live_wrap", "this build has no agent")
        return
    prog = os.path.join(tmp, "prodcons_live_wrap")
    b = run(["gcc", "-O2", "-pthread", os.path.join(HERE, "..", "programs", "sync_prodcons.c"), "-o", prog,
             "-Wl,@" + rsp])
    if not check(b.returncode == 0, "sync_prodcons builds with syncwrap.rsp", b.stderr):
        return
    sock = os.path.join(tmp, "agent-sync.sock")
    a = subprocess.Popen([agent, "--unix", sock, "--attach-dir", os.path.join(tmp, "attach-sync")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    harness.started.append(a)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        save = os.path.join(tmp, "live_sync")
        r = run([lp.exe, "live", "--connect", "unix:" + sock, "--format", "json", "--interval", "100ms", "--save",
                 save, "--", prog], stdin=subprocess.DEVNULL)
        if not check(r.returncode == 0, "live --save of the --wrap build: exit 0", r.stderr[-500:]):
            return
        events, text = replay_sync(lp, save)
        want = EXPECT["sync_prodcons"][1]
        check(events is not None and tally(events) == want, "live: the saved trace's sync events %s" % sorted(
            want.items()), events and sorted(tally(events).items()))
    finally:
        a.terminate()
        a.wait(timeout=10)


DRD_LINE = re.compile(r"\] (\w+)\s+(?:[a-z ]*?)(0x[0-9a-f]+)")


def drd_counts(prog):
    """drd's traced operations per kind on the program's own objects (drd's
    own, made by its pthread_create wrapper on the stack, left out)."""
    try:
        r = run(["valgrind", "--tool=drd", "--trace-mutex=yes", "--trace-cond=yes", "--trace-barrier=yes",
                 "--trace-semaphore=yes", prog], timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode:
        return None, r.stderr[-500:]
    c = collections.Counter()
    for line in r.stderr.splitlines():
        m = DRD_LINE.search(line)
        if m and "recursive" not in line and not m.group(2).startswith("0x1fff"):
            c[m.group(1)] += 1
    return c, r.stderr


def test_drd(lp, tmp, progs):
    """Lock, condition and barrier counts against drd's traces."""
    if not os.path.exists("/usr/bin/valgrind") and not any(
            os.path.exists(os.path.join(d, "valgrind")) for d in os.environ.get("PATH", "").split(":")):
        skip("drd", "valgrind is not installed")
        return
    probe, why = drd_counts(os.path.join(progs, "sync_mutex"))
    if probe is None:
        skip("drd", "valgrind --tool=drd does not run here: %s" % why)
        return
    for name, pairs in (("sync_mutex", (("post_mutex_lock", "mutex-lock"), ("mutex_unlock", "mutex-unlock"))),
                        ("sync_prodcons", (("post_mutex_lock", "mutex-lock"), ("cond_pre_wait", "cond-wait"),
                                           ("cond_signal", "cond-signal"))),
                        ("sync_barrier", (("barrier_pre_wait", "barrier-wait"),)),
                        ("sync_sem", (("sem_post", "sem-post"),))):
        prog = os.path.join(progs, name)
        drd, why = (probe, "") if name == "sync_mutex" else drd_counts(prog)
        if drd is None:
            check(False, "%s: drd runs" % name, why)
            continue
        res = record(lp, tmp, "drd_" + name, prog)
        if not res:
            continue
        ours = tally(res[0])
        for dkey, okey in pairs:
            check(drd[dkey] == ours.get(okey, (0, 0))[0],
                  "%s: %s as drd's %s (%d)" % (name, okey, dkey, drd[dkey]), (ours.get(okey), dict(drd)))


def setup(build):
    lp = Layerprof(build)
    progs = os.path.join(build, "tests")
    h = lp("record", "--help")
    if "--sync" not in h.stdout or not os.path.exists(os.path.join(progs, "sync_mutex")):
        skip("sync tracer", "this build has no record --sync or no sync_* programs")
        return None
    return (lp, progs)


# Each group takes (lp, progs, tmp).
GROUPS = {
    "mutex": lambda lp, progs, tmp: test_mutex(lp, tmp, progs),
    "prodcons": lambda lp, progs, tmp: test_prodcons(lp, tmp, progs),
    "barrier": lambda lp, progs, tmp: test_barrier(lp, tmp, progs),
    "sem": lambda lp, progs, tmp: test_sem(lp, tmp, progs),
    "misc": lambda lp, progs, tmp: test_misc(lp, tmp, progs),
    "wrap": lambda lp, progs, tmp: test_wrap(lp, tmp, progs),
    "meta_help": lambda lp, progs, tmp: test_meta_help(lp, tmp, progs),
    "stages": lambda lp, progs, tmp: test_stages(lp, tmp, progs),
    "drd": lambda lp, progs, tmp: test_drd(lp, tmp, progs),
    "live_wrap": lambda lp, progs, tmp: test_live_wrap(lp, tmp, progs),
}


def main():
    return harness.run_groups(GROUPS, setup, "lp-sync-")


if __name__ == "__main__":
    sys.exit(main())
