#!/usr/bin/env python3
"""The memory tracer with real programs: `record --memory` on the programs
with known heap operations (tests/programs/mem_*, built by CMake, and
tests/integration/mem/*, built here at several optimisation levels), then
`report --memory`, `snapshot` and `memdiff` with exact expectations: sites
and their counts, illegal kinds with both stacks, mismatches, realloc chains,
threads freeing each other's blocks (over and over, beside a CPU hog, with
both clocks), fork (a real shell's $(...) too), keep-alive, a never-ending
leak named as growing.  Leak sites, byte totals and mismatches are held
against `valgrind --leak-check=full` and `heaptrack` on the same programs.

usage: test_memory.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
MEM = os.path.join(HERE, "mem")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip, summary  # noqa: E402


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, **kw)


class Layerprof:
    def __init__(self, build_dir):
        self.exe = os.path.join(build_dir, "host", "layerprof")

    def __call__(self, *args, timeout=120):
        return run([self.exe] + list(args), timeout=timeout)

    def json(self, *args):
        r = self(*args)
        if r.returncode:
            return None, r
        return json.loads(r.stdout), r

    def record(self, out, prog, *args, opts=()):
        return self("record", "-q", "--memory", *opts, "-o", out, "--", prog, *args)

    def memory(self, trace, *opts):
        return self.json("report", "--memory", "--format", "json", *opts, trace)


def fn(rep, name):
    """The per-function row of name."""
    for f in rep["functions"]:
        if f["function"] == name:
            return f
    return {}


def sites_of(rep, name):
    return [s for s in rep["sites"] if s["function"] == name]


def counts(row, *keys):
    return tuple(row.get(k) for k in keys)


def illegal(rep):
    """(kind, operation, function, block operation, block function) of each
    illegal release, sorted."""
    return sorted((i["kind"], i["operation"], i["function"], i.get("block", {}).get("operation"),
                   i.get("block", {}).get("function")) for i in rep["illegal"])


# ---- the peer tools --------------------------------------------------------

def valgrind_errors(prog, *args, leaks=False):
    """valgrind memcheck's errors: (kind, blocks, bytes, functions of the
    first stack, functions of the second stack: where the block was
    allocated) each.  None when valgrind is missing."""
    if not shutil.which("valgrind"):
        return None
    fd, xml = tempfile.mkstemp(suffix=".xml")
    os.close(fd)
    cmd = ["valgrind", "--xml=yes", "--xml-file=" + xml]
    if leaks:
        cmd += ["--leak-check=full", "--show-leak-kinds=definite", "--errors-for-leak-kinds=definite"]
    run(cmd + [prog] + list(args), timeout=300)
    out = []
    try:
        for e in ET.parse(xml).getroot().findall("error"):
            xw = e.find("xwhat")
            stacks = [[f.findtext("fn") or "" for f in st.findall("frame")] for st in e.findall("stack")]
            out.append((e.findtext("kind"), int(xw.findtext("leakedblocks")) if xw is not None else 0,
                        int(xw.findtext("leakedbytes")) if xw is not None else 0, stacks[0],
                        stacks[1] if len(stacks) > 1 else []))
    finally:
        os.unlink(xml)
    return out


# Whether the peers (valgrind, heaptrack, on this machine) can run the
# programs: not when they are another architecture's (tests/guest/test_guest.py
# runs these checks in an ARM guest).
PEERS = True
# Whether the runtime walks frame pointers on the architecture under test
# (not on 32-bit arm, whose frames have no fixed layout: the call site only)
FRAME_WALK = True


def valgrind_totals(prog, *args):
    """valgrind's 'total heap usage': (allocs, frees, bytes allocated)."""
    r = run(["valgrind", prog] + list(args), timeout=300)
    m = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", r.stderr)
    return tuple(int(g.replace(",", "")) for g in m.groups()) if m else None


def heaptrack_run(tmp, name, prog, *args):
    """heaptrack_print's leaks and allocation calls per function:
    ({function: (bytes text, calls)}, {function: calls}).  None when
    heaptrack is missing."""
    if not PEERS or not shutil.which("heaptrack") or not shutil.which("heaptrack_print"):
        return None
    out = os.path.join(tmp, "ht-" + name)
    run(["heaptrack", "-o", out, prog] + list(args), timeout=300)
    data = out + ".zst" if os.path.exists(out + ".zst") else out + ".gz"
    r = run(["heaptrack_print", "-f", data, "-l", "1", "-a", "1", "-p", "0", "-T", "0", "-n", "100"], timeout=300)
    leaks, calls, section = {}, {}, None
    lines = r.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("MEMORY LEAKS"):
            section = "leaks"
        elif line.startswith("MOST CALLS"):
            section = "calls"
        elif line and line[0].isupper() and not line[0].isdigit() and " " in line and line.isupper():
            section = None
        m = re.match(r"(\S+) leaked over (\d+) calls from$", line)
        if m and section == "leaks" and i + 1 < len(lines):
            leaks[lines[i + 1].strip()] = (m.group(1), int(m.group(2)))
        m = re.match(r"(\d+) calls to allocation functions with .* from$", line)
        if m and section == "calls" and i + 1 < len(lines):
            f = lines[i + 1].strip()
            calls[f] = calls.get(f, 0) + int(m.group(1))
    return leaks, calls


def ht_bytes(text):
    """heaptrack's byte counts (1000B, 4.80K, 1.20M) as numbers."""
    m = re.match(r"([\d.]+)([BKMG])$", text)
    return float(m.group(1)) * {"B": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] if m else -1


def near(a, b):
    return abs(a - b) <= 0.01 * max(a, b)


# ---- the programs ----------------------------------------------------------

