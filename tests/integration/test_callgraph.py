#!/usr/bin/env python3
"""`layerprof callgraph` and `layerprof coverage` on a program whose call
graph is known (tests/callgraph/cg_sample.c), built with gcc -O0 and -O2
(PIE and not), clang -O2, stripped, and cross-built for aarch64 and
arm/Thumb where the cross compilers are installed.

The static edges are held against two independent oracles: the call graph
gcc itself writes for the same source (-fcallgraph-info, one .ci file per
translation unit), and the call and jump targets `objdump -d` prints.  Then
exact hand-written expectations: how each function is reached, the
indirect call sites, the path tree (recursion, --depth cuts), stripped
names, PIE against non-PIE; bad input.  coverage is checked against traces
whose executed functions the program's arguments choose.

usage: test_callgraph.py --build BUILD [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as samples  # noqa: E402
from harness import check, run_groups, skip  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE = os.path.join(ROOT, "tests", "callgraph", "cg_sample.c")

# The sample's own functions, and what reaches each from main.  -fno-jump-tables
# in every build: a jump table's indirect jump is no call, and left out of the
# sample it cannot blur the count of indirect call sites.
DIRECT = {"run_step", "fact", "ping", "pong", "tail_a", "tail_b", "dispatch", "do_sort", "measure"}
ADDRESS = {"op_add", "op_sub", "op_mul", "cmp_ints", "only_in_data"}
NEVER = {"unused_static", "unused_global"}
MINE = DIRECT | ADDRESS | NEVER | {"main"}
REACH = dict([(n, "direct") for n in DIRECT] + [(n, "address") for n in ADDRESS] + [(n, "none") for n in NEVER] +
             [("main", "root")])
COMMON_FLAGS = ["-g", "-fno-jump-tables"]

# The mnemonics of direct calls, and of jumps (tail calls when they land on
# another function's start), as objdump prints them for each machine.
ARM_COND = "(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
CALL_RE = {
    "x86-64": re.compile(r"^callq?$"),
    "aarch64": re.compile(r"^bl$"),
    "arm": re.compile(r"^blx?" + ARM_COND + r"(?:\.w|\.n)?$"),
}
JUMP_RE = {
    "x86-64": re.compile(r"^j(?!mp\b)[a-z]+$|^jmpq?$"),
    "aarch64": re.compile(r"^(?:b|b\.[a-z]+|cbn?z|tbn?z)$"),
    "arm": re.compile(r"^(?:b" + ARM_COND + r"(?:\.w|\.n)?|cbn?z)$"),
}


class Build:
    """One build of the sample: its binary, gcc's .ci (or None), the machine
    name layerprof should print and the objdump that reads it."""

    def __init__(self, tag, path, ci, machine, objdump, opt):
        self.tag, self.path, self.ci, self.machine, self.objdump, self.opt = tag, path, ci, machine, objdump, opt


def compile_sample(tmp, tag, cc, flags, link_flags=(), callgraph_info=False):
    """Compiles and links the sample in its own directory; returns (binary,
    .ci path or None), or raises with the compiler's message."""
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    obj = os.path.join(d, "cg_sample.o")
    cmd = [cc] + COMMON_FLAGS + list(flags) + ["-c", SAMPLE, "-o", obj]
    if callgraph_info:
        cmd.append("-fcallgraph-info")
    r = samples.run(cmd, cwd=d)
    if r.returncode:
        raise RuntimeError("cannot compile %s: %s" % (tag, r.stderr))
    out = os.path.join(d, "cg_sample")
    r = samples.run([cc] + list(flags) + list(link_flags) + [obj, "-o", out], cwd=d)
    if r.returncode:
        raise RuntimeError("cannot link %s: %s" % (tag, r.stderr))
    ci = None
    if callgraph_info:
        ci = os.path.join(d, "cg_sample.ci")
        if not os.path.exists(ci):
            raise RuntimeError("%s: gcc wrote no %s" % (tag, ci))
    return out, ci


def host_builds(tmp):
    """The x86-64 builds (gcc and clang), those whose compiler is here."""
    if os.uname().machine != "x86_64":
        skip("host builds", "the expectations are written for an x86-64 host")
        return []
    specs = [("gcc-O0-pie", "gcc", ["-O0", "-fPIE"], ["-pie"], "-O0"),
             ("gcc-O2-pie", "gcc", ["-O2", "-fPIE"], ["-pie"], "-O2"),
             ("gcc-O0-nopie", "gcc", ["-O0", "-fno-pie"], ["-no-pie"], "-O0"),
             ("gcc-O2-nopie", "gcc", ["-O2", "-fno-pie"], ["-no-pie"], "-O2"),
             ("clang-O2-pie", "clang", ["-O2", "-fPIE"], ["-pie"], "-O2")]
    out = []
    for tag, cc, flags, lflags, opt in specs:
        if not samples.have(cc):
            skip(tag, "%s is not installed" % cc)
            continue
        path, ci = compile_sample(tmp, tag, cc, flags, lflags, callgraph_info=cc == "gcc")
        out.append(Build(tag, path, ci, "x86-64", "objdump", opt))
    return out


def cross_builds(tmp):
    specs = [("aarch64-O2", "aarch64-linux-gnu-gcc", ["-O2"], "aarch64", "aarch64-linux-gnu-objdump"),
             ("aarch64-O0", "aarch64-linux-gnu-gcc", ["-O0"], "aarch64", "aarch64-linux-gnu-objdump"),
             ("arm-O2", "arm-linux-gnueabihf-gcc", ["-O2", "-marm"], "arm", "arm-linux-gnueabihf-objdump"),
             ("thumb-O2", "arm-linux-gnueabihf-gcc", ["-O2", "-mthumb"], "arm", "arm-linux-gnueabihf-objdump")]
    out = []
    for tag, cc, flags, machine, objdump in specs:
        missing = [t for t in (cc, objdump) if not samples.have(t)]
        if missing:
            skip(tag, "not installed: %s" % " ".join(missing))
            continue
        path, ci = compile_sample(tmp, tag, cc, flags, callgraph_info=True)
        out.append(Build(tag, path, ci, machine, objdump, flags[0]))
    return out


