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

Downstream of the capture, on the same programs' traces: `report --sync`
(groups report, report_syscalls, report_memory) with exact counts per
object and thread, the threads by their role, who ended each wait, the
producer/consumer balance, futex waits of other code (sync_futex, with
--syscalls), a lock in a heap block named by its allocation site
(sync_heap, with --memory), locks in the program's own variables named
by their symbol (sync_names, PIE and not, -O0 and -O2: `g_lock`,
`stats+0x40`, `meet`), XML valid against docs/report.xsd, exit 2
without sync events; and the views (group views) of builds with
-finstrument-functions: tree's wait leaves, flow's wait steps with their
releaser, dump --chrome's wait slices and flows.  Waits are held only to
lower bounds the programs' sleeps force.

usage: test_sync.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import collections
import json
import os
import re
import shutil
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
    "sync_futex": ("rounds=4 woken=4 timeout=ETIMEDOUT\n", {"create": (2, 0), "thread": (2, 0), "join": (2, 0)}),
    "sync_names": ("global=40 stats=40 offset=64\n", {"mutex-lock": (80, 0), "mutex-unlock": (80, 0),
                                                     "barrier-wait": (2, 0), "create": (2, 0), "thread": (2, 0),
                                                     "join": (2, 0)}),
    "sync_heap": ("total=100 offset=8\n", {"mutex-lock": (100, 0), "mutex-unlock": (100, 0), "create": (2, 0),
                                           "thread": (2, 0), "join": (2, 0)}),
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
    """The trace's sync events, in replay's order (thread by thread), each
    with its time (ns) from replay's JSON form."""
    r = lp("replay", trace)
    if r.returncode:
        return None, r.stderr
    events = [Event(m) for m in (SYNC_LINE.search(line) for line in r.stdout.splitlines()) if m]
    j = lp("replay", "--format", "json", trace)
    if j.returncode:
        return None, j.stderr
    timed = [e for t in json.loads(j.stdout)["threads"] for e in t["events"] if e["type"] == "sync"]
    if len(timed) != len(events) or any(int(t["obj"], 16) != e.obj or t["op"] != e.op for t, e in zip(timed, events)):
        return None, "replay's text and JSON forms differ in their sync events"
    for t, e in zip(timed, events):
        e.ns = t["time_ns"]
    return events, r.stdout


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
    # the main thread's start: one THREAD record with no call site, its own
    # pthread_t (none of the creations)
    mains = [e for e in events if e.op == "thread" and e.site == "[unknown]"]
    check(len(mains) == 1 and mains[0].obj not in {e.obj for e in events if e.op == "create"},
          "%s: the main thread's start, once" % label, mains)
    events = [e for e in events if e not in mains]
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


def spans_signals(events):
    """sync_prodcons: 5 cond-waits and 5 signals, the i-th signal made
    while the i-th wait went on (the producer signals only once the
    consumer waits; the consumer wakes only after the signal)."""
    waits, signals = by_op(events, "cond-wait"), by_op(events, "cond-signal")
    return len(waits) == 5 and len(signals) == 5 and all(
        w.ns - w.wait_ns <= s.ns <= w.ns for w, s in zip(sorted(waits, key=lambda e: e.ns),
                                                          sorted(signals, key=lambda e: e.ns)))


def test_mutex(lp, tmp, progs, prog=None, label="sync_mutex"):
    res = check_program(lp, tmp, progs, "sync_mutex", prog or os.path.join(progs, "sync_mutex"), label)
    if not res:
        return
    events = res[0]
    locks = by_op(events, "mutex-lock")
    taker = [e for e in locks if e.site.startswith("taker")]
    unlocks = [e for e in by_op(events, "mutex-unlock") if e.site.startswith("holder")]
    check(len(taker) == 10 and len(unlocks) == 3 and "contended" in taker[0].flags and
          taker[0].ns - taker[0].wait_ns <= unlocks[0].ns <= taker[0].ns,
          "%s: the taker's first lock is contended and its wait spans the holder's first unlock" % label,
          (taker[:2], unlocks[:1]))
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
    check(spans_signals(events), "%s: each cond-wait spans the producer's signal that ended it" % label, waits)
    check(len(mutex) == 1 and {e.obj2 for e in waits} == mutex and {e.obj for e in waits} == cond,
          "%s: cond-wait names the condition signalled and the mutex locked" % label, (waits, mutex, cond))
    check(all(e.site.startswith("consumer") for e in waits), "%s: the waits are the consumer's" % label, waits)


