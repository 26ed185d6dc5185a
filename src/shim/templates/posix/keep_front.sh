if [ -n "${{{H}}ADDED_{{NAME}}+x}" ]; then
  case "$__cuenv_v" in
    "${{H}}ADDED_{{NAME}}") __cuenv_h="$__cuenv_h${{H}}ADDED_{{NAME}}:"; __cuenv_v=; __cuenv_u=${{{H}}UNSET_{{NAME}}-} ;;
    "${{H}}ADDED_{{NAME}}":*) __cuenv_h="$__cuenv_h${{H}}ADDED_{{NAME}}:"; __cuenv_v=${__cuenv_v#"${{H}}ADDED_{{NAME}}:"}; __cuenv_u=${{{H}}UNSET_{{NAME}}-} ;;
  esac
fi
