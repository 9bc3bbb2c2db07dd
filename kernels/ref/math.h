/* math.h — reference kernels for the math op family (portable C11, the oracle for all others):
 * unary math and activations over f32 (f16/bf16 through f32), the integer unary ops, and the
 * float classification ops. Each kernel maps x[i] to y[i] for i in [0, n), so callers may split
 * the work; x and y may be the same buffer. No allocation, no undefined behaviour. */
#ifndef NXE_KERNELS_REF_MATH_H
#define NXE_KERNELS_REF_MATH_H

#include <stddef.h>
#include <stdint.h>

/* Unary ops. alpha and beta are the op's parameters where it has them:
 *   CLIP             min(max(x, alpha), beta); NaN stays NaN; alpha > beta gives beta
 *   ELU              x for x >= 0, alpha * (exp(x) - 1) below
 *   SELU             beta * x for x > 0, beta * alpha * (exp(x) - 1) otherwise (beta = gamma)
 *   CELU             max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
 *   HARD_SIGMOID     max(0, min(1, alpha * x + beta))
 *   SWISH            x * sigmoid(alpha * x)
 *   THRESHOLDED_RELU x for x > alpha, 0 otherwise
 * ROUND rounds half to even; SIGN gives -1, +0 or 1 (NaN stays NaN); SOFTPLUS is
 * log(1 + exp(x)) without overflow; MISH is x * tanh(softplus(x)); HARD_SWISH is
 * x * max(0, min(1, x / 6 + 1 / 2)). */
enum nxe_ref_unary_op {
    NXE_REF_ABS,
    NXE_REF_NEG,
    NXE_REF_EXP,
    NXE_REF_LOG,
    NXE_REF_SQRT,
    NXE_REF_RECIPROCAL,
    NXE_REF_FLOOR,
    NXE_REF_CEIL,
    NXE_REF_ROUND,
    NXE_REF_SIGN,
    NXE_REF_SIN,
    NXE_REF_COS,
    NXE_REF_TAN,
    NXE_REF_ASIN,
    NXE_REF_ACOS,
    NXE_REF_ATAN,
    NXE_REF_SINH,
    NXE_REF_COSH,
    NXE_REF_ASINH,
    NXE_REF_ACOSH,
    NXE_REF_ATANH,
    NXE_REF_CLIP,
    NXE_REF_ELU,
    NXE_REF_SELU,
    NXE_REF_CELU,
    NXE_REF_HARD_SIGMOID,
    NXE_REF_HARD_SWISH,
    NXE_REF_SWISH,
    NXE_REF_MISH,
    NXE_REF_SOFTPLUS,
    NXE_REF_SOFTSIGN,
    NXE_REF_THRESHOLDED_RELU,
    NXE_REF_UNARY_OP_COUNT
};

/* f32: y[i] = op(x[i]). Unknown ops write nothing and return -1, else 0. */
int nxe_ref_f32_unary(int32_t op, float alpha, float beta, int64_t n, const float *x, float *y);

/* f16 or bf16 (`type` NXE_REF_F16 / NXE_REF_BF16 of cast.h): each element widened to f32,
 * mapped by nxe_ref_f32_unary and rounded once to nearest even. Returns -1 for another type
 * or an unknown op. */
int nxe_ref_half_unary(int32_t op, int32_t type, float alpha, float beta, int64_t n,
                       const uint16_t *x, uint16_t *y);

/* Integers (`type` NXE_REF_I8, U8, I16, I32 or I64): ABS and NEG wrap (ABS(MIN) = MIN),
 * SIGN gives -1/0/1, CLIP clamps to [lo, hi] (lo > hi gives hi; bounds outside the type's
 * range clamp nothing on that side). Returns -1 for another type or op. */
int nxe_ref_int_unary(int32_t op, int32_t type, int64_t lo, int64_t hi, int64_t n, const void *x,
                      void *y);

/* Classification of f32/f16/bf16 values into bool bytes (0 or 1); -1 for another type.
 * isinf counts +inf when detect_positive and -inf when detect_negative. */
int nxe_ref_isnan(int32_t type, int64_t n, const void *x, uint8_t *y);
int nxe_ref_isinf(int32_t type, int detect_negative, int detect_positive, int64_t n, const void *x,
                  uint8_t *y);

/* Logical not of bool bytes: 1 for zero, 0 otherwise. */
void nxe_ref_not(int64_t n, const uint8_t *x, uint8_t *y);

/* Bitwise ops on the two's-complement bits of integers of `element_size` 1, 2, 4 or 8 bytes
 * (the signedness does not change the bits). Binary ops run over one broadcast run:
 * out[i] = a[i * step_a] op b[i * step_b] for i in [0, n); NOT maps x[i] to ~x[i]. Each
 * returns -1 and writes nothing for another element size or op. */
enum nxe_ref_bitwise_op { NXE_REF_BITWISE_AND, NXE_REF_BITWISE_OR, NXE_REF_BITWISE_XOR };
int nxe_ref_bitwise(int32_t op, size_t element_size, int64_t n, const void *a, int64_t step_a,
                    const void *b, int64_t step_b, void *out);
int nxe_ref_bitwise_not(size_t element_size, int64_t n, const void *x, void *y);

#endif
