/* data_movement.c — reference kernels for the data_movement op family: byte copies, strided
 * views, padding, gathers, scatters, one-hot and triangles. Zero-length copies never touch
 * their pointers (they may be NULL). */
#include "ref/data_movement.h"

#include <string.h>

#include "ref/cast.h"

void nxe_ref_x8_copy(size_t bytes, const void *src, void *dst)
{
    if (bytes > 0 && src != dst)
        memmove(dst, src, bytes);
}

void nxe_ref_x8_copy_rows(int64_t rows, size_t row_bytes, const void *src, size_t src_stride,
                          void *dst, size_t dst_stride)
{
    if (row_bytes == 0)
        return;
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int64_t r = 0; r < rows; r++)
        memcpy(d + (size_t)r * dst_stride, s + (size_t)r * src_stride, row_bytes);
}

/* Same walk as the broadcast kernels: the innermost dimension runs as a plain loop, outer
 * dimensions carry between runs. */
#define NXE_DEFINE_COPY_STRIDED(bits)                                                              \
    void nxe_ref_x##bits##_copy_strided(int32_t ndim, const int64_t *shape,                        \
                                        const int64_t *src_strides, const void *src, void *dst,    \
                                        int64_t begin, int64_t end)                                \
    {                                                                                              \
        if (begin >= end)                                                                          \
            return;                                                                                \
        const uint##bits##_t *s = src;                                                             \
        uint##bits##_t *out = dst;                                                                 \
        int64_t idx[NXE_REF_MAX_RANK];                                                             \
        int64_t offset = 0, rest = begin;                                                          \
        for (int32_t d = ndim - 1; d >= 0; d--) {                                                  \
            idx[d] = rest % shape[d];                                                              \
            rest /= shape[d];                                                                      \
            offset += idx[d] * src_strides[d];                                                     \
        }                                                                                          \
        const int32_t last = ndim - 1;                                                             \
        const int64_t step = src_strides[last];                                                    \
        int64_t i = begin;                                                                         \
        while (i < end) {                                                                          \
            int64_t run = shape[last] - idx[last];                                                 \
            if (run > end - i)                                                                     \
                run = end - i;                                                                     \
            const uint##bits##_t *ps = s + offset;                                                 \
            uint##bits##_t *po = out + i;                                                          \
            for (int64_t k = 0; k < run; k++)                                                      \
                po[k] = ps[k * step];                                                              \
            i += run;                                                                              \
            idx[last] += run;                                                                      \
            offset += run * step;                                                                  \
            for (int32_t d = last; d > 0 && idx[d] == shape[d]; d--) {                             \
                offset += src_strides[d - 1] - shape[d] * src_strides[d];                          \
                idx[d] = 0;                                                                        \
                idx[d - 1]++;                                                                      \
            }                                                                                      \
        }                                                                                          \
    }
NXE_DEFINE_COPY_STRIDED(8)
NXE_DEFINE_COPY_STRIDED(16)
NXE_DEFINE_COPY_STRIDED(32)
NXE_DEFINE_COPY_STRIDED(64)
#undef NXE_DEFINE_COPY_STRIDED

#define NXE_DEFINE_GATHER(T, prefix)                                                               \
    int64_t nxe_ref_##prefix##_find_bad_index(int64_t n, const T *indices, int64_t dim)            \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++) {                                                          \
            const int64_t v = indices[j];                                                          \
            if (v < -dim || v >= dim)                                                              \
                return j;                                                                          \
        }                                                                                          \
        return -1;                                                                                 \
    }                                                                                              \
    void nxe_ref_##prefix##_gather(const void *data, int64_t axis_dim, size_t row_bytes,           \
                                   const T *indices, int64_t num_indices, void *out,               \
                                   int64_t begin, int64_t end)                                     \
    {                                                                                              \
        if (row_bytes == 0)                                                                        \
            return;                                                                                \
        const unsigned char *src = data;                                                           \
        unsigned char *dst = out;                                                                  \
        for (int64_t r = begin; r < end; r++) {                                                    \
            const int64_t o = r / num_indices;                                                     \
            int64_t k = indices[r % num_indices];                                                  \
            if (k < 0)                                                                             \
                k += axis_dim;                                                                     \
            memcpy(dst + (size_t)r * row_bytes,                                                    \
                   src + ((size_t)o * (size_t)axis_dim + (size_t)k) * row_bytes, row_bytes);       \
        }                                                                                          \
    }
