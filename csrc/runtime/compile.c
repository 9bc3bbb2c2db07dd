/* compile.c — turns a graph into an executable: checks bindings, orders ops topologically
 * (naming the ops of any cycle), runs each op's shape/dtype rule, plans the arena, stores
 * equal constants once and copies what the plan needs so the executable outlives the graph. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"
#include "graph/graph_internal.h"
#include "model/graph_codec.h"
#include "runtime/executable_internal.h"

/* Every op bound; every tensor produced or given; every input used. */
static nxe_status check_bindings(const nxe_graph *graph)
{
    for (int32_t i = 0; i < graph->num_ops; i++) {
        const nxe_op *op = graph->ops[i];
        if (!op->inputs_bound || !op->outputs_bound)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "op '%s' ('%s') has no %s bound (nxe_op_bind_%s)",
                             op->def->info.name, op->name, op->inputs_bound ? "outputs" : "inputs",
                             op->inputs_bound ? "outputs" : "inputs");
    }
    bool has_output = false;
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        switch (t->kind) {
        case NXE_TENSOR_INPUT:
            if (t->num_consumers == 0)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "input tensor '%s' is not consumed by any op", t->name);
            break;
        case NXE_TENSOR_CONSTANT:
            if (!t->data && t->num_consumers > 0)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "constant tensor '%s' has no data (nxe_tensor_set_data)", t->name);
            break;
        case NXE_TENSOR_VARIABLE:
            if (!t->data)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "variable tensor '%s' has no initial data (nxe_tensor_set_data)",
                                 t->name);
            break;
        case NXE_TENSOR_OUTPUT:
            has_output = true;
            if (!t->producer)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "output tensor '%s' is not produced by any op", t->name);
            break;
        default: /* TRANSIENT */
            if (!t->producer && t->num_consumers > 0) {
                for (int32_t k = 0; k < graph->num_ops; k++)
                    for (int32_t j = 0; j < graph->ops[k]->num_inputs; j++)
                        if (graph->ops[k]->inputs[j] == t)
                            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                             "tensor '%s' is consumed by op '%s' ('%s') but no op "
                                             "produces it",
                                             t->name, graph->ops[k]->def->info.name,
                                             graph->ops[k]->name);
            }
            if (t->producer && t->num_consumers == 0)
                nxe_log(NXE_LOG_WARNING,
                        "tensor '%s' produced by op '%s' is never used; mark it as an output or "
                        "drop it", t->name, t->producer->name);
            break;
        }
    }
    if (!has_output)
        return nxe_error(NXE_ERROR_INVALID_GRAPH, "the graph has no OUTPUT tensor");
    return NXE_OK;
}

/* Describes one cycle among the ops left unordered by Kahn's algorithm. */
static nxe_status report_cycle(const nxe_graph *graph, const int32_t *pending)
{
    int32_t start = -1;
    for (int32_t i = 0; i < graph->num_ops && start < 0; i++)
        if (pending[i] > 0)
            start = i;
    /* Walk backwards through unordered producers; within num_ops steps we must revisit. */
    int32_t current = start;
    for (int32_t step = 0; step < graph->num_ops; step++) {
        const nxe_op *op = graph->ops[current];
        for (int32_t j = 0; j < op->num_inputs; j++) {
            const nxe_tensor *t = op->inputs[j];
            if (t && t->producer && pending[t->producer->index] > 0) {
                current = t->producer->index;
                break;
            }
        }
    }
    char path[600];
    size_t used = 0;
    int32_t node = current;
    for (int32_t step = 0; step <= graph->num_ops && used < sizeof path; step++) {
        const nxe_op *op = graph->ops[node];
        used += (size_t)snprintf(path + used, sizeof path - used, "%s'%s'", step ? " <- " : "",
                                 op->name);
        if (step > 0 && node == current)
            break;
        for (int32_t j = 0; j < op->num_inputs; j++) {
            const nxe_tensor *t = op->inputs[j];
            if (t && t->producer && pending[t->producer->index] > 0) {
                node = t->producer->index;
                break;
            }
        }
    }
    return nxe_error(NXE_ERROR_INVALID_GRAPH, "the graph has a cycle through ops %s", path);
}

