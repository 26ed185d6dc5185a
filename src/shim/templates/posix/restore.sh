  for __cuenv_n in {{RESTORE_NAMES}}; do
    if eval "[ -n \"\${CUENV_SAVED_$__cuenv_n+x}\" ]"; then
      eval "$__cuenv_n=\$CUENV_SAVED_$__cuenv_n"
      export "$__cuenv_n"
      unset "CUENV_SAVED_$__cuenv_n"
    elif eval "[ -n \"\${CUENV_UNSET_$__cuenv_n+x}\" ]"; then
      unset "$__cuenv_n" "CUENV_UNSET_$__cuenv_n"
    fi
  done