def test_barrier(lp, tmp, progs, prog=None, label="sync_barrier"):
    res = check_program(lp, tmp, progs, "sync_barrier", prog or os.path.join(progs, "sync_barrier"), label)
    if not res:
        return
    waits = by_op(res[0], "barrier-wait")
    check(sum("serial" in e.flags for e in waits) == 2, "%s: one serial thread per round" % label, waits)
    # each round's waits all began before any of them ended (the last
    # arrival lets the others go): exact, however the threads are scheduled
    rounds = [sorted(waits, key=lambda e: e.ns)[i:i + 3] for i in (0, 3)]
    check(len(waits) == 6 and all(max(e.ns - e.wait_ns for e in r) <= min(e.ns for e in r) for r in rounds) and
          all(sum(e.wait_ns > 0 for e in r) >= 2 for r in rounds),
          "%s: in each round every wait began before the first one ended, two of three waited" % label, waits)


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
    # a deadline taken before the call bounds nothing the tracer measures
    # (a preemption between them shortens the wait): only that it waited
    check(len(timed) == 1 and {"failed", "timedout", "contended"} <= timed[0].flags and timed[0].wait_ns > 0,
          "%s: the timedlock waited and timed out" % label, timed)
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
          conds[0].wait_ns > 0 and conds[1].wait_ns > 0 and {e.obj2 for e in conds} == set(normal),
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
    starts (the main thread's too) and creations; LAYERPROF_SYNC=0: nothing."""
    for mode, want in (("threads", {"create": (2, 0), "thread": (3, 0)}), ("0", {})):
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
            check(spans_signals(res[0]), "prodcons_%s: the waits are kept, each spanning its signal" % label)


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
        want = dict(EXPECT["sync_prodcons"][1])
        want["thread"] = (want["thread"][0] + 1, 0)  # the main thread's start too
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


# ---------------------------------------------------------------- report --sync

NO_SYNC_MSG = "layerprof report: the trace has no synchronisation events: record with --sync\n"


def report_json(lp, trace, label, *opts):
    """report --sync --format json of trace, parsed; None after a failed
    check."""
    r = lp("report", "--sync", "--format", "json", *opts, trace)
    if not check(r.returncode == 0 and not r.stderr, "%s: report --sync --format json, exit 0" % label,
                 r.stderr[-500:]):
        return None
    doc = json.loads(r.stdout)
    check(doc["complete"] and doc["lost_events"] == 0 and doc["late_operations"] == 0 and
          doc["malformed_sync_events"] == 0 and not any(doc["overflow"].values()),
          "%s: the report is complete: nothing lost, late, malformed or over the bounds" % label,
          {k: doc[k] for k in ("complete", "lost_events", "late_operations", "malformed_sync_events", "overflow")})
    return doc


def xml_valid(lp, tmp, trace, label):
    """report --sync --format xml against docs/report.xsd (xmllint)."""
    r = lp("report", "--sync", "--format", "xml", trace)
    if not check(r.returncode == 0 and r.stdout.startswith("<?xml"), "%s: report --sync --format xml" % label,
                 r.stderr[-300:]):
        return
    xmllint = shutil.which("xmllint")
    if not xmllint:
        skip("%s: xml against docs/report.xsd" % label, "xmllint is not installed")
        return
    out = os.path.join(tmp, label + ".sync.xml")
    with open(out, "w") as f:
        f.write(r.stdout)
    v = run([xmllint, "--noout", "--schema", os.path.join(HERE, "..", "..", "docs", "report.xsd"), out])
    check(v.returncode == 0, "%s: report --sync --format xml validates against docs/report.xsd" % label,
          v.stderr[-500:])


def joined_tids(doc):
    """The tids the main thread joined, in the order of its joins (the
    programs join their threads in the order they created them)."""
    return [j["joined_tid"] for j in doc["joins"] if not j["failed"]]


def thread_doc(doc, tid):
    return [t for t in doc["threads"] if t["tid"] == tid][0]


def one(items, what):
    if len(items) != 1:
        raise AssertionError("%s: %d of them, not one" % (what, len(items)))
    return items[0]


def report_mutex(lp, tmp, progs, label, trace):
    """sync_mutex: the holder takes the mutex 3 times for 20 ms, the taker
    10 times; the taker's first lock waits for the holder."""
    doc = report_json(lp, trace, label)
    if not doc:
        return None
    lock = one(doc["locks"], "sync_mutex's locks")
    users = {t["tid"]: t for t in lock["threads"]}
    holder = [tid for tid, t in users.items() if t["acquisitions"] == 3]
    taker = [tid for tid, t in users.items() if t["acquisitions"] == 10]
    check(lock["name"] == "lock", "%s: the mutex is named by its static variable, lock" % label, lock["name"])
    check(lock["kind"] == "mutex" and lock["acquisitions"] == 13 and lock["holds"] == 13 and
          lock["releases"] == 13 and lock["unmatched_releases"] == 0 and lock["held_at_end"] == 0 and
          lock["try_failures"] == 0 and lock["failures"] == 0,
          "%s: one mutex, 13 acquisitions, 13 holds, 13 releases, none failed" % label, lock)
    check(sorted(users) == sorted(joined_tids(doc)) and len(holder) == 1 and len(taker) == 1 and
          users[holder[0]]["holds"] == 3 and users[taker[0]]["holds"] == 10,
          "%s: the mutex's threads are the two workers: the holder 3 acquisitions and holds, the taker 10" % label,
          (users, joined_tids(doc)))
    if len(holder) != 1 or len(taker) != 1:
        return None
    holder, taker = holder[0], taker[0]
    check(lock["contended"] >= 1 and lock["waits"] == lock["contended"] and
          users[taker]["waits"] == lock["contended"] and users[holder]["waits"] == 0,
          "%s: contended (>= 1), every contended acquisition the taker's" % label, (lock, users))
    check(users[holder]["hold_ns"] >= 3 * 20 * MS and lock["hold_max_ns"] >= 20 * MS,
          "%s: the holder held it 3 x 20 ms at least" % label, users[holder])
    waits = [w for w in doc["longest_waits"] if w["kind"] == "mutex"]
    check(waits and waits[0]["tid"] == taker and waits[0]["waker_tid"] == holder and
          waits[0]["begin_ns"] <= waits[0]["waker_ns"] <= waits[0]["end_ns"] and
          waits[0]["wait_ns"] == lock["wait_max_ns"] > 0 and
          waits[0]["object"] == lock["addr"],
          "%s: the longest wait on the mutex is the taker's, ended by the holder's unlock during it" % label, waits)
    check(thread_doc(doc, taker)["waits_by_kind"]["mutex"]["waits"] == lock["contended"] and
          thread_doc(doc, taker)["acquisitions"] == 10 and thread_doc(doc, holder)["acquisitions"] == 3,
          "%s: the threads table: the taker's mutex waits, each worker's acquisitions" % label)
    main = [t for t in doc["threads"] if t["tid"] not in (holder, taker)]
    check(len(main) == 1 and main[0]["creates"] == 2 and main[0]["waits_by_kind"]["join"]["waits"] >= 1,
          "%s: main created the two and joined them" % label, main)
    return doc, holder, taker


def report_prodcons(lp, label, trace):
    """sync_prodcons: the consumer waits on the condition for each of 5
    items; the deliberately slow producer signals it."""
    doc = report_json(lp, trace, label)
    if not doc:
        return None
    cond = one(doc["conditions"], "sync_prodcons's conditions")
    lock = one(doc["locks"], "sync_prodcons's locks")
    consumer = [w["tid"] for w in cond["waiters"]]
    producer = [s["tid"] for s in cond["signallers"]]
    check(cond["kind"] == "cond" and cond["calls"] == 5 and cond["waits"] == 5 and cond["signals"] == 5 and
          cond["broadcasts"] == 0 and cond["timeouts"] == 0 and cond["failures"] == 0 and
          len(consumer) == 1 and len(producer) == 1 and cond["waiters"][0]["calls"] == 5 and
          cond["signallers"][0]["count"] == 5 and consumer != producer,
          "%s: the condition: 5 calls, all 5 waited, 5 signals, one waiter and one signaller" % label, cond)
    check(sorted(consumer + producer) == sorted(joined_tids(doc)), "%s: waiter and signaller are the workers" %
          label, (consumer, producer, doc["joins"]))
    check(lock["acquisitions"] == 6 and lock["releases"] == 6 and lock["contended"] == lock["waits"] and
          sorted(t["tid"] for t in lock["threads"]) == sorted(consumer + producer) and
          [t["acquisitions"] for t in lock["threads"] if t["tid"] == consumer[0]] == [1],
          "%s: the mutex: 6 acquisitions (the consumer's one), 6 releases" % label, lock)
    # the consumer's lock, 5 waits, unlock: 6 holds; the producer's 5
    check(lock["holds"] == 11 and lock["held_at_end"] == 0,
          "%s: the mutex's holds: each condition wait ends one and begins one (6 + 5)" % label, lock)
    check(lock["name"] == "lock" and cond["name"] == "ready",
          "%s: named by their static variables, lock and ready" % label, (lock["name"], cond["name"]))
    pair = one(doc["pairs"], "sync_prodcons's producer/consumer pairs")
    check(pair["producers"] == producer and pair["consumers"] == consumer and pair["slow"] == "producer" and
          pair["consumer_share"] > pair["producer_share"] and pair["producer_wait_ns"] == 0 and
          pair["consumer_wait_ns"] == cond["wait_ns"] and pair["objects"] == [cond["name"]],
          "%s: one pair, the producer the slow side, the consumer's share the larger" % label, pair)
    check(re.fullmatch(r"producer side \(tid %d\) is slow: consumers wait \d+%% of the time, producers 0%%" %
                       producer[0], pair["text"]) is not None,
          "%s: 'producer side (tid N) is slow'" % label, pair["text"])
    waits = [w for w in doc["longest_waits"] if w["kind"] == "cond"]
    check(len(waits) == 5 and all(w["tid"] == consumer[0] and w["waker_tid"] == producer[0] and
                                  w["begin_ns"] <= w["waker_ns"] <= w["end_ns"] for w in waits),
          "%s: each of the 5 condition waits ended by the producer's signal during it" % label, waits)
    text = lp("report", "--sync", trace).stdout
    check("producer side (tid %d) is slow:" % producer[0] in text, "%s: the text report says the producer is slow" %
          label, text[-600:])
    return doc, producer[0], consumer[0]


def test_report(lp, tmp, progs):
    """report --sync on the programs' traces: exact counts, the threads by
    role, who ended the waits, the producer/consumer balance; XML valid;
    a trace without sync events: exit 2."""
    traces = {}
    for name in ("sync_mutex", "sync_prodcons", "sync_barrier", "sync_sem", "sync_misc"):
        res = check_program(lp, tmp, progs, name, os.path.join(progs, name), "report_" + name)
        if res:
            traces[name] = res[1]
            xml_valid(lp, tmp, res[1], "report_" + name)
    if "sync_mutex" in traces:
        report_mutex(lp, tmp, progs, "report_sync_mutex", traces["sync_mutex"])
    if "sync_prodcons" in traces:
        report_prodcons(lp, "report_sync_prodcons", traces["sync_prodcons"])

    doc = "sync_sem" in traces and report_json(lp, traces["sync_sem"], "report_sync_sem")
    if doc:
        sem = one(doc["conditions"], "sync_sem's semaphores")
        poster = [s["tid"] for s in sem["signallers"] if s["count"] == 4]
        main = [w["tid"] for w in sem["waiters"]]
        check(sem["kind"] == "semaphore" and sem["calls"] == 7 and sem["try_failures"] == 1 and
              sem["timeouts"] == 1 and sem["failures"] == 0 and sem["posts"] == 5 and
              sorted((s["tid"], s["count"]) for s in sem["signallers"]) == sorted([(main[0], 1), (poster[0], 4)]),
              "sync_sem: 7 waits calls, 1 try failure, 1 timeout, 5 posts (4 by the poster, 1 by main)", sem)
        check(poster == joined_tids(doc), "sync_sem: the poster is the thread main joined", (poster, doc["joins"]))
        pair = one(doc["pairs"], "sync_sem's pairs")
        check(pair["producers"] == poster and pair["consumers"] == main and pair["slow"] == "producer" and
              pair["objects"] == [sem["name"]],
              "sync_sem: one pair through the semaphore, the poster the producer (main's one post is still a "
              "consumer's)", pair)
        waits = [w for w in doc["longest_waits"] if w["kind"] == "semaphore" and w["waker_tid"] is not None]
        check(waits and all(w["waker_tid"] == poster[0] and w["tid"] == main[0] for w in waits),
              "sync_sem: the semaphore waits that were ended, ended by the poster", doc["longest_waits"])

    doc = "sync_barrier" in traces and report_json(lp, traces["sync_barrier"], "report_sync_barrier")
    if doc:
        bar = one(doc["barriers"], "sync_barrier's barriers")
        workers = joined_tids(doc)  # worker k was joined k-th
        per = {w["tid"]: w for w in bar["waiters"]}
        check(bar["calls"] == 6 and sorted(per) == sorted(workers) and all(w["calls"] == 2 for w in per.values()),
              "sync_barrier: 6 calls = 3 workers x 2 rounds", bar)
        # each worker's wait is what its barrier-wait events say (which
        # worker waits most depends on when the threads got to run)
        events, _ = replay_sync(lp, traces["sync_barrier"])
        sums = collections.Counter()
        for e in events or []:
            if e.op == "barrier-wait":
                sums[e.tid] += e.wait_ns
        check(events is not None and {t: w["wait_ns"] for t, w in per.items()} == dict(sums),
              "sync_barrier: each worker's wait is the sum of its barrier waits", (per, sums))
        check(all(w["waker_tid"] is None for w in doc["longest_waits"] if w["kind"] == "barrier"),
              "sync_barrier: barrier waits have no waker in the report")

    doc = "sync_misc" in traces and report_json(lp, traces["sync_misc"], "report_sync_misc")
    if doc:
        report_misc(doc)

    r = lp("record", "-q", "-o", os.path.join(tmp, "report_nosync"), "--", os.path.join(progs, "sync_mutex"))
    if check(r.returncode == 0, "sync_mutex recorded without --sync", r.stderr):
        for fmt in ("text", "json", "xml"):
            r = lp("report", "--sync", "--format", fmt, os.path.join(tmp, "report_nosync"))
            check(r.returncode == 2 and r.stderr == NO_SYNC_MSG and r.stdout == "",
                  "report --sync --format %s of a trace without sync events: exit 2, the message" % fmt,
                  (r.returncode, r.stderr, r.stdout[:200]))


def report_misc(doc):
    """sync_misc: every other kind, and the failures."""
    main = [t["tid"] for t in doc["threads"] if t["creates"] == 2]
    helper, owner = (joined_tids(doc) + [None, None])[:2]
    joins = [(j["joined_tid"], j["failed"]) for j in doc["joins"]]
    # the self-join: main's own pthread_t, which no LP_SYNC_THREAD record
    # gave (main does not start through pthread_create)
    check(len(joins) == 4 and joins[0] == (helper, True) and joins[1] == (helper, False) and
          joins[2][0] in (None, main[0] if main else None) and joins[2][1] and joins[3] == (owner, False) and
          helper != owner and None not in (helper, owner),
          "sync_misc: tryjoin of the helper failed, the helper joined, the self-join failed, the robust owner "
          "joined", doc["joins"])
    by_first = {}
    for lk in doc["locks"]:
        by_first.setdefault(lk["first_site"].split("+")[0] if lk["first_site"] else "?", []).append(lk)
    rw = [lk for lk in doc["locks"] if lk["kind"] == "rwlock"]
    spin = [lk for lk in doc["locks"] if lk["kind"] == "spinlock"]
    held = one(by_first.get("helper", []), "the mutex the helper holds")
    robust = one(by_first.get("robust_owner", []), "the robust mutex")
    mains = sorted(((lk["acquisitions"], lk["holds"], lk["releases"], lk["try_failures"], lk["failures"])
                    for lk in by_first.get("main", []) if lk["kind"] == "mutex"))
    # (acquisitions, holds, releases, try failures, failures):
    #   error-checking: lock, lock EDEADLK, unlock, unlock EPERM
    #   recursive: lock, lock, unlock, unlock -- one hold, the outermost
    #   normal: trylock, trylock EBUSY, unlock; lock, 2 timed-out
    #   condition waits (each ends a hold and begins one), unlock
    check(mains == [(1, 1, 1, 0, 1), (2, 1, 2, 0, 0), (2, 4, 2, 1, 0)],
          "sync_misc: main's mutexes: error-checking (1 failure), recursive (2 acquisitions, 1 hold), "
          "normal (a try failure; its condition waits split its hold)", mains)
    check(len(rw) == 1 and (rw[0]["acquisitions"], rw[0]["read_acquisitions"], rw[0]["try_failures"],
                            rw[0]["releases"], rw[0]["holds"]) == (3, 2, 2, 3, 2),
          "sync_misc: the rwlock: 3 acquisitions (2 shared, nested: one hold), 2 try failures, 3 releases", rw)
    check(len(spin) == 1 and (spin[0]["acquisitions"], spin[0]["try_failures"], spin[0]["holds"]) == (1, 1, 1),
          "sync_misc: the spinlock: 1 acquisition, 1 try failure", spin)
    check((held["acquisitions"], held["failures"], held["contended"], held["waits"]) == (1, 1, 0, 1) and
          held["wait_ns"] > 0 and held["hold_ns"] >= held["wait_ns"] and
          sorted(t["tid"] for t in held["threads"]) == sorted([helper] + main),
          "sync_misc: the helper's mutex: main's timedlock waited and failed while the helper held it", held)
    check((robust["acquisitions"], robust["holds"], robust["releases"], robust["held_at_end"]) == (2, 1, 1, 1) and
          sorted(t["tid"] for t in robust["threads"]) == sorted([owner] + main),
          "sync_misc: the robust mutex: the owner ended holding it, main took it (EOWNERDEAD) and released it",
          robust)
    cond = one(doc["conditions"], "sync_misc's conditions")
    check((cond["calls"], cond["timeouts"], cond["failures"], cond["signals"], cond["broadcasts"]) ==
          (2, 2, 0, 0, 1) and cond["wait_ns"] > 0,
          "sync_misc: the condition: 2 timed-out waits (20 + 10 ms), 1 broadcast", cond)
    check(all(w["waker_tid"] is None for w in doc["longest_waits"] if w["kind"] in ("cond", "mutex")),
          "sync_misc: timed-out waits have no waker", doc["longest_waits"])


def test_report_syscalls(lp, tmp, progs):
    """record --sync --syscalls: the futex calls inside the interposed
    operations are theirs (sync_mutex: no futex object); a raw futex
    (sync_futex) is one, with its calls, waits, timeouts and wakes."""
    res = check_program(lp, tmp, progs, "sync_mutex", os.path.join(progs, "sync_mutex"), "syscalls_sync_mutex",
                        opts=("--sync", "--syscalls"))
    if res:
        doc = report_json(lp, res[1], "syscalls_sync_mutex")
        if doc:
            lock = one(doc["locks"], "sync_mutex's locks")
            check(doc["futex_waits_inside_operations"] >= lock["contended"] >= 1 and doc["futex_waits"] == 0 and
                  doc["futexes"] == [] and
                  all(t["waits_by_kind"]["futex"]["waits"] == 0 for t in doc["threads"]),
                  "syscalls_sync_mutex: the contended lock's futex waits are inside it: no futex of other code",
                  {k: doc[k] for k in ("futex_waits", "futex_waits_inside_operations", "futexes")})
            xml_valid(lp, tmp, res[1], "syscalls_sync_mutex")
    res = check_program(lp, tmp, progs, "sync_futex", os.path.join(progs, "sync_futex"), "syscalls_sync_futex",
                        opts=("--sync", "--syscalls"))
    if not res:
        return
    doc = report_json(lp, res[1], "syscalls_sync_futex")
    if not doc:
        return
    xml_valid(lp, tmp, res[1], "syscalls_sync_futex")
    fx = one(doc["futexes"], "sync_futex's futexes")
    waiter = [w["tid"] for w in fx["waiters"]]
    waker = [s["tid"] for s in fx["signallers"]]
    check((fx["calls"], fx["waits"], fx["timeouts"], fx["wakes"]) == (5, 5, 1, 4) and fx["kind"] == "futex" and
          fx["name"] == "futex " + fx["addr"] and len(waiter) == 1 and len(waker) == 1 and
          fx["waiters"][0]["calls"] == 5 and fx["signallers"][0]["count"] == 4 and
          sorted(waiter + waker) == sorted(joined_tids(doc)),
          "syscalls_sync_futex: the raw futex: 5 FUTEX_WAIT (all blocked, 1 timed out) by the waiter, 4 "
          "FUTEX_WAKE by the waker", fx)
    check(doc["futex_waits"] == 5 and fx["wait_max_ns"] >= 10 * MS and fx["wait_ns"] >= 10 * MS,
          "syscalls_sync_futex: 5 futex waits of other code, the timed one >= its 10 ms", fx)
    t = thread_doc(doc, waiter[0]) if waiter else None
    check(t and t["waits_by_kind"]["futex"]["waits"] == 5 and t["waits_by_kind"]["futex"]["wait_ns"] == fx["wait_ns"],
          "syscalls_sync_futex: the waiter's futex waits in the threads table", t)
    check(all(w["waker_tid"] is None for w in doc["longest_waits"] if w["kind"] == "futex"),
          "syscalls_sync_futex: futex waits of other code have no waker")
    # without the syscall layer: only the pthread operations
    res = check_program(lp, tmp, progs, "sync_futex", os.path.join(progs, "sync_futex"), "nosyscalls_sync_futex")
    if res:
        doc = report_json(lp, res[1], "nosyscalls_sync_futex")
        check(doc and doc["futexes"] == [] and doc["futex_waits"] == 0 and doc["operations"] == 7,
              "sync_futex without --syscalls: no futex, 7 operations (the main thread's start too)",
              doc and (doc["futexes"], doc["operations"]))


def test_report_memory(lp, tmp, progs):
    """record --sync --memory: a mutex inside a heap block is named by the
    block's allocation site and its offset."""
    res = check_program(lp, tmp, progs, "sync_heap", os.path.join(progs, "sync_heap"), "memory_sync_heap",
                        opts=("--sync", "--memory"))
    if not res:
        return
    doc = report_json(lp, res[1], "memory_sync_heap")
    if not doc:
        return
    lock = one(doc["locks"], "sync_heap's locks")
    check(re.fullmatch(r"heap block from counter_new\+0x[0-9a-f]+ \+0x8", lock["name"]) is not None,
          "memory_sync_heap: the mutex is 'heap block from counter_new+0x.. +0x8'", lock["name"])
    check(lock["acquisitions"] == 100 and lock["holds"] == 100 and lock["releases"] == 100 and
          sorted(t["tid"] for t in lock["threads"]) == sorted(joined_tids(doc)) and
          all(t["acquisitions"] == 50 for t in lock["threads"]),
          "memory_sync_heap: 100 acquisitions and holds, 50 by each adder", lock)
    text = lp("report", "--sync", res[1]).stdout
    check(re.search(r"heap block from counter_new\+0x[0-9a-f]+ \+0x8 \(first at adder\+0x[0-9a-f]+;", text)
          is not None, "memory_sync_heap: the text report names it so, first used by adder", text[:800])
    xml_valid(lp, tmp, res[1], "memory_sync_heap")
    res = check_program(lp, tmp, progs, "sync_heap", os.path.join(progs, "sync_heap"), "nomemory_sync_heap")
    if res:
        doc = report_json(lp, res[1], "nomemory_sync_heap")
        check(doc and re.fullmatch(r"0x[0-9a-f]+", one(doc["locks"], "locks")["name"]) is not None,
              "sync_heap without --memory: the mutex is named by its address", doc and doc["locks"])


def report_names(lp, tmp, label, trace):
    """sync_names's report: its two mutexes and its barrier named by the
    variables that hold them, in JSON, text and XML."""
    doc = report_json(lp, trace, label)
    if not doc:
        return
    locks = {lk["name"]: lk for lk in doc["locks"]}
    check(sorted(locks) == ["g_lock", "stats+0x40"] and
          all(lk["acquisitions"] == 40 and lk["holds"] == 40 for lk in locks.values()),
          "%s: the locks are g_lock and stats+0x40, 40 acquisitions each" % label, doc["locks"])
    check([b["name"] for b in doc["barriers"]] == ["meet"], "%s: the barrier is meet" % label, doc["barriers"])
    text = lp("report", "--sync", trace).stdout
    check(re.search(r"mutex +g_lock \(first at worker\+0x[0-9a-f]+;", text) is not None and
          re.search(r"mutex +stats\+0x40 \(first at worker\+0x[0-9a-f]+;", text) is not None,
          "%s: the text report names them, first used by worker" % label, text[:1200])
    xml = lp("report", "--sync", "--format", "xml", trace).stdout
    check('name="g_lock"' in xml and 'name="stats+0x40"' in xml and 'name="meet"' in xml,
          "%s: so does the XML" % label, xml[:1200])
    xml_valid(lp, tmp, trace, label)


def test_report_names(lp, tmp, progs):
    """record --sync of sync_names (as CMake builds it, then with gcc as
    PIE and not at -O0 and -O2): the locks in its global and static
    variables are named by their symbol, the offset when inside one."""
    res = check_program(lp, tmp, progs, "sync_names", os.path.join(progs, "sync_names"), "names_sync_names")
    if res:
        report_names(lp, tmp, "names_sync_names", res[1])
    src = os.path.join(HERE, "..", "programs")
    for opt in ("-O0", "-O2"):
        for pie in (("-fPIE", "-pie"), ("-fno-pie", "-no-pie")):
            label = "names%s%s" % (opt, pie[1])
            prog = os.path.join(tmp, label + "_prog")
            b = run(["gcc", opt, pie[0], pie[1], "-pthread", "-I", src, os.path.join(src, "sync_names.c"), "-o",
                     prog])
            if not check(b.returncode == 0, "%s: sync_names builds" % label, b.stderr):
                continue
            res = check_program(lp, tmp, progs, "sync_names", prog, label)
            if res:
                report_names(lp, tmp, label, res[1])


# ---------------------------------------------------------------- the views

def instrumented(tmp, name):
    """tests/programs/<name>.c built with -finstrument-functions (as
    run.py's samples), or None after a failed check."""
    src = os.path.join(HERE, "..", "programs")
    prog = os.path.join(tmp, name + "_instr")
    b = run(["gcc", "-O2", "-g", "-finstrument-functions", "-pthread", "-I", src, os.path.join(src, name + ".c"),
             "-o", prog])
    return prog if check(b.returncode == 0, "%s builds with -finstrument-functions" % name, b.stderr) else None


def tree_waits(tree, tid, func):
    """{name: (calls, total_ns)} of the sync leaves under func in thread
    tid's tree (tree --format json), and the other functions they are
    under."""
    got, elsewhere = {}, []

    def walk(nodes, parent):
        for n in nodes:
            if n.get("sync"):
                if parent == func:
                    calls, total = got.get(n["name"], (0, 0))
                    got[n["name"]] = (calls + n["calls"], total + n["total_ns"])
                else:
                    elsewhere.append((parent, n["name"]))
            walk(n["children"], n["name"])

    for t in tree["threads"]:
        if t["tid"] == tid:
            walk(t["calls"], None)
    return got, elsewhere


def chrome_sync(lp, tmp, trace, label):
    """dump --chrome's sync events: (slices, {flow id: {ph: event}})."""
    out = os.path.join(tmp, label + ".chrome.json")
    r = lp("dump", "--chrome", "-o", out, trace)
    if not check(r.returncode == 0 and not r.stderr, "%s: dump --chrome" % label, r.stderr[-300:]):
        return None, None
    with open(out) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    slices = [e for e in events if e.get("cat") == "sync" and e["ph"] == "X"]
    flows = collections.defaultdict(dict)
    for e in events:
        if e.get("cat") == "sync" and e["ph"] in ("s", "f"):
            flows[e["id"]][e["ph"]] = e
    return slices, flows


def us(ns):
    """A Chrome time (us, 3 decimals) in ns."""
    return int(round(float(ns) * 1000))


def views_of_waits(lp, tmp, label, trace, waiter, func, op, waker, n, how):
    """The n waits of thread waiter in func on op ('mutex-lock', ...),
    each released by thread waker: tree's leaves, flow's steps, dump
    --chrome's slices and flows."""
    tree = lp("tree", "--format", "json", trace)
    if check(tree.returncode == 0, "%s: tree --format json" % label, tree.stderr):
        got, elsewhere = tree_waits(json.loads(tree.stdout), waiter, func)
        names = [k for k in got if k.startswith(op + " 0x")]
        check(len(names) == 1 and got[names[0]][0] == n and not elsewhere,
              "%s: tree: one leaf '[wait] %s 0x...' under %s, %d wait(s), no wait elsewhere in the thread" %
              (label, op, func, n), (got, elsewhere))
        text = lp("tree", trace).stdout
        check(names and re.search(r"s\s+%d\s+\[wait\] %s$" % (n, re.escape(names[0])), text, re.M),
              "%s: tree's text: '[wait] %s' with its %d call(s)" % (label, names[0] if names else op, n),
              text[-800:])
    r = lp("flow", "--format", "json", trace, func)
    if check(r.returncode == 0, "%s: flow %s" % (label, func), r.stderr):
        flow = json.loads(r.stdout)
        steps = [st for st in flow["steps"] if st["type"] == "sync"]
        check(flow["tid"] == waiter and len(steps) == n and
              all(st["waker_tid"] == waker and st["time_ns"] <= st["release_ns"] <= st["time_ns"] +
                  st["duration_ns"] and st["depth"] == 1 and
                  re.fullmatch(r"%s 0x[0-9a-f]+.*, %s thread %d \(.*\)" % (op, how, waker), st["text"])
                  for st in steps),
              "%s: flow %s: the %d wait step(s), each '%s thread %d' during it" % (label, func, n, how, waker),
              steps)
        text = lp("flow", trace, func).stdout
        check(text.count("[wait] %s 0x" % op) == n and text.count("%s thread %d (" % (how, waker)) == n,
              "%s: flow's text says '[wait] %s ..., %s thread %d'" % (label, op, how, waker), text[-800:])
    slices, flows = chrome_sync(lp, tmp, trace, label)
    if slices is None:
        return
    mine = [e for e in slices if e["tid"] == waiter and e["name"].startswith("wait %s 0x" % op)]
    check(len(mine) == n and all(e["args"]["released_by"] == waker and e["args"]["function"] == func and
                                 e["args"]["op"] == op for e in mine),
          "%s: dump --chrome: %d '%s' slice(s) on thread %d, released by %d, in %s" % (label, n, op, waiter, waker,
                                                                                     func), mine)
    ends = sorted(us(e["ts"]) + us(e["dur"]) for e in mine)
    arrows = sorted(us(f["f"]["ts"]) for f in flows.values()
                    if "s" in f and "f" in f and f["s"]["tid"] == waker and f["f"]["tid"] == waiter)
    check(len(arrows) == n and all(abs(a - b) <= 1 for a, b in zip(arrows, ends)),
          "%s: dump --chrome: a flow from thread %d to the end of each wait" % (label, waker), (arrows, ends))


def test_views(lp, tmp, progs):
    """tree, flow and dump --chrome of instrumented builds of sync_mutex
    and sync_prodcons recorded with --sync: the waits where they happened,
    with the thread that released them (report --sync's figures)."""
    prog = instrumented(tmp, "sync_mutex")
    res = prog and check_program(lp, tmp, progs, "sync_mutex", prog, "views_sync_mutex")
    if res:
        got = report_mutex(lp, tmp, progs, "views_sync_mutex", res[1])
        if got:
            doc, holder, taker = got
            n = [t["waits"] for t in one(doc["locks"], "locks")["threads"] if t["tid"] == taker][0]
            views_of_waits(lp, tmp, "views_sync_mutex", res[1], taker, "taker", "mutex-lock", holder, n,
                           "released by")
    prog = instrumented(tmp, "sync_prodcons")
    res = prog and check_program(lp, tmp, progs, "sync_prodcons", prog, "views_sync_prodcons")
    if res:
        got = report_prodcons(lp, "views_sync_prodcons", res[1])
        if got:
            doc, producer, consumer = got
            views_of_waits(lp, tmp, "views_sync_prodcons", res[1], consumer, "consumer", "cond-wait", producer, 5,
                           "signalled by")


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
    "report": lambda lp, progs, tmp: test_report(lp, tmp, progs),
    "report_syscalls": lambda lp, progs, tmp: test_report_syscalls(lp, tmp, progs),
    "report_memory": lambda lp, progs, tmp: test_report_memory(lp, tmp, progs),
    "report_names": lambda lp, progs, tmp: test_report_names(lp, tmp, progs),
    "views": lambda lp, progs, tmp: test_views(lp, tmp, progs),
}


def main():
    return harness.run_groups(GROUPS, setup, "lp-sync-")


if __name__ == "__main__":
    sys.exit(main())
