#!/usr/bin/env python3
"""The OS-call timing suite run by the agent for a host (OSCAL,
docs/protocol.md): a real layerprofd on a free loopback port with a token.

Groups:
  protocol  a stand-in suite (a script named by LAYERPROF_OSCAL in the
            agent's environment, which logs what it was given): the
            options become exactly the suite's arguments (list=1 its
            --list); its output comes back byte for byte, in whole lines,
            20000 lines and one longer than a frame included; the exit
            STATUS (status, signal, the last stderr line); a second OSCAL
            while one runs gets ERROR busy, a second host ERROR busy; a
            program STARTed meanwhile is served and the output goes on.
  hostgone  the host that asked goes away mid-run (its socket closed):
            the suite and the child it made are gone and reaped, SIGTERM
            first (the suite cleans up), SIGKILL for one that ignores it;
            the next host runs the suite.
  attacker  as the attacker would: OSCAL before AUTH, after a wrong or no
            MAC, as an oversized first frame, as nobody on the UNIX
            socket (root only); an authenticated host's options outside
            the known keys or forms (a shell command, a path, an unknown
            key, a key twice, a NUL, too long); 20 peers that never
            authenticate do not keep the host from the suite.  Each gets
            ERROR or the close, and the suite never runs.
  nosuite   no usable suite (not executable; a file or directory others
            may change, at the start or later): no `oscal` in HELLO, a
            warning, ERROR no suite; `oscal run --connect` says so in one
            line, exit 1.
  remote    the real suite (build/oscal/layerprof-oscal beside the agent)
            through `layerprof oscal run --connect` (skipped while the
            suite or the option are not built): a calibration with getpid
            and read measured, `source` naming the agent, the machine
            from the suite; usage errors; a wrong token: one line, exit 1;
            a second host: busy, exit 1; the host killed mid-run: the
            suite is gone and the next host is served; SIGINT: exit 130,
            complete:false, then --resume --connect completes it; over
            the UNIX socket without a token.
  client    the host's side against a stand-in agent: CONTROL tracing=off,
            OSCAL list=1, then the run's options and BYE; the suite's
            lines cut anywhere across frames are put together again (the
            calibration holds every sample); the suite's exit 3 with its
            stderr, ERROR busy, the agent gone mid-run, a silent agent:
            each one line, exit 1.

usage: test_oscal_remote.py --build BUILD_DIR [GROUP...]
Prints one line per check and ends with 'N passed, N failed'."""

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import lpwire  # noqa: E402
from harness import check, skip  # noqa: E402

started = harness.started
WAIT = 30  # seconds any one step may take (a loaded machine)

# A stand-in for layerprof-oscal: logs its arguments and pid, then acts
# after its --calls value: hang (with a child, cleans up on SIGTERM),
# stubborn (ignores SIGTERM), big (many lines and one long one), bad (a
# usage error), crash (killed by a signal), else a small valid output.
FAKE_SUITE = r'''#!/usr/bin/env python3
import json, os, signal, subprocess, sys, time
d = os.environ["FAKE_OSCAL_DIR"]
with open(os.path.join(d, "runs"), "a") as f:
    f.write(json.dumps({"pid": os.getpid(), "pgid": os.getpgrp(), "argv": sys.argv[1:]}) + "\n")
calls = ""
prev = None
for a in sys.argv[1:]:
    if prev == "--calls":
        calls = a
    prev = a
out = sys.stdout
if "--list" in sys.argv:
    out.write("getpid getpid - proc - - getpid(2)\nread read file file bytes B read(2) of a file\n")
    sys.exit(0)
out.write("layerprof-oscal 1\n")
out.write("machine arch=fake cpus=1 kernel=k libc=l host=h cpu=a fake cpu\n")
out.flush()
if calls in ("hang", "stubborn"):
    child = subprocess.Popen(["sleep", "1000"])
    def cleanup(sig, frame):
        open(os.path.join(d, "cleaned"), "w").close()
        sys.exit(143)
    signal.signal(signal.SIGTERM, cleanup if calls == "hang" else signal.SIG_IGN)
    with open(os.path.join(d, "hang.pids.tmp"), "w") as f:
        f.write("%d %d\n" % (os.getpid(), child.pid))
    os.rename(os.path.join(d, "hang.pids.tmp"), os.path.join(d, "hang.pids"))
    n = 0
    while True:
        out.write("sample hang %d 1 2 3\n" % n)
        out.flush()
        n += 1
        time.sleep(0.2)
if calls == "bad":
    sys.stderr.write("first line of stderr\nlayerprof-oscal: no entry matches 'bad'\n")
    sys.exit(2)
if calls == "crash":
    out.write("entry crash call=x cond=- group=g param=- unit=- reps=1 warmup=0 desc=d\n")
    out.flush()
    os.kill(os.getpid(), signal.SIGKILL)
if calls == "big":
    for i in range(20000):
        out.write("sample big %d %s\n" % (i, " ".join(str(i + k) for k in range(8))))
    out.write("sample long 1 " + " ".join(str(k) for k in range(40000)) + "\n")
    out.write("done measured=1 skipped=0 failed=0")  # no newline at the very end
    sys.exit(0)
for name in (calls or "getpid").split(","):
    out.write("entry %s call=%s cond=- group=g param=- unit=- reps=3 warmup=0 desc=a fake\n" % (name, name))
    out.write("sample %s 0 10 11 12\nend %s\n" % (name, name))
out.write("done measured=%d skipped=0 failed=0\n" % len((calls or "getpid").split(",")))
'''


