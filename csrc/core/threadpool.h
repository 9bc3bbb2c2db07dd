/* threadpool.h — a fixed set of workers with one blocking parallel-for.
 * The pool never decides how work is split: callers give a range and a grain, so results
 * do not depend on the thread count. */
#ifndef NXE_THREADPOOL_H
#define NXE_THREADPOOL_H

#include <stdint.h>

#include "nxe/nxe.h"

typedef struct nxe_thread_pool nxe_thread_pool;

/* Body of a parallel loop over [begin, end). */
typedef void (*nxe_range_fn)(void *ctx, int64_t begin, int64_t end);

/* num_threads counts the calling thread: 1 starts no worker. */
nxe_status nxe_thread_pool_create(int32_t num_threads, nxe_thread_pool **out);
/* The same, with every worker pinned to the CPUs cores[0 .. num_cores) on Linux
 * (pthread_attr_setaffinity_np: a worker starts there); elsewhere the cores are ignored. The
 * caller's thread, which works on every loop too, is left where it is. */
nxe_status nxe_thread_pool_create_pinned(int32_t num_threads, const int32_t *cores,
                                         int32_t num_cores, nxe_thread_pool **out);
void nxe_thread_pool_release(nxe_thread_pool *pool);
int32_t nxe_thread_pool_size(const nxe_thread_pool *pool);

/* Items per parallel_for chunk so that a chunk holds about `target_work` units of work when
 * each item costs `work_per_item` (at least 1). */
int64_t nxe_parallel_grain(double work_per_item, double target_work);

/* `grain`, raised so that [0, n) splits into at most about two chunks per thread: for loops
 * whose items share data in cache (rows of a GEMM reading one block of B). */
int64_t nxe_parallel_grain_few_chunks(const nxe_thread_pool *pool, int64_t n, int64_t grain);

/* Runs fn over [0, n) in chunks of at least `grain` items, on the caller and the workers,
 * and returns when all chunks are done. pool may be NULL (runs inline); a loop of fewer than
 * 2 * grain items also runs inline, as one call fn(ctx, 0, n), and wakes no worker. Safe to
 * call from several threads at once and from inside fn: a caller that finds the workers busy
 * with another caller's loop runs its whole range inline on its own thread, which gives the
 * same results, since no loop's results depend on how its range is split. */
void nxe_parallel_for(nxe_thread_pool *pool, int64_t n, int64_t grain, nxe_range_fn fn, void *ctx);

#endif