def test_leaky(lp, tmp, progs):
    """mem_leaky: 100 x 48 bytes from leaky, never freed; tidy's 50 x 24
    freed at once.  The same counts for every build of it (plain, frame
    pointers, -finstrument-functions)."""
    for name in ("mem_leaky", "mem_leaky_fp", "mem_leaky_instr"):
        prog = os.path.join(progs, name)
        if not os.path.exists(prog):
            skip("%s" % name, "not built")
            continue
        out = os.path.join(tmp, name)
        r = lp.record(out, prog)
        if not check(r.returncode == 0, "%s: records and exits 0" % name, r.stderr):
            continue
        rep, r = lp.memory(out)
        if not check(rep is not None, "%s: report --memory" % name, r.stderr):
            continue
        leaky, tidy = fn(rep, "leaky"), fn(rep, "tidy")
        check(counts(leaky, "live_objects", "live_bytes", "allocs", "frees", "peak_bytes", "unfreed_objects",
                     "unfreed_bytes") == (100, 4800, 100, 0, 4800, 100, 4800),
              "%s: leaky holds 100 x 48 bytes, unfreed at exit" % name, leaky)
        check(counts(tidy, "live_objects", "allocs", "frees", "peak_bytes") == (0, 50, 50, 24),
              "%s: tidy: 50 allocations, 50 releases, peak 24" % name, tidy)
        check(not leaky.get("growing") and not tidy.get("growing"), "%s: nothing is growing" % name)
        check(rep["illegal"] == [] and rep["overlaps"] == [], "%s: no illegal releases, no overlaps" % name)
        check(len(sites_of(rep, "leaky")) == 1 and rep["sites"][0]["function"] == "leaky",
              "%s: one leaky site, first by live bytes" % name, [s["call_site"] for s in rep["sites"]])
        s = rep["sites"][0]
        check(s["file"] and s["file"].endswith("mem_leaky.c") and s["line"] > 0,
              "%s: the site has its source line" % name, (s["file"], s["line"]))
        p = rep["processes"]
        check(len(p) == 1 and p[0]["exited"] and p[0]["exit_status"] == 0, "%s: one process, exited 0" % name, p)
        if name == "mem_leaky_fp" and FRAME_WALK:
            check(len(s["stack"]) >= 2 and s["stack"][1]["function"] == "main",
                  "%s: with frame pointers the stack goes on to main" % name,
                  [f["name"] for f in s["stack"]])
        elif name == "mem_leaky_fp":
            check(len(s["stack"]) == 1 and s["stack"][0]["function"] == "leaky",
                  "%s: no frame walk here (32-bit arm): the call site only" % name,
                  [f["name"] for f in s["stack"]])
        if name == "mem_leaky":
            tot = valgrind_totals(prog) if PEERS and shutil.which("valgrind") else None
            if tot is None:
                skip("mem_leaky: valgrind totals", "valgrind is not installed or cannot run the program")
            else:
                t = rep["totals"]
                check((t["allocs"], t["frees"], t["bytes_allocated"]) == tot,
                      "mem_leaky: allocations, releases and bytes as valgrind counts them", (t, tot))
            text = lp("report", "--memory", out)
            check(text.returncode == 0 and "# unfreed at exit: 100 blocks, 4800 bytes" in text.stdout,
                  "mem_leaky: text report: unfreed at exit", text.stdout[-400:])
            rp, _ = lp.json("replay", "--format", "json", out)
            mem = [e for t in (rp or {}).get("threads", []) for e in t["events"] if e["type"] == "mem"]
            check(len([e for e in mem if e["op"] == "malloc" and e["caller"].startswith("leaky")]) == 100 and
                  len([e for e in mem if e["op"] == "free" and e["caller"].startswith("tidy")]) == 50,
                  "mem_leaky: replay --format json: 100 mallocs from leaky, 50 frees in tidy", len(mem))


def build_own(tmp, src, flags, cxx=False):
    out = os.path.join(tmp, os.path.splitext(os.path.basename(src))[0] + flags.replace(" ", "").replace("-", "_"))
    r = run(["g++" if cxx else "gcc", "-g"] + flags.split() + [src, "-o", out])
    if r.returncode:
        raise SystemExit("cannot build %s: %s" % (src, r.stderr))
    return out


def test_leaks_vs_peers(lp, tmp):
    """mem/leaks.c at -O0 and -O2: each leak site, its blocks and bytes as
    valgrind --leak-check=full and heaptrack find them."""
    expected = {"leak_a": (10, 1000), "leak_b": (3, 168), "leak_c": (1, 1000)}
    for flags in ("-O0", "-O2"):
        prog = build_own(tmp, os.path.join(MEM, "leaks.c"), flags)
        what = "leaks %s" % flags
        out = os.path.join(tmp, "leaks" + flags)
        r = lp.record(out, prog)
        rep, r2 = lp.memory(out) if r.returncode == 0 else (None, r)
        if not check(rep is not None, "%s: records and reports" % what, r2.stderr):
            continue
        ours = {f["function"]: (f["unfreed_objects"], f["unfreed_bytes"]) for f in rep["functions"]
                if f["unfreed_objects"]}
        for f, want in expected.items():
            check(ours.get(f) == want, "%s: %s leaves %d blocks, %d bytes" % (what, f, want[0], want[1]),
                  ours.get(f))
        check(counts(fn(rep, "leak_c"), "allocs", "frees") == (2, 1),
              "%s: leak_c: malloc, then realloc releasing it" % what, fn(rep, "leak_c"))
        check(counts(fn(rep, "tidy"), "allocs", "frees", "live_objects") == (20, 20, 0),
              "%s: tidy frees what it allocates" % what, fn(rep, "tidy"))
        # strdup's caller is lost to a frame-pointer walk through glibc: the
        # blocks are charged to strdup itself
        dup = [k for k in ours if "strdup" in k]
        check(len(dup) == 1 and ours[dup[0]] == (5, 60), "%s: strdup's 5 blocks of 12 bytes" % what, ours)
        vg = valgrind_errors(prog, leaks=True)
        if vg is None:
            skip("%s: valgrind" % what, "valgrind not installed")
        else:
            lost = {}
            for kind, blocks, nbytes, frames, _ in vg:
                user = [f for f in frames if f not in ("malloc", "calloc", "realloc")]
                lost["strdup" if any("strdup" in f for f in frames) else user[0] if user else "?"] = \
                    (blocks, nbytes)
            for f, want in expected.items():
                check(lost.get(f) == ours.get(f) == want, "%s: valgrind agrees on %s" % (what, f), (lost, ours))
            check(lost.get("strdup") == ours.get(dup[0] if dup else ""),
                  "%s: valgrind agrees on the strdup blocks" % what, lost)
            check(len(vg) == len(ours), "%s: as many leak sites as valgrind" % what, (vg, ours))
        ht = heaptrack_run(tmp, "leaks" + flags, prog)
        if ht is None:
            skip("%s: heaptrack" % what, "heaptrack not installed")
            continue
        leaks, calls = ht
        for f, (blocks, nbytes) in expected.items():
            got = leaks.get(f, ("", 0))
            check(got[1] == blocks and near(ht_bytes(got[0]), nbytes),
                  "%s: heaptrack agrees on %s" % (what, f), got)
        check(calls.get("tidy") == fn(rep, "tidy").get("allocs") == 20,
              "%s: heaptrack counts tidy's 20 allocations too" % what, calls.get("tidy"))


def test_realloc(lp, tmp, progs):
    """mem_realloc: realloc chains (NULL -> ... -> realloc(p, 0)) and every
    C allocation function; everything released; totals equal valgrind's."""
    prog = os.path.join(progs, "mem_realloc")
    out = os.path.join(tmp, "realloc")
    r = lp.record(out, prog)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_realloc: records and reports", r.stderr):
        return
    check(counts(fn(rep, "chain"), "allocs", "frees", "live_objects", "peak_bytes") == (11, 11, 0, 16384),
          "mem_realloc: chain: malloc and 10 reallocs up to 16384 bytes, all released", fn(rep, "chain"))
    check(counts(fn(rep, "edges"), "allocs", "frees", "live_objects") == (3, 3, 0),
          "mem_realloc: edges: realloc(NULL), reallocarray(NULL), malloc released by realloc(p, 0)",
          fn(rep, "edges"))
    check(counts(fn(rep, "family"), "allocs", "frees", "live_objects", "bytes_allocated") ==
          (5, 5, 0, 120 + 100 + 64 + 48 + 100), "mem_realloc: family: calloc and 4 aligned, all freed",
          fn(rep, "family"))
    check(rep["illegal"] == [] and rep["overlaps"] == [], "mem_realloc: nothing illegal, no overlap")
    if shutil.which("valgrind"):
        t, tot = rep["totals"], valgrind_totals(prog)
        check((t["allocs"], t["frees"], t["bytes_allocated"]) == tot,
              "mem_realloc: allocations, releases and bytes as valgrind counts them", (t, tot))
    ht = heaptrack_run(tmp, "realloc", prog)
    if ht:
        check(ht[1].get("chain") == 11 and ht[1].get("edges") == 3,
              "mem_realloc: heaptrack counts the same allocation calls", ht[1])


