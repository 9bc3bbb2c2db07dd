/* engine.c — the multi-model engine of nxe_engine.h: models by name, the bounded request queue,
 * the one worker thread that loads, batches, runs and unloads, and residency under the budgets.
 * The model work itself is the kinds' (tensor_kind.c, embedding_kind.c, or registered by the
 * host): nothing here computes.
 *
 * Locking: the engine's lock guards its kinds, models, queue and counters; each request's own
 * lock guards its result, so a request outlives its engine. Only the worker touches a model's
 * instance, and it calls the kinds' load and pipeline with the lock released (submissions go on
 * meanwhile); unload and the quick callbacks (resident_bytes, request_tokens) run under it.
 *
 * A model name maps to a version: its spec, its instance when resident, and the requests
 * queued for it. Replacing or removing a name retires the version instead of freeing it: its
 * queued requests still run on it, and the worker unloads and frees it once none is left. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"

#define DEFAULT_SWEEP_INTERVAL_S 1.0
#define MODEL_NAME_MAX 128

/* ---- clocks ---- */

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- structures ---- */

typedef struct engine_kind {
    nxe_engine_kind kind; /* kind.name points at `name` */
    char *name;
} engine_kind;

/* What the versions of one name share: its counters since it was added. */
typedef struct model_history {
    int32_t refs; /* versions pointing here */
    uint64_t requests;
    uint64_t loads;
    uint64_t evictions;
    int32_t queued;        /* over all its versions */
    double idle_since;     /* monotonic: last request finished, or added */
    double last_used_unix; /* 0 = never */
} model_history;

typedef struct engine_model engine_model;
struct engine_model {
    engine_model *next; /* in the engine's models (added order) or retired list */
    char *name;
    char *path;
    const engine_kind *kind;
    nxe_engine_option *options;
    int32_t num_options;
    double keep_alive_s;
    int32_t max_batch_size;
    int64_t max_batch_tokens;
    double max_batch_delay_ms;
    uint8_t fingerprint[32];
    model_history *history;
    /* Residency: written by the worker only, under the lock. */
    int32_t state;
    char error[NXE_ENGINE_ERROR_CAPACITY];
    void *instance;
    uint64_t resident_bytes;
    uint64_t known_bytes; /* measured right after the last load: what the next load takes */
    double last_active;   /* monotonic: loaded or last batch ended (LRU order, idleness) */
    double loaded_at;     /* monotonic: the last load */
    int32_t queued;       /* requests and jobs waiting or running on this version */
    uint64_t scan;        /* the worker's last look at the queue that reached it */
};

typedef enum job_type { JOB_RUN, JOB_LOAD, JOB_UNLOAD } job_type;

struct nxe_engine_request {
    pthread_mutex_t lock; /* guards status, error, outputs once finished is visible */
    pthread_cond_t finished_cond;
    atomic_int refs;
    atomic_int finished;
    atomic_int cancel_requested;
    job_type job;
    /* Guarded by the engine's lock while not finished. */
    nxe_engine *engine;
    engine_model *model;
    nxe_engine_request *prev, *next; /* in the queue while pending */
    bool pending;
    nxe_engine_request *next_callback;
    nxe_engine_io *inputs;
    int32_t num_inputs;
    nxe_engine_option *options;
    int32_t num_options;
    nxe_engine_callback callback;
    void *user_data;
    double submitted; /* monotonic */
    double deadline;  /* monotonic; 0 = none */
    double started;
    /* Written by the worker during its batch, read after finished. */
    bool failed;        /* nxe_engine_batch_fail */
    bool observed_stop; /* the kind saw nxe_engine_batch_cancelled return nonzero */
    /* The kind's nxe_engine_batch_set_progress: the bits of a double, 0..1. */
    atomic_uint_fast64_t progress;
    nxe_status status;
    char error[NXE_ENGINE_ERROR_CAPACITY];
    nxe_engine_io *outputs;
    int32_t num_outputs;
    int32_t outputs_capacity;
    nxe_engine_request_timing timing;
};

struct nxe_engine_batch {
    nxe_engine_request **requests;
    int32_t count;
};

struct nxe_engine {
    nxe_engine_options options; /* defaults resolved */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the worker waits on it (monotonic clock) */
    pthread_t worker;
    bool stopping;
    /* Cancellers between reading a request's engine and leaving its lock: the engine is freed
     * only once there are none. */
    atomic_int pins;
    engine_kind **kinds;
    int32_t num_kinds;
    int32_t kinds_capacity;
    engine_model *models; /* current versions, in the order added */
    engine_model *retired;
    nxe_engine_request *head, *tail;                     /* pending requests and jobs */
    nxe_engine_request *callbacks_head, *callbacks_tail; /* finished, callback not yet run */
    int32_t depth;                                       /* requests not finished */
    nxe_engine_stats stats;
    double next_sweep;
    uint64_t scan; /* counts the worker's looks at the queue */
};

/* ---- small helpers ---- */

static void free_options(nxe_engine_option *options, int32_t count)
{
    for (int32_t i = 0; options && i < count; i++) {
        nxe_free((void *)options[i].key);
        nxe_free((void *)options[i].value);
    }
    nxe_free(options);
}

static nxe_status check_options(const nxe_engine_option *options, int32_t count, const char *where)
{
    if (count < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: num_options is %d", where, count);
    if (count > 0 && !options)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: options is NULL with num_options %d",
                         where, count);
    for (int32_t i = 0; i < count; i++)
        if (!options[i].key || !options[i].key[0] || !options[i].value)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: option %d has a %s", where, i,
                             !options[i].key || !options[i].key[0] ? "NULL or empty key"
                                                                   : "NULL value");
    return NXE_OK;
}

static nxe_status copy_options(const nxe_engine_option *options, int32_t count,
                               nxe_engine_option **out)
{
    *out = NULL;
    if (count == 0)
        return NXE_OK;
    nxe_engine_option *copy = nxe_alloc_zeroed(sizeof *copy * (size_t)count);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory copying options");
    for (int32_t i = 0; i < count; i++) {
        copy[i].key = nxe_strdup(options[i].key);
        copy[i].value = nxe_strdup(options[i].value);
        if (!copy[i].key || !copy[i].value) {
            free_options(copy, count);
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory copying options");
        }
    }
    *out = copy;
    return NXE_OK;
}