def wait_until(pred, timeout=WAIT):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def gone(pid):
    """The process is reaped (not even a zombie is left)."""
    return not os.path.exists("/proc/%d" % pid)


class Agent:
    """layerprofd on a free loopback port with a token (and on a UNIX
    socket in tmp); env: its environment's additions."""

    def __init__(self, build, tmp, env=None, unix=False):
        exe = os.path.join(build, "agent", "layerprofd")
        self.token_file = os.path.join(tmp, "token")
        if not os.path.exists(self.token_file):
            subprocess.run([exe, "--gen-token", self.token_file], stdout=subprocess.DEVNULL, check=True)
        with open(self.token_file) as f:
            self.token = f.readline().strip()
        full_env = dict(os.environ)
        full_env.pop("LAYERPROF_OSCAL", None)
        full_env.update(env or {})
        for _ in range(3):  # another process may take the free port first
            self.port = harness.free_port()
            self.addr = "127.0.0.1:%d" % self.port
            args = [exe, "--listen", self.addr, "--token-file", self.token_file, "--attach-dir",
                    os.path.join(tmp, "attach")]
            self.socket = None
            if unix:
                self.socket = os.path.join(tmp, "agent-%d.sock" % self.port)
                args += ["--unix", self.socket]
            self.log = os.path.join(tmp, "agent-%d.log" % self.port)
            with open(self.log, "w") as logf:
                self.p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=full_env)
            started.append(self.p)
            self.ok = wait_until(lambda: "listening on" in self.text() or self.p.poll() is not None, WAIT) and \
                self.p.poll() is None
            if self.ok or "Address already in use" not in self.text():
                break

    def text(self):
        with open(self.log) as f:
            return f.read()

    def client(self, token=True):
        """An authenticated connection (waits while the agent still sees
        the previous host)."""
        c, ftype, payload = lpwire.connect_when_free("127.0.0.1", self.port, self.token if token else None,
                                                     wait=WAIT)
        return c, ftype, payload

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Fake:
    """The stand-in suite in its own directory, for one agent."""

    def __init__(self, tmp, name):
        self.dir = os.path.join(tmp, name)
        os.mkdir(self.dir)
        self.exe = os.path.join(self.dir, "fake-oscal")
        with open(self.exe, "w") as f:
            f.write(FAKE_SUITE)
        os.chmod(self.exe, 0o755)
        self.env = {"LAYERPROF_OSCAL": self.exe, "FAKE_OSCAL_DIR": self.dir}

    def runs(self):
        try:
            with open(os.path.join(self.dir, "runs")) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def path(self, name):
        return os.path.join(self.dir, name)

    def hang_pids(self):
        with open(self.path("hang.pids")) as f:
            return [int(x) for x in f.read().split()]

    def reset(self):
        for name in ("hang.pids", "cleaned"):
            if os.path.exists(self.path(name)):
                os.unlink(self.path(name))


def request(opts):
    return "".join("%s=%s\n" % kv for kv in opts).encode()


def run_suite(c, payload, timeout=WAIT):
    """Sends OSCAL and reads until the suite's end or an ERROR.  Returns
    (OSCALDATA payloads, the oscal_exit STATUS as a dict or None, the
    ERROR's text or None)."""
    c.send(lpwire.OSCAL, payload)
    return follow(c, timeout)


def follow(c, timeout=WAIT):
    data = []
    end = time.time() + timeout
    c.sock.settimeout(1.0)
    try:
        while time.time() < end:
            try:
                ftype, p = c.recv()
            except socket.timeout:
                c.send(lpwire.HEARTBEAT)
                continue
            if ftype == lpwire.OSCALDATA:
                data.append(p)
            elif ftype == lpwire.STATUS and lpwire.kv(p).get("event") == "oscal_exit":
                return data, lpwire.kv(p), None
            elif ftype == lpwire.ERROR:
                return data, None, p.decode(errors="replace")
    finally:
        c.sock.settimeout(10.0)
    return data, None, "timeout"


def expected_small(names):
    lines = ["layerprof-oscal 1", "machine arch=fake cpus=1 kernel=k libc=l host=h cpu=a fake cpu"]
    for n in names:
        lines += ["entry %s call=%s cond=- group=g param=- unit=- reps=3 warmup=0 desc=a fake" % (n, n),
                  "sample %s 0 10 11 12" % n, "end %s" % n]
    lines.append("done measured=%d skipped=0 failed=0" % len(names))
    return ("\n".join(lines) + "\n").encode()


# ------------------------------------------------------------ protocol

def group_protocol(build, lp, tmp):
    fake = Fake(tmp, "fake-protocol")
    agent = Agent(build, tmp, fake.env)
    if not check(agent.ok, "agent with a stand-in suite starts", agent.text()):
        return
    try:
        c, ftype, payload = agent.client()
        check(ftype == lpwire.WELCOME, "the host is let in", payload)
        protocol_run(agent, fake, c)
        protocol_busy(agent, fake, c, build)
    finally:
        agent.stop()


