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

# prefault MIB: touches MIB MiB of fresh anonymous memory, then frees it. This project's
# virtual machines hand memory freed for a second or two back to their host (virtio-balloon
# free page reporting, /sys/module/page_reporting), and the next process to touch it pays for
# the host backing it again: `dd` of 2 GB into the page cache took 0.47 s right after 2 GB
# were freed and 14-23 s one to six seconds later (2026-12-03). Run just before each timed
# command, this gives every tool the same backed memory, so the benchmark measures the tools,
# not when the host last reclaimed pages.
prefault() {
  python3 -c 'import mmap, sys
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n)
chunk = b"\1" * (64 << 20)
for _ in range(n // len(chunk)):
    m.write(chunk)' "$1"
}
