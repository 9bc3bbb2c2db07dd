/* elementwise.h — reference kernels for the elementwise op family (portable C11, the oracle for
 * all others): binary arithmetic with numpy broadcasting and f32 activations.
 * Every kernel writes a caller-chosen range of its output, so callers may split the work. */
#ifndef NXE_KERNELS_REF_ELEMENTWISE_H
#define NXE_KERNELS_REF_ELEMENTWISE_H

#include <stddef.h>
#include <stdint.h>

/* The highest rank the strided kernels walk; equals NXE_MAX_RANK of the public header. */
#ifndef NXE_REF_MAX_RANK
#define NXE_REF_MAX_RANK 6
#endif

/* Binary arithmetic, dense operands of one shape: out[i] = a[i] op b[i] for i in [0, n).
 *
 * Broadcasting form (`_strided`): out is dense with `ndim` (1..NXE_REF_MAX_RANK) dims `shape`;
 * operand element k of the output's multi-index idx sits at a[sum(idx[d] * a_strides[d])]
 * (stride 0 on broadcast dims), likewise for b. Writes out elements [begin, end).
 *
 * Integer semantics (never undefined): add/sub/mul wrap modulo 2^bits; div truncates toward
 * zero, x / 0 = 0, and MIN / -1 wraps to MIN. */
#define NXE_REF_DECLARE_BINARY(T, prefix, op)                                                 \
    void nxe_ref_##prefix##_##op(int64_t n, const T *a, const T *b, T *out);                  \
    void nxe_ref_##prefix##_##op##_strided(int32_t ndim, const int64_t *shape,                \
                                           const int64_t *a_strides, const T *a,              \
                                           const int64_t *b_strides, const T *b, T *out,      \
                                           int64_t begin, int64_t end);
#define NXE_REF_DECLARE_BINARY_SET(T, prefix)                                                 \
    NXE_REF_DECLARE_BINARY(T, prefix, add)                                                    \
    NXE_REF_DECLARE_BINARY(T, prefix, sub)                                                    \
    NXE_REF_DECLARE_BINARY(T, prefix, mul)                                                    \
    NXE_REF_DECLARE_BINARY(T, prefix, div)

NXE_REF_DECLARE_BINARY_SET(float, f32)
NXE_REF_DECLARE_BINARY_SET(int32_t, i32)
NXE_REF_DECLARE_BINARY_SET(int64_t, i64)

#undef NXE_REF_DECLARE_BINARY_SET
#undef NXE_REF_DECLARE_BINARY

/* f32 activations: y[i] = f(x[i]) for i in [0, n). x and y may be the same buffer. */
/* max(x, 0); NaN stays NaN. */
void nxe_ref_f32_relu(int64_t n, const float *x, float *y);
/* x for x >= 0, alpha * x below. */
void nxe_ref_f32_leaky_relu(int64_t n, float alpha, const float *x, float *y);
void nxe_ref_f32_tanh(int64_t n, const float *x, float *y);
/* 1 / (1 + exp(-x)), evaluated without overflow for large |x|. */
void nxe_ref_f32_sigmoid(int64_t n, const float *x, float *y);
void nxe_ref_f32_erf(int64_t n, const float *x, float *y);
/* 0.5 x (1 + erf(x / sqrt 2)). */
void nxe_ref_f32_gelu(int64_t n, const float *x, float *y);
/* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
void nxe_ref_f32_gelu_tanh(int64_t n, const float *x, float *y);

#endif
