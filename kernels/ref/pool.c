/* pool.c — reference kernels for the pool op family. Each window is clipped to the input
 * once per axis, so no padding value is ever read or materialized. */
#include "ref/pool.h"

#include <math.h>

/* Taps [*first, *last) of one axis that land inside [0, in), and the number of taps inside
 * the padded range [-pad_begin, in + pad_end). */
static void clip_window(const nxe_pool_geometry *g, int32_t axis, int64_t out_index, int64_t *first,
                        int64_t *last, int64_t *padded_count)
{
    const int64_t start = out_index * g->stride[axis] - g->pad_begin[axis];
    const int64_t dilation = g->dilation[axis];
    const int64_t kernel = g->kernel[axis];
    const int64_t in = g->in_size[axis];
    int64_t lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
    int64_t hi = in - start <= 0 ? 0 : (in - start + dilation - 1) / dilation;
    const int64_t limit = in + g->pad_end[axis] - start; /* start >= -pad_begin */
    int64_t padded = limit <= 0 ? 0 : (limit + dilation - 1) / dilation;
    if (hi > kernel) {
        hi = kernel;
    }
    if (lo > hi) {
        lo = hi;
    }
    if (padded > kernel) {
        padded = kernel;
    }
    *first = lo;
    *last = hi;
    *padded_count = padded;
}

/* Visits every output element of the rows with its clipped window; BODY sees `in_plane`
 * (the input plane), `iz0`, `iy0`, `ix0` (input position of tap 0), the tap ranges
 * [z0, z1) x [y0, y1) x [x0, x1), `padded` (taps in the padded range) and `out`. */
#define POOL_ROWS(g, input, output, row_begin, row_end, BODY)                                      \
    for (int64_t row = (row_begin); row < (row_end); row++) {                                      \
        const int64_t plane = row / ((g).out_size[0] * (g).out_size[1]);                           \
        const int64_t oz = row / (g).out_size[1] % (g).out_size[0];                                \
        const int64_t oy = row % (g).out_size[1];                                                  \
        int64_t z0, z1, pz, y0, y1, py;                                                            \
        clip_window(&(g), 0, oz, &z0, &z1, &pz);                                                   \
        clip_window(&(g), 1, oy, &y0, &y1, &py);                                                   \
        const int64_t iz0 = oz * (g).stride[0] - (g).pad_begin[0];                                 \
        const int64_t iy0 = oy * (g).stride[1] - (g).pad_begin[1];                                 \
        const int64_t in_plane_offset = plane * (g).in_size[0] * (g).in_size[1] * (g).in_size[2];  \
        for (int64_t ox = 0; ox < (g).out_size[2]; ox++) {                                         \
            int64_t x0, x1, px;                                                                    \
            clip_window(&(g), 2, ox, &x0, &x1, &px);                                               \
            const int64_t ix0 = ox * (g).stride[2] - (g).pad_begin[2];                             \
            const int64_t padded = pz * py * px;                                                   \
            (void)padded;                                                                          \
            const int64_t out_index = row * (g).out_size[2] + ox;                                  \
            BODY                                                                                   \
        }                                                                                          \
    }

/* The input element of tap (kz, ky, kx), inside BODY. */
#define POOL_TAP(g, input, kz, ky, kx)                                                             \
    (input)[in_plane_offset +                                                                      \
            ((iz0 + (kz) * (g).dilation[0]) * (g).in_size[1] + iy0 + (ky) * (g).dilation[1]) *     \
                (g).in_size[2] +                                                                   \
            ix0 + (kx) * (g).dilation[2]]

#define FOR_TAPS                                                                                   \
    for (int64_t kz = z0; kz < z1; kz++)                                                           \
        for (int64_t ky = y0; ky < y1; ky++)                                                       \
            for (int64_t kx = x0; kx < x1; kx++)

/* Max with NaN propagation: once a NaN is taken nothing compares above it. */
#define TAKE_MAX(best, v, is_nan)                                                                  \
    if ((v) > (best) || is_nan(v)) {                                                               \
        (best) = (v);                                                                              \
    }
#define FLOAT_IS_NAN(v) isnan(v)
#define INT_IS_NAN(v) 0

