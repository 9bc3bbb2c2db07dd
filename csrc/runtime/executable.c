/* executable.c — running a compiled plan: checks the caller's descriptors, stages inputs,
 * calls each step's op and hands outputs back by copy (run) or in place (run_nocopy); times
 * each step when profiling is on.
 *
 * Runs from several threads at once are each correct: a run takes a run context (its own
 * arena, workspace, staging and value descriptors) from the executable's pool, and the plan
 * itself is only read. The pool starts with one context and grows by one whenever a run
 * finds every context in use, so it holds as many as the most runs ever under way at once
 * plus the threads still holding run_nocopy results; it shrinks only when the executable is
 * released. A host that wants less memory runs fewer calls at once. Contexts are not tied to
 * threads, except that run_nocopy leaves its context held by the calling thread, whose
 * results live there until that thread's next run (which takes the same context back).
 *
 * A run context's staging (64-byte aligned, every region 64-byte aligned):
 *   [result area: output 0, output 1, ...][input slots: input 0, input 1, ...]
 * and one created-input region per executable, where nxe_executable_create_input allocates
 * for any thread. Outputs are produced in the result area (a bound run, binding.c, writes
 * them into the caller's buffers instead). A run copies each input into its slot, except an
 * input lying entirely inside the created-input region, which is read in place. An input
 * inside a result area (a run_nocopy result) is copied, so a run never reads what it is
 * overwriting. The default capacity is one run's staging plus a created-input region with
 * room for one copy of every input. */
#define _POSIX_C_SOURCE 200809L /* pthread_rwlock_t */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "runtime/device.h"
#include "runtime/executable_internal.h"
#include "transform/bands.h"

#define STAGING_ALIGNMENT 64u

/* ---- run contexts ---- */

/* What one run writes. */
typedef struct nxe_run_context nxe_run_context;
struct nxe_run_context {
    nxe_run_context *next;
    void **data; /* per tensor: where it lives during this context's runs */
    void *arena;
    void *workspace;
    uint8_t *staging;  /* [result area][input slots] */
    nxe_value *values; /* one step's input and output descriptors, filled in for each call */
    uint64_t *timings; /* a profiled run's start and elapsed ns per step (2 * num_steps) */
    /* Guarded by the pool's lock. */
    bool busy; /* a run is using it */
    bool held; /* `holder` has run_nocopy results in it */
    pthread_t holder;
};

struct nxe_run_pool {
    pthread_mutex_t lock;      /* guards the fields after it */
    nxe_run_context *contexts; /* busy or not */
    uint64_t created_used;     /* bytes of the created-input region handed out */
    nxe_run_stats stats;
    bool profiling;              /* runs starting now record their step timings */
    uint64_t profile_generation; /* counts the times profiling was turned on */
    bool has_profile;            /* `profile` holds a run of this generation */
    uint64_t *profile;           /* that run's timings, as a context's */
    /* Runs share it, or hold it alone when a step writes a variable; reading and writing a
     * variable by name take it too. */
    pthread_rwlock_t variables;
};

static void run_context_release(nxe_run_context *context)
{
    if (!context)
        return;
    nxe_free(context->data);
    nxe_free(context->arena);
    nxe_free(context->workspace);
    nxe_free(context->staging);
    nxe_free(context->values);
    nxe_free(context->timings);
    nxe_free(context);
}

static nxe_status run_context_create(const nxe_executable *exe, nxe_run_context **out)
{
    *out = NULL;
    int32_t values = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        if (exe->steps[s].num_inputs + exe->steps[s].num_outputs > values)
            values = exe->steps[s].num_inputs + exe->steps[s].num_outputs;
    nxe_run_context *context = nxe_alloc_zeroed(sizeof *context);
    if (context) {
        context->data = nxe_alloc(sizeof(void *) * (size_t)(exe->num_tensors + 1));
        context->arena = nxe_alloc((size_t)exe->arena_bytes);
        context->workspace = nxe_alloc(exe->workspace_bytes);
        context->staging = nxe_alloc((size_t)exe->io_bytes);
        context->values = nxe_alloc(sizeof(nxe_value) * (size_t)(values + 1));
        context->timings = nxe_alloc(sizeof(uint64_t) * 2 * (size_t)(exe->num_steps + 1));
    }
    if (!context || !context->data || !context->arena || !context->workspace || !context->staging ||
        !context->values || !context->timings) {
        run_context_release(context);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "out of memory for a run's %llu-byte arena, %zu-byte workspace and "
                         "%llu-byte staging",
                         (unsigned long long)exe->arena_bytes, exe->workspace_bytes,
                         (unsigned long long)exe->io_bytes);
    }
    memcpy(context->data, exe->data, sizeof(void *) * (size_t)exe->num_tensors);
    for (int32_t i = 0; i < exe->num_tensors; i++)
        if (exe->tensors[i].in_arena)
            context->data[i] = (uint8_t *)context->arena + exe->tensors[i].arena_offset;
    for (int32_t i = 0; i < exe->num_outputs; i++)
        context->data[exe->output_ids[i]] = context->staging + exe->output_offsets[i];
    for (int32_t i = 0; i < exe->num_inputs; i++)
        context->data[exe->input_ids[i]] = context->staging + exe->input_offsets[i];
    *out = context;
    return NXE_OK;
}

/* A context for a run on this thread: the one holding this thread's run_nocopy results, else
 * an idle one, else a new one. `*was_held` says whether it held results, `*profile` whether
 * the run records its step timings: the profiling generation it belongs to, 0 for none. */
