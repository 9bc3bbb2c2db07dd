/* normalization.c — reference layer normalization and softmax. Sums run in double in a fixed
 * order, so results do not depend on how rows are split. */
#include "normalization.h"

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
