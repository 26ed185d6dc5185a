    if [ -n "${{{H}}ADDED_{{NAME}}+x}" ]; then
      case "$__cuenv_r" in
        "${{H}}ADDED_{{NAME}}") __cuenv_r=; __cuenv_l={{H}} ;;
        "${{H}}ADDED_{{NAME}}":*) __cuenv_r=${__cuenv_r#"${{H}}ADDED_{{NAME}}:"}; __cuenv_l={{H}} ;;
      esac
    fi
