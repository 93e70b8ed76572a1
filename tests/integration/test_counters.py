#!/usr/bin/env python3
"""Performance counters with real programs: `record --counters` on
tests/programs/ctr_pages.c (built here with -finstrument-functions at -O0
and -O2, and without), read back with `replay --format json`: a function
that touches N fresh pages counts N page faults, a loop that runs 50 ms of
CPU time counts that much task-clock, each of two threads its own pages;
the program's totals held against `perf stat -e task-clock,page-faults` on
the same program in the same run; events this machine cannot count named
with their reason; bad lists refused with one message and exit status 2;
the program's output and exit status unchanged.  Also: per-thread totals of
tests/programs/ctr_threads.c against `perf stat --per-thread` attached to
the same run (perthread); counter values kept by the record-time filters
-F, -N and --min-time (filters); a plain binary under --dynamic (the patch
backend's gates read the counters; the uprobe and ptrace backends say they
cannot) (dynamic).

usage: test_counters.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

# ctr_pages' numbers (see the program): pages touched by main and by its two
# threads, the CPU time its spin() runs in main and in each thread.
MAIN_PAGES, THREAD_PAGES = 100, (64, 128)
MAIN_SPIN_MS, THREAD_SPIN_MS = 50, 20
# A call of touch_pages(n) faults on its n pages, and perhaps on a page of
# its stack and one of the ring the counter record after it goes to.
PAGE_SLACK = 2
# The program's page faults in layerprof's totals against perf stat's count
# of the same program run with the runtime loaded but not tracing: tracing
# touches each thread's ring header and the ring pages the kernel did not
# make ahead, the session's control block, the counters' pages.  Measured
# here: 8 to 11 more for ctr_pages' three threads.
TOTAL_PAGE_SLACK = 32
# ctr_threads' workers: pages touched after the go.  A thread's exit after
# its END record (the pthread key destructor) faults on pages perf stat
# counts and layerprof does not: the END record's ring page, and glibc's
# exit of the first thread to end (2 or 3 faults under perf stat alone,
# without layerprof).  Measured here: 1 to 3 for the first worker to end, 0
# for the other.
THREAD_PAGES_GO = (64, 128)
THREAD_EXIT_SLACK = 4
OUTPUT = "ctr_pages: touched 100 pages, spun"
STATUS = 3


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, **kw)


class Env:
    def __init__(self, build):
        self.build = build
        self.exe = os.path.join(build, "host", "layerprof")
        self.runtime = os.path.join(build, "runtime", "liblayerprof.so")
        self.cc = os.environ.get("CC") or "cc"
        self.progs = {}

    def prog(self, tmp, variant, name="ctr_pages"):
        """tests/programs/NAME.c (ctr_pages by default) built as variant:
        O0, O2 (-finstrument-functions) or plain (-O2, no
        instrumentation)."""
        if (name, variant) not in self.progs:
            out = os.path.join(tmp, name + "_" + variant)
            flags = ["-O0"] if variant == "O0" else ["-O2"]
            if variant != "plain":
                flags.append("-finstrument-functions")
            r = run([self.cc, "-std=c11", "-g", "-pthread"] + flags +
                    ["-o", out, os.path.join(PROGRAMS, name + ".c")])
            if r.returncode:
                raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
            self.progs[(name, variant)] = out
        return self.progs[(name, variant)]

    def record(self, out, prog, counters=None, args=()):
        opt = "--counters" if counters is None else "--counters=" + counters
        return run([self.exe, "record", "-q", opt, "-o", out, "--", prog] + list(args))

    def replay(self, trace):
        r = run([self.exe, "replay", "--format", "json", trace])
        if r.returncode:
            raise RuntimeError("replay failed: " + r.stderr)
        return json.loads(r.stdout)


def meta(trace, key):
    """The value of META key in trace, or None."""
    with open(os.path.join(trace, "data"), "rb") as f:
        head = f.read(1 << 16)
    m = re.search(rb"\n" + re.escape(key.encode()) + rb"=([^\n]*)\n", head)
    return m.group(1).decode() if m else None


def counter_events(thread, kind=None, name=None):
    return [e for e in thread["events"] if e["type"] == "counter" and (kind is None or e["kind"] == kind) and
            (name is None or e.get("name") == name)]


def calls(thread, name, counter):
    """Each call of name in thread: its counter's EXIT value less its ENTRY
    value, in order."""
    out, stack = [], []
    for e in counter_events(thread, name=name):
        if e["kind"] == "entry":
            stack.append(e["values"][counter])
        elif e["kind"] == "exit" and stack:
            out.append(e["values"][counter] - stack.pop())
    return out


def hw_available():
    """Whether this machine counts CPU cycles (a PMU the kernel drives)."""
    if not shutil.which("perf"):
        return None
    r = run(["perf", "stat", "-x,", "-e", "cycles", "true"])
    return r.returncode == 0 and "not supported" not in r.stderr and "<not" not in r.stderr


def perf_stat(prog, preload):
    """perf stat's task-clock (ns) and page-faults of one run of prog, the
    runtime preloaded (and not tracing: no session) when preload is set."""
    env = dict(os.environ)
    env.pop("LAYERPROF_SESSION", None)
    if preload:
        env["LD_PRELOAD"] = preload
    r = run(["perf", "stat", "-x,", "-e", "task-clock,page-faults", "--", prog], env=env)
    vals = {}
    for line in r.stderr.splitlines():
        f = line.split(",")
        if len(f) > 3 and f[2] in ("task-clock", "page-faults"):
            vals[f[2]] = float(f[0]) * (1e6 if f[1] == "msec" else 1)
    return vals


def threads_by_pages(rep):
    """The threads of ctr_pages by the pages their touch_pages call touched."""
    out = {}
    for t in rep["threads"]:
        faults = calls(t, "touch_pages", "page-faults")
        if faults:
            out[t["tid"]] = (t, faults[0])
    return out


# ---- the groups ------------------------------------------------------------

def group_pages(env, tmp):
    """Per function and per thread, at -O0 and -O2: touch_pages(n) counts n
    page faults (and at most PAGE_SLACK more), spin(ms) ms of task-clock
    within 10%, each thread its own pages; output and status unchanged."""
    for variant in ("O0", "O2"):
        prog = env.prog(tmp, variant)
        trace = os.path.join(tmp, "pages_" + variant)
        r = env.record(trace, prog, "task-clock,page-faults,context-switches")
        check(r.returncode == STATUS, "%s: exit status %d passed through" % (variant, STATUS),
              "%d: %s" % (r.returncode, r.stderr))
        check(r.stdout.startswith(OUTPUT), "%s: the program's output unchanged" % variant, r.stdout)
        check(meta(trace, "counters") == "task-clock,page-faults,context-switches",
              "%s: META counters in the order asked" % variant, meta(trace, "counters"))
        check(meta(trace, "counters.read") == "read", "%s: META counters.read=read" % variant,
              meta(trace, "counters.read"))
        check(meta(trace, "counters.unavailable") is None, "%s: no counter unavailable" % variant)
        rep = env.replay(trace)
        main = [t for t in rep["threads"] if t["pid"] == t["tid"]]
        if not check(len(main) == 1 and len(rep["threads"]) == 3, "%s: three threads" % variant,
                     [(t["pid"], t["tid"]) for t in rep["threads"]]):
            continue
        main = main[0]
        got = calls(main, "touch_pages", "page-faults")
        check(len(got) == 1 and MAIN_PAGES <= got[0] <= MAIN_PAGES + PAGE_SLACK,
              "%s: touch_pages(%d) counts %d page faults (+%d at most)" % (variant, MAIN_PAGES, MAIN_PAGES,
                                                                          PAGE_SLACK), got)
        spun = calls(main, "spin", "task-clock")
        lo, hi = MAIN_SPIN_MS * 0.9e6, MAIN_SPIN_MS * 1.1e6
        check(len(spun) == 1 and lo <= spun[0] <= hi,
              "%s: spin(%d ms of CPU time) counts %d ms of task-clock within 10%%" % (variant, MAIN_SPIN_MS,
                                                                                    MAIN_SPIN_MS), spun)
        # every function event of the thread has its counter event, at the same time
        entries = [e for e in main["events"] if e["type"] == "entry"]
        centries = counter_events(main, "entry")
        check(len(entries) == len(centries) and all(a["time_ns"] == b["time_ns"] and a["name"] == b["name"]
                                                    for a, b in zip(entries, centries)),
              "%s: one counter ENTRY per function entry, at its time" % variant,
              (len(entries), len(centries)))
        # values only grow along a thread
        for t in rep["threads"]:
            seq = [e["values"]["page-faults"] for e in counter_events(t) if e["kind"] in
                   ("begin", "entry", "exit", "end")]
            if not check(seq == sorted(seq), "%s: thread %d's values never go down" % (variant, t["tid"])):
                break
        by = threads_by_pages(rep)
        workers = sorted(f for tid, (t, f) in by.items() if tid != main["tid"])
        check(len(workers) == 2 and all(p <= f <= p + PAGE_SLACK for p, f in zip(THREAD_PAGES, workers)),
              "%s: the threads' touch_pages count %s page faults" % (variant, THREAD_PAGES), workers)
        for tid, (t, f) in by.items():
            end = counter_events(t, "end")
            ok = len(end) == 1 and end[0]["values"]["page-faults"] >= f and "enabled_ns" in end[0]
            check(ok, "%s: thread %s ends with one END record (with times) covering its calls" %
                  (variant, "main" if tid == main["tid"] else tid), end)
            if tid != main["tid"]:
                spun = calls(t, "spin", "task-clock")
                check(len(spun) == 1 and THREAD_SPIN_MS * 0.9e6 <= spun[0] <= THREAD_SPIN_MS * 1.1e6,
                      "%s: a thread's spin(%d ms) counts its task-clock within 10%%" % (variant, THREAD_SPIN_MS),
                      spun)


def group_totals(env, tmp):
    """The program's totals (LP_CTR_CPU per CPU, LP_CTR_PROCESS) against
    perf stat on the same program in the same run: page faults within
    [perf, perf + TOTAL_PAGE_SLACK] of the program with the runtime loaded,
    task-clock within 25% (the gates' reads are the program's CPU time)."""
    prog = env.prog(tmp, "O2")
    trace = os.path.join(tmp, "totals")
    r = env.record(trace, prog, "task-clock,page-faults")
    if not check(r.returncode == STATUS, "totals: recorded", r.stderr):
        return
    rep = env.replay(trace)
    main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
    cpus = counter_events(main, "cpu")
    proc = counter_events(main, "process")
    check(len(cpus) >= 1 and len(proc) == 1, "totals: CPU and PROCESS events in the main thread's stream",
          (len(cpus), len(proc)))
    if not proc:
        return
    proc = proc[0]
    check(all(sum(c["values"][k] for c in cpus) == proc["values"][k] for k in ("task-clock", "page-faults")),
          "totals: PROCESS is the sum of the CPUs")
    ends = sum(counter_events(t, "end")[0]["values"]["page-faults"] for t in rep["threads"]
               if counter_events(t, "end"))
    check(proc["values"]["page-faults"] >= ends, "totals: the program's page faults cover its threads'",
          (proc["values"]["page-faults"], ends))
    if not shutil.which("perf"):
        skip("totals: perf stat", "perf is not installed")
        return
    peer = perf_stat(prog, env.runtime)
    plain = perf_stat(prog, None)
    if "page-faults" not in peer or "page-faults" not in plain:
        skip("totals: perf stat", "perf stat counted nothing here")
        return
    pf = proc["values"]["page-faults"]
    print("     page-faults: layerprof %d, perf stat %d (runtime loaded, not tracing), %d (plain)" %
          (pf, peer["page-faults"], plain["page-faults"]))
    check(peer["page-faults"] <= pf <= peer["page-faults"] + TOTAL_PAGE_SLACK,
          "totals: page-faults within [perf stat, perf stat + %d]" % TOTAL_PAGE_SLACK,
          (pf, peer["page-faults"]))
    tc = proc["values"]["task-clock"]
    print("     task-clock: layerprof %.1f ms, perf stat %.1f ms" % (tc / 1e6, peer["task-clock"] / 1e6))
    check(0.75 * peer["task-clock"] <= tc <= 1.25 * peer["task-clock"] + 20e6,
          "totals: task-clock within 25% of perf stat's", (tc, peer["task-clock"]))


def group_unavailable(env, tmp):
    """The default set on this machine: what it cannot count is named with
    its reason (a warning, and META counters.unavailable), the rest
    recorded."""
    prog = env.prog(tmp, "O2")
    trace = os.path.join(tmp, "default")
    r = env.record(trace, prog)
    check(r.returncode == STATUS, "default set: recorded", r.stderr)
    hw = hw_available()
    names = meta(trace, "counters") or ""
    if hw:
        check(names == "cycles,instructions,cache-misses,branch-misses,task-clock,page-faults,context-switches",
              "default set: all seven recorded (this CPU has a PMU)", names)
        return
    if hw is None:
        skip("default set: hardware events", "perf is not installed to tell whether there is a PMU")
        return
    hw_names = ["cycles", "instructions", "cache-misses", "branch-misses"]
    lines = [l for l in r.stderr.splitlines() if l]
    check(len(lines) == 1 and "warning" in lines[0] and all(n + ": not supported by this CPU or kernel" in lines[0]
                                                             for n in hw_names),
          "default set: one warning line names the hardware events and why", r.stderr)
    check(names == "task-clock,page-faults,context-switches", "default set: the software events recorded", names)
    una = meta(trace, "counters.unavailable") or ""
    check(all(n + ": not supported by this CPU or kernel" in una for n in hw_names),
          "default set: META counters.unavailable names them with the reason", una)
    rep = env.replay(trace)
    main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
    begin = counter_events(main, "begin")
    check(len(begin) == 1 and sorted(begin[0]["values"]) == sorted(names.split(",")),
          "default set: the records carry the software events' values", begin)


def group_refuse(env, tmp):
    """Bad lists: one message, exit status 2, no trace written; on a
    machine without a PMU, a list of hardware events only is refused the
    same way."""
    prog = env.prog(tmp, "O2")
    cases = [("bogus", "layerprof record: invalid --counters: unknown counter 'bogus' (see `perf list`; raw "
              "events as rNNNN, hex)"),
             ("task-clock,cs,context-switches", "layerprof record: invalid --counters: counters 'cs' and "
              "'context-switches' are the same event"),
             (",".join(["task-clock"] + ["r%x" % i for i in range(1, 13)]),
              "layerprof record: invalid --counters: too many counters: at most 12"),
             ("", "layerprof record: invalid --counters: empty counter name in ''")]
    if hw_available() is False:
        cases.append(("cycles,LLC-load-misses", "layerprof record: --counters: no counter can be opened "
                      "(cycles: not supported by this CPU or kernel; LLC-load-misses: not supported by this "
                      "CPU or kernel)"))
    for i, (lst, msg) in enumerate(cases):
        trace = os.path.join(tmp, "refused%d" % i)
        r = env.record(trace, prog, lst)
        check(r.returncode == 2 and r.stderr.strip() == msg and not r.stdout and not os.path.exists(trace),
              "--counters=%s refused: one message, status 2, no trace, the program not run" % (lst[:30] or "''"),
              "%d %r %r" % (r.returncode, r.stderr, r.stdout))


def group_plain(env, tmp):
    """A program built without -finstrument-functions: its main thread's
    BEGIN and END and the program's totals, no function records; output
    and status unchanged."""
    prog = env.prog(tmp, "plain")
    trace = os.path.join(tmp, "plain")
    r = env.record(trace, prog, "task-clock,page-faults")
    check(r.returncode == STATUS and r.stdout.startswith(OUTPUT), "plain: output and status unchanged",
          (r.returncode, r.stdout, r.stderr))
    rep = env.replay(trace)
    main = [t for t in rep["threads"] if t["pid"] == t["tid"]]
    if not check(len(main) == 1, "plain: the main thread's stream"):
        return
    kinds = [e["kind"] for e in counter_events(main[0])]
    check(kinds[:1] == ["begin"] and "end" in kinds and "process" in kinds and "entry" not in kinds,
          "plain: BEGIN, END and the totals, no function records", kinds)
    proc = counter_events(main[0], "process")
    check(proc and proc[0]["values"]["page-faults"] >= MAIN_PAGES + sum(THREAD_PAGES),
          "plain: the totals count every thread's pages", proc)


def group_fold(env, tmp):
    """With the heap tracer folding short-lived blocks (--memory --mem-fold),
    every function event still has its counter event just after it, and
    blocks are still folded."""
    prog = os.path.join(tmp, "mem_churn3")
    r = run([env.cc, "-std=c11", "-O2", "-g", "-pthread", "-finstrument-functions", "-o", prog,
             os.path.join(PROGRAMS, "mem_churn3.c")])
    if not check(r.returncode == 0, "fold: mem_churn3 built", r.stderr):
        return
    trace = os.path.join(tmp, "fold")
    r = run([env.exe, "record", "-q", "--counters=page-faults", "--memory", "--mem-fold", "1s", "-o", trace, "--",
             prog, "20000"])
    if not check(r.returncode == 0, "fold: recorded", r.stderr):
        return
    rep = env.replay(trace)
    funcs = bad = folds = 0
    for t in rep["threads"]:
        ev = t["events"]
        for i, e in enumerate(ev):
            if e["type"] == "mem" and e.get("op") == "fold":
                folds += 1
            if e["type"] not in ("entry", "exit"):
                continue
            funcs += 1
            nx = ev[i + 1] if i + 1 < len(ev) else {}
            if not (nx.get("type") == "counter" and nx.get("kind") == e["type"] and
                    nx.get("time_ns") == e["time_ns"] and nx.get("name") == e["name"]):
                bad += 1
    check(funcs > 100000 and bad == 0, "fold: each of %d function events has its counter event after it" % funcs,
          "%d without" % bad)
    check(folds > 0, "fold: blocks still folded (%d FOLD events)" % folds)


def group_user(env, tmp):
    """An unprivileged user where perf_event_paranoid is 2 or more: only
    user space may be counted; the recorder says so (META counters.scope)
    and the counts are still there."""
    try:
        paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    except (OSError, ValueError):
        paranoid = None
    if os.geteuid() != 0 or not shutil.which("setpriv") or paranoid is None or paranoid < 2:
        skip("user", "needs root, setpriv and perf_event_paranoid >= 2 (is %s)" % paranoid)
        return
    prog = env.prog(tmp, "O2")
    work = os.path.join(tmp, "user")
    os.mkdir(work)
    os.chmod(tmp, 0o711)
    os.chmod(work, 0o777)
    shutil.copy(prog, os.path.join(work, "ctr_pages"))
    os.chmod(os.path.join(work, "ctr_pages"), 0o755)
    trace = os.path.join(work, "t")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    r = run(nobody + [env.exe, "record", "-q", "--counters=task-clock,page-faults", "-o", trace, "--",
                      os.path.join(work, "ctr_pages")])
    if not check(r.returncode == STATUS and r.stdout.startswith(OUTPUT), "user: recorded as nobody",
                 (r.returncode, r.stderr)):
        return
    check(meta(trace, "counters.scope") == "user", "user: META counters.scope=user",
          meta(trace, "counters.scope"))
    check(meta(trace, "counters") == "task-clock,page-faults", "user: both counters recorded",
          meta(trace, "counters"))
    rep = env.replay(trace)
    main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
    got = calls(main, "touch_pages", "page-faults")
    check(len(got) == 1 and MAIN_PAGES <= got[0] <= MAIN_PAGES + PAGE_SLACK,
          "user: touch_pages(%d) still counts its page faults" % MAIN_PAGES, got)


def children(pid):
    """The pids of pid's children."""
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def read_line(f, timeout):
    """One line of pipe f within timeout seconds, or None."""
    if not select.select([f], [], [], timeout)[0]:
        return None
    return f.readline()


