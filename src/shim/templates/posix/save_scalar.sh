if [ -n "${{{NAME}}+x}" ]; then
  {{P}}SAVED_{{NAME}}=${{NAME}}
  export {{P}}SAVED_{{NAME}}
else
  {{P}}UNSET_{{NAME}}=1
  export {{P}}UNSET_{{NAME}}
fi
