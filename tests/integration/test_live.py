#!/usr/bin/env python3
"""End-to-end tests of live profiling: a real agent (layerprofd) on loopback,
`layerprof live` against it, and the sample programs of tests/programs.
Checks the live view's counts against the known ones and against `report`
on the saved trace; start and stop over stdin; filters; tokens; losses; the
agent killed or silent; the program killed; attaching to a running program,
one with the runtime and, by uprobes, one without.

usage: test_live.py --build BUILD_DIR [GROUP...]
groups: basic, control, auth, faults, cli, filters, attach, attach_dynamic, ipv6, lost, paths, udp, queue,
syscalls, syscalls_udp, preload, dynamic
(default: all)
Prints one line per check and ends with 'N passed, N failed'."""

import json
import os
import signal
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import run as it  # noqa: E402  (the builders and expectations of run.py)
from harness import check, skip  # noqa: E402

WAIT = 60  # seconds any one session may take
started = harness.started  # every process we start, killed at the end if still there


def kill_pid(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


free_port = harness.free_port


class Lines:
    """Collects the lines a pipe gives, in a thread, so that it never fills."""

    def __init__(self, pipe):
        self.lines = []
        self.cond = threading.Condition()
        self.done = False
        self.t = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.t.start()

    def _read(self, pipe):
        for line in iter(pipe.readline, ""):
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def count(self):
        """How many lines have come so far (a start for wait_for)."""
        with self.cond:
            return len(self.lines)

    def wait_for(self, pred, timeout, start=0):
        """The first line from index start on for which pred is true, or
        None after timeout."""
        deadline = time.time() + timeout
        seen = start
        with self.cond:
            while True:
                while seen < len(self.lines):
                    if pred(self.lines[seen]):
                        return self.lines[seen]
                    seen += 1
                left = deadline - time.time()
                if left <= 0 or self.done:
                    return None
                self.cond.wait(left)

    def wait_count(self, pred, n, timeout):
        """The lines for which pred is true, once there are n of them (the
        reader thread may lag behind the process that wrote them), or None
        after timeout."""
        deadline = time.time() + timeout
        with self.cond:
            while True:
                got = [line for line in self.lines if pred(line)]
                left = deadline - time.time()
                if len(got) >= n or left <= 0 or self.done:
                    return got if len(got) >= n else None
                self.cond.wait(left)

    def text(self):
        with self.cond:
            return "\n".join(self.lines)


_agent_count = [0]


class Agent:
    """layerprofd for a group: on a UNIX socket in tmp, where its own user
    needs no token; or with tcp=True on a free loopback port with a token
    (--token-file in args, or one made by --gen-token), which token_args
    then give to the host commands.  wrap: a command that runs it (as
    another user, say)."""

    def __init__(self, build, tmp, args=(), listen_host="127.0.0.1", family=socket.AF_INET, env=None, tcp=False,
                 wrap=()):
        self.exe = os.path.join(build, "agent", "layerprofd")
        args = list(args)
        self.token_args = []
        if tcp:
            if "--token-file" in args:
                self.token_args = ["--token-file", args[args.index("--token-file") + 1]]
            else:
                tok = os.path.join(tmp, "agent-token")
                if not os.path.exists(tok):
                    subprocess.run([self.exe, "--gen-token", tok], stdout=subprocess.DEVNULL, check=True)
                self.token_args = ["--token-file", tok]
                args += self.token_args
        host = "[%s]" % listen_host if ":" in listen_host else listen_host
        for _ in range(3):  # another process may take the free port before the agent binds it
            _agent_count[0] += 1
            if tcp:
                self.port = free_port(family, listen_host)
                self.addr = "%s:%d" % (host, self.port)
                where = ["--listen", self.addr]
            else:
                self.port = _agent_count[0]
                self.socket = os.path.join(tmp, "agent-%d.sock" % self.port)
                self.addr = "unix:" + self.socket
                where = ["--unix", self.socket]
            self.attach_dir = os.path.join(tmp, "attach-%d" % self.port)
            self.p = subprocess.Popen(list(wrap) + [self.exe] + where + ["--attach-dir", self.attach_dir] + args,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                      universal_newlines=True, env=env)
            started.append(self.p)
            self.out = Lines(self.p.stdout)  # the programs' output (they inherit it)
            self.err = Lines(self.p.stderr)
            self.ok = self.err.wait_for(lambda l: "listening on" in l, 10) is not None
            if self.ok or "Address already in use" not in self.err.text():
                break
            self.p.wait()

    def stop(self):
        for line in self.out.text().splitlines():
            if line.strip().isdigit():  # killme printed its pid: it is ours
                kill_pid(int(line))
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Live:
    """A `layerprof live` session; its JSON views are parsed as they come."""

    def __init__(self, lp, agent_addr, args, stdin=subprocess.PIPE):
        self.cmd = [lp.exe, "live", "--connect", agent_addr] + list(args)
        self.p = subprocess.Popen(self.cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True)
        started.append(self.p)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)

    def views(self):
        out = []
        for line in self.out.text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_view(self, pred, timeout=WAIT):
        """The first JSON view for which pred is true, or None."""
        def test(line):
            try:
                return pred(json.loads(line))
            except ValueError:
                return False
        line = self.out.wait_for(test, timeout)
        return json.loads(line) if line else None

    def say(self, command):
        try:
            self.p.stdin.write(command + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def wait(self, timeout=WAIT):
        """Exit status (None after a timeout, the session then killed)."""
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.out.t.join(5)
        self.err.t.join(5)
        return rc

    def final(self):
        v = self.views()
        return v[-1] if v else None


def counts(view):
    return {f["name"]: f["calls"] for f in view["functions"]} if view else {}


def report_counts(lp, trace, *extra):
    r = lp("report", "--format", "json", *extra, trace)
    if r.returncode not in (0, 3) or not r.stdout:
        return None, r
    return json.loads(r.stdout), r


def exited_as(view, pid, exp):
    """Whether the view lists pid as ended the way exp says."""
    for e in (view or {}).get("exited", []):
        if e["pid"] != pid:
            continue
        if "signal" in exp:
            return e.get("signal") == getattr(signal, exp["signal"])
        return e.get("exit_code") == exp.get("exit_code", 0)
    return False


def agent_said(agent, pred, start, timeout=20):
    """The agent's first log line from index start on for which pred is
    true, and the CLOCK_MONOTONIC time (ns) by which what it tells had
    happened: the line's CLOCK_REALTIME stamp, in ms, cut (so plus 1 ms),
    moved to CLOCK_MONOTONIC by the offset between the two clocks now.
    (None, None) after timeout."""
    line = agent.err.wait_for(pred, timeout, start)
    if line is None:
        return None, None
    stamp = line.split(" ", 1)[1].split(":", 1)[0]  # layerprofd[PID] SEC.MS: ...
    sec, ms = stamp.split(".")
    offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.monotonic_ns()
    return line, int(sec) * 10**9 + (int(ms) + 1) * 10**6 - offset


def entry_times(lp, trace, name):
    """The times (CLOCK_MONOTONIC ns) of every entry into function name in
    a trace, from replay --format json; None when replay fails."""
    r = lp("replay", "--format", "json", trace)
    if r.returncode != 0 or not r.stdout:
        return None
    return sorted(e["time_ns"] for t in json.loads(r.stdout)["threads"] for e in t["events"]
                  if e["type"] == "entry" and e.get("name") == name)


def ms_after(times, t_ns):
    """The times after t_ns, as ms after it, for a failure's detail."""
    return ["%.1f" % ((t - t_ns) / 1e6) for t in times if t > t_ns][:5]


# ---------------------------------------------------------------- groups

def group_basic(lp, build, tmp):
    """Every sample program with exact counts: the final view, and report on
    the saved trace, say the same."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        for exp in it.load_expectations():
            name = exp["_name"]
            if name in ("killme", "busy", "busy_threads"):
                continue
            binary = it.prepare(exp, b)
            save = os.path.join(tmp, "live-" + name)
            live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--",
                                         binary] + it.prog_args(exp, b), stdin=subprocess.DEVNULL)
            rc = live.wait()
            last = live.final()
            if not check(rc == 0 and last and last["final"], "%s: live session ends with exit 0 and a final view"
                         % name, "rc %s, stderr %s" % (rc, live.err.text())):
                continue
            got = counts(last)
            want = {k: v for k, v in exp["calls"].items()}
            bad = {k: (got.get(k, 0), v) for k, v in want.items() if got.get(k, 0) != v}
            check(not bad, "%s: live counts are the known ones" % name, "(got, want) %s" % bad)
            check(exited_as(last, last["pid"], exp), "%s: live saw the program end as expected" % name,
                  str(last.get("exited")))
            rep, r = report_counts(lp, save)
            if not check(rep is not None and r.returncode == 0, "%s: report reads the saved trace" % name,
                         r.stderr.strip()):
                continue
            theirs = {f["name"]: f["calls"] for f in rep["functions"]}
            check(theirs == got, "%s: report of the saved trace agrees with the live view" % name,
                  "report %s, live %s" % (theirs, got))
            check(rep["complete"], "%s: the saved trace is complete" % name)
            check(rep["lost_events"] == last["lost_events"] == 0, "%s: no events lost" % name)
            for cmd in ("tree", "replay"):
                r = lp(cmd, save)
                check(r.returncode == 0 and r.stdout, "%s: %s reads the saved trace" % (name, cmd), r.stderr)
        # the view's shape: what scripts rely on
        last = last or {}
        keys = {"time_ns", "tracing", "events", "lost_events", "lost_at_ns", "functions", "filtered", "exited"}
        check(keys <= set(last), "json view has %s" % ", ".join(sorted(keys)), str(sorted(last)))
        # the text view, not on a terminal: plain snapshots
        rec = b.prog("recursion")
        live = Live(lp, agent.addr, ["--interval", "50ms", "--", rec], stdin=subprocess.DEVNULL)
        rc = live.wait()
        text = live.out.text()
        check(rc == 0 and "--- final profile" in text and "fib" in text and "\x1b[" not in text,
              "text view off a terminal: plain snapshots, no escapes", text[-500:])
    finally:
        agent.stop()


def killme_pid(live):
    v = live.wait_view(lambda v: v.get("pid"), 20)
    return v["pid"] if v else None


def group_control(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pids = []
    try:
        # --stopped, then start and stop over stdin bound what is recorded
        save = os.path.join(tmp, "live-startstop")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--stopped", "--save", save, "--",
                                     km])
        pid = killme_pid(live)
        if pid:
            pids.append(pid)
        time.sleep(0.5)
        v = live.final()
        check(v and not v["tracing"] and "tick" not in counts(v), "--stopped: nothing recorded before start",
              str(v and counts(v)))
        live.say("start")
        v = live.wait_view(lambda v: v["tracing"] and counts(v).get("tick", 0) > 0, 20)
        check(v is not None, "start: ticks arrive", live.err.text())
        mark = agent.err.count()
        live.say("stop")
        v = live.wait_view(lambda v: not v["tracing"] and counts(v).get("tick", 0) > 0, 20)
        check(v is not None, "stop: the view says tracing is off")
        # when the agent turned tracing off, by its log: no tick may be
        # recorded after that, however late the ticks before it arrive
        said, off_ns = agent_said(agent, lambda l: l.endswith(": tracing off"), mark)
        check(said is not None, "stop: the agent says it turned tracing off", agent.err.text()[-300:])
        time.sleep(1.0)  # killme ticks about 1000 times meanwhile
        if pid:
            kill_pid(pid)
        rc = live.wait()
        last = live.final()
        check("ready" not in counts(last), "ready, called before start, is not recorded")
        ticks = entry_times(lp, save, "tick")
        check(ticks and off_ns and len(ticks) == counts(last).get("tick") and ticks[-1] <= off_ns,
              "stop: no tick recorded after the agent turned tracing off",
              "%s ticks in the saved trace, %s in the view; ms after the stop: %s"
              % (ticks and len(ticks), counts(last).get("tick"), ticks and off_ns and ms_after(ticks, off_ns)))
        check(rc == 0 and exited_as(last, pid, {"signal": "SIGKILL"}),
              "the program killed: live ends with exit 0 and says so", "rc %s %s" % (rc, last and last["exited"]))
        check("killed by signal 9" in live.err.text(), "the program killed: message names the signal",
              live.err.text())
        rep, r = report_counts(lp, save)
        check(rep is not None and {f["name"]: f["calls"] for f in rep["functions"]}.get("tick") ==
              counts(last).get("tick"), "saved trace has the same ticks as the live view",
              "%s %s" % (rep and rep["functions"], counts(last)))

        # quit: exit 0; the host closes the saved trace
        save = os.path.join(tmp, "live-quit")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--", km])
        pid = killme_pid(live)
        if pid:
            pids.append(pid)
        time.sleep(0.5)
        live.say("quit")
        rc = live.wait(20)
        check(rc == 0, "quit: exit 0", "rc %s %s" % (rc, live.err.text()))
        r = lp("report", save)
        check(r.returncode == 0 and "no end record" not in r.stderr, "quit: the saved trace is closed", r.stderr)
        if pid:
            kill_pid(pid)

        # save DIR in mid-session: what was kept comes first
        save = os.path.join(tmp, "live-save-later")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--", km])
        pid = killme_pid(live)
        if pid:
            pids.append(pid)
        time.sleep(0.5)
        live.say("save " + save)
        msg = live.err.wait_for(lambda l: "saving to" in l, 10)
        check(msg is not None and "received so far" in msg, "save: what was kept is written", str(msg))
        live.say("quit")
        rc = live.wait(20)
        rep, r = report_counts(lp, save)
        check(rc == 0 and rep is not None and r.returncode == 0, "save: the trace is readable", r.stderr)
        if pid:
            kill_pid(pid)

        # commands that are wrong get a message and nothing else
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--", km])
        pid = killme_pid(live)
        if pid:
            pids.append(pid)
        live.say("frobnicate")
        live.say("filter --depth x")
        live.say("save")
        live.say("quit")
        rc = live.wait(20)
        err = live.err.text()
        check(rc == 0 and "unknown command 'frobnicate'" in err and "invalid --depth" in err and
              "usage: save DIR" in err, "bad commands are reported, the session goes on", err)
        if pid:
            kill_pid(pid)

        # --duration ends the session, on the session's clock, while the
        # program runs on (killme never ends by itself)
        live = Live(lp, agent.addr, ["--format", "json", "--duration", "1s", "--", km], stdin=subprocess.DEVNULL)
        pid = killme_pid(live)
        if pid:
            pids.append(pid)
        rc = live.wait(20)
        last = live.final() or {}
        check(rc == 0 and last.get("final") and last["time_ns"] >= 10**9 and not last["exited"] and
              pid and os.path.exists("/proc/%d" % pid), "--duration 1s ends the session with exit 0",
              "rc %s, final view at %s ns, exited %s" % (rc, last.get("time_ns"), last.get("exited")))
        if pid:
            kill_pid(pid)
    finally:
        for pid in pids:
            kill_pid(pid)
        agent.stop()


def group_auth(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    rec = b.prog("recursion")
    tok = os.path.join(tmp, "token")
    bad = os.path.join(tmp, "token-bad")
    for path, text in ((tok, "a s3cret token for the tests\n"), (bad, "not the token, but as long\n")):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
    agent = Agent(build, tmp, ["--token-file", tok], tcp=True)
    if not check(agent.ok, "agent with a token starts", agent.err.text()):
        return
    try:
        live = Live(lp, agent.addr, ["--format", "json", "--token-file", tok, "--", rec], stdin=subprocess.DEVNULL)
        rc = live.wait()
        check(rc == 0 and counts(live.final()).get("fib") == 1973, "the right token is accepted", live.err.text())
        for what, args in (("a wrong token", ["--token-file", bad]), ("no token", [])):
            live = Live(lp, agent.addr, ["--format", "json"] + args + ["--", rec], stdin=subprocess.DEVNULL)
            rc = live.wait(20)
            err = live.err.text()
            check(rc == 1 and "agent refused the connection" in err and not live.views(),
                  "%s: refused, exit 1, one message" % what, "rc %s %r" % (rc, err))
        live = Live(lp, agent.addr, ["--token-file", os.path.join(tmp, "no-such-token"), "--", rec],
                    stdin=subprocess.DEVNULL)
        rc = live.wait(20)
        check(rc == 1 and "cannot read token file" in live.err.text(), "a missing token file: exit 1")
    finally:
        agent.stop()


def group_faults(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    busy = b.prog("busy")
    # nobody listening
    port = free_port()
    live = Live(lp, "127.0.0.1:%d" % port, ["--", km], stdin=subprocess.DEVNULL)
    rc = live.wait(20)
    check(rc == 1 and "cannot connect" in live.err.text(), "no agent: exit 1, 'cannot connect'", live.err.text())

    # the agent killed mid-session: exit 1, a message, the saved trace readable
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pid = None
    try:
        save = os.path.join(tmp, "live-agent-killed")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--", busy,
                                     "4000000000"])
        # calls must have come, not only the program's mappings
        v = live.wait_view(lambda v: counts(v).get("tiny_a", 0) > 0, 20)
        pid = v and v["pid"]
        agent.p.kill()
        t0 = time.time()
        rc = live.wait(20)
        err = live.err.text()
        check(rc == 1 and "connection to the agent lost" in err and time.time() - t0 < 10,
              "agent killed: exit 1 with a message", "rc %s %r" % (rc, err))
        check("trace received so far is in" in err, "agent killed: says where the trace is", err)
        rep, r = report_counts(lp, save)
        check(rep is not None and r.returncode in (0, 3) and counts(rep).get("tiny_a", 0) > 0,
              "agent killed: the saved trace is readable up to the failure", r.stderr.strip())
        check("no end record" in r.stderr or "damaged" in r.stderr, "agent killed: report says it was cut",
              r.stderr)
    finally:
        if pid:
            kill_pid(pid)
        agent.stop()

    # the agent stops answering (SIGSTOP): exit 1 after the silence bound
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pid = None
    try:
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--", km])
        pid = killme_pid(live)
        live.wait_view(lambda v: counts(v).get("tick", 0) > 0, 20)
        agent.p.send_signal(signal.SIGSTOP)
        rc = live.wait(30)
        # the silence, on the session's clock: the views' time_ns.  What the
        # agent sent last first shows in view k, so it came after view k-1
        # was drawn; the final view is drawn when the session gave up.
        views = [{"time_ns": 0, "events": 0}] + live.views()  # the session's start, then its views
        k = max([i for i in range(1, len(views)) if views[i]["events"] > views[i - 1]["events"]] or [0])
        silent = (views[-1]["time_ns"] - views[k - 1]["time_ns"]) / 1e9 if k and views[-1].get("final") else None
        check(rc == 1 and "stopped responding" in live.err.text() and silent is not None and 5 <= silent < 15,
              "a silent agent: exit 1 after 5 s of silence", "rc %s after %s s %r" % (rc, silent, live.err.text()))
    finally:
        agent.p.send_signal(signal.SIGCONT)
        if pid:
            kill_pid(pid)
        agent.stop()


def group_cli(lp, build, tmp):
    r = lp("live", "--help")
    check(r.returncode == 0 and r.stdout.startswith("usage: layerprof live"), "live --help")
    r = lp("--help")
    check(" live " in r.stdout, "live is in the command list")
    for args in (["--no-such-option", "--", "x"], ["--interval", "soon", "--", "x"], ["--format", "yaml", "--", "x"],
                 ["--attach", "123", "--", "x"], [], ["--attach", "nope"], ["--connect", "[::1", "--", "x"],
                 ["--connect", "host:99999", "--", "x"], ["--depth", "0", "--", "x"], ["--tid", "1", "--", "x"]):
        r = lp("live", *args)
        check(r.returncode == 2 and r.stderr.strip() and not r.stdout, "live %s: exit 2" % " ".join(args),
              "rc %d %r" % (r.returncode, r.stderr))


def group_filters(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pid = None
    try:
        save = os.path.join(tmp, "live-filters")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "-F", "tick", "--save", save, "--",
                                     km])
        v = live.wait_view(lambda v: v.get("pid"), 20)
        pid = v and v["pid"]
        check(v and v["filtered"] and v["filters"] == "-F 'tick'", "a filtered session says so", str(v))
        if v and "filters" not in v.get("agent_caps", "").split(","):
            skip("filters on the target", "the agent does not offer them (caps %s)" % v.get("agent_caps"))
            live.say("quit")
            live.wait(20)
            return
        v = live.wait_view(lambda v: counts(v).get("tick", 0) > 0, 20)
        check(v is not None and "main" not in counts(v) and "ready" not in counts(v),
              "-F tick: only tick is recorded", str(v and counts(v)))
        check(v is not None and all(f["self_ns"] is None for f in v["functions"]),
              "filtered: self time is unknown (null)")
        mark = agent.err.count()
        live.say("filter -N tick")
        # from the time the agent set the filter, by its log, until the
        # clear is said, no tick may be recorded
        said, set_ns = agent_said(agent, lambda l: ": filters: 0 only, 1 excluded" in l, mark)
        check(said is not None, "filter -N tick: the agent sets the filter", agent.err.text()[-300:])
        time.sleep(1.0)  # killme ticks about 1000 times meanwhile
        clear_ns = time.monotonic_ns()
        live.say("filter clear")
        check(live.err.wait_for(lambda l: "filters cleared" in l, 10) is not None, "filter clear")
        live.say("quit")
        rc = live.wait(20)
        check(rc == 0, "filtered session ends with exit 0", live.err.text())
        ticks = entry_times(lp, save, "tick")
        between = [t for t in ticks or [] if set_ns and set_ns < t < clear_ns]
        check(ticks and set_ns and ticks[0] < set_ns and not between,
              "filter -N tick: no tick recorded while it was in force",
              "%s ticks in the saved trace; ms after the filter was set: %s"
              % (ticks and len(ticks), ms_after(between, set_ns) if set_ns else None))
        if pid:
            kill_pid(pid)
        # the text view hides the call tree and says why
        live = Live(lp, agent.addr, ["--interval", "100ms", "--duration", "1s", "--depth", "2", "--", km],
                    stdin=subprocess.DEVNULL)
        v = live.out.wait_for(lambda l: "call tree hidden" in l, 20)
        live.wait(20)
        check(v is not None and "filtered profiling leaves gaps in the call paths" in v,
              "filtered text view says why the tree is hidden", live.out.text()[-300:])
    finally:
        if pid:
            kill_pid(pid)
        agent.stop()


def qualified(name):
    """A demangled C++ name without the return type it may start with (the
    text after the last blank outside brackets before the parameters)."""
    depth, start = 0, 0
    for i, c in enumerate(name):
        if c in "<(":
            if c == "(" and depth == 0:
                break
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == " " and depth == 0:
            start = i + 1
    return name[start:]


def group_names(lp, build, tmp):
    """Filters set on the target match C++ names as report's do: without
    the return type a function template's name starts with, with or
    without the parameters (tests/programs/templates.cc, repeating its work
    every 10 ms).  Each filter is set by the 'filter' command; the saved
    trace is read for the calls that began after the agent set it."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    prog = b.prog("templates")
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pid = None
    try:
        save = os.path.join(tmp, "live-names")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--", prog,
                                     "100000", "10"])
        v = live.wait_view(lambda v: counts(v).get("bool ns::eq<int>(int, int)", 0) > 0, 20)
        pid = v and v["pid"]
        if v and "filters" not in v.get("agent_caps", "").split(","):
            skip("filters on the target", "the agent does not offer them (caps %s)" % v.get("agent_caps"))
            return
        spans = []
        for command, log in (("filter -F 'ns::eq<int>'", "filters: 1 only, 0 excluded"),
                             ("filter -F 'ns::eq<int>(int, int)'", "filters: 1 only, 0 excluded"),
                             ("filter -N 'std::*'", "filters: 0 only, ")):
            mark = agent.err.count()
            live.say(command)
            said, set_ns = agent_said(agent, lambda l, log=log: log in l, mark)
            if not check(said is not None, "live %s: the agent sets the filter" % command, agent.err.text()[-300:]):
                return
            time.sleep(0.5)  # about 50 rounds of work
            spans.append((command, set_ns, time.monotonic_ns()))
        live.say("quit")
        check(live.wait(20) == 0, "the session ends with exit 0", live.err.text()[-300:])
        r = lp("replay", "--format", "json", save)
        entries = [(e["time_ns"], e["name"]) for t in json.loads(r.stdout)["threads"] for e in t["events"]
                   if e["type"] == "entry"] if r.returncode == 0 and r.stdout else []
        for command, t0, t1 in spans:
            names = {}
            for t, name in entries:
                if t0 < t < t1:
                    names[name] = names.get(name, 0) + 1
            if "-F" in command:
                check(set(names) == {"bool ns::eq<int>(int, int)"} and names[
                      "bool ns::eq<int>(int, int)"] >= 4, "live %s: only that template's calls" % command,
                      str(names)[:300])
            else:
                std = [n for n in names if qualified(n).startswith("std::")]
                check(not std and names.get("bool ns::eq<int>(int, int)", 0) >= 4 and names.get("work()", 0) >= 1,
                      "live %s: no std:: function, std:: templates with a return type included" % command,
                      "std:: %s; %d names" % (std[:3], len(names)))
    finally:
        if pid:
            kill_pid(pid)
        agent.stop()


