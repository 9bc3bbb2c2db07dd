/* reduce.h — reference kernels for the reduce op family: sums and means over any set of axes.
 * Portable C11, the oracle for every faster variant: no allocation, no threads; callers split
 * the work by output elements. */
#ifndef NXE_KERNELS_REF_REDUCE_H
#define NXE_KERNELS_REF_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#define NXE_REF_REDUCE_MAX_DIMS 6

/* The input seen as kept dimensions (one output element per index, row-major) and reduced
 * dimensions (summed over, row-major), each with its element stride in the dense input.
 * Callers drop size-1 dimensions and merge neighbours of the same kind. */
typedef struct nxe_reduce_geometry {
    int32_t kept_ndim;
    int32_t reduced_ndim;
    int64_t kept_shape[NXE_REF_REDUCE_MAX_DIMS];
    int64_t kept_strides[NXE_REF_REDUCE_MAX_DIMS];
    int64_t reduced_shape[NXE_REF_REDUCE_MAX_DIMS];
    int64_t reduced_strides[NXE_REF_REDUCE_MAX_DIMS];
    int64_t reduced_count; /* product of reduced_shape */
} nxe_reduce_geometry;

/* Output elements [out_begin, out_end). Floating sums accumulate in double in row-major order
 * of the reduced index; integer sums wrap modulo 2^bits like numpy's. The mean of nothing is
 * NaN. */
void nxe_ref_f32_reduce_sum(const nxe_reduce_geometry *geometry, const float *x, float *y,
                            int64_t out_begin, int64_t out_end);
void nxe_ref_f32_reduce_mean(const nxe_reduce_geometry *geometry, const float *x, float *y,
                             int64_t out_begin, int64_t out_end);
void nxe_ref_i32_reduce_sum(const nxe_reduce_geometry *geometry, const int32_t *x, int32_t *y,
                            int64_t out_begin, int64_t out_end);
void nxe_ref_i64_reduce_sum(const nxe_reduce_geometry *geometry, const int64_t *x, int64_t *y,
                            int64_t out_begin, int64_t out_end);

#endif
