@rem Is the old {{NAME}} longer than {{MAX}} characters? Take #~ and its first {{MAX_PLUS_1}}: the 2 characters {{MAX_PLUS_2}}
@rem from the end are #~ exactly when it is not. (Only substrings from 0 or from the end: Wine clamps a start past the end.)
@set "CUENV_SHIM_T=#~"
@if defined {{NAME}} set "CUENV_SHIM_T=#~%{{NAME}}:~0,{{MAX_PLUS_1}}%"
@if defined CUENV_SAVED_{{NAME}} set "CUENV_SHIM_T=#~%CUENV_SAVED_{{NAME}}:~0,{{MAX_PLUS_1}}%"
@if defined CUENV_UNSET_{{NAME}} set "CUENV_SHIM_T=#~"
@set "CUENV_SHIM_T=%CUENV_SHIM_T:~-{{MAX_PLUS_2}},2%"
@set "CUENV_SHIM_T=%CUENV_SHIM_T:#~=%"
@if defined CUENV_SHIM_T set "CUENV_SHIM_N={{NAME}}"
@if defined CUENV_SHIM_T goto cuenv_refused