def protocol_run(agent, fake, c):
    opts = [("calls", "getpid,read"), ("quick", "1"), ("reps", "5"), ("warmup", "1"), ("skip", "a-b,c_d")]
    data, st, err = run_suite(c, request(opts))
    runs = fake.runs()
    check(err is None and st is not None, "OSCAL runs the suite to its end", err)
    check(len(runs) == 1 and runs[0]["argv"] == ["--calls", "getpid,read", "--quick", "--reps", "5", "--warmup",
                                                 "1", "--skip", "a-b,c_d"],
          "the suite's arguments are exactly the options, each value its own word", runs)
    check(runs and runs[0]["pid"] == runs[0]["pgid"], "the suite leads a process group of its own", runs)
    check(b"".join(data) == expected_small(["getpid", "read"]), "its output comes back byte for byte",
          b"".join(data)[:300])
    check(all(d.endswith(b"\n") for d in data), "each OSCALDATA frame holds whole lines")
    check(st and st.get("status") == "0" and "signal" not in st and "stderr" not in st,
          "STATUS event=oscal_exit status=0", st)

    # options in another order, quick=0 and empty values: left out
    data, st, err = run_suite(c, request([("warmup", "0"), ("quick", "0"), ("calls", ""), ("skip", "")]))
    runs = fake.runs()
    check(st and st.get("status") == "0" and runs[-1]["argv"] == ["--warmup", "0"],
          "quick=0 and empty calls/skip are left out; the order is the suite's", runs[-1:])
    data, st, err = run_suite(c, b"")
    check(st and st.get("status") == "0" and fake.runs()[-1]["argv"] == [] and
          b"".join(data) == expected_small(["getpid"]), "no options: the default suite", st)

    data, st, err = run_suite(c, request([("list", "1"), ("calls", "x*")]))
    check(st and st.get("status") == "0" and fake.runs()[-1]["argv"] == ["--calls", "x*", "--list"] and
          b"".join(data).startswith(b"getpid getpid"), "list=1: the suite's --list", fake.runs()[-1:])

    data, st, err = run_suite(c, request([("calls", "big")]))
    lines = b"".join(data).split(b"\n")
    want = [b"sample big %d %s" % (i, " ".join(str(i + k) for k in range(8)).encode()) for i in range(20000)]
    check(st and st.get("status") == "0" and lines[2:20002] == want,
          "20000 lines come back in order", st)
    longline = b"sample long 1 " + " ".join(str(k) for k in range(40000)).encode()
    check(len(lines) == 20004 and lines[20002] == longline, "a line longer than a frame comes back whole",
          [len(x) for x in lines[20001:]])
    check(lines[-1] == b"done measured=1 skipped=0 failed=0", "a last line without its newline is sent too",
          lines[-1][:80])
    check(max(len(d) for d in data) <= 65536, "no OSCALDATA frame is longer than 64 KiB",
          max(len(d) for d in data))

    data, st, err = run_suite(c, request([("calls", "bad")]))
    check(st and st.get("status") == "2" and st.get("stderr") == "layerprof-oscal: no entry matches 'bad'",
          "a usage error: status=2 and the suite's last stderr line", st)
    check("oscal suite: first line of stderr" in agent.text(), "the suite's stderr goes to the agent's log")
    data, st, err = run_suite(c, request([("calls", "crash")]))
    check(st and st.get("status") == "137" and st.get("signal") == "9" and
          b"".join(data).endswith(b"desc=d\n"), "a suite killed by a signal: its output, status=137 signal=9", st)


def protocol_busy(agent, fake, c, build):
    fake.reset()
    c.send(lpwire.OSCAL, request([("calls", "hang")]))
    check(wait_until(lambda: os.path.exists(fake.path("hang.pids"))), "a long run starts")
    n = len(fake.runs())
    c.send(lpwire.OSCAL, request([("calls", "getpid")]))
    c.sock.settimeout(1.0)
    err = None
    end = time.time() + WAIT
    while time.time() < end and err is None:
        try:
            ftype, p = c.recv()
        except socket.timeout:
            c.send(lpwire.HEARTBEAT)
            continue
        if ftype == lpwire.ERROR:
            err = p.decode()
    c.sock.settimeout(10.0)
    check(err == "OSCAL: busy: a suite run is under way" and len(fake.runs()) == n,
          "a second OSCAL while one runs: ERROR busy, nothing started", err)
    # the loop serves others meanwhile: a program started and its exit told
    ftype, p = c.start(["/bin/echo", "hello"])
    check(ftype == lpwire.SESSION, "START is answered while the suite runs", p)
    if ftype == lpwire.SESSION:
        sid = lpwire.kv(p)["session"]
        try:
            c.wait_for(lambda t, q: t == lpwire.STATUS and lpwire.kv(q).get("event") == "exit" and
                       lpwire.kv(q).get("session") == sid, WAIT)
            check(True, "the started program's exit is told while the suite runs")
        except TimeoutError:
            check(False, "the started program's exit is told while the suite runs")
    try:
        c.wait_for(lambda t, q: t == lpwire.OSCALDATA and b"sample hang" in q, WAIT)
        check(True, "the suite's output goes on coming after that")
    except TimeoutError:
        check(False, "the suite's output goes on coming after that")
    # a second host: the agent serves one at a time
    c2, ftype, p = lpwire.Client("127.0.0.1", agent.port), None, None
    ftype, p = c2.handshake(agent.token)
    check(ftype == lpwire.ERROR and b"busy" in p, "a second host while the run goes on: ERROR busy", p)
    c2.close()
    pids = fake.hang_pids()
    c.send(lpwire.BYE)
    c.close()
    check(wait_until(lambda: all(gone(x) for x in pids)), "BYE stops the suite and its child; both reaped")


