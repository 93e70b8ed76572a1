#!/usr/bin/env python3
"""The kernel's own counts for the kern_* sample programs (tests/programs),
taken with `perf stat`, the reference the kernel-event layer is held against.

As a module: perf_counts() counts tracepoints over one run of a program (its
threads only, or every CPU), and loop_ext4() mounts a fresh ext4 file system
on a loop device for kern_block.  As a command: builds the programs (unless
given --bindir), runs each --runs times and compares the counts with the
expectations stated at the top of each program's source.

perf stat sees whole processes, not functions: the checks here are on what
the whole program does, which the programs make equal to what their counted
functions do (kern_faults: the startup's share is measured with N = 0).
Needs root (tracepoints, loop devices, mount) and perf.

usage: kernel_truth.py [--bindir DIR] [--runs N] [--cc CC] [--aslr] [PROGRAM...]
Ends with 'N passed, N failed'."""

import argparse
import contextlib
import ctypes
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
from harness import check, skip, summary  # noqa: E402

PROGRAMS = ("kern_faults", "kern_sleep", "kern_pipe", "kern_preempt", "kern_block")
CFLAGS = ["-O2", "-g", "-std=c11", "-finstrument-functions", "-pthread", "-Wall", "-Wextra", "-Werror", "-Wshadow"]
TIMEOUT = 60
TRACEFS = "/sys/kernel/tracing"
ADDR_NO_RANDOMIZE = 0x0040000  # personality(2) flag, as setarch -R sets it

# The events.  An event is a perf event name, or a (name, filter) pair: the
# filter is the kernel's tracepoint filter (perf stat --filter).
SWITCH = "sched:sched_switch"
# prev_state: 1 is S (TASK_INTERRUPTIBLE), 2 is D.  A task switched out while
# runnable is 0 (R: sched_yield, or preempted in user mode, which is a plain
# schedule() on the way back to user space) or 256 (R+: preempted in the
# kernel).
SWITCH_S = (SWITCH, "prev_state == 1")
SWITCH_R = (SWITCH, "prev_state == 0 || prev_state == 256")
SWITCH_D = (SWITCH, "prev_state == 2")  # D: waits for I/O
WAKEUP = "sched:sched_wakeup"
TASK_CLOCK = "task-clock"  # msec on the CPU, all threads
DURATION = "duration_time"  # ns of wall time


class Skip(Exception):
    """Raised when this machine cannot run a measurement; the message says why."""


class PerfError(RuntimeError):
    """perf failed, or the program did not exit 0."""


def fault_event():
    """The page fault event: the exceptions:page_fault_user tracepoint where
    the architecture has it (x86), else perf's page-faults software event,
    which counts the same faults in the fault handler."""
    if os.path.isdir(os.path.join(TRACEFS, "events", "exceptions", "page_fault_user")):
        return "exceptions:page_fault_user"
    return "page-faults"


def own_wakeups(prog_path):
    """sched_wakeup of the program's own threads (the woken task's name is
    the program's, cut to the kernel's 15 characters): wakeups of other
    tasks from interrupts that happen while the program is on the CPU are
    left out."""
    return (WAKEUP, 'comm == "%s"' % os.path.basename(prog_path)[:15])


def block_dev(path):
    """The device number of the file system holding path, as the block
    tracepoints' dev field has it (the kernel's MKDEV: major << 20 | minor)."""
    st = os.stat(path)
    return os.major(st.st_dev) << 20 | os.minor(st.st_dev)


def block_event(name, path, writes_only=False):
    """A block tracepoint (block_rq_issue, ...) filtered to the device of
    path, and to write requests ("W" in rwbs, no cache flush) if asked."""
    flt = "dev == %d" % block_dev(path)
    if writes_only:
        flt += ' && rwbs ~ "W*"'
    return ("block:" + name, flt)


def _event_args(events):
    args = []
    for ev in events:
        name, flt = (ev, None) if isinstance(ev, str) else ev
        args += ["-e", name]
        if flt:
            args += ["--filter", flt]
    return args


def _no_aslr():
    """Runs in the child before perf's exec: the personality is inherited
    by the program perf starts."""
    libc = ctypes.CDLL(None, use_errno=True)
    cur = libc.personality(0xFFFFFFFF)
    if cur != -1:
        libc.personality(cur | ADDR_NO_RANDOMIZE)


def _number(text):
    return float(text) if "." in text else int(text)