static nxe_status acquire_run_context(nxe_executable *exe, const char *where, nxe_run_context **out,
                                      bool *was_held, uint64_t *profile)
{
    const pthread_t self = pthread_self();
    nxe_run_context *context = NULL;
    pthread_mutex_lock(&exe->runs->lock);
    *profile = exe->runs->profiling ? exe->runs->profile_generation : 0;
    for (nxe_run_context *c = exe->runs->contexts; c; c = c->next) {
        if (c->held && pthread_equal(c->holder, self)) {
            context = c;
            break;
        }
        if (!context && !c->busy && !c->held)
            context = c;
    }
    if (context) {
        *was_held = context->held;
        context->busy = true;
        context->held = false;
    }
    pthread_mutex_unlock(&exe->runs->lock);
    if (context) {
        *out = context;
        return NXE_OK;
    }
    /* Allocated outside the lock: other runs go on meanwhile. */
    *was_held = false;
    nxe_status status = run_context_create(exe, &context);
    if (status != NXE_OK) {
        nxe_error_prefix("%s: ", where);
        return status;
    }
    context->busy = true;
    pthread_mutex_lock(&exe->runs->lock);
    context->next = exe->runs->contexts;
    exe->runs->contexts = context;
    pthread_mutex_unlock(&exe->runs->lock);
    *out = context;
    return NXE_OK;
}

/* Gives the context back; `hold`: it keeps this thread's run_nocopy results. `delta` (NULL
 * for a failed run) is added to the statistics. A run that recorded its step timings for the
 * current profiling generation (`profile`) makes them the kept profile; one that began before
 * profiling was last turned on does not. */
static void release_run_context(nxe_executable *exe, nxe_run_context *context, bool hold,
                                const nxe_run_stats *delta, uint64_t profile)
{
    nxe_run_pool *runs = exe->runs;
    pthread_mutex_lock(&runs->lock);
    context->busy = false;
    context->held = hold;
    if (hold)
        context->holder = pthread_self();
    if (delta) {
        runs->stats.runs++;
        runs->stats.inputs_copied += delta->inputs_copied;
        runs->stats.inputs_in_place += delta->inputs_in_place;
        runs->stats.bytes_copied_in += delta->bytes_copied_in;
        runs->stats.bytes_copied_out += delta->bytes_copied_out;
        if (profile != 0 && profile == runs->profile_generation) {
            memcpy(runs->profile, context->timings, sizeof(uint64_t) * 2 * (size_t)exe->num_steps);
            runs->has_profile = true;
        }
    }
    pthread_mutex_unlock(&runs->lock);
}

static nxe_run_pool *run_pool_create(void)
{
    nxe_run_pool *runs = nxe_alloc_zeroed(sizeof *runs);
    if (!runs)
        return NULL;
    if (pthread_mutex_init(&runs->lock, NULL) != 0) {
        nxe_free(runs);
        return NULL;
    }
    if (pthread_rwlock_init(&runs->variables, NULL) != 0) {
        pthread_mutex_destroy(&runs->lock);
        nxe_free(runs);
        return NULL;
    }
    runs->stats.struct_size = sizeof(nxe_run_stats);
    return runs;
}

static void run_pool_release(nxe_run_pool *runs)
{
    if (!runs)
        return;
    while (runs->contexts) {
        nxe_run_context *next = runs->contexts->next;
        run_context_release(runs->contexts);
        runs->contexts = next;
    }
    nxe_free(runs->profile);
    pthread_rwlock_destroy(&runs->variables);
    pthread_mutex_destroy(&runs->lock);
    nxe_free(runs);
}

nxe_status nxe_executable_alloc(int32_t num_tensors, int32_t num_steps, nxe_executable **out)
{
    *out = NULL;
    nxe_executable *exe = nxe_alloc_zeroed(sizeof *exe);
    if (!exe)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "executable: out of memory");
    exe->runs = run_pool_create();
    if (!exe->runs) {
        nxe_free(exe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "executable: out of memory");
    }
    exe->tensors = nxe_alloc_zeroed(sizeof(nxe_exe_tensor) * (size_t)(num_tensors + 1));
    exe->data = nxe_alloc_zeroed(sizeof(void *) * (size_t)(num_tensors + 1));
    exe->steps = nxe_alloc_zeroed(sizeof(nxe_exe_step) * (size_t)(num_steps + 1));
    exe->num_tensors = num_tensors;
    exe->num_steps = num_steps;
    if (!exe->tensors || !exe->data || !exe->steps) {
        nxe_executable_release(exe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "executable: out of memory");
    }
    for (int32_t i = 0; i < num_tensors; i++)
        exe->tensors[i].constant = -1;
    exe->kernel_abi = NXE_KERNEL_ABI_VERSION;
    memcpy(exe->isa, NXE_ISA_REF, sizeof NXE_ISA_REF);
    *out = exe;
    return NXE_OK;
}

NXE_API void nxe_executable_release(nxe_executable *exe)
{
    if (!exe)
        return;
    if (exe->remote)
        nxe_device_remote_unload(exe);
    nxe_thread_pool_release(exe->pool);
    run_pool_release(exe->runs);
    for (int32_t i = 0; exe->tensors && i < exe->num_tensors; i++) {
        nxe_free(exe->tensors[i].name);
        nxe_free(exe->tensors[i].scales);
        if (exe->tensors[i].owns_storage)
            nxe_free(exe->tensors[i].storage);
        if (exe->tensors[i].owns_initial)
            nxe_free(exe->tensors[i].initial);
    }
    for (int32_t c = 0; exe->constants && c < exe->num_constants; c++)
        if (exe->constants[c].owned)
            nxe_free(exe->constants[c].data);
    for (int32_t s = 0; exe->steps && s < exe->num_steps; s++)
        nxe_exe_step_clear(&exe->steps[s]);
    nxe_free(exe->tensors);
    nxe_free(exe->constants);
    nxe_free(exe->data);
    nxe_free(exe->steps);
    nxe_free(exe->input_ids);
    nxe_free(exe->output_ids);
    nxe_free(exe->created);
    nxe_free(exe->output_offsets);
    nxe_free(exe->input_offsets);
    nxe_file_map_release(&exe->file);
    nxe_free(exe);
}