# ------------------------------------------------------------ hostgone

def group_hostgone(build, lp, tmp):
    fake = Fake(tmp, "fake-hostgone")
    agent = Agent(build, tmp, fake.env)
    if not check(agent.ok, "agent with a stand-in suite starts", agent.text()):
        return
    try:
        for how in ("closed", "stubborn"):
            fake.reset()
            c, ftype, _ = agent.client()
            c.send(lpwire.OSCAL, request([("calls", "hang" if how == "closed" else "stubborn")]))
            if not check(wait_until(lambda: os.path.exists(fake.path("hang.pids"))), "%s: the run starts" % how):
                return
            # its first lines have come
            try:
                c.wait_for(lambda t, p: t == lpwire.OSCALDATA and b"sample hang" in p, WAIT)
                check(True, "%s: the suite's lines arrive" % how)
            except TimeoutError:
                check(False, "%s: the suite's lines arrive" % how)
            suite, child = fake.hang_pids()
            c.sock.close()  # the host vanishes: no BYE
            check(wait_until(lambda: gone(suite) and gone(child)),
                  "%s: the host gone, the suite and its child are gone and reaped" % how,
                  open("/proc/%d/stat" % suite).read() if not gone(suite) else "")
            if how == "closed":
                check(os.path.exists(fake.path("cleaned")), "SIGTERM first: the suite cleaned up")
            else:
                check(not os.path.exists(fake.path("cleaned")) and "stopping it" in agent.text(),
                      "a suite that ignores SIGTERM is killed all the same")
            # the next host is served
            c, ftype, _ = agent.client()
            data, st, err = run_suite(c, request([("calls", "getpid")]))
            check(st and st.get("status") == "0" and b"".join(data) == expected_small(["getpid"]),
                  "%s: the next host runs the suite" % how, err or st)
            c.send(lpwire.BYE)
            c.close()
    finally:
        agent.stop()
    check("ended with status" in agent.text(), "the agent logs the suite's end")


# ------------------------------------------------------------ attacker

def attempt(agent, frames, token=None, auth=True):
    """A peer that sends frames (before AUTH when auth is False, after a
    handshake with this token otherwise).  Returns what came back: a list
    of (type, payload) until the close or 3 s of silence."""
    c = lpwire.Client("127.0.0.1", agent.port, timeout=5)
    got = []
    try:
        if auth:
            got.append(c.handshake(token))
        else:
            got.append(c.recv())  # HELLO
        for ftype, payload in frames:
            c.send(ftype, payload)
        c.sock.settimeout(3.0)
        while True:
            got.append(c.recv())
    except (lpwire.Closed, socket.timeout, OSError):
        pass
    finally:
        c.close()
    return got


def group_attacker(build, lp, tmp):
    fake = Fake(tmp, "fake-attacker")
    agent = Agent(build, tmp, fake.env, unix=True)
    if not check(agent.ok, "agent with a stand-in suite starts", agent.text()):
        return
    try:
        attacker_unauthenticated(agent, fake, tmp)
        attacker_options(agent, fake)
        attacker_pending(agent, fake)
    finally:
        agent.stop()


def attacker_unauthenticated(agent, fake, tmp):
    got = attempt(agent, [(lpwire.OSCAL, request([("calls", "getpid")]))], auth=False)
    check(len(got) >= 2 and got[1] == (lpwire.ERROR, b"refused") and not fake.runs(),
          "OSCAL before AUTH: ERROR refused, the close, nothing runs", got[1:])
    got = attempt(agent, [(lpwire.OSCAL, request([("calls", "getpid")]))], token="not the token at all, no")
    check(got and got[0] == (lpwire.ERROR, b"refused") and not fake.runs(),
          "a wrong MAC, then OSCAL: refused, nothing runs", got)
    got = attempt(agent, [(lpwire.OSCAL, request([("calls", "getpid")]))], token=None)
    check(got and got[0] == (lpwire.ERROR, b"refused") and not fake.runs(),
          "no MAC, then OSCAL: refused, nothing runs", got)
    got = attempt(agent, [(lpwire.OSCAL, request([("skip", "x" * 400)]))], auth=False)
    check(len(got) == 1 and not fake.runs(), "an OSCAL too long for a first frame: closed, nothing runs", got[1:])
    check("no AUTH frame" in agent.text(), "the agent logs the refusals")
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"):
        skip("OSCAL as another user on the UNIX socket", "needs root and setpriv")
        return
    # the socket made reachable: the kernel's word on the uid still decides
    os.chmod(tmp, 0o755)
    os.chmod(agent.socket, 0o666)
    code = ("import sys; sys.path.insert(0, %r); import lpwire\n"
            "c = lpwire.Client('unix:' + %r)\n"
            "got = []\n"
            "try:\n"
            "    got.append(c.recv()[0])\n"
            "    c.send(lpwire.OSCAL, b'calls=getpid\\n')\n"
            "    got.append(c.recv())\n"
            "    got.append(c.recv())\n"
            "except Exception as e:\n"
            "    got.append(type(e).__name__)\n"
            "print(repr(got))\n") % (os.path.dirname(os.path.abspath(__file__)), agent.socket)
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                        code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=WAIT)
    check("(4, b'refused')" in r.stdout and "Closed" in r.stdout and not fake.runs(),
          "nobody on the UNIX socket, OSCAL before AUTH: refused, nothing runs", r.stdout.strip())