# ---------------------------------------------------------------- reading

class Graph:
    """One object of `callgraph --format json`, by name."""

    def __init__(self, obj):
        self.obj = obj
        self.funcs = obj["functions"]
        self.by_name = {}
        for f in self.funcs:
            self.by_name.setdefault(f["name"], f)
        self.edges = []  # (caller name, callee name or None, kind, site)
        for c in obj["calls"]:
            callee = self.funcs[c["callee"]]["name"] if c["callee"] is not None else None
            self.edges.append((self.funcs[c["caller"]]["name"], callee, c["kind"], int(c["site"], 16)))

    def direct(self, kinds=("call", "tail")):
        return {(a, b, k, s) for a, b, k, s in self.edges if k in kinds}

    def pairs(self, kinds=("call", "tail")):
        return {(a, b) for a, b, k, s in self.edges if k in kinds}

    def crt(self, name):
        f = self.by_name.get(name)
        return f is not None and "crt" in f["flags"]


def callgraph(lp, path, *extra):
    """Runs `callgraph --format json`; returns (result, document or None)."""
    r = lp("callgraph", "--format", "json", *extra, path)
    doc = None
    if r.returncode == 0:
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            pass
    return r, doc


def graph_of(lp, b):
    r, doc = callgraph(lp, b.path)
    if not check(doc is not None and len(doc.get("objects", [])) == 1,
                 "%s: callgraph --format json ran, one object" % b.tag,
                 "exit %d, stderr %s" % (r.returncode, r.stderr.strip()[-300:])):
        return None
    return Graph(doc["objects"][0])


def read_ci(path):
    """gcc's -fcallgraph-info file (VCG): ({defined function names},
    {(caller, callee)} between them, {(caller, external callee)})."""
    names, defined = {}, set()
    edges = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r'node: \{ title: "([^"]*)" label: "([^"\\]*)', line)
            if m:
                names[m.group(1)] = m.group(2)
                if "shape : ellipse" not in line:
                    defined.add(m.group(2))
                continue
            m = re.match(r'edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)"', line)
            if m:
                edges.append((m.group(1), m.group(2)))
    inner, outer = set(), set()
    for a, b in edges:
        if b == "__indirect_call":
            continue
        a, b = names.get(a, a), names.get(b, b)
        (inner if b in defined else outer).add((a, b))
    return defined, inner, outer


def objdump_edges(b):
    """From `objdump -d`: {function name: start address} of the functions
    objdump shows (out of the PLT sections), and the direct calls and tail
    jumps (a jump to another function's start) as sets of (caller, callee,
    site); a call through a GOT slot (x86-64 `call *X(%rip)`) is a call of
    NAME@got."""
    r = samples.run([b.objdump, "-d", "--no-show-raw-insn", "-w", b.path])
    if r.returncode:
        raise RuntimeError("%s -d %s: %s" % (b.objdump, b.path, r.stderr))
    starts, calls, jumps, lines = {}, set(), set(), []
    section, caller = None, None
    for line in r.stdout.splitlines():
        m = re.match(r"^Disassembly of section (\S+):", line)
        if m:
            section, caller = m.group(1), None
            continue
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            caller = None if section.startswith(".plt") else m.group(2)
            if caller and caller not in starts:
                starts[caller] = int(m.group(1), 16)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and caller:
            lines.append((caller, int(m.group(1), 16), m.group(2), m.group(3)))
    # x86-64: a register loaded from a GOT slot (mov X(%rip),%reg) then
    # called or jumped through (the C runtime's weak __gmon_start__ and
    # _ITM_* calls) is a call of that slot's NAME@got
    loaded, last = {}, None
    for caller, site, mnem, ops in lines:
        if caller != last:
            loaded, last = {}, caller
        t = re.match(r"^([0-9a-f]+) <([^>+]+)>", ops)
        got = re.match(r"^\*0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <([^@>+]+)(?:@[^>]*)?>$", ops)
        via = re.match(r"^\*%(\w+)$", ops)
        target = t.group(2) if t else got.group(1) + "@got" if got else None
        if via and via.group(1) in loaded:
            target = loaded[via.group(1)] + "@got"
        if CALL_RE[b.machine].match(mnem):
            if target:
                calls.add((caller, target, site))
        elif JUMP_RE[b.machine].match(mnem):
            # the target is the last operand (cbz x0, 1234 <f>)
            t = re.search(r"(?:^|,\s*)([0-9a-f]+) <([^>+]+)>$", ops)
            if t and t.group(2) != caller and (t.group(2).endswith("@plt") or starts.get(t.group(2)) == int(
                    t.group(1), 16)):
                jumps.add((caller, t.group(2), site))
            elif target and target.endswith("@got"):
                jumps.add((caller, target, site))
        m = re.match(r"^0x[0-9a-f]+\(%rip\),%(\w+)\s+# [0-9a-f]+ <([^@>+]+)(?:@[^>]*)?>$", ops)
        if mnem.startswith("mov") and m:
            loaded[m.group(1)] = m.group(2)
        elif not mnem.startswith(("test", "cmp")):
            w = re.search(r",%(\w+)$", ops.split("#")[0].strip())
            if w:
                loaded.pop(w.group(1), None)
    return starts, calls, jumps


# ---------------------------------------------------------------- the static graph

def check_oracle_ci(b, g):
    """(a) gcc's own call graph for the source."""
    defined, inner, outer = read_ci(b.ci)
    check(defined == MINE, "%s: gcc -fcallgraph-info defines the sample's functions" % b.tag,
          "got %s" % sorted(defined ^ MINE))
    got = {(a, c) for a, c in g.pairs() if a in defined and c in defined}
    check(got == inner, "%s: calls and tail calls between the file's functions = gcc -fcallgraph-info's" % b.tag,
          "only layerprof: %s; only gcc: %s" % (sorted(got - inner), sorted(inner - got)))
    want = {(a, c + "@plt") for a, c in outer}
    got = {(a, c) for a, c in g.pairs() if a in defined and c not in defined}
    check(got == want, "%s: the file's calls of other objects' functions = gcc's external callees, as NAME@plt" % b.tag,
          "only layerprof: %s; only gcc: %s" % (sorted(got - want), sorted(want - got)))
    for a, c in sorted(got):
        f = g.by_name.get(c)
        check(f is not None and f["kind"] == "import" and f["import"] == c[:-4],
              "%s: %s is an import of %s" % (b.tag, c, c[:-4]), f)