def group_attach(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    prog = None
    try:
        env = dict(os.environ, LD_PRELOAD=os.path.join(lp.libdir, "liblayerprof.so"),
                   LAYERPROF_ATTACH_DIR=agent.attach_dir)
        prog = subprocess.Popen([km], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                universal_newlines=True)
        started.append(prog)
        pid = int(prog.stdout.readline())
        deadline = time.time() + 10
        while not os.path.exists(os.path.join(agent.attach_dir, str(pid))) and time.time() < deadline:
            time.sleep(0.05)
        if not os.path.exists(os.path.join(agent.attach_dir, str(pid))):
            skip("attach", "the program did not make itself attachable in %s" % agent.attach_dir)
            return
        save = os.path.join(tmp, "live-attach")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--attach",
                                     str(pid)])
        v = live.wait_view(lambda v: counts(v).get("tick", 0) > 0, 20)
        check(v is not None and v["pid"] == pid, "attach: ticks of the running program arrive", live.err.text())
        check(v is not None and "ready" not in counts(v), "attach: nothing from before the attach")
        prog.kill()
        prog.wait()  # a zombie would still look alive to the agent
        rc = live.wait(20)
        last = live.final()
        check(rc == 0 and any(e["pid"] == pid for e in (last or {}).get("exited", [])),
              "attach: the program's end ends the session", "rc %s %s" % (rc, last and last.get("exited")))
        rep, r = report_counts(lp, save)
        check(rep is not None and counts(rep).get("tick", 0) == counts(last).get("tick", -1),
              "attach: the saved trace agrees with the view", r.stderr.strip())
        live = Live(lp, agent.addr, ["--attach", "999999999"], stdin=subprocess.DEVNULL)
        rc = live.wait(20)
        check(rc == 1 and "cannot attach to process 999999999" in live.err.text(),
              "attach to no such process: exit 1", live.err.text())
    finally:
        if prog:
            prog.kill()
            prog.wait()
        agent.stop()


