@rem This file holds non-ASCII characters, written as UTF-8: cmd reads a batch file line by line in
@rem the console code page, so switch it to UTF-8 (65001) here and back at the end (as conda does).
@set "__CUENV_CP="
@for /f "tokens=2 delims=:." %%A in ('%SystemRoot%\System32\chcp.com') do @for %%B in (%%A) do @set "__CUENV_CP=%%B"
@%SystemRoot%\System32\chcp.com 65001 >nul 2>nul
