[Environment]::SetEnvironmentVariable({{NAME}}, {{VALUE}}, 'Process')