def test_threads(lp, tmp, progs):
    """mem_threads: two threads allocate, two others free them: merged by
    time, every block freed once, nothing illegal."""
    prog = os.path.join(progs, "mem_threads")
    out = os.path.join(tmp, "threads")
    r = lp.record(out, prog)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_threads: records and reports", r.stderr):
        return
    check(counts(fn(rep, "make"), "allocs", "frees", "live_objects", "bytes_allocated") == (200, 200, 0, 14400),
          "mem_threads: make: 200 x 72 bytes, each freed by another thread", fn(rep, "make"))
    check(rep["illegal"] == [] and rep["overlaps"] == [] and rep["totals"]["late_events"] == 0,
          "mem_threads: no illegal release, no overlap, nothing out of order", illegal(rep))
    ht = heaptrack_run(tmp, "threads", prog)
    if ht:
        check(ht[1].get("make") == 200, "mem_threads: heaptrack counts 200 allocations in make", ht[1])


def test_fork(lp, tmp, progs):
    """mem_fork: the child copies keep()'s 3 blocks at fork and frees its
    own work; the parent exits with the 3 blocks unfreed."""
    prog = os.path.join(progs, "mem_fork")
    out = os.path.join(tmp, "fork")
    r = lp.record(out, prog)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_fork: records and reports", r.stderr):
        return
    procs = sorted(rep["processes"], key=lambda p: p["pid"])
    check(len(procs) == 2, "mem_fork: two processes", procs)
    if len(procs) != 2:
        return
    parent, child = procs
    check(child.get("parent_image") == parent["image"] and child["inherited_objects"] == 3 and
          child["inherited_bytes"] == 168, "mem_fork: the child inherits 3 x 56 bytes", child)
    check(parent["exited"] and parent["unfreed_objects"] == 3 and parent["unfreed_bytes"] == 168,
          "mem_fork: the parent exits with its 3 blocks unfreed", parent)
    check(counts(fn(rep, "work"), "allocs", "frees", "live_objects") == (7, 7, 0),
          "mem_fork: work: 5 in the child, 2 in the parent, all freed", fn(rep, "work"))
    check(counts(fn(rep, "keep"), "allocs", "live_objects") == (3, 6),
          "mem_fork: keep: 3 allocations, live in both processes", fn(rep, "keep"))
    check(rep["illegal"] == [], "mem_fork: nothing illegal (each frees in its own address space)")


def test_fork_reuse(lp, tmp, progs):
    """mem_forkreuse: the parent allocates and frees after its fork, before
    the child's first heap operation; the child inherits the blocks as they
    were at the fork, so its malloc of the chunk the parent took meanwhile
    overlaps nothing, and its free of the block the parent freed meanwhile
    is legal."""
    out = os.path.join(tmp, "forkreuse")
    r = lp.record(out, os.path.join(progs, "mem_forkreuse"))
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_forkreuse: records and reports", r.stderr):
        return
    procs = sorted(rep["processes"], key=lambda p: p["image"])
    if not check(len(procs) == 2, "mem_forkreuse: two processes", procs):
        return
    parent, child = procs
    check(rep["overlaps"] == [] and rep["totals"]["overlaps"] == 0 and rep["illegal"] == [],
          "mem_forkreuse: no overlap, nothing illegal", (rep["overlaps"], illegal(rep)))
    check(child.get("parent_image") == parent["image"] and
          counts(child, "inherited_objects", "inherited_bytes") == (4, 192),
          "mem_forkreuse: the child inherits the 4 x 48 bytes live at the fork", child)
    check(child["exited"] and child["exit_status"] == 0 and
          counts(child, "live_objects", "unfreed_objects", "unfreed_bytes") == (3, 3, 128),
          "mem_forkreuse: the child exits with 2 x 48 and 32 bytes unfreed", child)
    check(parent["exited"] and counts(parent, "live_objects", "unfreed_objects") == (0, 0),
          "mem_forkreuse: the parent exits with nothing unfreed", parent)
    check(counts(fn(rep, "before"), "allocs", "frees", "unfreed_objects") == (5, 7, 2) and
          counts(fn(rep, "after"), "allocs", "frees") == (1, 1) and
          counts(fn(rep, "child_work"), "allocs", "frees", "unfreed_objects") == (1, 0, 1),
          "mem_forkreuse: per function", (fn(rep, "before"), fn(rep, "after"), fn(rep, "child_work")))


def test_sigreap(lp, tmp, progs):
    """mem_sigreap: 300 children reaped by a SIGCHLD handler that mostly
    interrupts the parent's own heap operations.  Each child's end is
    told, with its status 0, and nothing is lost: the handler's waits are
    written by the parent's next heap operation."""
    out = os.path.join(tmp, "sigreap")
    r = lp.record(out, os.path.join(progs, "mem_sigreap"))
    check(r.returncode == 0 and "lost" not in r.stderr, "mem_sigreap: exits 0, nothing lost",
          (r.returncode, r.stderr[-400:]))
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_sigreap: records and reports", r.stderr):
        return
    first = min(p["image"] for p in rep["processes"])
    kids = [p for p in rep["processes"] if p.get("parent_image") == first]
    unknown = [(p["pid"], p["exited"], p["exit_status"]) for p in kids if not (p["exited"] and p["exit_status"] == 0)]
    check(len(kids) == 300 and unknown == [], "mem_sigreap: 300 children, each ended with status 0",
          (len(kids), len(unknown), unknown[:3]))


