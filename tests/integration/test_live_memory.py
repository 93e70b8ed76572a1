#!/usr/bin/env python3
"""End-to-end tests of live memory tracing: a real agent (layerprofd) on
loopback, `layerprof live --memory` and `layerprof snapshot --connect`
against it, and tests/integration/mem/leakloop.c (N leaked blocks of S bytes
per iteration from `leaky`, a ring of 4 blocks in `keep` whose oldest is
freed each iteration, a block `churn` frees at once).  In its signal mode
the program runs one iteration per SIGUSR1 and prints "iter K", so the
counts expected are exact.

usage: test_live_memory.py --build BUILD_DIR [GROUP...]
groups: growing, keepalive, snapshot, attach, resume, threads, large, cli, fold (default: all)
Prints one line per check and ends with 'N passed, N failed'."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import run as it  # noqa: E402
import test_live as tl  # noqa: E402  (Agent, Live, Lines)
from harness import check, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RING = 4  # keep()'s ring in leakloop.c


def build_leakloop(tmp):
    out = os.path.join(tmp, "leakloop")
    if not os.path.exists(out):
        r = subprocess.run(["gcc", "-g", "-O1", "-fno-omit-frame-pointer", os.path.join(HERE, "mem", "leakloop.c"),
                            "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode:
            raise RuntimeError("cannot build leakloop: " + r.stderr)
    return out


def sites(mem, function):
    """The sites of function in a memory view or a snapshot."""
    return [s for s in (mem or {}).get("sites", []) if s.get("function") == function]


def site(mem, function):
    s = sites(mem, function)
    return s[0] if len(s) == 1 else None


def mem_of(view):
    return (view or {}).get("memory") or {}


class Program:
    """leakloop in signal mode, attachable through the agent; iterations
    run one per SIGUSR1 and are awaited by their "iter K" line."""

    def __init__(self, lp, agent, prog, n, size, mem_lib=True, table=None):
        libs = [os.path.join(lp.libdir, "liblayerprof.so")]
        if mem_lib:
            libs.append(os.path.join(lp.libdir, "liblayerprof-mem.so"))
        env = dict(os.environ, LD_PRELOAD=":".join(libs), LAYERPROF_ATTACH_DIR=agent.attach_dir)
        if table is not None:
            env["LAYERPROF_MEM_TABLE"] = table
        self.p = subprocess.Popen([prog, str(n), str(size), "0"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, universal_newlines=True)
        tl.started.append(self.p)
        self.out = tl.Lines(self.p.stdout)
        line = self.out.wait_for(lambda l: l.strip().isdigit(), 10)
        self.pid = int(line) if line else None
        self.iterations = 0
        deadline = time.time() + 10
        while self.pid and not os.path.exists(os.path.join(agent.attach_dir, str(self.pid))) and \
                time.time() < deadline:
            time.sleep(0.05)
        self.attachable = bool(self.pid) and os.path.exists(os.path.join(agent.attach_dir, str(self.pid)))

    def step(self, k):
        """Runs k iterations, one at a time; True when all were done."""
        for _ in range(k):
            want = "iter %d" % (self.iterations + 1)
            os.kill(self.pid, signal.SIGUSR1)
            if self.out.wait_for(lambda l: l == want, 10) is None:
                return False
            self.iterations += 1
        return True

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


# ---------------------------------------------------------------- groups

def group_growing(lp, build, tmp):
    """A started program leaking forever: named as growing, counts exact
    against the iterations; the plain text view shows the heap; the
    snapshot command and the saved trace agree with the view."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        n, size = 3, 100
        save = os.path.join(tmp, "grow.trace")
        snap = os.path.join(tmp, "grow.snap")
        live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "250ms", "--duration", "4s",
                                        "--save", save, "--", prog, str(n), str(size), "20"])
        v = live.wait_view(lambda v: (site(mem_of(v), "leaky") or {}).get("live_objects", 0) > 0, 20)
        check(v is not None and mem_of(v).get("agent_memory") == "preloaded",
              "growing: heap operations arrive; the agent preloaded the interposers", live.err.text())
        live.say("snapshot " + snap)
        rc = live.wait(30)
        last = live.final()
        m = mem_of(last)
        leaky, churn, keep = site(m, "leaky"), site(m, "churn"), site(m, "keep")
        if not check(rc == 0 and last and last["final"] and leaky and churn and keep,
                     "growing: the session ends after --duration with leaky, keep and churn in the final view",
                     "rc %s, %s" % (rc, live.err.text()[-800:])):
            return
        k = churn["allocs"]  # iterations begun (churn runs last in each)
        check(k >= 20, "growing: at least 20 iterations seen", k)
        check(leaky["growing"] is True, "growing: leaky is named as growing", leaky)
        check(leaky["live_objects"] == leaky["allocs"] and leaky["frees"] == 0,
              "growing: every block of leaky is live", leaky)
        check(n * k <= leaky["live_objects"] <= n * (k + 1),
              "growing: leaky's live objects are %d per iteration (%d iterations)" % (n, k),
              "%d live" % leaky["live_objects"])
        check(leaky["live_bytes"] == size * leaky["live_objects"], "growing: leaky's live bytes are %d each" % size,
              leaky)
        check(churn["live_objects"] == 0 and churn["frees"] == churn["allocs"] and not churn["growing"],
              "growing: churn frees all it allocates, not growing", churn)
        check(keep["live_objects"] == RING and keep["allocs"] in (k, k + 1) and not keep["growing"],
              "growing: keep holds its ring of %d" % RING, keep)
        tot = m.get("totals", {})
        check(tot.get("illegal") == 0 and tot.get("overlaps") == 0 and tot.get("released_unknown") == 0
              and tot.get("partial") is False and m.get("lost_events") == 0,
              "growing: no illegal releases, overlaps, unknown releases or losses in a stream from the start", tot)
        try:
            with open(snap) as f:
                s = json.load(f)
        except (OSError, ValueError) as e:
            s = {"error": str(e)}
        ls = site(s, "leaky")
        check(s.get("source") == "live" and s.get("partial") is False and ls and
              ls["live_bytes"] == size * ls["live_objects"] and 0 < ls["live_objects"] <= leaky["live_objects"],
              "growing: the snapshot command wrote a live snapshot", str(s)[:400])
        rep = lp("report", "--memory", "--format", "json", save)
        try:
            rl = site(json.loads(rep.stdout), "leaky")
        except ValueError:
            rl = None
        check(rl is not None and rl["live_objects"] == leaky["live_objects"] and rl["growing"] is True,
              "growing: report --memory on the saved trace agrees with the final view",
              "%s %s" % (rl, rep.stderr[-300:]))
        try:
            with open(os.path.join(save, "heap.snapshot")) as f:
                hs = json.load(f)
        except (OSError, ValueError) as e:
            hs = {"error": str(e)}
        check((site(hs, "leaky") or {}).get("live_objects") == leaky["live_objects"],
              "growing: the saved trace has the final heap snapshot beside it", str(hs)[:300])
        r = lp("memdiff", "--format", "json", snap, os.path.join(save, "heap.snapshot"))
        try:
            d = [c for c in json.loads(r.stdout)["sites"] if c["function"] == "leaky"]
        except (ValueError, KeyError):
            d = []
        check(len(d) == 1 and d[0]["live_objects_change"] == leaky["live_objects"] - ls["live_objects"]
              and d[0]["live_bytes_change"] == size * d[0]["live_objects_change"] > 0,
              "growing: memdiff of two snapshots of one session shows leaky's growth", r.stdout[:400])
        # the text view off a terminal: the heap in every snapshot
        live = tl.Live(lp, agent.addr, ["--memory", "--interval", "200ms", "--duration", "1500ms", "--",
                                        prog, "2", "64", "10"], stdin=subprocess.DEVNULL)
        rc = live.wait(30)
        text = live.out.text()
        check(rc == 0 and "--- memory" in text and "--- final memory" in text and "leaky  leaky+0x" in text
              and "\x1b[" not in text, "growing: plain text views show the heap", text[-600:])
    finally:
        agent.stop()


