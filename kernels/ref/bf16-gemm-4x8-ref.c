/* bf16-gemm-4x8-ref.c — the reference twin of every bf16 packed-GEMM microkernel
 * (kernels/gemm.h): pairs of k as a dot-product instruction takes them, f32 accumulation.
 * Plain C, built for the kernel tests only. */
#include "ref/gemm.h"

#define MR 4

void nxe_bf16_gemm_4x8_ref(int32_t mr, int32_t nr, int64_t kc, const void *a,
                           const void *const *b_rows, float *c, int64_t ldc, int32_t accumulate)
{
    const uint16_t *ap = a;
    const int64_t pairs = (kc + 1) / 2;
    for (int32_t i = 0; i < mr; i++) {
        for (int32_t j = 0; j < nr; j++) {
            float acc = accumulate ? c[i * ldc + j] : 0.0f;
            for (int64_t q = 0; q < pairs; q++) {
                /* One pair as a dot-product instruction does it: both products, then the sum. */
                const uint16_t *bp = b_rows[q];
                float even = nxe_bf16_to_f32(ap[(q * MR + i) * 2]) * nxe_bf16_to_f32(bp[j * 2]);
                float odd =
                    nxe_bf16_to_f32(ap[(q * MR + i) * 2 + 1]) * nxe_bf16_to_f32(bp[j * 2 + 1]);
                acc = acc + even + odd;
            }
            c[i * ldc + j] = acc;
        }
    }
}
