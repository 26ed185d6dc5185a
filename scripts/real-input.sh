#!/usr/bin/env bash
# Real-input suite: downloads the real NVIDIA cuDNN and CUDA runtime wheels (once; cached
# outside the repo in ${CUENV_REAL_WHEELS:-~/.cache/cuenv-real-wheels}), then runs the
# ignored real-input tests of the `it` test binary (tests/it/main.rs), selected by module:
#   real_wheels::  import each wheel: version, CUDA major, platform, library set,
#                  `store verify` before and after flipping one byte;
#   real_apply::   the main job: plan, apply (with its check), the .sh shim sourced
#                  by bash, use, status, edit + apply, rollback, generations, gc;
#   check_real::   `cuenv check` on the real libraries: versions, loaded paths,
#                  shadowing, mixed sub-libraries, a missing sub-library;
#   real_sources:: the shipped profiles/lab.toml from the real PyPI, `apply --locked`;
#   finders::      consumers' files: TensorFlow 2.16.1, jax_cuda12_pjrt 0.4.35, onnxruntime-gpu 1.31.1.
# The one other ignored module, fetch_real:: (`store fetch` from the real PyPI), is skipped,
# as before. Selecting by `--skip` rather than by the module names keeps a name filter given
# here meaning "only these tests" (libtest ORs its filters, so the module names would add to it).
#
# Release build: importing a 560-730 MB wheel takes seconds there, much longer in debug.
# One test at a time, so the imports do not compete for the two cores and the disk.
#
# Usage: scripts/real-input.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(scripts/fetch-real-wheels.sh | tail -n 1)
export CUENV_REAL_WHEELS="$cache"
exec cargo test --release --test it "$@" -- --ignored --skip fetch_real:: --test-threads=1 --nocapture
