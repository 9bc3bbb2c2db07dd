/* threadpool.c — fixed workers that share one parallel-for. Chunks are claimed from an
 * atomic counter; the caller works too. Between jobs a worker spins briefly before it sleeps,
 * and so does a caller waiting for workers: a model runs hundreds of short parallel loops, and
 * waking a sleeping thread costs more than most of them.
 *
 * A worker joins a job before it reads it, and only while the job is open; the caller closes
 * the job once every chunk is claimed and then waits only for the workers that joined. A
 * worker that is asleep, still waking or descheduled (other processes on the cores) when the
 * chunks run out is not waited for: it finds the job closed and skips it. Without this a
 * batch-1 model, hundreds of loops of some microseconds each, waited at every loop for a
 * worker's wake-up or time slice, and ran several times slower on two threads than on one.
 *
 * The workers serve one caller at a time; a caller that finds them taken does not queue
 * behind it (runs of one executable from several threads would all wait on each other) but
 * runs its loop alone. */
#define _GNU_SOURCE /* pthread_attr_setaffinity_np, cpu_set_t */
#include <pthread.h>
#include <stdatomic.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "core/threadpool.h"
#include "core/core.h"

/* Polls of a spin before sleeping: with a pause each, some tens of microseconds. */
#define SPIN_POLLS 4000

#define JOB_CLOSED ((uint64_t)1 << 31)
#define JOB_JOINED_MASK (JOB_CLOSED - 1)

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

struct nxe_thread_pool {
    int32_t num_threads; /* including the caller */
    pthread_t *workers;
    int32_t num_workers;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    pthread_cond_t done;
    /* Spinning threads read these without the mutex; every change that a sleeping thread
     * must not miss (a new generation, the last worker finishing, stopping) is made or
     * followed up under the mutex, so no wake-up can be lost between a check and a wait. */
    atomic_uint_fast64_t generation; /* bumped for every job, under the mutex */
    /* The current job's admission: its generation (low 32 bits) << 32, JOB_CLOSED, and the
     * count of workers that joined it in the low bits; a worker joins by a compare-exchange,
     * so none joins after the caller closed it. */
    atomic_uint_fast64_t admission;
    atomic_int finished_workers; /* joined workers done with the current job */
    int sleeping_workers;        /* guarded by mutex */
    int caller_sleeping;         /* guarded by mutex */
    atomic_bool stopping;
    /* Set by the caller that owns the workers, from before it writes the job until every
     * worker has finished it. */
    atomic_bool taken;
    /* the current job */
    nxe_range_fn fn;
    void *ctx;
    int64_t n;
    int64_t chunk;
    atomic_int_fast64_t next;
};

static void run_chunks(nxe_thread_pool *pool)
{
    for (;;) {
        int64_t begin = atomic_fetch_add(&pool->next, pool->chunk);
        if (begin >= pool->n)
            return;
        int64_t end = begin + pool->chunk < pool->n ? begin + pool->chunk : pool->n;
        pool->fn(pool->ctx, begin, end);
    }
}

/* Waits until a job after `seen` starts or the pool stops; returns its generation. */
static uint64_t await_job(nxe_thread_pool *pool, uint64_t seen)
{
    for (int poll = 0; poll < SPIN_POLLS; poll++) {
        if (atomic_load(&pool->generation) != seen || atomic_load(&pool->stopping))
            return atomic_load(&pool->generation);
        spin_pause();
    }
    pthread_mutex_lock(&pool->mutex);
    pool->sleeping_workers++;
    while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stopping))
        pthread_cond_wait(&pool->wake, &pool->mutex);
    pool->sleeping_workers--;
    pthread_mutex_unlock(&pool->mutex);
    return atomic_load(&pool->generation);
}

/* Joins job `generation` if it is still open; false when it has closed (or been followed by
 * another, which this worker will see as a new generation). */
static bool join_job(nxe_thread_pool *pool, uint64_t generation)
{
    const uint64_t tag = (generation & 0xFFFFFFFFu) << 32;
    uint_fast64_t admission = atomic_load(&pool->admission);
    while ((admission & ~(uint64_t)JOB_JOINED_MASK) == tag)
        if (atomic_compare_exchange_weak(&pool->admission, &admission, admission + 1))
            return true;
    return false;
}

static void *worker_main(void *arg)
{
    nxe_thread_pool *pool = arg;
    uint64_t seen = 0;
    for (;;) {
        seen = await_job(pool, seen);
        if (atomic_load(&pool->stopping))
            break;
        if (!join_job(pool, seen))
            continue;
        run_chunks(pool);
        const int finished = atomic_fetch_add(&pool->finished_workers, 1) + 1;
        const uint_fast64_t admission = atomic_load(&pool->admission);
        if ((admission & JOB_CLOSED) && (uint64_t)finished == (admission & JOB_JOINED_MASK)) {
            /* The last one out of a closed job: a caller that checked before this and went to
             * sleep is waiting on `done` by the time the mutex is ours. (Before the close, the
             * caller counts the finished workers itself.) */
            pthread_mutex_lock(&pool->mutex);
            if (pool->caller_sleeping)
                pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mutex);
        }
    }
    return NULL;
}

nxe_status nxe_thread_pool_create(int32_t num_threads, nxe_thread_pool **out)
{
    return nxe_thread_pool_create_pinned(num_threads, NULL, 0, out);
}

