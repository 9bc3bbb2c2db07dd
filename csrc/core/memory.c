/* memory.c — the one allocator: 64-byte aligned blocks, and overflow-checked size math. */
#include <malloc.h>
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

size_t nxe_alloc_usable_size(const void *ptr)
{
    return ptr ? malloc_usable_size((void *)ptr) : 0;
}

char *nxe_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = nxe_alloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

nxe_status nxe_grow_array(void **items, int32_t *capacity, int32_t needed, size_t size)
{
    if (needed <= *capacity)
        return NXE_OK;
    if (needed > INT32_MAX / 2)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "too many items (%d)", needed);
    int32_t next = *capacity ? *capacity * 2 : 16;
    while (next < needed)
        next *= 2;
    void *grown = nxe_alloc((size_t)next * size);
    if (!grown)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory growing an array");
    if (*items)
        memcpy(grown, *items, (size_t)*capacity * size);
    nxe_free(*items);
    *items = grown;
    *capacity = next;
    return NXE_OK;
}
