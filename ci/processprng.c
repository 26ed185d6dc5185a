/*
 * bcryptprimitives.dll stand-in for running Rust test binaries under Wine.
 *
 * WHY THIS EXISTS: Rust's std (1.78 and later) gets its randomness (HashMap
 * seeds, etc.) from `ProcessPrng`, which it imports from `bcryptprimitives.dll`.
 * That import is resolved when the .exe is loaded, before `main`. Wine 8 (Debian 12)
 * ships no `ProcessPrng` export, so every Rust binary cross-built for
 * x86_64-pc-windows-gnu fails to start under Wine. This DLL exports just that one
 * function, implemented with advapi32's `SystemFunction036` (RtlGenRandom), and
 * scripts/wine-setup.sh copies it into the Wine prefix's system32.
 *
 * It is a test-only shim for Wine: it is never shipped and never used on real
 * Windows, which has its own bcryptprimitives.dll.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -s -o bcryptprimitives.dll \
 *            ci/processprng.c -ladvapi32
 */
#include <windows.h>

/* RtlGenRandom; ntsecapi.h declares it only under a macro, so declare it here. */
__declspec(dllimport) BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Same contract as the real one: fill `data` with `len` random bytes; documented
 * to always return TRUE. SIZE_T may exceed ULONG, so fill in chunks. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000u ? 0x10000000u : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