bool nxe_isa_runs_here(const char *isa)
{
    return strcmp(isa, NXE_ISA_REF) == 0;
}

static void describe(const nxe_exe_tensor *t, nxe_tensor_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->data_size = t->bytes;
    desc->ndim = t->ndim;
    nxe_dtype_to_dlpack(t->dtype, &desc->dtype_code, &desc->dtype_bits);
    memcpy(desc->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

/* ---- staging ---- */

static uint64_t staging_round(uint64_t bytes)
{
    return (bytes + STAGING_ALIGNMENT - 1) / STAGING_ALIGNMENT * STAGING_ALIGNMENT;
}

/* Adds the rounded sizes of tensors `ids` to *total; false when the sum overflows (tensor
 * sizes are bounded by the per-tensor limit, but their count is not). */
static bool add_io_area(const nxe_executable *exe, const int32_t *ids, int32_t count,
                        uint64_t *total)
{
    for (int32_t i = 0; i < count; i++) {
        uint64_t rounded;
        if (!nxe_checked_align_u64(exe->tensors[ids[i]].bytes, STAGING_ALIGNMENT, &rounded) ||
            !nxe_checked_add_u64(*total, rounded, total))
            return false;
    }
    return true;
}

nxe_status nxe_executable_init_staging(nxe_executable *exe, uint64_t capacity, uint64_t max_bytes,
                                       const char *where)
{
    /* The least capacity is the result area and the input slots; the default adds room for
     * one created copy of every input. */
    uint64_t minimum = 0, fallback = 0;
    bool counted = add_io_area(exe, exe->output_ids, exe->num_outputs, &minimum) &&
                   add_io_area(exe, exe->input_ids, exe->num_inputs, &minimum);
    fallback = minimum;
    counted = counted && add_io_area(exe, exe->input_ids, exe->num_inputs, &fallback);
    if (capacity == 0)
        capacity = fallback;
    if (counted && capacity < minimum)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: staging_bytes %llu is less than the %llu bytes the outputs and the "
                         "input slots need",
                         where, (unsigned long long)capacity, (unsigned long long)minimum);
    uint64_t run_bytes = 0;
    if (!counted || !nxe_checked_align_u64(capacity, STAGING_ALIGNMENT, &capacity) ||
        !nxe_checked_add_u64(capacity, exe->arena_bytes, &run_bytes) ||
        !nxe_checked_add_u64(run_bytes, exe->workspace_bytes, &run_bytes) ||
        run_bytes > max_bytes || capacity > SIZE_MAX - STAGING_ALIGNMENT)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "%s: a run needs %s%llu bytes (arena %llu, staging %s%llu), above the "
                         "limit of %llu bytes per executable (raise nxe_limits.max_arena_bytes)",
                         where, counted ? "" : "more than ",
                         (unsigned long long)(counted ? run_bytes : max_bytes),
                         (unsigned long long)exe->arena_bytes, counted ? "" : "more than ",
                         (unsigned long long)(counted ? capacity : max_bytes),
                         (unsigned long long)max_bytes);
    exe->output_offsets = nxe_alloc(sizeof(uint64_t) * (size_t)(exe->num_outputs + 1));
    exe->input_offsets = nxe_alloc(sizeof(uint64_t) * (size_t)(exe->num_inputs + 1));
    /* Never zeroed as a whole: only what create_input hands out is cleared, so a large
     * capacity costs address space, not pages. */
    exe->created = nxe_alloc((size_t)(capacity - minimum));
    exe->runs->profile = nxe_alloc(sizeof(uint64_t) * 2 * (size_t)(exe->num_steps + 1));
    if (!exe->output_offsets || !exe->input_offsets || !exe->created || !exe->runs->profile)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "%s: out of memory for a %llu-byte staging "
                         "buffer",
                         where, (unsigned long long)capacity);
    uint64_t offset = 0;
    for (int32_t i = 0; i < exe->num_outputs; i++) {
        exe->output_offsets[i] = offset;
        offset += staging_round(exe->tensors[exe->output_ids[i]].bytes);
    }
    for (int32_t i = 0; i < exe->num_inputs; i++) {
        exe->input_offsets[i] = offset;
        offset += staging_round(exe->tensors[exe->input_ids[i]].bytes);
    }
    exe->io_bytes = offset;
    exe->staging_bytes = capacity;
    for (int32_t s = 0; s < exe->num_steps; s++)
        for (int32_t j = 0; j < exe->steps[s].num_outputs; j++)
            if (exe->tensors[exe->steps[s].output_ids[j]].kind == NXE_TENSOR_VARIABLE)
                exe->writes_variables = true;
    /* The first run context is made now, so that a caller running from one thread allocates
     * nothing per run and learns of a lack of memory here. */
    nxe_status status = run_context_create(exe, &exe->runs->contexts);
    if (status != NXE_OK)
        nxe_error_prefix("%s: ", where);
    return status;
}