def group_ipv6(lp, build, tmp):
    if not socket.has_ipv6:
        skip("ipv6", "no IPv6 in this Python")
        return
    try:
        free_port(socket.AF_INET6, "::1")
    except OSError as e:
        skip("ipv6", "no IPv6 loopback here (%s)" % e)
        return
    b = it.Builder("gcc", "g++", "-O2", tmp)
    rec = b.prog("recursion")
    agent = Agent(build, tmp, listen_host="::1", family=socket.AF_INET6, tcp=True)
    if not check(agent.ok, "agent listens on [::1]", agent.err.text()):
        return
    try:
        live = Live(lp, agent.addr, agent.token_args + ["--format", "json", "--", rec], stdin=subprocess.DEVNULL)
        rc = live.wait()
        check(rc == 0 and counts(live.final()).get("fib") == 1973, "live over IPv6 ([::1]:PORT)", live.err.text())
    finally:
        agent.stop()


def group_lost(lp, build, tmp):
    b = it.Builder("gcc", "g++", "-O2", tmp)
    busy = b.prog("busy")
    agent = Agent(build, tmp, ["--buffer-size", "128K"])
    if not check(agent.ok, "agent with small rings starts", agent.err.text()):
        return
    try:
        save = os.path.join(tmp, "live-lost")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--", busy,
                                     "20000000"], stdin=subprocess.DEVNULL)
        rc = live.wait()
        last = live.final()
        if not check(rc == 0 and last, "busy program under live", live.err.text()):
            return
        rep, r = report_counts(lp, save)
        check(rep is not None and rep.get("ring_full") == "discard",
              "the saved trace says full rings discard (the agent never makes a program wait)",
              rep and rep.get("ring_full"))
        if not last["lost_events"]:
            skip("losses", "this machine kept up with the program: nothing was lost")
            return
        check(last["lost_at_ns"] is not None, "the view says when events were lost")
        check("events lost (the last at" in live.err.text(), "live warns about the losses", live.err.text())
        rep, r = report_counts(lp, save)
        check(rep is not None and rep["lost_events"] > 0, "the saved trace counts the losses too",
              rep and str(rep["lost_events"]))
        check(counts(last).get("tiny_a") == counts(rep).get("tiny_a"), "the view and the saved trace agree")
    finally:
        agent.stop()


def fib_paths(n=15):
    """{path text: calls} of recursion.c: main, then fib at each depth."""
    per_depth = {}

    def fib(k, depth):
        per_depth[depth] = per_depth.get(depth, 0) + 1
        if k >= 2:
            fib(k - 1, depth + 1)
            fib(k - 2, depth + 1)
    fib(n, 1)
    out = {"main": 1}
    for depth, calls in per_depth.items():
        out[" > ".join(["main"] + ["fib"] * depth)] = calls
    return out


def mutual_paths():
    """{path text: calls} of mutual.c: is_even(20) and is_odd(7) from main."""
    out = {"main": 1}
    for first, arg in (("is_even", 20), ("is_odd", 7)):
        path, name = ["main"], first
        for _ in range(arg + 1):
            path.append(name)
            out[" > ".join(path)] = 1
            name = "is_odd" if name == "is_even" else "is_even"
    return out


def path_rows(view):
    return {p["path"]: p["calls"] for p in (view or {}).get("paths") or []}


