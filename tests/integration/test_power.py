#!/usr/bin/env python3
"""Power sources and record --power with the built layerprof: `energy
sources` on this machine (none here: exit 1 and the message) and on
made-up sysfs trees given in $LAYERPROF_SYSFS (the exact table and JSON,
one reading of each); `record --power` on a real program with a meter
command whose readings are known (the trace's POWER chunks, read here
with a reader of the documented format, hold them, timed within the run,
as many as END's power.samples says; the command sees the program's pid in
LAYERPROF_POWER_PIDS), with a meter's CSV log, with no source (exit 1
before a trace is made), with bad options (exit 2), a recorder killed
while the program runs (the samples written so far are in its trace), and
replay, report and dump still reading the trace.

usage: test_power.py --build BUILD [--keep] [GROUP...]
Ends with 'N passed, N failed'."""

import json
import os
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

NONE_MSG = ("no power source on this machine (no RAPL domain under %s/class/powercap, no hwmon power or "
            "energy sensor, no battery); give an external meter with --power cmd:COMMAND or csv:FILE")

# A program that says its pid, then runs N slices of 10 ms in a traced
# function (the clock it watches is not traced: a small trace).
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((no_instrument_function)) static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void slice(void)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < 10)
		;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < n; i++)
		slice();
	return 0;
}
"""


def run(cmd, timeout=120, env=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, env=env)


def env_with(**kw):
    e = dict(os.environ)
    for k, v in kw.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def read_trace(path):
    """The trace's minor version, META and END as dicts, and its POWER
    chunks as lists of (source, [(ns, microwatts)...]) (docs/format.md)."""
    data = open(os.path.join(path, "data"), "rb").read()
    assert data[:8] == b"LPTRACE\0"
    minor = struct.unpack("<H", data[10:12])[0]
    meta, end, power = {}, None, []
    off = 16
    while off + 16 <= len(data):
        magic, typ, _flags, _res, length, _crc = struct.unpack("<IBBHII", data[off:off + 16])
        assert magic == 0x4B43504C
        payload = data[off + 16:off + 16 + length]
        off += 16 + length
        if typ in (1, 4):
            kv = dict(line.split("=", 1) for line in payload.decode().splitlines() if "=" in line)
            if typ == 1:
                meta = kv
            else:
                end = kv
        elif typ == 6:
            src, i = varint(payload, 0)
            n, i = varint(payload, i)
            ns, samples = 0, []
            for _ in range(n):
                d, i = varint(payload, i)
                uw, i = varint(payload, i)
                ns += d
                samples.append((ns, uw))
            assert i == len(payload)
            power.append((src, samples))
    return minor, meta, end, power


def make_tree(root):
    """The sysfs tree of the unit test: a RAPL package and its core
    subzone, an INA226 with a power and an energy sensor, a chip without
    any, two batteries (power_now; current and voltage) and mains."""
    files = {
        "class/powercap/intel-rapl/enabled": "1",
        "class/powercap/intel-rapl:0/name": "package-0",
        "class/powercap/intel-rapl:0/energy_uj": "1000000",
        "class/powercap/intel-rapl:0/max_energy_range_uj": "262143328850",
        "class/powercap/intel-rapl:0:0/name": "core",
        "class/powercap/intel-rapl:0:0/energy_uj": "500",
        "class/powercap/intel-rapl:0:0/max_energy_range_uj": "262143328850",
        "class/hwmon/hwmon0/name": "ina226",
        "class/hwmon/hwmon0/power1_input": "2500000",
        "class/hwmon/hwmon0/power1_label": "VDD_IN",
        "class/hwmon/hwmon0/energy1_input": "77",
        "class/hwmon/hwmon1/name": "coretemp",
        "class/hwmon/hwmon1/temp1_input": "40000",
        "class/power_supply/BAT0/type": "Battery",
        "class/power_supply/BAT0/power_now": "9000000",
        "class/power_supply/BAT1/type": "Battery",
        "class/power_supply/BAT1/current_now": "-1500000",
        "class/power_supply/BAT1/voltage_now": "12000000",
        "class/power_supply/AC/type": "Mains",
    }
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")


class Env:
    def __init__(self, build):
        self.exe = os.path.join(build, "host", "layerprof")
        self.cc = os.environ.get("CC") or "cc"
        self.prog_path = None

    def prog(self, tmp):
        if not self.prog_path:
            src = os.path.join(tmp, "powerprog.c")
            with open(src, "w") as f:
                f.write(PROGRAM)
            self.prog_path = os.path.join(tmp, "powerprog")
            subprocess.check_call([self.cc, "-O1", "-finstrument-functions", "-o", self.prog_path, src])
        return self.prog_path


def group_none(env, tmp):
    """energy sources where there is none: this machine (when it has
    none), and an empty tree."""
    here_has = [d for d in ("/sys/class/powercap", "/sys/class/hwmon", "/sys/class/power_supply")
                if os.path.isdir(d) and os.listdir(d)]
    if here_has:
        skip("energy sources on this machine", "it may have sources (%s)" % ", ".join(here_has))
    else:
        r = run([env.exe, "energy", "sources"], env=env_with(LAYERPROF_SYSFS=None))
        check(r.returncode == 1, "energy sources without a source: exit 1", r.returncode)
        check(r.stdout == "", "energy sources without a source: nothing on stdout", r.stdout)
        check(r.stderr == "layerprof energy: " + NONE_MSG % "/sys" + "\n",
              "energy sources without a source: the message", r.stderr)
        r = run([env.exe, "energy", "sources", "--format", "json"], env=env_with(LAYERPROF_SYSFS=None))
        check(r.returncode == 1 and json.loads(r.stdout) == [],
              "energy sources --format json without a source: [] and exit 1", (r.returncode, r.stdout))
    empty = os.path.join(tmp, "emptysys")
    os.makedirs(empty, exist_ok=True)
    r = run([env.exe, "energy", "sources"], env=env_with(LAYERPROF_SYSFS=empty))
    check(r.returncode == 1 and r.stderr == "layerprof energy: " + NONE_MSG % empty + "\n",
          "energy sources on an empty tree: exit 1 and the message naming it", (r.returncode, r.stderr))


def group_sources(env, tmp):
    """energy sources on a made-up tree: the exact table and JSON."""
    root = os.path.join(tmp, "sys")
    make_tree(root)
    e = env_with(LAYERPROF_SYSFS=root)
    rows = [
        ("rapl:package-0", "rapl", "energy", "-", "yes", "class/powercap/intel-rapl:0/energy_uj"),
        ("rapl:package-0:core", "rapl", "energy", "-", "yes", "class/powercap/intel-rapl:0:0/energy_uj"),
        ("hwmon:ina226:power1", "hwmon", "power", "VDD_IN", "yes", "class/hwmon/hwmon0/power1_input"),
        ("hwmon:ina226:energy1", "hwmon", "energy", "-", "yes", "class/hwmon/hwmon0/energy1_input"),
        ("battery:BAT0", "battery", "power", "-", "yes", "class/power_supply/BAT0/power_now"),
        ("battery:BAT1", "battery", "power", "-", "yes", "class/power_supply/BAT1/current_now"),
    ]
    r = run([env.exe, "energy", "sources"], env=e)
    want = ["%-20s  %-7s  %-6s  %-6s  %-8s  %s" % ("NAME", "KIND", "READS", "LABEL", "READABLE", "PATH")]
    for name, kind, reads, label, readable, rel in rows:
        want.append("%-20s  %-7s  %-6s  %-6s  %-8s  %s" % (name, kind, reads, label, readable,
                                                             os.path.join(root, rel)))
    check(r.returncode == 0 and r.stderr == "", "energy sources on a tree: exit 0", (r.returncode, r.stderr))
    check(r.stdout.splitlines() == want, "energy sources on a tree: the exact table",
          "\n" + r.stdout + "\nwanted\n" + "\n".join(want))
    r = run([env.exe, "energy", "sources", "--format", "json"], env=e)
    try:
        got = json.loads(r.stdout)
    except ValueError as x:
        got = x
    want = []
    for name, kind, reads, label, readable, rel in rows:
        d = {"name": name, "kind": kind, "reads": reads, "label": "" if label == "-" else label,
             "path": os.path.join(root, rel), "readable": True}
        if reads == "energy":
            d["range_uj"] = 262143328850 if kind == "rapl" else None
        want.append(d)
    check(r.returncode == 0 and got == want, "energy sources --format json on a tree: exact", got)
    r = run([env.exe, "energy", "sources", "--read"], env=e)
    watts = {line.split()[0]: line.split()[5] for line in r.stdout.splitlines()[1:]}
    check(r.returncode == 0 and watts == {"rapl:package-0": "0.000", "rapl:package-0:core": "0.000",
                                          "hwmon:ina226:power1": "2.500", "hwmon:ina226:energy1": "0.000",
                                          "battery:BAT0": "9.000", "battery:BAT1": "18.000"},
          "energy sources --read: one reading of each (the counters do not move)", r.stdout + r.stderr)
    r = run([env.exe, "energy", "sources", "--format", "xml"], env=e)
    check(r.returncode == 2 and r.stderr == "layerprof energy: invalid --format 'xml': text or json\n",
          "energy sources --format xml: exit 2", (r.returncode, r.stderr))
    r = run([env.exe, "energy", "sources", "extra"], env=e)
    check(r.returncode == 2, "energy sources with an operand: exit 2", (r.returncode, r.stderr))


def record_power(env, tmp, name, spec, interval="20", slices="30", extra_env=None):
    out = os.path.join(tmp, name)
    cmd = [env.exe, "record", "-q", "-o", out, "--power=" + spec, "--power-interval", interval, "--",
           env.prog(tmp), slices]
    return out, run(cmd, env=env_with(**(extra_env or {})))


def group_record(env, tmp):
    """record --power with a meter command: 7 W, then 3 W once it knows
    the program's pid."""
    pidfile = os.path.join(tmp, "pids")
    meter = ('echo "${LAYERPROF_POWER_PIDS-}" >> %s; case "${LAYERPROF_POWER_PIDS-}" in "") echo 7;; '
             '*) echo 3000 mW;; esac' % pidfile)
    out, r = record_power(env, tmp, "rec.data", "cmd:" + meter)
    if not check(r.returncode == 0, "record --power cmd: exit 0", r.stderr):
        return
    pid = r.stdout.split()[1]
    minor, meta, end, power = read_trace(out)
    check(minor == 5, "the trace's minor version is 5", minor)
    check(meta.get("power.sources") == ("cmd:" + meter)[:92] + "..." and meta.get("power.interval_ms") == "20",
          "META power.sources (the name cut to 95 characters) and power.interval_ms",
          (meta.get("power.sources"), meta.get("power.interval_ms")))
    samples = [s for src, ss in power for s in ss]
    check(power and all(src == 0 for src, _ in power), "POWER chunks of source 0", [src for src, _ in power])
    check(end and end.get("power.samples") == str(len(samples)) and end.get("power.failed") == "0",
          "END power.samples is the samples in the trace, power.failed 0", (end, len(samples)))
    # 300 ms of slices at 20 ms: some 15 samples; timings are never
    # asserted: the first and the last are sure
    check(len(samples) >= 2, "at least 2 samples", len(samples))
    check(all(a[0] <= b[0] for a, b in zip(samples, samples[1:])), "the samples in time order")
    # the first reading comes before the program starts, and one or two
    # more may come before its pid is known (a loaded machine)
    lines = open(pidfile).read().splitlines()
    k = len([line for line in lines if line == ""])
    check(k >= 1 and lines == [""] * k + [pid] * (len(lines) - k) and len(lines) > k,
          "LAYERPROF_POWER_PIDS: unset before the program starts, then its pid", (lines[:4], pid))
    check(len(lines) == len(samples), "one meter run per sample", (len(lines), len(samples)))
    check([uw for _, uw in samples] == [7000000] * k + [3000000] * (len(samples) - k),
          "7 W before the pid is known, 3000 mW after", samples[:4])
    r = run([env.exe, "replay", "--format", "json", out])
    try:
        threads = json.loads(r.stdout)
    except ValueError:
        threads = None
    check(r.returncode == 0 and threads is not None and "slice" in r.stdout, "replay reads the trace", r.stderr)
    times = [e["time_ns"] for t in (threads or {}).get("threads", []) for e in t["events"] if "time_ns" in e]
    check(times and samples and samples[0][0] <= min(times) and samples[-1][0] >= max(times),
          "the samples span the program's run: the first before its first event, the last after its last",
          (samples[:1], samples[-1:], times[:1], times[-1:]))
    r = run([env.exe, "report", out])
    check(r.returncode == 0 and "slice" in r.stdout, "report reads the trace", r.stderr)
    r = run([env.exe, "dump", "--chrome", out])
    check(r.returncode == 0 and json.loads(r.stdout), "dump --chrome reads the trace", r.stderr)


