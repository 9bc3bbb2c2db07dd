/* nxe_engine.h — the multi-model engine of libnxe: one process holding several models by name,
 * loading them when a request names them, evicting the least recently used, and running all
 * their work in order on one device worker thread. Plain C99; parses with pycparser after
 * `cc -E`. Link with -lnxe.
 *
 * A worked example (a `tensor` model answering one request):
 *
 *   nxe_engine *engine;
 *   nxe_engine_options opts = NXE_ENGINE_OPTIONS_INIT;
 *   opts.max_resident = 2;
 *   if (nxe_engine_create(&opts, &engine) != NXE_OK) puts(nxe_last_error());
 *   nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
 *   spec.name = "scorer"; spec.kind = "tensor"; spec.path = "scorer.nxm";
 *   nxe_engine_add_model(engine, &spec);
 *   nxe_engine_io in = {"x", {x, sizeof x, 2, NXE_DLPACK_FLOAT, 32, 0, {1, 16}}};
 *   nxe_engine_request *req;
 *   nxe_engine_submit(engine, "scorer", &in, 1, NULL, &req);   // returns at once
 *   nxe_engine_request_wait(req, -1);                           // or poll, or a callback
 *   if (nxe_engine_request_status(req) == NXE_OK) {
 *       nxe_engine_io out;
 *       nxe_engine_request_output(req, 0, &out);                // owned by the request
 *   }
 *   nxe_engine_request_release(req);
 *   nxe_engine_release(engine);
 *
 * Model kinds are pipelines registered by name (nxe_engine_register_kind): a frontend (request
 * inputs → tensors), an encoder (one or more executables, possibly a decode loop) and a head
 * (tensors → the request's outputs). libnxe registers the kind "tensor" in every engine: named
 * tensors in and out of any model file (.nxm) or compiled binary (.nxb); and, since 0.8, the
 * kind "embedding": a baked text embedding model (`nxe bake`), each request's input "text"
 * (u8 [n], UTF-8) or "input_ids" (i32 or i64 [n], without special tokens), its options
 * "normalize", "dimensions" and "truncate", its outputs "embedding" (f32 [dims]) and "tokens"
 * (i64 [1]); since 0.9, the kind "asr": a baked Whisper model, each request's input "pcm" (f32
 * [n], 16 kHz mono) and options ("language", "task", "prompt", "temperature", "beam_size",
 * ...), its outputs "text", "language", "segments" (u8: UTF-8, the segments as JSON) and
 * "duration" (f64 [1]); docs/architecture.md describes them. libnxe_sr adds
 * "super_resolution" with nxe_sr_engine_register (nxe_sr.h); other kinds come the same way.
 *
 * The worker: every model's load, run and unload happens on the engine's one worker thread, in
 * submission order but for batching (below). A submission copies the inputs and returns at
 * once; a full queue fails at once with NXE_ERROR_BUSY. Residency (which models stay loaded)
 * is decided on the worker between batches, so a model is never unloaded under a request in
 * flight. Batching: a kind that allows it receives up to max_batch_size queued requests for one
 * model together (up to max_batch_tokens tokens, waiting at most max_batch_delay_ms for more).
 *
 * Conventions are nxe.h's: every call that can fail returns an nxe_status and leaves a message
 * for nxe_last_error() on the calling thread; out-params are NULL/0 on failure; pointers the
 * caller passes are borrowed for the call. Every function may be called from any thread, but
 * nxe_engine_release must not overlap other calls on the same engine. Each declaration names
 * the API version (nxe.h's) that added it.
 */
#ifndef NXE_NXE_ENGINE_H
#define NXE_NXE_ENGINE_H

#include "nxe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Engine ---------------------------------------------------------------------------- */

/* Since 0.6. */
typedef struct nxe_engine nxe_engine;
typedef struct nxe_engine_request nxe_engine_request;

/* What residency does when a model must load and the budgets are full. Since 0.6. */
enum nxe_evict_policy {
    NXE_EVICT_LRU = 0, /* unload idle models, least recently used first, until it fits */
    NXE_EVICT_NONE = 1 /* never unload to make room: the request fails with NXE_ERROR_BUSY */
};

/* Default of nxe_engine_options.queue_capacity. Since 0.6. */
#define NXE_ENGINE_DEFAULT_QUEUE_CAPACITY 512

