/* u8s8-gemm-4x24-avxvnni.c — the 8-bit packed-GEMM microkernel for AVX-VNNI (kernels/gemm.h),
 * the VEX-encoded vpdpbusd of Intel client cores since Alder Lake and of AMD since Zen 5: a
 * 4-row by 24-column int32 tile in 12 ymm accumulators. Each step takes one k-group of 4: three
 * vectors of 8 columns of s8 quadruples from B and, per row, a 32-bit broadcast of A's u8
 * quadruple, multiplied and summed into the accumulators by vpdpbusd (wrapping, not
 * saturating, as the contract states). 12 accumulators, 3 B vectors and the broadcast fill the
 * 16 ymm registers; 12 independent chains cover vpdpbusd's latency.
 *
 * Built twice from this source, x86-64 only: with -mavxvnni as libnxe's kernel, and for the
 * kernel tests with NXE_AVXVNNI_EVEX and -mavx512vnni -mavx512vl as
 * nxe_u8s8_gemm_4x24_avxvnnievex, the same code on the EVEX encoding of the same instruction
 * (identical results), so that the blocking and the tails are tested on CPUs with AVX512-VNNI
 * but without AVX-VNNI, where the VEX form faults. */
#include "list.h"

#if defined(__x86_64__)

#include <immintrin.h>

#if defined(NXE_AVXVNNI_EVEX)
#define DPBUSD _mm256_dpbusd_epi32
#define KERNEL_NAME nxe_u8s8_gemm_4x24_avxvnnievex
#else
#define DPBUSD _mm256_dpbusd_avx_epi32
#define KERNEL_NAME nxe_u8s8_gemm_4x24_avxvnni
#endif

#define MR 4
#define NR 24

/* `vecs` vectors of 8 columns; the last one's columns past nr (mask) are neither read nor
 * stored. */
static inline __attribute__((always_inline)) void tile(int32_t rows, int32_t vecs, __m256i mask,
                                                       int64_t groups, const uint32_t *a,
                                                       const int8_t *b_panel, int32_t *c,
                                                       int64_t ldc)
{
    __m256i acc[MR][3];
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            acc[i][v] = _mm256_setzero_si256();
    const int *b = (const int *)(const void *)b_panel; /* an s8 quadruple per column */
    for (int64_t q = 0; q < groups; q++, b += NR, a += MR) {
        __m256i bv[3];
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            bv[v] = v < vecs - 1    ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 8 * v))
                    : v == vecs - 1 ? _mm256_maskload_epi32(b + 8 * v, mask)
                                    : _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                const __m256i av = _mm256_set1_epi32((int)a[i]);
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    if (v < vecs)
                        acc[i][v] = DPBUSD(acc[i][v], av, bv[v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) {
            if (i >= rows || v >= vecs)
                continue;
            int32_t *at = c + i * ldc + 8 * v;
            if (v < vecs - 1)
                _mm256_storeu_si256((__m256i *)(void *)at, acc[i][v]);
            else
                _mm256_maskstore_epi32(at, mask, acc[i][v]);
        }
}

#define ROWS_CASE(rows, vecs)                                                                      \
    case rows: tile(rows, vecs, mask, groups, a, b_panel, c, ldc); break;

#define BY_ROWS(vecs)                                                                              \
    switch (mr) {                                                                                  \
        ROWS_CASE(1, vecs)                                                                         \
        ROWS_CASE(2, vecs) ROWS_CASE(3, vecs) ROWS_CASE(4, vecs) default : break;                  \
    }

void KERNEL_NAME(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a_packed, const int8_t *b_panel,
                 int32_t *c, int64_t ldc)
{
    const uint32_t *a = (const uint32_t *)(const void *)a_packed;
    const int64_t groups = (kc + 3) / 4;
    const int32_t vecs = (nr + 7) / 8;
    const int32_t tail = nr - (vecs - 1) * 8; /* columns in the last vector, 1 to 8 */
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (vecs == 3) {
        BY_ROWS(3)
    } else if (vecs == 2) {
        BY_ROWS(2)
    } else {
        BY_ROWS(1)
    }
}

#endif