def check_oracle_objdump(b, g):
    """(b) objdump's call targets, per caller and site; its jumps to other
    functions' starts against the tail calls."""
    starts, calls, jumps = objdump_edges(b)
    got = g.direct(("call",))
    got = {(a, c, s) for a, c, k, s in got}
    check(got == calls, "%s: call edges (caller, callee, site) = objdump -d's call targets" % b.tag,
          "only layerprof: %s; only objdump: %s" % (sorted(got - calls)[:12], sorted(calls - got)[:12]))
    got = {(a, c, s) for a, c, k, s in g.direct(("tail",))}
    check(got == jumps, "%s: tail edges = objdump -d's jumps to another function's start" % b.tag,
          "only layerprof: %s; only objdump: %s" % (sorted(got - jumps)[:12], sorted(jumps - got)[:12]))
    for name in MINE:
        f = g.by_name.get(name)
        check(f is not None and int(f["addr"], 16) == starts.get(name),
              "%s: %s at objdump's address" % (b.tag, name), "%s, objdump %s" % (f and f["addr"], starts.get(name)))


def check_known(b, g, obj):
    """(c) the sample's hand-written expectations."""
    check(obj["machine"] == b.machine, "%s: machine %s" % (b.tag, b.machine), obj["machine"])
    for name in sorted(MINE):
        f = g.by_name.get(name)
        if not check(f is not None and f["kind"] == "symbol", "%s: %s is a symbol function" % (b.tag, name), f):
            continue
        check(f["reach"] == REACH[name], "%s: %s reach %s" % (b.tag, name, REACH[name]), f["reach"])
        if name in ADDRESS:
            check("address-taken" in f["flags"], "%s: %s address-taken" % (b.tag, name), f["flags"])
        elif name != "main":
            check("address-taken" not in f["flags"], "%s: %s not address-taken" % (b.tag, name), f["flags"])
        if b.tag.startswith("thumb"):
            check("thumb" in f["flags"], "%s: %s is Thumb code" % (b.tag, name), f["flags"])
        elif b.machine == "arm":
            check("thumb" not in f["flags"], "%s: %s is ARM code" % (b.tag, name), f["flags"])
    flagged = [f["name"] for f in g.funcs if "main" in f["flags"]]
    check(flagged == ["main"], "%s: main, and only main, has the main flag" % b.tag, flagged)
    entry = [f["name"] for f in g.funcs if "entry" in f["flags"]]
    check(entry == ["_start"], "%s: _start holds the entry point" % b.tag, entry)
    ind = [s for a, c, k, s in g.edges if a == "dispatch" and k == "indirect"]
    check(len(ind) == 2, "%s: dispatch has 2 indirect call sites" % b.tag, ind)
    others = sorted({a for a, c, k, s in g.edges if k == "indirect" and a in MINE and a != "dispatch"})
    check(not others, "%s: no other function of the sample has an indirect call site" % b.tag, others)
    kinds = {k for a, c, k, s in g.edges if a == "tail_a" and c == "tail_b"}
    want = {"call"} if b.opt == "-O0" else {"tail"}
    check(kinds == want, "%s: tail_a -> tail_b is a %s" % (b.tag, "call" if b.opt == "-O0" else "tail call"), kinds)
    if b.opt == "-O0":
        tails = sorted((a, c) for a, c, k, s in g.edges if k == "tail" and a in MINE)
        check(not tails, "%s: no tail calls in the sample's functions at -O0" % b.tag, tails)
    for name in ("puts", "qsort", "strlen", "printf"):
        f = g.by_name.get(name + "@plt")
        check(f is not None and f["kind"] == "import" and f["import"] == name,
              "%s: %s@plt is an import" % (b.tag, name), f)
    s = obj["summary"]
    want = {
        "functions": sum(1 for f in g.funcs if f["kind"] in ("symbol", "unnamed")),
        "unnamed": sum(1 for f in g.funcs if f["kind"] == "unnamed"),
        "imports": sum(1 for f in g.funcs if f["kind"] == "import"),
        "calls": sum(1 for e in g.edges if e[2] in ("call", "tail")),
        "tail": sum(1 for e in g.edges if e[2] == "tail"),
        "indirect": sum(1 for e in g.edges if e[2] == "indirect"),
        "unreachable": sum(1 for f in g.funcs if f["reach"] == "none"),
        "address_only": sum(1 for f in g.funcs if f["reach"] == "address"),
    }
    got = {k: s.get(k) for k in want}
    check(got == want and s.get("undecodable") == 0, "%s: the summary counts the lists" % b.tag,
          "summary %s, lists %s" % (s, want))
    ids = [f["id"] for f in g.funcs]
    addrs = [int(f["addr"], 16) for f in g.funcs]
    check(ids == list(range(len(ids))) and addrs == sorted(addrs), "%s: ids in order, functions by address" % b.tag)


def static_checks(lp, builds):
    for b in builds:
        r, doc = callgraph(lp, b.path)
        if not check(doc is not None and len(doc.get("objects", [])) == 1 and doc.get("missing") == [],
                     "%s: callgraph --format json ran, one object" % b.tag,
                     "exit %d, stderr %s" % (r.returncode, r.stderr.strip()[-300:])):
            continue
        obj = doc["objects"][0]
        g = Graph(obj)
        if b.ci:
            check_oracle_ci(b, g)
        check_oracle_objdump(b, g)
        check_known(b, g, obj)


def group_host(lp, tmp):
    builds = host_builds(tmp)
    static_checks(lp, builds)
    for b in builds:
        if b.tag == "gcc-O2-pie":
            check_libs(lp, b)
            check_forms(lp, b)


