/* data_movement.h — reference kernels for the data_movement op family (portable C11, the oracle
 * for all others): dense copies, row-block copies, strided views and gathers. They move bytes
 * and never look at values, so one kernel per element width serves every dtype. */
#ifndef NXE_KERNELS_REF_DATA_MOVEMENT_H
#define NXE_KERNELS_REF_DATA_MOVEMENT_H

#include <stddef.h>
#include <stdint.h>

/* The highest rank the strided kernels walk; equals NXE_MAX_RANK of the public header. */
#ifndef NXE_REF_MAX_RANK
#define NXE_REF_MAX_RANK 6
#endif

/* Copies `bytes` bytes; src and dst may overlap. */
void nxe_ref_x8_copy(size_t bytes, const void *src, void *dst);

/* Copies `rows` blocks of `row_bytes` bytes; block r starts at src + r * src_stride and lands
 * at dst + r * dst_stride (strides in bytes). Concat and Split are made of these. */
void nxe_ref_x8_copy_rows(int64_t rows, size_t row_bytes, const void *src, size_t src_stride,
                          void *dst, size_t dst_stride);

/* Writes elements [begin, end) of the dense tensor dst (rank `ndim`, 1..NXE_REF_MAX_RANK,
 * dims `shape`) from a strided view: the element at multi-index idx is
 * src[sum(idx[d] * src_strides[d])], strides in elements and possibly negative or zero.
 * Transpose and Slice are made of these. */
#define NXE_REF_DECLARE_COPY_STRIDED(bits)                                                    \
    void nxe_ref_x##bits##_copy_strided(int32_t ndim, const int64_t *shape,                   \
                                        const int64_t *src_strides, const void *src,          \
                                        void *dst, int64_t begin, int64_t end);
NXE_REF_DECLARE_COPY_STRIDED(8)
NXE_REF_DECLARE_COPY_STRIDED(16)
NXE_REF_DECLARE_COPY_STRIDED(32)
NXE_REF_DECLARE_COPY_STRIDED(64)
#undef NXE_REF_DECLARE_COPY_STRIDED

/* Index checks for gathers: the position of the first index outside [-dim, dim), or -1 when
 * all `n` are valid. */
int64_t nxe_ref_i32_find_bad_index(int64_t n, const int32_t *indices, int64_t dim);
int64_t nxe_ref_i64_find_bad_index(int64_t n, const int64_t *indices, int64_t dim);

/* Gather along one axis, data seen as [outer, axis_dim, row_bytes] and out as
 * [outer, num_indices, row_bytes]: out row (o, j) = data row (o, indices[j]), a negative index
 * counting from the end. Writes out rows [begin, end) of outer * num_indices. The indices
 * must have passed the check above. */
void nxe_ref_i32_gather(const void *data, int64_t axis_dim, size_t row_bytes,
                        const int32_t *indices, int64_t num_indices, void *out, int64_t begin,
                        int64_t end);
void nxe_ref_i64_gather(const void *data, int64_t axis_dim, size_t row_bytes,
                        const int64_t *indices, int64_t num_indices, void *out, int64_t begin,
                        int64_t end);

#endif
