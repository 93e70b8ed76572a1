#!/usr/bin/env python3
"""layerprof-oscal, the call-timing suite of `layerprof oscal`, alone: its
output protocol (version 1), its selection of entries and its cleanup.

Groups:
  list    --list: at least 100 distinct entries, each line with valid fields
          (name, call, condition, group, parameter, unit, description); the
          first entry of read and write is the regular file's; --calls and
          --skip select in --list as in a run.
  usage   bad usage: exit 2 and one line on stderr (an unknown option, a
          missing value, --reps and --warmup out of range, --calls matching
          nothing, with the exact message); a --dir that cannot hold the
          suite's directory: exit 1, one line.
  run     a --quick run of the whole suite in a directory of the test's: the
          first line, the machine, clock and settings records, then for
          every listed entry, in the list's order, its entry record (fields
          as listed, reps 20, warmup 3), its samples (20 raw integer times
          each, x ascending, no x twice) and exactly one end, skip or fail
          line; skip and fail with a reason, no fail on this machine;
          read and write measured over at least 3 sizes; kill-none measured
          (ESRCH is its result, not a failure); the done record's counts;
          nothing left in the directory.
  select  --calls with a name, a pattern and a call name runs exactly the
          entries whose name or call matches (as fnmatch); --skip leaves out
          exactly its names; --reps and --warmup in every entry record and
          in the number of times per sample; --seconds-max stops an entry
          that outlasts it (nanosleep 100000 times per requested length: at least
          15 s of sleeps requested against a limit of 2 s) with a skip line,
          and the next (sem-getvalue 100000 times, well under a second) runs
          to its end.
  skip    as user nobody (when the test runs as root and setpriv is
          installed): sched_setscheduler-fifo is skipped with its reason
          (EPERM: not permitted), the next entry still measured, exit 0, the
          done record counts the skip.
  signal  SIGINT while the suite is in fsync (a file in its directory) and
          SIGTERM while in pipe-pingpong (a child process): the suite ends
          by that signal, its directory is removed, its child no longer
          runs.  The signal is sent once the entry's record has appeared
          (a condition, not a fixed wait).

Times are never checked: only the protocol's shape and the bookkeeping.

usage: test_oscal_suite.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import errno
import fnmatch
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check  # noqa: E402

GROUPS = {"file", "memory", "process", "sync", "ipc", "signal", "time"}
NAME_RE = re.compile(r"^[a-z0-9_-]+$")
QUICK_REPS, QUICK_WARMUP = 20, 3


def run(cmd, timeout=300):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout)


def listing(suite, *args):
    """The --list lines as dicts, in order."""
    r = run([suite, "--list"] + list(args))
    if r.returncode != 0:
        raise RuntimeError("--list %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    out = []
    for line in r.stdout.splitlines():
        w = line.split(" ", 6)
        out.append({"name": w[0], "call": w[1] if len(w) > 1 else "", "cond": w[2] if len(w) > 2 else "",
                    "group": w[3] if len(w) > 3 else "", "param": w[4] if len(w) > 4 else "",
                    "unit": w[5] if len(w) > 5 else "", "desc": w[6] if len(w) > 6 else "", "fields": len(w)})
    return out


def fresh_dir(tmp, name):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    return d


def parse_run(text):
    """The records of a run: (header lines, [per entry: dict], done dict,
    problems).  Each entry: its fields, samples [(x, [times])], ends [the
    end/skip/fail records]."""
    lines = text.splitlines()
    entries, problems, done = [], [], None
    cur = None
    for i, line in enumerate(lines[4:], 5):
        w = line.split(" ")
        if w[0] == "entry":
            if cur and not cur["ends"]:
                problems.append("line %d: entry %s before %s ended" % (i, w[1], cur["name"]))
            f = {}
            for kv in w[2:]:
                if "=" not in kv:
                    break
                k, v = kv.split("=", 1)
                if k == "desc":
                    break
                f[k] = v
            desc = line.split(" desc=", 1)
            cur = {"name": w[1], "fields": f, "desc": desc[1] if len(desc) == 2 else "", "samples": [],
                   "ends": []}
            entries.append(cur)
        elif w[0] == "sample":
            if not cur or w[1] != cur["name"] or cur["ends"]:
                problems.append("line %d: a sample outside its entry: %s" % (i, line[:60]))
                continue
            try:
                cur["samples"].append((int(w[2]), [int(v) for v in w[3:]]))
            except ValueError:
                problems.append("line %d: a sample with a non-integer: %s" % (i, line[:60]))
        elif w[0] in ("end", "skip", "fail"):
            if not cur or w[1] != cur["name"]:
                problems.append("line %d: %s of an entry not running: %s" % (i, w[0], line[:60]))
                continue
            cur["ends"].append(line)
        elif w[0] == "done":
            done = dict(kv.split("=", 1) for kv in w[1:])
            if i != len(lines):
                problems.append("line %d: the done record is not the last" % i)
        else:
            problems.append("line %d: an unknown record: %s" % (i, line[:60]))
    return lines[:4], entries, done, problems


def leftovers(d):
    left = []
    for root, dirs, files in os.walk(d):
        left += [os.path.join(root, n) for n in dirs + files]
    return left


# ------------------------------------------------------------ groups


def group_list(suite, tmp):
    ls = listing(suite)
    names = [e["name"] for e in ls]
    check(len(set(names)) >= 100, "--list: at least 100 distinct entries (%d)" % len(set(names)))
    check(len(names) == len(set(names)), "--list: names unique",
          sorted(n for n in set(names) if names.count(n) > 1))
    bad = []
    for e in ls:
        ok = (e["fields"] == 7 and NAME_RE.match(e["name"]) and re.match(r"^[A-Za-z0-9_]+$", e["call"])
              and (e["cond"] == "-" or NAME_RE.match(e["cond"])) and e["group"] in GROUPS
              and (e["param"] == "-") == (e["unit"] == "-") and e["desc"].strip())
        if not ok:
            bad.append(e["name"])
    check(not bad, "--list: every line has 7 valid fields", bad[:10])
    check({e["group"] for e in ls} == GROUPS, "--list: every group has entries",
          sorted({e["group"] for e in ls}))
    first = {}
    for e in ls:
        first.setdefault(e["call"], e)
    for call in ("read", "write"):
        check(call in first and first[call]["cond"] == "file" and first[call]["param"] == "bytes",
              "--list: the first entry of %s is the regular file's, over bytes" % call)
    kills = {e["cond"]: e["name"] for e in ls if e["call"] == "kill"}
    check(all(c in kills for c in ("self", "other", "none")), "--list: kill to self, other and none",
          sorted(kills))
    sel = listing(suite, "--calls", "read,mutex-*", "--skip", "mutex-lock")
    want = [e["name"] for e in ls
            if any(fnmatch.fnmatchcase(e["name"], p) or fnmatch.fnmatchcase(e["call"], p)
                   for p in ("read", "mutex-*")) and e["name"] != "mutex-lock"]
    check([e["name"] for e in sel] == want, "--list --calls read,mutex-* --skip mutex-lock: exactly those",
          [e["name"] for e in sel])


def group_usage(suite, tmp):
    cases = [
        (["--frobnicate"], "layerprof-oscal: unknown option '--frobnicate' (see --help)"),
        (["--reps"], "layerprof-oscal: option '--reps' needs a value"),
        (["--reps", "0"], "layerprof-oscal: --reps must be a whole number from 1 to 100000, not '0'"),
        (["--reps", "12x"], "layerprof-oscal: --reps must be a whole number from 1 to 100000, not '12x'"),
        (["--warmup", "-1"], "layerprof-oscal: --warmup must be a whole number from 0 to 100000, not '-1'"),
        (["--calls", "no-such-call*"], "layerprof-oscal: no entry matches 'no-such-call*'"),
        (["--list", "--calls", "nothing,else"], "layerprof-oscal: no entry matches 'nothing,else'"),
        (["--seconds-max", "0"], "layerprof-oscal: --seconds-max must be a positive number of seconds, not '0'"),
    ]
    for args, msg in cases:
        r = run([suite] + args)
        err = r.stderr.splitlines()
        check(r.returncode == 2 and err == [msg] and r.stdout == "",
              "usage %s: exit 2, one line" % " ".join(args), "exit %d, %r" % (r.returncode, r.stderr))
    missing = os.path.join(tmp, "no-such-dir")
    r = run([suite, "--calls", "getpid", "--dir", missing])
    err = r.stderr.splitlines()
    check(r.returncode == 1 and len(err) == 1 and err[0].startswith("layerprof-oscal: cannot make a directory in '%s'"
                                                                     % missing) and r.stdout == "",
          "--dir missing: exit 1, one line, nothing on stdout", "exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(missing), "--dir missing: not made")


def group_run(suite, tmp):
    ls = listing(suite)
    d = fresh_dir(tmp, "run")
    t0 = time.monotonic()
    r = run([suite, "--quick", "--dir", d], timeout=600)
    took = time.monotonic() - t0
    if not check(r.returncode == 0, "--quick run: exit 0", r.stderr):
        return
    print("     (--quick took %.1f s)" % took)
    check(r.stderr == "", "--quick run: nothing on stderr", r.stderr[:200])
    head, entries, done, problems = parse_run(r.stdout)
    check(head[0] == "layerprof-oscal 1", "the first line is 'layerprof-oscal 1'", head[0])
    check(re.match(r"^machine arch=\S+ cpus=[1-9][0-9]* kernel=\S+ libc=\S+ host=\S+ cpu=.+$", head[1]) is not None,
          "the machine record", head[1])
    m = re.match(r"^clock name=monotonic resolution_ns=([0-9]+) overhead_ns=([0-9]+\.[0-9])$", head[2])
    check(m is not None and int(m.group(1)) >= 1, "the clock record", head[2])
    check(head[3] == "settings quick=1 reps=%d warmup=%d calls=-" % (QUICK_REPS, QUICK_WARMUP),
          "the settings record", head[3])
    check(not problems, "every record in its place", problems[:5])
    check([e["name"] for e in entries] == [e["name"] for e in ls], "every listed entry ran, in the list's order",
          len(entries))
    by = {e["name"]: e for e in ls}
    bad_fields, bad_ends, bad_samples, fails, no_reason = [], [], [], [], []
    for e in entries:
        want = by.get(e["name"])
        f = e["fields"]
        if not want or [f.get(k) for k in ("call", "cond", "group", "param", "unit", "reps", "warmup")] != \
                [want["call"], want["cond"], want["group"], want["param"], want["unit"], str(QUICK_REPS),
                 str(QUICK_WARMUP)] or e["desc"] != want["desc"]:
            bad_fields.append(e["name"])
        if len(e["ends"]) != 1:
            bad_ends.append(e["name"])
            continue
        kind = e["ends"][0].split(" ")[0]
        if kind in ("skip", "fail"):
            if not re.match(r"^%s %s reason=\S.*$" % (kind, re.escape(e["name"])), e["ends"][0]):
                no_reason.append(e["ends"][0])
            if kind == "fail":
                fails.append(e["ends"][0])
        xs = [x for x, _ in e["samples"]]
        if any(len(v) != QUICK_REPS or min(v) < 0 for _, v in e["samples"]) or xs != sorted(set(xs)) or \
                (kind == "end" and not xs) or (want and want["param"] == "-" and xs and xs != [0]):
            bad_samples.append(e["name"])
    check(not bad_fields, "every entry record's fields as listed, reps %d warmup %d" % (QUICK_REPS, QUICK_WARMUP),
          bad_fields[:10])
    check(not bad_ends, "every entry ends with exactly one end, skip or fail line", bad_ends[:10])
    check(not bad_samples, "every sample has %d raw times, x ascending, x 0 without a parameter" % QUICK_REPS,
          bad_samples[:10])
    check(not no_reason, "every skip and fail says its reason", no_reason[:5])
    check(not fails, "no entry failed on this machine", fails[:5])
    ended = {e["name"]: e for e in entries if e["ends"] and e["ends"][0].startswith("end ")}
    for name in ("read", "write"):
        check(name in ended and len(ended[name]["samples"]) >= 3, "%s measured over at least 3 sizes" % name)
    check("kill-none" in ended and len(ended["kill-none"]["samples"]) == 1,
          "kill-none measured (ESRCH is its normal result)")
    counts = {k: sum(1 for e in entries if e["ends"] and e["ends"][0].startswith(k + " "))
              for k in ("end", "skip", "fail")}
    check(done == {"measured": str(counts["end"]), "skipped": str(counts["skip"]), "failed": str(counts["fail"])},
          "the done record counts the entries", (done, counts))
    check(not leftovers(d), "nothing left in --dir after the run", leftovers(d)[:5])


def run_selected(suite, tmp, name, args):
    d = fresh_dir(tmp, name)
    r = run([suite, "--dir", d] + args)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    head, entries, done, problems = parse_run(r.stdout)
    return head, entries, problems, leftovers(d)


def group_select(suite, tmp):
    ls = listing(suite)
    pats = ["getpid", "mutex-*", "kill", "nanosleep"]
    want = [e["name"] for e in ls if any(fnmatch.fnmatchcase(e["name"], p) or fnmatch.fnmatchcase(e["call"], p)
                                         for p in pats)]
    check("kill-none" in want and "signal-roundtrip" in want and "mutex-handoff" in want,
          "the selection's expectation holds kill's entries by their call", want)
    head, entries, problems, left = run_selected(suite, tmp, "sel1",
                                                 ["--calls", ",".join(pats), "--reps", "3", "--warmup", "1"])
    check(head[3] == "settings quick=0 reps=3 warmup=1 calls=%s" % ",".join(pats), "--calls: the settings record",
          head[3])
    check([e["name"] for e in entries] == want, "--calls getpid,mutex-*,kill,nanosleep: exactly the matching entries",
          [e["name"] for e in entries])
    check(not problems, "--calls: every record in its place", problems[:5])
    check(all(e["fields"].get("reps") == "3" and e["fields"].get("warmup") == "1" for e in entries),
          "--reps 3 --warmup 1 in every entry record")
    check(all(len(v) == 3 for e in entries for _, v in e["samples"]) and all(e["samples"] for e in entries),
          "--reps 3: three times per sample")
    nano = [x for e in entries if e["name"] == "nanosleep" for x, _ in e["samples"]]
    check(len(nano) >= 4 and nano == sorted(nano), "nanosleep: all its requested lengths without --quick", nano)
    check(not left, "--calls: nothing left in --dir", left[:5])
    skip = ["kill-none", "mutex-lock", "no-such-entry"]
    head, entries, problems, left = run_selected(suite, tmp, "sel2",
                                                 ["--calls", ",".join(pats), "--skip", ",".join(skip), "--reps",
                                                  "2", "--warmup", "0"])
    check([e["name"] for e in entries] == [n for n in want if n not in skip],
          "--skip kill-none,mutex-lock,no-such-entry: exactly those left out", [e["name"] for e in entries])
    head, entries, problems, left = run_selected(suite, tmp, "sel3", ["--skip", ",".join(e["name"] for e in ls),
                                                                      "--reps", "1"])
    check(entries == [] and not problems, "--skip of every entry: none runs, the run still ends with done")
    head, entries, problems, left = run_selected(suite, tmp, "sel4", ["--calls", "nanosleep,sem-getvalue", "--reps",
                                                                      "100000", "--seconds-max", "2"])
    ends = {e["name"]: e["ends"] for e in entries}
    nano = ends.get("nanosleep", [""])
    check(len(nano) == 1 and re.match(r"^skip nanosleep reason=stopped after [0-5] of 6 parameter values: "
                                       r"over --seconds-max 2$", nano[0]) is not None,
          "--seconds-max: nanosleep stopped, a skip line says why", nano)
    check(ends.get("sem-getvalue") == ["end sem-getvalue"] and not problems and not left,
          "--seconds-max: the next entry runs, nothing left in --dir", ends.get("sem-getvalue"))


def wait_line(p, prefix, timeout=120):
    """Reads p's stdout until a line starting with prefix (True) or the
    timeout or its end (False)."""
    end = time.monotonic() + timeout
    buf = b""
    fd = p.stdout.fileno()
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        buf += chunk
        if any(line.startswith(prefix.encode()) for line in buf.split(b"\n")):
            return True
    return False


def children_of(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rfind(")") + 2:].split()[0] not in ("Z", "X")


def wait_until(cond, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def group_signal(suite, tmp):
    for sig, entry in ((signal.SIGINT, "fsync"), (signal.SIGTERM, "pipe-pingpong")):
        d = fresh_dir(tmp, "sig-%s" % entry)
        p = subprocess.Popen([suite, "--calls", entry, "--reps", "100000", "--dir", d], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        harness.started.append(p)
        if not check(wait_line(p, "entry %s " % entry), "%s: the entry record appears" % entry):
            continue
        # the entry record comes before the entry's setup: wait for its child
        if entry == "pipe-pingpong":
            wait_until(lambda: children_of(p.pid))
        kids = children_of(p.pid)
        made = [os.path.join(d, n) for n in os.listdir(d)]
        check(len(made) == 1 and os.path.isdir(made[0]), "%s: the suite's own directory in --dir" % entry, made)
        if entry == "pipe-pingpong":
            check(len(kids) == 1, "pipe-pingpong: its echo process runs", kids)
        p.send_signal(sig)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            check(False, "%s: the suite ends after %s" % (entry, sig.name))
            continue
        check(p.returncode == -sig, "%s: the suite ends by %s" % (entry, sig.name), p.returncode)
        check(not os.listdir(d), "%s: nothing left in --dir after %s" % (entry, sig.name), os.listdir(d))
        check(wait_until(lambda: not any(running(k) for k in kids)), "%s: no child of the suite runs on" % entry,
              kids)


def group_skip(suite, tmp):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        harness.skip("skip group", "needs root and setpriv to run the suite as nobody")
        return
    os.chmod(tmp, 0o711)
    d = fresh_dir(tmp, "nobody")
    os.chmod(d, 0o777)
    r = run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", suite, "--calls",
             "sched_setscheduler-fifo,getpid", "--reps", "2", "--warmup", "0", "--dir", d])
    if not check(r.returncode == 0, "as nobody: exit 0", r.stderr):
        return
    head, entries, done, problems = parse_run(r.stdout)
    ends = {e["name"]: e["ends"] for e in entries}
    want = "skip sched_setscheduler-fifo reason=sched_setscheduler SCHED_FIFO priority 1: %s" % os.strerror(errno.EPERM)
    fifo = ends.get("sched_setscheduler-fifo", [""])
    check(len(fifo) == 1 and fifo[0].startswith(want), "as nobody: sched_setscheduler-fifo skipped, EPERM its reason",
          fifo)
    check(ends.get("getpid") == ["end getpid"], "as nobody: getpid measured after the skip", ends.get("getpid"))
    check(done == {"measured": "1", "skipped": "1", "failed": "0"} and not problems, "as nobody: the done record",
          done)
    check(not leftovers(d), "as nobody: nothing left in --dir", leftovers(d)[:5])


def setup(build):
    suite = os.path.join(build, "oscal", "layerprof-oscal")
    if not os.access(suite, os.X_OK):
        check(False, "%s is built" % suite)
        return None
    return (suite,)


if __name__ == "__main__":
    sys.exit(harness.run_groups({"list": group_list, "usage": group_usage, "run": group_run,
                                 "select": group_select, "skip": group_skip, "signal": group_signal}, setup,
                                prefix="layerprof-oscal-test-"))
