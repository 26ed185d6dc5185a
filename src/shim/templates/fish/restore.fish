    for __cuenv_n in {{RESTORE_NAMES}}
        if set -q CUENV_SAVED_$__cuenv_n
            set -l __cuenv_s CUENV_SAVED_$__cuenv_n
            set -gx $__cuenv_n $$__cuenv_s
            set -e CUENV_SAVED_$__cuenv_n
        else if set -q CUENV_UNSET_$__cuenv_n
            set -e $__cuenv_n
            set -e CUENV_UNSET_$__cuenv_n
        end
    end
