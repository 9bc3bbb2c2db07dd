/* elementwise.h — reference kernels for the elementwise op family (portable C11, the oracle for
 * all others): the broadcasting walk, binary kernels for every dtype, where, and f32 activations.
 * Every kernel writes a caller-chosen range of its output, so callers may split the work. */
#ifndef NXE_KERNELS_REF_ELEMENTWISE_H
#define NXE_KERNELS_REF_ELEMENTWISE_H

#include <stddef.h>
#include <stdint.h>

/* The highest rank the strided kernels walk; equals NXE_MAX_RANK of the public header. */
#ifndef NXE_REF_MAX_RANK
#define NXE_REF_MAX_RANK 6
#endif

/* Broadcasting walk shared by every elementwise family. The output is dense with `ndim`
 * (1..NXE_REF_MAX_RANK) dims `shape`; element k of operand j for the output multi-index idx
 * sits at offset sum(idx[d] * strides[j][d]) (stride 0 on broadcast dims). The walk splits
 * output elements [begin, end) into runs along the innermost dimension and calls `run` once per
 * run with the run's length, its output offset and each operand's offset and step. */
#define NXE_REF_MAX_OPERANDS 3

typedef struct nxe_ref_broadcast {
    int32_t ndim;
    int32_t num_operands;
    int64_t shape[NXE_REF_MAX_RANK];
    int64_t strides[NXE_REF_MAX_OPERANDS][NXE_REF_MAX_RANK];
} nxe_ref_broadcast;

typedef void (*nxe_ref_broadcast_run_fn)(void *ctx, int64_t n, int64_t out_offset,
                                         const int64_t *offsets, const int64_t *steps);
void nxe_ref_broadcast_walk(const nxe_ref_broadcast *walk, int64_t begin, int64_t end,
                            nxe_ref_broadcast_run_fn run, void *ctx);

/* Binary elementwise kernels over one run: out[i] = a[i * step_a] op b[i * step_b] for i in
 * [0, n). Pointers are typed by the kernel's element type (see nxe_ref_binary_kernel); f16 and
 * bf16 compute in f32 and round once; comparisons write bool (one byte, 0 or 1).
 *
 * Semantics (never undefined):
 *   ADD/SUB/MUL  integers wrap modulo 2^bits.
 *   DIV          floats IEEE; integers truncate toward zero, x / 0 = 0, MIN / -1 wraps to MIN.
 *   POW          floats powf; integers exact by squaring with wrap-around; a negative
 *                exponent gives the truncated 1 / x^|y| (1, -1 or 0; 0^negative = 0).
 *   MIN/MAX      NaN in either operand gives NaN.
 *   MOD          sign of the divisor (floored, like Python %); FMOD sign of the dividend
 *                (C fmod / truncated). Integer x mod 0 = 0 and MIN mod -1 = 0.
 *   comparisons  IEEE (any comparison with NaN is false except NOT_EQUAL, which is absent).
 *   AND/OR/XOR   bool operands, nonzero is true.
 *   BITSHIFT     unsigned shift; a shift of the bit width or more gives 0.
 *   PRELU        a for a >= 0, a * b below (b is the slope). */
enum nxe_ref_binary_op {
    NXE_REF_ADD,
    NXE_REF_SUB,
    NXE_REF_MUL,
    NXE_REF_DIV,
    NXE_REF_POW,
    NXE_REF_MIN,
    NXE_REF_MAX,
    NXE_REF_MOD,
    NXE_REF_FMOD,
    NXE_REF_EQUAL,
    NXE_REF_LESS,
    NXE_REF_LESS_EQUAL,
    NXE_REF_GREATER,
    NXE_REF_GREATER_EQUAL,
    NXE_REF_AND,
    NXE_REF_OR,
    NXE_REF_XOR,
    NXE_REF_SHIFT_LEFT,
    NXE_REF_SHIFT_RIGHT,
    NXE_REF_PRELU,
    NXE_REF_BINARY_OP_COUNT
};

typedef void (*nxe_ref_binary_fn)(int64_t n, const void *a, int64_t step_a, const void *b,
                                  int64_t step_b, void *out);

/* Element types the binary kernels take beyond enum nxe_ref_type (cast.h), numbered apart from
 * it so the two enums never collide. */
enum nxe_ref_elementwise_type {
    NXE_REF_EW_F64 = 32, /* double; DIV/POW/MOD IEEE as for f32, computed in double */
    NXE_REF_EW_U16,
    NXE_REF_EW_U32,
    NXE_REF_EW_U64,
    NXE_REF_EW_TYPE_END
};

/* The kernel of `op` for operands of element type `type` (enum nxe_ref_type in cast.h or enum
 * nxe_ref_elementwise_type), or NULL when that pair is not provided. Unsigned types follow the
 * integer rules below with no negative values: x / 0 = 0, x mod 0 = 0, sums, differences and
 * products wrap modulo 2^bits. */
nxe_ref_binary_fn nxe_ref_binary_kernel(int32_t op, int32_t type);

/* Where: out[i] = cond[i * step_c] ? a[i * step_a] : b[i * step_b] over one run, for elements
 * of `element_size` 1, 2, 4 or 8 bytes (returns -1 and writes nothing for other sizes). */
int nxe_ref_select(size_t element_size, int64_t n, const uint8_t *cond, int64_t step_c,
                   const void *a, int64_t step_a, const void *b, int64_t step_b, void *out);

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
