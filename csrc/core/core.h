/* core.h — what every part of the library shares: error reporting, logging, aligned
 * allocation, dtype facts. Internal; nothing here is exported. */
#ifndef NXE_CORE_H
#define NXE_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/checked.h"

/* The library implements both tiers of its ABI (nxe_experimental.h brings nxe.h). */
#include "nxe/nxe_experimental.h"

#if defined(__GNUC__)
#define NXE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define NXE_PRINTF(fmt, args)
#endif

/* Records `status` and a formatted message for nxe_last_error(); returns `status`. */
nxe_status nxe_error(nxe_status status, const char *fmt, ...) NXE_PRINTF(2, 3);
nxe_status nxe_error_v(nxe_status status, const char *fmt, va_list args);
/* Empties the current thread's message, so that a callee's failure can be told from an old
 * one. */
void nxe_error_clear(void);
/* Prefixes the current thread's message with `fmt` (for context on the way up). */
void nxe_error_prefix(const char *fmt, ...) NXE_PRINTF(1, 2);

/* Delivers a message to the host's log callback, if one is set and the level is enabled. */
void nxe_log(int32_t level, const char *fmt, ...) NXE_PRINTF(2, 3);

/* 64-byte aligned allocation; NULL on failure (and on size 0 with zeroed=false). */
void *nxe_alloc(size_t size);
void *nxe_alloc_zeroed(size_t size);
void nxe_free(void *ptr);
char *nxe_strdup(const char *s);
/* Bytes the allocator gave a block of nxe_alloc (at least what was asked); 0 for NULL. */
size_t nxe_alloc_usable_size(const void *ptr);
/* Grows *items (an array of `size`-byte elements) to hold at least `needed`. */
nxe_status nxe_grow_array(void **items, int32_t *capacity, int32_t needed, size_t size);

/* The caller's limits (NULL: every default) with each field 0 replaced by its default from
 * nxe.h; NXE_ERROR_INVALID_ARGUMENT for a short struct_size or a negative max_ops. */
nxe_status nxe_limits_resolve(const nxe_limits *limits, const char *where, nxe_limits *out);
/* A file of `size` bytes, or a graph or plan of `count` ops, within resolved `limits`: else
 * NXE_ERROR_INVALID_ARGUMENT or NXE_ERROR_INVALID_GRAPH naming `what` and the field to raise. */
nxe_status nxe_limits_check_file(const nxe_limits *limits, uint64_t size, const char *what);
nxe_status nxe_limits_check_ops(const nxe_limits *limits, int64_t count, const char *what);

/* dtype facts; unknown dtypes answer 0 / "?". */
size_t nxe_dtype_size(int32_t dtype);
const char *nxe_dtype_name(int32_t dtype);
bool nxe_dtype_valid(int32_t dtype);

/* Element count of a shape; false when a dimension is negative or the product of the nonzero
 * dimensions overflows int64 (so [0, 2^40, 2^40] is refused as [2^40, 2^40, 0] is). */
bool nxe_shape_numel(int32_t ndim, const int64_t *shape, int64_t *numel);
/* Bytes of a dense tensor of `dtype` and that shape; false as nxe_shape_numel, or when the
 * byte count overflows size_t. */
bool nxe_shape_bytes(int32_t dtype, int32_t ndim, const int64_t *shape, size_t *bytes);
/* "[2, 3, 4]" into buf. */
const char *nxe_shape_str(int32_t ndim, const int64_t *shape, char *buf, size_t size);

#endif
