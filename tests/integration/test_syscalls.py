#!/usr/bin/env python3
"""The syscall profiler with real programs: `record --syscalls` with each
backend the kernel allows, exact counts, attribution to the function and the
thread, errno, a forked child, uninstrumented programs, function filters
(-F, -N) beside the syscalls, and a cross-check of the counts with
`strace -f -c` on the same programs.

usage: test_syscalls.py --build BUILD
Ends with 'N passed, N failed'."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
from harness import check, skip, summary  # noqa: E402


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, **kw)


def build(tmp, name, instrument):
    out = os.path.join(tmp, name + ("" if instrument else "_plain"))
    cmd = ["gcc", "-O2", "-g", "-std=c11", "-pthread", "-Wall", "-Wextra", "-Werror", "-I", PROGS]
    if instrument:
        cmd.append("-finstrument-functions")
    r = run(cmd + [os.path.join(PROGS, name + ".c"), "-o", out])
    if r.returncode:
        raise SystemExit("cannot build %s: %s" % (name, r.stderr))
    return out


class Layerprof:
    def __init__(self, build_dir):
        self.exe = os.path.join(build_dir, "host", "layerprof")
        self.env = dict(os.environ, LAYERPROF_LIB=os.path.join(build_dir, "runtime", "liblayerprof.so"))

    def __call__(self, *args, timeout=120, env=None):
        return run([self.exe] + list(args), timeout=timeout, env=dict(self.env, **(env or {})))

    def json(self, *args):
        r = self(*args)
        if r.returncode:
            return None, r
        return json.loads(r.stdout), r


def syscall_row(rep, name):
    for s in rep["syscalls"]:
        if s["name"] == name:
            return s
    return None


def by_function(rep, function, syscall):
    return [f for f in rep["by_function"] if f["function"] == function and f["syscall"] == syscall]


# Whether the peer (strace, on this machine) can run the programs: not when
# they are another architecture's (tests/guest/test_guest.py runs these
# checks in an ARM guest).
PEERS = True


def strace_counts(prog, syscalls):
    """Calls per syscall as strace -f -c counts them ({} without PEERS)."""
    if not PEERS:
        return {}
    r = run(["strace", "-f", "-c", "-e", "trace=" + ",".join(syscalls), prog])
    counts = {}
    for line in r.stderr.splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$", line)
        if m and m.group(3) != "total":
            counts[m.group(3)] = (int(m.group(1)), int(m.group(2) or 0))
    return counts


def backend_usable(lp, tmp, backend):
    out = os.path.join(tmp, "probe-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", "/bin/true")
    return r.returncode == 0, r.stderr.strip()


def test_writer(lp, tmp, backend, prog):
    out = os.path.join(tmp, "writer-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: sys_writer records and exits 0" % backend, r.stderr):
        return
    rep, r = lp.json("report", "--syscalls", "--format", "json", out)
    if not check(rep is not None, "%s: report --syscalls --format json" % backend, r.stderr):
        return
    w = syscall_row(rep, "write")
    check(w and w["calls"] == 100 and w["errors"] == 0, "%s: 100 write calls, no errors" % backend, w)
    check(w and w["total_ns"] > 0 and w["max_ns"] > 0 and w["max_ns"] <= w["total_ns"],
          "%s: write times are set" % backend, w)
    f = by_function(rep, "writer", "write")
    check(len(f) == 1 and f[0]["calls"] == 100, "%s: the 100 writes are attributed to writer" % backend, f)
    f = by_function(rep, "opener", "openat")
    check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["errors"] == 1,
          "%s: opener made one failing openat" % backend, f)
    f = by_function(rep, "main", "openat")
    check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["errors"] == 0, "%s: main opened /dev/null" % backend, f)
    # the failed call in replay: inside opener, ENOENT
    rp, r = lp.json("replay", "--format", "json", out)
    events = rp["threads"][0]["events"] if rp else []
    fails = [e for e in events if e.get("type") == "syscall" and e["name"] == "openat" and e.get("ret") == -2]
    check(len(fails) == 1 and fails[0]["depth"] == 2, "%s: replay shows openat = -ENOENT at depth 2" % backend,
          fails)
    if backend in ("ptrace", "bpf"):
        check(fails and "/nonexistent/layerprof-test" in fails[0]["args"],
              "%s: the path of the failed openat is decoded" % backend, fails)
    # tree: the writes are a leaf under writer
    tr, r = lp.json("tree", "--format", "json", out)
    leaves = []

    def walk(nodes, path):
        for n in nodes:
            if n.get("syscall"):
                leaves.append((path + [n["name"]], n["calls"], n["errors"]))
            walk(n["children"], path + [n["name"]])
    if tr:
        walk(tr["threads"][0]["calls"], [])
    check((["main", "writer", "write"], 100, 0) in leaves, "%s: tree has main > writer > [sys] write x100" % backend,
          leaves[:6])
    check((["main", "opener", "openat"], 1, 1) in leaves, "%s: tree has main > opener > [sys] openat (failed)"
          % backend)
    # the same counts as strace
    if not PEERS:
        skip("%s: counts beside strace -f -c" % backend, "strace runs on this machine, not where the program runs")
        return
    st = strace_counts(prog, ["write", "openat", "close"])
    for name in ("write", "openat", "close"):
        row = syscall_row(rep, name)
        want = st.get(name)
        # the runtime itself opens and closes its session files: count
        # only the program's own calls for those, from main down
        if name == "write":
            check(row and want and row["calls"] == want[0],
                  "%s: write count equals strace -f -c (%s)" % (backend, want), row)
        else:
            mine = sum(f["calls"] for f in rep["by_function"] if f["syscall"] == name and
                       f["function"] in ("main", "opener", "writer"))
            check(want and mine == 1 + (name == "openat"),
                  "%s: %s calls of the program's functions are what the source makes" % (backend, name),
                  (mine, want))


def test_threads(lp, tmp, backend, prog):
    out = os.path.join(tmp, "threads-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "read", "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: sys_threads records and exits 0" % backend, r.stderr):
        return
    rep, r = lp.json("report", "--syscalls", "--per-thread", "--format", "json", out)
    if not check(rep is not None, "%s: report --syscalls --per-thread" % backend, r.stderr):
        return
    names = sorted(s["name"] for s in rep["syscalls"])
    check(names == ["read"], "%s: --syscall-filter read keeps only read" % backend, names)
    rows = sorted(by_function(rep, "reader", "read"), key=lambda f: f["tid"])
    check([f["calls"] for f in rows] == [30, 50], "%s: reader made 30 reads on one thread, 50 on another"
          % backend, rows)
    check(len(set(f["tid"] for f in rows)) == 2, "%s: two distinct threads" % backend)
    tp, _ = lp.json("report", "--format", "json", out)
    pid = [t["pid"] for t in tp["threads"]][0] if tp else None
    check(pid is not None and all(f["tid"] != pid for f in rows), "%s: neither is the main thread" % backend)


def test_fork(lp, tmp, backend, prog):
    out = os.path.join(tmp, "fork-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "write", "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: sys_fork records and exits 0" % backend, r.stderr):
        return
    rep, r = lp.json("report", "--syscalls", "--per-thread", "--format", "json", out)
    if not rep:
        check(False, "%s: report of sys_fork" % backend, r.stderr)
        return
    child = by_function(rep, "child_work", "write")
    parent = by_function(rep, "parent_work", "write")
    check(len(child) == 1 and child[0]["calls"] == 7, "%s: the child's child_work made 7 writes" % backend, child)
    check(len(parent) == 1 and parent[0]["calls"] == 3, "%s: the parent's parent_work made 3 writes" % backend,
          parent)
    check(child and parent and child[0]["tid"] != parent[0]["tid"], "%s: in two processes" % backend)
    w = syscall_row(rep, "write")
    check(w and w["calls"] == 10, "%s: 10 writes in all (strace -f -c: %s)" % (backend, strace_counts(
        prog, ["write"]).get("write")), w)


def test_slow_start(lp, tmp, backend, prog):
    """sys_slowstart sleeps 300 ms before any constructor, so the runtime's
    ring appears long after the exec: the exec, the loader's calls and the
    sleeps still land in the one thread's one process image, before main."""
    out = os.path.join(tmp, "slowstart-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: sys_slowstart records and exits 0" % backend, r.stderr):
        return
    tr, r = lp.json("tree", "--format", "json", out)
    threads = tr["threads"] if tr else []
    check(len(threads) == 1 and not threads[0].get("after_exec"),
          "%s: a slow start is one thread, one process image" % backend,
          [({k: v for k, v in t.items() if k != "calls"}, [c["name"] for c in t["calls"]][:4]) for t in threads])
    check(tree_leaves(tr) and (["main", "work", "getppid"], 5, 0) in tree_leaves(tr),
          "%s: main > work > [sys] getppid x5" % backend, tree_leaves(tr)[:8] if tr else None)
    rep, r = lp.json("report", "--syscalls", "--format", "json", out)
    sleeps = sum(s["calls"] for s in (rep or {}).get("syscalls", []) if "nanosleep" in s["name"])
    check(sleeps == 3, "%s: the 3 sleeps before the runtime started are there" % backend, sleeps)


