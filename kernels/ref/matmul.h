/* matmul.h — reference kernel for the matmul op family: one strided GEMM with an optional
 * scaled addend, behind MatMul, Gemm and FullyConnected. Portable C11, the oracle for every
 * faster variant: no allocation, no threads; callers split the work by rows of the result. */
#ifndef NXE_KERNELS_REF_MATMUL_H
#define NXE_KERNELS_REF_MATMUL_H

#include <stddef.h>
#include <stdint.h>

/* y[i, j] = alpha * sum_k a[i, k] * b[k, j] + beta * c[i, j], for an [m, k] by [k, n] product.
 * Every operand is addressed through element strides, so transposed operands and a c
 * broadcast along either axis (stride 0) need no copy. c may be NULL (no addend, beta unused).
 * The sum starts at 0 and runs over k in increasing order; y must not overlap a, b or c. */
typedef struct nxe_f32_gemm_args {
    int64_t m;
    int64_t n;
    int64_t k;
    float alpha;
    float beta;
    const float *a;
    int64_t a_stride_m;
    int64_t a_stride_k;
    const float *b;
    int64_t b_stride_k;
    int64_t b_stride_n;
    const float *c;
    int64_t c_stride_m;
    int64_t c_stride_n;
    float *y;
    int64_t y_stride_m; /* the rows of y are dense */
} nxe_f32_gemm_args;

/* Computes rows [row_begin, row_end) of y. */
void nxe_ref_f32_gemm(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end);

#endif
