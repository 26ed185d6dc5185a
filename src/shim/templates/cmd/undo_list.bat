@rem Remove {{P}}ADDED_{{NAME}} from {{NAME}}: V=;{{NAME}};, each ;block; becomes ;, then V without its ends.
@rem CALL expands the block into the search string; carets are ?~? meanwhile in both (CALL doubles
@rem them on Windows, not under Wine), and PATH is plain (Wine's CALL fails when PATH holds an empty entry).
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_V=;%{{NAME}}%;"
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_V=%__CUENV_V:^=?~?%"
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_B=%{{P}}ADDED_{{NAME}}:^=?~?%"
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_P=%PATH%"
@if defined {{P}}ADDED_{{NAME}} set "PATH=%SystemRoot%\System32"
@if defined {{P}}ADDED_{{NAME}} call set "__CUENV_V=%%__CUENV_V:;%__CUENV_B%;=;%%"
@if defined {{P}}ADDED_{{NAME}} set "PATH=%__CUENV_P%"
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_P="
@if defined {{P}}ADDED_{{NAME}} set "__CUENV_V=%__CUENV_V:?~?=^%"
@if defined {{P}}ADDED_{{NAME}} set "{{NAME}}=%__CUENV_V:~1,-1%"
@if defined {{P}}ADDED_{{NAME}} set "{{P}}UNSET_{{NAME}}="
@if defined {{P}}ADDED_{{NAME}} set "{{P}}ADDED_{{NAME}}="