def group_keepalive(lp, build, tmp):
    """A double free in a program the agent started: with --keep-alive it
    is recorded and the program lives on to exit 0; without, glibc aborts
    it and the double free is in the view all the same."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        for keep_alive in (True, False):
            what = "keep-alive" if keep_alive else "no keep-alive"
            args = ["--memory", "--format", "json", "--interval", "200ms"]
            if keep_alive:
                args.append("--keep-alive")
            live = tl.Live(lp, agent.addr, args + ["--", prog, "1", "16", "10", "8", "double-free"],
                           stdin=subprocess.DEVNULL)
            rc = live.wait(30)
            last = live.final()
            m = mem_of(last)
            tot = m.get("totals", {})
            ill = [i for i in m.get("illegal", []) if i.get("kind") == "double_free"]
            exp = {"exit_code": 0} if keep_alive else {"signal": "SIGABRT"}
            check(rc == 0 and tl.exited_as(last, (last or {}).get("pid"), exp),
                  "%s: the program %s" % (what, "survives the double free and exits 0" if keep_alive
                                          else "is aborted by glibc"), "rc %s %s" % (rc, (last or {}).get("exited")))
            check(tot.get("double_free") == 1 and len(ill) == 1 and ill[0].get("function") == "churn",
                  "%s: one double free, in churn" % what, str(m.get("illegal"))[:400])
            check(bool(ill) and ill[0].get("kept") is keep_alive, "%s: the release is %s" %
                  (what, "kept from libc" if keep_alive else "passed to libc"), ill)
            if keep_alive:
                check((site(m, "leaky") or {}).get("live_objects") == 8,
                      "%s: all 8 iterations ran after it" % what, site(m, "leaky"))
    finally:
        agent.stop()


def take_snapshots(lp, agent, p, tmp, tag, windows, window="3s"):
    """snapshot --connect once per window, k iterations in each; returns
    [(file, snapshot, k)]."""
    snaps = []
    for k in windows:
        out = os.path.join(tmp, "%s%d.json" % (tag, len(snaps)))
        sp = subprocess.Popen([lp.exe, "snapshot", "--connect", agent.addr, "--window", window, str(p.pid),
                               "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        tl.started.append(sp)
        err = tl.Lines(sp.stderr)
        ready = err.wait_for(lambda l: "taking in heap operations" in l, 20)
        ok = ready is not None and p.step(k)
        try:
            rc = sp.wait(30)
        except subprocess.TimeoutExpired:
            sp.kill()
            rc = None
        err.t.join(5)
        check(ok and rc == 0, "%s %d: written (%d iterations in its window)" % (tag, len(snaps) + 1, k),
              "rc %s %s" % (rc, err.text()))
        try:
            with open(out) as f:
                s = json.load(f)
        except (OSError, ValueError):
            s = {}
        snaps.append((out, s, k, err.text()))
    return snaps


def leaky_change(lp, f1, f2):
    r = lp("memdiff", "--format", "json", f1, f2)
    try:
        d = [c for c in json.loads(r.stdout)["sites"] if c["function"] == "leaky"]
    except (ValueError, KeyError):
        d = []
    return (d[0] if len(d) == 1 else None), r.stdout[:500]


def group_snapshot(lp, build, tmp):
    """snapshot --connect twice on a program that never ends.  The program
    keeps its live-block table (it was started with the agent's attach
    directory): each snapshot holds the whole heap, the blocks from before
    the attach listed by the program; memdiff shows the growth at leaky
    exactly.  With LAYERPROF_MEM_TABLE=0 each holds what its window saw and
    says so.  The program runs on; one without the interposers is refused."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = q = t0 = None
    try:
        n, size, before = 2, 64, 6
        p = Program(lp, agent, prog, n, size)
        if not p.attachable:
            skip("snapshot", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        check(p.step(before), "snapshot: %d iterations before the attach" % before)
        snaps = take_snapshots(lp, agent, p, tmp, "snapshot", (3, 7))
        done = before
        for i, (f, s, k, err) in enumerate(snaps):
            done += k
            lk, kp = site(s, "leaky"), site(s, "keep")
            tot = s.get("totals", {})
            check(s.get("source") == "live" and s.get("partial") is False and "note" not in s and
                  s.get("covers_from_ns") == s.get("origin_ns"),
                  "snapshot %d: a whole-heap snapshot (not partial)" % (i + 1), str(s)[:300])
            check(lk is not None and lk["live_objects"] == n * done and lk["live_bytes"] == n * done * size and
                  lk["allocs"] == n * k,
                  "snapshot %d: leaky has exactly %d x %d live blocks, %d of them allocated in the window" %
                  (i + 1, done, n, n * k), lk)
            check(kp is not None and kp["live_objects"] == RING and kp["frees"] == k and
                  tot.get("released_unknown") == 0,
                  "snapshot %d: keep holds its ring of %d, every release known" % (i + 1, RING),
                  "%s %s" % (tot, kp))
            # the listing: everything live when the window began, exactly
            # listed: what was live when the window began; of what the
            # window allocated only leaky's blocks stay beside keep's ring
            check(tot.get("listed_objects") == tot.get("live_objects", -1) - n * k and
                  "from before the attach (listed by the program)" in err,
                  "snapshot %d: the blocks listed are those live before the window" % (i + 1),
                  "%s | %s" % (tot, err[-300:]))
        (f1, s1, k1, _), (f2, s2, k2, _) = snaps
        d, out = leaky_change(lp, f1, f2)
        check(d is not None and d["live_objects_change"] == n * k2 and d["live_bytes_change"] == n * k2 * size,
              "snapshot: memdiff shows leaky grew by exactly %d blocks" % (n * k2), out)
        r = lp("memdiff", f1, f2)
        check(r.returncode == 0 and "cover different" not in r.stdout,
              "snapshot: memdiff compares the two whole heaps without a warning", r.stdout[:400])
        check(p.p.poll() is None and p.step(1), "snapshot: the program runs on after both")
        # without the table: each snapshot holds its window, and says so
        t0 = Program(lp, agent, prog, n, size, table="0")
        if t0.attachable and check(t0.step(before), "no table: %d iterations before the attach" % before):
            snaps = take_snapshots(lp, agent, t0, tmp, "window", (3, 7))
            for i, (f, s, k, err) in enumerate(snaps):
                lk, kp = site(s, "leaky"), site(s, "keep")
                check(s.get("partial") is True and "note" in s and "keeps no live-block table" in err,
                      "no table: snapshot %d is partial and says why" % (i + 1), "%s %s" % (str(s)[:300], err))
                check(lk is not None and lk["live_objects"] == n * k and lk["live_bytes"] == n * k * size,
                      "no table: snapshot %d: leaky has exactly %d x %d live blocks" % (i + 1, k, n), lk)
                # keep frees the block of 4 iterations before: older than the window for the first 4
                unknown = min(k, RING)
                check(s.get("totals", {}).get("released_unknown") == unknown and kp is not None and
                      kp["live_objects"] == unknown and kp["frees"] == k - unknown,
                      "no table: snapshot %d: %d releases of blocks from before the window, counted apart" %
                      (i + 1, unknown), "%s %s" % (s.get("totals"), kp))
            (f1, s1, k1, _), (f2, s2, k2, _) = snaps
            d, out = leaky_change(lp, f1, f2)
            check(d is not None and d["live_objects_change"] == n * (k2 - k1), "no table: memdiff compares windows",
                  out)
            r = lp("memdiff", f1, f2)
            check(r.returncode == 0 and "cover different streams" in r.stdout,
                  "no table: memdiff says the two snapshots cover different windows", r.stdout[:400])
        # a program without liblayerprof-mem.so: no heap stream, said so
        q = Program(lp, agent, prog, n, size, mem_lib=False)
        if q.attachable:
            out = os.path.join(tmp, "nomem.json")
            r = lp("snapshot", "--connect", agent.addr, "--window", "300ms", str(q.pid), "-o", out)
            check(r.returncode == 1 and "not started with liblayerprof-mem.so" in r.stderr and
                  not os.path.exists(out), "snapshot: a program without the interposers: exit 1, no file",
                  "rc %d %s" % (r.returncode, r.stderr))
        r = lp("snapshot", "--connect", agent.addr, "999999999", "-o", os.path.join(tmp, "none.json"))
        check(r.returncode == 1 and "999999999" in r.stderr, "snapshot: no such process: exit 1", r.stderr)
    finally:
        for x in (p, q, t0):
            if x:
                x.stop()
        agent.stop()


def report_totals(lp, save):
    r = lp("report", "--memory", "--format", "json", save)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def group_attach(lp, build, tmp):
    """live --memory --attach mid-run: the program lists the blocks it holds
    from before the attach (its live-block table), so the view is the whole
    heap, exact, with no release counted apart and none illegal; report of
    the saved trace agrees.  Without the table (LAYERPROF_MEM_TABLE=0) the
    releases of older blocks are counted apart, never as illegal, in the
    view and in report of the saved trace.  The program runs on after quit."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = None
    try:
        n, size, k = 3, 40, 6
        for table in (None, "0"):
            tag = "attach" if table is None else "attach, no table"
            p = Program(lp, agent, prog, n, size, table=table)
            if not p.attachable:
                skip("attach", "the program did not make itself attachable in %s" % agent.attach_dir)
                return
            check(p.step(6), "%s: 6 iterations before the attach" % tag)
            save = os.path.join(tmp, "attach-save-%s" % (table or "table"))
            live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "100ms", "--save", save,
                                            "--attach", str(p.pid)])
            ready = live.wait_view(lambda v: v.get("session"), 20)  # SESSION came: tracing is on
            check(ready is not None and p.step(k), "%s: %d iterations while attached" % (tag, k), live.err.text())
            v = live.wait_view(lambda v: (site(mem_of(v), "churn") or {}).get("allocs") == k, 20)
            live.say("quit")
            rc = live.wait(30)
            m = mem_of(live.final())
            tot = m.get("totals", {})
            lk, kp = site(m, "leaky"), site(m, "keep")
            check(v is not None and rc == 0, "%s: the view reaches all %d iterations; quit ends it" % (tag, k),
                  live.err.text()[-500:])
            check(tot.get("illegal") == 0 and tot.get("never_allocated") == 0 and not m.get("illegal"),
                  "%s: no illegal releases (the blocks freed were allocated before the attach)" % tag, tot)
            rep = report_totals(lp, save)
            rt = rep.get("totals", {})
            if table is None:
                check(tot.get("partial") is False and tot.get("released_unknown") == 0 and
                      tot.get("listings") == 1 and tot.get("listings_incomplete") == 0 and kp and
                      kp["frees"] == k and kp["live_objects"] == RING and kp["listed"] == RING,
                      "attach: the heap listed once, completely; keep's %d releases all of known blocks" % k,
                      "%s %s" % (tot, kp))
                check(lk is not None and lk["live_objects"] == n * (6 + k) and
                      lk["live_bytes"] == n * (6 + k) * size and lk["listed"] == n * 6 and lk["allocs"] == n * k,
                      "attach: leaky has exactly %d x %d live blocks, %d listed from before the attach" %
                      (6 + k, n, n * 6), lk)
                check(tot.get("listed_objects") == tot.get("live_objects", -1) - n * k,
                      "attach: the blocks listed are those live before the attach", tot)
                check("lists the blocks it holds from before the attach" in live.err.text(),
                      "attach: the session says the program lists its older blocks", live.err.text()[-400:])
            else:
                check(tot.get("partial") is True and tot.get("released_unknown") == RING and kp and
                      kp["frees"] == k - RING and kp["live_objects"] == RING and tot.get("listings") == 0,
                      "%s: %d releases of blocks from before the attach, counted apart" % (tag, RING),
                      "%s %s" % (tot, kp))
                check(lk is not None and lk["live_objects"] == n * k and lk["live_bytes"] == n * k * size,
                      "%s: leaky has exactly %d x %d live blocks from the window" % (tag, k, n), lk)
            keys = ("partial", "illegal", "released_unknown", "listings", "listed_objects", "live_objects",
                    "live_bytes", "allocs", "frees")
            check(rt and all(rt.get(x) == tot.get(x) for x in keys),
                  "%s: report --memory of the saved trace agrees with the view" % tag,
                  "%s | %s" % ({x: rt.get(x) for x in keys}, {x: tot.get(x) for x in keys}))
            check(p.p.poll() is None and p.step(1), "%s: the program runs on after the session" % tag)
            p.stop()
            p = None
    finally:
        if p:
            p.stop()
        agent.stop()


def group_cli(lp, build, tmp):
    """Bad options: one clear message, exit 2."""
    for args, what in ((["live", "--keep-alive", "--", "true"], "need --memory"),
                       (["live", "--memory", "--mem-depth", "0", "--", "true"], "invalid --mem-depth"),
                       (["live", "--view", "memory", "--", "true"], "--view memory needs --memory"),
                       (["live", "--memory", "--keep-alive", "--attach", "1"], "not when attaching"),
                       (["snapshot", "--connect", "127.0.0.1:1", "-o", "x"], "needs the PID"),
                       (["snapshot", "--connect", "127.0.0.1:1", "12x", "-o", "x"], "invalid PID"),
                       (["snapshot", "--window", "1s", "1", "-o", "x"], "need --connect"),
                       (["snapshot", "--connect", "127.0.0.1:1", "--at-peak", "1", "-o", "x"], "for a trace")):
        r = lp(*args)
        check(r.returncode == 2 and what in r.stderr, "cli: %s: exit 2, '%s'" % (" ".join(args), what),
              "rc %d %s" % (r.returncode, r.stderr))


def group_resume(lp, build, tmp):
    """live --memory --attach, tracing stopped and started again, in a
    program without the live-block table: keep() allocates a block while
    tracing is off at the address of one it released before the pause, and
    releases it after: that release is counted apart, never as a double
    free."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = None
    try:
        n, size = 1, 16
        p = Program(lp, agent, prog, n, size, table="0")
        if not p.attachable:
            skip("resume", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        check(p.step(2), "resume: 2 iterations before the attach")
        live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "100ms", "--attach",
                                        str(p.pid)])
        ready = live.wait_view(lambda v: v.get("session"), 20)
        ok = ready is not None and p.step(5)
        live.say("stop")
        off = live.wait_view(lambda v: v.get("tracing") is False, 20)
        time.sleep(0.5)  # the agent turns the flag off as the command comes
        ok = ok and off is not None and p.step(1)
        live.say("start")
        on = live.wait_view(lambda v: v.get("tracing") is True and v is not off, 20)
        time.sleep(0.5)
        ok = ok and on is not None and p.step(RING + 2)
        check(ok, "resume: 5 iterations traced, 1 with tracing off, %d traced again" % (RING + 2), live.err.text())
        v = live.wait_view(lambda v: (site(mem_of(v), "churn") or {}).get("allocs") == 5 + RING + 2, 20)
        live.say("quit")
        rc = live.wait(30)
        m = mem_of(live.final())
        tot = m.get("totals", {})
        kp = site(m, "keep")
        check(v is not None and rc == 0, "resume: the view reaches every traced iteration; quit ends it",
              live.err.text()[-500:])
        check(tot.get("double_free") == 0 and tot.get("illegal") == 0,
              "resume: no double free reported for a block allocated again while tracing was off",
              "%s %s" % (tot, m.get("illegal")))
        # keep() with glibc's per-size cache (last freed, first reused), its
        # blocks A1.. in allocation order: A1, A2 (before the attach) are
        # released in iterations 5 and 6, unseen allocations; the paused
        # iteration 8 reuses A3 (released in 7) and releases A4 unseen;
        # iteration 9 reuses A4 (its old block was released in the pause,
        # not overlapped) and 12 releases A3 (allocated in the pause, not a
        # double free)
        check(kp is not None and tot.get("released_unknown") == 3 and tot.get("released_unseen") == 1 and
              tot.get("overlaps") == 0 and kp["allocs"] == 5 + RING + 2 and kp["frees"] == 6,
              "resume: 3 releases of unseen blocks counted apart, 1 block released in the pause, no overlap",
              "%s %s" % (tot, kp))
        check(p.p.poll() is None, "resume: the program runs on")
    finally:
        if p:
            p.stop()
        agent.stop()


