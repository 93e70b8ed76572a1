"""The shared bookkeeping of the integration suites (run.py, test_agent.py,
test_cross.py, test_live.py): one line per check ('ok', 'FAIL' or 'skip'),
a closing 'N passed, N failed' line, and the exit status it means."""

import sys

_counts = {"passed": 0, "failed": 0}


def check(ok, what, detail=""):
    """Counts and prints one check; returns ok, so that a caller can stop
    at a failed step."""
    if ok:
        _counts["passed"] += 1
        print("ok   %s" % what)
    else:
        _counts["failed"] += 1
        print("FAIL %s%s" % (what, (": " + str(detail)) if detail else ""))
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
    """Prints 'N passed, N failed' and returns the exit status: 1 when a
    check failed, else 0."""
    print("%d passed, %d failed" % (_counts["passed"], _counts["failed"]))
    sys.stdout.flush()
    return 1 if _counts["failed"] else 0
