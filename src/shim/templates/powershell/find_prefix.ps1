    # Right after the first entry equal to CONDA_PREFIX{{ANCHOR_SUFFIX}} (ignoring case, as conda compares paths
    # on Windows). Without one: first.
    $__cuenv_c = [Environment]::GetEnvironmentVariable('CONDA_PREFIX', 'Process')
    if (-not [string]::IsNullOrEmpty($__cuenv_c)) {
        $__cuenv_c += '{{ANCHOR_SUFFIX}}'
        for ($__cuenv_k = 0; $__cuenv_k -lt $__cuenv_l.Count; $__cuenv_k++) {
            if ([string]::Equals($__cuenv_l[$__cuenv_k], $__cuenv_c, [StringComparison]::OrdinalIgnoreCase)) { $__cuenv_i = $__cuenv_k + 1; break }
        }
    }
