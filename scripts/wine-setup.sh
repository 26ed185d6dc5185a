#!/usr/bin/env bash
# Create (once) the Wine prefix used to run cross-built Windows test binaries, and
# install the ProcessPrng shim (ci/processprng.c -> bcryptprimitives.dll) into it.
#
# Usage: scripts/wine-setup.sh         (prints the prefix path on its last line)
#   CUENV_WINEPREFIX  prefix folder (default ~/.cache/cuenv-wine/prefix; keep it
#                     outside the repository)
#   CUENV_WINE        Wine loader to use (default: see scripts/wine-env.sh)
#
# Idempotent and non-interactive (CI=true, no stdin, no display, root is fine).
# When the prefix is ready and the installed DLL matches ci/processprng.c, it
# starts no Wine process at all. Progress goes to stderr; stdout is only the path.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/wine-env.sh
source "$here/wine-env.sh"
cuenv_wine_env

src="$repo/ci/processprng.c"
sys32="$WINEPREFIX/drive_c/windows/system32"
ready="$WINEPREFIX/.cuenv-ready"            # written after a complete wineboot
built="$WINEPREFIX/.cuenv/bcryptprimitives.dll"  # our build, kept for staleness checks
log() { echo "wine-setup: $*" >&2; }

# Fast path: nothing to do.
if [[ -f "$ready" && -f "$built" && ! "$src" -nt "$built" ]] \
   && cmp -s "$built" "$sys32/bcryptprimitives.dll"; then
  echo "$WINEPREFIX"
  exit 0
fi

mkdir -p "$(dirname "$WINEPREFIX")"
# Serialize concurrent setups (e.g. two cargo invocations starting at once).
exec 9>"$WINEPREFIX.lock"
flock 9

# 1. The shim DLL (rebuilt when the source changes).
if [[ ! -f "$built" || "$src" -nt "$built" ]]; then
  command -v x86_64-w64-mingw32-gcc >/dev/null \
    || { log "x86_64-w64-mingw32-gcc missing (apt-get install gcc-mingw-w64-x86-64)"; exit 1; }
  mkdir -p "$(dirname "$built")"
  log "building $built"
  x86_64-w64-mingw32-gcc -shared -O2 -s -o "$built.tmp" "$src" -ladvapi32
  mv -f "$built.tmp" "$built"
fi

# 2. The prefix. `wineboot -i` blocks until the prefix is initialized; the
#    `wineserver -w` afterwards waits until the registry is flushed to disk.
if [[ ! -f "$ready" ]]; then
  log "initializing Wine prefix $WINEPREFIX (one-time, ~15 s)"
  mkdir -p "$WINEPREFIX"
  bootlog="$WINEPREFIX.wineboot.log"
  if ! timeout 600 "$WINE" wineboot -i >"$bootlog" 2>&1; then
    log "wineboot -i failed (for Wine's messages: CUENV_WINEDEBUG=err+all); $bootlog:"
    tail -n 20 "$bootlog" >&2
    exit 1
  fi
  [[ -n "$WINESERVER_BIN" ]] && timeout 120 "$WINESERVER_BIN" -w || true
  [[ -d "$sys32" ]] || { log "wineboot left no $sys32"; exit 1; }
  touch "$ready"
fi

# 3. Install the shim into system32 (Wine 8 has no builtin bcryptprimitives.dll,
#    so the native one there is what the loader picks).
if ! cmp -s "$built" "$sys32/bcryptprimitives.dll"; then
  log "installing bcryptprimitives.dll (ProcessPrng shim) into $sys32"
  cp -f "$built" "$sys32/bcryptprimitives.dll"
fi

echo "$WINEPREFIX"
