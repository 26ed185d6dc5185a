  {{NAME}}={{VALUE}}${{{NAME}}:+:${{NAME}}}
  export {{NAME}}
