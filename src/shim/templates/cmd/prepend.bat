@if defined {{NAME}} set "{{NAME}}={{VALUE_WITH_GET}};{{GET}}"
@if not defined {{NAME}} set "{{NAME}}={{VALUE}}"
