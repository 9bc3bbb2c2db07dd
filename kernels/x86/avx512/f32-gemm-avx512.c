/* f32-gemm-avx512.c — f32 GEMM for AVX-512F: nxe_f32_gemm_avx512, with exactly the contract of
 * nxe_ref_f32_gemm (kernels/ref/matmul.h). When the rows of b are contiguous (b_stride_n == 1)
 * it keeps a 4-row by 4-vector (64-column) tile of y in zmm registers, with narrower tiles and a
 * masked vector for the column tail, and walks b in blocks of NC columns by KC rows so a block
 * stays in cache across the rows; any other layout of b runs the reference kernel. Between k
 * blocks the partial sums wait in y (a float stored and loaded back unchanged). Each
 * element of y is one chain of fused multiply-adds over k in increasing order whatever tile
 * holds it, so the result does not depend on how callers split the rows. Built only for x86-64,
 * with -mavx512f -mavx512bw -mavx512vl -mfma for this file alone. */
#include "x86/f32-gemm-x86.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define LANES 16
#define NC 256 /* columns of b per block: a multiple of the 64-column tile */
#define KC 256 /* rows of b per block */

/* y[row] columns [j, j + width) from an accumulator: alpha, then beta * c as the reference.
 * Not inlined: it keeps the tile loops small enough to unroll, which keeps the accumulators in
 * registers. */
static __attribute__((noinline)) void store_out(const nxe_f32_gemm_args *p, int64_t row,
                                                int64_t j, __m512 acc, __mmask16 mask)
{
    float *y = p->y + row * p->y_stride_m + j;
    if (p->c != NULL) {
        const float *c = p->c + row * p->c_stride_m;
        __m512 cv;
        if (p->c_stride_n == 1) {
            cv = _mm512_maskz_loadu_ps(mask, c + j);
        } else if (p->c_stride_n == 0) {
            cv = _mm512_set1_ps(c[0]);
        } else {
            float lanes[LANES] = {0};
            for (int l = 0; l < LANES; l++)
                if ((mask >> l) & 1u)
                    lanes[l] = c[(j + l) * p->c_stride_n];
            cv = _mm512_loadu_ps(lanes);
        }
        acc = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(p->alpha), acc),
                            _mm512_mul_ps(_mm512_set1_ps(p->beta), cv));
    } else if (p->alpha != 1.0f) {
        acc = _mm512_mul_ps(_mm512_set1_ps(p->alpha), acc);
    }
    _mm512_mask_storeu_ps(y, mask, acc);
}

/* The partial sums of one vector of the tile before its first k step. */
static inline __attribute__((always_inline)) __m512 tile_start(const nxe_f32_gemm_args *p,
                                                               int64_t row, int64_t j,
                                                               __mmask16 lanes, int64_t k0)
{
    if (k0 == 0)
        return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps(lanes, p->y + row * p->y_stride_m + j);
}

/* One vector of the tile after its last k step of this block. */
static inline __attribute__((always_inline)) void tile_put(const nxe_f32_gemm_args *p,
                                                           int64_t row, int64_t j, __m512 acc,
                                                           __mmask16 lanes, int64_t k1)
{
    if (k1 == p->k)
        store_out(p, row, j, acc, lanes);
    else
        _mm512_mask_storeu_ps(p->y + row * p->y_stride_m + j, lanes, acc);
}

/* rows x vecs accumulators for rows [i, i + rows), columns [j, j + 16 * vecs), over k in
 * [k0, k1): they start at 0 for the first k block, else from the partial sums in y, and the
 * epilogue runs after the last block. The last vector is limited to `mask`. rows and vecs are
 * constants at every call. The accumulators are named variables, not an array, so that they
 * stay in registers through the k loop. */