nxe_status nxe_thread_pool_create_pinned(int32_t num_threads, const int32_t *cores,
                                         int32_t num_cores, nxe_thread_pool **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "thread pool: out must not be NULL");
    *out = NULL;
    if (num_threads < 1 || num_threads > 1024)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "thread pool: %d threads is outside [1, 1024]",
                         num_threads);
    nxe_thread_pool *pool = nxe_alloc_zeroed(sizeof *pool);
    if (!pool)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "thread pool: out of memory");
    pool->num_threads = num_threads;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (num_threads > 1) {
        pool->workers = nxe_alloc_zeroed(sizeof(pthread_t) * (size_t)(num_threads - 1));
        if (!pool->workers) {
            nxe_thread_pool_release(pool);
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "thread pool: out of memory");
        }
        pthread_attr_t attr;
        pthread_attr_t *attributes = NULL;
#ifdef __linux__
        if (cores && num_cores > 0 && pthread_attr_init(&attr) == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            for (int32_t i = 0; i < num_cores; i++)
                if (cores[i] >= 0 && cores[i] < CPU_SETSIZE)
                    CPU_SET(cores[i], &set);
            attributes = &attr;
            if (pthread_attr_setaffinity_np(&attr, sizeof set, &set) != 0) {
                pthread_attr_destroy(&attr);
                nxe_thread_pool_release(pool);
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "thread pool: the cores cannot be set as a thread's affinity");
            }
        }
#else
        (void)cores;
        (void)num_cores;
        (void)attr;
#endif
        for (int32_t i = 0; i < num_threads - 1; i++) {
            if (pthread_create(&pool->workers[i], attributes, worker_main, pool) != 0) {
                if (attributes)
                    pthread_attr_destroy(attributes);
                nxe_thread_pool_release(pool);
                return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                                 "thread pool: could not start worker %d of %d", i + 1,
                                 num_threads - 1);
            }
            pool->num_workers++;
        }
        if (attributes)
            pthread_attr_destroy(attributes);
    }
    *out = pool;
    return NXE_OK;
}

void nxe_thread_pool_release(nxe_thread_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->stopping, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (int32_t i = 0; i < pool->num_workers; i++)
        pthread_join(pool->workers[i], NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mutex);
    nxe_free(pool->workers);
    nxe_free(pool);
}

int32_t nxe_thread_pool_size(const nxe_thread_pool *pool)
{
    return pool ? pool->num_threads : 1;
}

int64_t nxe_parallel_grain(double work_per_item, double target_work)
{
    if (work_per_item >= target_work)
        return 1;
    return (int64_t)(target_work / (work_per_item + 1.0)) + 1;
}

int64_t nxe_parallel_grain_few_chunks(const nxe_thread_pool *pool, int64_t n, int64_t grain)
{
    const int64_t threads = nxe_thread_pool_size(pool);
    const int64_t share = (n + 2 * threads - 1) / (2 * threads);
    return grain < share ? share : grain;
}

void nxe_parallel_for(nxe_thread_pool *pool, int64_t n, int64_t grain, nxe_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    bool idle = false;
    /* Under two grains of work the loop runs inline: a second chunk would hold less than a
     * grain, which costs the caller more to hand out (and a sleeping worker more to wake)
     * than it saves. A 16-row LayerNorm with a grain of 15 rows used to wake a worker for one
     * row. */
    if (!pool || pool->num_workers == 0 || n < 2 * grain ||
        !atomic_compare_exchange_strong(&pool->taken, &idle, true)) {
        fn(ctx, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven work without much claiming traffic. */
    int64_t target_chunks = (int64_t)pool->num_threads * 4;
    int64_t chunk = (n + target_chunks - 1) / target_chunks;
    if (chunk < grain)
        chunk = grain;

    /* Every worker that joined the previous job has finished it (its caller waited before it
     * let go of the pool) and no other reads the job fields, so they are free to write; opening
     * the admission publishes them, and the generation bump wakes the workers. */
    pool->fn = fn;
    pool->ctx = ctx;
    pool->n = n;
    pool->chunk = chunk;
    atomic_store(&pool->next, 0);
    atomic_store(&pool->finished_workers, 0);
    const uint64_t generation = atomic_load(&pool->generation) + 1;
    atomic_store(&pool->admission, (generation & 0xFFFFFFFFu) << 32);
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->generation, generation);
    if (pool->sleeping_workers > 0)
        pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);

    run_chunks(pool);

    /* Every chunk is claimed: close the job and wait for the workers inside it only. */
    const int joined = (int)(atomic_fetch_or(&pool->admission, JOB_CLOSED) & JOB_JOINED_MASK);
    for (int poll = 0; poll < SPIN_POLLS && atomic_load(&pool->finished_workers) < joined; poll++)
        spin_pause();
    if (atomic_load(&pool->finished_workers) < joined) {
        pthread_mutex_lock(&pool->mutex);
        pool->caller_sleeping = 1;
        while (atomic_load(&pool->finished_workers) < joined)
            pthread_cond_wait(&pool->done, &pool->mutex);
        pool->caller_sleeping = 0;
        pthread_mutex_unlock(&pool->mutex);
    }
    atomic_store(&pool->taken, false);
}