def perf_counts(prog_path, args, events, system_wide=False, aslr=False, timeout=TIMEOUT):
    """Counts events over one run of prog_path with args under `perf stat`,
    returns {event: count} with the events as given (a name, or a (name,
    filter) pair; the same name may come twice with different filters).
    Counts are ints (floats for task-clock, in msec).  Without system_wide
    only the program's threads count: perf counts an event while one of them
    is on the CPU, from the exec on, and follows new threads and children
    (inherit).  That includes events of other tasks raised by interrupts
    meanwhile (e.g. a wakeup of a kworker), which own_wakeups() filters out.
    With system_wide, every CPU counts from the start to the end of the
    program.  aslr=False starts the program without address space
    randomisation, which makes the loader's page faults the same in every
    run.  Raises PerfError when perf fails or the program does not exit 0."""
    events = list(events)
    with tempfile.NamedTemporaryFile(mode="r", prefix="lp-perfstat-", suffix=".csv") as out:
        cmd = ["perf", "stat", "-x,", "-o", out.name] + (["-a"] if system_wide else [])
        cmd += _event_args(events) + ["--", prog_path] + [str(a) for a in args]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout, preexec_fn=None if aslr else _no_aslr)
        lines = [line for line in out.read().splitlines() if line and not line.startswith("#")]
    if r.returncode:
        raise PerfError("%s %s: exit status %d: %s" % (os.path.basename(prog_path), " ".join(map(str, args)),
                                                      r.returncode, (r.stderr or "".join(lines)).strip()))
    if len(lines) != len(events):
        raise PerfError("perf stat gave %d counts for %d events: %s" % (len(lines), len(events), r.stderr.strip()))
    counts = {}
    for ev, line in zip(events, lines):
        value = line.split(",")[0]
        if value.startswith("<"):
            raise PerfError("perf stat: %s %s" % (ev if isinstance(ev, str) else ev[0], value))
        counts[ev] = _number(value)
    return counts


def _tool(name):
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return shutil.which(name, path=path)


def _run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=TIMEOUT)