static nxe_status topological_order(const nxe_graph *graph, int32_t *order)
{
    int32_t n = graph->num_ops;
    int32_t *pending = nxe_alloc_zeroed(sizeof(int32_t) * (size_t)(n ? n : 1));
    int32_t *queue = nxe_alloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!pending || !queue) {
        nxe_free(pending);
        nxe_free(queue);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < graph->ops[i]->num_inputs; j++)
            if (graph->ops[i]->inputs[j] && graph->ops[i]->inputs[j]->producer)
                pending[i]++;
    int32_t head = 0, tail = 0;
    for (int32_t i = 0; i < n; i++)
        if (pending[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        const nxe_op *op = graph->ops[queue[head]];
        order[head++] = op->index;
        for (int32_t o = 0; o < op->num_outputs; o++) {
            const nxe_tensor *produced = op->outputs[o];
            for (int32_t k = 0; k < n; k++)
                for (int32_t j = 0; j < graph->ops[k]->num_inputs; j++)
                    if (graph->ops[k]->inputs[j] == produced && --pending[k] == 0)
                        queue[tail++] = k;
        }
    }
    nxe_status status = head == n ? NXE_OK : report_cycle(graph, pending);
    nxe_free(pending);
    nxe_free(queue);
    return status;
}

static void value_of_tensor(const nxe_tensor *t, nxe_value *value)
{
    value->dtype = t->inferred_dtype;
    value->ndim = t->inferred_ndim;
    memcpy(value->shape, t->inferred_shape, sizeof value->shape);
    value->quant = &t->quant;
    value->data = t->kind == NXE_TENSOR_CONSTANT ? t->data : NULL;
}

static nxe_status check_dtype_mask(const nxe_op *op, const nxe_op_param_info *params,
                                   int32_t num_params, int32_t index, const char *what,
                                   const nxe_tensor *t, int32_t dtype)
{
    const nxe_op_param_info *param = &params[index < num_params ? index : num_params - 1];
    if (param->dtypes & NXE_MASK(dtype))
        return NXE_OK;
    char accepted[160];
    size_t used = 0;
    accepted[0] = '\0';
    for (int32_t d = NXE_DTYPE_F32; d < NXE_DTYPE_COUNT && used < sizeof accepted; d++)
        if (param->dtypes & NXE_MASK(d))
            used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s",
                                     used ? ", " : "", nxe_dtype_name(d));
    return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                     "op '%s' ('%s'): %s %d ('%s', tensor '%s') has dtype %s; accepted: %s",
                     op->def->info.name, op->name, what, index, param->name, t->name,
                     nxe_dtype_name(dtype), accepted);
}

/* Compares what an op rule produced with what the user declared, then records it. */
static nxe_status settle_output(const nxe_op *op, int32_t index, nxe_tensor *t,
                                const nxe_value *value)
{
    const char *type = op->def->info.name;
    if (!nxe_dtype_valid(value->dtype) || value->ndim < 0 || value->ndim > NXE_MAX_RANK)
        return nxe_error(NXE_ERROR_INTERNAL, "op '%s' ('%s') left output %d undetermined", type,
                         op->name, index);
    for (int32_t i = 0; i < value->ndim; i++)
        if (value->shape[i] < 0)
            return nxe_error(NXE_ERROR_INTERNAL, "op '%s' ('%s') gave output %d a negative dim",
                             type, op->name, index);
    nxe_status status = check_dtype_mask(op, op->def->info.outputs, op->def->info.num_outputs,
                                         index, "output", t, value->dtype);
    if (status != NXE_OK)
        return status;
    if (t->dtype != NXE_DTYPE_NONE && t->dtype != value->dtype)
        return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                         "op '%s' ('%s') produces %s for tensor '%s', which is declared %s", type,
                         op->name, nxe_dtype_name(value->dtype), t->name, nxe_dtype_name(t->dtype));
    bool shape_conflict = t->ndim >= 0 && t->ndim != value->ndim;
    for (int32_t i = 0; !shape_conflict && t->ndim >= 0 && i < t->ndim; i++)
        shape_conflict = t->shape[i] >= 0 && t->shape[i] != value->shape[i];
    if (shape_conflict) {
        char produced[128], declared[128];
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "op '%s' ('%s') produces shape %s for tensor '%s', which is declared %s",
                         type, op->name, nxe_shape_str(value->ndim, value->shape, produced, sizeof produced),
                         t->name, nxe_shape_str(t->ndim, t->shape, declared, sizeof declared));
    }
    int64_t numel;
    size_t bytes;
    if (!nxe_shape_numel(value->ndim, value->shape, &numel) ||
        nxe_mul_overflow_size((size_t)numel, nxe_dtype_size(value->dtype), &bytes))
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH, "op '%s' ('%s'): output '%s' is too large",
                         type, op->name, t->name);
    t->inferred_dtype = value->dtype;
    t->inferred_ndim = value->ndim;
    memcpy(t->inferred_shape, value->shape, sizeof t->inferred_shape);
    return NXE_OK;
}

