# Sourced by the benchmarks that measure cuenv against uv (benches/vs_uv.sh,
# benches/lab_fresh.sh): the one pinned uv, installed once with pip into
# ~/.cache/cuenv-bench (CUENV_BENCH_CACHE overrides), and `ratio A B` (A / B, 2 decimals).
uv_version=0.13.8
bench=${CUENV_BENCH_CACHE:-$HOME/.cache/cuenv-bench}
uv=$bench/uv-$uv_version/bin/uv
if [[ ! -x $uv ]]; then
  python3 -m pip install -q --disable-pip-version-check --target "$bench/uv-$uv_version" "uv==$uv_version" >&2
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
