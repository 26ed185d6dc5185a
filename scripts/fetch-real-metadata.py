#!/usr/bin/env python3
"""Fetch the core metadata (the wheel's METADATA file) of real framework releases from PyPI,
one wheel per release, without downloading any wheel: PyPI serves each wheel's METADATA
beside it as `<wheel url>.metadata` (PEP 658); where it does not, the wheel's
`*.dist-info/METADATA` member is read by HTTP range requests (scripts/fetch-real-members.py's
RangeFile: the central directory and one member, never the whole wheel). Kept in
    <cache>/metadata/<project>/<version>.METADATA
with <cache>/metadata/<project>/<version>.wheel naming the wheel it was read from. The
real-input suite (tests/it/requires_real.rs) reads them with cuenv's requirement reader.

Releases: every release on PyPI's index (no pre-release) from the floor in RANGES on, so a new
release is read the day it appears. The wheel picked per release: Linux x86_64 (CPython 3.11
where the release has one), as the Linux profiles are judged.

Usage: scripts/fetch-real-metadata.py CACHE   (reused when present; standard library only)
"""
import importlib.util
import io
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("members", os.path.join(HERE, "fetch-real-members.py"))
members = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(members)

# (project, floor): issue 32's ranges.
RANGES = [
    ("torch", (2, 4)),
    ("tensorflow", (2, 10)),
    ("onnxruntime-gpu", (1, 17)),
    ("ctranslate2", (3, 0)),
    ("jax-cuda12-plugin", (0, 4)),
    ("jax-cuda12-pjrt", (0, 4)),
    ("jax-cuda13-plugin", (0, 7)),
    ("paddlepaddle-gpu", (2, 5)),
]


def get(url, accept=None):
    for attempt in range(4):
        try:
            req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404 or attempt == 3:
                raise
            time.sleep(2 * (attempt + 1))
        except OSError:
            if attempt == 3:
                raise
            time.sleep(2 * (attempt + 1))


def release(version):
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)*(?:\.post\d+)?", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def pick(files):
    linux = [f for f in files if re.search(r"(manylinux|linux)[^-]*x86_64", f["filename"])]
    for f in linux:
        if "-cp311-" in f["filename"]:
            return f
    return linux[0] if linux else None


def main():
    cache = sys.argv[1]
    for project, floor in RANGES:
        folder = os.path.join(cache, "metadata", project)
        os.makedirs(folder, exist_ok=True)
        index = json.loads(get("https://pypi.org/simple/%s/" % project, "application/vnd.pypi.simple.v1+json"))
        by_version = {}
        for f in index["files"]:
            if not f["filename"].endswith(".whl") or f.get("yanked"):
                continue
            v = f["filename"].split("-")[1]
            r = release(v)
            if r and r >= floor:
                by_version.setdefault(v, []).append(f)
        for v, files in sorted(by_version.items()):
            out = os.path.join(folder, v + ".METADATA")
            if os.path.isfile(out):
                continue
            f = pick(files)
            if f is None:
                continue
            try:
                data = get(f["url"] + ".metadata")
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    raise
                z = zipfile.ZipFile(io.BufferedReader(members.RangeFile(f["url"], f["size"]), buffer_size=1 << 16))
                name = [n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
                data = z.read(name[0])
            tmp = out + ".part"
            with open(tmp, "wb") as fh:
                fh.write(data)
            with open(os.path.join(folder, v + ".wheel"), "w") as fh:
                fh.write(f["filename"] + "\n")
            os.replace(tmp, out)
            print("metadata: %s %s (%s)" % (project, v, f["filename"]), file=sys.stderr)
    print(os.path.join(cache, "metadata"))


if __name__ == "__main__":
    main()
