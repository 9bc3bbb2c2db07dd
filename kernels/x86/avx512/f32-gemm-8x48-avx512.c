/* f32-gemm-8x48-avx512.c — the f32 packed-GEMM microkernel for AVX-512F (kernels/gemm.h): an
 * 8-row by 48-column tile of C in 24 zmm accumulators, one broadcast of A and three vectors of
 * B per k step, masked for column tails; A from a packed panel or straight from its rows, B
 * from row pointers or, for few rows, one whole packed panel while the next one is fetched.
 * Built only for x86-64 with this file's -m flags. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define MR 8
#define PREFETCH_AHEAD 16 /* row groups */

#define NR 48

/* rows and vecs are constants at every call site, so the loops unroll and acc stays in
 * registers. */
/* A is a packed panel (a_stride_m 0: element (k, i) at a[k * MR + i]) or rows of memory
 * (element (k, i) at a[i * a_stride_m + k]); `packed` is a constant at every call. B is given
 * by b_rows or, with `panel` (a constant too), is the packed panel b_panel, and `next` the
 * panel to fetch meanwhile. */
static inline __attribute__((always_inline)) void
tile(int32_t rows, int32_t vecs, __mmask16 last_mask, int64_t kc, const float *a, int packed,
     int64_t a_stride_m, const void *const *b_rows, int panel, const float *b_panel,
     const float *next, float *c, int64_t ldc, int32_t accumulate)
{
    const float *a_rows[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
        a_rows[i] = a + (i < rows ? i : 0) * a_stride_m;
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
    for (int64_t k = 0; k < kc; k++) {
        const float *b = panel ? b_panel + k * NR : b_rows[k];
        if (panel) {
            /* A row of the next panel per row of this one: one panel's time ahead of its
             * use, which covers the memory's latency at any bandwidth. Into L2 only: a whole
             * panel ahead overflows L1, and in L1 it evicted the rows in use (a GEMV over
             * weights in L3 took a quarter longer). */
            const char *ahead = (const char *)(next + k * NR);
            _mm_prefetch(ahead, _MM_HINT_T1);
            _mm_prefetch(ahead + 64, _MM_HINT_T1);
            _mm_prefetch(ahead + 128, _MM_HINT_T1);
        } else if (k + PREFETCH_AHEAD < kc) {
            /* B rows may be scattered over the input (one per channel and tap): fetch ahead. */
            const char *later = b_rows[k + PREFETCH_AHEAD];
            _mm_prefetch(later, _MM_HINT_T0);
            _mm_prefetch(later + 64, _MM_HINT_T0);
            _mm_prefetch(later + 128, _MM_HINT_T0);
        }
        __m512 bv[3];
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            bv[v] = v < vecs ? _mm512_maskz_loadu_ps(mask[v], b + v * 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m512 av = _mm512_set1_ps(packed ? a[i] : a_rows[i][k]);
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    if (v < vecs)
                        acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
        if (packed)
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
    case rows:                                                                                     \
        if (b_panel)                                                                               \
            tile(rows, vecs, last_mask, kc, a, 0, a_stride_m, NULL, 1, b_panel, next, c, ldc, 0);  \
        else if (packed)                                                                           \
            tile(rows, vecs, last_mask, kc, a, 1, 0, b_rows, 0, NULL, NULL, c, ldc, accumulate);   \
        else                                                                                       \
            tile(rows, vecs, last_mask, kc, a, 0, a_stride_m, b_rows, 0, NULL, NULL, c, ldc,       \
                 accumulate);                                                                      \
        break;

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

/* B from b_rows, or the panel b_panel when that is set. */
static void run(int32_t mr, int32_t nr, int64_t kc, const float *a, int packed, int64_t a_stride_m,
                const void *const *b_rows, const float *b_panel, const float *next, float *c,
                int64_t ldc, int32_t accumulate)
{
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

void nxe_f32_gemm_8x48_avx512(int32_t mr, int32_t nr, int64_t kc, const void *a_packed,
                              const void *const *b_rows, float *c, int64_t ldc, int32_t accumulate)
{
    run(mr, nr, kc, a_packed, 1, 0, b_rows, NULL, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_8x48_rows_avx512(int32_t mr, int32_t nr, int64_t kc, const float *a,
                                   int64_t a_stride_m, const void *const *b_rows, float *c,
                                   int64_t ldc, int32_t accumulate)
{
    run(mr, nr, kc, a, 0, a_stride_m, b_rows, NULL, NULL, c, ldc, accumulate);
}

void nxe_f32_gemm_8x48_panel_avx512(int32_t mr, int32_t nr, int64_t k, const float *a,
                                    int64_t a_stride_m, const float *b, const float *next, float *c,
                                    int64_t ldc)
{
    run(mr, nr, k, a, 0, a_stride_m, NULL, b, next ? next : b, c, ldc, 0);
}

#endif
