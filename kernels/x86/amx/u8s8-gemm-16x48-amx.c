/* u8s8-gemm-16x48-amx.c — the 8-bit packed-GEMM microkernel for AMX (kernels/gemm.h): a
 * 16-row by 48-column int32 tile of C through TDPBUSD (u8 x s8, wrapping), 16 quadruples of
 * k a step (amx-gemm.h). Built twice from this one source: with the instructions (x86-64,
 * this file's -m flags) as nxe_u8s8_gemm_16x48_amx, and on the tile emulation
 * (NXE_AMX_EMULATED, for the kernel tests on every machine) as nxe_u8s8_gemm_16x48_amxemu. */
#if defined(NXE_AMX_EMULATED)
#include "ref/gemm.h" /* declares the emulated build */
#else
#include "list.h"
#endif
#include "x86/amx/amx-gemm.h"

#if defined(NXE_AMX_EMULATED) || defined(__x86_64__)

void NXE_AMX_FN(nxe_u8s8_gemm_16x48)(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a_packed,
                                     const int8_t *b_panel, int32_t *c, int64_t ldc)
{
    const nxe_amx_b b = {.rows = NULL, .panel = b_panel};
    nxe_amx_gemm(0, mr, nr, (kc + 3) / 4, a_packed, b, c, ldc, 0);
}

#endif
