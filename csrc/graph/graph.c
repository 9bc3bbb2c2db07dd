/* graph.c — contexts, graphs, tensors and ops as the C API builds them. Every argument is
 * checked here; the compiler (csrc/runtime/compile.c) checks the graph as a whole. */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "graph/custom_ops.h"
#include "graph/graph_internal.h"

/* ---- contexts ---- */

NXE_API nxe_status nxe_context_create(nxe_context **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_create: out must not be NULL");
    *out = NULL;
    nxe_context *ctx = nxe_alloc_zeroed(sizeof *ctx);
    if (!ctx)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_context_create: out of memory");
    atomic_init(&ctx->refcount, 1);
    nxe_limits_resolve(NULL, "nxe_context_create", &ctx->limits); /* the defaults */
    *out = ctx;
    return NXE_OK;
}

NXE_API nxe_status nxe_context_set_limits(nxe_context *ctx, const nxe_limits *limits)
{
    if (!ctx)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_set_limits: context is NULL");
    nxe_limits resolved;
    nxe_status status = nxe_limits_resolve(limits, "nxe_context_set_limits", &resolved);
    if (status == NXE_OK)
        ctx->limits = resolved;
    return status;
}

NXE_API nxe_status nxe_context_get_limits(const nxe_context *ctx, nxe_limits *out)
{
    if (!ctx || !out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_get_limits: %s is NULL",
                         ctx ? "out" : "context");
    if (out->struct_size < sizeof(nxe_limits))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_context_get_limits: out->struct_size is %u, expected at least %zu "
                         "(initialize with NXE_LIMITS_INIT)",
                         out->struct_size, sizeof(nxe_limits));
    *out = ctx->limits;
    return NXE_OK;
}

NXE_API void nxe_context_release(nxe_context *ctx)
{
    if (ctx && atomic_fetch_sub(&ctx->refcount, 1) == 1) {
        nxe_context_custom_free(ctx);
        nxe_free(ctx);
    }
}

/* ---- graphs ---- */

NXE_API nxe_status nxe_graph_create(nxe_context *ctx, nxe_graph **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_create: out must not be NULL");
    *out = NULL;
    if (!ctx)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_create: context is NULL");
    nxe_graph *graph = nxe_alloc_zeroed(sizeof *graph);
    if (!graph)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_create: out of memory");
    atomic_fetch_add(&ctx->refcount, 1);
    graph->context = ctx;
    *out = graph;
    return NXE_OK;
}

void nxe_op_free(nxe_op *op)
{
    nxe_node_clear(&op->node);
    nxe_free(op->inputs);
    nxe_free(op->outputs);
    nxe_free(op);
}

static void tensor_free(nxe_tensor *tensor)
{
    nxe_free(tensor->name);
    nxe_free(tensor->scales);
    nxe_free(tensor->data);
    nxe_free(tensor);
}

NXE_API void nxe_graph_release(nxe_graph *graph)
{
    if (!graph)
        return;
    for (int32_t i = 0; i < graph->num_ops; i++)
        nxe_op_free(graph->ops[i]);
    for (int32_t i = 0; i < graph->num_tensors; i++)
        tensor_free(graph->tensors[i]);
    nxe_free(graph->ops);
    nxe_free(graph->tensors);
    nxe_free(graph->name_slots);
    nxe_free(graph->inferred);
    nxe_free(graph->source_metadata);
    nxe_free(graph->source_annotations);
    nxe_context_release(graph->context);
    nxe_free(graph);
}

/* ---- tensors ---- */

/* Names are looked up on every tensor added or renamed; a hash table keeps that constant time,
 * so building or decoding a graph of NXE_LIMIT_TENSORS tensors takes linear time. */
static uint32_t name_hash(const char *name)
{
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        hash = (hash ^ *p) * 16777619u;
    return hash;
}

static nxe_tensor *find_tensor(const nxe_graph *graph, const char *name)
{
    uint32_t mask = (uint32_t)graph->num_name_slots - 1;
    for (uint32_t s = name_hash(name) & mask; graph->num_name_slots; s = (s + 1) & mask) {
        int32_t index = graph->name_slots[s];
        if (index < 0)
            return NULL;
        if (strcmp(graph->tensors[index]->name, name) == 0)
            return graph->tensors[index];
    }
    return NULL;
}

