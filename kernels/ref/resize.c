/* resize.c — reference kernels for the resize op family: each output element finds, per axis,
 * up to four input taps with weights, then sums the product over axes. */
#include "resize.h"

#include <math.h>
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
    case NXE_REF_COORD_ASYMMETRIC:
        xo = xd / a->scale;
        break;
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
    default:
        xo = (xd + 0.5) / a->scale - 0.5;
        break;
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
static int element_taps(const nxe_ref_resize_config *c, int64_t j,
                        int64_t index[][MAX_TAPS], double weight[][MAX_TAPS], int *count,
                        int64_t *in_strides)
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

void nxe_ref_f32_resize(const nxe_ref_resize_config *c, const float *src, float *dst,
                        int64_t begin, int64_t end)
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

void nxe_ref_x8_resize_nearest(const nxe_ref_resize_config *c, size_t elem_size,
                               const void *fill, const void *src, void *dst, int64_t begin,
                               int64_t end)
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