def test_exec_wrapper(lp, tmp, backend, wrapper, slow):
    """An instrumented program that execs sys_slowstart: every call the new
    image makes (its loader's, its three sleeps before the runtime started)
    is in the new image's stream; the old one ends with the execve."""
    out = os.path.join(tmp, "execwrap-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", wrapper, slow)
    if not check(r.returncode == 0, "%s: sys_execwrap sys_slowstart records and exits 0" % backend, r.stderr):
        return
    rep, r = lp.json("replay", "--format", "json", out)
    threads = rep["threads"] if rep else []
    old = [t for t in threads if t["comm"] == "sys_execwrap"]
    new = [t for t in threads if t["comm"] != "sys_execwrap"]

    def sys_names(t):
        return [e["name"] for e in t["events"] if e["type"] == "syscall"]
    old_calls = sys_names(old[0]) if old else []
    new_calls = sys_names(new[0]) if new else []
    check(len(old) == 1 and len(new) == 1 and old_calls and old_calls[-1] == "execve" and
          old_calls.count("execve") == 2,
          "%s: the wrapper's stream ends with its execve of sys_slowstart" % backend, old_calls[-4:])
    check(new_calls[:1] == ["execve"] and new_calls.count("clock_nanosleep") == 3,
          "%s: the new image's stream has the exec's return and its 3 sleeps" % backend,
          (new_calls[:3], new_calls.count("clock_nanosleep")))