def attacker_options(agent, fake):
    bad = [
        (b"calls=;rm -rf /\n", "invalid calls"),
        (b"calls=$(touch /tmp/x)\n", "invalid calls"),
        (b"calls=/bin/sh\n", "invalid calls"),
        (b"calls=../../etc/passwd\n", "invalid calls"),
        (b"calls=read write\n", "invalid calls"),
        (b"skip=/etc\n", "invalid skip"),
        (b"skip=Read\n", "invalid skip"),
        (b"dir=/tmp/x\n", "unknown option 'dir'"),
        (b"path=/bin/sh\n", "unknown option 'path'"),
        (b"program=/bin/sh\n", "unknown option 'program'"),
        (b"seconds-max=1\n", "unknown option 'seconds-max'"),
        (b"--list=1\n", "unknown option '--list'"),
        (b"calls\n", "not key=value"),
        (b"reps=1;ls\n", "invalid reps"),
        (b"reps=0\n", "invalid reps"),
        (b"reps=-5\n", "invalid reps"),
        (b"reps=1234567890\n", "invalid reps"),
        (b"warmup=x\n", "invalid warmup"),
        (b"quick=yes\n", "invalid quick"),
        (b"list=/etc\n", "invalid list"),
        (b"calls=getpid\ncalls=read\n", "given twice"),
        (b"calls=getpid\0/bin/sh\n", "key=value lines of text"),
        (b"calls=" + b"a" * 5000 + b"\n", "invalid calls"),
    ]
    c, ftype, _ = agent.client()
    for payload, want in bad:
        c.send(lpwire.OSCAL, payload)
        try:
            ftype, p = c.wait_for(lambda t, q: t in (lpwire.ERROR, lpwire.OSCALDATA, lpwire.STATUS) and
                                  (t != lpwire.STATUS or lpwire.kv(q).get("event") == "oscal_exit"), WAIT)
        except TimeoutError:
            ftype, p = None, b""
        check(ftype == lpwire.ERROR and p.startswith(b"OSCAL: ") and want.encode() in p and not fake.runs(),
              "options %r: ERROR (%s), nothing runs" % (payload[:40], want), p)
    data, st, err = run_suite(c, request([("calls", "getpid")]))
    check(st and st.get("status") == "0" and len(fake.runs()) == 1,
          "the same connection runs the suite after the refusals", err)
    c.send(lpwire.BYE)
    c.close()


def attacker_pending(agent, fake):
    """Peers that connect and never authenticate hold places of their own:
    the host still comes in and runs the suite."""
    socks = []
    for _ in range(20):
        try:
            socks.append(socket.create_connection(("127.0.0.1", agent.port), timeout=5))
        except OSError:
            break
    n = len(fake.runs())
    c, ftype, _ = agent.client()
    data, st, err = run_suite(c, request([("calls", "getpid")]))
    check(ftype == lpwire.WELCOME and st and st.get("status") == "0" and len(fake.runs()) == n + 1,
          "20 silent peers: the host gets in and runs the suite", err or ftype)
    c.send(lpwire.BYE)
    c.close()
    for s in socks:
        s.close()


# ------------------------------------------------------------ nosuite

