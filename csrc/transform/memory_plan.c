/* memory_plan.c — greedy-by-size arena planning over buffer lifetimes. Placed buffers are
 * indexed by lifetime, so placing one looks only at the buffers alive with it: planning a
 * chain of n steps takes O(n log n), not O(n^2). */
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

/* [begin, end) of a placed buffer in the arena. */
typedef struct span {
    uint64_t begin, end;
} span;

static int by_begin(const void *a, const void *b)
{
    const span *sa = a, *sb = b;
    return sa->begin < sb->begin ? -1 : sa->begin > sb->begin;
}

/* A segment tree over steps: node v (children 2v, 2v + 1) covers a range of steps and lists
 * the placed buffers whose lifetime covers that range but not its parent's, so each buffer is
 * listed in O(log steps) nodes and those alive during a lifetime are found by visiting the
 * nodes that meet it. */
typedef struct lifetime_index {
    int32_t **items; /* per node: buffer indices */
    int32_t *count;
    int32_t *capacity;
    int32_t num_nodes;
} lifetime_index;

static nxe_status index_insert(lifetime_index *index, int32_t v, int32_t lo, int32_t hi,
                               const nxe_buffer_request *request, int32_t buffer)
{
    if (request->last_step < lo || hi < request->first_step)
        return NXE_OK;
    if (request->first_step <= lo && hi <= request->last_step) {
        nxe_status status = nxe_grow_array((void **)&index->items[v], &index->capacity[v],
                                           index->count[v] + 1, sizeof(int32_t));
        if (status == NXE_OK)
            index->items[v][index->count[v]++] = buffer;
        return status;
    }
    int32_t mid = lo + (hi - lo) / 2;
    nxe_status status = index_insert(index, 2 * v, lo, mid, request, buffer);
    return status == NXE_OK ? index_insert(index, 2 * v + 1, mid + 1, hi, request, buffer) : status;
}

/* Appends to `found` the spans of placed buffers alive during `request`, each once (`seen`
 * holds, per buffer, the last request that found it). */
static void index_query(const lifetime_index *index, int32_t v, int32_t lo, int32_t hi,
                        const nxe_buffer_request *request, int32_t request_index,
                        const nxe_buffer_request *requests, const uint64_t *offsets, int32_t *seen,
                        span *found, int32_t *num_found)
{
    if (request->last_step < lo || hi < request->first_step)
        return;
    for (int32_t i = 0; i < index->count[v]; i++) {
        int32_t other = index->items[v][i];
        if (seen[other] == request_index)
            continue;
        seen[other] = request_index;
        /* Every placed buffer's end was checked when it was placed. */
        uint64_t size =
            (requests[other].size + PLAN_ALIGNMENT - 1) & ~(uint64_t)(PLAN_ALIGNMENT - 1);
        found[(*num_found)++] = (span){offsets[other], offsets[other] + size};
    }
    if (lo == hi)
        return;
    int32_t mid = lo + (hi - lo) / 2;
    index_query(index, 2 * v, lo, mid, request, request_index, requests, offsets, seen, found,
                num_found);
    index_query(index, 2 * v + 1, mid + 1, hi, request, request_index, requests, offsets, seen,
                found, num_found);
}

/* The lowest offset where `size` bytes meet none of `found`. */
static uint64_t lowest_gap(span *found, int32_t num_found, uint64_t size)
{
    qsort(found, (size_t)num_found, sizeof(span), by_begin);
    uint64_t offset = 0;
    for (int32_t i = 0; i < num_found; i++) {
        if (found[i].begin >= offset && found[i].begin - offset >= size)
            break;
        if (found[i].end > offset)
            offset = found[i].end;
    }
    return offset;
}

nxe_status nxe_plan_memory(const nxe_buffer_request *requests, int32_t count, uint64_t *offsets,
                           uint64_t *arena_size)
{
    *arena_size = 0;
    if (count <= 0)
        return NXE_OK;
    int32_t num_steps = 1;
    for (int32_t i = 0; i < count; i++)
        if (requests[i].last_step >= num_steps)
            num_steps = requests[i].last_step + 1;
    lifetime_index index = {.num_nodes = 2};
    while (index.num_nodes / 2 < num_steps)
        index.num_nodes *= 2;
    index.items = nxe_alloc_zeroed(sizeof(int32_t *) * (size_t)index.num_nodes);
    index.count = nxe_alloc_zeroed(sizeof(int32_t) * (size_t)index.num_nodes);
    index.capacity = nxe_alloc_zeroed(sizeof(int32_t) * (size_t)index.num_nodes);
    int32_t *order = nxe_alloc(sizeof(int32_t) * (size_t)count);
    int32_t *seen = nxe_alloc(sizeof(int32_t) * (size_t)count);
    span *found = nxe_alloc(sizeof(span) * (size_t)count);
    nxe_status status = NXE_OK;
    if (!index.items || !index.count || !index.capacity || !order || !seen || !found)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: out of memory");
    for (int32_t i = 0; status == NXE_OK && i < count; i++) {
        order[i] = i;
        seen[i] = -1;
    }
    if (status == NXE_OK) {
        sort_base = requests;
        qsort(order, (size_t)count, sizeof(int32_t), by_size_descending);
    }
    const int32_t last_leaf = index.num_nodes / 2 - 1;
    uint64_t arena = 0;
    for (int32_t k = 0; k < count && status == NXE_OK; k++) {
        const nxe_buffer_request *request = &requests[order[k]];
        uint64_t size, end;
        int32_t num_found = 0;
        if (!nxe_checked_align_u64(request->size, PLAN_ALIGNMENT, &size)) {
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: buffer too large");
            break;
        }
        index_query(&index, 1, 0, last_leaf, request, order[k], requests, offsets, seen, found,
                    &num_found);
        uint64_t offset = lowest_gap(found, num_found, size);
        if (!nxe_checked_add_u64(offset, size, &end)) {
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: the arena's size overflows");
            break;
        }
        offsets[order[k]] = offset;
        if (end > arena)
            arena = end;
        status = index_insert(&index, 1, 0, last_leaf, request, order[k]);
    }
    for (int32_t v = 0; index.items && v < index.num_nodes; v++)
        nxe_free(index.items[v]);
    nxe_free(index.items);
    nxe_free(index.count);
    nxe_free(index.capacity);
    nxe_free(order);
    nxe_free(seen);
    nxe_free(found);
    *arena_size = status == NXE_OK ? arena : 0;
    return status;
}
