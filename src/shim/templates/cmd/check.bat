@rem Is {{NAME}} longer than {{MAX}} characters? Take #~ and its first {{MAX_PLUS_1}}: the 2 characters {{MAX_PLUS_2}}
@rem from the end are #~ exactly when it is not. (Only substrings from 0 or from the end: Wine clamps a start past the end.)
@set "__CUENV_T=#~"
@if defined {{NAME}} set "__CUENV_T=#~{{HEAD}}"
@set "__CUENV_T={{TAIL}}"
@set "__CUENV_T={{STRIP}}"
@if defined __CUENV_T set "__CUENV_N={{NAME}}"
@if defined __CUENV_T goto cuenv_refused
