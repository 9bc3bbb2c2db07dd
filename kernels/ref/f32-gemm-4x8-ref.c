/* f32-gemm-4x8-ref.c — the reference twin of every f32 packed-GEMM microkernel
 * (kernels/gemm.h): each C element one fused multiply-add chain over k in increasing order, A
 * from a 4-wide packed panel or straight from its rows. Plain C, built for the kernel tests
 * only. */
#include <math.h>

#include "ref/gemm.h"

#define MR 4

/* Element (k, i) of A at a[k * stride_k + i * stride_m]: a packed panel or rows of memory. */
static void tile(int32_t mr, int32_t nr, int64_t kc, const float *a, int64_t stride_k,
                 int64_t stride_m, const void *const *b_rows, float *c, int64_t ldc,
                 int32_t accumulate)
{
    for (int32_t i = 0; i < mr; i++) {
        for (int32_t j = 0; j < nr; j++) {
            float acc = accumulate ? c[i * ldc + j] : 0.0f;
            for (int64_t k = 0; k < kc; k++)
                acc = fmaf(a[k * stride_k + i * stride_m], ((const float *)b_rows[k])[j], acc);
            c[i * ldc + j] = acc;
        }
    }
}

void nxe_f32_gemm_4x8_ref(int32_t mr, int32_t nr, int64_t kc, const void *a,
                          const void *const *b_rows, float *c, int64_t ldc, int32_t accumulate)
{
    tile(mr, nr, kc, a, MR, 1, b_rows, c, ldc, accumulate);
}

void nxe_f32_gemm_4x8_rows_ref(int32_t mr, int32_t nr, int64_t kc, const float *a,
                               int64_t a_stride_m, const void *const *b_rows, float *c, int64_t ldc,
                               int32_t accumulate)
{
    tile(mr, nr, kc, a, 1, a_stride_m, b_rows, c, ldc, accumulate);
}