def group_paths(lp, build, tmp):
    """The hot call paths view: exact paths of programs with known call
    structure, the node limit, switching views, and filtered sessions."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    pids = []
    try:
        for name, want in (("mutual", mutual_paths()), ("recursion", fib_paths())):
            live = Live(lp, agent.addr, ["--format", "json", "--view", "paths", "--", b.prog(name)],
                        stdin=subprocess.DEVNULL)
            rc = live.wait()
            last = live.final()
            got = path_rows(last)
            check(rc == 0 and last and last["view"] == "paths" and got == want,
                  "%s: --view paths lists exactly the known call paths with their calls" % name,
                  "rc %s, extra %s, missing %s" % (rc, sorted(set(got) - set(want))[:5],
                                                   sorted(set(want) - set(got))[:5]))
            check(last and last["path_nodes"] == len(want) and last["paths_folded_calls"] == 0,
                  "%s: one node per path, nothing folded" % name,
                  str(last and (last["path_nodes"], last["paths_folded_calls"])))
            paths = {p["path"]: p for p in (last or {}).get("paths") or []}
            ok = bool(paths)
            for text, p in paths.items():
                kids = [q for t, q in paths.items() if t.startswith(text + " > ") and q["depth"] == p["depth"] + 1]
                ok &= p["self_ns"] <= p["total_ns"]
                ok &= p["total_ns"] - p["self_ns"] == sum(q["total_ns"] for q in kids)
                ok &= p["depth"] == text.count(" > ")
            check(ok, "%s: each path's total is its self time plus its callees' totals" % name)
            rows = (last or {}).get("paths") or []
            check(all(rows[i]["self_ns"] >= rows[i + 1]["self_ns"] for i in range(len(rows) - 1)),
                  "%s: paths come hottest (most self time) first" % name)
            by_leaf = {}
            for t, c in got.items():
                leaf = t.split(" > ")[-1]
                by_leaf[leaf] = by_leaf.get(leaf, 0) + c
            check(by_leaf == counts(last), "%s: the paths ending in each function add up to its flat calls" % name,
                  "paths %s, flat %s" % (by_leaf, counts(last)))

        # the node limit: the first paths are kept, the calls of the others counted
        live = Live(lp, agent.addr, ["--format", "json", "--view", "paths", "--path-nodes", "5", "--",
                                     b.prog("recursion")], stdin=subprocess.DEVNULL)
        rc = live.wait()
        last = live.final()
        want = {t: c for t, c in fib_paths().items() if t.count(" > ") < 5}
        got = path_rows(last)
        check(rc == 0 and got == want and last["path_nodes"] == 5, "--path-nodes 5: the five shallowest paths kept",
              "%s" % got)
        check(last and sum(got.values()) + last["paths_folded_calls"] == 1974,
              "--path-nodes 5: kept calls + folded calls == all 1974 calls",
              str(last and last["paths_folded_calls"]))
        live = Live(lp, agent.addr, ["--view", "paths", "--path-nodes", "5", "--", b.prog("recursion")],
                    stdin=subprocess.DEVNULL)
        live.wait()
        check("1958 calls on paths not kept (limit of 5 paths)" in live.out.text() and
              "--- final call paths" in live.out.text(), "text view: the folded calls are said",
              live.out.text()[-400:])

        # switching views over stdin
        km = b.prog("killme")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--", km])
        v = live.wait_view(lambda v: counts(v).get("tick", 0) > 0, 20)
        if v:
            pids.append(v["pid"])
        check(v is not None and v["view"] == "flat" and "paths" not in v, "flat view by default: no paths",
              str(v and sorted(v)))
        live.say("view paths")
        v = live.wait_view(lambda v: v["view"] == "paths" and path_rows(v).get("main > tick", 0) > 0, 20)
        check(v is not None and "main > ready" in path_rows(v) and
              set(path_rows(v)) == {"main", "main > ready", "main > tick"},
              "view paths: killme's paths are main, main > ready, main > tick", str(v and path_rows(v)))
        live.say("view flat")
        check(live.wait_view(lambda v: v["view"] == "flat", 20) is not None, "view flat: back to the flat profile")
        live.say("view sideways")
        check(live.err.wait_for(lambda l: "usage: view flat|paths" in l, 10) is not None,
              "a bad view is refused with a message")
        live.say("quit")
        check(live.wait(20) == 0, "the session ends with exit 0")

        # a source-filtered session hides the paths and says why
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--view", "paths", "-F", "tick",
                                     "--duration", "1s", "--", km], stdin=subprocess.DEVNULL)
        live.wait(20)
        last = live.final()
        if last:
            pids.append(last["pid"])
        check(last and last["filtered"] and last["paths"] is None and
              last["paths_hidden"] == "filtered profiling leaves gaps in the call paths",
              "filtered: paths are null, and the view says why", str(last and {k: last.get(k) for k in
                                                                             ("paths", "paths_hidden")}))
        live = Live(lp, agent.addr, ["--interval", "100ms", "--view", "paths", "--depth", "2", "--duration", "1s",
                                     "--", km], stdin=subprocess.DEVNULL)
        line = live.out.wait_for(lambda l: "call paths hidden" in l, 20)
        live.wait(20)
        check(line is not None and "filtered profiling leaves gaps in the call paths" in line,
              "filtered text view: says why the call paths are hidden", live.out.text()[-300:])
        for args in (["--view", "tree"], ["--path-nodes", "0"], ["--path-nodes", "lots"]):
            r = lp("live", *(args + ["--", km]))
            check(r.returncode == 2 and r.stderr.strip(), "live %s: exit 2" % " ".join(args), r.stderr)
    finally:
        for pid in pids:
            kill_pid(pid)
        agent.stop()


def udp_rcvbuf_errors():
    """Datagrams this network namespace's kernel dropped so far because a
    socket's receive buffer was full (Udp RcvbufErrors, /proc/net/snmp)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def udp_tries(run, tries=3):
    """Runs a --udp session, run(attempt) -> (rc, final view, ...), again
    (up to tries times) while the host's own kernel dropped datagrams during
    it for lack of receive buffer: a host too slow for the buffer it got,
    whose loss is counted but says nothing about the channel.  Loss that
    the receive buffer does not explain is not retried.  Returns the last
    run's result and how many datagrams the buffer dropped during it."""
    for attempt in range(tries):
        before = udp_rcvbuf_errors()
        res = run(attempt)
        dropped = udp_rcvbuf_errors() - before
        lost = (((res[1] or {}).get("udp") or {}).get("lost_datagrams") or 0)
        if not lost or dropped < lost:
            break
    return res, dropped if lost else 0


def skip_overflow(what, last, dropped):
    skip(what, "the host's receive buffer (%s bytes) overflowed in every try, %d datagrams dropped the last time"
         % (((last or {}).get("udp") or {}).get("rcvbuf"), dropped))


def group_udp(lp, build, tmp):
    """--udp over loopback: the events come by datagram, exactly; a TCP-only
    session has no UDP counts.  (Loss over UDP is induced and counted in
    test_agent.py, on a shaped veth link between two namespaces.)"""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    agent = Agent(build, tmp, tcp=True)  # a datagram channel needs TCP, and so a token
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        def session(attempt):
            save = os.path.join(tmp, "live-udp-%d" % attempt)
            live = Live(lp, agent.addr, agent.token_args + ["--format", "json", "--udp", "--save", save, "--",
                                                            b.prog("recursion")], stdin=subprocess.DEVNULL)
            rc = live.wait()
            return rc, live.final(), live.err.text(), save

        (rc, last, err, save), dropped = udp_tries(session)
        u = (last or {}).get("udp") or {}
        if dropped:
            skip_overflow("--udp over loopback", last, dropped)
        else:
            check(rc == 0 and counts(last) == {"main": 1, "fib": 1973}, "--udp: exact counts", err)
            check(u.get("datagrams", 0) > 0 and u.get("lost_datagrams") == 0 and u.get("lost_events") == 0 and
                  u.get("events") == u.get("sent_events") == last["events"],
                  "--udp: every event came by datagram, none lost", str(u))
            rep, r = report_counts(lp, save)
            check(rep is not None and counts(rep) == counts(last), "--udp: the saved trace agrees", r.stderr)
        live = Live(lp, agent.addr, agent.token_args + ["--format", "json", "--", b.prog("recursion")],
                    stdin=subprocess.DEVNULL)
        live.wait()
        check((live.final() or {}).get("udp", 0) is None, "without --udp: udp is null")
        # the flush period: a quarter of --interval by default, or --flush
        for args, ms in ((["--interval", "100ms"], 25), (["--flush", "10ms"], 10), (["--interval", "10s"], 1000)):
            mark = agent.err.count()
            live = Live(lp, agent.addr, agent.token_args + ["--format", "json"] + args + ["--", b.prog("recursion")],
                        stdin=subprocess.DEVNULL)
            rc = live.wait()
            said = agent.err.wait_for(lambda l: "partial chunks flushed every %d ms" % ms in l, 10, mark)
            check(rc == 0 and said is not None, "live %s: the agent flushes every %d ms" % (" ".join(args), ms),
                  agent.err.text()[-300:])
        for bad in ("1ms", "2s", "soon"):
            r = lp("live", "--flush", bad, "--", "x")
            check(r.returncode == 2 and "invalid --flush" in r.stderr, "live --flush %s: exit 2" % bad, r.stderr)
    finally:
        agent.stop()


