# Prints the variables above as fish commands, for the .fish wrapper to source. fish keeps PATH and
# LD_LIBRARY_PATH as lists split at ':' (and joins them with ':' when it exports them).
__cuenv_q() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"; }
for __cuenv_n in {{NAMES}}; do
  if eval "[ -n \"\${$__cuenv_n+x}\" ]"; then
    eval "__cuenv_v=\$$__cuenv_n"
    case $__cuenv_n in
      PATH|LD_LIBRARY_PATH) printf "set -gx %s (string split -- : '%s')\n" "$__cuenv_n" "$(__cuenv_q "$__cuenv_v")" ;;
      *) printf "set -gx %s '%s'\n" "$__cuenv_n" "$(__cuenv_q "$__cuenv_v")" ;;
    esac
  else
    printf 'set -e %s\n' "$__cuenv_n"
  fi
done
