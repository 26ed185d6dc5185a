/* A stub cuDNN sub-library DLL reporting VERSION; with MARKER, it embeds the version string
   NVIDIA puts in cudnn_graph64_9.dll / cudnn_ops_infer64_8.dll (read-only data). */
#include <stddef.h>
#ifdef MARKER
__attribute__((used)) const char stub_marker[] = MARKER;
#endif
__declspec(dllexport) size_t stub_version(void) { return VERSION; }
