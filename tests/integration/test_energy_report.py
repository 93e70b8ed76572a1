#!/usr/bin/env python3
"""`report --energy --model M` on real programs: tests/programs/ctr_pages.c
(main and two threads touching pages and spinning; built with
-finstrument-functions at -O0) recorded with
`--counters=task-clock,page-faults,context-switches`, and a hand-written
model with known coefficients for those events.  The energies are computed
here with the formulas of docs/energy.md ("Energy per program, thread and
function") from numbers other commands give: the counts of `report
--counters --format json` (program, CPUs, threads, functions' self and
inclusive), the functions' self and inclusive times of `report --format
json`; the spans (the program's and each thread's first to last event) are
report --energy's own, held against the events `replay --format json`
shows.  Equal to the printed precision (nanojoules).  Also: the refusals
(a model needing events the trace lacks, a trace without counters, a bad
model file, bad options) with their one line and exit status, a model of
another architecture (a warning, the report made), and the meter's joules
beside the estimate when the trace has power samples (record --power with
a `cmd:` source of a constant 7 W; skipped when record has no --power).

usage: test_energy_report.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

EVENTS = "task-clock,page-faults,context-switches"
# The model: watts = C0 + sum coef * events/s, CPUS online CPUs.
C0 = 1.5
COEFS = {"task-clock": 2.0e-9, "page-faults": 4.0e-5, "context-switches": 1.0e-4}
CPUS = 2
# JSON joules have 9 decimals: equal within one unit of the last, as the
# two sides may round a sum differently.
J_TOLERANCE = 1.5e-9
# A constant meter: its joules over a span are exactly WATTS * seconds.
METER_WATTS = 7.0


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, **kw)


def model_doc(arch, terms=None, c0=C0, cpus=CPUS):
    """A model file's JSON (docs/energy.md, "The model file")."""
    terms = COEFS if terms is None else terms
    return {
        "format": "layerprof-energy-model",
        "version": 1,
        "source": "test",
        "created": "2026-01-01T00:00:00Z",
        "machine": {"arch": arch, "cpu": "test cpu", "kernel": platform.release(), "host": "test", "cpus": cpus},
        "const": {"coef": c0, "se": 0.0, "t": 0.0, "p": 0.0},
        "terms": [{"event": n, "coef": c, "se": 0.0, "t": 0.0, "p": 0.0} for n, c in terms.items()],
        "dropped": [],
        "fit": {"r2": 1.0, "adj_r2": 1.0, "f": 0.0, "f_p": 0.0, "rmse": 0.0, "n": 0, "alpha": 0.05},
        "cv": {"folds": 0, "mean_abs_pct": 0.0, "max_abs_pct": 0.0},
        "training": {"programs": 0, "seconds": 0.0, "seed": 1, "segments": 0},
    }


