/* cast.h — reference kernels for the cast op family (portable C11, the oracle for all others):
 * conversions between the thirteen element types, the f16/bf16 bit conversions every other
 * family can reuse, and linear (de)quantization. No conversion here is undefined behaviour. */
#ifndef NXE_KERNELS_REF_CAST_H
#define NXE_KERNELS_REF_CAST_H

#include <stddef.h>
#include <stdint.h>

/* Half-precision bits <-> f32. To f16/bf16 rounds to nearest, ties to even; f16 keeps
 * subnormals, overflows to inf, and NaN stays NaN (quiet, sign kept) in both. From f16/bf16
 * is exact. */
uint16_t nxe_ref_f32_to_f16(float value);
float nxe_ref_f16_to_f32(uint16_t bits);
uint16_t nxe_ref_f32_to_bf16(float value);
float nxe_ref_bf16_to_f32(uint16_t bits);

/* Element types of nxe_ref_cast. */
enum nxe_ref_type {
    NXE_REF_F32,
    NXE_REF_F16,  /* IEEE binary16 bits in uint16_t */
    NXE_REF_BF16, /* upper half of an f32 in uint16_t */
    NXE_REF_I8,
    NXE_REF_U8,
    NXE_REF_I16,
    NXE_REF_I32,
    NXE_REF_I64,
    NXE_REF_BOOL, /* one byte; nonzero is true */
    NXE_REF_F64,
    NXE_REF_U16,
    NXE_REF_U32,
    NXE_REF_U64,
    NXE_REF_TYPE_COUNT /* the order follows enum nxe_dtype from NXE_DTYPE_F32 on */
};

/* Converts elements [begin, end) of src (type `from`) into the same positions of dst (type
 * `to`). Returns 0, or -1 (writing nothing) when a type is not an enum nxe_ref_type.
 * Semantics, per destination:
 *   f64/f32/f16/bf16 — one rounding to nearest even from the exact source value (integers
 *                  and f64 included: no double rounding through f32); bool gives 0 or 1.
 *   integers     — from floats: truncate toward zero, saturate at the type's range, NaN -> 0;
 *                  from integers (signed or unsigned, any width): keep the low bits (two's
 *                  complement wrap); bool gives 0/1.
 *   bool         — value != 0 (NaN is true, -0.0 is false). */
int nxe_ref_cast(int32_t from, const void *src, int32_t to, void *dst, int64_t begin, int64_t end);

/* Linear quantization of x viewed as [rows, inner], row r using scales[r % channels]:
 *   y = saturate(round_half_even(x / scale) + zero_point); NaN gives zero_point.
 * Per-tensor quantization is channels = 1. Writes rows [row_begin, row_end). */
void nxe_ref_f32_quantize_u8(const float *x, uint8_t *y, int64_t channels, int64_t inner,
                             const float *scales, int32_t zero_point, int64_t row_begin,
                             int64_t row_end);
void nxe_ref_f32_quantize_i8(const float *x, int8_t *y, int64_t channels, int64_t inner,
                             const float *scales, int32_t zero_point, int64_t row_begin,
                             int64_t row_end);

/* The inverse, same layout: y = (float)(q - zero_point) * scale, the difference taken exactly
 * in 64-bit integers. */
void nxe_ref_u8_dequantize(const uint8_t *q, float *y, int64_t channels, int64_t inner,
                           const float *scales, int32_t zero_point, int64_t row_begin,
                           int64_t row_end);
void nxe_ref_i8_dequantize(const int8_t *q, float *y, int64_t channels, int64_t inner,
                           const float *scales, int32_t zero_point, int64_t row_begin,
                           int64_t row_end);
void nxe_ref_i32_dequantize(const int32_t *q, float *y, int64_t channels, int64_t inner,
                            const float *scales, int32_t zero_point, int64_t row_begin,
                            int64_t row_end);

#endif
