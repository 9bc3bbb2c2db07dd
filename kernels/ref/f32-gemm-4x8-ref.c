/* f32-gemm-4x8-ref.c — the reference twin of every f32 packed-GEMM microkernel
 * (kernels/gemm.h): each C element one fused multiply-add chain over k in increasing order, A
 * from a 4-wide packed panel or straight from its rows, B from row pointers or one whole 8-wide
 * packed panel (the few-row variant, which has nothing to fetch ahead). Plain C, built for the
 * kernel tests only. */
#include <math.h>

#include "ref/gemm.h"

#define MR 4
#define NR 8

/* Element (k, i) of A at a[k * stride_k + i * stride_m]: a packed panel or rows of memory. Row
 * k of B is b_rows[k], or b_panel + k * NR when b_panel is set. */
static void tile(int32_t mr, int32_t nr, int64_t kc, const float *a, int64_t stride_k,
                 int64_t stride_m, const void *const *b_rows, const float *b_panel, float *c,
                 int64_t ldc, int32_t accumulate)
{
    for (int32_t i = 0; i < mr; i++) {
        for (int32_t j = 0; j < nr; j++) {
            float acc = accumulate ? c[i * ldc + j] : 0.0f;
            for (int64_t k = 0; k < kc; k++) {
                const float *b = b_panel ? b_panel + k * NR : b_rows[k];
                acc = fmaf(a[k * stride_k + i * stride_m], b[j], acc);
            }
            c[i * ldc + j] = acc;
        }
    }
}

void nxe_f32_gemm_4x8_ref(int32_t mr, int32_t nr, int64_t kc, const void *a,
                          const void *const *b_rows, float *c, int64_t ldc, int32_t accumulate)
{
    tile(mr, nr, kc, a, MR, 1, b_rows, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_4x8_rows_ref(int32_t mr, int32_t nr, int64_t kc, const float *a,
                               int64_t a_stride_m, const void *const *b_rows, float *c, int64_t ldc,
                               int32_t accumulate)
{
    tile(mr, nr, kc, a, 1, a_stride_m, b_rows, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_4x8_panel_ref(int32_t mr, int32_t nr, int64_t k, const float *a,
                                int64_t a_stride_m, const float *b, const float *next, float *c,
                                int64_t ldc)
{
    (void)next;
    tile(mr, nr, k, a, 1, a_stride_m, NULL, b, c, ldc, 0);
}
