/* data_movement.h — reference kernels for the data_movement op family (portable C11, the oracle
 * for all others): dense copies, row-block copies, strided views, padding, gathers, scatters,
 * one-hot and triangle masks. They move bytes by element size, so one kernel serves every
 * dtype; only the scatter reductions look at values. */
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
#define NXE_REF_DECLARE_COPY_STRIDED(bits)                                                         \
    void nxe_ref_x##bits##_copy_strided(int32_t ndim, const int64_t *shape,                        \
                                        const int64_t *src_strides, const void *src, void *dst,    \
                                        int64_t begin, int64_t end);
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

/* ---- Index tensors ---------------------------------------------------------------------- */

/* Element j of an index tensor of int32 (is64 = 0) or int64 (is64 = 1). */
static inline int64_t nxe_ref_load_index(const void *indices, int32_t is64, int64_t j)
{
    return is64 ? ((const int64_t *)indices)[j] : (int64_t)((const int32_t *)indices)[j];
}

/* Index tuples of length k (`n` of them, packed): the position of the first component outside
 * [-dims[c], dims[c]) for its component c, or -1 when all are valid. */
int64_t nxe_ref_find_bad_tuple(int64_t n, int32_t k, const void *indices, int32_t is64,
                               const int64_t *dims);

/* ---- Pad and Tile ----------------------------------------------------------------------- */

enum nxe_ref_pad_mode {
    NXE_REF_PAD_CONSTANT = 0, /* the fill value */
    NXE_REF_PAD_REFLECT = 1,  /* mirror without repeating the edge (numpy 'reflect') */
    NXE_REF_PAD_EDGE = 2,     /* repeat the edge element */
    NXE_REF_PAD_WRAP = 3      /* continue periodically (numpy 'wrap'; Tile) */
};

/* Source position for position i (any int64) on an axis of size n >= 1: i itself when inside,
 * else as `mode` says; -1 for CONSTANT outside. */
int64_t nxe_ref_pad_source(int64_t i, int64_t n, int32_t mode);

/* Writes output rows [row_begin, row_end) (a row is the last dimension) of the padded tensor:
 * output position o on axis d reads input position o - begin[d] mapped by `mode`, or `fill`
 * (elem_size bytes) for CONSTANT outside the input. ndim >= 1; every input axis that is read
 * has size >= 1. */
void nxe_ref_x8_pad(int32_t ndim, const int64_t *in_shape, const int64_t *out_shape,
                    const int64_t *begin, int32_t mode, size_t elem_size, const void *fill,
                    const void *src, void *dst, int64_t row_begin, int64_t row_end);

/* ---- Element gathers and scatters along an axis ----------------------------------------- */

/* GatherElements: out is dense over index_shape (rank ndim); out[idx] = data at idx with the
 * `axis` coordinate replaced by indices[idx] (negative counts from the end of axis_dim).
 * data_strides in elements. Writes elements [begin, end); indices already checked. */
void nxe_ref_x8_gather_elements(int32_t ndim, const int64_t *index_shape,
                                const int64_t *data_strides, int32_t axis, int64_t axis_dim,
                                const void *indices, int32_t is64, size_t elem_size,
                                const void *data, void *out, int64_t begin, int64_t end);

enum nxe_ref_reduction {
    NXE_REF_REDUCE_NONE = 0, /* replace */
    NXE_REF_REDUCE_ADD = 1,
    NXE_REF_REDUCE_MUL = 2,
    NXE_REF_REDUCE_MAX = 3,
    NXE_REF_REDUCE_MIN = 4
};

/* dst = reduction(dst, src) for one element of enum nxe_ref_type `type` (cast.h). Integers
 * wrap (two's complement) on add and mul; f16/bf16 compute in f32 and round back; NONE copies
 * and works for every type. */
void nxe_ref_combine(int32_t type, int32_t reduction, void *dst, const void *src);

/* ScatterElements into out (already holding a copy of data): for each position idx of
 * index_shape, out at idx with the `axis` coordinate replaced by indices[idx] is combined
 * with updates[idx]. In index order, so duplicates resolve the same way every run; indices
 * already checked. */
void nxe_ref_scatter_elements(int32_t ndim, const int64_t *index_shape, const int64_t *data_strides,
                              int32_t axis, int64_t axis_dim, const void *indices, int32_t is64,
                              int32_t type, int32_t reduction, const void *updates, void *out);

/* ---- Slice gathers and scatters by index tuples ----------------------------------------- */

/* GatherND: tuple t (of tuples_per_batch * batches, length k) selects the slice of
 * slice_bytes at data + (batch * batch_stride + sum(idx[c] * strides[c])) * elem_size, with
 * batch = t / tuples_per_batch and negative idx[c] counting from dims[c]; it lands at
 * out + t * slice_bytes. Writes tuples [begin, end); indices already checked. */
void nxe_ref_gather_nd(int32_t k, const int64_t *dims, const int64_t *strides, int64_t batch_stride,
                       int64_t tuples_per_batch, const void *indices, int32_t is64,
                       size_t elem_size, size_t slice_bytes, const void *data, void *out,
                       int64_t begin, int64_t end);

/* ScatterND into out (already a copy of data): for each of num_tuples tuples (length k), the
 * slice_elems elements at sum(idx[c] * strides[c]) are combined with the tuple's slice of
 * updates. In tuple order; indices already checked. */
void nxe_ref_scatter_nd(int32_t k, const int64_t *dims, const int64_t *strides, int64_t num_tuples,
                        const void *indices, int32_t is64, int32_t type, int32_t reduction,
                        int64_t slice_elems, const void *updates, void *out);

/* ---- OneHot and Trilu ------------------------------------------------------------------- */

/* OneHot with out seen as [outer, depth, inner] and indices as [outer, inner]: out(o, d, i) is
 * `on` when indices(o, i) (negative counts from depth) equals d, else `off` (elem_size bytes
 * each); an index outside [-depth, depth) gives a row of `off`. Writes index positions
 * [begin, end) of outer * inner. */
void nxe_ref_one_hot(int64_t depth, int64_t inner, const void *indices, int32_t is64,
                     size_t elem_size, const void *on, const void *off, void *out, int64_t begin,
                     int64_t end);

/* Trilu over matrices [rows, cols]: keeps element (i, j) when j - i >= k (upper) or
 * j - i <= k (lower), else writes zero bytes. Writes matrix rows [begin, end) of
 * batch * rows. */
void nxe_ref_trilu(int64_t rows, int64_t cols, int32_t upper, int64_t k, size_t elem_size,
                   const void *src, void *dst, int64_t begin, int64_t end);

/* ReverseSequence over a tensor viewed as (dim0, dim1, inner) (dim0 is implied by the rows): the batch axis is axis 0 when
 * `batch_axis` is 0, else axis 1, and the time axis the other one. For batch item b the first
 * lens[b] time steps are reversed and the rest copied. Writes rows [begin, end) of the
 * dim0 * dim1 rows of `inner` elements of `elem_size` bytes. Every lens[b] must lie in
 * [0, time size] (see nxe_ref_i64_find_bad_length). */
void nxe_ref_x8_reverse_sequence(size_t elem_size, int64_t dim1, int64_t inner, int32_t batch_axis,
                                 const int64_t *lens, const void *src, void *dst, int64_t begin,
                                 int64_t end);

/* The position of the first of `n` lengths outside [0, max], or -1 when all are valid. */
int64_t nxe_ref_i64_find_bad_length(int64_t n, const int64_t *lens, int64_t max);

#endif