static bool valid_model_name(const char *name)
{
    size_t length = strlen(name);
    if (length == 0 || length > MODEL_NAME_MAX)
        return false;
    for (size_t i = 0; i < length; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '/' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

static bool pinned(const engine_model *model)
{
    return model->keep_alive_s < 0;
}

/* ---- requests: reference counts and finishing ---- */

static void free_outputs(nxe_engine_request *request)
{
    for (int32_t i = 0; i < request->num_outputs; i++) {
        nxe_free((void *)request->outputs[i].name);
        nxe_free(request->outputs[i].tensor.data);
    }
    nxe_free(request->outputs);
    request->outputs = NULL;
    request->num_outputs = request->outputs_capacity = 0;
}

static void request_unref(nxe_engine_request *request)
{
    if (atomic_fetch_sub(&request->refs, 1) != 1)
        return;
    for (int32_t i = 0; i < request->num_inputs; i++) {
        nxe_free((void *)request->inputs[i].name);
        nxe_free(request->inputs[i].tensor.data);
    }
    nxe_free(request->inputs);
    free_options(request->options, request->num_options);
    free_outputs(request);
    pthread_cond_destroy(&request->finished_cond);
    pthread_mutex_destroy(&request->lock);
    nxe_free(request);
}

static nxe_status request_create(job_type job, nxe_engine_request **out)
{
    *out = NULL;
    nxe_engine_request *request = nxe_alloc_zeroed(sizeof *request);
    if (!request)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for a request");
    if (pthread_mutex_init(&request->lock, NULL) != 0) {
        nxe_free(request);
        return nxe_error(NXE_ERROR_INTERNAL, "cannot create a request's lock");
    }
    if (pthread_cond_init(&request->finished_cond, NULL) != 0) {
        pthread_mutex_destroy(&request->lock);
        nxe_free(request);
        return nxe_error(NXE_ERROR_INTERNAL, "cannot create a request's condition");
    }
    atomic_init(&request->refs, 1);
    atomic_init(&request->finished, 0);
    atomic_init(&request->cancel_requested, 0);
    request->job = job;
    *out = request;
    return NXE_OK;
}

static void queue_unlink(nxe_engine *engine, nxe_engine_request *request)
{
    if (request->prev)
        request->prev->next = request->next;
    else
        engine->head = request->next;
    if (request->next)
        request->next->prev = request->prev;
    else
        engine->tail = request->prev;
    request->prev = request->next = NULL;
    request->pending = false;
}

static void queue_append(nxe_engine *engine, nxe_engine_request *request)
{
    request->prev = engine->tail;
    request->next = NULL;
    if (engine->tail)
        engine->tail->next = request;
    else
        engine->head = request;
    engine->tail = request;
    request->pending = true;
}

static void queue_prepend(nxe_engine *engine, nxe_engine_request *request)
{
    request->prev = NULL;
    request->next = engine->head;
    if (engine->head)
        engine->head->prev = request;
    else
        engine->tail = request;
    engine->head = request;
    request->pending = true;
}

/* Finishes a request (engine lock held): records its result, wakes its waiters, and hands its
 * callback to the worker. The engine's reference goes with the callback, or now. */
static void finish_request(nxe_engine *engine, nxe_engine_request *request, nxe_status status,
                           const char *message)
{
    if (request->pending)
        queue_unlink(engine, request);
    double now = monotonic_now();
    engine_model *model = request->model;
    if (model) {
        model->queued--;
        model->history->queued--;
    }
    if (request->job == JOB_RUN) {
        engine->depth--;
        if (status == NXE_OK)
            engine->stats.completed++;
        else
            engine->stats.failed++;
        if (model) {
            model->history->requests++;
            model->history->idle_since = now;
            model->history->last_used_unix = unix_now();
        }
    }
    request->model = NULL;
    if (status != NXE_OK)
        free_outputs(request);
    /* Before `finished` turns visible: a canceller that saw it unfinished holds a pin. */
    pthread_mutex_lock(&request->lock);
    request->status = status;
    if (status == NXE_OK)
        request->error[0] = '\0';
    else if (message != request->error)
        snprintf(request->error, sizeof request->error, "%s", message);
    if (request->started > 0) {
        request->timing.queued_s = request->started - request->submitted;
        request->timing.run_s = now - request->started;
    } else {
        request->timing.queued_s = now - request->submitted;
    }
    atomic_store(&request->finished, 1);
    pthread_cond_broadcast(&request->finished_cond);
    pthread_mutex_unlock(&request->lock);
    if (request->callback) {
        request->next_callback = NULL;
        if (engine->callbacks_tail)
            engine->callbacks_tail->next_callback = request;
        else
            engine->callbacks_head = request;
        engine->callbacks_tail = request;
        pthread_cond_signal(&engine->wake);
    } else {
        request_unref(request);
    }
}

/* ---- models ---- */

static void model_free(engine_model *model)
{
    if (!model)
        return;
    if (model->history && --model->history->refs == 0)
        nxe_free(model->history);
    nxe_free(model->name);
    nxe_free(model->path);
    free_options(model->options, model->num_options);
    nxe_free(model);
}

static const engine_kind *find_kind(const nxe_engine *engine, const char *name)
{
    for (int32_t i = 0; i < engine->num_kinds; i++)
        if (strcmp(engine->kinds[i]->name, name) == 0)
            return engine->kinds[i];
    return NULL;
}

static engine_model *find_model(const nxe_engine *engine, const char *name, engine_model **previous)
{
    engine_model *before = NULL;
    for (engine_model *model = engine->models; model; before = model, model = model->next)
        if (strcmp(model->name, name) == 0) {
            if (previous)
                *previous = before;
            return model;
        }
    return NULL;
}

/* Checks a spec's fields (engine lock held, for the kind registry). */
static nxe_status check_spec(const nxe_engine *engine, const nxe_engine_model_spec *spec,
                             const char *where)
{
    if (!spec)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: spec is NULL", where);
    if (spec->struct_size < sizeof(nxe_engine_model_spec))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: spec.struct_size is %u, expected at least %zu", where,
                         spec->struct_size, sizeof(nxe_engine_model_spec));
    if (!spec->name || !valid_model_name(spec->name))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: model name '%s' is not 1 to %d of [A-Za-z0-9._:/-]", where,
                         spec->name ? spec->name : "(null)", MODEL_NAME_MAX);
    const char *name = spec->name;
    if (!spec->kind)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: model '%s': kind is NULL", where, name);
    if (!spec->path || !spec->path[0])
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: model '%s': path is NULL or empty", where,
                         name);
    if (!(spec->keep_alive_s >= 0.0 || spec->keep_alive_s == -1.0) || isinf(spec->keep_alive_s))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: model '%s': keep_alive_s is %g, expected -1 or a finite value >= 0",
                         where, name, spec->keep_alive_s);
    if (spec->max_batch_size < 0 || spec->max_batch_tokens < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: model '%s': max_batch_size %d and max_batch_tokens %lld must not be "
                         "negative",
                         where, name, spec->max_batch_size, (long long)spec->max_batch_tokens);
    if (!(spec->max_batch_delay_ms >= 0.0) || isinf(spec->max_batch_delay_ms))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: model '%s': max_batch_delay_ms is %g, expected a finite value >= 0",
                         where, name, spec->max_batch_delay_ms);
    nxe_status status = check_options(spec->options, spec->num_options, where);
    if (status != NXE_OK) {
        nxe_error_prefix("model '%s': ", name);
        return status;
    }
    if (!find_kind(engine, spec->kind))
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: model '%s': no kind '%s' is registered", where,
                         name, spec->kind);
    return NXE_OK;
}

/* The fingerprint of a spec's file: the kind's, else the nxe model fingerprint of the file
 * (a .nxb opens as the model it embeds). Runs on the calling thread. */
static nxe_status fingerprint_spec(const engine_kind *kind, const nxe_engine_model_spec *spec,
                                   uint8_t fingerprint[32])
{
    memset(fingerprint, 0, 32);
    nxe_status status;
    if (kind->kind.fingerprint) {
        nxe_error_clear();
        status = kind->kind.fingerprint(kind->kind.user_data, spec->path, spec->options,
                                        spec->num_options, fingerprint);
        if (status != NXE_OK && !nxe_last_error()[0])
            nxe_error(status, "kind '%s' cannot fingerprint '%s'", kind->name, spec->path);
    } else {
        nxe_model_options options = NXE_MODEL_OPTIONS_INIT;
        options.lazy = 1;
        nxe_model *file = NULL;
        status = nxe_model_open_file(spec->path, &options, &file);
        if (status == NXE_OK)
            status = nxe_model_fingerprint(file, fingerprint);
        nxe_model_release(file);
    }
    if (status != NXE_OK) {
        memset(fingerprint, 0, 32);
        nxe_error_prefix("model '%s': ", spec->name);
    }
    return status;
}

/* A new version for a checked spec, unlinked, with a history of its own. */
static nxe_status model_create(const engine_kind *kind, const nxe_engine_model_spec *spec,
                               const uint8_t fingerprint[32], engine_model **out)
{
    *out = NULL;
    engine_model *model = nxe_alloc_zeroed(sizeof *model);
    if (!model)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for model '%s'", spec->name);
    model->name = nxe_strdup(spec->name);
    model->path = nxe_strdup(spec->path);
    model->history = nxe_alloc_zeroed(sizeof *model->history);
    nxe_status status = copy_options(spec->options, spec->num_options, &model->options);
    if (status == NXE_OK && (!model->name || !model->path || !model->history))
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for model '%s'", spec->name);
    if (status != NXE_OK) {
        if (model->history)
            model->history->refs = 1;
        model_free(model);
        return status;
    }
    model->num_options = spec->num_options;
    model->kind = kind;
    model->keep_alive_s = spec->keep_alive_s;
    model->max_batch_size = spec->max_batch_size;
    model->max_batch_tokens = spec->max_batch_tokens;
    model->max_batch_delay_ms = spec->max_batch_delay_ms;
    memcpy(model->fingerprint, fingerprint, 32);
    model->history->refs = 1;
    model->history->idle_since = monotonic_now();
    model->state = NXE_MODEL_UNLOADED;
    *out = model;
    return NXE_OK;
}

/* Whether a version runs as `spec` would, file content included. */
static bool same_model(const engine_model *model, const engine_kind *kind,
                       const nxe_engine_model_spec *spec, const uint8_t fingerprint[32])
{
    if (model->kind != kind || strcmp(model->path, spec->path) != 0 ||
        model->keep_alive_s != spec->keep_alive_s ||
        model->max_batch_size != spec->max_batch_size ||
        model->max_batch_tokens != spec->max_batch_tokens ||
        model->max_batch_delay_ms != spec->max_batch_delay_ms ||
        model->num_options != spec->num_options || memcmp(model->fingerprint, fingerprint, 32) != 0)
        return false;
    for (int32_t i = 0; i < spec->num_options; i++)
        if (strcmp(model->options[i].key, spec->options[i].key) != 0 ||
            strcmp(model->options[i].value, spec->options[i].value) != 0)
            return false;
    return true;
}

/* Takes a version out of the name table (engine lock held): the worker unloads and frees it
 * once nothing is queued on it. */
static void retire_model(nxe_engine *engine, engine_model *model, engine_model *previous)
{
    if (previous)
        previous->next = model->next;
    else
        engine->models = model->next;
    model->next = engine->retired;
    engine->retired = model;
    pthread_cond_signal(&engine->wake);
}

