/* f32-gemm-avx2.c — f32 GEMM for AVX2 + FMA: nxe_f32_gemm_avx2, with exactly the contract of
 * nxe_ref_f32_gemm (kernels/ref/matmul.h). When the rows of b are contiguous (b_stride_n == 1)
 * it keeps a 4-row by 2-vector (16-column) tile of y in ymm registers, with a narrower tile and
 * a masked vector for the column tail, and walks b in blocks of NC columns by KC rows so a
 * block stays in cache across the rows; any other layout of b runs the reference kernel.
 * Between k blocks the partial sums wait in y (a float stored and loaded back unchanged). Each
 * element of y is one chain of fused multiply-adds over k in increasing order whatever tile
 * holds it, so the result does not depend on how callers split the rows. Built only for x86-64,
 * with -mavx2 -mfma for this file alone. */
#include "x86/f32-gemm-x86.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define LANES 8
#define NC 256 /* columns of b per block: a multiple of the 16-column tile */
#define KC 256 /* rows of b per block */

/* Lanes [0, count) of the mask are set (all bits), the rest clear. */
static inline __m256i lane_mask(int64_t count)
{
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), index);
}

/* y[row] columns [j, j + width) from an accumulator: alpha, then beta * c as the reference.
 * Not inlined: once per vector of y, it would only bloat the tiles. */
static __attribute__((noinline)) void store_out(const nxe_f32_gemm_args *p, int64_t row,
                                                int64_t j, __m256 acc, __m256i mask, int masked)
{
    float *y = p->y + row * p->y_stride_m + j;
    if (p->c != NULL) {
        const float *c = p->c + row * p->c_stride_m;
        __m256 cv;
        if (p->c_stride_n == 1) {
            cv = masked ? _mm256_maskload_ps(c + j, mask) : _mm256_loadu_ps(c + j);
        } else if (p->c_stride_n == 0) {
            cv = _mm256_set1_ps(c[0]);
        } else {
            int32_t bits[LANES];
            float lanes[LANES] = {0};
            _mm256_storeu_si256((__m256i *)bits, mask);
            for (int l = 0; l < LANES; l++)
                if (bits[l])
                    lanes[l] = c[(j + l) * p->c_stride_n];
            cv = _mm256_loadu_ps(lanes);
        }
        acc = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(p->alpha), acc),
                            _mm256_mul_ps(_mm256_set1_ps(p->beta), cv));
    } else if (p->alpha != 1.0f) {
        acc = _mm256_mul_ps(_mm256_set1_ps(p->alpha), acc);
    }
    if (masked)
        _mm256_maskstore_ps(y, mask, acc);
    else
        _mm256_storeu_ps(y, acc);
}

/* The partial sums of one vector of the tile before its first k step. */
static inline __attribute__((always_inline)) __m256 tile_start(const nxe_f32_gemm_args *p,
                                                               int64_t row, int64_t j,
                                                               __m256i mask, int masked,
                                                               int64_t k0)
{
    const float *y = p->y + row * p->y_stride_m + j;
    if (k0 == 0)
        return _mm256_setzero_ps();
    return masked ? _mm256_maskload_ps(y, mask) : _mm256_loadu_ps(y);
}

/* One vector of the tile after its last k step of this block. */
static inline __attribute__((always_inline)) void tile_put(const nxe_f32_gemm_args *p,
                                                           int64_t row, int64_t j, __m256 acc,
                                                           __m256i mask, int masked, int64_t k1)
{
    float *y = p->y + row * p->y_stride_m + j;
    if (k1 == p->k)
        store_out(p, row, j, acc, mask, masked);
    else if (masked)
        _mm256_maskstore_ps(y, mask, acc);
    else
        _mm256_storeu_ps(y, acc);
}

/* rows x vecs accumulators for rows [i, i + rows), columns [j, j + 8 * vecs), over k in
 * [k0, k1): they start at 0 for the first k block, else from the partial sums in y, and the
 * epilogue runs after the last block. The last vector is limited to `mask` when `masked`.
 * rows, vecs and masked are constants at every call. The accumulators are named variables, not
 * an array, so that they stay in registers through the k loop. */
