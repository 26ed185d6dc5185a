/* A library that is not cuDNN and not torch, linked against cuDNN 9's dispatcher like
   CTranslate2 or onnxruntime's CUDA provider: its import table names cudnn64_9.dll, which the
   loader resolves when the library is loaded (for LoadLibraryExW with
   LOAD_LIBRARY_SEARCH_DEFAULT_DIRS: its own folder, System32 and AddDllDirectory folders).
   Its cudnnGetVersion calls the dispatcher's, which loads its sub-library by bare name. */
#include <windows.h>
#include <stddef.h>

__declspec(dllimport) size_t cudnnGetCudartVersion(void);

__declspec(dllexport) size_t cudnnGetVersion(void) {
    /* A real call through the import table keeps the import. */
    size_t cudart = cudnnGetCudartVersion();
    size_t (*f)(void) = (size_t (*)(void))GetProcAddress(GetModuleHandleA("cudnn64_9.dll"), "cudnnGetVersion");
    return (f ? f() : 0) + cudart;
}