/* Puts `replacement` where `model` was, sharing its history, and retires `model`. */
static void replace_version(nxe_engine *engine, engine_model *model, engine_model *previous,
                            engine_model *replacement)
{
    nxe_free(replacement->history);
    replacement->history = model->history;
    replacement->history->refs++;
    replacement->next = model->next;
    if (previous)
        previous->next = replacement;
    else
        engine->models = replacement;
    model->next = engine->retired;
    engine->retired = model;
    pthread_cond_signal(&engine->wake);
}

static void append_model(nxe_engine *engine, engine_model *model)
{
    engine_model **link = &engine->models;
    while (*link)
        link = &(*link)->next;
    model->next = NULL;
    *link = model;
}

/* ---- residency (worker, engine lock held) ---- */

static void resident_totals(const nxe_engine *engine, int32_t *count, uint64_t *bytes)
{
    *count = 0;
    *bytes = 0;
    for (int32_t list = 0; list < 2; list++)
        for (const engine_model *m = list ? engine->retired : engine->models; m; m = m->next)
            if (m->instance) {
                (*count)++;
                *bytes += m->resident_bytes;
            }
}

static void unload_model(engine_model *model)
{
    void *instance = model->instance;
    model->instance = NULL;
    model->resident_bytes = 0;
    model->state = NXE_MODEL_UNLOADED;
    model->kind->kind.unload(model->kind->kind.user_data, instance);
}

/* The model to unload first to make room: resident, not `keep`, not pinned; those with nothing
 * queued before the others, each group least recently used first. NULL when none can go. */
static engine_model *eviction_victim(const nxe_engine *engine, const engine_model *keep)
{
    engine_model *best = NULL;
    for (int32_t list = 0; list < 2; list++)
        for (engine_model *m = list ? engine->retired : engine->models; m; m = m->next) {
            if (!m->instance || m == keep || pinned(m))
                continue;
            if (!best || (m->queued == 0 && best->queued > 0) ||
                ((m->queued == 0) == (best->queued == 0) && m->last_active < best->last_active))
                best = m;
        }
    return best;
}

static void evict(nxe_engine *engine, engine_model *victim)
{
    nxe_log(NXE_LOG_INFO, "engine: evicting model '%s' (%llu bytes) to make room", victim->name,
            (unsigned long long)victim->resident_bytes);
    unload_model(victim);
    victim->history->evictions++;
    engine->stats.evictions++;
}

/* Evicts until `model` (resident or about to load with `extra` bytes) fits both budgets:
 * NXE_OK, or NXE_ERROR_BUSY with the reason in `message` when it cannot. */
static nxe_status make_room(nxe_engine *engine, const engine_model *model, uint64_t extra,
                            char *message, size_t size)
{
    const nxe_engine_options *o = &engine->options;
    for (;;) {
        int32_t count;
        uint64_t bytes;
        resident_totals(engine, &count, &bytes);
        if (!model->instance)
            count++;
        bytes += extra;
        bool count_over = o->max_resident > 0 && count > o->max_resident;
        bool bytes_over = o->max_resident_bytes > 0 && bytes > o->max_resident_bytes;
        if (!count_over && !bytes_over)
            return NXE_OK;
        engine_model *victim =
            o->evict_policy == NXE_EVICT_LRU ? eviction_victim(engine, model) : NULL;
        if (!victim) {
            if (count_over)
                snprintf(message, size, "model '%s' cannot be loaded: max_resident is %d and %s",
                         model->name, o->max_resident,
                         o->evict_policy == NXE_EVICT_NONE ? "evict_policy is none"
                                                           : "every resident model is pinned");
            else
                snprintf(message, size,
                         "model '%s' cannot be loaded: it needs %llu bytes, the resident models "
                         "hold %llu of max_resident_bytes %llu, and %s",
                         model->name, (unsigned long long)extra,
                         (unsigned long long)(bytes - extra),
                         (unsigned long long)o->max_resident_bytes,
                         o->evict_policy == NXE_EVICT_NONE ? "evict_policy is none"
                                                           : "none of them can be evicted");
            return NXE_ERROR_BUSY;
        }
        evict(engine, victim);
    }
}

/* Makes `model` resident (worker, engine lock held; released during the kind's load). On
 * failure `message` says why; the load's failures leave the model FAILED. */
static nxe_status ensure_resident(nxe_engine *engine, engine_model *model, char *message,
                                  size_t size)
{
    if (model->instance)
        return NXE_OK;
    const nxe_engine_options *o = &engine->options;
    /* A version measured too big alone stays too big: its file is the one fingerprinted when
     * it was added, and a changed file comes back as a new version, measured afresh. */
    if (o->max_resident_bytes > 0 && model->known_bytes > o->max_resident_bytes) {
        snprintf(message, size,
                 "model '%s' holds %llu bytes once loaded, more than max_resident_bytes %llu "
                 "allows",
                 model->name, (unsigned long long)model->known_bytes,
                 (unsigned long long)o->max_resident_bytes);
        model->state = NXE_MODEL_FAILED;
        snprintf(model->error, sizeof model->error, "%s", message);
        return NXE_ERROR_OUT_OF_MEMORY;
    }
    /* Room for what it took last time. */
    nxe_status status = make_room(engine, model, model->known_bytes, message, size);
    if (status != NXE_OK)
        return status;
    model->state = NXE_MODEL_LOADING;
    model->error[0] = '\0';
    nxe_engine_load_args args = {sizeof args,    model->name,        model->path,
                                 model->options, model->num_options, o->num_threads};
    const nxe_engine_kind *kind = &model->kind->kind;
    void *instance = NULL;
    pthread_mutex_unlock(&engine->lock);
    nxe_error_clear();
    status = kind->load(kind->user_data, &args, &instance);
    if (status != NXE_OK)
        snprintf(message, size, "model '%s': %s", model->name,
                 nxe_last_error()[0] ? nxe_last_error() : "the kind's load failed");
    pthread_mutex_lock(&engine->lock);
    if (status == NXE_OK && !instance) {
        status = NXE_ERROR_INTERNAL;
        snprintf(message, size, "model '%s': kind '%s' loaded no instance", model->name,
                 model->kind->name);
    }
    if (status != NXE_OK) {
        model->state = NXE_MODEL_FAILED;
        snprintf(model->error, sizeof model->error, "%s", message);
        return status;
    }
    model->history->loads++;
    engine->stats.loads++;
    uint64_t bytes = kind->resident_bytes(kind->user_data, instance);
    model->known_bytes = bytes;
    if (o->max_resident_bytes > 0 && bytes > o->max_resident_bytes) {
        kind->unload(kind->user_data, instance);
        snprintf(message, size,
                 "model '%s' holds %llu bytes once loaded, more than max_resident_bytes %llu "
                 "allows",
                 model->name, (unsigned long long)bytes, (unsigned long long)o->max_resident_bytes);
        model->state = NXE_MODEL_FAILED;
        snprintf(model->error, sizeof model->error, "%s", message);
        return NXE_ERROR_OUT_OF_MEMORY;
    }
    status = make_room(engine, model, bytes, message, size);
    if (status != NXE_OK) {
        kind->unload(kind->user_data, instance);
        model->state = NXE_MODEL_UNLOADED;
        return status;
    }
    model->instance = instance;
    model->resident_bytes = bytes;
    model->state = NXE_MODEL_RESIDENT;
    model->loaded_at = model->last_active = monotonic_now();
    return NXE_OK;
}

/* After a batch the kind may hold more (run contexts, cached executables): measured again,
 * and other idle models make room for it. */
static void remeasure(nxe_engine *engine, engine_model *model)
{
    const nxe_engine_kind *kind = &model->kind->kind;
    model->resident_bytes = kind->resident_bytes(kind->user_data, model->instance);
    const uint64_t budget = engine->options.max_resident_bytes;
    if (budget > 0 && model->resident_bytes > budget && !pinned(model)) {
        /* Grown past the whole budget by what it ran (a kind that compiles per input size):
         * the answers are given; now it goes, and the next request loads it afresh. */
        nxe_log(NXE_LOG_WARNING,
                "engine: model '%s' holds %llu bytes after running, more than "
                "max_resident_bytes %llu: unloading it",
                model->name, (unsigned long long)model->resident_bytes, (unsigned long long)budget);
        evict(engine, model);
        return;
    }
    if (budget == 0 || engine->options.evict_policy != NXE_EVICT_LRU)
        return;
    for (;;) {
        int32_t count;
        uint64_t bytes;
        resident_totals(engine, &count, &bytes);
        engine_model *victim = bytes > budget ? eviction_victim(engine, model) : NULL;
        if (!victim)
            return;
        evict(engine, victim);
    }
}

/* Unloads the models idle past their keep-alive, and frees retired versions nothing needs. */
static void sweep(nxe_engine *engine, double now)
{
    for (engine_model *m = engine->models; m; m = m->next) {
        if (!m->instance || m->queued > 0 || pinned(m))
            continue;
        double keep = m->keep_alive_s > 0 ? m->keep_alive_s : engine->options.idle_unload_s;
        if (keep > 0 && now - m->last_active >= keep) {
            nxe_log(NXE_LOG_INFO, "engine: unloading model '%s', idle %.3f s", m->name,
                    now - m->last_active);
            unload_model(m);
            engine->stats.idle_unloads++;
        }
    }
}