NXE_API nxe_status nxe_executable_create_input(nxe_executable *exe, int32_t index,
                                               nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_create_input";
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!exe || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "desc" : "exe");
    if (index < 0 || index >= exe->num_inputs)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is outside [0, %d)", where, index,
                         exe->num_inputs);
    const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[index]];
    const uint64_t needed = staging_round(t->bytes);
    const uint64_t region = exe->staging_bytes - exe->io_bytes;
    pthread_mutex_lock(&exe->runs->lock);
    const uint64_t used = exe->runs->created_used;
    if (needed <= region - used)
        exe->runs->created_used += needed;
    pthread_mutex_unlock(&exe->runs->lock);
    if (needed > region - used)
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                         "%s: input %d ('%s') needs %llu bytes but the staging buffer has "
                         "%llu of its capacity of %llu bytes in use (%llu free); call "
                         "nxe_executable_reset_staging or load with a larger staging_bytes",
                         where, index, t->name, (unsigned long long)needed,
                         (unsigned long long)(exe->io_bytes + used),
                         (unsigned long long)exe->staging_bytes,
                         (unsigned long long)(region - used));
    /* [used, used + needed) is this call's alone now. */
    uint8_t *data = exe->created + used;
    memset(data, 0, (size_t)needed);
    describe(t, desc);
    desc->data = data;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_reset_staging(nxe_executable *exe)
{
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_reset_staging: exe is NULL");
    pthread_mutex_lock(&exe->runs->lock);
    exe->runs->created_used = 0;
    pthread_mutex_unlock(&exe->runs->lock);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_stats(const nxe_executable *exe, nxe_run_stats *stats)
{
    const char *where = "nxe_executable_stats";
    if (!exe || !stats)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         exe ? "stats" : "exe");
    if (stats->struct_size < sizeof(nxe_run_stats))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: stats.struct_size is %u, expected at least %zu", where,
                         stats->struct_size, sizeof(nxe_run_stats));
    uint32_t struct_size = stats->struct_size;
    pthread_mutex_lock(&exe->runs->lock);
    *stats = exe->runs->stats;
    stats->staging_used = exe->io_bytes + exe->runs->created_used;
    pthread_mutex_unlock(&exe->runs->lock);
    stats->staging_bytes = exe->staging_bytes;
    stats->struct_size = struct_size;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_get_info(const nxe_executable *exe, nxe_executable_info *info)
{
    const char *where = "nxe_executable_get_info";
    if (!exe || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "info" : "exe");
    if (info->struct_size < sizeof(nxe_executable_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_executable_info));
    uint32_t struct_size = info->struct_size;
    *info = (nxe_executable_info){.struct_size = struct_size};
    memcpy(info->fingerprint, exe->fingerprint, sizeof info->fingerprint);
    memcpy(info->isa, exe->isa, sizeof info->isa);
    info->kernel_abi = exe->kernel_abi;
    info->loaded = exe->loaded;
    info->recompiled = exe->recompiled;
    info->num_constants = exe->num_constants;
    return NXE_OK;
}

/* ---- description ---- */

NXE_API nxe_status nxe_executable_io_count(const nxe_executable *exe, int32_t *num_inputs,
                                           int32_t *num_outputs)
{
    if (num_inputs)
        *num_inputs = 0;
    if (num_outputs)
        *num_outputs = 0;
    if (!exe || !num_inputs || !num_outputs)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_io_count: %s is NULL",
                         !exe          ? "exe"
                         : !num_inputs ? "num_inputs"
                                       : "num_outputs");
    *num_inputs = exe->num_inputs;
    *num_outputs = exe->num_outputs;
    return NXE_OK;
}

static nxe_status io_desc(const nxe_executable *exe, int32_t index, nxe_tensor_desc *desc,
                          const char **name, bool input)
{
    const char *where = input ? "nxe_executable_input_desc" : "nxe_executable_output_desc";
    if (name)
        *name = NULL;
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!exe || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "desc" : "exe");
    int32_t count = input ? exe->num_inputs : exe->num_outputs;
    if (index < 0 || index >= count)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is outside [0, %d)", where, index,
                         count);
    const nxe_exe_tensor *t = &exe->tensors[(input ? exe->input_ids : exe->output_ids)[index]];
    describe(t, desc);
    if (name)
        *name = t->name;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_input_desc(const nxe_executable *exe, int32_t index,
                                             nxe_tensor_desc *desc, const char **name)
{
    return io_desc(exe, index, desc, name, true);
}

NXE_API nxe_status nxe_executable_output_desc(const nxe_executable *exe, int32_t index,
                                              nxe_tensor_desc *desc, const char **name)
{
    return io_desc(exe, index, desc, name, false);
}

/* A caller's descriptor must match the tensor exactly: dtype, rank, shape, enough bytes. */
static nxe_status check_desc(const nxe_exe_tensor *t, const nxe_tensor_desc *desc,
                             const char *where, const char *role, int32_t index)
{
    int32_t dtype = NXE_DTYPE_NONE;
    if (desc->reserved != 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: %s %d ('%s'): reserved field is %d, must be 0", where, role, index,
                         t->name, desc->reserved);
    if (nxe_dtype_from_dlpack(desc->dtype_code, desc->dtype_bits, &dtype) != NXE_OK ||
        dtype != t->dtype)
        return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                         "%s: %s %d ('%s') is %s, but the descriptor says DLPack code %d, %d bits",
                         where, role, index, t->name, nxe_dtype_name(t->dtype), desc->dtype_code,
                         desc->dtype_bits);
    bool same = desc->ndim == t->ndim;
    for (int32_t i = 0; same && i < t->ndim; i++)
        same = desc->shape[i] == t->shape[i];
    if (!same) {
        char expected[128], given[128];
        int32_t given_ndim = desc->ndim < 0 || desc->ndim > NXE_MAX_RANK ? -1 : desc->ndim;
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "%s: %s %d ('%s') has shape %s, descriptor has %s%s", where, role, index,
                         t->name, nxe_shape_str(t->ndim, t->shape, expected, sizeof expected),
                         nxe_shape_str(given_ndim, desc->shape, given, sizeof given),
                         given_ndim < 0 ? " (invalid rank)" : "");
    }
    if (desc->data_size < t->bytes)
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                         "%s: %s %d ('%s') needs %zu bytes, the descriptor holds %zu", where, role,
                         index, t->name, t->bytes, desc->data_size);
    if (!desc->data && t->bytes > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s %d ('%s') has NULL data", where, role,
                         index, t->name);
    return NXE_OK;
}

/* ---- running ---- */

static bool within(const void *region, uint64_t region_bytes, const void *data, size_t bytes)
{
    uintptr_t base = (uintptr_t)region, p = (uintptr_t)data;
    return p >= base && p - base <= region_bytes && bytes <= region_bytes - (p - base);
}

