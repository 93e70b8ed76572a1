#!/usr/bin/env python3
"""dyntrace/x86insn (the patch planner's x86-64 decoder) against objdump.

For each file (the C library, the loader, libm, libstdc++, libcrypto where
installed, the python3 and perl programs, layerprof itself), the
host-built x86insn_dump sweeps every function from its start to its end;
objdump -d -w disassembles the same file.  For every instruction the
decoder reports inside a function:

- objdump has an instruction at the same address, of the same length;
- a relative branch's target (jmp, jcc, call, loop, jrcxz, xbegin) is the
  address objdump prints for it, and objdump's mnemonic is a branch;
- a RIP-relative operand's address is the one objdump's comment names.

objdump shows fwait and the x87 instruction after it as one (fstcw is
fwait, fnstcw): the decoder's two count as that one.  The decoder refuses
what it does not know; on these files it must refuse nothing but what
objdump cannot decode either (data inside a function's range: a lone REX
prefix, "(bad)", ".byte"), and those are counted.  x86-64 hosts only
(skips elsewhere).

usage: test_x86insn.py --build BUILD
Ends with 'N passed, N failed'."""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import check, skip, summary  # noqa: E402

FILES = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libm.so.6",
         "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
         "/usr/bin/python3", "/usr/bin/perl"]
KINDS_REL = {1, 2, 3, 4, 9}  # jmp, jcc, call, loop, xbegin
LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
TARGET = re.compile(r"\s([0-9a-f]+) <[^>]*>$")
COMMENT = re.compile(r"#\s+([0-9a-f]+)")
NOT_CODE = re.compile(r"^(rex(\.W?R?X?B?)?|\(bad\)|\.byte .*)$")
WAIT_FORMS = re.compile(r"^f(stcw|stsw|stenv|save|init|clex)\b")
BRANCH = re.compile(r"^(?:(?:bnd|notrack|data16|rex\.?\w*|[a-z]+,p[nt]) )*(j[a-z]+|call|loop[a-z]*|jrcxz|jecxz|xbegin)\b")


def objdump(path):
    """{address: (length, text)} of every instruction objdump prints."""
    r = subprocess.run(["objdump", "-d", "-w", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    out = {}
    for ln in r.stdout.splitlines():
        m = LINE.match(ln)
        if not m:
            continue
        out[int(m.group(1), 16)] = (len(m.group(2).split()), (m.group(3) or "").strip())
    return out


def compare(dump_exe, path):
    name = os.path.basename(path)
    r = subprocess.run([dump_exe, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if not check(r.returncode == 0, "%s: x86insn_dump reads it" % name, r.stderr.strip()):
        return
    ref = objdump(path)
    n, bad, refused, data = 0, [], [], 0
    for ln in r.stdout.splitlines():
        f = ln.split()
        addr = int(f[0], 16)
        if f[1] == "?":
            text = ref.get(addr, (0, "(objdump: none)"))[1]
            if NOT_CODE.match(text):
                data += 1
            else:
                refused.append("%x %s" % (addr, text))
            continue
        if f[1] == "1" and addr in ref and ref[addr][0] > 1 and WAIT_FORMS.match(ref[addr][1]):
            # fwait, then the instruction objdump printed with it
            ref[addr + 1] = (ref[addr][0] - 1, "fn" + ref[addr][1][1:])
            ref[addr] = (1, "fwait")
        n += 1
        length, kind, rel, rip = int(f[1]), int(f[2]), f[3], f[4]
        if addr not in ref:
            bad.append("%x: objdump has no instruction there" % addr)
            continue
        olen, text = ref[addr]
        if olen != length:
            bad.append("%x: length %d, objdump %d (%s)" % (addr, length, olen, text))
            continue
        if kind in KINDS_REL:
            m = TARGET.search(text)
            if not BRANCH.match(text) or not m or int(m.group(1), 16) != int(rel, 16):
                bad.append("%x: branch to %s, objdump '%s'" % (addr, rel, text))
        elif BRANCH.match(text) and "*" not in text and TARGET.search(text):
            bad.append("%x: not a relative branch for the decoder, objdump '%s'" % (addr, text))
        if rip != "-":
            m = COMMENT.search(text)
            if "(%rip)" not in text or not m or int(m.group(1), 16) != int(rip, 16):
                bad.append("%x: RIP-relative %s, objdump '%s'" % (addr, rip, text))
        elif "(%rip)" in text:
            bad.append("%x: RIP-relative for objdump '%s', not for the decoder" % (addr, text))
    print("%s: %d instructions compared; %d refused, %d of them where objdump decodes no instruction either" %
          (name, n, len(refused) + data, data))
    check(not refused, "%s: every instruction of its functions decoded" % name, refused[:20])
    check(n > 0 and not bad, "%s: each one's length, branch target and RIP-relative address are objdump's" % name,
          "%d disagreements: %s" % (len(bad), bad[:20]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    if os.uname().machine != "x86_64":
        skip("test_x86insn", "not an x86-64 host")
        return summary()
    dump = os.path.join(a.build, "tests", "x86insn_dump")
    files = [p for p in FILES if os.path.exists(p)] + [os.path.join(a.build, "host", "layerprof")]
    for path in files:
        compare(dump, path)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
