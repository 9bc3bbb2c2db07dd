/* resize.c — reference kernels for the resize op family: each output element finds, per axis,
 * up to four input taps with weights, then sums the product over axes. */
#include "ref/resize.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define MAX_TAPS 4

/* The input coordinate of output position x on one axis; returns 0 when it lies outside the
 * input in tf_crop_and_resize (the element takes the extrapolation value). */
static int source_coordinate(const nxe_ref_resize_config *c, const nxe_ref_resize_axis *a,
                             int64_t x, double *out)
{
    const double n_in = (double)a->in, n_out = a->scale * n_in, xd = (double)x;
    double xo;
    switch (c->coord) {
    case NXE_REF_COORD_ALIGN_CORNERS:
        xo = n_out == 1.0 ? 0.0 : xd * (n_in - 1.0) / (n_out - 1.0);
        break;
    case NXE_REF_COORD_ASYMMETRIC: xo = xd / a->scale; break;
    case NXE_REF_COORD_TF_CROP_AND_RESIZE:
        xo = n_out == 1.0 ? (a->roi_end - a->roi_start) * (n_in - 1.0) / 2.0
                          : xd * (a->roi_end - a->roi_start) * (n_in - 1.0) / (n_out - 1.0);
        xo += a->roi_start * (n_in - 1.0);
        if (!(xo >= 0.0 && xo <= n_in - 1.0))
            return 0;
        break;
    case NXE_REF_COORD_PYTORCH_HALF_PIXEL:
        xo = n_out == 1.0 ? -0.5 : (xd + 0.5) / a->scale - 0.5;
        break;
    case NXE_REF_COORD_HALF_PIXEL_SYMMETRIC: {
        const double adjustment = (double)a->out / n_out;
        const double offset = n_in / 2.0 * (1.0 - adjustment);
        xo = offset + (xd + 0.5) / a->scale - 0.5;
        break;
    }
    default: xo = (xd + 0.5) / a->scale - 0.5; break;
    }
    *out = xo;
    return 1;
}

