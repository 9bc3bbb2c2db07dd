/* cast.c — reference kernels for the cast op family. Every path to an integer is range-checked
 * before C's conversion (an out-of-range float-to-int cast is undefined), and every path to a
 * half type rounds exactly once. */
#include "ref/cast.h"

#include <math.h>
#include <string.h>

/* ---- f16 / bf16 bits ------------------------------------------------------------------- */

uint16_t nxe_ref_f32_to_f16(float value)
{
    uint32_t x;
    memcpy(&x, &value, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) /* inf, or NaN forced quiet with the top payload bits kept */
        return (uint16_t)(sign | 0x7C00u | (abs > 0x7F800000u ? 0x0200u | (abs >> 13) : 0u));
    if (abs >= 0x477FF000u) /* 65520 and up round to inf */
        return (uint16_t)(sign | 0x7C00u);
    if (abs >= 0x38800000u) { /* normal f16: rebias the exponent (127 -> 15), round 13 bits */
        const uint32_t rebiased = abs - (112u << 23);
        return (uint16_t)(sign | ((rebiased + 0x0FFFu + ((rebiased >> 13) & 1u)) >> 13));
    }
    if (abs < 0x33000000u) /* below 2^-25: rounds to zero (2^-25 itself ties to even zero) */
        return sign;
    /* Subnormal f16: count units of 2^-24. The significand with its implicit bit is scaled
     * by 2^(e - 150), so the unit count is it shifted right by 126 - e (14..24). */
    const uint32_t exponent = abs >> 23;
    const uint32_t significand = (abs & 0x007FFFFFu) | 0x00800000u;
    const uint32_t shift = 126u - exponent;
    uint32_t units = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (units & 1u)))
        units++; /* may carry into the smallest normal, which is the right encoding */
    return (uint16_t)(sign | units);
}

