#!/usr/bin/env python3
"""End-to-end tests of live memory tracing: a real agent (layerprofd) on
loopback, `layerprof live --memory` and `layerprof snapshot --connect`
against it, and tests/integration/mem/leakloop.c (N leaked blocks of S bytes
per iteration from `leaky`, a ring of 4 blocks in `keep` whose oldest is
freed each iteration, a block `churn` frees at once).  In its signal mode
the program runs one iteration per SIGUSR1 and prints "iter K", so the
counts expected are exact.

usage: test_live_memory.py --build BUILD_DIR [GROUP...]
groups: growing, keepalive, snapshot, attach, cli (default: all)
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

    def __init__(self, lp, agent, prog, n, size, mem_lib=True):
        libs = [os.path.join(lp.libdir, "liblayerprof.so")]
        if mem_lib:
            libs.append(os.path.join(lp.libdir, "liblayerprof-mem.so"))
        env = dict(os.environ, LD_PRELOAD=":".join(libs), LAYERPROF_ATTACH_DIR=agent.attach_dir)
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


def group_snapshot(lp, build, tmp):
    """snapshot --connect twice on a program that never ends: each holds
    what its window saw, exactly; memdiff shows the growth at leaky; the
    program runs on; a program without the interposers is refused."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = q = None
    try:
        n, size = 2, 64
        p = Program(lp, agent, prog, n, size)
        if not p.attachable:
            skip("snapshot", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        check(p.step(6), "snapshot: 6 iterations before the attach")
        snaps = []
        for k in (3, 7):
            out = os.path.join(tmp, "snap%d.json" % len(snaps))
            # the k iterations must be done, and their heap operations
            # delivered, inside the window: when stepping them took more
            # than half of it (a slow machine), try again with twice the window
            for window in (2, 4, 8):
                sp = subprocess.Popen([lp.exe, "snapshot", "--connect", agent.addr, "--window", "%ds" % window,
                                       str(p.pid), "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True)
                tl.started.append(sp)
                err = tl.Lines(sp.stderr)
                ready = err.wait_for(lambda l: "taking in heap operations" in l, 20)
                t0 = time.time()
                ok = ready is not None and p.step(k)
                stepped = time.time() - t0
                try:
                    rc = sp.wait(30 + window)
                except subprocess.TimeoutExpired:
                    sp.kill()
                    rc = None
                err.t.join(5)
                if not ok or rc != 0 or stepped < window / 2:
                    break
            check(ok and rc == 0, "snapshot %d: written (%d iterations in its window)" % (len(snaps) + 1, k),
                  "rc %s %s" % (rc, err.text()))
            try:
                with open(out) as f:
                    s = json.load(f)
            except (OSError, ValueError):
                s = {}
            snaps.append((out, s, k))
        (f1, s1, k1), (f2, s2, k2) = snaps
        for i, (f, s, k) in enumerate(snaps):
            lk, kp = site(s, "leaky"), site(s, "keep")
            check(s.get("source") == "live" and s.get("partial") is True and "note" in s,
                  "snapshot %d: a partial live snapshot that says so" % (i + 1), str(s)[:300])
            check(lk is not None and lk["live_objects"] == n * k and lk["live_bytes"] == n * k * size,
                  "snapshot %d: leaky has exactly %d x %d live blocks" % (i + 1, k, n), lk)
            # keep frees the block of 4 iterations before: older than the window for the first 4
            unknown = min(k, RING)
            check(s.get("totals", {}).get("released_unknown") == unknown and kp is not None and
                  kp["live_objects"] == unknown and kp["frees"] == k - unknown,
                  "snapshot %d: %d releases of blocks from before the window, counted apart" % (i + 1, unknown),
                  "%s %s" % (s.get("totals"), kp))
        r = lp("memdiff", "--format", "json", f1, f2)
        try:
            d = [c for c in json.loads(r.stdout)["sites"] if c["function"] == "leaky"]
        except (ValueError, KeyError):
            d = []
        check(len(d) == 1 and d[0]["live_objects_change"] == n * (k2 - k1) and
              d[0]["live_bytes_change"] == n * (k2 - k1) * size,
              "snapshot: memdiff shows leaky grew by exactly %d blocks" % (n * (k2 - k1)), r.stdout[:500])
        r = lp("memdiff", f1, f2)
        check(r.returncode == 0 and "cover different streams" in r.stdout,
              "snapshot: memdiff says the two snapshots cover different windows", r.stdout[:400])
        check(p.p.poll() is None and p.step(1), "snapshot: the program runs on after both")
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
        for x in (p, q):
            if x:
                x.stop()
        agent.stop()


def group_attach(lp, build, tmp):
    """live --memory --attach mid-run: frees of blocks allocated before the
    attach are counted apart, never as illegal; what the window allocates
    is exact; the program runs on after quit."""
    prog = build_leakloop(tmp)
    agent = tl.Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    p = None
    try:
        n, size, k = 3, 40, 6
        p = Program(lp, agent, prog, n, size)
        if not p.attachable:
            skip("attach", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        check(p.step(6), "attach: 6 iterations before the attach")
        live = tl.Live(lp, agent.addr, ["--memory", "--format", "json", "--interval", "100ms", "--attach",
                                        str(p.pid)])
        ready = live.wait_view(lambda v: v.get("session"), 20)  # SESSION came: tracing is on
        check(ready is not None and p.step(k), "attach: %d iterations while attached" % k, live.err.text())
        v = live.wait_view(lambda v: (site(mem_of(v), "churn") or {}).get("allocs") == k, 20)
        live.say("quit")
        rc = live.wait(30)
        m = mem_of(live.final())
        tot = m.get("totals", {})
        lk, kp = site(m, "leaky"), site(m, "keep")
        check(v is not None and rc == 0, "attach: the view reaches all %d iterations; quit ends it" % k,
              live.err.text()[-500:])
        check(tot.get("illegal") == 0 and tot.get("never_allocated") == 0 and not m.get("illegal"),
              "attach: no illegal releases (the blocks freed were allocated before the attach)", tot)
        check(tot.get("partial") is True and tot.get("released_unknown") == RING and kp and
              kp["frees"] == k - RING and kp["live_objects"] == RING,
              "attach: %d releases of blocks from before the attach, counted apart" % RING,
              "%s %s" % (tot, kp))
        check(lk is not None and lk["live_objects"] == n * k and lk["live_bytes"] == n * k * size,
              "attach: leaky has exactly %d x %d live blocks from the window" % (k, n), lk)
        check("blocks allocated before the attach are unknown" in live.err.text(),
              "attach: the session says older blocks are unknown", live.err.text()[-400:])
        check(p.p.poll() is None and p.step(1), "attach: the program runs on after the session")
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


GROUPS = {
    "growing": group_growing,
    "keepalive": group_keepalive,
    "snapshot": group_snapshot,
    "attach": group_attach,
    "cli": group_cli,
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
