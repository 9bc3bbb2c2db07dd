/* bf16-gemm-8x48-avx512bf16.c — the bf16 packed-GEMM microkernel for AVX512-BF16
 * (kernels/gemm.h): an 8-row by 48-column tile of C in 24 zmm f32 accumulators; each step
 * takes one pair of k values, one 32-bit broadcast of an A pair and three vectors of 16 B
 * pairs, through vdpbf16ps. Built only for x86-64 with this file's -m flags. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define MR 8
#define PREFETCH_AHEAD 16 /* row groups */

/* rows and vecs are constants at every call site, so the loops unroll and acc stays in
 * registers. */
static inline __attribute__((always_inline)) void tile(int32_t rows, int32_t vecs,
                                                       __mmask16 last_mask, int64_t pairs,
                                                       const uint32_t *a, const void *const *b_rows,
                                                       float *c, int64_t ldc, int32_t accumulate)
{
    __m512 acc[MR][3];
    __mmask16 mask[3];
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++)
        mask[v] = v < vecs - 1 ? (__mmask16)0xFFFF : last_mask;
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            acc[i][v] = i < rows && v < vecs && accumulate
                            ? _mm512_maskz_loadu_ps(mask[v], c + i * ldc + v * 16)
                            : _mm512_setzero_ps();
    for (int64_t q = 0; q < pairs; q++) {
        const uint32_t *b = b_rows[q]; /* one bf16 pair per column */
        /* B rows may be scattered over the input (one per channel and tap): fetch ahead. */
        if (q + PREFETCH_AHEAD < pairs) {
            const char *next = b_rows[q + PREFETCH_AHEAD];
            _mm_prefetch(next, _MM_HINT_T0);
            _mm_prefetch(next + 64, _MM_HINT_T0);
            _mm_prefetch(next + 128, _MM_HINT_T0);
        }
        __m512bh bv[3];
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            bv[v] = (__m512bh)(v < vecs ? _mm512_maskz_loadu_epi32(mask[v], b + v * 16)
                                        : _mm512_setzero_si512());
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[i]);
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    if (v < vecs)
                        acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
            }
        }
        a += MR;
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            if (i < rows && v < vecs)
                _mm512_mask_storeu_ps(c + i * ldc + v * 16, mask[v], acc[i][v]);
}

#define ROWS_CASE(rows, vecs)                                                                      \
    case rows: tile(rows, vecs, last_mask, pairs, a, b_rows, c, ldc, accumulate); break;

/* One case label per row count, laid out as the tile sizes read. */
/* clang-format off */
#define BY_ROWS(vecs)                                                                        \
    switch (mr) {                                                                            \
        ROWS_CASE(1, vecs) ROWS_CASE(2, vecs) ROWS_CASE(3, vecs) ROWS_CASE(4, vecs)          \
        ROWS_CASE(5, vecs) ROWS_CASE(6, vecs) ROWS_CASE(7, vecs) ROWS_CASE(8, vecs)          \
    default:                                                                                 \
        break;                                                                               \
    }
/* clang-format on */

void nxe_bf16_gemm_8x48_avx512bf16(int32_t mr, int32_t nr, int64_t kc, const void *a_packed,
                                   const void *const *b_rows, float *c, int64_t ldc,
                                   int32_t accumulate)
{
    const uint32_t *a = a_packed;
    int64_t pairs = (kc + 1) / 2;
    int32_t vecs = (nr + 15) / 16;
    int32_t tail = nr - (vecs - 1) * 16;
    __mmask16 last_mask = (__mmask16)((1u << tail) - 1u);
    if (vecs == 3) {
        BY_ROWS(3)
    } else if (vecs == 2) {
        BY_ROWS(2)
    } else {
        BY_ROWS(1)
    }
}

#endif
