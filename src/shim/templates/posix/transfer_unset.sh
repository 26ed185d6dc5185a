  # The variable was unset before this layer, and only the blocks of higher layers are left:
  # the lowest of them now carries that fact.
  if [ -n "$__cuenv_v" ] && [ -n "${{{P}}UNSET_{{NAME}}+x}" ]; then
    __cuenv_r=$__cuenv_v
    __cuenv_l=
{{STRIP}}
    case "$__cuenv_r:$__cuenv_l" in
{{CASES}}
    esac
    unset __cuenv_r __cuenv_l
  fi