static void index_name(nxe_graph *graph, int32_t index)
{
    uint32_t mask = (uint32_t)graph->num_name_slots - 1;
    uint32_t s = name_hash(graph->tensors[index]->name) & mask;
    while (graph->name_slots[s] >= 0)
        s = (s + 1) & mask;
    graph->name_slots[s] = index;
}

/* Rebuilds the name table for the first `count` tensors with room for at least `room`. */
static nxe_status index_names(nxe_graph *graph, int32_t count, int32_t room)
{
    int32_t slots = 64;
    while (slots < 2 * room)
        slots *= 2;
    int32_t *table = nxe_alloc(sizeof(int32_t) * (size_t)slots);
    if (!table)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory indexing tensor names");
    for (int32_t i = 0; i < slots; i++)
        table[i] = -1;
    nxe_free(graph->name_slots);
    graph->name_slots = table;
    graph->num_name_slots = slots;
    for (int32_t i = 0; i < count; i++)
        index_name(graph, i);
    return NXE_OK;
}

static const char *kind_name(int32_t kind)
{
    switch (kind) {
    case NXE_TENSOR_INPUT: return "INPUT";
    case NXE_TENSOR_OUTPUT: return "OUTPUT";
    case NXE_TENSOR_CONSTANT: return "CONSTANT";
    case NXE_TENSOR_TRANSIENT: return "TRANSIENT";
    case NXE_TENSOR_VARIABLE: return "VARIABLE";
    default: return "?";
    }
}

static bool kind_may_be_inferred(int32_t kind)
{
    return kind == NXE_TENSOR_OUTPUT || kind == NXE_TENSOR_TRANSIENT;
}

