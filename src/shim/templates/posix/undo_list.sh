if [ -n "${{{P}}ADDED_{{NAME}}+x}" ]; then
  __cuenv_v=":${{{NAME}}-}:"
  case "$__cuenv_v" in
    *":${{P}}ADDED_{{NAME}}:"*) __cuenv_v="${__cuenv_v%%":${{P}}ADDED_{{NAME}}:"*}:${__cuenv_v#*":${{P}}ADDED_{{NAME}}:"}" ;;
  esac
  __cuenv_v="${__cuenv_v#:}"
  __cuenv_v="${__cuenv_v%:}"
{{TRANSFER}}
  if [ -z "$__cuenv_v" ] && [ -n "${{{P}}UNSET_{{NAME}}+x}" ]; then
    unset {{NAME}}
  else
    {{NAME}}=$__cuenv_v
    export {{NAME}}
  fi
  unset {{P}}ADDED_{{NAME}} {{P}}UNSET_{{NAME}}
fi
