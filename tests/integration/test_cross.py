#!/usr/bin/env python3
"""The target side built for another architecture, run under qemu-user: the
cross-built agent starts a cross-built instrumented program (through the
static qemu, so no binfmt registration is needed), streams its trace over
loopback, and the host's own layerprof reads it with exact counts.

usage: test_cross.py --arch aarch64|armhf --build CROSS_BUILD --host-build HOST_BUILD
Ends with 'N passed, N failed'."""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
import lpwire  # noqa: E402
from harness import check  # noqa: E402

ARCHES = {
    "aarch64": ("aarch64-linux-gnu-", "qemu-aarch64-static", "/usr/aarch64-linux-gnu", 64),
    "armhf": ("arm-linux-gnueabihf-", "qemu-arm-static", "/usr/arm-linux-gnueabihf", 32),
}




def run_program(port, token, qemu, sysroot, prog, args, save):
    c = lpwire.Client("127.0.0.1", port, timeout=30)
    ftype, _ = c.handshake(token)
    if ftype != lpwire.WELCOME:
        return {"error": "no WELCOME"}
    ftype, payload = c.start([qemu, "-L", sysroot, prog] + args)
    if ftype != lpwire.SESSION:
        return {"error": payload.decode(errors="replace")}
    c.wait_for(lambda t, p: t == lpwire.STATUS and lpwire.kv(p).get("event") == "exit", timeout=120)
    c.save(save)
    c.send(lpwire.BYE)
    c.close()
    return {"exit": [s for s in c.status if s.get("event") == "exit"][0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True, choices=sorted(ARCHES))
    ap.add_argument("--build", required=True)
    ap.add_argument("--host-build", required=True)
    ap.add_argument("--prefix", help="toolchain prefix (default: Debian's)")
    ap.add_argument("--libs", help="the target's library root for qemu -L (default: Debian's)")
    args = ap.parse_args()
    prefix, qemu, sysroot, bits = ARCHES[args.arch]
    prefix = args.prefix or prefix
    sysroot = args.libs or sysroot
    qemu_path = shutil.which(qemu)
    if not qemu_path or not shutil.which(prefix + "gcc"):
        print("skip cross test for %s: %s or %sgcc is not installed" % (args.arch, qemu, prefix))
        harness.summary()
        return 0
    build = os.path.abspath(args.build)
    lp = os.path.join(os.path.abspath(args.host_build), "host", "layerprof")
    tmp = tempfile.mkdtemp(prefix="layerprof-cross-")
    agent = None
    try:
        progs = {}
        for name in ("recursion", "threads", "forker"):
            out = os.path.join(tmp, name)
            subprocess.run([prefix + "gcc", "-O2", "-g", "-finstrument-functions", "-pthread", "-I", PROGS,
                            os.path.join(PROGS, name + ".c"), "-o", out], check=True)
            progs[name] = out
        port = harness.free_port()
        # TCP needs a token, on loopback too
        token = os.urandom(24).hex()
        with open(os.open(os.path.join(tmp, "token"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(token + "\n")
        log = open(os.path.join(tmp, "agent.log"), "w")
        agent = subprocess.Popen([qemu_path, "-L", sysroot, os.path.join(build, "agent", "layerprofd"), "--listen",
                                  "127.0.0.1:%d" % port, "--token-file", os.path.join(tmp, "token"), "--lib",
                                  os.path.join(build, "runtime", "liblayerprof.so"), "--attach-dir",
                                  os.path.join(tmp, "attach")],
                                 stdout=log, stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        expect = {
            "recursion": {"main": 1, "fib": 1973},
            "threads": {"main": 1, "thread_main": 4, "worker": 4, "leaf": 1000, "late_thread": 1, "late_work": 7},
            "forker": {"main": 1, "before_fork": 1, "child_work": 3, "parent_work": 2},
        }
        for name, want in expect.items():
            save = os.path.join(tmp, name + ".trace")
            out = run_program(port, token, qemu_path, sysroot, progs[name], [], save)
            if not check(out.get("exit", {}).get("status") == "0", "%s %s: ran under qemu, exit 0" %
                         (args.arch, name), out):
                continue
            r = subprocess.run([lp, "report", "--format", "json", save], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
            if not check(r.returncode == 0, "%s %s: the host reads the %d-bit trace" % (args.arch, name, bits),
                         r.stderr):
                continue
            d = json.loads(r.stdout)
            got = {f["name"]: f["calls"] for f in d["functions"]}
            check(got == want and d["lost_events"] == 0, "%s %s: exact call counts on the host" %
                  (args.arch, name), got)
        # the sizes of the target side, stripped
        for f in (os.path.join(build, "runtime", "liblayerprof.so"), os.path.join(build, "agent", "layerprofd")):
            s = os.path.join(tmp, os.path.basename(f) + ".stripped")
            subprocess.run([prefix + "strip", "-o", s, f], check=True)
            print("size %s %s: %d bytes stripped" % (args.arch, os.path.basename(f), os.path.getsize(s)))
    finally:
        if agent:
            agent.terminate()
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
