@rem The marker goes after each entry equal to {{ANCHOR_NOTE}} (cmd compares without case), unless
@rem CONDA_PREFIX holds a '=' (it would end the search string). CALL expands it into the search string;
@rem carets are ?~? meanwhile in both, and PATH is plain (as when removing a block).
@set "__CUENV_C="
@if defined CONDA_PREFIX set "__CUENV_C=1"
@if defined CONDA_PREFIX for /f "delims==" %%A in ("%CONDA_PREFIX%") do @if not "%%A"=="%CONDA_PREFIX%" set "__CUENV_C="
@if defined __CUENV_C set "__CUENV_V=%__CUENV_V:^=?~?%"
@if defined __CUENV_C set "__CUENV_B=%CONDA_PREFIX:^=?~?%{{ANCHOR_SUFFIX}}"
@if defined __CUENV_C set "__CUENV_P=%PATH%"
@if defined __CUENV_C set "PATH=%SystemRoot%\System32"
@if defined __CUENV_C call set "__CUENV_V=%%__CUENV_V:;%__CUENV_B%;=;%__CUENV_B%;?cuenv?;%%"
@if defined __CUENV_C set "PATH=%__CUENV_P%"
@if defined __CUENV_C set "__CUENV_P="
@if defined __CUENV_C set "__CUENV_V=%__CUENV_V:?~?=^%"
