# cuenv directory hook for PowerShell: add `cuenv env --hook powershell | Out-String | Invoke-Expression`
# to $PROFILE. Before each prompt, when the current folder changed, it gives this session the
# profile named by the nearest .cuenv-profile (the HOOK layer, below conda's shims), or removes
# it on leaving the project. <home>/active is never touched.
function global:__cuenv_hook {
    if ($global:__cuenv_hook_pwd -ne $PWD.ProviderPath) {
        $global:__cuenv_hook_pwd = $PWD.ProviderPath
        & {{EXE}} --home {{HOME}} env --hook-apply --shell powershell | Out-String | Invoke-Expression
    }
}
if (-not $global:__cuenv_prompt) {
    $global:__cuenv_prompt = $function:prompt
    function global:prompt { __cuenv_hook; & $global:__cuenv_prompt }
}
__cuenv_hook
