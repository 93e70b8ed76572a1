"""The shared bookkeeping of the integration suites (run.py, test_agent.py,
test_cross.py, test_live.py, ...): one line per check ('ok', 'FAIL' or
'skip'), a closing 'N passed, N failed' line preceded by every FAIL line
again (a CI log that keeps only the start and the end of the output still
shows what failed), and the exit status it means; and the main() of the
suites made of named groups (run_groups)."""

import argparse
import os
import shutil
import socket
import sys
import tempfile

_counts = {"passed": 0, "failed": 0}
_failures = []  # the FAIL lines, reprinted by summary()

# Every process a suite starts (subprocess.Popen objects): run_groups kills
# those still running when the groups are done.
started = []


def check(ok, what, detail=""):
    """Counts and prints one check; returns ok, so that a caller can stop
    at a failed step."""
    if ok:
        _counts["passed"] += 1
        print("ok   %s" % what)
    else:
        _counts["failed"] += 1
        line = "FAIL %s%s" % (what, (": " + str(detail)) if detail else "")
        _failures.append(line)
        print(line)
    sys.stdout.flush()
    return ok


def skip(what, why):
    """A check that cannot run here, and why (not counted)."""
    print("skip %s: %s" % (what, why))
    sys.stdout.flush()


def failed():
    """The number of failed checks so far."""
    return _counts["failed"]


def summary():
    """Prints every FAIL line again (details cut to one line of at most
    300 characters), then 'N passed, N failed'; returns the exit status: 1
    when a check failed, else 0."""
    if _failures:
        print("-- the failed checks:")
        for line in _failures:
            line = " ".join(line.split())
            print(line if len(line) <= 300 else line[:297] + "...")
    print("%d passed, %d failed" % (_counts["passed"], _counts["failed"]))
    sys.stdout.flush()
    return 1 if _counts["failed"] else 0


def sanitized(build):
    """True when the build directory's project is instrumented by the
    sanitizers (LP_SANITIZE)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return any(line.strip() == "LP_SANITIZE:BOOL=ON" for line in f)
    except OSError:
        return False


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A TCP port free on host now (another process may take it before the
    caller binds it)."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kill_started():
    """Kills and reaps every started process still running."""
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def run_groups(groups, setup, prefix="layerprof-test-"):
    """The main() of a suite made of named groups ({name: function}).
    Parses --build DIR, --keep and the names of the groups to run (all, in
    name order, when none is given; an unknown one is a usage error, exit
    2).  setup(build) is called with the build directory made absolute: it
    returns the arguments every group takes before the temporary directory
    (a tuple), or None after saying with skip() why the suite cannot run
    here.  Each group then runs as group(*args, tmp), tmp being one
    temporary directory (named after prefix) for the whole run; a group
    that raises counts as one failed check and the next group runs.  At the
    end every process in `started` still running is killed, and tmp is
    removed unless --keep.  Returns summary()'s exit status."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("groups", nargs="*", metavar="GROUP", help=", ".join(sorted(groups)))
    args = ap.parse_args()
    for g in args.groups:
        if g not in groups:
            ap.error("unknown group '%s': %s" % (g, ", ".join(sorted(groups))))
    build = os.path.abspath(args.build)
    common = setup(build)
    if common is None:
        return summary()
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        for g in args.groups or sorted(groups):
            try:
                groups[g](*(tuple(common) + (tmp,)))
            except Exception as e:  # a broken step fails the group, loudly
                check(False, "group %s ran to the end" % g, "%s: %s" % (type(e).__name__, e))
    finally:
        kill_started()
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return summary()
