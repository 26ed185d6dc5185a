/* The Windows loader oracle for tests/it/loader_windows.rs: loads a cuDNN dispatcher the way
   a framework does, then prints what the loader really mapped.
   Usage: oracle.exe [--add-dll-dir DIR]... (--path FILE | --name NAME)
   --path: LoadLibraryExW(FILE, NULL, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS),
           as PyTorch loads the DLLs of torch\lib and Python loads extension modules;
   --name: LoadLibraryW(NAME), the standard search order (PATH).
   --preload FILE: LoadLibraryW(FILE) first (a module the host already loaded).
   --default-dirs: first SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS), as a host
           that opts into the safe order does (no current folder, no PATH).
   --load NAME (after the dispatcher, if any): LoadLibraryW(NAME) and print "loaded <path>" (the file
           the loader mapped, GetModuleFileNameW) or "failed <error>"; exit 4 when it failed.
   Then calls cudnnGetVersion and prints "version <N>", then "module <path>" for every
   loaded module whose name holds "cudnn" (EnumProcessModules). Exit 3 when the dispatcher
   does not load (after printing "error <code>").
   --wait: then print "ready" and wait for a line on stdin before exiting (a running process
   for `cuenv doctor --pid`, tests/it/real_windows.rs). */
#include <windows.h>
#include <psapi.h>
#include <stdio.h>
#include <wchar.h>

int wmain(int argc, wchar_t **argv) {
    HMODULE d = NULL;
    int wait = 0;
    const wchar_t *load = NULL;
    for (int i = 1; i < argc; i++) {
        if (!wcscmp(argv[i], L"--wait")) {
            wait = 1;
        } else if (!wcscmp(argv[i], L"--preload") && i + 1 < argc) {
            LoadLibraryW(argv[++i]);
        } else if (!wcscmp(argv[i], L"--default-dirs")) {
            SetDefaultDllDirectories(0x00001000);
        } else if (!wcscmp(argv[i], L"--load") && i + 1 < argc) {
            load = argv[++i];
        } else if (!wcscmp(argv[i], L"--add-dll-dir") && i + 1 < argc) {
            AddDllDirectory(argv[++i]);
        } else if (!wcscmp(argv[i], L"--path") && i + 1 < argc) {
            d = LoadLibraryExW(argv[++i], NULL, 0x00000100 | 0x00001000);
        } else if (!wcscmp(argv[i], L"--name") && i + 1 < argc) {
            d = LoadLibraryW(argv[++i]);
        }
    }
    if (!d && load) goto load_only;
    if (!d) {
        printf("error %lu\n", GetLastError());
        fflush(stdout);
        return 3;
    }
    size_t (*get)(void) = (size_t (*)(void))GetProcAddress(d, "cudnnGetVersion");
    printf("version %llu\n", (unsigned long long)(get ? get() : 0));
    HMODULE mods[1024];
    DWORD needed = 0;
    if (EnumProcessModules(GetCurrentProcess(), mods, sizeof mods, &needed)) {
        for (DWORD i = 0; i < needed / sizeof(HMODULE) && i < 1024; i++) {
            wchar_t name[MAX_PATH];
            if (GetModuleFileNameExW(GetCurrentProcess(), mods[i], name, MAX_PATH)) {
                wchar_t low[MAX_PATH];
                wcsncpy(low, name, MAX_PATH);
                _wcslwr(low);
                if (wcsstr(low, L"cudnn")) printf("module %ls\n", name);
            }
        }
    }
    fflush(stdout);
load_only:
    if (load) {
        HMODULE z = LoadLibraryW(load);
        if (!z) {
            printf("failed %lu\n", GetLastError());
            fflush(stdout);
            return 4;
        }
        wchar_t name[MAX_PATH];
        GetModuleFileNameW(z, name, MAX_PATH);
        printf("loaded %ls\n", name);
        fflush(stdout);
    }
    if (wait) {
        printf("ready\n");
        fflush(stdout);
        getchar();
    }
    return 0;
}