static bool overlaps(const void *region, uint64_t region_bytes, const void *data, size_t bytes)
{
    uintptr_t base = (uintptr_t)region, p = (uintptr_t)data;
    return bytes > 0 && region_bytes > 0 && p < base + region_bytes && base < p + bytes;
}

/* Every descriptor is checked before anything is copied, so a refused run changes nothing. */
static nxe_status check_run_args(const nxe_executable *exe, const nxe_tensor_desc *inputs,
                                 int32_t num_inputs, const nxe_tensor_desc *outputs,
                                 int32_t num_outputs, bool outputs_are_buffers, const char *where)
{
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: exe is NULL", where);
    if (!exe->created)
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: the executable has no staging buffer",
                         where);
    if (num_inputs != exe->num_inputs || num_outputs != exe->num_outputs)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the executable takes %d inputs and %d outputs, got %d and %d", where,
                         exe->num_inputs, exe->num_outputs, num_inputs, num_outputs);
    if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         num_inputs > 0 && !inputs ? "inputs" : "outputs");
    for (int32_t i = 0; i < num_inputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[i]];
        nxe_status status = check_desc(t, &inputs[i], where, "input", i);
        if (status != NXE_OK)
            return status;
    }
    for (int32_t i = 0; outputs_are_buffers && i < num_outputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->output_ids[i]];
        nxe_status status = check_desc(t, &outputs[i], where, "output", i);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* Copying an input into a slot must not overwrite another input still to be copied. Only
 * pointer arithmetic on staging memory the caller was never given lands here. */
static nxe_status check_inputs_outside_slots(const nxe_executable *exe,
                                             const nxe_run_context *context,
                                             const nxe_tensor_desc *inputs, const char *where)
{
    if (exe->num_inputs == 0)
        return NXE_OK;
    const uint8_t *slots = context->staging + exe->input_offsets[0];
    const uint64_t slots_bytes = exe->io_bytes - exe->input_offsets[0];
    for (int32_t i = 0; i < exe->num_inputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[i]];
        if (overlaps(slots, slots_bytes, inputs[i].data, t->bytes))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input %d ('%s') overlaps the executable's input slots; pass "
                             "caller memory or a buffer from nxe_executable_create_input",
                             where, i, t->name);
    }
    return NXE_OK;
}

/* Points each input at its data: in place when it lies inside the created-input region
 * (suitably aligned for its dtype), else copied into its slot. */
static void stage_inputs(const nxe_executable *exe, nxe_run_context *context,
                         const nxe_tensor_desc *inputs, nxe_run_stats *delta)
{
    const uint64_t region = exe->staging_bytes - exe->io_bytes;
    for (int32_t i = 0; i < exe->num_inputs; i++) {
        int32_t id = exe->input_ids[i];
        const nxe_exe_tensor *t = &exe->tensors[id];
        const void *data = inputs[i].data;
        size_t element = nxe_dtype_size(t->dtype);
        /* The whole region, not just what is handed out now: which bytes a run reads does
         * not depend on it, and another thread may be creating or resetting meanwhile. */
        if (t->bytes > 0 && (uintptr_t)data % element == 0 &&
            within(exe->created, region, data, t->bytes)) {
            context->data[id] = (void *)(uintptr_t)data;
            delta->inputs_in_place++;
            continue;
        }
        uint8_t *slot = context->staging + exe->input_offsets[i];
        if (t->bytes > 0)
            memcpy(slot, data, t->bytes);
        context->data[id] = slot;
        delta->inputs_copied++;
        delta->bytes_copied_in += t->bytes;
    }
}

/* Whether every output of the step has no elements: then it has nothing to write, however many
 * lanes its other dimensions count (a [0, 1, 2^60] input would walk 2^60 empty ones). */
static bool outputs_empty(const nxe_exe_step *step)
{
    for (int32_t j = 0; j < step->num_outputs; j++)
        if (nxe_value_numel(&step->output_values[j]) != 0)
            return false;
    return step->num_outputs > 0;
}

/* The step's descriptors are shared by every run: this run's copies, in the context's
 * scratch values, carry its data. */
static nxe_value *bind_step(const nxe_exe_step *step, nxe_run_context *context)
{
    nxe_value *inputs = context->values, *outputs = context->values + step->num_inputs;
    memcpy(inputs, step->input_values, sizeof(nxe_value) * (size_t)step->num_inputs);
    memcpy(outputs, step->output_values, sizeof(nxe_value) * (size_t)step->num_outputs);
    for (int32_t j = 0; j < step->num_inputs; j++)
        if (step->input_ids[j] >= 0)
            inputs[j].data = context->data[step->input_ids[j]];
    for (int32_t j = 0; j < step->num_outputs; j++)
        outputs[j].data = context->data[step->output_ids[j]];
    return inputs;
}

static nxe_status step_status(const nxe_exe_step *step, nxe_status status, const char *where)
{
    if (status != NXE_OK)
        nxe_error_prefix("%s: op '%s' ('%s'): ", where, nxe_node_type(&step->node),
                         step->node.name);
    return status;
}

/* Runs step `s` in `context`. */
static nxe_status run_step(const nxe_executable *exe, nxe_run_context *context, int32_t s,
                           const char *where)
{
    const nxe_exe_step *step = &exe->steps[s];
    if (outputs_empty(step))
        return NXE_OK;
    nxe_value *inputs = bind_step(step, context), *outputs = inputs + step->num_inputs;
    nxe_status status =
        step->prepared ? step->node.def->run_prepared(step->params, step->prepared, &step->fused,
                                                      context->workspace, inputs, step->num_inputs,
                                                      outputs, step->num_outputs, exe->pool)
                       : step->node.def->run(step->params, inputs, step->num_inputs, outputs,
                                             step->num_outputs, exe->pool);
    return step_status(step, status, where);
}

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static int64_t round_up_rows(int64_t rows, int64_t unit, int64_t limit)
{
    const int64_t rounded = (rows + unit - 1) / unit * unit;
    return rounded < limit ? rounded : limit;
}