static void free_unused_retired(nxe_engine *engine)
{
    engine_model **link = &engine->retired;
    while (*link) {
        engine_model *m = *link;
        if (m->queued > 0) {
            link = &m->next;
            continue;
        }
        if (m->instance)
            unload_model(m);
        *link = m->next;
        model_free(m);
    }
}

/* ---- the worker ---- */

static void run_callbacks(nxe_engine *engine)
{
    while (engine->callbacks_head) {
        nxe_engine_request *request = engine->callbacks_head;
        engine->callbacks_head = request->next_callback;
        if (!engine->callbacks_head)
            engine->callbacks_tail = NULL;
        pthread_mutex_unlock(&engine->lock);
        request->callback(request, request->user_data);
        request_unref(request);
        pthread_mutex_lock(&engine->lock);
    }
}

static bool stop_due(const nxe_engine_request *request, double now)
{
    return atomic_load(&request->cancel_requested) ||
           (request->deadline > 0 && now >= request->deadline);
}

/* Finishes queued requests that were cancelled or whose deadline passed; returns the earliest
 * deadline still ahead (0: none). */
static double expire_pending(nxe_engine *engine, double now)
{
    double next = 0;
    nxe_engine_request *request = engine->head;
    while (request) {
        nxe_engine_request *following = request->next;
        if (request->job == JOB_RUN && atomic_load(&request->cancel_requested))
            finish_request(engine, request, NXE_ERROR_CANCELLED, "the request was cancelled");
        else if (request->job == JOB_RUN && request->deadline > 0 && now >= request->deadline)
            finish_request(engine, request, NXE_ERROR_TIMEOUT,
                           "the request's deadline passed before it ran");
        else if (request->deadline > 0 && (next == 0 || request->deadline < next))
            next = request->deadline;
        request = following;
    }
    return next;
}

/* Fails every queued request and job of `model` with the status of its load. */
static void fail_queued(nxe_engine *engine, engine_model *model, nxe_status status,
                        const char *message)
{
    nxe_engine_request *request = engine->head;
    while (request) {
        nxe_engine_request *following = request->next;
        if (request->model == model)
            finish_request(engine, request, status, message);
        request = following;
    }
}

static int64_t request_tokens(const engine_model *model, const nxe_engine_batch *batch,
                              int32_t index)
{
    const nxe_engine_kind *kind = &model->kind->kind;
    if (!kind->request_tokens)
        return 1;
    int64_t tokens = kind->request_tokens(kind->user_data, model->instance, batch, index);
    return tokens > 0 ? tokens : 0;
}

/* Gathers the head's batch: queued requests of the same version, in queue order, up to the
 * model's max_batch_size and max_batch_tokens. True when the batch is full: waiting longer
 * would not make it larger. */
static bool collect_batch(const engine_model *model, nxe_engine_request *head, double now,
                          nxe_engine_batch *batch, int32_t capacity)
{
    batch->requests[0] = head;
    batch->count = 1;
    int64_t tokens = request_tokens(model, batch, 0);
    for (nxe_engine_request *r = head->next; r && batch->count < capacity; r = r->next) {
        if (r->job != JOB_RUN || r->model != model || stop_due(r, now))
            continue;
        batch->requests[batch->count++] = r; /* on trial: the kind counts it in the batch */
        int64_t more = request_tokens(model, batch, batch->count - 1);
        if (model->max_batch_tokens > 0 && tokens + more > model->max_batch_tokens) {
            batch->count--;
            return true;
        }
        tokens += more;
    }
    return batch->count >= capacity ||
           (model->max_batch_tokens > 0 && tokens >= model->max_batch_tokens);
}

/* Runs the kind's pipeline on a batch (engine lock released). Returns the status of the stage
 * that failed with its message in `message`, or NXE_OK. */
static nxe_status run_pipeline(engine_model *model, nxe_engine_batch *batch, char *message,
                               size_t size)
{
    const engine_kind *kind = model->kind;
    const nxe_engine_kind *k = &kind->kind;
    void *state = NULL;
    const char *stage = "frontend";
    nxe_error_clear();
    nxe_status status =
        k->frontend ? k->frontend(k->user_data, model->instance, batch, &state) : NXE_OK;
    bool frontend_ran = k->frontend && status == NXE_OK;
    if (status == NXE_OK) {
        stage = "encoder";
        status = k->encoder(k->user_data, model->instance, batch, state);
    }
    if (status == NXE_OK && k->head) {
        stage = "head";
        status = k->head(k->user_data, model->instance, batch, state);
    }
    if (status != NXE_OK)
        snprintf(message, size, "%s", nxe_last_error());
    if (status != NXE_OK && !message[0])
        snprintf(message, size, "model '%s': kind '%s' failed in its %s with %s", model->name,
                 kind->name, stage, nxe_status_name(status));
    if (frontend_ran && k->release_state)
        k->release_state(k->user_data, state);
    return status;
}

static void run_batch(nxe_engine *engine, engine_model *model, nxe_engine_batch *batch)
{
    double now = monotonic_now();
    for (int32_t i = 0; i < batch->count; i++) {
        nxe_engine_request *r = batch->requests[i];
        queue_unlink(engine, r);
        r->started = now;
        r->timing.batch_size = batch->count;
        r->timing.loaded_model = model->loaded_at >= r->submitted;
    }
    engine->stats.batches++;
    engine->stats.batched_requests += (uint64_t)batch->count;
    char message[NXE_ENGINE_ERROR_CAPACITY] = "";
    pthread_mutex_unlock(&engine->lock);
    nxe_status status = run_pipeline(model, batch, message, sizeof message);
    pthread_mutex_lock(&engine->lock);
    for (int32_t i = 0; i < batch->count; i++) {
        nxe_engine_request *r = batch->requests[i];
        if (r->failed)
            finish_request(engine, r, r->status, r->error);
        else if (r->observed_stop)
            finish_request(
                engine, r,
                atomic_load(&r->cancel_requested) ? NXE_ERROR_CANCELLED : NXE_ERROR_TIMEOUT,
                atomic_load(&r->cancel_requested) ? "the request was cancelled while it ran"
                                                  : "the request's deadline passed while it ran");
        else if (status != NXE_OK && r->num_outputs == 0)
            finish_request(engine, r, status, message);
        else
            finish_request(engine, r, NXE_OK, "");
    }
    if (model->instance) {
        model->last_active = monotonic_now();
        remeasure(engine, model);
    }
}