def write_model(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def energy(values, ns, share):
    """The formula: c0 * seconds * share + sum coef * count, in the order
    the report sums (the constant, then the terms in the model's order)."""
    j = C0 * (ns / 1e9) * share
    for name, coef in COEFS.items():
        j += coef * values[name]
    return j


def near(got, want):
    return got is not None and abs(got - want) <= J_TOLERANCE


class Env:
    def __init__(self, build):
        self.build = build
        self.exe = os.path.join(build, "host", "layerprof")
        self.cc = os.environ.get("CC") or "cc"
        self.progs = {}

    def prog(self, tmp, name="ctr_pages"):
        if name not in self.progs:
            out = os.path.join(tmp, name)
            r = run([self.cc, "-std=c11", "-g", "-pthread", "-O0", "-finstrument-functions", "-o", out,
                     os.path.join(PROGRAMS, name + ".c")])
            if r.returncode:
                raise RuntimeError("cannot build %s: %s" % (name, r.stderr))
            self.progs[name] = out
        return self.progs[name]

    def record(self, out, prog, opts):
        r = run([self.exe, "record", "-q"] + opts + ["-o", out, "--", prog])
        if not os.path.exists(os.path.join(out, "data")):
            raise RuntimeError("record made no trace: " + r.stderr)
        return r

    def json(self, args):
        r = run([self.exe] + args)
        if r.returncode:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
        return json.loads(r.stdout)


def group_estimate(env, tmp):
    prog = env.prog(tmp)
    trace = os.path.join(tmp, "est")
    env.record(trace, prog, ["--counters=" + EVENTS])
    model = write_model(os.path.join(tmp, "model.json"), model_doc(platform.machine()))
    rep = env.json(["report", "--energy", "--model", model, "--format", "json", trace])
    ctr = env.json(["report", "--counters", "--format", "json", trace])
    flat = env.json(["report", "--format", "json", trace])
    replay = env.json(["replay", "--format", "json", trace])
    check(rep["warnings"] == [], "estimate: no warning with a model of this architecture", rep["warnings"])
    check(rep["cpus"] == CPUS, "estimate: the constant divided among the model's CPUs", rep["cpus"])

    # spans: report --energy's, within the events replay shows
    seen = {}
    for t in replay["threads"]:
        times = [e["time_ns"] for e in t["events"]]
        seen[t["tid"]] = (min(times), max(times))
    threads = {t["tid"]: t for t in rep["threads"]}
    check(set(threads) == set(seen), "estimate: a row per thread", (sorted(threads), sorted(seen)))
    for tid, (lo, hi) in sorted(seen.items()):
        t = threads.get(tid)
        check(t and t["first_ns"] <= lo and t["last_ns"] == hi and t["estimated"]["ns"] == hi - t["first_ns"],
              "estimate: thread %d's lifetime: its first to its last event" % tid, (t and t["first_ns"], lo, hi))
    p = rep["program"]
    span = p["last_ns"] - p["first_ns"]
    check(p["first_ns"] == min(t["first_ns"] for t in rep["threads"]) and
          p["last_ns"] == max(t["last_ns"] for t in rep["threads"]) and p["estimated"]["ns"] == span,
          "estimate: the program's span: its first to its last event", (p["first_ns"], p["last_ns"]))

    # the program
    want = energy(ctr["program"]["values"], span, 1.0)
    check(ctr["program"]["source"] == "process" and near(p["estimated"]["joules"], want),
          "estimate: the program's joules from the recorder's totals", (p["estimated"]["joules"], want))
    check(near(p["estimated"]["constant_joules"], C0 * span / 1e9),
          "estimate: the program's constant is c0 x its span", p["estimated"])
    check(abs(p["estimated"]["watts"] - want / (span / 1e9)) <= 2e-6,
          "estimate: the program's mean watts", (p["estimated"]["watts"], want / (span / 1e9)))

    # per CPU
    cpus = {c["cpu"]: c for c in ctr["cpus"]}
    check(len(rep["per_cpu"]) == len(cpus) and len(cpus) > 0, "estimate: a row per CPU", len(rep["per_cpu"]))
    for row in rep["per_cpu"]:
        want = energy(cpus[row["cpu"]]["values"], span, 1.0 / CPUS)
        check(near(row["estimated"]["joules"], want), "estimate: CPU %d's joules" % row["cpu"],
              (row["estimated"]["joules"], want))

    # per thread, their sum and the difference
    ctr_threads = {t["tid"]: t for t in ctr["threads"]}
    total, const = 0.0, 0.0
    for tid, t in sorted(threads.items()):
        life = t["last_ns"] - t["first_ns"]
        want = energy(ctr_threads[tid]["values"], life, 1.0 / CPUS)
        total += want
        const += C0 * (life / 1e9) / CPUS
        check(near(t["estimated"]["joules"], want), "estimate: thread %d's joules" % tid,
              (t["estimated"]["joules"], want))
    check(near(p["threads"]["joules"], total), "estimate: the threads' sum", (p["threads"]["joules"], total))
    check(near(p["difference"]["constant_joules"], C0 * span / 1e9 - const),
          "estimate: the difference's constant: the constant of CPUs no thread used", p["difference"])
    check(near(p["difference"]["joules"], p["estimated"]["joules"] - p["threads"]["joules"]),
          "estimate: the difference is the program less its threads", p["difference"])

    # per function: counts of report --counters, times of the flat profile
    cfns = {f["name"]: f for f in ctr["functions"]}
    tfns = {f["name"]: f for f in flat["functions"]}
    names = [f["name"] for f in rep["functions"]]
    check(sorted(names) == sorted(cfns) and {"main", "spin", "touch_pages", "worker"} <= set(names),
          "estimate: a row per function", names)
    for f in rep["functions"]:
        c, t = cfns.get(f["name"]), tfns.get(f["name"])
        if not (c and t):
            continue
        for kind, counts, ns in (("inclusive", c["inclusive"], t["total_ns"]), ("self", c["self"], t["self_ns"])):
            want = energy(counts, ns, 1.0 / CPUS)
            check(f[kind]["ns"] == ns and near(f[kind]["joules"], want),
                  "estimate: %s's %s joules" % (f["name"], kind), (f[kind], ns, want))
    incl = [f["inclusive"]["joules"] for f in rep["functions"]]
    check(incl == sorted(incl, reverse=True), "estimate: sorted by inclusive energy", incl)
    rep_self = env.json(["report", "--energy", "--model", model, "--format", "json", "-s", "self", trace])
    self_j = [f["self"]["joules"] for f in rep_self["functions"]]
    check(self_j == sorted(self_j, reverse=True), "estimate: -s self sorts by self energy", self_j)

    # -t: a row per function and thread, from the per-thread counts and times
    rep_t = env.json(["report", "--energy", "--model", model, "--format", "json", "-t", trace])
    cfns = {(f["name"], f["tid"]): f for f in env.json(["report", "--counters", "-t", "--format", "json",
                                                         trace])["functions"]}
    tfns = {(f["name"], f["tid"]): f for f in env.json(["report", "-t", "--format", "json", trace])["functions"]}
    keys = sorted((f["name"], f["tid"]) for f in rep_t["functions"])
    check(keys == sorted(cfns) and len({tid for _, tid in keys}) == 3, "estimate -t: a row per function and thread",
          keys)
    bad = []
    for f in rep_t["functions"]:
        c, t = cfns.get((f["name"], f["tid"])), tfns.get((f["name"], f["tid"]))
        for kind, counts, ns in (("inclusive", c["inclusive"], t["total_ns"]), ("self", c["self"], t["self_ns"])):
            want = energy(counts, ns, 1.0 / CPUS)
            if not (f[kind]["ns"] == ns and near(f[kind]["joules"], want)):
                bad.append((f["name"], f["tid"], kind, f[kind], ns, want))
    check(not bad, "estimate -t: each function's joules on each thread", bad)

    # the text: the same numbers, printed to the microjoule
    r = run([env.exe, "report", "--energy", "--model", model, trace])
    want_line = "%-28s %14.6f" % ("estimated", p["estimated"]["joules"])
    check(r.returncode == 0 and want_line in r.stdout, "estimate: the text's program line", want_line)
    check("each thread's constant share is c0 / %d × its lifetime (the paper's division of the constant among "
          "the CPUs)" % CPUS in r.stdout and "the constant of CPUs no thread of the program used" in r.stdout,
          "estimate: the text says how the constant is divided", r.stdout[:600])
    check(" spin\n" in r.stdout and " touch_pages\n" in r.stdout, "estimate: the text's functions")


def group_refuse(env, tmp):
    prog = env.prog(tmp)
    model = write_model(os.path.join(tmp, "model.json"), model_doc(platform.machine()))
    # a model needing events the trace lacks
    trace = os.path.join(tmp, "fewer")
    env.record(trace, prog, ["--counters=task-clock,page-faults"])
    need = write_model(os.path.join(tmp, "need.json"),
                       model_doc(platform.machine(), {"instructions": 1e-9, "cycles": 1e-9, "task-clock": 1e-9}))
    r = run([env.exe, "report", "--energy", "--model", need, trace])
    want = ("layerprof report: the model needs instructions, cycles; the trace has task-clock, page-faults "
            "(record it with --counters=instructions,cycles,task-clock)\n")
    check(r.returncode == 1 and r.stderr == want and r.stdout == "",
          "refuse: the events the model needs, named, exit 1", (r.returncode, r.stderr))
    # a trace without counters
    trace = os.path.join(tmp, "plain")
    env.record(trace, prog, [])
    r = run([env.exe, "report", "--energy", "--model", model, trace])
    check(r.returncode == 1 and r.stderr == "layerprof report: the trace '%s' was not recorded with --counters\n" %
          trace and r.stdout == "", "refuse: a trace without counters, exit 1", (r.returncode, r.stderr))
    # a bad model file
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("not json\n")
    r = run([env.exe, "report", "--energy", "--model", bad, trace])
    check(r.returncode == 1 and r.stderr.startswith("layerprof report: ") and r.stderr.count("\n") == 1,
          "refuse: a bad model file, one line, exit 1", (r.returncode, r.stderr))
    # bad options
    for args, what in ((["--energy"], "--energy without --model"), (["--model", model], "--model without --energy"),
                       (["--energy", "--model", model, "--counters"], "--energy with --counters"),
                       (["--energy", "--model", model, "--format", "xml"], "--energy as xml"),
                       (["--energy", "--model", model, "-s", "avg"], "--energy with -s avg")):
        r = run([env.exe, "report"] + args + [trace])
        check(r.returncode == 2 and r.stderr.count("\n") == 1, "refuse: %s, exit 2" % what,
              (r.returncode, r.stderr))
    r = run([env.exe, "report", "--energy", "--model", model, os.path.join(tmp, "missing")])
    check(r.returncode == 3, "refuse: a missing trace, exit 3", (r.returncode, r.stderr))


def group_machine(env, tmp):
    prog = env.prog(tmp)
    trace = os.path.join(tmp, "machine")
    env.record(trace, prog, ["--counters=" + EVENTS])
    arch = "aarch64" if platform.machine() != "aarch64" else "x86_64"
    model = write_model(os.path.join(tmp, "other.json"), model_doc(arch))
    r = run([env.exe, "report", "--energy", "--model", model, "--format", "json", trace])
    warn = "the model was made on %s (test cpu), the trace recorded on %s: its numbers may not hold" % (
        arch, platform.machine())
    check(r.returncode == 0 and r.stderr == "layerprof report: warning: %s\n" % warn,
          "machine: a model of another architecture: one warning line", (r.returncode, r.stderr))
    check(r.returncode == 0 and json.loads(r.stdout)["warnings"] == [warn], "machine: the warning in the JSON")


def group_measured(env, tmp):
    prog = env.prog(tmp)
    trace = os.path.join(tmp, "power")
    r = run([env.exe, "record", "-q", "--counters=" + EVENTS, "--power=cmd:printf %g" % METER_WATTS,
             "--power-interval", "10", "-o", trace, "--", prog])
    if not os.path.exists(os.path.join(trace, "data")):
        skip("measured", "record --power made no trace here: " + r.stderr.strip().split("\n")[0])
        return
    model = write_model(os.path.join(tmp, "model.json"), model_doc(platform.machine()))
    rep = env.json(["report", "--energy", "--model", model, "--format", "json", trace])
    p = rep["program"]
    if not p["measured"]:
        skip("measured", "the trace has no power samples")
        return
    span = (p["last_ns"] - p["first_ns"]) / 1e9
    m = p["measured"][0]
    check(abs(m["joules"] - METER_WATTS * span) <= 1e-6 * METER_WATTS * span + J_TOLERANCE,
          "measured: a constant %g W meter's joules over the program's span" % METER_WATTS, (m, span))
    err = (p["estimated"]["joules"] - m["joules"]) / m["joules"] * 100
    check(abs(m["error_pct"] - err) <= 1e-3, "measured: the estimate's error", (m["error_pct"], err))
    r = run([env.exe, "report", "--energy", "--model", model, trace])
    check(r.returncode == 0 and "measured (" in r.stdout and "estimate's error" in r.stdout,
          "measured: the text's measured line", r.stdout[:800])


GROUPS = {
    "estimate": group_estimate,
    "refuse": group_refuse,
    "machine": group_machine,
    "measured": group_measured,
}


def setup(build):
    env = Env(build)
    if not os.path.exists(env.exe):
        skip("energy report", "no layerprof in %s" % build)
        return None
    probe = run([env.exe, "record", "-q", "--counters=task-clock", "-o", os.devnull + "/x", "--", "true"])
    if "no counter can be opened" in probe.stderr:
        skip("energy report", "this kernel counts no software event: " + probe.stderr.strip())
        return None
    return (env,)


if __name__ == "__main__":
    sys.exit(harness.run_groups(GROUPS, setup, prefix="layerprof-energy-report-"))
