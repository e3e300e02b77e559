/* Test scaffolding for running Windows builds under Wine 8, whose
 * bcryptprimitives.dll lacks ProcessPrng (Rust's standard library imports
 * it for random numbers since 1.78). This stands in for it with
 * BCryptGenRandom. Never shipped: scripts/wine.sh builds it beside the
 * executables it runs. */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