def group_queue(lp, build, tmp):
    """Chunks refused by the agent's full queue to the host are reported as
    lost events (STATUS event=lost).  The queue is made small through the
    agent's test-only LAYERPROFD_TEST_OUT_MAX, and the host is stopped
    (SIGSTOP) for a while so that the queue fills."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    paced = os.path.join(tmp, "paced")
    subprocess.run(["gcc", "-O2", "-g", "-finstrument-functions", "-I", it.PROGS,
                    os.path.join(it.ROOT, "bench", "paced.c"), "-o", paced], check=True)
    env = dict(os.environ, LAYERPROFD_TEST_OUT_MAX=str(256 << 10))
    agent = Agent(build, tmp, ["--buffer-size", "64M"], env=env)
    if not check(agent.ok, "agent with a small queue starts", agent.err.text()):
        return
    try:
        argv = [paced, "1000000", "3"]
        runs = 0
        paced_line = lambda l: l.startswith("paced: ")  # noqa: E731
        for _ in range(3):  # a loaded machine may make the rings drop some
            live = Live(lp, agent.addr, ["--format", "json", "--"] + argv, stdin=subprocess.DEVNULL)
            rc = live.wait()
            runs += 1
            clean = live.final()
            if rc == 0 and clean and clean["lost_events"] == 0:
                break
        if not clean or clean["lost_events"]:
            skip("queue losses", "even an unstalled session lost events here (the machine is too busy)")
            return
        # paced prints how many calls it made; its line comes through the
        # agent's output, read by a thread that may lag behind
        made = agent.out.wait_count(paced_line, runs, 10)
        if not check(made is not None, "paced reported its calls in the clean run", agent.out.text()[-300:]):
            return
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--"] + argv,
                    stdin=subprocess.DEVNULL)
        live.wait_view(lambda v: v["events"] > 0, 20)
        live.p.send_signal(signal.SIGSTOP)
        time.sleep(1.5)
        live.p.send_signal(signal.SIGCONT)
        rc = live.wait()
        last = live.final()
        if not last or not last["lost_events"]:
            skip("queue losses", "the socket buffers took the whole stall: nothing was refused")
            return
        said = agent.err.wait_for(lambda l: ("session %d: " % last["session"]) in l and
                                  "refused by the full queue" in l, 10)
        refused = int(said.split(": ")[-1].split()[0]) if said else -1
        check(rc == 0 and refused > 0, "a stalled host: the agent refuses chunks and logs %d events" % refused,
              agent.err.text()[-300:])
        check(last["lost_events"] >= refused, "live counts the refused events as lost (%d)" % last["lost_events"],
              "agent %d" % refused)
        # paced made two events per call; the other events (main, mappings,
        # task records) are those of the clean run
        if last["lost_events"] != refused:
            skip("exact queue loss count", "the rings dropped events too (a busy machine)")
        else:
            now = agent.out.wait_count(paced_line, runs + 1, 10)
            if check(now is not None, "paced reported its calls", agent.out.text()[-300:]):
                calls = [int(l.split()[1]) for l in now]
                want = 2 * calls[-1] + clean["events"] - 2 * calls[runs - 1]
                check(last["events"] + last["lost_events"] == want,
                      "events received + events lost == the events the program made (%d)" % want,
                      "%d + %d" % (last["events"], last["lost_events"]))
        check("events lost" in live.err.text(), "live warns about them", live.err.text())
    finally:
        agent.stop()


def sys_row(view, name):
    return next((s for s in (view or {}).get("syscalls", []) if s["name"] == name), None)


def sys_by_function(view, function, syscall):
    return [f for f in (view or {}).get("by_function", []) if f["function"] == function and f["syscall"] == syscall]


def sys_backends(lp, tmp):
    """The syscall backends the kernel allows here: {name: None} for a usable
    one, {name: reason} for a refused one (record on /bin/true says why)."""
    out = {}
    for backend in ("bpf", "tracepoint", "ptrace"):
        r = lp("record", "-q", "--syscalls=" + backend, "-o", os.path.join(tmp, "probe-" + backend), "--",
               "/bin/true")
        out[backend] = None if r.returncode == 0 else (r.stderr.strip() or "exit %d" % r.returncode)
    return out


def live_writer(lp, agent, tmp, writer, backend, name, *extra):
    """A --syscalls session on sys_writer, saved: (exit status, final view,
    stderr, trace directory)."""
    save = os.path.join(tmp, "live-sys-" + name)
    live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--syscalls=" + backend, "--save", save]
                + agent.token_args + list(extra) + ["--", writer], stdin=subprocess.DEVNULL)
    rc = live.wait()
    return rc, live.final(), live.err.text(), save


def group_syscalls(lp, build, tmp):
    """live --syscalls: the agent starts sys_writer under the syscall tracer;
    the view's syscalls have the exact counts and attribution of record
    --syscalls, and report --syscalls on the saved trace agrees; a filter
    keeps only its syscalls; each backend the kernel allows, the refused
    ones skipped with the reason; attaching traces a running program's
    syscalls and, with ptrace, leaves it running."""
    writer = os.path.join(tmp, "sys_writer")
    r = it.run(["gcc", "-O2", "-g", "-std=c11", "-pthread", "-finstrument-functions", "-I", it.PROGS,
                os.path.join(it.PROGS, "sys_writer.c"), "-o", writer])
    if not check(r.returncode == 0, "sys_writer builds", r.stderr):
        return
    backends = sys_backends(lp, tmp)
    usable = [b for b, why in backends.items() if why is None]
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        for backend, why in sorted(backends.items()):
            if why is None:
                continue
            skip("live --syscalls=" + backend, "the kernel refuses the backend: " + why)
            rc, last, err, _ = live_writer(lp, agent, tmp, writer, backend, "refused-" + backend)
            check(rc == 1 and ("%s backend" % backend) in err, "a refused %s backend: exit 1, the agent's reason"
                  % backend, err)
        if not usable:
            skip("live --syscalls", "no syscall backend works here")
            return
        # auto first, then every other usable backend once
        for backend in ["auto"] + (usable if len(usable) > 1 else []):
            rc, last, err, save = live_writer(lp, agent, tmp, writer, backend, backend)
            if not check(rc == 0 and last and last["final"], "%s: live --syscalls session ends with exit 0"
                         % backend, "rc %s, stderr %s" % (rc, err)):
                continue
            chosen = last.get("syscall_backend")
            check(chosen in usable and ("syscalls: %s: " % chosen) in err,
                  "%s: the backend chosen (%s) and why are said" % (backend, chosen), err)
            w = sys_row(last, "write")
            check(w and w["calls"] == 100 and w["errors"] == 0 and 0 < w["max_ns"] <= w["total_ns"],
                  "%s: view: 100 write calls, no errors, times set" % backend, w)
            f = sys_by_function(last, "writer", "write")
            check(len(f) == 1 and f[0]["calls"] == 100, "%s: view: the 100 writes are attributed to writer"
                  % backend, f)
            f = sys_by_function(last, "opener", "openat")
            check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["errors"] == 1,
                  "%s: view: opener made one failing openat" % backend, f)
            check(exited_as(last, last["pid"], {"exit_code": 0}), "%s: the program exited 0" % backend,
                  last.get("exited"))
            r = lp("report", "--syscalls", "--format", "json", save)
            rep = json.loads(r.stdout) if r.returncode == 0 and r.stdout else None
            if not check(rep is not None, "%s: report --syscalls reads the saved trace" % backend, r.stderr):
                continue
            mine = {(s["name"], s["calls"], s["errors"], s["total_ns"], s["max_ns"]) for s in last["syscalls"]}
            theirs = {(s["name"], s["calls"], s["errors"], s["total_ns"], s["max_ns"]) for s in rep["syscalls"]}
            check(mine == theirs, "%s: report --syscalls of the saved trace agrees with the view" % backend,
                  "only in view %s, only in report %s" % (mine - theirs, theirs - mine))
            mine = {(f["function"], f["syscall"], f["calls"], f["total_ns"]) for f in last["by_function"]}
            theirs = {(f["function"], f["syscall"], f["calls"], f["total_ns"]) for f in rep["by_function"]}
            check(mine == theirs, "%s: by_function agrees with report" % backend,
                  "only in view %s, only in report %s" % (mine - theirs, theirs - mine))
        # a filter: the writes only
        rc, last, err, save = live_writer(lp, agent, tmp, writer, "auto", "filtered", "--syscall-filter", "write")
        names = [s["name"] for s in (last or {}).get("syscalls", [])]
        check(rc == 0 and names == ["write"] and sys_row(last, "write")["calls"] == 100,
              "--syscall-filter write: only the 100 writes", "rc %s %s %s" % (rc, names, err))
        check(counts(last).get("writer") == 1, "--syscall-filter: the function profile is still there",
              last and counts(last))
        # the text view of syscalls, off a terminal
        live = Live(lp, agent.addr, ["--syscalls", "--view", "syscalls", "--interval", "50ms", "--", writer],
                    stdin=subprocess.DEVNULL)
        rc = live.wait()
        text = live.out.text()
        check(rc == 0 and "--- final syscalls" in text and "writer" in text and "\x1b[" not in text,
              "text view of syscalls: plain snapshots with the functions", text[-600:])
        # usage errors
        r = lp("live", "--syscalls=nope", "--", writer)
        check(r.returncode == 2 and "invalid --syscalls 'nope'" in r.stderr, "live --syscalls=nope: exit 2",
              r.stderr)
        r = lp("live", "--syscall-filter", "write", "--", writer)
        check(r.returncode == 2 and "needs --syscalls" in r.stderr, "--syscall-filter alone: exit 2", r.stderr)
        rc, last, err, _ = live_writer(lp, agent, tmp, writer, "auto", "badfilter", "--syscall-filter", "nosuch")
        check(rc == 1 and "unknown syscall 'nosuch'" in err, "an unknown syscall in the filter: the agent's error",
              err)
        group_syscalls_attach(lp, agent, tmp, usable)
    finally:
        agent.stop()


def group_syscalls_attach(lp, agent, tmp, usable):
    """Attaching with --syscalls: killme sleeps between ticks, so its
    clock_nanosleep calls arrive; after quit the program runs on (ptrace
    detaches rather than kills)."""
    b = it.Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    env = dict(os.environ, LD_PRELOAD=os.path.join(lp.libdir, "liblayerprof.so"),
               LAYERPROF_ATTACH_DIR=agent.attach_dir)
    for backend in usable:
        prog = subprocess.Popen([km], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                universal_newlines=True)
        started.append(prog)
        try:
            pid = int(prog.stdout.readline())
            deadline = time.time() + 10
            while not os.path.exists(os.path.join(agent.attach_dir, str(pid))) and time.time() < deadline:
                time.sleep(0.05)
            live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--syscalls=" + backend,
                                         "--attach", str(pid)])
            v = live.wait_view(lambda v: (sys_row(v, "clock_nanosleep") or {}).get("calls", 0) > 10, 20)
            check(v is not None and v.get("syscall_backend") == backend,
                  "attach --syscalls=%s: the program's sleeps arrive" % backend, live.err.text())
            live.say("quit")
            rc = live.wait(20)
            check(rc == 0, "attach --syscalls=%s: quit ends the session" % backend, live.err.text())
            time.sleep(0.3)
            check(prog.poll() is None, "attach --syscalls=%s: the program runs on after the session" % backend)
        finally:
            prog.kill()
            prog.wait()


def group_syscalls_udp(lp, build, tmp):
    """live --udp --syscalls: the syscall records ride the UDP channel with
    the function events; with each usable backend sys_writer's calls arrive
    exactly, every event by datagram, and the loss counts are there (zero).
    A flood of getppid calls under the tracepoint backend overruns the
    kernel's buffers: the lost records are counted in the view, the saved
    trace and the agent's log alike, and none is lost on the network."""
    writer = os.path.join(tmp, "sys_writer_udp")
    spin = os.path.join(tmp, "sys_getppid_udp")
    for src, out in (("sys_writer.c", writer), ("sys_getppid.c", spin)):
        r = it.run(["gcc", "-O2", "-g", "-std=c11", "-pthread", "-finstrument-functions", "-I", it.PROGS,
                    os.path.join(it.PROGS, src), "-o", out])
        if not check(r.returncode == 0, "%s builds" % src, r.stderr):
            return
    usable = [b for b, why in sorted(sys_backends(lp, tmp).items()) if why is None]
    if not usable:
        skip("live --udp --syscalls", "no syscall backend works here")
        return
    agent = Agent(build, tmp, tcp=True)  # UDP: over TCP, with a token
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        for backend in usable:
            what = "--udp --syscalls=" + backend
            (rc, last, err, save), dropped = udp_tries(
                lambda attempt: live_writer(lp, agent, tmp, writer, backend, "udp-%s-%d" % (backend, attempt), "--udp"))
            if dropped:
                skip_overflow(what, last, dropped)
                continue
            if not check(rc == 0 and last and last["final"], "%s: the session ends with exit 0" % what,
                         "rc %s, stderr %s" % (rc, err)):
                continue
            check(last.get("syscall_backend") == backend, "%s: the backend is the one asked for" % what,
                  last.get("syscall_backend"))
            w = sys_row(last, "write")
            check(w and w["calls"] == 100 and w["errors"] == 0 and w["unfinished"] == 0,
                  "%s: 100 write calls arrive, no errors" % what, w)
            f = sys_by_function(last, "writer", "write")
            check(len(f) == 1 and f[0]["calls"] == 100, "%s: attributed to writer" % what, f)
            f = sys_by_function(last, "opener", "openat")
            check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["errors"] == 1,
                  "%s: opener's failing openat arrives" % what, f)
            u = last.get("udp") or {}
            check(u.get("datagrams", 0) > 0 and u.get("events") == u.get("sent_events") == last["events"],
                  "%s: every event came by datagram (%s)" % (what, last["events"]), u)
            check(u.get("lost_datagrams") == 0 and u.get("lost_events") == 0 and last["lost_events"] == 0 and
                  last["lost_at_ns"] is None, "%s: the loss counts are shown, all zero" % what,
                  (u, last["lost_events"], last["lost_at_ns"]))
            r = lp("report", "--syscalls", "--format", "json", save)
            rep = json.loads(r.stdout) if r.returncode == 0 and r.stdout else None
            mine = {(s["name"], s["calls"], s["errors"], s["total_ns"]) for s in last["syscalls"]}
            theirs = {(s["name"], s["calls"], s["errors"], s["total_ns"]) for s in (rep or {}).get("syscalls", [])}
            check(rep is not None and mine == theirs and rep["lost_events"] == 0,
                  "%s: the saved trace agrees with the view" % what,
                  r.stderr or "only in view %s, only in report %s" % (mine - theirs, theirs - mine))
        if "tracepoint" not in usable:
            skip("live --udp --syscalls losses", "the tracepoint backend is refused here")
            return
        calls = 1000000
        for attempt in range(3):  # whether the buffers overflow depends on the machine's load
            save = os.path.join(tmp, "live-sys-udp-flood-%d" % attempt)
            before = udp_rcvbuf_errors()
            live = Live(lp, agent.addr, agent.token_args + ["--format", "json", "--interval", "100ms", "--udp",
                                                            "--syscalls=tracepoint", "--syscall-filter", "getppid",
                                                            "--save", save, "--", spin, str(calls)],
                        stdin=subprocess.DEVNULL)
            rc = live.wait(120)
            last = live.final()
            if not check(rc == 0 and last and last["final"], "--udp getppid flood: the session ends with exit 0",
                         live.err.text()):
                return
            lost = last["lost_events"]
            # datagrams the host's own receive buffer dropped (a slow host):
            # counted, but this is about the kernel's buffers; try again
            dropped = udp_rcvbuf_errors() - before
            overflow = (last.get("udp") or {}).get("lost_datagrams") and dropped >= last["udp"]["lost_datagrams"]
            if lost and not overflow:
                break
        if overflow:
            skip_overflow("live --udp --syscalls losses", last, dropped)
            return
        if not lost:
            skip("live --udp --syscalls losses", "this machine kept up with %d getppid calls, 3 times" % calls)
            return
        g = sys_row(last, "getppid") or {}
        check(g.get("calls", 0) < calls <= g.get("calls", 0) + lost and last["lost_at_ns"] is not None,
              "--udp flood: %d records lost in the kernel, counted; %s calls arrive" % (lost, g.get("calls")),
              (g, lost))
        u = last.get("udp") or {}
        check(u.get("lost_datagrams") == 0 and u.get("lost_events") == 0 and
              u.get("events") == u.get("sent_events") == last["events"],
              "--udp flood: nothing lost on the network", u)
        said = agent.err.wait_for(lambda l: "session %d: " % last["session"] in l and "syscall records lost" in l,
                                  10)
        check(said is not None and ("session %d: %d syscall records lost" % (last["session"], lost)) in said,
              "--udp flood: the agent logs the same %d lost records" % lost, said)
        check("events lost" in live.err.text(), "--udp flood: live warns about the losses", live.err.text())
        rep, r = report_counts(lp, save)
        check(rep is not None and rep["lost_events"] == lost, "--udp flood: the saved trace counts them too",
              rep and rep["lost_events"])
    finally:
        agent.stop()


