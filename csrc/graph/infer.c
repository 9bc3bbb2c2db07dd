/* infer.c — shape inference over a whole graph: bindings checked, ops ordered (Kahn's
 * algorithm, naming the ops of any cycle), each op's shape rule run on its inputs' settled dtypes
 * and shapes. The result is kept beside the tensors (never in place of their declarations). */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "graph/graph_internal.h"
#include "graph/state_order.h"

/* Every op bound; every tensor produced or given; every input used. */
static nxe_status check_bindings(const nxe_graph *graph)
{
    for (int32_t i = 0; i < graph->num_ops; i++) {
        const nxe_op *op = graph->ops[i];
        if (!op->inputs_bound || !op->outputs_bound)
            return nxe_error(
                NXE_ERROR_INVALID_GRAPH, "op '%s' ('%s') has no %s bound (nxe_op_bind_%s)",
                nxe_node_type(&op->node), op->node.name, op->inputs_bound ? "outputs" : "inputs",
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
                                             t->name, nxe_node_type(&graph->ops[k]->node),
                                             graph->ops[k]->node.name);
            }
            if (t->producer && t->num_consumers == 0)
                nxe_log(NXE_LOG_WARNING,
                        "tensor '%s' produced by op '%s' is never used; mark it as an output or "
                        "drop it",
                        t->name, t->producer->node.name);
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
                                 op->node.name);
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

/* The ops reading each produced tensor, once per input slot: those of tensor t are
 * consumers[first[t] .. first[t + 1]). Built in one pass over the bindings, so ordering takes
 * time linear in the graph's size. */
typedef struct consumer_lists {
    int32_t *first;     /* num_tensors + 1 entries */
    int32_t *consumers; /* one per bound input whose tensor has a producer */
} consumer_lists;

static nxe_status consumer_lists_build(const nxe_graph *graph, consumer_lists *lists)
{
    size_t edges = 0;
    for (int32_t i = 0; i < graph->num_ops; i++)
        edges += (size_t)graph->ops[i]->num_inputs;
    lists->first = nxe_alloc_zeroed(sizeof(int32_t) * ((size_t)graph->num_tensors + 2));
    lists->consumers = nxe_alloc(sizeof(int32_t) * (edges + 1));
    if (!lists->first || !lists->consumers)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    int32_t *first = lists->first;
    for (int32_t i = 0; i < graph->num_ops; i++)
        for (int32_t j = 0; j < graph->ops[i]->num_inputs; j++)
            if (graph->ops[i]->inputs[j] && graph->ops[i]->inputs[j]->producer)
                first[graph->ops[i]->inputs[j]->index + 2]++;
    /* first[t + 2] counted t's consumers; after the prefix sum first[t + 1] is where t's list
     * starts and the fill below advances it to where the list ends. */
    for (int32_t t = 0; t < graph->num_tensors; t++)
        first[t + 2] += first[t + 1];
    for (int32_t i = 0; i < graph->num_ops; i++)
        for (int32_t j = 0; j < graph->ops[i]->num_inputs; j++)
            if (graph->ops[i]->inputs[j] && graph->ops[i]->inputs[j]->producer)
                lists->consumers[first[graph->ops[i]->inputs[j]->index + 1]++] = i;
    return NXE_OK;
}

static nxe_status topological_order(const nxe_graph *graph, int32_t *order)
{
    int32_t n = graph->num_ops;
    int32_t *pending = nxe_alloc_zeroed(sizeof(int32_t) * (size_t)(n ? n : 1));
    int32_t *queue = nxe_alloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    consumer_lists lists = {0};
    nxe_status status = NXE_OK;
    if (!pending || !queue)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (status == NXE_OK)
        status = consumer_lists_build(graph, &lists);
    if (status != NXE_OK) {
        nxe_free(pending);
        nxe_free(queue);
        nxe_free(lists.first);
        nxe_free(lists.consumers);
        return status;
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
            const int32_t produced = op->outputs[o]->index;
            for (int32_t c = lists.first[produced]; c < lists.first[produced + 1]; c++)
                if (--pending[lists.consumers[c]] == 0)
                    queue[tail++] = lists.consumers[c];
        }
    }
    status = head == n ? NXE_OK : report_cycle(graph, pending);
    nxe_free(pending);
    nxe_free(queue);
    nxe_free(lists.first);
    nxe_free(lists.consumers);
    return status;
}

