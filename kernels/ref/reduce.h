/* reduce.h — reference kernels for the reduce op family: reductions over any set of axes,
 * arg-extremes, top-k and cumulative sums along one axis. Portable C11, the oracle for every
 * faster variant: no allocation, no threads; callers split the work by output elements. */
#ifndef NXE_KERNELS_REF_REDUCE_H
#define NXE_KERNELS_REF_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NXE_REF_REDUCE_MAX_DIMS 6

/* The input seen as kept dimensions (one output element per index, row-major) and reduced
 * dimensions (combined, row-major), each with its element stride in the dense input.
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

/* How the reduced elements combine; the value of an empty set follows in brackets. */
typedef enum nxe_reduce_kind {
    NXE_REDUCE_SUM,         /* sum [0] */
    NXE_REDUCE_MEAN,        /* sum / count [NaN]; floating only */
    NXE_REDUCE_MAX,         /* maximum, NaN if any is NaN [-inf / lowest integer / false] */
    NXE_REDUCE_MIN,         /* minimum, NaN if any is NaN [+inf / highest integer / true] */
    NXE_REDUCE_PROD,        /* product [1] */
    NXE_REDUCE_L1,          /* sum of |x| [0] */
    NXE_REDUCE_L2,          /* sqrt of the sum of squares [0]; floating only */
    NXE_REDUCE_SUM_SQUARE,  /* sum of squares [0] */
    NXE_REDUCE_LOG_SUM,     /* log of the sum [-inf]; floating only */
    NXE_REDUCE_LOG_SUM_EXP, /* log of the sum of exp, computed around the maximum [-inf];
                                floating only */
} nxe_reduce_kind;

/* Output elements [out_begin, out_end). Floating reductions accumulate in double in
 * row-major order of the reduced index; integer ones wrap modulo 2^bits like numpy's
 * (|lowest| is lowest). Bool supports MAX (any) and MIN (all) only. */
void nxe_ref_f32_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry, const float *x,
                        float *y, int64_t out_begin, int64_t out_end);
void nxe_ref_f64_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry, const double *x,
                        double *y, int64_t out_begin, int64_t out_end);
void nxe_ref_i32_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry, const int32_t *x,
                        int32_t *y, int64_t out_begin, int64_t out_end);
void nxe_ref_i64_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry, const int64_t *x,
                        int64_t *y, int64_t out_begin, int64_t out_end);
void nxe_ref_bool_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry,
                         const uint8_t *x, uint8_t *y, int64_t out_begin, int64_t out_end);

/* The kernels below work on a dense [outer, axis_size, inner] array, one lane per
 * (outer, inner) index, for lanes [lane_begin, lane_end). */

/* Index along the axis of the largest (want_max) or smallest element of each lane, into
 * y[outer, inner]. Ties go to the first index, or the last with `last`. NaN counts as
 * beyond every number either way (as numpy's argmax and argmin). axis_size >= 1. */
void nxe_ref_f32_arg_extreme(const float *x, int64_t *y, int64_t axis_size, int64_t inner,
                             bool want_max, bool last, int64_t lane_begin, int64_t lane_end);
void nxe_ref_f64_arg_extreme(const double *x, int64_t *y, int64_t axis_size, int64_t inner,
                             bool want_max, bool last, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i32_arg_extreme(const int32_t *x, int64_t *y, int64_t axis_size, int64_t inner,
                             bool want_max, bool last, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i64_arg_extreme(const int64_t *x, int64_t *y, int64_t axis_size, int64_t inner,
                             bool want_max, bool last, int64_t lane_begin, int64_t lane_end);

/* The k largest (or smallest) elements of each lane in order, into values and indices of
 * shape [outer, k, inner]; equal values keep index order, NaN sorts above every number.
 * Insertion into the output lane itself: O(axis_size * k) per lane, no scratch. */
void nxe_ref_f32_top_k(const float *x, float *values, int64_t *indices, int64_t axis_size,
                       int64_t inner, int64_t k, bool largest, int64_t lane_begin,
                       int64_t lane_end);
void nxe_ref_f64_top_k(const double *x, double *values, int64_t *indices, int64_t axis_size,
                       int64_t inner, int64_t k, bool largest, int64_t lane_begin,
                       int64_t lane_end);
void nxe_ref_i32_top_k(const int32_t *x, int32_t *values, int64_t *indices, int64_t axis_size,
                       int64_t inner, int64_t k, bool largest, int64_t lane_begin,
                       int64_t lane_end);
void nxe_ref_i64_top_k(const int64_t *x, int64_t *values, int64_t *indices, int64_t axis_size,
                       int64_t inner, int64_t k, bool largest, int64_t lane_begin,
                       int64_t lane_end);

/* Running sums along each lane, from the end with `reverse`; `exclusive` leaves the current
 * element out. Floating sums run in double; integer sums wrap. */
void nxe_ref_f32_cumsum(const float *x, float *y, int64_t axis_size, int64_t inner, bool exclusive,
                        bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_f64_cumsum(const double *x, double *y, int64_t axis_size, int64_t inner,
                        bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i32_cumsum(const int32_t *x, int32_t *y, int64_t axis_size, int64_t inner,
                        bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i64_cumsum(const int64_t *x, int64_t *y, int64_t axis_size, int64_t inner,
                        bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);

/* Running products, laid out as the running sums above (an exclusive product starts at 1).
 * Floating products run in double; integer products wrap modulo 2^bits. */
void nxe_ref_f32_cumprod(const float *x, float *y, int64_t axis_size, int64_t inner, bool exclusive,
                         bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_f64_cumprod(const double *x, double *y, int64_t axis_size, int64_t inner,
                         bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i32_cumprod(const int32_t *x, int32_t *y, int64_t axis_size, int64_t inner,
                         bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);
void nxe_ref_i64_cumprod(const int64_t *x, int64_t *y, int64_t axis_size, int64_t inner,
                         bool exclusive, bool reverse, int64_t lane_begin, int64_t lane_end);

#endif