def group_csv(env, tmp):
    """record --power with a meter's log: its lines within the run."""
    log = os.path.join(tmp, "meter.csv")
    now = time.monotonic()
    with open(log, "w") as f:
        f.write("#clock=monotonic\nseconds,watts\n")
        f.write("%.6f,100\n" % (now - 60))
        t = now
        while t < now + 30:
            f.write("%.6f,4.5\n" % t)
            t += 0.01
    out, r = record_power(env, tmp, "csv.data", "csv:" + log)
    if not check(r.returncode == 0, "record --power csv: exit 0", r.stderr):
        return
    _minor, meta, end, power = read_trace(out)
    samples = [s for _, ss in power for s in ss]
    check(meta.get("power.sources") == "csv:" + log, "META power.sources names the log", meta.get("power.sources"))
    check(len(samples) >= 10 and all(uw == 4500000 for _, uw in samples),
          "the log's lines within the run, 4.5 W each", samples[:3])
    check(end.get("power.samples") == str(len(samples)), "END power.samples", end)


def group_refuse(env, tmp):
    """No source, a bad one, bad options: nothing is recorded."""
    empty = os.path.join(tmp, "nosys")
    os.makedirs(empty, exist_ok=True)
    out = os.path.join(tmp, "none.data")
    r = run([env.exe, "record", "-o", out, "--power", "--", "true"], env=env_with(LAYERPROF_SYSFS=empty))
    check(r.returncode == 1 and r.stderr == "layerprof record: --power: " + NONE_MSG % empty + "\n",
          "record --power without a source: exit 1 and the message", (r.returncode, r.stderr))
    check(not os.path.exists(out), "record --power without a source: no trace made")
    r = run([env.exe, "record", "-o", out, "--power=hwmon:nope", "--", "true"], env=env_with(LAYERPROF_SYSFS=empty))
    check(r.returncode == 1 and "no power source 'hwmon:nope' on this machine" in r.stderr and not os.path.exists(out),
          "record --power=hwmon:nope: exit 1, no trace", (r.returncode, r.stderr))
    for args, msg in ((["--power-interval", "10"], "layerprof record: --power-interval needs --power\n"),
                      (["--power=cmd:echo 1", "--power-interval", "0"],
                       "layerprof record: invalid --power-interval '0': expected milliseconds, 1 to 3600000\n"),
                      (["--power=cmd:echo 1", "--power-interval", "5x"],
                       "layerprof record: invalid --power-interval '5x': expected milliseconds, 1 to 3600000\n")):
        r = run([env.exe, "record", "-o", out] + args + ["--", "true"])
        check(r.returncode == 2 and r.stderr == msg, "record %s: exit 2" % " ".join(args), (r.returncode, r.stderr))
    # a meter that always fails: the recording goes on, and says so
    out2 = os.path.join(tmp, "fail.data")
    r = run([env.exe, "record", "-q", "-o", out2, "--power=cmd:exit 5", "--power-interval", "50", "--",
             env.prog(tmp), "5"])
    check(r.returncode == 0 and "layerprof record: warning: --power: no reading of cmd:exit 5: meter command "
          "'exit 5' failed (exit status 5)" in r.stderr, "record with a failing meter: a warning, exit 0", r.stderr)
    _minor, _meta, end, power = read_trace(out2)
    check(not power and end.get("power.samples") == "0" and int(end.get("power.failed", "0")) >= 2,
          "its trace: no POWER chunk, power.failed counted", end)