/* Runs the chain that starts at step `head` (transform/bands.c) band by band: for each band
 * of the last step's rows, each step, first to last, adds the rows the next one reads (its
 * band and the next step's halo below it). `timings`, when profiling, receives each step's
 * first start and its summed time, relative to `begin`. */
static nxe_status run_chain(const nxe_executable *exe, nxe_run_context *context, int32_t head,
                            uint64_t *timings, uint64_t begin, const char *where)
{
    const nxe_exe_step *steps = exe->steps + head;
    const int32_t n = steps[0].band_steps;
    int64_t done[NXE_BAND_MAX_STEPS] = {0}, want[NXE_BAND_MAX_STEPS];
    const int64_t rows = steps[n - 1].band.rows;
    for (int64_t target = steps[0].band_rows; done[n - 1] < rows; target += steps[0].band_rows) {
        want[n - 1] = round_up_rows(target, steps[n - 1].band.row_unit, rows);
        for (int32_t i = n - 2; i >= 0; i--)
            want[i] = round_up_rows(want[i + 1] + steps[i + 1].band.halo_bottom,
                                    steps[i].band.row_unit, steps[i].band.rows);
        for (int32_t i = 0; i < n; i++) {
            if (want[i] <= done[i])
                continue;
            const nxe_exe_step *step = &steps[i];
            const uint64_t start = timings ? monotonic_ns() : 0;
            nxe_value *inputs = bind_step(step, context);
            nxe_status status = step->node.def->run_rows(
                step->params, step->prepared, &step->fused, context->workspace, inputs,
                step->num_inputs, inputs + step->num_inputs, step->num_outputs, exe->pool, done[i],
                want[i]);
            if (status != NXE_OK)
                return step_status(step, status, where);
            if (timings) {
                uint64_t *mine = timings + 2 * (head + i);
                if (done[i] == 0)
                    mine[0] = start - begin, mine[1] = 0;
                mine[1] += monotonic_ns() - start;
            }
            done[i] = want[i];
        }
    }
    return NXE_OK;
}

/* Runs every step; `profile`: records each step's start and elapsed time in the context's
 * timings, one clock read per step (the step's share of the loop included), so that a run
 * without profiling tests the flag once. */
static nxe_status run_steps(const nxe_executable *exe, nxe_run_context *context, bool profile,
                            const char *where)
{
    nxe_status status = NXE_OK;
    if (!profile) {
        for (int32_t s = 0; status == NXE_OK && s < exe->num_steps; s++) {
            if (exe->steps[s].band_steps) {
                status = run_chain(exe, context, s, NULL, 0, where);
                s += exe->steps[s].band_steps - 1;
            } else {
                status = run_step(exe, context, s, where);
            }
        }
        return status;
    }
    const uint64_t begin = monotonic_ns();
    uint64_t previous = begin;
    for (int32_t s = 0; status == NXE_OK && s < exe->num_steps; s++) {
        if (exe->steps[s].band_steps) {
            status = run_chain(exe, context, s, context->timings, begin, where);
            s += exe->steps[s].band_steps - 1;
            previous = monotonic_ns();
            continue;
        }
        status = run_step(exe, context, s, where);
        const uint64_t now = monotonic_ns();
        context->timings[2 * s] = previous - begin;
        context->timings[2 * s + 1] = now - previous;
        previous = now;
    }
    return status;
}

/* One run in a context of its own. `outputs` are caller buffers to copy into, or, with
 * `nocopy`, descriptors to point at the results, which stay in the context. */
static nxe_status run(nxe_executable *exe, const nxe_tensor_desc *inputs, int32_t num_inputs,
                      nxe_tensor_desc *outputs, int32_t num_outputs, bool nocopy, const char *where)
{
    nxe_status status =
        check_run_args(exe, inputs, num_inputs, outputs, num_outputs, !nocopy, where);
    if (status != NXE_OK)
        return status;
    if (exe->remote)
        return nocopy ? nxe_error(NXE_ERROR_UNSUPPORTED,
                                  "%s: the executable runs on a remote device; its results "
                                  "arrive in the caller's buffers (nxe_executable_run)",
                                  where)
                      : nxe_device_remote_run(exe, inputs, num_inputs, outputs, num_outputs, where);
    nxe_run_context *context;
    bool was_held;
    uint64_t profile;
    status = acquire_run_context(exe, where, &context, &was_held, &profile);
    if (status != NXE_OK)
        return status;
    status = check_inputs_outside_slots(exe, context, inputs, where);
    if (status != NXE_OK) {
        release_run_context(exe, context, was_held, NULL, 0);
        return status;
    }
    nxe_run_stats delta = {0};
    if (exe->writes_variables)
        pthread_rwlock_wrlock(&exe->runs->variables);
    else
        pthread_rwlock_rdlock(&exe->runs->variables);
    stage_inputs(exe, context, inputs, &delta);
    status = run_steps(exe, context, profile != 0, where);
    pthread_rwlock_unlock(&exe->runs->variables);
    for (int32_t i = 0; status == NXE_OK && i < num_outputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->output_ids[i]];
        uint8_t *result = context->staging + exe->output_offsets[i];
        if (nocopy) {
            describe(t, &outputs[i]);
            outputs[i].data = result;
            continue;
        }
        /* memmove: the caller may hand back staging memory (a created input) as a buffer. */
        if (t->bytes > 0)
            memmove(outputs[i].data, result, t->bytes);
        delta.bytes_copied_out += t->bytes;
    }
    release_run_context(exe, context, nocopy && status == NXE_OK, status == NXE_OK ? &delta : NULL,
                        profile);
    return status;
}

NXE_API nxe_status nxe_executable_run(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                      int32_t num_inputs, nxe_tensor_desc *outputs,
                                      int32_t num_outputs)
{
    return run(exe, inputs, num_inputs, outputs, num_outputs, false, "nxe_executable_run");
}

