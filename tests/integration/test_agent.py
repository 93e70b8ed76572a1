#!/usr/bin/env python3
"""Tests of the agent layerprofd and its protocol over real sockets: the agent
runs in one network namespace (the target), the host side in another,
joined by a veth pair.  Each scenario's host side runs inside the host
namespace (this script re-executed with --scenario); the outer run checks
what it reports.  Every wait is bounded.

usage: test_agent.py --build BUILD_DIR
Ends with 'N passed, N failed'; skips with a reason where namespaces or
root are not available (then the scenarios run over loopback)."""

import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
import lpwire  # noqa: E402
from harness import check  # noqa: E402

TARGET_IP = "10.213.7.1"
HOST_IP = "10.213.7.2"
PORT = 7979
TOKEN = "correct horse battery staple"




def sh(*cmd, check_rc=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if check_rc and r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r


# ------------------------------------------------------------- environment

class Net:
    """Two namespaces and a veth pair, or plain loopback when not possible."""

    def __init__(self):
        self.ns = None
        self.why = None
        if os.geteuid() != 0:
            self.why = "not root"
        elif not shutil.which("ip"):
            self.why = "no ip command (iproute2)"
        if self.why:
            self.target_ip = self.host_ip = "127.0.0.1"
            return
        tag = "%d" % (os.getpid() % 100000)
        self.ns = ("lpt%s" % tag, "lph%s" % tag)
        va, vb = "lpva%s" % tag, "lpvb%s" % tag
        self.veth = va
        try:
            for n in self.ns:
                sh("ip", "netns", "add", n)
            sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
            sh("ip", "link", "set", va, "netns", self.ns[0])
            sh("ip", "link", "set", vb, "netns", self.ns[1])
            sh("ip", "-n", self.ns[0], "addr", "add", TARGET_IP + "/24", "dev", va)
            sh("ip", "-n", self.ns[1], "addr", "add", HOST_IP + "/24", "dev", vb)
            for n, v in ((self.ns[0], va), (self.ns[1], vb)):
                sh("ip", "-n", n, "link", "set", v, "up")
                sh("ip", "-n", n, "link", "set", "lo", "up")
            self.target_ip, self.host_ip = TARGET_IP, HOST_IP
        except Exception as e:  # e.g. a sandbox without CAP_SYS_ADMIN
            self.release()
            self.ns = None
            self.why = "cannot make network namespaces: %s" % e
            self.target_ip = self.host_ip = "127.0.0.1"

    def throttle(self, on):
        """A slow link from the target with a short queue: bursts of datagrams
        are dropped on the way (netem is not in every kernel; tbf is)."""
        if not self.ns:
            return False
        base = ["ip", "netns", "exec", self.ns[0], "tc", "qdisc"]
        if on:
            return sh(*(base + ["add", "dev", self.veth, "root", "tbf", "rate", "4mbit", "burst", "32kb", "limit",
                                "32kb"]), check_rc=False).returncode == 0
        sh(*(base + ["del", "dev", self.veth, "root"]), check_rc=False)
        return True

    def target(self, cmd):
        return (["ip", "netns", "exec", self.ns[0]] + cmd) if self.ns else cmd

    def host(self, cmd):
        return (["ip", "netns", "exec", self.ns[1]] + cmd) if self.ns else cmd

    def release(self):
        if self.ns:
            for n in self.ns:
                subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)


class Agent:
    def __init__(self, net, build, tmp, token=True, listen=None):
        self.log = os.path.join(tmp, "agent-%d.log" % time.time_ns())
        self.attach_dir = os.path.join(tmp, "attach")
        cmd = [os.path.join(build, "agent", "layerprofd"), "--listen",
               listen or "%s:%d" % (net.target_ip, PORT), "--attach-dir", self.attach_dir]
        if token:
            tok = os.path.join(tmp, "token")
            with open(tok, "w") as f:
                f.write(TOKEN + "\n")
            os.chmod(tok, 0o600)
            cmd += ["--token-file", tok]
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen(net.target(cmd), stdout=self.logf, stderr=subprocess.STDOUT)
        wait_file(self.log, "listening on")  # a slow machine may take a while

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


