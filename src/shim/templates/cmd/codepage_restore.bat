@if defined CUENV_SHIM_CP %SystemRoot%\System32\chcp.com %CUENV_SHIM_CP% >nul 2>nul
@set "CUENV_SHIM_CP="