def valgrind_in_use(cmd):
    """valgrind --trace-children=yes: each process's 'in use at exit'
    blocks, by pid; None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    r = run(["valgrind", "--trace-children=yes"] + cmd, timeout=300)
    return {int(m.group(1)): int(m.group(2).replace(",", "")) for m in
            re.finditer(r"==(\d+)==\s+in use at exit: [\d,]+ bytes in ([\d,]+) blocks", r.stderr)}


def test_fork_shell(lp, tmp):
    """A real shell's command substitutions: bash forks a child for each
    $(echo $i), which frees blocks it inherited and exits, while bash goes
    on allocating.  No overlap and nothing illegal in any child; each child
    ends with as many more blocks than the one before as under valgrind;
    no site is growing, neither in that short run nor in a loop of them
    for 3 s (each child's copies leave the growth samples when it exits),
    which is long enough to test."""
    bash = shutil.which("bash")
    if not bash:
        skip("fork_shell", "no bash")
        return
    loop = "for i in 1 2 3; do x=$(echo $i); done"
    out = os.path.join(tmp, "shell3")
    r = lp.record(out, bash, "-c", loop)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "fork_shell: records and reports", r.stderr):
        return
    procs = sorted(rep["processes"], key=lambda p: p["image"])
    parent = procs[0]
    kids = [p for p in procs if p.get("parent_image") == parent["image"]]
    check(len(procs) == 4 and len(kids) == 3 and all(p["exited"] and p["exit_status"] == 0 for p in procs),
          "fork_shell: bash and its 3 children, each exited 0", procs)
    check(rep["overlaps"] == [] and rep["totals"]["overlaps"] == 0 and rep["illegal"] == [],
          "fork_shell: no overlap, nothing illegal", (rep["totals"]["overlaps"], illegal(rep)))
    check(all(k["inherited_objects"] > 0 for k in kids) and
          all(k["unfreed_objects"] > k["inherited_objects"] for k in kids),
          "fork_shell: each child inherits bash's blocks and adds its own", kids)
    check([s["function"] for s in rep["sites"] if s["growing"]] == [], "fork_shell: no site growing",
          [s for s in rep["sites"] if s["growing"]][:2])
    vg = valgrind_in_use([bash, "-c", loop])
    if vg is not None and check(len(vg) == 4, "fork_shell: valgrind sees 4 processes", vg):
        theirs = [vg[p] for p in sorted(vg)][1:]
        ours = [k["unfreed_objects"] for k in kids]
        check([b - a for a, b in zip(ours, ours[1:])] == [b - a for a, b in zip(theirs, theirs[1:])],
              "fork_shell: each child ends with as many blocks more than the one before as valgrind says",
              (ours, theirs))
    out = os.path.join(tmp, "shell3s")
    # at least 3 s and at least 100 children, however slow the machine is
    r = lp.record(out, bash, "-c", "n=0; end=$((SECONDS + 3)); "
                  "while [ $SECONDS -lt $end ] || [ $n -lt 100 ]; do x=$(echo $SECONDS); n=$((n + 1)); done")
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "fork_shell 3 s: records and reports", r.stderr):
        return
    first = min(p["image"] for p in rep["processes"])
    kids = [p for p in rep["processes"] if p.get("parent_image") == first]
    check(len(kids) >= 100 and all(k["exited"] and k["exit_status"] == 0 for k in kids) and
          rep["totals"]["overlaps"] == 0 and rep["illegal"] == [],
          "fork_shell 3 s: at least 100 children, each exited 0; no overlap, nothing illegal",
          (len(kids), rep["totals"]["overlaps"], illegal(rep),
           [(k["pid"], k["exited"], k["exit_status"]) for k in kids if not (k["exited"] and k["exit_status"] == 0)][:3]))
    top = rep["sites"][0] if rep["sites"] else {}
    check(top.get("growth_samples", 0) >= 16 and
          top.get("growth_samples", 0) * rep["totals"]["sample_interval_ns"] >= 500000000,
          "fork_shell 3 s: the run is long enough to test growth", (top, rep["totals"]["sample_interval_ns"]))
    check([s["function"] for s in rep["sites"] if s["growing"]] == [], "fork_shell 3 s: no site growing",
          [(s["function"], s["growth_p"]) for s in rep["sites"] if s["growing"]][:3])


def churn_run(lp, tmp, prog, clock, k):
    """One recording of mem_churn3 and what is wrong with its report (an
    empty list when nothing)."""
    out = os.path.join(tmp, "churn%d" % k)
    r = lp("record", "-q", "--memory", "--clock", clock, "-o", out, "--", prog, timeout=300)
    if r.returncode:
        return ["record exit %d: %s" % (r.returncode, r.stderr[-300:])]
    rep, r = lp.memory(out)
    text = lp("report", "--memory", out).stdout
    shutil.rmtree(out, ignore_errors=True)
    if rep is None:
        return ["report: " + r.stderr[-300:]]
    bad, t = [], rep["totals"]
    got = counts(fn(rep, "churn_alloc"), "allocs", "frees", "live_objects", "unfreed_objects")
    if got != (999999, 999999, 0, 0):
        bad.append("churn_alloc allocs, frees, live, unfreed %s" % (got,))
    if (t["illegal"], t["overlaps"], t["late_events"], rep["lost_events"]) != (0, 0, 0, 0):
        bad.append("illegal %d overlaps %d late %d lost %d" % (t["illegal"], t["overlaps"], t["late_events"],
                                                             rep["lost_events"]))
    procs = rep["processes"]
    if len(procs) != 1 or not procs[0]["exited"] or procs[0]["unfreed_objects"] != t["unfreed_objects"]:
        bad.append("processes %s" % procs)
    if t["live_objects"] != t["unfreed_objects"] or t["live_bytes"] != t["unfreed_bytes"]:
        bad.append("%d live blocks but %d unfreed at exit" % (t["live_objects"], t["unfreed_objects"]))
    head = re.search(r"(\d+) live blocks \((\d+) bytes\)", text)
    tail = re.search(r"# unfreed at exit: (\d+) blocks, (\d+) bytes", text)
    if not head or not tail or head.groups() != tail.groups():
        bad.append("text: header %s, unfreed at exit %s" % (head and head.groups(), tail and tail.groups()))
    return bad


def test_churn(lp, tmp, progs):
    """mem_churn3 ten times, beside a CPU hog, with the counter clock and
    with CLOCK_MONOTONIC in turn: three threads hand each other a million
    blocks of 40 bytes and free them all (main's last heap operations come
    long before theirs).  Every run: churn_alloc 999999 allocations and
    releases, none live or unfreed; nothing illegal, no overlap, nothing
    late, nothing lost; what the process had live at its end is what is
    unfreed at exit, in the JSON and in the text report alike."""
    prog = os.path.join(progs, "mem_churn3")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    harness.started.append(hog)
    failures = []
    try:
        for k in range(10):
            clock = ("counter", "monotonic")[k % 2]
            bad = churn_run(lp, tmp, prog, clock, k)
            if bad:
                failures.append((k, clock, bad))
    finally:
        hog.kill()
        hog.wait()
    check(failures == [], "mem_churn3: 10 of 10 runs exact (%d failed)" % len(failures), failures[:3])


def test_exec(lp, tmp):
    """mem/execer.c: the blocks of the image before exec go with it; the
    new image's are unfreed at exit."""
    prog = build_own(tmp, os.path.join(MEM, "execer.c"), "-O2")
    out = os.path.join(tmp, "execer")
    r = lp.record(out, prog, "a")
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "execer: records and reports", r.stderr):
        return
    procs = sorted(rep["processes"], key=lambda p: p["image"])
    check(len(procs) == 2 and procs[0]["pid"] == procs[1]["pid"], "execer: two images of one pid", procs)
    if len(procs) != 2:
        return
    check(procs[0]["execed"] and not procs[0]["exited"] and procs[0]["live_objects"] == 0,
          "execer: the first image was replaced, its blocks dropped", procs[0])
    check(procs[1]["exited"] and procs[1]["exit_status"] == 0 and procs[1]["unfreed_objects"] == 2 and
          procs[1]["unfreed_bytes"] == 100, "execer: the second exits with 2 x 50 bytes unfreed", procs[1])
    t = rep["totals"]
    check((t["dropped_at_exec"], t["unfreed_objects"], t["live_objects"]) == (5, 2, 2),
          "execer: 5 dropped at exec, 2 unfreed", t)
    check(counts(fn(rep, "before_exec"), "allocs", "live_objects", "unfreed_objects") == (5, 0, 0),
          "execer: before_exec's 5 are not leaks", fn(rep, "before_exec"))
    check(counts(fn(rep, "after_exec"), "allocs", "live_objects", "unfreed_objects") == (2, 2, 2),
          "execer: after_exec's 2 are", fn(rep, "after_exec"))


