#!/usr/bin/env bash
# Cargo runner for x86_64-pc-windows-gnu (see .cargo/config.toml): runs the
# cross-built .exe under Wine in the cuenv prefix, creating the prefix first
# if needed. Cargo calls it as: wine-runner.sh path/to/test.exe [args...]
# The exit status is the program's (wine returns the Windows process exit code),
# so a failing test binary (exit 101) fails `cargo test`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/wine-env.sh
source "$here/wine-env.sh"
cuenv_wine_env

if [[ ! -f "$WINEPREFIX/.cuenv-ready" \
      || ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
      || "$here/../ci/processprng.c" -nt "$WINEPREFIX/.cuenv/bcryptprimitives.dll" ]]; then
  "$here/wine-setup.sh" >/dev/null
fi

# insta (the snapshot tests) finds `<file>/../snapshots/` from the workspace root; without
# this it would ask `cargo metadata`, a Linux program, from inside Wine. The Unix path works:
# the test process runs on drive Z: (Z: = /, the Linux working folder), so `/repo/...` is
# `Z:\repo\...` to it, as with CUENV_TEST_ELF_SO in scripts/test-windows.sh.
export INSTA_WORKSPACE_ROOT="${INSTA_WORKSPACE_ROOT:-$(cd "$here/.." && pwd)}"

exec "$WINE" "$@"
