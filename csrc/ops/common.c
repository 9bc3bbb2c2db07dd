/* common.c — shape rules shared by op families: broadcasting, axes, sizes, dtype checks. */
#include "ops/op_def.h"

const nxe_quant nxe_no_quant = {.type = NXE_QUANT_NONE};

nxe_status nxe_broadcast_shapes(const nxe_node *node, int32_t ndim_a, const int64_t *a,
                                int32_t ndim_b, const int64_t *b, int32_t *ndim_out, int64_t *out)
{
    int32_t ndim = ndim_a > ndim_b ? ndim_a : ndim_b;
    for (int32_t i = 0; i < ndim; i++) {
        int32_t ia = i - (ndim - ndim_a), ib = i - (ndim - ndim_b);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "shapes %s and %s do not broadcast (axis %d: %lld vs %lld)",
                                  nxe_shape_str(ndim_a, a, sa, sizeof sa),
                                  nxe_shape_str(ndim_b, b, sb, sizeof sb), i, (long long)da,
                                  (long long)db);
        }
        out[i] = da == 1 ? db : da;
    }
    /* Each operand's count fits in int64, yet their broadcast may not: reject it before any
     * rule multiplies the dimensions out. */
    int64_t numel;
    if (!nxe_shape_numel(ndim, out, &numel)) {
        char so[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "broadcast shape %s has more elements than fit in 64 bits",
                              nxe_shape_str(ndim, out, so, sizeof so));
    }
    *ndim_out = ndim;
    return NXE_OK;
}

nxe_status nxe_normalize_axis(const nxe_node *node, int64_t axis, int32_t ndim, int32_t *out)
{
    if (axis < -(int64_t)ndim || axis >= ndim || ndim == 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d", (long long)axis, ndim);
    *out = (int32_t)(axis < 0 ? axis + ndim : axis);
    return NXE_OK;
}

int64_t nxe_value_numel(const nxe_value *value)
{
    int64_t n;
    return nxe_shape_numel(value->ndim, value->shape, &n) ? n : INT64_MAX;
}

size_t nxe_value_bytes(const nxe_value *value)
{
    size_t bytes;
    return nxe_shape_bytes(value->dtype, value->ndim, value->shape, &bytes) ? bytes : SIZE_MAX;
}

nxe_status nxe_check_dtype(const nxe_node *node, const char *what, const nxe_value *value,
                           uint32_t mask)
{
    if (nxe_dtype_valid(value->dtype) && (mask & NXE_MASK(value->dtype)))
        return NXE_OK;
    return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH, "%s has dtype %s, which is not accepted",
                          what, nxe_dtype_name(value->dtype));
}

void *nxe_prepared_alloc(size_t header_size, size_t data_bytes, void **data)
{
    size_t offset = (header_size + 63) / 64 * 64;
    *data = NULL;
    if (data_bytes > SIZE_MAX - offset)
        return NULL;
    unsigned char *block = nxe_alloc(offset + data_bytes);
    if (block)
        *data = block + offset;
    return block;
}

void nxe_batch_offsets(int32_t batch_ndim, const int64_t *batch_shape, const int64_t *a_strides,
                       const int64_t *b_strides, int64_t batch, int64_t *a_offset,
                       int64_t *b_offset)
{
    int64_t a = 0, b = 0, rest = batch;
    for (int32_t d = batch_ndim - 1; d >= 0; d--) {
        const int64_t index = rest % batch_shape[d];
        rest /= batch_shape[d];
        a += index * a_strides[d];
        b += index * b_strides[d];
    }
    *a_offset = a;
    *b_offset = b;
}