def group_killed(env, tmp):
    """A recorder killed while the program runs keeps the samples it wrote
    (every 2 s)."""
    out = os.path.join(tmp, "killed.data")
    p = subprocess.Popen([env.exe, "record", "-q", "-o", out, "--power=cmd:echo 2", "--power-interval", "50", "--",
                          env.prog(tmp), "500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    harness.started.append(p)
    pid = int(p.stdout.readline().split()[1])
    time.sleep(3.5)
    p.kill()
    p.wait()
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    _minor, _meta, end, power = read_trace(out)
    samples = [s for _, ss in power for s in ss]
    check(end is None and power and len(samples) >= 10 and all(uw == 2000000 for _, uw in samples),
          "a killed recorder's trace holds the samples written so far", (end, len(samples)))
    r = run([env.exe, "recover", out])
    _minor, _meta, end, power2 = read_trace(out)
    check(r.returncode == 0 and end is not None and power2 == power, "recover ends it, its samples kept",
          (r.returncode, r.stderr, end))
    r = run([env.exe, "report", out])
    check(r.returncode == 0 and "slice" in r.stdout, "report reads it", r.stderr)


GROUPS = {
    "none": group_none,
    "sources": group_sources,
    "record": group_record,
    "csv": group_csv,
    "refuse": group_refuse,
    "killed": group_killed,
}


def setup(build):
    env = Env(build)
    if not os.path.exists(env.exe):
        skip("power", "no layerprof in %s" % build)
        return None
    return (env,)


if __name__ == "__main__":
    sys.exit(harness.run_groups(GROUPS, setup, prefix="layerprof-power-"))