static nxe_status check_spec(const nxe_tensor_spec *spec, const char *name, const char *where)
{
    if (spec->kind < NXE_TENSOR_INPUT || spec->kind > NXE_TENSOR_VARIABLE)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensor '%s' has unknown kind %d", where,
                         name, spec->kind);
    bool inferable = kind_may_be_inferred(spec->kind);
    if (!nxe_dtype_valid(spec->dtype) && !(inferable && spec->dtype == NXE_DTYPE_NONE))
        return nxe_error(
            NXE_ERROR_DTYPE_MISMATCH, "%s: tensor '%s' has invalid dtype %d%s", where, name,
            spec->dtype,
            inferable ? "" : " (only OUTPUT and TRANSIENT tensors may leave it to inference)");
    if (spec->ndim > NXE_MAX_RANK)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: tensor '%s' has rank %d; nxe supports rank up to %d", where, name,
                         spec->ndim, NXE_MAX_RANK);
    if (spec->ndim < -1 || (spec->ndim == -1 && !inferable))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: %s tensor '%s' needs a rank in [0, %d], got %d", where,
                         kind_name(spec->kind), name, NXE_MAX_RANK, spec->ndim);
    if (spec->ndim > 0 && !spec->shape)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: tensor '%s' has rank %d but shape is NULL", where, name, spec->ndim);
    for (int32_t i = 0; i < spec->ndim; i++) {
        int64_t d = spec->shape[i];
        if (d < -1 || (d == -1 && !inferable))
            return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                             "%s: %s tensor '%s' has invalid dimension %lld at axis %d", where,
                             kind_name(spec->kind), name, (long long)d, i);
    }
    if (spec->ndim >= 0) {
        int64_t known[NXE_MAX_RANK];
        for (int32_t i = 0; i < spec->ndim; i++)
            known[i] = spec->shape[i] < 0 ? 0 : spec->shape[i];
        size_t bytes;
        if (!nxe_shape_bytes(spec->dtype, spec->ndim, known, &bytes))
            return nxe_error(NXE_ERROR_SHAPE_MISMATCH, "%s: tensor '%s' is too large", where, name);
    }
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_add_tensor(nxe_graph *graph, const nxe_tensor_spec *spec,
                                        nxe_tensor **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_add_tensor: out must not be NULL");
    *out = NULL;
    if (!graph || !spec)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_add_tensor: %s is NULL",
                         graph ? "spec" : "graph");
    if (spec->struct_size < sizeof(nxe_tensor_spec))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_graph_add_tensor: spec.struct_size is %u, expected at least %zu "
                         "(initialize with NXE_TENSOR_SPEC_INIT)",
                         spec->struct_size, sizeof(nxe_tensor_spec));
    char generated[32];
    const char *name = spec->name;
    if (!name || !name[0]) {
        /* skip serials a user already took for names of their own */
        int32_t serial = graph->num_tensors;
        do
            snprintf(generated, sizeof generated, "tensor_%d", serial++);
        while (find_tensor(graph, generated));
        name = generated;
    }
    if (strlen(name) > NXE_LIMIT_NAME)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_graph_add_tensor: tensor name longer than %d bytes", NXE_LIMIT_NAME);
    nxe_status status = check_spec(spec, name, "nxe_graph_add_tensor");
    if (status != NXE_OK)
        return status;
    if (find_tensor(graph, name))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_graph_add_tensor: the graph already has a tensor named '%s'", name);
    status = nxe_grow_array((void **)&graph->tensors, &graph->tensor_capacity,
                            graph->num_tensors + 1, sizeof(nxe_tensor *));
    if (status == NXE_OK && 2 * (graph->num_tensors + 1) > graph->num_name_slots)
        status = index_names(graph, graph->num_tensors, graph->num_tensors + 1);
    if (status != NXE_OK)
        return status;
    nxe_tensor *tensor = nxe_alloc_zeroed(sizeof *tensor);
    char *name_copy = nxe_strdup(name);
    if (!tensor || !name_copy) {
        nxe_free(tensor);
        nxe_free(name_copy);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_add_tensor: out of memory");
    }
    tensor->graph = graph;
    tensor->index = graph->num_tensors;
    tensor->name = name_copy;
    tensor->kind = spec->kind;
    tensor->dtype = spec->dtype;
    tensor->ndim = spec->ndim;
    for (int32_t i = 0; i < spec->ndim; i++)
        tensor->shape[i] = spec->shape[i];
    tensor->quant.type = NXE_QUANT_NONE;
    nxe_graph_edited(graph);
    graph->tensors[graph->num_tensors++] = tensor;
    index_name(graph, tensor->index);
    *out = tensor;
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_find_tensor(nxe_graph *graph, const char *name, nxe_tensor **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_find_tensor: out must not be NULL");
    *out = NULL;
    if (!graph || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_find_tensor: %s is NULL",
                         graph ? "name" : "graph");
    *out = find_tensor(graph, name);
    if (!*out)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_graph_find_tensor: no tensor named '%s'", name);
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_name(nxe_tensor *tensor, const char *name)
{
    if (!tensor || !name || !name[0])
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tensor_set_name: %s",
                         !tensor ? "tensor is NULL" : "name is NULL or empty");
    if (strlen(name) > NXE_LIMIT_NAME)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tensor_set_name: tensor name longer than %d bytes", NXE_LIMIT_NAME);
    const nxe_tensor *other = find_tensor(tensor->graph, name);
    if (other == tensor)
        return NXE_OK;
    if (other)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tensor_set_name: the graph already has a tensor named '%s'", name);
    char *copy = nxe_strdup(name);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_tensor_set_name: out of memory");
    char *previous = tensor->name;
    tensor->name = copy;
    nxe_graph *graph = tensor->graph;
    if (index_names(graph, graph->num_tensors, graph->num_tensors) != NXE_OK) {
        tensor->name = previous;
        nxe_free(copy);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_tensor_set_name: out of memory");
    }
    nxe_free(previous);
    nxe_graph_edited(graph);
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_kind(nxe_tensor *tensor, int32_t kind)
{
    if (!tensor)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tensor_set_kind: tensor is NULL");
    if (!kind_may_be_inferred(kind) || !kind_may_be_inferred(tensor->kind))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tensor_set_kind: tensor '%s' is %s; only TRANSIENT and OUTPUT "
                         "tensors can be switched, to each other (asked for kind %d)",
                         tensor->name, kind_name(tensor->kind), kind);
    nxe_graph_edited(tensor->graph);
    tensor->kind = kind;
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_shape(nxe_tensor *tensor, int32_t ndim, const int64_t *shape)
{
    const char *where = "nxe_tensor_set_shape";
    if (!tensor)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensor is NULL", where);
    if (tensor->kind == NXE_TENSOR_CONSTANT || tensor->kind == NXE_TENSOR_VARIABLE)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: tensor '%s' is %s; its shape is fixed by its data", where,
                         tensor->name, kind_name(tensor->kind));
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = tensor->name;
    spec.dtype = tensor->dtype;
    spec.kind = tensor->kind;
    spec.ndim = ndim;
    spec.shape = shape;
    nxe_status status = check_spec(&spec, tensor->name, where);
    if (status != NXE_OK)
        return status;
    nxe_graph_edited(tensor->graph);
    tensor->ndim = ndim;
    memset(tensor->shape, 0, sizeof tensor->shape);
    for (int32_t i = 0; i < ndim; i++)
        tensor->shape[i] = shape[i];
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_data(nxe_tensor *tensor, const void *data, size_t size)
{
    if (!tensor)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tensor_set_data: tensor is NULL");
    if (tensor->kind != NXE_TENSOR_CONSTANT && tensor->kind != NXE_TENSOR_VARIABLE)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tensor_set_data: tensor '%s' is %s; only CONSTANT and VARIABLE "
                         "tensors hold data",
                         tensor->name, kind_name(tensor->kind));
    int64_t numel;
    nxe_shape_numel(tensor->ndim, tensor->shape, &numel);
    size_t expected = (size_t)numel * nxe_dtype_size(tensor->dtype);
    if (size != expected)
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                         "nxe_tensor_set_data: tensor '%s' (%s, %lld elements) takes %zu bytes, "
                         "got %zu",
                         tensor->name, nxe_dtype_name(tensor->dtype), (long long)numel, expected,
                         size);
    if (!data && size > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tensor_set_data: data is NULL for '%s'",
                         tensor->name);
    void *copy = nxe_alloc(size);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "nxe_tensor_set_data: out of memory for %zu bytes of '%s'", size,
                         tensor->name);
    if (size)
        memcpy(copy, data, size);
    nxe_graph_edited(tensor->graph);
    nxe_free(tensor->data);
    tensor->data = copy;
    tensor->data_size = size;
    return NXE_OK;
}

