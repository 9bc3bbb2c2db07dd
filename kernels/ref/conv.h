/* conv.h — reference kernels for the conv op family: direct 2-D convolution (NCHW, NHWC) and
 * depth-to-space. Portable C11 and the oracle for every faster variant: no allocation, no
 * threads; callers split the work by output rows. */
#ifndef NXE_KERNELS_REF_CONV_H
#define NXE_KERNELS_REF_CONV_H

#include <stddef.h>
#include <stdint.h>

/* One 2-D convolution, in logical N, C, H, W terms whatever the memory layout. */
typedef struct nxe_conv2d_geometry {
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
} nxe_conv2d_geometry;

/* Computes output rows [row_begin, row_end) of the flattened (batch, out_height) range.
 * input [N, C, H, W], weight [O, C/groups, KH, KW], bias [O] or NULL, output [N, O, OH, OW].
 * Each output element is bias + the sum over (input channel, ky, kx) in that order. */
void nxe_ref_f32_conv2d_nchw(const nxe_conv2d_geometry *geometry, const float *input,
                             const float *weight, const float *bias, float *output,
                             int64_t row_begin, int64_t row_end);

/* As above for input [N, H, W, C], weight [O, KH, KW, C/groups], output [N, OH, OW, O];
 * the sum runs over (ky, kx, input channel) in that order. */
void nxe_ref_f32_conv2d_nhwc(const nxe_conv2d_geometry *geometry, const float *input,
                             const float *weight, const float *bias, float *output,
                             int64_t row_begin, int64_t row_end);

/* Depth-to-space on [N, C, H, W] (or [N, H, W, C] when channels_last) into
 * [N, C / block², H * block, W * block] (or channels last). Output channel c at block offset
 * (i, j) comes from input channel (i * block + j) * C / block² + c in DCR mode (ONNX default)
 * and c * block² + i * block + j in CRD mode (PyTorch pixel_shuffle). */
typedef struct nxe_depth_to_space_geometry {
    int64_t batch;
    int64_t in_channels;
    int64_t in_height;
    int64_t in_width;
    int64_t block_size;
    int32_t channels_last;
    int32_t crd_mode;
} nxe_depth_to_space_geometry;

/* Moves output rows [row_begin, row_end) of the flattened (batch, out_height) range, for
 * elements of any dtype of element_size bytes. */
void nxe_ref_xN_depth_to_space(const nxe_depth_to_space_geometry *geometry, size_t element_size,
                               const void *input, void *output, int64_t row_begin,
                               int64_t row_end);

#endif
