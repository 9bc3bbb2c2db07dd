/* memory_plan.c — greedy-by-size arena planning over buffer lifetimes. */
#include <stdlib.h>

#include "transform/memory_plan.h"

#define PLAN_ALIGNMENT 64u

static _Thread_local const nxe_buffer_request *sort_base;

static int by_size_descending(const void *a, const void *b)
{
    const nxe_buffer_request *ra = &sort_base[*(const int32_t *)a];
    const nxe_buffer_request *rb = &sort_base[*(const int32_t *)b];
    if (ra->size != rb->size)
        return ra->size < rb->size ? 1 : -1;
    /* ties by index keep the plan deterministic */
    return *(const int32_t *)a - *(const int32_t *)b;
}

static bool lifetimes_overlap(const nxe_buffer_request *a, const nxe_buffer_request *b)
{
    return a->first_step <= b->last_step && b->first_step <= a->last_step;
}

static uint64_t align_up(uint64_t value)
{
    return (value + PLAN_ALIGNMENT - 1) / PLAN_ALIGNMENT * PLAN_ALIGNMENT;
}

nxe_status nxe_plan_memory(const nxe_buffer_request *requests, int32_t count, uint64_t *offsets,
                           uint64_t *arena_size)
{
    *arena_size = 0;
    if (count <= 0)
        return NXE_OK;
    int32_t *order = nxe_alloc(sizeof(int32_t) * (size_t)count);
    int32_t *placed = nxe_alloc(sizeof(int32_t) * (size_t)count);
    if (!order || !placed) {
        nxe_free(order);
        nxe_free(placed);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: out of memory");
    }
    for (int32_t i = 0; i < count; i++)
        order[i] = i;
    sort_base = requests;
    qsort(order, (size_t)count, sizeof(int32_t), by_size_descending);

    int32_t num_placed = 0;
    uint64_t arena = 0;
    nxe_status status = NXE_OK;
    for (int32_t k = 0; k < count && status == NXE_OK; k++) {
        const nxe_buffer_request *request = &requests[order[k]];
        uint64_t size = align_up(request->size);
        if (size < request->size)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: buffer too large");
        /* Move past every live, overlapping buffer until a gap fits; restart the scan after
         * each move because the order of placed buffers is not by offset. */
        uint64_t offset = 0;
        bool moved = true;
        while (moved && status == NXE_OK) {
            moved = false;
            for (int32_t p = 0; p < num_placed; p++) {
                const nxe_buffer_request *other = &requests[placed[p]];
                if (!lifetimes_overlap(request, other))
                    continue;
                uint64_t other_begin = offsets[placed[p]];
                uint64_t other_end = other_begin + align_up(other->size);
                if (offset < other_end && other_begin < offset + size) {
                    offset = other_end;
                    moved = true;
                }
            }
        }
        offsets[order[k]] = offset;
        placed[num_placed++] = order[k];
        if (offset + size > arena)
            arena = offset + size;
    }
    nxe_free(order);
    nxe_free(placed);
    *arena_size = arena;
    return status;
}