#define DEFINE_MAX_POOL(name, type, lowest, is_nan)                                                \
    void name(const nxe_pool_geometry *geometry, const type *input, type *output,                  \
              int64_t row_begin, int64_t row_end)                                                  \
    {                                                                                              \
        const nxe_pool_geometry g = *geometry;                                                     \
        POOL_ROWS(g, input, output, row_begin, row_end, {                                          \
            type best = lowest;                                                                    \
            FOR_TAPS                                                                               \
            {                                                                                      \
                const type v = POOL_TAP(g, input, kz, ky, kx);                                     \
                TAKE_MAX(best, v, is_nan)                                                          \
            }                                                                                      \
            output[out_index] = best;                                                              \
        })                                                                                         \
    }

DEFINE_MAX_POOL(nxe_ref_f32_max_pool, float, -INFINITY, FLOAT_IS_NAN)
DEFINE_MAX_POOL(nxe_ref_i8_max_pool, int8_t, INT8_MIN, INT_IS_NAN)
DEFINE_MAX_POOL(nxe_ref_u8_max_pool, uint8_t, 0, INT_IS_NAN)

void nxe_ref_f32_average_pool(const nxe_pool_geometry *geometry, int32_t count_include_pad,
                              const float *input, float *output, int64_t row_begin, int64_t row_end)
{
    const nxe_pool_geometry g = *geometry;
    POOL_ROWS(g, input, output, row_begin, row_end, {
        float sum = 0.0f;
        FOR_TAPS
        {
            sum += POOL_TAP(g, input, kz, ky, kx);
        }
        const int64_t count = count_include_pad ? padded : (z1 - z0) * (y1 - y0) * (x1 - x0);
        output[out_index] = sum / (float)count;
    })
}

void nxe_ref_f32_lp_pool(const nxe_pool_geometry *geometry, float p, const float *input,
                         float *output, int64_t row_begin, int64_t row_end)
{
    const nxe_pool_geometry g = *geometry;
    POOL_ROWS(g, input, output, row_begin, row_end, {
        float sum = 0.0f;
        FOR_TAPS
        {
            sum += powf(fabsf(POOL_TAP(g, input, kz, ky, kx)), p);
        }
        output[out_index] = powf(sum, 1.0f / p);
    })
}

#define DEFINE_GLOBAL_MAX_POOL(name, type, lowest, is_nan)                                         \
    void name(int64_t size, const type *input, type *output, int64_t begin, int64_t end)           \
    {                                                                                              \
        for (int64_t plane = begin; plane < end; plane++) {                                        \
            const type *values = input + plane * size;                                             \
            type best = lowest;                                                                    \
            for (int64_t i = 0; i < size; i++) {                                                   \
                TAKE_MAX(best, values[i], is_nan)                                                  \
            }                                                                                      \
            output[plane] = best;                                                                  \
        }                                                                                          \
    }

DEFINE_GLOBAL_MAX_POOL(nxe_ref_f32_global_max_pool, float, -INFINITY, FLOAT_IS_NAN)
DEFINE_GLOBAL_MAX_POOL(nxe_ref_i8_global_max_pool, int8_t, INT8_MIN, INT_IS_NAN)
DEFINE_GLOBAL_MAX_POOL(nxe_ref_u8_global_max_pool, uint8_t, 0, INT_IS_NAN)

void nxe_ref_f32_global_average_pool(int64_t size, const float *input, float *output, int64_t begin,
                                     int64_t end)
{
    for (int64_t plane = begin; plane < end; plane++) {
        const float *values = input + plane * size;
        float sum = 0.0f;
        for (int64_t i = 0; i < size; i++) {
            sum += values[i];
        }
        output[plane] = sum / (float)size;
    }
}

void nxe_ref_f32_global_lp_pool(int64_t size, float p, const float *input, float *output,
                                int64_t begin, int64_t end)
{
    for (int64_t plane = begin; plane < end; plane++) {
        const float *values = input + plane * size;
        float sum = 0.0f;
        for (int64_t i = 0; i < size; i++) {
            sum += powf(fabsf(values[i]), p);
        }
        output[plane] = powf(sum, 1.0f / p);
    }
}