static double earliest(double a, double b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

/* Carries out `head`, the oldest request or job of its model version: the job, the model's
 * load, or the batch it starts. False when the batch waits for more requests instead, with
 * *ready the monotonic time it will go anyway. */
static bool serve_head(nxe_engine *engine, nxe_engine_request *head, double now, double *ready)
{
    engine_model *model = head->model;
    char message[NXE_ENGINE_ERROR_CAPACITY] = "";
    if (head->job == JOB_UNLOAD) {
        if (model->queued > 1) {
            finish_request(engine, head, NXE_ERROR_BUSY,
                           "requests for the model are queued or running");
        } else {
            if (model->instance)
                unload_model(model);
            finish_request(engine, head, NXE_OK, "");
        }
        return true;
    }
    if (!model->instance) {
        /* The lock is released while the model loads: the head may be cancelled meanwhile, so
         * the queue is looked at afresh once it is resident. */
        nxe_status status = ensure_resident(engine, model, message, sizeof message);
        if (status != NXE_OK)
            fail_queued(engine, model, status, message);
        return true;
    }
    if (head->job == JOB_LOAD) {
        finish_request(engine, head, NXE_OK, "");
        return true;
    }
    const nxe_engine_kind *kind = &model->kind->kind;
    int32_t capacity = kind->batchable && model->max_batch_size > 1 ? model->max_batch_size : 1;
    nxe_engine_request *single[1];
    nxe_engine_batch batch = {single, 0};
    if (capacity > 1)
        batch.requests = nxe_alloc(sizeof *batch.requests * (size_t)capacity);
    if (!batch.requests) {
        finish_request(engine, head, NXE_ERROR_OUT_OF_MEMORY, "out of memory for a batch");
        return true;
    }
    bool full = collect_batch(model, head, now, &batch, capacity);
    *ready = head->submitted + model->max_batch_delay_ms * 1e-3;
    if (!full && now < *ready) {
        nxe_free(batch.requests == single ? NULL : batch.requests);
        return false;
    }
    run_batch(engine, model, &batch);
    nxe_free(batch.requests == single ? NULL : batch.requests);
    return true;
}

/* Serves the first model version, in the order of their oldest queued requests, that has work
 * ready: a job, a load, or a batch that is full or has waited its delay; a batch waiting for
 * more requests holds up no other model. Returns 0 when it served one, else the earliest time a
 * waiting batch will go. */
static double serve_next(nxe_engine *engine, double now)
{
    engine->scan++;
    double next = 0;
    for (nxe_engine_request *r = engine->head; r; r = r->next) {
        if (r->model->scan == engine->scan)
            continue;
        r->model->scan = engine->scan;
        double ready = 0;
        if (serve_head(engine, r, now, &ready))
            return 0;
        next = earliest(next, ready);
    }
    return next;
}

static void wait_until(nxe_engine *engine, double until)
{
    if (until <= 0) {
        pthread_cond_wait(&engine->wake, &engine->lock);
        return;
    }
    struct timespec ts;
    double seconds = floor(until);
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((until - seconds) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    pthread_cond_timedwait(&engine->wake, &engine->lock, &ts);
}

static void *worker_main(void *argument)
{
    nxe_engine *engine = argument;
    pthread_mutex_lock(&engine->lock);
    for (;;) {
        run_callbacks(engine);
        if (engine->stopping)
            break;
        free_unused_retired(engine);
        double now = monotonic_now();
        if (now >= engine->next_sweep) {
            sweep(engine, now);
            engine->next_sweep = now + engine->options.sweep_interval_s;
        }
        double wake = earliest(expire_pending(engine, now), engine->next_sweep);
        if (engine->callbacks_head)
            continue;
        if (!engine->head) {
            wait_until(engine, wake);
            continue;
        }
        double ready = serve_next(engine, now);
        if (ready > 0)
            wait_until(engine, earliest(wake, ready));
    }
    /* Stopping: what has not started is cancelled, then every model is unloaded. */
    while (engine->head)
        finish_request(engine, engine->head, NXE_ERROR_CANCELLED, "the engine was released");
    run_callbacks(engine);
    for (engine_model *m = engine->models; m; m = m->next)
        if (m->instance)
            unload_model(m);
    for (engine_model *m = engine->retired; m; m = m->next)
        if (m->instance)
            unload_model(m);
    pthread_mutex_unlock(&engine->lock);
    return NULL;
}

/* ---- engine ---- */

static nxe_status resolve_options(const nxe_engine_options *options, nxe_engine_options *out)
{
    const char *where = "nxe_engine_create";
    nxe_engine_options o = NXE_ENGINE_OPTIONS_INIT;
    if (options) {
        if (options->struct_size < sizeof(nxe_engine_options))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu", where,
                             options->struct_size, sizeof(nxe_engine_options));
        o = *options;
    }
    if (o.queue_capacity < 0 || o.max_resident < 0 || o.num_threads < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: queue_capacity %d, max_resident %d and num_threads %d must not be "
                         "negative",
                         where, o.queue_capacity, o.max_resident, o.num_threads);
    if (!(o.idle_unload_s >= 0) || isinf(o.idle_unload_s) || !(o.sweep_interval_s >= 0) ||
        isinf(o.sweep_interval_s))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: idle_unload_s %g and sweep_interval_s %g must be finite and >= 0",
                         where, o.idle_unload_s, o.sweep_interval_s);
    if (o.evict_policy != NXE_EVICT_LRU && o.evict_policy != NXE_EVICT_NONE)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: evict_policy %d is not NXE_EVICT_LRU (0) or NXE_EVICT_NONE (1)",
                         where, o.evict_policy);
    if (o.queue_capacity == 0)
        o.queue_capacity = NXE_ENGINE_DEFAULT_QUEUE_CAPACITY;
    if (o.sweep_interval_s == 0)
        o.sweep_interval_s = DEFAULT_SWEEP_INTERVAL_S;
    o.struct_size = sizeof o;
    *out = o;
    return NXE_OK;
}

static void engine_free(nxe_engine *engine)
{
    while (engine->models) {
        engine_model *next = engine->models->next;
        model_free(engine->models);
        engine->models = next;
    }
    while (engine->retired) {
        engine_model *next = engine->retired->next;
        model_free(engine->retired);
        engine->retired = next;
    }
    for (int32_t i = 0; i < engine->num_kinds; i++) {
        nxe_free(engine->kinds[i]->name);
        nxe_free(engine->kinds[i]);
    }
    nxe_free(engine->kinds);
    pthread_cond_destroy(&engine->wake);
    pthread_mutex_destroy(&engine->lock);
    nxe_free(engine);
}

NXE_API nxe_status nxe_engine_create(const nxe_engine_options *options, nxe_engine **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_create: out is NULL");
    *out = NULL;
    nxe_engine_options resolved;
    nxe_status status = resolve_options(options, &resolved);
    if (status != NXE_OK)
        return status;
    nxe_engine *engine = nxe_alloc_zeroed(sizeof *engine);
    if (!engine)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_engine_create: out of memory");
    engine->options = resolved;
    atomic_init(&engine->pins, 0);
    engine->stats.struct_size = sizeof engine->stats;
    engine->stats.queue_capacity = resolved.queue_capacity;
    pthread_condattr_t attributes;
    bool made = pthread_mutex_init(&engine->lock, NULL) == 0;
    if (made && pthread_condattr_init(&attributes) == 0) {
        made = pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC) == 0 &&
               pthread_cond_init(&engine->wake, &attributes) == 0;
        pthread_condattr_destroy(&attributes);
        if (!made)
            pthread_mutex_destroy(&engine->lock);
    } else if (made) {
        pthread_mutex_destroy(&engine->lock);
        made = false;
    }
    if (!made) {
        nxe_free(engine);
        return nxe_error(NXE_ERROR_INTERNAL, "nxe_engine_create: cannot create the engine's lock");
    }
    engine->next_sweep = monotonic_now() + resolved.sweep_interval_s;
    status = nxe_tensor_kind_register(engine);
    if (status == NXE_OK)
        status = nxe_embedding_kind_register(engine);
    if (status == NXE_OK)
        status = nxe_asr_kind_register(engine);
    if (status != NXE_OK) {
        engine_free(engine);
        return status;
    }
    if (pthread_create(&engine->worker, NULL, worker_main, engine) != 0) {
        engine_free(engine);
        return nxe_error(NXE_ERROR_INTERNAL, "nxe_engine_create: cannot start the worker thread");
    }
    *out = engine;
    return NXE_OK;
}

NXE_API void nxe_engine_release(nxe_engine *engine)
{
    if (!engine)
        return;
    pthread_mutex_lock(&engine->lock);
    engine->stopping = true;
    pthread_cond_signal(&engine->wake);
    pthread_mutex_unlock(&engine->lock);
    pthread_join(engine->worker, NULL);
    const struct timespec pause = {0, 100000};
    while (atomic_load(&engine->pins) > 0)
        nanosleep(&pause, NULL);
    engine_free(engine);
}

NXE_API nxe_status nxe_engine_register_kind(nxe_engine *engine, const nxe_engine_kind *kind)
{
    const char *where = "nxe_engine_register_kind";
    if (!engine || !kind)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         engine ? "kind" : "engine");
    if (kind->struct_size < sizeof(nxe_engine_kind))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: kind.struct_size is %u, expected at least %zu", where,
                         kind->struct_size, sizeof(nxe_engine_kind));
    if (!kind->name || !kind->name[0])
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: the kind's name is NULL or empty", where);
    if (!kind->load || !kind->unload || !kind->resident_bytes || !kind->encoder)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: kind '%s' lacks its %s callback (load, unload, resident_bytes and "
                         "encoder are required)",
                         where, kind->name,
                         !kind->load             ? "load"
                         : !kind->unload         ? "unload"
                         : !kind->resident_bytes ? "resident_bytes"
                                                 : "encoder");
    engine_kind *copy = nxe_alloc_zeroed(sizeof *copy);
    char *name = nxe_strdup(kind->name);
    if (!copy || !name) {
        nxe_free(copy);
        nxe_free(name);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    copy->kind = *kind;
    copy->kind.struct_size = sizeof copy->kind;
    copy->kind.name = copy->name = name;
    pthread_mutex_lock(&engine->lock);
    nxe_status status = NXE_OK;
    if (find_kind(engine, name))
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: a kind '%s' is already registered",
                           where, name);
    if (status == NXE_OK)
        status = nxe_grow_array((void **)&engine->kinds, &engine->kinds_capacity,
                                engine->num_kinds + 1, sizeof *engine->kinds);
    if (status == NXE_OK)
        engine->kinds[engine->num_kinds++] = copy;
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK) {
        nxe_free(name);
        nxe_free(copy);
    }
    return status;
}

NXE_API nxe_status nxe_engine_set_error(nxe_status status, const char *message)
{
    return nxe_error(status, "%s", message ? message : "");
}

/* ---- models: add, replace, remove, apply ---- */

/* A checked spec's new version, fingerprinted (best effort: a file that cannot be read now
 * leaves the fingerprint unknown and fails at load). */
static nxe_status prepare_version(nxe_engine *engine, const nxe_engine_model_spec *spec,
                                  const char *where, bool strict, engine_model **out)
{
    *out = NULL;
    pthread_mutex_lock(&engine->lock);
    nxe_status status = check_spec(engine, spec, where);
    const engine_kind *kind = status == NXE_OK ? find_kind(engine, spec->kind) : NULL;
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK)
        return status;
    uint8_t fingerprint[32];
    status = fingerprint_spec(kind, spec, fingerprint);
    if (status != NXE_OK && strict) {
        nxe_error_prefix("%s: ", where);
        return status;
    }
    return model_create(kind, spec, fingerprint, out);
}