NXE_API nxe_status nxe_executable_run_nocopy(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                             int32_t num_inputs, nxe_tensor_desc *outputs,
                                             int32_t num_outputs)
{
    if (outputs && exe && num_outputs == exe->num_outputs)
        memset(outputs, 0, sizeof *outputs * (size_t)num_outputs);
    return run(exe, inputs, num_inputs, outputs, num_outputs, true, "nxe_executable_run_nocopy");
}

/* ---- variables and memory ---- */

static nxe_status find_variable(nxe_executable *exe, const char *name, const char *where,
                                nxe_exe_tensor **out)
{
    *out = NULL;
    if (!exe || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "name" : "exe");
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        if (exe->tensors[i].kind == NXE_TENSOR_VARIABLE &&
            strcmp(exe->tensors[i].name, name) == 0) {
            if (!exe->tensors[i].storage)
                return nxe_error(NXE_ERROR_NOT_FOUND,
                                 "%s: variable '%s' is not used by any op and was not kept", where,
                                 name);
            *out = &exe->tensors[i];
            return NXE_OK;
        }
    }
    return nxe_error(NXE_ERROR_NOT_FOUND, "%s: the executable has no variable named '%s'", where,
                     name);
}

NXE_API nxe_status nxe_executable_read_variable(nxe_executable *exe, const char *name,
                                                nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_read_variable";
    nxe_exe_tensor *t;
    nxe_status status = find_variable(exe, name, where, &t);
    if (status != NXE_OK)
        return status;
    if (!desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", where);
    status = check_desc(t, desc, where, "variable", 0);
    if (status != NXE_OK)
        return status;
    pthread_rwlock_rdlock(&exe->runs->variables);
    memcpy(desc->data, t->storage, t->bytes);
    pthread_rwlock_unlock(&exe->runs->variables);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_write_variable(nxe_executable *exe, const char *name,
                                                 const nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_write_variable";
    nxe_exe_tensor *t;
    nxe_status status = find_variable(exe, name, where, &t);
    if (status != NXE_OK)
        return status;
    if (!desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", where);
    status = check_desc(t, desc, where, "variable", 0);
    if (status != NXE_OK)
        return status;
    pthread_rwlock_wrlock(&exe->runs->variables);
    memmove(t->storage, desc->data, t->bytes);
    pthread_rwlock_unlock(&exe->runs->variables);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_reset_variable(nxe_executable *exe, const char *name)
{
    const char *where = "nxe_executable_reset_variable";
    nxe_exe_tensor *t = NULL;
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: exe is NULL", where);
    if (name) {
        nxe_status status = find_variable(exe, name, where, &t);
        if (status != NXE_OK)
            return status;
    }
    pthread_rwlock_wrlock(&exe->runs->variables);
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        nxe_exe_tensor *v = &exe->tensors[i];
        if ((t ? v == t : v->kind == NXE_TENSOR_VARIABLE) && v->storage && v->initial &&
            v->bytes > 0)
            memcpy(v->storage, v->initial, v->bytes);
    }
    pthread_rwlock_unlock(&exe->runs->variables);
    return NXE_OK;
}

/* Bytes the executable holds now: its constants and variables (owned, or mapped from the
 * binary it was loaded from), its packed weights, its created-input region and, for every run
 * context the pool holds, the arena, workspace and staging. Heap blocks count as the allocator
 * sized them. */
static uint64_t resident_bytes(const nxe_executable *exe)
{
    uint64_t bytes = nxe_alloc_usable_size(exe->created);
    for (int32_t c = 0; c < exe->num_constants; c++)
        bytes += exe->constants[c].owned ? nxe_alloc_usable_size(exe->constants[c].data)
                                         : exe->constants[c].bytes;
    for (int32_t i = 0; i < exe->num_tensors; i++)
        if (exe->tensors[i].owns_storage)
            bytes += nxe_alloc_usable_size(exe->tensors[i].storage);
    for (int32_t i = 0; i < exe->num_tensors; i++)
        if (exe->tensors[i].owns_initial)
            bytes += nxe_alloc_usable_size(exe->tensors[i].initial);
    for (int32_t s = 0; s < exe->num_steps; s++)
        bytes += nxe_alloc_usable_size(exe->steps[s].prepared);
    pthread_mutex_lock(&exe->runs->lock);
    for (const nxe_run_context *c = exe->runs->contexts; c; c = c->next)
        bytes += nxe_alloc_usable_size(c->arena) + nxe_alloc_usable_size(c->workspace) +
                 nxe_alloc_usable_size(c->staging) + nxe_alloc_usable_size(c->data) +
                 nxe_alloc_usable_size(c->values) + nxe_alloc_usable_size(c->timings);
    pthread_mutex_unlock(&exe->runs->lock);
    return bytes;
}

NXE_API nxe_status nxe_executable_memory_info(const nxe_executable *exe, nxe_memory_info *info)
{
    /* A 0.5 caller's struct ends before resident_bytes. */
    const size_t size_0_5 = offsetof(nxe_memory_info, resident_bytes);
    if (!exe || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_memory_info: %s is NULL",
                         exe ? "info" : "exe");
    if (info->struct_size < size_0_5)
        return nxe_error(
            NXE_ERROR_INVALID_ARGUMENT,
            "nxe_executable_memory_info: info.struct_size is %u, expected at least %zu",
            info->struct_size, size_0_5);
    uint32_t struct_size = info->struct_size;
    nxe_memory_info result = {.struct_size = struct_size};
    result.arena_bytes = exe->arena_bytes;
    result.transient_bytes = exe->transient_bytes;
    result.constant_bytes = exe->constant_bytes;
    result.num_threads = nxe_thread_pool_size(exe->pool);
    result.num_steps = exe->num_steps;
    if (struct_size >= sizeof(nxe_memory_info))
        result.resident_bytes = resident_bytes(exe);
    memcpy(info, &result, struct_size < sizeof result ? struct_size : sizeof result);
    return NXE_OK;
}

/* ---- profiling ---- */

NXE_API nxe_status nxe_executable_set_profiling(nxe_executable *exe, int32_t enable)
{
    const char *where = "nxe_executable_set_profiling";
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: exe is NULL", where);
    if (!exe->created)
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: the executable has no staging buffer",
                         where);
    pthread_mutex_lock(&exe->runs->lock);
    if (enable && !exe->runs->profiling) {
        exe->runs->profile_generation++;
        exe->runs->has_profile = false;
    }
    exe->runs->profiling = enable != 0;
    pthread_mutex_unlock(&exe->runs->lock);
    return NXE_OK;
}

/* The first `ndim` dimensions of a value into a profile's shape, -1 for an absent value. */
static int32_t profile_shape(const nxe_value *value, int64_t shape[NXE_MAX_RANK])
{
    if (!value || value->dtype == NXE_DTYPE_NONE)
        return -1;
    memcpy(shape, value->shape, sizeof(int64_t) * (size_t)value->ndim);
    return value->ndim;
}

static void describe_profile_step(const nxe_executable *exe, int32_t s, const uint64_t *timings,
                                  nxe_profile_step *out)
{
    const nxe_exe_step *step = &exe->steps[s];
    *out = (nxe_profile_step){.struct_size = out->struct_size};
    out->index = s;
    out->op_type = nxe_node_type(&step->node);
    out->op_name = step->node.name ? step->node.name : "";
    if (step->prepared && step->node.def->kernel_name)
        step->node.def->kernel_name(step->prepared, out->kernel, sizeof out->kernel);
    else
        memcpy(out->kernel, "reference", sizeof "reference");
    out->num_inputs = step->num_inputs;
    out->num_outputs = step->num_outputs;
    out->input_ndim =
        profile_shape(step->num_inputs > 0 ? &step->input_values[0] : NULL, out->input_shape);
    out->output_ndim =
        profile_shape(step->num_outputs > 0 ? &step->output_values[0] : NULL, out->output_shape);
    out->start_ns = timings[2 * s];
    out->elapsed_ns = timings[2 * s + 1];
}

NXE_API nxe_status nxe_executable_get_profile(const nxe_executable *exe, nxe_profile_step *steps,
                                              int32_t capacity, int32_t *count)
{
    const char *where = "nxe_executable_get_profile";
    if (count)
        *count = 0;
    if (!exe || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         exe ? "count" : "exe");
    if (steps && capacity < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: capacity is %d", where, capacity);
    /* The stride of the caller's array: a later, larger struct keeps every element aligned. */
    if (steps && capacity > 0 &&
        (steps[0].struct_size < sizeof(nxe_profile_step) ||
         steps[0].struct_size % _Alignof(nxe_profile_step) != 0))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: steps[0].struct_size is %u, expected at least %zu and a multiple "
                         "of %zu",
                         where, steps[0].struct_size, sizeof(nxe_profile_step),
                         _Alignof(nxe_profile_step));
    if (!exe->runs->profile)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: the executable cannot run, so has no profile",
                         where);
    pthread_mutex_lock(&exe->runs->lock);
    const bool has_profile = exe->runs->has_profile;
    if (has_profile && steps && capacity >= exe->num_steps) {
        const size_t stride = steps[0].struct_size;
        for (int32_t s = 0; s < exe->num_steps; s++) {
            nxe_profile_step *out = (nxe_profile_step *)((uint8_t *)steps + stride * (size_t)s);
            out->struct_size = (uint32_t)stride;
            describe_profile_step(exe, s, exe->runs->profile, out);
        }
    }
    pthread_mutex_unlock(&exe->runs->lock);
    if (!has_profile)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "%s: no run has been profiled since profiling was turned on "
                         "(nxe_executable_set_profiling)",
                         where);
    *count = exe->num_steps;
    if (steps && capacity < exe->num_steps)
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL, "%s: the profile has %d steps, capacity is %d",
                         where, exe->num_steps, capacity);
    return NXE_OK;
}

