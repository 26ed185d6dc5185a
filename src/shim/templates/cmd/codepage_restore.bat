@if defined __CUENV_CP %SystemRoot%\System32\chcp.com %__CUENV_CP% >nul 2>nul
@set "__CUENV_CP="
