/* quantized.c — reference integer GEMM and convolution. Sums run in int64 (exact for any k
 * below 2^47) and are wrapped to int32 once, which equals int32 accumulation without its
 * undefined overflow. */
#include "ref/quantized.h"

#include <math.h>

static inline int32_t load_q8(nxe_q8_ref ref, int64_t index)
{
    return ref.is_signed ? (int32_t)((const int8_t *)ref.data)[index]
                         : (int32_t)((const uint8_t *)ref.data)[index];
}

static inline int32_t zero_at(nxe_q8_ref ref, int64_t index)
{
    return ref.data != NULL ? load_q8(ref, index) : 0;
}

/* Two's complement wrap of an exact sum into int32, without implementation-defined casts. */
static inline int32_t wrap_i32(int64_t value)
{
    const uint32_t low = (uint32_t)((uint64_t)value & 0xFFFFFFFFu);
    return low <= (uint32_t)INT32_MAX ? (int32_t)low : -(int32_t)(~low) - 1;
}

void nxe_ref_q8_store(const nxe_q8_output *out, int64_t index, int64_t acc, int64_t bias,
                      float multiplier)
{
    const int32_t wrapped = wrap_i32(acc);
    if (out->y_i32 != NULL) {
        out->y_i32[index] = wrapped;
        return;
    }
    const int32_t lo = out->y_signed ? -128 : 0;
    const int32_t hi = out->y_signed ? 127 : 255;
    double v = nearbyint(((double)wrapped + (double)bias) * (double)multiplier);
    v += (double)out->y_zero_point;
    int32_t q;
    if (v != v)
        q = out->y_zero_point < lo ? lo : (out->y_zero_point > hi ? hi : out->y_zero_point);
    else
        q = v < (double)lo ? lo : (v > (double)hi ? hi : (int32_t)v);
    if (out->y_signed)
        ((int8_t *)out->y_q8)[index] = (int8_t)q;
    else
        ((uint8_t *)out->y_q8)[index] = (uint8_t)q;
}

void nxe_ref_q8_gemm(const nxe_q8_gemm_args *args, int64_t row_begin, int64_t row_end)
{
    const nxe_q8_gemm_args p = *args;
    const int requant = p.out.y_i32 == NULL;
    for (int64_t i = row_begin; i < row_end; i++) {
        const int64_t a_zero = zero_at(p.a_zero, i * p.a_zero_stride);
        const int64_t a_row = i * p.a_stride_m;
        for (int64_t j = 0; j < p.n; j++) {
            const int64_t b_zero = zero_at(p.b_zero, j * p.b_zero_stride);
            int64_t acc = 0;
            for (int64_t kk = 0; kk < p.k; kk++) {
                acc += ((int64_t)load_q8(p.a, a_row + kk) - a_zero) *
                       ((int64_t)load_q8(p.b, kk * p.n + j) - b_zero);
            }
            const float multiplier = requant ? p.a_scale[i * p.a_scale_stride] *
                                                   p.b_scale[j * p.b_scale_stride] / p.out.y_scale
                                             : 0.0f;
            nxe_ref_q8_store(&p.out, i * p.n + j, acc, 0, multiplier);
        }
    }
}

void nxe_ref_q8_conv2d_nchw(const nxe_q8_conv2d_args *args, int64_t row_begin, int64_t row_end)
{
    const nxe_q8_conv2d_args p = *args;
    const nxe_q8_conv2d_geometry g = p.geometry;
    const int requant = p.out.y_i32 == NULL;
    const int64_t group_in = g.in_channels / g.groups;
    const int64_t group_out = g.out_channels / g.groups;
    const int64_t x_zero = zero_at(p.x_zero, 0);
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / g.out_height;
        const int64_t oy = row % g.out_height;
        for (int64_t oc = 0; oc < g.out_channels; oc++) {
            const int64_t w_zero = zero_at(p.w_zero, oc * p.w_zero_stride);
            const int64_t first_in_channel = (oc / group_out) * group_in;
            const int64_t bias = requant && p.bias != NULL ? p.bias[oc] : 0;
            const float multiplier =
                requant ? p.x_scale[0] * p.w_scale[oc * p.w_scale_stride] / p.out.y_scale : 0.0f;
            const int64_t out_base = ((n * g.out_channels + oc) * g.out_height + oy) * g.out_width;
            for (int64_t ox = 0; ox < g.out_width; ox++) {
                int64_t acc = 0;
                for (int64_t icg = 0; icg < group_in; icg++) {
                    const int64_t plane =
                        (n * g.in_channels + first_in_channel + icg) * g.in_height;
                    const int64_t taps = (oc * group_in + icg) * g.kernel_height * g.kernel_width;
                    for (int64_t ky = 0; ky < g.kernel_height; ky++) {
                        const int64_t iy =
                            oy * g.stride_height - g.pad_top + ky * g.dilation_height;
                        if (iy < 0 || iy >= g.in_height)
                            continue;
                        for (int64_t kx = 0; kx < g.kernel_width; kx++) {
                            const int64_t ix =
                                ox * g.stride_width - g.pad_left + kx * g.dilation_width;
                            if (ix < 0 || ix >= g.in_width)
                                continue;
                            acc +=
                                ((int64_t)load_q8(p.x, (plane + iy) * g.in_width + ix) - x_zero) *
                                ((int64_t)load_q8(p.w, taps + ky * g.kernel_width + kx) - w_zero);
                        }
                    }
                }
                nxe_ref_q8_store(&p.out, out_base + ox, acc, bias, multiplier);
            }
        }
    }
}

void nxe_ref_f32_minmax_with_zero(int64_t n, const float *x, float *min, float *max)
{
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < lo)
            lo = x[i];
        if (x[i] > hi)
            hi = x[i];
    }
    *min = lo;
    *max = hi;
}