static inline __attribute__((always_inline)) void tile(const nxe_f32_gemm_args *p, int64_t i,
                                                       int64_t j, int rows, int vecs,
                                                       __m256i mask, int masked, int64_t k0,
                                                       int64_t k1)
{
    const __m256i full = _mm256_set1_epi32(-1);
    const int masked1 = masked && vecs == 2; /* vector 1 is the last one */
    const int masked0 = masked && vecs == 1;
    const __m256i mask0 = masked0 ? mask : full;
    const __m256i mask1 = masked1 ? mask : full;
#define NXE_START(r, v)                                                                      \
    (rows > r && vecs > v ? tile_start(p, i + r, j + v * LANES, mask##v, masked##v, k0)      \
                          : _mm256_setzero_ps())
    __m256 c00 = NXE_START(0, 0), c01 = NXE_START(0, 1);
    __m256 c10 = NXE_START(1, 0), c11 = NXE_START(1, 1);
    __m256 c20 = NXE_START(2, 0), c21 = NXE_START(2, 1);
    __m256 c30 = NXE_START(3, 0), c31 = NXE_START(3, 1);
#undef NXE_START
    const float *a = p->a + i * p->a_stride_m;
    const float *b = p->b + j;
    for (int64_t kk = k0; kk < k1; kk++) {
        const float *b_row = b + kk * p->b_stride_k;
        __m256 b0 = masked0 ? _mm256_maskload_ps(b_row, mask) : _mm256_loadu_ps(b_row);
        __m256 b1 = b0;
        if (vecs > 1)
            b1 = masked1 ? _mm256_maskload_ps(b_row + LANES, mask)
                         : _mm256_loadu_ps(b_row + LANES);
        const float *a_col = a + kk * p->a_stride_k;
#define NXE_ROW(r)                                                                           \
    if (rows > r) {                                                                          \
        __m256 av = _mm256_set1_ps(a_col[r * p->a_stride_m]);                                \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                          \
        if (vecs > 1)                                                                        \
            c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                      \
    }
        NXE_ROW(0)
        NXE_ROW(1)
        NXE_ROW(2)
        NXE_ROW(3)
#undef NXE_ROW
    }
#define NXE_PUT(r, v)                                                                        \
    if (rows > r && vecs > v)                                                                \
        tile_put(p, i + r, j + v * LANES, c##r##v, mask##v, masked##v, k1);
    NXE_PUT(0, 0) NXE_PUT(0, 1)
    NXE_PUT(1, 0) NXE_PUT(1, 1)
    NXE_PUT(2, 0) NXE_PUT(2, 1)
    NXE_PUT(3, 0) NXE_PUT(3, 1)
#undef NXE_PUT
}

/* Rows [i, i + rows), columns [j_begin, j_end) over k in [k0, k1). Block edges fall on
 * multiples of the widest tile, so a column gets the same tiling in every block. */
static inline __attribute__((always_inline)) void row_block(const nxe_f32_gemm_args *p,
                                                            int64_t i, int rows, int64_t j_begin,
                                                            int64_t j_end, int64_t k0,
                                                            int64_t k1)
{
    const __m256i full = _mm256_set1_epi32(-1);
    int64_t j = j_begin;
    for (; j + 2 * LANES <= j_end; j += 2 * LANES)
        tile(p, i, j, rows, 2, full, 0, k0, k1);
    for (; j + LANES <= j_end; j += LANES)
        tile(p, i, j, rows, 1, full, 0, k0, k1);
    if (j < j_end)
        tile(p, i, j, rows, 1, lane_mask(j_end - j), 1, k0, k1);
}

void nxe_f32_gemm_avx2(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end)
{
    if (args->b_stride_n != 1) {
        nxe_ref_f32_gemm(args, row_begin, row_end);
        return;
    }
    for (int64_t jb = 0; jb < args->n; jb += NC) {
        int64_t je = args->n - jb < NC ? args->n : jb + NC;
        int64_t k0 = 0;
        do { /* at least once: k == 0 still writes y */
            int64_t k1 = args->k - k0 < KC ? args->k : k0 + KC;
            int64_t i = row_begin;
            for (; i + 4 <= row_end; i += 4)
                row_block(args, i, 4, jb, je, k0, k1);
            switch (row_end - i) {
            case 3:
                row_block(args, i, 3, jb, je, k0, k1);
                break;
            case 2:
                row_block(args, i, 2, jb, je, k0, k1);
                break;
            case 1:
                row_block(args, i, 1, jb, je, k0, k1);
                break;
            default:
                break;
            }
            k0 = k1;
        } while (k0 < args->k);
    }
}

#endif
