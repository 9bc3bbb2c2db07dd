/* image.h — pixel kernels of the super-resolution frame path: samples to float planes and
 * back, YUV <-> RGB, cubic upscaling by integer factors, box downsampling. Pure functions over
 * pointers and strides (strides in elements of the plane's type; sample strides of 8-bit and
 * 16-bit planes in bytes); no allocation, no threads. */
#ifndef NXE_KERNELS_IMAGE_H
#define NXE_KERNELS_IMAGE_H

#include <stdint.h>

/* Keys' cubic convolution with a = -0.5 (as MATLAB's imresize), the SR literature's bicubic. */
#define NXE_CUBIC_A (-0.5f)

/* Reads a w x h plane of 8-bit samples, `step` bytes apart within a row (1 planar, 3 or 4
 * packed, 2 for NV12's chroma), rows `stride` bytes apart (negative for bottom-up), into a
 * float plane: value * scale. */
void nxe_image_load_u8(const uint8_t *src, int64_t stride, int32_t step, int32_t width,
                       int32_t height, float scale, float *dst, int64_t dst_stride);
/* The same for little-endian 16-bit samples (10-bit formats); `step` counts samples. */
void nxe_image_load_u16(const uint8_t *src, int64_t stride, int32_t step, int32_t width,
                        int32_t height, float scale, float *dst, int64_t dst_stride);
/* Writes value * scale rounded to nearest (halves up) and clamped to [0, max]. */
void nxe_image_store_u8(const float *src, int64_t src_stride, int32_t width, int32_t height,
                        float scale, int32_t max, uint8_t *dst, int64_t stride, int32_t step);
void nxe_image_store_u16(const float *src, int64_t src_stride, int32_t width, int32_t height,
                         float scale, int32_t max, uint8_t *dst, int64_t stride, int32_t step);

/* YUV codes as fractions of the largest code (code / (2^bits - 1)) for one matrix and range:
 * Y = y_offset + y_scale * Y', U = c_offset + c_scale * Cb, V = c_offset + c_scale * Cr, with
 * Y' = kr R + (1 - kr - kb) G + kb B, Cb = (B - Y') / (2 (1 - kb)), Cr = (R - Y') / (2 (1 - kr)). */
typedef struct nxe_yuv_coefficients {
    float kr, kb;
    float y_offset, y_scale;
    float c_offset, c_scale;
} nxe_yuv_coefficients;

/* bt709 nonzero: BT.709 (else BT.601); full_range nonzero: full (else limited); bits 8 or 10. */
nxe_yuv_coefficients nxe_yuv_coefficients_for(int32_t bt709, int32_t full_range, int32_t bits);

/* RGB planes in [0, 1] to Y, U, V planes (code fractions); every plane w x h, `stride` apart. */
void nxe_image_rgb_to_yuv(const nxe_yuv_coefficients *c, const float *r, const float *g,
                          const float *b, float *y, float *u, float *v, int32_t width,
                          int32_t height, int64_t stride);
/* The inverse; R, G, B come out unclamped. */
void nxe_image_yuv_to_rgb(const nxe_yuv_coefficients *c, const float *y, const float *u,
                          const float *v, float *r, float *g, float *b, int32_t width,
                          int32_t height, int64_t stride);

/* Floats of scratch nxe_image_upscale_cubic needs. */
int64_t nxe_image_upscale_scratch(int32_t src_height, int32_t dst_width);
/* Upscales by integer factors fx, fy (1 to 16) with cubic convolution on half-pixel centres
 * (x_src = (x_dst + 0.5) / fx - 0.5), edge samples repeated; separable, horizontal first.
 * dst may be any size: its pixel grid continues the mapping (chroma of odd-sized frames). */
void nxe_image_upscale_cubic(const float *src, int64_t src_stride, int32_t src_width,
                             int32_t src_height, float *dst, int64_t dst_stride, int32_t dst_width,
                             int32_t dst_height, int32_t fx, int32_t fy, float *scratch);
/* Averages fx x fy boxes (the part inside the plane at its right and bottom edges). */
void nxe_image_downsample_box(const float *src, int64_t src_stride, int32_t src_width,
                              int32_t src_height, float *dst, int64_t dst_stride, int32_t dst_width,
                              int32_t dst_height, int32_t fx, int32_t fy);

#endif
