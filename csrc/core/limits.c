/* limits.c — resolves the caller's nxe_limits (NULL or zero fields: the defaults of nxe.h) into
 * the values the compiler and the readers enforce. */
#include "core/core.h"

nxe_status nxe_limits_resolve(const nxe_limits *limits, const char *where, nxe_limits *out)
{
    *out = (nxe_limits)NXE_LIMITS_INIT;
    if (limits) {
        if (limits->struct_size < sizeof(nxe_limits))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: limits.struct_size is %u, expected at least %zu (initialize "
                             "with NXE_LIMITS_INIT)",
                             where, limits->struct_size, sizeof(nxe_limits));
        if (limits->max_ops < 0)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: limits.max_ops %lld is negative",
                             where, (long long)limits->max_ops);
        *out = *limits;
        out->struct_size = sizeof(nxe_limits);
    }
    if (!out->max_tensor_bytes)
        out->max_tensor_bytes = NXE_DEFAULT_MAX_TENSOR_BYTES;
    if (!out->max_arena_bytes)
        out->max_arena_bytes = NXE_DEFAULT_MAX_ARENA_BYTES;
    if (!out->max_file_bytes)
        out->max_file_bytes = NXE_DEFAULT_MAX_FILE_BYTES;
    if (!out->max_ops)
        out->max_ops = NXE_DEFAULT_MAX_OPS;
    return NXE_OK;
}

nxe_status nxe_limits_check_file(const nxe_limits *limits, uint64_t size, const char *what)
{
    if (size <= limits->max_file_bytes)
        return NXE_OK;
    return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                     "%s: %llu bytes, above the limit of %llu bytes per file (raise "
                     "nxe_limits.max_file_bytes)",
                     what, (unsigned long long)size, (unsigned long long)limits->max_file_bytes);
}

nxe_status nxe_limits_check_ops(const nxe_limits *limits, int64_t count, const char *what)
{
    if (count <= limits->max_ops)
        return NXE_OK;
    return nxe_error(NXE_ERROR_INVALID_GRAPH,
                     "%s: %lld ops, above the limit of %lld ops per graph (raise "
                     "nxe_limits.max_ops)",
                     what, (long long)count, (long long)limits->max_ops);
}
