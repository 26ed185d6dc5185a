{{NAME}}={{VALUE}}
export {{NAME}}
