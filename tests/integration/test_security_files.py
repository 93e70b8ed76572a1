#!/usr/bin/env python3
"""Attacks on the files layerprof makes and removes, each run as the
attacker would: as an unprivileged user (nobody, through setpriv) who
plants links and takes names in the directories every user may write, while
root runs record, the agent, live and serve.  Each check shows the attack
refused and root's work done all the same.

stale    links named like a dead recorder's session in /dev/shm: record
         removes nothing behind them; a killed recorder's session stays
         while its program runs, and goes after
squat    the per-user session directory, the agent's session names and its
         attach directory taken first: record and the agent go on elsewhere
         and never use them
attach   another user's <pid> entry in the attach directory, and a link in
         an attachable program's own session: the agent neither uses the one
         nor writes through the other
serve    serve's temporaries and caches planted as links in a trace directory
         everyone may write; another user's trace is indexed elsewhere
raw      a link to a root-only file in a trace: not in the raw export
outfile  -o FILE and live --save through links in a directory others may write

Runs as root, in its own mount and pid namespaces (unshare) with its own
tmpfs on /dev/shm, so that the names the test's attacker takes there touch
no other process, and pids are foreseeable (/proc/sys/kernel/ns_last_pid) as
an attacker would guess them.  Exits 77 (skipped, saying why) when not root
or without setpriv, unshare or a tmpfs mount.

usage: test_security_files.py --build BUILD_DIR [GROUP...]
Prints one line per check and ends with 'N passed, N failed'."""

import io
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import run as it  # noqa: E402
from harness import check, skip  # noqa: E402
from test_live import Lines, Live, counts, free_port  # noqa: E402

SKIPPED = 77
NS_ENV = "LP_SECURITY_FILES_NS"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
WAIT = 60
started = harness.started

PROG_SRC = r"""
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int __attribute__((noinline)) work(int x) { return x * 3 + 1; }

static void __attribute__((noinline)) keep(void)
{
	char *p = malloc(64);

	if (p)
		strcpy(p, "kept");
}

/* Says its pid and session; with "wait", works until its stdin ends. */
int main(int argc, char **argv)
{
	const char *s = getenv("LAYERPROF_SESSION");
	struct pollfd in = { 0, POLLIN, 0 };
	long n = 0;
	int i;

	printf("pid=%d session=%s\n", (int)getpid(), s ? s : "-");
	fflush(stdout);
	keep();
	for (i = 0; i < 10; i++)
		n += work(i);
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		for (i = 0;; i++) {
			char buf[64];

			n += work(i);
			if (poll(&in, 1, 20) > 0 && read(0, buf, sizeof(buf)) <= 0)
				break;
		}
	}
	printf("done %ld\n", n);
	return 0;
}
"""


# ---------------------------------------------------------------- helpers

