/* elementwise.c — reference kernels for the elementwise op family: the broadcasting walk, the
 * binary kernels of every dtype, where, and f32 activations. Integer arithmetic is done in
 * unsigned types so overflow wraps instead of being undefined. */
#include "ref/elementwise.h"

#include "ref/cast.h"

#include <math.h>

/* ---- Broadcasting walk ------------------------------------------------------------------ */

void nxe_ref_broadcast_walk(const nxe_ref_broadcast *walk, int64_t begin, int64_t end,
                            nxe_ref_broadcast_run_fn run, void *ctx)
{
    if (begin >= end)
        return;
    const int32_t ndim = walk->ndim, count = walk->num_operands, last = ndim - 1;
    int64_t idx[NXE_REF_MAX_RANK];
    int64_t offsets[NXE_REF_MAX_OPERANDS] = {0}, steps[NXE_REF_MAX_OPERANDS] = {0};
    int64_t rest = begin;
    for (int32_t d = last; d >= 0; d--) {
        idx[d] = rest % walk->shape[d];
        rest /= walk->shape[d];
        for (int32_t j = 0; j < count; j++)
            offsets[j] += idx[d] * walk->strides[j][d];
    }
    for (int32_t j = 0; j < count; j++)
        steps[j] = walk->strides[j][last];
    int64_t i = begin;
    while (i < end) {
        int64_t length = walk->shape[last] - idx[last];
        if (length > end - i)
            length = end - i;
        run(ctx, length, i, offsets, steps);
        i += length;
        idx[last] += length;
        for (int32_t j = 0; j < count; j++)
            offsets[j] += length * steps[j];
        for (int32_t d = last; d > 0 && idx[d] == walk->shape[d]; d--) {
            for (int32_t j = 0; j < count; j++)
                offsets[j] += walk->strides[j][d - 1] - walk->shape[d] * walk->strides[j][d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* ---- Scalar semantics per element type ---------------------------------------------------- */

static inline float f32_add(float a, float b)
{
    return a + b;
}
static inline float f32_sub(float a, float b)
{
    return a - b;
}
static inline float f32_mul(float a, float b)
{
    return a * b;
}
static inline float f32_div(float a, float b)
{
    return a / b;
}
static inline float f32_pow(float a, float b)
{
    return powf(a, b);
}
static inline float f32_min(float a, float b)
{
    return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
}
static inline float f32_max(float a, float b)
{
    return isnan(a) || isnan(b) ? a + b : (b > a ? b : a);
}
static inline float f32_fmod(float a, float b)
{
    return fmodf(a, b);
}
static inline float f32_mod(float a, float b)
{
    const float r = fmodf(a, b);
    if (r == 0.0f)
        return copysignf(0.0f, b);
    if ((r < 0.0f) != (b < 0.0f))
        return r + b;
    return r;
}
static inline float f32_prelu(float a, float b)
{
    return a < 0.0f ? a * b : a;
}

static inline double f64_add(double a, double b)
{
    return a + b;
}
static inline double f64_sub(double a, double b)
{
    return a - b;
}
static inline double f64_mul(double a, double b)
{
    return a * b;
}
static inline double f64_div(double a, double b)
{
    return a / b;
}
static inline double f64_pow(double a, double b)
{
    return pow(a, b);
}
static inline double f64_min(double a, double b)
{
    return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
}
static inline double f64_max(double a, double b)
{
    return isnan(a) || isnan(b) ? a + b : (b > a ? b : a);
}
static inline double f64_fmod(double a, double b)
{
    return fmod(a, b);
}
static inline double f64_mod(double a, double b)
{
    const double r = fmod(a, b);
    if (r == 0.0)
        return copysign(0.0, b);
    if ((r < 0.0) != (b < 0.0))
        return r + b;
    return r;
}
static inline double f64_prelu(double a, double b)
{
    return a < 0.0 ? a * b : a;
}

/* Integer arithmetic runs in the unsigned type of the same width so it wraps instead of being
 * undefined; the unsigned-to-signed conversions are implementation-defined, and every supported
 * compiler reduces modulo 2^bits (two's complement). */
#define NXE_INT_OPS(T, U, prefix, min_value, is_signed, NEG)                                       \
    static inline T prefix##_add(T a, T b)                                                         \
    {                                                                                              \
        return (T)((U)a + (U)b);                                                                   \
    }                                                                                              \
    static inline T prefix##_sub(T a, T b)                                                         \
    {                                                                                              \
        return (T)((U)a - (U)b);                                                                   \
    }                                                                                              \
    static inline T prefix##_mul(T a, T b)                                                         \
    {                                                                                              \
        return (T)((U)a * (U)b);                                                                   \
    }                                                                                              \
    static inline T prefix##_min(T a, T b)                                                         \
    {                                                                                              \
        return b < a ? b : a;                                                                      \
    }                                                                                              \
    static inline T prefix##_max(T a, T b)                                                         \
    {                                                                                              \
        return b > a ? b : a;                                                                      \
    }                                                                                              \
    static inline T prefix##_prelu(T a, T b)                                                       \
    {                                                                                              \
        return NEG(a) ? prefix##_mul(a, b) : a;                                                    \
    }                                                                                              \
    static inline T prefix##_div(T a, T b)                                                         \
    {                                                                                              \
        if (b == 0)                                                                                \
            return 0;                                                                              \
        if (is_signed && b == (T) - 1)                                                             \
            return a == (min_value) ? a : (T)(0 - (U)a);                                           \
        return (T)(a / b);                                                                         \
    }                                                                                              \
    static inline T prefix##_fmod(T a, T b)                                                        \
    {                                                                                              \
        if (b == 0 || (is_signed && b == (T) - 1))                                                 \
            return 0;                                                                              \
        return (T)(a % b);                                                                         \
    }                                                                                              \
    static inline T prefix##_mod(T a, T b)                                                         \
    {                                                                                              \
        const T r = prefix##_fmod(a, b);                                                           \
        return r != 0 && (NEG(r) != NEG(b)) ? (T)(r + b) : r;                                      \
    }                                                                                              \
    static inline T prefix##_pow(T a, T b)                                                         \
    {                                                                                              \
        if (NEG(b)) {                                                                              \
            if (a == 1)                                                                            \
                return 1;                                                                          \
            if (is_signed && a == (T) - 1)                                                         \
                return (b & 1) ? (T) - 1 : 1;                                                      \
            return 0;                                                                              \
        }                                                                                          \
        U result = 1, base = (U)a;                                                                 \
        for (U e = (U)b; e != 0; e >>= 1) {                                                        \
            if (e & 1)                                                                             \
                result *= base;                                                                    \
            base *= base;                                                                          \
        }                                                                                          \
        return (T)result;                                                                          \
    }                                                                                              \
    static inline T prefix##_shift_left(T a, T b)                                                  \
    {                                                                                              \
        if (NEG(b) || (uint64_t)b >= sizeof(T) * 8)                                                \
            return 0;                                                                              \
        return (T)((U)a << b);                                                                     \
    }                                                                                              \
    static inline T prefix##_shift_right(T a, T b)                                                 \
    {                                                                                              \
        if (NEG(b) || (uint64_t)b >= sizeof(T) * 8)                                                \
            return NEG(a) ? (T) - 1 : 0;                                                           \
        /* ~(~a >> b) is an arithmetic shift written without implementation-defined >>. */         \
        return NEG(a) ? (T) ~(T)((U) ~(U)a >> b) : (T)((U)a >> b);                                 \
    }

/* Narrow types compute in uint32_t: promotion makes the wrap-around explicit. */
#define NXE_IS_NEGATIVE(v) ((v) < 0)
#define NXE_NEVER_NEGATIVE(v) ((void)(v), 0)
NXE_INT_OPS(int8_t, uint32_t, i8, INT8_MIN, 1, NXE_IS_NEGATIVE)
NXE_INT_OPS(uint8_t, uint32_t, u8, 0, 0, NXE_NEVER_NEGATIVE)
NXE_INT_OPS(int16_t, uint32_t, i16, INT16_MIN, 1, NXE_IS_NEGATIVE)
NXE_INT_OPS(int32_t, uint32_t, i32, INT32_MIN, 1, NXE_IS_NEGATIVE)
NXE_INT_OPS(int64_t, uint64_t, i64, INT64_MIN, 1, NXE_IS_NEGATIVE)
NXE_INT_OPS(uint16_t, uint32_t, u16, 0, 0, NXE_NEVER_NEGATIVE)
NXE_INT_OPS(uint32_t, uint32_t, u32, 0, 0, NXE_NEVER_NEGATIVE)
NXE_INT_OPS(uint64_t, uint64_t, u64, 0, 0, NXE_NEVER_NEGATIVE)

#undef NXE_INT_OPS

/* ---- Run kernels ---------------------------------------------------------------------------- */

#define NXE_LOAD_SAME(v) (v)
#define NXE_STORE_SAME(v) (v)
#define NXE_STORE_BOOL(v) ((uint8_t)((v) ? 1 : 0))

/* A run kernel: loads each operand through LOAD, applies FN, stores through STORE. */
#define NXE_RUN_KERNEL(name, T, TC, TO, LOAD, STORE, FN)                                           \
    static void name(int64_t n, const void *pa, int64_t step_a, const void *pb, int64_t step_b,    \
                     void *po)                                                                     \
    {                                                                                              \
        const T *a = pa;                                                                           \
        const T *b = pb;                                                                           \
        TO *out = po;                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const TC x = LOAD(a[i * step_a]);                                                      \
            const TC y = LOAD(b[i * step_b]);                                                      \
            out[i] = STORE(FN(x, y));                                                              \
        }                                                                                          \
    }

#define NXE_EQ(x, y) ((x) == (y))
#define NXE_LT(x, y) ((x) < (y))
#define NXE_LE(x, y) ((x) <= (y))
#define NXE_GT(x, y) ((x) > (y))
#define NXE_GE(x, y) ((x) >= (y))
#define NXE_AND(x, y) ((x) != 0 && (y) != 0)
#define NXE_OR(x, y) ((x) != 0 || (y) != 0)
#define NXE_XOR(x, y) (((x) != 0) != ((y) != 0))
#define NXE_XOR_NOT(x, y) (((x) != 0) == ((y) != 0))

/* Every binary op of one element type; LOAD/STORE convert half types through f32. */
#define NXE_COMMON_KERNELS(T, TC, prefix, ops, LOAD, STORE)                                        \
    NXE_RUN_KERNEL(prefix##_add_run, T, TC, T, LOAD, STORE, ops##_add)                             \
    NXE_RUN_KERNEL(prefix##_sub_run, T, TC, T, LOAD, STORE, ops##_sub)                             \
    NXE_RUN_KERNEL(prefix##_mul_run, T, TC, T, LOAD, STORE, ops##_mul)                             \
    NXE_RUN_KERNEL(prefix##_div_run, T, TC, T, LOAD, STORE, ops##_div)                             \
    NXE_RUN_KERNEL(prefix##_pow_run, T, TC, T, LOAD, STORE, ops##_pow)                             \
    NXE_RUN_KERNEL(prefix##_min_run, T, TC, T, LOAD, STORE, ops##_min)                             \
    NXE_RUN_KERNEL(prefix##_max_run, T, TC, T, LOAD, STORE, ops##_max)                             \
    NXE_RUN_KERNEL(prefix##_mod_run, T, TC, T, LOAD, STORE, ops##_mod)                             \
    NXE_RUN_KERNEL(prefix##_fmod_run, T, TC, T, LOAD, STORE, ops##_fmod)                           \
    NXE_RUN_KERNEL(prefix##_prelu_run, T, TC, T, LOAD, STORE, ops##_prelu)                         \
    NXE_RUN_KERNEL(prefix##_eq_run, T, TC, uint8_t, LOAD, NXE_STORE_BOOL, NXE_EQ)                  \
    NXE_RUN_KERNEL(prefix##_lt_run, T, TC, uint8_t, LOAD, NXE_STORE_BOOL, NXE_LT)                  \
    NXE_RUN_KERNEL(prefix##_le_run, T, TC, uint8_t, LOAD, NXE_STORE_BOOL, NXE_LE)                  \
    NXE_RUN_KERNEL(prefix##_gt_run, T, TC, uint8_t, LOAD, NXE_STORE_BOOL, NXE_GT)                  \
    NXE_RUN_KERNEL(prefix##_ge_run, T, TC, uint8_t, LOAD, NXE_STORE_BOOL, NXE_GE)

static inline float f16_load(uint16_t v)
{
    return nxe_ref_f16_to_f32(v);
}
static inline uint16_t f16_store(float v)
{
    return nxe_ref_f32_to_f16(v);
}
static inline float bf16_load(uint16_t v)
{
    return nxe_ref_bf16_to_f32(v);
}
static inline uint16_t bf16_store(float v)
{
    return nxe_ref_f32_to_bf16(v);
}

NXE_COMMON_KERNELS(float, float, f32, f32, NXE_LOAD_SAME, NXE_STORE_SAME)
/* The f16/bf16 kernels reuse the f32 scalar functions: one rounding of the f32 result. */
NXE_COMMON_KERNELS(uint16_t, float, f16, f32, f16_load, f16_store)
NXE_COMMON_KERNELS(uint16_t, float, bf16, f32, bf16_load, bf16_store)
NXE_COMMON_KERNELS(int8_t, int8_t, i8, i8, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(uint8_t, uint8_t, u8, u8, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(int16_t, int16_t, i16, i16, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(int32_t, int32_t, i32, i32, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(int64_t, int64_t, i64, i64, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(double, double, f64, f64, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(uint16_t, uint16_t, u16, u16, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(uint32_t, uint32_t, u32, u32, NXE_LOAD_SAME, NXE_STORE_SAME)
NXE_COMMON_KERNELS(uint64_t, uint64_t, u64, u64, NXE_LOAD_SAME, NXE_STORE_SAME)

#define NXE_SHIFT_KERNELS(T, prefix)                                                               \
    NXE_RUN_KERNEL(prefix##_shl_run, T, T, T, NXE_LOAD_SAME, NXE_STORE_SAME, prefix##_shift_left)  \
    NXE_RUN_KERNEL(prefix##_shr_run, T, T, T, NXE_LOAD_SAME, NXE_STORE_SAME, prefix##_shift_right)
NXE_SHIFT_KERNELS(int8_t, i8)
NXE_SHIFT_KERNELS(uint8_t, u8)
NXE_SHIFT_KERNELS(int16_t, i16)
NXE_SHIFT_KERNELS(int32_t, i32)
NXE_SHIFT_KERNELS(int64_t, i64)
NXE_SHIFT_KERNELS(uint16_t, u16)
NXE_SHIFT_KERNELS(uint32_t, u32)
NXE_SHIFT_KERNELS(uint64_t, u64)

NXE_RUN_KERNEL(bool_eq_run, uint8_t, int, uint8_t, NXE_LOAD_SAME, NXE_STORE_BOOL, NXE_XOR_NOT)
NXE_RUN_KERNEL(bool_and_run, uint8_t, int, uint8_t, NXE_LOAD_SAME, NXE_STORE_BOOL, NXE_AND)
NXE_RUN_KERNEL(bool_or_run, uint8_t, int, uint8_t, NXE_LOAD_SAME, NXE_STORE_BOOL, NXE_OR)
NXE_RUN_KERNEL(bool_xor_run, uint8_t, int, uint8_t, NXE_LOAD_SAME, NXE_STORE_BOOL, NXE_XOR)

#define NXE_KERNEL_ROW(prefix)                                                                     \
    [NXE_REF_ADD] = prefix##_add_run, [NXE_REF_SUB] = prefix##_sub_run,                            \
    [NXE_REF_MUL] = prefix##_mul_run, [NXE_REF_DIV] = prefix##_div_run,                            \
    [NXE_REF_POW] = prefix##_pow_run, [NXE_REF_MIN] = prefix##_min_run,                            \
    [NXE_REF_MAX] = prefix##_max_run, [NXE_REF_MOD] = prefix##_mod_run,                            \
    [NXE_REF_FMOD] = prefix##_fmod_run, [NXE_REF_PRELU] = prefix##_prelu_run,                      \
    [NXE_REF_EQUAL] = prefix##_eq_run, [NXE_REF_LESS] = prefix##_lt_run,                           \
    [NXE_REF_LESS_EQUAL] = prefix##_le_run, [NXE_REF_GREATER] = prefix##_gt_run,                   \
    [NXE_REF_GREATER_EQUAL] = prefix##_ge_run
#define NXE_SHIFT_ROW(prefix)                                                                      \
    [NXE_REF_SHIFT_LEFT] = prefix##_shl_run, [NXE_REF_SHIFT_RIGHT] = prefix##_shr_run

static const nxe_ref_binary_fn binary_kernels[NXE_REF_TYPE_COUNT][NXE_REF_BINARY_OP_COUNT] = {
    [NXE_REF_F32] = {NXE_KERNEL_ROW(f32)},
    [NXE_REF_F16] = {NXE_KERNEL_ROW(f16)},
    [NXE_REF_BF16] = {NXE_KERNEL_ROW(bf16)},
    [NXE_REF_I8] = {NXE_KERNEL_ROW(i8), NXE_SHIFT_ROW(i8)},
    [NXE_REF_U8] = {NXE_KERNEL_ROW(u8), NXE_SHIFT_ROW(u8)},
    [NXE_REF_I16] = {NXE_KERNEL_ROW(i16), NXE_SHIFT_ROW(i16)},
    [NXE_REF_I32] = {NXE_KERNEL_ROW(i32), NXE_SHIFT_ROW(i32)},
    [NXE_REF_I64] = {NXE_KERNEL_ROW(i64), NXE_SHIFT_ROW(i64)},
    [NXE_REF_BOOL] = {[NXE_REF_EQUAL] = bool_eq_run,
                      [NXE_REF_AND] = bool_and_run,
                      [NXE_REF_OR] = bool_or_run,
                      [NXE_REF_XOR] = bool_xor_run},
};

static const nxe_ref_binary_fn
    extra_kernels[NXE_REF_EW_TYPE_END - NXE_REF_EW_F64][NXE_REF_BINARY_OP_COUNT] = {
        [NXE_REF_EW_F64 - NXE_REF_EW_F64] = {NXE_KERNEL_ROW(f64)},
        [NXE_REF_EW_U16 - NXE_REF_EW_F64] = {NXE_KERNEL_ROW(u16), NXE_SHIFT_ROW(u16)},
        [NXE_REF_EW_U32 - NXE_REF_EW_F64] = {NXE_KERNEL_ROW(u32), NXE_SHIFT_ROW(u32)},
        [NXE_REF_EW_U64 - NXE_REF_EW_F64] = {NXE_KERNEL_ROW(u64), NXE_SHIFT_ROW(u64)},
};

nxe_ref_binary_fn nxe_ref_binary_kernel(int32_t op, int32_t type)
{
    if (op < 0 || op >= NXE_REF_BINARY_OP_COUNT)
        return NULL;
    if (type >= NXE_REF_EW_F64 && type < NXE_REF_EW_TYPE_END)
        return extra_kernels[type - NXE_REF_EW_F64][op];
    if (type < 0 || type >= NXE_REF_TYPE_COUNT)
        return NULL;
    return binary_kernels[type][op];
}

#define NXE_SELECT(T)                                                                              \
    do {                                                                                           \
        const T *pa = a;                                                                           \
        const T *pb = b;                                                                           \
        T *po = out;                                                                               \
        for (int64_t i = 0; i < n; i++)                                                            \
            po[i] = cond[i * step_c] ? pa[i * step_a] : pb[i * step_b];                            \
    } while (0)

int nxe_ref_select(size_t element_size, int64_t n, const uint8_t *cond, int64_t step_c,
                   const void *a, int64_t step_a, const void *b, int64_t step_b, void *out)
{
    switch (element_size) {
    case 1: NXE_SELECT(uint8_t); return 0;
    case 2: NXE_SELECT(uint16_t); return 0;
    case 4: NXE_SELECT(uint32_t); return 0;
    case 8: NXE_SELECT(uint64_t); return 0;
    default: return -1;
    }
}

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