def test_plain(lp, tmp, backend, prog):
    """A program built without instrumentation: counts, and a caller from
    the user stack."""
    out = os.path.join(tmp, "plain-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "-o", out, "--", prog)
    if not check(r.returncode == 0, "%s: uninstrumented sys_writer records" % backend, r.stderr):
        return
    rep, r = lp.json("report", "--syscalls", "--format", "json", out)
    w = syscall_row(rep, "write") if rep else None
    check(w and w["calls"] == 100, "%s: uninstrumented: 100 writes" % backend, w)
    o = syscall_row(rep, "openat") if rep else None
    check(o and o["errors"] >= 1, "%s: uninstrumented: the failing openat is counted" % backend, o)
    callers = [f["function"] for f in rep["by_function"] if f["syscall"] == "write"] if rep else []
    check(len(callers) >= 1 and all(c and c != "[unknown]" for c in callers),
          "%s: uninstrumented: writes have a symbolised caller" % backend, callers)
    if backend == "bpf":
        # the stack words give the caller past libc's frameless wrapper
        check(callers == ["writer"], "%s: uninstrumented: the 100 writes come from writer" % backend, callers)


def tree_leaves(tr):
    """(path of function names, calls, errors) of every syscall leaf of the
    first thread's tree."""
    leaves = []

    def walk(nodes, path):
        for n in nodes:
            if n.get("syscall"):
                leaves.append((path + [n["name"]], n["calls"], n["errors"]))
            walk(n["children"], path + [n["name"]])
    if tr:
        walk(tr["threads"][0]["calls"], [])
    return leaves


def own_rows(rep):
    """by_function rows of sys_writer's own functions: {(function, syscall):
    (calls, errors)}."""
    return {(f["function"], f["syscall"]): (f["calls"], f["errors"]) for f in rep["by_function"]
            if f["function"] in ("main", "writer", "opener")}


def test_function_filters(lp, tmp, backend, prog):
    """Function filters (-F, -N) select functions, never syscalls: each call
    stays counted and goes to the innermost recorded function the thread
    was in (a call inside an excluded function to its recorded caller); a
    call outside every recorded function is attributed from its own user
    stack, at the root of the tree, as in an uninstrumented program (bpf's
    stack words name the program's functions there; a frame-pointer walk
    stops in libc's wrappers).  The filters mean the same at record time
    and at report time."""
    # calls outside every recorded function, as their stack names them
    from_stack = {("main", "openat"): (1, 0), ("opener", "openat"): (1, 1)} if backend == "bpf" else {}
    full = os.path.join(tmp, "ffull-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "write,openat", "-o", full, "--", prog)
    if not check(r.returncode == 0, "%s: sys_writer records without function filters" % backend, r.stderr):
        return
    for flt in (["-N", "writer"], ["-F", "writer"], ["-F", "opener"]):
        what = "%s: record %s" % (backend, " ".join(flt))
        out = os.path.join(tmp, "f%s%s-%s" % (flt[0][1], flt[1], backend))
        r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "write,openat", *flt, "-o", out, "--",
               prog)
        if not check(r.returncode == 0, "%s: records and exits 0" % what, r.stderr):
            continue
        rep, r = lp.json("report", "--syscalls", "--format", "json", out)
        tr, _ = lp.json("tree", "--format", "json", out)
        rp, _ = lp.json("replay", "--format", "json", out)
        if not check(rep is not None and tr is not None and rp is not None, "%s: report, tree, replay" % what,
                     r.stderr):
            continue
        w, o = syscall_row(rep, "write"), syscall_row(rep, "openat")
        check(w and w["calls"] == 100 and w["errors"] == 0, "%s: still 100 writes" % what, w)
        check(o and o["errors"] == 1, "%s: still the one failing openat" % what, o)
        rows = own_rows(rep)
        leaves = tree_leaves(tr)
        events = rp["threads"][0]["events"]
        writes = [e["depth"] for e in events if e.get("type") == "syscall" and e["name"] == "write"]
        fails = [e["depth"] for e in events if e.get("type") == "syscall" and e["name"] == "openat" and
                 e.get("ret") == -2]
        entered = sorted(set(e["name"] for e in events if e.get("type") == "entry"))
        if flt == ["-N", "writer"]:
            check(rows == {("main", "write"): (100, 0), ("main", "openat"): (1, 0), ("opener", "openat"): (1, 1)},
                  "%s: writer's writes go to main, its recorded caller" % what, rows)
            check((["main", "write"], 100, 0) in leaves and not any("writer" in p for p, _, _ in leaves),
                  "%s: tree has main > [sys] write x100, no writer" % what, leaves[:6])
            check(entered == ["main", "opener"] and writes == [1] * 100 and fails == [2],
                  "%s: replay: writes at depth 1 under main, the failed openat at depth 2" % what,
                  (entered, set(writes), fails))
        elif flt == ["-F", "writer"]:
            check(rows == {("writer", "write"): (100, 0), **from_stack},
                  "%s: the writes go to writer, nothing to main or opener" % what, rows)
            check((["writer", "write"], 100, 0) in leaves and
                  all(len(p) == 1 for p, _, _ in leaves if p[-1] == "openat"),
                  "%s: tree has writer > [sys] write x100, openat calls at the root" % what, leaves[:6])
            check(entered == ["writer"] and writes == [1] * 100 and fails == [0],
                  "%s: replay: writes at depth 1, the failed openat at depth 0" % what,
                  (entered, set(writes), fails))
        else:
            want = {("opener", "openat"): (1, 1)}
            if from_stack:
                want.update(from_stack)
                want[("writer", "write")] = (100, 0)
            check(rows == want, "%s: only opener's failed openat goes to a recorded function" % what, rows)
            callers = [f["function"] for f in rep["by_function"] if f["syscall"] == "write"]
            check(callers == ["writer"] if from_stack else
                  len(callers) >= 1 and all(c and c not in ("[unknown]", "main", "writer") for c in callers),
                  "%s: the writes outside opener are attributed from their stack" % what, callers)
            check((["write"], 100, 0) in leaves and (["opener", "openat"], 1, 1) in leaves,
                  "%s: tree has [sys] write x100 at the root, opener > [sys] openat (failed)" % what, leaves[:6])
            check(entered == ["opener"] and writes == [0] * 100 and fails == [1],
                  "%s: replay: writes at depth 0, the failed openat at depth 1" % what,
                  (entered, set(writes), fails))
        # the same filter applied when reading the unfiltered trace
        late, r = lp.json("report", "--syscalls", "--format", "json", *flt, full)
        check(late is not None and own_rows(late) == rows,
              "%s: report %s of an unfiltered trace attributes the same" % (what, " ".join(flt)),
              (own_rows(late) if late else r.stderr, rows))


def test_path_search(lp, tmp, backend, prog):
    """A program found through $PATH: the recorder's search for it is no
    part of the program, so its own execve is the only one counted, and it
    succeeded (execvp's search would add a failed execve per directory)."""
    dirs = [os.path.join(tmp, "path-%s-%d" % (backend, i)) for i in range(4)]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    # a file of the name that cannot run: the search goes past it, as execvp's
    with open(os.path.join(dirs[2], os.path.basename(prog)), "w") as f:
        f.write("not this one\n")
    path = ":".join(dirs + [os.path.dirname(prog), "/usr/bin", "/bin"])
    out = os.path.join(tmp, "path-" + backend)
    r = lp("record", "-q", "--syscalls=" + backend, "--syscall-filter", "execve,execveat,write", "-o", out, "--",
           os.path.basename(prog), env={"PATH": path})
    if not check(r.returncode == 0, "%s: a program found through PATH records and exits 0" % backend, r.stderr):
        return
    rep, r = lp.json("report", "--syscalls", "--format", "json", out)
    if not check(rep is not None, "%s: report of the PATH search" % backend, r.stderr):
        return
    ex = syscall_row(rep, "execve")
    check(ex and ex["calls"] == 1 and ex["errors"] == 0 and not syscall_row(rep, "execveat"),
          "%s: exactly the program's own execve, and it succeeded" % backend, (ex, syscall_row(rep, "execveat")))
    w = syscall_row(rep, "write")
    check(w and w["calls"] == 100, "%s: the program found through PATH ran (100 writes)" % backend, w)


def test_usage(lp, tmp):
    r = lp("record", "--syscalls=nope", "--", "/bin/true")
    check(r.returncode == 2 and "invalid --syscalls 'nope'" in r.stderr, "bad backend name: usage error", r.stderr)
    r = lp("record", "--syscalls", "--syscall-filter", "nosuchcall", "--", "/bin/true")
    check(r.returncode == 2 and "unknown syscall 'nosuchcall'" in r.stderr, "unknown syscall in filter", r.stderr)
    r = lp("record", "--syscall-filter", "read", "--", "/bin/true")
    check(r.returncode == 2 and "need --syscalls" in r.stderr, "--syscall-filter without --syscalls", r.stderr)
    r = lp("record", "--syscalls", "-o", os.path.join(tmp, "missing"), "--", "/nonexistent/prog")
    check(r.returncode == 127 and "cannot run '/nonexistent/prog'" in r.stderr, "missing program: 127", r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    lp = Layerprof(os.path.abspath(args.build))
    tmp = tempfile.mkdtemp(prefix="lp-syscalls-")
    try:
        writer = build(tmp, "sys_writer", True)
        threads = build(tmp, "sys_threads", True)
        fork = build(tmp, "sys_fork", True)
        plain = build(tmp, "sys_writer", False)
        slow = build(tmp, "sys_slowstart", True)
        wrapper = build(tmp, "sys_execwrap", True)
        test_usage(lp, tmp)
        usable = []
        for backend in ("bpf", "tracepoint", "ptrace"):
            ok, why = backend_usable(lp, tmp, backend)
            if not ok:
                skip("the %s backend" % backend, why)
                continue
            usable.append(backend)
            test_writer(lp, tmp, backend, writer)
            test_threads(lp, tmp, backend, threads)
            test_fork(lp, tmp, backend, fork)
            test_plain(lp, tmp, backend, plain)
            test_slow_start(lp, tmp, backend, slow)
            test_exec_wrapper(lp, tmp, backend, wrapper, slow)
            test_function_filters(lp, tmp, backend, writer)
            test_path_search(lp, tmp, backend, writer)
        # auto picks one and says which
        out = os.path.join(tmp, "auto")
        r = lp("record", "--syscalls", "-o", out, "--", "/bin/true")
        if usable:
            check(r.returncode == 0 and re.search(r"syscalls: (bpf|tracepoint|ptrace): ", r.stderr),
                  "--syscalls (auto) says which backend and why", r.stderr)
        else:
            check(r.returncode != 0 and "no syscall backend works" in r.stderr,
                  "no backend: one clear error", r.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
