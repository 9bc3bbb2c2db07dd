/* image.c — portable pixel kernels of the SR frame path (kernels/image.h): sample conversion,
 * YUV <-> RGB, cubic upscaling and box downsampling over float planes. */
#include "image.h"

#include <math.h>
#include <string.h>

void nxe_image_load_u8(const uint8_t *src, int64_t stride, int32_t step, int32_t width,
                       int32_t height, float scale, float *dst, int64_t dst_stride)
{
    for (int32_t y = 0; y < height; y++) {
        const uint8_t *row = src + y * stride;
        float *out = dst + y * dst_stride;
        for (int32_t x = 0; x < width; x++)
            out[x] = (float)row[(int64_t)x * step] * scale;
    }
}

void nxe_image_load_u16(const uint8_t *src, int64_t stride, int32_t step, int32_t width,
                        int32_t height, float scale, float *dst, int64_t dst_stride)
{
    for (int32_t y = 0; y < height; y++) {
        const uint8_t *row = src + y * stride;
        float *out = dst + y * dst_stride;
        for (int32_t x = 0; x < width; x++) {
            const uint8_t *sample = row + (int64_t)x * step * 2;
            out[x] = (float)(sample[0] | sample[1] << 8) * scale;
        }
    }
}

static inline int32_t quantize(float value, float scale, int32_t max)
{
    float v = value * scale;
    if (!(v > 0.0f)) /* also NaN */
        return 0;
    if (v >= (float)max)
        return max;
    return (int32_t)(v + 0.5f);
}

void nxe_image_store_u8(const float *src, int64_t src_stride, int32_t width, int32_t height,
                        float scale, int32_t max, uint8_t *dst, int64_t stride, int32_t step)
{
    for (int32_t y = 0; y < height; y++) {
        const float *in = src + y * src_stride;
        uint8_t *row = dst + y * stride;
        for (int32_t x = 0; x < width; x++)
            row[(int64_t)x * step] = (uint8_t)quantize(in[x], scale, max);
    }
}

void nxe_image_store_u16(const float *src, int64_t src_stride, int32_t width, int32_t height,
                         float scale, int32_t max, uint8_t *dst, int64_t stride, int32_t step)
{
    for (int32_t y = 0; y < height; y++) {
        const float *in = src + y * src_stride;
        uint8_t *row = dst + y * stride;
        for (int32_t x = 0; x < width; x++) {
            int32_t code = quantize(in[x], scale, max);
            uint8_t *sample = row + (int64_t)x * step * 2;
            sample[0] = (uint8_t)(code & 0xff);
            sample[1] = (uint8_t)(code >> 8);
        }
    }
}

nxe_yuv_coefficients nxe_yuv_coefficients_for(int32_t bt709, int32_t full_range, int32_t bits)
{
    nxe_yuv_coefficients c;
    c.kr = bt709 ? 0.2126f : 0.299f;
    c.kb = bt709 ? 0.0722f : 0.114f;
    float max = (float)((1 << bits) - 1);
    float unit = (float)(1 << (bits - 8)); /* one 8-bit code step at this depth */
    c.c_offset = (float)(1 << (bits - 1)) / max;
    if (full_range) {
        c.y_offset = 0.0f;
        c.y_scale = 1.0f;
        c.c_scale = 1.0f;
    } else {
        c.y_offset = 16.0f * unit / max;
        c.y_scale = 219.0f * unit / max;
        c.c_scale = 224.0f * unit / max;
    }
    return c;
}

void nxe_image_rgb_to_yuv(const nxe_yuv_coefficients *c, const float *r, const float *g,
                          const float *b, float *y, float *u, float *v, int32_t width,
                          int32_t height, int64_t stride)
{
    float kg = 1.0f - c->kr - c->kb;
    float cb_scale = c->c_scale / (2.0f * (1.0f - c->kb));
    float cr_scale = c->c_scale / (2.0f * (1.0f - c->kr));
    for (int32_t row = 0; row < height; row++) {
        int64_t base = row * stride;
        for (int32_t x = 0; x < width; x++) {
            int64_t i = base + x;
            float luma = c->kr * r[i] + kg * g[i] + c->kb * b[i];
            y[i] = c->y_offset + c->y_scale * luma;
            u[i] = c->c_offset + cb_scale * (b[i] - luma);
            v[i] = c->c_offset + cr_scale * (r[i] - luma);
        }
    }
}

