/* elementwise.c — reference kernels for the elementwise op family: binary arithmetic (dense and
 * broadcast-strided) and f32 activations. Integer arithmetic is done in unsigned types so
 * overflow wraps instead of being undefined. */
#include "elementwise.h"

#include <math.h>

static inline float f32_add(float a, float b) { return a + b; }
static inline float f32_sub(float a, float b) { return a - b; }
static inline float f32_mul(float a, float b) { return a * b; }
static inline float f32_div(float a, float b) { return a / b; }

/* The unsigned-to-signed conversions below are implementation-defined, not undefined; every
 * supported compiler reduces modulo 2^bits (two's complement). */
#define NXE_INT_OPS(T, U, prefix, min_value)                                                  \
    static inline T prefix##_add(T a, T b) { return (T)((U)a + (U)b); }                       \
    static inline T prefix##_sub(T a, T b) { return (T)((U)a - (U)b); }                       \
    static inline T prefix##_mul(T a, T b) { return (T)((U)a * (U)b); }                       \
    static inline T prefix##_div(T a, T b)                                                    \
    {                                                                                         \
        if (b == 0)                                                                           \
            return 0;                                                                         \
        if (b == -1)                                                                          \
            return a == (min_value) ? a : (T)-a;                                              \
        return (T)(a / b);                                                                    \
    }

NXE_INT_OPS(int32_t, uint32_t, i32, INT32_MIN)
NXE_INT_OPS(int64_t, uint64_t, i64, INT64_MIN)

#undef NXE_INT_OPS

/* The strided walk keeps the output multi-index and both operand offsets, runs the innermost
 * dimension as a plain loop and carries into the outer dimensions only between runs. */
#define NXE_DEFINE_BINARY(T, prefix, op)                                                      \
    void nxe_ref_##prefix##_##op(int64_t n, const T *a, const T *b, T *out)                   \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            out[i] = prefix##_##op(a[i], b[i]);                                               \
    }                                                                                         \
    void nxe_ref_##prefix##_##op##_strided(int32_t ndim, const int64_t *shape,                \
                                           const int64_t *a_strides, const T *a,              \
                                           const int64_t *b_strides, const T *b, T *out,      \
                                           int64_t begin, int64_t end)                        \
    {                                                                                         \
        if (begin >= end)                                                                     \
            return;                                                                           \
        int64_t idx[NXE_REF_MAX_RANK];                                                        \
        int64_t offset_a = 0, offset_b = 0, rest = begin;                                     \
        for (int32_t d = ndim - 1; d >= 0; d--) {                                             \
            idx[d] = rest % shape[d];                                                         \
            rest /= shape[d];                                                                 \
            offset_a += idx[d] * a_strides[d];                                                \
            offset_b += idx[d] * b_strides[d];                                                \
        }                                                                                     \
        const int32_t last = ndim - 1;                                                        \
        const int64_t step_a = a_strides[last], step_b = b_strides[last];                     \
        int64_t i = begin;                                                                    \
        while (i < end) {                                                                     \
            int64_t run = shape[last] - idx[last];                                            \
            if (run > end - i)                                                                \
                run = end - i;                                                                \
            const T *pa = a + offset_a;                                                       \
            const T *pb = b + offset_b;                                                       \
            T *po = out + i;                                                                  \
            for (int64_t k = 0; k < run; k++)                                                 \
                po[k] = prefix##_##op(pa[k * step_a], pb[k * step_b]);                        \
            i += run;                                                                         \
            idx[last] += run;                                                                 \
            offset_a += run * step_a;                                                         \
            offset_b += run * step_b;                                                         \
            for (int32_t d = last; d > 0 && idx[d] == shape[d]; d--) {                        \
                offset_a += a_strides[d - 1] - shape[d] * a_strides[d];                       \
                offset_b += b_strides[d - 1] - shape[d] * b_strides[d];                       \
                idx[d] = 0;                                                                   \
                idx[d - 1]++;                                                                 \
            }                                                                                 \
        }                                                                                     \
    }
#define NXE_DEFINE_BINARY_SET(T, prefix)                                                      \
    NXE_DEFINE_BINARY(T, prefix, add)                                                         \
    NXE_DEFINE_BINARY(T, prefix, sub)                                                         \
    NXE_DEFINE_BINARY(T, prefix, mul)                                                         \
    NXE_DEFINE_BINARY(T, prefix, div)

NXE_DEFINE_BINARY_SET(float, f32)
NXE_DEFINE_BINARY_SET(int32_t, i32)
NXE_DEFINE_BINARY_SET(int64_t, i64)

#undef NXE_DEFINE_BINARY_SET
#undef NXE_DEFINE_BINARY

void nxe_ref_f32_relu(int64_t n, const float *x, float *y)
{
    /* Written as "x < 0" so a NaN input fails the test and passes through. */
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void nxe_ref_f32_leaky_relu(int64_t n, float alpha, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
}

void nxe_ref_f32_tanh(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanhf(x[i]);
}

void nxe_ref_f32_sigmoid(int64_t n, const float *x, float *y)
{
    /* exp is only ever taken of a non-positive number, so it cannot overflow. */
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (v >= 0.0f) {
            y[i] = 1.0f / (1.0f + expf(-v));
        } else {
            const float e = expf(v);
            y[i] = e / (1.0f + e);
        }
    }
}

void nxe_ref_f32_erf(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = erff(x[i]);
}

void nxe_ref_f32_gelu(int64_t n, const float *x, float *y)
{
    const float inv_sqrt2 = 0.70710678118654752440f;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * inv_sqrt2));
    }
}

void nxe_ref_f32_gelu_tanh(int64_t n, const float *x, float *y)
{
    const float sqrt_2_over_pi = 0.79788456080286535588f;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * (v + 0.044715f * v * v * v)));
    }
}