def dynsym_addr(path, name):
    """The address of the defined dynamic symbol name in path (nm -D), or None."""
    r = samples.run(["nm", "-D", "--defined-only", path])
    for ln in r.stdout.splitlines():
        p = ln.split()
        if len(p) == 3 and p[2].split("@")[0] == name and p[1] in "TtWiu":
            return int(p[0], 16)
    return None


def check_libs(lp, b):
    """--libs: the libraries the program needs follow it, and its imports
    are linked to their definitions (the addresses nm -D gives)."""
    r, doc = callgraph(lp, b.path, "--libs")
    if not check(doc is not None, "%s --libs: ran" % b.tag, r.stderr[-300:]):
        return
    objs = doc["objects"]
    check(os.path.realpath(objs[0]["path"]) == os.path.realpath(b.path) and doc["missing"] == [],
          "%s --libs: the program first, nothing missing" % b.tag, (objs[0]["path"], doc["missing"]))
    libc = [i for i, o in enumerate(objs) if o["soname"] == "libc.so.6"]
    if not check(len(libc) == 1 and objs[libc[0]]["type"] == "shared", "%s --libs: libc.so.6 is read" % b.tag,
                 [o["soname"] for o in objs]):
        return
    funcs = {f["name"]: f for f in objs[0]["functions"]}
    for name in ("puts", "qsort", "strlen", "printf"):
        f = funcs.get(name + "@plt")
        link = f and f["link"]
        want = dynsym_addr(objs[libc[0]]["path"], name)
        got = None
        if link and link.get("object") == libc[0]:
            got = int(objs[libc[0]]["functions"][link["function"]]["addr"], 16)
        check(got is not None and got == want, "%s --libs: %s@plt linked to libc's %s" % (b.tag, name, name),
              "link %s, address %s, nm -D %s" % (link, got, want))
    r, doc = callgraph(lp, b.path)
    check(doc is not None and all(f["link"] is None for f in doc["objects"][0]["functions"]),
          "%s: without --libs nothing is linked" % b.tag)


def check_forms(lp, b):
    """The text and DOT forms run and name the sample's functions."""
    for fmt in ("text", "dot"):
        r = lp("callgraph", "--format", fmt, b.path)
        missing = sorted(n for n in MINE if n not in r.stdout)
        check(r.returncode == 0 and not missing and r.stderr == "", "%s --format %s: names every function" %
              (b.tag, fmt), "exit %d, missing %s, stderr %s" % (r.returncode, missing, r.stderr[-200:]))
    r = lp("callgraph", "--format", "dot", b.path)
    check(r.stdout.lstrip().startswith("digraph") and r.stdout.rstrip().endswith("}"),
          "%s --format dot: one digraph" % b.tag, r.stdout[:100])
    r = lp("callgraph", "--paths", "--format", "dot", b.path)
    check(r.returncode == 0 and r.stdout.lstrip().startswith("digraph"), "%s --paths --format dot: one digraph" %
          b.tag, r.stderr[-200:])


def group_cross(lp, tmp):
    static_checks(lp, cross_builds(tmp))


def group_pie(lp, tmp):
    """A PIE and a non-PIE build of the same source: the same graph by name
    (out of the C runtime's start-up code, which differs)."""
    if not samples.have("gcc") or os.uname().machine != "x86_64":
        skip("pie", "needs gcc on x86-64")
        return
    pie, _ = compile_sample(tmp, "pie", "gcc", ["-O2", "-fPIE"], ["-pie"])
    exe, _ = compile_sample(tmp, "nopie", "gcc", ["-O2", "-fno-pie"], ["-no-pie"])
    (r1, d1), (r2, d2) = callgraph(lp, pie), callgraph(lp, exe)
    if not check(d1 is not None and d2 is not None, "pie: both graphs read", r1.stderr + r2.stderr):
        return
    o1, o2 = d1["objects"][0], d2["objects"][0]
    check(o1["type"] == "pie" and o2["type"] == "exec", "pie: types pie and exec", (o1["type"], o2["type"]))
    g1, g2 = Graph(o1), Graph(o2)

    def named(g):
        edges = sorted((a, c, k) for a, c, k, s in g.edges if not g.crt(a))
        called = {c for a, c, k in edges}
        funcs = {(f["name"], f["kind"], f["reach"], f["size"]) for f in g.funcs
                 if "crt" not in f["flags"] and (f["kind"] != "import" or f["name"] in called)}
        return funcs, edges

    f1, e1 = named(g1)
    f2, e2 = named(g2)
    check({x[:3] for x in f1} == {x[:3] for x in f2},
          "pie: the same functions, kinds and reach by name (out of the start-up code and its imports)",
          sorted({x[:3] for x in f1} ^ {x[:3] for x in f2}))
    check(e1 == e2, "pie: the same calls by name and kind", "pie %s, exec %s" % (e1, e2))


def g1_addr(o, name):
    return next(f["addr"] for f in o["functions"] if f["name"] == name)


def group_stripped(lp, tmp):
    """Stripped copies of the -O2 PIE, on x86-64 and, where the cross
    compilers are, aarch64, ARM and Thumb: names from the dynamic symbols
    only, the others sub_<hex> at the addresses the symbols had; the same
    calls by site and target address."""
    specs = [("x86-64", "gcc", ["-O2", "-fPIE"], "", os.uname().machine == "x86_64"),
             ("aarch64", "aarch64-linux-gnu-gcc", ["-O2", "-fPIE"], "aarch64-linux-gnu-", True),
             ("arm", "arm-linux-gnueabihf-gcc", ["-O2", "-fPIE", "-marm"], "arm-linux-gnueabihf-", True),
             ("thumb", "arm-linux-gnueabihf-gcc", ["-O2", "-fPIE", "-mthumb"], "arm-linux-gnueabihf-", True)]
    for label, cc, flags, prefix, ok in specs:
        if not ok or not samples.have(cc) or not samples.have(prefix + "strip") or not samples.have(prefix + "nm"):
            skip("stripped " + label, "needs %s, %sstrip and %snm" % (cc, prefix, prefix))
            continue
        stripped_case(lp, tmp, label, cc, flags, prefix)


