#!/usr/bin/env python3
"""Tests of `layerprof serve`: real instrumented programs (tests/programs)
recorded, served, and looked at in headless Chromium (driven by
playwright-core through ui_test.js) against what `report` and `tree`
print; the server's guards probed with a plain HTTP client; a live session
against a real agent driven from the page.

usage: test_serve.py --build BUILD_DIR [GROUP...]
groups: security, index, trace, lost, live, heap, liveheap, livetl, kernel, attach_dynamic, coverage, sync
(default: all)
Prints one line per check and ends with 'N passed, N failed'; exits 77
(skipped) when node, npm or Chromium is missing for the browser groups and
no other group ran.  Screenshots go to BUILD_DIR/tests/ui-artifacts/."""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402
import kernel_truth as kt  # noqa: E402
import run as it  # noqa: E402  (the builders of run.py)
from harness import check, skip  # noqa: E402
from test_live import Agent, Lines, Plain, code_changes, uprobe_events, uprobes_unusable  # noqa: E402
import test_agent_access as taa  # noqa: E402  (the attacker's side, run as nobody)

CHROMIUM = "/usr/bin/chromium"
NODE_MIN = 18  # playwright-core 1.61 (package-lock.json): Debian 12's nodejs works
SKIPPED = 77
GUARD_DEADLINE_S = 10  # SERVEGUARD_DEADLINE_MS
GUARD_PER_IP = 8  # SERVEGUARD_PENDING_PER_IP
started = []


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Server:
    """layerprof serve on a free port; url is None when it did not start."""

    def __init__(self, lp, args):
        self.p = subprocess.Popen([lp.exe, "serve", "--port", "0"] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True)
        started.append(self.p)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)
        line = self.out.wait_for(lambda l: "http://" in l, 60)
        self.url = None
        if line:
            self.url = line[line.index("http://"):].split()[0]
            self.host, port = self.url[len("http://"):].rstrip("/").rsplit(":", 1)
            self.port = int(port)

    def stop(self):
        stop(self.p)


