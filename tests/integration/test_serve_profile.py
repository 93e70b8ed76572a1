#!/usr/bin/env python3
"""layerprof serve derives its flat profile from the call trees it builds in
its pass over a trace; report walks every event into the profile.  With
real programs (recursion, deep recursion, mutual recursion, threads, longjmp, a forked
child that inherits frames, a forked child that recurses under inherited
frames of the same function, and system calls where record --syscalls
works), check that

- /api/profile has, row for row, the numbers of report --format json
  (calls, total with recursion counted once, self, average, minimum,
  maximum; system call time counted as the function's own, as report does);
- the answers from the index (the next start) are the same as the pass's;
- with recursion a million levels deep (deep.c), every call is counted.

usage: test_serve_profile.py --build BUILD
Ends with 'N passed, N failed'."""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

TIMEOUT = 300

# A recursive function that forks at depth 2 of its recursion: the child
# calls it again under the frames it inherited, which the profile does not
# count as calls of this process (so the child's call is its outermost).
RECFORK = r"""
#include "prog.h"
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

COUNTED void leaf(void)
{
	sink++;
}

COUNTED int rec(int n, int fork_at)
{
	int r;

	leaf();
	if (n == fork_at) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(rec(3, -1) & 1);
		waitpid(pid, NULL, 0);
	}
	if (n <= 0)
		return 1;
	r = rec(n - 1, fork_at) + 1;
	BARRIER();
	return r;
}

int main(void)
{
	int i, s = 0;

	for (i = 0; i < 3; i++)
		s += rec(6, 2);
	printf("%d\n", s);
	return 0;
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=TIMEOUT, **kw)


def build(tmp, name, src=None):
    if src is None:
        src = os.path.join(PROGS, name + ".c")
    out = os.path.join(tmp, name)
    r = run(["gcc", "-O2", "-g", "-finstrument-functions", "-pthread", "-I", PROGS, src, "-o", out])
    if r.returncode:
        raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
    return out


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def served(lp, trace, extra):
    """{path: body} of the profile and the summary from one serve."""
    p = subprocess.Popen([lp, "serve", "--port", "0"] + extra + [trace], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    out = {}
    try:
        port = None
        for line in p.stdout:
            if "http://" in line:
                port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                break
        if port is None:
            return None
        for path in ("/api/profile", "/api/profile?sort=calls", "/api/summary"):
            status, body = get(port, path)
            out[path] = (status, body)
    finally:
        p.terminate()
        p.wait(timeout=30)
    return out


def rows(doc):
    keys = ("name", "calls", "total_ns", "self_ns", "avg_ns", "min_ns", "max_ns")
    return [tuple(f.get(k) for k in keys) for f in doc["functions"]]


def scenario(lp, tag, trace, calls=None):
    rep = json.loads(run([lp, "report", "--format", "json", trace]).stdout)
    if calls:
        got = {f["name"]: f["calls"] for f in rep["functions"] if f["name"] in calls}
        check(got == calls, "%s: report has the calls %s" % (tag, calls), got)
    cold = served(lp, trace, ["--reindex"])
    if not check(cold is not None, "%s: serve --reindex starts" % tag):
        return
    status, body = cold["/api/profile"]
    api = json.loads(body) if status == 200 else {"functions": []}
    want = sorted(rows(rep))
    got = sorted(rows(api))
    check(got == want and len(want) > 0, "%s: /api/profile equals report --format json, %d rows" % (tag, len(want)),
          "\n  serve  %s\n  report %s" % (got, want))
    warm = served(lp, trace, [])
    if not check(warm is not None, "%s: serve from the index starts" % tag):
        return
    same = all(warm[p] == cold[p] for p in ("/api/profile", "/api/profile?sort=calls"))
    check(same, "%s: the profile from the index is the pass's" % tag)
    summ = json.loads(warm["/api/summary"][1])
    check(summ.get("from_index") is True, "%s: the second serve read the index" % tag, summ.get("from_index"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    lp = os.path.join(args.build, "host", "layerprof")
    r = run([lp, "serve", "--help"])
    if r.returncode != 0:
        skip("serve", "this layerprof was built without it: %s" % r.stderr.strip()[-200:])
        return 77
    tmp = tempfile.mkdtemp(prefix="lp-serve-profile-")
    try:
        src = os.path.join(tmp, "recfork.c")
        with open(src, "w") as f:
            f.write(RECFORK)
        progs = [("recursion", build(tmp, "recursion"), []), ("mutual", build(tmp, "mutual"), []),
                 ("threads", build(tmp, "threads"), []), ("longjmp", build(tmp, "longjmp"), []),
                 ("forker", build(tmp, "forker"), []), ("recfork", build(tmp, "recfork", src), []),
                 ("deep", build(tmp, "deep"), ["1000000"])]
        for tag, prog, argv in progs:
            trace = os.path.join(tmp, tag + ".trace")
            # deep: a ring that holds its 2000000 events, however slow the drain
            extra = ["-b", "64M"] if tag == "deep" else []
            r = run([lp, "record", "-q", "-o", trace] + extra + ["--", prog] + argv)
            if check(r.returncode == 0, "%s: recorded" % tag, r.stderr):
                # recursion a million levels deep: every call counts
                scenario(lp, tag, trace, {"down": 1000000, "run": 1} if tag == "deep" else None)
        for tag, prog in (("sys_threads", build(tmp, "sys_threads")), ("recfork-syscalls", progs[-1][1])):
            trace = os.path.join(tmp, tag + ".trace")
            r = run([lp, "record", "-q", "--syscalls", "-o", trace, "--", prog])
            if r.returncode != 0:
                skip("%s with --syscalls" % tag, "record --syscalls failed here: %s" % r.stderr.strip()[-300:])
                continue
            check(True, "%s: recorded with --syscalls" % tag)
            scenario(lp, tag, trace)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
