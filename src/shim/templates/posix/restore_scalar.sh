if [ -n "${{{NAME}}+x}" ] && [ "${{NAME}}" = {{VALUE}} ]; then
  if [ -n "${{{P}}SAVED_{{NAME}}+x}" ]; then
    {{NAME}}=${{P}}SAVED_{{NAME}}
    export {{NAME}}
  elif [ -n "${{{P}}UNSET_{{NAME}}+x}" ]; then
    unset {{NAME}}
  fi
fi
