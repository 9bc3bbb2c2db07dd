/* normalization.c — reference normalizations and softmax variants. Sums run in double in a fixed
 * order, so results do not depend on how rows are split. */
#include "ref/normalization.h"

#include <math.h>

void nxe_ref_f32_layer_norm(const float *x, const float *scale, const float *bias, float *y,
                            int64_t row_size, float epsilon, int64_t row_begin, int64_t row_end)
{
    if (row_size == 0) {
        return;
    }
    for (int64_t row = row_begin; row < row_end; row++) {
        const float *x_row = x + row * row_size;
        float *y_row = y + row * row_size;
        double sum = 0.0;
        for (int64_t i = 0; i < row_size; i++) {
            sum += x_row[i];
        }
        const double mean = sum / (double)row_size;
        /* Two passes: E[(x - mean)^2] does not cancel catastrophically like E[x^2] - mean^2. */
        double squares = 0.0;
        for (int64_t i = 0; i < row_size; i++) {
            const double d = x_row[i] - mean;
            squares += d * d;
        }
        const double inv_std = 1.0 / sqrt(squares / (double)row_size + (double)epsilon);
        for (int64_t i = 0; i < row_size; i++) {
            double v = (x_row[i] - mean) * inv_std;
            if (scale != NULL) {
                v *= scale[i];
            }
            if (bias != NULL) {
                v += bias[i];
            }
            y_row[i] = (float)v;
        }
    }
}

void nxe_ref_f32_softmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                         int64_t lane_begin, int64_t lane_end)
{
    if (axis_size == 0) {
        return;
    }
    for (int64_t lane = lane_begin; lane < lane_end; lane++) {
        const int64_t base = (lane / inner_size) * axis_size * inner_size + lane % inner_size;
        const float *x_lane = x + base;
        float *y_lane = y + base;
        /* Subtracting the maximum keeps every exponent <= 0: no overflow, sum >= 1. */
        float max = x_lane[0];
        for (int64_t i = 1; i < axis_size; i++) {
            const float v = x_lane[i * inner_size];
            if (v > max) {
                max = v;
            }
        }
        double sum = 0.0;
        for (int64_t i = 0; i < axis_size; i++) {
            const float e = expf(x_lane[i * inner_size] - max);
            y_lane[i * inner_size] = e;
            sum += e;
        }
        for (int64_t i = 0; i < axis_size; i++) {
            y_lane[i * inner_size] = (float)(y_lane[i * inner_size] / sum);
        }
    }
}

static int64_t lane_base(int64_t lane, int64_t axis_size, int64_t inner_size)
{
    return (lane / inner_size) * axis_size * inner_size + lane % inner_size;
}

void nxe_ref_f32_log_softmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                             int64_t lane_begin, int64_t lane_end)
{
    if (axis_size == 0) {
        return;
    }
    for (int64_t lane = lane_begin; lane < lane_end; lane++) {
        const int64_t base = lane_base(lane, axis_size, inner_size);
        const float *x_lane = x + base;
        float *y_lane = y + base;
        float max = x_lane[0];
        for (int64_t i = 1; i < axis_size; i++) {
            const float v = x_lane[i * inner_size];
            if (v > max) {
                max = v;
            }
        }
        double sum = 0.0;
        for (int64_t i = 0; i < axis_size; i++) {
            sum += exp((double)x_lane[i * inner_size] - (double)max);
        }
        const double offset = (double)max + log(sum);
        for (int64_t i = 0; i < axis_size; i++) {
            y_lane[i * inner_size] = (float)((double)x_lane[i * inner_size] - offset);
        }
    }
}

void nxe_ref_f32_hardmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                         int64_t lane_begin, int64_t lane_end)
{
    if (axis_size == 0) {
        return;
    }
    for (int64_t lane = lane_begin; lane < lane_end; lane++) {
        const int64_t base = lane_base(lane, axis_size, inner_size);
        const float *x_lane = x + base;
        float *y_lane = y + base;
        int64_t best = 0;
        for (int64_t i = 1; i < axis_size; i++) {
            const float v = x_lane[i * inner_size], b = x_lane[best * inner_size];
            if (!isnan(b) && (isnan(v) || v > b)) {
                best = i;
            }
        }
        for (int64_t i = 0; i < axis_size; i++) {
            y_lane[i * inner_size] = i == best ? 1.0f : 0.0f;
        }
    }
}

