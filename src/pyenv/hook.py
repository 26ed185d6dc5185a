def _cuenv_hook(profile, preload, path, ld, scalars):
    import os
    switch = os.environ.get("CUENV_PYTHON_HOOK", "")
    if switch.lower() in ("0", "off", "no", "false") or switch.lower() not in ("", "1", "on", "yes", "true") and switch != profile:
        return
    sep = os.pathsep
    def front(name, block):
        if block:
            kept = [p for p in os.environ.get(name, "").split(sep) if p and p not in block]
            os.environ[name] = sep.join(block + kept)
    import _ctypes
    if os.name == "nt":
        front("PATH", path)
        import sys
        added = getattr(sys, "_cuenv_dll_directories", [])
        for d in path:
            if os.path.isdir(d):
                added.append(os.add_dll_directory(d))
        sys._cuenv_dll_directories = added
        def load(p):
            return _ctypes.LoadLibrary(p, 0x1100)
    else:
        front("PATH", path)
        def load(p):
            return _ctypes.dlopen(p, os.RTLD_LAZY)
    for p in preload:
        try:
            load(p)
        except OSError as e:
            import sys
            sys.stderr.write("cuenv: the env hook of profile '%s' could not load %s: %s (CUENV_PYTHON_HOOK=0 turns it off; `cuenv doctor` explains)\n" % (profile, p, e))
    front("LD_LIBRARY_PATH", ld)
    for k, v in scalars:
        os.environ[k] = v
    os.environ["CUENV_PROFILE"] = profile
