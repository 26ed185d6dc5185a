# cuenv directory hook for fish: add `cuenv env --hook fish | source` to config.fish.
# On each change of folder it gives this shell the profile named by the nearest
# .cuenv-profile (the HOOK layer, below conda's shims), or removes it on leaving the
# project. <home>/active is never touched.
function __cuenv_hook --on-variable PWD
    {{EXE}} --home {{HOME}} env --hook-apply --shell fish | source
end
__cuenv_hook