def group_threads(lp, build, tmp):
    """snapshot --connect while 3 threads allocate and release without
    pause: the heap listing runs beside them, and the snapshot, taken once
    they parked, holds exactly their rings; no release is illegal, no
    allocation overlaps, nothing is counted twice."""
    threads, ring = 3, 100
    prog = os.path.join(tmp, "churnthreads")
    r = subprocess.run(["gcc", "-g", "-O1", "-pthread", "-fno-omit-frame-pointer",
                        os.path.join(HERE, "mem", "churnthreads.c"), "-o", prog],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if not check(r.returncode == 0, "threads: churnthreads builds", r.stderr):
        return
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    proc = None
    try:
        libs = [os.path.join(lp.libdir, "liblayerprof.so"), os.path.join(lp.libdir, "liblayerprof-mem.so")]
        env = dict(os.environ, LD_PRELOAD=":".join(libs), LAYERPROF_ATTACH_DIR=agent.attach_dir)
        proc = subprocess.Popen([prog, str(threads), str(ring)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, universal_newlines=True)
        tl.started.append(proc)
        out = tl.Lines(proc.stdout)
        line = out.wait_for(lambda l: l.strip().isdigit(), 10)
        pid = int(line) if line else None
        deadline = time.time() + 10
        while pid and not os.path.exists(os.path.join(agent.attach_dir, str(pid))) and time.time() < deadline:
            time.sleep(0.05)
        if not pid or not os.path.exists(os.path.join(agent.attach_dir, str(pid))):
            skip("threads", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        time.sleep(0.3)  # the threads churn before the attach too
        live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "100ms", "--attach", str(pid)])
        ready = live.wait_view(lambda v: v.get("session"), 20)
        time.sleep(1.0)  # the listing runs while the threads churn
        os.kill(pid, signal.SIGUSR1)
        parked = out.wait_for(lambda l: l == "parked", 10)
        v = live.wait_view(lambda v: (site(mem_of(v), "churn_ring") or {}).get("live_objects") == threads * ring and
                           v is not ready, 20)
        time.sleep(0.5)  # nothing comes after the threads parked: the view stays
        live.say("quit")
        rc = live.wait(30)
        m = mem_of(live.final())
        tot = m.get("totals", {})
        cr, cp = site(m, "churn_ring"), site(m, "churn_pair")
        check(ready is not None and parked is not None and v is not None and rc == 0,
              "threads: attached while the threads ran; they parked; quit ends the session", live.err.text()[-400:])
        check(tot.get("partial") is False and tot.get("listings") == 1 and tot.get("listings_incomplete") == 0 and
              tot.get("listed_objects", 0) > 0 and m.get("lost_events") == 0,
              "threads: the heap listed once, completely, while the threads ran; nothing lost", tot)
        check(cr is not None and cr["live_objects"] == threads * ring and
              cr["live_bytes"] == ring * sum(24 + 8 * t for t in range(threads)) and
              (cp is None or cp["live_objects"] == 0),
              "threads: exactly the %d x %d ring blocks live, no churn_pair block" % (threads, ring),
              "%s %s" % (cr, cp))
        check(tot.get("illegal") == 0 and not m.get("illegal") and tot.get("overlaps") == 0 and
              tot.get("listed_dropped") == 0,
              "threads: no illegal release, no overlap", tot)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        agent.stop()


def group_large(lp, build, tmp):
    """A heap listing larger than the program's ring (150 000 blocks, about
    600 000 ring slots against 524 288): the listing waits for the agent to
    take the ring in, nothing is lost, and the state is exact.  The test
    waits for conditions: a poke (one heap operation) starts the listing,
    the iteration's own 300 000 slots follow once the view holds the whole
    listing (so they fit the ring however slow the agent), and the snapshot
    is taken once the view holds the iteration."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = live = None
    try:
        n, size = 150000, 16
        p = Program(lp, agent, prog, n, size)
        if not p.attachable:
            skip("large", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        check(p.step(1), "large: %d blocks leaked before the attach" % n)
        snap = os.path.join(tmp, "large.snap")
        live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "200ms", "--attach",
                                        str(p.pid)])
        ready = live.wait_view(lambda v: v.get("session"), 30)
        os.kill(p.pid, signal.SIGUSR2)
        poked = p.out.wait_for(lambda l: l == "poke", 10)
        listed = live.wait_view(lambda v: mem_of(v).get("totals", {}).get("listings") == 1, 120)
        check(ready is not None and poked is not None and listed is not None,
              "large: attached; a heap operation started the listing; the view holds it", live.err.text()[-400:])
        stepped = p.step(1)
        v = live.wait_view(lambda v: (site(mem_of(v), "leaky") or {}).get("allocs") == n, 120)
        check(stepped and v is not None, "large: the iteration ran and its %d allocations arrived" % n,
              live.err.text()[-400:])
        live.say("snapshot " + snap)  # commands run in order: written before quit
        live.say("quit")
        rc = live.wait(60)
        m = mem_of(live.final())
        try:
            with open(snap) as f:
                s = json.load(f)
        except (OSError, ValueError):
            s = {}
        tot = s.get("totals", {})
        lk = site(s, "leaky")
        mt = m.get("totals", {})
        check(rc == 0 and s.get("partial") is False and m.get("lost_events") == 0 and
              mt.get("listings") == 1 and mt.get("listings_incomplete") == 0,
              "large: a whole heap, nothing lost", "rc %s %s %s" % (rc, mt, live.err.text()[-300:]))
        check(lk is not None and lk["live_objects"] == 2 * n and lk["live_bytes"] == 2 * n * size and
              lk["allocs"] == n and tot.get("listed_objects") == tot.get("live_objects", -1) - n - 1,
              "large: leaky has exactly %d live blocks, %d of them listed" % (2 * n, n), "%s %s" % (tot, lk))
    finally:
        if live and live.p.poll() is None:
            live.p.kill()
            live.p.wait()
        if p:
            p.stop()
        agent.stop()


def group_fold(lp, build, tmp):
    """--mem-fold in a started session: the agent's drain folds churn's
    blocks (freed at once) into counts, keeps leaky's (never freed) and
    keep's (freed 4 iterations, 40 ms, later) one by one; the live heap
    view counts the folded blocks as report --memory does on the saved
    trace (and as record --mem-fold does: the first of churn's blocks is
    not folded).  Without --mem-fold nothing is folded."""
    for args, what in ((["live", "--mem-fold", "1ms", "--", "true"], "need --memory"),
                       (["live", "--memory", "--mem-fold", "0", "--", "true"], "invalid --mem-fold"),
                       (["live", "--memory", "--mem-fold", "soon", "--", "true"], "invalid --mem-fold"),
                       (["live", "--memory", "--mem-fold", "1ms", "--attach", "1"], "not when attaching"),
                       (["serve", "--connect", "127.0.0.1:1", "--mem-fold", "1ms"], "need --memory")):
        r = lp(*args)
        check(r.returncode == 2 and what in r.stderr, "fold cli: %s: exit 2, '%s'" % (" ".join(args), what),
              "rc %d %s" % (r.returncode, r.stderr))
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        iters = 12
        for fold in ("5ms", None):
            what = "fold %s" % fold if fold else "no fold"
            save = os.path.join(tmp, "fold-%s.trace" % (fold or "none"))
            args = ["--memory", "--format", "json", "--interval", "200ms", "--save", save]
            if fold:
                args += ["--mem-fold", fold]
            live = tl.Live(lp, agent.addr, args + ["--", prog, "2", "64", "10", str(iters)],
                           stdin=subprocess.DEVNULL)
            rc = live.wait(30)
            last = live.final()
            m = mem_of(last)
            leaky, churn, keep = site(m, "leaky"), site(m, "churn"), site(m, "keep")
            if not check(rc == 0 and tl.exited_as(last, (last or {}).get("pid"), {"exit_code": 0}) and
                         leaky and churn and keep, "%s: the program runs its %d iterations and exits 0" %
                         (what, iters), "rc %s %s" % (rc, live.err.text()[-600:])):
                continue
            # the first release in churn defines its call stack (a STACK
            # record, which sends the held events out): that block is kept
            folded = iters - 1 if fold else 0
            check(counts(churn, "allocs", "frees", "folded", "folded_bytes", "live_objects") ==
                  (iters, iters, folded, 32 * folded, 0),
                  "%s: churn's %d blocks: %d folded" % (what, iters, folded), churn)
            check(counts(leaky, "allocs", "folded", "live_objects", "live_bytes") == (2 * iters, 0, 2 * iters,
                                                                                       2 * 64 * iters),
                  "%s: leaky's %d blocks live, none folded" % (what, 2 * iters), leaky)
            check(counts(keep, "allocs", "frees", "folded", "live_objects") == (iters, iters - RING, 0, RING),
                  "%s: keep's blocks outlive the fold, none folded" % what, keep)
            tot = m.get("totals", {})
            check((tot.get("folded"), tot.get("folded_bytes")) == (folded, 32 * folded) and
                  tot.get("illegal") == 0 and m.get("lost_events") == 0,
                  "%s: the totals count %d folded blocks, nothing illegal or lost" % (what, folded), tot)
            rep = lp("report", "--memory", "--format", "json", save)
            try:
                r = json.loads(rep.stdout)
            except ValueError:
                r = {}
            rt = r.get("totals", {})
            check((rt.get("folded"), rt.get("folded_bytes")) == (tot.get("folded"), tot.get("folded_bytes")) and
                  counts(site(r, "churn"), "allocs", "folded") == counts(churn, "allocs", "folded"),
                  "%s: report --memory on the saved trace counts the same" % what, "%s %s" % (rt, rep.stderr))
    finally:
        agent.stop()


def counts(row, *keys):
    return tuple((row or {}).get(k) for k in keys)


GROUPS = {
    "growing": group_growing,
    "keepalive": group_keepalive,
    "snapshot": group_snapshot,
    "attach": group_attach,
    "resume": group_resume,
    "threads": group_threads,
    "large": group_large,
    "cli": group_cli,
    "fold": group_fold,
}


def setup(build):
    lp = it.Layerprof(build)
    if not os.access(os.path.join(build, "agent", "layerprofd"), os.X_OK):
        skip("live memory", "no agent at %s/agent/layerprofd" % build)
        return None
    if not os.access(os.path.join(lp.libdir, "liblayerprof-mem.so"), os.R_OK):
        skip("live memory", "no liblayerprof-mem.so in %s" % lp.libdir)
        return None
    return lp, build


def main():
    return harness.run_groups(GROUPS, setup, "layerprof-livemem-")


if __name__ == "__main__":
    sys.exit(main())
