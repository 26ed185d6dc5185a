{{H}}SAVED_{{NAME}}={{VALUE}}
export {{H}}SAVED_{{NAME}}
unset {{H}}UNSET_{{NAME}}