/* Since 0.6. Every field 0 means its default. */
typedef struct nxe_engine_options {
    uint32_t struct_size;        /* sizeof(nxe_engine_options) */
    int32_t queue_capacity;      /* requests submitted and not yet finished; 0 = 512 */
    int32_t max_resident;        /* models loaded at once; 0 = no limit */
    uint64_t max_resident_bytes; /* bytes the loaded models hold together (measured: mapped
                                    and packed weights, arenas, workspaces, staging); 0 = no
                                    limit */
    double idle_unload_s;        /* unload a model idle this long; 0 = never */
    double sweep_interval_s;     /* how often the worker looks for idle models; 0 = 1 s */
    int32_t evict_policy;        /* enum nxe_evict_policy */
    int32_t num_threads;         /* compute threads of each loaded model; 0 = one per CPU */
} nxe_engine_options;
/* Since 0.6. */
#define NXE_ENGINE_OPTIONS_INIT {sizeof(nxe_engine_options), 0, 0, 0, 0.0, 0.0, 0, 0}

/* Creates an engine with its worker thread and the kinds "tensor", (since 0.8) "embedding" and
 * (since 0.9) "asr" registered; `options` may be
 * NULL for defaults. The caller releases it with nxe_engine_release.
 * NXE_ERROR_INVALID_ARGUMENT (out is NULL, a short struct_size, a negative or NaN field, an
 * unknown evict_policy), NXE_ERROR_OUT_OF_MEMORY, NXE_ERROR_INTERNAL (no thread); *out is then
 * NULL. Since 0.6. */
NXE_API nxe_status nxe_engine_create(const nxe_engine_options *options, nxe_engine **out);
/* Stops the worker: requests not yet started finish with NXE_ERROR_CANCELLED (callbacks run),
 * the one in progress completes, every model is unloaded. Requests the caller still holds stay
 * valid until their own release. Since 0.6. */
NXE_API void nxe_engine_release(nxe_engine *engine);

/* ---- Model kinds ------------------------------------------------------------------------
 * A kind's callbacks all run on the engine's worker thread, one at a time, but for
 * `fingerprint`, which reads a file and no instance: it runs on the thread calling
 * nxe_engine_add_model, _replace_model or _apply, maybe while the worker calls others. None
 * may call the engine's own functions except the nxe_engine_batch_* ones on the batch they are given.
 * A callback fails by returning a status other than NXE_OK after setting a message with
 * nxe_engine_set_error (else the engine reports a generic one). */

/* Since 0.6. */
typedef struct nxe_engine_batch nxe_engine_batch;

/* One key = value option of a model or a request (strings, as in the config file).
 * Since 0.6. */
typedef struct nxe_engine_option {
    const char *key;
    const char *value;
} nxe_engine_option;

/* What a kind's load callback gets. Since 0.6. */
typedef struct nxe_engine_load_args {
    uint32_t struct_size;
    const char *name; /* the model's name in the engine */
    const char *path; /* its file */
    const nxe_engine_option *options;
    int32_t num_options;
    int32_t num_threads; /* the engine's num_threads */
} nxe_engine_load_args;

/* Since 0.6. */
typedef struct nxe_engine_kind {
    uint32_t struct_size; /* sizeof(nxe_engine_kind) */
    const char *name;     /* "tensor", "super_resolution", ...: copied */
    void *user_data;      /* handed to every callback; stays the caller's */
    int32_t batchable;    /* nonzero: batches may hold several requests */

    /* Loads the model at args->path into *instance. Required. */
    nxe_status (*load)(void *user_data, const nxe_engine_load_args *args, void **instance);
    /* Releases an instance; never fails. Required. */
    void (*unload)(void *user_data, void *instance);
    /* Bytes the instance holds now (measured, e.g. with nxe_executable_memory_info's
     * resident_bytes); asked after the load and after each batch. Required. */
    uint64_t (*resident_bytes)(void *user_data, void *instance);
    /* The 32 bytes that change when the file's model changes; NULL: the nxe model
     * fingerprint of the file (nxe_model_fingerprint), for .nxm and .nxb files. Optional. */
    nxe_status (*fingerprint)(void *user_data, const char *path, const nxe_engine_option *options,
                              int32_t num_options, uint8_t fingerprint[32]);
    /* The tokens a request counts for max_batch_tokens; NULL: 1 per request. Optional. */
    int64_t (*request_tokens)(void *user_data, void *instance, const nxe_engine_batch *batch,
                              int32_t request);
    /* The pipeline, called in this order for each batch; the kind's own *state carries
     * tensors from one stage to the next and is freed by release_state (called whenever
     * frontend succeeded). frontend and head are optional (NULL: skipped); encoder is
     * required. A stage that fails fails every request of the batch not yet finished with
     * nxe_engine_batch_fail or given its outputs. */
    nxe_status (*frontend)(void *user_data, void *instance, nxe_engine_batch *batch, void **state);
    nxe_status (*encoder)(void *user_data, void *instance, nxe_engine_batch *batch, void *state);
    nxe_status (*head)(void *user_data, void *instance, nxe_engine_batch *batch, void *state);
    void (*release_state)(void *user_data, void *state);
} nxe_engine_kind;

