/* math.c — reference kernels for the math op family: unary math and activations in f32 (half
 * types through f32), integer unary ops, float classification and logical not. */
#include "ref/math.h"

#include <math.h>

#include "ref/cast.h"

static inline float round_half_even(float v)
{
    const float r = floorf(v);
    const float d = v - r; /* NaN for infinities and NaN, which keeps them as they are */
    float out = r;
    if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f))
        out = r + 1.0f;
    return out == 0.0f ? copysignf(0.0f, v) : out;
}

static inline float sign_of(float v)
{
    if (v > 0.0f)
        return 1.0f;
    if (v < 0.0f)
        return -1.0f;
    return isnan(v) ? v : 0.0f; /* -0 gives +0, as numpy's sign does */
}

static inline float softplus(float v)
{
    /* exp is only taken of a non-positive number, so it cannot overflow. */
    return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
}

static inline float sigmoid(float v)
{
    if (v >= 0.0f)
        return 1.0f / (1.0f + expf(-v));
    const float e = expf(v);
    return e / (1.0f + e);
}

static inline float clip(float v, float lo, float hi)
{
    const float t = v < lo ? lo : v;
    return t > hi ? hi : t;
}

#define MAP(expr)                                                                                  \
    do {                                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const float v = x[i];                                                                  \
            y[i] = (expr);                                                                         \
        }                                                                                          \
    } while (0);                                                                                   \
    return 0

int nxe_ref_f32_unary(int32_t op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    switch (op) {
    case NXE_REF_ABS: MAP(fabsf(v));
    case NXE_REF_NEG: MAP(-v);
    case NXE_REF_EXP: MAP(expf(v));
    case NXE_REF_LOG: MAP(logf(v));
    case NXE_REF_SQRT: MAP(sqrtf(v));
    case NXE_REF_RECIPROCAL: MAP(1.0f / v);
    case NXE_REF_FLOOR: MAP(floorf(v));
    case NXE_REF_CEIL: MAP(ceilf(v));
    case NXE_REF_ROUND: MAP(round_half_even(v));
    case NXE_REF_SIGN: MAP(sign_of(v));
    case NXE_REF_SIN: MAP(sinf(v));
    case NXE_REF_COS: MAP(cosf(v));
    case NXE_REF_TAN: MAP(tanf(v));
    case NXE_REF_ASIN: MAP(asinf(v));
    case NXE_REF_ACOS: MAP(acosf(v));
    case NXE_REF_ATAN: MAP(atanf(v));
    case NXE_REF_SINH: MAP(sinhf(v));
    case NXE_REF_COSH: MAP(coshf(v));
    case NXE_REF_ASINH: MAP(asinhf(v));
    case NXE_REF_ACOSH: MAP(acoshf(v));
    case NXE_REF_ATANH: MAP(atanhf(v));
    case NXE_REF_CLIP: MAP(clip(v, alpha, beta));
    case NXE_REF_ELU: MAP(v >= 0.0f ? v : alpha * expm1f(v));
    case NXE_REF_SELU: MAP(v > 0.0f ? beta * v : beta * alpha * expm1f(v));
    case NXE_REF_CELU: MAP(fmaxf(0.0f, v) + fminf(0.0f, alpha * expm1f(v / alpha)));
    case NXE_REF_HARD_SIGMOID: MAP(fmaxf(0.0f, fminf(1.0f, alpha * v + beta)));
    case NXE_REF_HARD_SWISH: MAP(v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f)));
    case NXE_REF_SWISH: MAP(v * sigmoid(alpha * v));
    case NXE_REF_MISH: MAP(v * tanhf(softplus(v)));
    case NXE_REF_SOFTPLUS: MAP(softplus(v));
    case NXE_REF_SOFTSIGN: MAP(v / (1.0f + fabsf(v)));
    case NXE_REF_THRESHOLDED_RELU: MAP(v > alpha ? v : 0.0f);
    default: return -1;
    }
}

#undef MAP

/* Elements per widening pass: a stack block, so no kernel allocates. */
#define HALF_BLOCK 256

int nxe_ref_half_unary(int32_t op, int32_t type, float alpha, float beta, int64_t n,
                       const uint16_t *x, uint16_t *y)
{
    if ((type != NXE_REF_F16 && type != NXE_REF_BF16) || op < 0 || op >= NXE_REF_UNARY_OP_COUNT)
        return -1;
    float block[HALF_BLOCK];
    for (int64_t start = 0; start < n; start += HALF_BLOCK) {
        const int64_t count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;
        for (int64_t i = 0; i < count; i++)
            block[i] = type == NXE_REF_F16 ? nxe_ref_f16_to_f32(x[start + i])
                                           : nxe_ref_bf16_to_f32(x[start + i]);
        nxe_ref_f32_unary(op, alpha, beta, count, block, block);
        for (int64_t i = 0; i < count; i++)
            y[start + i] =
                type == NXE_REF_F16 ? nxe_ref_f32_to_f16(block[i]) : nxe_ref_f32_to_bf16(block[i]);
    }
    return 0;
}

/* Integer unary ops; U is the unsigned type of the same width, so negation wraps. Bounds are
 * clamped into the type first, so the comparisons below never see an out-of-range value. */
