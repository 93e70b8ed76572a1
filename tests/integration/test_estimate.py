#!/usr/bin/env python3
"""layerprof estimate: a program's run time from its trace and a calibration's
call models (docs/estimate.md), with hand-written models whose values are
exact binary fractions, so that every figure is recomputed here exactly.

Groups:
  usage     exit codes and one-line messages: bad --measured, --format or
            --overhead (2); no --cal, a missing, garbage or newer
            calibration (1); no trace (3); a trace with neither system calls
            nor C library calls (record --dynamic alone: 3, says what to record).
  syscalls  examples/oscal ex_copy and ex_logw recorded with --syscalls: from
            replay --format json alone (the method of docs/estimate.md: files
            opened in the trace, read's x the bytes read, eof, the call's first
            entry for write to a descriptor not opened in the trace, reads of
            such a descriptor waits), the modelled calls per entry (count,
            measured, model), the least gap between consecutive calls, and
            the estimates with and without the models, with --overhead 0ns
            and with the default (the least gap per call); the errors of
            --measured; text and json agree.
  threads   ex_threads and ex_pingpong (--syscalls): the time line again from
            estimate's call listing, all threads' calls in time order: each
            thread or process starts at its creator's estimated time of its
            first event, each call adds its delta, a wait for another task
            ends where its waker (the last other thread to act during the
            wait) stood, and not before it began; the estimate is the latest
            end; the listing has every syscall of replay, thread by thread.
  preempted ex_logw recorded with --syscalls --kernel=sched:sched_switch on
            one CPU beside a CPU-bound process, so that it is preempted:
            from replay's sched_switch records alone, each thread's time from
            a switch out in state R to its next switch in, less its overlap
            with the thread's modelled calls, is its preempted time, the
            sum is taken off the estimate with and without the models; a
            trace without the switches takes nothing off and says so.
  libcalls  ex_mem recorded with --dynamic --libcalls --syscalls: malloc,
            memset, memcpy, free modelled (free's x the size malloc was given
            for its block), the system calls inside them not counted again.
  recorder  estimate --calibrate-recorder (--syscalls, and --libcalls where
            record --dynamic works): its costs recomputed exactly from its own
            file's series (the suite's samples less its clock pair less the
            traced durations; with --libcalls the PLT call's duration less
            its system call's; the outlier rule, the mean), the series checked
            against the kept suite output and the kept trace's call listing;
            --recorder takes its costs off; refused (exit 1, one line) for a
            trace of another mode or machine; bad files: exit 1, one line.

usage: test_estimate.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402


# a sanitized build's suite runs under the recorder's preloaded runtime,
# which then comes before the sanitizer's in the library list
ENV = dict(os.environ, ASAN_OPTIONS=":".join(x for x in (os.environ.get("ASAN_OPTIONS"),
                                                          "verify_asan_link_order=0") if x))


def run(cmd, timeout=300):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=ENV)


def one_line(r):
    return len(r.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- the calibration

def stats_of(v):
    v = sorted(v)
    n = len(v)
    mean = sum(v) / n
    sd = (sum((x - mean) ** 2 for x in v) / n) ** 0.5
    counts = [0] * 30
    counts[0] = n
    return {"n": n, "mean": mean, "sd": sd, "min": v[0], "max": v[-1], "p50": v[n // 2], "p90": v[-1],
            "p99": v[-1], "outliers": 0, "hist": {"lo": v[0], "hi": v[-1], "counts": counts}}


def entry(name, call, cond, param, m, q, xs=(1, 4096, 65536)):
    """An entry of call/cond whose model is m x + q (constant when m is 0),
    its series exactly on the model."""
    if not param:
        xs = (0,)
    series = [{"x": x, "ns": [m * x + q] * 3, "stats": stats_of([m * x + q] * 3)} for x in xs]
    allv = [s for x in series for s in x["ns"]]
    return {"name": name, "call": call, "cond": cond, "group": "test", "param": param,
            "unit": "B" if param else "", "desc": "hand-written", "status": "measured", "reason": "",
            "reps": 3, "warmup": 0, "series": series, "stats": stats_of(allv), "spread_high": False,
            "clusters": [{"x0": xs[0], "x1": xs[-1], "lo": min(allv), "hi": max(allv), "n": len(allv),
                          "mean": sum(allv) / len(allv), "sd": 0}],
            "model": {"form": "linear" if m else "constant",
                      "pieces": [{"x0": xs[0], "x1": xs[-1], "m": m, "q": q}],
                      "r2": 1, "mean_abs_ns": 0, "mean_rel": 0, "points": len(allv)}}


# the models (ns): exact in binary, so the sums are exact in any order
MODELS = {
    "read": ("read", "file", "bytes", 1.0, 1000.0),
    "read-eof": ("read", "eof", "", 0.0, 700.0),
    "write": ("write", "file", "bytes", 0.5, 2000.0),
    "write-append": ("write", "append", "bytes", 0.75, 2500.0),
    "lseek-set": ("lseek", "set", "", 0.0, 300.0),
    "close": ("close", "file", "", 0.0, 500.0),
    "malloc": ("malloc", "", "bytes", 0.0, 100.0),
    "free": ("free", "", "bytes", 0.0625, 80.0),
    "memset": ("memset", "", "bytes", 0.25, 20.0),
    "memcpy": ("memcpy", "", "bytes", 0.125, 30.0),
}


def write_cal(path, version=1):
    doc = {"format": "layerprof-oscal-cal", "version": version, "created": "2026-01-01T00:00:00Z",
           "source": "hand-written", "complete": True,
           "machine": {"arch": "x86_64", "cpus": 2, "kernel": "k", "libc": "l", "host": "h", "cpu": "c"},
           "clock": {"name": "monotonic", "resolution_ns": 1, "overhead_ns": 0},
           "settings": {"quick": False, "reps": 3, "warmup": 0, "threshold": 0.1, "calls": ""},
           "entries": [entry(n, *v) for n, v in MODELS.items()]}
    with open(path, "w") as f:
        json.dump(doc, f)


def model(name, x):
    m, q = MODELS[name][3], MODELS[name][4]
    return m * x + q


# ---------------------------------------------------------------- the method, again

def nums(args):
    """replay's argument text as numbers where they are ('3, 0x7f.., 4096')."""
    out = []
    for a in args.split(", "):
        a = a.strip()
        try:
            out.append(int(a, 0))
        except ValueError:
            out.append(None)
    return out