/* Registers a kind in this engine; `kind` and its strings are copied. NXE_ERROR_INVALID_ARGUMENT
 * (a NULL argument, a short struct_size, an empty name, a required callback missing, a name
 * taken). Since 0.6. */
NXE_API nxe_status nxe_engine_register_kind(nxe_engine *engine, const nxe_engine_kind *kind);
/* Sets the calling thread's last error (the message nxe_last_error returns) to `message` and
 * returns `status`: how a kind's callback reports why it failed. Since 0.6. */
NXE_API nxe_status nxe_engine_set_error(nxe_status status, const char *message);

/* ---- Batches: what a kind's callbacks see ------------------------------------------------ */

/* A named tensor: a request's input or output. Since 0.6. */
typedef struct nxe_engine_io {
    const char *name;
    nxe_tensor_desc tensor;
} nxe_engine_io;

/* Requests in the batch (≥ 1). Cannot fail; 0 for NULL. Since 0.6. */
NXE_API int32_t nxe_engine_batch_size(const nxe_engine_batch *batch);
/* Inputs of request `request`: *inputs points at the request's copy, valid for the callback.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_NOT_FOUND (request out of range);
 * *inputs is then NULL and *count 0. Since 0.6. */
NXE_API nxe_status nxe_engine_batch_inputs(const nxe_engine_batch *batch, int32_t request,
                                           const nxe_engine_io **inputs, int32_t *count);
/* The value of a request's option `key` (nxe_engine_submit_options.options), NULL when it
 * has none (or for bad arguments). Valid for the callback. Since 0.6. */
NXE_API const char *nxe_engine_batch_option(const nxe_engine_batch *batch, int32_t request,
                                            const char *key);
/* Nonzero when the request was cancelled or its deadline passed: a long decode loop checks it
 * between steps and stops; the engine finishes the request with that status. Since 0.6. */
NXE_API int32_t nxe_engine_batch_cancelled(const nxe_engine_batch *batch, int32_t request);
/* Adds output `name` to a request: allocates it (64-byte aligned, zeroed) with `dtype`
 * (enum nxe_dtype) and shape, and describes it in *desc for the callback to fill. The memory
 * belongs to the request. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a bad dtype or shape, a
 * name already added, the request already failed), NXE_ERROR_NOT_FOUND (request out of range),
 * NXE_ERROR_OUT_OF_MEMORY; *desc is then all zero. Since 0.6. */
NXE_API nxe_status nxe_engine_batch_add_output(nxe_engine_batch *batch, int32_t request,
                                               const char *name, int32_t dtype, int32_t ndim,
                                               const int64_t *shape, nxe_tensor_desc *desc);
/* Fails one request of the batch with `status` (not NXE_OK) and `message`; its outputs are
 * dropped, the others go on. NXE_ERROR_INVALID_ARGUMENT, NXE_ERROR_NOT_FOUND. Since 0.6. */
NXE_API nxe_status nxe_engine_batch_fail(nxe_engine_batch *batch, int32_t request,
                                         nxe_status status, const char *message);

/* Tells callers how far request `request` has got: `fraction` of its work, from 0 to 1 (a
 * transcription: the audio decoded so far); nxe_engine_request_progress reads it.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL batch, a fraction outside [0, 1] or NaN),
 * NXE_ERROR_NOT_FOUND (request out of range); the progress is then unchanged. Since 0.9. */
