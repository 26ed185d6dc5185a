  {{NAME}}={{VALUE}}
  export {{NAME}}