void nxe_image_yuv_to_rgb(const nxe_yuv_coefficients *c, const float *y, const float *u,
                          const float *v, float *r, float *g, float *b, int32_t width,
                          int32_t height, int64_t stride)
{
    float kg = 1.0f - c->kr - c->kb;
    float inv_y = 1.0f / c->y_scale;
    float cb_to_b = 2.0f * (1.0f - c->kb) / c->c_scale;
    float cr_to_r = 2.0f * (1.0f - c->kr) / c->c_scale;
    for (int32_t row = 0; row < height; row++) {
        int64_t base = row * stride;
        for (int32_t x = 0; x < width; x++) {
            int64_t i = base + x;
            float luma = (y[i] - c->y_offset) * inv_y;
            float red = luma + cr_to_r * (v[i] - c->c_offset);
            float blue = luma + cb_to_b * (u[i] - c->c_offset);
            r[i] = red;
            b[i] = blue;
            g[i] = (luma - c->kr * red - c->kb * blue) / kg;
        }
    }
}

static float cubic_weight(float x)
{
    const float a = NXE_CUBIC_A;
    x = fabsf(x);
    if (x <= 1.0f)
        return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
    if (x < 2.0f)
        return ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
    return 0.0f;
}

/* The taps of each phase p = i % f of destination index i at factor f: the first of the four
 * source samples is i / f + offset[p]. */
#define MAX_FACTOR 16
static void cubic_phases(int32_t f, float weights[MAX_FACTOR][4], int32_t offset[MAX_FACTOR])
{
    for (int32_t p = 0; p < f; p++) {
        float t = ((float)p + 0.5f) / (float)f - 0.5f;
        float base = floorf(t);
        float frac = t - base;
        weights[p][0] = cubic_weight(1.0f + frac);
        weights[p][1] = cubic_weight(frac);
        weights[p][2] = cubic_weight(1.0f - frac);
        weights[p][3] = cubic_weight(2.0f - frac);
        offset[p] = (int32_t)base - 1;
    }
}

static inline int32_t clamp_index(int32_t i, int32_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

int64_t nxe_image_upscale_scratch(int32_t src_height, int32_t dst_width)
{
    return (int64_t)src_height * dst_width;
}

void nxe_image_upscale_cubic(const float *src, int64_t src_stride, int32_t src_width,
                             int32_t src_height, float *dst, int64_t dst_stride, int32_t dst_width,
                             int32_t dst_height, int32_t fx, int32_t fy, float *scratch)
{
    float wx[MAX_FACTOR][4], wy[MAX_FACTOR][4];
    int32_t ox[MAX_FACTOR], oy[MAX_FACTOR];
    cubic_phases(fx, wx, ox);
    cubic_phases(fy, wy, oy);
    /* Horizontal pass into scratch (src_height rows of dst_width). */
    for (int32_t y = 0; y < src_height; y++) {
        const float *row = src + y * src_stride;
        float *out = scratch + (int64_t)y * dst_width;
        for (int32_t x = 0; x < dst_width; x++) {
            int32_t p = x % fx;
            int32_t first = x / fx + ox[p];
            const float *w = wx[p];
            if (first >= 0 && first + 3 < src_width) {
                const float *s = row + first;
                out[x] = w[0] * s[0] + w[1] * s[1] + w[2] * s[2] + w[3] * s[3];
            } else {
                float sum = 0.0f;
                for (int k = 0; k < 4; k++)
                    sum += w[k] * row[clamp_index(first + k, src_width)];
                out[x] = sum;
            }
        }
    }
    /* Vertical pass: each output row mixes four scratch rows. */
    for (int32_t y = 0; y < dst_height; y++) {
        int32_t p = y % fy;
        int32_t first = y / fy + oy[p];
        const float *w = wy[p];
        const float *rows[4];
        for (int k = 0; k < 4; k++)
            rows[k] = scratch + (int64_t)clamp_index(first + k, src_height) * dst_width;
        float *out = dst + y * dst_stride;
        for (int32_t x = 0; x < dst_width; x++)
            out[x] = w[0] * rows[0][x] + w[1] * rows[1][x] + w[2] * rows[2][x] + w[3] * rows[3][x];
    }
}

void nxe_image_downsample_box(const float *src, int64_t src_stride, int32_t src_width,
                              int32_t src_height, float *dst, int64_t dst_stride, int32_t dst_width,
                              int32_t dst_height, int32_t fx, int32_t fy)
{
    for (int32_t y = 0; y < dst_height; y++) {
        int32_t y0 = y * fy, y1 = y0 + fy < src_height ? y0 + fy : src_height;
        for (int32_t x = 0; x < dst_width; x++) {
            int32_t x0 = x * fx, x1 = x0 + fx < src_width ? x0 + fx : src_width;
            float sum = 0.0f;
            for (int32_t yy = y0; yy < y1; yy++)
                for (int32_t xx = x0; xx < x1; xx++)
                    sum += src[yy * src_stride + xx];
            int32_t count = (y1 - y0) * (x1 - x0);
            dst[y * dst_stride + x] = count > 0 ? sum / (float)count : 0.0f;
        }
    }
}