PRELOAD_SHIM = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Says, in the file named by LPTEST_SHIM_OUT, which program loaded it. */
__attribute__((constructor)) static void shim_loaded(void)
{
    const char *out = getenv("LPTEST_SHIM_OUT");
    char exe[512], line[600];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int fd;

    if (!out || n < 0)
        return;
    exe[n] = '\0';
    fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0)
        return;
    snprintf(line, sizeof(line), "loaded in %s\n", exe);
    if (write(fd, line, strlen(line)) < 0)
        ;
    close(fd);
}
"""


def group_preload(lp, build, tmp):
    """A program the agent starts keeps the LD_PRELOAD of its environment
    (here the agent's): the library is loaded after the runtime, as record
    does, with and without the syscall tracer; the runtime still records."""
    shim = os.path.join(tmp, "shim.so")
    r = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", shim, "-x", "c", "-"], input=PRELOAD_SHIM,
                       universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not check(r.returncode == 0, "build the preload shim", r.stderr):
        return
    b = it.Builder("gcc", "g++", "-O2", tmp)
    rec = b.prog("recursion")
    marks = os.path.join(tmp, "shim-loaded")
    # (a sanitizer build of the agent lets the shim come first)
    agent = Agent(build, tmp, env=dict(os.environ, LD_PRELOAD=shim, LPTEST_SHIM_OUT=marks,
                                       ASAN_OPTIONS="verify_asan_link_order=0"))
    if not check(agent.ok, "agent with LD_PRELOAD in its environment starts", agent.err.text()):
        return
    try:
        for how, extra in (("plain start", []), ("ptrace syscalls", ["--syscalls=ptrace"])):
            if os.path.exists(marks):
                os.unlink(marks)
            live = Live(lp, agent.addr, ["--format", "json"] + extra + ["--", rec], stdin=subprocess.DEVNULL)
            rc = live.wait()
            last = live.final()
            check(rc == 0 and last and last["final"] and counts(last).get("fib", 0) > 0,
                  "%s: the runtime records the program beside its own preload" % how,
                  "rc %s, stderr %s" % (rc, live.err.text()))
            lines = open(marks).read().splitlines() if os.path.exists(marks) else []
            check("loaded in %s" % os.path.realpath(rec) in lines,
                  "%s: the program's own LD_PRELOAD library is loaded" % how, str(lines))
    finally:
        agent.stop()


def group_dynamic(lp, build, tmp):
    """live --dynamic: the agent traces a program built without
    instrumentation as record --dynamic does (in-process patching on
    x86-64, else uprobes): exact counts in the view and in the saved trace,
    a choice of functions, user -> syscall with --syscalls, and the
    refusals (C++, --attach)."""
    if os.uname().machine != "x86_64" and (os.geteuid() != 0 or
                                           not os.path.exists("/sys/bus/event_source/devices/uprobe")):
        skip("live --dynamic", "uprobes need root and a kernel with them")
        return
    progs = {}
    for name, src, cc in (("recursion", "recursion.c", "gcc"), ("sys_writer", "sys_writer.c", "gcc"),
                          ("exceptions", "exceptions.cc", "g++")):
        progs[name] = os.path.join(tmp, "plain-" + name)
        r = it.run([cc, "-O2", "-g", "-pthread", "-I", it.PROGS, os.path.join(it.PROGS, src), "-o", progs[name]])
        if not check(r.returncode == 0, "%s builds without instrumentation" % name, r.stderr):
            return
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        save = os.path.join(tmp, "live-dyn")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic", "--save", save]
                    + agent.token_args + ["--", progs["recursion"]], stdin=subprocess.DEVNULL)
        rc = live.wait()
        last = live.final()
        check(rc == 0 and last and last["final"] and counts(last).get("fib") == 1973 and
              counts(last).get("main") == 1, "live --dynamic of a plain recursion: fib 1973, main 1 in the view",
              "rc %s, %s, %s" % (rc, counts(last), live.err.text()[-300:]))
        rep, _ = report_counts(lp, save)
        got = counts(rep)
        check(got.get("fib") == 1973 and got.get("main") == 1, "the saved trace: fib 1973, main 1", got)
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic=fi*"]
                    + agent.token_args + ["--", progs["recursion"]], stdin=subprocess.DEVNULL)
        rc = live.wait()
        check(rc == 0 and counts(live.final()) == {"fib": 1973}, "live --dynamic='fi*': fib alone",
              counts(live.final()))
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic", "--syscalls",
                                     "--syscall-filter", "write"] + agent.token_args + ["--", progs["sys_writer"]],
                    stdin=subprocess.DEVNULL)
        rc = live.wait()
        f = sys_by_function(live.final(), "writer", "write") if live.final() else []
        check(rc == 0 and len(f) == 1 and f[0]["calls"] == 100,
              "live --dynamic --syscalls: the 100 writes of a plain sys_writer attributed to writer",
              "rc %s, %s %s" % (rc, f, live.err.text()[-300:]))
        if os.uname().machine == "x86_64":
            # user -> library -> syscall, nothing rebuilt; and a library's
            # own function by FILE:GLOB
            live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic=writer,libc.so.6:write",
                                         "--libcalls", "--syscalls", "--syscall-filter", "write"] +
                        agent.token_args + ["--", progs["sys_writer"]], stdin=subprocess.DEVNULL)
            rc = live.wait()
            last = live.final()
            f = sys_by_function(last, "write", "write") if last else []
            check(rc == 0 and last and counts(last).get("write@plt") == 100 and counts(last).get("writer") == 1 and
                  len(f) == 1 and f[0]["calls"] == 100,
                  "live --dynamic=writer,libc.so.6:write --libcalls --syscalls: write@plt 100, libc's write with "
                  "the 100 write syscalls", "rc %s, %s %s" % (rc, counts(last) if last else None, f))
        # a program that execs another: its runtime asks for a plan, which
        # the agent makes with the session's patterns
        src = os.path.join(tmp, "execs.c")
        second = os.path.join(tmp, "second")
        with open(src, "w") as f:
            f.write('#include <stdio.h>\n#include <unistd.h>\n__attribute__((noinline)) int before(int x) '
                    '{ __asm__ volatile("" : "+r"(x)); return x + 1; }\nint main(void) { if (before(1) != 2) '
                    'return 1; fflush(stdout); execl("%s", "second", (char *)NULL); return 1; }\n' % second)
        with open(second + ".c", "w") as f:
            f.write('__attribute__((noinline)) int after(int x) { __asm__ volatile("" : "+r"(x)); return x + 1; }\n'
                    'int main(void) { int s = 0; for (int i = 0; i < 3; i++) s = after(s); return s - 3; }\n')
        execs = os.path.join(tmp, "execs")
        r = it.run(["gcc", "-O2", "-g", src, "-o", execs])
        r2 = it.run(["gcc", "-O2", "-g", second + ".c", "-o", second])
        if check(r.returncode == 0 and r2.returncode == 0, "execs builds without instrumentation",
                 r.stderr + r2.stderr):
            t0 = time.monotonic()
            live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic=before,after"] +
                        agent.token_args + ["--", execs], stdin=subprocess.DEVNULL)
            rc = live.wait()
            last = live.final()
            check(rc == 0 and last and counts(last).get("before") == 1 and counts(last).get("after") == 3,
                  "live --dynamic of a program that execs another: before traced, then the exec'd program's "
                  "after 3 times (planned by the agent with the session's patterns), exit 0",
                  "rc %s, %s %s" % (rc, counts(last) if last else None, live.err.text()[-300:]))
            check(time.monotonic() - t0 < 30, "live --dynamic of a program that execs another: no long wait")
        live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--dynamic"] + agent.token_args +
                    ["--", progs["exceptions"]], stdin=subprocess.DEVNULL)
        rc = live.wait()
        if os.uname().machine == "x86_64":
            # patched: the exceptions unwind through the traced frames
            last = live.final()
            check(rc == 0 and last and counts(last).get("thrower(int)") == 20 and
                  counts(last).get("catcher(int)") == 4,
                  "live --dynamic of a C++ program with exceptions: thrower 20, catcher 4",
                  "rc %s, %s" % (rc, live.err.text()[-300:]))
        else:
            check(rc == 1 and "C++ exceptions" in live.err.text(),
                  "live --dynamic of a C++ program: exit 1, the reason", "rc %s, %s" % (rc, live.err.text()[-300:]))
        r = lp("live", "--connect", agent.addr, "--attach", "1", "--dynamic", "--libcalls")
        check(r.returncode == 2 and "--libcalls needs the patch backend" in r.stderr and "not with --attach" in r.stderr,
              "live --attach --dynamic --libcalls: usage error", "%d %s" % (r.returncode, r.stderr))
    finally:
        agent.stop()


def uprobes_unusable():
    """Why this machine cannot attach by uprobes, or None."""
    if os.geteuid() != 0:
        return "uprobes need root"
    if not os.path.exists("/sys/bus/event_source/devices/uprobe/type"):
        return "the kernel has no uprobe PMU"
    return None


def uprobe_events():
    """The probe definitions in tracefs's uprobe_events ("" when unreadable)."""
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        try:
            with open(os.path.join(root, "uprobe_events")) as f:
                return f.read()
        except OSError:
            pass
    return ""


def elf_loads(path):
    """[(vaddr, offset, filesz)] of the PT_LOAD segments of an ELF64 file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return []
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            out.append((p_vaddr, p_offset, p_filesz))
    return out


def code_functions(path):
    """{name: address in the file} of the functions nm lists in path."""
    r = it.run(["nm", "--defined-only", path])
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "Tt":
            out[parts[2]] = int(parts[0], 16)
    return out


def code_changes(pid, path, names=None, size=16):
    """The functions of path (those of names, or all) whose first size
    bytes in process pid differ from the file's: {name: (file, process)};
    None when the process's mapping of path cannot be read."""
    loads = elf_loads(path)
    real = os.path.realpath(path)
    start = None
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real and int(fields[2], 16) == 0:
                start = int(fields[0].split("-")[0], 16)
                break
    if start is None or not loads:
        return None
    bias = start - (loads[0][0] & ~0xfff)
    changed = {}
    with open(path, "rb") as exe, open("/proc/%d/mem" % pid, "rb") as mem:
        for name, addr in code_functions(path).items():
            if names is not None and name not in names:
                continue
            seg = [s for s in loads if s[0] <= addr < s[0] + s[2]]
            if not seg:
                continue
            exe.seek(addr - seg[0][0] + seg[0][1])
            mem.seek(bias + addr)
            a, b = exe.read(size), mem.read(size)
            if a != b:
                changed[name] = (a.hex(), b.hex())
    return changed


class Plain:
    """A program started here, outside layerprof, its standard input a pipe
    for commands; its output lines collected."""

    def __init__(self, argv, wrap=(), env=None):
        self.p = subprocess.Popen(list(wrap) + list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, env=env)
        started.append(self.p)
        self.pid = self.p.pid
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def said(self, line, timeout=WAIT):
        return self.out.wait_for(lambda l: l == line, timeout) is not None

    def end(self):
        """Closes its input: its exit status (None after WAIT: killed)."""
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.out.t.join(5)
        self.err.t.join(5)
        return rc


def waits_for_input(pid, timeout=WAIT):
    """Whether process pid's main thread comes to wait in a read of its
    standard input (cmdloop: in serve_one) within timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/syscall" % pid) as f:
                fields = f.read().split()
        except OSError:
            return False
        # the read syscall's number on x86-64 (0) and aarch64 (63), on fd 0
        if len(fields) > 1 and fields[0] == {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine) and \
                int(fields[1], 16) == 0:
            return True
        time.sleep(0.01)
    return False


def wait_until(pred, timeout):
    """pred's first true value within timeout, or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return None


def thread_rows(lp, trace):
    """report -t on a trace: ({tid: thread}, {tid: {name: calls}}), or
    (None, None)."""
    rep, _ = report_counts(lp, trace, "--per-thread")
    if rep is None:
        return None, None
    threads = {t["tid"]: t for t in rep["threads"]}
    calls = {}
    for f in rep["functions"]:
        calls.setdefault(f["tid"], {})[f["name"]] = f["calls"]
    return threads, calls


def event_counts(lp, trace):
    """{tid: {(type, name, unfinished): n}} from replay --format json."""
    r = lp("replay", "--format", "json", trace)
    if r.returncode != 0 or not r.stdout:
        return None
    out = {}
    for t in json.loads(r.stdout)["threads"]:
        c = out.setdefault(t["tid"], {})
        for e in t["events"]:
            k = (e["type"], e.get("name"), bool(e.get("unfinished")))
            c[k] = c.get(k, 0) + 1
    return out


def attach_probes(lp, agent, pid, save, extra=()):
    """live --attach PID --dynamic: the session, whether it said it was
    attached (the probes are in the program then), and the seconds that
    took."""
    t0 = time.monotonic()
    live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--save", save, "--attach", str(pid),
                                 "--dynamic"] + agent.token_args + list(extra))
    ready = live.err.wait_for(lambda l: "attached to process %d by uprobes" % pid in l, WAIT) is not None
    return live, ready, time.monotonic() - t0