NXE_API nxe_status nxe_engine_batch_set_progress(nxe_engine_batch *batch, int32_t request,
                                                 double fraction);

/* ---- Models and desired state ------------------------------------------------------------ */

/* Since 0.6. */
typedef struct nxe_engine_model_spec {
    uint32_t struct_size;             /* sizeof(nxe_engine_model_spec) */
    const char *name;                 /* [A-Za-z0-9._:/-]{1,128} */
    const char *kind;                 /* a registered kind */
    const char *path;                 /* the model file */
    const nxe_engine_option *options; /* handed to the kind's load */
    int32_t num_options;
    double keep_alive_s;       /* idle time before unloading: 0 = the engine's idle_unload_s,
                                  -1 = pinned (never unloaded by idleness or eviction) */
    int32_t max_batch_size;    /* requests per batch, for batchable kinds; 0 = 1 */
    int64_t max_batch_tokens;  /* tokens per batch (kind's request_tokens); 0 = no limit */
    double max_batch_delay_ms; /* longest a request waits for others to batch with; 0 = none */
} nxe_engine_model_spec;
/* Since 0.6. */
#define NXE_ENGINE_MODEL_SPEC_INIT                                                                 \
    {sizeof(nxe_engine_model_spec), NULL, NULL, NULL, NULL, 0, 0.0, 0, 0, 0.0}

/* Adds a model, unloaded: it loads when a request names it (or at once with
 * nxe_engine_load_model). The spec is copied. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a
 * short struct_size, a bad name or value, a name taken), NXE_ERROR_NOT_FOUND (no such kind).
 * Since 0.6. */
NXE_API nxe_status nxe_engine_add_model(nxe_engine *engine, const nxe_engine_model_spec *spec);
/* Replaces a model's spec: requests already queued for it run on the old one, later ones on
 * the new one. NXE_ERROR_NOT_FOUND (no model of that name), else as nxe_engine_add_model.
 * Since 0.6. */
NXE_API nxe_status nxe_engine_replace_model(nxe_engine *engine, const nxe_engine_model_spec *spec);
/* Retires a model: new requests naming it fail with NXE_ERROR_NOT_FOUND; those already queued
 * still run; it is unloaded after them. NXE_ERROR_INVALID_ARGUMENT, NXE_ERROR_NOT_FOUND.
 * Since 0.6. */
NXE_API nxe_status nxe_engine_remove_model(nxe_engine *engine, const char *name);

/* What nxe_engine_apply did. Since 0.6. */
typedef struct nxe_engine_apply_report {
    uint32_t struct_size; /* sizeof(nxe_engine_apply_report) */
    int32_t added;
    int32_t reloaded; /* spec or file fingerprint changed */
    int32_t removed;
    int32_t unchanged;
} nxe_engine_apply_report;

/* Makes the engine's model set exactly `specs`: adds the new names, replaces those whose spec
 * or file fingerprint changed (as nxe_engine_replace_model), removes the names not listed (as
 * nxe_engine_remove_model), and keeps the rest as they are, loaded or not. All or nothing: if
 * any spec is bad (NXE_ERROR_INVALID_ARGUMENT, NXE_ERROR_NOT_FOUND for a kind, a duplicate
 * name) or a file cannot be fingerprinted (NXE_ERROR_IO, NXE_ERROR_FORMAT), nothing changes
 * and the message names the model. `report` may be NULL. Requests in flight are never failed
 * by it. Since 0.6. */
NXE_API nxe_status nxe_engine_apply(nxe_engine *engine, const nxe_engine_model_spec *specs,
                                    int32_t count, nxe_engine_apply_report *report);
/* Loads a model now (on the worker, in queue order) and waits for it, evicting as a request
 * would. The codes of the kind's load, NXE_ERROR_NOT_FOUND, NXE_ERROR_BUSY,
 * NXE_ERROR_OUT_OF_MEMORY (it cannot fit the budget even alone). Since 0.6. */
NXE_API nxe_status nxe_engine_load_model(nxe_engine *engine, const char *name);
/* Unloads a model now if it is resident and idle (a pinned one too). NXE_ERROR_NOT_FOUND,
 * NXE_ERROR_BUSY (requests for it are queued or running). Since 0.6. */