def expect_syscalls(threads):
    """The modelled calls of a syscall trace by docs/estimate.md's rules with
    MODELS: {entry: [count, measured, model]}, the least gap, the calls
    counted, and per thread the finished calls [(exit_ns, delta, delta_wo)]."""
    rows, files, ends, gap, counted, per = {}, {}, {}, None, 0, {}
    for t in threads:
        fds = files.setdefault(t["pid"], set())
        end = ends.setdefault(t["pid"], set())  # files at their end: a write there appends
        last = None
        pts = per.setdefault(t["tid"], [])
        for ev in t["events"]:
            if ev["type"] != "syscall":
                continue
            if "duration_ns" not in ev:
                last = None
                continue
            enter, dur, name, ret = ev["time_ns"], ev["duration_ns"], ev["name"], ev.get("ret", 0)
            a = nums(ev["args"])
            if last is not None and enter >= last and (gap is None or enter - last < gap):
                gap = enter - last
            last = enter + dur
            counted += 1
            use = x = None
            if name == "lseek" and a and ret >= 0:
                if a[1] == 0 and a[2] == 2 and a[0] in fds:
                    end.add(a[0])
                else:
                    end.discard(a[0])
            elif name == "read" and a and ret > 0:
                end.discard(a[0])
            if name in ("read", "write") and a and a[0] is not None:
                fd = a[0]
                if fd in fds:
                    use = "read-eof" if name == "read" and ret == 0 else \
                        "write-append" if name == "write" and fd in end else name
                elif name == "write":
                    use = "write"
                x = ret if ret >= 0 else a[2]
            elif name == "lseek":
                use = "lseek-set"
            elif name == "close":
                use = "close"
            if name in ("open", "openat", "creat") and ret >= 0:
                fds.add(ret)
                fl = a[1] if name == "open" else a[2] if name == "openat" else None
                if name == "creat" or (fl is not None and (fl & 0o1000 or fl & 0o2000 or fl & 0o300 == 0o300)):
                    end.add(ret)
                else:
                    end.discard(ret)
            elif name == "close" and a and ret >= 0:
                fds.discard(a[0])
                end.discard(a[0])
            if use:
                mod = model(use, x if MODELS[use][2] else 0)
                r = rows.setdefault(use, [0, 0, 0.0])
                r[0] += 1
                r[1] += dur
                r[2] += mod
                pts.append((enter + dur, mod - dur, -dur))
            else:
                pts.append((enter + dur, 0, 0))
    return rows, gap, counted, per