@contextlib.contextmanager
def loop_ext4(size_mib=64):
    """A fresh ext4 file system on a loop device, mounted in a temporary
    directory: yields the mount directory, and unmounts, detaches and
    removes everything on the way out, also after an error.  Made with 4 KiB
    blocks and its inode tables and journal written at once (no lazy init),
    so that no kernel thread writes to it in the background.  Raises Skip
    (before yielding) when not root or a tool is missing or fails (a
    container without loop devices)."""
    if os.geteuid() != 0:
        raise Skip("needs root for losetup and mount")
    tools = {name: _tool(name) for name in ("mkfs.ext4", "losetup", "mount", "umount")}
    missing = [name for name, path in tools.items() if not path]
    if missing:
        raise Skip("no %s" % ", ".join(missing))
    tmp = tempfile.mkdtemp(prefix="lp-loop-")
    image = os.path.join(tmp, "ext4.img")
    mnt = os.path.join(tmp, "mnt")
    dev = None
    mounted = False
    try:
        with open(image, "wb") as f:
            f.truncate(size_mib << 20)
        r = _run([tools["mkfs.ext4"], "-q", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", image])
        if r.returncode:
            raise Skip("mkfs.ext4 failed: %s" % r.stderr.strip())
        r = _run([tools["losetup"], "-f", "--show", image])
        if r.returncode:
            raise Skip("losetup failed: %s" % r.stderr.strip())
        dev = r.stdout.strip()
        os.mkdir(mnt)
        r = _run([tools["mount"], "-t", "ext4", dev, mnt])
        if r.returncode:
            raise Skip("cannot mount %s: %s" % (dev, r.stderr.strip()))
        mounted = True
        yield mnt
    finally:
        if mounted and _run([tools["umount"], mnt]).returncode:
            _run([tools["umount"], "-l", mnt])
        if dev:
            _run([tools["losetup"], "-d", dev])
        shutil.rmtree(tmp, ignore_errors=True)


_delivering = {}


def delivering_cpus(lp_exe, env, sleep_prog, tmpdir):
    """The CPUs on which this kernel hands every record of a sleeping
    program to perf.  Some do not: on the test machine (a 6.18 VM) the
    records made in the idle task's context on one CPU (a timer's wake-up of
    the sleeper, the switch from idle to it) reach no perf reader, `perf
    record -a` included.  A recording of sleep_prog (kern_sleep) with 3 sleeps
    kept to each CPU in turn, by layerprof at lp_exe, tells: a switch-in
    missing shows as report --kernel's unpaired_switches.  A CPU gets a
    second try (a loaded machine).  Remembered per process."""
    if lp_exe in _delivering:
        return _delivering[lp_exe][1]
    tried, good = sorted(os.sched_getaffinity(0)), set()
    for cpu in tried:
        trace = os.path.join(tmpdir, "cpu-probe-%d" % cpu)
        for _ in range(2):
            r = subprocess.run([lp_exe, "record", "-q", "--kernel=sched:sched_switch", "-o", trace, "--",
                                sleep_prog, "3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                               timeout=TIMEOUT, preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c}))
            if r.returncode:
                break
            rep = subprocess.run([lp_exe, "report", "--kernel", "--format", "json", trace],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                                 env=env, timeout=TIMEOUT)
            if rep.returncode == 0 and json.loads(rep.stdout).get("unpaired_switches") == 0:
                good.add(cpu)
                break
        shutil.rmtree(trace, ignore_errors=True)
        shutil.rmtree(trace + ".old", ignore_errors=True)
    _delivering[lp_exe] = (set(tried), good)
    return good


def undelivering_cpus(lp_exe):
    """The CPUs delivering_cpus() tried that failed, once it ran."""
    tried, good = _delivering.get(lp_exe, (set(), set()))
    return tried - good if good else set()


def keep_to_delivering_cpus(lp_exe, env, sleep_prog, tmpdir):
    """Keeps this process, and so every program and recorder it starts from
    now, to the CPUs delivering_cpus() finds, saying so, when some CPU does
    not deliver.  Returns the affinity it had."""
    was = os.sched_getaffinity(0)
    good = delivering_cpus(lp_exe, env, sleep_prog, tmpdir)
    if good and good != was:
        print("note: this kernel does not hand perf the idle task's records on CPU %s: the kernel checks run "
              "on CPU %s" % (", ".join(map(str, sorted(was - good))), ", ".join(map(str, sorted(good)))))
        os.sched_setaffinity(0, good)
    return was


@contextlib.contextmanager
def on_delivering_cpus(lp_exe, env, sleep_prog, tmpdir):
    """keep_to_delivering_cpus() for the body of a with statement."""
    was = keep_to_delivering_cpus(lp_exe, env, sleep_prog, tmpdir)
    try:
        yield
    finally:
        os.sched_setaffinity(0, was)


def build_programs(bindir, cc="gcc"):
    """Builds the kern_* programs into bindir as the other samples are
    built; returns {name: path}.  Raises SystemExit with the compiler's
    message when one does not build."""
    paths = {}
    for name in PROGRAMS:
        out = os.path.join(bindir, name)
        r = _run([cc] + CFLAGS + ["-I", PROGS, os.path.join(PROGS, name + ".c"), "-o", out])
        if r.returncode:
            raise SystemExit("cannot build %s: %s" % (name, r.stderr.strip()))
        paths[name] = out
    return paths


class Runs:
    """The counts of several runs of one program, event by event."""

    def __init__(self, prog, args, events, runs, **kw):
        self.label = " ".join([os.path.basename(prog)] + [str(a) for a in args])
        self.values = {ev: [] for ev in events}
        for _ in range(runs):
            counts = perf_counts(prog, args, events, **kw)
            for ev in events:
                self.values[ev].append(counts[ev])
        if kw.get("system_wide"):
            self.label += " (all CPUs)"

    def __getitem__(self, ev):
        return self.values[ev]


def _name(ev):
    return ev if isinstance(ev, str) else "%s [%s]" % ev


def _span(values):
    lo, hi = min(values), max(values)
    fmt = "%.1f" if isinstance(lo, float) else "%d"
    return fmt % lo if lo == hi else (fmt + "..." + fmt) % (lo, hi)


def expect(runs, ev, what, exact=None, at_least=None, note=""):
    """One check on every run's count of ev: exactly exact, or at least
    at_least, or (neither given) only shown."""
    values = runs[ev]
    line = "%s: %s %s = %s" % (runs.label, what, _name(ev), _span(values))
    if note:
        line += " (%s)" % note
    if exact is not None:
        check(all(v == exact for v in values), "%s, expected %d" % (line, exact))
    elif at_least is not None:
        check(all(v >= at_least for v in values), "%s, expected >= %d" % (line, at_least))
    else:
        print("info %s" % line)


def truth_faults(prog, n, aslr):
    fault = fault_event()
    # Arguments of the same length: the loader's faults depend on where the
    # arguments and the environment end on the stack.
    base = Runs(prog, ["00"], [fault], n, aslr=aslr)
    full = Runs(prog, ["64"], [fault], n, aslr=aslr)
    expect(base, fault, "the startup's and exit's page faults")
    check(min(base[fault]) == max(base[fault]), "%s: the startup's page faults are the same in every run" % base.label,
          _span(base[fault]))
    expect(full, fault, "page faults")
    deltas = {f - b for f in full[fault] for b in base[fault]}
    check(deltas == {64}, "kern_faults: touch_pages' 64 fresh pages fault once each (run minus N=0 run)",
          "differences %s" % sorted(deltas))


def truth_sleep(prog, n, aslr):
    wake = own_wakeups(prog)
    base = Runs(prog, [0], [SWITCH_S], n, aslr=aslr)
    expect(base, SWITCH_S, "switches in S without sleeping", exact=0)
    runs = Runs(prog, [], [SWITCH, SWITCH_S, wake, TASK_CLOCK, DURATION], n, aslr=aslr)
    expect(runs, SWITCH_S, "sleeper's voluntary switches", exact=5)
    expect(runs, SWITCH, "all switches", at_least=5)
    expect(runs, wake, "wakeups while the program runs", exact=0,
           note="the timer interrupt wakes it while another task is on the CPU")
    off = [d / 1e6 - t for d, t in zip(runs[DURATION], runs[TASK_CLOCK])]
    check(all(ms >= 10.0 for ms in off), "%s: off the CPU for %s ms, expected >= 10" % (runs.label, _span(off)))
    every = Runs(prog, [], [wake], n, aslr=aslr, system_wide=True)
    expect(every, wake, "wakeups of the program", exact=5)


def truth_pipe(prog, n, aslr):
    wake = own_wakeups(prog)
    base = Runs(prog, [0], [SWITCH_S, wake], n, aslr=aslr)
    expect(base, SWITCH_S, "switches in S without reads", exact=0)
    expect(base, wake, "wakeups without reads", exact=0)
    runs = Runs(prog, [], [SWITCH, SWITCH_S, SWITCH_R, wake], n, aslr=aslr)
    expect(runs, SWITCH_S, "the reader's switches in read", exact=20)
    expect(runs, wake, "wakeups of the reader, by the writer", exact=20)
    expect(runs, SWITCH_R, "the writer's yields and preemptions", at_least=20,
           note="21 when no other task takes the CPU")
    expect(runs, SWITCH, "all switches", at_least=40)
    every = Runs(prog, [], [wake], n, aslr=aslr, system_wide=True)
    expect(every, wake, "wakeups of the program", exact=20)


def truth_preempt(prog, n, aslr):
    runs = Runs(prog, [], [SWITCH, SWITCH_R, SWITCH_S], n, aslr=aslr)
    expect(runs, SWITCH_R, "involuntary switches (>= 1 per spinning thread)", at_least=2)
    expect(runs, SWITCH_S, "voluntary switches (barrier, join)")


def truth_block(prog, n, aslr):
    try:
        with loop_ext4() as mnt:
            path = os.path.join(mnt, "kern_block.dat")
            issue_w = block_event("block_rq_issue", mnt, writes_only=True)
            issue = block_event("block_rq_issue", mnt)
            insert = block_event("block_rq_insert", mnt)
            complete = block_event("block_rq_complete", mnt)
            complete_w = block_event("block_rq_complete", mnt, writes_only=True)
            # the first run on a fresh mount also reads cold metadata
            runs = Runs(prog, [path], [issue_w, issue, insert, complete, SWITCH_D], n, aslr=aslr)
            expect(runs, issue_w, "write requests issued", exact=8)
            expect(runs, issue, "all requests issued", at_least=8, note="reads of cold metadata add some")
            expect(runs, insert, "requests inserted", note="cold metadata read ahead; the loop queue has no scheduler")
            expect(runs, complete, "requests completed in its context", note="completions run in softirq context")
            expect(runs, SWITCH_D, "waits for I/O", at_least=8,
                   note="for each write's data and its journal commit")
            base = Runs(prog, [path, 0], [issue_w], n, aslr=aslr)
            expect(base, issue_w, "write requests without writes", exact=0)
            every = Runs(prog, [path], [issue_w, complete_w], n, aslr=aslr, system_wide=True)
            expect(every, issue_w, "write requests to the device", at_least=8, note="with jbd2's journal writes")
            expect(every, complete_w, "write requests completed", at_least=8, note="with jbd2's journal writes")
    except Skip as e:
        skip("kern_block", str(e))


TRUTHS = {
    "kern_faults": truth_faults,
    "kern_sleep": truth_sleep,
    "kern_pipe": truth_pipe,
    "kern_preempt": truth_preempt,
    "kern_block": truth_block,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bindir", help="the built programs (default: build them with --cc into a temporary directory)")
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--aslr", action="store_true", help="keep address space randomisation on")
    ap.add_argument("programs", nargs="*", metavar="PROGRAM", help="some of: " + ", ".join(PROGRAMS))
    opts = ap.parse_args()
    for name in opts.programs:
        if name not in TRUTHS:
            ap.error("no program %s" % name)
    if os.geteuid() != 0:
        skip("kernel truth", "needs root (tracepoints, loop devices)")
        return summary()
    if not shutil.which("perf"):
        skip("kernel truth", "no perf")
        return summary()
    with tempfile.TemporaryDirectory(prefix="lp-kern-") as tmp:
        bindir = opts.bindir or tmp
        if not opts.bindir:
            build_programs(bindir, opts.cc)
        for name in opts.programs or PROGRAMS:
            try:
                TRUTHS[name](os.path.join(bindir, name), opts.runs, opts.aslr)
            except PerfError as e:
                check(False, name, e)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
