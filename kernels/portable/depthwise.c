/* depthwise.c — depthwise convolution (one input channel per group, any channel multiplier),
 * which a GEMM would run with a reduction of only the kernel taps. Channels first accumulates
 * whole output rows tap by tap, vectorized along the row; channels last accumulates each
 * output pixel's channels, vectorized across channels. The epilogue (bias, activation,
 * residual) runs on each finished row. Portable C built once per ISA level (see portable.h). */
#include <string.h>

#include "portable/portable.h"

/* Output columns [lo, hi) of a row whose input column ox * stride + offset is inside
 * [0, width). */
static void valid_range(int64_t out_width, int64_t stride, int64_t offset, int64_t width,
                        int64_t *lo, int64_t *hi)
{
    int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t past = width - offset <= 0 ? 0 : (width - offset + stride - 1) / stride;
    past = past < out_width ? past : out_width;
    *lo = first < past ? first : past;
    *hi = past;
}

int64_t NXE_ISA_NAME(nxe_depthwise_rows)(const nxe_depthwise_args *args)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t rows = g->batch * g->out_size[0] * g->out_size[1];
    return args->channels_last ? rows : rows * g->out_channels;
}

static void row_channels_first(const nxe_depthwise_args *args, int64_t row)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t ow = g->out_size[2], taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
    const int64_t oy = row % g->out_size[1], oz = row / g->out_size[1] % g->out_size[0];
    const int64_t o = row / (g->out_size[0] * g->out_size[1]) % g->out_channels;
    const int64_t n = row / (g->out_size[0] * g->out_size[1]) / g->out_channels;
    const int64_t multiplier = g->out_channels / g->groups;
    const int64_t in_plane = g->in_size[1] * g->in_size[2];
    const float *input =
        args->input + (n * g->in_channels + o / multiplier) * g->in_size[0] * in_plane;
    const float *w = args->weight + o * taps;
    const int64_t out_offset =
        ((n * g->out_channels + o) * g->out_size[0] + oz) * g->out_size[1] * ow + oy * ow;
    float *out = args->output + out_offset;
    for (int64_t x = 0; x < ow; x++)
        out[x] = 0.0f;
    for (int64_t kz = 0; kz < g->kernel[0]; kz++) {
        const int64_t iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dilation[0];
        for (int64_t ky = 0; ky < g->kernel[1]; ky++) {
            const int64_t iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dilation[1];
            if (iz < 0 || iz >= g->in_size[0] || iy < 0 || iy >= g->in_size[1])
                continue;
            const float *in_row = input + iz * in_plane + iy * g->in_size[2];
            for (int64_t kx = 0; kx < g->kernel[2]; kx++) {
                const float wv = w[(kz * g->kernel[1] + ky) * g->kernel[2] + kx];
                const int64_t offset = kx * g->dilation[2] - g->pad_begin[2];
                int64_t lo, hi;
                valid_range(ow, g->stride[2], offset, g->in_size[2], &lo, &hi);
                if (g->stride[2] == 1) {
                    const float *src = in_row + offset;
                    for (int64_t x = lo; x < hi; x++)
                        out[x] += wv * src[x];
                } else {
                    for (int64_t x = lo; x < hi; x++)
                        out[x] += wv * in_row[x * g->stride[2] + offset];
                }
            }
        }
    }
    nxe_epilogue_operands ops = {
        .bias = args->bias ? args->bias + o : NULL,
        .bias_stride_m = 1,
        .bias_stride_n = 0,
        .residual = args->residual ? args->residual + out_offset : NULL,
        .ldr = ow,
    };
    NXE_ISA_NAME(nxe_epilogue)(1, (int32_t)ow, out, ow, &args->epilogue, &ops);
}

/* Weights arrive tap-major ([taps][O]) for this layout, so each tap's weights are contiguous
 * across the channels the loop vectorizes over. */
static void row_channels_last(const nxe_depthwise_args *args, int64_t row)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t ow = g->out_size[2], channels = g->out_channels;
    const int64_t oy = row % g->out_size[1], oz = row / g->out_size[1] % g->out_size[0];
    const int64_t n = row / (g->out_size[0] * g->out_size[1]);
    const int64_t multiplier = channels / g->groups;
    const float *input =
        args->input + n * g->in_size[0] * g->in_size[1] * g->in_size[2] * g->in_channels;
    const int64_t out_offset = ((n * g->out_size[0] + oz) * g->out_size[1] + oy) * ow * channels;
    float *out = args->output + out_offset;
    for (int64_t i = 0; i < ow * channels; i++)
        out[i] = 0.0f;
    for (int64_t x = 0; x < ow; x++) {
        float *pixel = out + x * channels;
        int64_t tap = 0;
        for (int64_t kz = 0; kz < g->kernel[0]; kz++) {
            const int64_t iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dilation[0];
            for (int64_t ky = 0; ky < g->kernel[1]; ky++) {
                const int64_t iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dilation[1];
                for (int64_t kx = 0; kx < g->kernel[2]; kx++, tap++) {
                    const int64_t ix = x * g->stride[2] - g->pad_begin[2] + kx * g->dilation[2];
                    if (iz < 0 || iz >= g->in_size[0] || iy < 0 || iy >= g->in_size[1] || ix < 0 ||
                        ix >= g->in_size[2])
                        continue;
                    const float *src =
                        input + ((iz * g->in_size[1] + iy) * g->in_size[2] + ix) * g->in_channels;
                    const float *w = args->weight + tap * channels;
                    if (multiplier == 1) {
                        for (int64_t c = 0; c < channels; c++)
                            pixel[c] += w[c] * src[c];
                    } else {
                        for (int64_t c = 0; c < channels; c++)
                            pixel[c] += w[c] * src[c / multiplier];
                    }
                }
            }
        }
    }
    nxe_epilogue_operands ops = {
        .bias = args->bias,
        .bias_stride_m = 0,
        .bias_stride_n = 1,
        .residual = args->residual ? args->residual + out_offset : NULL,
        .ldr = channels,
    };
    NXE_ISA_NAME(nxe_epilogue)((int32_t)ow, (int32_t)channels, out, channels, &args->epilogue,
                               &ops);
}

void NXE_ISA_NAME(nxe_depthwise_run)(const nxe_depthwise_args *args, int64_t row_begin,
                                     int64_t row_end)
{
    for (int64_t row = row_begin; row < row_end; row++) {
        if (args->channels_last)
            row_channels_last(args, row);
        else
            row_channels_first(args, row);
    }
}