def as_nobody(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("timeout", 60)
    return subprocess.run(NOBODY + list(cmd), universal_newlines=True, **kw)


def nobody_sh(script):
    """Runs a shell script as nobody; raises when it fails (the attack
    itself must work for the check after it to mean anything)."""
    r = as_nobody(["sh", "-ec", script])
    if r.returncode:
        raise RuntimeError("as nobody: %s: %s" % (script, r.stderr.strip()))
    return r


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return "<%s>" % e.strerror


def victim_dir(tmp, name):
    """A directory of root's with two files, for links to point at."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    for f in ("a", "b"):
        write(os.path.join(d, f), "keep " + f)
    return d


def victim_intact(d):
    return sorted(os.listdir(d)) == ["a", "b"] and all(read(os.path.join(d, f)) == "keep " + f for f in ("a", "b"))


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def next_pid(want):
    """Makes `want` the pid of the next process of this pid namespace
    (ours: nothing else forks in it).  False without ns_last_pid."""
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(want - 1))
        return True
    except OSError:
        return False


def last_pid():
    with open("/proc/sys/kernel/ns_last_pid") as f:
        return int(f.read())


def session_of(text):
    """pid and session that the test program printed."""
    for line in text.splitlines():
        if line.startswith("pid=") and " session=" in line:
            pid, sess = line.split(" ", 1)
            return int(pid[4:]), sess[len("session="):]
    return None, None


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_path(path, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.lexists(path):
            return True
        time.sleep(0.02)
    return os.path.lexists(path)


class Agent:
    """layerprofd as root on a loopback TCP port, with a token (live(...)
    passes it); attach_dir None: its default."""

    def __init__(self, build, tmp, attach_dir=None):
        token = os.path.join(tmp, "agent-token")
        if not os.path.exists(token):
            write(token, os.urandom(16).hex() + "\n", 0o600)
        self.token_args = ["--token-file", token]
        cmd = [os.path.join(build, "agent", "layerprofd")] + self.token_args
        if attach_dir:
            cmd += ["--attach-dir", attach_dir]
        for _ in range(3):  # another process may take the free port first
            self.addr = "127.0.0.1:%d" % free_port()
            self.p = subprocess.Popen(cmd + ["--listen", self.addr], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, universal_newlines=True)
            started.append(self.p)
            self.out = Lines(self.p.stdout)
            self.err = Lines(self.p.stderr)
            self.ok = self.err.wait_for(lambda l: "listening on" in l, 10) is not None
            if self.ok or "Address already in use" not in self.err.text():
                break
            self.p.wait()

    def live(self, lp, args, stdin=subprocess.PIPE):
        return Live(lp, self.addr, self.token_args + list(args), stdin=stdin)

    def stop(self):
        stop(self.p)


class Server:
    """layerprof serve on a free port (url None when it did not start)."""

    def __init__(self, lp, args, env=None):
        self.p = subprocess.Popen([lp.exe, "serve", "--port", "0"] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True,
                                  env=env)
        started.append(self.p)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)
        line = self.out.wait_for(lambda l: "http://" in l, WAIT)
        self.url = line[line.index("http://"):].split()[0].rstrip("/") if line else None
        self.loaded = self.out.wait_for(lambda l: "events" in l, WAIT) if self.url else None

    def stop(self):
        stop(self.p)


def attachable(lp, prog, attach_dir=None, user=None):
    """The test program with the runtime preloaded and no session: it makes
    itself attachable.  user "nobody": run as nobody; "root-then-nobody":
    setpriv, preloaded too, registers as root, then runs it as nobody."""
    env = dict(os.environ, LD_PRELOAD=os.path.join(lp.libdir, "liblayerprof.so"))
    env.pop("LAYERPROF_SESSION", None)
    if attach_dir:
        env["LAYERPROF_ATTACH_DIR"] = attach_dir
    else:
        env.pop("LAYERPROF_ATTACH_DIR", None)
    cmd = [prog, "wait"]
    if user == "nobody":  # the runtime in the program only, not in setpriv running as root
        cmd = NOBODY + ["env", "LD_PRELOAD=" + env.pop("LD_PRELOAD")] + cmd
    elif user:
        cmd = NOBODY + cmd
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True)
    started.append(p)
    pid, _ = session_of(p.stdout.readline())
    return p, pid


def end(p):
    try:
        p.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def record(lp, prog, out, *extra):
    return lp("record", "-q", "-o", out, *extra, "--", prog)


# ---------------------------------------------------------------- stale sessions

def group_stale(lp, build, prog, tmp):
    victim = victim_dir(tmp, "victim-stale")
    dead = dead_pid()
    links = ["/dev/shm/layerprof-%d-1" % dead, "/dev/shm/layerprof-%d-%x" % (dead, 0x5eed),
             "/dev/shm/rec-%d-0123456789abcdef" % dead]
    nobody_sh(" && ".join("ln -s %s %s" % (victim, l) for l in links))
    r = record(lp, prog, os.path.join(tmp, "t-stale"))
    check(r.returncode == 0, "record runs beside links named like a dead recorder's sessions", r.stderr)
    check(victim_intact(victim), "root's record removes nothing behind a link planted in /dev/shm",
          sorted(os.listdir(victim)))
    check(all(os.path.islink(l) for l in links), "and leaves other users' entries in /dev/shm alone")

    # a killed recorder's session: kept while its program maps it
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", os.path.join(tmp, "t-killed"), "--", prog, "wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    started.append(p)
    pid, session = session_of(p.stdout.readline())
    if not check(pid and session and os.path.isdir(session), "the recorded program is in its session", session):
        end(p)
        return
    p.kill()
    p.wait()
    r = record(lp, prog, os.path.join(tmp, "t-after-kill"))
    check(r.returncode == 0 and os.path.isdir(session),
          "a killed recorder's session stays while its program still runs", r.stderr)
    end(p)  # its stdin ends: the program ends
    try:
        os.waitpid(pid, 0)  # an orphan of this namespace's first process: ours to reap
    except ChildProcessError:
        pass
    r = record(lp, prog, os.path.join(tmp, "t-after-end"))
    check(r.returncode == 0 and os.path.isdir(session),
          "a killed recorder's session stays while its trace waits for recover", r.stderr)
    shutil.rmtree(os.path.join(tmp, "t-killed"))
    r = record(lp, prog, os.path.join(tmp, "t-after-gone"))
    check(r.returncode == 0 and not os.path.exists(session),
          "once nobody maps it and no trace waits for it, the next record removes it",
          os.listdir(os.path.dirname(session)))


# ---------------------------------------------------------------- names taken first

def group_squat(lp, build, prog, tmp):
    victim = victim_dir(tmp, "victim-squat")
    base = "/dev/shm/layerprof-u0"
    # the attacker came first: before root ever recorded on this machine
    shutil.rmtree(base, ignore_errors=True)
    dead = dead_pid()
    nobody_sh("mkdir -m 0777 %s && ln -s %s %s/rec-%d-0123456789abcdef && touch %s/marker" %
              (base, victim, base, dead, base))
    planted = sorted(os.listdir(base))
    r = record(lp, prog, os.path.join(tmp, "t-squat"))
    pid, session = session_of(r.stdout)
    check(r.returncode == 0 and session and not session.startswith(base + "/"),
          "record works with its private directory's name taken, and does not use it", r.stderr + r.stdout)
    check(("'%s' belongs to uid 65534" % base) in r.stderr and "using '%s." % base in r.stderr,
          "record says the name is taken and which directory it uses", r.stderr)
    check(victim_intact(victim) and sorted(os.listdir(base)) == planted,
          "nothing in the taken directory is used, removed or followed", sorted(os.listdir(base)))
    r2 = record(lp, prog, os.path.join(tmp, "t-squat2"))
    _, session2 = session_of(r2.stdout)
    check(r2.returncode == 0 and session and session2 and os.path.dirname(session) == os.path.dirname(session2),
          "the next record uses the same directory of its own", "%s %s" % (session, session2))
    if session:
        st = os.lstat(os.path.dirname(session))
        check(st.st_uid == 0 and (st.st_mode & 0o7777) == 0o700, "which is root's, mode 0700", oct(st.st_mode))
    rep = lp.json("report", "--format", "json", os.path.join(tmp, "t-squat"))
    check(counts(rep).get("work") == 10, "and the trace is whole", counts(rep))

    # the agent: its session names taken first, as its pid tells them
    agent = Agent(build, tmp, os.path.join(tmp, "attach-squat"))
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        names = ["/dev/shm/layerprofd-%d-%d" % (agent.p.pid, n) for n in range(1, 9)]
        nobody_sh("mkdir -m 0777 " + " ".join(names))
        live = agent.live(lp, ["--format", "json", "--", prog], stdin=subprocess.DEVNULL)
        rc = live.wait(WAIT)
        line = agent.out.wait_for(lambda l: l.startswith("pid="), 10) or ""
        _, session = session_of(line)
        check(rc == 0 and counts(live.final()).get("work") == 10,
              "the agent starts programs with its session names taken first", live.err.text())
        check(session and not any(session == n for n in names) and not session.startswith(base + "/"),
              "in a session of its own", session)
        check(agent.err.wait_for(lambda l: ("'%s' belongs to uid 65534" % base) in l, 5) is not None,
              "the agent says its private directory's name is taken", agent.err.text())
        check(all(not os.listdir(n) for n in names), "the directories planted for it stay empty")
    finally:
        agent.stop()

    # the attach directory taken before the agent starts
    attach = "/dev/shm/layerprof-attach"
    nobody_sh("mkdir -m 0777 %s" % attach)
    agent = Agent(build, tmp)
    prog_p = None
    if not check(agent.ok, "agent starts with its attach directory taken", agent.err.text()):
        return
    try:
        line = agent.err.wait_for(lambda l: "LAYERPROF_ATTACH_DIR=" in l, 5) or ""
        other = line.split("LAYERPROF_ATTACH_DIR=", 1)[1].strip() if line else None
        check(other and other.startswith(attach + ".") and os.stat(other).st_uid == 0,
              "the agent says it uses an attach directory of its own instead, and where", agent.err.text())
        prog_p, pid = attachable(lp, prog)
        check(pid and not os.path.lexists(os.path.join(attach, str(pid))) and not os.listdir(attach),
              "a program of root's does not register in another user's attach directory", os.listdir(attach))
        end(prog_p)
        if not other:
            return
        prog_p, pid = attachable(lp, prog, other)
        check(pid and os.path.isdir(os.path.join(other, str(pid))), "it registers in the agent's own",
              os.listdir(other))
        live = agent.live(lp, ["--format", "json", "--interval", "100ms", "--attach", str(pid)])
        v = live.wait_view(lambda v: counts(v).get("work", 0) > 0, 20)
        check(v is not None, "and the agent attaches to it there", live.err.text())
        live.say("quit")
        live.wait(20)
    finally:
        if prog_p:
            end(prog_p)
        agent.stop()


# ---------------------------------------------------------------- the attach directory's entries

def group_attach(lp, build, prog, tmp):
    attach = os.path.join(tmp, "attach")
    agent = Agent(build, tmp, attach)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    procs = []
    try:
        st = os.stat(attach)
        check(st.st_uid == 0 and (st.st_mode & 0o7777) == 0o1777, "the attach directory: root's, sticky",
              oct(st.st_mode))
        # another user takes the <pid> entry of a program of root's first
        want = last_pid() + 50
        nobody_sh("mkdir -m 0777 %s/%d" % (attach, want))
        if next_pid(want):
            p, pid = attachable(lp, prog, attach)
            procs.append(p)
            if pid != want:
                skip("the <pid> entry taken first", "the program got pid %s, not %d" % (pid, want))
            else:
                entry = os.path.join(attach, str(pid))
                maps = read("/proc/%d/maps" % pid)
                check(not os.listdir(entry) and (entry + "/") not in maps,
                      "a program of root's keeps no session in a <pid> entry another user made",
                      os.listdir(entry))
                others = [n for n in os.listdir(attach) if n.startswith("%d." % pid)]
                check(len(others) == 1 and os.stat(os.path.join(attach, others[0])).st_uid == 0,
                      "it registers under <pid>.XXXXXX instead", os.listdir(attach))
                live = agent.live(lp, ["--format", "json", "--interval", "100ms", "--attach", str(pid)])
                v = live.wait_view(lambda v: counts(v).get("work", 0) > 0, 20)
                check(v is not None and not os.listdir(entry), "the agent attaches to it there",
                      live.err.text())
                live.say("quit")
                live.wait(20)
        else:
            skip("the <pid> entry taken first", "no /proc/sys/kernel/ns_last_pid")

        # a program that registered as root, then became nobody (its exec
        # registered again, under <pid>.XXXXXX): traced in its own session
        p, pid = attachable(lp, prog, attach, user="root-then-nobody")
        procs.append(p)
        mine = [n for n in os.listdir(attach) if n.startswith("%s." % pid)]
        check(pid and os.stat(os.path.join(attach, str(pid))).st_uid == 0 and len(mine) == 1 and
              os.stat(os.path.join(attach, mine[0])).st_uid == 65534,
              "a program that became nobody after registering as root registers again, as nobody",
              os.listdir(attach))
        live = agent.live(lp, ["--format", "json", "--interval", "100ms", "--attach", str(pid)])
        v = live.wait_view(lambda v: counts(v).get("work", 0) > 0, 20)
        check(v is not None, "the agent attaches to its session as nobody, not to root's left behind",
              live.err.text())
        live.say("quit")
        live.wait(20)
        end(p)

        # a program of nobody's, whose own session holds a link to a file of root's
        target = os.path.join(tmp, "victim-attach")
        write(target, "keep filters")
        p, pid = attachable(lp, prog, attach, user="nobody")
        procs.append(p)
        session = os.path.join(attach, str(pid))
        if not check(pid and wait_path(os.path.join(session, "control")), "a program of nobody's registers",
                     os.listdir(attach)):
            return
        nobody_sh("ln -s %s %s/filters" % (target, session))
        live = agent.live(lp, ["--format", "json", "--interval", "100ms", "--only", "main", "--attach",
                                     str(pid)])
        v = live.wait_view(lambda v: "functions" in v, 20)
        live.say("filter --only work")
        time.sleep(0.5)  # the filter frame's effect is on a file: nothing to wait for when it is refused
        live.say("quit")
        live.wait(20)
        check(v is not None, "root's live attaches to it", live.err.text())
        check(read(target) == "keep filters" and os.path.islink(os.path.join(session, "filters")),
              "the agent writes its filters through no link the program's user planted", read(target)[:40])
    finally:
        for p in procs:
            end(p)
        agent.stop()


def group_attach_sweep(lp, build, prog, tmp):
    """Sessions that attachable programs left when they ended unattached
    (their rings would stay in shared memory for good) go when an agent
    starts; a running program's stays, and what another user planted in
    an entry named like a dead process is removed without following its
    links."""
    attach = os.path.join(tmp, "attach-sweep")
    agent = Agent(build, tmp, attach)
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    agent.stop()
    procs = []
    try:
        gone, pid_gone = attachable(lp, prog, attach)
        procs.append(gone)
        ok = pid_gone and wait_path(os.path.join(attach, str(pid_gone), "control"))
        end(gone)
        gone.wait()
        running, pid_running = attachable(lp, prog, attach, user="nobody")
        procs.append(running)
        ok = ok and pid_running and wait_path(os.path.join(attach, str(pid_running), "control"))
        if not check(ok, "two attachable programs registered; one of them ended", os.listdir(attach)):
            return
        victim = os.path.join(tmp, "victim-sweep")
        write(victim, "keep sweep")
        dead = 4000
        while os.path.exists("/proc/%d" % dead):
            dead += 1
        nobody_sh("mkdir -m 0700 %s/%d && ln -s %s %s/%d/control && ln -s %s %s/%d/r.1.1.1" %
                  (attach, dead, victim, attach, dead, tmp, attach, dead))
        agent = Agent(build, tmp, attach)
        if not check(agent.ok, "a second agent starts", agent.err.text()):
            return
        left = sorted(os.listdir(attach))
        check(str(pid_gone) not in left, "the session of the program that ended unattached is removed", left)
        check(str(pid_running) in left and os.path.exists(os.path.join(attach, str(pid_running), "control")),
              "the session of the running program stays", left)
        check(str(dead) not in left and read(victim) == "keep sweep" and os.path.isdir(tmp),
              "an entry planted under a dead pid is removed, nothing behind its links", (left, read(victim)))
    finally:
        for p in procs:
            end(p)
        agent.stop()


# ---------------------------------------------------------------- serve's index and heap cache

def group_serve(lp, build, prog, tmp):
    ww = os.path.join(tmp, "ww")
    os.makedirs(ww, exist_ok=True)
    trace = os.path.join(ww, "t")
    r = record(lp, prog, trace, "--memory")
    if not check(r.returncode == 0, "record --memory", r.stderr):
        return
    os.chmod(trace, 0o777)
    victims = {}
    for name in ("index-tmp", "heap-tmp", "index", "heap"):
        victims[name] = os.path.join(tmp, "victim-serve-" + name)
        write(victims[name], "keep " + name)
    # serve's temporaries were named by its pid: the attacker plants the
    # names the next pids would use, and the caches themselves
    first = last_pid() + 1000
    script = ["ln -s %s %s/serve-index" % (victims["index"], trace),
              "ln -s %s %s/serve-heap" % (victims["heap"], trace),
              "for p in $(seq %d %d); do ln -s %s %s/serve-index.tmp.$p; ln -s %s %s/serve-heap.tmp.$p; done" %
              (first, first + 40, victims["index-tmp"], trace, victims["heap-tmp"], trace)]
    nobody_sh(" && ".join(script))
    next_pid(first)
    srv = Server(lp, [trace])
    try:
        check(srv.url is not None and srv.loaded is not None, "serve reads a trace with links planted beside it",
              srv.err.text())
    finally:
        srv.stop()
    changed = [n for n, v in victims.items() if read(v) != "keep " + n]
    check(not changed, "no file behind a planted serve-index, serve-heap or temporary name is written", changed)
    check(all(not os.path.islink(os.path.join(trace, f)) and os.stat(os.path.join(trace, f)).st_uid == 0
              for f in ("serve-index", "serve-heap")),
          "the index and heap cache are root's own files (the links replaced)")
    srv = Server(lp, [trace])
    try:
        check(srv.loaded and "index read" in srv.loaded, "and the next serve reads the index", srv.loaded)
    finally:
        srv.stop()

    # a trace of another user's: indexed in root's cache, never written into
    theirs = os.path.join(tmp, "theirs")
    os.makedirs(theirs)
    shutil.copy(os.path.join(trace, "data"), os.path.join(theirs, "data"))
    for path in (theirs, os.path.join(theirs, "data")):
        os.chown(path, 65534, 65534)
    os.chmod(theirs, 0o755)
    cache = os.path.join(tmp, "cache")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    for what in ("first", "second"):
        srv = Server(lp, [theirs], env)
        try:
            check(srv.loaded is not None, "serve of another user's trace (%s)" % what, srv.err.text())
            if what == "second":
                check(srv.loaded and "index read" in srv.loaded, "the second reads its index", srv.loaded)
        finally:
            srv.stop()
        check(os.listdir(theirs) == ["data"], "nothing is written into another user's trace directory",
              os.listdir(theirs))
    kept = os.path.join(cache, "layerprof", "serve")
    files = sorted(os.listdir(kept)) if os.path.isdir(kept) else []
    check(len(files) == 2 and files[0].endswith(".serve-heap") and files[1].endswith(".serve-index") and
          (os.stat(kept).st_mode & 0o777) == 0o700, "its index and heap cache are kept in root's own cache",
          files)


# ---------------------------------------------------------------- the raw export

def group_raw(lp, build, prog, tmp):
    rawd = os.path.join(tmp, "raw")
    os.makedirs(rawd, exist_ok=True)
    trace = os.path.join(rawd, "t")
    r = record(lp, prog, trace)
    if not check(r.returncode == 0, "record", r.stderr):
        return
    os.chmod(trace, 0o777)
    secret = os.path.join(tmp, "secret")
    word = "TOPSECRET-%d" % os.getpid()
    write(secret, word + "\n", 0o600)
    check(as_nobody(["cat", secret]).returncode != 0, "nobody cannot read the root-only file itself")
    nobody_sh("ln -s %s %s/secret && ln -s %s %s/heap.snapshot" % (secret, trace, secret, trace))
    srv = Server(lp, [trace])
    try:
        if not check(srv.url is not None, "serve", srv.err.text()):
            return
        fetch = ("import sys, urllib.request; "
                 "sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=60).read())")
        r = subprocess.run(NOBODY + [sys.executable, "-c", fetch, srv.url + "/api/export?format=raw"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        data = r.stdout
        check(r.returncode == 0 and data, "nobody fetches the raw export", r.stderr.decode(errors="replace"))
        check(word.encode() not in data, "a link in the trace to a root-only file is not followed into it")
        names = []
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
                names = sorted(m.name for m in t.getmembers())
        except tarfile.TarError as e:
            names = [str(e)]
        check(names == ["t", "t/data"], "the archive holds the trace's own regular files only", names)
    finally:
        srv.stop()


# ---------------------------------------------------------------- output files

def group_outfile(lp, build, prog, tmp):
    shared = os.path.join(tmp, "shared")
    os.makedirs(shared, exist_ok=True)
    os.chmod(shared, 0o777)  # writable by all, not sticky
    trace = os.path.join(tmp, "t-out")
    r = record(lp, prog, trace, "--memory")
    if not check(r.returncode == 0, "record --memory", r.stderr):
        return
    target = os.path.join(tmp, "victim-out")
    for name, args in (("report", ["report"]), ("dump", ["dump", "--chrome"]), ("snapshot", ["snapshot"])):
        write(target, "keep out")
        out = os.path.join(shared, name + ".out")
        nobody_sh("ln -s %s %s" % (target, out))
        r = lp(*(args + ["-o", out, trace]))
        check(r.returncode != 0 and read(target) == "keep out" and "symbolic link" in r.stderr,
              "%s -o FILE: a link another user planted there is refused, not written through" % name,
              "%d %s" % (r.returncode, r.stderr.strip()))
    theirs = os.path.join(shared, "theirs.txt")
    nobody_sh("echo mine > %s && chmod 0666 %s" % (theirs, theirs))
    r = lp("report", "-o", theirs, trace)
    check(r.returncode != 0 and read(theirs) == "mine\n", "report -o into another user's file there: refused",
          r.stderr.strip())
    fresh = os.path.join(shared, "fresh.txt")
    r = lp("report", "-o", fresh, trace)
    check(r.returncode == 0 and "work" in read(fresh) and os.stat(fresh).st_uid == 0, "report -o a new file works",
          r.stderr)
    r = lp("report", "-o", "/dev/stdout", trace)
    check(r.returncode == 0 and "work" in r.stdout, "report -o /dev/stdout (a link root's /dev holds) works",
          r.stderr)

    # live --save: the old trace moved aside, never through a link
    agent = Agent(build, tmp, os.path.join(tmp, "attach-out"))
    if not check(agent.ok, "agent starts", agent.err.text()):
        return
    try:
        save = os.path.join(shared, "saved")
        shutil.copytree(trace, save)
        vdir = victim_dir(tmp, "victim-save")
        write(os.path.join(vdir, "data"), "keep data")
        nobody_sh("ln -s %s %s.old" % (vdir, save))
        live = agent.live(lp, ["--format", "json", "--save", save, "--", prog], stdin=subprocess.DEVNULL)
        rc = live.wait(WAIT)
        check(read(os.path.join(vdir, "data")) == "keep data" and read(os.path.join(vdir, "a")) == "keep a",
              "live --save: nothing behind a link planted at DIR.old is removed",
              "%s %s" % (os.listdir(vdir), live.err.text()))
        check(rc != 0 and save in live.err.text() and os.path.islink(save + ".old"),
              "and the save is refused, saying why", "%s %s" % (rc, live.err.text()))
    finally:
        agent.stop()


def reachable(group):
    """run_groups makes the temporary directory 0700: the attacker must
    reach into it, as into any directory of a shared machine."""
    def run_group(lp, build, prog, tmp):
        os.chmod(tmp, 0o755)
        return group(lp, build, prog, tmp)
    return run_group


GROUPS = {
    "stale": reachable(group_stale),
    "squat": reachable(group_squat),
    "attach": reachable(group_attach),
    "attach_sweep": reachable(group_attach_sweep),
    "serve": reachable(group_serve),
    "raw": reachable(group_raw),
    "outfile": reachable(group_outfile),
}


def setup(build):
    lp = it.Layerprof(build)
    if not os.access(os.path.join(build, "agent", "layerprofd"), os.X_OK):
        skip("security", "no agent at %s/agent/layerprofd" % build)
        return None
    return lp, build


def main():
    if os.environ.get(NS_ENV) != "1":
        why = None
        if os.geteuid() != 0:
            why = "needs root (the attacks run as nobody against root)"
        elif not shutil.which("setpriv") or not shutil.which("unshare"):
            why = "needs setpriv and unshare (util-linux)"
        else:
            try:
                pwd.getpwnam("nobody")
            except KeyError:
                why = "no user nobody"
        if why:
            print("skip security_files: %s" % why)
            return SKIPPED
        env = dict(os.environ, **{NS_ENV: "1"})
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc",
                            sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env=env)
        return r.returncode
    # inside: a /dev/shm of our own
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777,size=1g", "lp-test-shm", "/dev/shm"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode:
        print("skip security_files: cannot mount a tmpfs on /dev/shm here: %s" % r.stdout.strip())
        return SKIPPED
    return harness.run_groups(GROUPS, setup_with_prog, "layerprof-secfiles-")


def setup_with_prog(build):
    common = setup(build)
    if common is None:
        return None
    # the test program, where nobody may run it
    d = "/dev/shm/lp-secprog"
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    src = os.path.join(d, "secprog.c")
    with open(src, "w") as f:
        f.write(PROG_SRC)
    prog = os.path.join(d, "secprog")
    r = subprocess.run(["gcc", "-O1", "-g", "-finstrument-functions", src, "-o", prog], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode:
        skip("security", "cannot build the test program: %s" % r.stdout)
        return None
    return common + (prog,)


if __name__ == "__main__":
    sys.exit(main())
