/* compile.c — turns a graph into an executable: takes the graph's inference (bindings checked,
 * ops ordered, shape rules run: graph/infer.c), makes one step per op, stores equal constants
 * once, copies what the plan needs so the executable outlives the graph, and prepares it. The
 * graph is only read. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"
#include "graph/custom_ops.h"
#include "graph/graph_internal.h"
#include "model/records.h"
#include "runtime/composed.h"
#include "runtime/device.h"
#include "runtime/executable_internal.h"
#include "runtime/relayout.h"
#include "transform/quant_lower.h"

/* One step per op, in the inferred order: a copy of the op's node, its tensors and the params
 * its rule made. Values point at the executable's tensors, whose facts lay_out_tensors fills. */
static nxe_status make_steps(const nxe_graph *graph, nxe_graph_inference *inference,
                             nxe_executable *exe)
{
    for (int32_t s = 0; s < graph->num_ops; s++) {
        const nxe_op *op = graph->ops[inference->order[s]];
        nxe_exe_step *step = &exe->steps[s];
        nxe_status status = nxe_node_copy(&step->node, &op->node);
        if (status != NXE_OK)
            return status;
        step->params = inference->params[op->index];
        inference->params[op->index] = NULL;
        step->num_inputs = op->num_inputs;
        step->num_outputs = op->num_outputs;
        step->input_ids = nxe_alloc(sizeof(int32_t) * (size_t)(op->num_inputs + 1));
        step->output_ids = nxe_alloc(sizeof(int32_t) * (size_t)(op->num_outputs + 1));
        step->input_values = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_inputs + 1));
        step->output_values = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_outputs + 1));
        if (!step->input_ids || !step->output_ids || !step->input_values || !step->output_values)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        for (int32_t j = 0; j < op->num_inputs + op->num_outputs; j++) {
            bool input = j < op->num_inputs;
            const nxe_tensor *t = input ? op->inputs[j] : op->outputs[j - op->num_inputs];
            nxe_value *value =
                input ? &step->input_values[j] : &step->output_values[j - op->num_inputs];
            if (input)
                step->input_ids[j] = t ? t->index : -1;
            else
                step->output_ids[j - op->num_inputs] = t->index;
            *value = t ? inference->values[t->index] : (nxe_value){.dtype = NXE_DTYPE_NONE};
            value->quant = t ? &exe->tensors[t->index].quant : &nxe_no_quant;
        }
    }
    return NXE_OK;
}

/* ---- constants ---- */

/* De-duplication state: constants are keyed on their spec plus the SHA-256 of ALL their
 * bytes (never a prefix), and a digest match is confirmed byte for byte. Digests are computed
 * only for constants whose spec matches an earlier one. */
typedef struct constant_pool {
    int32_t *representative; /* per distinct constant: the first tensor holding it */
    uint8_t (*digests)[32];  /* per tensor */
    bool *hashed;            /* per tensor */
} constant_pool;

static bool same_spec(const nxe_exe_tensor *a, const nxe_exe_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim && a->bytes == b->bytes &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0 &&
           nxe_quant_equal(&a->quant, &b->quant);
}

static const uint8_t *constant_digest(const nxe_graph *graph, constant_pool *pool, int32_t i,
                                      size_t bytes)
{
    if (!pool->hashed[i]) {
        nxe_sha256(graph->tensors[i]->data, bytes, pool->digests[i]);
        pool->hashed[i] = true;
    }
    return pool->digests[i];
}

/* Gives constant tensor `i` its storage: an equal earlier constant's, or a new one (a copy,
 * or the graph's own bytes when `borrow`). */
static nxe_status place_constant(const nxe_graph *graph, nxe_executable *exe, constant_pool *pool,
                                 int32_t i, bool borrow)
{
    nxe_exe_tensor *et = &exe->tensors[i];
    const void *bytes = graph->tensors[i]->data;
    for (int32_t c = 0; c < exe->num_constants; c++) {
        int32_t r = pool->representative[c];
        if (!same_spec(&exe->tensors[r], et))
            continue;
        if (memcmp(constant_digest(graph, pool, r, et->bytes),
                   constant_digest(graph, pool, i, et->bytes), 32) == 0 &&
            memcmp(graph->tensors[r]->data, bytes, et->bytes) == 0) {
            et->constant = c;
            et->storage = exe->constants[c].data;
            return NXE_OK;
        }
    }
    int32_t c = exe->num_constants;
    nxe_exe_constant *constant = &exe->constants[c];
    constant->bytes = et->bytes;
    if (borrow) {
        constant->data = (void *)(uintptr_t)bytes;
    } else {
        constant->data = nxe_alloc(et->bytes);
        if (!constant->data)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                             "compile: out of memory copying %zu bytes of '%s'", et->bytes,
                             et->name);
        memcpy(constant->data, bytes, et->bytes);
        constant->owned = true;
    }
    pool->representative[c] = i;
    exe->num_constants = c + 1;
    exe->constant_bytes += et->bytes;
    et->constant = c;
    et->storage = constant->data;
    return NXE_OK;
}