static nxe_status check_dtype_mask(const nxe_op *op, bool outputs, int32_t index,
                                   const nxe_tensor *t, int32_t dtype)
{
    const char *what = outputs ? "output" : "input";
    const nxe_op_param_info *param = nxe_node_param(&op->node, outputs, index);
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
                     nxe_node_type(&op->node), op->node.name, what, index, param->name, t->name,
                     nxe_dtype_name(dtype), accepted);
}

/* A tensor of `value`'s dtype and shape takes at most `max_bytes`; `producer` is the op whose
 * rule made the shape (NULL for a tensor as declared). Checked before any later rule or the
 * memory plan sees the shape, so no size derived from it can wrap. */
static nxe_status check_tensor_bytes(const nxe_op *producer, const nxe_tensor *t,
                                     const nxe_value *value, uint64_t max_bytes)
{
    /* Strides are products of trailing dimensions, which a zero dimension elsewhere does not
     * bound, so every dimension counts here, a zero as one. */
    int64_t extent[NXE_MAX_RANK];
    bool empty = false;
    for (int32_t i = 0; i < value->ndim; i++) {
        empty = empty || value->shape[i] == 0;
        extent[i] = value->shape[i] ? value->shape[i] : 1;
    }
    size_t bytes;
    if (nxe_shape_bytes(value->dtype, value->ndim, extent, &bytes) && bytes <= max_bytes)
        return NXE_OK;
    char by[NXE_LIMIT_TYPE_NAME + NXE_LIMIT_NAME + 16] = "";
    if (producer)
        snprintf(by, sizeof by, "op '%s' ('%s'): ", nxe_node_type(&producer->node),
                 producer->node.name);
    char shape[128];
    nxe_shape_str(value->ndim, value->shape, shape, sizeof shape);
    if (!nxe_shape_bytes(value->dtype, value->ndim, extent, &bytes))
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "%stensor '%s' (%s %s) has %s than a size can count", by, t->name,
                         nxe_dtype_name(value->dtype), shape,
                         empty ? "no elements but strides larger" : "more bytes");
    if (empty)
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "%stensor '%s' (%s %s) has no elements but its nonzero dimensions span "
                         "%zu bytes, above the limit of %llu bytes per tensor (raise "
                         "nxe_limits.max_tensor_bytes)",
                         by, t->name, nxe_dtype_name(value->dtype), shape, bytes,
                         (unsigned long long)max_bytes);
    return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                     "%stensor '%s' (%s %s) takes %zu bytes, above the limit of %llu bytes per "
                     "tensor (raise nxe_limits.max_tensor_bytes)",
                     by, t->name, nxe_dtype_name(value->dtype), shape, bytes,
                     (unsigned long long)max_bytes);
}

/* Compares what an op rule produced with what the user declared. */
static nxe_status check_output(const nxe_op *op, int32_t index, const nxe_tensor *t,
                               const nxe_value *value, uint64_t max_tensor_bytes)
{
    const char *type = nxe_node_type(&op->node);
    if (!nxe_dtype_valid(value->dtype) || value->ndim < 0 || value->ndim > NXE_MAX_RANK)
        return nxe_error(NXE_ERROR_INTERNAL, "op '%s' ('%s') left output %d undetermined", type,
                         op->node.name, index);
    for (int32_t i = 0; i < value->ndim; i++)
        if (value->shape[i] < 0)
            return nxe_error(NXE_ERROR_INTERNAL, "op '%s' ('%s') gave output %d a negative dim",
                             type, op->node.name, index);
    nxe_status status = check_dtype_mask(op, true, index, t, value->dtype);
    if (status != NXE_OK)
        return status;
    if (t->dtype != NXE_DTYPE_NONE && t->dtype != value->dtype)
        return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                         "op '%s' ('%s') produces %s for tensor '%s', which is declared %s", type,
                         op->node.name, nxe_dtype_name(value->dtype), t->name,
                         nxe_dtype_name(t->dtype));
    bool shape_conflict = t->ndim >= 0 && t->ndim != value->ndim;
    for (int32_t i = 0; !shape_conflict && t->ndim >= 0 && i < t->ndim; i++)
        shape_conflict = t->shape[i] >= 0 && t->shape[i] != value->shape[i];
    if (shape_conflict) {
        char produced[128], declared[128];
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "op '%s' ('%s') produces shape %s for tensor '%s', which is declared %s",
                         type, op->node.name,
                         nxe_shape_str(value->ndim, value->shape, produced, sizeof produced),
                         t->name, nxe_shape_str(t->ndim, t->shape, declared, sizeof declared));
    }
    return check_tensor_bytes(op, t, value, max_tensor_bytes);
}

