@rem Delayed expansion is on: the list edits below read values with percent signs, which is safe only
@rem while {{NAME}} holds no exclamation mark (it would be taken for a variable). Does it? Each one
@rem becomes ?b?, and a match of ?b? turns the first character into ?.
@set "__CUENV_T=;"
@if defined {{NAME}} set "__CUENV_T=;%{{NAME}}:!=?b?%"
@set "__CUENV_T=%__CUENV_T:*?b?=?%"
@set "__CUENV_T=%__CUENV_T:~0,1%"
@if "%__CUENV_T%"=="?" set "__CUENV_N={{NAME}}"
@if "%__CUENV_T%"=="?" goto cuenv_bang