def estimate(env, trace, *extra):
    r = run([env.exe, "estimate", "--cal", env.cal, "--format", "json", "--calls"] + list(extra) + [trace])
    if not check(r.returncode == 0, "estimate %s %s" % (os.path.basename(trace), " ".join(extra)), r.stderr):
        return None
    return json.loads(r.stdout)


def replay(env, trace):
    r = run([env.exe, "replay", "--format", "json", trace])
    return json.loads(r.stdout)["threads"] if r.returncode == 0 else None


def record(env, name, prog, opts):
    out = os.path.join(env.tmp, name)
    r = run([env.exe, "record", "-q"] + opts + ["-o", out, "--", prog, env.tmp])
    return out if check(r.returncode == 0, "record %s %s" % (" ".join(opts), os.path.basename(prog)),
                        r.stderr) else None


class Env:
    pass


# ---------------------------------------------------------------- groups

def group_usage(build, tmp):
    env = make_env(build, tmp)
    ex = env.ex("ex_crc")
    t = record(env, "u_crc", ex, ["--syscalls"])
    for args, code, what in (
            ([t or "t"], 1, "no --cal"),
            (["--cal", env.cal, "--measured", "12"], 2, "--measured without a unit"),
            (["--cal", env.cal, "--measured", "0s"], 2, "--measured 0"),
            (["--cal", env.cal, "--format", "xml"], 2, "--format xml"),
            (["--cal", env.cal, "--overhead", "fast"], 2, "--overhead fast"),
            (["--cal", env.cal, t or "t", "extra"], 2, "two traces"),
            (["--cal", os.path.join(env.tmp, "nothere.cal"), t or "t"], 1, "a missing calibration"),
            (["--cal", env.garbage, t or "t"], 1, "a garbage calibration"),
            (["--cal", env.newer, t or "t"], 1, "a newer calibration"),
            (["--cal", env.cal, os.path.join(env.tmp, "notrace")], 3, "no trace")):
        r = run([env.exe, "estimate"] + args)
        check(r.returncode == code and one_line(r) and r.stderr.startswith("layerprof estimate: "),
              "usage: %s: exit %d, one line" % (what, code), "exit %d: %r" % (r.returncode, r.stderr))
    r = run([env.exe, "estimate", "--cal", env.newer, t or "t"])
    check("newer" in r.stderr, "usage: a newer calibration is said to be newer", r.stderr)
    out = os.path.join(env.tmp, "u_dyn")
    r = run([env.exe, "record", "-q", "--dynamic", "-o", out, "--", ex, env.tmp])
    if r.returncode:
        skip("usage: a trace without calls", "record --dynamic failed here: " + r.stderr.strip()[-200:])
        return
    r = run([env.exe, "estimate", "--cal", env.cal, out])
    check(r.returncode == 3 and one_line(r) and "--syscalls" in r.stderr and "--libcalls" in r.stderr,
          "usage: a trace with neither system calls nor C library calls: exit 3, says what to record",
          "exit %d: %r" % (r.returncode, r.stderr))