void nxe_ref_f32_lp_norm(const float *x, float *y, int64_t axis_size, int64_t inner_size, int32_t p,
                         int64_t lane_begin, int64_t lane_end)
{
    if (axis_size == 0) {
        return;
    }
    for (int64_t lane = lane_begin; lane < lane_end; lane++) {
        const int64_t base = lane_base(lane, axis_size, inner_size);
        const float *x_lane = x + base;
        float *y_lane = y + base;
        double norm = 0.0;
        for (int64_t i = 0; i < axis_size; i++) {
            const double v = x_lane[i * inner_size];
            norm += p == 1 ? fabs(v) : v * v;
        }
        if (p != 1) {
            norm = sqrt(norm);
        }
        for (int64_t i = 0; i < axis_size; i++) {
            y_lane[i * inner_size] =
                norm == 0.0 ? 0.0f : (float)((double)x_lane[i * inner_size] / norm);
        }
    }
}

void nxe_ref_f32_batch_norm(const float *x, const float *scale, const float *bias,
                            const float *mean, const float *variance, float *y, int64_t channels,
                            int64_t spatial, float epsilon, int64_t plane_begin, int64_t plane_end)
{
    for (int64_t plane = plane_begin; plane < plane_end; plane++) {
        const int64_t c = plane % channels;
        const double multiplier = (double)scale[c] / sqrt((double)variance[c] + (double)epsilon);
        const double shift = (double)bias[c] - (double)mean[c] * multiplier;
        const float *x_plane = x + plane * spatial;
        float *y_plane = y + plane * spatial;
        for (int64_t i = 0; i < spatial; i++) {
            y_plane[i] = (float)((double)x_plane[i] * multiplier + shift);
        }
    }
}

void nxe_ref_f32_group_norm(const float *x, const float *scale, const float *bias, float *y,
                            int64_t groups, int64_t channels_per_group, int64_t spatial,
                            float epsilon, int64_t row_begin, int64_t row_end)
{
    const int64_t row_size = channels_per_group * spatial;
    if (row_size == 0) {
        return;
    }
    for (int64_t row = row_begin; row < row_end; row++) {
        const float *x_row = x + row * row_size;
        float *y_row = y + row * row_size;
        double sum = 0.0;
        for (int64_t i = 0; i < row_size; i++) {
            sum += x_row[i];
        }
        const double mean = sum / (double)row_size;
        double squares = 0.0;
        for (int64_t i = 0; i < row_size; i++) {
            const double d = x_row[i] - mean;
            squares += d * d;
        }
        const double inv_std = 1.0 / sqrt(squares / (double)row_size + (double)epsilon);
        const int64_t first_channel = (row % groups) * channels_per_group;
        for (int64_t c = 0; c < channels_per_group; c++) {
            const double s = scale[first_channel + c], b = bias[first_channel + c];
            for (int64_t i = c * spatial; i < (c + 1) * spatial; i++) {
                y_row[i] = (float)((x_row[i] - mean) * inv_std * s + b);
            }
        }
    }
}

void nxe_ref_f32_rms_norm(const float *x, const float *scale, float *y, int64_t row_size,
                          float epsilon, int64_t row_begin, int64_t row_end)
{
    if (row_size == 0) {
        return;
    }
    for (int64_t row = row_begin; row < row_end; row++) {
        const float *x_row = x + row * row_size;
        float *y_row = y + row * row_size;
        double squares = 0.0;
        for (int64_t i = 0; i < row_size; i++) {
            squares += (double)x_row[i] * (double)x_row[i];
        }
        const double inv_rms = 1.0 / sqrt(squares / (double)row_size + (double)epsilon);
        for (int64_t i = 0; i < row_size; i++) {
            double v = x_row[i] * inv_rms;
            if (scale != NULL) {
                v *= scale[i];
            }
            y_row[i] = (float)v;
        }
    }
}

void nxe_ref_f32_lrn(const float *x, float *y, int64_t channels, int64_t spatial, int64_t size,
                     float alpha, float beta, float bias, int64_t lane_begin, int64_t lane_end)
{
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t lane = lane_begin; lane < lane_end; lane++) {
        const int64_t base = lane_base(lane, channels, spatial);
        for (int64_t c = 0; c < channels; c++) {
            const int64_t first = c - before < 0 ? 0 : c - before;
            const int64_t last = c + after > channels - 1 ? channels - 1 : c + after;
            double squares = 0.0;
            for (int64_t j = first; j <= last; j++) {
                const double v = x[base + j * spatial];
                squares += v * v;
            }
            const double denominator =
                pow((double)bias + (double)alpha / (double)size * squares, (double)beta);
            y[base + c * spatial] = (float)((double)x[base + c * spatial] / denominator);
        }
    }
}