NXE_API nxe_status nxe_engine_add_model(nxe_engine *engine, const nxe_engine_model_spec *spec)
{
    const char *where = "nxe_engine_add_model";
    if (!engine)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: engine is NULL", where);
    engine_model *model;
    nxe_status status = prepare_version(engine, spec, where, false, &model);
    if (status != NXE_OK)
        return status;
    pthread_mutex_lock(&engine->lock);
    if (engine->stopping)
        status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: the engine is being released", where);
    else if (find_model(engine, spec->name, NULL))
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: a model '%s' exists already", where,
                           spec->name);
    else
        append_model(engine, model);
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK)
        model_free(model);
    return status;
}

NXE_API nxe_status nxe_engine_replace_model(nxe_engine *engine, const nxe_engine_model_spec *spec)
{
    const char *where = "nxe_engine_replace_model";
    if (!engine)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: engine is NULL", where);
    engine_model *model;
    nxe_status status = prepare_version(engine, spec, where, false, &model);
    if (status != NXE_OK)
        return status;
    pthread_mutex_lock(&engine->lock);
    engine_model *previous = NULL;
    engine_model *existing = find_model(engine, spec->name, &previous);
    if (engine->stopping)
        status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: the engine is being released", where);
    else if (!existing)
        status = nxe_error(NXE_ERROR_NOT_FOUND, "%s: no model '%s'", where, spec->name);
    else
        replace_version(engine, existing, previous, model);
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK)
        model_free(model);
    return status;
}

NXE_API nxe_status nxe_engine_remove_model(nxe_engine *engine, const char *name)
{
    const char *where = "nxe_engine_remove_model";
    if (!engine || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         engine ? "name" : "engine");
    pthread_mutex_lock(&engine->lock);
    engine_model *previous = NULL;
    engine_model *model = find_model(engine, name, &previous);
    nxe_status status = NXE_OK;
    if (model)
        retire_model(engine, model, previous);
    else
        status = nxe_error(NXE_ERROR_NOT_FOUND, "%s: no model '%s'", where, name);
    pthread_mutex_unlock(&engine->lock);
    return status;
}

NXE_API nxe_status nxe_engine_apply(nxe_engine *engine, const nxe_engine_model_spec *specs,
                                    int32_t count, nxe_engine_apply_report *report)
{
    const char *where = "nxe_engine_apply";
    if (!engine || (!specs && count > 0) || count < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s", where,
                         !engine     ? "engine is NULL"
                         : count < 0 ? "count is negative"
                                     : "specs is NULL");
    if (report && report->struct_size < sizeof(nxe_engine_apply_report))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: report.struct_size is %u, expected at least %zu", where,
                         report->struct_size, sizeof(nxe_engine_apply_report));
    for (int32_t i = 0; i < count; i++)
        for (int32_t j = 0; j < i; j++)
            if (specs[i].name && specs[j].name && strcmp(specs[i].name, specs[j].name) == 0)
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: model '%s' is listed twice",
                                 where, specs[i].name);
    engine_model **versions = nxe_alloc_zeroed(sizeof *versions * (size_t)(count + 1));
    if (!versions)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    nxe_status status = NXE_OK;
    for (int32_t i = 0; status == NXE_OK && i < count; i++)
        status = prepare_version(engine, &specs[i], where, true, &versions[i]);
    nxe_engine_apply_report counts = {sizeof counts, 0, 0, 0, 0};
    if (status == NXE_OK) {
        pthread_mutex_lock(&engine->lock);
        if (engine->stopping)
            status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: the engine is being released", where);
        for (int32_t i = 0; status == NXE_OK && i < count; i++) {
            engine_model *previous = NULL;
            engine_model *existing = find_model(engine, specs[i].name, &previous);
            if (!existing) {
                append_model(engine, versions[i]);
                counts.added++;
            } else if (same_model(existing, versions[i]->kind, &specs[i],
                                  versions[i]->fingerprint)) {
                model_free(versions[i]);
                counts.unchanged++;
            } else {
                replace_version(engine, existing, previous, versions[i]);
                counts.reloaded++;
            }
            versions[i] = NULL;
        }
        engine_model *previous = NULL;
        engine_model *model = status == NXE_OK ? engine->models : NULL;
        while (model) {
            engine_model *next = model->next;
            bool listed = false;
            for (int32_t i = 0; i < count && !listed; i++)
                listed = strcmp(specs[i].name, model->name) == 0;
            if (listed) {
                previous = model;
            } else {
                retire_model(engine, model, previous);
                counts.removed++;
            }
            model = next;
        }
        pthread_mutex_unlock(&engine->lock);
    }
    for (int32_t i = 0; i < count; i++)
        model_free(versions[i]);
    nxe_free(versions);
    if (status == NXE_OK && report)
        *report = counts;
    return status;
}

/* Queues a load or unload job for a model and waits for the worker to carry it out. */
static nxe_status run_job(nxe_engine *engine, const char *name, job_type job, const char *where)
{
    if (!engine || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         engine ? "name" : "engine");
    nxe_engine_request *request;
    nxe_status status = request_create(job, &request);
    if (status != NXE_OK)
        return status;
    atomic_store(&request->refs, 2); /* the caller's and the engine's */
    pthread_mutex_lock(&engine->lock);
    engine_model *model = find_model(engine, name, NULL);
    if (engine->stopping)
        status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: the engine is being released", where);
    else if (!model)
        status = nxe_error(NXE_ERROR_NOT_FOUND, "%s: no model '%s'", where, name);
    else if (job == JOB_UNLOAD && model->queued > 0)
        status = nxe_error(NXE_ERROR_BUSY, "%s: requests for model '%s' are queued or running",
                           where, name);
    if (status == NXE_OK) {
        request->engine = engine;
        request->model = model;
        request->submitted = monotonic_now();
        model->queued++;
        model->history->queued++;
        if (job == JOB_UNLOAD)
            queue_prepend(engine, request);
        else
            queue_append(engine, request);
        pthread_cond_signal(&engine->wake);
    }
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK) {
        atomic_store(&request->refs, 1);
        request_unref(request);
        return status;
    }
    pthread_mutex_lock(&request->lock);
    while (!atomic_load(&request->finished))
        pthread_cond_wait(&request->finished_cond, &request->lock);
    status = request->status;
    if (status != NXE_OK)
        nxe_error(status, "%s: %s", where, request->error);
    pthread_mutex_unlock(&request->lock);
    request_unref(request);
    return status;
}

NXE_API nxe_status nxe_engine_load_model(nxe_engine *engine, const char *name)
{
    return run_job(engine, name, JOB_LOAD, "nxe_engine_load_model");
}

NXE_API nxe_status nxe_engine_unload_model(nxe_engine *engine, const char *name)
{
    return run_job(engine, name, JOB_UNLOAD, "nxe_engine_unload_model");
}

/* ---- model info and stats ---- */

NXE_API nxe_status nxe_engine_model_count(const nxe_engine *engine, int32_t *count)
{
    if (count)
        *count = 0;
    if (!engine || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_model_count: %s is NULL",
                         engine ? "count" : "engine");
    nxe_engine *e = (nxe_engine *)engine;
    pthread_mutex_lock(&e->lock);
    for (const engine_model *m = e->models; m; m = m->next)
        (*count)++;
    pthread_mutex_unlock(&e->lock);
    return NXE_OK;
}

static void describe_model(const engine_model *model, nxe_engine_model_info *info)
{
    uint32_t struct_size = info->struct_size;
    memset(info, 0, sizeof *info);
    info->struct_size = struct_size;
    snprintf(info->name, sizeof info->name, "%s", model->name);
    snprintf(info->kind, sizeof info->kind, "%s", model->kind->name);
    info->state = model->state;
    info->idle_s = monotonic_now() - model->history->idle_since;
    info->keep_alive_s = model->keep_alive_s;
    info->resident_bytes = model->instance ? model->resident_bytes : 0;
    info->requests = model->history->requests;
    info->loads = model->history->loads;
    info->evictions = model->history->evictions;
    info->queued = model->history->queued;
    info->last_used = model->history->last_used_unix;
    memcpy(info->fingerprint, model->fingerprint, 32);
    if (model->state == NXE_MODEL_FAILED)
        snprintf(info->error, sizeof info->error, "%s", model->error);
}

