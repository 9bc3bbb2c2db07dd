/* custom_ops.c — the custom ops of a context (nxe_context_register_op and
 * nxe_context_register_composed_op; the definitions are ops/custom.c's): found by name before
 * the built-ins, by ONNX domain and op type, and composed ops expanded into their bodies in a
 * copy of the graph being compiled. */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "graph/custom_ops.h"
#include "graph/graph_internal.h"

#define CUSTOM_MAX_IO 64
#define MAX_EXPANSION_DEPTH 8

const nxe_op_def *nxe_context_find_op(const nxe_context *ctx, const char *op_type)
{
    const nxe_op_def *def = ctx ? nxe_custom_list_find(ctx->custom_ops, op_type) : NULL;
    return def ? def : nxe_op_def_find(op_type);
}

void nxe_context_custom_free(nxe_context *ctx)
{
    nxe_custom_list_free(&ctx->custom_ops);
}

NXE_API nxe_status nxe_context_register_op(nxe_context *ctx, const nxe_custom_op *op)
{
    if (!ctx)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_register_op: context is NULL");
    return nxe_custom_list_add_op(&ctx->custom_ops, op);
}

NXE_API nxe_status nxe_context_find_onnx_op(const nxe_context *ctx, const char *domain,
                                            const char *op_type, const char **name)
{
    if (!name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_find_onnx_op: name is NULL");
    *name = NULL;
    if (!ctx || !domain || !op_type)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_context_find_onnx_op: %s is NULL",
                         !ctx      ? "context"
                         : !domain ? "domain"
                                   : "op_type");
    *name = nxe_custom_list_find_onnx(ctx->custom_ops, domain, op_type);
    if (!*name)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "nxe_context_find_onnx_op: no op of the context answers to ONNX op "
                         "'%s' of domain '%s'",
                         op_type, domain);
    return NXE_OK;
}

/* ---- composed ops ---- */

/* Copies tensor `t` into `dst` named `name`, with `kind` and the declared dtype and shape
 * (inferred ones are left to inference when `unknown_shape`), its quantization and data. */
static nxe_status copy_tensor(nxe_graph *dst, const nxe_tensor *t, const char *name, int32_t kind,
                              bool unknown_shape, nxe_tensor **out)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.kind = kind;
    spec.dtype = unknown_shape ? NXE_DTYPE_NONE : t->dtype;
    spec.ndim = unknown_shape ? -1 : t->ndim;
    spec.shape = t->shape;
    nxe_status status = nxe_graph_add_tensor(dst, &spec, out);
    if (status != NXE_OK)
        return status;
    nxe_tensor *copy = *out;
    if (t->quant.type == NXE_QUANT_ASYMMETRIC)
        status = nxe_tensor_set_quant_asymmetric(copy, t->quant.scale, t->quant.zero_point);
    else if (t->quant.type == NXE_QUANT_SYMMETRIC_PER_CHANNEL)
        status = nxe_tensor_set_quant_per_channel(copy, t->quant.axis, t->quant.scales,
                                                  t->quant.num_scales);
    else if (t->quant.type == NXE_QUANT_DYNAMIC_FIXED_POINT)
        status = nxe_tensor_set_quant_dynamic_fixed_point(copy, t->quant.fractional_length);
    if (status == NXE_OK && t->data && (kind == NXE_TENSOR_CONSTANT || kind == NXE_TENSOR_VARIABLE))
        status = nxe_tensor_set_data(copy, t->data, t->data_size);
    return status;
}