/* Runs op rules in order; fills each step's params. */
static nxe_status infer_graph(nxe_graph *graph, const int32_t *order, nxe_executable *exe)
{
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        nxe_tensor *t = graph->tensors[i];
        t->inferred_dtype = t->dtype;
        t->inferred_ndim = t->ndim;
        memcpy(t->inferred_shape, t->shape, sizeof t->shape);
    }
    for (int32_t s = 0; s < graph->num_ops; s++) {
        const nxe_op *op = graph->ops[order[s]];
        nxe_exe_step *step = &exe->steps[s];
        step->def = op->def;
        step->source_op = op->index;
        step->num_inputs = op->num_inputs;
        step->num_outputs = op->num_outputs;
        step->op_name = nxe_strdup(op->name);
        step->params = nxe_alloc_zeroed(op->def->params_size ? op->def->params_size : 1);
        step->input_ids = nxe_alloc(sizeof(int32_t) * (size_t)(op->num_inputs + 1));
        step->output_ids = nxe_alloc(sizeof(int32_t) * (size_t)(op->num_outputs + 1));
        step->input_values = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_inputs + 1));
        step->output_values = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_outputs + 1));
        if (!step->op_name || !step->params || !step->input_ids || !step->output_ids ||
            !step->input_values || !step->output_values)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        for (int32_t j = 0; j < op->num_inputs; j++) {
            const nxe_tensor *t = op->inputs[j];
            step->input_ids[j] = t ? t->index : -1;
            if (!t) {
                step->input_values[j] = (nxe_value){.dtype = NXE_DTYPE_NONE,
                                                    .quant = &nxe_no_quant};
                continue;
            }
            value_of_tensor(t, &step->input_values[j]);
            nxe_status status = check_dtype_mask(op, op->def->info.inputs, op->def->info.num_inputs,
                                                 j, "input", t, t->inferred_dtype);
            if (status != NXE_OK)
                return status;
        }
        for (int32_t j = 0; j < op->num_outputs; j++) {
            step->output_ids[j] = op->outputs[j]->index;
            value_of_tensor(op->outputs[j], &step->output_values[j]);
        }
        nxe_status status = op->def->infer(nxe_op_node(op), step->input_values, op->num_inputs,
                                           step->output_values, op->num_outputs, step->params);
        if (status != NXE_OK)
            return status;
        for (int32_t j = 0; j < op->num_outputs; j++) {
            status = settle_output(op, j, op->outputs[j], &step->output_values[j]);
            if (status != NXE_OK)
                return status;
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
    }
    exe->constant_bytes += et->bytes;
    return NXE_OK;
}

/* ---- tensors and the arena ---- */