static nxe_status model_info(const nxe_engine *engine, const char *name, int32_t index,
                             nxe_engine_model_info *info, const char *where)
{
    if (!engine || !info || (index < 0 && !name))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !engine ? "engine"
                         : !info ? "info"
                                 : "name");
    if (info->struct_size < sizeof(nxe_engine_model_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_engine_model_info));
    nxe_engine *e = (nxe_engine *)engine;
    pthread_mutex_lock(&e->lock);
    const engine_model *found = NULL;
    int32_t i = 0;
    for (const engine_model *m = e->models; m && !found; m = m->next, i++)
        if (name ? strcmp(m->name, name) == 0 : i == index)
            found = m;
    if (found)
        describe_model(found, info);
    pthread_mutex_unlock(&e->lock);
    if (!found)
        return name ? nxe_error(NXE_ERROR_NOT_FOUND, "%s: no model '%s'", where, name)
                    : nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is out of range", where, index);
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_model_info_at(const nxe_engine *engine, int32_t index,
                                            nxe_engine_model_info *info)
{
    if (index < 0)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_engine_model_info_at: index %d is negative",
                         index);
    return model_info(engine, NULL, index, info, "nxe_engine_model_info_at");
}

NXE_API nxe_status nxe_engine_model_info_by_name(const nxe_engine *engine, const char *name,
                                                 nxe_engine_model_info *info)
{
    return model_info(engine, name, -1, info, "nxe_engine_model_info_by_name");
}

NXE_API nxe_status nxe_engine_get_stats(const nxe_engine *engine, nxe_engine_stats *stats)
{
    const char *where = "nxe_engine_get_stats";
    if (!engine || !stats)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         engine ? "stats" : "engine");
    if (stats->struct_size < sizeof(nxe_engine_stats))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: stats.struct_size is %u, expected at least %zu", where,
                         stats->struct_size, sizeof(nxe_engine_stats));
    nxe_engine *e = (nxe_engine *)engine;
    pthread_mutex_lock(&e->lock);
    *stats = e->stats;
    stats->queue_depth = e->depth;
    resident_totals(e, &stats->resident_models, &stats->resident_bytes);
    pthread_mutex_unlock(&e->lock);
    return NXE_OK;
}

/* ---- requests ---- */

static nxe_status copy_inputs(nxe_engine_request *request, const nxe_engine_io *inputs,
                              int32_t count, const char *where)
{
    if (count < 0 || (count > 0 && !inputs))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s", where,
                         count < 0 ? "num_inputs is negative" : "inputs is NULL");
    for (int32_t i = 0; i < count; i++) {
        const nxe_tensor_desc *t = &inputs[i].tensor;
        int32_t dtype = NXE_DTYPE_NONE;
        size_t bytes = 0;
        if (!inputs[i].name || !inputs[i].name[0])
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: input %d has no name", where, i);
        for (int32_t j = 0; j < i; j++)
            if (strcmp(inputs[j].name, inputs[i].name) == 0)
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: input '%s' is given twice", where,
                                 inputs[i].name);
        if (t->ndim < 0 || t->ndim > NXE_MAX_RANK || t->reserved != 0 ||
            nxe_dtype_from_dlpack(t->dtype_code, t->dtype_bits, &dtype) != NXE_OK ||
            !nxe_shape_bytes(dtype, t->ndim, t->shape, &bytes))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input '%s' has a bad descriptor (ndim %d, dtype code %d bits "
                             "%d, reserved %d, or a negative or overflowing shape)",
                             where, inputs[i].name, t->ndim, t->dtype_code, t->dtype_bits,
                             t->reserved);
        if (t->data_size < bytes || (bytes > 0 && !t->data))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input '%s' needs %zu bytes, its descriptor has %zu%s", where,
                             inputs[i].name, bytes, t->data_size, t->data ? "" : " and no data");
    }
    request->inputs = nxe_alloc_zeroed(sizeof *request->inputs * (size_t)(count + 1));
    if (!request->inputs)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory copying the inputs", where);
    for (int32_t i = 0; i < count; i++) {
        nxe_engine_io *copy = &request->inputs[i];
        request->num_inputs = i + 1;
        copy->tensor = inputs[i].tensor;
        size_t bytes = 0;
        int32_t dtype = NXE_DTYPE_NONE;
        nxe_dtype_from_dlpack(copy->tensor.dtype_code, copy->tensor.dtype_bits, &dtype);
        nxe_shape_bytes(dtype, copy->tensor.ndim, copy->tensor.shape, &bytes);
        copy->name = nxe_strdup(inputs[i].name);
        copy->tensor.data = nxe_alloc(bytes);
        copy->tensor.data_size = bytes;
        if (!copy->name || !copy->tensor.data)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory copying the inputs",
                             where);
        if (bytes > 0)
            memcpy(copy->tensor.data, inputs[i].tensor.data, bytes);
    }
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_submit(nxe_engine *engine, const char *model,
                                     const nxe_engine_io *inputs, int32_t num_inputs,
                                     const nxe_engine_submit_options *options,
                                     nxe_engine_request **out)
{
    const char *where = "nxe_engine_submit";
    if (out)
        *out = NULL;
    if (!engine || !model || !out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !engine  ? "engine"
                         : !model ? "model"
                                  : "out");
    nxe_engine_submit_options o = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    if (options) {
        if (options->struct_size < sizeof(nxe_engine_submit_options))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu", where,
                             options->struct_size, sizeof(nxe_engine_submit_options));
        o = *options;
    }
    if (!(o.deadline_s >= 0) || isinf(o.deadline_s))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: deadline_s is %g, expected a finite value >= 0", where, o.deadline_s);
    nxe_status status = check_options(o.options, o.num_options, where);
    if (status != NXE_OK)
        return status;
    nxe_engine_request *request;
    status = request_create(JOB_RUN, &request);
    if (status != NXE_OK)
        return status;
    status = copy_inputs(request, inputs, num_inputs, where);
    if (status == NXE_OK) {
        status = copy_options(o.options, o.num_options, &request->options);
        request->num_options = request->options ? o.num_options : 0;
    }
    if (status != NXE_OK) {
        request_unref(request);
        return status;
    }
    request->callback = o.callback;
    request->user_data = o.user_data;
    request->timing.struct_size = sizeof request->timing;
    pthread_mutex_lock(&engine->lock);
    engine_model *found = find_model(engine, model, NULL);
    if (engine->stopping) {
        status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: the engine is being released", where);
    } else if (!found) {
        status = nxe_error(NXE_ERROR_NOT_FOUND, "%s: no model '%s'", where, model);
    } else if (engine->depth >= engine->options.queue_capacity) {
        engine->stats.rejected++;
        status = nxe_error(NXE_ERROR_BUSY,
                           "%s: the queue holds %d requests, its capacity: try again later", where,
                           engine->depth);
    } else {
        atomic_store(&request->refs, 2); /* the caller's and the engine's */
        request->engine = engine;
        request->model = found;
        request->submitted = monotonic_now();
        if (o.deadline_s > 0)
            request->deadline = request->submitted + o.deadline_s;
        found->queued++;
        found->history->queued++;
        engine->depth++;
        engine->stats.submitted++;
        queue_append(engine, request);
        pthread_cond_signal(&engine->wake);
    }
    pthread_mutex_unlock(&engine->lock);
    if (status != NXE_OK) {
        request_unref(request);
        return status;
    }
    *out = request;
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_request_wait(nxe_engine_request *request, double timeout_s)
{
    if (!request)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_request_wait: request is NULL");
    if (isnan(timeout_s))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_request_wait: timeout_s is NaN");
    struct timespec until;
    if (timeout_s >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        double end = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 +
                     (timeout_s > 1e9 ? 1e9 : timeout_s);
        double seconds = floor(end);
        until.tv_sec = (time_t)seconds;
        until.tv_nsec = (long)((end - seconds) * 1e9);
        if (until.tv_nsec >= 1000000000L)
            until.tv_nsec = 999999999L;
    }
    pthread_mutex_lock(&request->lock);
    while (!atomic_load(&request->finished)) {
        if (timeout_s < 0)
            pthread_cond_wait(&request->finished_cond, &request->lock);
        else if (pthread_cond_timedwait(&request->finished_cond, &request->lock, &until) != 0)
            break;
    }
    bool finished = atomic_load(&request->finished);
    pthread_mutex_unlock(&request->lock);
    if (!finished)
        return nxe_error(NXE_ERROR_TIMEOUT,
                         "nxe_engine_request_wait: the request has not finished after %g s",
                         timeout_s);
    return NXE_OK;
}

NXE_API int32_t nxe_engine_request_done(const nxe_engine_request *request)
{
    return request && atomic_load(&((nxe_engine_request *)request)->finished) ? 1 : 0;
}

