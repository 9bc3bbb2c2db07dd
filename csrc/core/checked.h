/* checked.h — overflow-checked size arithmetic. Every element count, byte size, stride, offset
 * and sum of sizes the library derives from a shape, an attribute or a file goes through these,
 * so hostile input yields a status naming what overflowed instead of a wrapped size. Each
 * returns true with the result in *out, or false (with *out unspecified) when it overflows. */
#ifndef NXE_CHECKED_H
#define NXE_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool nxe_checked_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool nxe_checked_add_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool nxe_checked_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool nxe_checked_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool nxe_checked_mul_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool nxe_checked_add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* `value` rounded up to a multiple of `alignment` (a power of two). */
static inline bool nxe_checked_align_u64(uint64_t value, uint64_t alignment, uint64_t *out)
{
    if (!nxe_checked_add_u64(value, alignment - 1, out))
        return false;
    *out &= ~(alignment - 1);
    return true;
}

#endif
