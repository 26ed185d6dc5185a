#!/usr/bin/env bash
# Builds what a user installs cuenv from (issue 34), into one folder, and publishes nothing:
#
#   cuenv-<v>-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl   pip / pipx / uv (Linux)
#   cuenv-<v>-py3-none-win_amd64.whl                                     pip / pipx / uv (Windows)
#   cuenv-<v>-x86_64-unknown-linux-gnu.tar.gz  (+ .sha256)               cuenv-<v>-x86_64-unknown-linux-gnu/cuenv
#   cuenv-<v>-x86_64-pc-windows-gnu.zip        (+ .sha256)               cuenv.exe at the top
#   scoop/cuenv.json                                                     a Scoop manifest for the zip
#   winget/<id>/<v>/<id>{,.installer,.locale.en-US}.yaml                 a winget manifest for the zip
#   SHA256SUMS                                                           every file above (sha256sum -c)
#
# <v> is the crate's version (Cargo.toml). Each wheel is built once by maturin (pinned in
# pyproject.toml, run from the given venv) and holds the release binary and the licence files
# the package declares, nothing else; each archive carries the very binary of its wheel, and
# the manifests name the archive's URL (--url-base), its SHA-256 and the binary inside it.
# tests/it/dist.rs checks all of that against the files (CUENV_DIST_DIR=<out>).
#
# The Linux wheel is linked by zig (maturin --zig, the `ziglang` package from PyPI) against
# glibc 2.17's symbol versions, so the manylinux_2_17 tag is true (maturin's auditwheel check
# fails the build otherwise); liblzma is linked in statically (LZMA_API_STATIC), the binary then
# needs only glibc's own libc, libm, libdl, libpthread and loader. A plain host link (gcc, here
# glibc 2.36) would need GLIBC_2.34 symbols and the system's liblzma (docs/distribution.md).
#
# Usage: scripts/dist.sh [--out DIR] [--url-base URL] [--venv DIR]
#   --out DIR       where everything goes (default: <target dir>/dist; emptied first, so it must
#                   be empty, missing, or an earlier output of this script: .cuenv-dist in it)
#   --url-base URL  the folder URL the archives will be downloaded from (default: Cargo.toml's
#                   `repository` + /releases/download/v<v>, else a placeholder on example.invalid;
#                   give tests/it/dist.rs the same in CUENV_DIST_URL_BASE)
#   --venv DIR      a venv with maturin, ziglang (default: ~/.cache/cuenv-ci/dist-venv, the one
#                   .ci/run installs; `pip install maturin==<pin> ziglang==<pin>` makes one)
# Needs: cargo with the x86_64-pc-windows-gnu target, x86_64-w64-mingw32-gcc, python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cd "$repo"

out="" url_base="" venv="${XDG_CACHE_HOME:-$HOME/.cache}/cuenv-ci/dist-venv"
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --url-base) url_base=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    *) echo "dist: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -x $venv/bin/maturin ]] || { echo "dist: no maturin in $venv/bin (install it: $venv/bin/pip install maturin ziglang, versions as in .ci/run)" >&2; exit 2; }
pinned=$(sed -n 's/^requires = \["maturin==\([^"]*\)"\]$/\1/p' pyproject.toml)
have=$("$venv/bin/maturin" --version | awk '{print $2}')
[[ $have == "$pinned" ]] || { echo "dist: $venv has maturin $have, pyproject.toml pins $pinned" >&2; exit 2; }

meta=$(cargo metadata --no-deps --format-version 1 --locked)
field() { python3 -c 'import json,sys; p=json.load(sys.stdin)["packages"][0]; print(p.get(sys.argv[1]) or "")' "$1" <<<"$meta"; }
target_dir=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")
version=$(field version)
repository=$(field repository)
license=$(field license)
if [[ -z $url_base ]]; then
  if [[ -n $repository ]]; then url_base="${repository%/}/releases/download/v$version"
  else url_base="https://example.invalid/cuenv/releases/download/v$version"; fi
fi
if [[ -z $license ]]; then
  echo "dist: Cargo.toml sets no \`license\`: the manifests say \"unspecified\"; set it before publishing" >&2
  license=unspecified
fi
out=${out:-$target_dir/dist}
if [[ -d $out && -n $(ls -A "$out") && ! -f $out/.cuenv-dist ]]; then
  echo "dist: $out holds files this script did not write (no .cuenv-dist marker): give an empty or new --out" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/.cuenv-dist"   # marks the folder as this script's, for the next run's `rm -rf`

export PATH="$venv/bin:$PATH"
step() { printf 'dist: %s (%s)\n' "$1" "$(date -u +%H:%M:%S)" >&2; }

