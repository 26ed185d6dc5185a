@if not defined {{P}}SAVED_{{NAME}} if not defined {{P}}UNSET_{{NAME}} if defined {{NAME}} set "{{P}}SAVED_{{NAME}}={{GET}}"
@if not defined {{P}}SAVED_{{NAME}} set "{{P}}UNSET_{{NAME}}=1"
