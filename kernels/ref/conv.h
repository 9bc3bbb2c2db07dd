/* conv.h — reference kernels for the conv op family: direct 1-, 2- and 3-D convolution
 * (channels first or last), transposed convolution and depth-to-space. Portable C11 and the
 * oracle for every faster variant: no allocation, no threads; callers split work by rows. */
#ifndef NXE_KERNELS_REF_CONV_H
#define NXE_KERNELS_REF_CONV_H

#include <stddef.h>
#include <stdint.h>

/* One convolution of 1, 2 or 3 spatial dimensions, in logical N, C, D, H, W terms whatever the
 * memory layout. Lower ranks use the trailing slots: a 2-D convolution has depth 1, kernel
 * depth 1, stride and dilation 1 and no depth padding; a 1-D one also has height 1. */
typedef struct nxe_conv_geometry {
    int64_t batch;
    int64_t in_channels;
    int64_t out_channels;
    int64_t groups;     /* divides in_channels and out_channels */
    int64_t in_size[3]; /* depth, height, width */
    int64_t out_size[3];
    int64_t kernel[3];
    int64_t stride[3];
    int64_t dilation[3];
    int64_t pad_begin[3]; /* zero padding before the first input position of each axis */
} nxe_conv_geometry;

/* Computes output rows [row_begin, row_end) of the flattened (batch, out depth, out height)
 * range. input [N, C, D, H, W], weight [O, C/groups, KD, KH, KW], bias [O] or NULL, output
 * [N, O, OD, OH, OW]. Each output element is bias + the sum over (input channel, kz, ky, kx) in
 * that order; padding taps are skipped, not read. */
void nxe_ref_f32_conv_ncdhw(const nxe_conv_geometry *geometry, const float *input,
                            const float *weight, const float *bias, float *output,
                            int64_t row_begin, int64_t row_end);

/* As above for input [N, D, H, W, C], weight [O, KD, KH, KW, C/groups], output
 * [N, OD, OH, OW, O]; the sum runs over (kz, ky, kx, input channel) in that order. */
void nxe_ref_f32_conv_ndhwc(const nxe_conv_geometry *geometry, const float *input,
                            const float *weight, const float *bias, float *output,
                            int64_t row_begin, int64_t row_end);

/* Transposed convolution (the gradient of convolution with respect to its input), computed by
 * gathering so that no scratch memory is needed. input [N, C, D, H, W], weight
 * [C, O/groups, KD, KH, KW], bias [O] or NULL, output [N, O, OD, OH, OW]: input position i
 * with tap k feeds output position i * stride - pad_begin + k * dilation. Each output element
 * is bias + the sum over (input channel, kz, ky, kx) in that order. Rows as above. */
void nxe_ref_f32_conv_transpose_ncdhw(const nxe_conv_geometry *geometry, const float *input,
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
                               const void *input, void *output, int64_t row_begin, int64_t row_end);

#endif
