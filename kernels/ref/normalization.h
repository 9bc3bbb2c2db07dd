/* normalization.h — reference kernels for the normalization op family: layer normalization
 * and softmax. Portable C11, the oracle for every faster variant: no allocation, no threads;
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

#endif