static int64_t clamp_index(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* Input positions and weights of output position x on axis a; the count, or 0 to
 * extrapolate. */
static int axis_taps(const nxe_ref_resize_config *c, const nxe_ref_resize_axis *a, int64_t x,
                     int64_t *index, double *weight)
{
    if (a->identity) {
        index[0] = x;
        weight[0] = 1.0;
        return 1;
    }
    double xo;
    if (!source_coordinate(c, a, x, &xo))
        return 0;
    /* Keep coordinates far outside the input finite and within int64 before flooring. */
    const double limit = (double)a->in + 4.0;
    if (xo < -limit)
        xo = -limit;
    if (xo > limit)
        xo = limit;
    const double base = floor(xo);
    const double r = xo - base;
    const int64_t x0 = (int64_t)base;
    if (c->mode == NXE_REF_RESIZE_NEAREST) {
        int64_t pick;
        if (r == 0.0)
            pick = x0;
        else if (c->nearest == NXE_REF_NEAREST_FLOOR)
            pick = x0;
        else if (c->nearest == NXE_REF_NEAREST_CEIL)
            pick = x0 + 1;
        else if (c->nearest == NXE_REF_NEAREST_ROUND_PREFER_CEIL)
            pick = r >= 0.5 ? x0 + 1 : x0;
        else
            pick = r > 0.5 ? x0 + 1 : x0;
        index[0] = clamp_index(pick, a->in);
        weight[0] = 1.0;
        return 1;
    }
    if (r == 0.0) {
        index[0] = clamp_index(x0, a->in);
        weight[0] = 1.0;
        return 1;
    }
    int count;
    int64_t first;
    if (c->mode == NXE_REF_RESIZE_LINEAR) {
        count = 2;
        first = x0;
        weight[0] = 1.0 - r;
        weight[1] = r;
    } else {
        const double A = c->cubic_a, p = r + 1.0, q = 1.0 - r, s = 2.0 - r;
        count = 4;
        first = x0 - 1;
        weight[0] = ((A * p - 5.0 * A) * p + 8.0 * A) * p - 4.0 * A;
        weight[1] = ((A + 2.0) * r - (A + 3.0)) * r * r + 1.0;
        weight[2] = ((A + 2.0) * q - (A + 3.0)) * q * q + 1.0;
        weight[3] = ((A * s - 5.0 * A) * s + 8.0 * A) * s - 4.0 * A;
    }
    double sum = 0.0;
    for (int t = 0; t < count; t++) {
        const int64_t i = first + t;
        if (c->exclude_outside && (i < 0 || i >= a->in))
            weight[t] = 0.0;
        sum += weight[t];
        index[t] = clamp_index(i, a->in);
    }
    if (c->exclude_outside && sum != 0.0)
        for (int t = 0; t < count; t++)
            weight[t] /= sum;
    return count;
}

/* Taps of every axis for output element j; returns 0 when the element extrapolates. */
static int element_taps(const nxe_ref_resize_config *c, int64_t j, int64_t index[][MAX_TAPS],
                        double weight[][MAX_TAPS], int *count, int64_t *in_strides)
{
    int64_t stride = 1;
    int ok = 1;
    for (int32_t d = c->ndim - 1; d >= 0; d--) {
        const nxe_ref_resize_axis *a = &c->axes[d];
        const int64_t x = j % a->out;
        j /= a->out;
        in_strides[d] = stride;
        stride *= a->in;
        count[d] = axis_taps(c, a, x, index[d], weight[d]);
        ok &= count[d] > 0;
    }
    return ok;
}

void nxe_ref_f32_resize(const nxe_ref_resize_config *c, const float *src, float *dst, int64_t begin,
                        int64_t end)
{
    int64_t index[NXE_REF_RESIZE_MAX_RANK][MAX_TAPS], in_strides[NXE_REF_RESIZE_MAX_RANK];
    double weight[NXE_REF_RESIZE_MAX_RANK][MAX_TAPS];
    int count[NXE_REF_RESIZE_MAX_RANK];
    for (int64_t j = begin; j < end; j++) {
        if (!element_taps(c, j, index, weight, count, in_strides)) {
            dst[j] = (float)c->extrapolation;
            continue;
        }
        /* Odometer over the tap combinations of all axes. */
        int tap[NXE_REF_RESIZE_MAX_RANK] = {0};
        double sum = 0.0;
        for (;;) {
            double w = 1.0;
            int64_t offset = 0;
            for (int32_t d = 0; d < c->ndim; d++) {
                w *= weight[d][tap[d]];
                offset += index[d][tap[d]] * in_strides[d];
            }
            sum += w * (double)src[offset];
            int32_t d = c->ndim - 1;
            while (d >= 0 && ++tap[d] == count[d])
                tap[d--] = 0;
            if (d < 0)
                break;
        }
        dst[j] = (float)sum;
    }
}

void nxe_ref_x8_resize_nearest(const nxe_ref_resize_config *c, size_t elem_size, const void *fill,
                               const void *src, void *dst, int64_t begin, int64_t end)
{
    int64_t index[NXE_REF_RESIZE_MAX_RANK][MAX_TAPS], in_strides[NXE_REF_RESIZE_MAX_RANK];
    double weight[NXE_REF_RESIZE_MAX_RANK][MAX_TAPS];
    int count[NXE_REF_RESIZE_MAX_RANK];
    const unsigned char *in = src;
    unsigned char *out = dst;
    for (int64_t j = begin; j < end; j++) {
        const void *from = fill;
        if (element_taps(c, j, index, weight, count, in_strides)) {
            int64_t offset = 0;
            for (int32_t d = 0; d < c->ndim; d++)
                offset += index[d][0] * in_strides[d];
            from = in + (size_t)offset * elem_size;
        }
        memcpy(out + (size_t)j * elem_size, from, elem_size);
    }
}

/* ---- GridSample -------------------------------------------------------------------------- */

/* Mirrors v into [lo, hi] as often as it takes; a zero-width range or an infinity gives the
 * nearer border. */
static double grid_reflect(double v, double lo, double hi)
{
    const double span = hi - lo;
    if (v >= lo && v <= hi)
        return v;
    if (!(span > 0.0) || isinf(v))
        return v < lo ? lo : hi;
    const double distance = v < lo ? lo - v : v - hi;
    const double turns = floor(distance / span);
    const double rest = distance - turns * span;
    const bool odd = fmod(turns, 2.0) != 0.0;
    if (v < lo)
        return odd ? hi - rest : lo + rest;
    return odd ? lo + rest : hi - rest;
}

/* The input index a tap at integer position i reads, or -1 for a zero (padding). */
static int64_t grid_tap_index(const nxe_ref_grid_sample_config *c, int64_t i, int64_t size,
                              double lo, double hi)
{
    switch (c->padding) {
    case NXE_REF_GRID_PADDING_ZEROS: return i >= 0 && i < size ? i : -1;
    case NXE_REF_GRID_PADDING_BORDER: return i < 0 ? 0 : i >= size ? size - 1 : i;
    default: {
        const int64_t r = (int64_t)grid_reflect((double)i, lo, hi);
        return r < 0 ? 0 : r >= size ? size - 1 : r;
    }
    }
}

static void grid_cubic_weights(float t, float *w)
{
    const float a = -0.75f;
    const float t1 = t + 1.0f, s = 1.0f - t, s1 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * s - (a + 3.0f)) * s * s + 1.0f;
    w[3] = ((a * s1 - 5.0f * a) * s1 + 8.0f * a) * s1 - 4.0f * a;
}

