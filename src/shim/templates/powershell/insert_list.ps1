$__cuenv_b = {{BLOCK}}
$__cuenv_v = [Environment]::GetEnvironmentVariable({{NAME}}, 'Process')
if ([string]::IsNullOrEmpty($__cuenv_v)) {
    [Environment]::SetEnvironmentVariable({{UNSET_NAME}}, '1', 'Process')
    $__cuenv_v = $__cuenv_b
} else {
    $__cuenv_l = New-Object 'Collections.Generic.List[string]'
    $__cuenv_l.AddRange([string[]]$__cuenv_v.Split($__cuenv_s))
    $__cuenv_i = 0
{{FIND_PREFIX}}    $__cuenv_l.Insert($__cuenv_i, $__cuenv_b)
    $__cuenv_v = [string]::Join($__cuenv_s, $__cuenv_l.ToArray())
}
[Environment]::SetEnvironmentVariable({{NAME}}, $__cuenv_v, 'Process')
[Environment]::SetEnvironmentVariable({{ADDED_NAME}}, $__cuenv_b, 'Process')