def group_nosuite(build, lp, tmp):
    plain = os.path.join(tmp, "not-a-program")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\necho never\n")
    os.chmod(plain, 0o644)
    agent = Agent(build, tmp, {"LAYERPROF_OSCAL": plain})
    if not check(agent.ok, "agent with an unusable LAYERPROF_OSCAL starts", agent.text()):
        return
    try:
        c = lpwire.Client("127.0.0.1", agent.port)
        ftype, hello = c.recv()
        caps = lpwire.kv(hello).get("caps", "").split(",")
        check("oscal" not in caps and "startstop" in caps, "HELLO without oscal", caps)
        check("is not a program the agent can run" in agent.text(), "the agent warns about LAYERPROF_OSCAL")
        c.close()
        c, ftype, _ = agent.client()
        data, st, err = run_suite(c, request([("calls", "getpid")]))
        check(err is not None and err.startswith("OSCAL: no suite"), "OSCAL: ERROR no suite", err)
        c.close()
    finally:
        agent.stop()
    fake = Fake(tmp, "fake-caps")
    agent = Agent(build, tmp, fake.env)
    try:
        c = lpwire.Client("127.0.0.1", agent.port)
        ftype, hello = c.recv()
        check("oscal" in lpwire.kv(hello).get("caps", "").split(","), "with a suite HELLO lists oscal")
        c.close()
        # another user could replace it now: the agent no longer runs it
        os.chmod(fake.exe, 0o777)
        c, ftype, _ = agent.client()
        data, st, err = run_suite(c, request([("calls", "getpid")]))
        check(err is not None and "no suite: not running" in err and "may change" in err and not fake.runs(),
              "a suite others may change since the start: ERROR, not run", err)
        c.close()
    finally:
        agent.stop()
    # nor one that is so from the start, or whose directory is
    for what, path, mode in (("file", fake.exe, 0o777), ("directory", fake.dir, 0o777)):
        os.chmod(fake.exe, 0o755)
        os.chmod(fake.dir, 0o755)
        os.chmod(path, mode)
        agent = Agent(build, tmp, fake.env)
        try:
            c = lpwire.Client("127.0.0.1", agent.port)
            ftype, hello = c.recv()
            check("oscal" not in lpwire.kv(hello).get("caps", "").split(",") and
                  "is not a program the agent can run" in agent.text() and not fake.runs(),
                  "a suite whose %s others may change: no oscal, a warning" % what, agent.text()[-300:])
            c.close()
        finally:
            agent.stop()
    os.chmod(fake.dir, 0o755)
    if not os.access(lp, os.X_OK) or "--connect" not in subprocess.run(
            [lp, "oscal", "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True).stdout:
        skip("oscal run --connect to an agent without the suite", "no oscal run --connect here")
        return
    agent = Agent(build, tmp, {"LAYERPROF_OSCAL": plain})
    try:
        r = oscal_run(lp, agent, ["--token-file", agent.token_file, "--calls", "read", "-o",
                                  os.path.join(tmp, "none.cal")], timeout=WAIT * 2)
        errs = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(errs) == 1 and "no capability oscal" in errs[0],
              "oscal run --connect to an agent without the suite: one line, exit 1", r.stderr)
    finally:
        agent.stop()


# ------------------------------------------------------------ remote

def oscal_run(lp, agent, args, timeout=600):
    return subprocess.run([lp, "oscal", "run", "--connect", agent.addr] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)


def group_remote(build, lp, tmp):
    suite = os.path.join(build, "oscal", "layerprof-oscal")
    if not os.access(suite, os.X_OK):
        skip("remote", "no suite at %s" % suite)
        return
    help_text = subprocess.run([lp, "oscal", "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True).stdout
    if "--connect" not in help_text:
        skip("remote", "layerprof oscal run has no --connect here")
        return
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent with the real suite beside it starts", agent.text()):
        return
    try:
        out = os.path.join(tmp, "remote.cal")
        r = oscal_run(lp, agent, ["--token-file", agent.token_file, "--quick", "--calls", "getpid,read", "-o", out])
        check(r.returncode == 0, "oscal run --connect --quick --calls getpid,read: exit 0", r.stderr[-500:])
        try:
            with open(out) as f:
                cal = json.load(f)
        except (OSError, ValueError) as e:
            check(False, "the calibration is written", e)
            return
        entries = {e["name"]: e for e in cal.get("entries", [])}
        listed = subprocess.run([suite, "--list"], stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
        if "getpid" in listed:
            check("getpid" in entries and entries["getpid"].get("status") == "measured" and
                  len(entries["getpid"].get("series", [])) >= 1, "getpid is measured on the agent", list(entries))
        else:
            skip("getpid measured on the agent", "this suite has no getpid entry")
        reads = [e for e in entries.values() if e.get("call") == "read"]
        check(reads and all(e.get("status") in ("measured", "skipped") for e in reads) and
              any(e.get("status") == "measured" for e in reads), "read is measured on the agent",
              [(e["name"], e.get("status")) for e in reads])
        check(cal.get("source") == "agent %s" % agent.addr and cal.get("complete") is True,
              "the file says source 'agent HOST:PORT', complete", cal.get("source"))
        check(cal.get("machine", {}).get("arch") == os.uname().machine, "machine from the suite's lines",
              cal.get("machine"))

        for args, what in ((["--connect", "[::1"], "a bad address"), (["--connect", "x:1", "--runner", "qemu"],
                                                                      "--runner with --connect"),
                           (["--token-file", agent.token_file], "--token-file without --connect")):
            r = subprocess.run([lp, "oscal", "run", "-o", os.path.join(tmp, "never.cal")] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=WAIT)
            check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
                  "oscal run %s: usage, one line, exit 2" % what, r.stderr)
        bad = os.path.join(tmp, "bad-token")
        with open(bad, "w") as f:
            f.write("0123456789abcdef0123456789abcdef-not-it\n")
        os.chmod(bad, 0o600)
        r = oscal_run(lp, agent, ["--token-file", bad, "--quick", "--calls", "read", "-o",
                                  os.path.join(tmp, "never.cal")])
        errs = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(errs) == 1 and "refused" in errs[0] and
              not os.path.exists(os.path.join(tmp, "never.cal")), "a wrong token: one line, exit 1", r.stderr)

        # a long run, then a second host, then the first killed
        log = os.path.join(tmp, "first.err")
        with open(log, "w") as errf:
            first = subprocess.Popen([lp, "oscal", "run", "--connect", agent.addr, "--token-file", agent.token_file,
                                      "--calls", "*", "-o", os.path.join(tmp, "long.cal")],
                                     stdout=subprocess.DEVNULL, stderr=errf)
        started.append(first)
        suite_pid = []

        def suite_running():
            # the measuring run, not the list before it (a connection of
            # its own: between the two another host could get in): the
            # first entry's progress line is out
            with open(log) as f:
                if "[1/" not in f.read():
                    return False
            suite_pid[:] = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                            proc_exe(int(p)) == os.path.realpath(suite)]
            return bool(suite_pid)
        check(wait_until(suite_running, WAIT), "a long run starts the suite on the agent")
        r = oscal_run(lp, agent, ["--token-file", agent.token_file, "--quick", "--calls", "read", "-o",
                                  os.path.join(tmp, "second.cal")], timeout=WAIT * 2)
        errs = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(errs) == 1 and "busy" in errs[0], "a second host meanwhile: busy, exit 1",
              r.stderr)
        first.kill()
        first.wait()
        check(wait_until(lambda: all(gone(p) for p in suite_pid), WAIT),
              "the host killed: the agent's suite is gone", suite_pid)
        r = oscal_run(lp, agent, ["--token-file", agent.token_file, "--quick", "--calls", "read", "-o",
                                  os.path.join(tmp, "next.cal")])
        check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "next.cal")),
              "the next host is served", r.stderr[-300:])
        remote_interrupt(lp, agent, tmp, suite)
    finally:
        agent.stop()
    # the agent's UNIX socket: its own user needs no token
    agent = Agent(build, tmp, unix=True)
    try:
        out = os.path.join(tmp, "unix.cal")
        r = subprocess.run([lp, "oscal", "run", "--connect", "unix:" + agent.socket, "--quick", "--calls", "getpid",
                            "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=600)
        try:
            with open(out) as f:
                cal = json.load(f)
        except (OSError, ValueError):
            cal = {}
        check(r.returncode == 0 and cal.get("source") == "agent unix:" + agent.socket and cal.get("entries"),
              "oscal run --connect unix:PATH, no token: the agent's suite measures", r.stderr[-300:])
    finally:
        agent.stop()


def remote_interrupt(lp, agent, tmp, suite):
    """Ctrl-C during a remote run: what ended is written, the agent's suite
    stops; --resume --connect finishes it."""
    out = os.path.join(tmp, "part.cal")
    err = os.path.join(tmp, "part.err")
    with open(err, "w") as errf:
        p = subprocess.Popen([lp, "oscal", "run", "--connect", agent.addr, "--token-file", agent.token_file,
                              "--quick", "--calls", "read*,write*,lseek*", "-o", out], stdout=subprocess.DEVNULL,
                             stderr=errf)
    started.append(p)

    def progress(n):
        with open(err) as f:
            return sum(1 for line in f if line.startswith("[")) >= n
    check(wait_until(lambda: progress(3), WAIT * 4), "a remote run shows its progress", open(err).read()[-300:])
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    msg = open(err).read()
    try:
        with open(out) as f:
            cal = json.load(f)
    except (OSError, ValueError):
        cal = {}
    check(rc == 130 and "interrupted" in msg and cal.get("complete") is False and cal.get("entries"),
          "SIGINT: exit 130, the entries that ended written, complete:false", msg[-300:])
    check(wait_until(lambda: not [q for q in os.listdir("/proc") if q.isdigit() and
                                  proc_exe(int(q)) == os.path.realpath(suite)], WAIT),
          "the agent's suite stops with the interrupted host")
    r = oscal_run(lp, agent, ["--token-file", agent.token_file, "--resume", out])
    try:
        with open(out) as f:
            cal = json.load(f)
    except (OSError, ValueError):
        cal = {}
    names = [e["name"] for e in cal.get("entries", [])]
    check(r.returncode == 0 and cal.get("complete") is True and len(names) == len(set(names)) and
          cal.get("source") == "agent %s" % agent.addr, "--resume --connect completes it, each entry once",
          r.stderr[-300:])


# ------------------------------------------------------------ client

class FakeAgent:
    """A stand-in agent for the host's side (oscalremote.c): HELLO with a
    nonce, AUTH checked against the token, WELCOME; then each connection's
    frames are kept and the next scenario of `plan` answers its OSCAL."""

    def __init__(self, token, plan):
        self.token, self.plan, self.got = token, list(plan), []
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.addr = "127.0.0.1:%d" % self.srv.getsockname()[1]
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def _send(self, s, seq, ftype, payload=b""):
        s.sendall(lpwire.frame(ftype, seq[0], payload))
        seq[0] += 1

    def _recv(self, s, buf):
        while True:
            if len(buf) >= lpwire.HEADER.size:
                length = lpwire.HEADER.unpack(bytes(buf[:lpwire.HEADER.size]))[5]
                if len(buf) >= lpwire.HEADER.size + length:
                    ftype = buf[4]
                    payload = bytes(buf[lpwire.HEADER.size:lpwire.HEADER.size + length])
                    del buf[:lpwire.HEADER.size + length]
                    return ftype, payload
            d = s.recv(65536)
            if not d:
                raise lpwire.Closed()
            buf += d

    def _serve(self):
        while self.plan:
            conn, _ = self.srv.accept()
            conn.settimeout(30)
            scenario = self.plan.pop(0)
            seq, buf, frames = [0], bytearray(), []
            self.got.append(frames)
            try:
                nonce = os.urandom(32)
                self._send(conn, seq, lpwire.HELLO, ("protocol=1\nagent=fake\ncaps=startstop,oscal\nnonce=%s\n"
                                                     % nonce.hex()).encode())
                ftype, payload = self._recv(conn, buf)
                want = hmac.new(self.token.encode(), nonce, hashlib.sha256).hexdigest()
                if ftype != lpwire.AUTH or lpwire.kv(payload).get("mac") != want:
                    self._send(conn, seq, lpwire.ERROR, b"refused")
                    continue
                self._send(conn, seq, lpwire.WELCOME, b"session_count=0\n")
                while True:
                    ftype, payload = self._recv(conn, buf)
                    frames.append((ftype, payload))
                    if ftype == lpwire.OSCAL:
                        break
                scenario(self, conn, seq)
                # what the host sends after: its BYE, or nothing
                conn.settimeout(10)
                while True:
                    frames.append(self._recv(conn, buf))
            except (lpwire.Closed, OSError):
                pass
            finally:
                conn.close()

    def close(self):
        self.srv.close()


def fake_lines(fa, conn, seq, text, cut, status=0, stderr=None):
    """Sends text as OSCALDATA frames cut every `cut` bytes (lines split
    anywhere), then the end."""
    for i in range(0, len(text), cut):
        fa._send(conn, seq, lpwire.OSCALDATA, text[i:i + cut])
    end = "event=oscal_exit\nstatus=%d\n" % status + ("stderr=%s\n" % stderr if stderr else "")
    fa._send(conn, seq, lpwire.STATUS, end.encode())


def group_client(build, lp, tmp):
    suite = os.path.join(build, "oscal", "layerprof-oscal")
    if not os.access(suite, os.X_OK) or "--connect" not in subprocess.run(
            [lp, "oscal", "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True).stdout:
        skip("client", "no suite or no oscal run --connect here")
        return
    token_file = os.path.join(tmp, "client-token")
    token = os.urandom(32).hex()
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(token + "\n")
    listing = subprocess.run([suite, "--list"], stdout=subprocess.PIPE, check=True).stdout
    output = subprocess.run([suite, "--quick", "--calls", "getpid,read"], stdout=subprocess.PIPE,
                            check=True).stdout
    samples = {}
    for line in output.decode().splitlines():
        w = line.split()
        if w and w[0] == "sample":
            samples.setdefault(w[1], []).append(len(w) - 3)

    def run(plan, name, *extra):
        fa = FakeAgent(token, plan)
        out = os.path.join(tmp, name + ".cal")
        try:
            r = subprocess.run([lp, "oscal", "run", "--connect", fa.addr, "--token-file", token_file, "--quick",
                                "--calls", "getpid,read", "-o", out] + list(extra), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=WAIT * 2)
        finally:
            fa.close()
        return r, fa.got, out

    def lst(fa, conn, seq):
        fake_lines(fa, conn, seq, listing, 4096)

    # the lines cut at every 7th byte, across frames
    r, got, out = run([lst, lambda fa, c, q: fake_lines(fa, c, q, output, 7)], "split")
    try:
        with open(out) as f:
            cal = json.load(f)
    except (OSError, ValueError):
        cal = {}
    counts = {e["name"]: [len(x["ns"]) for x in e.get("series", [])] for e in cal.get("entries", [])}
    check(r.returncode == 0 and counts == samples, "lines cut anywhere across frames are put together again",
          (r.stderr[-300:], counts, samples))
    check(len(got) == 2 and got[0][0] == (lpwire.CONTROL, b"tracing=off\n") and
          got[0][1] == (lpwire.OSCAL, b"list=1\n"), "the host asks for tracing off, then list=1", got[:1])
    check(len(got) == 2 and got[1][1] == (lpwire.OSCAL, b"quick=1\ncalls=getpid,read\n") and
          got[1][-1][0] == lpwire.BYE, "then OSCAL quick=1 calls=..., and BYE at the end",
          got[1][1:] if len(got) > 1 else got)

    r, got, out = run([lst, lambda fa, c, q: fake_lines(fa, c, q, b"layerprof-oscal 1\n", 100, 3,
                                                        "layerprof-oscal: something went wrong")], "exit3")
    errs = r.stderr.strip().splitlines()
    check(r.returncode == 1 and errs and errs[-1].endswith("failed (exit 3): layerprof-oscal: something went wrong"),
          "the suite's exit 3 and stderr: said, exit 1", r.stderr)

    r, got, out = run([lst, lambda fa, c, q: fa._send(c, q, lpwire.ERROR, b"OSCAL: busy: a suite run is under way")],
                      "busy")
    errs = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(errs) == 1 and "busy" in errs[0], "ERROR busy: one line, exit 1", r.stderr)

    def closes(fa, conn, seq):
        fa._send(conn, seq, lpwire.OSCALDATA, output[:200])
        conn.close()
        raise lpwire.Closed()
    r, got, out = run([lst, closes], "closed")
    check(r.returncode == 1 and "closed the connection before the suite ended" in r.stderr,
          "the agent gone mid-run: said, exit 1", r.stderr)

    def silent(fa, conn, seq):
        fa._send(conn, seq, lpwire.OSCALDATA, output[:200])
        time.sleep(12)  # no frame, no heartbeat: a host gives up after 5 s
    r, got, out = run([lst, silent], "silent")
    check(r.returncode == 1 and "stopped responding" in r.stderr, "a silent agent: said, exit 1", r.stderr)


def proc_exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None


GROUPS = {"protocol": group_protocol, "hostgone": group_hostgone, "attacker": group_attacker,
          "nosuite": group_nosuite, "remote": group_remote, "client": group_client}


def setup(build):
    if not os.access(os.path.join(build, "agent", "layerprofd"), os.X_OK):
        skip("oscal remote", "no agent at %s/agent/layerprofd" % build)
        return None
    return build, os.path.join(build, "host", "layerprof")


if __name__ == "__main__":
    sys.exit(harness.run_groups(GROUPS, setup, "layerprof-oscal-remote-"))
