#!/usr/bin/env python3
"""Integration tests: build the sample programs in tests/programs, record them
with layerprof and compare reports, trees and replays with exact
expectations (tests/programs/expect/*.json); cross-check call counts with
uftrace; feed bad traces; kill programs and the recorder mid-run.

usage: run.py --build BUILD_DIR GROUP [GROUP...]
groups: programs, uftrace, filters, names, deep, reuse, badinput, crash, linking, cli,
replay, environment
Prints one line per check and ends with 'N passed, N failed'."""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGS = os.path.join(ROOT, "tests", "programs")
EXPECT = os.path.join(PROGS, "expect")
TIMEOUT = 120





def run(cmd, **kw):
    if "input" not in kw:
        kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("timeout", TIMEOUT)
    return subprocess.run(cmd, universal_newlines=True, **kw)


class Layerprof:
    def __init__(self, build):
        self.exe = os.path.join(build, "host", "layerprof")
        self.libdir = os.path.join(build, "runtime")

    def __call__(self, *args, **kw):
        return run([self.exe] + list(args), **kw)

    def json(self, *args):
        r = self(*args)
        if r.returncode != 0:
            raise RuntimeError("layerprof %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
        return json.loads(r.stdout)


# ---------------------------------------------------------------- building

VARIANTS = [("gcc", "g++", "-O2"), ("gcc", "g++", "-O0"), ("clang", "clang++", "-O2")]


def have(tool):
    return shutil.which(tool) is not None


class Builder:
    """Builds sample programs for one compiler/optimisation variant."""

    def __init__(self, cc, cxx, opt, root):
        self.cc, self.cxx, self.opt = cc, cxx, opt
        self.dir = os.path.join(root, "%s%s" % (cc, opt))
        os.makedirs(self.dir, exist_ok=True)
        self.built = {}

    def flags(self):
        return [self.opt, "-g", "-finstrument-functions", "-pthread", "-I", PROGS]

    def lib(self, name):
        """lib<name>.so from <name>.c"""
        out = os.path.join(self.dir, "lib%s.so" % name)
        if out not in self.built:
            r = run([self.cc] + self.flags() + ["-fPIC", "-shared", os.path.join(PROGS, name + ".c"), "-o", out])
            if r.returncode:
                raise RuntimeError("cannot build %s: %s" % (out, r.stderr))
            self.built[out] = True
        return out

    def prog(self, name, extra=None):
        src = os.path.join(PROGS, name + ".c")
        comp = self.cc
        if not os.path.exists(src):
            src = os.path.join(PROGS, name + ".cc")
            comp = self.cxx
        out = os.path.join(self.dir, name)
        key = (out, tuple(extra or []))
        if key in self.built:
            return out
        cmd = [comp] + self.flags() + [src, "-o", out] + (extra or [])
        if name == "dlopen_main":
            self.lib("shared")
            cmd += ["-L", self.dir, "-lshared", "-Wl,-rpath,$ORIGIN", "-ldl"]
        r = run(cmd)
        if r.returncode:
            raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
        self.built[key] = True
        return out


# ---------------------------------------------------------------- helpers

def tree_streams(tree):
    """[(stream, {name: calls}, set of (parent, child))] from tree json"""
    out = []
    for t in tree["threads"]:
        calls, edges = {}, set()

        def walk(nodes, parent):
            for n in nodes:
                calls[n["name"]] = calls.get(n["name"], 0) + n["calls"]
                if parent is not None:
                    edges.add((parent, n["name"]))
                walk(n["children"], n["name"])

        walk(t["calls"], None)
        out.append((t, calls, edges))
    return out


def nonzero(d):
    return {k: v for k, v in d.items() if v}


def multiset(dicts):
    return sorted(json.dumps(nonzero(d), sort_keys=True) for d in dicts)


def check_expectations(tag, exp, report, tree):
    streams = tree_streams(tree)
    funcs = {f["name"]: f["calls"] for f in report["functions"]}
    for name, n in sorted(exp.get("calls", {}).items()):
        check(funcs.get(name, 0) == n, "%s: %s called %d times" % (tag, name, n), "got %s" % funcs.get(name, 0))
    for name, n in sorted(exp.get("min_calls", {}).items()):
        check(funcs.get(name, 0) >= n, "%s: %s called at least %d times" % (tag, name, n),
              "got %s" % funcs.get(name, 0))
    check(report["lost_events"] == 0, "%s: no events lost" % tag, "lost %d" % report["lost_events"])
    known = set(exp.get("calls", {})) | set(exp.get("min_calls", {}))
    if "per_thread" in exp:
        got = [{k: v for k, v in c.items() if k in known} for _, c, _ in streams]
        check(multiset(got) == multiset(exp["per_thread"]), "%s: calls per thread" % tag,
              "got %s" % multiset(got))
    if "per_process" in exp:
        procs = {}
        for t, c, _ in streams:
            acc = procs.setdefault((t["pid"], t["image"]), {})
            for k, v in c.items():
                if k in known:
                    acc[k] = acc.get(k, 0) + v
        want = [p["calls"] for p in exp["per_process"]]
        check(multiset(procs.values()) == multiset(want), "%s: calls per process image" % tag,
              "got %s" % multiset(procs.values()))
    edges = set()
    for _, _, e in streams:
        edges |= e
    for a, b in exp.get("edges", []):
        check((a, b) in edges, "%s: %s calls %s" % (tag, a, b))
    for a, b in exp.get("not_edges", []):
        check((a, b) not in edges, "%s: %s never calls %s" % (tag, a, b))


def load_expectations():
    out = []
    for path in sorted(glob.glob(os.path.join(EXPECT, "*.json"))):
        with open(path) as f:
            exp = json.load(f)
        exp["_name"] = os.path.splitext(os.path.basename(path))[0]
        out.append(exp)
    return out


def prog_args(exp, b):
    return [a.replace("@BINDIR@", b.dir) for a in exp.get("args", [])]


def prepare(exp, b):
    for need in exp.get("needs", []):
        if need.startswith("lib") and need.endswith(".so"):
            b.lib(need[3:-3])
        else:
            b.prog(need)
    return b.prog(exp["program"])


def expected_exit(exp):
    if "signal" in exp:
        return 128 + getattr(signal, exp["signal"])
    return exp.get("exit_code", 0)


def record(lp, out, argv, env=None, extra=()):
    return lp("record", "-q", "-o", out, *extra, "--", *argv, env=env)


# ---------------------------------------------------------------- groups

def group_programs(lp, tmp):
    for cc, cxx, opt in VARIANTS:
        if not have(cc):
            skip("programs with %s" % cc, "%s is not installed" % cc)
            continue
        b = Builder(cc, cxx, opt, tmp)
        for exp in load_expectations():
            if exp["_name"] in ("killme", "busy", "busy_threads"):
                continue
            tag = "%s %s %s" % (exp["_name"], cc, opt)
            binary = prepare(exp, b)
            out = os.path.join(tmp, "t-%s-%s%s" % (exp["_name"], cc, opt))
            r = record(lp, out, [binary] + prog_args(exp, b))
            if not check(r.returncode == expected_exit(exp), "%s: exit status passed through" % tag,
                         "got %d, stderr %s" % (r.returncode, r.stderr.strip())):
                continue
            check_expectations(tag, exp, lp.json("report", "--format", "json", out),
                               lp.json("tree", "--format", "json", out))


def uftrace_counts(binary, args, tmp):
    d = os.path.join(tmp, "uftrace.data")
    shutil.rmtree(d, ignore_errors=True)
    r = run(["uftrace", "record", "-d", d, binary] + args, cwd=tmp)
    if not os.path.exists(os.path.join(d, "info")):
        return None
    r = run(["uftrace", "report", "-d", d, "-f", "call", "--no-pager"], cwd=tmp)
    counts = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            counts[parts[1].strip()] = int(parts[0])
    return counts


# programs whose every counted function uftrace 0.13 counts like the truth;
# it loses the frames a longjmp skips (dive), the main a process image drops
# at exec, and counts shared-library functions twice (PLT hook + own hook),
# so longjmp, execer* and dlopen* are checked against the expectations only
UFTRACE_PROGRAMS = ["recursion", "mutual", "threads", "forker", "signals", "exceptions", "exit_deep",
                    "abort_deep"]


def bare_name(name):
    """uftrace prints C++ names without their parameter lists"""
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0:
            return name[:i]
    return name


def group_uftrace(lp, tmp):
    if not have("uftrace"):
        skip("uftrace cross-check", "uftrace is not installed (apt-get install uftrace)")
        return
    b = Builder("gcc", "g++", "-O2", tmp)
    for exp in load_expectations():
        if exp["_name"] not in UFTRACE_PROGRAMS:
            continue
        binary = prepare(exp, b)
        args = prog_args(exp, b)
        theirs = uftrace_counts(binary, args, tmp)
        if theirs is None:
            skip("uftrace %s" % exp["_name"], "uftrace record failed here")
            continue
        out = os.path.join(tmp, "u-" + exp["_name"])
        record(lp, out, [binary] + args)
        ours = {f["name"]: f["calls"] for f in lp.json("report", "--format", "json", out)["functions"]}
        for name in sorted(exp["calls"]):
            if not exp["calls"][name]:
                continue
            check(ours.get(name, 0) == theirs.get(bare_name(name), -1),
                  "uftrace agrees: %s %s" % (exp["_name"], name),
                  "layerprof %s, uftrace %s" % (ours.get(name), theirs.get(bare_name(name))))


def group_filters(lp, tmp):
    b = Builder("gcc", "g++", "-O2", tmp)
    rec = b.prog("recursion")
    thr = b.prog("threads")
    base = os.path.join(tmp, "f-base")
    record(lp, base, [rec])

    def calls(*args, trace=base):
        d = lp.json("report", "--format", "json", *args, trace)
        return {f["name"]: f["calls"] for f in d["functions"]}

    full = calls()
    check(full.get("fib") == 1973 and full.get("main") == 1, "recursion baseline", str(full))
    # depth: main is depth 1, fib(15) at 2, its callees at 3
    check(calls("--depth", "1") == {"main": 1}, "report --depth 1")
    check(calls("--depth", "3") == {"main": 1, "fib": 3}, "report --depth 3", str(calls("--depth", "3")))
    check(calls("-N", "fib") == {"main": 1}, "report -N fib hides fib's subtree")
    check(calls("-F", "fib") == {"fib": 1973}, "report -F fib keeps only calls inside fib")
    check(calls("-F", "f?b", "--depth", "2") == {"fib": 3}, "report -F with glob and --depth")
    check(calls("-F", "nosuchfunction") == {}, "report -F with no match is empty")
    # min-time: main takes longer than any single leaf call
    big = calls("--min-time", "1s")
    check(big == {}, "report --min-time 1s drops everything", str(big))
    mid = calls("--min-time", "1ns")
    check(mid.get("main") == 1 and mid.get("fib", 0) <= 1973, "report --min-time 1ns keeps main", str(mid))
    # record-time filters give the same numbers as report-time ones
    for args, want in ((["--depth", "3"], {"main": 1, "fib": 3}), (["-N", "fib"], {"main": 1}),
                       (["-F", "fib", "--depth", "2"], {"fib": 3})):
        out = os.path.join(tmp, "f-rec-" + "-".join(a.strip("-") for a in args))
        record(lp, out, [rec], extra=args)
        got = calls(trace=out)
        check(got == want, "record %s" % " ".join(args), str(got))
        tree = lp("tree", out)
        check("recorded with filters" in lp("report", out).stdout, "report says record-time filters were used")
    # --tid
    tt = os.path.join(tmp, "f-threads")
    record(lp, tt, [thr])
    rep = lp.json("report", "--format", "json", "--per-thread", tt)
    tids = sorted({f["tid"] for f in rep["functions"] if f["name"] == "worker"})
    check(len(tids) == 4, "per-thread report has 4 worker threads", str(tids))
    # a worker's chunks can come before the main thread's, which maps the
    # code: the filter still names (and keeps) every worker call
    got = calls("-F", "worker", trace=tt)
    check(got.get("worker") == 4, "report -F worker keeps the 4 workers' calls", str(got))
    one = lp.json("report", "--format", "json", "--tid", str(tids[0]), tt)
    names = {f["name"]: f["calls"] for f in one["functions"]}
    check(names.get("worker") == 1 and "main" not in names, "report --tid selects one thread", str(names))
    # sort orders
    d = lp.json("report", "--format", "json", "--sort", "calls", base)
    check([f["name"] for f in d["functions"]] == ["fib", "main"], "report --sort calls")
    d = lp.json("report", "--format", "json", "--sort", "name", base)
    check([f["name"] for f in d["functions"]] == ["fib", "main"], "report --sort name")
    # tree --focus and depth
    t = lp.json("tree", "--format", "json", "--focus", "fib", base)
    roots = [n["name"] for n in t["threads"][0]["calls"]]
    check(roots == ["fib"] and t["threads"][0]["calls"][0]["calls"] == 1, "tree --focus fib roots at fib",
          str(roots))
    t = lp.json("tree", "--format", "json", "--depth", "2", base)
    top = t["threads"][0]["calls"][0]
    check(top["name"] == "main" and [c["name"] for c in top["children"]] == ["fib"] and
          top["children"][0]["children"] == [], "tree --depth 2")
    # fib's inclusive time counts recursion once: never more than main's
    rep = lp.json("report", "--format", "json", base)
    f = {x["name"]: x for x in rep["functions"]}
    check(f["fib"]["total_ns"] <= f["main"]["total_ns"], "recursive total is not double counted")
    check(f["fib"]["self_ns"] + f["main"]["self_ns"] == f["main"]["total_ns"],
          "self times add up to the root's total")


# The functions of namespace ns in tests/programs/templates.cc and their calls.
TEMPLATES_NS = {"bool ns::eq<int>(int, int)": 4, "bool ns::eq<long>(long, long)": 1, "ns::Box<int>::get() const": 1,
                "ns::Box<int>::operator()(int) const": 1, "ns::Box<int>::operator<(ns::Box<int> const&) const": 1,
                "ns::(anonymous namespace)::hidden(int)": 1}


def json_strings(doc):
    """Every string in a parsed JSON document, keys and values."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from json_strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_strings(v)


def reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def names_invalid_utf8(lp, b, tmp, tag):
    """A function whose name is not valid UTF-8 (tests/programs/badname.c,
    symbol "odd\\xff\\xfename"): every JSON writer still writes strict JSON
    in UTF-8, with each stray byte as U+FFFD."""
    out = os.path.join(tmp, "badname-%s" % tag.replace(" ", ""))
    r = record(lp, out, [b.prog("badname")])
    if not check(r.returncode == 0, "%s: badname recorded" % tag, r.stderr.strip()):
        return
    want = "odd\ufffd\ufffdname"
    for args in (("report", "--format", "json"), ("tree", "--format", "json"), ("dump", "--chrome"),
                 ("replay", "--format", "json")):
        what = "%s: %s of a name with invalid UTF-8" % (tag, " ".join(args))
        r = subprocess.run([lp.exe] + list(args) + [out], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        try:
            doc = json.loads(r.stdout.decode("utf-8"), parse_constant=reject_constant)
        except ValueError as e:
            check(False, what + " is strict JSON in UTF-8", "exit %d, %s" % (r.returncode, e))
            continue
        check(r.returncode == 0 and any(want in s for s in json_strings(doc)),
              what + " names it with U+FFFD", "exit %d, %s" % (r.returncode, r.stderr.decode(errors="replace")))


def group_names(lp, tmp):
    """C++ names in filters and displays: patterns match the qualified name
    without the return type a function template's name starts with, with or
    without its parameters, at report and at record time; replay prints a
    C++ name's own parameter list once; a name with invalid UTF-8 stays
    valid JSON."""
    for cc, cxx, opt in VARIANTS:
        if have(cc):
            names_invalid_utf8(lp, Builder(cc, cxx, opt, tmp), tmp, "%s %s" % (cc, opt))
        if not have(cxx):
            skip("names with %s" % cxx, "%s is not installed" % cxx)
            continue
        b = Builder(cc, cxx, opt, tmp)
        tag = "%s %s" % (cxx, opt)
        out = os.path.join(tmp, "n-%s%s" % (cxx, opt))
        record(lp, out, [b.prog("templates")])

        def calls(*args, trace=out):
            d = lp.json("report", "--format", "json", *args, trace)
            return {f["name"]: f["calls"] for f in d["functions"]}

        full = calls()
        lambdas = [n for n in full if n.startswith("work()::") and n.endswith("::operator()(int) const")]
        std_typed = [n for n in full if " std::" in n.split("(")[0] and not n.startswith("std::")]
        # what the checks below stand on: std:: functions whose names start
        # with a return type, and one lambda
        if not check(len(lambdas) == 1 and std_typed, "%s: templates has std:: templates with return types" % tag,
                     "lambdas %s, std with return type %d" % (lambdas, len(std_typed))):
            continue
        ours = dict(TEMPLATES_NS, main=1, **{"work()": 1, lambdas[0]: 1})
        got = calls("-N", "std::*")
        check(got == ours, "%s: report -N 'std::*' leaves exactly main, work, ns:: and the lambda" % tag,
              str(sorted(set(got) ^ set(ours)))[:600])
        got = calls("-F", "ns::*")
        check(got == TEMPLATES_NS, "%s: report -F 'ns::*' takes every ns:: function" % tag, str(got)[:600])
        for pat in ("ns::eq<int>", "ns::eq<int>(int, int)", "bool ns::eq<int>(int, int)", "ns::eq<int>(*)"):
            got = calls("-F", pat)
            check(got == {"bool ns::eq<int>(int, int)": 4}, "%s: report -F '%s'" % (tag, pat), str(got))
        got = calls("-F", "ns::Box<int>::operator<")
        check(got == {"ns::Box<int>::operator<(ns::Box<int> const&) const": 1},
              "%s: report -F 'ns::Box<int>::operator<'" % tag, str(got))
        got = calls("-F", "ns::Box<int>::operator()")
        check(got == {"ns::Box<int>::operator()(int) const": 1}, "%s: report -F 'ns::Box<int>::operator()'" % tag,
              str(got))
        r = lp("report", "-F", "bool*", out)
        check("warning: -F 'bool*' matches no function" in r.stderr,
              "%s: a return type is no part of the name (-F 'bool*' matches nothing)" % tag, r.stderr)
        t = lp.json("tree", "--format", "json", "--focus", "ns::eq<*>", out)
        roots = sorted((n["name"], n["calls"]) for th in t["threads"] for n in th["calls"])
        check(roots == [("bool ns::eq<int>(int, int)", 4), ("bool ns::eq<long>(long, long)", 1)],
              "%s: tree --focus 'ns::eq<*>'" % tag, str(roots))
        r = lp("dump", "--folded", "--value", "calls", "-N", "std::*", out)
        lines = sorted(r.stdout.splitlines())
        want = sorted(["main 1", "main;work() 1"] + ["main;work();%s %d" % (n, c) for n, c in sorted(ours.items())
                                                    if n not in ("main", "work()")])
        check(lines == want, "%s: dump --folded -N 'std::*'" % tag, str(lines)[:600])
        rec = os.path.join(tmp, "n-rec-%s%s" % (cxx, opt))
        record(lp, rec, [b.prog("templates")], extra=["-N", "std::*"])
        got = calls(trace=rec)
        check(got == ours, "%s: record -N 'std::*' keeps exactly main, work, ns:: and the lambda" % tag,
              str(sorted(set(got) ^ set(ours)))[:600])
        # replay: "name() {" for C, the name's own parameters for C++
        text = lp("replay", out).stdout
        check("| main() {" in text and "|   work() {" in text and "|     bool ns::eq<int>(int, int);" in text and
              "|     ns::Box<int>::get() const;" in text, "%s: replay prints C++ names with their parameters" % tag)
        bad = [l for l in text.splitlines() if ")()" in l or "const()" in l]
        check(not bad, "%s: replay never doubles a parameter list" % tag, str(bad[:3]))


def group_reuse(lp, tmp):
    """Two objects at the same addresses in turn (tests/programs/dlreuse.c:
    libreuse_a.so is loaded, called and unloaded, then libreuse_b.so lands
    where it was): every call is named from the object mapped when it was
    made, in report, tree, replay, the exports and record-time filters."""
    want = {"main": 1, "load": 2, "reuse_a_run": 2, "reuse_a_helper": 6, "reuse_b_run": 3, "reuse_b_helper": 9}
    for cc, cxx, opt in VARIANTS:
        if not have(cc):
            skip("reuse with %s" % cc, "%s is not installed" % cc)
            continue
        b = Builder(cc, cxx, opt, tmp)
        tag = "reuse %s %s" % (cc, opt)
        b.lib("reuse_a")
        b.lib("reuse_b")
        prog = b.prog("dlreuse", extra=["-ldl"])
        out = os.path.join(tmp, "u-%s%s" % (cc, opt))
        r = record(lp, out, [prog, b.dir])
        if not check(r.returncode == 0, "%s: recorded" % tag, r.stderr):
            continue
        if "dlreuse: same address" not in r.stdout:
            skip(tag, "the loader put libreuse_b.so elsewhere: %s" % r.stdout.strip())
            continue
        got = {f["name"]: f["calls"] for f in lp.json("report", "--format", "json", out)["functions"]}
        check(got == want, "%s: report names each call from the object mapped then" % tag, str(got))
        tree = lp.json("tree", "--format", "json", out)
        _, calls, edges = tree_streams(tree)[0]
        check(calls == want and ("main", "reuse_a_run") in edges and ("reuse_a_run", "reuse_a_helper") in edges and
              ("main", "reuse_b_run") in edges and ("reuse_b_run", "reuse_b_helper") in edges and
              ("reuse_a_run", "reuse_b_helper") not in edges and ("reuse_b_run", "reuse_a_helper") not in edges,
              "%s: tree" % tag, "%s %s" % (calls, sorted(edges)))
        text = lp("replay", out).stdout
        runs = [l.split("|", 1)[1].strip() for l in text.splitlines() if "_run() {" in l]
        check(runs == ["reuse_a_run() {"] * 2 + ["reuse_b_run() {"] * 3, "%s: replay, in order" % tag, str(runs))
        ev = lp.json("replay", "--format", "json", out)["threads"][0]["events"]
        names = [e["name"] for e in ev if e["type"] == "entry" and e["name"].endswith("_run")]
        check(names == ["reuse_a_run"] * 2 + ["reuse_b_run"] * 3, "%s: replay --format json, in order" % tag,
              str(names))
        lines = sorted(lp("dump", "--folded", "--value", "calls", out).stdout.splitlines())
        check(lines == ["main 1", "main;load 2", "main;reuse_a_run 2", "main;reuse_a_run;reuse_a_helper 6",
                        "main;reuse_b_run 3", "main;reuse_b_run;reuse_b_helper 9"], "%s: dump --folded" % tag,
              str(lines))
        chrome = json.loads(lp("dump", "--chrome", out).stdout)
        begins = {}
        for e in chrome["traceEvents"]:
            if e.get("ph") == "B":
                begins[e["name"]] = begins.get(e["name"], 0) + 1
        check(begins == want, "%s: dump --chrome" % tag, str(begins))
        xml = lp("report", "--format", "xml", out).stdout
        check('name="reuse_b_helper" calls="9"' in xml and 'name="reuse_a_helper" calls="6"' in xml,
              "%s: report --format xml" % tag)
        got = {f["name"]: f["calls"] for f in lp.json("report", "--format", "json", "-F", "reuse_b_*", out)["functions"]}
        check(got == {"reuse_b_run": 3, "reuse_b_helper": 9}, "%s: report -F 'reuse_b_*'" % tag, str(got))
        rec = os.path.join(tmp, "u-F-%s%s" % (cc, opt))
        record(lp, rec, [prog, b.dir], extra=["-F", "reuse_a_*"])
        got = {f["name"]: f["calls"] for f in lp.json("report", "--format", "json", rec)["functions"]}
        check(got == {"reuse_a_run": 2, "reuse_a_helper": 6}, "%s: record -F 'reuse_a_*'" % tag, str(got))


DEEP_LEVELS = 1000000


def stream_lines(lp, *args):
    """The lines of layerprof's output, read as they come (outputs of
    hundreds of megabytes are never held whole), then its exit status and
    standard error."""
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([lp.exe] + list(args), stdout=subprocess.PIPE, stderr=err, universal_newlines=True)
        for line in p.stdout:
            yield line
        rc = p.wait(timeout=TIMEOUT)
        err.seek(0)
        yield (rc, err.read())


JSON_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)|([{}\[\]:,]))')


def json_check_deep(text):
    """None when text is one JSON value, else what is wrong; without
    recursion, so that documents nested a million levels deep can be
    checked (Python's json module recurses)."""
    stack, state, at = [], "value", 0
    while True:
        m = JSON_TOKEN.match(text, at)
        if not m:
            rest = text[at:].strip()
            if rest:
                return "unexpected %r at %d" % (rest[:20], at)
            return None if state == "end" else "ends early (%s)" % state
        at = m.end()
        string, scalar, punct = m.groups()
        if state in ("value", "value_or_close") and (string or scalar):
            state = "comma_or_close" if stack else "end"
        elif state in ("value", "value_or_close") and punct and punct in "{[":
            stack.append(punct)
            state = "key_or_close" if punct == "{" else "value_or_close"
        elif state in ("key", "key_or_close") and string:
            state = "colon"
        elif state == "colon" and punct == ":":
            state = "value"
        elif state == "comma_or_close" and punct == ",":
            state = "key" if stack[-1] == "{" else "value"
        elif (state in ("comma_or_close", "key_or_close", "value_or_close") and punct and punct in "}]" and
              stack and {"{": "}", "[": "]"}[stack[-1]] == punct and
              (state == "comma_or_close" or state.startswith("key") == (punct == "}"))):
            stack.pop()
            state = "comma_or_close" if stack else "end"
        else:
            return "unexpected %r at %d (%s, depth %d)" % (m.group(0).strip(), m.start(), state, len(stack))


def group_deep(lp, tmp):
    """Recursion 1,000,000 levels deep (tests/programs/deep.c): every call is
    in the report, the tree, the replay and the exports, and nothing is said
    lost.  The text outputs indent 64 levels at most and then name the
    level; folded stacks merge paths past 1024 frames into '[deeper]'."""
    b = Builder("gcc", "g++", "-O2", tmp)
    out = os.path.join(tmp, "deep")
    # a ring that holds all 2000000 events: nothing is lost however slow
    # the drain is on a loaded machine
    r = record(lp, out, [b.prog("deep"), str(DEEP_LEVELS)], extra=["-b", "64M"])
    if not check(r.returncode == 0, "deep: recorded %d levels" % DEEP_LEVELS, r.stderr):
        return
    n = DEEP_LEVELS
    rep = lp("report", "--format", "json", out)
    d = json.loads(rep.stdout)
    f = {x["name"]: x["calls"] for x in d["functions"]}
    check(f == {"main": 1, "run": 1, "down": n} and d["lost_events"] == 0 and rep.stderr == "",
          "deep: report has %d calls of down, nothing lost" % n, "%s lost %d %r" % (f, d["lost_events"], rep.stderr))

    # a filtered recording names the functions of a thread that starts at
    # once by the mappings in the main thread's ring (read first)
    for i in range(3):
        rec = os.path.join(tmp, "deep-F-%d" % i)
        record(lp, rec, [b.prog("deep"), "10000"], extra=["-F", "down"])
        d = lp.json("report", "--format", "json", rec)
        f = {x["name"]: x["calls"] for x in d["functions"]}
        check(f == {"down": 10000} and d["lost_events"] == 0,
              "deep: record -F down of 10000 levels on a new thread, run %d" % (i + 1), str(f))
    # the filter stage at record time tracks them all too (a ring that
    # holds all 2000000 events: the filtering drain may fall behind)
    rec = os.path.join(tmp, "deep-F")
    record(lp, rec, [b.prog("deep"), str(DEEP_LEVELS)], extra=["-F", "down", "-b", "64M"])
    d = lp.json("report", "--format", "json", rec)
    f = {x["name"]: x["calls"] for x in d["functions"]}
    check(f == {"down": n} and d["lost_events"] == 0, "deep: record -F down keeps %d calls" % n, str(f))

    # tree: one line per level under run, the level named past 64
    downs, last, bad = 0, None, []
    for line in stream_lines(lp, "tree", out):
        if isinstance(line, tuple):
            rc, err = line
            break
        if line.rstrip().endswith(" down"):
            downs += 1
            last = line
            cols = line.split()
            if cols[4] != "1" and len(bad) < 3:
                bad.append(line)
    want_last = "  " * 64 + "[depth %d] down\n" % (n + 1)
    check(rc == 0 and err == "" and downs == n and not bad and last and last.endswith("1  " + want_last),
          "deep: tree has %d levels of down, one call each, the last at '[depth %d]'" % (n, n + 1),
          "rc %d %r, %d lines, last %r, bad %s" % (rc, err, downs, (last or "")[-80:], bad))
    text = "".join(l for l in stream_lines(lp, "tree", "--format", "json", out) if not isinstance(l, tuple))
    nodes = text.count('{"name":"down","calls":1,')
    wrong = json_check_deep(text)
    check(nodes == n and not wrong and text.count('"children":[') == n + 2,
          "deep: tree --format json is valid JSON and nests %d nodes of down" % n,
          "%d nodes, %s" % (nodes, wrong))

    # replay: entries and exits of every level, in order
    opened = closed = leaf = 0
    for line in stream_lines(lp, "replay", out):
        if isinstance(line, tuple):
            rc, err = line
            break
        if line.endswith("down() {\n"):
            opened += 1
        elif line.endswith("} /* down */\n"):
            closed += 1
        elif line.endswith("[depth %d] down();\n" % (n + 1)):
            leaf += 1
    check(rc == 0 and err == "" and opened == n - 1 and closed == n - 1 and leaf == 1,
          "deep: replay enters and leaves down %d times" % n,
          "rc %d %r: %d opened, %d closed, %d innermost" % (rc, err, opened, closed, leaf))
    text = "".join(l for l in stream_lines(lp, "replay", "--format", "json", out) if not isinstance(l, tuple))
    entries = len(re.findall(r'"type":"entry","time_ns":\d+,"depth":\d+,"name":"down"', text))
    exits = len(re.findall(r'"type":"exit","time_ns":\d+,"depth":\d+,"name":"down"', text))
    check(entries == n and exits == n, "deep: replay --format json has %d entries and exits of down" % n,
          "%d entries, %d exits" % (entries, exits))
    text = None

    # exports
    begins = ends = 0
    for line in stream_lines(lp, "dump", "--chrome", out):
        if isinstance(line, tuple):
            rc, err = line
            break
        begins += '"ph":"B"' in line and '"name":"down"' in line
        ends += '"ph":"E"' in line
    # the exits: down's, run's and main's
    check(rc == 0 and err == "" and begins == n and ends == n + 2,
          "deep: dump --chrome has %d B events of down, and every E event" % n,
          "rc %d %r: %d B, %d E" % (rc, err, begins, ends))
    values, lines, frames = {}, 0, 0
    for line in stream_lines(lp, "dump", "--folded", "--value", "calls", out):
        if isinstance(line, tuple):
            rc, err = line
            break
        path, value = line.rsplit(" ", 1)
        leafname = path.rsplit(";", 1)[-1]
        values[leafname] = values.get(leafname, 0) + int(value)
        frames = max(frames, path.count(";") + 1)
        lines += 1
    want_err = ("layerprof dump: %d call paths deeper than 1024 frames count for their ancestor at that depth, "
                "as a frame '[deeper]'\n" % (n - 1023))
    check(rc == 0 and err == want_err and values == {"main": 1, "run": 1, "down": 1023, "[deeper]": n - 1023} and
          lines == 1026 and frames == 1025,
          "deep: dump --folded --value calls: 1024 frames, then '[deeper]' with the other calls",
          "rc %d %r: %s, %d lines, %d frames" % (rc, err, values, lines, frames))
    nodes = 0
    for line in stream_lines(lp, "report", "--format", "xml", out):
        if isinstance(line, tuple):
            rc, err = line
            break
        nodes += '" name="down" calls="1" ' in line
    check(rc == 0 and err == "" and nodes == n, "deep: report --format xml has %d nodes of down" % n,
          "rc %d %r: %d" % (rc, err, nodes))
    text = "".join(l for l in stream_lines(lp, "report", "--format", "html", out) if not isinstance(l, tuple))
    m = re.search(r'<script id="tree-data" type="application/json">(.*?)</script>', text, re.S)
    threads = json.loads(m.group(1))["threads"] if m else []
    counts = sorted(len(t) // 6 for t in threads)
    check(counts == [1, n + 1], "deep: report --format html holds every node of both threads' trees",
          str(counts))


def write_bytes(path, data):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "data"), "wb") as f:
        f.write(data)


