@if not "%CUENV_ACTIVE_PROFILE%"=="{{PROFILE}}" goto cuenv_done
{{RESTORES}}@set "CUENV_ACTIVE_PROFILE="