# --------------------------------------------- scenarios (host namespace)

def connect(args, token=TOKEN):
    return lpwire.connect_when_free(args.ip, args.port, token)


def drain_until_exit(c, timeout=20):
    c.wait_for(lambda t, p: t == lpwire.STATUS and lpwire.kv(p).get("event") == "exit", timeout)


def scn_session(args):
    c, ftype, _ = connect(args)
    out = {"welcome": ftype == lpwire.WELCOME}
    ftype, payload = c.start([args.prog] + args.prog_args)
    out["session"] = ftype == lpwire.SESSION
    drain_until_exit(c)
    out["exit"] = [s for s in c.status if s.get("event") == "exit"][0]
    c.save(args.save)
    out["wire_bytes"] = c.wire_bytes
    c.send(lpwire.BYE)
    return out


def wait_file(path, text, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and text in open(path).read():
            return True
        time.sleep(0.005)
    return False


def scn_intervals(args):
    """tracing on only in phases 2 and 4"""
    c, _, _ = connect(args)
    progress = args.progress
    c.control("tracing=off\n")
    ftype, payload = c.start([args.prog, progress])
    pid = int(lpwire.kv(payload)["pid"])
    wait_file(progress, "ready")
    for phase in range(1, 6):
        c.control("tracing=%s\n" % ("on" if phase in (2, 4) else "off"))
        os.kill(pid, signal.SIGUSR1)
        if not wait_file(progress, "phase %d done" % phase):
            return {"error": "phase %d did not finish" % phase}
    drain_until_exit(c)
    c.save(args.save)
    c.send(lpwire.BYE)
    return {"ok": True}


def scn_filtered(args):
    """held start, then only= from the first mappings, then release"""
    c, _, _ = connect(args)
    c.control("hold=on\n")
    ftype, payload = c.start([args.prog] + args.prog_args)
    # the first chunks carry the code mappings; the test passes the
    # function's offset in the executable, we add the load base
    c.wait_for(lambda t, p: t == lpwire.CHUNK)
    c.control("only=1:%s\nrelease=1\n" % args.only_addr)
    drain_until_exit(c)
    c.save(args.save)
    out = {"wire_bytes": c.wire_bytes}
    c.send(lpwire.BYE)
    return out


def scn_wrong_token(args):
    c, ftype, payload = connect(args, token="not the token")
    out = {"type": ftype, "payload": payload.decode(errors="replace")}
    try:
        c.recv()
        out["closed"] = False
    except lpwire.Closed:
        out["closed"] = True
    return out


def scn_garbage(args):
    out = {}
    # random bytes instead of frames
    s = socket.create_connection((args.ip, args.port), timeout=10)
    s.recv(4096)  # HELLO
    try:
        # the agent reads a small first frame only: it may close (and
        # reset) while this is still sending
        s.sendall(os.urandom(4096))
        out["garbage_closed"] = s.recv(4096) == b""
    except ConnectionResetError:
        out["garbage_closed"] = True
    s.close()
    # a header promising more than the limit
    c = lpwire.Client(args.ip, args.port)
    c.recv()
    c.send_raw(struct.pack("<IBBHIII", lpwire.MAGIC, lpwire.AUTH, 0, 0, 0, 0x7FFFFFFF, 0))
    try:
        c.recv()
        out["oversize_closed"] = False
    except (lpwire.Closed, ConnectionResetError):
        out["oversize_closed"] = True
    # a truncated frame, then the peer goes away
    c = lpwire.Client(args.ip, args.port)
    c.recv()
    c.send_raw(lpwire.frame(lpwire.AUTH, 0, b"protocol=1\nmac=\n")[:11])
    c.close()
    # a wrong sequence number after a good AUTH
    c, ftype, _ = connect(args)
    c.send_raw(lpwire.frame(lpwire.HEARTBEAT, 7))
    try:
        while True:
            c.recv()
    except (lpwire.Closed, ConnectionResetError):
        out["seq_closed"] = True
    # the agent still serves a good host afterwards
    time.sleep(0.2)
    c, ftype, _ = connect(args)
    out["still_serving"] = ftype == lpwire.WELCOME
    c.send(lpwire.BYE)
    return out


def scn_reconnect(args):
    """the host vanishes mid-stream, comes back, and tracing resumes"""
    c, _, _ = connect(args)
    ftype, payload = c.start([args.prog] + args.prog_args)
    pid = int(lpwire.kv(payload)["pid"])
    c.wait_for(lambda t, p: t == lpwire.CHUNK)
    c.sock.close()  # no BYE: as if the host was killed
    time.sleep(0.5)
    alive = os.path.exists("/proc/%d" % pid)
    c, ftype, payload = connect(args)
    welcome = payload.decode()
    n0 = len(c.chunks)
    time.sleep(0.5)
    c.wait_for(lambda t, p: t == lpwire.CHUNK, timeout=10)
    out = {"alive_while_away": alive, "welcome": welcome, "chunks_after": len(c.chunks) - n0, "pid": pid}
    os.kill(pid, signal.SIGKILL)
    drain_until_exit(c)
    out["exit"] = [s for s in c.status if s.get("event") == "exit"][0]
    c.save(args.save)
    c.send(lpwire.BYE)
    return out


def scn_udp(args):
    """EVENTS by datagram; the host counts lost datagrams and events"""
    import threading
    c, _, _ = connect(args)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:  # past net.core.rmem_max when we may (root), as the host does
        u.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    except OSError:
        u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    u.bind((args.host_ip, 0))
    u.settimeout(0.2)
    grams = {}
    stop = threading.Event()
    last_rx = [time.time()]

    def receive():
        while not stop.is_set():
            try:
                d = u.recv(70000)
            except socket.timeout:
                continue
            last_rx[0] = time.time()
            m, ftype, _, _, seq, length, crc = lpwire.HEADER.unpack(d[:lpwire.HEADER.size])
            payload = d[lpwire.HEADER.size:]
            if m == lpwire.MAGIC and ftype == lpwire.CHUNK and len(payload) == length and \
                    lpwire.crc32c(payload) == crc:
                grams[seq] = payload

    t = threading.Thread(target=receive)
    t.start()
    c.send(lpwire.UDPINFO, ("port=%d\n" % u.getsockname()[1]).encode())
    c.wait_for(lambda t_, p: t_ == lpwire.STATUS and lpwire.kv(p).get("event") == "udp")
    c.start([args.prog] + args.prog_args)
    drain_until_exit(c, timeout=60)
    udp = [s for s in c.status if s.get("event") == "udp" and "next_seq" in s][-1]
    sent = int(udp["next_seq"])
    # the datagrams numbered before the exit report may still be on their
    # way, or waiting for the receiving thread: wait until all came, or
    # none did for a second (a lossy link)
    while len(grams) < sent and time.time() - last_rx[0] < 1.0:
        time.sleep(0.01)
    stop.set()
    t.join()
    # the received chunks, in datagram order, after the TCP ones (META first)
    tcp = list(c.chunks)
    c.chunks = [x for x in tcp if x[1][4] == 1] + [(0, grams[k][4:]) for k in sorted(grams)] + \
        [x for x in tcp if x[1][4] != 1]
    c.save(args.save)
    c.send(lpwire.BYE)
    return {"sent_datagrams": sent, "received_datagrams": len(grams), "lost_datagrams": sent - len(grams),
            "sent_events": int(udp["events"])}


def scn_attach(args):
    """a program started outside the agent, attached by pid"""
    c, _, _ = connect(args)
    c.send(lpwire.ATTACH, ("pid=%d\n" % args.pid).encode())
    ftype, payload = c.wait_for(lambda t, p: t in (lpwire.SESSION, lpwire.ERROR))
    out = {"session": ftype == lpwire.SESSION, "answer": payload.decode(errors="replace")}
    if ftype != lpwire.SESSION:
        return out
    time.sleep(0.5)
    os.kill(args.pid, signal.SIGKILL)
    drain_until_exit(c)
    c.save(args.save)
    c.send(lpwire.BYE)
    c2, _, _ = connect(args)
    c2.send(lpwire.ATTACH, b"pid=999999\n")
    ftype, payload = c2.wait_for(lambda t, p: t in (lpwire.SESSION, lpwire.ERROR))
    out["bad_pid"] = payload.decode(errors="replace")
    c2.send(lpwire.BYE)
    return out


SCENARIOS = {
    "attach": scn_attach,
    "udp": scn_udp,
    "session": scn_session,
    "intervals": scn_intervals,
    "filtered": scn_filtered,
    "wrong_token": scn_wrong_token,
    "garbage": scn_garbage,
    "reconnect": scn_reconnect,
}


def scenario_main(args):
    try:
        out = SCENARIOS[args.scenario](args)
    except Exception as e:
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(out))
    return 0


