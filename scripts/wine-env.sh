# shellcheck shell=bash
# Sourced by scripts/wine-setup.sh and scripts/wine-runner.sh: picks the Wine
# loader and the prefix, and sets a quiet, non-interactive Wine environment.
#
# Which binary: Debian 12's `wine64` package puts the 64-bit loader at
# /usr/lib/wine/wine64 and only a `/usr/bin/wine` wrapper script on PATH (no
# `wine64` on PATH). WineHQ's packages and other distributions have `wine64`
# (Wine <= 8) or just `wine` (Wine 9+ "new WoW64") on PATH.
# Override with CUENV_WINE=/path/to/loader.

# shellcheck disable=SC2034  # WINE and WINESERVER_BIN are read by the sourcing scripts
cuenv_wine_env() {
  export WINEPREFIX="${CUENV_WINEPREFIX:-$HOME/.cache/cuenv-wine/prefix}"
  # No fixme/err spam in test output; CUENV_WINEDEBUG=err+all (etc.) to debug.
  export WINEDEBUG="${CUENV_WINEDEBUG:--all}"
  export WINEARCH=win64
  # No Mono (mscoree) / Gecko (mshtml) install dialogs, no GUI at all.
  case "${WINEDLLOVERRIDES:-}" in
    *mscoree,mshtml=*) ;;
    *) export WINEDLLOVERRIDES="mscoree,mshtml=${WINEDLLOVERRIDES:+;$WINEDLLOVERRIDES}" ;;
  esac
  unset DISPLAY WAYLAND_DISPLAY

  if [[ -n "${CUENV_WINE:-}" ]]; then
    WINE="$CUENV_WINE"
  elif command -v wine64 >/dev/null 2>&1; then
    WINE="$(command -v wine64)"
  elif [[ -x /usr/lib/wine/wine64 ]]; then
    WINE=/usr/lib/wine/wine64
    # What Debian's /usr/bin/wine wrapper does, so child processes (cmd, wineboot
    # helpers) are started with the same 64-bit loader.
    export WINELOADER="${WINELOADER:-$WINE}"
  elif command -v wine >/dev/null 2>&1; then
    WINE="$(command -v wine)"
  else
    echo "cuenv-wine: no Wine found (apt-get install wine64)" >&2
    return 1
  fi

  if command -v wineserver >/dev/null 2>&1; then
    WINESERVER_BIN="$(command -v wineserver)"
  elif [[ -x /usr/lib/wine/wineserver64 ]]; then
    WINESERVER_BIN=/usr/lib/wine/wineserver64
  else
    WINESERVER_BIN=""
  fi
}