static nxe_status check_quantizable(const nxe_tensor *tensor, const char *where)
{
    if (!tensor)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensor is NULL", where);
    return NXE_OK;
}

static void clear_quant(nxe_tensor *tensor)
{
    nxe_graph_edited(tensor->graph);
    nxe_free(tensor->scales);
    tensor->scales = NULL;
    tensor->quant = (nxe_quant){.type = NXE_QUANT_NONE};
}

NXE_API nxe_status nxe_tensor_set_quant_asymmetric(nxe_tensor *tensor, float scale,
                                                   int32_t zero_point)
{
    const char *where = "nxe_tensor_set_quant_asymmetric";
    nxe_status status = check_quantizable(tensor, where);
    if (status != NXE_OK)
        return status;
    if (!(scale > 0.0f) || scale > 3.0e38f)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: tensor '%s' needs a finite positive scale, got %g", where,
                         tensor->name, (double)scale);
    int32_t lo = tensor->dtype == NXE_DTYPE_I8 ? INT8_MIN : 0;
    int32_t hi = tensor->dtype == NXE_DTYPE_I8 ? INT8_MAX : UINT8_MAX;
    if ((tensor->dtype == NXE_DTYPE_U8 || tensor->dtype == NXE_DTYPE_I8) &&
        (zero_point < lo || zero_point > hi))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: tensor '%s' is %s; zero point %d is outside [%d, %d]", where,
                         tensor->name, nxe_dtype_name(tensor->dtype), zero_point, lo, hi);
    clear_quant(tensor);
    tensor->quant.type = NXE_QUANT_ASYMMETRIC;
    tensor->quant.scale = scale;
    tensor->quant.zero_point = zero_point;
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_quant_per_channel(nxe_tensor *tensor, int32_t axis,
                                                    const float *scales, int32_t count)
{
    const char *where = "nxe_tensor_set_quant_per_channel";
    nxe_status status = check_quantizable(tensor, where);
    if (status != NXE_OK)
        return status;
    if (!scales || count <= 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensor '%s' needs scales (got %s, %d)",
                         where, tensor->name, scales ? "scales" : "NULL", count);
    if (tensor->ndim >= 0) {
        if (axis < 0 || axis >= tensor->ndim)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: axis %d is out of range for tensor '%s' of rank %d", where, axis,
                             tensor->name, tensor->ndim);
        if (tensor->shape[axis] >= 0 && tensor->shape[axis] != count)
            return nxe_error(
                NXE_ERROR_SHAPE_MISMATCH,
                "%s: tensor '%s' has %lld channels on axis %d but %d scales were given", where,
                tensor->name, (long long)tensor->shape[axis], axis, count);
    } else if (axis < 0 || axis >= NXE_MAX_RANK) {
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: axis %d is out of range", where, axis);
    }
    for (int32_t i = 0; i < count; i++)
        if (!(scales[i] > 0.0f) || scales[i] > 3.0e38f)
            return nxe_error(
                NXE_ERROR_INVALID_ARGUMENT,
                "%s: scale %d of tensor '%s' is %g; scales must be finite and positive", where, i,
                tensor->name, (double)scales[i]);
    float *copy = nxe_alloc(sizeof(float) * (size_t)count);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    memcpy(copy, scales, sizeof(float) * (size_t)count);
    clear_quant(tensor);
    tensor->scales = copy;
    tensor->quant.type = NXE_QUANT_SYMMETRIC_PER_CHANNEL;
    tensor->quant.axis = axis;
    tensor->quant.num_scales = count;
    tensor->quant.scales = copy;
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_set_quant_dynamic_fixed_point(nxe_tensor *tensor,
                                                            int32_t fractional_length)
{
    const char *where = "nxe_tensor_set_quant_dynamic_fixed_point";
    nxe_status status = check_quantizable(tensor, where);
    if (status != NXE_OK)
        return status;
    if (fractional_length < -64 || fractional_length > 64)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: fractional length %d of tensor '%s' is outside [-64, 64]", where,
                         fractional_length, tensor->name);
    clear_quant(tensor);
    tensor->quant.type = NXE_QUANT_DYNAMIC_FIXED_POINT;
    tensor->quant.fractional_length = fractional_length;
    return NXE_OK;
}

