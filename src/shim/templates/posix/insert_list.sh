if [ -z "${{{NAME}}+x}" ]; then
  {{P}}UNSET_{{NAME}}=1
  export {{P}}UNSET_{{NAME}}
fi
if [ -n "${{{NAME}}-}" ]; then
  {{NAME}}={{BLOCK}}:${{NAME}}
else
  {{NAME}}={{BLOCK}}
fi
export {{NAME}}
{{P}}ADDED_{{NAME}}={{BLOCK}}
export {{P}}ADDED_{{NAME}}
