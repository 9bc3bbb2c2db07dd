/* memory.c — the one allocator: 64-byte aligned blocks, and overflow-checked size math. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define NXE_ALIGNMENT 64

void *nxe_alloc(size_t size)
{
    if (size == 0)
        size = 1;
    size_t rounded = (size + NXE_ALIGNMENT - 1) / NXE_ALIGNMENT * NXE_ALIGNMENT;
    if (rounded < size)
        return NULL;
    return aligned_alloc(NXE_ALIGNMENT, rounded);
}

void *nxe_alloc_zeroed(size_t size)
{
    void *ptr = nxe_alloc(size);
    if (ptr)
        memset(ptr, 0, size);
    return ptr;
}

void nxe_free(void *ptr)
{
    free(ptr);
}

char *nxe_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = nxe_alloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

bool nxe_mul_overflow_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return true;
    *out = a * b;
    return false;
}