def test_child_exit(lp, tmp):
    """mem/memrec_exit.c: a forked child that exits (exit, _exit), is killed
    or is orphaned ends its own process in the heap state with its own wait
    status; its blocks (3 x 24 of its own, 4 x 40 inherited) are unfreed at
    exit, apart from the parent's 4 x 40."""
    prog = build_own(tmp, os.path.join(MEM, "memrec_exit.c"), "-O2")
    for how, status in (("exit", 3 << 8), ("_exit", 3 << 8), ("kill", signal.SIGKILL), ("orphan", 3 << 8)):
        out = os.path.join(tmp, "child_" + how)
        r = lp.record(out, prog, how)
        rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
        if not check(rep is not None, "memrec_exit %s: records and reports" % how, r.stderr):
            continue
        procs = sorted(rep["processes"], key=lambda p: p["image"])
        if not check(len(procs) == 2, "memrec_exit %s: two processes" % how, procs):
            continue
        parent, child = procs
        check(parent["exited"] and parent["exit_status"] == 0 and
              counts(parent, "live_objects", "unfreed_objects", "unfreed_bytes") == (4, 4, 160),
              "memrec_exit %s: the parent exits 0 with 4 x 40 bytes unfreed" % how, parent)
        check(child.get("parent_image") == parent["image"] and child["exited"] and
              child["exit_status"] == status and
              counts(child, "live_objects", "unfreed_objects", "unfreed_bytes", "inherited_objects") ==
              (7, 7, 4 * 40 + 3 * 24, 4),
              "memrec_exit %s: the child ends with wait status %d, its 7 blocks unfreed" % (how, status), child)
        check(counts(fn(rep, "child_leak"), "allocs", "unfreed_objects", "unfreed_bytes") == (3, 3, 72) and
              counts(fn(rep, "parent_leak"), "allocs", "unfreed_objects", "unfreed_bytes") == (4, 8, 320),
              "memrec_exit %s: child_leak 3 unfreed, parent_leak 4 in each process" % how,
              (fn(rep, "child_leak"), fn(rep, "parent_leak")))
        t = rep["totals"]
        check((t["unfreed_objects"], t["unfreed_bytes"]) == (11, 160 + 232),
              "memrec_exit %s: totals: 11 blocks unfreed at exit" % how, t)


def reap_procs(lp, out, what, n):
    """The processes of a memrec_reap trace, by image, and the report."""
    rep, r = lp.memory(out)
    if not check(rep is not None, "%s: reports" % what, r.stderr):
        return None, None
    procs = sorted(rep["processes"], key=lambda p: p["image"])
    if not check(len(procs) == n, "%s: %d process images" % (what, n), procs):
        return None, None
    return procs, rep


