/* u8s8-gemm-4x8-avx2.c — the 8-bit packed-GEMM microkernel for AVX2 (kernels/gemm.h): a 4-row by
 * 8-column int32 tile in 8 ymm accumulators. Each step takes one k-group of 4: B's 32 bytes (8
 * columns of s8 quadruples) are sign-extended to int16 in two vectors of 4 columns, each row's
 * u8 quadruple is zero-extended to int16 and repeated across a vector, and vpmaddwd sums pairs
 * of int16 products into int32 lanes (k 0-1 and k 2-3 of one column side by side), added to the
 * accumulators with vpaddd; the pairs are folded at the end with vphaddd.
 *
 * Exact by construction: vpmaddubsw would be the shorter path, but it saturates its pair sums
 * to int16 (255 * 127 * 2 = 64770 > 32767), so it is not used. After widening, one vpmaddwd
 * pair is at most 255 * 128 * 2 = 65280 in magnitude, far inside int32, and the int32 sums wrap
 * as the contract states. 4 x 8 measured best on one AMD Zen 4 core (about 125 GOP/s,
 * k = 2048) against 6 x 8, 4 x 16 (16 accumulators and the operands exceed the 16 ymm
 * registers), 3 x 16 and 2 x 16 (tied in one of two runs). Built only for x86-64 with -mavx2
 * -mfma. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define MR 4
#define NR 8

/* `full`: all 8 columns, plain loads and stores; otherwise the columns past nr are neither
 * read (masked loads of whole s8 quadruples) nor stored. */
static inline __attribute__((always_inline)) void tile(int32_t rows, int full, __m128i mask_lo,
                                                       __m128i mask_hi, int64_t groups,
                                                       const uint32_t *a, const int8_t *b,
                                                       int32_t *c, int64_t ldc)
{
    __m256i acc[MR][2];
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < groups; q++, b += NR * 4, a += MR) {
        const __m128i *p = (const __m128i *)(const void *)b;
        const __m128i raw_lo =
            full ? _mm_loadu_si128(p) : _mm_maskload_epi32((const int *)p, mask_lo);
        const __m128i raw_hi =
            full ? _mm_loadu_si128(p + 1) : _mm_maskload_epi32((const int *)(p + 1), mask_hi);
        const __m256i b_lo = _mm256_cvtepi8_epi16(raw_lo); /* columns 0-3 */
        const __m256i b_hi = _mm256_cvtepi8_epi16(raw_hi); /* columns 4-7 */
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                const __m256i av = _mm256_cvtepu8_epi16(_mm_set1_epi32((int)a[i]));
                acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b_lo));
                acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b_hi));
            }
        }
    }
    const __m256i mask = _mm256_set_m128i(mask_hi, mask_lo);
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++) {
        if (i >= rows)
            continue;
        /* hadd gives columns 0 1 4 5 | 2 3 6 7; the permute puts them in order. */
        const __m256i sums =
            _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xD8);
        if (full)
            _mm256_storeu_si256((__m256i *)(void *)(c + i * ldc), sums);
        else
            _mm256_maskstore_epi32(c + i * ldc, mask, sums);
    }
}

#define ROWS_CASE(rows, full)                                                                      \
    case rows: tile(rows, full, mask_lo, mask_hi, groups, a, b_panel, c, ldc); break;

#define BY_ROWS(full)                                                                              \
    switch (mr) {                                                                                  \
        ROWS_CASE(1, full)                                                                         \
        ROWS_CASE(2, full) ROWS_CASE(3, full) ROWS_CASE(4, full) default : break;                  \
    }

void nxe_u8s8_gemm_4x8_avx2(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a_packed,
                            const int8_t *b_panel, int32_t *c, int64_t ldc)
{
    const uint32_t *a = (const uint32_t *)(const void *)a_packed;
    const int64_t groups = (kc + 3) / 4;
    const __m128i column = _mm_setr_epi32(0, 1, 2, 3);
    const __m128i mask_lo = _mm_cmpgt_epi32(_mm_set1_epi32(nr), column);
    const __m128i mask_hi = _mm_cmpgt_epi32(_mm_set1_epi32(nr - 4), column);
    if (nr == NR) {
        BY_ROWS(1)
    } else {
        BY_ROWS(0)
    }
}

#endif
