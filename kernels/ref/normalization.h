/* normalization.h — reference kernels for the normalization op family: layer, batch, group
 * (and instance), RMS, local-response and Lp normalization, softmax, log-softmax and hardmax.
 * Portable C11, the oracle for every faster variant: no allocation, no threads;
 * callers split the work by independent rows (lanes). Needs libm. */
#ifndef NXE_KERNELS_REF_NORMALIZATION_H
#define NXE_KERNELS_REF_NORMALIZATION_H

#include <stddef.h>
#include <stdint.h>

/* Normalizes rows [row_begin, row_end) of a dense [rows, row_size] array:
 * y = (x - mean) / sqrt(variance + epsilon) * scale + bias, with the (biased) variance taken
 * in a second pass over x - mean, all in double. scale and bias ([row_size]) may be NULL. */
void nxe_ref_f32_layer_norm(const float *x, const float *scale, const float *bias, float *y,
                            int64_t row_size, float epsilon, int64_t row_begin, int64_t row_end);

/* Softmax along the middle axis of a dense [outer, axis_size, inner] array, for lanes
 * [lane_begin, lane_end) of the flattened (outer, inner) range: y = exp(x - max) / sum. */
void nxe_ref_f32_softmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                         int64_t lane_begin, int64_t lane_end);

/* Log-softmax along the middle axis of a dense [outer, axis_size, inner] array, for lanes
 * [lane_begin, lane_end): y = x - max - log(sum(exp(x - max))). */
void nxe_ref_f32_log_softmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                             int64_t lane_begin, int64_t lane_end);

/* Hardmax along the same lanes: 1 at the first largest element (NaN counts as the largest),
 * 0 elsewhere. */
void nxe_ref_f32_hardmax(const float *x, float *y, int64_t axis_size, int64_t inner_size,
                         int64_t lane_begin, int64_t lane_end);

/* Lp normalization along the same lanes, p 1 or 2: y = x / ||x||_p; a lane whose norm is 0
 * gives 0. */
void nxe_ref_f32_lp_norm(const float *x, float *y, int64_t axis_size, int64_t inner_size, int32_t p,
                         int64_t lane_begin, int64_t lane_end);

/* Inference batch normalization of a dense [batch, channels, spatial] array, for planes
 * [plane_begin, plane_end) of the flattened (batch, channel) range: y = (x - mean[c]) /
 * sqrt(variance[c] + epsilon) * scale[c] + bias[c], in double. */
void nxe_ref_f32_batch_norm(const float *x, const float *scale, const float *bias,
                            const float *mean, const float *variance, float *y, int64_t channels,
                            int64_t spatial, float epsilon, int64_t plane_begin, int64_t plane_end);

/* Group normalization of a dense [batch, groups * channels_per_group, spatial] array, for
 * rows [row_begin, row_end) of the flattened (batch, group) range: each row's
 * channels_per_group * spatial elements are normalized by their mean and (biased, two-pass)
 * variance plus epsilon, then scaled and shifted per channel. Instance normalization is the
 * case channels_per_group = 1. */
void nxe_ref_f32_group_norm(const float *x, const float *scale, const float *bias, float *y,
                            int64_t groups, int64_t channels_per_group, int64_t spatial,
                            float epsilon, int64_t row_begin, int64_t row_end);

/* RMS normalization of rows [row_begin, row_end) of a dense [rows, row_size] array:
 * y = x / sqrt(mean(x^2) + epsilon) * scale, in double; scale ([row_size]) may be NULL. */
void nxe_ref_f32_rms_norm(const float *x, const float *scale, float *y, int64_t row_size,
                          float epsilon, int64_t row_begin, int64_t row_end);

/* Local response normalization across channels of a dense [batch, channels, spatial] array,
 * for lanes [lane_begin, lane_end) of the flattened (batch, spatial) range:
 * y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2 rounded down,
 * c + (size-1)/2 rounded up] within range) ^ beta. */
void nxe_ref_f32_lrn(const float *x, float *y, int64_t channels, int64_t spatial, int64_t size,
                     float alpha, float beta, float bias, int64_t lane_begin, int64_t lane_end);

#endif
