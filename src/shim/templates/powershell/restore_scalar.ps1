    if ([Environment]::GetEnvironmentVariable({{NAME}}, 'Process') -ceq {{VALUE}}) {
        $__cuenv_v = [Environment]::GetEnvironmentVariable({{SAVED_NAME}}, 'Process')
        if ($null -ne $__cuenv_v) {
            [Environment]::SetEnvironmentVariable({{NAME}}, $__cuenv_v, 'Process')
        } elseif ($null -ne [Environment]::GetEnvironmentVariable({{UNSET_NAME}}, 'Process')) {
            [Environment]::SetEnvironmentVariable({{NAME}}, $null, 'Process')
        }
    }
    [Environment]::SetEnvironmentVariable({{SAVED_NAME}}, $null, 'Process')
    [Environment]::SetEnvironmentVariable({{UNSET_NAME}}, $null, 'Process')
