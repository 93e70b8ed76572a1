#!/usr/bin/env python3
"""layerprof oscal run, list, report and compare, with the suite layerprof-oscal.

Nothing here asserts a time: only what must hold exactly (exit codes, the
entries, the file's structure, the report's agreement with the file), and,
in compare, an effect of ten times or more (an emulator against the machine).

Groups:
  usage    exit codes and one-line messages: no subcommand, an unknown one,
           bad options (exit 2); no entry matching --calls (exit 2); the suite
           not found, a missing calibration, garbage, a truncated file, a
           file that is no calibration, a newer version, --resume of a
           file measured under another runner (exit 1); a
           symbolic link planted as run's -o target, an existing file that
           is not a calibration and a missing directory are refused before
           anything runs, the file the link names untouched.
  run      `oscal list` has at least 100 entries; `oscal run --quick`: every
           entry listed ended once, in the list's order, measured or skipped
           with a reason (none failed on this machine), the file complete;
           read and write are modelled linear (or piecewise) with a positive
           slope over bytes; the JSON report holds the file's statistics,
           clusters and models exactly; the text report names every entry;
           run's JSON summary agrees with the file.
  report   on a small calibration: the HTML page is one self-contained
           document (no script, no external resource) with one 30-bar SVG
           histogram per measured entry and a series chart with the model's
           line(s) for each entry with a parameter; the JSON and text reports;
           a file without its analysis (raw samples only) gives the same;
           --calls keeps the matching entries only; -o writes the file.
  compare  a calibration against itself: every K, Kmin, Kmax is 1 exactly,
           the overall sd 0; a --quick run of CPU-bound entries (memcpy,
           memset, malloc, strlen, memcmp) under qemu-x86_64-static (skipped
           when it is not installed) against the same natively: K > 1 for
           each (the emulator slows them ten times and more; getpid's K is
           printed, not asserted: see SYSCALL); the JSON.
  resume   `oscal run --quick` interrupted with SIGINT once the 5th entry
           began (its progress on stderr: entries 1 to 4 ended): exit 130,
           the message, the file incomplete with the entries that ended;
           then --resume: exit 0, the file complete with every entry of the
           list once, in its order, the first part's entries as they were; the
           suite killed (SIGKILL) after 4 entries: exit 1, the entries that
           ended written, incomplete, and resumed to a complete file.

usage: test_oscal.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

# CPU-bound entries: under an emulator each takes many times its native time
# (ten times and more here).
CPU_BOUND = "memcpy,memset,malloc,strlen,memcmp"
# A system call measured beside them under the emulator, its K shown but not
# asserted: its time is mostly the kernel's, which the emulator does not
# slow (1.4 here: too near 1 for a check on a loaded machine).
SYSCALL = "getpid"
# The small calibration of the report group.
REPORT_CALLS = "read,write,getpid,malloc,memcpy,kill,sem*"


def run(cmd, env=None, timeout=600):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=timeout)


def one_line(r):
    """The failure is one line on stderr, 'layerprof oscal: ...'."""
    lines = r.stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("layerprof oscal: ")


def load(path):
    with open(path) as f:
        return json.load(f)


def listed(lp):
    """The names `oscal list` gives, in order (the header left out)."""
    r = run([lp, "oscal", "list"])
    lines = r.stdout.splitlines()
    return [line.split()[0] for line in lines[1:] if line.strip()], r


def make_cal(lp, path, calls, extra=()):
    if os.path.exists(path):
        os.unlink(path)
    r = run([lp, "oscal", "run", "--quick", "--calls", calls, "-o", path] + list(extra))
    return r


def group_usage(lp, suite, tmp):
    for args, what in (([], "no subcommand"), (["bogus"], "an unknown subcommand"),
                       (["run", "--reps", "0"], "--reps 0"), (["run", "--reps", "x"], "--reps x"),
                       (["run", "--threshold", "-1"], "--threshold -1"), (["run", "extra"], "an operand"),
                       (["run", "--format", "html"], "run --format html"),
                       (["run", "--resume", "x.cal", "--quick"], "--resume with --quick"),
                       (["report"], "report without a file"), (["report", "a.cal", "b.cal"], "report of two files"),
                       (["report", "--format", "xml", "a.cal"], "--format xml"),
                       (["compare", "a.cal"], "compare of one file"), (["list", "extra"], "list with an operand")):
        r = run([lp, "oscal"] + args)
        check(r.returncode == 2, "oscal %s: exit 2" % (" ".join(args) or "(nothing)"),
              "%s: %d %s" % (what, r.returncode, r.stderr.strip()[-300:]))
    r = run([lp, "oscal", "run", "--quick", "--calls", "no-such-call", "-o", os.path.join(tmp, "none.cal")])
    check(r.returncode == 2 and one_line(r) and "no entry matches 'no-such-call'" in r.stderr,
          "run --calls matching nothing: exit 2, one line", "%d %s" % (r.returncode, r.stderr))
    r = run([lp, "oscal", "run", "--quick", "-o", os.path.join(tmp, "x.cal")],
            env={"LAYERPROF_OSCAL": os.path.join(tmp, "no-such-suite")})
    check(r.returncode == 1 and one_line(r) and "LAYERPROF_OSCAL" in r.stderr, "the suite not found: exit 1",
          "%d %s" % (r.returncode, r.stderr))

    r = run([lp, "oscal", "run", "--quick", "--runner", "no-such-runner-cmd --x", "-o", os.path.join(tmp, "x.cal")])
    check(r.returncode == 1 and one_line(r) and "cannot run 'no-such-runner-cmd'" in r.stderr,
          "a runner that does not exist: exit 1, one line", "%d %s" % (r.returncode, r.stderr))
    r = run([lp, "oscal", "run", "--quick", "--runner", "  ", "-o", os.path.join(tmp, "x.cal")])
    check(r.returncode == 2 and one_line(r), "an empty --runner: exit 2", "%d %s" % (r.returncode, r.stderr))
    check(not os.path.exists(os.path.join(tmp, "x.cal")), "no file written by those")

    good = os.path.join(tmp, "good.cal")
    r = make_cal(lp, good, "getpid,read")
    if not check(r.returncode == 0 and os.path.exists(good), "a small calibration for the bad files",
                 "%d %s" % (r.returncode, r.stderr[-500:])):
        return
    text = open(good).read()
    bad = {}
    bad["missing"] = os.path.join(tmp, "no-such.cal")
    for name, content in (("garbage", "\x00\x01 not json at all {{{"),
                          ("truncated", text[:len(text) // 2]),
                          ("empty", ""),
                          ("other-json", json.dumps({"format": "something-else", "version": 1})),
                          ("newer", text.replace('"version":1', '"version":2', 1))):
        bad[name] = os.path.join(tmp, name + ".cal")
        with open(bad[name], "w") as f:
            f.write(content)
    for name, path in sorted(bad.items()):
        for args in (["report", path], ["compare", good, path], ["compare", path, good]):
            r = run([lp, "oscal"] + args)
            check(r.returncode == 1 and one_line(r) and (name != "newer" or "newer" in r.stderr),
                  "%s of a %s file: exit 1, one line" % (" ".join("FILE" if a == path else "GOOD" if a == good else a for a in args), name),
                  "%d %s" % (r.returncode, r.stderr[-300:]))
    r = run([lp, "oscal", "report", bad["newer"]])
    check("version 2" in r.stderr, "a newer version is named as such", r.stderr)

    r = run([lp, "oscal", "run", "--resume", good, "--runner", "qemu-x86_64-static", "-o",
             os.path.join(tmp, "other.cal")])
    check(r.returncode == 1 and one_line(r) and "not resumed" in r.stderr
          and not os.path.exists(os.path.join(tmp, "other.cal")),
          "--resume under another runner than the file's: refused, exit 1", "%d %s" % (r.returncode, r.stderr))

    # run's -o: a planted link, a file that is not a calibration
    victim = os.path.join(tmp, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    link = os.path.join(tmp, "link.cal")
    os.symlink(victim, link)
    r = run([lp, "oscal", "run", "--quick", "--calls", "read", "-o", link])
    check(r.returncode == 1 and one_line(r) and "link" in r.stderr and r.stdout == "",
          "run -o a symbolic link: refused, exit 1, one line", "%d %s" % (r.returncode, r.stderr))
    check(os.path.islink(link) and open(victim).read() == "precious\n", "the link and its target untouched")
    r = run([lp, "oscal", "run", "--quick", "--calls", "read", "-o", victim])
    check(r.returncode == 1 and one_line(r) and "not a layerprof calibration" in r.stderr,
          "run -o a file that is not a calibration: refused", "%d %s" % (r.returncode, r.stderr))
    check(open(victim).read() == "precious\n", "that file untouched")
    r = run([lp, "oscal", "run", "--quick", "--calls", "read", "-o", good])
    check(r.returncode == 0 and load(good)["format"] == "layerprof-oscal-cal",
          "run -o an existing calibration: replaced", "%d %s" % (r.returncode, r.stderr[-300:]))
    r = run([lp, "oscal", "run", "--quick", "--calls", "read", "-o", os.path.join(tmp, "no-such-dir", "x.cal")])
    check(r.returncode == 1 and one_line(r) and "[1/" not in r.stderr,
          "run -o in a missing directory: refused before anything runs", "%d %s" % (r.returncode, r.stderr))
    leftovers = [n for n in os.listdir(tmp) if ".tmp." in n]
    check(not leftovers, "no temporary left beside the files", leftovers)


def model_at(model, x):
    for i, p in enumerate(model["pieces"]):
        if x <= p["x1"] or i == len(model["pieces"]) - 1:
            return p["m"] * x + p["q"]
    return None


def group_run(lp, suite, tmp):
    names, r = listed(lp)
    check(r.returncode == 0 and len(names) >= 100, "oscal list: at least 100 entries", "%d entries" % len(names))
    check(len(set(names)) == len(names), "the entries' names are unique")
    check(all(re.fullmatch(r"[a-z0-9_-]+", n) for n in names), "the names are [a-z0-9_-]")
    cal = os.path.join(tmp, "quick.cal")
    r = run([lp, "oscal", "run", "--quick", "-o", cal, "--format", "json"])
    if not check(r.returncode == 0, "oscal run --quick: exit 0", "%d %s" % (r.returncode, r.stderr[-800:])):
        return
    progress = [line for line in r.stderr.splitlines() if line.startswith("[")]
    check(len(progress) == len(names) and progress[0] == "[1/%d] %s" % (len(names), names[0]),
          "progress: one '[k/N] name' line per entry", progress[:2])
    doc = load(cal)
    check(doc["format"] == "layerprof-oscal-cal" and doc["version"] == 1 and doc["complete"] is True,
          "the file: format, version 1, complete")
    check(doc["settings"]["quick"] is True and doc["source"] == "local", "the file's settings and source")
    ents = doc["entries"]
    check([e["name"] for e in ents] == names, "every listed entry once, in the list's order",
          "%d entries, %d listed" % (len(ents), len(names)))
    failed = [(e["name"], e["reason"]) for e in ents if e["status"] == "failed"]
    check(not failed, "no entry failed here", failed)
    bad = [e["name"] for e in ents if e["status"] not in ("measured", "skipped")
           or (e["status"] == "skipped" and not e["reason"])]
    check(not bad, "each entry measured, or skipped with a reason", bad)
    measured = [e for e in ents if e["status"] == "measured"]
    check(len(measured) >= 80, "most entries measured", "%d" % len(measured))
    nomodel = [e["name"] for e in measured if e["model"]["form"] not in ("constant", "linear", "piecewise")]
    check(not nomodel, "every measured entry has a model", nomodel)
    nohist = [e["name"] for e in measured if len(e["stats"]["hist"]["counts"]) != 30
              or sum(e["stats"]["hist"]["counts"]) != e["stats"]["n"]]
    check(not nohist, "every measured entry: 30 bins holding all its samples", nohist)
    for name in ("read", "write"):
        e = next((x for x in ents if x["name"] == name), None)
        if not check(e is not None and e["status"] == "measured" and e["param"] == "bytes",
                     "%s measured over bytes" % name):
            continue
        m = e["model"]
        xs = [s["x"] for s in e["series"]]
        # piecewise: on a busy machine the small sizes may split into
        # constant pieces; the model (lines between the pieces) still grows
        ok = (m["form"] == "linear" and m["pieces"][0]["m"] > 0) or \
             (m["form"] == "piecewise" and model_at(m, max(xs)) > model_at(m, min(xs)))
        check(ok, "%s: linear (or piecewise) with a positive slope over bytes" % name, m)
    summ = json.loads(r.stdout)
    check(summ["complete"] is True and summ["listed"] == len(names) and summ["ended"] == len(ents)
          and sorted(summ["measured"]) == sorted(e["name"] for e in measured)
          and sorted(s["name"] for s in summ["skipped"]) == sorted(e["name"] for e in ents
                                                                   if e["status"] == "skipped")
          and not summ["failed"], "run's JSON summary agrees with the file")

    r = run([lp, "oscal", "report", "--format", "json", cal])
    rep = json.loads(r.stdout) if r.returncode == 0 else {"entries": []}
    check(r.returncode == 0 and rep["format"] == "layerprof-oscal-report", "report --format json: exit 0")
    check([e["name"] for e in rep["entries"]] == names, "the JSON report has every entry, in order")
    differ = []
    for fe, re_ in zip(ents, rep["entries"]):
        keys = ["status", "reason", "call", "cond", "group", "param", "unit", "desc"]
        if fe["status"] == "measured":
            keys += ["stats", "model", "clusters", "spread_high"]
        for k in keys:
            if fe.get(k) != re_.get(k):
                differ.append("%s.%s" % (fe["name"], k))
        if [s["x"] for s in fe["series"]] != [s["x"] for s in re_["series"]] or any(
                "ns" in s for s in re_["series"]):
            differ.append("%s.series" % fe["name"])
    check(not differ, "the JSON report holds the file's statistics, clusters and models exactly, no raw samples",
          differ[:10])
    check(rep["clock"] == doc["clock"] and rep["machine"] == doc["machine"], "the JSON report's clock and machine")
    r = run([lp, "oscal", "report", cal])
    rows = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    missing = [n for n in names if n not in rows]
    check(r.returncode == 0 and not missing, "the text report names every entry", missing)
    for word in ("machine:", "clock:", "settings:", "outliers:", "threshold:"):
        check(any(line.startswith(word) for line in r.stdout.splitlines()), "the text report's header: %s" % word)


def group_report(lp, suite, tmp):
    cal = os.path.join(tmp, "report.cal")
    r = make_cal(lp, cal, REPORT_CALLS)
    if not check(r.returncode == 0, "a small calibration", "%d %s" % (r.returncode, r.stderr[-500:])):
        return
    doc = load(cal)
    measured = [e for e in doc["entries"] if e["status"] == "measured"]
    with_param = [e for e in measured if e["param"] and len(e["series"]) > 1]
    check(len(measured) >= 5 and with_param, "it has measured entries, some with a parameter",
          "%d measured" % len(measured))
    html = os.path.join(tmp, "report.html")
    r = run([lp, "oscal", "report", "--format", "html", "-o", html, cal])
    check(r.returncode == 0 and r.stdout == "", "report --format html -o: exit 0, nothing on stdout", r.stderr)
    page = open(html).read() if os.path.exists(html) else ""
    check(page.count("<!DOCTYPE html>") == 1 and page.rstrip().endswith("</html>"), "one HTML page")
    check("<script" not in page and not re.search(r"(src|href)=\"(https?:)?//", page)
          and "Content-Security-Policy" in page, "self-contained: no script, no external resource")
    hists = re.findall(r"<svg class=\"hist\".*?</svg>", page, re.S)
    check(len(hists) == len(measured), "one histogram per measured entry",
          "%d histograms, %d measured" % (len(hists), len(measured)))
    bars = [h.count("<rect class=\"bar\"") for h in hists]
    check(bars and all(b == 30 for b in bars), "each histogram has 30 bars", bars)
    sections = re.findall(r"<section id=\"e-([a-z0-9_-]+)\">(.*?)</section>", page, re.S)
    check([s[0] for s in sections] == [e["name"] for e in measured], "a section per measured entry, in order")
    bysec = dict(sections)
    nochart = [e["name"] for e in with_param if e["name"] not in bysec or "<svg class=\"series\"" not in bysec[
        e["name"]] or bysec[e["name"]].count("<circle class=\"pt\"") != len(e["series"])
        or "<polyline class=\"model\"" not in bysec[e["name"]]]
    check(not nochart, "each entry with a parameter: its series' means and the model's line", nochart)
    pw = [e for e in with_param if e["model"]["form"] == "piecewise"]
    badpw = [e["name"] for e in pw if bysec[e["name"]].count("<polyline class=\"model\"") != len(
        e["model"]["pieces"])]
    check(not badpw, "a piecewise model: one line per piece", badpw)
    # the skipped and failed ones are in the table, with their reason
    for e in doc["entries"]:
        if e["status"] != "measured":
            check(e["reason"] in page or "&" in e["reason"], "%s's reason in the page" % e["name"])

    r = run([lp, "oscal", "report", "--format", "json", cal])
    rep = json.loads(r.stdout)
    check(r.returncode == 0 and len(rep["entries"]) == len(doc["entries"]) and rep["file"] == cal
          and rep["settings"]["calls"] == REPORT_CALLS, "report --format json")
    # a file without its analysis (made by another tool): analysed when read
    bare = dict(doc)
    bare["entries"] = [{k: v for k, v in e.items() if k not in ("stats", "clusters", "model", "spread_high")}
                       for e in doc["entries"]]
    for e in bare["entries"]:
        e["series"] = [{"x": s["x"], "ns": s["ns"]} for s in e["series"]]
    barefile = os.path.join(tmp, "bare.cal")
    with open(barefile, "w") as f:
        json.dump(bare, f)
    r2 = run([lp, "oscal", "report", "--format", "json", barefile])
    rep2 = json.loads(r2.stdout) if r2.returncode == 0 else {"entries": []}
    check([(e.get("stats"), e.get("model"), e.get("clusters")) for e in rep2["entries"]]
          == [(e.get("stats"), e.get("model"), e.get("clusters")) for e in rep["entries"]],
          "a file without its analysis: analysed when read, the same statistics and models", r2.stderr)
    r = run([lp, "oscal", "report", "--calls", "read", cal])
    table = r.stdout.split("(times in ns")[0]  # the piecewise models' pieces follow
    rows = [line.split()[0] for line in table.splitlines()
            if line.split() and line.split()[0] in {e["name"] for e in doc["entries"]}]
    want = [e["name"] for e in doc["entries"] if e["name"] == "read" or e["call"] == "read"]
    check(r.returncode == 0 and rows == want, "report --calls read: the entries of read only", rows)
    r = run([lp, "oscal", "report", cal])
    lines = r.stdout.splitlines()
    hdr = next((line for line in lines if line.startswith("name ")), "")
    check(r.returncode == 0 and hdr.split()[:10] == ["name", "group", "n", "mean", "sd", "min", "p50", "p99",
                                                    "max", "model"], "the text report's columns", hdr)
    for e in measured:
        row = next((line for line in lines if line.split() and line.split()[0] == e["name"]), "")
        words = row.split()
        ok = len(words) > 3 and words[1] == e["group"] and words[2] == str(e["stats"]["n"]) and \
            (e["model"]["form"] + " ") in row
        check(ok, "text row of %s: group, n, model" % e["name"], row)


def group_compare(lp, suite, tmp):
    cal = os.path.join(tmp, "self.cal")
    r = make_cal(lp, cal, CPU_BOUND + ",read,write,kill")
    if not check(r.returncode == 0, "a calibration", "%d %s" % (r.returncode, r.stderr[-500:])):
        return
    doc = load(cal)
    modelled = [e["name"] for e in doc["entries"] if e["status"] == "measured"]
    r = run([lp, "oscal", "compare", "--format", "json", cal, cal])
    cmp = json.loads(r.stdout) if r.returncode == 0 else {"entries": [], "all": {}}
    check(r.returncode == 0 and [e["name"] for e in cmp["entries"]] == modelled,
          "compare a file with itself: a row per measured entry", r.stderr)
    check(all(e["k"] == 1 and e["kmin"] == 1 and e["kmax"] == 1 for e in cmp["entries"]),
          "every K, Kmin, Kmax is 1 exactly", [e for e in cmp["entries"] if e["k"] != 1][:3])
    check(cmp["all"].get("k") == 1 and cmp["all"].get("sd") == 0 and cmp["all"].get("n") == len(modelled),
          "over all: K 1, sd 0", cmp["all"])
    r = run([lp, "oscal", "compare", cal, cal])
    check(r.returncode == 0 and any(line.split()[:1] == ["all"] for line in r.stdout.splitlines()),
          "the text comparison has the overall row")
    r = run([lp, "oscal", "compare", cal, os.path.join(tmp, "no-such.cal")])
    check(r.returncode == 1 and one_line(r), "compare with a missing file: exit 1, one line", r.stderr)

    qemu = shutil.which("qemu-x86_64-static")
    if not qemu:
        skip("compare under qemu-x86_64-static", "qemu-user-static is not installed")
        return
    if harness.sanitized(os.path.dirname(os.path.dirname(lp))):
        # ASan's shadow memory is more than qemu-user maps: the emulated
        # suite is killed; the release build runs the comparison
        skip("compare under qemu-x86_64-static", "a sanitizer's build: its suite does not run under qemu-user")
        return
    native, emu = os.path.join(tmp, "native.cal"), os.path.join(tmp, "qemu.cal")
    r1 = make_cal(lp, native, CPU_BOUND + "," + SYSCALL)
    r2 = make_cal(lp, emu, CPU_BOUND + "," + SYSCALL, ["--runner", qemu])
    if not check(r1.returncode == 0 and r2.returncode == 0, "the same calls natively and under qemu",
                 "%d %d %s" % (r1.returncode, r2.returncode, r2.stderr[-500:])):
        return
    check(load(emu)["source"].startswith(qemu + " "), "the emulated file's source names the runner",
          load(emu)["source"])
    r = run([lp, "oscal", "compare", "--format", "json", native, emu])
    cmp = json.loads(r.stdout)
    rows = {e["name"]: e for e in cmp["entries"]}
    want = [e["name"] for e in load(native)["entries"] if e["status"] == "measured"]
    check(want and sorted(rows) == sorted(want), "a K for each entry measured", sorted(rows))
    cpu = {n: e for n, e in rows.items() if n != SYSCALL}
    slow = [(n, e["k"]) for n, e in cpu.items() if not e["k"] > 1]
    check(len(cpu) >= 4 and not slow, "K > 1 for every CPU-bound entry under the emulator",
          slow or ["%s %.1f" % (n, e["k"]) for n, e in sorted(cpu.items())])
    if SYSCALL in rows:
        print("     (not asserted: %s's K under the emulator %.2f)" % (SYSCALL, rows[SYSCALL]["k"]))
    check(cmp["all"]["k"] > 1 and cmp["left_out"]["only_a"] == 0, "overall K > 1", cmp["all"])


def group_resume(lp, suite, tmp):
    names, _ = listed(lp)
    cal = os.path.join(tmp, "resume.cal")
    p = subprocess.Popen([lp, "oscal", "run", "--quick", "-o", cal], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    harness.started.append(p)
    seen = []
    # wait for the condition: the 5th entry began (entries 1 to 4 ended)
    for line in p.stderr:
        seen.append(line.rstrip("\n"))
        if line.startswith("[5/"):
            p.send_signal(signal.SIGINT)
            break
    out, err = p.communicate(timeout=120)
    err = "\n".join(seen) + "\n" + err
    if not check(p.returncode == 130, "run interrupted by SIGINT: exit 130", "%s %s" % (p.returncode, err[-500:])):
        return
    m = re.search(r"layerprof oscal: interrupted: (\d+) of (\d+) entries ended; resume with --resume (\S+)", err)
    check(m and int(m.group(2)) == len(names) and m.group(3) == cal, "the message: N of M ended, how to resume",
          err[-300:])
    doc = load(cal)
    part = doc["entries"]
    check(doc["complete"] is False and len(part) >= 4 and (not m or len(part) == int(m.group(1))),
          "the file: incomplete, the entries that ended", "%d entries" % len(part))
    check([e["name"] for e in part] == names[:len(part)], "the ended entries, in the list's order")
    check(all(e["status"] in ("measured", "skipped") for e in part), "none of them pending or interrupted")
    check(not [n for n in os.listdir(tmp) if ".tmp." in n], "no temporary left")

    r = run([lp, "oscal", "run", "--resume", cal])
    check(r.returncode == 0, "--resume: exit 0", "%d %s" % (r.returncode, r.stderr[-500:]))
    progress = [line for line in r.stderr.splitlines() if line.startswith("[")]
    check(progress and progress[0].startswith("[%d/%d] " % (len(part) + 1, len(names))),
          "the resumed run's progress goes on from the entries that ended", progress[:1])
    final = load(cal)
    check(final["complete"] is True, "the resumed file is complete")
    check([e["name"] for e in final["entries"]] == names, "every entry once, in the list's order",
          "%d entries" % len(final["entries"]))
    same = all(a == b for a, b in zip(part, final["entries"][:len(part)]))
    check(same, "the first part's entries kept as they were")
    check(final["created"] == doc["created"] and final["settings"] == doc["settings"],
          "the file's created and settings kept")
    check(not [e["name"] for e in final["entries"] if e["status"] == "failed"], "no entry failed")
    r = run([lp, "oscal", "run", "--resume", cal, "-o", os.path.join(tmp, "again.cal")])
    check(r.returncode == 0 and not [line for line in r.stderr.splitlines() if line.startswith("[")]
          and load(os.path.join(tmp, "again.cal"))["entries"] == final["entries"],
          "--resume of a complete file: nothing runs, the same entries", r.stderr[-300:])
    group_resume_died(lp, tmp, names)


def group_resume_died(lp, tmp, names):
    """The suite killed (not layerprof): what ended is written, exit 1."""
    cal = os.path.join(tmp, "died.cal")
    p = subprocess.Popen([lp, "oscal", "run", "--quick", "-o", cal], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    harness.started.append(p)
    seen = []
    for line in p.stderr:
        seen.append(line.rstrip("\n"))
        if line.startswith("[5/"):
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                for kid in f.read().split():
                    os.kill(int(kid), signal.SIGKILL)
            break
    out, err = p.communicate(timeout=120)
    err = "\n".join(seen) + "\n" + err
    check(p.returncode == 1 and "was killed by signal 9" in err
          and re.search(r"\d+ of %d entries ended before the suite did; resume with --resume" % len(names), err),
          "the suite killed: exit 1, said, how to resume", "%s %s" % (p.returncode, err[-300:]))
    doc = load(cal) if os.path.exists(cal) else {"complete": None, "entries": []}
    check(doc["complete"] is False and len(doc["entries"]) >= 4
          and [e["name"] for e in doc["entries"]] == names[:len(doc["entries"])],
          "the file holds the entries that ended, incomplete", "%d entries" % len(doc["entries"]))
    r = run([lp, "oscal", "run", "--resume", cal])
    check(r.returncode == 0 and [e["name"] for e in load(cal)["entries"]] == names and load(cal)["complete"],
          "resumed: complete, every entry once", r.stderr[-300:])


def setup(build):
    lp = os.path.join(build, "host", "layerprof")
    suite = os.path.join(build, "oscal", "layerprof-oscal")
    for f in (lp, suite):
        if not os.access(f, os.X_OK):
            check(False, "%s is built" % f)
            return None
    os.environ.pop("LAYERPROF_OSCAL", None)
    return (lp, suite)


if __name__ == "__main__":
    sys.exit(harness.run_groups({"usage": group_usage, "run": group_run, "report": group_report,
                                 "compare": group_compare, "resume": group_resume}, setup,
                                prefix="layerprof-oscal-"))