def stripped_case(lp, tmp, label, cc, flags, prefix):
    what = "stripped %s: " % label
    full, _ = compile_sample(tmp, "strip-" + label, cc, flags, ["-pie"])
    bare = full + ".stripped"
    samples.run([prefix + "strip", "-o", bare, full])
    (r1, d1), (r2, d2) = callgraph(lp, full), callgraph(lp, bare)
    if not check(d1 is not None and d2 is not None, what + "both graphs read", r1.stderr + r2.stderr):
        return
    o1, o2 = d1["objects"][0], d2["objects"][0]
    arm = o1["machine"] == "arm"
    check(not o1["stripped"] and o2["stripped"], what + "'stripped' false, then true")
    r = samples.run([prefix + "nm", "-D", "--defined-only", bare])
    dyn = {ln.split()[-1] for ln in r.stdout.splitlines() if ln.split() and ln.split()[-2] in ("T", "t", "W", "i")}
    r = samples.run([prefix + "nm", "-D", "--undefined-only", bare])
    undef = {ln.split()[-1].split("@")[0] for ln in r.stdout.splitlines() if ln.strip()}
    bad = [f["name"] for f in o2["functions"]
           if not ((f["kind"] == "symbol" and f["name"] in dyn) or
                   (f["kind"] == "unnamed" and f["name"] == "sub_%x" % int(f["addr"], 16)) or
                   (f["kind"] == "import" and f["import"] in undef and f["name"] in (f["import"] + "@plt",
                                                                                   f["import"] + "@got")))]
    # what the file still tells names these: the entry point (_start), main
    # found from it, DT_INIT and DT_FINI (_init, _fini)
    told = {f["name"]: f for f in o2["functions"] if f["kind"] == "unnamed" and f["name"] in
            ("_start", "main", "_init", "_fini")}
    bad = [n for n in bad if n not in told]
    check(not bad, what + "every name is a dynamic symbol's, an import's or sub_<its address>", bad)
    check(sorted(told) == ["_fini", "_init", "_start", "main"] and "entry" in told["_start"]["flags"] and
          "main" in told["main"]["flags"] and
          int(told["_init"]["addr"], 16) == int(g1_addr(o1, "_init"), 16) and
          int(told["_fini"]["addr"], 16) == int(g1_addr(o1, "_fini"), 16),
          what + "_start (the entry), main (found from it), _init and _fini (DT_INIT, DT_FINI) named", sorted(told))
    unnamed = [f for f in o2["functions"] if f["kind"] == "unnamed"]
    check(unnamed and o2["summary"]["unnamed"] == len(unnamed), what + "summary.unnamed = the unnamed functions (> 0)",
          "%d, summary %s" % (len(unnamed), o2["summary"]["unnamed"]))
    g1, g2 = Graph(o1), Graph(o2)
    at = {int(f["addr"], 16): f for f in o2["functions"]}
    called = {c for a, c, k, site in g1.edges if k == "call"}
    for name in sorted(DIRECT):
        # C on 32-bit ARM has no unwind tables: a function that only a tail
        # jump reaches is not found there (docs/callgraph.md)
        if arm and name not in called:
            continue
        f = at.get(int(g1.by_name[name]["addr"], 16))
        check(f is not None and f["kind"] == "unnamed" and f["reach"] == "direct",
              what + "%s found as a directly reached sub_ function" % name, f)
    m = at.get(int(g1.by_name["main"]["addr"], 16))
    check(m is not None and "main" in m["flags"] and m["reach"] == "root", what + "main found from the entry point", m)
    e = [f for f in o2["functions"] if "entry" in f["flags"]]
    check(len(e) == 1 and int(e[0]["addr"], 16) == int(o2["entry"], 16), what + "one function holds the entry", e)

    def by_addr(o, g):
        addr = {f["name"]: int(f["addr"], 16) for f in o["functions"]}
        return {(s, addr[c] if c else None, k) for a, c, k, s in g.edges}

    a1, a2 = by_addr(o1, g1), by_addr(o2, g2)
    # a function with no call frame information that only a tail jump
    # reaches is not found (the C runtime's register_tm_clones; on 32-bit
    # ARM any C function): the jump is no call in the stripped copy
    crt = {int(f["addr"], 16) for f in o1["functions"] if "crt" in f["flags"]}
    lost = {e for e in a1 - a2 if e[2] == "tail" and e[1] not in at and (arm or e[1] in crt)}
    check(a1 - lost == a2, what + "the same calls (site, target address, kind), but tail jumps to functions without "
          "unwind information",
          "only unstripped %s; only stripped %s" % (sorted(a1 - a2, key=str)[:10], sorted(a2 - a1, key=str)[:10]))


# ---------------------------------------------------------------- paths

def tree_shape(node):
    """(name, kind, recursive, cut, sorted children's shapes)."""
    return (node["name"], node["kind"], node["recursive"], node["cut"],
            tuple(sorted((tree_shape(c) for c in node["children"]), key=repr)))


def shape(name, kind="call", recursive=False, cut=0, children=()):
    return (name, kind, recursive, cut, tuple(sorted(children, key=repr)))


def sample_tree(tail_kind):
    """The possible paths from main, whole."""
    return shape("main", "root", children=[
        shape("run_step", children=[
            shape("fact", children=[shape("fact", recursive=True)]),
            shape("ping", children=[shape("pong", children=[shape("ping", recursive=True)])]),
            shape("tail_a", children=[shape("tail_b", tail_kind)]),
            shape("dispatch", children=[shape("*indirect*", "indirect")]),
            shape("do_sort", children=[shape("qsort@plt")]),
            shape("measure", children=[shape("puts@plt"), shape("strlen@plt")]),
        ]),
        shape("printf@plt"),
    ])


