/* u8s8-gemm-4x48-avx512vnni.c — the 8-bit packed-GEMM microkernel for AVX512-VNNI
 * (kernels/gemm.h): a 4-row by 48-column int32 tile in 12 zmm accumulators; each step takes
 * 4 values of k, one 32-bit broadcast of A's u8 quadruple per row and three vectors of 16
 * columns of s8 quadruples, through vpdpbusd (wrapping, not saturating). Four rows, not eight:
 * on AMD Zen 4, 24 chains of vpdpbusd run at half the rate of 12 (measured in isolation:
 * 210 against 434 GOP/s per core), where bf16 and f32 keep their full rate with 24. Built only
 * for x86-64 with this file's -m flags. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define MR 4
#define NR 48

static inline __attribute__((always_inline)) void tile(int32_t rows, int32_t vecs,
                                                       __mmask16 last_mask, int64_t groups,
                                                       const uint32_t *a, const int8_t *b_panel,
                                                       int32_t *c, int64_t ldc)
{
    __m512i acc[MR][3];
    __mmask16 mask[3];
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++)
        mask[v] = v < vecs - 1 ? (__mmask16)0xFFFF : last_mask;
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            acc[i][v] = _mm512_setzero_si512();
    const uint32_t *b = (const uint32_t *)(const void *)b_panel; /* an s8 quadruple per column */
    for (int64_t q = 0; q < groups; q++, b += NR) {
        __m512i bv[3];
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            bv[v] =
                v < vecs ? _mm512_maskz_loadu_epi32(mask[v], b + v * 16) : _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m512i av = _mm512_set1_epi32((int)a[i]);
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    if (v < vecs)
                        acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], av, bv[v]);
            }
        }
        a += MR;
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            if (i < rows && v < vecs)
                _mm512_mask_storeu_epi32(c + i * ldc + v * 16, mask[v], acc[i][v]);
}

#define ROWS_CASE(rows, vecs)                                                                      \
    case rows: tile(rows, vecs, last_mask, groups, a, b_panel, c, ldc); break;

#define BY_ROWS(vecs)                                                                              \
    switch (mr) {                                                                                  \
        ROWS_CASE(1, vecs)                                                                         \
        ROWS_CASE(2, vecs) ROWS_CASE(3, vecs) ROWS_CASE(4, vecs) default : break;                  \
    }

void nxe_u8s8_gemm_4x48_avx512vnni(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a_packed,
                                   const int8_t *b_panel, int32_t *c, int64_t ldc)
{
    const uint32_t *a = (const uint32_t *)(const void *)a_packed;
    const int64_t groups = (kc + 3) / 4;
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
