# cuenv directory hook for zsh: add `eval "$(cuenv env --hook zsh)"` to ~/.zshrc.
# On each change of folder it gives this shell the profile named by the nearest
# .cuenv-profile (the HOOK layer, below conda's shims), or removes it on leaving the
# project. <home>/active is never touched.
__cuenv_hook() {
  if [ "${__cuenv_hook_pwd-}" != "$PWD" ]; then
    __cuenv_hook_pwd=$PWD
    eval "$({{EXE}} --home {{HOME}} env --hook-apply --shell zsh)"
  fi
}
autoload -Uz add-zsh-hook
add-zsh-hook chpwd __cuenv_hook
__cuenv_hook
