#!/usr/bin/env python3
"""The automatic optimiser, `layerprof tune`, with real programs: the
strategies on tests/tools/costsurface, whose run time is a known function
of its arguments (SCALE x (20 + 8 ((X-3)^2 + (Y-2)^2)) ms, best (3, 2),
neighbours at least 8 x SCALE ms apart), so that what each strategy tries
and finds is known exactly: grid (every configuration in order), greedy
(the configuration order of the paper's ascent, exact), pattern (from the
middle and from a corner, with step halving), corun (two programs at once,
the time of the last to end); the text, JSON and HTML outputs; the
producer-consumer strategy on examples/tune/mmmt, whose verdict line must be
the one `report --sync` gives for the same trace; energy objectives with a
model written here (the model's formula applied to the counted events: a
constant-only model makes energy = c0 x time exactly) and with a `cmd:`
power source of constant watts; bad inputs refused with one line.

Timings are never asserted: only which configurations are tried and which
is best, on a surface whose differences (SCALE 3, 6 for the energy objective: 24 ms or more between
neighbours, 22 % or more) are far above the noise the test allows (--noise
11: ties within it go to the first in order).

usage: test_tune.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

SCALE = "3"
# the noise the searches allow: half the smallest relative step of the
# surface on the greedy path (28 -> 20 and 36 -> 28: 22 %)
NOISE = ["--noise", "11", "--repeat", "3", "--max-repeat", "5"]
# the energy objective's runs are counted from outside (runmeasure: the
# program held before its exec while its counters are opened), which adds
# 10-20 ms to each run, more on a loaded machine: a longer surface keeps
# the steps far above that
ENERGY_SCALE = "6"


def cost(x, y):
    return 20 + 8 * ((x - 3) ** 2 + (y - 2) ** 2)


class Env:
    def __init__(self, build):
        self.exe = os.path.join(build, "host", "layerprof")
        self.costsurface = os.path.join(build, "tests", "costsurface")
        self.examples = os.path.join(build, "examples", "tune")

    def run(self, *args, timeout=300):
        return subprocess.run([self.exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)

    def tune_json(self, what, *args):
        """tune --format json; the document, or None after a failed check."""
        r = self.run("tune", "--format", "json", *args)
        if not check(r.returncode == 0, "%s: exit 0" % what, r.stderr[-600:]):
            return None
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            check(False, "%s: the output is JSON" % what, "%s: %s" % (e, r.stdout[:300]))
            return None


def order(doc, names=("X", "Y")):
    return [tuple(int(c["params"][n]) for n in names) for c in doc["configs"]]


def best(doc, names=("X", "Y")):
    return tuple(int(doc["best"]["params"][n]) for n in names)


def surface(env, scale=SCALE):
    return ["--", env.costsurface, "{X}", "{Y}", scale]


def group_grid(env, tmp):
    doc = env.tune_json("grid", "--strategy", "grid", "--param", "X=1..5", "--param", "Y=1..4", *NOISE,
                        *surface(env))
    if not doc:
        return
    want = [(x, y) for x in range(1, 6) for y in range(1, 5)]
    check(order(doc) == want, "grid: the 20 configurations in order, the last parameter fastest", order(doc))
    check(best(doc) == (3, 2), "grid: best X=3 Y=2", doc.get("best"))
    check(doc["configurations"] == 20 and doc["stop"] == "every configuration was run",
          "grid: 20 configurations, stopped at the end", (doc["configurations"], doc["stop"]))
    check(all(c["runs"] >= 3 and c["status"] == "ok" for c in doc["configs"]) and doc["runs"] >= 60,
          "grid: each run at least --repeat times", doc["runs"])
    # the budget cuts the grid
    doc = env.tune_json("grid --budget", "--strategy", "grid", "--budget", "6", "--repeat", "1", "--param",
                        "X=1..5", "--param", "Y=1..4", *surface(env))
    if doc:
        check(doc["configurations"] == 6 and doc["budget_hit"] and "budget" in doc["stop"],
              "grid --budget 6: 6 configurations, the budget said", (doc["configurations"], doc["stop"]))


# The greedy ascent from (1, 1): one step up in each parameter, to the best
# of them while it improves; (3, 1) and (2, 2) tie (28): the first wins.
GREEDY_ORDER = [(1, 1), (2, 1), (1, 2), (3, 1), (2, 2), (4, 1), (3, 2), (4, 2), (3, 3)]


def group_greedy(env, tmp):
    doc = env.tune_json("greedy", "--param", "X=1..5", "--param", "Y=1..4", *NOISE, *surface(env))
    if not doc:
        return
    check(doc["strategy"] == "greedy", "greedy is the default strategy", doc["strategy"])
    check(order(doc) == GREEDY_ORDER, "greedy: the configuration order is exact", order(doc))
    check(best(doc) == (3, 2), "greedy: best X=3 Y=2", doc.get("best"))
    base = tuple(int(doc["baseline"]["params"][n]) for n in ("X", "Y"))
    check(base == (1, 1), "greedy: the baseline is the first configuration", base)
    # time gain: (60 - 20) / 60 of the sleep; the start and end of each run
    # add to both, so only its sign is held
    check(doc["gain"]["time_pct"] > 20 and doc["gain"]["energy_pct"] is None,
          "greedy: a gain in time over the baseline, no energy", doc["gain"])
    check(doc["stop"] == "no step up in any parameter improves", "greedy: why it stopped", doc["stop"])


def group_pattern(env, tmp):
    # from the middle of a larger space: steps of 2 first, then 1
    doc = env.tune_json("pattern", "--strategy", "pattern", "--param", "X=1..9", "--param", "Y=1..8", *NOISE,
                        *surface(env))
    if doc:
        o = order(doc)
        check(o[0] == (5, 4), "pattern: starts in the middle (X=5 Y=4)", o[:3])
        check(best(doc) == (3, 2), "pattern: best X=3 Y=2", doc.get("best"))
        check((7, 4) in o and (5, 6) in o, "pattern: the first steps are a quarter of the ranges (2)", o)
        check({(4, 2), (2, 2), (3, 3), (3, 1)} <= set(o), "pattern: steps of 1 around the best at the end", o)
        check(len(o) < 9 * 8, "pattern: fewer configurations than the grid", len(o))
    # from a corner given as the baseline
    doc = env.tune_json("pattern --baseline", "--strategy", "pattern", "--baseline", "X=1,Y=4", "--param",
                        "X=1..5", "--param", "Y=1..4", *NOISE, *surface(env))
    if doc:
        check(order(doc)[0] == (1, 4) and best(doc) == (3, 2), "pattern from the baseline X=1 Y=4: best X=3 Y=2",
              order(doc))


# Two programs at once, the time of the last to end: costsurface A 1 costs
# 28 + 8 (A-3)^2, costsurface 3 B costs 20 + 8 (B-2)^2; their max is least
# (28) at (3, 1) and (3, 2): greedy from (1, 1) reaches (3, 1), and (3, 2)
# does not improve on it.
CORUN_ORDER = [(1, 1), (2, 1), (1, 2), (3, 1), (2, 2), (4, 1), (3, 2)]


def group_corun(env, tmp):
    doc = env.tune_json("corun", "--corun", "--param", "A=1..5", *NOISE, "--", env.costsurface, "{A}", "1", SCALE,
                        "--and", "--param", "B=1..4", "--", env.costsurface, "3", "{B}", SCALE)
    if not doc:
        return
    check(doc["strategy"] == "corun" and len(doc["commands"]) == 2, "corun: two commands", doc["commands"])
    check([p["command"] for p in doc["params"]] == [0, 1], "corun: each parameter is its command's",
          doc["params"])
    check(order(doc, ("A", "B")) == CORUN_ORDER, "corun: the configuration order is exact", order(doc, ("A", "B")))
    check(best(doc, ("A", "B")) == (3, 1), "corun: best A=3 B=1 (the least of the longer run)", doc.get("best"))
    # the second command may also take --param=NAME=RANGE and no --
    r = env.run("tune", "--corun", "--repeat", "1", "--param", "A=3", "--", env.costsurface, "{A}", "2", "--and",
                "--param=B=2", env.costsurface, "3", "{B}")
    check(r.returncode == 0 and "best:     A=3 B=2" in r.stdout, "corun: --param=B=2 and no -- after --and",
          r.stdout + r.stderr)


def group_output(env, tmp):
    html = os.path.join(tmp, "tune.html")
    r = env.run("tune", "--html", html, "--param", "X=1..5", "--param", "Y=1..4", *NOISE, *surface(env))
    if not check(r.returncode == 0, "text: exit 0", r.stderr):
        return
    lines = r.stdout.splitlines()
    check(lines[0].startswith("# tune: greedy, objective time, 3 runs each (up to 5), noise "),
          "text: the header line", lines[0])
    check(lines[1] == "# command: %s {X} {Y} %s" % (env.costsurface, SCALE), "text: the command", lines[1])
    rows = [ln for ln in lines if re.match(r"^\s+\d+\s", ln)]
    check([tuple(int(v) for v in ln.split()[1:3]) for ln in rows] == GREEDY_ORDER,
          "text: one row per configuration, in the order tried", rows)
    check(rows[0].endswith("baseline") and rows[6].endswith("best"), "text: the baseline and the best marked",
          rows)
    check(any(ln.startswith("best:     X=3 Y=2  time ") for ln in lines), "text: the best line", lines)
    check(any(ln.startswith("baseline: X=1 Y=1  time ") for ln in lines), "text: the baseline line", lines)
    check(any(re.match(r"^gain over the baseline: time \d+\.\d%$", ln) for ln in lines), "text: the gain line",
          lines)
    check(lines[-1].startswith("9 configurations, ") and lines[-1].endswith(
        "stopped: no step up in any parameter improves"), "text: the closing line", lines[-1])
    try:
        page = open(html).read()
    except OSError as e:
        check(False, "--html: the page is written", e)
        return
    check(page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2,
          "--html: a page with two SVG plots (the order tried, the heat map)", page[:200])
    check(page.count("<rect") == 20, "--html: the heat map has a cell per configuration of X x Y",
          page.count("<rect"))
    check(page.count("<circle") == 9 and 'class="best"' in page, "--html: a point per configuration, the best marked",
          page.count("<circle"))
    check("<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", ""),
          "--html: self-contained (no script, nothing fetched)")


def group_prodcons(env, tmp):
    mmmt = os.path.join(env.examples, "mmmt")
    if not os.path.exists(mmmt):
        skip("prodcons", "no %s" % mmmt)
        return
    trace = os.path.join(tmp, "pc_sync")
    n = "192"
    doc = env.tune_json("producer-consumer", "--strategy", "producer-consumer", "--producers", "P", "--consumers",
                        "C", "--tile", "T", "--param", "P=1..3", "--param", "C=1..3", "--param", "T=" + n,
                        "--repeat", "1", "--sync-output", trace, "--", mmmt, "{P}", "{C}", "{T}", n)
    if not doc:
        return
    verdict = doc["verdict"]
    r = env.run("report", "--sync", trace)
    lines = r.stdout.splitlines()
    at = [i for i, ln in enumerate(lines) if ln.startswith("# producer/consumer balance")]
    check(r.returncode == 0 and at, "report --sync of the kept trace lists a producer/consumer pair",
          r.stdout[-500:] + r.stderr)
    if at:
        check(verdict["line"] == lines[at[0] + 1], "producer-consumer: the verdict line is report --sync's",
              (verdict["line"], lines[at[0] + 1]))
    # the producers multiply, the consumers only copy: the producers are slow
    check(verdict["slow"] == "producers" and verdict["line"].startswith("producer side (tid "),
          "producer-consumer: mmmt's producer side is slow", verdict)
    o = order(doc, ("P", "C", "T"))
    check(o[0] == (1, 1, 192) and o[1] == (2, 1, 192), "producer-consumer: (1,1) untiled, then a producer more",
          o)
    tiles = sorted({t for _, _, t in o} - {192}, reverse=True)
    check(tiles and tiles == [192 // k for k in range(2, 2 + len(tiles))],
          "producer-consumer: tiles N/2, N/3, ... in turn", tiles)
    check(doc["runs"] >= len(o) + 1, "producer-consumer: the record --sync run counted", doc["runs"])
    check(doc["stop"] in ("the threads did not change after the tile", "4 rounds of threads and tile"),
          "producer-consumer: why it stopped", doc["stop"])
    r = env.run("tune", "--strategy", "producer-consumer", "--producers", "P", "--consumers", "C", "--param",
                "P=1..2", "--param", "C=1..2", "--repeat", "1", "--", mmmt, "{P}", "{C}", n, n)
    check(r.returncode == 0 and "# verdict of the first configuration under record --sync: producer side" in
          r.stdout, "producer-consumer without --tile: text names the verdict", r.stdout + r.stderr)


MODEL = {
    "format": "layerprof-energy-model", "version": 1, "source": "written by test_tune.py",
    "machine": {"arch": "", "cpu": "", "kernel": "", "host": "", "cpus": 2},
}


def write_model(tmp, name, c0, terms):
    m = dict(MODEL)
    m["const"] = {"coef": c0}
    m["terms"] = [{"event": e, "coef": c} for e, c in terms]
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(m, f)
    return path


def group_energy(env, tmp):
    probe = env.run("tune", "--objective", "energy", "--model", write_model(tmp, "c.json", 1.5, []), "--repeat",
                    "1", "--param", "X=3", "--", env.costsurface, "{X}", "2")
    if probe.returncode and ("not supported" in probe.stderr or "built without" in probe.stderr):
        skip("energy", probe.stderr.strip())
        return
    # a constant-only model: energy = c0 x the run's span, exactly
    doc = env.tune_json("energy, constant model", "--objective", "energy", "--model",
                        write_model(tmp, "const.json", 1.5, []), *NOISE, "--param", "X=1..5", "--param", "Y=1..4",
                        *surface(env, ENERGY_SCALE))
    if doc:
        ratios = [c["energy_j"] / c["time_s"] for c in doc["configs"]]
        check(all(abs(q - 1.5) < 1e-4 for q in ratios), "energy: a constant model's joules are 1.5 W x seconds",
              ratios)
        check(order(doc) == GREEDY_ORDER and best(doc) == (3, 2), "energy: greedy finds X=3 Y=2 in the same order",
              order(doc))
        check(doc["gain"]["energy_pct"] is not None and doc["gain"]["energy_pct"] > 20,
              "energy: the gain in energy", doc["gain"])
    # with software events: joules above the constant's share by the events'
    doc = env.tune_json("edp, event model", "--objective", "edp", "--model",
                        write_model(tmp, "ev.json", 1.5, [("task-clock", 2e-9), ("page-faults", 4e-5)]),
                        "--noise", "11", "--repeat", "1", "--max-repeat", "1", "--param", "X=1..5", "--param",
                        "Y=1..4", *surface(env))
    if doc:
        extra = [c["energy_j"] - 1.5 * c["time_s"] for c in doc["configs"]]
        # (a sanitizer's build of costsurface faults thousands of pages more)
        check(all(0 < e < 1 for e in extra), "edp: the events add a little energy above the constant", extra)
        # one run each: the objective is that run's product
        objs = [abs(c["objective"] - c["energy_j"] * c["time_s"]) <= 1e-4 * c["objective"] for c in doc["configs"]]
        check(all(objs), "edp: the objective is joules x seconds", doc["configs"][:2])
        check(best(doc) == (3, 2), "edp: best X=3 Y=2", doc.get("best"))
    # a power source of constant watts
    r = env.run("energy", "sources")
    doc = env.tune_json("energy, power cmd", "--objective", "energy", "--power", "cmd:echo 7", "--repeat", "1",
                        "--param", "X=2..3", "--param", "Y=2", "--strategy", "grid", *surface(env))
    if doc:
        ratios = [c["energy_j"] / c["time_s"] for c in doc["configs"]]
        check(all(abs(q - 7) < 0.35 for q in ratios), "energy --power cmd:echo 7: 7 W x seconds (5 %)", ratios)
    # a model needing an event the machine does not count
    r = env.run("tune", "--objective", "energy", "--model", write_model(tmp, "hw.json", 1.0, [("no-such", 1e-9)]),
                "--repeat", "1", "--param", "X=3", "--", env.costsurface, "{X}", "2")
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("layerprof tune: "),
          "energy: a model whose events cannot be counted: one line, exit 1", r.stderr)


def group_badinput(env, tmp):
    cs = env.costsurface
    cases = [
        ("unknown {NAME}", ["--param", "X=1..3", "--", cs, "{X}", "{Z}"], 2,
         "layerprof tune: unknown parameter {Z} in '{Z}'\n"),
        ("bad range", ["--param", "X=1..a", "--", cs, "{X}", "1"], 2,
         "layerprof tune: invalid range 'X=1..a': A..B or A..B:STEP with integers, STEP above 0\n"),
        ("bad step", ["--param", "X=1..4:0", "--", cs, "{X}", "1"], 2,
         "layerprof tune: invalid range 'X=1..4:0': A..B or A..B:STEP with integers, STEP above 0\n"),
        ("empty range", ["--param", "X=3..1", "--", cs, "{X}", "1"], 2,
         "layerprof tune: empty range 'X=3..1': 3 is above 1\n"),
        ("empty parameter", ["--param", "X=", "--", cs, "{X}", "1"], 2, None),
        ("a value twice", ["--param", "X=1,2,1", "--", cs, "{X}", "1"], 2, None),
        ("a parameter twice", ["--param", "X=1", "--param", "X=2", "--", cs, "{X}", "1"], 2, None),
        ("an unused parameter", ["--param", "X=1", "--param", "Y=1", "--", cs, "{X}", "1"], 2,
         "layerprof tune: parameter Y is used by no command (write {Y} in it)\n"),
        ("--and without --corun", ["--param", "X=1..3", "--", cs, "{X}", "1", "--and", cs, "1", "1"], 2,
         "layerprof tune: --and goes with --corun (commands run at once)\n"),
        ("no command", ["--param", "X=1..3"], 2, None),
        ("no parameter", ["--", cs, "1", "1"], 2, None),
        ("--baseline not in the space", ["--param", "X=1..3", "--baseline", "X=7", "--", cs, "{X}", "1"], 2,
         "layerprof tune: invalid --baseline: X=7 is not among the values of X\n"),
        ("--objective energy without a model", ["--objective", "energy", "--param", "X=1..3", "--", cs, "{X}", "1"],
         2, "layerprof tune: --objective energy needs an energy model (--model M) or a power source "
            "(--power SPEC)\n"),
        ("--objective edp without a model", ["--objective", "edp", "--param", "X=1..3", "--", cs, "{X}", "1"], 2,
         None),
        ("--producers without the strategy", ["--producers", "X", "--param", "X=1..3", "--", cs, "{X}", "1"], 2,
         None),
        ("producer-consumer without --consumers", ["--strategy", "producer-consumer", "--producers", "X", "--param",
                                                   "X=1..3", "--", cs, "{X}", "1"], 2, None),
        ("a grid too large", ["--strategy", "grid", "--param", "X=1..100", "--param", "Y=1..100", "--", cs, "{X}",
                              "{Y}"], 2, None),
        ("a tile that is no size", ["--strategy", "producer-consumer", "--producers", "X", "--consumers", "Y",
                                    "--tile", "T", "--param", "X=1", "--param", "Y=1", "--param", "T=big", "--", cs,
                                    "{X}", "{Y}", "{T}"], 2, None),
        ("--repeat 0", ["--repeat", "0", "--param", "X=1..3", "--", cs, "{X}", "1"], 2, None),
        ("--max-repeat below --repeat", ["--repeat", "5", "--max-repeat", "2", "--param", "X=1", "--", cs, "{X}",
                                         "1"], 2, None),
        ("bad --strategy", ["--strategy", "annealing", "--param", "X=1", "--", cs, "{X}", "1"], 2, None),
        ("a failing command", ["--param", "X=1..3", "--", "false", "{X}"], 1,
         "layerprof tune: the baseline X=1 failed: false exited with status 1\n"),
        ("a command that cannot run", ["--param", "X=1..3", "--", "/nonexistent/prog", "{X}"], 1,
         "layerprof tune: cannot run '/nonexistent/prog': No such file or directory\n"),
        ("a bad model file", ["--objective", "energy", "--model", os.path.join(tmp, "none.json"), "--param",
                              "X=1", "--", cs, "{X}", "1"], 1, None),
    ]
    for what, args, code, msg in cases:
        r = env.run("tune", *args)
        ok = r.returncode == code and r.stdout == "" and len(r.stderr.splitlines()) == 1 and \
            r.stderr.startswith("layerprof tune: ")
        if msg is not None:
            ok = ok and r.stderr == msg
        check(ok, "bad input, %s: one line, exit %d" % (what, code), "exit %d: %r" % (r.returncode, r.stderr))
    # a configuration that fails is said, marked and passed over
    r = env.run("tune", "--strategy", "grid", "--repeat", "1", "--format", "json", "--param", "X=1..4", "--", "sh",
                "-c", "test {X} -ne 3 || { echo three is bad >&2; exit 4; }")
    if check(r.returncode == 0, "a failing configuration: tune goes on, exit 0", r.stderr):
        doc = json.loads(r.stdout)
        st = [(c["params"]["X"], c["status"]) for c in doc["configs"]]
        check(st == [("1", "ok"), ("2", "ok"), ("3", "failed"), ("4", "ok")], "a failing configuration is marked",
              st)
        check(doc["configs"][2]["why"] == "sh exited with status 4: three is bad", "its reason, with its stderr",
              doc["configs"][2])
        check(r.stderr == "layerprof tune: X=3 failed: sh exited with status 4: three is bad\n",
              "a failing configuration is said on stderr", r.stderr)
    # --timeout kills a run
    r = env.run("tune", "--strategy", "grid", "--repeat", "1", "--timeout", "0.5", "--format", "json", "--param",
                "X=1,9", "--", env.costsurface, "{X}", "2", SCALE)
    if check(r.returncode == 0, "--timeout: exit 0", r.stderr):
        doc = json.loads(r.stdout)
        check([c["status"] for c in doc["configs"]] == ["ok", "timed out"], "--timeout 0.5: the 924 ms run is killed",
              doc["configs"])
    h = env.run("tune", "--help")
    check(h.returncode == 0 and "--strategy" in h.stdout and "producer-consumer" in h.stdout, "tune --help")
    h = env.run("--help")
    check(re.search(r"^  tune ", h.stdout, re.M) is not None, "layerprof --help lists tune", h.stdout)


GROUPS = {
    "grid": group_grid,
    "greedy": group_greedy,
    "pattern": group_pattern,
    "corun": group_corun,
    "output": group_output,
    "prodcons": group_prodcons,
    "energy": group_energy,
    "badinput": group_badinput,
}


def setup(build):
    env = Env(build)
    if not os.path.exists(env.exe) or not os.path.exists(env.costsurface):
        skip("tune", "no layerprof or costsurface in %s" % build)
        return None
    return (env,)


if __name__ == "__main__":
    sys.exit(harness.run_groups(GROUPS, setup, prefix="layerprof-tune-"))
