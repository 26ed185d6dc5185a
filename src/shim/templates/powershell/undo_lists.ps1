foreach ($__cuenv_n in @('PATH', 'LD_LIBRARY_PATH')) {
    $__cuenv_b = [Environment]::GetEnvironmentVariable("{{P}}ADDED_$__cuenv_n", 'Process')
    if ($null -ne $__cuenv_b) {
        # V = sep + value + sep; its first sep + block + sep becomes sep; the value is V without its ends.
        $__cuenv_v = $__cuenv_s + [Environment]::GetEnvironmentVariable($__cuenv_n, 'Process') + $__cuenv_s
        $__cuenv_i = $__cuenv_v.IndexOf($__cuenv_s + $__cuenv_b + $__cuenv_s, [StringComparison]::Ordinal)
        if ($__cuenv_i -ge 0) { $__cuenv_v = $__cuenv_v.Remove($__cuenv_i, $__cuenv_b.Length + 1) }
        $__cuenv_v = $__cuenv_v.Substring(1, $__cuenv_v.Length - 2)
        if ($__cuenv_v -eq '') { $__cuenv_v = $null }
        [Environment]::SetEnvironmentVariable($__cuenv_n, $__cuenv_v, 'Process')
        [Environment]::SetEnvironmentVariable("{{P}}ADDED_$__cuenv_n", $null, 'Process')
        [Environment]::SetEnvironmentVariable("{{P}}UNSET_$__cuenv_n", $null, 'Process')
    }
}