NXE_API nxe_status nxe_engine_unload_model(nxe_engine *engine, const char *name);

/* Since 0.6. */
enum nxe_model_state {
    NXE_MODEL_UNLOADED = 0,
    NXE_MODEL_LOADING = 1,
    NXE_MODEL_RESIDENT = 2,
    NXE_MODEL_FAILED = 3 /* the last load failed; `error` says why; the next request retries */
};

/* Capacity of the strings of nxe_engine_model_info, NUL included. Since 0.6. */
#define NXE_ENGINE_NAME_CAPACITY 129
#define NXE_ENGINE_ERROR_CAPACITY 512

/* Since 0.6. */
typedef struct nxe_engine_model_info {
    uint32_t struct_size; /* sizeof(nxe_engine_model_info) */
    char name[NXE_ENGINE_NAME_CAPACITY];
    char kind[NXE_ENGINE_NAME_CAPACITY];
    int32_t state;           /* enum nxe_model_state */
    double idle_s;           /* since its last request finished (or since added) */
    double keep_alive_s;     /* as in its spec */
    uint64_t resident_bytes; /* 0 unless resident */
    uint64_t requests;       /* requests finished (any status) since added */
    uint64_t loads;          /* loads since added */
    uint64_t evictions;      /* unloads to make room since added */
    int32_t queued;          /* requests waiting or running now */
    double last_used;        /* Unix time of its last request's end; 0 = never */
    uint8_t fingerprint[32]; /* of the spec's file as last applied; all zero if not known */
    char error[NXE_ENGINE_ERROR_CAPACITY]; /* FAILED: the load's message; else "" */
} nxe_engine_model_info;

/* Models in the engine, in the order they were added. NXE_ERROR_INVALID_ARGUMENT; *count is then
 * 0. Since 0.6. */
NXE_API nxe_status nxe_engine_model_count(const nxe_engine *engine, int32_t *count);
/* Describes model `index` (or the one named, with nxe_engine_model_info_by_name).
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a short struct_size), NXE_ERROR_NOT_FOUND;
 * *info is then unchanged. Since 0.6. */
NXE_API nxe_status nxe_engine_model_info_at(const nxe_engine *engine, int32_t index,
                                            nxe_engine_model_info *info);
NXE_API nxe_status nxe_engine_model_info_by_name(const nxe_engine *engine, const char *name,
                                                 nxe_engine_model_info *info);

/* Engine-wide counts. Since 0.6. */
typedef struct nxe_engine_stats {
    uint32_t struct_size; /* sizeof(nxe_engine_stats) */
    int32_t queue_depth;  /* requests submitted and not finished */
    int32_t queue_capacity;
    int32_t resident_models;
    uint64_t resident_bytes;
    uint64_t submitted;
    uint64_t completed; /* NXE_OK */
    uint64_t failed;    /* any other status, cancellations and deadlines included */
    uint64_t rejected;  /* NXE_ERROR_BUSY at submission */
    uint64_t batches;
    uint64_t batched_requests; /* requests over all batches: / batches = mean batch size */
    uint64_t loads;
    uint64_t evictions; /* unloads to make room */
    uint64_t idle_unloads;
} nxe_engine_stats;
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size). Since 0.6. */
NXE_API nxe_status nxe_engine_get_stats(const nxe_engine *engine, nxe_engine_stats *stats);

/* ---- Requests -------------------------------------------------------------------------- */

/* Called once on the worker thread when the request finishes, whatever its status. It may
 * read the request and release it, and must return soon: the worker waits for it. Since 0.6. */
typedef void (*nxe_engine_callback)(nxe_engine_request *request, void *user_data);

/* Since 0.6. */
typedef struct nxe_engine_submit_options {
    uint32_t struct_size;             /* sizeof(nxe_engine_submit_options) */
    double deadline_s;                /* seconds from submission; past it the request finishes with
                                 NXE_ERROR_TIMEOUT (not started, or at the kind's next check);
                                 0 = none */
    nxe_engine_callback callback;     /* NULL: none */
    void *user_data;                  /* for the callback */
    const nxe_engine_option *options; /* per-request options for the kind: copied */
    int32_t num_options;
} nxe_engine_submit_options;
/* Since 0.6. */
#define NXE_ENGINE_SUBMIT_OPTIONS_INIT {sizeof(nxe_engine_submit_options), 0.0, NULL, NULL, NULL, 0}

