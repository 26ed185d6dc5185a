@set "CUENV_SHIM_T={{VALUE}}"
@if defined {{NAME}} set "{{NAME}}=!CUENV_SHIM_T!;!{{NAME}}!"
@if not defined {{NAME}} set "{{NAME}}=!CUENV_SHIM_T!"
@set "CUENV_SHIM_T="
