#!/usr/bin/env bash
# Download the real NVIDIA wheels used by the real-input test suites into a cache
# outside the repository (default: ~/.cache/cuenv-real-wheels, override with
# CUENV_REAL_WHEELS). Wheels already present are reused, so CI pays the download once.
# Members of further releases go to <cache>/members (scripts/fetch-real-members.py).
#
# Usage: scripts/fetch-real-wheels.sh   (prints the cache folder on its last line)
set -euo pipefail
cache="${CUENV_REAL_WHEELS:-$HOME/.cache/cuenv-real-wheels}"
mkdir -p "$cache"

# name==version  platform-tag
wanted=(
  "nvidia-cudnn-cu12==9.5.0.50 manylinux2014_x86_64"
  "nvidia-cudnn-cu12==9.5.0.50 win_amd64"
  "nvidia-cudnn-cu12==8.9.4.25 manylinux1_x86_64"
  "nvidia-cudnn-cu12==8.9.4.25 win_amd64"
  "nvidia-cudnn-cu11==8.8.0.121 manylinux1_x86_64"
  "nvidia-cuda-runtime-cu12==12.6.77 manylinux2014_x86_64"
  "nvidia-cuda-runtime-cu12==12.6.77 win_amd64"
  "nvidia-cuda-runtime-cu11==11.8.89 manylinux1_x86_64"
)

for item in "${wanted[@]}"; do
  spec=${item% *}
  plat=${item#* }
  name=${spec%%==*}
  ver=${spec#*==}
  file_glob="${name//-/_}-${ver}-*"
  if [[ $plat == win_amd64 ]]; then file_glob+="win_amd64.whl"; else file_glob+="manylinux*.whl"; fi
  # shellcheck disable=SC2086
  if compgen -G "$cache/$file_glob" >/dev/null; then
    continue
  fi
  extra=()
  if [[ $plat == manylinux* ]]; then
    extra=(--platform manylinux1_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64)
  else
    extra=(--platform win_amd64)
  fi
  echo "fetching $spec ($plat) into $cache" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --implementation cp "${extra[@]}" -d "$cache" "$spec" >&2
done
# Single members of other releases (a dispatcher, a graph library, one sub-library), taken
# out of their wheels with HTTP range requests and checked against each wheel's RECORD.
python3 "$(dirname "$0")/fetch-real-members.py" "$cache" >&2
# The frameworks' METADATA (their Requires-Dist pins), one small file per release.
python3 "$(dirname "$0")/fetch-real-metadata.py" "$cache" >&2
echo "$cache"
