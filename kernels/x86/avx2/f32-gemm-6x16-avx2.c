/* f32-gemm-6x16-avx2.c — the f32 packed-GEMM microkernel for AVX2+FMA (kernels/gemm.h): a 6-row
 * by 16-column tile of C in 12 ymm accumulators, one broadcast of A and two vectors of B per k
 * step, masked loads and stores for column tails; B from row pointers or, for few rows, one
 * whole packed panel while the next one is fetched. Built only for x86-64 with -mavx2 -mfma. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define MR 6
#define NR 16

/* A is a packed panel (element (k, i) at a[k * MR + i]) or rows of memory (element (k, i)
 * at a[i * a_stride_m + k]); `packed` is a constant at every call, and so is `full` (all 16
 * columns: plain loads and stores, which AMD cores issue at twice the rate of masked ones). B
 * is given by b_rows or, with `panel` (a constant too), is the packed panel b_panel, and `next`
 * the panel to fetch meanwhile. */
static inline __attribute__((always_inline)) void
tile(int32_t rows, int32_t vecs, int full, __m256i last_mask, int64_t kc, const float *a,
     int packed, int64_t a_stride_m, const void *const *b_rows, int panel, const float *b_panel,
     const float *next, float *c, int64_t ldc, int32_t accumulate)
{
    const float *a_rows[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        a_rows[i] = a + (i < rows ? i : 0) * a_stride_m;
    __m256 acc[MR][2];
    const __m256i all = _mm256_set1_epi32(-1);
    __m256i mask[2] = {vecs == 1 ? last_mask : all, last_mask};
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            acc[i][v] = !(i < rows && v < vecs && accumulate) ? _mm256_setzero_ps()
                        : full ? _mm256_loadu_ps(c + i * ldc + v * 8)
                               : _mm256_maskload_ps(c + i * ldc + v * 8, mask[v]);
    for (int64_t k = 0; k < kc; k++) {
        const float *b = panel ? b_panel + k * NR : b_rows[k];
        /* A row of the next panel per row of this one: one panel's time ahead of its use,
         * into L2 only (a whole panel ahead overflows L1). */
        if (panel)
            _mm_prefetch((const char *)(next + k * NR), _MM_HINT_T1);
        __m256 b0 = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, mask[0]);
        __m256 b1 = vecs == 1 ? b0
                    : full    ? _mm256_loadu_ps(b + 8)
                              : _mm256_maskload_ps(b + 8, mask[1]);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m256 av = _mm256_broadcast_ss(packed ? a + i : a_rows[i] + k);
                acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
                if (vecs > 1)
                    acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
            }
        }
        if (packed)
            a += MR;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            if (i < rows && v < vecs && full)
                _mm256_storeu_ps(c + i * ldc + v * 8, acc[i][v]);
            else if (i < rows && v < vecs)
                _mm256_maskstore_ps(c + i * ldc + v * 8, mask[v], acc[i][v]);
}

#define ROWS_CASE(rows, vecs, full)                                                                \
    case rows:                                                                                     \
        if (b_panel)                                                                               \
            tile(rows, vecs, full, last_mask, kc, a, 0, a_stride_m, NULL, 1, b_panel, next, c,     \
                 ldc, 0);                                                                          \
        else if (packed)                                                                           \
            tile(rows, vecs, full, last_mask, kc, a, 1, 0, b_rows, 0, NULL, NULL, c, ldc,          \
                 accumulate);                                                                      \
        else                                                                                       \
            tile(rows, vecs, full, last_mask, kc, a, 0, a_stride_m, b_rows, 0, NULL, NULL, c, ldc, \
                 accumulate);                                                                      \
        break;

/* One case label per row count, laid out as the tile sizes read. */
/* clang-format off */
#define BY_ROWS(vecs, full)                                                                  \
    switch (mr) {                                                                            \
        ROWS_CASE(1, vecs, full) ROWS_CASE(2, vecs, full) ROWS_CASE(3, vecs, full)           \
        ROWS_CASE(4, vecs, full) ROWS_CASE(5, vecs, full) ROWS_CASE(6, vecs, full)           \
    default:                                                                                 \
        break;                                                                               \
    }
/* clang-format on */

/* B from b_rows, or the panel b_panel when that is set. */
static void run(int32_t mr, int32_t nr, int64_t kc, const float *a, int packed, int64_t a_stride_m,
                const void *const *b_rows, const float *b_panel, const float *next, float *c,
                int64_t ldc, int32_t accumulate)
{
    int32_t vecs = nr > 8 ? 2 : 1;
    int32_t tail = nr - (vecs - 1) * 8;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i last_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), lane);
    if (nr == 16) {
        BY_ROWS(2, 1)
    } else if (vecs == 2) {
        BY_ROWS(2, 0)
    } else {
        BY_ROWS(1, 0)
    }
}

void nxe_f32_gemm_6x16_avx2(int32_t mr, int32_t nr, int64_t kc, const void *a_packed,
                            const void *const *b_rows, float *c, int64_t ldc, int32_t accumulate)
{
    run(mr, nr, kc, a_packed, 1, 0, b_rows, NULL, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_6x16_rows_avx2(int32_t mr, int32_t nr, int64_t kc, const float *a,
                                 int64_t a_stride_m, const void *const *b_rows, float *c,
                                 int64_t ldc, int32_t accumulate)
{
    run(mr, nr, kc, a, 0, a_stride_m, b_rows, NULL, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_6x16_panel_avx2(int32_t mr, int32_t nr, int64_t k, const float *a,
                                  int64_t a_stride_m, const float *b, const float *next, float *c,
                                  int64_t ldc)
{
    run(mr, nr, k, a, 0, a_stride_m, NULL, b, next ? next : b, c, ldc, 0);
}

#endif
