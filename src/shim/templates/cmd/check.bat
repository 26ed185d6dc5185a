@set "CUENV_SHIM_T="
@if defined {{NAME}} set "CUENV_SHIM_T=%{{NAME}}:~{{MAX}},8%"
@if defined CUENV_SAVED_{{NAME}} set "CUENV_SHIM_T=%CUENV_SAVED_{{NAME}}:~{{MAX}},8%"
@if defined CUENV_UNSET_{{NAME}} set "CUENV_SHIM_T="
@if defined CUENV_SHIM_T set "CUENV_SHIM_N={{NAME}}"
@if defined CUENV_SHIM_T goto cuenv_refused