/* Adds a copy of `node` (renamed `name`) to dst bound to the given tensors. */
static nxe_status copy_op(nxe_graph *dst, const nxe_node *node, const char *name,
                          nxe_tensor *const *inputs, int32_t num_inputs, nxe_tensor *const *outputs,
                          int32_t num_outputs)
{
    nxe_node copy;
    nxe_status status = nxe_node_copy(&copy, node);
    if (status != NXE_OK)
        return status;
    char *renamed = nxe_strdup(name);
    if (!renamed) {
        nxe_node_clear(&copy);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    nxe_free(copy.name);
    copy.name = renamed;
    nxe_op *op;
    status = nxe_graph_add_node(dst, &copy, &op);
    if (status == NXE_OK)
        status = nxe_op_bind_inputs(op, inputs, num_inputs);
    if (status == NXE_OK)
        status = nxe_op_bind_outputs(op, outputs, num_outputs);
    return status;
}

static nxe_status add_ops(nxe_graph *dst, const nxe_graph *src, nxe_tensor **map,
                          const char *prefix, int32_t depth);

/* Expands composed op `node` bound to dst's `inputs` and `outputs`: the body's tensors and ops
 * join dst under "prefix/". */
static nxe_status expand_op(nxe_graph *dst, const nxe_node *node, nxe_tensor *const *inputs,
                            int32_t num_inputs, nxe_tensor *const *outputs, int32_t num_outputs,
                            int32_t depth)
{
    const nxe_graph *body = nxe_custom_def_body(node->def);
    if (depth > MAX_EXPANSION_DEPTH)
        return nxe_node_error(node, NXE_ERROR_INVALID_GRAPH, "composed ops nest more than %d deep",
                              MAX_EXPANSION_DEPTH);
    nxe_tensor **map = nxe_alloc_zeroed(sizeof(nxe_tensor *) * (size_t)(body->num_tensors + 1));
    char *name = nxe_alloc(NXE_LIMIT_NAME);
    if (!map || !name) {
        nxe_free(map);
        nxe_free(name);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    nxe_status status = NXE_OK;
    int32_t in = 0, out = 0;
    for (int32_t i = 0; status == NXE_OK && i < body->num_tensors; i++) {
        const nxe_tensor *t = body->tensors[i];
        if (t->kind == NXE_TENSOR_INPUT) {
            map[i] = in < num_inputs ? inputs[in] : NULL;
            in++;
            continue;
        }
        if (t->kind == NXE_TENSOR_OUTPUT) {
            map[i] = out < num_outputs ? outputs[out] : NULL;
            out++;
            continue;
        }
        if (!t->producer && t->num_consumers == 0)
            continue;
        int length = snprintf(name, NXE_LIMIT_NAME, "%s/%s", node->name, t->name);
        if (length < 0 || length >= NXE_LIMIT_NAME)
            status = nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                    "the expanded name of tensor '%s' is too long", t->name);
        else
            status = copy_tensor(dst, t, name, t->kind, t->kind == NXE_TENSOR_TRANSIENT, &map[i]);
    }
    if (status == NXE_OK && (in != num_inputs || out != num_outputs))
        status = nxe_node_error(node, NXE_ERROR_INTERNAL,
                                "the op is bound to %d inputs and %d outputs, its body has %d "
                                "and %d",
                                num_inputs, num_outputs, in, out);
    if (status == NXE_OK)
        status = add_ops(dst, body, map, node->name, depth + 1);
    nxe_free(map);
    nxe_free(name);
    if (status != NXE_OK)
        nxe_error_prefix("expanding composed op '%s' ('%s'): ", nxe_node_type(node), node->name);
    return status;
}

/* Adds src's ops to dst over the tensor map, named "prefix/name" (prefix NULL: as they are),
 * expanding composed ones. */
static nxe_status add_ops(nxe_graph *dst, const nxe_graph *src, nxe_tensor **map,
                          const char *prefix, int32_t depth)
{
    nxe_status status = NXE_OK;
    for (int32_t k = 0; status == NXE_OK && k < src->num_ops; k++) {
        const nxe_op *op = src->ops[k];
        nxe_tensor **inputs =
            nxe_alloc(sizeof(nxe_tensor *) * (size_t)(op->num_inputs + op->num_outputs + 1));
        char *name = nxe_alloc(NXE_LIMIT_NAME);
        if (!inputs || !name) {
            nxe_free(inputs);
            nxe_free(name);
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        }
        nxe_tensor **outputs = inputs + op->num_inputs;
        for (int32_t j = 0; j < op->num_inputs; j++)
            inputs[j] = op->inputs[j] ? map[op->inputs[j]->index] : NULL;
        for (int32_t j = 0; j < op->num_outputs; j++)
            outputs[j] = map[op->outputs[j]->index];
        int length = prefix ? snprintf(name, NXE_LIMIT_NAME, "%s/%s", prefix, op->node.name)
                            : snprintf(name, NXE_LIMIT_NAME, "%s", op->node.name);
        if (length < 0 || length >= NXE_LIMIT_NAME)
            status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                               "compile: the expanded name of op '%s' is too long", op->node.name);
        else if (nxe_custom_def_body(op->node.def)) {
            nxe_node renamed = op->node;
            renamed.name = name;
            status =
                expand_op(dst, &renamed, inputs, op->num_inputs, outputs, op->num_outputs, depth);
        } else {
            status =
                copy_op(dst, &op->node, name, inputs, op->num_inputs, outputs, op->num_outputs);
        }
        nxe_free(inputs);
        nxe_free(name);
    }
    return status;
}

