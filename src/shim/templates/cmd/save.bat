@if defined {{NAME}} set "CUENV_SAVED_{{NAME}}={{GET}}"
@if not defined CUENV_SAVED_{{NAME}} set "CUENV_UNSET_{{NAME}}=1"