step "Linux wheel (maturin --zig, manylinux_2_17)"
LZMA_API_STATIC=1 maturin build --release --locked --zig --compatibility manylinux_2_17 --auditwheel check --out "$out"
# lzma-sys builds its bundled liblzma for this cross target anyway (pkg-config refuses to
# cross-compile), so without LZMA_API_STATIC the Wine suite's release dependencies are reused.
step "Windows wheel (maturin, x86_64-pc-windows-gnu)"
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
  maturin build --release --locked --target x86_64-pc-windows-gnu --out "$out"

step "archives, SHA-256 files and manifests"
python3 - "$out" "$version" "$url_base" "$license" "$repo/packaging" <<'PY'
import gzip, hashlib, io, json, re, sys, tarfile, zipfile
from pathlib import Path

out, version, url_base, license, templates = Path(sys.argv[1]), *sys.argv[2:6]
templates = Path(templates)
wheels = sorted(out.glob(f"cuenv-{version}-*.whl"))

def wheel_of(tag):
    found = [w for w in wheels if tag in w.name.split("-")[-1]]
    if len(found) != 1:
        sys.exit(f"dist: expected one {tag} wheel in {out}, found {[w.name for w in wheels]}")
    return found[0]

def members(wheel, exe):
    """The binary and the licence files of a wheel, as (name in the archive, bytes, mode)."""
    with zipfile.ZipFile(wheel) as z:
        binary = f"cuenv-{version}.data/scripts/{exe}"
        files = [(exe, z.read(binary), 0o755)]
        for n in z.namelist():
            if n.startswith(f"cuenv-{version}.dist-info/licenses/"):
                files.append((n.split("/licenses/", 1)[1], z.read(n), 0o644))
    return files

def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()

def write_sha(path):
    digest = sha256(path)
    Path(f"{path}.sha256").write_text(f"{digest}  {path.name}\n")
    return digest

# The tarball: one folder named like the archive, fixed times and owners (reproducible).
stem = f"cuenv-{version}-x86_64-unknown-linux-gnu"
tgz = out / f"{stem}.tar.gz"
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    for name, data, mode in members(wheel_of("manylinux_2_17_x86_64"), "cuenv"):
        info = tarfile.TarInfo(f"{stem}/{name}")
        info.size, info.mode, info.mtime = len(data), mode, 0
        t.addfile(info, io.BytesIO(data))
with open(tgz, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as g:
    g.write(raw.getvalue())
write_sha(tgz)

# The zip: cuenv.exe at the top (what Scoop's `bin` and winget's RelativeFilePath name).
zip_path = out / f"cuenv-{version}-x86_64-pc-windows-gnu.zip"
bin_name = "cuenv.exe"
with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data, mode in members(wheel_of("win_amd64"), bin_name):
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100000 | mode) << 16
        z.writestr(info, data)
zip_sha = write_sha(zip_path)

values = {
    "VERSION": version,
    "URL": f"{url_base.rstrip('/')}/{zip_path.name}",
    "SHA256": zip_sha,
    "SHA256_UPPER": zip_sha.upper(),
    "BIN": bin_name,
    "LICENSE": license,
    "DESCRIPTION": "A verified, content-addressed store of cuDNN releases, with per-project profiles, generations and rollback",
    "HOMEPAGE": url_base.split("/releases/download/")[0],
    "IDENTIFIER": "cuenv.cuenv",
}

def render(template, dest):
    text = template.read_text()
    for k, v in sorted(values.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f"@{k}@", v)
    leftover = re.findall(r"@[A-Z0-9_]+@", text)
    if leftover:
        sys.exit(f"dist: {template} has placeholders dist.sh does not fill: {leftover}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)

render(templates / "scoop/cuenv.json.in", out / "scoop/cuenv.json")
json.loads((out / "scoop/cuenv.json").read_text())  # a template edit that breaks JSON fails here
ident = values["IDENTIFIER"]
wdir = out / "winget" / ident / version
render(templates / "winget/cuenv.yaml.in", wdir / f"{ident}.yaml")
render(templates / "winget/cuenv.installer.yaml.in", wdir / f"{ident}.installer.yaml")
render(templates / "winget/cuenv.locale.en-US.yaml.in", wdir / f"{ident}.locale.en-US.yaml")

files = sorted(p for p in out.rglob("*") if p.is_file() and p.name not in ("SHA256SUMS", ".cuenv-dist") and not p.name.endswith(".sha256"))
(out / "SHA256SUMS").write_text("".join(f"{sha256(p)}  {p.relative_to(out).as_posix()}\n" for p in files))
PY
step "done: $out"
ls -l "$out" >&2
