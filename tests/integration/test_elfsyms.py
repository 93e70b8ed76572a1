#!/usr/bin/env python3
"""common/elfsyms against binutils, on real files of three architectures.

For each architecture whose compiler is installed (x86-64 with gcc; aarch64
and armhf with Debian's cross compilers), builds sample programs from
tests/programs in several shapes (-O2 and -O0 PIE, -no-pie, stripped,
stripped with -rdynamic, -z now, aliases of every binding, C++ with weak
template instances, shared libraries, x86-64 IBT PLT) and adds the architecture's libc; then
holds what the host-built elfsyms_dump prints (the driver reads any
architecture's files) against

- readelf -sW: every FUNC and IFUNC symbol with a size and a section, from
  .symtab, or .dynsym when there is none; symbols at one address are one
  function, named global before weak before local, then the shortest name,
  then the first in byte order, with that symbol's size;
- readelf -rW: the JUMP_SLOT relocations of .rela.plt/.rel.plt, in order
  (names and GOT offsets);
- objdump -d: the <name@plt> labels of .plt and .plt.sec are the stubs'
  addresses (on the programs built here, where the layout is the
  linker's usual one, every stub must be known);
- objdump -d -j .plt.got (x86-64): its <name@plt> labels, in order, with
  the GOT slot each jumps through, are the slots listed as .plt.got
  entries (programs and a library that both call and take the address of
  libc functions, with and without IBT and -z now);
- a copy of each file without section headers (e_shoff, e_shnum and
  e_shstrndx zeroed and the section header table cut off, as sstrip
  does): its functions are readelf --dyn-syms -W's of the original (FUNC
  and IFUNC, with a size, by the same rules), its slots the original's
  JUMP_SLOTs with the same stubs (found in the executable segments), no
  .plt.got entries;
- copies of each architecture's PIE, with and without section headers,
  damaged at pseudo-random places (the same every run) are read or
  refused, never a crash (run it with the ASan build's driver for
  out-of-bounds reads).

usage: test_elfsyms.py --build BUILD
Ends with 'N passed, N failed'."""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import check, skip  # noqa: E402

# arch: (toolchain prefix, its libc)
ARCHES = {
    "x86_64": ("", "/lib/x86_64-linux-gnu/libc.so.6"),
    "aarch64": ("aarch64-linux-gnu-", "/usr/aarch64-linux-gnu/lib/libc.so.6"),
    "armhf": ("arm-linux-gnueabihf-", "/usr/arm-linux-gnueabihf/lib/libc.so.6"),
}

# name: (sources, compiler flags); C++ when a source ends in .cc
SHAPES = [
    ("pie", ["threads.c"], ["-O2", "-fpie", "-pie", "-pthread"]),
    ("nopie", ["threads.c"], ["-O2", "-fno-pie", "-no-pie", "-pthread"]),
    ("stripped", ["threads.c"], ["-O2", "-s", "-pthread"]),
    ("rdynamic_stripped", ["threads.c"], ["-O2", "-s", "-rdynamic", "-pthread"]),
    ("znow", ["dlopen_main.c", "shared.c"], ["-O2", "-Wl,-z,now", "-ldl"]),
    ("O0", ["threads.c"], ["-O0", "-pthread"]),
    ("cxx", ["templates.cc"], ["-O2"]),
    ("aliases", ["aliases.c"], ["-O2"]),
    ("lib", ["shared.c"], ["-O2", "-fpic", "-shared"]),
    ("lib_stripped", ["plugin.c"], ["-O2", "-fpic", "-shared", "-s"]),
]
# x86-64 only: calls through .plt.sec (IBT), and through .plt.got
X86_SHAPES = [
    ("ibt", ["threads.c"], ["-O2", "-fcf-protection", "-Wl,-z,ibtplt", "-pthread"]),
    ("pltgot", ["pltgot.c"], ["-O2", "-fpie", "-pie"]),
    ("pltgot_O0", ["pltgot.c"], ["-O0", "-fpie", "-pie"]),
    ("pltgot_ibt", ["pltgot.c"], ["-O2", "-fpie", "-pie", "-fcf-protection", "-Wl,-z,ibtplt"]),
    ("pltgot_now", ["pltgot.c"], ["-O2", "-fpie", "-pie", "-Wl,-z,now"]),
    ("pltgot_lib", ["pltgot.c"], ["-O2", "-fpic", "-shared"]),
]
# the functions pltgot.c calls through .plt.got
PLTGOT_CALLS = {"malloc", "free", "strlen"}

