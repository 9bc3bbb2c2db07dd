/* quantized.h — reference kernels for the quantized op family: integer GEMM and direct 2-D
 * convolution over u8/i8 operands with zero points, accumulated exactly and wrapped to int32,
 * optionally requantized to u8/i8. Portable C11: no allocation, no threads, no scratch. */
#ifndef NXE_KERNELS_REF_QUANTIZED_H
#define NXE_KERNELS_REF_QUANTIZED_H

#include <stddef.h>
#include <stdint.h>

/* One 2-D convolution in N, C, H, W terms. */
typedef struct nxe_q8_conv2d_geometry {
    int64_t batch;
    int64_t in_channels;
    int64_t in_height;
    int64_t in_width;
    int64_t out_channels;
    int64_t out_height;
    int64_t out_width;
    int64_t kernel_height;
    int64_t kernel_width;
    int64_t stride_height;
    int64_t stride_width;
    int64_t dilation_height;
    int64_t dilation_width;
    int64_t pad_top;
    int64_t pad_left;
    int64_t groups; /* divides in_channels and out_channels */
} nxe_q8_conv2d_geometry;
/* An 8-bit operand: `data` holds uint8_t (is_signed 0) or int8_t (is_signed 1) values. */
typedef struct nxe_q8_ref {
    const void *data;
    int32_t is_signed;
} nxe_q8_ref;

/* Where results go. With `y_i32` set, the int32 accumulators are stored. Otherwise each
 * accumulator (plus bias) is requantized into `y_q8`:
 *   y = saturate(round_half_even(acc * (x_scale * w_scale / y_scale)) + y_zero_point),
 * the multiplier formed in f32 and applied in double; NaN gives y_zero_point. */
typedef struct nxe_q8_output {
    int32_t *y_i32;
    void *y_q8;
    int32_t y_signed;
    float y_scale;
    int32_t y_zero_point;
} nxe_q8_output;

/* Stores element `index` of the output from an exact accumulator: wrapped to int32, or (plus
 * bias) requantized as above with `multiplier` = x_scale * w_scale / y_scale. The reference
 * kernels store through this; the 8-bit GEMM drivers requantize a row at a time in the same
 * arithmetic (kernels/portable/gemm_driver.c), checked against it bit for bit. */
void nxe_ref_q8_store(const nxe_q8_output *out, int64_t index, int64_t acc, int64_t bias,
                      float multiplier);

/* acc[i, j] = sum_k (a[i, k] - a_zero[i * a_zero_stride]) * (b[k, j] - b_zero[j * b_zero_stride])
 * for an [m, k] by [k, n] product; a has row stride a_stride_m (columns dense), b row stride
 * n. A NULL zero point is 0. When requantizing, the multiplier of element (i, j) uses
 * a_scale[i * a_scale_stride] and b_scale[j * b_scale_stride]. y rows are dense (stride n). */
typedef struct nxe_q8_gemm_args {
    int64_t m;
    int64_t n;
    int64_t k;
    nxe_q8_ref a;
    int64_t a_stride_m;
    nxe_q8_ref b;
    nxe_q8_ref a_zero;
    int64_t a_zero_stride;
    nxe_q8_ref b_zero;
    int64_t b_zero_stride;
    const float *a_scale;
    int64_t a_scale_stride;
    const float *b_scale;
    int64_t b_scale_stride;
    nxe_q8_output out;
} nxe_q8_gemm_args;

/* Computes rows [row_begin, row_end) of y. */
void nxe_ref_q8_gemm(const nxe_q8_gemm_args *args, int64_t row_begin, int64_t row_end);

/* Direct convolution of x [N, C, H, W] with w [O, C/groups, KH, KW] into y [N, O, OH, OW],
 * zero points subtracted from every tap (padding taps contribute nothing, as if padded with
 * x's zero point). w_zero and w_scale are indexed by output channel times their stride (0 for
 * one value per tensor). bias (int32 [O], may be NULL) is added to the accumulator before
 * requantization; it is ignored when storing int32. */
typedef struct nxe_q8_conv2d_args {
    nxe_q8_conv2d_geometry geometry;
    nxe_q8_ref x;
    nxe_q8_ref w;
    nxe_q8_ref x_zero;
    nxe_q8_ref w_zero;
    int64_t w_zero_stride;
    const float *x_scale;
    const float *w_scale;
    int64_t w_scale_stride;
    const int32_t *bias;
    nxe_q8_output out;
} nxe_q8_conv2d_args;

/* Computes output rows [row_begin, row_end) of the flattened (batch, out_height) range. */
void nxe_ref_q8_conv2d_nchw(const nxe_q8_conv2d_args *args, int64_t row_begin, int64_t row_end);

/* Smallest and largest of x[0..n), starting from 0 (so min <= 0 <= max); NaN is skipped. */
void nxe_ref_f32_minmax_with_zero(int64_t n, const float *x, float *min, float *max);

#endif
