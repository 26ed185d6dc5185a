    foreach ($__cuenv_n in @({{RESTORE_NAMES}})) {
        $__cuenv_s = [Environment]::GetEnvironmentVariable("CUENV_SAVED_$__cuenv_n", 'Process')
        if ($null -ne $__cuenv_s) {
            [Environment]::SetEnvironmentVariable($__cuenv_n, $__cuenv_s, 'Process')
            [Environment]::SetEnvironmentVariable("CUENV_SAVED_$__cuenv_n", $null, 'Process')
        } elseif ($null -ne [Environment]::GetEnvironmentVariable("CUENV_UNSET_$__cuenv_n", 'Process')) {
            [Environment]::SetEnvironmentVariable($__cuenv_n, $null, 'Process')
            [Environment]::SetEnvironmentVariable("CUENV_UNSET_$__cuenv_n", $null, 'Process')
        }
    }
