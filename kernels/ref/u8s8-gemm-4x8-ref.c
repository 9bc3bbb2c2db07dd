/* u8s8-gemm-4x8-ref.c — the reference twin of every 8-bit packed-GEMM microkernel
 * (kernels/gemm.h): u8 x s8 products summed in wrapping int32 arithmetic, as the dot-product
 * instructions do. Plain C, built for the kernel tests only. */
#include "ref/gemm.h"

#define MR 4
#define NR 8

void nxe_u8s8_gemm_4x8_ref(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a, const int8_t *b,
                           int32_t *c, int64_t ldc)
{
    for (int32_t i = 0; i < mr; i++) {
        for (int32_t j = 0; j < nr; j++) {
            uint32_t acc = 0; /* wraps as the instructions do */
            for (int64_t kk = 0; kk < kc; kk++)
                acc += (uint32_t)((int32_t)a[((kk / 4) * MR + i) * 4 + kk % 4] *
                                  (int32_t)b[((kk / 4) * NR + j) * 4 + kk % 4]);
            c[i * ldc + j] = (int32_t)acc;
        }
    }
}