NXE_DEFINE_GATHER(int32_t, i32)
NXE_DEFINE_GATHER(int64_t, i64)
#undef NXE_DEFINE_GATHER

int64_t nxe_ref_find_bad_tuple(int64_t n, int32_t k, const void *indices, int32_t is64,
                               const int64_t *dims)
{
    for (int64_t j = 0; j < n * k; j++) {
        const int64_t v = nxe_ref_load_index(indices, is64, j);
        const int64_t dim = dims[j % k];
        if (v < -dim || v >= dim)
            return j;
    }
    return -1;
}

int64_t nxe_ref_pad_source(int64_t i, int64_t n, int32_t mode)
{
    if (i >= 0 && i < n)
        return i;
    switch (mode) {
    case NXE_REF_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case NXE_REF_PAD_WRAP: {
        const int64_t m = i % n;
        return m < 0 ? m + n : m;
    }
    case NXE_REF_PAD_REFLECT: {
        if (n == 1)
            return 0;
        const int64_t period = 2 * (n - 1);
        int64_t m = i % period;
        if (m < 0)
            m += period;
        return m < n ? m : period - m;
    }
    default: return -1;
    }
}

void nxe_ref_x8_pad(int32_t ndim, const int64_t *in_shape, const int64_t *out_shape,
                    const int64_t *begin, int32_t mode, size_t elem_size, const void *fill,
                    const void *src, void *dst, int64_t row_begin, int64_t row_end)
{
    const int32_t last = ndim - 1;
    int64_t in_strides[NXE_REF_MAX_RANK];
    int64_t stride = 1;
    for (int32_t d = last; d >= 0; d--) {
        in_strides[d] = stride;
        stride *= in_shape[d];
    }
    const unsigned char *in = src;
    unsigned char *out = dst;
    const int64_t row_len = out_shape[last];
    for (int64_t r = row_begin; r < row_end; r++) {
        int64_t rest = r, offset = 0;
        int fill_row = 0;
        for (int32_t d = last - 1; d >= 0; d--) {
            const int64_t o = rest % out_shape[d];
            rest /= out_shape[d];
            const int64_t i = nxe_ref_pad_source(o - begin[d], in_shape[d], mode);
            if (i < 0)
                fill_row = 1;
            else
                offset += i * in_strides[d];
        }
        unsigned char *row = out + (size_t)(r * row_len) * elem_size;
        for (int64_t o = 0; o < row_len; o++) {
            const int64_t i =
                fill_row ? -1 : nxe_ref_pad_source(o - begin[last], in_shape[last], mode);
            const void *from = i < 0 ? fill : (const void *)(in + (size_t)(offset + i) * elem_size);
            memcpy(row + (size_t)o * elem_size, from, elem_size);
        }
    }
}

/* Offset in data (elements) of index position j with the axis coordinate left out. */
static int64_t offset_without_axis(int32_t ndim, const int64_t *index_shape,
                                   const int64_t *data_strides, int32_t axis, int64_t j)
{
    int64_t offset = 0;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        const int64_t c = j % index_shape[d];
        j /= index_shape[d];
        if (d != axis)
            offset += c * data_strides[d];
    }
    return offset;
}

void nxe_ref_x8_gather_elements(int32_t ndim, const int64_t *index_shape,
                                const int64_t *data_strides, int32_t axis, int64_t axis_dim,
                                const void *indices, int32_t is64, size_t elem_size,
                                const void *data, void *out, int64_t begin, int64_t end)
{
    const unsigned char *in = data;
    unsigned char *o = out;
    for (int64_t j = begin; j < end; j++) {
        int64_t k = nxe_ref_load_index(indices, is64, j);
        if (k < 0)
            k += axis_dim;
        const int64_t offset =
            offset_without_axis(ndim, index_shape, data_strides, axis, j) + k * data_strides[axis];
        memcpy(o + (size_t)j * elem_size, in + (size_t)offset * elem_size, elem_size);
    }
}

static float load_float(int32_t type, const void *p)
{
    uint16_t bits;
    float f;
    switch (type) {
    case NXE_REF_F16: memcpy(&bits, p, 2); return nxe_ref_f16_to_f32(bits);
    case NXE_REF_BF16: memcpy(&bits, p, 2); return nxe_ref_bf16_to_f32(bits);
    default: memcpy(&f, p, 4); return f;
    }
}

