/* bf16-gemm-16x48-amx.c — the bf16 packed-GEMM microkernel for AMX (kernels/gemm.h): a
 * 16-row by 48-column tile of C through TDPBF16PS, 16 bf16 pairs of k a step (amx-gemm.h).
 * Built twice from this one source: with the instructions (x86-64, this file's -m flags) as
 * nxe_bf16_gemm_16x48_amx, and on the tile emulation (NXE_AMX_EMULATED, for the kernel
 * tests on every machine) as nxe_bf16_gemm_16x48_amxemu. */
#if defined(NXE_AMX_EMULATED)
#include "ref/gemm.h" /* declares the emulated build */
#else
#include "list.h"
#endif
#include "x86/amx/amx-gemm.h"

#if defined(NXE_AMX_EMULATED) || defined(__x86_64__)

void NXE_AMX_FN(nxe_bf16_gemm_16x48)(int32_t mr, int32_t nr, int64_t kc, const void *a_packed,
                                     const void *const *b_rows, float *c, int64_t ldc,
                                     int32_t accumulate)
{
    const nxe_amx_b b = {.rows = b_rows, .panel = NULL};
    nxe_amx_gemm(1, mr, nr, (kc + 1) / 2, a_packed, b, c, ldc, accumulate);
}

#endif