def check_syscall_trace(env, name, trace):
    threads = replay(env, trace)
    if not check(threads is not None, "%s: replay --format json" % name):
        return
    rows, gap, counted, _ = expect_syscalls(threads)
    d = estimate(env, trace, "--overhead", "0ns", "--measured", "250ms")
    if not d:
        return
    got = {r["entry"]: [r["count"], r["measured_ns"], r["model_ns"]] for r in d["modelled"]}
    check(got == {k: [v[0], v[1], v[2]] for k, v in rows.items()},
          "%s: modelled calls per entry as the rules give them from replay" % name,
          "got %s, want %s" % (got, rows))
    check("read" in got and ("write" in got or "write-append" in got), "%s: read and write modelled" % name, got)
    if name == "ex_logw":
        # its 60000 lines are written at the end of a new file
        check(got.get("write-append", [0])[0] == 60000, "ex_logw: its 60000 writes append", got)
    check(d["gap_sys_ns"] == gap, "%s: the least gap between consecutive system calls" % name,
          "%s != %s" % (d["gap_sys_ns"], gap))
    check(d["syscalls"] == counted, "%s: the system calls counted" % name, "%s != %s" % (d["syscalls"], counted))
    span = d["end_ns"] - d["start_ns"]
    first = min(ev["time_ns"] for t in threads for ev in t["events"])
    check(d["span_ns"] == span and d["start_ns"] <= first, "%s: the span covers the calls" % name)
    dsum = sum(v[2] - v[1] for v in rows.values())
    msum = sum(v[1] for v in rows.values())
    check(len(d["threads"]) == 1, "%s: one thread" % name)
    check(d["estimate_ns"] == span + dsum, "%s: estimate = span + sum(model - measured)" % name,
          "%s != %s" % (d["estimate_ns"], span + dsum))
    check(d["without_ns"] == span - msum, "%s: without the models = span - sum(measured of the modelled)" % name,
          "%s != %s" % (d["without_ns"], span - msum))
    check(abs(d["error"] - (d["estimate_ns"] - 250e6) / 250e6) < 1e-12 and
          abs(d["error_without"] - (d["without_ns"] - 250e6) / 250e6) < 1e-12 and d["measured_ns"] == 250000000,
          "%s: the errors against --measured 250ms" % name)
    # the default: the least gap taken off once per call counted
    e = estimate(env, trace)
    if e:
        check(e["overhead_sys_ns"] == gap and e["estimate_ns"] == span + dsum - gap * counted and
              e["without_ns"] == span - msum - gap * counted,
              "%s: by default the least gap (%s ns) is taken off per call counted" % (name, gap),
              "%s %s" % (e["estimate_ns"], span + dsum - gap * counted))
    # the listing: every call, in order, with the replay's durations
    calls = [c for c in d["calls"] if c["fate"] != "unfinished"]
    want = [ev["duration_ns"] for t in threads for ev in t["events"]
            if ev["type"] == "syscall" and "duration_ns" in ev]
    check([c["measured_ns"] for c in calls] == want, "%s: the listing has every finished syscall" % name)
    txt = run([env.exe, "estimate", "--cal", env.cal, "--overhead", "0ns", trace])
    ms = "%.3f ms" % (d["estimate_ns"] / 1e6)
    check(txt.returncode == 0 and "estimate with the models" in txt.stdout and "read" in txt.stdout,
          "%s: the text report" % name, txt.stdout[-500:])
    del ms


def group_syscalls(build, tmp):
    env = make_env(build, tmp)
    for name in ("ex_copy", "ex_logw"):
        t = record(env, "s_" + name, env.ex(name), ["--syscalls"])
        if t:
            check_syscall_trace(env, name, t)


SWITCH = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)")


def expect_preempted(threads, calls):
    """Per tid: (preempted ns outside modelled calls, intervals), from
    replay's sched_switch records and estimate's call listing."""
    out = {}
    for t in threads:
        tid, since, ivs = t["tid"], None, []
        for ev in t["events"]:
            if ev["type"] != "kernel" or ev["event"] != "sched:sched_switch":
                continue
            m = SWITCH.search(ev["text"])
            prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            if prev == tid and prev != nxt:
                since = ev["time_ns"] if state.startswith("R") else None
            elif nxt == tid and since is not None:
                if ev["time_ns"] > since:
                    ivs.append((since, ev["time_ns"]))
                since = None
        mod = [(c["enter_ns"], c["exit_ns"]) for c in calls if c["tid"] == tid and c["fate"] == "modelled"]
        inside = sum(max(0, min(b, y) - max(a, x)) for a, b in ivs for x, y in mod)
        out[tid] = (sum(b - a for a, b in ivs) - inside, len(ivs))
    return out


