/* conv.c — reference kernels for the conv op family: direct and transposed convolution needing
 * no scratch memory, and depth-to-space as pure data movement. */
#include "ref/conv.h"

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

/* Input columns [*begin, *end) whose output column in * stride + offset lies in
 * [0, out_width): the scatter view of a transposed convolution, walked as a gather. */
static void feeding_input_range(int64_t offset, int64_t stride, int64_t in_width, int64_t out_width,
                                int64_t *begin, int64_t *end)
{
    int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t last = out_width - 1 - offset < 0 ? 0 : (out_width - 1 - offset) / stride + 1;
    if (last > in_width) {
        last = in_width;
    }
    if (first > last) {
        first = last;
    }
    *begin = first;
    *end = last;
}

void nxe_ref_f32_conv_ncdhw(const nxe_conv_geometry *geometry, const float *input,
                            const float *weight, const float *bias, float *output,
                            int64_t row_begin, int64_t row_end)
{
    const nxe_conv_geometry g = *geometry;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    const int64_t kernel_volume = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const int64_t in_volume = g.in_size[0] * g.in_size[1] * g.in_size[2];
    const int64_t out_volume = g.out_size[0] * g.out_size[1] * g.out_size[2];
    const int64_t out_width = g.out_size[2];
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / (g.out_size[0] * g.out_size[1]);
        const int64_t oz = row / g.out_size[1] % g.out_size[0];
        const int64_t oy = row % g.out_size[1];
        for (int64_t oc = 0; oc < g.out_channels; oc++) {
            float *out_row = output + (n * g.out_channels + oc) * out_volume +
                             (oz * g.out_size[1] + oy) * out_width;
            const float init = bias != NULL ? bias[oc] : 0.0f;
            for (int64_t ox = 0; ox < out_width; ox++) {
                out_row[ox] = init;
            }
            const int64_t first_in_channel = (oc / group_out) * group_in;
            for (int64_t icg = 0; icg < group_in; icg++) {
                const float *in_volume_start =
                    input + (n * g.in_channels + first_in_channel + icg) * in_volume;
                const float *taps = weight + (oc * group_in + icg) * kernel_volume;
                for (int64_t kz = 0; kz < g.kernel[0]; kz++) {
                    const int64_t iz = oz * g.stride[0] - g.pad_begin[0] + kz * g.dilation[0];
                    if (iz < 0 || iz >= g.in_size[0]) {
                        continue;
                    }
                    for (int64_t ky = 0; ky < g.kernel[1]; ky++) {
                        const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
                        if (iy < 0 || iy >= g.in_size[1]) {
                            continue;
                        }
                        const float *in_row =
                            in_volume_start + (iz * g.in_size[1] + iy) * g.in_size[2];
                        const float *tap_row = taps + (kz * g.kernel[1] + ky) * g.kernel[2];
                        for (int64_t kx = 0; kx < g.kernel[2]; kx++) {
                            const float tap = tap_row[kx];
                            const int64_t offset = kx * g.dilation[2] - g.pad_begin[2];
                            int64_t ox_begin, ox_end;
                            valid_output_range(offset, g.stride[2], g.in_size[2], out_width,
                                               &ox_begin, &ox_end);
                            for (int64_t ox = ox_begin; ox < ox_end; ox++) {
                                out_row[ox] += tap * in_row[ox * g.stride[2] + offset];
                            }
                        }
                    }
                }
            }
        }
    }
}

void nxe_ref_f32_conv_ndhwc(const nxe_conv_geometry *geometry, const float *input,
                            const float *weight, const float *bias, float *output,
                            int64_t row_begin, int64_t row_end)
{
    const nxe_conv_geometry g = *geometry;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / (g.out_size[0] * g.out_size[1]);
        const int64_t oz = row / g.out_size[1] % g.out_size[0];
        const int64_t oy = row % g.out_size[1];
        for (int64_t ox = 0; ox < g.out_size[2]; ox++) {
            float *out_pixel = output + (row * g.out_size[2] + ox) * g.out_channels;
            for (int64_t oc = 0; oc < g.out_channels; oc++) {
                const int64_t first_in_channel = (oc / group_out) * group_in;
                float acc = bias != NULL ? bias[oc] : 0.0f;
                for (int64_t kz = 0; kz < g.kernel[0]; kz++) {
                    const int64_t iz = oz * g.stride[0] - g.pad_begin[0] + kz * g.dilation[0];
                    if (iz < 0 || iz >= g.in_size[0]) {
                        continue;
                    }
                    for (int64_t ky = 0; ky < g.kernel[1]; ky++) {
                        const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
                        if (iy < 0 || iy >= g.in_size[1]) {
                            continue;
                        }
                        for (int64_t kx = 0; kx < g.kernel[2]; kx++) {
                            const int64_t ix =
                                ox * g.stride[2] - g.pad_begin[2] + kx * g.dilation[2];
                            if (ix < 0 || ix >= g.in_size[2]) {
                                continue;
                            }
                            const float *in_pixel =
                                input +
                                (((n * g.in_size[0] + iz) * g.in_size[1] + iy) * g.in_size[2] +
                                 ix) *
                                    g.in_channels +
                                first_in_channel;
                            const float *taps =
                                weight +
                                (((oc * g.kernel[0] + kz) * g.kernel[1] + ky) * g.kernel[2] + kx) *
                                    group_in;
                            for (int64_t icg = 0; icg < group_in; icg++) {
                                acc += in_pixel[icg] * taps[icg];
                            }
                        }
                    }
                }
                out_pixel[oc] = acc;
            }
        }
    }
}