def raw_request(port, data, host="127.0.0.1", timeout=10):
    """Sends bytes as they are (no client normalises the path); returns
    (status or None, the whole answer)."""
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not b:
                break
            out += b
    finally:
        s.close()
    try:
        status = int(out.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = None
    return status, out


def get(port, path, headers=None, method="GET", body=None, host="127.0.0.1", source=None):
    c = http.client.HTTPConnection(host, port, timeout=10, source_address=(source, 0) if source else None)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Set-Cookie"), data


def request_closed(port, data):
    """Sends one request on a kept-alive connection: (status, whether the
    server closed the connection after its answer, within 10 s)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out, closed = b"", False
    try:
        s.sendall(data)
        end = time.time() + 10
        while time.time() < end:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not b:
                closed = True
                break
            out += b
            head, sep, body = out.partition(b"\r\n\r\n")
            length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")]
            if sep and length and len(body) >= length[0]:
                s.settimeout(max(0.1, min(2.0, end - time.time())))  # the close, if any, comes now
    finally:
        s.close()
    try:
        status = int(out.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = None
    return status, closed


def serve_preauth(srv, tmp):
    """As nobody: 40 connections from 127.0.0.1, each sending a request's
    headers one byte a second.  Another client, from 127.0.0.2 and from
    127.0.0.1 alike, is served meanwhile; one address keeps at most 8
    such connections, and those are cut at the deadline."""
    d = taa.private_tmp(tmp, "serve-preauth")
    os.chmod(d, 0o1777)  # the attacker says here that its connections are open
    stop = os.path.join(d, "stop")
    result = {}
    t = threading.Thread(target=lambda: result.update(taa.as_nobody(
        d, "trickle-http", "127.0.0.1", str(srv.port), "40", str(2 * GUARD_DEADLINE_S), stop, timeout=300)))
    t.start()
    try:
        check(wait_until(lambda: os.path.exists(stop + ".opened"), 60), "nobody opens 40 half-open connections")
        for src in ("127.0.0.2", "127.0.0.1"):
            try:
                st = get(srv.port, "/api/summary", source=src)[0]
            except (OSError, http.client.HTTPException) as e:
                st = str(e)
            check(st == 200, "during the attack a client from %s is served" % src, st)
    finally:
        open(stop, "w").close()
        t.join(400)
    check(result.get("closed_by_agent") == 40 and result.get("still_open") == 0,
          "the server closes all 40 (all but %d at once, those at the deadline)" % GUARD_PER_IP, result)
    check(0 < result.get("longest", 1e9) < 3 * GUARD_DEADLINE_S and
          result.get("longest_open", 1e9) < 3 * GUARD_DEADLINE_S,
          "no half-open connection lives much past the %d s deadline, bytes or not" % GUARD_DEADLINE_S, result)


def own_address():
    """A non-loopback IPv4 address of this machine, or None (no packet is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        a = s.getsockname()[0]
    except OSError:
        a = None
    finally:
        s.close()
    return a if a and not a.startswith("127.") else None


# ---------------------------------------------------------------- traces

def record(lp, b, tmp, name):
    out = os.path.join(tmp, "t-" + name)
    r = lp("record", "-q", "-o", out, "--", b.prog(name))
    return out, r

def count_nodes(nodes, name):
    n = 0
    for x in nodes:
        n += x["name"] == name and not x.get("syscall")
        n += count_nodes(x.get("children", []), name)
    return n


# ---------------------------------------------------------------- browser

class Browser:
    """node + playwright-core + Chromium, or why not."""

    def __init__(self, build):
        self.why = None
        self.dir = os.path.join(build, "tests", "ui-node")
        self.artifacts = os.path.join(build, "tests", "ui-artifacts")
        for tool in ("node", "npm"):
            if not shutil.which(tool):
                self.why = "%s is not installed" % tool
                return
        v = subprocess.run(["node", "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        try:
            major = int(v.lstrip("v").split(".")[0])
        except ValueError:
            major = 0
        if major < NODE_MIN:
            self.why = "node %s is too old for playwright-core (%d or later)" % (v or "?", NODE_MIN)
            return
        if not os.access(CHROMIUM, os.X_OK):
            self.why = "%s is not installed (Debian package chromium)" % CHROMIUM
            return
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(self.artifacts, exist_ok=True)
        lock = os.path.join(HERE, "package-lock.json")
        stamp = os.path.join(self.dir, "node_modules", ".lock-copy")
        fresh = os.path.exists(stamp) and open(stamp).read() == open(lock).read()
        if not fresh:
            shutil.copy(os.path.join(HERE, "package.json"), self.dir)
            shutil.copy(lock, self.dir)
            r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=self.dir,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                               timeout=600)
            if r.returncode:
                self.why = "npm ci of playwright-core failed: %s" % r.stdout.strip()[-400:]
                return
            shutil.copy(lock, stamp)

    def run(self, scenario, url, expect, prefix=""):
        cfg = {"modules": self.dir, "chromium": CHROMIUM, "url": url, "scenario": scenario,
               "screenshots": self.artifacts, "prefix": prefix, "expect": expect}
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(cfg, f)
        try:
            r = subprocess.run(["node", os.path.join(HERE, "ui_test.js"), path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
        finally:
            os.unlink(path)
        ran = False
        for line in r.stdout.splitlines():
            if line.startswith("ok   "):
                check(True, "browser: " + line[5:])
                ran = True
            elif line.startswith("FAIL "):
                rest = line[5:]
                what, _, detail = rest.partition(": ")
                check(False, "browser: " + what, detail)
                ran = True
        if not ran or (r.returncode and "FAIL" not in r.stdout):
            check(False, "browser: %s scenario ran" % scenario, r.stdout[-2000:])


# ---------------------------------------------------------------- groups

def group_security(lp, b, tmp):
    trace, r = record(lp, b, tmp, "threads")
    if not check(r.returncode == 0, "record threads", r.stderr):
        return
    srv = Server(lp, [trace])
    try:
        if not check(srv.url is not None, "serve prints its address", srv.err.text()):
            return
        check(srv.host == "127.0.0.1", "binds 127.0.0.1 by default", srv.url)
        st, _, body = get(srv.port, "/")
        check(st == 200 and b"<title>layerprof</title>" in body, "serves the page", st)
        st, _, body = get(srv.port, "/api/summary")
        check(st == 200 and json.loads(body)["events"] > 0, "serves the API", st)
        other = own_address()
        if other:
            try:
                socket.create_connection((other, srv.port), timeout=3).close()
                reached = True
            except OSError:
                reached = False
            check(not reached, "not reachable on %s (another address of this machine)" % other)
        else:
            skip("not reachable on other addresses", "this machine has no other IPv4 address")
        for path in (b"/../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/..%2f..%2fetc%2fpasswd",
                     b"/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", b"/ui/../../../../etc/passwd", b"/api/../../etc/passwd",
                     b"//etc/passwd", b"/.%2e/.%2e/etc/passwd"):
            st, out = raw_request(srv.port, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                  b"Connection: close\r\n\r\n" % srv.port)
            check(st in (400, 404) and b"root:" not in out, "path traversal refused: %s" % path.decode(),
                  "status %s" % st)
        st, _, _ = get(srv.port, "/etc/passwd")
        check(st == 404, "unknown path: 404", st)
        st, _, _ = get(srv.port, "/api/nothing")
        check(st == 404, "unknown API: 404", st)
        st, _, _ = get(srv.port, "/index.html", method="PUT", body=b"x")
        check(st == 405, "PUT: 405", st)
        st, _, _ = get(srv.port, "/api/summary?q=" + "a" * 5000)
        check(st == 413, "oversized request line: 413", st)
        st, out = raw_request(srv.port, b"GET /?" + b"a" * 100000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        check(st in (413, 414, 431) or st is None, "huge request line refused", st)
        st, out = raw_request(srv.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Big: " % srv.port +
                              b"b" * 100000 + b"\r\n\r\n")
        check(st in (413, 431) or st is None, "huge header refused", st)
        st, _, _ = get(srv.port, "/api/live/stop", method="POST", body=b"x" * 100000,
                       headers={"X-Layerprof": "1"})
        check(st == 413, "oversized body: 413", st)
        st, _, _ = get(srv.port, "/api/live/stop", method="POST", body=b"", headers={})
        check(st == 403, "POST without the X-Layerprof header: 403", st)
        st, _, _ = get(srv.port, "/api/live/snapshot", method="POST", body=b"", headers={})
        check(st == 403, "POST /api/live/snapshot without the X-Layerprof header: 403", st)
        st, _, body = get(srv.port, "/api/live/snapshot", method="POST", body=b"", headers={"X-Layerprof": "1"})
        check(st == 404 and b"not a live session" in body, "POST /api/live/snapshot to a trace file: 404", st)
        st, _, _ = get(srv.port, "/", headers={"Host": "evil.example:%d" % srv.port})
        check(st == 403, "another Host name (DNS rebinding) refused on loopback", st)
        st, _, _ = get(srv.port, "/api/summary", headers={"Host": "localhost:%d" % srv.port})
        check(st == 200, "Host localhost accepted", st)
        # half-open connections from another local user: they hold no place
        # that others need, and last at most the deadline
        if os.geteuid() == 0:
            serve_preauth(srv, tmp)
        else:
            skip("half-open connections from nobody", "not root: the attack runs as nobody through setpriv")
        # served connections from one address: at most 32.  Each one is
        # answered first, so the server surely counts all 32 when the 33rd
        # comes (no sleep and hope)
        kept = []
        for _ in range(32):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            try:
                c.request("GET", "/api/summary")
                r = c.getresponse()
                r.read()
            except (OSError, http.client.HTTPException):
                break
            kept.append(c)
            if r.status != 200:
                break
        check(len(kept) == 32, "32 kept-alive connections from one address are served", len(kept))
        try:
            st, _ = raw_request(srv.port, b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close"
                                b"\r\n\r\n" % srv.port, timeout=5)
        except OSError:
            st = None
        check(st is None, "a 33rd from the same address is not served", st)
        for c in kept:
            c.close()

        def served():  # once the server has seen the closes (a slow one takes a while)
            try:
                return get(srv.port, "/api/summary")[0] == 200
            except (OSError, http.client.HTTPException):
                return False
        check(wait_until(served, 20), "after those close, requests are served again")
        check(srv.p.poll() is None, "the server is still running")
    finally:
        srv.stop()

    # any address but loopback needs a token
    r = lp("serve", "--bind", "0.0.0.0", "--port", "0", trace, timeout=20)
    check(r.returncode == 2 and "token" in r.stderr, "--bind 0.0.0.0 without a token: refused (exit 2)",
          "%d %s" % (r.returncode, r.stderr))
    r = lp("serve", "--bind", "::", "--port", "0", trace, timeout=20)
    check(r.returncode == 2 and "token" in r.stderr, "--bind :: without a token: refused (exit 2)", r.stderr)
    weak = os.path.join(tmp, "weak-token")
    with open(weak, "w") as f:
        f.write("s3cret\n")
    os.chmod(weak, 0o600)
    r = lp("serve", "--bind", "0.0.0.0", "--port", "0", "--token-file", weak, trace, timeout=20)
    check(r.returncode == 1 and "too weak" in r.stderr and "--gen-token" in r.stderr,
          "a weak token: refused (exit 1), names the generator", "%d %s" % (r.returncode, r.stderr))
    tok = os.path.join(tmp, "token")
    with open(tok, "w") as f:
        f.write("s3cret-token-for-the-test\n")
    os.chmod(tok, 0o600)
    srv = Server(lp, ["--bind", "0.0.0.0", "--token-file", tok, trace])
    try:
        if not check(srv.url is not None, "--bind 0.0.0.0 with a token: serves", srv.err.text()):
            return
        st, _, _ = get(srv.port, "/api/summary")
        check(st == 401, "no token: 401", st)
        st, _, _ = get(srv.port, "/")
        check(st == 401, "no token: the page is refused too", st)
        st, _, _ = get(srv.port, "/api/summary", headers={"X-Layerprof-Token": "wrong"})
        check(st == 401, "wrong token: 401", st)
        st, _, _ = get(srv.port, "/api/summary", headers={"X-Layerprof-Token": "s3cret-token-for-the-test"})
        check(st == 200, "token in the header: 200", st)
        st, _, _ = get(srv.port, "/api/summary", headers={"Authorization": "Bearer s3cret-token-for-the-test"})
        check(st == 200, "bearer token: 200", st)
        st, _, _ = get(srv.port, "/auth?token=nope")
        check(st == 403, "/auth with a wrong token: 403", st)
        st, cookie, _ = get(srv.port, "/auth?token=s3cret-token-for-the-test")
        check(st == 303 and cookie and "HttpOnly" in cookie, "/auth with the token: sets a cookie", cookie)
        if cookie:
            st, _, _ = get(srv.port, "/api/summary", headers={"Cookie": cookie.split(";")[0]})
            check(st == 200, "the cookie is accepted", st)
        # a refused request ends its connection: no place is kept for a
        # peer without the token
        st, closed = request_closed(srv.port, b"GET /api/summary HTTP/1.1\r\nHost: x\r\nX-Layerprof-Token: "
                                    b"wrong\r\n\r\n")
        check(st == 401 and closed, "a wrong token: 401, and the server closes the connection", (st, closed))
        st, closed = request_closed(srv.port, b"GET /api/summary HTTP/1.1\r\nHost: x\r\nX-Layerprof-Token: "
                                    b"s3cret-token-for-the-test\r\n\r\n")
        check(st == 200 and not closed, "the right token: 200, the connection kept alive", (st, closed))
        other = own_address()
        if other:
            st, _, _ = get(srv.port, "/api/summary", host=other,
                           headers={"X-Layerprof-Token": "s3cret-token-for-the-test"})
            check(st == 200, "reachable on %s with the token" % other, st)
    finally:
        srv.stop()


def group_trace(lp, b, tmp, br):
    for name in ("threads", "recursion"):
        trace, r = record(lp, b, tmp, name)
        if not check(r.returncode == 0, "record " + name, r.stderr):
            continue
        rep = lp.json("report", "--format", "json", trace)
        tree = lp.json("tree", "--format", "json", trace)
        srv = Server(lp, [trace])
        try:
            if not check(srv.url is not None, "serve " + name, srv.err.text()):
                continue
            _, _, body = get(srv.port, "/api/summary")
            summ = json.loads(body)
            ids = {(t["pid"], t["tid"], t["image"]): t["id"] for t in summ["threads"]}
            threads = []
            for t in tree["threads"]:
                tid = ids.get((t["pid"], t["tid"], t["image"]))
                if tid is not None and t["calls"]:
                    threads.append({"id": tid, "tid": t["tid"], "roots": t["calls"]})
            calls = {f["name"]: f["calls"] for f in rep["functions"]}
            most = sorted(rep["functions"], key=lambda f: (-f["calls"], f["name"]))[0]["name"]
            search = "leaf" if name == "threads" else "fib"
            text = "ea" if name == "threads" else "fi"
            busiest = max(summ["threads"], key=lambda t: t["calls"])
            expect = {
                "report_calls": calls,
                "most_called": most,
                "threads": threads[:4],
                "search": search,
                "search_paths": sum(count_nodes(t["calls"], search) for t in tree["threads"]),
                "filter_text": text,
                "filter_matches": sum(text in n.lower() for n in calls),
                "timeline_thread": busiest["id"],
            }
            # the API's own numbers first, without a browser
            _, _, body = get(srv.port, "/api/profile?sort=calls")
            api = {f["name"]: f["calls"] for f in json.loads(body)["functions"]}
            check(api == calls, "%s: /api/profile has the counts of report --format json" % name)
            if br.why:
                skip("%s in the browser" % name, br.why)
                continue
            br.run("trace", srv.url, expect, prefix=name + "-")
        finally:
            srv.stop()


def group_lost(lp, b, tmp, br):
    binary = b.prog("busy")
    # the smallest ring record accepts (128K), dropping instead of waiting
    # when it is full, loses events of a busy program
    lost = 0
    for n in ("200000", "2000000"):
        out = os.path.join(tmp, "t-lost-" + n)
        r = lp("record", "-q", "--discard", "-b", "128K", "-o", out, "--", binary, n)
        if r.returncode != 0:
            continue
        rep = lp.json("report", "--format", "json", out)
        lost = rep["lost_events"]
        if lost:
            break
    if not check(lost > 0, "a trace with losses (record -b small)", "no events lost"):
        return
    srv = Server(lp, [out])
    try:
        if not check(srv.url is not None, "serve the trace with losses", srv.err.text()):
            return
        _, _, body = get(srv.port, "/api/summary")
        check(json.loads(body)["lost_events"] == lost, "/api/summary: lost events as report says")
        if br.why:
            skip("lost-events banner in the browser", br.why)
            return
        br.run("lost", srv.url, {"lost": lost})
    finally:
        srv.stop()


def group_live(lp, b, tmp, br, build):
    if br.why:
        skip("live session in the browser", br.why)
        return
    km = b.prog("killme")
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    srv = None
    try:
        srv = Server(lp, ["--connect", agent.addr, "--interval", "250ms", "--", km, "120000"])
        if not check(srv.url is not None, "serve --connect: serves", srv.err.text()):
            return
        st, _, body = get(srv.port, "/api/live")
        check(st == 200 and json.loads(body)["state"] in ("connecting", "running"), "/api/live: the session",
              body[:200])
        st, _, body = get(srv.port, "/api/coverage")
        check(st == 404 and "needs a saved trace" in json.loads(body).get("error", ""),
              "/api/coverage of a live session: 404, coverage needs a saved trace", (st, body[:200]))
        br.run("live", srv.url, {"function": "tick"})
        # the page's commands, checked from the API side too
        st, _, body = get(srv.port, "/api/live/bogus", method="POST", body=b"", headers={"X-Layerprof": "1"})
        check(st == 404, "unknown live command: 404", st)
        st, _, body = get(srv.port, "/api/live/filter", method="POST", body=b"-F tick",
                          headers={"X-Layerprof": "1"})
        check(st == 200, "filter -F tick: accepted", body)

        def filter_shown():  # the names become addresses on the program's mappings: a moment
            live = get(srv.port, "/api/live")[2]
            return "tick" in json.loads(live)["filters"]
        check(wait_until(filter_shown, 20), "/api/live shows the filter in force", get(srv.port, "/api/live")[2][:300])
        st, _, body = get(srv.port, "/api/live/period", method="POST", body=b"5ms", headers={"X-Layerprof": "1"})
        check(st == 400, "a period under 100 ms is refused", st)
        st, _, body = get(srv.port, "/api/live/launch", method="POST", body=km.encode(),
                          headers={"X-Layerprof": "1"})
        check(st == 409, "launch once a session began: 409", st)
        srv.stop()
        # no program given: the page picks it
        srv = Server(lp, ["--connect", agent.addr, "--interval", "250ms"])
        if not check(srv.url is not None, "serve --connect without a target: serves", srv.err.text()):
            return
        st, _, body = get(srv.port, "/api/live/start", method="POST", body=b"", headers={"X-Layerprof": "1"})
        check(st == 409, "start before a session: 409", st)
        br.run("launch", srv.url, {"function": "tick", "argv": [km, "120000"]})
    finally:
        if srv:
            srv.stop()
        agent.stop()


def group_livetl(lp, b, tmp, br, build):
    """The timeline of a live session: while the program runs (the API and
    the page), and once it exited, every call of a deterministic program in
    the window, the same spans as `serve` of the saved trace gives."""
    km = b.prog("killme")
    # serve's live session speaks as serve: a failure to connect
    r = lp("serve", "--port", "0", "--connect", "unix:" + os.path.join(tmp, "no-agent"), "--", km, timeout=60)
    check(r.returncode == 1 and r.stderr.startswith("layerprof serve: ") and "layerprof live" not in r.stderr,
          "serve --connect to no agent: fails (exit 1), its messages prefixed 'layerprof serve:'",
          "%d %s" % (r.returncode, r.stderr))
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    srv = None
    try:
        saved = os.path.join(tmp, "livetl-running")
        srv = Server(lp, ["--connect", agent.addr, "--interval", "250ms", "-o", saved, "--", km, "120000"])
        if not check(srv.url is not None, "serve --connect: serves", srv.err.text()):
            return
        summ = None
        for _ in range(100):
            summ = json.loads(get(srv.port, "/api/summary")[2])
            if summ["threads"] and summ["calls"] > 10:
                break
            time.sleep(0.2)
        if not check(summ["threads"], "live: the program's thread appears", summ):
            return
        # a bad filter value is refused with the reason; serve never speaks as another command
        st, _, body = get(srv.port, "/api/live/filter", method="POST", body=b"--depth x",
                          headers={"X-Layerprof": "1"})
        check(st == 400 and b"invalid --depth 'x': expected a number from 1" in body,
              "live filter --depth x: refused (400), says why", "%d %s" % (st, body))
        check("layerprof live" not in srv.err.text(), "serve's live session: no message says 'layerprof live'",
              srv.err.text())
        t = summ["threads"][0]
        st, _, body = get(srv.port, "/api/timeline?thread=%d&px=2000" % t["id"])
        d = json.loads(body)
        check(st == 200, "live /api/timeline answers", body[:300])
        if st == 200:
            names = {int(k): v for k, v in d["names"].items()}
            top = [s for s in d["spans"] if s[0] == 0]
            check(d["mode"] == "exact" and d["running"], "live /api/timeline: exact (from the saved trace), running",
                  {k: d[k] for k in ("mode", "running", "events")})
            check(len(top) == 1 and names[top[0][3]] == "main" and top[0][5] == 4 and top[0][2] >= t["last_ns"],
                  "live /api/timeline: main runs on, open up to the newest event", top[:2])
            check({names[s[3]] for s in d["spans"] if s[0] == 1} <= {"ready", "tick"} and
                  any(names[s[3]] == "tick" for s in d["spans"]), "live /api/timeline: tick's calls under main",
                  sorted(set(names.values())))
        if br.why:
            skip("live timeline in the browser", br.why)
        else:
            br.run("livetl", srv.url, {"mode": "exact"})
        srv.stop()
        srv = None
        # a program that ends: every call in the window, as serve of the saved trace shows it
        saved = os.path.join(tmp, "livetl-done")
        srv = Server(lp, ["--connect", agent.addr, "--interval", "250ms", "-o", saved, "--", km, "300"])
        if not check(srv.url is not None, "serve --connect: serves", srv.err.text()):
            return
        for _ in range(150):
            if json.loads(get(srv.port, "/api/live")[2])["state"] in ("done", "failed"):
                break
            time.sleep(0.2)
        summ = json.loads(get(srv.port, "/api/summary")[2])
        t = summ["threads"][0]
        span = t["last_ns"] + 1
        windows = ["t0=0&t1=%d&px=16384" % span, "t0=%d&t1=%d&px=3000" % (span // 3, span // 2)]
        live = [json.loads(get(srv.port, "/api/timeline?thread=%d&%s" % (t["id"], w))[2]) for w in windows]
        srv.stop()
        srv = None
        d = live[0]
        names = {int(k): v for k, v in d["names"].items()}
        top = [s for s in d["spans"] if s[0] == 0]
        check(d["mode"] == "exact" and not d["running"], "ended live session: exact, not running",
              {k: d.get(k) for k in ("mode", "running")})
        check(len(top) == 1 and names[top[0][3]] == "main" and top[0][4] == 1 and top[0][5] == 0,
              "ended live session: main once, ended", top)
        check(sum(s[4] for s in d["spans"] if s[0] == 1) == 301 and
              sum(s[4] for s in d["spans"] if s[0] == 1 and names[s[3]] == "tick") >= 299,
              "ended live session: 300 calls of tick and ready's one in the whole window",
              [(names[s[3]], s[4]) for s in d["spans"] if s[0] == 1][:5])
        srv = Server(lp, [saved])
        if not check(srv.url is not None, "serve the saved trace", srv.err.text()):
            return
        served = [json.loads(get(srv.port, "/api/timeline?thread=%d&%s" % (t["id"], w))[2]) for w in windows]
        for w, a, s in zip(windows, live, served):
            la = timeline_names({"timeline": dict(a)})["timeline"]
            sa = timeline_names({"timeline": dict(s)})["timeline"]
            check(la["mode"] == sa["mode"] == "exact" and la["spans"] == sa["spans"] and la["spans"],
                  "the live window %s equals serve's of the saved trace" % w,
                  (len(la["spans"]), len(sa["spans"])))
    finally:
        if srv:
            srv.stop()
        agent.stop()


def api_answers(port, summary):
    """Every API answer the page uses, for one served trace, without the
    fields that say how the trace was loaded."""
    out = {}
    for path in ("summary", "profile", "profile?sort=calls&dir=asc", "syscalls", "flame", "flame?min=0",
                 "search?q=e"):
        _, _, body = get(port, "/api/" + path)
        out[path] = json.loads(body)
    for t in summary["threads"]:
        _, _, body = get(port, "/api/tree?thread=%d&node=0" % t["id"])
        out["tree%d" % t["id"]] = json.loads(body)
        for c in out["tree%d" % t["id"]]["children"]:
            _, _, body = get(port, "/api/tree?thread=%d&node=%d" % (t["id"], c["id"]))
            out["tree%d/%d" % (t["id"], c["id"])] = json.loads(body)
        for px, t1 in ((800, ""), (3000, "&t1=%d" % max(1, t["last_ns"] // 2))):
            _, _, body = get(port, "/api/timeline?thread=%d&px=%d%s" % (t["id"], px, t1))
            out["timeline%d/%d" % (t["id"], px)] = json.loads(body)
    for k in ("load_ms", "from_index"):
        out["summary"].pop(k, None)
    return out


def timeline_names(answers):
    """Timeline answers with name ids replaced by the names: ids are the
    server's own and may differ between two runs."""
    for k, v in answers.items():
        if k.startswith("timeline"):
            v["spans"] = [s[:3] + [v["names"][str(s[3])]] + s[4:] for s in v["spans"]]
            del v["names"]
    return answers


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def garble_threads(data):
    """Sets the index's thread count (after 5 numbers, a flag byte and 3
    strings) to 2^32 - 1."""
    o = 56 + 5 * 8 + 1
    for _ in range(3):
        o += 4 + int.from_bytes(data[o:o + 4], "little")
    data[o:o + 4] = (0xFFFFFFFF).to_bytes(4, "little")
    return data


def garble_cut(data):
    return data[:56 + (len(data) - 56) * 2 // 3]


def group_index(lp, b, tmp):
    trace, r = record(lp, b, tmp, "threads")
    if not check(r.returncode == 0, "record threads", r.stderr):
        return
    index = os.path.join(trace, "serve-index")
    answers = []
    for what in ("first serve: reads the trace, writes the index", "second serve: from the index"):
        srv = Server(lp, [trace])
        try:
            if not check(srv.url is not None, what, srv.err.text()):
                return
            line = srv.out.wait_for(lambda l: "events" in l, 5) or ""
            check(("index read" in line) == (len(answers) == 1), what + ": says so", line)
            _, _, body = get(srv.port, "/api/summary")
            summ = json.loads(body)
            check(summ["from_index"] == (len(answers) == 1), what + ": /api/summary says so")
            answers.append(timeline_names(api_answers(srv.port, summ)))
        finally:
            srv.stop()
        check(os.path.exists(index), "the index is in the trace directory")
    diff = [k for k in answers[0] if answers[0][k] != answers[1].get(k)]
    check(not diff, "the index answers every API call as the pass does", ", ".join(diff[:5]))
    # a changed trace makes the index stale; a damaged one is not trusted
    os.utime(os.path.join(trace, "data"))
    srv = Server(lp, [trace])
    try:
        line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
        srv.err.wait_for(lambda l: "older trace" in l, 5)
        check("index read" not in line and "older trace" in srv.err.text(),
              "a trace changed since: the index is stale and the trace read again", srv.err.text())
    finally:
        srv.stop()
    with open(index, "r+b") as f:
        f.seek(200)
        byte = f.read(1)
        f.seek(200)
        f.write(bytes([byte[0] ^ 0x40]))
    srv = Server(lp, [trace])
    try:
        line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
        srv.err.wait_for(lambda l: "damaged" in l, 5)
        check("index read" not in line and "damaged" in srv.err.text(),
              "a damaged index is not trusted: the trace is read again", srv.err.text())
        _, _, body = get(srv.port, "/api/profile?sort=calls")
        api = {f["name"]: f["calls"] for f in json.loads(body)["functions"]}
        rep = lp.json("report", "--format", "json", trace)
        check(api == {f["name"]: f["calls"] for f in rep["functions"]}, "and the counts are right")
    finally:
        srv.stop()
    # indexes whose checksum holds but whose fields do not: bounded reads
    for what, garble in (("a thread count past the end", garble_threads), ("a cut payload", garble_cut)):
        srv = Server(lp, ["--reindex", trace])  # a good index again
        srv.out.wait_for(lambda l: "events" in l, 10)
        srv.stop()
        with open(index, "rb") as f:
            data = bytearray(f.read())
        data = garble(data)
        data[40:48] = (len(data) - 56).to_bytes(8, "little")
        data[48:52] = crc32c(bytes(data[56:])).to_bytes(4, "little")
        with open(index, "wb") as f:
            f.write(data)
        srv = Server(lp, [trace])
        try:
            line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
            srv.err.wait_for(lambda l: "damaged" in l, 5)
            check(srv.url is not None and "index read" not in line and "damaged" in srv.err.text(),
                  "index with %s (checksum right): not trusted, the trace is read" % what, srv.err.text())
        finally:
            srv.stop()
    srv = Server(lp, ["--no-index", trace])
    try:
        line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
        check("index read" not in line, "--no-index: the trace is read")
    finally:
        srv.stop()
    before = os.stat(index).st_mtime_ns
    srv = Server(lp, ["--reindex", trace])
    try:
        line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
        check("index read" not in line and os.stat(index).st_mtime_ns != before,
              "--reindex: the trace is read and the index written again")
    finally:
        srv.stop()
    # a trace directory we may not write to (root: another user's): served
    # all the same, its index kept in our cache and never in the trace
    ro = os.path.join(tmp, "ro-trace")
    shutil.copytree(trace, ro)
    for f in os.listdir(ro):
        if f.startswith("serve-"):
            os.unlink(os.path.join(ro, f))
    if os.geteuid() == 0:
        os.chown(ro, 65534, 65534)
    else:
        os.chmod(ro, 0o555)
    cache = os.path.join(tmp, "cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = cache
    try:
        for n, what in enumerate(("a trace directory not ours: served", "served again: from its index")):
            srv = Server(lp, [ro])
            try:
                line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
                check(srv.url is not None and ("index read" in line) == (n == 1), what, srv.err.text() + line)
            finally:
                srv.stop()
            check(sorted(os.listdir(ro)) == ["data"], "nothing is written into it", os.listdir(ro))
        kept = os.path.join(cache, "layerprof", "serve")
        check(os.path.isdir(kept) and any(f.endswith(".serve-index") for f in os.listdir(kept)),
              "its index is in the user's cache", kept)
    finally:
        if saved is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = saved
        os.chmod(ro, 0o755)


# ---------------------------------------------------------------- heap view and exports

HEAP_APP = os.path.join(HERE, "heap_app.c")

# format= of /api/export: the command line that writes the same file
EXPORTS = {
    "html": ["report", "--format", "html"],
    "xml": ["report", "--format", "xml"],
    "json": ["report", "--format", "json"],
    "text": ["report"],
    "syscalls-json": ["report", "--syscalls", "--format", "json"],
    "syscalls-text": ["report", "--syscalls"],
    "memory-html": ["report", "--memory", "--format", "html"],
    "memory-xml": ["report", "--memory", "--format", "xml"],
    "memory-json": ["report", "--memory", "--format", "json"],
    "memory-text": ["report", "--memory"],
    "chrome": ["dump", "--chrome"],
    "folded": ["dump", "--folded"],
    "snapshot": ["snapshot", "-o", "-"],
}
EXPORT_TYPES = {"html": "text/html", "xml": "application/xml", "json": "application/json", "text": "text/plain",
                "chrome": "application/json", "folded": "text/plain", "raw": "application/x-tar",
                "snapshot": "application/json"}


def get_full(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("GET", path)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


def cli_bytes(lp, args, trace):
    r = subprocess.run([lp.exe] + args + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return r.returncode, r.stdout


def same_as_tar(data, trace):
    """The archive holds the trace directory's files (caches left out), byte for byte."""
    import io
    import tarfile
    want = sorted(f for f in os.listdir(trace) if not f.startswith("serve-"))
    base = os.path.basename(trace.rstrip("/"))
    got = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
        for m in t.getmembers():
            if m.isfile():
                got[m.name] = t.extractfile(m).read()
    if sorted(got) != [base + "/" + f for f in want]:
        return False, sorted(got)
    for f in want:
        with open(os.path.join(trace, f), "rb") as fh:
            if fh.read() != got[base + "/" + f]:
                return False, f
    return True, None


def group_heap(lp, b, tmp, br):
    prog = os.path.join(tmp, "heap_app")
    r = subprocess.run(["gcc", "-g", "-O1", "-fno-omit-frame-pointer", HEAP_APP, "-o", prog],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if not check(r.returncode == 0, "build heap_app", r.stdout):
        return
    trace = os.path.join(tmp, "t-heap")
    r = lp("record", "-q", "--memory", "--keep-alive", "-o", trace, "--", prog)
    if not check(r.returncode == 0, "record --memory heap_app", r.stderr):
        return
    plain, r = record(lp, b, tmp, "threads")
    if not check(r.returncode == 0, "record threads", r.stderr):
        return
    rep = lp.json("report", "--memory", "--format", "json", trace)
    leak = [i for i, s in enumerate(rep["sites"]) if s["function"] == "leaky"]
    if not check(len(leak) == 1 and rep["sites"][leak[0]]["live_objects"] == 100 and
                 rep["sites"][leak[0]]["live_bytes"] == 4800, "report --memory: leaky leaves 100 blocks of 48 bytes",
                 rep["sites"]):
        return
    srv = Server(lp, [trace])
    empty = Server(lp, [plain])
    try:
        if not check(srv.url is not None and empty.url is not None, "serve the heap trace and a plain one",
                     srv.err.text() + empty.err.text()):
            return
        _, _, body = get(srv.port, "/api/summary")
        summ = json.loads(body)
        check(summ["heap"] is True and summ["exports"] is True, "/api/summary: heap and exports", summ)
        _, _, body = get(srv.port, "/api/heap")
        heap = json.loads(body)
        check({k: heap.get(k) for k in rep} == rep,
              "/api/heap holds report --memory --format json (sites, functions, illegal, overlaps, processes)")
        check(heap["heap"] is True and heap["first_ns"] > 0, "/api/heap: heap, first_ns")
        st, _, body = get(srv.port, "/api/heap/growth")
        g = json.loads(body) if st == 200 else {}
        pts = g.get("points", [])
        check(st == 200 and 16 <= len(pts) <= 64 and pts[-1][1] == rep["totals"]["live_bytes"] and
              all(pts[i][0] < pts[i + 1][0] for i in range(len(pts) - 1)),
              "/api/heap/growth: the whole heap's samples, in time order, ending at the live bytes",
              (st, len(pts), pts[-3:]))
        st, _, body = get(srv.port, "/api/heap/growth?points=8&site=%d" % leak[0])
        g8 = json.loads(body) if st == 200 else {}
        p8 = [v for _, v in g8.get("points", [])]
        check(st == 200 and len(p8) == 8 and p8[-1] == 4800 and p8 == sorted(p8),
              "/api/heap/growth?site=leaky&points=8: 8 points rising to 4800 bytes", (st, p8))
        st, _, _ = get(srv.port, "/api/heap/growth?site=999999")
        check(st == 404, "/api/heap/growth of no such site: 404", st)
        st, _, _ = get(srv.port, "/api/heap/growth?points=x")
        check(st == 400, "/api/heap/growth?points=x: 400", st)
        st, _, body = get(empty.port, "/api/heap")
        e = json.loads(body)
        check(st == 200 and e["heap"] is False and "--memory" in e["reason"],
              "/api/heap of a trace without heap events: says so", body)
        st, _, _ = get(empty.port, "/api/heap/growth")
        check(st == 404, "/api/heap/growth of a trace without heap events: 404", st)

        # the exports: the same bytes as the command line
        downloads = os.path.join(tmp, "downloads")
        os.makedirs(downloads, exist_ok=True)
        served = {}
        for fmt, args in sorted(EXPORTS.items()):
            st, hdr, data = get_full(srv.port, "/api/export?format=" + fmt)
            code, want = cli_bytes(lp, args, trace)
            served[fmt] = data
            kind = fmt.split("-")[-1]
            # (heap_app is not instrumented: no calls, so no folded stacks)
            check(st == 200 and code == 0 and data == want and (len(data) > 0 or fmt == "folded"),
                  "/api/export?format=%s: byte for byte `layerprof %s`" % (fmt, " ".join(args)),
                  (st, code, len(data), len(want)))
            check(hdr.get("content-type", "").startswith(EXPORT_TYPES[kind]) and
                  hdr.get("content-disposition", "").startswith('attachment; filename="t-heap.'),
                  "/api/export?format=%s: content type and attachment" % fmt, hdr)
        st, hdr, data = get_full(srv.port, "/api/export?format=raw")
        ok, why = same_as_tar(data, trace) if st == 200 else (False, st)
        check(ok and hdr.get("content-type") == "application/x-tar",
              "/api/export?format=raw: a tar of the trace directory's files", why)
        served["raw"] = data
        st, _, _ = get(srv.port, "/api/export?format=pdf")
        check(st == 400, "/api/export of an unknown format: 400", st)
        st, _, _ = get(srv.port, "/api/export")
        check(st == 400, "/api/export without a format: 400", st)
        st, _, _ = get(srv.port, "/api/export?format=html", method="POST", headers={"X-Layerprof": "1"})
        check(st == 403, "POST /api/export: refused", st)
        st, _, _ = get(srv.port, "/api/export?format=html", method="PUT")
        check(st == 405, "PUT /api/export: refused", st)

        # a warm start: the heap view from <trace>/serve-heap
        check(os.path.exists(os.path.join(trace, "serve-heap")), "serve keeps the heap view in <trace>/serve-heap")
        again = Server(lp, [trace])
        try:
            if check(again.url is not None, "serve the heap trace again", again.err.text()):
                _, _, body = get(again.port, "/api/heap")
                check(json.loads(body) == heap, "a warm start answers /api/heap the same from serve-heap")
                _, _, body = get(again.port, "/api/heap/growth")
                check(json.loads(body) == g, "a warm start answers /api/heap/growth the same")
        finally:
            again.stop()

        if br.why:
            skip("heap view in the browser", br.why)
            return
        formats = sorted(EXPORTS) + ["raw"]
        formats.remove("syscalls-json")
        formats.remove("syscalls-text")
        expect = {
            "leak_function": "leaky",
            "leak_site": leak[0],
            "leak_objects": 100,
            "leak_bytes": 4800,
            "live_bytes": rep["totals"]["live_bytes"],
            "release_function": "release",
            "sites": len(rep["sites"]),
            "growth_points": len(pts),
            "formats": formats,
            "downloads": downloads,
            "empty_url": empty.url,
        }
        br.run("heap", srv.url, expect, prefix="heap-")
        for fmt in formats:
            path = os.path.join(downloads, fmt)
            got = open(path, "rb").read() if os.path.exists(path) else None
            check(got == served[fmt], "export button %s: the file equals the command line's" % fmt,
                  None if got is None else len(got))
    finally:
        srv.stop()
        empty.stop()


# ---------------------------------------------------------------- a live session's heap, exports, snapshots

LEAKLOOP = os.path.join(ROOT, "tests", "integration", "mem", "leakloop.c")
LEAK_N, LEAK_SIZE = 10, 100  # leakloop's leaky(): blocks per iteration and their size


def build_leakloop(tmp):
    """leakloop.c, instrumented (its functions' calls reach the profile)."""
    out = os.path.join(tmp, "leakloop")
    r = subprocess.run(["gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-finstrument-functions", LEAKLOOP, "-o",
                        out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return (out if r.returncode == 0 else None), r.stdout


def live_state(port):
    st, _, body = get(port, "/api/live")
    return json.loads(body) if st == 200 else {}


def wait_until(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return None


def leak_of(doc, key="function"):
    """leaky's site in a heap document or a snapshot (one site), or {}."""
    s = [x for x in (doc or {}).get("sites", []) if x.get(key) == "leaky"]
    return s[0] if len(s) == 1 else {}


def calls_of(report, name):
    return sum(f["calls"] for f in report.get("functions", []) if f["name"] == name)


def tar_files(data):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def group_liveheap(lp, b, tmp, br, build):
    prog, out = build_leakloop(tmp)
    if not check(prog is not None, "build leakloop (instrumented)", out):
        return
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    srv = srv2 = plain = None
    try:
        # without --memory: the Heap tab says how to get it
        plain = Server(lp, ["--connect", agent.addr, "--interval", "250ms", "--", prog, "1", "8", "50"])
        if check(plain.url is not None, "serve --connect without --memory: serves", plain.err.text()):
            st, _, body = get(plain.port, "/api/heap")
            e = json.loads(body)
            check(st == 200 and e["heap"] is False and "start serve --connect with --memory" in e["reason"],
                  "/api/heap of a live session without --memory: says to use --memory", body)
            st, _, _ = get(plain.port, "/api/live/snapshot", method="POST", body=b"", headers={"X-Layerprof": "1"})
            check(st == 404, "POST /api/live/snapshot without --memory: 404", st)
            check(live_state(plain.port).get("memory") is False, "/api/live: memory false")
        plain.stop()
        plain = None

        srv = Server(lp, ["--connect", agent.addr, "--memory", "--interval", "250ms", "--", prog, str(LEAK_N),
                          str(LEAK_SIZE), "50"])
        if not check(srv.url is not None, "serve --connect --memory: serves", srv.err.text()):
            return

        def heap_with_leak():
            st, _, body = get(srv.port, "/api/heap")
            h = json.loads(body) if st == 200 else {}
            return h if leak_of(h).get("live_objects") else None

        h1 = wait_until(heap_with_leak, 20)
        if not check(h1 is not None, "/api/heap of the live session: leaky's site appears", srv.err.text()):
            return
        ls = live_state(srv.port)
        kept = ls.get("saving", "")
        check(ls.get("memory") is True and ls.get("exports") is True and ls.get("kept_privately") is True and
              os.path.isfile(os.path.join(kept, "data")),
              "/api/live: heap and exports; the session kept in a private trace directory", ls)
        want = {"trace", "lost_events", "complete", "origin_ns", "totals", "sites", "functions", "illegal",
                "overlaps", "processes", "heap", "first_ns", "live", "partial", "horizon_ns"}
        check(want <= set(h1) and h1["trace"] == kept and h1["live"] is True and h1["complete"] is False,
              "/api/heap: the document of report --memory --format json, with the live state's members",
              sorted(set(want) - set(h1)))
        gen = live_state(srv.port)["generation"]
        wait_until(lambda: live_state(srv.port)["generation"] > gen + 1, 10)
        h2 = wait_until(heap_with_leak, 10)
        a, z = leak_of(h1), leak_of(h2)
        check(z.get("live_objects", 0) > a["live_objects"] and z["live_bytes"] == z["live_objects"] * LEAK_SIZE,
              "/api/heap: leaky's live objects grow between two updates, %d bytes each" % LEAK_SIZE,
              (a.get("live_objects"), z.get("live_objects")))
        st, _, body = get(srv.port, "/api/heap/growth")
        g = json.loads(body) if st == 200 else {}
        pts = g.get("points", [])
        check(st == 200 and len(pts) >= 2 and all(pts[i][0] < pts[i + 1][0] for i in range(len(pts) - 1)) and
              pts[-1][1] > pts[0][1], "/api/heap/growth: the whole heap's samples, in time order, growing",
              (st, pts[:3], pts[-3:]))
        st, _, body = get(srv.port, "/api/heap")
        h3 = json.loads(body)
        idx = [i for i, x in enumerate(h3["sites"]) if x["function"] == "leaky"]
        st, _, body = get(srv.port, "/api/heap/growth?site=%d" % idx[0])
        lp_pts = [v for _, v in json.loads(body).get("points", [])] if st == 200 else []
        check(st == 200 and len(lp_pts) >= 2 and lp_pts == sorted(lp_pts) and lp_pts[-1] > 0 and
              all(v % (LEAK_SIZE) == 0 for v in lp_pts),
              "/api/heap/growth?site=leaky: rising, whole blocks of %d bytes" % LEAK_SIZE, lp_pts[-5:])

        # exports while the session runs: the kept directory as it is, a consistent prefix
        st1, hdr, data1 = get_full(srv.port, "/api/export?format=json")
        rep = lp.json("report", "--format", "json", kept)
        st2, _, data2 = get_full(srv.port, "/api/export?format=json")
        e1 = json.loads(data1) if st1 == 200 else {}
        e2 = json.loads(data2) if st2 == 200 else {}
        c1, cr, c2 = calls_of(e1, "leaky"), calls_of(rep or {}, "leaky"), calls_of(e2, "leaky")
        check(st1 == 200 and hdr.get("content-disposition") == 'attachment; filename="live.report.json"' and
              e1.get("trace") == kept, "/api/export?format=json of the live session: an attachment of its trace",
              (st1, hdr.get("content-disposition")))
        check(0 < c1 <= cr <= c2 and e1["complete"] is False,
              "/api/export?format=json: leaky's calls, the export <= report on the kept trace after it <= a later "
              "export", (c1, cr, c2))
        st, _, raw = get_full(srv.port, "/api/export?format=raw")
        files = tar_files(raw) if st == 200 else {}
        with open(os.path.join(kept, "data"), "rb") as f:
            now = f.read()
        d = files.get("live/data", b"")
        check(st == 200 and len(d) > 0 and now.startswith(d),
              "/api/export?format=raw: the kept trace's data as it was, a prefix of the file now",
              (st, len(d), len(now)))
        st, _, mj = get_full(srv.port, "/api/export?format=memory-json")
        m = json.loads(mj) if st == 200 else {}
        check(st == 200 and leak_of(m).get("live_objects", 0) > 0,
              "/api/export?format=memory-json of the live session: leaky's live objects", st)

        # snapshots: POST with the header, and GET /api/export?format=snapshot
        st, _, _ = get(srv.port, "/api/live/snapshot", method="POST", body=b"")
        check(st == 403, "POST /api/live/snapshot without X-Layerprof: refused", st)
        st, hdr, sdata = get_full(srv.port, "/api/export?format=snapshot")
        snap = json.loads(sdata) if st == 200 else {}
        check(st == 200 and snap.get("layerprof_snapshot") == 1 and snap.get("source") == "live" and
              leak_of(snap).get("live_objects", 0) > 0 and
              re_match(r'attachment; filename="live-\d+\.snapshot"', hdr.get("content-disposition", "")),
              "/api/export?format=snapshot: the live heap snapshot as a download", (st, hdr))

        if br.why:
            skip("live heap view in the browser", br.why)
        else:
            downloads = os.path.join(tmp, "live-downloads")
            os.makedirs(downloads, exist_ok=True)
            br.run("liveheap", srv.url, {"leak_function": "leaky", "downloads": downloads, "leak_size": LEAK_SIZE},
                   prefix="liveheap-")
            s1p, s2p = os.path.join(downloads, "s1"), os.path.join(downloads, "s2")
            if check(os.path.exists(s1p) and os.path.exists(s2p), "two snapshots downloaded from the page"):
                s1, s2 = json.load(open(s1p)), json.load(open(s2p))
                r = subprocess.run([lp.exe, "memdiff", "--format", "json", s1p, s2p], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True)
                md = json.loads(r.stdout) if r.returncode == 0 else {}
                ms = leak_of(md)
                grow = leak_of(s2).get("live_bytes", 0) - leak_of(s1).get("live_bytes", 0)
                # leaky's site, wherever memdiff ranks it: under load another
                # site of the program may grow more between the two clicks
                check(r.returncode == 0 and ms.get("live_bytes_change") == grow > 0 and
                      ms.get("live_objects_change") == leak_of(s2)["live_objects"] - leak_of(s1)["live_objects"],
                      "memdiff of the page's two snapshots: leaky grew, by what the snapshots say",
                      (r.stderr, ms, grow, [(x.get("function"), x.get("live_bytes_change"))
                                            for x in md.get("sites", [])[:4]]))
            ej = os.path.join(downloads, "export-json")
            if check(os.path.exists(ej), "the page's JSON export of the live session downloaded"):
                e = json.load(open(ej))
                check(0 < calls_of(e, "leaky") and e.get("trace") == kept,
                      "the page's JSON export: the kept trace's profile with leaky's calls", calls_of(e, "leaky"))
        srv.stop()
        check(not os.path.exists(kept) and not os.path.exists(os.path.dirname(kept)),
              "serve --connect removes its private trace directory at exit", kept)
        srv = None

        # a session that ends, saved with --save: its exports are the command line's, byte for byte
        saved = os.path.join(tmp, "live-saved")
        iters = 12
        srv2 = Server(lp, ["--connect", agent.addr, "--memory", "--save", saved, "--interval", "250ms", "--", prog,
                           str(LEAK_N), str(LEAK_SIZE), "20", str(iters)])
        if not check(srv2.url is not None, "serve --connect --memory --save: serves", srv2.err.text()):
            return
        done = wait_until(lambda: live_state(srv2.port).get("state") == "done", 30)
        if not check(done, "the finite leakloop's session ends", srv2.err.text()):
            return
        for fmt in ("json", "memory-json", "text", "folded"):
            st, _, data = get_full(srv2.port, "/api/export?format=" + fmt)
            code, want = cli_bytes(lp, EXPORTS[fmt], saved)
            check(st == 200 and code == 0 and data == want and len(data) > 0,
                  "/api/export?format=%s of an ended live session: byte for byte `layerprof %s` on --save's "
                  "directory" % (fmt, " ".join(EXPORTS[fmt])), (st, code, len(data), len(want)))
        st, _, body = get(srv2.port, "/api/heap")
        h = json.loads(body)
        check(leak_of(h).get("live_objects") == iters * LEAK_N and leak_of(h).get("live_bytes") ==
              iters * LEAK_N * LEAK_SIZE, "/api/heap at the session's end: leaky's %d blocks" % (iters * LEAK_N),
              leak_of(h))
    finally:
        for s in (srv, srv2, plain):
            if s:
                s.stop()
        agent.stop()


# ---------------------------------------------------------------- the kernel layer

SLEEPS, SLEEP_NS = 5, 2000000  # kern_sleep: 5 nanosleeps of 2 ms


def sleeper_waits(rep):
    """kern_sleep's waits in nanosleep (report --kernel), or None."""
    w = [x for x in rep.get("off_cpu", []) if x["syscall"] == "nanosleep" and x["state"] == "S"]
    return w[0] if w else None


def record_kern_sleep(lp, b, tmp):
    """kern_sleep recorded with --kernel --syscalls --kernel-system (the
    other processes, the recorder at least, run on the CPU tracks): (trace,
    None), or
    (None, why not) when record --kernel fails.  The kernel group runs on
    the CPUs that deliver the idle task's records (kernel_truth.
    delivering_cpus); a recording whose kernel events still miss a wake-up
    of the five sleeps (a loaded machine; test_kernel.py holds the recorder
    to its counts) is made again, four times at most, and then the kernel
    views are not checked, saying why."""
    prog = b.prog("kern_sleep", ["-std=c11"])
    why = None
    for n in range(5):
        trace = os.path.join(tmp, "t-kern-sleep-%d" % n)
        r = lp("record", "-q", "--kernel", "--syscalls", "--kernel-system", "-o", trace, "--", prog)
        if r.returncode != 0:
            return None, "record --kernel fails: %s" % (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        rep = lp.json("report", "--kernel", "--format", "json", trace)
        w = sleeper_waits(rep)
        if w and w["count"] == SLEEPS and sum(k["count"] for k in w["wakers"]) == SLEEPS:
            return trace, None
        why = "record --kernel missed wake-ups of kern_sleep's sleeps: %s waits in nanosleep, wakers %s" % (
            w and w["count"], w and w["wakers"])
        print("note: recording kern_sleep again: " + why)
    return None, why + " (5 recordings)"


def tracks(port, query=""):
    st, _, body = get(port, "/api/kernel_tracks" + query)
    return st, (json.loads(body) if st == 200 else {})


def group_kernel(lp, b, tmp, br):
    """The kernel layer in the page: kern_sleep recorded with --kernel; the
    layers, kernel, off-CPU flame graph, kernel tracks and flow answers
    checked against the command line, then each view in the browser."""
    if os.geteuid() != 0:
        skip("the kernel views", "not root: record --kernel needs root (perf_event_open on tracepoints)")
        return
    trace, why = record_kern_sleep(lp, b, tmp)
    if not trace:
        skip("the kernel views", why)
        return
    plain, r = record(lp, b, tmp, "threads")
    if not check(r.returncode == 0, "record threads (no kernel events)", r.stderr):
        return
    layers = lp.json("report", "--layers", "--format", "json", trace)
    kern = lp.json("report", "--kernel", "--format", "json", trace)
    flow = lp.json("flow", "--format", "json", trace, "sleeper#1")
    calls = lp.json("flow", "--all", "--format", "json", trace, "sleeper")
    sleeper = [f for f in layers["functions"] if f["name"] == "sleeper"][0]
    check(sleeper["voluntary_switches"] == SLEEPS, "report --layers: sleeper has %d voluntary switches" % SLEEPS,
          sleeper)
    srv = Server(lp, [trace])
    empty = Server(lp, [plain])
    try:
        if not check(srv.url is not None and empty.url is not None, "serve the kernel trace and a plain one",
                     srv.err.text() + empty.err.text()):
            return
        summ = json.loads(get(srv.port, "/api/summary")[2])
        check(summ["kernel"] is True and summ["kernel_events"] == kern["kernel_events"] > 0,
              "/api/summary: kernel, and the kernel events report --kernel counts", (summ["kernel_events"],))
        thread = [t for t in summ["threads"] if t["calls"]][0]
        st, _, body = get(srv.port, "/api/layers")
        got = json.loads(body)
        check(st == 200 and got.pop("kernel") is True and got == layers,
              "/api/layers: the document of report --layers --format json (and kernel: true)")
        st, _, body = get(srv.port, "/api/kernel")
        got = json.loads(body)
        check(st == 200 and got.pop("kernel") is True and got == kern,
              "/api/kernel: the document of report --kernel --format json (and kernel: true)")

        # the off-CPU flame graph: sleeper's frame holds its time off the CPU, in nanosleep
        st, _, body = get(srv.port, "/api/offcpu_flame?min=0")
        fl = json.loads(body) if st == 200 else {"nodes": []}
        nodes = {n[0]: n for n in fl["nodes"]}
        path = {}
        for n in fl["nodes"]:
            path[n[0]] = (path.get(n[1], ()) if n[0] else ()) + ((n[2],) if n[0] else ())
        frame = [n for n in fl["nodes"] if path[n[0]] == ("main", "sleeper")]
        leaf = [n for n in fl["nodes"] if path[n[0]] == ("main", "sleeper", "nanosleep") and n[6]]
        check(st == 200 and len(frame) == 1 and frame[0][3] == sleeper["off_cpu_ns"] >= SLEEPS * SLEEP_NS,
              "/api/offcpu_flame: main;sleeper holds sleeper's off-CPU time of report --layers (>= 10 ms)",
              (frame, sleeper["off_cpu_ns"]))
        check(len(leaf) == 1 and leaf[0][5] == SLEEPS and leaf[0][4] == leaf[0][3] == frame[0][3],
              "/api/offcpu_flame: all of it in its [sys] nanosleep leaf, %d waits" % SLEEPS, leaf)
        check(fl.get("waits", 0) >= SLEEPS and nodes[0][3] == fl["total_ns"],
              "/api/offcpu_flame: the root counts every wait", (fl.get("waits"), fl.get("total_ns")))

        # the kernel tracks: the whole thread, then sleeper's call alone
        st, k = tracks(srv.port, "?thread=%d&px=2000" % thread["id"])
        mine = [t for t in k.get("threads", []) if t["id"] == thread["id"]]
        offs = mine[0]["off"] if mine else []
        names = {int(i): v for i, v in k.get("names", {}).items()}
        sleeps = [o for o in offs if o[2] == "S" and names.get(o[4]) == "nanosleep"]
        check(st == 200 and mine and k["threads"][0]["id"] == thread["id"] and len(sleeps) == SLEEPS and
              all(o[1] - o[0] >= SLEEP_NS and o[6] == 1 and names.get(o[3]) == "timer (hardirq)" for o in sleeps),
              "/api/kernel_tracks: the thread first, %d waits of >= 2 ms in nanosleep (S), each woken by its timer"
              % SLEEPS, [(o[1] - o[0], o[2], names.get(o[3]), names.get(o[4])) for o in offs])
        arrows = [a for a in k.get("arrows", []) if a[3] == thread["id"] and a[5] == "timer"]
        check(len(arrows) == SLEEPS and all(any(o[0] <= a[0] <= o[1] and a[4] == o[1] for o in sleeps)
                                           for a in arrows),
              "/api/kernel_tracks: %d wake-up arrows from the timer, each within its wait, to its switch-in" % SLEEPS,
              k.get("arrows"))
        every = [sl for c in k.get("cpus", []) for sl in c["slices"]]
        slices = [sl for sl in every if len(sl) == 5]
        check(k.get("cpus") and slices and all(sl[2] == thread["id"] for sl in slices) and
              all(not (o[0] < sl[1] and sl[0] < o[1]) for o in offs for sl in slices),
              "/api/kernel_tracks: CPU tracks with the thread's run slices, none while it was off the CPU",
              k.get("cpus"))
        # --kernel-system: the other processes' slices, each named, the
        # recorder among them; none of them the program's thread
        others = [sl for sl in every if len(sl) == 6]
        onames = {k["names"].get(str(sl[5]), "") for sl in others}
        check(others and all(sl[2] != thread["id"] for sl in others) and
              all(re.fullmatch(r"\S.* [0-9]+(/[0-9]+)?", n_) for n_ in onames) and
              any(n_.startswith("layerprof ") for n_ in onames),
              "/api/kernel_tracks: other processes' slices on the CPU tracks, named 'comm pid', the recorder's "
              "among them", sorted(onames)[:8])
        a = flow["start_ns"] - summ["first_ns"]
        st, w = tracks(srv.port, "?from=%d&to=%d&px=800" % (a, a + flow["duration_ns"]))
        wo = [o for t in w.get("threads", []) if t["id"] == thread["id"] for o in t["off"]]
        check(st == 200 and len(wo) == SLEEPS and all(o[2] == "S" for o in wo),
              "/api/kernel_tracks over sleeper#1's time: exactly %d off-CPU waits, all S" % SLEEPS,
              [(o[0], o[1], o[2]) for o in wo])
        st, w = tracks(srv.port, "?from=%d&to=%d&px=4" % (a, a + flow["duration_ns"]))
        wo = [o for t in w.get("threads", []) if t["id"] == thread["id"] for o in t["off"]]
        check(st == 200 and sum(o[6] for o in wo) == SLEEPS and len(wo) <= 2 * 4 + 1,
              "/api/kernel_tracks at 4 pixels: the waits merged into a few boxes that count all %d" % SLEEPS,
              [(o[2], o[6], o[7]) for o in wo])
        for q, want in (("?from=5&to=1", 400), ("?px=99999", 400), ("?thread=99999", 404), ("?from=x", 400)):
            check(tracks(srv.port, q)[0] == want, "/api/kernel_tracks%s: %d" % (q, want))

        # the flow of sleeper#1: flow --format json's document
        st, _, body = get(srv.port, "/api/flow?func=sleeper")
        got = json.loads(body) if st == 200 else {}
        extra = {k2: got.pop(k2, None) for k2 in ("ncalls", "steps_more")}
        check(st == 200 and got == flow and extra == {"ncalls": 1, "steps_more": 0},
              "/api/flow?func=sleeper: the document of flow --format json sleeper#1 (and ncalls, steps_more)",
              (st, extra))
        st, _, body = get(srv.port, "/api/flow?func=sleeper&all=1")
        got = json.loads(body) if st == 200 else {}
        check(st == 200 and got.get("calls") == calls["calls"] and got.get("ncalls") == 1 and got.get("more") == 0,
              "/api/flow?func=sleeper&all=1: the calls of flow --all --format json", body[:200])
        st, _, body = get(srv.port, "/api/flow?func=sleeper&limit=3")
        got = json.loads(body) if st == 200 else {}
        check(st == 200 and len(got.get("steps", [])) == 3 and got["steps_more"] == len(flow["steps"]) - 3,
              "/api/flow?limit=3: 3 steps, the others counted in steps_more", body[:200])
        st, _, body = get(srv.port, "/api/flow?func=sleeper&n=2")
        check(st == 404 and b"'sleeper' has 1 call, no call #2" in body, "/api/flow of no such call: 404, says why",
              body)
        for q in ("", "?func=", "?func=sleeper&n=0", "?func=sleeper&limit=0", "?func=sleeper&all=2"):
            check(get(srv.port, "/api/flow" + q)[0] == 400, "/api/flow%s: 400" % q)

        # a trace without kernel events: every kernel answer says why
        for what in ("layers", "kernel", "offcpu_flame", "kernel_tracks"):
            st, _, body = get(empty.port, "/api/" + what)
            e = json.loads(body)
            check(st == 200 and e == {"kernel": False, "reason": e.get("reason")} and "--kernel" in e["reason"],
                  "/api/%s of a trace without kernel events: kernel false and why" % what, body)
        check(json.loads(get(empty.port, "/api/summary")[2])["kernel"] is False, "/api/summary: kernel false")

        # the call tree's kernel leaves: tree --format json's, marked kernel,
        # a frame of their own kind in the flame graph, no function of the profile
        tree = lp.json("tree", "--format", "json", trace)
        want = [t for t in tree["threads"] if t["tid"] == thread["tid"]][0]["calls"]
        path, node = [], 0
        for name, kind in (("main", None), ("sleeper", None), ("nanosleep", "syscall"),
                           ("sched:sched_switch", "kernel")):
            st, _, body = get(srv.port, "/api/tree?thread=%d&node=%d" % (thread["id"], node))
            kids = json.loads(body)["children"] if st == 200 else []
            got = [c for c in kids if c["name"] == name and bool(c.get("syscall")) == (kind == "syscall") and
                   bool(c.get("kernel")) == (kind == "kernel")]
            ref = [c for c in want if c["name"] == name and bool(c.get("syscall")) == (kind == "syscall") and
                   bool(c.get("kernel")) == (kind == "kernel")]
            if not got or not ref:
                break
            path.append((got[0], ref[0]))
            node, want = got[0]["id"], ref[0]["children"]
        leaf = path[-1][0] if len(path) == 4 else {}
        same = all({k: v for k, v in a_.items() if k not in ("id", "children", "syscalls")} ==
                   {k: v for k, v in r_.items() if k != "children"} for a_, r_ in path)
        check(len(path) == 4 and same and leaf.get("kernel") is True and leaf["calls"] == SLEEPS and
              leaf["total_ns"] >= SLEEPS * SLEEP_NS,
              "/api/tree: main/sleeper/nanosleep/sched:sched_switch, a kernel leaf of %d calls, as tree --format json"
              % SLEEPS, path[-1:] if path else "no main")
        st, _, body = get(srv.port, "/api/flame?min=0")
        fl = json.loads(body) if st == 200 else {"nodes": []}
        fpath = {}
        for n in fl["nodes"]:
            fpath[n[0]] = (fpath.get(n[1], ()) if n[0] else ()) + ((n[2],) if n[0] else ())
        fk = [n for n in fl["nodes"] if fpath[n[0]] == ("main", "sleeper", "nanosleep", "sched:sched_switch")]
        check(len(fk) == 1 and fk[0][6] == 0 and fk[0][7] == 1 and fk[0][5] == SLEEPS and
              fk[0][3] == leaf.get("total_ns"),
              "/api/flame: the kernel leaf as a frame of kind kernel (not syscall), its calls and time", fk)
        st, _, body = get(srv.port, "/api/profile")
        names = [f["name"] for f in json.loads(body)["functions"]] if st == 200 else []
        rep = lp.json("report", "--format", "json", trace)
        check(sorted(names) == sorted(f["name"] for f in rep["functions"]) and "sched:sched_switch" not in names,
              "/api/profile: the functions of report --format json, no kernel leaf among them", names)

        # the index keeps the kernel layer: a second serve answers the same
        paths = ["/api/layers", "/api/kernel", "/api/offcpu_flame?min=0", "/api/kernel_tracks?px=1500",
                 "/api/flame?min=0", "/api/tree?thread=%d&node=%d" % (thread["id"], path[-2][0]["id"] if path else 0),
                 "/api/kernel_tracks?thread=%d&from=%d&to=%d" % (thread["id"], a, a + flow["duration_ns"])]
        first = [get(srv.port, p_)[2] for p_ in paths]
        srv.stop()
        srv = Server(lp, [trace])
        line = srv.out.wait_for(lambda l: "events" in l, 10) or ""
        check("index read" in line, "served again: from the index", line)
        again = [get(srv.port, p_)[2] for p_ in paths]
        diff = [p_ for p_, x, y in zip(paths, first, again) if x != y]
        check(not diff, "the index answers the kernel views as the pass does", diff)

        if br.why:
            skip("the kernel views in the browser", br.why)
            return
        expect = {
            "function": "sleeper",
            "switches": SLEEPS,
            "waits": SLEEPS,
            "thread": thread["id"],
            "min_offcpu_ns": SLEEPS * SLEEP_NS,
            "empty_url": empty.url,
            "others": True,
        }
        br.run("kernel", srv.url, expect, prefix="kernel-")
    finally:
        srv.stop()
        empty.stop()


def group_sync_real(lp, tmp):
    """/api/sync_tracks of a real program: sync_prodcons built with
    -finstrument-functions and recorded with --sync; the consumer's five
    condition waits in consumer, each released by the producer, as report
    --sync and flow tell them, with an arrow from the producer each."""
    b = it.Builder("gcc", "g++", "-O2", os.path.join(tmp, "sync-real"))
    prog = b.prog("sync_prodcons")
    trace = os.path.join(tmp, "prodcons.trace")
    r = lp("record", "-q", "--sync", "-o", trace, "--", prog)
    if not check(r.returncode == 0 and r.stdout == "consumed=5\n", "record --sync sync_prodcons", r.stderr):
        return
    rep = lp.json("report", "--sync", "--format", "json", trace)
    cond = rep["conditions"][0]
    consumer, producer = cond["waiters"][0]["tid"], cond["signallers"][0]["tid"]
    flow = lp.json("flow", "--format", "json", trace, "consumer")
    fwaits = [s for s in flow["steps"] if s["type"] == "sync"]
    srv = Server(lp, [trace])
    try:
        if not check(srv.url is not None, "serve the sync_prodcons trace", srv.err.text()):
            return
        summ = json.loads(get(srv.port, "/api/summary")[2])
        ids = {t["tid"]: t["id"] for t in summ["threads"]}
        check(summ["sync"] is True and summ["sync_events"] == 28 and consumer in ids and producer in ids,
              "/api/summary of sync_prodcons: sync, 28 sync events, the consumer and producer threads",
              (summ.get("sync"), summ.get("sync_events"), ids, consumer, producer))
        if consumer not in ids or producer not in ids:
            return
        st, _, body = get(srv.port, "/api/sync_tracks?thread=%d&px=16384" % ids[consumer])
        doc = json.loads(body) if st == 200 else {}
        rows = {t["id"]: t for t in doc.get("threads", [])}
        names = doc.get("names", {})
        waits = [(w[0] + summ["first_ns"], w[1] - w[0], names.get(str(w[2])), w[4], names.get(str(w[8])),
                  w[5] + summ["first_ns"] if w[5] is not None else None, w[6])
                 for w in rows.get(ids[consumer], {}).get("waits", [])]
        check(st == 200 and doc.get("threads", [{}])[0].get("id") == ids[consumer] and len(waits) == 5 and
              all(w[2] == "cond-wait" and w[3] == ids[producer] and w[4] == "consumer" and w[6] == 1 for w in waits),
              "/api/sync_tracks: the consumer first, its 5 cond-wait boxes in consumer, released by the producer",
              waits)
        want = [(s["time_ns"], s["duration_ns"], s["release_ns"]) for s in fwaits]
        check([(w[0], w[1], w[5]) for w in waits] == want,
              "/api/sync_tracks: the consumer's waits and their releases as flow consumer tells them",
              ([(w[0], w[1], w[5]) for w in waits], want))
        check(rows.get(ids[producer], {}).get("waits") == [],
              "/api/sync_tracks: the producer never waited", rows.get(ids[producer]))
        arrows = [a for a in doc.get("arrows", []) if a[2] == ids[consumer]]
        check(len(arrows) == 5 and all(a[1] == ids[producer] and names.get(str(a[4])) == "cond-wait" for a in arrows)
              and sorted(a[3] for a in arrows) == sorted(w[0] - summ["first_ns"] + w[1] for w in waits),
              "/api/sync_tracks: 5 arrows from the producer to the end of the consumer's waits", arrows)
        joins = [w for t in doc.get("threads", []) for w in t["waits"] if names.get(str(w[2])) == "join"]
        check(all(w[4] in (ids[producer], ids[consumer]) for w in joins),
              "/api/sync_tracks: main's joins that waited, ended by the workers", joins)
    finally:
        srv.stop()


def group_sync(lp, tmp, br, build):
    """The sync tracks in the page: the two-thread trace of
    tests/unit/test_syncviews.c (written by it: the sync capture is not
    needed), its /api/sync_tracks answer against what `flow` says of the
    same waits, then the timeline's sync rows and the flow's waits in the
    browser."""
    trace = os.path.join(tmp, "sync.trace")
    r = subprocess.run([os.path.join(build, "tests", "test_syncviews"), "--write", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if not check(r.returncode == 0, "test_syncviews --write: the synthetic sync trace", r.stderr):
        return
    flow = lp.json("flow", "--format", "json", trace, "main_body#1")
    waits = [s for s in flow["steps"] if s["type"] == "sync"]
    check(len(waits) == 6 and sum(1 for s in waits if "waker_tid" in s) == 4,
          "flow main_body#1: six waits, four with the thread that released them", waits)
    srv = Server(lp, [trace])
    try:
        if not check(srv.url is not None, "serve the sync trace", srv.err.text()):
            return
        summ = json.loads(get(srv.port, "/api/summary")[2])
        check(summ["sync"] is True and summ["sync_events"] == 15, "/api/summary: sync, 15 sync events",
              (summ.get("sync"), summ.get("sync_events")))
        main = [t for t in summ["threads"] if t["comm"] == "main"][0]
        worker = [t for t in summ["threads"] if t["comm"] == "worker"][0]
        st, _, body = get(srv.port, "/api/sync_tracks?thread=%d&px=2000" % main["id"])
        doc = json.loads(body) if st == 200 else {}
        rows = {t["id"]: t for t in doc.get("threads", [])}
        got = [(w[0] + summ["first_ns"], w[1] - w[0], doc["names"][str(w[2])], w[4] is not None)
               for w in rows.get(main["id"], {}).get("waits", [])]
        want = [(s["time_ns"], s["duration_ns"], s["text"].split(" ")[0], "waker_tid" in s) for s in waits]
        check(st == 200 and got == want, "/api/sync_tracks: main's waits as flow tells them (time, length, "
              "operation, released)", (got, want))
        check([a[1:3] for a in doc.get("arrows", [])] == [[worker["id"], main["id"]]] * 4,
              "/api/sync_tracks: four arrows from the worker to main", doc.get("arrows"))
        st, _, body = get(srv.port, "/api/sync_tracks?thread=999999")
        check(st == 404, "/api/sync_tracks: an unknown thread is 404", st)
        if br is None or br.why:
            skip("the sync tracks in the browser", br.why if br else "no browser")
            return
        tree = lp.json("tree", "--format", "json", trace)
        body = [n for t in tree["threads"] if t["comm"] == "main" for n in t["calls"] if n["name"] == "main_body"]
        tree_waits = sorted("[wait] %s=%d" % (n["name"], n["calls"]) for n in body[0]["children"] if n.get("sync"))
        check(len(tree_waits) == 3, "tree --format json: main_body's waits", tree_waits)
        expect = {"thread": main["id"], "waits": 6, "released": 4, "arrows": 4, "threads": 2,
                  "tree_waits": tree_waits}
        br.run("sync", srv.url, expect, prefix="sync-")
    finally:
        srv.stop()


def group_kernel_live(lp, b, tmp, build):
    """serve --connect --kernel: the session's kernel layer lent to the
    page, the tracks and the off-CPU flame graph fed as chunks arrive, the
    flow read from the trace the session keeps."""
    if os.geteuid() != 0:
        skip("the live session's kernel views", "not root: --kernel needs root (perf_event_open on tracepoints)")
        return
    prog = b.prog("kern_sleep", ["-std=c11"])
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    srv = None
    try:
        srv = Server(lp, ["--connect", agent.addr, "--kernel", "--syscalls", "--interval", "250ms", "--", prog])
        if not check(srv.url is not None, "serve --connect --kernel: serves", srv.err.text()):
            return
        done = wait_until(lambda: live_state(srv.port).get("state") == "done", 30)
        if not check(done, "serve --connect --kernel: kern_sleep's session ends", srv.err.text()):
            return
        summ = json.loads(get(srv.port, "/api/summary")[2])
        thread = [t for t in summ["threads"] if t["calls"]]
        check(summ["kernel"] is True and thread, "live /api/summary: kernel", summ.get("kernel"))
        if not thread:
            return
        st, k = tracks(srv.port, "?thread=%d" % thread[0]["id"])
        names = {int(i): v for i, v in k.get("names", {}).items()}
        offs = [o for t in k.get("threads", []) if t["id"] == thread[0]["id"] for o in t["off"]]
        sleeps = [o for o in offs if o[2] == "S" and names.get(o[4]) == "nanosleep"]
        if len(sleeps) != SLEEPS or sum(1 for o in sleeps if names.get(o[3]) == "timer (hardirq)") != SLEEPS:
            skip("the live session's kernel views", "the session's kernel events miss wake-ups of the sleeps "
                 "(see record_kern_sleep): %s" % [(o[2], names.get(o[3]), names.get(o[4])) for o in offs])
            return
        check(st == 200, "live /api/kernel_tracks: %d waits in nanosleep, each woken by its timer" % SLEEPS)
        lay = json.loads(get(srv.port, "/api/layers")[2])
        sl = [f for f in lay.get("functions", []) if f["name"] == "sleeper"]
        check(lay.get("kernel") is True and sl and sl[0]["voluntary_switches"] == SLEEPS,
              "live /api/layers: the session's kernel layer, sleeper's %d switches" % SLEEPS, sl)
        st, _, body = get(srv.port, "/api/offcpu_flame?min=0")
        fl = json.loads(body) if st == 200 else {"nodes": []}
        fr = [n for n in fl["nodes"] if n[2] == "sleeper"]
        check(fr and sl and fr[0][3] == sl[0]["off_cpu_ns"] >= SLEEPS * SLEEP_NS,
              "live /api/offcpu_flame: sleeper's frame holds its off-CPU time of /api/layers", (fr, sl))
        st, _, body = get(srv.port, "/api/flow?func=sleeper")
        f = json.loads(body) if st == 200 else {}
        check(sum(1 for x in f.get("steps", []) if x["type"] == "off_cpu") == SLEEPS,
              "live /api/flow?func=sleeper: from the kept trace, %d off-CPU steps" % SLEEPS, body[:300])
    finally:
        if srv:
            srv.stop()
        agent.stop()


def group_attach_dynamic(lp, tmp, build):
    """serve --connect --attach PID --dynamic: the page's session attached
    by uprobes to a plain program started here; the profile shows its
    command's calls, the page's quit takes the probes out, the program runs
    on; the kept trace has the calls."""
    why = uprobes_unusable()
    if why:
        skip("serve --attach --dynamic", why)
        return
    exe = os.path.join(tmp, "cmdloop-plain")
    r = it.run(["gcc", "-O2", "-pthread", "-I", it.PROGS, os.path.join(it.PROGS, "cmdloop.c"), "-o", exe])
    if not check(r.returncode == 0, "cmdloop builds plain", r.stderr):
        return
    agent = Agent(build, tmp)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    prog = Plain([exe])
    srv = None
    save = os.path.join(tmp, "serve-attach-dyn")
    try:
        check(prog.said("ready 0"), "cmdloop runs")
        srv = Server(lp, ["--connect", agent.addr, "--interval", "250ms", "--save", save, "--attach", str(prog.pid),
                          "--dynamic"])
        if not check(srv.url is not None, "serve --connect --attach --dynamic: serves", srv.err.text()):
            return
        running = wait_until(lambda: live_state(srv.port).get("state") == "running", 30)
        check(running, "serve: the session attached by probes runs", srv.err.text())
        prog.send("40")
        check(prog.said("done 40"), "the program runs its command")

        def calls():
            st, _, body = get(srv.port, "/api/profile")
            return {f["name"]: f["calls"] for f in json.loads(body)["functions"]} if st == 200 else {}
        got = wait_until(lambda: calls() if calls().get("g") == 40 else None, 30)
        check(got and got.get("f") == 40 and got.get("g") == 40, "/api/profile: f 40, g 40", calls())
        st, _, _ = get(srv.port, "/api/live/quit", method="POST", body=b"", headers={"X-Layerprof": "1"})
        done = wait_until(lambda: live_state(srv.port).get("state") == "done", 30)
        check(st == 200 and done, "the page's quit ends the session", live_state(srv.port))
        check(os.path.realpath(exe) not in uprobe_events() and code_changes(prog.pid, exe) == {},
              "once the session is done: no probe left, the program's code is the file's", code_changes(prog.pid, exe))
        srv.stop()
        srv = None
        rep = lp.json("report", "--format", "json", save)
        fn = {f["name"]: f["calls"] for f in rep["functions"]}
        check(fn.get("f") == 40 and fn.get("g") == 40, "the kept trace: f 40, g 40", fn)
        prog.send("1")
        check(prog.said("done 1") and prog.end() == 0, "the program runs on and ends with 0")
    finally:
        if srv:
            srv.stop()
        if prog.p.poll() is None:
            prog.p.kill()
            prog.p.wait()
        agent.stop()


# ---------------------------------------------------------------- the Coverage tab

COV_APP = os.path.join(HERE, "cov_app.c")
# cov_app's known outcome (its header says why)
COV_FUNCTIONS = {"total": 6, "run": 4, "percent": 66.7}
COV_CALLS = {"total": 5, "run": 3, "percent": 60.0}
COV_NEVER = ["never_called", "tiny_unused"]


def percent_text(p):
    return "%.1f%%" % p


def coverage_left_out(lp, trace, br):
    """A layerprof built without capstone: the route and the tab say so."""
    srv = Server(lp, [trace])
    try:
        if not check(srv.url is not None, "serve the coverage trace", srv.err.text()):
            return
        st, _, body = get(srv.port, "/api/coverage")
        check(st == 404 and "left out" in json.loads(body).get("error", ""),
              "/api/coverage without capstone: 404, coverage was left out", (st, body))
        if br.why:
            skip("coverage in the browser", br.why)
            return
        br.run("coverage", srv.url, {"left_out": True}, prefix="coverage-")
    finally:
        srv.stop()


def group_coverage(lp, b, tmp, br):
    prog = os.path.join(tmp, "cov_app")
    gone = os.path.join(tmp, "cov_gone")
    for out in (prog, gone):
        r = subprocess.run(["gcc", "-O0", "-g", "-finstrument-functions", COV_APP, "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if not check(r.returncode == 0, "build %s -O0 -finstrument-functions" % os.path.basename(out), r.stdout):
            return
    trace, trace_gone = os.path.join(tmp, "t-cov"), os.path.join(tmp, "t-cov-gone")
    for t, p in ((trace, prog), (trace_gone, gone)):
        r = lp("record", "-q", "-o", t, "--", p)
        if not check(r.returncode == 0, "record " + os.path.basename(p), r.stderr):
            return
    os.unlink(gone)  # its trace now names a binary that is not there
    if "without capstone" in lp("coverage", "--help").stderr:
        coverage_left_out(lp, trace, br)
        return
    r = lp("coverage", "--paths", "--format", "json", trace)
    if not check(r.returncode == 0, "layerprof coverage --paths --format json", r.stderr):
        return
    cli = json.loads(r.stdout)
    obj = cli["objects"][0] if len(cli["objects"]) == 1 else {}
    if not check(obj.get("path") == prog and obj["functions"] == COV_FUNCTIONS and obj["calls"] == COV_CALLS and
                 cli["total"] == {"functions": COV_FUNCTIONS, "calls": COV_CALLS} and
                 [f["name"] for f in obj["never_run"]] == COV_NEVER and
                 [(d["caller"], d["callee"]) for d in obj["dynamic_calls"]] == [("sort_some", "cmp_ints")],
                 "coverage of cov_app: functions 4/6, calls 3/5, never run %s, sort_some -> cmp_ints outside the "
                 "static graph" % ", ".join(COV_NEVER), r.stdout[:600]):
        return
    damaged = os.path.join(tmp, "t-cov-damaged")  # its last 40 bytes cut off
    shutil.copytree(trace, damaged)
    data = os.path.join(damaged, "data")
    os.truncate(data, os.path.getsize(data) - 40)
    srv = Server(lp, [trace])
    srv_gone = Server(lp, [trace_gone])
    srv_damaged = Server(lp, [damaged])
    try:
        if not check(srv.url is not None and srv_gone.url is not None and srv_damaged.url is not None,
                     "serve the coverage traces", srv.err.text() + srv_gone.err.text() + srv_damaged.err.text()):
            return
        st, _, body = get(srv.port, "/api/coverage")
        doc = json.loads(body) if st == 200 else {}
        check(st == 200 and {k: doc.get(k) for k in cli} == cli and doc.get("warnings") == [],
              "/api/coverage: the document of coverage --paths --format json, no warnings", (st, body[:300]))
        st2, _, again = get(srv.port, "/api/coverage")
        check(st2 == 200 and again == body, "/api/coverage again: the same answer (kept)")
        st, _, body = get(srv_gone.port, "/api/coverage")
        err = json.loads(body).get("error", "") if body.startswith(b"{") else ""
        check(st == 404 and ("cannot read '%s'" % gone) in err, "/api/coverage of a trace whose binary is gone: 404, "
              "which binary and why", (st, body))
        st, _, body = get(srv_damaged.port, "/api/coverage")
        doc = json.loads(body) if st == 200 else {}
        check(st == 200 and "is damaged" in doc.get("damage", "") and doc.get("paths"),
              "/api/coverage of a damaged trace: its readable part, and the damage", (st, body[-300:]))
        st, _, _ = get(srv.port, "/api/coverage", headers={"Host": "rebound.example:%d" % srv.port})
        check(st == 403, "/api/coverage with a foreign Host header: refused as every request", st)
        st, _, _ = get(srv.port, "/api/coverage", method="POST", headers={"X-Layerprof": "1"})
        check(st == 403, "POST /api/coverage: refused", st)
        if br.why:
            skip("coverage in the browser", br.why)
            return
        f, c = COV_FUNCTIONS, COV_CALLS
        cells = ["%d/%d" % (f["run"], f["total"]), percent_text(f["percent"]),
                 "%d/%d" % (c["run"], c["total"]), percent_text(c["percent"])]
        expect = {
            "table": [[prog] + cells, ["total"] + cells],
            "functions_percent": percent_text(f["percent"]),
            "calls_percent": percent_text(c["percent"]),
            "never": COV_NEVER,
            "dynamic": [[str(d["calls"]), d["caller"], d["callee"]] for d in obj["dynamic_calls"]],
            "gone_url": srv_gone.url,
            "damaged_url": srv_damaged.url,
            "gone_binary": gone,
        }
        br.run("coverage", srv.url, expect, prefix="coverage-")
    finally:
        srv.stop()
        srv_gone.stop()
        srv_damaged.stop()


def re_match(pattern, text):
    import re
    return re.fullmatch(pattern, text) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("groups", nargs="*")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    groups = a.groups or ["security", "index", "trace", "lost", "live", "heap", "liveheap", "livetl", "kernel",
                          "attach_dynamic", "coverage", "sync"]
    lp = it.Layerprof(build)
    r = lp("serve", "--help")
    if r.returncode != 0:
        print("skip: layerprof serve is not built here: %s" % r.stderr.strip())
        return SKIPPED
    tmp = tempfile.mkdtemp(prefix="lp-ui-")
    br = None
    try:
        b = it.Builder("gcc", "g++", "-O2", tmp)
        if any(g not in ("security", "index", "attach_dynamic") for g in groups):
            br = Browser(build)
            if br.why and all(g not in ("security", "index", "attach_dynamic") for g in groups):
                print("skip: the browser tests need %s" % br.why)
                return SKIPPED
        for g in groups:
            if g == "security":
                group_security(lp, b, tmp)
            elif g == "index":
                group_index(lp, b, tmp)
            elif g == "attach_dynamic":
                group_attach_dynamic(lp, tmp, build)
            elif g == "trace":
                group_trace(lp, b, tmp, br)
            elif g == "lost":
                group_lost(lp, b, tmp, br)
            elif g == "live":
                group_live(lp, b, tmp, br, build)
            elif g == "heap":
                group_heap(lp, b, tmp, br)
            elif g == "liveheap":
                group_liveheap(lp, b, tmp, br, build)
            elif g == "livetl":
                group_livetl(lp, b, tmp, br, build)
            elif g == "coverage":
                group_coverage(lp, b, tmp, br)
            elif g == "sync":
                group_sync(lp, tmp, br, build)
                group_sync_real(lp, tmp)
            elif g == "kernel":
                with kt.on_delivering_cpus(lp.exe, None, b.prog("kern_sleep", ["-std=c11"]), tmp):
                    group_kernel(lp, b, tmp, br)
                    group_kernel_live(lp, b, tmp, build)
            else:
                check(False, "group " + g, "unknown")
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
