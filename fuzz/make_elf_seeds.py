#!/usr/bin/env python3
"""Writes the seed-* inputs of fuzz/corpus_elf: a tiny program (calls, a
recursion, a tail call, a table of function pointers, a PLT call) built as
x86-64 PIE, non-PIE, shared library and stripped, and for aarch64, ARM and
Thumb where the cross compilers are; then copies of the x86-64 PIE and of the
others truncated or with one field of the ELF file broken (section and
program headers, the symbol table, the code, the machine, a second
dynamic section).  Each file is a
few KB at most.

usage: fuzz/make_elf_seeds.py fuzz/corpus_elf"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

TINY = r"""
int puts(const char *s);
static int __attribute__((noinline)) leaf(int x) { return x * 3; }
static int __attribute__((noinline)) rec(int n) { return n ? rec(n - 1) + leaf(n) : 0; }
static int __attribute__((noinline)) tail(int n) { return leaf(n + 1); }
int (*tab[])(int) = { leaf, tail };
int main(int argc, char **argv) { puts(argv[0]); return rec(argc) + tab[argc & 1](argc); }
"""
# small files: no unwind tables, no build id, the segments packed
FLAGS = ["-Os", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-Wl,--build-id=none",
         "-Wl,-z,noseparate-code", "-Wl,-z,norelro", "-Wl,--hash-style=gnu"]
BUILDS = [("x86-pie", "gcc", ["-fPIE", "-pie"]), ("x86-exec", "gcc", ["-fno-pie", "-no-pie"]),
          ("x86-so", "gcc", ["-fPIC", "-shared"]), ("aarch64", "aarch64-linux-gnu-gcc", []),
          ("arm", "arm-linux-gnueabihf-gcc", ["-marm"]), ("thumb", "arm-linux-gnueabihf-gcc", ["-mthumb"])]


def sections(img):
    """{name: (header offset, sh_offset, sh_size)} of an ELF64 or ELF32 little-endian file."""
    is64 = img[4] == 2
    if is64:
        shoff, = struct.unpack_from("<Q", img, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3a)
    else:
        shoff, = struct.unpack_from("<I", img, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x2e)

    def hdr(i):
        at = shoff + i * shentsize
        if is64:
            name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", img, at)
        else:
            name, _, _, _, off, size = struct.unpack_from("<IIIIII", img, at)
        return at, name, off, size

    _, _, stroff, _ = hdr(shstrndx)
    out = {}
    for i in range(shnum):
        at, name, off, size = hdr(i)
        end = img.index(b"\0", stroff + name)
        out[img[stroff + name:end].decode()] = (at, off, size)
    return out


def put(img, at, fmt, value):
    img = bytearray(img)
    struct.pack_into(fmt, img, at, value)
    return bytes(img)


def damaged(name, img):
    """(suffix, bytes) copies of one build with something broken."""
    is64 = img[4] == 2
    word = "<Q" if is64 else "<I"
    secs = sections(img)
    out = [("trunc-52", img[:52]), ("trunc-100", img[:100]), ("trunc-half", img[:len(img) // 2]),
           ("trunc-last", img[:-1]), ("machine-1234", put(img, 18, "<H", 0x1234))]
    shoff_at, shnum_at, phoff_at = (0x28, 0x3c, 0x20) if is64 else (0x20, 0x30, 0x1c)
    out.append(("shoff-past-end", put(img, shoff_at, word, len(img) - 4)))
    out.append(("shnum-ffff", put(img, shnum_at, "<H", 0xffff)))
    out.append(("phoff-past-end", put(img, phoff_at, word, len(img) + 64)))
    # sh_offset and sh_size fields within a section header
    off_field, size_field = (0x18, 0x20) if is64 else (0x10, 0x14)
    for sec in (".symtab", ".dynsym", ".text", ".dynamic", ".rela.plt", ".rel.plt"):
        if sec not in secs:
            continue
        at, off, size = secs[sec]
        tag = sec.strip(".").replace(".", "-")
        out.append(("%s-size-huge" % tag, put(img, at + size_field, word, 0x7fffffff)))
        out.append(("%s-offset-past-end" % tag, put(img, at + off_field, word, len(img) + 16)))
        if sec == ".dynamic":
            # the next section header made a second copy of .dynamic's
            shentsize = 64 if is64 else 40
            twice = bytearray(img)
            twice[at + shentsize:at + 2 * shentsize] = img[at:at + shentsize]
            out.append(("dynamic-twice", bytes(twice)))
        if sec == ".text":
            junk = bytearray(img)
            junk[off:off + size] = b"\xff" * size
            out.append(("text-undecodable", bytes(junk)))
        if sec == ".symtab":
            # each symbol's value and size swapped into nonsense
            entsize = 24 if is64 else 16
            bad = bytearray(img)
            for i in range(1, size // entsize):
                e = off + i * entsize
                if is64:
                    struct.pack_into("<QQ", bad, e + 8, 0xfffffffffffff000 + i, 0xffffffffffff)
                else:
                    struct.pack_into("<II", bad, e + 4, 0xfffff000 + i, 0xffffffff)
            out.append(("symtab-values-wild", bytes(bad)))
    return [("%s-%s" % (name, s), data) for s, data in out]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    dest = sys.argv[1]
    os.makedirs(dest, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="lp-elf-seeds-")
    src = os.path.join(tmp, "tiny.c")
    with open(src, "w") as f:
        f.write(TINY)
    images = {}
    for name, cc, flags in BUILDS:
        if not shutil.which(cc):
            print("skipping %s: %s is not installed" % (name, cc))
            continue
        out = os.path.join(tmp, name)
        subprocess.run([cc] + FLAGS + flags + [src, "-o", out], check=True)
        subprocess.run(["objcopy" if name.startswith("x86") else cc.replace("gcc", "objcopy"),
                        "--remove-section", ".comment", out], check=True)
        with open(out, "rb") as f:
            images[name] = f.read()
        if name == "x86-pie":
            subprocess.run(["strip", "-o", out + ".stripped", out], check=True)
            with open(out + ".stripped", "rb") as f:
                images["x86-pie-stripped"] = f.read()
    written = []
    for name, img in images.items():
        written.append(("seed-%s" % name, img))
        if name in ("x86-pie", "aarch64", "thumb"):
            written += [("seed-" + n, d) for n, d in damaged(name, img)]
        else:
            written += [("seed-%s-trunc-half" % name, img[:len(img) // 2])]
    for name, data in written:
        with open(os.path.join(dest, name), "wb") as f:
            f.write(data)
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d seeds, %d bytes, in %s" % (len(written), sum(len(d) for _, d in written), dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
