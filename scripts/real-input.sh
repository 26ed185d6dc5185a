#!/usr/bin/env bash
# Real-input suite: downloads the real NVIDIA cuDNN wheels (once; cached outside the repo
# in ${CUENV_REAL_WHEELS:-~/.cache/cuenv-real-wheels}) and imports each into a temporary
# cuenv home, checking version, CUDA major, platform and library set, then `store verify`
# before and after flipping one byte (tests/real_wheels.rs).
#
# Release build: importing a 560-730 MB wheel takes seconds there, much longer in debug.
# One test at a time, so the imports do not compete for the two cores and the disk.
#
# Usage: scripts/real-input.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(scripts/fetch-real-wheels.sh | tail -n 1)
export CUENV_REAL_WHEELS="$cache"
exec cargo test --release --test real_wheels "$@" -- --ignored --test-threads=1 --nocapture
