@if defined CUENV_UNSET_{{NAME}} set "{{NAME}}="
@if defined CUENV_UNSET_{{NAME}} set "CUENV_UNSET_{{NAME}}="
@if defined CUENV_SAVED_{{NAME}} set "{{NAME}}={{GET_SAVED}}"
@if defined CUENV_SAVED_{{NAME}} set "CUENV_SAVED_{{NAME}}="