def detach_checks(lp, agent, live, prog, exe, what, log_from):
    """After `quit`: the session ended well and, by the time live has
    exited, the probes are gone from tracefs and from the program's code."""
    rc = live.wait()
    probes = [l for l in uprobe_events().splitlines() if os.path.realpath(exe) in l]
    changed = code_changes(prog.pid, exe)
    check(rc == 0 and "the agent closed the session" not in live.err.text(),
          "%s: live quits with 0" % what, "rc %s %s" % (rc, live.err.text()[-400:]))
    check(not probes, "%s: once live has quit, no probe on the program is left in uprobe_events" % what, probes)
    check(changed == {}, "%s: once live has quit, every function's first bytes in the running program are the "
          "file's again" % what, changed)
    line, _ = agent_said(agent, lambda l: "probes taken out of pid %d" % prog.pid in l, log_from, WAIT)
    check(line is not None, "%s: the agent says it took the probes out" % what, agent.err.text()[-400:])


def group_attach_dynamic(lp, build, tmp):
    """live --attach PID --dynamic: a program built plain with gcc -O2 (PIE,
    no runtime), started here, traced by uprobes from its command on:
    exact calls per thread (threads that ran before the attach too), no
    exit of a call under way at the attach; at `quit` the probes leave
    uprobe_events and the program's code, which runs on to an output and
    exit status as without layerprof.  A program that ends during the
    session ends it.  The refusals: --libcalls, no such process, a deleted
    or replaced file, a second attach, and an agent that is not root."""
    why = uprobes_unusable()
    if why:
        skip("live --attach --dynamic", why)
        return
    exe = os.path.join(tmp, "cmdloop-plain")
    r = it.run(["gcc", "-O2", "-pthread", "-I", it.PROGS, os.path.join(it.PROGS, "cmdloop.c"), "-o", exe])
    if not check(r.returncode == 0, "cmdloop builds plain (gcc -O2, no instrumentation)", r.stderr):
        return
    r = it.run(["readelf", "-h", exe])
    check("DYN" in r.stdout, "cmdloop is a PIE: its probes' addresses need the load bias", r.stdout)
    # the outputs without layerprof
    ref = {}
    for args, feed in (((), "100\n5\n"), (("2",), "50\n7\n"), ((), "3\n")):
        r = subprocess.run([exe] + list(args), input=feed, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=WAIT)
        ref[(args, feed)] = (r.returncode, r.stdout, r.stderr)
    check(ref[((), "100\n5\n")] == (0, "ready 0\ndone 100\ndone 5\nbye 105\n", ""),
          "cmdloop without layerprof: its output", ref[((), "100\n5\n")])
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    progs = []
    try:
        # ---- one thread
        prog = Plain([exe])
        progs.append(prog)
        check(prog.said("ready 0"), "cmdloop runs")
        save = os.path.join(tmp, "attach-dyn-1")
        log_from = agent.err.count()
        live, ready, secs = attach_probes(lp, agent, prog.pid, save)
        check(ready, "attach by uprobes: the session is ready (%.2f s)" % secs, live.err.text()[-400:])
        changed = code_changes(prog.pid, exe, {"f", "g"})
        check(changed is not None and set(changed) == {"f", "g"},
              "attached: f and g begin with a breakpoint in the running program", changed)
        prog.send("100")
        check(prog.said("done 100") and waits_for_input(prog.pid),
              "the attached program runs its command, and waits for the next in serve_one")
        live.say("quit")
        detach_checks(lp, agent, live, prog, exe, "one thread", log_from)
        last = live.final()
        check(last and counts(last).get("f") == 100 and counts(last).get("g") == 100,
              "the view: f 100, g 100", counts(last))
        threads, calls = thread_rows(lp, save)
        check(threads is not None and list(threads) == [prog.pid] and
              threads[prog.pid]["unmatched_exits"] == 0,
              "the saved trace: one thread, no exit without its entry", threads)
        got = (calls or {}).get(prog.pid, {})
        check(got.get("f") == 100 and got.get("g") == 100 and got.get("serve_one") == 1 and "main" not in got,
              "the saved trace: f 100, g 100 on the program's thread; serve_one once (entered after the command), "
              "main never", got)
        ev = (event_counts(lp, save) or {}).get(prog.pid, {})
        check(ev.get(("exit", "f", False)) == 100 and ev.get(("exit", "g", False)) == 100 and
              ev.get(("exit", "serve_one", False)) is None and ev.get(("exit", "serve_one", True)) == 1,
              "replay: 100 exits of f and of g; serve_one's exit neither for the call under way at the attach nor "
              "for the one under way at the end (unfinished)", ev)
        prog.send("5")
        check(prog.said("done 5"), "after the session: the program runs a command")
        rc = prog.end()
        check((rc, prog.out.text() + "\n", prog.err.text()) == ref[((), "100\n5\n")],
              "after the session: output and exit status as without layerprof",
              (rc, prog.out.text(), prog.err.text()))

        # ---- two threads that run before the attach
        prog = Plain([exe, "2"])
        progs.append(prog)
        check(prog.said("ready 2"), "cmdloop 2 runs")
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % prog.pid))
        workers = [t for t in tids if t != prog.pid]
        check(len(workers) == 2, "cmdloop 2 has its two worker threads", tids)
        save = os.path.join(tmp, "attach-dyn-2")
        log_from = agent.err.count()
        live, ready, secs = attach_probes(lp, agent, prog.pid, save)
        check(ready, "threads: the session is ready", live.err.text()[-400:])
        prog.send("50")
        check(prog.said("done 50"), "threads: the command runs")
        live.say("quit")
        detach_checks(lp, agent, live, prog, exe, "threads", log_from)
        threads, calls = thread_rows(lp, save)
        per = {t: (calls or {}).get(t, {}) for t in tids}
        check(all(per[t].get("f") == 50 and per[t].get("g") == 50 for t in workers) and
              "f" not in per[prog.pid], "threads: f 50, g 50 on each worker thread, none on main", per)
        check(threads is not None and all(t["unmatched_exits"] == 0 for t in threads.values()),
              "threads: no exit without its entry (the workers' loop was under way)", threads)
        prog.send("7")
        check(prog.said("done 7"), "threads, after the session: the program runs a command")
        rc = prog.end()
        check((rc, prog.out.text() + "\n", prog.err.text()) == ref[(("2",), "50\n7\n")],
              "threads, after the session: output and exit status as without layerprof",
              (rc, prog.out.text(), prog.err.text()))

        # ---- the program ends during the session
        prog = Plain([exe])
        progs.append(prog)
        check(prog.said("ready 0"), "cmdloop runs (to end during the session)")
        save = os.path.join(tmp, "attach-dyn-3")
        live, ready, _ = attach_probes(lp, agent, prog.pid, save)
        check(ready, "ends: the session is ready", live.err.text()[-400:])
        prog.send("3")
        check(prog.said("done 3"), "ends: the command runs")
        prog.p.stdin.close()  # it ends; a zombie until we wait for it
        rc = live.wait()
        last = live.final()
        check(rc == 0 and last and last["final"] and any(e["pid"] == prog.pid for e in last.get("exited", [])) and
              counts(last).get("f") == 3,
              "ends: the program's end ends the session (exit 0, the pid among the exited, f 3)",
              "rc %s %s %s" % (rc, last and last.get("exited"), live.err.text()[-300:]))
        check("process %d ended (exit status unknown)" % prog.pid in live.err.text(),
              "ends: live says the program ended, its status unknown (not the agent's child)", live.err.text()[-300:])
        rc = prog.end()
        check((rc, prog.out.text() + "\n", prog.err.text()) == ref[((), "3\n")],
              "ends: output and exit status as without layerprof", (rc, prog.out.text()))
        check(os.path.realpath(exe) not in uprobe_events(), "ends: no probe on the program is left in uprobe_events")

        # ---- with its system calls: the write of a command's "done" line
        # comes from serve_one, entered after the attach for the second
        # command only
        prog = Plain([exe])
        progs.append(prog)
        check(prog.said("ready 0"), "cmdloop runs (with --syscalls)")
        save = os.path.join(tmp, "attach-dyn-sys")
        log_from = agent.err.count()
        live, ready, _ = attach_probes(lp, agent, prog.pid, save, ["--syscalls", "--syscall-filter", "write"])
        check(ready, "--syscalls: the session is ready", live.err.text()[-400:])
        prog.send("3")
        check(prog.said("done 3") and waits_for_input(prog.pid), "--syscalls: the first command runs")
        prog.send("4")
        check(prog.said("done 4") and waits_for_input(prog.pid), "--syscalls: the second command runs")
        live.say("quit")
        detach_checks(lp, agent, live, prog, exe, "--syscalls", log_from)
        r = lp("report", "--syscalls", "--format", "json", save)
        rep = json.loads(r.stdout) if r.returncode == 0 and r.stdout else {}
        by = {(f["function"], f["syscall"]): f["calls"] for f in rep.get("by_function", [])}
        check(by.get(("serve_one", "write")) == 1 and sum(v for (_, sc), v in by.items() if sc == "write") == 2,
              "--syscalls: two writes, the one made in the serve_one call entered after the attach attributed to it",
              by)
        check(prog.end() == 0, "--syscalls: the program ends with 0 after the session")

        # ---- the agent stops during the session: the probes go too
        prog = Plain([exe])
        progs.append(prog)
        check(prog.said("ready 0"), "cmdloop runs (the agent to stop)")
        agent2 = Agent(build, tmp)
        live, ready, _ = attach_probes(lp, agent2, prog.pid, os.path.join(tmp, "attach-dyn-stop"))
        check(ready, "agent stop: the session is ready", live.err.text()[-400:])
        agent2.stop()
        rc = live.wait()
        check(agent2.p.returncode == 0 and os.path.realpath(exe) not in uprobe_events() and
              code_changes(prog.pid, exe) == {},
              "the agent stopped (SIGTERM) during the session: it took the probes out, the code is the file's",
              "agent rc %s, live rc %s" % (agent2.p.returncode, rc))
        prog.send("6")
        check(prog.said("done 6") and prog.end() == 0, "agent stop: the program runs on and ends with 0")

        # ---- a program with the runtime, attachable the old way too:
        # --dynamic means probes all the same; its runtime is left alone
        km = it.Builder("gcc", "g++", "-O2", tmp).prog("killme")
        env = dict(os.environ, LD_PRELOAD=os.path.join(lp.libdir, "liblayerprof.so"),
                   LAYERPROF_ATTACH_DIR=agent.attach_dir)
        prog = Plain([km], env=env)
        progs.append(prog)
        entry = os.path.join(agent.attach_dir, str(prog.pid))
        if check(prog.out.wait_for(lambda l: l == str(prog.pid), WAIT) is not None and
                 wait_until(lambda: os.path.exists(entry), WAIT), "killme runs, attachable (its runtime registered)"):
            log_from = agent.err.count()
            live, ready, _ = attach_probes(lp, agent, prog.pid, os.path.join(tmp, "attach-dyn-rt"))
            line, _ = agent_said(agent, lambda l: "attached to pid %d by uprobes" % prog.pid in l, log_from, WAIT)
            v = live.wait_view(lambda v: counts(v).get("tick", 0) > 0, WAIT)
            check(ready and line is not None and v is not None,
                  "a program with the runtime, --attach --dynamic: traced by uprobes (ticks arrive)",
                  live.err.text()[-300:])
            live.say("quit")
            rc = live.wait()
            check(rc == 0 and os.path.isdir(entry) and code_changes(prog.pid, km) == {},
                  "after the session: its attach directory entry is still there, its code the file's",
                  "rc %s %s" % (rc, code_changes(prog.pid, km)))
            live = Live(lp, agent.addr, ["--format", "json", "--interval", "100ms", "--attach", str(prog.pid),
                                         "--duration", "300ms"])
            v = live.wait_view(lambda v: counts(v).get("tick", 0) > 0, WAIT)
            rc = live.wait()
            check(v is not None and rc == 0, "then attached the old way, through its runtime: ticks arrive",
                  "rc %s %s" % (rc, live.err.text()[-300:]))

        # ---- refusals
        r = lp("live", "--connect", agent.addr, "--attach", str(os.getpid()), "--dynamic", "--libcalls")
        check(r.returncode == 2 and "--libcalls needs the patch backend" in r.stderr,
              "--attach --dynamic --libcalls: exit 2, the reason", "%d %s" % (r.returncode, r.stderr))
        r = lp("live", "--connect", agent.addr, "--attach", str(os.getpid()), "--dynamic", "--memory")
        check(r.returncode == 2 and "--memory with --attach --dynamic" in r.stderr,
              "--attach --dynamic --memory: exit 2, the reason", "%d %s" % (r.returncode, r.stderr))
        live = Live(lp, agent.addr, ["--attach", "999999999", "--dynamic"], stdin=subprocess.DEVNULL)
        rc = live.wait()
        check(rc == 1 and "cannot attach to process 999999999: no process 999999999" in live.err.text(),
              "--attach --dynamic to no such process: exit 1, the reason", "rc %s %s" % (rc, live.err.text()))
        for how in ("deleted", "replaced"):
            copy = os.path.join(tmp, "cmdloop-" + how)
            shutil.copy(exe, copy)
            prog = Plain([copy])
            progs.append(prog)
            check(prog.said("ready 0"), "%s: the copy runs" % how)
            if how == "deleted":
                os.unlink(copy)
            else:
                shutil.copy(exe, copy + ".new")
                os.rename(copy + ".new", copy)
            live = Live(lp, agent.addr, ["--attach", str(prog.pid), "--dynamic"], stdin=subprocess.DEVNULL)
            rc = live.wait()
            check(rc == 1 and "cannot attach to process %d: dynamic: process %d runs '%s', deleted or replaced since "
                  "it started" % (prog.pid, prog.pid, copy) in live.err.text(),
                  "a program whose file was %s: exit 1, the reason" % how, "rc %s %s" % (rc, live.err.text()))
            prog.send("2")
            check(prog.said("done 2") and prog.end() == 0, "%s: the program runs on untouched" % how)
        attach_not_root(lp, build, exe, progs)
    finally:
        for prog in progs:
            kill_pid(prog.pid)
            prog.p.wait()
        agent.stop()