/* Queues a request for model `model`, copying the inputs and options, and returns at once with
 * a request the caller releases with nxe_engine_request_release. `options` may be NULL.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a bad descriptor or name, a short struct_size,
 * a negative count), NXE_ERROR_NOT_FOUND (no such model), NXE_ERROR_BUSY (the queue holds
 * queue_capacity requests: try again later), NXE_ERROR_INVALID_STATE (the engine is being
 * released), NXE_ERROR_OUT_OF_MEMORY; *out is then NULL and no callback will run.
 * Since 0.6. */
NXE_API nxe_status nxe_engine_submit(nxe_engine *engine, const char *model,
                                     const nxe_engine_io *inputs, int32_t num_inputs,
                                     const nxe_engine_submit_options *options,
                                     nxe_engine_request **out);
/* Waits until the request has finished, at most timeout_s seconds (negative: no limit).
 * NXE_OK when it has finished (its own result is nxe_engine_request_status),
 * NXE_ERROR_TIMEOUT when it has not, NXE_ERROR_INVALID_ARGUMENT for NULL. Since 0.6. */
NXE_API nxe_status nxe_engine_request_wait(nxe_engine_request *request, double timeout_s);
/* 1 when finished, 0 when not, 0 for NULL. Never blocks. Since 0.6. */
NXE_API int32_t nxe_engine_request_done(const nxe_engine_request *request);
/* Asks the request to stop: one not yet started finishes with NXE_ERROR_CANCELLED at once; one
 * running finishes so at the kind's next check, or normally. NXE_ERROR_INVALID_ARGUMENT for
 * NULL; cancelling a finished request does nothing. Since 0.6. */
NXE_API nxe_status nxe_engine_request_cancel(nxe_engine_request *request);
/* The request's result: NXE_OK, the failing status (NXE_ERROR_CANCELLED, NXE_ERROR_TIMEOUT for
 * a deadline, the kind's or the load's code), or NXE_ERROR_INVALID_STATE while it has not
 * finished. NXE_ERROR_INVALID_ARGUMENT for NULL. Does not touch nxe_last_error. Since 0.6. */
NXE_API nxe_status nxe_engine_request_status(const nxe_engine_request *request);
/* The message of a failed request ("" otherwise); owned by the request. Since 0.6. */
NXE_API const char *nxe_engine_request_error(const nxe_engine_request *request);
/* Outputs of a finished request, in the order the kind added them; each name and buffer is
 * owned by the request (valid until its release). NXE_ERROR_INVALID_ARGUMENT,
 * NXE_ERROR_INVALID_STATE (not finished), NXE_ERROR_NOT_FOUND (index out of range); *out is
 * then all zero (*count 0). Since 0.6. */
NXE_API nxe_status nxe_engine_request_output_count(const nxe_engine_request *request,
                                                   int32_t *count);
NXE_API nxe_status nxe_engine_request_output(const nxe_engine_request *request, int32_t index,
                                             nxe_engine_io *out);

/* How far the request has got, from 0 to 1, as its kind last reported it (0 when it reports
 * nothing; 1 once the request has finished with NXE_OK). Never blocks.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument); *fraction is then 0. Since 0.9. */
NXE_API nxe_status nxe_engine_request_progress(const nxe_engine_request *request, double *fraction);

/* Since 0.6. Seconds the request waited in the queue and ran (0 until finished), and the size
 * of the batch it ran in (0 if it never ran). */
typedef struct nxe_engine_request_timing {
    uint32_t struct_size; /* sizeof(nxe_engine_request_timing) */
    double queued_s;
    double run_s;
    int32_t batch_size;
    int32_t loaded_model; /* nonzero: the model was loaded for this request */
} nxe_engine_request_timing;
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a short struct_size). Since 0.6. */
NXE_API nxe_status nxe_engine_request_get_timing(const nxe_engine_request *request,
                                                 nxe_engine_request_timing *timing);
/* Releases the caller's hold; a request not finished is cancelled first (no callback is lost:
 * it still runs). NULL is a no-op. Since 0.6. */
NXE_API void nxe_engine_request_release(nxe_engine_request *request);

#ifdef __cplusplus
}
#endif
#endif /* NXE_NXE_ENGINE_H */