# Aliases of one function of every binding, for the choice of the name
# (written into the temporary directory as aliases.c)
ALIASES_C = r"""
__attribute__((noinline, used)) int aliased_function_long_name(int x)
{
	return x * 7 + 1;
}
int al(int) __attribute__((alias("aliased_function_long_name")));
int zz(int) __attribute__((alias("aliased_function_long_name")));
int w(int) __attribute__((weak, alias("aliased_function_long_name")));
static int l(int) __attribute__((alias("aliased_function_long_name"), used));
__attribute__((weak, noinline, used)) int weak_only(int x)
{
	return x - 3;
}
static int weak_only_local(int) __attribute__((alias("weak_only"), used));
int main(int argc, char **argv)
{
	return al(argc) + weak_only(argc) > 1000;
}
"""

# Functions both called and taken by address: in a PIE or library, ld
# makes their calls go through .plt.got, by the GLOB_DAT slot that holds
# the address (written into the temporary directory as pltgot.c)
PLTGOT_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void *(*volatile take_malloc)(size_t);
void (*volatile take_free)(void *);
size_t (*volatile take_strlen)(const char *);
int main(int argc, char **argv)
{
	char *x;

	take_malloc = malloc;
	take_free = free;
	take_strlen = strlen;
	x = malloc((size_t)argc + 16);
	snprintf(x, 16, "%d", argc);
	printf("%zu\n", strlen(argv[0]) + take_strlen(x));
	free(take_malloc(8));
	take_free(x);
	return 0;
}
"""

RANK = {"GLOBAL": 0, "UNIQUE": 0, "WEAK": 1, "LOCAL": 2}
BIND = {"GLOBAL": "g", "UNIQUE": "g", "WEAK": "w", "LOCAL": "l"}


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, errors="replace")
    return p.returncode, p.stdout, p.stderr


def build(prefix, tmp, arch, shape):
    name, sources, flags = shape
    cxx = any(s.endswith(".cc") for s in sources)
    cc = prefix + ("g++" if cxx else "gcc")
    out = os.path.join(tmp, "%s-%s" % (arch, name))
    paths = [os.path.join(tmp if s in ("aliases.c", "pltgot.c") else PROGS, s) for s in sources]
    cmd = [cc] + flags + ["-I", PROGS, "-o", out] + paths
    rc, _, err = run(cmd)
    if not check(rc == 0, "%s %s: build" % (arch, name), err.strip()):
        return None
    return out


def readelf_functions(prefix, path, dynsym=False):
    """The expected function list: [(addr, size, bind, ifunc, aliases, name)]
    and which table it came from (dynsym: only .dynsym's)."""
    rc, out, err = run([prefix + "readelf", "--dyn-syms" if dynsym else "-sW", "-W", path])
    tables = {}
    current = None
    for line in out.splitlines():
        m = re.match(r"Symbol table '([^']+)' contains", line)
        if m:
            current = tables.setdefault(m.group(1), [])
            continue
        f = line.split()
        if current is None or len(f) < 8 or not f[0].endswith(":") or f[0] == "Num:":
            continue
        value, size, typ, bind, ndx, name = int(f[1], 16), int(f[2], 0), f[3], f[4], f[6], f[7]
        if typ not in ("FUNC", "IFUNC") or size == 0 or ndx == "UND":
            continue
        current.append((value, size, bind, typ == "IFUNC", name))
    table = ".symtab" if ".symtab" in tables else ".dynsym"
    syms = tables.get(table, [])
    if table == ".dynsym":
        # readelf adds the version (from .gnu.version); the name is before it
        syms = [(v, s, b, i, n.split("@")[0]) for v, s, b, i, n in syms]
    by_addr = {}
    for sym in syms:
        by_addr.setdefault(sym[0], []).append(sym)
    expect = []
    for addr in sorted(by_addr):
        group = sorted(by_addr[addr], key=lambda s: (RANK.get(s[2], 0), len(s[4].encode()), s[4].encode()))
        v, s, b, i, n = group[0]
        expect.append((v, s, BIND.get(b, "g"), i, len(group) - 1, n))
    return table, expect


def readelf_plt(prefix, path):
    """[(got, name)] of the JUMP_SLOT relocations, in order."""
    rc, out, err = run([prefix + "readelf", "-rW", path])
    slots, inplt = [], False
    for line in out.splitlines():
        m = re.match(r"Relocation section '([^']+)'", line)
        if m:
            inplt = m.group(1) in (".rela.plt", ".rel.plt")
            continue
        f = line.split()
        if inplt and len(f) >= 5 and f[2].endswith("JUMP_SLOT"):
            slots.append((int(f[0], 16), f[4].split("@")[0]))
    return slots


def objdump_stubs(prefix, path):
    """{name: address} of the <name@plt> labels of .plt and .plt.sec."""
    rc, out, err = run([prefix + "readelf", "-SW", path])
    sections = [s for s in (".plt", ".plt.sec") if re.search(r"\] %s\s" % re.escape(s), out)]
    stubs = {}
    for s in sections:
        rc, out, err = run([prefix + "objdump", "-d", "-j", s, path])
        for m in re.finditer(r"^([0-9a-f]+) <(.+)@plt>:$", out, re.M):
            stubs[m.group(2).split("@")[0]] = int(m.group(1), 16)
    return stubs


def objdump_pltgot(prefix, path):
    """[(got, stub, name)] of the <name@plt> labels of .plt.got, in order,
    with the GOT slot objdump says the entry's jmp loads."""
    rc, out, err = run([prefix + "readelf", "-SW", path])
    if not re.search(r"\] \.plt\.got\s", out):
        return []
    rc, out, err = run([prefix + "objdump", "-d", "-j", ".plt.got", path])
    entries = []
    for m in re.finditer(r"^([0-9a-f]+) <(.+)@plt>:\n(?:.*\n)*?.*\tjmp .*# ([0-9a-f]+) <", out, re.M):
        entries.append((int(m.group(3), 16), int(m.group(1), 16), m.group(2).split("@")[0]))
    return entries


def strip_sections(path, out):
    """Writes a copy of path without section headers: e_shoff, e_shnum and
    e_shstrndx zeroed, and the section header table cut off when it ends
    the file (as it does in what ld writes)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    is64 = data[4] == 2
    # e_shoff; e_shentsize, e_shnum, e_shstrndx (little-endian)
    shoff_at, shoff_len, shent_at = (0x28, 8, 0x3A) if is64 else (0x20, 4, 0x2E)
    shoff = int.from_bytes(data[shoff_at:shoff_at + shoff_len], "little")
    shentsize = int.from_bytes(data[shent_at:shent_at + 2], "little")
    shnum = int.from_bytes(data[shent_at + 2:shent_at + 4], "little")
    data[shoff_at:shoff_at + shoff_len] = bytes(shoff_len)
    data[shent_at + 2:shent_at + 6] = bytes(4)
    if shoff and shoff + shnum * shentsize == len(data):
        del data[shoff:]
    with open(out, "wb") as f:
        f.write(data)


def dump(driver, path):
    rc, out, err = run([driver, path])
    if rc != 0:
        return None, err.strip()
    fns, plt, head = [], [], None
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "elf":
            head = f[1:]
        elif f[0] == "fn":
            fns.append((int(f[1], 16), int(f[2]), f[3], "i" in f[4], int(f[5]), " ".join(f[6:]), f[4]))
        elif f[0] == "plt":
            plt.append((int(f[1], 16), int(f[2], 16), " ".join(f[4:]), f[3]))
    return (head, fns, plt), ""


def first_diff(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "entry %d: got %s, want %s" % (i, g, w)
    return "got %d entries, want %d" % (len(got), len(want))


def check_file(driver, prefix, arch, what, path, known_plt):
    view, err = dump(driver, path)
    if not check(view is not None, "%s %s: elfsyms reads it" % (arch, what), err):
        return
    head, fns, plt = view
    table, expect = readelf_functions(prefix, path)
    check(head[3] == table[1:], "%s %s: functions from %s" % (arch, what, table), head)
    got = [f[:6] for f in fns]
    check(got == expect, "%s %s: %d functions as readelf -sW" % (arch, what, len(expect)), first_diff(got, expect))
    if arch == "armhf":
        wrong = [f for f in fns if ("t" in f[6]) != bool(f[0] & 1)]
        check(not wrong, "%s %s: Thumb functions marked" % (arch, what), wrong[:3])
    jump = 5 if arch == "x86_64" else 4
    wrong = [f for f in fns if ("s" in f[6]) != (f[1] < jump)]
    check(not wrong, "%s %s: functions shorter than a jump marked" % (arch, what), wrong[:3])
    pltgot = [(g, s, n) for g, s, n, t in plt if t == "g"]
    plt = [p for p in plt if p[3] != "g"]
    slots = readelf_plt(prefix, path)
    got = [(g, n) for g, s, n, t in plt]
    check(got == slots, "%s %s: %d PLT slots as readelf -rW" % (arch, what, len(slots)), first_diff(got, slots))
    want = objdump_pltgot(prefix, path)
    check(pltgot == want, "%s %s: %d .plt.got entries as objdump -d" % (arch, what, len(want)), first_diff(pltgot, want))
    if what.startswith("pltgot"):
        names = set(n for g, s, n in pltgot)
        check(PLTGOT_CALLS <= names, "%s %s: %s called through .plt.got" % (arch, what, ", ".join(sorted(PLTGOT_CALLS))),
              sorted(names))
    stubs = objdump_stubs(prefix, path)
    wrong = [(n, hex(s), hex(stubs.get(n, 0))) for g, s, n, t in plt if s and stubs.get(n) != s]
    check(not wrong, "%s %s: PLT stubs at objdump's <name@plt>" % (arch, what), wrong[:3])
    thumb = [n for g, s, n, t in plt if t == "t"]
    if arch != "armhf":
        check(not thumb, "%s %s: no Thumb entries in the PLT" % (arch, what), thumb[:3])
    elif thumb:
        # the Thumb entry is objdump's label, the ARM entry 4 bytes on
        check(True, "%s %s: %d stubs with a Thumb entry" % (arch, what, len(thumb)))
    unknown = [n for g, s, n, t in plt if not s]
    if known_plt:
        check(not unknown, "%s %s: every PLT stub known" % (arch, what), unknown[:3])
    elif unknown:
        skip("%s %s: %d PLT stubs" % (arch, what, len(unknown)), "the PLT's layout is not the usual one")
    return view


def check_no_sections(driver, prefix, arch, what, path, tmp, full):
    """path's copy without section headers against path: its .dynsym
    functions, its JUMP_SLOTs with the stubs full (path's dump) has."""
    copy = os.path.join(tmp, "%s-%s-noshdr" % (arch, what))
    strip_sections(path, copy)
    what += " without section headers"
    rc, out, err = run([prefix + "readelf", "-hW", copy])
    check(re.search(r"Number of section headers:\s+0\n", out) and "Start of section headers:          0 " in out,
          "%s %s: readelf sees none" % (arch, what), out[-300:])
    view, err = dump(driver, copy)
    if not check(view is not None, "%s %s: elfsyms reads it" % (arch, what), err):
        return
    head, fns, plt = view
    check(head[3:] == ["dynsym", "phdrs"], "%s %s: functions from PT_DYNAMIC's symbols" % (arch, what), head)
    table, expect = readelf_functions(prefix, path, dynsym=True)
    got = [f[:6] for f in fns]
    check(got == expect, "%s %s: %d functions as readelf --dyn-syms -W of the original" % (arch, what, len(expect)),
          first_diff(got, expect))
    slots = readelf_plt(prefix, path)
    got = [(g, n) for g, s, n, t in plt]
    check(got == slots, "%s %s: %d PLT slots as readelf -rW of the original" % (arch, what, len(slots)),
          first_diff(got, slots))
    want = [p for p in full[2] if p[3] != "g"]
    check(plt == want, "%s %s: the same stubs as with section headers" % (arch, what), first_diff(plt, want))


def check_damaged(driver, arch, path, tmp, count=300, layout=None):
    """Copies of path with a few bytes changed in its ELF header, program
    and section headers, symbol, string, relocation and hash tables,
    dynamic section and PLT (or anywhere), and cut short: the driver lists
    or refuses each, never dies of a signal (the unit test does the same
    for the build's own class; this covers the others).  layout: the file
    whose sections say where those are (path's own by default)."""
    with open(path, "rb") as f:
        data = f.read()
    rc, out, err = run(["readelf", "-lSW", layout or path])
    regions = [(0, 64)]
    for m in re.finditer(r"\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", out):
        if m.group(2) in ("SYMTAB", "DYNSYM", "STRTAB", "RELA", "REL", "DYNAMIC", "HASH", "GNU_HASH") or \
                m.group(1).startswith(".plt"):
            regions.append((int(m.group(3), 16), int(m.group(4), 16)))
    m = re.search(r"There are \d+ program headers, starting at offset (\d+)", out)
    if m:
        regions.append((int(m.group(1)), 0x400))
    m = re.search(r"There are (\d+) section headers, starting at offset (0x[0-9a-f]+)", out)
    if m:
        regions.append((int(m.group(2), 16), int(m.group(1)) * (64 if data[4] == 2 else 40)))
    rng = random.Random(17)
    damaged = os.path.join(tmp, "damaged")
    results = {0: 0, 1: 0}
    bad = []
    for i in range(count):
        copy = bytearray(data)
        if i % 10 == 9:
            copy = copy[: rng.randrange(len(copy))]
        else:
            for _ in range(rng.randint(1, 4)):
                off, size = rng.choice(regions) if rng.random() < 0.8 else (0, len(copy))
                copy[min(off + rng.randrange(max(size, 1)), len(copy) - 1)] = rng.choice((0, 0xFF, 0x80, rng.randrange(256)))
        with open(damaged, "wb") as f:
            f.write(copy)
        rc, out, err = run([driver, damaged])
        # a sanitizer's report also exits 1 with a message: not a refusal
        if rc in results and (rc == 0 or err.strip()) and "Sanitizer" not in err:
            results[rc] += 1
        else:
            bad.append((i, rc, err.strip()[-200:]))
    check(not bad, "%s%s: %d damaged copies read (%d) or refused (%d)" % (
        arch, " without section headers" if layout else "", count, results[0], results[1]), bad[:2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    driver = os.path.join(args.build, "tests", "elfsyms_dump")
    if not os.path.exists(driver):
        check(False, "elfsyms_dump built", driver)
        return harness.summary()
    tmp = tempfile.mkdtemp(prefix="layerprof-test-elfsyms-")
    try:
        with open(os.path.join(tmp, "aliases.c"), "w") as f:
            f.write(ALIASES_C)
        with open(os.path.join(tmp, "pltgot.c"), "w") as f:
            f.write(PLTGOT_C)
        for arch, (prefix, libc) in ARCHES.items():
            missing = [t for t in ("gcc", "g++", "readelf", "objdump") if not shutil.which(prefix + t)]
            if missing:
                skip(arch, "not installed: " + " ".join(prefix + t for t in missing))
                continue
            for shape in SHAPES + (X86_SHAPES if arch == "x86_64" else []):
                path = build(prefix, tmp, arch, shape)
                view = path and check_file(driver, prefix, arch, shape[0], path, True)
                if view:
                    check_no_sections(driver, prefix, arch, shape[0], path, tmp, view)
                if path and shape[0] == "pie":
                    check_damaged(driver, arch, path, tmp)
                    copy = os.path.join(tmp, "%s-pie-noshdr" % arch)
                    check_damaged(driver, arch, copy, tmp, layout=path)
            view = os.path.exists(libc) and check_file(driver, prefix, arch, "libc", libc, False)
            if view:
                check_no_sections(driver, prefix, arch, "libc", libc, tmp, view)
            elif not os.path.exists(libc):
                skip("%s libc" % arch, libc + " is not installed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return harness.summary()


if __name__ == "__main__":
    sys.exit(main())