static inline __attribute__((always_inline)) void tile(const nxe_f32_gemm_args *p, int64_t i,
                                                       int64_t j, int rows, int vecs,
                                                       __mmask16 mask, int64_t k0, int64_t k1)
{
    __mmask16 lanes[4];
    for (int v = 0; v < 4; v++)
        lanes[v] = v == vecs - 1 ? mask : (__mmask16)0xFFFF;
#define NXE_START(r, v)                                                                      \
    (rows > r && vecs > v ? tile_start(p, i + r, j + v * LANES, lanes[v], k0)                 \
                          : _mm512_setzero_ps())
    __m512 c00 = NXE_START(0, 0), c01 = NXE_START(0, 1), c02 = NXE_START(0, 2),
           c03 = NXE_START(0, 3);
    __m512 c10 = NXE_START(1, 0), c11 = NXE_START(1, 1), c12 = NXE_START(1, 2),
           c13 = NXE_START(1, 3);
    __m512 c20 = NXE_START(2, 0), c21 = NXE_START(2, 1), c22 = NXE_START(2, 2),
           c23 = NXE_START(2, 3);
    __m512 c30 = NXE_START(3, 0), c31 = NXE_START(3, 1), c32 = NXE_START(3, 2),
           c33 = NXE_START(3, 3);
#undef NXE_START
    const float *a = p->a + i * p->a_stride_m;
    const float *b = p->b + j;
    for (int64_t kk = k0; kk < k1; kk++) {
        const float *b_row = b + kk * p->b_stride_k;
        __m512 b0 = _mm512_maskz_loadu_ps(lanes[0], b_row);
        __m512 b1 = vecs > 1 ? _mm512_maskz_loadu_ps(lanes[1], b_row + LANES) : b0;
        __m512 b2 = vecs > 2 ? _mm512_maskz_loadu_ps(lanes[2], b_row + 2 * LANES) : b0;
        __m512 b3 = vecs > 3 ? _mm512_maskz_loadu_ps(lanes[3], b_row + 3 * LANES) : b0;
        const float *a_col = a + kk * p->a_stride_k;
#define NXE_ROW(r)                                                                           \
    if (rows > r) {                                                                          \
        __m512 av = _mm512_set1_ps(a_col[r * p->a_stride_m]);                                \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                          \
        if (vecs > 1)                                                                        \
            c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                      \
        if (vecs > 2)                                                                        \
            c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                      \
        if (vecs > 3)                                                                        \
            c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                      \
    }
        NXE_ROW(0)
        NXE_ROW(1)
        NXE_ROW(2)
        NXE_ROW(3)
#undef NXE_ROW
    }
#define NXE_PUT(r, v)                                                                        \
    if (rows > r && vecs > v)                                                                \
        tile_put(p, i + r, j + v * LANES, c##r##v, lanes[v], k1);
    NXE_PUT(0, 0) NXE_PUT(0, 1) NXE_PUT(0, 2) NXE_PUT(0, 3)
    NXE_PUT(1, 0) NXE_PUT(1, 1) NXE_PUT(1, 2) NXE_PUT(1, 3)
    NXE_PUT(2, 0) NXE_PUT(2, 1) NXE_PUT(2, 2) NXE_PUT(2, 3)
    NXE_PUT(3, 0) NXE_PUT(3, 1) NXE_PUT(3, 2) NXE_PUT(3, 3)
#undef NXE_PUT
}

/* Rows [i, i + rows), columns [j_begin, j_end) over k in [k0, k1). Block edges fall on
 * multiples of the widest tile, so a column gets the same tiling in every block. */
static inline __attribute__((always_inline)) void row_block(const nxe_f32_gemm_args *p,
                                                            int64_t i, int rows, int64_t j_begin,
                                                            int64_t j_end, int64_t k0,
                                                            int64_t k1)
{
    const __mmask16 full = 0xFFFF;
    int64_t j = j_begin;
    for (; j + 4 * LANES <= j_end; j += 4 * LANES)
        tile(p, i, j, rows, 4, full, k0, k1);
    for (; j + LANES <= j_end; j += LANES)
        tile(p, i, j, rows, 1, full, k0, k1);
    if (j < j_end)
        tile(p, i, j, rows, 1, (__mmask16)((1u << (j_end - j)) - 1u), k0, k1);
}

void nxe_f32_gemm_avx512(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end)
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
