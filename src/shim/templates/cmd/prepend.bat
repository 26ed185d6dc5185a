@if defined {{NAME}} set "{{NAME}}={{VALUE}};{{GET}}"
@if not defined {{NAME}} set "{{NAME}}={{VALUE}}"