def test_reaped_unseen(lp, tmp):
    """mem/memrec_reap.c: children whose end no wait interposer sees (the C
    library reaps them in system and pclose, the kernel when SIGCHLD is
    ignored or SA_NOCLDWAIT is set) are ended when the recorder finds them
    gone, with the exit status unknown, never invented: their blocks are
    unfreed at their end (3 x 24 of their own, 4 x 40 inherited by a forked
    one), the parent's 4 x 40 at its own exit (status 0)."""
    prog = build_own(tmp, os.path.join(MEM, "memrec_reap.c"), "-O2")
    for how in ("system", "popen"):
        what = "memrec_reap %s" % how
        out = os.path.join(tmp, "reap_" + how)
        r = lp.record(out, prog, how)
        if not check(r.returncode == 0, "%s: records; %s returned the child's status" % (what, how), r.stderr):
            continue
        procs, rep = reap_procs(lp, out, what, 3)
        if not procs:
            continue
        parent, shell, child = procs
        check(parent["exited"] and parent["exit_status"] == 0 and
              counts(parent, "unfreed_objects", "unfreed_bytes") == (4, 160),
              "%s: the parent exits 0 with 4 x 40 bytes unfreed" % what, parent)
        check(shell["execed"] and not shell["exited"] and shell["pid"] == child["pid"] and
              shell["live_objects"] == 0, "%s: the shell's image was replaced by exec" % what, shell)
        check(child["exited"] and child["exit_status"] is None and "parent_image" not in child and
              counts(child, "live_objects", "unfreed_objects", "unfreed_bytes") == (3, 3, 72),
              "%s: the child ended, status unknown, its 3 x 24 bytes unfreed" % what, child)
        check(counts(fn(rep, "child_leak"), "allocs", "unfreed_objects", "unfreed_bytes") == (3, 3, 72),
              "%s: child_leak's 3 blocks are unfreed at its end" % what, fn(rep, "child_leak"))
        text = lp("report", "--memory", out).stdout
        check("process %d (image %d): 3 operations, peak 72 bytes, ended (exit status unknown) with 3 blocks "
              "(72 bytes) unfreed" % (child["pid"], child["image"]) in text,
              "%s: the text report says the status is unknown" % what, text[-800:])
    for how in ("sigign", "nocldwait"):
        what = "memrec_reap %s" % how
        out = os.path.join(tmp, "reap_" + how)
        r = lp.record(out, prog, how)
        if not check(r.returncode == 0, "%s: records; waitpid got ECHILD" % what, r.stderr):
            continue
        procs, rep = reap_procs(lp, out, what, 2)
        if not procs:
            continue
        parent, child = procs
        check(parent["exited"] and parent["exit_status"] == 0 and
              counts(parent, "unfreed_objects", "unfreed_bytes") == (4, 160),
              "%s: the parent exits 0 with 4 x 40 bytes unfreed" % what, parent)
        check(child.get("parent_image") == parent["image"] and child["exited"] and child["exit_status"] is None and
              counts(child, "inherited_objects", "unfreed_objects", "unfreed_bytes") == (4, 7, 160 + 72),
              "%s: the kernel-reaped child ended, status unknown, its 7 blocks unfreed" % what, child)
        t = rep["totals"]
        check((t["unfreed_objects"], t["unfreed_bytes"], t["live_objects"]) == (11, 160 + 232, 11),
              "%s: totals: 11 blocks unfreed at exit, none left live" % what, t)
        x = lp("report", "--memory", "--format", "xml", out).stdout
        check(x.count('exit-status-unknown="true"') == 1 and x.count('exit-status="0"') == 1,
              "%s: the XML says the child's status is unknown" % what, x[-600:])
    # found while the parent runs on, not only at the end of the recording
    out = os.path.join(tmp, "reap_linger")
    rec = subprocess.Popen([lp.exe, "record", "-q", "--memory", "-o", out, "--", prog, "sigign", "linger"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4.5)
        rep, r = lp.memory(out)
        procs = [p for p in (rep or {}).get("processes", []) if p.get("exited")]
        check(rec.poll() is None and len(procs) == 1 and procs[0]["exit_status"] is None and
              procs[0]["unfreed_bytes"] >= 72,
              "memrec_reap sigign linger: the child is ended, status unknown, while the parent runs on",
              (rep or {}).get("processes", r.stderr))
    finally:
        check(rec.wait(timeout=30) == 0, "memrec_reap sigign linger: the recording ends with the program")


def test_wrap_reap(lp, tmp):
    """memrec_reap linked with the --wrap interposers: waitpid is wrapped
    too, so a forked child's wait status is known (3 << 8), with and without
    the preloaded interposers as well; a kernel-reaped child still ends with
    its status unknown."""
    r = lp("config", "--wrap-flags")
    if not check(r.returncode == 0, "config --wrap-flags", r.stderr):
        return
    prog = os.path.join(tmp, "memrec_reap_wrap")
    b = run(["gcc", "-g", "-O2", os.path.join(MEM, "memrec_reap.c"), "-o", prog, "-Wl,@" + r.stdout.strip()])
    if not check(b.returncode == 0, "memrec_reap builds with the --wrap flags", b.stderr):
        return
    for how, preload, status in (("fork", False, 3 << 8), ("fork", True, 3 << 8), ("sigign", False, None)):
        what = "memrec_reap --wrap %s%s" % (how, " (preloaded too)" if preload else "")
        out = os.path.join(tmp, "wrap_%s_%d" % (how, preload))
        r = lp("record", "-q", *(["--memory"] if preload else []), "-o", out, "--", prog, how)
        if not check(r.returncode == 0, "%s: records" % what, r.stderr):
            continue
        procs, rep = reap_procs(lp, out, what, 2)
        if not procs:
            continue
        parent, child = procs
        check(parent["exited"] and parent["exit_status"] == 0 and
              counts(parent, "unfreed_objects", "unfreed_bytes") == (4, 160),
              "%s: the parent exits 0 with 4 x 40 bytes unfreed" % what, parent)
        check(child.get("parent_image") == parent["image"] and child["exited"] and child["exit_status"] == status and
              counts(child, "unfreed_objects", "unfreed_bytes") == (7, 232),
              "%s: the child ends with status %s, its 7 blocks unfreed" % (what, status), child)


def test_cxx(lp, tmp, progs):
    """mem_cxx: every operator form released by its own family; a throwing
    new counted as failed; each mismatch argument named."""
    prog = os.path.join(progs, "mem_cxx")
    out = os.path.join(tmp, "cxx")
    r = lp.record(out, prog)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mem_cxx: records and reports", r.stderr):
        return
    for f, n in (("objects()", 10), ("arrays()", 5), ("nothrow()", 3), ("aligned()", 2)):
        check(counts(fn(rep, f), "allocs", "frees", "live_objects") == (n, n, 0),
              "mem_cxx: %s: %d allocated and released" % (f, n), fn(rep, f))
    check(fn(rep, "failing()").get("failed") == 1, "mem_cxx: the throwing new failed once", fn(rep, "failing()"))
    check(rep["illegal"] == [], "mem_cxx: nothing illegal", illegal(rep))
    for arg, want in (("free-new", ("free", "new")), ("delete-malloc", ("delete", "malloc")),
                      ("delete-array", ("delete", "new[]"))):
        out = os.path.join(tmp, "cxx-" + arg)
        r = lp.record(out, prog, arg)
        rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
        if not check(rep is not None, "mem_cxx %s: records and reports" % arg, r.stderr):
            continue
        il = illegal(rep)
        check(len(il) == 1 and il[0][0] == "mismatch" and (il[0][1], il[0][3]) == want,
              "mem_cxx %s: one mismatch, %s of %s" % (arg, want[0], want[1]), il)


def test_mismatch_vs_valgrind(lp, tmp):
    """mem/mismatch.cc: the six mismatched pairs, as valgrind names them."""
    prog = build_own(tmp, os.path.join(MEM, "mismatch.cc"), "-O2", cxx=True)
    out = os.path.join(tmp, "mismatch")
    r = lp.record(out, prog)
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "mismatch: records and reports", r.stderr):
        return
    ours = sorted((i["operation"], i["block"]["operation"], i["block"]["function"]) for i in rep["illegal"]
                  if i["kind"] == "mismatch")
    check(ours == sorted([("free", "new", "free_new()"), ("free", "new[]", "free_new_array()"),
                          ("delete", "malloc", "delete_malloc()"), ("delete", "new[]", "delete_new_array()"),
                          ("delete[]", "malloc", "array_malloc()"), ("delete[]", "new", "array_new()")]),
          "mismatch: each of the six pairs, with the allocating function", ours)
    vg = valgrind_errors(prog)
    if vg is None:
        skip("mismatch: valgrind", "valgrind not installed")
        return
    # valgrind's second stack is the block's allocation
    theirs = sorted(next((f for f in alloc if f.startswith(("free_", "delete_", "array_"))), "?")
                    for kind, _, _, _, alloc in vg if kind == "MismatchedFree")
    check(theirs == sorted(o[2] for o in ours), "mismatch: valgrind finds the same six", (theirs, ours))


def test_badfree(lp, tmp, progs):
    """mem_badfree: a double free, a free of a stack array and of an
    interior pointer; glibc aborts and the trace still has everything;
    with --keep-alive the program goes on and the release is marked kept.
    valgrind finds the same three."""
    prog = os.path.join(progs, "mem_badfree")
    want = {"double": ("double_free", "victim"), "stack": ("never_allocated", None),
            "interior": ("interior_pointer", "victim")}
    for arg, (kind, block_fn) in want.items():
        for keep in (False, True):
            what = "mem_badfree %s%s" % (arg, " --keep-alive" if keep else "")
            out = os.path.join(tmp, "bad-%s-%d" % (arg, keep))
            r = lp.record(out, prog, arg, opts=["--keep-alive"] if keep else [])
            check(r.returncode == (0 if keep else 128 + signal.SIGABRT),
                  "%s: exit %s" % (what, "0" if keep else "on SIGABRT"), r.returncode)
            rep, r = lp.memory(out)
            if not check(rep is not None, "%s: reports" % what, r.stderr):
                continue
            il = rep["illegal"]
            if not check(len(il) == 1 and il[0]["kind"] == kind and il[0]["function"] == "release" and
                         il[0]["kept"] == keep, "%s: one %s in release, kept %s" % (what, kind, keep), il):
                continue
            i = il[0]
            check(len(i["stack"]) >= 1 and i["stack"][0]["function"] == "release",
                  "%s: the release's stack" % what, i["stack"])
            if block_fn:
                check(i["block"]["function"] == block_fn and len(i["block"]["stack"]) >= 1,
                      "%s: the block's allocation in victim, with its stack" % what, i.get("block"))
            if kind == "double_free":
                fr = i.get("first_release", {})
                check(fr.get("function") == "release" and fr.get("time_ns", 0) < i["time_ns"],
                      "%s: the first release, earlier, with its stack" % what, fr)
            if kind == "interior_pointer":
                check(i["block"]["size"] == 64 and int(i["ptr"], 16) - int(i["block"]["ptr"], 16) == 16,
                      "%s: 16 bytes into the 64-byte block" % what, i)
        vg = valgrind_errors(prog, arg)
        if vg is not None:
            bad = [frames for kind_, _, _, frames, _ in vg if kind_ == "InvalidFree"]
            check(len(bad) == 1 and "release" in bad[0], "mem_badfree %s: valgrind finds one invalid free in "
                  "release" % arg, vg)