/* The taps of one axis for normalized coordinate g: up to 4 (index or -1, weight) pairs. */
static int32_t grid_axis_taps(const nxe_ref_grid_sample_config *c, float g, int64_t size,
                              int64_t *index, float *weight)
{
    const double lo = c->align_corners ? 0.0 : -0.5;
    const double hi = c->align_corners ? (double)size - 1.0 : (double)size - 0.5;
    float v = c->align_corners ? (g + 1.0f) / 2.0f * (float)(size - 1)
                               : ((g + 1.0f) * (float)size - 1.0f) / 2.0f;
    if (c->mode == NXE_REF_RESIZE_NEAREST)
        v = nearbyintf(v);
    if (v < lo || v > hi) {
        if (c->padding == NXE_REF_GRID_PADDING_BORDER)
            v = v < 0.0f ? 0.0f : (float)(size - 1);
        else if (c->padding == NXE_REF_GRID_PADDING_REFLECTION)
            v = (float)grid_reflect(v, lo, hi);
    }
    /* Beyond a few pixels past the input every tap reads padding zeros; bounding v there
     * keeps the integer conversions below defined without changing a result. An infinite g
     * over an axis of size 1 with align_corners makes v NaN (inf * 0): it is bounded too. */
    const float bound = (float)size + 8.0f;
    v = !(v >= -bound) ? -bound : v > bound ? bound : v;
    if (c->mode == NXE_REF_RESIZE_NEAREST) {
        index[0] = grid_tap_index(c, (int64_t)v, size, lo, hi);
        weight[0] = 1.0f;
        return 1;
    }
    const float base = floorf(v);
    const float t = v - base;
    const int64_t i0 = (int64_t)base;
    if (c->mode == NXE_REF_RESIZE_LINEAR) {
        index[0] = grid_tap_index(c, i0, size, lo, hi);
        index[1] = grid_tap_index(c, i0 + 1, size, lo, hi);
        weight[0] = 1.0f - t;
        weight[1] = t;
        return 2;
    }
    grid_cubic_weights(t, weight);
    for (int32_t k = 0; k < 4; k++)
        index[k] = grid_tap_index(c, i0 - 1 + k, size, lo, hi);
    return 4;
}

#define GRID_MAX_TAPS 64 /* 4 taps per axis, 3 axes */

void nxe_ref_f32_grid_sample(const nxe_ref_grid_sample_config *config, const float *x,
                             const float *grid, float *y, int64_t begin, int64_t end)
{
    const nxe_ref_grid_sample_config *c = config;
    const int32_t rank = c->rank;
    int64_t plane = 1;
    int64_t stride[NXE_REF_GRID_SAMPLE_MAX_RANK];
    for (int32_t d = rank - 1; d >= 0; d--) {
        stride[d] = plane;
        plane *= c->in[d];
    }
    for (int64_t point = begin; point < end; point++) {
        const int64_t n = point / c->points;
        const int64_t p = point % c->points;
        const float *coords = grid + point * rank;
        float *out = y + n * c->channels * c->points + p;
        const float *in = x + n * c->channels * plane;
        bool has_nan = false;
        int64_t index[NXE_REF_GRID_SAMPLE_MAX_RANK][4];
        float weight[NXE_REF_GRID_SAMPLE_MAX_RANK][4];
        int32_t count[NXE_REF_GRID_SAMPLE_MAX_RANK];
        for (int32_t d = 0; d < rank; d++) {
            const float g = coords[rank - 1 - d];
            has_nan = has_nan || isnan(g);
            count[d] = has_nan ? 0 : grid_axis_taps(c, g, c->in[d], index[d], weight[d]);
        }
        if (has_nan) {
            for (int64_t ch = 0; ch < c->channels; ch++)
                out[ch * c->points] = NAN;
            continue;
        }
        /* Every combination of one tap per axis that reads the input (not padding). */
        int64_t offset[GRID_MAX_TAPS];
        double tap_weight[GRID_MAX_TAPS];
        int32_t taps = 0;
        int32_t pick[NXE_REF_GRID_SAMPLE_MAX_RANK] = {0, 0, 0};
        for (;;) {
            int64_t at = 0;
            double w = 1.0;
            bool inside = true;
            for (int32_t d = 0; d < rank; d++) {
                const int64_t i = index[d][pick[d]];
                inside = inside && i >= 0;
                at += i * stride[d];
                w *= (double)weight[d][pick[d]];
            }
            if (inside) {
                offset[taps] = at;
                tap_weight[taps] = w;
                taps++;
            }
            int32_t d = rank - 1;
            while (d >= 0 && ++pick[d] == count[d])
                pick[d--] = 0;
            if (d < 0)
                break;
        }
        for (int64_t ch = 0; ch < c->channels; ch++) {
            const float *src = in + ch * plane;
            double sum = 0.0;
            for (int32_t k = 0; k < taps; k++)
                sum += tap_weight[k] * (double)src[offset[k]];
            out[ch * c->points] = (float)sum;
        }
    }
}

#undef GRID_MAX_TAPS