static nxe_status place_variable(const nxe_graph *graph, nxe_executable *exe, int32_t i,
                                 bool borrow)
{
    nxe_exe_tensor *et = &exe->tensors[i];
    const void *bytes = graph->tensors[i]->data;
    if (borrow) {
        et->storage = (void *)(uintptr_t)bytes;
    } else {
        et->storage = nxe_alloc(et->bytes);
        if (!et->storage)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                             "compile: out of memory copying %zu bytes of '%s'", et->bytes,
                             et->name);
        memcpy(et->storage, bytes, et->bytes);
        et->owns_storage = true;
        /* Kept for nxe_executable_reset_variable. */
        et->initial = nxe_alloc(et->bytes);
        if (!et->initial)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                             "compile: out of memory copying %zu bytes of '%s'", et->bytes,
                             et->name);
        memcpy(et->initial, bytes, et->bytes);
        et->owns_initial = true;
    }
    exe->constant_bytes += et->bytes;
    return NXE_OK;
}

/* ---- tensors and the arena ---- */

static nxe_status describe_tensor(const nxe_tensor *t, const nxe_value *settled, nxe_exe_tensor *et)
{
    et->name = nxe_strdup(t->name);
    et->kind = t->kind;
    et->dtype = settled->dtype;
    et->ndim = settled->ndim;
    memcpy(et->shape, settled->shape, sizeof et->shape);
    et->quant = t->quant;
    if (!et->name)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (t->quant.num_scales > 0) {
        et->scales = nxe_alloc(sizeof(float) * (size_t)t->quant.num_scales);
        if (!et->scales)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        memcpy(et->scales, t->quant.scales, sizeof(float) * (size_t)t->quant.num_scales);
        et->quant.scales = et->scales;
    }
    return NXE_OK;
}

/* Copies tensor facts and data into the executable; marks the tensors the arena will hold. */
static nxe_status lay_out_tensors(const nxe_graph *graph, const nxe_value *settled,
                                  nxe_executable *exe, bool serialize_only)
{
    size_t n = (size_t)graph->num_tensors + 1;
    constant_pool pool = {
        .representative = nxe_alloc(sizeof(int32_t) * n),
        .digests = nxe_alloc(32 * n),
        .hashed = nxe_alloc_zeroed(sizeof(bool) * n),
    };
    exe->constants = nxe_alloc_zeroed(sizeof(nxe_exe_constant) * n);
    nxe_status status = NXE_OK;
    if (!pool.representative || !pool.digests || !pool.hashed || !exe->constants)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t i = 0; i < graph->num_tensors && status == NXE_OK; i++) {
        const nxe_tensor *t = graph->tensors[i];
        nxe_exe_tensor *et = &exe->tensors[i];
        status = describe_tensor(t, &settled[i], et);
        if (status != NXE_OK)
            break;
        bool used = t->producer || t->num_consumers > 0;
        if (!used || et->ndim < 0 || !nxe_dtype_valid(et->dtype))
            continue;
        /* Inference kept every used tensor within the per-tensor limit. */
        nxe_shape_bytes(et->dtype, et->ndim, et->shape, &et->bytes);
        if (t->kind == NXE_TENSOR_CONSTANT) {
            status = place_constant(graph, exe, &pool, i, serialize_only);
        } else if (t->kind == NXE_TENSOR_VARIABLE) {
            status = place_variable(graph, exe, i, serialize_only);
        } else if (t->kind == NXE_TENSOR_TRANSIENT) {
            et->in_arena = true;
            if (!nxe_checked_add_u64(exe->transient_bytes, et->bytes, &exe->transient_bytes))
                status =
                    nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                              "compile: the transient tensors' bytes overflow at '%s'", et->name);
        }
    }
    for (int32_t i = 0; status == NXE_OK && i < exe->num_tensors; i++)
        if (exe->tensors[i].storage)
            exe->data[i] = exe->tensors[i].storage;
    nxe_free(pool.representative);
    nxe_free(pool.digests);
    nxe_free(pool.hashed);
    return status;
}

