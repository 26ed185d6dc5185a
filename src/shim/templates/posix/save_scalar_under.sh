if [ -n "${{{H}}SAVED_{{NAME}}+x}" ]; then
  {{P}}SAVED_{{NAME}}=${{H}}SAVED_{{NAME}}
  export {{P}}SAVED_{{NAME}}
else
  {{P}}UNSET_{{NAME}}=1
  export {{P}}UNSET_{{NAME}}
fi
