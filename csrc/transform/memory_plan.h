/* memory_plan.h — places buffers with known lifetimes in one arena so that buffers alive at
 * the same step never overlap. Pure computation; knows nothing of graphs. */
#ifndef NXE_MEMORY_PLAN_H
#define NXE_MEMORY_PLAN_H

#include "core/core.h"

typedef struct nxe_buffer_request {
    uint64_t size;      /* bytes */
    int32_t first_step; /* step that writes it */
    int32_t last_step;  /* last step that reads it (>= first_step) */
} nxe_buffer_request;

/* Gives each request a 64-byte aligned offset and the arena size they need together.
 * Larger buffers are placed first, each at the lowest offset that avoids every placed buffer
 * whose lifetime intersects its own; where that would cost more than linear time (thousands
 * of buffers alive at once), buffers reuse the freed slots of their power-of-two size class
 * in step order instead. */
nxe_status nxe_plan_memory(const nxe_buffer_request *requests, int32_t count, uint64_t *offsets,
                           uint64_t *arena_size);

#endif