static nxe_status collect_io(const nxe_graph *graph, nxe_executable *exe)
{
    int32_t n_in = 0, n_out = 0;
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        n_in += graph->tensors[i]->kind == NXE_TENSOR_INPUT;
        n_out += graph->tensors[i]->kind == NXE_TENSOR_OUTPUT;
    }
    exe->input_ids = nxe_alloc(sizeof(int32_t) * (size_t)(n_in + 1));
    exe->output_ids = nxe_alloc(sizeof(int32_t) * (size_t)(n_out + 1));
    if (!exe->input_ids || !exe->output_ids)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        if (graph->tensors[i]->kind == NXE_TENSOR_INPUT)
            exe->input_ids[exe->num_inputs++] = i;
        else if (graph->tensors[i]->kind == NXE_TENSOR_OUTPUT)
            exe->output_ids[exe->num_outputs++] = i;
    }
    return NXE_OK;
}

int32_t nxe_default_thread_count(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online < 1 ? 1 : online > 256 ? 256 : (int32_t)online;
}

/* NXE_WINOGRAD=auto|on|off (or 1|0), for comparing the convolution paths without
 * recompiling a program; anything else, or unset, leaves the cost model. Read at every
 * compile, so that tests and benchmarks can compare the paths in one process. */
static int32_t winograd_mode_of_environment(void)
{
    const char *value = getenv("NXE_WINOGRAD");
    if (value && (strcmp(value, "on") == 0 || strcmp(value, "1") == 0))
        return NXE_WINOGRAD_ON;
    if (value && (strcmp(value, "off") == 0 || strcmp(value, "0") == 0))
        return NXE_WINOGRAD_OFF;
    return NXE_WINOGRAD_AUTO;
}

nxe_status nxe_compile_request_from(const nxe_graph *graph, const nxe_compile_options *options,
                                    const char *where, nxe_compile_request *request)
{
    *request = (nxe_compile_request){0};
    const nxe_limits *limits = &graph->context->limits;
    if (options) {
        /* A 0.4 caller's options end after relax_precision. */
        if (options->struct_size <
            offsetof(nxe_compile_options, relax_precision) + sizeof options->relax_precision)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu "
                             "(initialize with NXE_COMPILE_OPTIONS_INIT)",
                             where, options->struct_size, sizeof(nxe_compile_options));
        request->num_threads = options->num_threads;
        request->relax_precision = options->relax_precision;
        if (options->struct_size >=
                offsetof(nxe_compile_options, limits) + sizeof options->limits &&
            options->limits)
            limits = options->limits;
        /* A 0.5 or 0.6 caller's options end before winograd. */
        if (options->struct_size >=
            offsetof(nxe_compile_options, winograd) + sizeof options->winograd)
            request->winograd = options->winograd;
        if (options->struct_size >= offsetof(nxe_compile_options, device) + sizeof options->device)
            request->device = options->device;
    }
    if (request->winograd != NXE_WINOGRAD_AUTO && request->winograd != NXE_WINOGRAD_OFF &&
        request->winograd != NXE_WINOGRAD_ON)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: options.winograd is %d; expected NXE_WINOGRAD_AUTO (0), "
                         "NXE_WINOGRAD_OFF (1) or NXE_WINOGRAD_ON (2)",
                         where, request->winograd);
    if (request->winograd == NXE_WINOGRAD_AUTO)
        request->winograd = winograd_mode_of_environment();
    nxe_status status = nxe_limits_resolve(limits, where, &request->limits);
    if (status != NXE_OK)
        return status;
    if (request->num_threads < 0 || request->num_threads > 1024)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: num_threads %d is outside [0, 1024]",
                         where, request->num_threads);
    return nxe_device_check(request->device, where);
}

static nxe_status compile_graph(nxe_graph *graph, const nxe_compile_request *request, bool borrow,
                                nxe_executable **out);

