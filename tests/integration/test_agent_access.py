#!/usr/bin/env python3
"""Who may use the agent layerprofd (docs/protocol.md, "Access"), tested as
the attacker would: an unprivileged user (nobody, through setpriv) against
an agent run by root.  Over TCP only a peer that knows the token gets in,
on loopback too; on the UNIX socket the kernel's word on the peer's uid
(SO_PEERCRED) lets in the agent's user and root; weak tokens are refused
and --gen-token makes good ones; peers that have not authenticated get a
few places with an absolute deadline, and never keep the host out.

usage: test_agent_access.py --build BUILD_DIR [GROUP...]
Ends with 'N passed, N failed'; needs root (skips otherwise).  The
attacker's side is this script again, run as nobody with --attacker."""

import argparse
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import lpwire  # noqa: E402
from harness import check, skip  # noqa: E402

started = harness.started
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
DEADLINE_S = 5  # AGENT_AUTH_DEADLINE_NS
PER_PEER = 4  # AGENT_PENDING_PER_PEER


def wait_until(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


class Agent:
    """layerprofd run by root with these options; its log is collected."""

    def __init__(self, build, tmp, args):
        self.log = os.path.join(tmp, "agent-%d.log" % time.time_ns())
        self.logf = open(self.log, "w")
        self.p = subprocess.Popen([os.path.join(build, "agent", "layerprofd"), "--attach-dir",
                                   os.path.join(tmp, "attach")] + args, stdout=self.logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        started.append(self.p)
        self.ok = wait_until(lambda: "listening on" in self.text() or self.p.poll() is not None, 20) and \
            self.p.poll() is None

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()


def as_nobody(tmp, *args, timeout=120):
    """This script's attacker side, run as nobody; its JSON answer."""
    r = subprocess.run(NOBODY + [sys.executable, os.path.abspath(__file__), "--attacker"] + list(args), cwd=tmp,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "attacker printed %r %r" % (r.stdout, r.stderr)}


def write_token(d):
    """A strong token in d/token, mode 0600 (written here, so that the
    attacks also run against an agent without --gen-token)."""
    path = os.path.join(d, "token")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(os.urandom(24).hex() + "\n")
    return path


def private_tmp(tmp, name):
    """A directory nobody may enter and read (0755), for files that an
    attack must not be able to make itself."""
    os.chmod(tmp, 0o755)
    d = os.path.join(tmp, name)
    os.mkdir(d)
    os.chmod(d, 0o755)
    return d


# ------------------------------------------------------------ the attacker

def attack_start(addr, marker):
    """Connects, authenticates without a token and, if let in, asks the
    agent to start a shell that writes marker."""
    out = {}
    try:
        host, port = (addr, None) if addr.startswith("unix:") else (addr.rsplit(":", 1)[0],
                                                                    int(addr.rsplit(":", 1)[1]))
        c = lpwire.Client(host, port, timeout=10)
    except OSError as e:
        out["connect_error"] = e.strerror or str(e)
        return out
    out["connected"] = True
    try:
        ftype, payload = c.handshake(None)
        out["answer"] = [ftype, payload.decode(errors="replace")]
        if ftype == lpwire.WELCOME:
            ftype, payload = c.start(["/bin/sh", "-c", "id > %s" % marker])
            out["start"] = [ftype, payload.decode(errors="replace")]
            time.sleep(1)  # the shell's time to run
    except (lpwire.Closed, OSError, AssertionError) as e:
        out["closed"] = type(e).__name__
    return out


def attack_trickle(host, port, slots, seconds, stop_file, what="auth", replace=True):
    """Keeps `slots` connections open, each sending one byte a second of
    what: an AUTH frame (the agent), or an HTTP request's headers (serve);
    with replace, a connection the server closes is replaced.  Runs at
    least `seconds`, then until stop_file exists.  Reports how many the
    server closed and how long the longest lived, closed or still open."""
    if what == "auth":
        frame = lpwire.frame(lpwire.AUTH, 0, b"protocol=1\nmac=" + b"0" * 64 + b"\n")
    else:
        frame = b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    opened = 0
    conns = []  # dicts: sock, opened, sent, closed_by_agent, life
    done = []
    t0 = time.time()

    def open_one():
        s = socket.create_connection((host, port), timeout=5)
        s.setblocking(False)
        conns.append({"sock": s, "opened": time.time(), "sent": 0})

    while time.time() - t0 < seconds or not os.path.exists(stop_file):
        while len(conns) < slots and (replace or opened < slots):
            opened += 1
            try:
                open_one()
            except OSError:
                time.sleep(0.1)
                break
            if opened == slots:  # all opened once: said where the test lets nobody write
                try:
                    open(stop_file + ".opened", "w").close()
                except OSError:
                    pass
        for c in list(conns):
            gone = False
            try:
                d = c["sock"].recv(4096)
                # HELLO, then perhaps an ERROR before the close; b"" is the close
                gone = d == b""
            except BlockingIOError:
                pass
            except OSError:
                gone = True
            if not gone and c["sent"] < len(frame) and time.time() - c["opened"] >= c["sent"]:
                try:
                    c["sock"].send(frame[c["sent"]:c["sent"] + 1])
                    c["sent"] += 1
                except BlockingIOError:
                    pass
                except OSError:
                    gone = True
            if gone:
                c["sock"].close()
                done.append({"life": time.time() - c["opened"], "sent": c["sent"]})
                conns.remove(c)
        time.sleep(0.05)
    for c in conns:
        c["sock"].close()
    return {"closed_by_agent": len(done), "still_open": len(conns),
            "longest": max([d["life"] for d in done] + [0]),
            "longest_open": max([time.time() - c["opened"] for c in conns] + [0]),
            "most_bytes": max([d["sent"] for d in done] + [0]), "ran": time.time() - t0}


def attack_flood(host, port, n):
    """Opens n connections that send nothing, and waits until the agent
    has closed them all (or 60 s)."""
    socks = [socket.create_connection((host, port), timeout=5) for _ in range(n)]
    opened, closed = time.time(), {}
    for s in socks:
        s.setblocking(False)
    while len(closed) < n and time.time() - opened < 60:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        closed[i] = time.time() - opened
                        break
            except BlockingIOError:
                pass
            except OSError:
                closed[i] = time.time() - opened
        time.sleep(0.05)
    for s in socks:
        s.close()
    return {"closed_by_agent": len(closed), "longest": max(list(closed.values()) + [0])}


def attacker_main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--attacker", action="store_true")
    ap.add_argument("mode")
    ap.add_argument("rest", nargs="*")
    a = ap.parse_args(argv)
    if a.mode == "start":
        out = attack_start(a.rest[0], a.rest[1])
    elif a.mode == "trickle":
        out = attack_trickle(a.rest[0], int(a.rest[1]), int(a.rest[2]), float(a.rest[3]), a.rest[4])
    elif a.mode == "trickle-http":
        # serve: the 40 half-open connections, once, sending headers slowly
        out = attack_trickle(a.rest[0], int(a.rest[1]), int(a.rest[2]), float(a.rest[3]), a.rest[4], "http", False)
    elif a.mode == "flood":
        out = attack_flood(a.rest[0], int(a.rest[1]), int(a.rest[2]))
    elif a.mode == "fake-agent":
        # a socket of nobody's, where a host looking for an agent might go
        s = socket.socket(socket.AF_UNIX)
        s.bind(a.rest[0])
        os.chmod(a.rest[0], 0o666)
        s.listen(4)
        print("listening", flush=True)
        s.settimeout(30)
        try:
            c, _ = s.accept()
            c.close()
            out = {"accepted": True}
        except socket.timeout:
            out = {"accepted": False}
    else:
        out = {"error": "unknown mode"}
    print(json.dumps(out))
    return 0


# ------------------------------------------------------------------ groups

def group_tokenless(build, lp, tmp):
    """A TCP listener without a token, on loopback: any local user could
    connect and start programs as the agent's user.  The agent refuses to
    start that way; nobody's attack finds no agent and runs nothing."""
    d = private_tmp(tmp, "tokenless")
    marker = os.path.join(d, "pwned")
    port = harness.free_port()
    agent = Agent(build, d, ["--listen", "127.0.0.1:%d" % port])
    try:
        out = as_nobody(d, "start", "127.0.0.1:%d" % port, marker)
        check(not os.path.exists(marker), "nobody cannot make a root agent on 127.0.0.1 start a shell",
              (out, open(marker).read() if os.path.exists(marker) else ""))
        rc = agent.p.poll()  # None: the agent runs, and listens
        text = agent.text()
        check(rc == 2 and "needs --token-file" in text and "--gen-token" in text,
              "layerprofd --listen 127.0.0.1:PORT without a token: refused, exit 2, says how to make one",
              "rc %s %r" % (rc, text))
    finally:
        agent.stop()
    # the same with a token: nobody, without it, is refused and runs nothing
    tok = write_token(d)
    agent = Agent(build, d, ["--listen", "127.0.0.1:%d" % port, "--token-file", tok])
    marker = os.path.join(d, "pwned-with-token")
    try:
        if not check(agent.ok, "layerprofd --listen 127.0.0.1:PORT --token-file: listens", agent.text()):
            return
        out = as_nobody(d, "start", "127.0.0.1:%d" % port, marker)
        check(out.get("answer") == [lpwire.ERROR, "refused"] and "start" not in out and not os.path.exists(marker),
              "with a token: nobody without it gets ERROR refused and runs nothing", out)
        check("wrong token" in agent.text() or "no token" in agent.text(), "the agent logs the refusal",
              agent.text()[-500:])
        r = subprocess.run([lp, "live", "--connect", "127.0.0.1:%d" % port, "--token-file", tok, "--format", "json",
                            "--", "/bin/true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        check(r.returncode == 0, "with the token: live runs a program (exit 0)", r.stderr)
    finally:
        agent.stop()


def group_unix(build, lp, tmp):
    """The UNIX socket: made 0600; when another user can reach it anyway,
    SO_PEERCRED keeps nobody out.  The agent's own user (root here) needs
    no token."""
    d = private_tmp(tmp, "unix")
    sock = os.path.join(d, "agent.sock")
    marker = os.path.join(d, "pwned")
    agent = Agent(build, d, ["--unix", sock])
    try:
        if not check(agent.ok, "layerprofd --unix PATH: listens", agent.text()):
            return
        st = os.lstat(sock)
        check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0,
              "the socket is root's, mode 0600", oct(st.st_mode))
        out = as_nobody(d, "start", "unix:" + sock, marker)
        check(out.get("connect_error") == "Permission denied" and not os.path.exists(marker),
              "nobody cannot even connect to the socket", out)
        # as if someone had opened it up: the kernel still names the peer
        os.chmod(sock, 0o666)
        out = as_nobody(d, "start", "unix:" + sock, marker)
        check(out.get("connected") and "start" not in out and not os.path.exists(marker),
              "socket opened to all: nobody is refused (SO_PEERCRED) and runs nothing", out)
        check(wait_until(lambda: "not the agent's user" in agent.text(), 10),
              "the agent logs nobody's uid as refused", agent.text()[-500:])
        r = subprocess.run([lp, "live", "--connect", "unix:" + sock, "--format", "json", "--", "/bin/true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        check(r.returncode == 0, "the agent's own user: live over the UNIX socket, no token (exit 0)", r.stderr)
        r = subprocess.run([lp, "live", "--connect", "unix:" + sock, "--udp", "--", "/bin/true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        check(r.returncode == 2 and "--udp is for an agent over TCP" in r.stderr, "--udp over a UNIX socket: exit 2",
              r.stderr)
    finally:
        agent.stop()
    check(not os.path.exists(sock), "the agent removes its socket when it stops")
    # a stale socket of the agent's user is replaced; what is not its own is not
    s = socket.socket(socket.AF_UNIX)
    s.bind(sock)
    s.close()
    agent = Agent(build, d, ["--unix", sock])
    check(agent.ok, "a stale socket left by an agent that died is replaced", agent.text())
    agent.stop()
    with open(sock, "w") as f:
        f.write("not a socket\n")
    agent = Agent(build, d, ["--unix", sock])
    check(not agent.ok and agent.p.wait(timeout=20) == 1 and "something is there already" in agent.text() and
          open(sock).read() == "not a socket\n", "a file at the path is left alone: exit 1", agent.text())
    agent.stop()
    os.unlink(sock)

    # the host speaks only to an agent of its own user or root
    pub = private_tmp(tmp, "unix-public")
    os.chmod(pub, 0o1777)
    fake = os.path.join(pub, "fake.sock")
    p = subprocess.Popen(NOBODY + [sys.executable, os.path.abspath(__file__), "--attacker", "fake-agent", fake],
                         cwd=pub, stdout=subprocess.PIPE, universal_newlines=True)
    started.append(p)
    if check(p.stdout.readline().strip() == "listening", "nobody's fake agent listens"):
        r = subprocess.run([lp, "live", "--connect", "unix:" + fake, "--", "/bin/true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        check(r.returncode == 1 and "held by uid 65534" in r.stderr,
              "live refuses an agent socket of another user (exit 1)", r.stderr)
    p.kill()
    p.wait()


def group_default_dir(build, lp, tmp):
    """With no --listen and no --unix: /tmp/layerprofd-UID/agent.sock in a
    directory the agent makes 0700; one planted by another user is
    refused, never used."""
    uid = os.geteuid()
    d = "/tmp/layerprofd-%d" % uid
    if os.path.lexists(d):
        skip("default socket directory", "%s exists (an agent of this user may be running)" % d)
        return
    agent = Agent(build, private_tmp(tmp, "default"), [])
    try:
        if not check(agent.ok, "layerprofd with no --listen: listens on the default UNIX socket", agent.text()):
            return
        st = os.lstat(d)
        check(stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == uid,
              "the default directory is the agent's, 0700", oct(st.st_mode))
        check("listening on unix:%s/agent.sock" % d in agent.text(), "the agent says where", agent.text())
        r = subprocess.run([lp, "live", "--format", "json", "--", "/bin/true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        check(r.returncode == 0, "live without --connect finds its user's agent", r.stderr)
    finally:
        agent.stop()
        if os.path.exists(d + "/agent.sock"):
            os.unlink(d + "/agent.sock")
        if os.path.isdir(d) and not os.path.islink(d):
            os.rmdir(d)
    # planted by nobody: a directory of its own, then a link to one of root's
    for what, plant in (("a directory of nobody's", ["mkdir", "-m", "0777", d]),
                        ("a link to a root directory", ["ln", "-s", tmp, d])):
        r = subprocess.run(NOBODY + plant, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if not check(r.returncode == 0, "nobody plants %s at %s" % (what, d), r.stderr):
            continue
        agent = Agent(build, private_tmp(tmp, "planted-%d" % len(what)), [])
        rc = agent.p.wait(timeout=20) if not agent.ok else None
        check(rc == 1 and not os.path.exists(os.path.join(tmp, "agent.sock")) and
              ("belongs to uid 65534" in agent.text() or "not a directory" in agent.text()),
              "%s in the default's place: refused, exit 1, no socket made through it" % what, agent.text())
        agent.stop()
        if os.path.islink(d):
            os.unlink(d)
        elif os.path.isdir(d):
            os.rmdir(d)


def group_tokens(build, lp, tmp):
    """Weak tokens are refused by the agent; --gen-token writes a good one,
    in a new file of mode 0600, never over anything."""
    d = private_tmp(tmp, "tokens")
    exe = os.path.join(build, "agent", "layerprofd")
    for name, text in (("short", "s3cret-token"), ("repeated", "abababababababababababab"),
                       ("one-char", "x" * 40)):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, 0o600)
        r = subprocess.run([exe, "--unix", os.path.join(d, "a.sock"), "--token-file", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
        check(r.returncode == 1 and "too weak" in r.stderr and "--gen-token" in r.stderr,
              "a %s token (%r) is refused: exit 1, names the generator" % (name, text), r.stderr)
    gen = os.path.join(d, "gen")
    old = os.umask(0)
    try:
        r = subprocess.run([exe, "--gen-token", gen], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=20)
    finally:
        os.umask(old)
    st = os.lstat(gen) if os.path.exists(gen) else None
    text = open(gen).read() if st else ""
    check(r.returncode == 0 and st and stat.S_IMODE(st.st_mode) == 0o600 and len(text) == 65 and
          all(c in "0123456789abcdef" for c in text.strip()), "--gen-token: 64 hex digits, mode 0600 under umask 0",
          (r.returncode, r.stderr, st and oct(st.st_mode), text))
    r = subprocess.run([exe, "--gen-token", gen], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=20)
    check(r.returncode == 1 and "already" in r.stderr and open(gen).read() == text,
          "--gen-token over an existing file: exit 1, the file unchanged", r.stderr)
    gen2 = os.path.join(d, "gen2")
    r = subprocess.run([lp, "config", "--gen-token", gen2], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=20)
    st = os.lstat(gen2) if os.path.exists(gen2) else None
    check(r.returncode == 0 and st and stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 65 and
          open(gen2).read() != text, "layerprof config --gen-token: another token, mode 0600", r.stderr)
    # nobody plants a link where root will write a token
    pub = private_tmp(tmp, "public")
    os.chmod(pub, 0o1777)
    link = os.path.join(pub, "token")
    subprocess.run(NOBODY + ["ln", "-s", os.path.join(d, "stolen"), link], check=True)
    r = subprocess.run([exe, "--gen-token", link], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=20)
    check(r.returncode == 1 and not os.path.exists(os.path.join(d, "stolen")),
          "--gen-token through a planted link: refused, nothing written", r.stderr)


def group_preauth(build, lp, tmp):
    """Peers that never finish the handshake.  Nobody keeps as many
    connections open as one address may hold pending, each trickling one
    byte of an AUTH frame a second, and replaces each one the agent closes.
    Meanwhile the real host, from the same address, runs whole sessions:
    its connection pushes out the attacker's oldest.  The trickling
    connections are cut at the deadline, bytes or not.  Then a flood of
    silent connections: one address keeps only its few places."""
    d = private_tmp(tmp, "preauth")
    tok = write_token(d)
    port = harness.free_port()
    agent = Agent(build, d, ["--listen", "127.0.0.1:%d" % port, "--token-file", tok])
    if not check(agent.ok, "agent with a token listens", agent.text()):
        agent.stop()
        return
    stop = os.path.join(d, "stop")
    cut = "no AUTH within the handshake deadline"
    result = {}

    def attacker():
        result.update(as_nobody(d, "trickle", "127.0.0.1", str(port), str(PER_PEER), str(4 * DEADLINE_S), stop,
                                timeout=300))

    t = threading.Thread(target=attacker)
    t.start()
    try:
        # the attack is under way: its first connections were cut at the deadline
        check(wait_until(lambda: cut in agent.text(), 60), "the agent cuts nobody's trickling connections",
              agent.text()[-500:])
        sessions = []
        for i in range(3):
            r = subprocess.run([lp, "live", "--connect", "127.0.0.1:%d" % port, "--token-file", tok, "--format",
                                "json", "--", "/bin/sh", "-c", "exit %d" % (i + 3)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
            sessions.append((r.returncode, r.stderr.strip()[-300:]))
        check(all(rc == 0 for rc, _ in sessions), "the real host runs 3 sessions during the attack", sessions)
        # a slow host (a loaded machine): it answers HELLO a second after
        # connecting, while the attacker opens a connection for each one
        # the agent closes; those trickle their frames and go first
        answer = None
        try:
            c = lpwire.Client("127.0.0.1", port, timeout=20)
            time.sleep(1.0)
            answer = c.handshake(open(tok).read().strip())[0]
            c.close()
        except (lpwire.Closed, OSError, AssertionError) as e:
            answer = type(e).__name__
        check(answer == lpwire.WELCOME, "a host that answers HELLO after 1 s is served during the attack", answer)
    finally:
        open(stop, "w").close()
        t.join(400)
    text = agent.text()
    check(result.get("closed_by_agent", 0) >= PER_PEER and "error" not in result,
          "the agent closes the trickling connections (%s closed)" % result.get("closed_by_agent"), result)
    check(0 < result.get("longest", 1e9) < 3 * DEADLINE_S and result.get("longest_open", 1e9) < 3 * DEADLINE_S,
          "no trickling connection lives much past the %d s deadline, bytes or not" % DEADLINE_S, result)
    check("busy" not in text, "the host was never refused busy", text[-800:])

    # a flood of silent connections from one address: the newest PER_PEER
    # stay (until the deadline), every older one is pushed out at once
    wait_until(lambda: agent.text().count("left before AUTH") + agent.text().count(cut) >=
               result.get("closed_by_agent", 0), 10)
    before = agent.text()
    n = 3 * PER_PEER
    out = as_nobody(d, "flood", "127.0.0.1", str(port), str(n))
    check(wait_until(lambda: agent.text().count(cut) - before.count(cut) >= PER_PEER, 30), "the flood is over")
    after = agent.text()
    pushed = after.count("pushed out by a newer peer from the same place") - \
        before.count("pushed out by a newer peer from the same place")
    check(out.get("closed_by_agent") == n and pushed == n - PER_PEER and
          after.count(cut) - before.count(cut) == PER_PEER,
          "%d silent connections from one address: %d pushed out, %d cut at the deadline" %
          (n, n - PER_PEER, PER_PEER), (out, pushed, after.count(cut) - before.count(cut)))
    r = subprocess.run([lp, "live", "--connect", "127.0.0.1:%d" % port, "--token-file", tok, "--format", "json",
                        "--", "/bin/true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    check(r.returncode == 0, "after the attacks the host is served", r.stderr)
    check(agent.p.poll() is None, "the agent survived the attacks")
    agent.stop()


GROUPS = {
    "tokenless": group_tokenless,
    "unix": group_unix,
    "default_dir": group_default_dir,
    "tokens": group_tokens,
    "preauth": group_preauth,
}


def setup(build):
    if os.geteuid() != 0:
        skip("agent access", "not root: the attacks run as nobody through setpriv")
        return None
    if subprocess.run(NOBODY + ["true"]).returncode != 0:
        skip("agent access", "setpriv cannot switch to nobody here")
        return None
    return (build, os.path.join(build, "host", "layerprof"))


if __name__ == "__main__":
    if "--attacker" in sys.argv:
        sys.exit(attacker_main(sys.argv[1:]))
    sys.exit(harness.run_groups(GROUPS, setup, prefix="layerprof-access-"))
