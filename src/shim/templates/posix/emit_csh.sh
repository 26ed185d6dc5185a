# Prints the variables above as csh commands, for the .csh wrapper to source.
__cuenv_q() { printf '%s' "$1" | sed -e "s/'/'\\\\''/g" -e 's/!/\\!/g' -e '$!s/$/\\/'; }
for __cuenv_n in {{NAMES}}; do
  if eval "[ -n \"\${$__cuenv_n+x}\" ]"; then
    eval "__cuenv_v=\$$__cuenv_n"
    printf "setenv %s '%s'\n" "$__cuenv_n" "$(__cuenv_q "$__cuenv_v")"
  else
    printf 'unsetenv %s\n' "$__cuenv_n"
  fi
done