def group_preempted(build, tmp):
    env = make_env(build, tmp)
    out = os.path.join(env.tmp, "p_logw")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    harness.started.append(hog)
    try:
        r = subprocess.run([env.exe, "record", "-q", "--syscalls", "--kernel=sched:sched_switch", "-o", out, "--",
                            env.ex("ex_logw"), env.tmp], capture_output=True, text=True, timeout=300,
                           preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    finally:
        hog.kill()
        hog.wait()
    if r.returncode and "--kernel" in r.stderr:
        skip("preempted", "record --kernel does not work here: " + r.stderr.strip()[-200:])
        return
    if not check(r.returncode == 0, "record --syscalls --kernel=sched:sched_switch ex_logw beside a CPU hog",
                 r.stderr):
        return
    threads = replay(env, out)
    d = estimate(env, out, "--overhead", "0ns")
    if not d or not check(threads is not None, "preempted: replay --format json"):
        return
    want = expect_preempted(threads, d["calls"])
    got = {t["tid"]: (t["preempted_ns"], t["preemptions"]) for t in d["threads"]}
    check(d["switches"] and got == want, "preempted: each thread's preempted time outside modelled calls, "
          "and its preemptions, as replay's switches give them", "got %s, want %s" % (got, want))
    total = sum(v[0] for v in want.values())
    check(total > 0 and d["preempted_ns"] == total, "preempted: some, and the sum is the trace's",
          "%s, want %s" % (d["preempted_ns"], total))
    rows, _, _, _ = expect_syscalls(threads)
    dsum = sum(v[2] - v[1] for v in rows.values())
    msum = sum(v[1] for v in rows.values())
    span = d["span_ns"]
    check(len(d["threads"]) == 1 and abs(d["estimate_ns"] - (span + dsum - total)) < 0.5 and
          abs(d["without_ns"] - (span - msum - total)) < 0.5,
          "preempted: taken off the estimates with and without the models",
          "%s vs %s; %s vs %s" % (d["estimate_ns"], span + dsum - total, d["without_ns"], span - msum - total))
    txt = run([env.exe, "estimate", "--cal", env.cal, "--overhead", "0ns", out])
    check(txt.returncode == 0 and re.search(r"preempted \(runnable\) +[0-9.]+ [mu]?s \(%d times, outside modelled "
                                            r"calls\), taken off" % sum(v[1] for v in want.values()), txt.stdout),
          "preempted: the text report says how much was taken off", txt.stdout[:600])
    # without the switches: nothing taken off, and the report says how to have it
    plain = record(env, "p_logw_plain", env.ex("ex_logw"), ["--syscalls"])
    if plain:
        e = estimate(env, plain, "--overhead", "0ns")
        txt = run([env.exe, "estimate", "--cal", env.cal, plain])
        check(e and not e["switches"] and e["preempted_ns"] == 0 and
              "not recorded (record --kernel to take it off)" in txt.stdout,
              "preempted: a trace without the switches takes nothing off, and says how to have them",
              txt.stdout[:600])


def check_timeline(env, name, trace):
    threads = replay(env, trace)
    d = estimate(env, trace)
    if not d or threads is None:
        return
    byt = {t["tid"]: t for t in d["threads"]}
    check(len(byt) == len(threads) and len(byt) >= 2, "%s: %d threads" % (name, len(byt)))
    n_replay = {t["tid"]: sum(1 for ev in t["events"] if ev["type"] == "syscall") for t in threads}
    n_list = {}
    for c in d["calls"]:
        n_list[c["tid"]] = n_list.get(c["tid"], 0) + 1
    check(n_list == {k: v for k, v in n_replay.items() if v}, "%s: the listing has replay's syscalls per thread" %
          name, "%s vs %s" % (n_list, n_replay))
    # the time line again: every thread's calls in the order of the trace's
    # times; a wait for another task ends where its waker stood
    th = d["threads"]
    pos = {t["tid"]: i for i, t in enumerate(th)}
    pts = [[] for _ in th]
    for c in d["calls"]:
        if c["fate"] not in ("unfinished", "inside"):
            pts[pos[c["tid"]]].append(c)
    ev = []
    for i, t in enumerate(th):
        ev.append((t["first_ns"], 1, i, 0))
        ev += [(c["exit_ns"], 0, i, j) for j, c in enumerate(pts[i])]
        ev.append((t["last_ns"], 2, i, 0))
    ev.sort()
    off, started = [0.0] * len(th), [False] * len(th)
    off_wo = [0.0] * len(th)
    last = other = None
    last_ns = other_ns = 0
    bad = []
    for ns, kind, i, j in ev:
        t = th[i]
        if kind == 1:
            c = pos.get(t["creator_tid"]) if t["creator_tid"] >= 0 else None
            off[i] = off[c] if c is not None else 0.0
            off_wo[i] = off_wo[c] if c is not None else 0.0
            started[i] = True
            if abs(t["first_ns"] - d["start_ns"] + off[i] - t["start_ns"]) > 1e-2:
                bad.append(("start", t["tid"], t["first_ns"] - d["start_ns"] + off[i], t["start_ns"]))
        elif kind == 0 and started[i]:
            c = pts[i][j]
            w, w_ns = (other, other_ns) if last == i else (last, last_ns)
            if (c["fate"] == "wait" and c["call"] not in ("nanosleep", "clock_nanosleep") and w is not None and
                    started[w] and w_ns >= c["enter_ns"]):
                ln = c["exit_ns"] - c["enter_ns"]
                off[i] = max(off[i] - ln, off[w])
                off_wo[i] = max(off_wo[i] - ln, off_wo[w])
            o = d["overhead_lib_ns"] if c["libcall"] else d["overhead_sys_ns"]
            modelled = c["fate"] == "modelled"
            off[i] += (c["model_ns"] - c["measured_ns"] if modelled else 0) - o
            off_wo[i] += (-c["measured_ns"] if modelled else 0) - o
        elif kind == 2 and started[i]:
            if abs(t["last_ns"] - d["start_ns"] + off[i] - t["end_ns"]) > 1e-2 or \
                    abs(t["last_ns"] - d["start_ns"] + off_wo[i] - t["end_without_ns"]) > 1e-2:
                bad.append(("end", t["tid"], t["last_ns"] - d["start_ns"] + off[i], t["end_ns"]))
        if last != i:
            other, other_ns = last, last_ns
        last, last_ns = i, ns
    check(not bad, "%s: each thread's estimated start and end: its creator's time, its calls' deltas, its "
          "waits ended by their wakers" % name, bad[:3])
    roots = [t for t in d["threads"] if t["creator_tid"] < 0]
    check(len(roots) == 1, "%s: one thread without a creator (the first)" % name, roots)
    check(abs(d["estimate_ns"] - max(t["end_ns"] for t in d["threads"])) < 1e-3,
          "%s: the estimate is the latest end" % name)
    check(abs(d["without_ns"] - max(t["end_without_ns"] for t in d["threads"])) < 1e-3,
          "%s: without the models too" % name)
    return d


def group_threads(build, tmp):
    env = make_env(build, tmp)
    t = record(env, "t_threads", env.ex("ex_threads"), ["--syscalls"])
    if t:
        d = check_timeline(env, "ex_threads", t)
        if d:
            main = [x for x in d["threads"] if x["tid"] == x["pid"]][0]
            check(all(x["creator_tid"] == main["tid"] for x in d["threads"] if x is not main),
                  "ex_threads: every thread created by the main thread (its clone's result)")
            waits = [r for r in d["unmodelled"] if r["name"] == "futex" and r["why"] == "wait"]
            check(bool(waits), "ex_threads: futex waits are waits", d["unmodelled"])
    t = record(env, "t_pingpong", env.ex("ex_pingpong"), ["--syscalls"])
    if t:
        d = check_timeline(env, "ex_pingpong", t)
        if d:
            reads = [r for r in d["unmodelled"] if r["name"] == "read" and r["why"] == "wait"]
            check(reads and reads[0]["count"] >= 40000, "ex_pingpong: the reads of the pipes are waits",
                  d["unmodelled"])


def group_libcalls(build, tmp):
    env = make_env(build, tmp)
    out = os.path.join(env.tmp, "l_mem")
    r = run([env.exe, "record", "-q", "--dynamic", "--libcalls", "--syscalls", "-o", out, "--", env.ex("ex_mem")])
    if r.returncode:
        skip("libcalls", "record --dynamic --libcalls failed here: " + r.stderr.strip()[-200:])
        return
    check(True, "record --dynamic --libcalls --syscalls ex_mem")
    d = estimate(env, out, "--overhead", "0ns")
    if not d:
        return
    rows = {r["entry"]: r for r in d["modelled"]}
    check(all(rows.get(k, {}).get("count") == n for k, n in
              (("malloc", 300000), ("free", 300000), ("memset", 150000), ("memcpy", 150000))),
          "ex_mem: 300000 malloc and free, 150000 memset and memcpy modelled",
          {k: v["count"] for k, v in rows.items()})
    sizes = [8192 << (i % 4) for i in range(150000)]
    want_model = {"malloc": 2 * 150000 * 100.0, "free": sum(2 * (0.0625 * s + 80) for s in sizes),
                  "memset": sum(0.25 * s + 20 for s in sizes), "memcpy": sum(0.125 * s + 30 for s in sizes)}
    check(all(rows.get(k, {}).get("model_ns") == v for k, v in want_model.items()),
          "ex_mem: the models' totals (free's x the block's size)",
          {k: (rows.get(k, {}).get("model_ns"), v) for k, v in want_model.items()})
    inside = [c for c in d["calls"] if c["fate"] == "inside"]
    check(all(not c["libcall"] for c in inside), "ex_mem: the system calls inside modelled calls not counted",
          inside[:3])
    mod = [c for c in d["calls"] if c["fate"] == "modelled"]  # with the syscalls outside the C library calls
    msum = sum(c["measured_ns"] for c in mod)
    dsum = sum(c["model_ns"] - c["measured_ns"] for c in mod)
    check(d["estimate_ns"] == d["span_ns"] + dsum and d["without_ns"] == d["span_ns"] - msum,
          "ex_mem: estimate = span + sum(model - measured), without = span - sum(measured)",
          "%s %s" % (d["estimate_ns"], d["span_ns"] + dsum))
    # replay's arguments say the same x
    threads = replay(env, out)
    xs = []
    for t in threads or []:
        for ev in t["events"]:
            if ev["type"] == "entry" and ev["name"] == "memset@plt" and "args" in ev:
                xs.append(nums(ev["args"])[2])
    lx = [c["x"] for c in d["calls"] if c["call"] == "memset" and c["libcall"]]
    check(xs and xs == lx, "ex_mem: memset's x is replay's third argument", "%s vs %s" % (xs[:4], lx[:4]))


def outlier_limit(v):
    """host/lib/oscal/stats.c's rule: median + 10 MAD, the MAD at least 5 %
    of the median and 1 ns."""
    def median(s):
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    s = sorted(v)
    med = median(s)
    mad = median(sorted(abs(x - med) for x in s))
    floor_ns = max(0.05 * abs(med), 1.0)
    return med + 10.0 * max(mad, floor_ns)


def check_recorder(env, rec, keep, libcalls):
    what = "recorder%s" % (" --libcalls" if libcalls else "")
    with open(rec) as f:
        d = json.load(f)
    reps = d["reps"]
    check(d["format"] == "layerprof-recorder" and d["mode"] == ("libcalls" if libcalls else "syscalls") and
          [e["call"] for e in d["entries"]] == ["getpid", "getppid", "getuid"] + (["gettimeofday"] if libcalls else []),
          "%s: the file's format, mode and entries" % what, {k: d[k] for k in ("format", "mode")})
    # the series are the suite's samples and the trace's durations
    with open(os.path.join(keep, "suite.txt")) as f:
        lines = f.read().splitlines()
    clock = float([ln for ln in lines if ln.startswith("clock ")][0].split("overhead_ns=")[1].split()[0])
    samples = {ln.split()[1]: [float(x) for x in ln.split()[3:]] for ln in lines if ln.startswith("sample ")}
    check(d["clock_ns"] == clock and all(samples.get(e["call"]) == e["samples_ns"] for e in d["entries"]),
          "%s: the samples and clock pair are the traced suite's own" % what)
    r = run([env.exe, "estimate", "--cal", env.cal, "--calls", "--format", "json", os.path.join(keep, "trace")])
    if not check(r.returncode == 0, "%s: estimate --calls of the kept trace" % what, r.stderr):
        return None
    calls = [c for c in json.loads(r.stdout)["calls"] if c["fate"] != "unfinished"]
    ok = True
    for e in d["entries"]:
        if e["call"] != "gettimeofday":
            sys_d = [c["measured_ns"] for c in calls if c["call"] == e["call"] and not c["libcall"]][-reps:]
            ok &= sys_d == e["sys_ns"]
        if libcalls:
            lib_d = [c["measured_ns"] for c in calls if c["call"] == e["call"] and c["libcall"]][-reps:]
            ok &= lib_d == e["lib_ns"]
    check(ok, "%s: the durations are the trace's last %d calls of each name" % (what, reps))
    # the arithmetic
    sums = {"sys": [0.0, 0], "lib": [0.0, 0]}
    ok = True
    for e in d["entries"]:
        if e["call"] == "gettimeofday":  # through the PLT into the vDSO: the cost per C library call
            series = {"lib": [s - clock - x for s, x in zip(e["samples_ns"], e["lib_ns"])]}
        elif libcalls:  # the system call's cost, inside NAME@plt
            series = {"sys": [a - b for a, b in zip(e["lib_ns"], e["sys_ns"])]}
        else:
            series = {"sys": [s - clock - x for s, x in zip(e["samples_ns"], e["sys_ns"])]}
        for kind, o in series.items():
            lim = outlier_limit(o)
            ok &= e["%s_limit_ns" % kind] == lim
            for x in o:
                if x <= lim:
                    sums[kind][0] += x
                    sums[kind][1] += 1
    check(ok, "%s: the outlier limits" % what)
    want_sys = sums["sys"][0] / sums["sys"][1]
    want_lib = sums["lib"][0] / sums["lib"][1] if libcalls else 0
    check(d["overhead_sys_ns"] == want_sys and d["overhead_lib_ns"] == want_lib,
          "%s: the costs per call are the means within the limits" % what,
          "%s %s vs %s %s" % (d["overhead_sys_ns"], d["overhead_lib_ns"], want_sys, want_lib))
    return d


def group_recorder(build, tmp):
    env = make_env(build, tmp)
    rec = os.path.join(env.tmp, "rec.json")
    keep = os.path.join(env.tmp, "rec_keep")
    r = run([env.exe, "estimate", "--calibrate-recorder", "--reps", "300", "--keep", keep, "-o", rec])
    if not check(r.returncode == 0, "estimate --calibrate-recorder", r.stderr):
        return
    d = check_recorder(env, rec, keep, False)
    t = record(env, "r_crc", env.ex("ex_crc"), ["--syscalls"])
    if d and t:
        e = estimate(env, t, "--recorder", rec)
        g = estimate(env, t, "--overhead", "0ns")
        if e and g:
            n = e["syscalls"]
            check(e["overhead_sys_ns"] == max(d["overhead_sys_ns"], 0) and e["overhead_lib_ns"] == 0,
                  "--recorder: its costs per call are taken", e["overhead_sys_ns"])
            check(abs(e["estimate_ns"] - (g["estimate_ns"] - n * e["overhead_sys_ns"])) < 1e-3 * n,
                  "--recorder: the cost taken off once per call counted",
                  "%s vs %s" % (e["estimate_ns"], g["estimate_ns"] - n * e["overhead_sys_ns"]))
        for key, value, why in (("mode", "libcalls", "another mode"), ("host", "elsewhere", "another machine")):
            other = dict(d)
            other[key] = value
            path = os.path.join(env.tmp, "rec_%s.json" % key)
            with open(path, "w") as f:
                json.dump(other, f)
            r = run([env.exe, "estimate", "--cal", env.cal, "--recorder", path, t])
            check(r.returncode == 1 and one_line(r) and "recorder calibration" in r.stderr,
                  "--recorder: refused for a trace of %s: exit 1, one line" % why,
                  "exit %d: %r" % (r.returncode, r.stderr))
    garbage = os.path.join(env.tmp, "rec_garbage.json")
    with open(garbage, "w") as f:
        f.write('{"format":"layerprof-recorder","mode":')
    for path, why in ((os.path.join(env.tmp, "nothere.json"), "a missing file"), (garbage, "a garbage file"),
                      (env.cal, "a call calibration")):
        r = run([env.exe, "estimate", "--cal", env.cal, "--recorder", path, t or "t"])
        check(r.returncode == 1 and one_line(r) and r.stderr.startswith("layerprof estimate: "),
              "--recorder: %s: exit 1, one line" % why, "exit %d: %r" % (r.returncode, r.stderr))
    r = run([env.exe, "estimate", "--cal", env.cal, "--recorder", rec, "--overhead", "0ns", t or "t"])
    check(r.returncode == 2 and one_line(r), "--recorder with --overhead: exit 2, one line", r.stderr)
    rec = os.path.join(env.tmp, "rec_lib.json")
    keep = os.path.join(env.tmp, "rec_lib_keep")
    r = run([env.exe, "estimate", "--calibrate-recorder", "--libcalls", "--reps", "300", "--keep", keep, "-o", rec])
    if r.returncode:
        skip("recorder --libcalls", "the recording failed here: " + r.stderr.strip()[-200:])
        return
    check_recorder(env, rec, keep, True)
    if t:
        r = run([env.exe, "estimate", "--cal", env.cal, "--recorder", rec, t])
        check(r.returncode == 1 and one_line(r) and "libcalls" in r.stderr,
              "--recorder: a --libcalls calibration refused for a --syscalls trace", r.stderr)


_envs = {}


def make_env(build, tmp):
    """The programs' paths and the calibrations, made once per run."""
    if tmp in _envs:
        return _envs[tmp]
    env = Env()
    env.exe = os.path.join(build, "host", "layerprof")
    env.tmp = tmp
    env.ex = lambda n: os.path.join(build, "examples", "oscal", n)
    env.cal = os.path.join(tmp, "hand.cal")
    write_cal(env.cal)
    env.newer = os.path.join(tmp, "newer.cal")
    write_cal(env.newer, version=99)
    env.garbage = os.path.join(tmp, "garbage.cal")
    with open(env.garbage, "w") as f:
        f.write('{"format":"layerprof-oscal-cal","version":1,"entries":[{"name":')
    _envs[tmp] = env
    return env


def setup(build):
    for f in [os.path.join(build, "host", "layerprof")] + [
            os.path.join(build, "examples", "oscal", n) for n in ("ex_copy", "ex_logw", "ex_threads",
                                                                 "ex_pingpong", "ex_mem", "ex_crc")]:
        if not os.path.exists(f):
            skip("estimate", "no %s: build first" % f)
            return None
    return (build,)


def main():
    groups = {"usage": group_usage, "syscalls": group_syscalls, "threads": group_threads,
              "preempted": group_preempted, "libcalls": group_libcalls, "recorder": group_recorder}
    sys.exit(harness.run_groups(groups, setup, prefix="layerprof-estimate-"))


if __name__ == "__main__":
    main()