def children_of(pid):
    """Pids whose parent is pid (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(d))
    return out


def test_forever(lp, tmp, progs):
    """mem_forever never ends: killed after 3 s, its trace names grow() as
    growing (64 bytes per iteration) and churn() as not; snapshots at 1 s
    and at the end, and memdiff between them, say the same."""
    prog = os.path.join(progs, "mem_forever")
    out = os.path.join(tmp, "forever")
    rec = subprocess.Popen([lp.exe, "record", "-q", "--memory", "-o", out, "--", prog],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    kids = children_of(rec.pid)
    for k in kids:
        os.kill(k, signal.SIGKILL)
    try:
        rec.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rec.kill()
        rec.wait()
    check(len(kids) == 1, "mem_forever: killed after 3 s", kids)
    rep, r = lp.memory(out)
    if not check(rep is not None, "mem_forever: reports", r.stderr):
        return
    grow, churn = fn(rep, "grow"), fn(rep, "churn")
    check(grow.get("growing") is True and grow.get("growth_confidence", 0) >= 0.99,
          "mem_forever: grow is growing, confidence at least 0.99", grow)
    check(churn.get("growing") is False, "mem_forever: churn is not", churn)
    check(grow.get("live_objects") == grow.get("allocs") > 500 and grow.get("frees") == 0,
          "mem_forever: grow keeps every block", grow)
    check(churn.get("allocs", 0) - churn.get("frees", 0) <= 3, "mem_forever: churn frees all but the last",
          churn)
    first, last = rep["origin_ns"], rep["totals"]["peak_ns"]
    expect = grow.get("live_bytes", 0) * 1e9 / max(1, last - first)
    rate = grow.get("growth_bytes_per_s", 0)
    check(0.6 * expect < rate < 1.6 * expect, "mem_forever: the rate is about the leak's bytes per second",
          (rate, expect))
    s1, s2 = os.path.join(tmp, "s1.json"), os.path.join(tmp, "s2.json")
    r1, r2 = lp("snapshot", "--at", "1s", "-o", s1, out), lp("snapshot", "-o", s2, out)
    if not check(r1.returncode == 0 and r2.returncode == 0, "mem_forever: two snapshots", r1.stderr + r2.stderr):
        return
    a, b = json.load(open(s1)), json.load(open(s2))
    ga = [s for s in a["sites"] if s["function"] == "grow"]
    gb = [s for s in b["sites"] if s["function"] == "grow"]
    check(len(ga) == 1 and len(gb) == 1 and ga[0]["live_objects"] < gb[0]["live_objects"] and
          gb[0]["live_objects"] == grow["live_objects"],
          "mem_forever: grow has more live in the later snapshot, as many as the report", (ga, gb))
    d, r = lp.json("memdiff", "--format", "json", s1, s2)
    if check(d is not None, "mem_forever: memdiff", r.stderr):
        top = d["sites"][0] if d["sites"] else {}
        check(top.get("function") == "grow" and
              top.get("live_objects_change") == gb[0]["live_objects"] - ga[0]["live_objects"] and
              top.get("live_bytes_change") == 64 * top.get("live_objects_change"),
              "mem_forever: memdiff puts grow first, 64 bytes per object", top)


def test_fold(lp, tmp, progs):
    """mem_forever 2000 with --mem-fold: churn's short-lived blocks are
    folded and still counted; grow's are each recorded and growing."""
    prog = os.path.join(progs, "mem_forever")
    out = os.path.join(tmp, "fold")
    r = lp("record", "-q", "--memory", "--mem-fold", "50ms", "-o", out, "--", prog, "2000")
    if "--mem-fold" not in lp("record", "--help").stdout:
        skip("fold", "record has no --mem-fold")
        return
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "fold: records and reports", r.stderr):
        return
    churn, grow = fn(rep, "churn"), fn(rep, "grow")
    check(counts(churn, "allocs", "frees", "live_objects") == (6000, 6000, 0),
          "fold: churn: 3 x 2000 allocations and releases, folded ones included", churn)
    check(churn.get("folded", 0) >= 0.99 * 6000 and churn.get("folded_bytes") == 128 * churn.get("folded"),
          "fold: nearly all of churn's blocks folded, 128 bytes each", churn)
    check(rep["totals"]["folded"] == churn.get("folded") and rep["totals"]["fold_records"] > 0,
          "fold: the totals say how much was folded", rep["totals"])
    check(counts(grow, "allocs", "live_objects", "folded") == (2000, 2000, 0) and grow.get("growing"),
          "fold: grow's blocks each recorded, growing", grow)
    text = lp("report", "--memory", out).stdout
    check("# folded: %d short-lived blocks" % churn.get("folded", 0) in text, "fold: the text report says so")


def stream_events(lp, trace):
    """replay --format json: the threads, each with its events in stream order."""
    d, _ = lp.json("replay", "--format", "json", trace)
    return (d or {}).get("threads", [])


def test_fold_syscalls(lp, tmp):
    """mem/memrec_sysfold.c with --syscalls and --mem-fold: the syscall
    records pass the folding stage untouched and in order (the same as
    without folding), the short-lived blocks between them are folded, the
    kept ones each recorded, followed by their getppid."""
    prog = build_own(tmp, os.path.join(MEM, "memrec_sysfold.c"), "-O2")
    plain = os.path.join(tmp, "sysfold0")
    r0 = lp("record", "-q", "--memory", "--syscalls", "-o", plain, "--", prog, "1000")
    if r0.returncode and "cannot trace syscalls" in r0.stderr:
        skip("fold with syscalls", r0.stderr.strip().splitlines()[-1])
        return
    out = os.path.join(tmp, "sysfold")
    r = lp("record", "-q", "--memory", "--syscalls", "--mem-fold", "50ms", "-o", out, "--", prog, "1000")
    if not check(r0.returncode == 0 and r.returncode == 0, "memrec_sysfold: records with --syscalls, with and "
                 "without --mem-fold", r0.stderr + r.stderr):
        return
    t0, t1 = stream_events(lp, plain), stream_events(lp, out)
    if not check(len(t0) == 1 and len(t1) == 1, "memrec_sysfold: one thread each", (len(t0), len(t1))):
        return
    e0, e1 = t0[0]["events"], t1[0]["events"]
    sc0 = [e["name"] for e in e0 if e["type"] == "syscall"]
    sc1 = [e["name"] for e in e1 if e["type"] == "syscall"]
    check(sc1 == sc0 and sc1.count("getppid") == 1005,
          "memrec_sysfold: the same syscalls in the same order, 1005 getppid, with and without folding",
          (len(sc0), len(sc1)))
    # a syscall's times come from the kernel, the ring's from the counter
    # converted: a syscall right after a heap operation may start a few ns
    # "before" it, and replay lists a syscall at its end
    times = [e["time_ns"] for e in e1]
    back = [a - b for a, b in zip(times, times[1:]) if a > b]
    check(max(back, default=0) < 1000, "memrec_sysfold: the folded stream is in time order (within the two "
          "clocks' 1 us)", back)
    # the FOLD counts may come between: they are not heap operations
    kinds = [(e["type"], e.get("name") or e.get("op")) for e in e1 if e.get("op") != "fold"]
    keeps = [i for i, k in enumerate(kinds) if k == ("mem", "malloc") and
             [e for e in e1 if e.get("op") != "fold"][i]["caller"].startswith("keep")]
    check(len(keeps) == 5 and all(kinds[i + 1] == ("syscall", "getppid") for i in keeps),
          "memrec_sysfold: keep's 5 blocks each recorded, each followed by its getppid", keeps)
    rep, r = lp.memory(out)
    if not check(rep is not None, "memrec_sysfold: reports", r.stderr):
        return
    churn = [f for f in rep["functions"] if f["function"] in ("churn", "main") and f["allocs"] == 1000]
    frees = len([e for e in e1 if e["type"] == "mem" and e["op"] == "free"])
    check(len(churn) == 1 and counts(churn[0], "allocs", "frees", "live_objects") == (1000, 1000, 0) and
          churn[0].get("folded", 0) >= 990 and churn[0]["folded"] + frees == 1000,
          "memrec_sysfold: churn's 1000 blocks: folded or recorded, none live", (churn, frees))
    check(counts(fn(rep, "keep"), "allocs", "live_objects", "folded") == (5, 5, 0),
          "memrec_sysfold: keep's 5 blocks live", fn(rep, "keep"))


