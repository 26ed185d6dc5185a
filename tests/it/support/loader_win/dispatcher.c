/* A stub cuDNN dispatcher DLL: like cuDNN's, cudnnGetVersion loads its sub-library SUBLIB by
   bare name (LoadLibraryA: the standard search order) and reports that library's version;
   when it cannot, it prints cuDNN's message and ends the process with code 9. With ZLIB, its
   read-only data names zlibwapi.dll right after SUBLIB, as the real 8.9.4 / 9.5 dispatchers do
   (the stub never loads it: the oracle's --load does, by the same bare name). */
#include <windows.h>
#include <stdio.h>
#include <stddef.h>

#ifdef ZLIB
__attribute__((used)) const char stub_names[] = SUBLIB "\0zlibwapi.dll";
#endif

__declspec(dllexport) size_t cudnnGetVersion(void) {
    HMODULE h = LoadLibraryA(SUBLIB);
    if (!h) {
        fprintf(stderr, "Could not locate %s. Please make sure it is in your library path!\n", SUBLIB);
        fflush(stderr);
        ExitProcess(9);
    }
    size_t (*f)(void) = (size_t (*)(void))GetProcAddress(h, "stub_version");
    return f ? f() : 0;
}
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return 0; }