#define INT_UNARY(T, U, T_MIN, T_MAX)                                                              \
    do {                                                                                           \
        const T *xs = x;                                                                           \
        T *ys = y;                                                                                 \
        const T low = lo<(int64_t)(T_MIN) ? (T)(T_MIN) : lo>(int64_t)(T_MAX) ? (T)(T_MAX) : (T)lo; \
        const T high =                                                                             \
            hi<(int64_t)(T_MIN) ? (T)(T_MIN) : hi>(int64_t)(T_MAX) ? (T)(T_MAX) : (T)hi;           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T v = xs[i];                                                                     \
            switch (op) {                                                                          \
            case NXE_REF_ABS: ys[i] = v < (T)1 && v != 0 ? (T)(0 - (U)v) : v; break;               \
            case NXE_REF_NEG: ys[i] = (T)(0 - (U)v); break;                                        \
            case NXE_REF_SIGN: ys[i] = (T)(v > 0 ? 1 : v == 0 ? 0 : -1); break;                    \
            default: {                                                                             \
                const T t = v < low ? low : v;                                                     \
                ys[i] = t > high ? high : t;                                                       \
            }                                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

int nxe_ref_int_unary(int32_t op, int32_t type, int64_t lo, int64_t hi, int64_t n, const void *x,
                      void *y)
{
    if (op != NXE_REF_ABS && op != NXE_REF_NEG && op != NXE_REF_SIGN && op != NXE_REF_CLIP)
        return -1;
    switch (type) {
    case NXE_REF_I8: INT_UNARY(int8_t, uint8_t, INT8_MIN, INT8_MAX); return 0;
    case NXE_REF_U8: INT_UNARY(uint8_t, uint8_t, 0, UINT8_MAX); return 0;
    case NXE_REF_I16: INT_UNARY(int16_t, uint16_t, INT16_MIN, INT16_MAX); return 0;
    case NXE_REF_I32: INT_UNARY(int32_t, uint32_t, INT32_MIN, INT32_MAX); return 0;
    case NXE_REF_I64: INT_UNARY(int64_t, uint64_t, INT64_MIN, INT64_MAX); return 0;
    default: return -1;
    }
}

#undef INT_UNARY

static inline float load_float(int32_t type, const void *x, int64_t i)
{
    switch (type) {
    case NXE_REF_F16: return nxe_ref_f16_to_f32(((const uint16_t *)x)[i]);
    case NXE_REF_BF16: return nxe_ref_bf16_to_f32(((const uint16_t *)x)[i]);
    default: return ((const float *)x)[i];
    }
}

static inline int is_float_type(int32_t type)
{
    return type == NXE_REF_F32 || type == NXE_REF_F16 || type == NXE_REF_BF16;
}

int nxe_ref_isnan(int32_t type, int64_t n, const void *x, uint8_t *y)
{
    if (!is_float_type(type))
        return -1;
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint8_t)(isnan(load_float(type, x, i)) ? 1 : 0);
    return 0;
}

int nxe_ref_isinf(int32_t type, int detect_negative, int detect_positive, int64_t n, const void *x,
                  uint8_t *y)
{
    if (!is_float_type(type))
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const float v = load_float(type, x, i);
        y[i] = (uint8_t)((isinf(v) && (v > 0.0f ? detect_positive : detect_negative)) ? 1 : 0);
    }
    return 0;
}

void nxe_ref_not(int64_t n, const uint8_t *x, uint8_t *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint8_t)(x[i] == 0 ? 1 : 0);
}

#define BITWISE(T, OPERATOR)                                                                       \
    do {                                                                                           \
        const T *as = a;                                                                           \
        const T *bs = b;                                                                           \
        T *outs = out;                                                                             \
        for (int64_t i = 0; i < n; i++)                                                            \
            outs[i] = (T)(as[i * step_a] OPERATOR bs[i * step_b]);                                 \
    } while (0)

#define BITWISE_SIZES(OPERATOR)                                                                    \
    switch (element_size) {                                                                        \
    case 1: BITWISE(uint8_t, OPERATOR); return 0;                                                  \
    case 2: BITWISE(uint16_t, OPERATOR); return 0;                                                 \
    case 4: BITWISE(uint32_t, OPERATOR); return 0;                                                 \
    case 8: BITWISE(uint64_t, OPERATOR); return 0;                                                 \
    default: return -1;                                                                            \
    }

int nxe_ref_bitwise(int32_t op, size_t element_size, int64_t n, const void *a, int64_t step_a,
                    const void *b, int64_t step_b, void *out)
{
    switch (op) {
    case NXE_REF_BITWISE_AND: BITWISE_SIZES(&)
    case NXE_REF_BITWISE_OR: BITWISE_SIZES(|)
    case NXE_REF_BITWISE_XOR: BITWISE_SIZES(^)
    default: return -1;
    }
}

#undef BITWISE_SIZES
#undef BITWISE

#define BITWISE_NOT(T)                                                                             \
    do {                                                                                           \
        const T *xs = x;                                                                           \
        T *ys = y;                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                            \
            ys[i] = (T)~xs[i];                                                                     \
    } while (0)

int nxe_ref_bitwise_not(size_t element_size, int64_t n, const void *x, void *y)
{
    switch (element_size) {
    case 1: BITWISE_NOT(uint8_t); return 0;
    case 2: BITWISE_NOT(uint16_t); return 0;
    case 4: BITWISE_NOT(uint32_t); return 0;
    case 8: BITWISE_NOT(uint64_t); return 0;
    default: return -1;
    }
}

#undef BITWISE_NOT