static void store_float(int32_t type, void *p, float f)
{
    uint16_t bits;
    switch (type) {
    case NXE_REF_F16:
        bits = nxe_ref_f32_to_f16(f);
        memcpy(p, &bits, 2);
        break;
    case NXE_REF_BF16:
        bits = nxe_ref_f32_to_bf16(f);
        memcpy(p, &bits, 2);
        break;
    default: memcpy(p, &f, 4); break;
    }
}

static int64_t load_int(int32_t type, const void *p)
{
    switch (type) {
    case NXE_REF_I8: return *(const int8_t *)p;
    case NXE_REF_U8: return *(const uint8_t *)p;
    case NXE_REF_BOOL: return *(const uint8_t *)p != 0;
    case NXE_REF_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case NXE_REF_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

/* Stores the low bits of v (two's complement), as a cast to the narrower type would. */
static void store_int(int32_t type, void *p, uint64_t v)
{
    switch (type) {
    case NXE_REF_I8:
    case NXE_REF_U8: {
        const uint8_t b = (uint8_t)v;
        memcpy(p, &b, 1);
        break;
    }
    case NXE_REF_BOOL: {
        const uint8_t b = v != 0;
        memcpy(p, &b, 1);
        break;
    }
    case NXE_REF_I16: {
        const uint16_t b = (uint16_t)v;
        memcpy(p, &b, 2);
        break;
    }
    case NXE_REF_I32: {
        const uint32_t b = (uint32_t)v;
        memcpy(p, &b, 4);
        break;
    }
    default: memcpy(p, &v, 8); break;
    }
}

static size_t type_size(int32_t type)
{
    static const size_t sizes[NXE_REF_TYPE_COUNT] = {4, 2, 2, 1, 1, 2, 4, 8, 1, 8, 2, 4, 8};
    return type >= 0 && type < NXE_REF_TYPE_COUNT ? sizes[type] : 0;
}

void nxe_ref_combine(int32_t type, int32_t reduction, void *dst, const void *src)
{
    if (reduction == NXE_REF_REDUCE_NONE) {
        memcpy(dst, src, type_size(type));
        return;
    }
    if (type == NXE_REF_F32 || type == NXE_REF_F16 || type == NXE_REF_BF16) {
        const float a = load_float(type, dst), b = load_float(type, src);
        float r;
        switch (reduction) {
        case NXE_REF_REDUCE_ADD: r = a + b; break;
        case NXE_REF_REDUCE_MUL: r = a * b; break;
        case NXE_REF_REDUCE_MAX: r = b > a ? b : a; break;
        default: r = b < a ? b : a; break;
        }
        store_float(type, dst, r);
        return;
    }
    const int64_t a = load_int(type, dst), b = load_int(type, src);
    uint64_t r;
    switch (reduction) {
    case NXE_REF_REDUCE_ADD: r = (uint64_t)a + (uint64_t)b; break;
    case NXE_REF_REDUCE_MUL: r = (uint64_t)a * (uint64_t)b; break;
    case NXE_REF_REDUCE_MAX: r = (uint64_t)(b > a ? b : a); break;
    default: r = (uint64_t)(b < a ? b : a); break;
    }
    store_int(type, dst, r);
}

void nxe_ref_scatter_elements(int32_t ndim, const int64_t *index_shape, const int64_t *data_strides,
                              int32_t axis, int64_t axis_dim, const void *indices, int32_t is64,
                              int32_t type, int32_t reduction, const void *updates, void *out)
{
    const size_t elem_size = type_size(type);
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++)
        n *= index_shape[d];
    const unsigned char *u = updates;
    unsigned char *o = out;
    for (int64_t j = 0; j < n; j++) {
        int64_t k = nxe_ref_load_index(indices, is64, j);
        if (k < 0)
            k += axis_dim;
        const int64_t offset =
            offset_without_axis(ndim, index_shape, data_strides, axis, j) + k * data_strides[axis];
        nxe_ref_combine(type, reduction, o + (size_t)offset * elem_size, u + (size_t)j * elem_size);
    }
}

static int64_t tuple_offset(int32_t k, const int64_t *dims, const int64_t *strides,
                            const void *indices, int32_t is64, int64_t t)
{
    int64_t offset = 0;
    for (int32_t c = 0; c < k; c++) {
        int64_t v = nxe_ref_load_index(indices, is64, t * k + c);
        if (v < 0)
            v += dims[c];
        offset += v * strides[c];
    }
    return offset;
}

void nxe_ref_gather_nd(int32_t k, const int64_t *dims, const int64_t *strides, int64_t batch_stride,
                       int64_t tuples_per_batch, const void *indices, int32_t is64,
                       size_t elem_size, size_t slice_bytes, const void *data, void *out,
                       int64_t begin, int64_t end)
{
    if (slice_bytes == 0)
        return;
    const unsigned char *in = data;
    unsigned char *o = out;
    for (int64_t t = begin; t < end; t++) {
        const int64_t offset = (t / tuples_per_batch) * batch_stride +
                               tuple_offset(k, dims, strides, indices, is64, t);
        memcpy(o + (size_t)t * slice_bytes, in + (size_t)offset * elem_size, slice_bytes);
    }
}

void nxe_ref_scatter_nd(int32_t k, const int64_t *dims, const int64_t *strides, int64_t num_tuples,
                        const void *indices, int32_t is64, int32_t type, int32_t reduction,
                        int64_t slice_elems, const void *updates, void *out)
{
    const size_t elem_size = type_size(type);
    const unsigned char *u = updates;
    unsigned char *o = out;
    for (int64_t t = 0; t < num_tuples; t++) {
        unsigned char *dst =
            o + (size_t)tuple_offset(k, dims, strides, indices, is64, t) * elem_size;
        const unsigned char *src = u + (size_t)(t * slice_elems) * elem_size;
        for (int64_t e = 0; e < slice_elems; e++)
            nxe_ref_combine(type, reduction, dst + (size_t)e * elem_size,
                            src + (size_t)e * elem_size);
    }
}

void nxe_ref_one_hot(int64_t depth, int64_t inner, const void *indices, int32_t is64,
                     size_t elem_size, const void *on, const void *off, void *out, int64_t begin,
                     int64_t end)
{
    unsigned char *o = out;
    for (int64_t j = begin; j < end; j++) {
        int64_t v = nxe_ref_load_index(indices, is64, j);
        if (v < 0 && v >= -depth)
            v += depth;
        const int64_t outer = j / inner, i = j % inner;
        for (int64_t d = 0; d < depth; d++)
            memcpy(o + (size_t)((outer * depth + d) * inner + i) * elem_size, d == v ? on : off,
                   elem_size);
    }
}

void nxe_ref_trilu(int64_t rows, int64_t cols, int32_t upper, int64_t k, size_t elem_size,
                   const void *src, void *dst, int64_t begin, int64_t end)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    const size_t row_bytes = (size_t)cols * elem_size;
    for (int64_t r = begin; r < end; r++) {
        const int64_t i = r % rows;
        const unsigned char *s = in + (size_t)r * row_bytes;
        unsigned char *d = out + (size_t)r * row_bytes;
        for (int64_t j = 0; j < cols; j++) {
            const int keep = upper ? j - i >= k : j - i <= k;
            if (keep)
                memmove(d + (size_t)j * elem_size, s + (size_t)j * elem_size, elem_size);
            else
                memset(d + (size_t)j * elem_size, 0, elem_size);
        }
    }
}

void nxe_ref_x8_reverse_sequence(size_t elem_size, int64_t dim1, int64_t inner, int32_t batch_axis,
                                 const int64_t *lens, const void *src, void *dst, int64_t begin,
                                 int64_t end)
{
    const size_t row_bytes = (size_t)inner * elem_size;
    for (int64_t row = begin; row < end; row++) {
        const int64_t i0 = row / dim1, i1 = row % dim1;
        const int64_t b = batch_axis == 0 ? i0 : i1;
        const int64_t t = batch_axis == 0 ? i1 : i0;
        const int64_t from_t = t < lens[b] ? lens[b] - 1 - t : t;
        const int64_t from = batch_axis == 0 ? b * dim1 + from_t : from_t * dim1 + b;
        memcpy((char *)dst + (size_t)row * row_bytes, (const char *)src + (size_t)from * row_bytes,
               row_bytes);
    }
}

int64_t nxe_ref_i64_find_bad_length(int64_t n, const int64_t *lens, int64_t max)
{
    for (int64_t i = 0; i < n; i++)
        if (lens[i] < 0 || lens[i] > max)
            return i;
    return -1;
}