/* Composed ops compile as their bodies, in an expanded copy of the graph that is compiled
 * through here again; ordinary ops on quantized tensors compile from a lowered working copy of
 * the graph (transform/quant_lower.c), whose constants the plan then owns. */
nxe_status nxe_compile_graph(nxe_graph *graph, const nxe_compile_request *request,
                             nxe_executable **out)
{
    *out = NULL;
    /* Composed ops compile as their bodies, in a copy of the graph (graph/custom_ops.c). */
    nxe_graph *expanded = NULL;
    nxe_status status = nxe_composed_expand(graph, &expanded);
    if (status != NXE_OK || expanded)
        return status != NXE_OK ? status : nxe_composed_compile(graph, expanded, request, out);
    nxe_graph *lowered = NULL;
    status = nxe_quant_lower(graph, request->limits.max_tensor_bytes, &lowered);
    if (status != NXE_OK || !lowered)
        return status == NXE_OK ? compile_graph(graph, request, true, out) : status;
    status = compile_graph(lowered, request, false, out);
    if (status == NXE_OK)
        status = nxe_quant_lower_settle(graph, lowered);
    nxe_graph_release(lowered);
    if (status != NXE_OK && *out) {
        nxe_executable_release(*out);
        *out = NULL;
    }
    return status;
}

static nxe_status compile_graph(nxe_graph *graph, const nxe_compile_request *request, bool borrow,
                                nxe_executable **out)
{
    *out = NULL;
    nxe_graph_inference inference;
    nxe_status status = nxe_limits_check_ops(&request->limits, graph->num_ops, "compile");
    if (status == NXE_OK)
        status = nxe_graph_infer(graph, request->limits.max_tensor_bytes, &inference);
    if (status != NXE_OK)
        return status;
    nxe_executable *exe = NULL;
    status = nxe_executable_alloc(graph->num_tensors, graph->num_ops, &exe);
    if (status == NXE_OK)
        status = make_steps(graph, &inference, exe);
    if (status == NXE_OK)
        status = lay_out_tensors(graph, inference.values, exe, request->serialize_only && borrow);
    nxe_graph_inference_free(graph, &inference);
    if (status == NXE_OK)
        status = nxe_executable_relayout(exe); /* the layout pass (transform/layout.c) */
    if (status == NXE_OK)
        status = collect_io(graph, exe);
    if (status == NXE_OK) {
        exe->relax_precision = request->relax_precision;
        exe->winograd = request->winograd;
        if (graph->has_source_fingerprint)
            memcpy(exe->fingerprint, graph->source_fingerprint, sizeof exe->fingerprint);
        /* A plan to be written keeps every step unprepared: the loader prepares it for its
         * own CPU. */
        if (!request->serialize_only)
            status = nxe_executable_prepare(exe);
    }
    if (status == NXE_OK && !request->serialize_only)
        status = nxe_executable_init_staging(exe, request->staging_bytes,
                                             request->limits.max_arena_bytes, "compile");
    if (status == NXE_OK && !request->serialize_only)
        status = nxe_device_make_pool(request->device, request->num_threads,
                                      nxe_default_thread_count(), &exe->pool);
    if (status != NXE_OK) {
        nxe_executable_release(exe);
        return status;
    }
    *out = exe;
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_compile(nxe_graph *graph, const nxe_compile_options *options,
                                     nxe_executable **out)
{
    const char *where = "nxe_graph_compile";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out must not be NULL", where);
    *out = NULL;
    if (!graph)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: graph is NULL", where);
    nxe_compile_request request;
    nxe_status status = nxe_compile_request_from(graph, options, where, &request);
    if (status == NXE_OK)
        status = nxe_compile_graph(graph, &request, out);
    if (status == NXE_OK && nxe_device_is_remote(request.device)) {
        status = nxe_device_place_remote(request.device, graph, options, NULL, 0, *out, where);
        if (status != NXE_OK) {
            nxe_executable_release(*out);
            *out = NULL;
        }
    }
    if (status != NXE_OK)
        return status;
    nxe_executable *exe = *out;
    nxe_log(NXE_LOG_INFO,
            "compiled %d ops into %d steps, arena %llu bytes (%llu without sharing), %d distinct "
            "constants, %d threads",
            graph->num_ops, exe->num_steps, (unsigned long long)exe->arena_bytes,
            (unsigned long long)exe->transient_bytes, exe->num_constants,
            nxe_thread_pool_size(exe->pool));
    return NXE_OK;
}