def perf_attach(pid, tmp):
    """perf stat --per-thread on process pid, started with its events
    disabled and enabled through its control fifo: returns (perf, None)
    once perf has acknowledged the enable (its events count from then), or
    (None, why) when perf cannot attach here."""
    ctl, ack = os.path.join(tmp, "perf-ctl"), os.path.join(tmp, "perf-ack")
    for f in (ctl, ack):
        if os.path.exists(f):
            os.unlink(f)
        os.mkfifo(f)
    perf = subprocess.Popen(["perf", "stat", "--per-thread", "-x,", "-e", "task-clock,page-faults", "-D", "-1",
                             "--control", "fifo:%s,%s" % (ctl, ack), "-p", str(pid)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    harness.started.append(perf)
    # the control fifo has a reader once perf is up: open it without
    # blocking, so that a perf that exits is seen
    fd, deadline = None, time.monotonic() + 30
    while fd is None and time.monotonic() < deadline and perf.poll() is None:
        try:
            fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            time.sleep(0.01)
    if fd is None:
        perf.kill()
        _, err = perf.communicate()
        return None, "perf stat -p %d did not start: %s" % (pid, err.strip()[-300:])
    ackfd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
    os.write(fd, b"enable\n")
    got = b""
    while b"ack" not in got and select.select([ackfd], [], [], 30)[0]:
        chunk = os.read(ackfd, 64)
        if not chunk and perf.poll() is not None:
            break
        got += chunk
    os.close(fd)
    os.close(ackfd)
    if b"ack" not in got:
        perf.kill()
        _, err = perf.communicate()
        return None, "perf stat -p %d did not enable its events: %s" % (pid, err.strip()[-300:])
    return perf, None


def perf_per_thread(err):
    """perf stat --per-thread -x, lines: {tid: {event: count}}."""
    out = {}
    for line in err.splitlines():
        f = line.split(",")
        m = re.match(r".*-(\d+)$", f[0])
        if len(f) > 3 and m and f[3] in ("task-clock", "page-faults"):
            try:
                v = float(f[1])
            except ValueError:
                continue
            out.setdefault(int(m.group(1)), {})[f[3]] = v * (1e6 if f[2] == "msec" else 1)
    return out


def group_perthread(env, tmp):
    """Per-thread totals against perf stat --per-thread attached to the
    same run (ctr_threads: two workers that block until the go, then
    touch 64 and 128 pages and spin 20 and 40 ms).  perf counts each
    thread from its attach (the workers blocked, nothing of theirs
    running) to the thread's exit; layerprof from the thread's start (its
    ring and counters made before it blocked) to its END record.  So for
    each worker: layerprof's values from work()'s entry to END equal
    perf's page faults exactly but for faults of the thread's exit after
    END (at most THREAD_EXIT_SLACK), and the thread's total (report
    --counters) is perf's plus what it counted before the go."""
    if not shutil.which("perf"):
        skip("perthread", "perf is not installed")
        return
    prog = env.prog(tmp, "O2", "ctr_threads")
    trace = os.path.join(tmp, "perthread")
    rec = subprocess.Popen([env.exe, "record", "-q", "--counters=task-clock,page-faults", "-o", trace, "--", prog],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    harness.started.append(rec)
    line = read_line(rec.stdout, 60)
    if not check(line == "ctr_threads: ready\n", "perthread: the workers wait for the go", line):
        rec.kill()
        return
    pids = [p for p in children(rec.pid) if os.path.exists("/proc/%d/task" % p)]
    tasks = sorted(int(t) for t in os.listdir("/proc/%d/task" % pids[0])) if len(pids) == 1 else []
    if not check(len(tasks) == 3, "perthread: the program's three threads exist", (pids, tasks)):
        rec.kill()
        return
    pid = pids[0]
    perf, why = perf_attach(pid, tmp)
    rec.stdin.write("g")
    rec.stdin.flush()
    out, err = rec.communicate(timeout=120)
    if perf is None:
        skip("perthread: perf stat --per-thread", why)
        return
    _, perr = perf.communicate(timeout=60)
    check(rec.returncode == 4 and out == "ctr_threads: threads 64 and 128 pages, 20 and 40 ms\n",
          "perthread: the program's output and status unchanged", (rec.returncode, out, err))
    peer = perf_per_thread(perr)
    if not check(set(peer) == set(tasks), "perthread: perf stat counted the three threads", perr):
        return
    r = run([env.exe, "report", "--counters", "--format", "json", trace])
    if not check(r.returncode == 0, "perthread: report --counters --format json", r.stderr):
        return
    rep = json.loads(r.stdout)
    threads = {t["tid"]: t for t in rep["threads"]}
    check(set(threads) == set(tasks), "perthread: report has the three threads", sorted(threads))
    byrep = {t["tid"]: t for t in env.replay(trace)["threads"]}
    # which worker touched which number of pages: by its touch_pages call
    want = {}
    for tid in tasks[1:]:
        got = calls(byrep[tid], "touch_pages", "page-faults") if tid in byrep else []
        want[tid] = min(THREAD_PAGES_GO, key=lambda p: abs(p - got[0])) if len(got) == 1 else None
    if not check(sorted(want.values(), key=str) == sorted(THREAD_PAGES_GO, key=str),
                 "perthread: one worker touched %d pages, the other %d" % THREAD_PAGES_GO, want):
        return
    for tid in tasks[1:]:
        pages = want[tid]
        t, rt = threads.get(tid), byrep.get(tid)
        if not check(t and rt and t["has_begin"] and t["has_end"], "perthread: thread %d has BEGIN and END" % tid):
            continue
        pf = perf_per_thread(perr)[tid]["page-faults"]
        total = t["values"]["page-faults"]
        entry = [e["values"]["page-faults"] for e in counter_events(rt, "entry", "work")]
        begin = counter_events(rt, "begin")[0]["values"]["page-faults"]
        end = counter_events(rt, "end")[0]["values"]["page-faults"]
        since_go = end - entry[0] if len(entry) == 1 else None
        print("     thread %d (%d pages): perf stat %d page faults from its attach; layerprof %d from the "
              "thread's start, %d from work()'s entry; task-clock perf %.1f ms, layerprof %.1f ms" %
              (tid, pages, pf, total, since_go if since_go is not None else -1,
               peer[tid]["task-clock"] / 1e6, t["values"]["task-clock"] / 1e6))
        check(total == end - begin, "perthread: thread %d's total in report is END less BEGIN" % tid,
              (total, end, begin))
        check(pages <= pf <= pages + PAGE_SLACK + THREAD_EXIT_SLACK,
              "perthread: perf stat counts thread %d's %d pages" % (tid, pages), pf)
        check(since_go is not None and since_go <= pf <= since_go + THREAD_EXIT_SLACK,
              "perthread: thread %d from work()'s entry to END: perf stat's count, less at most %d "
              "of the thread's exit" % (tid, THREAD_EXIT_SLACK), (since_go, pf))
        check(since_go is not None and since_go <= total <= since_go + PAGE_SLACK,
              "perthread: thread %d's total in report: that part and at most %d faults before the go" %
              (tid, PAGE_SLACK), (total, since_go))
        tc, ptc = t["values"]["task-clock"], peer[tid]["task-clock"]
        check(0.9 * ptc <= tc <= 1.1 * ptc, "perthread: thread %d's task-clock within 10%% of perf stat's" % tid,
              (tc, ptc))


def paired(thread):
    """The function events of thread without a counter event of the same
    kind, function and time right after them."""
    ev, bad = thread["events"], []
    for i, e in enumerate(ev):
        if e["type"] not in ("entry", "exit"):
            continue
        nx = ev[i + 1] if i + 1 < len(ev) else {}
        if not (nx.get("type") == "counter" and nx.get("kind") == e["type"] and nx.get("time_ns") == e["time_ns"]
                and nx.get("name") == e["name"]):
            bad.append((e["type"], e["name"], e["time_ns"]))
    return bad


def group_filters(env, tmp):
    """Record-time filters (-F, -N, --min-time, applied by the recorder's
    drain) keep the counter records of the functions they keep: every
    function event kept has its counter event right after it, at its time;
    and an entry --min-time holds back until its call proves long enough
    is written with the values read at the entry."""
    prog = env.prog(tmp, "O2")
    cases = [("-F touch_pages", ["-F", "touch_pages"], {"touch_pages"}),
             ("-N spin", ["-N", "spin"], {"main", "touch_pages", "worker"})]
    for what, opts, names in cases:
        trace = os.path.join(tmp, "filter_" + opts[1])
        r = run([env.exe, "record", "-q", "--counters=task-clock,page-faults"] + opts + ["-o", trace, "--", prog])
        if not check(r.returncode == STATUS and r.stdout.startswith(OUTPUT), "%s: recorded" % what,
                     (r.returncode, r.stderr)):
            continue
        rep = env.replay(trace)
        seen = {e["name"] for t in rep["threads"] for e in t["events"] if e["type"] in ("entry", "exit")}
        check(seen == names, "%s: the functions kept are %s" % (what, sorted(names)), sorted(seen))
        bad = [b for t in rep["threads"] for b in paired(t)]
        check(not bad, "%s: each function event kept has its counter event after it" % what, bad[:5])
        main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
        got = calls(main, "touch_pages", "page-faults")
        check(len(got) == 1 and MAIN_PAGES <= got[0] <= MAIN_PAGES + PAGE_SLACK,
              "%s: touch_pages(%d) counts its page faults" % (what, MAIN_PAGES), got)
        workers = sorted(f for tid, (t, f) in threads_by_pages(rep).items() if tid != main["tid"])
        check(len(workers) == 2 and all(p <= f <= p + PAGE_SLACK for p, f in zip(THREAD_PAGES, workers)),
              "%s: the threads' touch_pages count %s page faults" % (what, THREAD_PAGES), workers)
    # --min-time: main's spin of 200 ms of CPU time is kept, and main
    # around it; touch_pages (100 faults, well under 100 ms) is not
    spin_ms, min_ms = 200, 100
    trace = os.path.join(tmp, "filter_mintime")
    r = run([env.exe, "record", "-q", "--counters=task-clock,page-faults", "--min-time", "%dms" % min_ms, "-o",
             trace, "--", prog, str(MAIN_PAGES), str(spin_ms)])
    if not check(r.returncode == STATUS, "--min-time: recorded", (r.returncode, r.stderr)):
        return
    rep = env.replay(trace)
    bad = [b for t in rep["threads"] for b in paired(t)]
    check(not bad, "--min-time: each function event kept has its counter event after it (the entries held "
          "back too)", bad[:5])
    main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
    kept = [e["name"] for e in main["events"] if e["type"] == "entry"]
    check(kept == ["main", "spin"], "--min-time: main's calls kept: main and its spin", kept)
    spun = calls(main, "spin", "task-clock")
    check(len(spun) == 1 and spin_ms * 0.9e6 <= spun[0] <= spin_ms * 1.1e6,
          "--min-time: spin(%d ms) counts its task-clock within 10%% from its held entry's values" % spin_ms, spun)
    faults = calls(main, "main", "page-faults")
    check(len(faults) == 1 and faults[0] >= MAIN_PAGES,
          "--min-time: main's values span its touch_pages (left out) too", faults)
    r = run([env.exe, "report", "--counters", "--format", "json", trace])
    if check(r.returncode == 0, "--min-time: report --counters", r.stderr):
        d = json.loads(r.stdout)
        fn = {f["name"]: f for f in d["functions"]}
        check("spin" in fn and "touch_pages" not in fn and not any(d["left_out"].values()),
              "--min-time: report's functions have spin, not touch_pages, nothing left out",
              (sorted(fn), d["left_out"]))


def group_dynamic(env, tmp):
    """--dynamic on ctr_pages built plain (-O2, no -finstrument-functions):
    the patch backend's gates read the counters as the instrumented
    build's do (touch_pages(n) counts n page faults, +PAGE_SLACK at most;
    each function event has its counter event); the uprobe and ptrace
    backends, whose probes run outside the program's threads, say so in
    one line and record the threads' and the program's totals."""
    prog = env.prog(tmp, "plain")
    trace = os.path.join(tmp, "dyn_patch")
    r = run([env.exe, "record", "-q", "--dynamic", "--backend=patch", "--counters=page-faults", "-o", trace, "--",
             prog])
    if "patch" in r.stderr and r.returncode not in (0, STATUS):
        skip("dynamic: patch backend", r.stderr.strip())
    elif check(r.returncode == STATUS and r.stdout.startswith(OUTPUT) and not r.stderr,
               "dynamic patch: output and status unchanged, nothing said", (r.returncode, r.stderr)):
        check(meta(trace, "counters.read") == "read", "dynamic patch: META counters.read=read",
              meta(trace, "counters.read"))
        rep = env.replay(trace)
        bad = [b for t in rep["threads"] for b in paired(t)]
        nfunc = sum(1 for t in rep["threads"] for e in t["events"] if e["type"] in ("entry", "exit"))
        check(nfunc > 0 and not bad, "dynamic patch: each of %d function events has its counter event" % nfunc,
              bad[:5])
        main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
        got = calls(main, "touch_pages", "page-faults")
        check(len(got) == 1 and MAIN_PAGES <= got[0] <= MAIN_PAGES + PAGE_SLACK,
              "dynamic patch: touch_pages(%d) counts %d page faults (+%d at most)" % (MAIN_PAGES, MAIN_PAGES,
                                                                                  PAGE_SLACK), got)
        workers = sorted(f for tid, (t, f) in threads_by_pages(rep).items() if tid != main["tid"])
        check(len(workers) == 2 and all(p <= f <= p + PAGE_SLACK for p, f in zip(THREAD_PAGES, workers)),
              "dynamic patch: the threads' touch_pages count %s page faults" % (THREAD_PAGES,), workers)
    for backend in ("uprobe", "ptrace"):
        trace = os.path.join(tmp, "dyn_" + backend)
        r = run([env.exe, "record", "-q", "--dynamic", "--backend=" + backend, "--counters=page-faults", "-o",
                 trace, "--", prog])
        msg = ("layerprof record: warning: --counters with the %s backend: no values per function (its probes "
               "run outside the program's threads): the threads' and the program's totals only" % backend)
        if r.returncode != STATUS and msg not in r.stderr:
            skip("dynamic %s" % backend, "the backend cannot trace here: " + r.stderr.strip()[-300:])
            continue
        check(r.returncode == STATUS and r.stdout.startswith(OUTPUT) and r.stderr.strip() == msg,
              "dynamic %s: one line says there are no values per function" % backend, (r.returncode, r.stderr))
        check(meta(trace, "counters.read") == "none", "dynamic %s: META counters.read=none" % backend,
              meta(trace, "counters.read"))
        rep = env.replay(trace)
        main = [t for t in rep["threads"] if t["pid"] == t["tid"]][0]
        kinds = {e["kind"] for t in rep["threads"] for e in counter_events(t)}
        names = {e["name"] for e in main["events"] if e["type"] in ("entry", "exit", "call")}
        check("touch_pages" in names, "dynamic %s: the functions still traced" % backend, sorted(names))
        check({"begin", "end", "process"} <= kinds and not kinds & {"entry", "exit"},
              "dynamic %s: BEGIN, END and the totals, no function records" % backend, sorted(kinds))
        ends = sorted(counter_events(t, "end")[0]["values"]["page-faults"] for t in rep["threads"]
                      if counter_events(t, "end"))
        check(len(ends) == 3 and all(p <= f for p, f in zip(sorted(THREAD_PAGES + (MAIN_PAGES,)), ends)),
              "dynamic %s: each thread's END counts its pages" % backend, ends)


GROUPS = {
    "dynamic": group_dynamic,
    "filters": group_filters,
    "perthread": group_perthread,
    "fold": group_fold,
    "user": group_user,
    "pages": group_pages,
    "totals": group_totals,
    "unavailable": group_unavailable,
    "refuse": group_refuse,
    "plain": group_plain,
}


def setup(build):
    env = Env(build)
    if not os.path.exists(env.exe):
        skip("counters", "no layerprof in %s" % build)
        return None
    probe = run([env.exe, "record", "-q", "--counters=task-clock", "-o", os.devnull + "/x", "--", "true"])
    if "no counter can be opened" in probe.stderr:
        skip("counters", "this kernel counts no software event: " + probe.stderr.strip())
        return None
    return (env,)


if __name__ == "__main__":
    sys.exit(harness.run_groups(GROUPS, setup, prefix="layerprof-ctr-"))
