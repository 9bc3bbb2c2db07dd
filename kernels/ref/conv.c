/* conv.c — reference kernels for the conv op family: direct convolution needing no scratch
 * memory, and depth-to-space as pure data movement. */
#include "conv.h"

#include <string.h>

/* Output columns [*begin, *end) whose input column out * stride + offset lies in [0, width):
 * padding taps are skipped instead of read. */
static void valid_output_range(int64_t offset, int64_t stride, int64_t width, int64_t out_width,
                               int64_t *begin, int64_t *end)
{
    int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t last = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
    if (last > out_width) {
        last = out_width;
    }
    if (first > last) {
        first = last;
    }
    *begin = first;
    *end = last;
}

void nxe_ref_f32_conv2d_nchw(const nxe_conv2d_geometry *geometry, const float *input,
                             const float *weight, const float *bias, float *output,
                             int64_t row_begin, int64_t row_end)
{
    const nxe_conv2d_geometry g = *geometry;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    const int64_t kernel_size = g.kernel_height * g.kernel_width;
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / g.out_height;
        const int64_t oy = row % g.out_height;
        for (int64_t oc = 0; oc < g.out_channels; oc++) {
            float *out_row =
                output + ((n * g.out_channels + oc) * g.out_height + oy) * g.out_width;
            const float init = bias != NULL ? bias[oc] : 0.0f;
            for (int64_t ox = 0; ox < g.out_width; ox++) {
                out_row[ox] = init;
            }
            const int64_t first_in_channel = (oc / group_out) * group_in;
            for (int64_t icg = 0; icg < group_in; icg++) {
                const float *in_plane =
                    input + (n * g.in_channels + first_in_channel + icg) * g.in_height * g.in_width;
                const float *taps = weight + (oc * group_in + icg) * kernel_size;
                for (int64_t ky = 0; ky < g.kernel_height; ky++) {
                    const int64_t iy = oy * g.stride_height - g.pad_top + ky * g.dilation_height;
                    if (iy < 0 || iy >= g.in_height) {
                        continue;
                    }
                    const float *in_row = in_plane + iy * g.in_width;
                    for (int64_t kx = 0; kx < g.kernel_width; kx++) {
                        const float tap = taps[ky * g.kernel_width + kx];
                        const int64_t offset = kx * g.dilation_width - g.pad_left;
                        int64_t ox_begin, ox_end;
                        valid_output_range(offset, g.stride_width, g.in_width, g.out_width,
                                           &ox_begin, &ox_end);
                        for (int64_t ox = ox_begin; ox < ox_end; ox++) {
                            out_row[ox] += tap * in_row[ox * g.stride_width + offset];
                        }
                    }
                }
            }
        }
    }
}

void nxe_ref_f32_conv2d_nhwc(const nxe_conv2d_geometry *geometry, const float *input,
                             const float *weight, const float *bias, float *output,
                             int64_t row_begin, int64_t row_end)
{
    const nxe_conv2d_geometry g = *geometry;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / g.out_height;
        const int64_t oy = row % g.out_height;
        for (int64_t ox = 0; ox < g.out_width; ox++) {
            float *out_pixel =
                output + ((n * g.out_height + oy) * g.out_width + ox) * g.out_channels;
            for (int64_t oc = 0; oc < g.out_channels; oc++) {
                const int64_t first_in_channel = (oc / group_out) * group_in;
                float acc = bias != NULL ? bias[oc] : 0.0f;
                for (int64_t ky = 0; ky < g.kernel_height; ky++) {
                    const int64_t iy = oy * g.stride_height - g.pad_top + ky * g.dilation_height;
                    if (iy < 0 || iy >= g.in_height) {
                        continue;
                    }
                    for (int64_t kx = 0; kx < g.kernel_width; kx++) {
                        const int64_t ix = ox * g.stride_width - g.pad_left + kx * g.dilation_width;
                        if (ix < 0 || ix >= g.in_width) {
                            continue;
                        }
                        const float *in_pixel =
                            input + ((n * g.in_height + iy) * g.in_width + ix) * g.in_channels +
                            first_in_channel;
                        const float *taps =
                            weight + ((oc * g.kernel_height + ky) * g.kernel_width + kx) * group_in;
                        for (int64_t icg = 0; icg < group_in; icg++) {
                            acc += in_pixel[icg] * taps[icg];
                        }
                    }
                }
                out_pixel[oc] = acc;
            }
        }
    }
}

void nxe_ref_xN_depth_to_space(const nxe_depth_to_space_geometry *geometry, size_t element_size,
                               const void *input, void *output, int64_t row_begin,
                               int64_t row_end)
{
    const nxe_depth_to_space_geometry g = *geometry;
    const int64_t block = g.block_size;
    const int64_t out_channels = g.in_channels / (block * block);
    const int64_t out_height = g.in_height * block;
    const int64_t out_width = g.in_width * block;
    const char *src = input;
    char *dst = output;
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / out_height;
        const int64_t oy = row % out_height;
        const int64_t iy = oy / block;
        const int64_t i = oy % block;
        for (int64_t ox = 0; ox < out_width; ox++) {
            const int64_t ix = ox / block;
            const int64_t j = ox % block;
            for (int64_t c = 0; c < out_channels; c++) {
                const int64_t ic = g.crd_mode ? (c * block + i) * block + j
                                              : (i * block + j) * out_channels + c;
                int64_t from, to;
                if (g.channels_last) {
                    from = ((n * g.in_height + iy) * g.in_width + ix) * g.in_channels + ic;
                    to = ((n * out_height + oy) * out_width + ox) * out_channels + c;
                } else {
                    from = ((n * g.in_channels + ic) * g.in_height + iy) * g.in_width + ix;
                    to = ((n * out_channels + c) * out_height + oy) * out_width + ox;
                }
                memcpy(dst + (size_t)to * element_size, src + (size_t)from * element_size,
                       element_size);
            }
        }
    }
}
