/* dtype.c — element sizes, names and DLPack codes of the dtypes, and shape arithmetic. */
#include <stdio.h>

#include "core/core.h"

typedef struct dtype_fact {
    const char *name;
    size_t size;
    int32_t dl_code;
    int32_t dl_bits;
} dtype_fact;

static const dtype_fact dtype_facts[NXE_DTYPE_COUNT] = {
    [NXE_DTYPE_NONE] = {"none", 0, -1, 0},
    [NXE_DTYPE_F32] = {"f32", 4, NXE_DL_FLOAT, 32},
    [NXE_DTYPE_F16] = {"f16", 2, NXE_DL_FLOAT, 16},
    [NXE_DTYPE_BF16] = {"bf16", 2, NXE_DL_BFLOAT, 16},
    [NXE_DTYPE_I8] = {"i8", 1, NXE_DL_INT, 8},
    [NXE_DTYPE_U8] = {"u8", 1, NXE_DL_UINT, 8},
    [NXE_DTYPE_I16] = {"i16", 2, NXE_DL_INT, 16},
    [NXE_DTYPE_I32] = {"i32", 4, NXE_DL_INT, 32},
    [NXE_DTYPE_I64] = {"i64", 8, NXE_DL_INT, 64},
    [NXE_DTYPE_BOOL] = {"bool", 1, NXE_DL_BOOL, 8},
    [NXE_DTYPE_F64] = {"f64", 8, NXE_DL_FLOAT, 64},
    [NXE_DTYPE_U16] = {"u16", 2, NXE_DL_UINT, 16},
    [NXE_DTYPE_U32] = {"u32", 4, NXE_DL_UINT, 32},
    [NXE_DTYPE_U64] = {"u64", 8, NXE_DL_UINT, 64},
};

bool nxe_dtype_valid(int32_t dtype)
{
    return dtype > NXE_DTYPE_NONE && dtype < NXE_DTYPE_COUNT;
}

size_t nxe_dtype_size(int32_t dtype)
{
    return nxe_dtype_valid(dtype) ? dtype_facts[dtype].size : 0;
}

const char *nxe_dtype_name(int32_t dtype)
{
    return dtype >= 0 && dtype < NXE_DTYPE_COUNT ? dtype_facts[dtype].name : "?";
}

NXE_API nxe_status nxe_dtype_info(int32_t dtype, const char **name, int32_t *size_bytes)
{
    if (name)
        *name = NULL;
    if (size_bytes)
        *size_bytes = 0;
    if (!nxe_dtype_valid(dtype))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_dtype_info: unknown dtype %d", dtype);
    if (name)
        *name = dtype_facts[dtype].name;
    if (size_bytes)
        *size_bytes = (int32_t)dtype_facts[dtype].size;
    return NXE_OK;
}

NXE_API nxe_status nxe_dtype_to_dlpack(int32_t dtype, int32_t *code, int32_t *bits)
{
    if (code)
        *code = 0;
    if (bits)
        *bits = 0;
    if (!code || !bits)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_dtype_to_dlpack: code and bits must not be NULL");
    if (!nxe_dtype_valid(dtype))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_dtype_to_dlpack: unknown dtype %d",
                         dtype);
    *code = dtype_facts[dtype].dl_code;
    *bits = dtype_facts[dtype].dl_bits;
    return NXE_OK;
}

NXE_API nxe_status nxe_dtype_from_dlpack(int32_t code, int32_t bits, int32_t *dtype)
{
    if (!dtype)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_dtype_from_dlpack: dtype must not be NULL");
    *dtype = NXE_DTYPE_NONE;
    for (int32_t d = NXE_DTYPE_F32; d < NXE_DTYPE_COUNT; d++) {
        if (dtype_facts[d].dl_code == code && dtype_facts[d].dl_bits == bits) {
            *dtype = d;
            return NXE_OK;
        }
    }
    return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                     "nxe_dtype_from_dlpack: no nxe dtype for DLPack code %d with %d bits", code,
                     bits);
}

bool nxe_shape_numel(int32_t ndim, const int64_t *shape, int64_t *numel)
{
    /* The nonzero dimensions' product must fit even when a zero dimension empties the
     * tensor: strides are products of them, and the answer must not depend on their order. */
    int64_t n = 1;
    bool empty = false;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return false;
        if (shape[i] == 0) {
            empty = true;
            continue;
        }
        if (!nxe_checked_mul_i64(n, shape[i], &n))
            return false;
    }
    *numel = empty ? 0 : n;
    return true;
}

bool nxe_shape_bytes(int32_t dtype, int32_t ndim, const int64_t *shape, size_t *bytes)
{
    int64_t numel;
    return nxe_shape_numel(ndim, shape, &numel) &&
           nxe_checked_mul_size((size_t)numel, nxe_dtype_size(dtype), bytes);
}

const char *nxe_shape_str(int32_t ndim, const int64_t *shape, char *buf, size_t size)
{
    if (ndim < 0) {
        snprintf(buf, size, "[?]");
        return buf;
    }
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < ndim && used < size; i++) {
        if (shape[i] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s?", i ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                     (long long)shape[i]);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}