/* Runs one op's rule on the values settled so far and settles its outputs. */
static nxe_status infer_op(nxe_graph *graph, const nxe_op *op, uint64_t max_tensor_bytes,
                           void **params)
{
    nxe_value *settled = graph->inferred;
    const nxe_op_def *def = op->node.def;
    nxe_value *inputs = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_inputs + 1));
    nxe_value *outputs = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(op->num_outputs + 1));
    *params = nxe_alloc_zeroed(def->params_size ? def->params_size : 1);
    nxe_status status = NXE_OK;
    if (!inputs || !outputs || !*params)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t j = 0; status == NXE_OK && j < op->num_inputs; j++) {
        const nxe_tensor *t = op->inputs[j];
        if (!t) {
            inputs[j] = (nxe_value){.dtype = NXE_DTYPE_NONE, .quant = &nxe_no_quant};
            continue;
        }
        inputs[j] = settled[t->index];
        if (t->kind == NXE_TENSOR_CONSTANT)
            inputs[j].data = t->data;
        status = check_dtype_mask(op, false, j, t, inputs[j].dtype);
    }
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++)
        outputs[j] = settled[op->outputs[j]->index];
    if (status == NXE_OK)
        status = def->infer(&op->node, inputs, op->num_inputs, outputs, op->num_outputs, *params);
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++)
        status = check_output(op, j, op->outputs[j], &outputs[j], max_tensor_bytes);
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++) {
        nxe_value *value = &settled[op->outputs[j]->index];
        value->dtype = outputs[j].dtype;
        value->ndim = outputs[j].ndim;
        memcpy(value->shape, outputs[j].shape, sizeof value->shape);
    }
    nxe_free(inputs);
    nxe_free(outputs);
    return status;
}

/* Starts the graph's record of settled values over: every tensor as declared. */
static nxe_status reset_inferred(nxe_graph *graph)
{
    nxe_free(graph->inferred);
    graph->num_inferred = 0;
    graph->inferred = nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(graph->num_tensors + 1));
    if (!graph->inferred)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        nxe_value *value = &graph->inferred[i];
        *value = (nxe_value){.dtype = t->dtype, .ndim = t->ndim, .quant = &t->quant};
        memcpy(value->shape, t->shape, sizeof value->shape);
    }
    graph->num_inferred = graph->num_tensors;
    return NXE_OK;
}

nxe_status nxe_graph_infer(nxe_graph *graph, uint64_t max_tensor_bytes, nxe_graph_inference *out)
{
    *out = (nxe_graph_inference){0};
    nxe_status status = check_bindings(graph);
    if (status != NXE_OK)
        return status;
    size_t n = (size_t)graph->num_ops + 1;
    out->order = nxe_alloc(sizeof(int32_t) * n);
    out->params = nxe_alloc_zeroed(sizeof(void *) * n);
    if (!out->order || !out->params)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (status == NXE_OK)
        status = nxe_graph_writes_variables(graph) ? nxe_graph_order_with_state(graph, out->order)
                                                   : topological_order(graph, out->order);
    if (status == NXE_OK)
        status = reset_inferred(graph);
    for (int32_t i = 0; status == NXE_OK && i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        if (t->kind != NXE_TENSOR_OUTPUT && t->kind != NXE_TENSOR_TRANSIENT)
            status = check_tensor_bytes(NULL, t, &graph->inferred[i], max_tensor_bytes);
    }
    for (int32_t s = 0; status == NXE_OK && s < graph->num_ops; s++) {
        int32_t index = out->order[s];
        status = infer_op(graph, graph->ops[index], max_tensor_bytes, &out->params[index]);
    }
    if (status != NXE_OK) {
        nxe_graph_inference_free(graph, out);
        return status;
    }
    out->values = graph->inferred;
    return NXE_OK;
}

void nxe_graph_inference_free(const nxe_graph *graph, nxe_graph_inference *inference)
{
    for (int32_t i = 0; inference->params && i < graph->num_ops; i++)
        nxe_free(inference->params[i]);
    nxe_free(inference->params);
    nxe_free(inference->order);
    *inference = (nxe_graph_inference){0};
}