static bool has_composed(const nxe_graph *graph)
{
    for (int32_t k = 0; k < graph->num_ops; k++)
        if (nxe_custom_def_body(graph->ops[k]->node.def))
            return true;
    return false;
}

/* A copy of `src` in `ctx`, composed ops expanded. */
static nxe_status copy_graph(const nxe_graph *src, nxe_context *ctx, nxe_graph **out)
{
    *out = NULL;
    nxe_graph *dst;
    nxe_status status = nxe_graph_create(ctx, &dst);
    if (status != NXE_OK)
        return status;
    nxe_tensor **map = nxe_alloc_zeroed(sizeof(nxe_tensor *) * (size_t)(src->num_tensors + 1));
    if (!map)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t i = 0; status == NXE_OK && i < src->num_tensors; i++) {
        const nxe_tensor *t = src->tensors[i];
        status = copy_tensor(dst, t, t->name, t->kind, false, &map[i]);
    }
    if (status == NXE_OK)
        status = add_ops(dst, src, map, NULL, 0);
    nxe_free(map);
    if (status != NXE_OK) {
        nxe_graph_release(dst);
        return status;
    }
    *out = dst;
    return NXE_OK;
}

nxe_status nxe_composed_expand(const nxe_graph *graph, nxe_graph **out)
{
    *out = NULL;
    if (!has_composed(graph))
        return NXE_OK;
    return copy_graph(graph, graph->context, out);
}

NXE_API nxe_status nxe_context_register_composed_op(nxe_context *ctx, const char *name,
                                                    const char *domain, const nxe_graph *body)
{
    const char *where = "nxe_context_register_composed_op";
    if (!ctx || !body || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !ctx    ? "context"
                         : !body ? "body"
                                 : "name");
    if (nxe_context_find_op(ctx, name))
        return nxe_error(NXE_ERROR_INVALID_STATE,
                         "%s: op type '%s' is built in or already registered in this context",
                         where, name);
    int32_t num_inputs = 0, num_outputs = 0;
    for (int32_t i = 0; i < body->num_tensors; i++) {
        num_inputs += body->tensors[i]->kind == NXE_TENSOR_INPUT;
        num_outputs += body->tensors[i]->kind == NXE_TENSOR_OUTPUT;
        if (body->tensors[i]->kind == NXE_TENSOR_VARIABLE)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: the body has VARIABLE tensor '%s'; a composed op holds no "
                             "state",
                             where, body->tensors[i]->name);
    }
    if (num_inputs > CUSTOM_MAX_IO || num_outputs < 1 || num_outputs > CUSTOM_MAX_IO)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the body has %d INPUT and %d OUTPUT tensors; expected at most %d "
                         "and 1 to %d",
                         where, num_inputs, num_outputs, CUSTOM_MAX_IO, CUSTOM_MAX_IO);
    /* The body must compile as declared: a broken definition fails here, not at each use. */
    size_t size = 0;
    nxe_status status =
        nxe_graph_compile_to_binary((nxe_graph *)(uintptr_t)body, NULL, NULL, &size);
    if (status != NXE_OK) {
        nxe_error_prefix("%s: op '%s': the body does not compile: ", where, name);
        return status;
    }
    /* The body is kept in a context of its own: the registering context holds the entry, which
     * must not hold the context. */
    nxe_context *own = NULL;
    nxe_graph *copy = NULL;
    status = nxe_context_create(&own);
    if (status == NXE_OK) {
        own->limits = ctx->limits;
        status = copy_graph(body, own, &copy);
        nxe_context_release(own);
    }
    uint32_t masks[CUSTOM_MAX_IO];
    char **names = NULL;
    if (status == NXE_OK) {
        names = nxe_alloc_zeroed(sizeof(char *) * (size_t)(num_inputs + 1));
        if (!names)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    for (int32_t i = 0, in = 0; status == NXE_OK && i < body->num_tensors; i++) {
        const nxe_tensor *t = body->tensors[i];
        if (t->kind != NXE_TENSOR_INPUT)
            continue;
        masks[in] = NXE_MASK(t->dtype);
        names[in] = nxe_strdup(t->name);
        if (!names[in++])
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    if (status != NXE_OK) {
        for (int32_t i = 0; names && i < num_inputs; i++)
            nxe_free(names[i]);
        nxe_free(names);
        nxe_graph_release(copy);
        return status;
    }
    return nxe_custom_list_add_composed(&ctx->custom_ops, name, domain, copy, num_inputs,
                                        num_outputs, names, masks);
}
