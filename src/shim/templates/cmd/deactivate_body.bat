@if not "{{GET_PROFILE}}"=="{{PROFILE}}" goto cuenv_done
{{BANG_CHECKS}}{{UNDO_LISTS}}{{RESTORE_SCALARS}}@set "{{P}}PROFILE="