# -------------------------------------------------------------- outer run

def build_prog(tmp, name):
    out = os.path.join(tmp, name)
    if not os.path.exists(out):
        subprocess.run(["gcc", "-O2", "-g", "-finstrument-functions", "-pthread", "-I", PROGS,
                        os.path.join(PROGS, name + ".c"), "-o", out], check=True)
    return out


def run_scenario(net, name, tmp, **kw):
    cmd = [sys.executable, os.path.abspath(__file__), "--scenario", name, "--ip", net.target_ip, "--port",
           str(PORT), "--save", kw.pop("save", os.path.join(tmp, name + ".trace"))]
    for k, v in kw.items():
        if k == "prog_args":
            continue
        cmd += ["--" + k.replace("_", "-"), str(v)]
    cmd += ["--"] + kw.get("prog_args", [])
    r = subprocess.run(net.host(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=120)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "scenario %s printed %r %r" % (name, r.stdout, r.stderr)}


def report(build, trace):
    r = subprocess.run([os.path.join(build, "host", "layerprof"), "report", "--format", "json", trace],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if r.returncode:
        return None, r.stderr
    d = json.loads(r.stdout)
    return {f["name"]: f["calls"] for f in d["functions"]}, d


def nm_offset(binary, func):
    """a function's address in the file and the image's load base as the runtime sees it is added by the agent's
    mappings; for a non-PIE test binary the file address is the runtime address"""
    for line in subprocess.run(["nm", binary], stdout=subprocess.PIPE, universal_newlines=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == func:
            return parts[0].lstrip("0")
    return None


def live_udp(net, build, tmp, agent, busy):
    """layerprof live --udp from the host namespace: exact counts on a clean
    link; on a shaped link, lost datagrams and events counted so that the
    events received plus the events lost are the events the agent sent."""
    lp = os.path.join(build, "host", "layerprof")
    for throttled in (False, True):
        if throttled and not net.throttle(True):
            print("skip live --udp with loss: cannot shape the link here (no tc qdisc, or no namespaces)")
            break
        name = "live-udp-lossy" if throttled else "live-udp"
        n = 300000 if throttled else 50000
        save = os.path.join(tmp, name + ".trace")
        mark = len(agent.text())
        try:
            r = subprocess.run(net.host([lp, "live", "--connect", "%s:%d" % (net.target_ip, PORT), "--token-file",
                                         os.path.join(tmp, "token"), "--udp", "--format", "json", "--interval",
                                         "200ms", "--save", save, "--", busy, str(n)]),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=120)
        finally:
            net.throttle(False)
        try:
            last = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            last = None
        if not check(r.returncode == 0 and last and last["final"] and last["udp"],
                     "%s: the session ends with exit 0 and UDP counts" % name, "rc %s %r" % (r.returncode, r.stderr)):
            continue
        u = last["udp"]
        calls = {f["name"]: f["calls"] for f in last["functions"]}
        check(u["rcvbuf"] >= 16 << 20, "%s: a 16 MiB receive buffer (SO_RCVBUFFORCE as root)" % name, u)
        check(u["events"] + u["lost_events"] == u["sent_events"] and u["sent_events"] > 0,
              "%s: events received + events lost == events the agent sent (%d + %d == %d)" %
              (name, u["events"], u["lost_events"], u["sent_events"]), u)
        log = agent.text()[mark:]
        told = [l for l in log.splitlines() if "datagrams numbered holding" in l]
        m = told[-1].split() if told else []
        agent_events = int(m[m.index("holding") + 1]) if "holding" in m else -1
        agent_grams = int(m[m.index("datagrams") - 1]) if "datagrams" in m else -1
        rep, d = report(build, save)
        check(d and isinstance(d, dict) and d["events"] + u["lost_events"] == agent_events and
              u["datagrams"] + u["lost_datagrams"] == agent_grams,
              "%s: saved events + lost events == the agent's own count (%s), and datagrams too (%s)" %
              (name, agent_events, agent_grams), (told, u, d if isinstance(d, str) else d and d.get("events")))
        if throttled:
            check(u["lost_datagrams"] > 0 and u["lost_events"] > 0 and last["lost_events"] >= u["lost_events"],
                  "%s: the shaped link loses datagrams, and live counts %d lost events" % (name, u["lost_events"]),
                  u)
            check("events lost" in r.stderr, "%s: live warns about the lost events" % name, r.stderr)
        else:
            check(u["lost_datagrams"] == 0 and u["lost_events"] == 0 and last["lost_events"] == 0 and
                  calls.get("tiny_a") == n, "%s: nothing lost, exact counts" % name, (u, calls))


def outer(args):
    tmp = tempfile.mkdtemp(prefix="layerprof-agent-")
    os.chmod(tmp, 0o755)
    net = Net()
    if net.why:
        print("skip network namespaces: %s; running over loopback" % net.why)
    agent = None
    try:
        rec = build_prog(tmp, "recursion")
        phases = build_prog(tmp, "phases")
        threads = build_prog(tmp, "threads")
        agent = Agent(net, args.build, tmp)

        out = run_scenario(net, "session", tmp, prog=threads)
        check(out.get("welcome") and out.get("session"), "full session: handshake with token, START", out)
        check(out.get("exit", {}).get("status") == "0", "full session: the agent reports the exit status", out)
        calls, d = report(args.build, os.path.join(tmp, "session.trace"))
        check(calls and calls.get("leaf") == 1000 and calls.get("late_work") == 7 and d["complete"],
              "full session: the received stream is a trace with exact counts", calls or d)

        progress = os.path.join(tmp, "progress")
        out = run_scenario(net, "intervals", tmp, prog=phases, progress=progress)
        check(out.get("ok"), "two start/stop intervals ran", out)
        calls, d = report(args.build, os.path.join(tmp, "intervals.trace"))
        want = {"phase2": 200, "phase4": 400}
        got = {k: v for k, v in (calls or {}).items() if k.startswith("phase")}
        check(got == want, "only the calls inside the two intervals reach the host", got)

        # the same program, unfiltered and filtered at the source
        out_all = run_scenario(net, "session", tmp, prog=rec, save=os.path.join(tmp, "all.trace"))
        static_rec = os.path.join(tmp, "recursion-nopie")
        subprocess.run(["gcc", "-O2", "-g", "-no-pie", "-finstrument-functions", "-I", PROGS,
                        os.path.join(PROGS, "recursion.c"), "-o", static_rec], check=True)
        main_addr = nm_offset(static_rec, "main")
        out_f = run_scenario(net, "filtered", tmp, prog=static_rec, only_addr=main_addr)
        calls, d = report(args.build, os.path.join(tmp, "filtered.trace"))
        check(calls == {"main": 1}, "a source filter (only main) records only main", calls or d)
        check(out_f.get("wire_bytes", 1 << 30) < out_all.get("wire_bytes", 0) / 2,
              "the filter reduces the bytes on the wire",
              "%s filtered vs %s unfiltered" % (out_f.get("wire_bytes"), out_all.get("wire_bytes")))

        out = run_scenario(net, "wrong_token", tmp)
        check(out.get("type") == lpwire.ERROR and out.get("payload") == "refused" and out.get("closed"),
              "a wrong token is refused and told nothing else", out)
        check("refused" in agent.text() and "wrong token" in agent.text(), "the refusal is logged by the agent")

        out = run_scenario(net, "garbage", tmp)
        check(out.get("garbage_closed") and out.get("oversize_closed") and out.get("seq_closed") and
              out.get("still_serving"),
              "garbage, oversized and out-of-sequence frames close the connection; the agent goes on", out)

        km = build_prog(tmp, "killme")
        out = run_scenario(net, "reconnect", tmp, prog=km)
        check(out.get("alive_while_away"), "the program keeps running while the host is away", out)
        check("state=running" in out.get("welcome", ""), "a reconnecting host is told its running session", out)
        check(out.get("chunks_after", 0) > 0, "tracing resumes after the reconnect", out)
        check(out.get("exit", {}).get("status") == "9", "a killed program is reported (signal 9)", out)
        calls, d = report(args.build, os.path.join(tmp, "reconnect.trace"))
        check(calls is not None and calls.get("tick", 0) > 0, "the data before the crash is kept", calls or d)

        # attach: the program runs with the runtime but without a session,
        # and registers itself because the agent's attach directory exists
        env = dict(os.environ, LAYERPROF_ATTACH_DIR=agent.attach_dir,
                   LD_PRELOAD=os.path.join(args.build, "runtime", "liblayerprof.so"))
        prog = subprocess.Popen(net.target([km]), env=env, stdout=subprocess.PIPE, universal_newlines=True)
        pid = int(prog.stdout.readline())
        wait_path = os.path.join(agent.attach_dir, str(pid))
        deadline = time.time() + 10
        while not os.path.exists(wait_path) and time.time() < deadline:  # it registers itself
            time.sleep(0.01)
        out = run_scenario(net, "attach", tmp, pid=pid)
        prog.wait(timeout=30)
        check(out.get("session"), "attach to a running program by pid", out)
        calls, d = report(args.build, os.path.join(tmp, "attach.trace"))
        check(calls is not None and calls.get("tick", 0) > 100 and calls.get("ready", 0) == 0,
              "an attached program's calls after the attach reach the host, none before", calls or d)
        check("no process 999999" in out.get("bad_pid", ""), "attaching to a missing pid is refused", out)

        busy = build_prog(tmp, "busy")
        for throttled in (False, True):
            if throttled and not net.throttle(True):
                print("skip UDP loss: cannot shape the link here (no tc qdisc, or no namespaces)")
                break
            name = "udp-lossy" if throttled else "udp"
            # small enough for the rings when clean, big enough to overflow
            # the shaped link's queue
            n = 300000 if throttled else 50000
            out = run_scenario(net, "udp", tmp, save=os.path.join(tmp, name + ".trace"), prog=busy,
                               host_ip=net.host_ip, prog_args=[str(n)])
            net.throttle(False)
            calls, d = report(args.build, os.path.join(tmp, name + ".trace"))
            if not check("sent_events" in out and calls is not None, "%s: session ran" % name, out if calls else d):
                continue
            lost_events = out["sent_events"] - d["events"]
            if throttled:
                check(out["lost_datagrams"] > 0 and lost_events > 0,
                      "UDP over a lossy link: the host counts %d lost datagrams, %d lost events" %
                      (out["lost_datagrams"], lost_events), out)
                check(calls.get("tiny_a", 0) < 300000, "UDP over a lossy link: what arrived is decodable",
                      calls)
            else:
                check(out["lost_datagrams"] == 0 and lost_events == 0 and calls.get("tiny_a") == 50000,
                      "UDP over a clean link: nothing lost, exact counts", (out, calls))

        live_udp(net, args.build, tmp, agent, busy)

        # agent killed: the program goes on
        check(agent.proc.poll() is None, "the agent survived every bad peer")
    finally:
        if agent:
            agent.stop()
        net.release()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--ip")
    ap.add_argument("--host-ip")
    ap.add_argument("--port", type=int, default=PORT)
    ap.add_argument("--save")
    ap.add_argument("--prog")
    ap.add_argument("--progress")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--only-addr")
    ap.add_argument("prog_args", nargs="*")
    args = ap.parse_args()
    if args.scenario:
        return scenario_main(args)
    if not args.build:
        ap.error("--build is required")
    args.build = os.path.abspath(args.build)
    return outer(args)


if __name__ == "__main__":
    sys.exit(main())
