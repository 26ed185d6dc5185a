if [ -n "${{{H}}SAVED_{{NAME}}+x}" ] && [ "${{H}}SAVED_{{NAME}}" = {{VALUE}} ]; then
  if [ -n "${{{P}}SAVED_{{NAME}}+x}" ]; then
    {{H}}SAVED_{{NAME}}=${{P}}SAVED_{{NAME}}
    export {{H}}SAVED_{{NAME}}
  elif [ -n "${{{P}}UNSET_{{NAME}}+x}" ]; then
    unset {{H}}SAVED_{{NAME}}
    {{H}}UNSET_{{NAME}}=1
    export {{H}}UNSET_{{NAME}}
  fi
fi