NXE_API nxe_status nxe_engine_request_cancel(nxe_engine_request *request)
{
    if (!request)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_request_cancel: request is NULL");
    atomic_store(&request->cancel_requested, 1);
    if (atomic_load(&request->finished))
        return NXE_OK;
    /* An unfinished request's engine is alive; pinned, it stays so until this call is done
     * with it even if the request finishes and the engine is released meanwhile. */
    pthread_mutex_lock(&request->lock);
    nxe_engine *engine = atomic_load(&request->finished) ? NULL : request->engine;
    if (engine)
        atomic_fetch_add(&engine->pins, 1);
    pthread_mutex_unlock(&request->lock);
    if (!engine)
        return NXE_OK;
    pthread_mutex_lock(&engine->lock);
    if (request->pending && request->job == JOB_RUN)
        finish_request(engine, request, NXE_ERROR_CANCELLED, "the request was cancelled");
    pthread_mutex_unlock(&engine->lock);
    atomic_fetch_sub(&engine->pins, 1);
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_request_status(const nxe_engine_request *request)
{
    if (!request)
        return NXE_ERROR_INVALID_ARGUMENT;
    if (!atomic_load(&((nxe_engine_request *)request)->finished))
        return NXE_ERROR_INVALID_STATE;
    return request->status;
}

NXE_API const char *nxe_engine_request_error(const nxe_engine_request *request)
{
    if (!request || !atomic_load(&((nxe_engine_request *)request)->finished))
        return "";
    return request->error;
}

NXE_API nxe_status nxe_engine_request_output_count(const nxe_engine_request *request,
                                                   int32_t *count)
{
    const char *where = "nxe_engine_request_output_count";
    if (count)
        *count = 0;
    if (!request || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         request ? "count" : "request");
    if (!atomic_load(&((nxe_engine_request *)request)->finished))
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: the request has not finished", where);
    *count = request->num_outputs;
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_request_output(const nxe_engine_request *request, int32_t index,
                                             nxe_engine_io *out)
{
    const char *where = "nxe_engine_request_output";
    if (out)
        memset(out, 0, sizeof *out);
    if (!request || !out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         request ? "out" : "request");
    if (!atomic_load(&((nxe_engine_request *)request)->finished))
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: the request has not finished", where);
    if (index < 0 || index >= request->num_outputs)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is out of range (%d outputs)", where,
                         index, request->num_outputs);
    *out = request->outputs[index];
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_request_get_timing(const nxe_engine_request *request,
                                                 nxe_engine_request_timing *timing)
{
    const char *where = "nxe_engine_request_get_timing";
    if (!request || !timing)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         request ? "timing" : "request");
    if (timing->struct_size < sizeof(nxe_engine_request_timing))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: timing.struct_size is %u, expected at least %zu", where,
                         timing->struct_size, sizeof(nxe_engine_request_timing));
    nxe_engine_request *r = (nxe_engine_request *)request;
    pthread_mutex_lock(&r->lock);
    if (atomic_load(&r->finished)) {
        *timing = r->timing;
    } else {
        *timing = (nxe_engine_request_timing){sizeof *timing, 0, 0, 0, 0};
    }
    timing->struct_size = sizeof *timing;
    pthread_mutex_unlock(&r->lock);
    return NXE_OK;
}

NXE_API void nxe_engine_request_release(nxe_engine_request *request)
{
    if (!request)
        return;
    nxe_engine_request_cancel(request);
    request_unref(request);
}

/* ---- batches ---- */

static nxe_engine_request *batch_request(const nxe_engine_batch *batch, int32_t index)
{
    return batch && index >= 0 && index < batch->count ? batch->requests[index] : NULL;
}

NXE_API int32_t nxe_engine_batch_size(const nxe_engine_batch *batch)
{
    return batch ? batch->count : 0;
}

NXE_API nxe_status nxe_engine_batch_inputs(const nxe_engine_batch *batch, int32_t request,
                                           const nxe_engine_io **inputs, int32_t *count)
{
    const char *where = "nxe_engine_batch_inputs";
    if (inputs)
        *inputs = NULL;
    if (count)
        *count = 0;
    if (!batch || !inputs || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !batch    ? "batch"
                         : !inputs ? "inputs"
                                   : "count");
    nxe_engine_request *r = batch_request(batch, request);
    if (!r)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: request %d is out of range (batch of %d)", where,
                         request, batch->count);
    *inputs = r->inputs;
    *count = r->num_inputs;
    return NXE_OK;
}

NXE_API const char *nxe_engine_batch_option(const nxe_engine_batch *batch, int32_t request,
                                            const char *key)
{
    nxe_engine_request *r = batch_request(batch, request);
    if (!r || !key)
        return NULL;
    for (int32_t i = 0; i < r->num_options; i++)
        if (strcmp(r->options[i].key, key) == 0)
            return r->options[i].value;
    return NULL;
}

NXE_API int32_t nxe_engine_batch_cancelled(const nxe_engine_batch *batch, int32_t request)
{
    nxe_engine_request *r = batch_request(batch, request);
    if (!r || !stop_due(r, monotonic_now()))
        return 0;
    r->observed_stop = true;
    return 1;
}

NXE_API nxe_status nxe_engine_batch_add_output(nxe_engine_batch *batch, int32_t request,
                                               const char *name, int32_t dtype, int32_t ndim,
                                               const int64_t *shape, nxe_tensor_desc *desc)
{
    const char *where = "nxe_engine_batch_add_output";
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!batch || !name || !desc || (ndim > 0 && !shape))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !batch  ? "batch"
                         : !name ? "name"
                         : !desc ? "desc"
                                 : "shape");
    nxe_engine_request *r = batch_request(batch, request);
    if (!r)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: request %d is out of range (batch of %d)", where,
                         request, batch->count);
    size_t bytes = 0;
    int32_t code = 0, bits = 0;
    if (!nxe_dtype_valid(dtype) || ndim < 0 || ndim > NXE_MAX_RANK ||
        !nxe_shape_bytes(dtype, ndim, shape, &bytes) ||
        nxe_dtype_to_dlpack(dtype, &code, &bits) != NXE_OK)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: output '%s' has a bad dtype (%d) or shape (rank %d)", where, name,
                         dtype, ndim);
    if (r->failed)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: request %d has failed already", where,
                         request);
    for (int32_t i = 0; i < r->num_outputs; i++)
        if (strcmp(r->outputs[i].name, name) == 0)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: output '%s' was added already", where,
                             name);
    nxe_status status = nxe_grow_array((void **)&r->outputs, &r->outputs_capacity,
                                       r->num_outputs + 1, sizeof *r->outputs);
    if (status != NXE_OK)
        return status;
    char *copy = nxe_strdup(name);
    void *data = nxe_alloc_zeroed(bytes);
    if (!copy || !data) {
        nxe_free(copy);
        nxe_free(data);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of '%s'", where,
                         bytes, name);
    }
    nxe_tensor_desc made = {data, bytes, ndim, code, bits, 0, {0}};
    for (int32_t d = 0; d < ndim; d++)
        made.shape[d] = shape[d];
    r->outputs[r->num_outputs++] = (nxe_engine_io){copy, made};
    *desc = made;
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_batch_fail(nxe_engine_batch *batch, int32_t request,
                                         nxe_status status, const char *message)
{
    const char *where = "nxe_engine_batch_fail";
    if (!batch || status == NXE_OK)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s", where,
                         batch ? "status is NXE_OK" : "batch is NULL");
    nxe_engine_request *r = batch_request(batch, request);
    if (!r)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: request %d is out of range (batch of %d)", where,
                         request, batch->count);
    free_outputs(r);
    r->failed = true;
    r->status = status;
    snprintf(r->error, sizeof r->error, "%s",
             message && message[0] ? message : "the kind failed it");
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_batch_set_progress(nxe_engine_batch *batch, int32_t request,
                                                 double fraction)
{
    const char *where = "nxe_engine_batch_set_progress";
    if (!batch)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: batch is NULL", where);
    nxe_engine_request *r = batch_request(batch, request);
    if (!r)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: request %d is out of range (batch of %d)", where,
                         request, batch->count);
    if (!(fraction >= 0.0 && fraction <= 1.0))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: fraction %g is not in [0, 1]", where,
                         fraction);
    uint64_t bits;
    memcpy(&bits, &fraction, sizeof bits);
    atomic_store(&r->progress, bits);
    return NXE_OK;
}

NXE_API nxe_status nxe_engine_request_progress(const nxe_engine_request *request, double *fraction)
{
    if (fraction)
        *fraction = 0.0;
    if (!request || !fraction)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_engine_request_progress: %s is NULL",
                         request ? "fraction" : "request");
    nxe_engine_request *r = (nxe_engine_request *)request;
    if (nxe_engine_request_status(request) == NXE_OK) {
        *fraction = 1.0;
        return NXE_OK;
    }
    uint64_t bits = atomic_load(&r->progress);
    memcpy(fraction, &bits, sizeof bits);
    return NXE_OK;
}

/* ---- Option values (engine_internal.h) ---------------------------------------------------- */

nxe_status nxe_engine_parse_bool(const char *what, const char *key, const char *value, int32_t *out)
{
    if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
        *out = 1;
    else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
        *out = 0;
    else
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s %s is '%s', expected true or false", what,
                         key, value);
    return NXE_OK;
}

nxe_status nxe_engine_parse_int(const char *what, const char *key, const char *value, long low,
                                long high, int32_t *out)
{
    char *end = NULL;
    long n = strtol(value, &end, 10);
    if (!value[0] || *end || n < low || n > high)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s %s is '%s', expected an integer from %ld to %ld", what, key, value,
                         low, high);
    *out = (int32_t)n;
    return NXE_OK;
}
