/* memory_plan.c — greedy-by-size arena planning over buffer lifetimes. Placed buffers are
 * indexed by lifetime, so placing one looks only at the buffers alive with it: planning a
 * chain of n steps takes O(n log n), not O(n^2). When many buffers live at once (n buffers,
 * at most m alive together, n * m beyond GREEDY_WORK), greedy placement would still cost
 * O(n m log m), so such plans reuse memory by size class instead: linear in n, at most twice
 * the bytes alive at once per size class. */
#include <stdlib.h>

#include "transform/memory_plan.h"

#define PLAN_ALIGNMENT 64u
/* n * m above this plans by size class: greedy placement of 2^22 buffer pairs takes about a
 * tenth of a second; ordinary models stay far below (1,000 buffers, 50 alive at once). */
#define GREEDY_WORK ((uint64_t)1 << 22)

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

/* The most buffers alive at one step; -1 when out of memory. */
static int64_t most_alive(const nxe_buffer_request *requests, int32_t count, int32_t num_steps)
{
    int32_t *delta = nxe_alloc_zeroed(sizeof(int32_t) * ((size_t)num_steps + 1));
    if (!delta)
        return -1;
    for (int32_t i = 0; i < count; i++) {
        delta[requests[i].first_step]++;
        delta[requests[i].last_step + 1]--;
    }
    int64_t alive = 0, most = 0;
    for (int32_t s = 0; s < num_steps; s++) {
        alive += delta[s];
        if (alive > most)
            most = alive;
    }
    nxe_free(delta);
    return most;
}

/* Walks the steps in order, freeing each buffer after its last step and taking for each new
 * one a freed slot of its size class (sizes rounded up to a power of two), else a new slot at
 * the arena's end. Per class, free slots form a list threaded through `next` by buffer. */
static nxe_status plan_by_size_class(const nxe_buffer_request *requests, int32_t count,
                                     int32_t num_steps, uint64_t *offsets, uint64_t *arena_size)
{
    /* Buffers by first step and by last step, as counting-sorted lists. */
    int32_t *by_first = nxe_alloc(sizeof(int32_t) * (size_t)count);
    int32_t *by_last = nxe_alloc(sizeof(int32_t) * (size_t)count);
    int32_t *first_start = nxe_alloc_zeroed(sizeof(int32_t) * ((size_t)num_steps + 1));
    int32_t *last_start = nxe_alloc_zeroed(sizeof(int32_t) * ((size_t)num_steps + 1));
    int32_t *next = nxe_alloc(sizeof(int32_t) * (size_t)count);
    uint8_t *size_class = nxe_alloc(sizeof(uint8_t) * (size_t)count);
    nxe_status status = NXE_OK;
    if (!by_first || !by_last || !first_start || !last_start || !next || !size_class)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: out of memory");
    for (int32_t i = 0; status == NXE_OK && i < count; i++) {
        first_start[requests[i].first_step + 1]++;
        last_start[requests[i].last_step + 1]++;
    }
    for (int32_t s = 0; status == NXE_OK && s < num_steps; s++) {
        first_start[s + 1] += first_start[s];
        last_start[s + 1] += last_start[s];
    }
    for (int32_t i = 0; status == NXE_OK && i < count; i++) {
        by_first[first_start[requests[i].first_step]++] = i;
        by_last[last_start[requests[i].last_step]++] = i;
    }
    /* first_start[s] and last_start[s] now end step s's lists. */
    int32_t free_head[64];
    for (int c = 0; c < 64; c++)
        free_head[c] = -1;
    uint64_t arena = 0;
    int32_t f = 0, l = 0;
    for (int32_t s = 0; status == NXE_OK && s < num_steps; s++) {
        for (; f < first_start[s]; f++) {
            const int32_t b = by_first[f];
            int c = 6; /* 64 bytes, the alignment */
            while (c < 63 && ((uint64_t)1 << c) < requests[b].size)
                c++;
            if (((uint64_t)1 << c) < requests[b].size) {
                status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: buffer too large");
                break;
            }
            size_class[b] = (uint8_t)c;
            if (free_head[c] >= 0) {
                offsets[b] = offsets[free_head[c]];
                free_head[c] = next[free_head[c]];
            } else {
                offsets[b] = arena;
                if (!nxe_checked_add_u64(arena, (uint64_t)1 << c, &arena)) {
                    status = nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                                       "memory plan: the arena's size overflows");
                    break;
                }
            }
        }
        for (; status == NXE_OK && l < last_start[s]; l++) {
            const int32_t b = by_last[l];
            next[b] = free_head[size_class[b]];
            free_head[size_class[b]] = b;
        }
    }
    nxe_free(by_first);
    nxe_free(by_last);
    nxe_free(first_start);
    nxe_free(last_start);
    nxe_free(next);
    nxe_free(size_class);
    *arena_size = status == NXE_OK ? arena : 0;
    return status;
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
    const int64_t most = most_alive(requests, count, num_steps);
    if (most < 0)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "memory plan: out of memory");
    if ((uint64_t)count * (uint64_t)most > GREEDY_WORK)
        return plan_by_size_class(requests, count, num_steps, offsets, arena_size);
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
