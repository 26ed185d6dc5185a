/* The `doctor --for` fixtures of tests/it/doctor_for.rs (built by build.sh):
   -DCUBLASLT: a stand-in for cuBLASLt, built as cublasLt64_12.dll (shipped to the tests as
   cublaslt12.dll, so that no file of the real name is beside the others);
   default: consumer.dll, which imports cublasLtCreate from cublasLt64_12.dll (like
   onnxruntime_providers_cuda.dll);
   -DAPP: consumer_app.exe, which imports consumer_init from consumer.dll. */
#ifdef CUBLASLT
__declspec(dllexport) int cublasLtCreate(void **h) { *h = 0; return 0; }
#elif defined(APP)
__declspec(dllimport) int consumer_init(void);
int main(void) { return consumer_init(); }
#else
__declspec(dllimport) int cublasLtCreate(void **h);
__declspec(dllexport) int consumer_init(void) { void *h; return cublasLtCreate(&h); }
#endif
