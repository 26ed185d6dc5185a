@if defined {{NAME}} set "CUENV_SAVED_{{NAME}}={{GET}}"
@if not defined {{NAME}} set "CUENV_UNSET_{{NAME}}=1"
