# cuenv directory hook for bash: add `eval "$(cuenv env --hook bash)"` to ~/.bashrc.
# Before each prompt, when the current folder changed, it gives this shell the profile named
# by the nearest .cuenv-profile (the HOOK layer, below conda's shims), or removes it on
# leaving the project. <home>/active is never touched.
__cuenv_hook() {
  if [ "${__cuenv_hook_pwd-}" != "$PWD" ]; then
    __cuenv_hook_pwd=$PWD
    eval "$({{EXE}} --home {{HOME}} env --hook-apply --shell bash)"
  fi
}
case ";${PROMPT_COMMAND-};" in
  *";__cuenv_hook;"*) ;;
  *) PROMPT_COMMAND="__cuenv_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}" ;;
esac
__cuenv_hook
