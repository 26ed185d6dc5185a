#!/usr/bin/env bash
# Real-input suite: downloads the real NVIDIA cuDNN and CUDA runtime wheels (once; cached
# outside the repo in ${CUENV_REAL_WHEELS:-~/.cache/cuenv-real-wheels}), then runs the
# ignored real-input tests:
#   tests/real_wheels.rs  import each wheel: version, CUDA major, platform, library set,
#                         `store verify` before and after flipping one byte;
#   tests/real_apply.rs   the main job: plan, apply (with its check), the .sh shim sourced
#                         by bash, use, status, edit + apply, rollback, generations, gc;
#   tests/check_real.rs   `cuenv check` on the real libraries: versions, loaded paths,
#                         shadowing, mixed sub-libraries, a missing sub-library;
#   tests/real_sources.rs the shipped profiles/lab.toml from the real PyPI, `apply --locked`.
#
# Release build: importing a 560-730 MB wheel takes seconds there, much longer in debug.
# One test at a time, so the imports do not compete for the two cores and the disk.
#
# Usage: scripts/real-input.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(scripts/fetch-real-wheels.sh | tail -n 1)
export CUENV_REAL_WHEELS="$cache"
exec cargo test --release --test real_wheels --test real_apply --test check_real --test real_sources "$@" -- --ignored --test-threads=1 --nocapture