def attach_not_root(lp, build, exe, progs):
    """An agent run as nobody refuses: another user's program, and its own
    user's (uprobes need root)."""
    wrap = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if shutil.which("setpriv") is None or subprocess.run(wrap + ["true"]).returncode != 0:
        skip("attach by an agent that is not root", "cannot run as nobody (setpriv)")
        return
    d = tempfile.mkdtemp(prefix="layerprof-nobody-")
    try:
        os.chmod(d, 0o755)
        pw = subprocess.run(["id", "-u", "nobody"], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        gid = subprocess.run(["id", "-g", "nobody"], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        os.chown(d, int(pw), int(gid))
        tok = os.path.join(d, "token")
        subprocess.run([os.path.join(build, "agent", "layerprofd"), "--gen-token", tok], stdout=subprocess.DEVNULL,
                       check=True)
        os.chown(tok, int(pw), int(gid))
        mine = os.path.join(d, "cmdloop")
        shutil.copy(exe, mine)
        os.chmod(mine, 0o755)
        agent = Agent(build, d, args=["--token-file", tok], tcp=True, wrap=wrap)
        if not check(agent.ok, "an agent as nobody starts", agent.err.text()):
            agent.stop()
            return
        try:
            root_prog = Plain([exe])
            nobody_prog = Plain([mine], wrap=wrap)
            progs += [root_prog, nobody_prog]
            check(root_prog.said("ready 0") and nobody_prog.said("ready 0"), "root's and nobody's cmdloop run")
            for prog, want, what in (
                    (root_prog, "process %d is another user's (uid 0): an agent that is not root attaches only to "
                     "its own user's programs" % root_prog.pid, "root's program"),
                    (nobody_prog, "dynamic: attaching to a running program needs root and the kernel's uprobe PMU "
                     "(the agent runs as uid %s)" % pw, "its own user's program")):
                live = Live(lp, agent.addr, ["--attach", str(prog.pid), "--dynamic"] + agent.token_args,
                            stdin=subprocess.DEVNULL)
                rc = live.wait()
                check(rc == 1 and ("cannot attach to process %d: %s" % (prog.pid, want)) in live.err.text(),
                      "an agent that is not root, --attach --dynamic to %s: exit 1, the reason" % what,
                      "rc %s %s" % (rc, live.err.text()))
        finally:
            agent.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


GROUPS = {
    "basic": group_basic,
    "attach_dynamic": group_attach_dynamic,
    "dynamic": group_dynamic,
    "control": group_control,
    "auth": group_auth,
    "faults": group_faults,
    "cli": group_cli,
    "filters": group_filters,
    "names": group_names,
    "attach": group_attach,
    "ipv6": group_ipv6,
    "lost": group_lost,
    "paths": group_paths,
    "udp": group_udp,
    "queue": group_queue,
    "syscalls": group_syscalls,
    "syscalls_udp": group_syscalls_udp,
    "preload": group_preload,
}


def setup(build):
    if not os.access(os.path.join(build, "agent", "layerprofd"), os.X_OK):
        skip("live", "no agent at %s/agent/layerprofd" % build)
        return None
    return it.Layerprof(build), build


def main():
    return harness.run_groups(GROUPS, setup, "layerprof-live-")


if __name__ == "__main__":
    sys.exit(main())