static nxe_status describe_tensor(const nxe_tensor *t, nxe_exe_tensor *et)
{
    et->name = nxe_strdup(t->name);
    et->kind = t->kind;
    et->dtype = t->inferred_dtype;
    et->ndim = t->inferred_ndim;
    memcpy(et->shape, t->inferred_shape, sizeof et->shape);
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
static nxe_status lay_out_tensors(const nxe_graph *graph, nxe_executable *exe, bool serialize_only)
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
        status = describe_tensor(t, et);
        if (status != NXE_OK)
            break;
        bool used = t->producer || t->num_consumers > 0;
        if (!used || et->ndim < 0 || !nxe_dtype_valid(et->dtype))
            continue;
        int64_t numel;
        nxe_shape_numel(et->ndim, et->shape, &numel);
        et->bytes = (size_t)numel * nxe_dtype_size(et->dtype);
        if (t->kind == NXE_TENSOR_CONSTANT) {
            status = place_constant(graph, exe, &pool, i, serialize_only);
        } else if (t->kind == NXE_TENSOR_VARIABLE) {
            status = place_variable(graph, exe, i, serialize_only);
        } else if (t->kind == NXE_TENSOR_TRANSIENT) {
            et->in_arena = true;
            exe->transient_bytes += et->bytes;
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

/* Steps keep quant pointers into the graph until here; point them at the executable's copies. */
static void rebind_step_values(nxe_executable *exe)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++) {
            if (step->input_ids[j] >= 0) {
                step->input_values[j].quant = &exe->tensors[step->input_ids[j]].quant;
                step->input_values[j].data = NULL;
            }
        }
        for (int32_t j = 0; j < step->num_outputs; j++) {
            step->output_values[j].quant = &exe->tensors[step->output_ids[j]].quant;
            step->output_values[j].data = NULL;
        }
    }
}

int32_t nxe_default_thread_count(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online < 1 ? 1 : online > 256 ? 256 : (int32_t)online;
}

nxe_status nxe_compile_request_from(const nxe_compile_options *options, const char *where,
                                    nxe_compile_request *request)
{
    *request = (nxe_compile_request){0};
    if (options) {
        if (options->struct_size < sizeof(nxe_compile_options))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu "
                             "(initialize with NXE_COMPILE_OPTIONS_INIT)",
                             where, options->struct_size, sizeof(nxe_compile_options));
        request->num_threads = options->num_threads;
        request->relax_precision = options->relax_precision;
    }
    if (request->num_threads < 0 || request->num_threads > 1024)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: num_threads %d is outside [0, 1024]",
                         where, request->num_threads);
    return NXE_OK;
}

nxe_status nxe_compile_graph(nxe_graph *graph, const nxe_compile_request *request,
                             nxe_executable **out)
{
    *out = NULL;
    nxe_status status = check_bindings(graph);
    if (status != NXE_OK)
        return status;
    int32_t *order = nxe_alloc(sizeof(int32_t) * (size_t)(graph->num_ops + 1));
    if (!order)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    status = topological_order(graph, order);
    nxe_executable *exe = NULL;
    if (status == NXE_OK)
        status = nxe_executable_alloc(graph->num_tensors, graph->num_ops, &exe);
    if (status == NXE_OK)
        status = infer_graph(graph, order, exe);
    nxe_free(order);
    if (status == NXE_OK)
        status = lay_out_tensors(graph, exe, request->serialize_only);
    if (status == NXE_OK)
        status = collect_io(graph, exe);
    if (status == NXE_OK) {
        rebind_step_values(exe);
        exe->relax_precision = request->relax_precision;
        if (graph->has_source_fingerprint)
            memcpy(exe->fingerprint, graph->source_fingerprint, sizeof exe->fingerprint);
        /* A plan to be written keeps every step: the loader prepares it for its own CPU. */
        status = request->serialize_only ? nxe_executable_plan_arena(exe)
                                         : nxe_executable_prepare(exe);
    }
    if (status == NXE_OK && !request->serialize_only)
        status = nxe_executable_init_staging(exe, request->staging_bytes, "compile");
    if (status == NXE_OK && !request->serialize_only)
        status = nxe_thread_pool_create(request->num_threads ? request->num_threads
                                                             : nxe_default_thread_count(),
                                        &exe->pool);
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
    nxe_status status = nxe_compile_request_from(options, where, &request);
    if (status == NXE_OK)
        status = nxe_compile_graph(graph, &request, out);
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