def group_badinput(lp, tmp):
    b = Builder("gcc", "g++", "-O2", tmp)
    good = os.path.join(tmp, "b-good")
    record(lp, good, [b.prog("threads")])
    with open(os.path.join(good, "data"), "rb") as f:
        data = f.read()
    notdir = os.path.join(tmp, "b-file")
    with open(notdir, "w") as f:
        f.write("hello")
    cases = {
        "missing": os.path.join(tmp, "no-such-trace"),
        "not a directory": notdir,
        "empty": None,
        "short header": data[:7],
        "bad magic": b"NOTATRACE" + data[9:],
        "wrong version": data[:8] + bytes([9, 0]) + data[10:],
    }
    for name, content in cases.items():
        path = content if isinstance(content, str) else os.path.join(tmp, "b-" + name.replace(" ", "-"))
        if not isinstance(content, str):
            write_bytes(path, content or b"")
        for cmd in ("report", "tree", "replay"):
            r = lp(cmd, path)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            check(r.returncode == 3 and len(lines) == 1 and r.stdout == "",
                  "%s of a %s trace: one message, exit 3" % (cmd, name),
                  "rc %d, stderr %r" % (r.returncode, r.stderr))
    # damage after some chunks: readable part reported, exit 3
    for name, content in (("truncated", data[:len(data) * 2 // 3]),
                          ("corrupt", data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xff]) +
                           data[len(data) // 2 + 1:])):
        path = os.path.join(tmp, "b-" + name)
        write_bytes(path, content)
        for cmd in ("report", "tree", "replay"):
            r = lp(cmd, path)
            check(r.returncode == 3 and "damaged" in r.stderr and r.stdout,
                  "%s of a %s trace: partial output, exit 3" % (cmd, name), "rc %d %r" % (r.returncode, r.stderr))
    # what is not a trace is named as such: a directory without a data
    # file, a data file that is a directory, a trace that ends after its
    # file header (README: exit 3 for an empty trace)
    nodata = os.path.join(tmp, "b-nodata")
    os.makedirs(nodata, exist_ok=True)
    dirdata = os.path.join(tmp, "b-dirdata")
    os.makedirs(os.path.join(dirdata, "data"), exist_ok=True)
    header_only = os.path.join(tmp, "b-header-only")
    write_bytes(header_only, data[:16])
    for path, msg in ((nodata, "'%s' is a directory but not a trace: it holds no file 'data'" % nodata),
                      (dirdata, "'%s/data' is a directory, not a trace file" % dirdata),
                      (header_only, "trace '%s' is empty: it ends after the file header" % header_only),
                      (notdir, "'%s' is a file, not a trace directory (a trace is a directory holding 'data')" %
                       notdir)):
        for cmd in ("report", "tree", "replay", "dump"):
            r = lp(*([cmd, "--folded"] if cmd == "dump" else [cmd]), path)
            want = "layerprof %s: %s\n" % (cmd, msg)
            check(r.returncode == 3 and r.stderr == want and r.stdout == "",
                  "%s of %s: exit 3, %r" % (cmd, os.path.basename(path), want.strip()),
                  "rc %d, stderr %r" % (r.returncode, r.stderr))
    # a file header and then a chunk that fails its checksum: nothing is
    # readable, every reader says so once (in the sanitizer build, a
    # sanitizer report would be a second message and a failed exit)
    path = os.path.join(tmp, "b-no-chunk")
    bad_chunk = b"LPCK" + bytes([2, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0]) + b"garbage garbage!"
    write_bytes(path, data[:16] + bad_chunk)
    for args in (("report",), ("report", "--format", "json"), ("report", "--memory"), ("report", "--syscalls"),
                 ("report", "--format", "xml"), ("report", "--format", "html"), ("tree",), ("replay",),
                 ("replay", "--format", "json"), ("dump", "--chrome"), ("dump", "--folded"),
                 ("snapshot", "-o", os.path.join(tmp, "b-no-chunk.snap"))):
        r = lp(*args, path)
        check(r.returncode == 3 and r.stderr.count("\n") == 1 and "is damaged: checksum mismatch at byte 16" in r.stderr,
              "%s of a trace with no readable chunk: one message, exit 3" % " ".join(args),
              "rc %d, stderr %r" % (r.returncode, r.stderr[-400:]))
    # every prefix of a small trace: never a crash
    small = os.path.join(tmp, "b-small")
    record(lp, small, [b.prog("recursion")])
    with open(os.path.join(small, "data"), "rb") as f:
        sdata = f.read()
    bad = []
    step = max(1, len(sdata) // 200)
    for cut in range(0, len(sdata), step):
        path = os.path.join(tmp, "b-cut")
        write_bytes(path, sdata[:cut])
        r = lp("report", path)
        if r.returncode not in (0, 3):
            bad.append((cut, r.returncode))
    check(not bad, "report of every prefix of a trace exits 0 or 3", str(bad[:5]))


def group_crash(lp, tmp):
    b = Builder("gcc", "g++", "-O2", tmp)
    km = b.prog("killme")
    # the program is killed with SIGKILL while recording
    out = os.path.join(tmp, "c-killed")
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", out, km], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    pid = int(p.stdout.readline())
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=TIMEOUT)
    check(p.returncode == 137 and "signal 9" in err, "record reports the program's SIGKILL", "%d %r" % (p.returncode, err))
    rep = lp.json("report", "--format", "json", out)
    f = {x["name"]: x["calls"] for x in rep["functions"]}
    check(f.get("ready") == 1 and f.get("tick", 0) >= 50 and rep["complete"],
          "trace of a SIGKILLed program holds its events", str(f))
    # the recorder itself is killed: the trace is readable up to its last whole chunk
    out = os.path.join(tmp, "c-recorder-killed")
    busy = b.prog("busy")
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", out, busy, "200000000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    time.sleep(1.0)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=TIMEOUT)
    subprocess.run(["pkill", "-9", "-f", busy])
    r = lp("report", "--format", "json", out)
    ok = r.returncode in (0, 3) and r.stdout
    if ok:
        rep = json.loads(r.stdout)
        f = {x["name"]: x["calls"] for x in rep["functions"]}
        ok = f.get("tiny_a", 0) > 0 and not rep["complete"]
    check(ok, "trace of a SIGKILLed recorder is readable up to its last chunk", r.stderr.strip())
    check("no end record" in r.stderr or "damaged" in r.stderr, "report says the recording was interrupted")
    # abort from depth: the last events before the abort are present
    ab = b.prog("abort_deep")
    out = os.path.join(tmp, "c-abort")
    r = record(lp, out, [ab])
    rep = lp.json("report", "--format", "json", out)
    f = {x["name"]: x["calls"] for x in rep["functions"]}
    check(r.returncode == 134 and f.get("last_words") == 1, "events up to abort() are kept", str(f))


def group_linking(lp, tmp):
    b = Builder("gcc", "g++", "-O2", tmp)
    inc = ["-L", lp.libdir, "-Wl,-rpath," + lp.libdir]
    shared = b.prog("recursion", extra=inc + ["-llayerprof"])
    out = os.path.join(tmp, "l-shared")
    env = dict(os.environ, LAYERPROF_LIB=os.path.join(lp.libdir, "liblayerprof.so"))
    r = record(lp, out, [shared], env=env)
    f = {x["name"]: x["calls"] for x in lp.json("report", "--format", "json", out)["functions"]}
    check(r.returncode == 0 and f.get("fib") == 1973, "program linked with -llayerprof (shared)", str(f))
    static_bin = os.path.join(b.dir, "recursion-static")
    r = run(["gcc", "-O2", "-g", "-finstrument-functions", "-I", PROGS, os.path.join(PROGS, "recursion.c"), "-o",
             static_bin, os.path.join(lp.libdir, "liblayerprof.a"), "-pthread", "-ldl"])
    check(r.returncode == 0, "link with liblayerprof.a", r.stderr)
    out = os.path.join(tmp, "l-static")
    r = record(lp, out, [static_bin])
    f = {x["name"]: x["calls"] for x in lp.json("report", "--format", "json", out)["functions"]}
    check(r.returncode == 0 and f.get("fib") == 1973, "program linked with liblayerprof.a (static)", str(f))
    # without a session the runtime stays out of the way
    r = run([static_bin])
    check(r.returncode == 0 and "610" in r.stdout, "linked program runs normally without record",
          r.stdout + r.stderr)


def group_cli(lp, tmp):
    for cmd in ("record", "report", "tree", "replay"):
        r = lp(cmd, "--help")
        check(r.returncode == 0 and r.stdout.startswith("usage: layerprof " + cmd), "%s --help" % cmd)
        r = lp(cmd, "--no-such-option")
        check(r.returncode == 2, "%s rejects an unknown option with exit 2" % cmd)
    r = lp("frobnicate")
    check(r.returncode == 2 and "not a layerprof command" in r.stderr, "unknown command")
    # one version, the project's: what --version says and what a trace records
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        version = re.search(r"project\(layerprof VERSION ([0-9.]+)", f.read()).group(1)
    r = lp("--version")
    check(r.returncode == 0 and r.stdout == "layerprof %s\n" % version, "--version says %s" % version, r.stdout)
    vt = os.path.join(tmp, "version-trace")
    r = record(lp, vt, ["/bin/true"])
    with open(os.path.join(vt, "data"), "rb") as f:
        data = f.read()
    check(r.returncode == 0 and ("layerprof=%s\n" % version).encode() in data,
          "record writes layerprof=%s into the trace" % version, r.stderr)
    # the commands that read a trace: the same messages and exit codes for
    # their operand, the trace and their filter options
    missing = os.path.join(tmp, "no-such-trace")
    for cmd, extra in (("report", ()), ("tree", ()), ("replay", ()), ("dump", ("--chrome",)),
                       ("snapshot", ("-o", os.path.join(tmp, "snap-x")))):
        r = lp(cmd, *extra, "a", "b")
        want = "layerprof %s: one trace at a time ('b' is extra)\n" % cmd
        check(r.returncode == 2 and r.stderr == want, "%s a b: %r, exit 2" % (cmd, want.strip()),
              "rc %d, stderr %r" % (r.returncode, r.stderr[:300]))
        r = lp(cmd, *extra, missing)
        want = "layerprof %s: cannot open trace '%s': No such file or directory\n" % (cmd, missing)
        check(r.returncode == 3 and r.stderr == want and r.stdout == "", "%s of a missing trace: %r, exit 3" %
              (cmd, want.strip()), "rc %d, stderr %r" % (r.returncode, r.stderr[:300]))
        if cmd == "snapshot":
            continue
        r = lp(cmd, *extra, "--depth", "0", missing)
        want = "layerprof %s: invalid --depth '0': expected a number from 1" % cmd
        check(r.returncode == 2 and r.stderr.startswith(want) and r.stderr.count("\n") == 1,
              "%s --depth 0: one message, exit 2" % cmd, "rc %d, stderr %r" % (r.returncode, r.stderr[:300]))
        r = lp(cmd, *extra, "--no-such-option", missing)
        check(r.returncode == 2 and "usage: layerprof %s" % cmd in r.stderr,
              "%s --no-such-option: usage on stderr, exit 2" % cmd, "rc %d, stderr %r" % (r.returncode, r.stderr[:300]))
    # a typo'd command: the nearest one is named, nothing else is said
    for typo, meant in (("reprot", "report"), ("tre", "tree"), ("replya", "replay"), ("sreve", "serve"),
                        ("recordd", "record")):
        r = lp(typo, "x")
        want = "layerprof: '%s' is not a layerprof command; did you mean '%s'?\n" % (typo, meant)
        check(r.returncode == 2 and r.stderr == want, "typo %s: did you mean %s" % (typo, meant),
              "rc %d, stderr %r" % (r.returncode, r.stderr[:300]))
    # live --help names every option live takes
    r = lp("live", "--help")
    for opt in ("--connect", "--token-file", "--attach", "--interval", "--save", "--duration", "--format",
                "--stopped", "--udp", "--flush", "--only", "--exclude", "--depth", "--min-time", "--syscalls",
                "--syscall-filter", "--memory", "--mem-depth", "--keep-alive", "--mem-fold", "--view",
                "--path-nodes", "--help"):
        check(r.returncode == 0 and opt in r.stdout, "live --help lists %s" % opt)
    # serve --connect says "layerprof serve:" in its messages, not "live"
    import socket
    sk = socket.socket()
    sk.bind(("127.0.0.1", 0))
    port = sk.getsockname()[1]
    sk.close()  # nobody listens there now
    r = lp("serve", "--port", "0", "--connect", "127.0.0.1:%d" % port, "--", "true")
    want = "layerprof serve: cannot connect to 127.0.0.1:%d: Connection refused\n" % port
    check(r.returncode == 1 and r.stderr == want, "serve --connect to no agent: %r, exit 1" % want.strip(),
          "rc %d, stderr %r" % (r.returncode, r.stderr))
    r = lp("record", "-o", os.path.join(tmp, "x"), "--", "/no/such/program")
    check(r.returncode == 127 and "cannot run" in r.stderr, "record of a missing program exits 127")
    r = lp("record", "-o", os.path.join(tmp, "x"))
    check(r.returncode == 2, "record without a program exits 2")
    for bad in (("--depth", "0"), ("--depth", "x"), ("--min-time", "fast"), ("--tid", "abc"), ("--sort", "size"),
                ("--format", "yaml")):
        r = lp("report", *bad, os.path.join(tmp, "x"))
        check(r.returncode == 2 and len(r.stderr.strip().splitlines()) >= 1, "report %s exits 2" % " ".join(bad))
    # an old trace is kept as DIR.old
    b = Builder("gcc", "g++", "-O2", tmp)
    rec = b.prog("recursion")
    out = os.path.join(tmp, "cli-again")
    record(lp, out, [rec])
    # filters that match nothing say so (and the output is empty)
    tids = {t["tid"] for t in lp.json("report", "--format", "json", "--per-thread", out)["threads"]}
    nosuch_tid = 999 if 999 not in tids else max(tids) + 1
    for args, msg in ((("report", "-F", "nosuch"), "-F 'nosuch' matches no function called in trace '%s'"),
                      (("report", "-N", "nosuch*"), "-N 'nosuch*' matches no function called in trace '%s'"),
                      (("tree", "--focus", "nosuch"), "--focus 'nosuch' matches no function called in trace '%s'"),
                      (("replay", "-F", "nosuch"), "-F 'nosuch' matches no function called in trace '%s'"),
                      (("dump", "--folded", "-F", "nosuch"), "-F 'nosuch' matches no function called in trace '%s'"),
                      (("report", "--tid", str(nosuch_tid)),
                       "--tid %d: trace '%%s' has no thread %d" % (nosuch_tid, nosuch_tid)),
                      (("tree", "--tid", str(nosuch_tid)),
                       "--tid %d: trace '%%s' has no thread %d" % (nosuch_tid, nosuch_tid))):
        r = lp(*args, out)
        want = "layerprof %s: warning: %s\n" % (args[0], msg % out)
        check(r.returncode == 0 and r.stderr == want, "%s: %r" % (" ".join(args), want.strip()),
              "rc %d, stderr %r" % (r.returncode, r.stderr))
    r = lp("report", "-F", "fib", "-N", "main", out)
    check(r.returncode == 0 and r.stderr == "", "report -F fib -N main: both match, nothing said", r.stderr)
    # and at record time
    rout = os.path.join(tmp, "cli-recfilter")
    r = lp("record", "-q", "-F", "nosuch", "-N", "nosuch*", "-o", rout, "--", rec)
    want = ("layerprof record: warning: -F 'nosuch' matches no function the program called\n"
            "layerprof record: warning: -N 'nosuch*' matches no function the program called\n")
    check(r.returncode == 0 and r.stderr == want, "record -F nosuch -N 'nosuch*': %r" % want,
          "rc %d, stderr %r" % (r.returncode, r.stderr))
    r = lp("record", "-q", "-F", "fib", "-N", "main", "-o", rout, "--", rec)
    check(r.returncode == 0 and r.stderr == "", "record -F fib -N main: both match, nothing said", r.stderr)
    # a duration without its unit is refused, naming the units
    r = lp("report", "--min-time", "5", out)
    want = "layerprof report: invalid --min-time '5': a duration needs a unit: 5ns, 5us, 5ms or 5s\n"
    check(r.returncode == 2 and r.stderr == want, "report --min-time 5 is refused: %r" % want.strip(),
          "rc %d, stderr %r" % (r.returncode, r.stderr))
    r = lp("report", "--min-time", "0", out)
    check(r.returncode == 0 and r.stderr == "", "report --min-time 0 needs no unit", r.stderr)
    record(lp, out, [rec])
    check(os.path.exists(os.path.join(out + ".old", "data")), "re-recording keeps the previous trace as .old")
    notrace = os.path.join(tmp, "cli-notrace")
    os.makedirs(notrace, exist_ok=True)
    with open(os.path.join(notrace, "notes.txt"), "w") as f:
        f.write("mine\n")
    r = record(lp, notrace, [rec])
    check(r.returncode == 1 and "not a layerprof trace" in r.stderr, "record refuses to overwrite a non-trace dir")


def group_replay(lp, tmp):
    b = Builder("gcc", "g++", "-O2", tmp)
    out = os.path.join(tmp, "r-longjmp")
    record(lp, out, [b.prog("longjmp")])
    text = lp("replay", out).stdout.splitlines()
    funcs = [l.split("|", 1)[1] for l in text if "|" in l and not l.startswith("#")]
    # the first round: main, runner, ten dives, the jump back, after_jump
    want = (["main() {", "  runner() {"] + ["    " + "  " * i + "dive() {" for i in range(9)] +
            ["    " + "  " * 9 + "dive(); (no exit)"] +
            ["    " + "  " * i + "} /* dive */ (no exit)" for i in range(8, -1, -1)] + ["    after_jump();"])
    got = [f[1:] for f in funcs[:len(want)]]
    check(got == want, "replay of longjmp: exact order and nesting", "\n".join(got))
    j = lp.json("replay", "--format", "json", out)
    ev = j["threads"][0]["events"]
    check(sum(1 for e in ev if e["type"] == "entry") == sum(1 for e in ev if e["type"] == "exit"),
          "replay json pairs every entry with an exit")
    times = [e["time_ns"] for e in ev]
    check(times == sorted(times), "replay json is in time order")


# ---------------------------------------------------------------- environment
# The runtime in surroundings that fight it: a small /dev/shm, the session
# directory removed while the program runs, code before libc's start with
# /proc hidden.  Each run happens in a private mount namespace (unshare -m,
# as root), so the host's /dev/shm and /proc stay as they are.

def in_namespace(setup, argv, **kw):
    """Runs argv after the shell commands `setup` in a mount namespace of
    its own; returns the CompletedProcess."""
    return run(["unshare", "-m", "sh", "-c", setup + ' && exec "$@"', "sh"] + list(argv), **kw)


def namespace_usable():
    """None when mounts can be made in a private namespace, else why not."""
    if not have("unshare"):
        return "unshare is not installed"
    r = run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"])
    if r.returncode:
        return "cannot mount in a private namespace (needs root): %s" % r.stderr.strip()
    return None


def thread_calls(t):
    """{function: calls} of one thread of tree json"""
    calls = {}

    def walk(nodes):
        for n in nodes:
            calls[n["name"]] = calls.get(n["name"], 0) + n["calls"]
            walk(n["children"])

    walk(t["calls"])
    return calls


def env_small_shm(lp, b, tmp, memory, whole=False):
    """A /dev/shm of 256 KiB: room for a few of the rings of 32 threads that
    live at once.  Before, the sparse rings ran out of pages and SIGBUS
    killed the program; now a ring's pages are reserved before they are
    written (its first chunk when it is made, each later chunk when the
    thread gets to it), so a thread is recorded whole, or has no ring and
    counts all its events, or has a ring that ran out of room and counts
    the rest; the report shows every lost event."""
    nthreads, calls, nblocks = 32, 300, 20 if memory else 0
    tag = "small /dev/shm%s%s" % (" --memory" if memory else "", ", rings reserved whole" if whole else "")
    prog = b.prog("shm_threads")
    argv = [prog, str(nthreads), str(calls), str(nblocks)]
    plain = run(argv)
    out = os.path.join(tmp, "e-shm%s%s" % ("-mem" if memory else "", "-whole" if whole else ""))
    # whole: as on a kernel without MADV_POPULATE_WRITE, every ring is
    # reserved whole with fallocate when it is made
    env = dict(os.environ, LAYERPROF_TEST_RING_WHOLE="1") if whole else None
    r = in_namespace("mount -t tmpfs -o size=256k,mode=1777 tmpfs /dev/shm",
                     [lp.exe, "record", "-q", "-o", out] + (["--memory"] if memory else []) + ["--"] + argv,
                     env=env)
    if not check(r.returncode == 0 and r.stdout == plain.stdout, "%s: the program's exit status and output" % tag,
                 "rc %d, stdout %r, stderr %s" % (r.returncode, r.stdout, r.stderr.strip())):
        return
    tree = lp.json("tree", "--format", "json", out)
    rep = lp.json("report", "--format", "json", out)
    replay = lp.json("replay", "--format", "json", out)
    # a worker's events: worker and blocks entry and exit, work's N
    # entries and exits, and with --memory M mallocs and frees
    total = 2 * calls + 4 + 2 * nblocks
    # the events recorded (replay closes a call left open with an exit of
    # its own, marked unfinished: no recorded event)
    events = {t["tid"]: len([e for e in t["events"] if e["type"] in ("entry", "exit", "mem") and
                             not e.get("unfinished")])
              for t in replay["threads"]}
    main = [t for t in tree["threads"] if t["tid"] == t["pid"]]
    workers = [t for t in tree["threads"] if t["tid"] != t["pid"]]
    recorded = [t for t in workers if t["lost_events"] == 0 and
                thread_calls(t) == {"worker": 1, "work": calls, "blocks": 1}]
    lost = [t for t in workers if t["lost_events"] == total and thread_calls(t) == {}]
    partial = [t for t in workers if 0 < t["lost_events"] < total and
               events.get(t["tid"], 0) + t["lost_events"] == total]
    check(len(main) == 1 and thread_calls(main[0]) == {"main": 1} and main[0]["lost_events"] == 0,
          "%s: the main thread is recorded whole" % tag, str([(thread_calls(t), t["lost_events"]) for t in main]))
    check(len(workers) == nthreads and len(recorded) + len(lost) + len(partial) == nthreads,
          "%s: each of the %d threads is recorded whole, or without a ring has all its %d events counted lost, "
          "or has what it did not record counted lost" % (tag, nthreads, total),
          str(sorted((json.dumps(thread_calls(t), sort_keys=True), t["lost_events"], events.get(t["tid"]))
                     for t in workers)))
    check(len(lost) > 0 and rep["lost_events"] == sum(t["lost_events"] for t in lost + partial),
          "%s: the report counts the lost events (%d threads without a ring, %d short of room)" %
          (tag, len(lost), len(partial)), "lost_events %d" % rep["lost_events"])
    check("could not be recorded (No space left on device)" in r.stderr,
          "%s: record says why threads were not recorded" % tag, r.stderr.strip())
    check(not partial or "no space left for the rings' pages" in r.stderr,
          "%s: record says why a thread's ring ran short" % tag, r.stderr.strip())
    if memory:
        heap = lp.json("report", "--memory", "--format", "json", out)
        site = [x for x in heap["sites"] if x["function"] == "blocks"]
        n = sum(x["allocs"] for x in site), sum(x["frees"] for x in site)
        # a thread short of room may have lost events before blocks() and
        # still recorded its heap operations: those count as replay shows them
        ops = {t["tid"]: [e["op"] for e in t["events"] if e["type"] == "mem" and
                          e.get("caller", "").startswith("blocks+")] for t in replay["threads"]}
        partial_ops = [ops.get(t["tid"], []) for t in partial]
        want = (nblocks * len(recorded) + sum(o.count("malloc") for o in partial_ops),
                nblocks * len(recorded) + sum(o.count("free") for o in partial_ops))
        check(n == want and all(ops.get(t["tid"], []).count("malloc") == nblocks for t in recorded),
              "%s: the heap operations of the recorded threads, exactly" % tag, "got %s, want %s" % (n, want))


def remove_session(path):
    """Removes a session directory as a tmp cleaner would, while the drain
    may rename a ring in it (r. to d.) between the listing and the unlink:
    a name that went is skipped and the directory listed again."""
    for _ in range(100):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return


def env_removed_session(lp, b, tmp):
    """The session directory is removed (as a tmp cleaner would) while the
    program waits; then it starts threads and forks.  Before, their events
    were not recorded and the report said 0 events lost.  The directory goes
    as soon as the program is ready, so the recorder may not have found the
    main thread's ring yet: then that thread counts its events lost when it
    ends, and its stream says so."""
    prog = b.prog("latecomers")
    out = os.path.join(tmp, "e-removed")
    p = subprocess.Popen([lp.exe, "record", "-q", "-o", out, "--", prog], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    harness.started.append(p)
    first = p.stdout.readline()
    pid = int(first.split()[1])
    with open("/proc/%d/environ" % pid, "rb") as f:
        env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    session = env[b"LAYERPROF_SESSION"].decode()
    remove_session(session)
    check(not os.path.exists(session), "removed session: the session directory is gone", session)
    rest, err = p.communicate("go\n", timeout=TIMEOUT)
    if not check(p.returncode == 7 and first + rest == "ready %d\ndone\n" % pid,
                 "removed session: the program's exit status and output", "rc %d, %r, %s" %
                 (p.returncode, first + rest, err.strip())):
        return
    tree = lp.json("tree", "--format", "json", out)
    rep = lp.json("report", "--format", "json", out)
    got = sorted((t["pid"] == pid, t["tid"] == t["pid"], json.dumps(thread_calls(t), sort_keys=True),
                  t["lost_events"]) for t in tree["threads"])
    # late_thread's entry and exit and 50 late_work calls per thread; the
    # child's 10 child_work calls inside the main frame it inherited; main,
    # before and after: recorded, or (ring never found) 6 events lost
    later = [(True, False, "{}", 102)] * 3 + [(False, True, "{}", 20)]
    main_found = (True, True, json.dumps({"main": 1, "before": 1, "after": 1}, sort_keys=True), 0)
    main_lost = (True, True, "{}", 6)
    check(got in (sorted([main_found] + later), sorted([main_lost] + later)),
          "removed session: the main thread recorded or counted, each later thread and the child counts its "
          "events lost", str(got))
    want = 3 * 102 + 20 + (6 if main_lost in got else 0)
    check(rep["lost_events"] == want, "removed session: the report counts %d lost events" % want,
          "lost_events %d" % rep["lost_events"])


def env_early_without_proc(lp, b, tmp):
    """A .preinit_array function runs before libc sets up environ; with
    /proc hidden the runtime finds its session on the initial stack."""
    prog = b.prog("early")
    out = os.path.join(tmp, "e-early-noproc")
    # only the program loses /proc (the recorder, sanitized, needs it): it
    # starts through unshare and sh, which are not instrumented
    r = run([lp.exe, "record", "-q", "-o", out, "--", "unshare", "-m", "sh", "-c",
             'mount -t tmpfs tmpfs /proc && exec "$0"', prog])
    if not check(r.returncode == 0 and r.stdout == "early: 10\n", "early code without /proc: exit status and output",
                 "rc %d, %r, %s" % (r.returncode, r.stdout, r.stderr.strip())):
        return
    # without /proc the executable's path is not known, so its functions
    # have no names: the counts are checked, by function
    rep = lp.json("report", "--format", "json", out)
    counts = sorted(f["calls"] for f in rep["functions"])
    check(counts == [1, 1, 1, 2, 3, 4] and rep["lost_events"] == 0,
          "early code without /proc: every call before and in main, none lost",
          "%s, lost %d" % (counts, rep["lost_events"]))


def env_ring_pages(lp, b, tmp):
    """A ring takes shared memory as its thread writes it, not all at once:
    a quiet thread of a record --memory (4M ring) holds its header and a
    few chunks, whatever the ring's size (before, every ring's whole size
    was reserved when it was made, in every thread)."""
    prog = b.prog("stepper")
    out = os.path.join(tmp, "e-pages")
    p = subprocess.Popen([lp.exe, "record", "-q", "--memory", "-o", out, "--", prog], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    try:
        pid = int(p.stdout.readline())
        p.stdin.write("\n")
        p.stdin.flush()
        p.stdout.readline()  # step 1: the ring is in use
        # the drain renames a ring it has taken (r. to d.) at any moment:
        # read the maps again until every ring named there can be looked at
        sizes = None
        for _ in range(100):
            rings = set()
            with open("/proc/%d/maps" % pid) as f:
                for line in f:
                    path = line.split()[-1] if len(line.split()) > 5 else ""
                    if "/layerprof-" in path and os.path.basename(path)[:2] in ("r.", "d."):
                        rings.add(path)
            try:
                sizes = [(os.stat(r).st_size, os.stat(r).st_blocks * 512) for r in rings]
                break
            except FileNotFoundError:
                time.sleep(0.01)
        check(sizes is not None and len(sizes) == 1 and sizes[0][0] >= 4 << 20 and sizes[0][1] <= 512 << 10,
              "a quiet thread's 4M ring holds at most 512 KiB of shared memory", sizes)
    finally:
        p.stdin.close()
        p.wait(TIMEOUT)


def group_environment(lp, tmp):
    why = namespace_usable()
    if why:
        skip("environment group", why)
        return
    b = Builder("gcc", "g++", "-O2", tmp)
    env_small_shm(lp, b, tmp, memory=False)
    env_small_shm(lp, b, tmp, memory=True)
    env_small_shm(lp, b, tmp, memory=True, whole=True)
    env_removed_session(lp, b, tmp)
    env_early_without_proc(lp, b, tmp)
    env_ring_pages(lp, b, tmp)


GROUPS = {
    "programs": group_programs,
    "uftrace": group_uftrace,
    "filters": group_filters,
    "names": group_names,
    "deep": group_deep,
    "reuse": group_reuse,
    "badinput": group_badinput,
    "crash": group_crash,
    "linking": group_linking,
    "cli": group_cli,
    "replay": group_replay,
    "environment": group_environment,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("groups", nargs="+", choices=sorted(GROUPS))
    args = ap.parse_args()
    lp = Layerprof(os.path.abspath(args.build))
    tmp = tempfile.mkdtemp(prefix="layerprof-it-")
    try:
        for g in args.groups:
            try:
                GROUPS[g](lp, tmp)
            except Exception as e:  # a broken step fails the group, loudly
                check(False, "group %s ran to the end" % g, "%s: %s" % (type(e).__name__, e))
    finally:
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
