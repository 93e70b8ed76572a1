#!/usr/bin/env python3
"""`layerprof record` when things go wrong around it, with real programs:
the recorder killed with SIGKILL (the trace keeps what was flushed on the
period, `layerprof recover` adds what the rings held, the program runs on
with its output and exit status), the program outliving its recorder with
full rings, a full disk and other failed writes (tracing stops, the exit
status passes through, the loss is counted and named), usage errors (the
previous trace and its .old survive), and the rotation of a trace
directory to DIR.old (serve's files, foreign files, links another user
planted).

usage: test_record.py --build BUILD_DIR [GROUP...]
groups: killed, outlived, recover_guards, diskfull, usage, rotate (default: all)
Prints one line per check and ends with 'N passed, N failed'."""

import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import run as it  # noqa: E402  (the builders of run.py)
from harness import check, skip  # noqa: E402

WAIT = 120  # seconds any one step may take on a loaded machine
PR_SET_CHILD_SUBREAPER = 36
started = harness.started


def become_subreaper():
    """The programs a killed recorder leaves behind become our children, so
    that their exit status can be read."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def wait_status(pid, deadline=WAIT):
    """The wait status of our child pid, or None when it did not end in time."""
    end = time.time() + deadline
    while time.time() < end:
        p, status = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            return status
        time.sleep(0.02)
    return None


class Lines:
    """Lines of a pipe, read with a deadline (a stuck program fails the
    check instead of hanging the suite)."""

    def __init__(self, f):
        self.fd = f.fileno()
        self.buf = b""

    def readline(self, deadline=WAIT):
        end = time.time() + deadline
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            data = os.read(self.fd, 65536)
            if not data:
                break
            self.buf += data
        line, sep, self.buf = self.buf.partition(b"\n")
        return line.decode() if sep or line else None


def kill_recorder(p):
    """SIGKILL, then waits until the recorder is a zombie, which it stays
    until reaped (p.wait()) after recover: meanwhile the pid in its session's
    name is taken, so that a record started by anyone else does not remove
    the session as a dead recorder's."""
    p.send_signal(signal.SIGKILL)
    end = time.time() + WAIT
    while time.time() < end:
        with open("/proc/%d/stat" % p.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        time.sleep(0.01)


def build(tmp, name):
    out = os.path.join(tmp, name)
    if not os.path.exists(out):
        r = it.run(["gcc", "-O2", "-g", "-finstrument-functions", "-I", it.PROGS,
                    os.path.join(it.PROGS, name + ".c"), "-o", out])
        if r.returncode:
            raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
    return out


def calls(lp, trace):
    """({function: calls}, report json or None, stderr) of a trace."""
    r = lp("report", "--format", "json", trace)
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        return {}, None, r.stderr
    return {f["name"]: f["calls"] for f in rep["functions"]}, rep, r.stderr


def wait_calls(lp, trace, func, n):
    """Polls the trace of a running recorder until func has n calls."""
    end = time.time() + WAIT
    while time.time() < end:
        if calls(lp, trace)[0].get(func) == n:
            return True
        time.sleep(0.05)
    return False


def note_session(trace):
    """The session directory named by the recorder's note."""
    with open(os.path.join(trace, "recording"), "rb") as f:
        text = f.read().split(b"\0", 1)[0].decode()
    for line in text.splitlines():
        if line.startswith("session="):
            return line[len("session="):]
    return None


def start_stepper(lp, trace, stepper, status, extra=()):
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", trace] + list(extra) + ["--", stepper, str(status)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.append(p)
    out = Lines(p.stdout)
    return p, out, int(out.readline())


def steps(p, out, n):
    """Asks the stepper for n steps; the lines it printed ("step K")."""
    got = []
    for _ in range(n):
        p.stdin.write(b"x\n")
        p.stdin.flush()
        got.append(out.readline())
    return got


# ---------------------------------------------------------------- groups

def group_killed(lp, tmp):
    """SIGKILL of the recorder while a slow program runs."""
    stepper = build(tmp, "stepper")
    trace = os.path.join(tmp, "k-trace")
    p, out, pid = start_stepper(lp, trace, stepper, 7)
    got = steps(p, out, 5)
    check(got == ["step %d" % i for i in range(1, 6)], "stepper made 5 steps", got)
    # the recorder writes a quiet program's calls on its flush period
    check(wait_calls(lp, trace, "step", 5), "a running recorder's trace shows the 5 calls made so far",
          calls(lp, trace)[0])
    session = note_session(trace)
    check(session and os.path.isdir(session), "the recorder's note names its session", session)
    kill_recorder(p)
    f, rep, err = calls(lp, trace)
    check(f == {"main": 1, "step": 5} and rep and not rep["complete"],
          "after SIGKILL of the recorder: exactly the 5 calls made before, the trace readable", (f, err))
    check("layerprof recover" in err, "report says the recording was cut and recover can add to it", err)
    # the program runs on without its recorder
    got = steps(p, out, 3)
    check(got == ["step 6", "step 7", "step 8"], "the program goes on after its recorder died", got)
    p.stdin.close()
    check(out.readline() == "done 8", "the program's output is whole")
    status = wait_status(pid)
    check(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7,
          "the program's exit status is its own (7)", status)
    # the recorder reaped (its pid gone) and its program ended, nobody maps
    # the session: a record started now sweeps dead sessions, and keeps
    # this one because its trace's note still names it
    p.wait()
    other = os.path.join(tmp, "k-other")
    r = lp("record", "-q", "-o", other, "--", "true")
    check(r.returncode == 0 and os.path.isdir(session),
          "a later record's sweep keeps the session a trace waits to recover", r.stderr)
    r = lp("recover", trace)
    check(r.returncode == 0, "recover finishes the trace", r.stderr)
    f, rep, err = calls(lp, trace)
    check(f == {"main": 1, "step": 8, "finish": 1}, "recover adds the calls made after the kill", f)
    check(rep and rep["complete"] and rep["lost_events"] == 0,
          "the recovered trace is complete and lost nothing (all was flushed or in the rings)",
          rep and (rep["complete"], rep["lost_events"]))
    check(not os.path.exists(os.path.join(trace, "recording")) and not os.path.exists(session),
          "recover removes the note and the session", os.listdir(trace))
    r = lp("recover", trace)
    check(r.returncode == 1 and "nothing to recover" in r.stderr, "a second recover has nothing to do", r.stderr)

    # killed while events may be taken from the rings but not yet written:
    # whatever the timing, each call is either in the trace or counted lost
    trace = os.path.join(tmp, "k-trace2")
    p, out, pid = start_stepper(lp, trace, stepper, 3)
    steps(p, out, 3)
    check(wait_calls(lp, trace, "step", 3), "second recording: 3 calls written")
    got = steps(p, out, 2)
    kill_recorder(p)
    got += steps(p, out, 1)
    p.stdin.close()
    got.append(out.readline())
    check(got == ["step 4", "step 5", "step 6", "done 6"], "the program's output is whole", got)
    status = wait_status(pid)
    check(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3,
          "the program's exit status is its own (3)", status)
    r = lp("recover", trace)
    f, rep, err = calls(lp, trace)
    lost = rep["lost_events"] if rep else -1
    check(r.returncode == 0 and rep and rep["complete"] and f.get("finish") == 1 and 3 <= f.get("step", 0) <= 6
          and lost % 2 == 0 and f.get("step", 0) + lost // 2 == 6,
          "every call is in the recovered trace or counted lost (calls + lost/2 = 6)", (f, lost, r.stderr))


def group_outlived(lp, tmp):
    """The program runs on long after its recorder died: its rings fill and
    it must neither block nor die."""
    busy = build(tmp, "busy")
    n = "300000000"  # long enough that the recorder is killed mid-run, however fast it is
    ref = it.run([busy, n])
    trace = os.path.join(tmp, "o-trace")
    p = subprocess.Popen([lp.exe, "record", "-q", "-b", "128K", "-o", trace, "--", busy, n],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.append(p)
    end = time.time() + WAIT
    while time.time() < end and not os.path.exists(os.path.join(trace, "recording")):
        time.sleep(0.01)
    # chunks reach the data file (a report of the growing trace would read
    # it all, as long as the recording goes on)
    data = os.path.join(trace, "data")
    end = time.time() + WAIT
    while time.time() < end and not (os.path.exists(data) and os.path.getsize(data) > (256 << 10)):
        time.sleep(0.01)
    if not check(p.poll() is None and os.path.getsize(data) > (256 << 10),
                 "the busy program's calls reach the trace while it runs", p.poll()):
        return
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        kids = f.read().split()
    pid = int(kids[0]) if kids else None
    kill_recorder(p)
    if not check(pid is not None, "the program's pid is known"):
        return
    status = wait_status(pid, deadline=600)
    check(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
          "the program runs to its end with full rings and no recorder", status)
    got = p.stdout.read().decode()
    check(got == ref.stdout, "its output is what it prints untraced", (got, ref.stdout))
    r = lp("recover", trace)
    f, rep, err = calls(lp, trace)
    check(r.returncode == 0 and rep and rep["complete"], "recover finishes the trace", r.stderr + err)
    check(rep and rep["lost_events"] > 0 and 0 < f.get("tiny_a", 0) < int(n),
          "what did not fit in the rings is counted lost", rep and (f, rep["lost_events"]))


def group_recover_guards(lp, tmp):
    """recover refuses what it must not touch, and says why."""
    stepper = build(tmp, "stepper")
    r = lp("recover")
    check(r.returncode == 2, "recover without a trace: usage error", r.stderr)
    r = lp("recover", os.path.join(tmp, "no-such-trace"))
    check(r.returncode == 3, "recover of a missing trace: exit 3", r.stderr)
    # the recorder still runs: nothing happens to it
    trace = os.path.join(tmp, "g-live")
    p, out, pid = start_stepper(lp, trace, stepper, 0)
    steps(p, out, 2)
    r = lp("recover", trace)
    check(r.returncode == 1 and "still runs" in r.stderr, "recover while the recorder runs is refused", r.stderr)
    steps(p, out, 2)
    p.stdin.close()
    p.wait(timeout=WAIT)
    check(p.returncode == 0 and calls(lp, trace)[0] == {"main": 1, "step": 4, "finish": 1},
          "the recording goes on untouched", calls(lp, trace))
    check(not os.path.exists(os.path.join(trace, "recording")), "a recorder that ends in order leaves no note")
    if os.geteuid() != 0:
        skip("recover and other users' files", "needs root to give files to nobody")
        return
    # a trace (and note) of another user, naming one of our sessions
    trace = os.path.join(tmp, "g-theirs")
    p, out, pid = start_stepper(lp, trace, stepper, 0)
    steps(p, out, 1)
    wait_calls(lp, trace, "step", 1)
    kill_recorder(p)
    p.stdin.close()
    wait_status(pid)
    for path in (trace, os.path.join(trace, "recording")):
        shutil.chown(path, "nobody")
    r = lp("recover", trace)
    check(r.returncode == 1 and "another user" in r.stderr and os.path.isdir(note_session(trace)),
          "recover refuses another user's trace and note, and leaves the session", r.stderr)
    for path in (trace, os.path.join(trace, "recording")):
        os.chown(path, os.geteuid(), os.getegid())
    r = lp("recover", trace)
    check(r.returncode == 0 and calls(lp, trace)[0].get("finish") == 1, "the owner's recover then works", r.stderr)
    # a note naming a session that is a link, or another user's directory
    for kind in ("link", "foreign"):
        trace = os.path.join(tmp, "g-" + kind)
        p, out, pid = start_stepper(lp, trace, stepper, 0)
        steps(p, out, 1)
        wait_calls(lp, trace, "step", 1)
        session = note_session(trace)
        kill_recorder(p)
        p.stdin.close()
        wait_status(pid)
        moved = session + ".real"
        os.rename(session, moved)
        if kind == "link":
            os.symlink(moved, session)
        else:
            os.mkdir(session, 0o700)
            shutil.chown(session, "nobody")
        with open(os.path.join(trace, "data"), "rb") as f:
            before = f.read()
        r = lp("recover", trace)
        with open(os.path.join(trace, "data"), "rb") as f:
            after = f.read()
        want = "a symbolic link" if kind == "link" else "belongs to another user"
        check(r.returncode == 1 and want in r.stderr and before == after and
              os.path.exists(os.path.join(trace, "recording")) and sorted(os.listdir(moved)) != [],
              "recover refuses a session (%s), and changes nothing" % want, r.stderr)
        if kind == "link":
            os.unlink(session)
        else:
            os.rmdir(session)
        shutil.rmtree(moved, ignore_errors=True)


DISKFULL_SCRIPT = r"""
set -e
mount -t tmpfs -o size=1m tmpfs "$DISK"
set +e
"$@" > "$OUT/prog.out" 2> "$OUT/rec.err" < "$OUT/input"
echo $? > "$OUT/rc"
cp -a "$DISK/t" "$OUT/t"
"""

EDQUOT_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* writes to the file $LPTEST_QUOTA_FILE fail with EDQUOT past
 * $LPTEST_QUOTA_BYTES, as a user's disk quota would make them; the 64 KiB
 * the recorder's note gives back (it shrinks) are room again */
ssize_t writev(int fd, const struct iovec *iov, int n)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	const char *file = getenv("LPTEST_QUOTA_FILE");
	char link[64], path[4096];
	ssize_t len;
	off_t at;

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (file && len > 0) {
		char note[4200];
		struct stat st;
		long limit = atol(getenv("LPTEST_QUOTA_BYTES"));

		path[len] = '\0';
		snprintf(note, sizeof(note), "%.*s/recording", (int)(strrchr(file, '/') - file), file);
		if (stat(note, &st) || st.st_size < 4096)
			limit += 65536;
		at = lseek(fd, 0, SEEK_CUR);
		if (!strcmp(path, file) && at > limit) {
			errno = EDQUOT;
			return -1;
		}
	}
	return real(fd, iov, n);
}
"""


def check_diskfull(lp, what, rc, out_file, err, trace, lines, cause):
    with open(out_file) as f:
        prog = f.read().splitlines()
    check(rc == 5, "%s: the program's exit status (5) passes through" % what, (rc, err))
    check(len(prog) == lines + 2 and prog[1] == "step 1" and prog[-2] == "step %d" % lines and
          prog[-1] == "done %d" % lines, "%s: the program's output is whole" % what, prog[-2:])
    check(cause in err and "tracing stopped" in err and "events not written" in err,
          "%s: record says why and that tracing stopped" % what, err)
    f, rep, rerr = calls(lp, trace)
    check(rep is not None and rep["complete"] and "damaged" not in rerr,
          "%s: the trace is whole and ends in order" % what, rerr)
    check(rep and rep["lost_events"] > 0 and cause in rep.get("lost_cause", "") and 0 < f.get("step", 0) < lines,
          "%s: report counts the events lost and names the cause" % what,
          rep and (f, rep["lost_events"], rep.get("lost_cause")))
    r = lp("report", trace)
    check("events lost" in r.stdout and cause in r.stdout, "%s: the text report says it too" % what, r.stdout[-300:])


def group_diskfull(lp, tmp):
    """Writing the trace fails: ENOSPC on a small tmpfs, EFBIG under a file
    size limit, EDQUOT (injected: this kernel may have no quotas)."""
    stepper = build(tmp, "stepper")
    lines = 300000
    base = os.path.join(tmp, "d")
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, "input"), "w") as f:
        f.write("x\n" * lines)
    # ENOSPC
    if os.geteuid() != 0 or not shutil.which("unshare"):
        skip("disk full (ENOSPC)", "needs root and unshare for a private tmpfs")
    else:
        out = os.path.join(base, "enospc")
        disk = os.path.join(base, "disk")
        os.makedirs(out, exist_ok=True)
        os.makedirs(disk, exist_ok=True)
        shutil.copy(os.path.join(base, "input"), os.path.join(out, "input"))
        env = dict(lp_env(lp), DISK=disk, OUT=out)
        r = it.run(["unshare", "-m", "--propagation", "private", "sh", "-c", DISKFULL_SCRIPT, "sh", lp.exe, "record",
                    "-o", os.path.join(disk, "t"), "--", stepper, "5"], env=env, timeout=600)
        if not os.path.exists(os.path.join(out, "rc")):
            skip("disk full (ENOSPC)", "cannot mount a private tmpfs: %s" % r.stderr.strip())
        else:
            with open(os.path.join(out, "rec.err")) as f:
                err = f.read()
            check_diskfull(lp, "ENOSPC", int(open(os.path.join(out, "rc")).read()), os.path.join(out, "prog.out"),
                           err, os.path.join(out, "t"), lines, "No space left on device")
    # EFBIG: a file size limit on the recorder, set once the program runs
    # (the recorder must not die of SIGXFSZ)
    out = os.path.join(base, "efbig")
    os.makedirs(out, exist_ok=True)
    p = subprocess.Popen([lp.exe, "record", "-o", os.path.join(out, "t"), "--", stepper, "5"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=lp_env(lp))
    started.append(p)
    first = p.stdout.readline()
    r = it.run(["prlimit", "--pid", str(p.pid), "--fsize=400000"])
    check(r.returncode == 0, "prlimit the recorder", r.stderr)
    o, e = p.communicate(input=b"x\n" * lines, timeout=600)
    with open(os.path.join(out, "prog.out"), "wb") as po:
        po.write(first + o)
    check_diskfull(lp, "EFBIG", p.returncode, os.path.join(out, "prog.out"), e.decode(), os.path.join(out, "t"),
                   lines, "File too large")
    # EDQUOT
    shim = os.path.join(base, "quota.so")
    r = it.run(["gcc", "-shared", "-fPIC", "-O2", "-o", shim, "-x", "c", "-", "-ldl"], input=EDQUOT_SHIM)
    if not check(r.returncode == 0, "build the EDQUOT shim", r.stderr):
        return
    out = os.path.join(base, "edquot")
    os.makedirs(out, exist_ok=True)
    # (a sanitizer build of layerprof lets the shim come first)
    env = dict(lp_env(lp), LD_PRELOAD=shim, LPTEST_QUOTA_FILE=os.path.join(out, "t", "data"),
               LPTEST_QUOTA_BYTES="300000", ASAN_OPTIONS="verify_asan_link_order=0")
    with open(os.path.join(base, "input")) as inp, open(os.path.join(out, "prog.out"), "w") as po:
        r = subprocess.run([lp.exe, "record", "-o", os.path.join(out, "t"), "--", stepper, "5"], stdin=inp, stdout=po,
                           stderr=subprocess.PIPE, env=env, timeout=600, universal_newlines=True)
    check_diskfull(lp, "EDQUOT", r.returncode, os.path.join(out, "prog.out"), r.stderr, os.path.join(out, "t"),
                   lines, "Disk quota exceeded")


def lp_env(lp):
    return dict(os.environ, LAYERPROF_LIB=os.path.join(lp.libdir, "liblayerprof.so"))


def snapshot(*dirs):
    """{path: bytes} of every file under the given directories (links as
    their target's name)."""
    out = {}
    for d in dirs:
        if os.path.islink(d):
            out[d] = "link:" + os.readlink(d)
            continue
        for root, _, files in os.walk(d):
            for name in files:
                p = os.path.join(root, name)
                if os.path.islink(p):
                    out[p] = "link:" + os.readlink(p)
                else:
                    with open(p, "rb") as f:
                        out[p] = f.read()
    return out


def group_usage(lp, tmp):
    """Every usage error leaves the previous trace and its .old alone."""
    stepper = build(tmp, "stepper")
    trace = os.path.join(tmp, "u-trace")
    for _ in range(2):
        r = lp("record", "-q", "-o", trace, "--", stepper, input="x\n")
        check(r.returncode == 0, "a trace and its .old to keep", r.stderr)
    check(os.path.exists(os.path.join(trace + ".old", "data")), "both hold a trace")
    noexec = os.path.join(tmp, "u-noexec")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    bad = [
        (["--tid", "5"], 2), (["--buffer-size", "1K"], 2), (["--clock", "sideways"], 2), (["--syscalls=nope"], 2),
        (["--syscall-filter", "read"], 2), (["--syscalls", "--syscall-filter", "nosuchcall"], 2),
        (["--mem-depth", "3"], 2), (["--memory", "--mem-depth", "0"], 2), (["--memory", "--mem-fold", "x"], 2),
        (["--keep-alive"], 2), (["--depth", "x"], 2), (["--min-time", "fast"], 2), (["--no-such-option"], 2),
    ]
    for args, want in bad:
        before = snapshot(trace, trace + ".old")
        r = lp("record", "-o", trace, *args, "--", stepper)
        check(r.returncode == want and r.stderr.strip() and snapshot(trace, trace + ".old") == before,
              "record %s: exit %d, the previous trace and .old untouched" % (" ".join(args), want),
              (r.returncode, r.stderr.strip()[:200]))
    for prog, want in (("/nonexistent/prog", 127), ("no-such-program-anywhere", 127), (noexec, 126)):
        before = snapshot(trace, trace + ".old")
        r = lp("record", "-o", trace, "--", prog)
        check(r.returncode == want and "cannot run" in r.stderr and snapshot(trace, trace + ".old") == before,
              "record of %s: exit %d, the previous trace and .old untouched" % (prog, want), r.stderr)
    before = snapshot(trace, trace + ".old")
    r = lp("record", "-o", trace)
    check(r.returncode == 2 and snapshot(trace, trace + ".old") == before, "record without a program: exit 2")
    r = lp("record", "--help")
    check(r.returncode == 0 and "--tid" not in r.stdout and "--only" in r.stdout and "recover" in r.stdout,
          "record --help offers only what record takes (no --tid) and names recover")


def serve_once(lp, trace):
    """Serves the trace until its index is written, then stops it."""
    p = subprocess.Popen([lp.exe, "serve", "--port", "0", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.append(p)
    end = time.time() + WAIT
    while time.time() < end and not os.path.exists(os.path.join(trace, "serve-index")):
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=WAIT)
    return sorted(os.listdir(trace))


def group_rotate(lp, tmp):
    """A trace directory goes to DIR.old with the files layerprof wrote
    there; anything else stops record before it changes a thing."""
    mem = build(tmp, "stepper")
    trace = os.path.join(tmp, "r-trace")
    r = lp("record", "-q", "-m", "-o", trace, "--", mem, input="x\n")
    check(r.returncode == 0, "record with --memory", r.stderr)
    serve = lp("serve", "--help").returncode == 0
    if not serve:
        skip("record after serve", "this layerprof was built without serve")
    for round_ in (1, 2) if serve else ():
        with open(os.path.join(trace, "data"), "rb") as f:
            prev = f.read()
        files = serve_once(lp, trace)
        check("serve-index" in files and "serve-heap" in files,
              "round %d: serve left its index and heap cache in the trace" % round_, files)
        r = lp("record", "-q", "-m", "-o", trace, "--", mem, input="x\nx\n")
        check(r.returncode == 0, "round %d: record after serve replaces the trace" % round_, r.stderr)
        with open(os.path.join(trace + ".old", "data"), "rb") as f:
            check(f.read() == prev, "round %d: the previous trace, with serve's files, is the .old" % round_)
        check(calls(lp, trace)[0].get("step") == 2, "round %d: the new trace is the new recording" % round_)
    # a file layerprof did not write: refused, nothing changed
    for where in (trace, trace + ".old"):
        with open(os.path.join(where, "notes.txt"), "w") as f:
            f.write("mine\n")
        before = snapshot(trace, trace + ".old")
        r = lp("record", "-q", "-o", trace, "--", mem, input="")
        check(r.returncode == 1 and "notes.txt" in r.stderr and "nothing was changed" in r.stderr and
              snapshot(trace, trace + ".old") == before,
              "a foreign file in %s: record refuses, nothing lost" % os.path.basename(where), r.stderr)
        os.unlink(os.path.join(where, "notes.txt"))
    # an empty directory is used
    empty = os.path.join(tmp, "r-empty")
    os.makedirs(empty)
    r = lp("record", "-q", "-o", empty, "--", mem, input="")
    check(r.returncode == 0 and os.path.exists(os.path.join(empty, "data")), "an empty directory becomes the trace",
          r.stderr)
    if os.geteuid() != 0:
        skip("links planted by another user", "needs root to act as nobody")
        return
    # links another user planted in a shared sticky directory
    shared = os.path.join(tmp, "r-shared")
    os.makedirs(shared)
    os.chmod(shared, 0o1777)
    os.chmod(tmp, 0o755)
    victim = os.path.join(tmp, "r-victim")
    os.makedirs(victim)
    with open(os.path.join(victim, "data"), "w") as f:
        f.write("precious\n")
    t = os.path.join(shared, "t")
    r = lp("record", "-q", "-o", t, "--", mem, input="")
    check(r.returncode == 0, "a trace in a shared directory", r.stderr)
    for planted, name in ((t + ".old", ".old"), (os.path.join(shared, "u"), "the trace")):
        rr = it.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "ln", "-s", victim, planted])
        if not check(rr.returncode == 0, "nobody plants %s -> victim" % planted, rr.stderr):
            continue
        out = t if name == ".old" else planted
        before = snapshot(victim, t)
        r = lp("record", "-q", "-o", out, "--", mem, input="")
        check(r.returncode == 1 and "symbolic link" in r.stderr and snapshot(victim, t) == before and
              os.path.islink(planted),
              "a link planted as %s: record refuses and deletes nothing through it" % name, r.stderr)
    # a directory of another user, even empty: not taken over
    theirs = os.path.join(shared, "theirs")
    it.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "mkdir", theirs])
    r = lp("record", "-q", "-o", theirs, "--", mem, input="")
    check(r.returncode == 1 and "another user" in r.stderr and os.stat(theirs).st_uid != os.geteuid() and
          not os.listdir(theirs), "another user's directory is neither written into nor replaced", r.stderr)


GROUPS = {
    "killed": group_killed,
    "outlived": group_outlived,
    "recover_guards": group_recover_guards,
    "diskfull": group_diskfull,
    "usage": group_usage,
    "rotate": group_rotate,
}


class Lp(it.Layerprof):
    def __call__(self, *args, **kw):
        kw.setdefault("env", lp_env(self))
        return it.run([self.exe] + list(args), **kw)


def setup(build_dir):
    if not become_subreaper():
        skip("record", "cannot become a child subreaper (prctl)")
        return None
    return (Lp(build_dir),)


def main():
    return harness.run_groups(GROUPS, setup, "layerprof-record-")


if __name__ == "__main__":
    sys.exit(main())
