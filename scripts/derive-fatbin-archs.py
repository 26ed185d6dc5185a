#!/usr/bin/env python3
"""Derive, for every cuDNN release on PyPI, the GPU architectures its libraries carry.

For each release of nvidia-cudnn-cu11, -cu12 and -cu13 (final releases: no .dev, no .post) this
reads one library of the manylinux x86_64 wheel through HTTP range requests (no whole wheel is
downloaded, nothing is kept): the smallest library that carries GPU code (9.x `libcudnn_cnn.so.9`,
8.x the smallest `libcudnn_*.so.8` sub-library by compressed size), checks it against the wheel's
RECORD, and lists the architectures of the `.nv_fatbin` section's entries: SASS (cubin, kind 2)
and PTX (kind 1). The container layout is the one src/sys/fatbin.rs reads (16-byte header, magic
0xBA55ED50; entries with kind at 0, header size at 4, payload size at 8, arch at 28).

Output: docs/fatbin-archs.tsv (derived data, no NVIDIA binary), one row per release and CUDA
variant: project, version, member, the member's sha256 (as its wheel's RECORD writes it: urlsafe
base64 without padding), SASS archs, PTX archs (10*major+minor), entries read.
Rows already present are kept (the run resumes); `--only 9.11.0.98` limits it to releases given.

Usage: scripts/derive-fatbin-archs.py [--only V ...]    (standard library only, python3 >= 3.8)
"""
import base64
import hashlib
import importlib.util
import io
import os
import struct
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "docs", "fatbin-archs.tsv")
PROJECTS = ["nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"]
HEADER = "project\tversion\tmember\tsha256\tsass\tptx\tentries"

spec = importlib.util.spec_from_file_location("members", os.path.join(HERE, "fetch-real-members.py"))
members = importlib.util.module_from_spec(spec)
spec.loader.exec_module(members)


def elf_section(d, want):
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    secs = []
    for i in range(shnum):
        name, _typ, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
        secs.append((name, off, size))
    stro = secs[shstrndx][1]
    for name, off, size in secs:
        if d[stro + name:d.index(b"\0", stro + name)] == want:
            return off, size
    return None


def fatbin_archs(d, off, size):
    end, p, sass, ptx, n = off + size, off, set(), set(), 0
    while p + 16 <= end:
        magic, version, hsize, fsize = struct.unpack_from("<IHHQ", d, p)
        if magic != 0xBA55ED50 or version != 1 or hsize < 16:
            p += 8
            continue
        q, cend = p + hsize, min(end, p + hsize + fsize)
        while q + 32 <= cend:
            kind, _v, ehsize, psize = struct.unpack_from("<HHIQ", d, q)
            arch = struct.unpack_from("<I", d, q + 28)[0]
            if ehsize == 0:
                break
            (ptx if kind == 1 else sass).add(arch)
            n += 1
            q += ehsize + psize
        p = cend
    return sorted(sass), sorted(ptx), n


def final(v):
    return all(x.isdigit() for x in v.split("."))


def key(v):
    return [int(x) for x in v.split(".")]


def main():
    only = set(sys.argv[sys.argv.index("--only") + 1:]) if "--only" in sys.argv else None
    rows = {}
    if os.path.exists(OUT):
        for line in open(OUT).read().splitlines()[1:]:
            if line.strip():
                rows[tuple(line.split("\t")[:2])] = line
    for project in PROJECTS:
        files = members.files_of(project)
        versions = {}
        for f in files:
            name = f["filename"]
            if not name.endswith(".whl") or "manylinux" not in name or "x86_64" not in name:
                continue
            v = name.split("-")[1]
            if final(v) and key(v)[0] >= 8:
                versions.setdefault(v, f)
        for v in sorted(versions, key=key):
            if (project, v) in rows or (only and v not in only):
                continue
            f = versions[v]
            size = f.get("size")
            z = zipfile.ZipFile(io.BufferedReader(members.RangeFile(f["url"], size), buffer_size=1 << 22))
            libs = [i for i in z.infolist() if "/lib/libcudnn_" in i.filename]
            cnn = [i for i in libs if i.filename.endswith("/libcudnn_cnn.so.9")]
            pick = cnn[0] if cnn else min(libs, key=lambda i: i.compress_size)
            print("%s %s: %s (%d MB compressed)" % (project, v, pick.filename, pick.compress_size >> 20), file=sys.stderr)
            record = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
            want = members.record_hashes(z, record[0]).get(pick.filename)
            data = z.read(pick.filename)
            got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if want != got:
                sys.exit("derive-fatbin-archs: %s in %s does not match its RECORD hash" % (pick.filename, f["filename"]))
            sec = elf_section(data, b".nv_fatbin")
            sass, ptx, n = fatbin_archs(data, *sec) if sec else ([], [], 0)
            rows[(project, v)] = "\t".join([project, v, os.path.basename(pick.filename), got,
                                           ",".join(map(str, sass)), ",".join(map(str, ptx)), str(n)])
            write(rows)
    write(rows)


def write(rows):
    order = sorted(rows, key=lambda k: (k[0], key(k[1])))
    with open(OUT + ".part", "w") as out:
        out.write(HEADER + "\n" + "".join(rows[k] + "\n" for k in order))
    os.replace(OUT + ".part", OUT)


if __name__ == "__main__":
    main()
