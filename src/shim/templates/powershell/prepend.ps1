    $__cuenv_v = [Environment]::GetEnvironmentVariable({{NAME}}, 'Process')
    $__cuenv_p = @({{VALUES}}) -join [IO.Path]::PathSeparator
    if (-not [string]::IsNullOrEmpty($__cuenv_v)) { $__cuenv_p += [IO.Path]::PathSeparator + $__cuenv_v }
    [Environment]::SetEnvironmentVariable({{NAME}}, $__cuenv_p, 'Process')