def group_paths(lp, tmp):
    if not samples.have("gcc") or os.uname().machine != "x86_64":
        skip("paths", "needs gcc on x86-64")
        return
    for opt in ("-O0", "-O2"):
        tag = "paths gcc %s" % opt
        prog, _ = compile_sample(tmp, "paths" + opt, "gcc", [opt])
        r = lp("callgraph", "--paths", "--format", "json", prog)
        if not check(r.returncode == 0, "%s: callgraph --paths --format json ran" % tag, r.stderr):
            continue
        p = json.loads(r.stdout)
        want = sample_tree("call" if opt == "-O0" else "tail")
        check(tree_shape(p["tree"]) == want, "%s: the tree of possible paths" % tag,
              "got %s" % (tree_shape(p["tree"]),))
        head = {k: p.get(k) for k in ("root", "max_depth", "max_nodes", "nodes", "cut_nodes", "cut_paths", "recursive")}
        check(head == {"root": "main", "max_depth": 8, "max_nodes": 100000, "nodes": 17, "cut_nodes": 0,
                       "cut_paths": 0, "recursive": 2}, "%s: 17 nodes, 2 recursive, none cut" % tag, head)
        # the text form
        r = lp("callgraph", "--paths", prog)
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and "      fact [recursive]" in lines and "        ping [recursive]" in lines,
              "%s: text: the recursive nodes marked at their depth" % tag, r.stdout)
        want = "      tail_b" + ("" if opt == "-O0" else " [tail]")
        check(want in lines, "%s: text: '%s'" % (tag, want.strip()), r.stdout)
        check(any(re.match(r"^      \*indirect\*.*\[indirect\]$", ln) for ln in lines),
              "%s: text: dispatch's indirect calls marked" % tag, r.stdout)
        check(lines[-1:] == ["17 nodes, 2 recursive, 0 paths cut (depth 8, at most 100000 nodes)"],
              "%s: text: the closing line" % tag, lines[-1:])
        # --depth 2: run_step's six callees are not expanded; each counts its
        # distinct callees left out (dispatch's indirect node among them)
        r = lp("callgraph", "--paths", "--depth", "2", "--format", "json", prog)
        if check(r.returncode == 0, "%s: --depth 2 ran" % tag, r.stderr):
            p = json.loads(r.stdout)
            want = shape("main", "root", children=[
                shape("run_step", children=[shape("fact", cut=1), shape("ping", cut=1), shape("tail_a", cut=1),
                                            shape("dispatch", cut=1), shape("do_sort", cut=1),
                                            shape("measure", cut=2)]),
                shape("printf@plt")])
            check(tree_shape(p["tree"]) == want, "%s: --depth 2: the tree and each node's cut" % tag,
                  tree_shape(p["tree"]))
            head = {k: p.get(k) for k in ("max_depth", "nodes", "cut_nodes", "cut_paths", "recursive")}
            check(head == {"max_depth": 2, "nodes": 9, "cut_nodes": 6, "cut_paths": 7, "recursive": 0},
                  "%s: --depth 2: 9 nodes, 6 cut, 7 paths cut" % tag, head)
        r = lp("callgraph", "--paths", "--depth", "2", prog)
        check(r.returncode == 0 and "    measure [+2 cut]" in r.stdout.splitlines() and
              r.stdout.splitlines()[-1:] == ["9 nodes, 0 recursive, 7 paths cut (depth 2, at most 100000 nodes)"],
              "%s: text --depth 2: '[+2 cut]' and the closing line" % tag, r.stdout[-400:])
        # another root
        r = lp("callgraph", "--paths", "--root", "ping", "--format", "json", prog)
        if check(r.returncode == 0, "%s: --root ping ran" % tag, r.stderr):
            p = json.loads(r.stdout)
            want = shape("ping", "root", children=[shape("pong", children=[shape("ping", recursive=True)])])
            check(p["root"] == "ping" and tree_shape(p["tree"]) == want and p["nodes"] == 3,
                  "%s: --root ping: ping, pong, ping [recursive]" % tag, (p["root"], tree_shape(p["tree"])))
        # --max-nodes
        r = lp("callgraph", "--paths", "--max-nodes", "5", "--format", "json", prog)
        if check(r.returncode == 0, "%s: --max-nodes 5 ran" % tag, r.stderr):
            p = json.loads(r.stdout)
            check(p["nodes"] <= 5 and p["max_nodes"] == 5 and p["cut_paths"] > 0,
                  "%s: --max-nodes 5: at most 5 nodes, paths cut" % tag, {k: p[k] for k in ("nodes", "cut_paths")})


# ---------------------------------------------------------------- bad input

def one_error(r, code, prefix):
    lines = r.stderr.strip().splitlines()
    return r.returncode == code and len(lines) == 1 and lines[0].startswith(prefix) and r.stdout == ""