/* ---- bound runs (runtime/binding.c) ---- */

nxe_status nxe_executable_check_io_desc(const nxe_executable *exe, bool input, int32_t index,
                                        const nxe_tensor_desc *desc, const char *where)
{
    const nxe_exe_tensor *t = &exe->tensors[(input ? exe->input_ids : exe->output_ids)[index]];
    return check_desc(t, desc, where, input ? "input" : "output", index);
}

nxe_status nxe_executable_run_bound(nxe_executable *exe, void *const *inputs, void *const *outputs,
                                    const char *where)
{
    nxe_run_context *context;
    bool was_held;
    uint64_t profile;
    nxe_status status = acquire_run_context(exe, where, &context, &was_held, &profile);
    if (status != NXE_OK)
        return status;
    /* The caller's buffers are the tensors' storage for this run; the context's result area,
     * and any run_nocopy results this thread holds there, are left alone. */
    for (int32_t i = 0; i < exe->num_inputs; i++)
        context->data[exe->input_ids[i]] = inputs[i];
    for (int32_t i = 0; i < exe->num_outputs; i++)
        context->data[exe->output_ids[i]] = outputs[i];
    if (exe->writes_variables)
        pthread_rwlock_wrlock(&exe->runs->variables);
    else
        pthread_rwlock_rdlock(&exe->runs->variables);
    status = run_steps(exe, context, profile != 0, where);
    pthread_rwlock_unlock(&exe->runs->variables);
    for (int32_t i = 0; i < exe->num_outputs; i++)
        context->data[exe->output_ids[i]] = context->staging + exe->output_offsets[i];
    nxe_run_stats delta = {.inputs_in_place = (uint64_t)exe->num_inputs};
    release_run_context(exe, context, was_held, status == NXE_OK ? &delta : NULL, profile);
    return status;
}