float nxe_ref_f16_to_f32(uint16_t bits)
{
    const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1Fu;
    uint32_t mantissa = bits & 0x03FFu;
    uint32_t x;
    if (exponent == 0x1Fu) {
        x = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        x = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        x = sign;
    } else { /* subnormal: normalize; value = mantissa * 2^-24 */
        uint32_t e = 113u;
        while (!(mantissa & 0x0400u)) {
            mantissa <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((mantissa & 0x03FFu) << 13);
    }
    float value;
    memcpy(&value, &x, sizeof value);
    return value;
}

uint16_t nxe_ref_f32_to_bf16(float value)
{
    uint32_t x;
    memcpy(&x, &value, sizeof x);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x0040u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float nxe_ref_bf16_to_f32(uint16_t bits)
{
    const uint32_t x = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &x, sizeof value);
    return value;
}

/* An integer magnitude as the exponent and mantissa fields of a binary float with
 * `mantissa_bits` stored bits and exponent `bias`, rounded to nearest even; exponents that do
 * not fit give inf. Integers are never subnormal. */
static uint32_t magnitude_to_float_bits(uint64_t magnitude, uint32_t mantissa_bits, uint32_t bias,
                                        uint32_t inf_exponent)
{
    if (magnitude == 0)
        return 0;
    uint32_t top = 0; /* index of the leading one */
    for (uint32_t step = 32; step > 0; step /= 2)
        if (magnitude >> (top + step))
            top += step;
    uint64_t significand;
    if (top <= mantissa_bits) {
        significand = magnitude << (mantissa_bits - top);
    } else {
        const uint32_t shift = top - mantissa_bits;
        significand = magnitude >> shift;
        const uint64_t rest = magnitude & ((UINT64_C(1) << shift) - 1u);
        const uint64_t half = UINT64_C(1) << (shift - 1u);
        if (rest > half || (rest == half && (significand & 1u))) {
            significand++;
            if (significand >> (mantissa_bits + 1u)) {
                significand >>= 1;
                top++;
            }
        }
    }
    const uint32_t exponent = top + bias;
    if (exponent >= inf_exponent)
        return inf_exponent << mantissa_bits;
    return (exponent << mantissa_bits) |
           (uint32_t)(significand & ((UINT64_C(1) << mantissa_bits) - 1u));
}

static uint64_t magnitude_of(int64_t v)
{
    return v < 0 ? UINT64_C(0) - (uint64_t)v : (uint64_t)v;
}

/* A double as the float nearest to it toward zero, with the last mantissa bit set when that
 * is inexact ("round to odd"). Rounding this float once more to f16 or bf16 (at least two
 * bits fewer) gives the same result as rounding the double directly. */
static float round_to_odd_float(double value)
{
    const float f = (float)value;
    if (value != value || (double)f == value)
        return f;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = x & 0x80000000u;
    uint32_t magnitude = x & 0x7FFFFFFFu;
    if (fabs((double)f) > fabs(value)) /* rounded away from zero (inf included): step back */
        magnitude--;
    magnitude |= 1u;
    x = sign | magnitude;
    float result;
    memcpy(&result, &x, sizeof result);
    return result;
}

/* ---- Loads: every source as a double (exact for every float type), an int64 or a uint64 --- */

static inline double load_f32(float v)
{
    return v;
}
static inline double load_f16(uint16_t v)
{
    return nxe_ref_f16_to_f32(v);
}
static inline double load_bf16(uint16_t v)
{
    return nxe_ref_bf16_to_f32(v);
}
static inline double load_f64(double v)
{
    return v;
}
static inline int64_t load_i8(int8_t v)
{
    return v;
}
static inline int64_t load_u8(uint8_t v)
{
    return v;
}
static inline int64_t load_i16(int16_t v)
{
    return v;
}
static inline int64_t load_i32(int32_t v)
{
    return v;
}
static inline int64_t load_i64(int64_t v)
{
    return v;
}
static inline int64_t load_bool8(uint8_t v)
{
    return v != 0;
}
static inline int64_t load_u16(uint16_t v)
{
    return v;
}
static inline int64_t load_u32(uint32_t v)
{
    return v;
}
static inline uint64_t load_u64(uint64_t v)
{
    return v;
}

/* ---- Stores from a double ----------------------------------------------------------------- */

static inline float store_f32_from_float(double v)
{
    return (float)v;
}
static inline double store_f64_from_float(double v)
{
    return v;
}
static inline uint16_t store_f16_from_float(double v)
{
    return nxe_ref_f32_to_f16(round_to_odd_float(v));
}
static inline uint16_t store_bf16_from_float(double v)
{
    return nxe_ref_f32_to_bf16(round_to_odd_float(v));
}
static inline uint8_t store_bool8_from_float(double v)
{
    return v != 0.0;
}

/* Truncation toward zero is exact, so the result fits whenever lo <= v < hi_exclusive; both
 * bounds are powers of two (or zero), exact in double. Values in (lo - 1, lo) truncate to lo
 * and are caught by the lower test with the same result. */
#define STORE_INT_FROM_FLOAT(T, name, lo, hi_exclusive, max_value)                                 \
    static inline T store_##name##_from_float(double v)                                            \
    {                                                                                              \
        if (v != v)                                                                                \
            return 0;                                                                              \
        if (v >= (hi_exclusive))                                                                   \
            return (max_value);                                                                    \
        if (v < (lo))                                                                              \
            return (T)(lo);                                                                        \
        return (T)v;                                                                               \
    }
STORE_INT_FROM_FLOAT(int8_t, i8, -128.0, 128.0, INT8_MAX)
STORE_INT_FROM_FLOAT(uint8_t, u8, 0.0, 256.0, UINT8_MAX)
STORE_INT_FROM_FLOAT(int16_t, i16, -32768.0, 32768.0, INT16_MAX)
STORE_INT_FROM_FLOAT(int32_t, i32, -2147483648.0, 2147483648.0, INT32_MAX)
STORE_INT_FROM_FLOAT(int64_t, i64, -9223372036854775808.0, 9223372036854775808.0, INT64_MAX)
STORE_INT_FROM_FLOAT(uint16_t, u16, 0.0, 65536.0, UINT16_MAX)
STORE_INT_FROM_FLOAT(uint32_t, u32, 0.0, 4294967296.0, UINT32_MAX)
STORE_INT_FROM_FLOAT(uint64_t, u64, 0.0, 18446744073709551616.0, UINT64_MAX)
#undef STORE_INT_FROM_FLOAT

/* ---- Stores from an int64 ----------------------------------------------------------------- */

static inline float store_f32_from_int(int64_t v)
{
    return (float)v;
}
static inline double store_f64_from_int(int64_t v)
{
    return (double)v;
}
static inline uint16_t store_f16_from_int(int64_t v)
{
    const uint16_t sign = v < 0 ? 0x8000u : 0u;
    return (uint16_t)(sign | magnitude_to_float_bits(magnitude_of(v), 10, 15, 31));
}
static inline uint16_t store_bf16_from_int(int64_t v)
{
    const uint16_t sign = v < 0 ? 0x8000u : 0u;
    return (uint16_t)(sign | magnitude_to_float_bits(magnitude_of(v), 7, 127, 255));
}
/* Narrowing through the unsigned type keeps the low bits; the final unsigned-to-signed step is
 * implementation-defined (two's complement on every supported compiler), never undefined. */
static inline int8_t store_i8_from_int(int64_t v)
{
    return (int8_t)(uint8_t)(uint64_t)v;
}
static inline uint8_t store_u8_from_int(int64_t v)
{
    return (uint8_t)(uint64_t)v;
}
static inline int16_t store_i16_from_int(int64_t v)
{
    return (int16_t)(uint16_t)(uint64_t)v;
}
static inline int32_t store_i32_from_int(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v;
}
static inline int64_t store_i64_from_int(int64_t v)
{
    return v;
}
static inline uint8_t store_bool8_from_int(int64_t v)
{
    return v != 0;
}
static inline uint16_t store_u16_from_int(int64_t v)
{
    return (uint16_t)(uint64_t)v;
}
static inline uint32_t store_u32_from_int(int64_t v)
{
    return (uint32_t)(uint64_t)v;
}
static inline uint64_t store_u64_from_int(int64_t v)
{
    return (uint64_t)v;
}

/* ---- Stores from a uint64 (u64 sources) ----------------------------------------------------- */

static inline float store_f32_from_uint(uint64_t v)
{
    return (float)v;
}
static inline double store_f64_from_uint(uint64_t v)
{
    return (double)v;
}
static inline uint16_t store_f16_from_uint(uint64_t v)
{
    return (uint16_t)magnitude_to_float_bits(v, 10, 15, 31);
}
static inline uint16_t store_bf16_from_uint(uint64_t v)
{
    return (uint16_t)magnitude_to_float_bits(v, 7, 127, 255);
}
static inline int8_t store_i8_from_uint(uint64_t v)
{
    return (int8_t)(uint8_t)v;
}
static inline uint8_t store_u8_from_uint(uint64_t v)
{
    return (uint8_t)v;
}
static inline int16_t store_i16_from_uint(uint64_t v)
{
    return (int16_t)(uint16_t)v;
}
static inline int32_t store_i32_from_uint(uint64_t v)
{
    return (int32_t)(uint32_t)v;
}
static inline int64_t store_i64_from_uint(uint64_t v)
{
    /* Two's complement reinterpretation without an out-of-range conversion. */
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(UINT64_MAX - v) - 1;
}
static inline uint8_t store_bool8_from_uint(uint64_t v)
{
    return v != 0;
}
static inline uint16_t store_u16_from_uint(uint64_t v)
{
    return (uint16_t)v;
}
static inline uint32_t store_u32_from_uint(uint64_t v)
{
    return (uint32_t)v;
}
static inline uint64_t store_u64_from_uint(uint64_t v)
{
    return v;
}

/* ---- The 169 loops -------------------------------------------------------------------------- */

typedef void (*cast_fn)(const void *src, void *dst, int64_t begin, int64_t end);

/* Each list is in enum nxe_ref_type order: (name, C type, kind of value loaded). */
#define SOURCE_TYPES(X)                                                                            \
    X(f32, float, float)                                                                           \
    X(f16, uint16_t, float)                                                                        \
    X(bf16, uint16_t, float)                                                                       \
    X(i8, int8_t, int)                                                                             \
    X(u8, uint8_t, int)                                                                            \
    X(i16, int16_t, int)                                                                           \
    X(i32, int32_t, int)                                                                           \
    X(i64, int64_t, int)                                                                           \
    X(bool8, uint8_t, int)                                                                         \
    X(f64, double, float)                                                                          \
    X(u16, uint16_t, int)                                                                          \
    X(u32, uint32_t, int)                                                                          \
    X(u64, uint64_t, uint)
#define DEST_TYPES(Y, S, ST, KIND)                                                                 \
    Y(S, ST, KIND, f32, float)                                                                     \
    Y(S, ST, KIND, f16, uint16_t)                                                                  \
    Y(S, ST, KIND, bf16, uint16_t)                                                                 \
    Y(S, ST, KIND, i8, int8_t)                                                                     \
    Y(S, ST, KIND, u8, uint8_t)                                                                    \
    Y(S, ST, KIND, i16, int16_t)                                                                   \
    Y(S, ST, KIND, i32, int32_t)                                                                   \
    Y(S, ST, KIND, i64, int64_t)                                                                   \
    Y(S, ST, KIND, bool8, uint8_t)                                                                 \
    Y(S, ST, KIND, f64, double)                                                                    \
    Y(S, ST, KIND, u16, uint16_t)                                                                  \
    Y(S, ST, KIND, u32, uint32_t)                                                                  \
    Y(S, ST, KIND, u64, uint64_t)

#define DEFINE_CAST(S, ST, KIND, D, DT)                                                            \
    static void cast_##S##_to_##D(const void *src, void *dst, int64_t begin, int64_t end)          \
    {                                                                                              \
        const ST *s = src;                                                                         \
        DT *d = dst;                                                                               \
        for (int64_t i = begin; i < end; i++)                                                      \
            d[i] = store_##D##_from_##KIND(load_##S(s[i]));                                        \
    }
#define DEFINE_CASTS_FROM(S, ST, KIND) DEST_TYPES(DEFINE_CAST, S, ST, KIND)
SOURCE_TYPES(DEFINE_CASTS_FROM)

#define CAST_ENTRY(S, ST, KIND, D, DT) cast_##S##_to_##D,
#define CAST_ROW(S, ST, KIND) {DEST_TYPES(CAST_ENTRY, S, ST, KIND)},
static const cast_fn cast_table[NXE_REF_TYPE_COUNT][NXE_REF_TYPE_COUNT] = {SOURCE_TYPES(CAST_ROW)};

#undef CAST_ROW
#undef CAST_ENTRY
#undef DEFINE_CASTS_FROM
#undef DEFINE_CAST
#undef DEST_TYPES
#undef SOURCE_TYPES

int nxe_ref_cast(int32_t from, const void *src, int32_t to, void *dst, int64_t begin, int64_t end)
{
    if (from < 0 || from >= NXE_REF_TYPE_COUNT || to < 0 || to >= NXE_REF_TYPE_COUNT)
        return -1;
    if (begin < end)
        cast_table[from][to](src, dst, begin, end);
    return 0;
}

/* ---- Quantization --------------------------------------------------------------------------- */

static inline int32_t quantize_value(float x, float scale, int32_t zero_point, int32_t lo,
                                     int32_t hi)
{
    const float rounded = nearbyintf(x / scale); /* default rounding mode: half to even */
    if (rounded != rounded)
        return zero_point;
    const float v = rounded + (float)zero_point;
    if (v <= (float)lo)
        return lo;
    if (v >= (float)hi)
        return hi;
    return (int32_t)v;
}

#define DEFINE_QUANTIZE(T, name, lo, hi)                                                           \
    void nxe_ref_f32_quantize_##name(const float *x, T *y, int64_t channels, int64_t inner,        \
                                     const float *scales, int32_t zero_point, int64_t row_begin,   \
                                     int64_t row_end)                                              \
    {                                                                                              \
        for (int64_t r = row_begin; r < row_end; r++) {                                            \
            const float scale = scales[r % channels];                                              \
            const float *xr = x + r * inner;                                                       \
            T *yr = y + r * inner;                                                                 \
            for (int64_t k = 0; k < inner; k++)                                                    \
                yr[k] = (T)quantize_value(xr[k], scale, zero_point, lo, hi);                       \
        }                                                                                          \
    }
DEFINE_QUANTIZE(uint8_t, u8, 0, 255)
DEFINE_QUANTIZE(int8_t, i8, -128, 127)
#undef DEFINE_QUANTIZE

#define DEFINE_DEQUANTIZE(T, name)                                                                 \
    void nxe_ref_##name##_dequantize(const T *q, float *y, int64_t channels, int64_t inner,        \
                                     const float *scales, int32_t zero_point, int64_t row_begin,   \
                                     int64_t row_end)                                              \
    {                                                                                              \
        for (int64_t r = row_begin; r < row_end; r++) {                                            \
            const float scale = scales[r % channels];                                              \
            const T *qr = q + r * inner;                                                           \
            float *yr = y + r * inner;                                                             \
            for (int64_t k = 0; k < inner; k++)                                                    \
                yr[k] = (float)((int64_t)qr[k] - zero_point) * scale;                              \
        }                                                                                          \
    }
DEFINE_DEQUANTIZE(uint8_t, u8)
DEFINE_DEQUANTIZE(int8_t, i8)
DEFINE_DEQUANTIZE(int32_t, i32)
#undef DEFINE_DEQUANTIZE