/* The input index feeding output position `out` through tap `k` along one axis, or -1. */
static int64_t transpose_source(int64_t out, int64_t k, int64_t stride, int64_t dilation,
                                int64_t pad_begin, int64_t in_size)
{
    const int64_t t = out + pad_begin - k * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= in_size) {
        return -1;
    }
    return t / stride;
}

void nxe_ref_f32_conv_transpose_ncdhw(const nxe_conv_geometry *geometry, const float *input,
                                      const float *weight, const float *bias, float *output,
                                      int64_t row_begin, int64_t row_end)
{
    const nxe_conv_geometry g = *geometry;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    const int64_t kernel_volume = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const int64_t in_volume = g.in_size[0] * g.in_size[1] * g.in_size[2];
    const int64_t out_volume = g.out_size[0] * g.out_size[1] * g.out_size[2];
    const int64_t out_width = g.out_size[2];
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / (g.out_size[0] * g.out_size[1]);
        const int64_t oz = row / g.out_size[1] % g.out_size[0];
        const int64_t oy = row % g.out_size[1];
        for (int64_t oc = 0; oc < g.out_channels; oc++) {
            float *out_row = output + (n * g.out_channels + oc) * out_volume +
                             (oz * g.out_size[1] + oy) * out_width;
            const float init = bias != NULL ? bias[oc] : 0.0f;
            for (int64_t ox = 0; ox < out_width; ox++) {
                out_row[ox] = init;
            }
            const int64_t group = oc / group_out;
            for (int64_t icg = 0; icg < group_in; icg++) {
                const int64_t ic = group * group_in + icg;
                const float *in_volume_start = input + (n * g.in_channels + ic) * in_volume;
                const float *taps = weight + (ic * group_out + oc % group_out) * kernel_volume;
                for (int64_t kz = 0; kz < g.kernel[0]; kz++) {
                    const int64_t iz = transpose_source(oz, kz, g.stride[0], g.dilation[0],
                                                        g.pad_begin[0], g.in_size[0]);
                    if (iz < 0) {
                        continue;
                    }
                    for (int64_t ky = 0; ky < g.kernel[1]; ky++) {
                        const int64_t iy = transpose_source(oy, ky, g.stride[1], g.dilation[1],
                                                            g.pad_begin[1], g.in_size[1]);
                        if (iy < 0) {
                            continue;
                        }
                        const float *in_row =
                            in_volume_start + (iz * g.in_size[1] + iy) * g.in_size[2];
                        const float *tap_row = taps + (kz * g.kernel[1] + ky) * g.kernel[2];
                        for (int64_t kx = 0; kx < g.kernel[2]; kx++) {
                            const float tap = tap_row[kx];
                            const int64_t offset = kx * g.dilation[2] - g.pad_begin[2];
                            int64_t ix_begin, ix_end;
                            feeding_input_range(offset, g.stride[2], g.in_size[2], out_width,
                                                &ix_begin, &ix_end);
                            for (int64_t ix = ix_begin; ix < ix_end; ix++) {
                                out_row[ix * g.stride[2] + offset] += tap * in_row[ix];
                            }
                        }
                    }
                }
            }
        }
    }
}

void nxe_ref_xN_depth_to_space(const nxe_depth_to_space_geometry *geometry, size_t element_size,
                               const void *input, void *output, int64_t row_begin, int64_t row_end)
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
                const int64_t ic =
                    g.crd_mode ? (c * block + i) * block + j : (i * block + j) * out_channels + c;
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
