/* pool.h — reference kernels for the pool op family: max, average and Lp pooling over 1, 2 or 3
 * spatial axes (channels first) and their global forms. Portable C11 and the oracle for all
 * others: no allocation, no threads; callers split work by rows. */
#ifndef NXE_KERNELS_REF_POOL_H
#define NXE_KERNELS_REF_POOL_H

#include <stddef.h>
#include <stdint.h>

/* One pooling window walk over [planes, D, H, W] (planes = batch * channels). Lower ranks use
 * the trailing slots with size 1, kernel 1, stride 1, dilation 1 and no padding. Window
 * position o covers input positions o * stride - pad_begin + k * dilation, k < kernel; only
 * those inside [0, in) are read, those inside [-pad_begin, in + pad_end) count as padding for
 * count_include_pad, and any beyond (from ceil_mode) count for nothing. */
typedef struct nxe_pool_geometry {
    int64_t planes;
    int64_t in_size[3]; /* depth, height, width */
    int64_t out_size[3];
    int64_t kernel[3];
    int64_t stride[3];
    int64_t dilation[3];
    int64_t pad_begin[3];
    int64_t pad_end[3];
} nxe_pool_geometry;

/* Each computes output rows [row_begin, row_end) of the flattened (plane, out depth,
 * out height) range; input [planes, D, H, W], output [planes, OD, OH, OW]. */

/* Maximum of the taps inside the input; a NaN tap makes the result NaN. A window with no tap
 * inside the input gives the dtype's lowest value (-inf for f32). */
void nxe_ref_f32_max_pool(const nxe_pool_geometry *geometry, const float *input, float *output,
                          int64_t row_begin, int64_t row_end);
void nxe_ref_i8_max_pool(const nxe_pool_geometry *geometry, const int8_t *input, int8_t *output,
                         int64_t row_begin, int64_t row_end);
void nxe_ref_u8_max_pool(const nxe_pool_geometry *geometry, const uint8_t *input, uint8_t *output,
                         int64_t row_begin, int64_t row_end);

/* Sum of the taps inside the input (in kz, ky, kx order) divided by their count, or with
 * count_include_pad by the count of taps inside the padded input. */
void nxe_ref_f32_average_pool(const nxe_pool_geometry *geometry, int32_t count_include_pad,
                              const float *input, float *output, int64_t row_begin,
                              int64_t row_end);

/* (sum of |tap|^p over the taps inside the input) ^ (1 / p); padding adds nothing. */
void nxe_ref_f32_lp_pool(const nxe_pool_geometry *geometry, float p, const float *input,
                         float *output, int64_t row_begin, int64_t row_end);

/* Global pooling: planes [begin, end) of `size` contiguous elements each reduce to one value
 * (max with NaN propagation, mean, or Lp norm), summed in index order. */
void nxe_ref_f32_global_max_pool(int64_t size, const float *input, float *output, int64_t begin,
                                 int64_t end);
void nxe_ref_i8_global_max_pool(int64_t size, const int8_t *input, int8_t *output, int64_t begin,
                                int64_t end);
void nxe_ref_u8_global_max_pool(int64_t size, const uint8_t *input, uint8_t *output, int64_t begin,
                                int64_t end);
void nxe_ref_f32_global_average_pool(int64_t size, const float *input, float *output, int64_t begin,
                                     int64_t end);
void nxe_ref_f32_global_lp_pool(int64_t size, float p, const float *input, float *output,
                                int64_t begin, int64_t end);

#endif
