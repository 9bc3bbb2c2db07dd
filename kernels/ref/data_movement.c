/* data_movement.c — reference kernels for the data_movement op family: byte copies, strided
 * views and gathers. Zero-length copies never touch their pointers (they may be NULL). */
#include "data_movement.h"

#include <string.h>

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
#define NXE_DEFINE_COPY_STRIDED(bits)                                                         \
    void nxe_ref_x##bits##_copy_strided(int32_t ndim, const int64_t *shape,                   \
                                        const int64_t *src_strides, const void *src,          \
                                        void *dst, int64_t begin, int64_t end)                \
    {                                                                                         \
        if (begin >= end)                                                                     \
            return;                                                                           \
        const uint##bits##_t *s = src;                                                        \
        uint##bits##_t *out = dst;                                                            \
        int64_t idx[NXE_REF_MAX_RANK];                                                        \
        int64_t offset = 0, rest = begin;                                                     \
        for (int32_t d = ndim - 1; d >= 0; d--) {                                             \
            idx[d] = rest % shape[d];                                                         \
            rest /= shape[d];                                                                 \
            offset += idx[d] * src_strides[d];                                                \
        }                                                                                     \
        const int32_t last = ndim - 1;                                                        \
        const int64_t step = src_strides[last];                                               \
        int64_t i = begin;                                                                    \
        while (i < end) {                                                                     \
            int64_t run = shape[last] - idx[last];                                            \
            if (run > end - i)                                                                \
                run = end - i;                                                                \
            const uint##bits##_t *ps = s + offset;                                            \
            uint##bits##_t *po = out + i;                                                     \
            for (int64_t k = 0; k < run; k++)                                                 \
                po[k] = ps[k * step];                                                         \
            i += run;                                                                         \
            idx[last] += run;                                                                 \
            offset += run * step;                                                             \
            for (int32_t d = last; d > 0 && idx[d] == shape[d]; d--) {                        \
                offset += src_strides[d - 1] - shape[d] * src_strides[d];                     \
                idx[d] = 0;                                                                   \
                idx[d - 1]++;                                                                 \
            }                                                                                 \
        }                                                                                     \
    }
NXE_DEFINE_COPY_STRIDED(8)
NXE_DEFINE_COPY_STRIDED(16)
NXE_DEFINE_COPY_STRIDED(32)
NXE_DEFINE_COPY_STRIDED(64)
#undef NXE_DEFINE_COPY_STRIDED

#define NXE_DEFINE_GATHER(T, prefix)                                                          \
    int64_t nxe_ref_##prefix##_find_bad_index(int64_t n, const T *indices, int64_t dim)       \
    {                                                                                         \
        for (int64_t j = 0; j < n; j++) {                                                     \
            const int64_t v = indices[j];                                                     \
            if (v < -dim || v >= dim)                                                         \
                return j;                                                                     \
        }                                                                                     \
        return -1;                                                                            \
    }                                                                                         \
    void nxe_ref_##prefix##_gather(const void *data, int64_t axis_dim, size_t row_bytes,      \
                                   const T *indices, int64_t num_indices, void *out,          \
                                   int64_t begin, int64_t end)                                \
    {                                                                                         \
        if (row_bytes == 0)                                                                   \
            return;                                                                           \
        const unsigned char *src = data;                                                      \
        unsigned char *dst = out;                                                             \
        for (int64_t r = begin; r < end; r++) {                                               \
            const int64_t o = r / num_indices;                                                \
            int64_t k = indices[r % num_indices];                                             \
            if (k < 0)                                                                        \
                k += axis_dim;                                                                \
            memcpy(dst + (size_t)r * row_bytes,                                               \
                   src + ((size_t)o * (size_t)axis_dim + (size_t)k) * row_bytes, row_bytes);  \
        }                                                                                     \
    }
NXE_DEFINE_GATHER(int32_t, i32)
NXE_DEFINE_GATHER(int64_t, i64)
#undef NXE_DEFINE_GATHER
