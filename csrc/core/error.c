/* error.c — status names and the thread-local last-error message behind nxe_last_error(). */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

#define NXE_ERROR_CAPACITY 1024

static _Thread_local char last_error[NXE_ERROR_CAPACITY];

nxe_status nxe_error_v(nxe_status status, const char *fmt, va_list args)
{
    vsnprintf(last_error, sizeof last_error, fmt, args);
    nxe_log(NXE_LOG_DEBUG, "%s: %s", nxe_status_name(status), last_error);
    return status;
}

nxe_status nxe_error(nxe_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    nxe_error_v(status, fmt, args);
    va_end(args);
    return status;
}

void nxe_error_prefix(const char *fmt, ...)
{
    char prefix[NXE_ERROR_CAPACITY];
    va_list args;
    va_start(args, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, args);
    va_end(args);
    size_t prefix_length = strlen(prefix);
    if (prefix_length >= NXE_ERROR_CAPACITY - 1)
        return;
    size_t kept = strlen(last_error);
    if (kept > NXE_ERROR_CAPACITY - 1 - prefix_length)
        kept = NXE_ERROR_CAPACITY - 1 - prefix_length;
    memmove(last_error + prefix_length, last_error, kept);
    memcpy(last_error, prefix, prefix_length);
    last_error[prefix_length + kept] = '\0';
}

void nxe_error_clear(void)
{
    last_error[0] = '\0';
}

NXE_API const char *nxe_last_error(void)
{
    return last_error;
}

NXE_API const char *nxe_status_name(nxe_status status)
{
    switch (status) {
    case NXE_OK: return "NXE_OK";
    case NXE_ERROR_INVALID_ARGUMENT: return "NXE_ERROR_INVALID_ARGUMENT";
    case NXE_ERROR_OUT_OF_MEMORY: return "NXE_ERROR_OUT_OF_MEMORY";
    case NXE_ERROR_INVALID_GRAPH: return "NXE_ERROR_INVALID_GRAPH";
    case NXE_ERROR_SHAPE_MISMATCH: return "NXE_ERROR_SHAPE_MISMATCH";
    case NXE_ERROR_DTYPE_MISMATCH: return "NXE_ERROR_DTYPE_MISMATCH";
    case NXE_ERROR_UNSUPPORTED: return "NXE_ERROR_UNSUPPORTED";
    case NXE_ERROR_NOT_FOUND: return "NXE_ERROR_NOT_FOUND";
    case NXE_ERROR_INVALID_STATE: return "NXE_ERROR_INVALID_STATE";
    case NXE_ERROR_BUFFER_TOO_SMALL: return "NXE_ERROR_BUFFER_TOO_SMALL";
    case NXE_ERROR_IO: return "NXE_ERROR_IO";
    case NXE_ERROR_FORMAT: return "NXE_ERROR_FORMAT";
    case NXE_ERROR_RUNTIME: return "NXE_ERROR_RUNTIME";
    case NXE_ERROR_INTERNAL: return "NXE_ERROR_INTERNAL";
    case NXE_ERROR_BUSY: return "NXE_ERROR_BUSY";
    case NXE_ERROR_TIMEOUT: return "NXE_ERROR_TIMEOUT";
    case NXE_ERROR_CANCELLED: return "NXE_ERROR_CANCELLED";
    default: return "NXE_ERROR_UNKNOWN";
    }
}