NXE_API nxe_status nxe_tensor_get_info(const nxe_tensor *tensor, nxe_tensor_info *info)
{
    if (!tensor || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tensor_get_info: %s is NULL",
                         tensor ? "info" : "tensor");
    if (info->struct_size < sizeof(nxe_tensor_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tensor_get_info: info.struct_size is %u, expected at least %zu",
                         info->struct_size, sizeof(nxe_tensor_info));
    nxe_tensor_info result = {.struct_size = info->struct_size};
    result.name = tensor->name;
    result.kind = tensor->kind;
    /* after an inference, what it settled; before, or for a tensor added since, the declaration */
    const nxe_graph *graph = tensor->graph;
    const nxe_value *settled =
        tensor->index < graph->num_inferred ? &graph->inferred[tensor->index] : NULL;
    result.dtype = settled ? settled->dtype : tensor->dtype;
    result.ndim = settled ? settled->ndim : tensor->ndim;
    const int64_t *shape = settled ? settled->shape : tensor->shape;
    for (int32_t i = 0; i < result.ndim; i++)
        result.shape[i] = shape[i];
    result.quant_type = tensor->quant.type;
    result.scale = tensor->quant.scale;
    result.zero_point = tensor->quant.zero_point;
    result.axis = tensor->quant.axis;
    result.num_scales = tensor->quant.num_scales;
    result.scales = tensor->quant.scales;
    result.fractional_length = tensor->quant.fractional_length;
    *info = result;
    return NXE_OK;
}

/* ---- entry points ---- */

/* Marks what the outputs in `keep` depend on: ops by index in `op_needed`, tensors by index
 * in `tensor_needed` (every input and output of a needed op). A worklist of tensors. */
static void mark_needed(const nxe_graph *graph, int32_t *stack, int32_t top, bool *op_needed,
                        bool *tensor_needed)
{
    while (top > 0) {
        const nxe_op *op = graph->tensors[stack[--top]]->producer;
        if (!op || op_needed[op->index])
            continue;
        op_needed[op->index] = true;
        for (int32_t i = 0; i < op->num_outputs; i++)
            tensor_needed[op->outputs[i]->index] = true;
        for (int32_t i = 0; i < op->num_inputs; i++) {
            nxe_tensor *t = op->inputs[i];
            if (t && !tensor_needed[t->index]) {
                tensor_needed[t->index] = true;
                stack[top++] = t->index;
            }
        }
    }
}

NXE_API nxe_status nxe_graph_keep_outputs(nxe_graph *graph, const char *const *names, int32_t count)
{
    if (!graph || !names || count < 1)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_keep_outputs: %s",
                         !graph   ? "graph is NULL"
                         : !names ? "names is NULL"
                                  : "count < 1");
    for (int32_t k = 0; k < count; k++) {
        if (!names[k])
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "nxe_graph_keep_outputs: names[%d] is NULL", k);
        const nxe_tensor *t = find_tensor(graph, names[k]);
        if (!t)
            return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_graph_keep_outputs: no tensor '%s'",
                             names[k]);
        if (t->kind != NXE_TENSOR_OUTPUT)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "nxe_graph_keep_outputs: tensor '%s' is %s, not an OUTPUT", names[k],
                             kind_name(t->kind));
    }
    int32_t n_tensors = graph->num_tensors, n_ops = graph->num_ops;
    bool *tensor_needed = nxe_alloc_zeroed(sizeof(bool) * (size_t)(n_tensors + 1));
    bool *op_needed = nxe_alloc_zeroed(sizeof(bool) * (size_t)(n_ops + 1));
    int32_t *stack = nxe_alloc(sizeof(int32_t) * (size_t)(n_tensors + 1));
    if (!tensor_needed || !op_needed || !stack) {
        nxe_free(tensor_needed);
        nxe_free(op_needed);
        nxe_free(stack);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_keep_outputs: out of memory");
    }
    int32_t top = 0;
    for (int32_t k = 0; k < count; k++) {
        const nxe_tensor *t = find_tensor(graph, names[k]);
        if (!tensor_needed[t->index]) {
            tensor_needed[t->index] = true;
            stack[top++] = t->index;
        }
    }
    mark_needed(graph, stack, top, op_needed, tensor_needed);
    nxe_free(stack);

    /* From here nothing can fail: the name table is rebuilt smaller, or, without memory for
     * that, the old (larger) one is cleared and refilled. */
    int32_t kept_ops = 0;
    for (int32_t i = 0; i < n_ops; i++) {
        nxe_op *op = graph->ops[i];
        if (op_needed[i]) {
            op->index = kept_ops;
            graph->ops[kept_ops++] = op;
        } else {
            nxe_op_free(op);
        }
    }
    graph->num_ops = kept_ops;
    int32_t kept_tensors = 0;
    for (int32_t i = 0; i < n_tensors; i++) {
        nxe_tensor *t = graph->tensors[i];
        if (!tensor_needed[i]) {
            tensor_free(t);
            continue;
        }
        bool named = false;
        for (int32_t k = 0; k < count && !named; k++)
            named = strcmp(t->name, names[k]) == 0;
        if (t->kind == NXE_TENSOR_OUTPUT && !named)
            t->kind = NXE_TENSOR_TRANSIENT;
        t->num_consumers = 0;
        t->index = kept_tensors;
        graph->tensors[kept_tensors++] = t;
    }
    graph->num_tensors = kept_tensors;
    for (int32_t i = 0; i < kept_ops; i++) {
        const nxe_op *op = graph->ops[i];
        for (int32_t j = 0; j < op->num_inputs; j++)
            if (op->inputs[j])
                op->inputs[j]->num_consumers++;
    }
    nxe_free(tensor_needed);
    nxe_free(op_needed);
    nxe_free(graph->inferred);
    graph->inferred = NULL;
    graph->num_inferred = 0;
    nxe_graph_edited(graph);
    if (index_names(graph, kept_tensors, kept_tensors) != NXE_OK) {
        for (int32_t s = 0; s < graph->num_name_slots; s++)
            graph->name_slots[s] = -1;
        for (int32_t i = 0; i < kept_tensors; i++)
            index_name(graph, i);
    }
    return NXE_OK;
}
