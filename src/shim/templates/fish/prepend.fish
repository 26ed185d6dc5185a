    if test -n "${{NAME}}"
        set -gx {{NAME}} {{VALUES}} ${{NAME}}
    else
        set -gx {{NAME}} {{VALUES}}
    end