def test_fold_cross_thread(lp, tmp):
    """mem/memrec_xfree.c with --mem-fold 250ms: blocks made by two threads and
    freed at once by two others fold (all but a few that go out before they
    are paired), and are still counted; the 5 blocks another thread frees
    at least 600 ms later do not fold; nothing freed stays live, nothing is
    illegal.  The program starts its work only once every thread has its
    ring and the recorder has them all, and hands over one block at a time:
    how long a block lives does not depend on how soon a thread was
    scheduled."""
    prog = build_own(tmp, os.path.join(MEM, "memrec_xfree.c"), "-O2 -pthread")
    out = os.path.join(tmp, "xfree")
    r = lp("record", "-q", "--memory", "--mem-fold", "250ms", "-o", out, "--", prog, "2000")
    rep, r = lp.memory(out) if r.returncode == 0 else (None, r)
    if not check(rep is not None, "memrec_xfree: records and reports", r.stderr):
        return
    xmake, xhold = fn(rep, "xmake"), fn(rep, "xhold")
    threads = stream_events(lp, out)
    mem = [e for t in threads for e in t["events"] if e["type"] == "mem"]
    made = set(e["ptr"] for e in mem if e["op"] == "malloc" and e["caller"].startswith("xmake"))
    recorded = len([e for e in mem if e["op"] == "malloc" and e["caller"].startswith("xmake")])
    freed = len([e for e in mem if e["op"] == "free" and e["ptr"] in made])
    check(counts(xmake, "allocs", "frees", "live_objects") == (4000, 4000, 0),
          "memrec_xfree: xmake: 4000 blocks made and freed, none live", xmake)
    check(xmake.get("folded", 0) >= 0.99 * 4000 and xmake["folded"] + recorded == 4000 and
          xmake.get("folded_bytes") == 56 * xmake["folded"],
          "memrec_xfree: nearly all of xmake's blocks folded across threads, the rest recorded",
          (xmake.get("folded"), recorded))
    check(freed <= recorded, "memrec_xfree: no release recorded of a block folded", (freed, recorded))
    check(counts(xhold, "allocs", "frees", "live_objects", "folded") == (5, 5, 0, 0),
          "memrec_xfree: xhold: 5 blocks freed 600 ms later by another thread, not folded", xhold)
    check(counts(fn(rep, "warm"), "allocs", "frees", "live_objects") == (5, 5, 0),
          "memrec_xfree: warm: one block per thread but main", fn(rep, "warm"))
    check(rep["illegal"] == [] and rep["overlaps"] == [] and rep["totals"]["late_events"] == 0,
          "memrec_xfree: nothing illegal, no overlap, nothing out of order", illegal(rep))
    check(rep["totals"]["folded"] == sum(f.get("folded", 0) for f in rep["functions"]) >= xmake.get("folded", 0),
          "memrec_xfree: the totals count the folded blocks", rep["totals"])


def test_ring_default(lp, tmp):
    """record --memory takes a 4M ring per thread unless -b says otherwise;
    without --memory the ring is 1M (the trace's meta says which)."""
    def ring(opts):
        out = os.path.join(tmp, "ring")
        r = lp("record", "-q", *opts, "-o", out, "--", "/bin/true")
        m = re.search(rb"buffer_size=(\d+)", open(os.path.join(out, "data"), "rb").read()) if not r.returncode \
            else None
        return int(m.group(1)) if m else None
    check(ring(["--memory"]) == 4 << 20, "ring: 4M with --memory")
    check(ring(["--memory", "-b", "1M"]) == 1 << 20, "ring: -b 1M overrides it")
    check(ring([]) == 1 << 20, "ring: 1M without --memory")
    check("with --memory 4M" in lp("record", "--help").stdout, "ring: the help says so")


def setup(build):
    lp = Layerprof(build)
    progs = os.path.join(build, "tests")
    h = lp("record", "--help")
    if "--memory" not in h.stdout or not os.path.exists(os.path.join(progs, "mem_leaky")):
        skip("memory tracer", "this build has no record --memory or no mem_* programs")
        return None
    return (lp, progs)


# Each group takes (lp, progs, tmp).
GROUPS = {
    "leaky": lambda lp, progs, tmp: test_leaky(lp, tmp, progs),
    "leaks_vs_peers": lambda lp, progs, tmp: test_leaks_vs_peers(lp, tmp),
    "realloc": lambda lp, progs, tmp: test_realloc(lp, tmp, progs),
    "threads": lambda lp, progs, tmp: test_threads(lp, tmp, progs),
    "churn": lambda lp, progs, tmp: test_churn(lp, tmp, progs),
    "fork": lambda lp, progs, tmp: test_fork(lp, tmp, progs),
    "fork_reuse": lambda lp, progs, tmp: test_fork_reuse(lp, tmp, progs),
    "fork_shell": lambda lp, progs, tmp: test_fork_shell(lp, tmp),
    "sigreap": lambda lp, progs, tmp: test_sigreap(lp, tmp, progs),
    "exec": lambda lp, progs, tmp: test_exec(lp, tmp),
    "child_exit": lambda lp, progs, tmp: test_child_exit(lp, tmp),
    "reaped_unseen": lambda lp, progs, tmp: test_reaped_unseen(lp, tmp),
    "wrap_reap": lambda lp, progs, tmp: test_wrap_reap(lp, tmp),
    "cxx": lambda lp, progs, tmp: test_cxx(lp, tmp, progs),
    "mismatch_vs_valgrind": lambda lp, progs, tmp: test_mismatch_vs_valgrind(lp, tmp),
    "badfree": lambda lp, progs, tmp: test_badfree(lp, tmp, progs),
    "forever": lambda lp, progs, tmp: test_forever(lp, tmp, progs),
    "fold": lambda lp, progs, tmp: test_fold(lp, tmp, progs),
    "fold_syscalls": lambda lp, progs, tmp: test_fold_syscalls(lp, tmp),
    "memrec_xfree": lambda lp, progs, tmp: test_fold_cross_thread(lp, tmp),
    "ring_default": lambda lp, progs, tmp: test_ring_default(lp, tmp),
}


def main():
    return harness.run_groups(GROUPS, setup, "lp-memory-")


if __name__ == "__main__":
    sys.exit(main())
