__cuenv_v=${{{NAME}}-}
__cuenv_h=
__cuenv_u=
{{KEEP_FRONT}}
if [ -z "${{{NAME}}+x}" ] || { [ -z "$__cuenv_v" ] && [ -n "$__cuenv_u" ]; }; then
  {{P}}UNSET_{{NAME}}=1
  export {{P}}UNSET_{{NAME}}
fi
if [ -n "$__cuenv_v" ]; then
  {{NAME}}=$__cuenv_h{{BLOCK}}:$__cuenv_v
else
  {{NAME}}=$__cuenv_h{{BLOCK}}
fi
export {{NAME}}
{{P}}ADDED_{{NAME}}={{BLOCK}}
export {{P}}ADDED_{{NAME}}
unset __cuenv_h __cuenv_u
