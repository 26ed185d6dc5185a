@set "{{NAME}}={{VALUE}}"