def group_badinput(lp, tmp):
    src = shutil.which("true") or "/bin/true"
    with open(src, "rb") as f:
        image = f.read()
    cases = []

    def put(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    cases.append(("a text file", put("text.txt", b"hello, not an ELF file\n")))
    cases.append(("a truncated ELF (100 bytes)", put("trunc100", image[:100])))
    cases.append(("a truncated ELF (its first half)", put("trunchalf", image[:len(image) // 2])))
    cases.append(("an ELF header only", put("ehdr", image[:64])))
    cases.append(("/dev/null", "/dev/null"))
    cases.append(("a directory", tmp))
    cases.append(("a missing file", os.path.join(tmp, "no-such-file")))
    odd = bytearray(image)
    odd[18:20] = (0x1234).to_bytes(2, "little")
    cases.append(("an ELF of an unknown machine (e_machine 0x1234)", put("machine1234", bytes(odd))))
    bad_sh = bytearray(image)
    bad_sh[0x28:0x30] = (len(image) - 8).to_bytes(8, "little")  # e_shoff past the end
    cases.append(("section headers past the end", put("badshoff", bytes(bad_sh))))
    obj = os.path.join(tmp, "reloc.o")
    if samples.have("gcc") and samples.run(["gcc", "-c", SAMPLE, "-o", obj]).returncode == 0:
        cases.append(("a relocatable object (.o)", obj))
    for what, path in cases:
        r = lp("callgraph", path)
        check(one_error(r, 1, "layerprof callgraph: cannot read '%s'" % path),
              "callgraph on %s: exit 1, one line 'cannot read'" % what,
              "exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout[:200], r.stderr[-400:]))
        r = lp("callgraph", "--format", "json", "--paths", path)
        check(one_error(r, 1, "layerprof callgraph: "), "callgraph --paths --format json on %s: exit 1, one line" % what,
              "exit %d, stderr %r" % (r.returncode, r.stderr[-400:]))
    text = os.path.join(tmp, "text.txt")
    r = lp("callgraph", text)
    check(one_error(r, 1, "layerprof callgraph: cannot read '%s': not an ELF file" % text),
          "callgraph on a text file: the spec's message, 'not an ELF file'", r.stderr)
    prog = src
    usage = [("--format xml", ["--format", "xml", prog]), ("--depth x", ["--paths", "--depth", "x", prog]),
             ("--depth -1", ["--paths", "--depth", "-1", prog]), ("--max-nodes 1x", ["--paths", "--max-nodes", "1x",
                                                                                 prog]),
             ("an unknown option", ["--bogus", prog]), ("no file", []), ("two files", [prog, prog]),
             ("--root of no function", ["--paths", "--root", "no_such_function_here", prog])]
    for what, args in usage:
        r = lp("callgraph", *args)
        check(r.returncode == 2 and r.stderr.strip() != "" and r.stdout == "",
              "callgraph with %s: usage error, exit 2" % what, "exit %d, stderr %r" % (r.returncode, r.stderr[-300:]))
    for what, path in [("a missing trace", os.path.join(tmp, "no-such-trace")), ("a directory with no trace", tmp),
                       ("a file that is no trace", os.path.join(tmp, "text.txt"))]:
        r = lp("coverage", path)
        check(one_error(r, 3, "layerprof coverage: "), "coverage on %s: exit 3, one line" % what,
              "exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout[:200], r.stderr[-300:]))
    r = lp("coverage", "--format", "xml", tmp)
    check(r.returncode == 2, "coverage --format xml: usage error, exit 2", r.returncode)


# ---------------------------------------------------------------- coverage

# `cg_sample f t d s`: what runs (function: entries) and which static calls
# (caller, callee): times) among the sample's functions.
COV_ARGS = ["f", "t", "d", "s"]
COV_RUN = {"main": 1, "run_step": 4, "fact": 5, "tail_a": 1, "tail_b": 1, "dispatch": 1, "op_add": 1, "op_mul": 1,
           "do_sort": 1, "cmp_ints": None}  # None: the comparisons the program prints
COV_EDGES = {("main", "run_step"): 4, ("run_step", "fact"): 1, ("fact", "fact"): 4, ("run_step", "tail_a"): 1,
             ("tail_a", "tail_b"): 1, ("run_step", "dispatch"): 1, ("run_step", "do_sort"): 1,
             ("run_step", "ping"): 0, ("ping", "pong"): 0, ("pong", "ping"): 0, ("run_step", "measure"): 0}


def pct(run, total):
    return round(100.0 * run / total, 1) if total else 0


def nm_sizes(path):
    r = samples.run(["nm", "-S", path])
    out = {}
    for ln in r.stdout.splitlines():
        p = ln.split()
        if len(p) == 4 and p[2] in "tTwW":
            out[p[3]] = (int(p[1], 16), int(p[0], 16))
    return out


def coverage_of(lp, tag, trace, *extra):
    r = lp("coverage", "--format", "json", *extra, trace)
    if not check(r.returncode == 0, "%s: coverage --format json ran" % tag,
                 "exit %d, stderr %s" % (r.returncode, r.stderr[-400:])):
        return None
    return json.loads(r.stdout)


def group_coverage(lp, tmp):
    if not samples.have("gcc") or os.uname().machine != "x86_64":
        skip("coverage", "needs gcc on x86-64")
        return
    tag = "coverage -finstrument-functions"
    prog, _ = compile_sample(tmp, "cov", "gcc", ["-O0", "-finstrument-functions"])
    trace = os.path.join(tmp, "cov.t")
    r = samples.record(lp, trace, [prog] + COV_ARGS)
    if not check(r.returncode == 0, "%s: recorded" % tag, r.stderr[-400:]):
        return
    compares = int(re.search(r"^compares (\d+)$", r.stdout, re.M).group(1))
    doc = coverage_of(lp, tag, trace)
    if doc is None:
        return
    objs = doc["objects"]
    if not check(len(objs) == 1 and os.path.realpath(objs[0]["path"]) == os.path.realpath(prog),
                 "%s: one object, the program" % tag, [o["path"] for o in objs]):
        return
    o = objs[0]
    runs = dict(COV_RUN, cmp_ints=compares)
    nf, ne = len(MINE), len(COV_EDGES)
    erun = sum(1 for v in COV_EDGES.values() if v)
    want_f = {"total": nf, "run": len(runs), "percent": pct(len(runs), nf)}
    want_c = {"total": ne, "run": erun, "percent": pct(erun, ne)}
    check(o["functions"] == want_f, "%s: functions %d/%d" % (tag, len(runs), nf), o["functions"])
    check(o["calls"] == want_c, "%s: calls %d/%d" % (tag, erun, ne), o["calls"])
    check(doc["total"] == {"functions": want_f, "calls": want_c}, "%s: the total is the program's" % tag, doc["total"])
    check(doc["unmatched"] == 0, "%s: no unmatched addresses" % tag, doc["unmatched"])
    got = {f["name"]: (f["run"], f["calls"]) for f in o["function_list"]}
    want = {n: (n in runs, runs.get(n, 0)) for n in MINE}
    check(got == want, "%s: function_list: each function's run and calls" % tag,
          {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)})
    got = {(c["caller"], c["callee"]): (c["kind"], c["run"], c["calls"]) for c in o["call_list"]}
    want = {k: ("call", v > 0, v) for k, v in COV_EDGES.items()}
    check(got == want and len(o["call_list"]) == ne, "%s: call_list: each static call's run and calls" % tag,
          {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)})
    sizes = nm_sizes(prog)
    never = sorted(MINE - set(runs), key=lambda n: (-sizes[n][0], sizes[n][1]))
    got = [(f["name"], f["size"], int(f["addr"], 16)) for f in o["never_run"]]
    check(got == [(n, sizes[n][0], sizes[n][1]) for n in never], "%s: never_run, largest first" % tag,
          "got %s, want %s" % ([g[0] for g in got], never))
    want = [{"caller": "do_sort", "callee": "cmp_ints", "calls": compares},
            {"caller": "dispatch", "callee": "op_add", "calls": 1},
            {"caller": "dispatch", "callee": "op_mul", "calls": 1}]
    check(o["dynamic_calls"] == want, "%s: dynamic_calls: the qsort callback and the table's calls" % tag,
          o["dynamic_calls"])
    # the text form
    r = lp("coverage", trace)
    check(r.returncode == 0 and "Never run, largest first:" in r.stdout and
          "Calls that ran but are not in the static graph:" in r.stdout and
          re.search(r"^\s*%d\s+do_sort -> cmp_ints\s*$" % compares, r.stdout, re.M) is not None,
          "%s: text: never-run and dynamic-call sections" % tag, r.stdout[-600:])
    # the possible paths, those that ran marked
    doc = coverage_of(lp, tag + " --paths", trace, "--paths")
    if doc is None:
        return
    p = doc.get("paths") or {}

    def walk(node, path, out):
        path = path + (node["name"],)
        out[path] = (node["run"], node["calls"], node["recursive"])
        for c in node.get("children", []):
            walk(c, path, out)
        return out

    nodes = walk(p["tree"], (), {}) if "tree" in p else {}
    want = {
        ("main",): (True, 1, False),
        ("main", "run_step"): (True, 4, False),
        ("main", "run_step", "fact"): (True, 1, False),
        ("main", "run_step", "tail_a"): (True, 1, False),
        ("main", "run_step", "tail_a", "tail_b"): (True, 1, False),
        ("main", "run_step", "dispatch"): (True, 1, False),
        ("main", "run_step", "do_sort"): (True, 1, False),
        ("main", "run_step", "ping"): (False, 0, False),
        ("main", "run_step", "ping", "pong"): (False, 0, False),
        ("main", "run_step", "ping", "pong", "ping"): (False, 0, True),
        ("main", "run_step", "measure"): (False, 0, False),
    }
    got = {k: nodes.get(k) for k in want}
    check(got == want, "%s --paths: the paths that ran, with their calls" % tag,
          {k: (got[k], want[k]) for k in want if got[k] != want[k]})
    rec = nodes.get(("main", "run_step", "fact", "fact"))
    check(rec is not None and rec[0] and rec[2], "%s --paths: fact's recursion ran, marked recursive" % tag, rec)
    r = lp("coverage", "--paths", trace)
    lines = r.stdout.splitlines()
    # "(1 call)" or "(1 calls)": the spec's "(N calls)", either number
    for line in (r"\* main \(1 calls?\)", r"\*   run_step \(4 calls\)", r"\*     fact \(1 calls?\)", "      ping",
                 "        pong", r"          ping \[recursive\]", "      measure", r"\*       tail_b \(1 calls?\)"):
        check(any(re.fullmatch(line, ln) for ln in lines), "%s --paths: text line '%s'" % (tag, line),
              "\n".join(lines[-40:]))


def group_coverage_dynamic(lp, tmp):
    """A trace of the plain -O2 build by `record --dynamic`: the same
    functions ran."""
    if not samples.have("gcc") or os.uname().machine != "x86_64":
        skip("coverage_dynamic", "needs gcc on x86-64")
        return
    tag = "coverage record --dynamic -O2"
    prog, _ = compile_sample(tmp, "covdyn", "gcc", ["-O2"])
    trace = os.path.join(tmp, "covdyn.t")
    r = samples.record(lp, trace, [prog] + COV_ARGS, extra=("--dynamic",))
    if not check(r.returncode == 0, "%s: recorded" % tag, r.stderr[-400:]):
        return
    doc = coverage_of(lp, tag, trace)
    if doc is None:
        return
    objs = [o for o in doc["objects"] if os.path.realpath(o["path"]) == os.path.realpath(prog)]
    if not check(len(objs) == 1, "%s: the program is an object" % tag, [o["path"] for o in doc["objects"]]):
        return
    o = objs[0]
    ran = {f["name"] for f in o["function_list"] if f["run"]}
    check(ran == set(COV_RUN), "%s: the functions that ran" % tag,
          "only coverage %s, only expected %s" % (sorted(ran - set(COV_RUN)), sorted(set(COV_RUN) - ran)))
    check(o["functions"]["total"] == len(MINE) and o["functions"]["run"] == len(COV_RUN),
          "%s: functions %d/%d" % (tag, len(COV_RUN), len(MINE)), o["functions"])
    calls = {f["name"]: f["calls"] for f in o["function_list"] if f["run"]}
    want = {n: c for n, c in COV_RUN.items() if c is not None}
    got = {n: calls.get(n) for n in want}
    check(got == want, "%s: each function's calls" % tag, got)
    # the same static calls ran; tail_a jumps to tail_b at -O2
    got = {(c["caller"], c["callee"]): (c["kind"], c["run"], c["calls"]) for c in o["call_list"]}
    want = {k: ("tail" if k == ("tail_a", "tail_b") else "call", v > 0, v) for k, v in COV_EDGES.items()}
    check(got == want, "%s: call_list: each static call's run and calls" % tag,
          {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)})


def setup(build):
    lp = samples.Layerprof(build)
    r = lp("callgraph", "--help")
    if "left out" in (r.stdout + r.stderr):
        skip("callgraph", "this layerprof was built without capstone")
        return None
    return (lp,)


GROUPS = {
    "host": group_host,
    "cross": group_cross,
    "pie": group_pie,
    "stripped": group_stripped,
    "paths": group_paths,
    "badinput": group_badinput,
    "coverage": group_coverage,
    "coverage_dynamic": group_coverage_dynamic,
}

if __name__ == "__main__":
    sys.exit(run_groups(GROUPS, setup, prefix="layerprof-callgraph-"))
