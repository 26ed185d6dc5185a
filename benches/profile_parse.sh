#!/usr/bin/env bash
# Benchmark: `cuenv plan` of generated profile files, to show parsing is linear in the file's
# size. Each file holds N profiles, each with an unknown key (so every
# profile yields one diagnostic: the worst case for error rendering), plus one valid file and
# a 10 MB file of 262,144 short valid profiles. Reports wall seconds, peak RSS and the exit code of each run.
#
# Usage: benches/profile_parse.sh [N...]   (default: 1000 8000 10000 16000 262144)
#   Builds and uses target/release/cuenv, or CUENV_BIN when set (e.g. an older build to
#   compare); TIMEOUT (seconds, default 600) stops a run that takes longer (exit 124).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 8000 10000 16000 262144)
if [ -z "${CUENV_BIN:-}" ]; then cargo build --release -q; fi
cuenv=${CUENV_BIN:-$PWD/target/release/cuenv}
limit=${TIMEOUT:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUENV_HOME=$work/home

gen() { # gen N KIND FILE: N profiles; KIND=unknown adds an unknown key to each
  awk -v n="$1" -v kind="$2" 'BEGIN {
    for (i = 0; i < n; i++) {
      if (kind == "compact") { printf "[profiles.p%06d]\ncuda=\"12\"\ncudnn=\"9\"\n", i; continue }
      printf "[profiles.p%d]\ncuda = \"12\"\ncudnn = \"9\"\n", i
      if (kind == "unknown") printf "chek = \"conv\"\n"
    }
  }' > "$3"
}

run() { # run LABEL FILE
  local rc secs kb
  /usr/bin/time -f '%e %M' -o "$work/time" timeout "$limit" "$cuenv" plan "$2" >/dev/null 2>"$work/stderr" && rc=0 || rc=$?
  read -r secs kb < <(tail -n1 "$work/time")
  printf '%-28s %10s bytes  %8ss  %7s MB  exit %s\n' "$1" "$(stat -c %s "$2")" "$secs" "$((kb / 1024))" "$rc"
  sed -n '1p' "$work/stderr" | cut -c1-110 | sed 's/^/    /'
}

for n in "${counts[@]}"; do
  gen "$n" unknown "$work/lab-$n.toml"
  run "$n profiles, unknown key" "$work/lab-$n.toml"
done
gen 10000 valid "$work/valid.toml"
run "10000 valid profiles" "$work/valid.toml"
gen 262144 compact "$work/10mb.toml"
run "262144 profiles, 10 MB" "$work/10mb.toml"
