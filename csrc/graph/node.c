/* node.c — ops in a graph: creation by registered type, attributes (checked against the
 * schema by the node layer, csrc/ops/node.c) and input/output binding. */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "graph/custom_ops.h"
#include "graph/graph_internal.h"

static const char *op_label_type(const nxe_op *op)
{
    return nxe_node_type(&op->node);
}

nxe_status nxe_graph_add_node(nxe_graph *graph, nxe_node *node, nxe_op **out)
{
    *out = NULL;
    nxe_status status = nxe_grow_array((void **)&graph->ops, &graph->op_capacity,
                                       graph->num_ops + 1, sizeof(nxe_op *));
    nxe_op *op = status == NXE_OK ? nxe_alloc_zeroed(sizeof *op) : NULL;
    if (status == NXE_OK && !op)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_add_op: out of memory");
    if (status != NXE_OK) {
        nxe_node_clear(node);
        return status;
    }
    op->node = *node;
    *node = (nxe_node){0};
    op->graph = graph;
    op->index = graph->num_ops;
    nxe_graph_edited(graph);
    graph->ops[graph->num_ops++] = op;
    *out = op;
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_add_op(nxe_graph *graph, const char *op_type, const char *name,
                                    nxe_op **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_add_op: out must not be NULL");
    *out = NULL;
    if (!graph || !op_type)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_add_op: %s is NULL",
                         graph ? "op_type" : "graph");
    const nxe_op_def *def = nxe_context_find_op(graph->context, op_type);
    if (!def)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "nxe_graph_add_op: no op type '%s' is registered (see nxe_op_registry_* "
                         "and nxe_context_register_op)",
                         op_type);
    const nxe_limits *limits = &graph->context->limits;
    if (graph->num_ops >= limits->max_ops)
        return nxe_error(NXE_ERROR_INVALID_GRAPH,
                         "nxe_graph_add_op: the graph has %d ops, the limit of its context "
                         "(raise nxe_limits.max_ops with nxe_context_set_limits)",
                         graph->num_ops);
    char generated[64];
    if (!name || !name[0]) {
        snprintf(generated, sizeof generated, "%s_%d", op_type, graph->num_ops);
        name = generated;
    }
    nxe_node node;
    nxe_status status = nxe_node_init(&node, def, name);
    return status == NXE_OK ? nxe_graph_add_node(graph, &node, out) : status;
}

NXE_API nxe_status nxe_graph_remove_op(nxe_graph *graph, nxe_op *op)
{
    if (!graph || !op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_remove_op: %s is NULL",
                         graph ? "op" : "graph");
    if (op->graph != graph || op->index >= graph->num_ops || graph->ops[op->index] != op)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_graph_remove_op: op '%s' is not in this graph",
                         op->node.name);
    for (int32_t i = 0; i < op->num_inputs; i++)
        if (op->inputs[i])
            op->inputs[i]->num_consumers--;
    for (int32_t i = 0; i < op->num_outputs; i++)
        op->outputs[i]->producer = NULL;
    for (int32_t i = op->index; i + 1 < graph->num_ops; i++) {
        graph->ops[i] = graph->ops[i + 1];
        graph->ops[i]->index = i;
    }
    graph->num_ops--;
    nxe_graph_edited(graph);
    nxe_op_free(op);
    return NXE_OK;
}

/* What every nxe_op_set_attr_* call does: the node checks and keeps the value. */
static nxe_status set_attr(nxe_op *op, const nxe_attr *value, const char *where)
{
    if (!op || !value->name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, op ? "name" : "op");
    nxe_status status = nxe_node_set_attr(&op->node, value, where);
    if (status == NXE_OK)
        nxe_graph_edited(op->graph);
    return status;
}

NXE_API nxe_status nxe_op_set_attr_int(nxe_op *op, const char *name, int64_t value)
{
    nxe_attr attr = {.name = (char *)(uintptr_t)name, .type = NXE_ATTR_INT, .int_value = value};
    return set_attr(op, &attr, "nxe_op_set_attr_int");
}

NXE_API nxe_status nxe_op_set_attr_float(nxe_op *op, const char *name, double value)
{
    nxe_attr attr = {.name = (char *)(uintptr_t)name, .type = NXE_ATTR_FLOAT, .float_value = value};
    return set_attr(op, &attr, "nxe_op_set_attr_float");
}

NXE_API nxe_status nxe_op_set_attr_string(nxe_op *op, const char *name, const char *value)
{
    if (!value)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_set_attr_string: value is NULL");
    nxe_attr attr = {.name = (char *)(uintptr_t)name,
                     .type = NXE_ATTR_STRING,
                     .string_value = (char *)(uintptr_t)value};
    return set_attr(op, &attr, "nxe_op_set_attr_string");
}

/* A list of `count` values at `values`: at most NXE_LIMIT_ATTR_VALUES, non-NULL if any. */
static nxe_status check_list(const void *values, int32_t count, const char *where)
{
    if (count < 0 || count > NXE_LIMIT_ATTR_VALUES || (count > 0 && !values))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %d values at %p (at most %d, non-NULL)",
                         where, count, values, NXE_LIMIT_ATTR_VALUES);
    return NXE_OK;
}

NXE_API nxe_status nxe_op_set_attr_ints(nxe_op *op, const char *name, const int64_t *values,
                                        int32_t count)
{
    const char *where = "nxe_op_set_attr_ints";
    nxe_status status = check_list(values, count, where);
    nxe_attr attr = {.name = (char *)(uintptr_t)name,
                     .type = NXE_ATTR_INTS,
                     .ints = (int64_t *)(uintptr_t)values,
                     .count = count};
    return status == NXE_OK ? set_attr(op, &attr, where) : status;
}

NXE_API nxe_status nxe_op_set_attr_floats(nxe_op *op, const char *name, const float *values,
                                          int32_t count)
{
    const char *where = "nxe_op_set_attr_floats";
    nxe_status status = check_list(values, count, where);
    nxe_attr attr = {.name = (char *)(uintptr_t)name,
                     .type = NXE_ATTR_FLOATS,
                     .floats = (float *)(uintptr_t)values,
                     .count = count};
    return status == NXE_OK ? set_attr(op, &attr, where) : status;
}

/* ---- binding ---- */

NXE_API nxe_status nxe_op_bind_inputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count)
{
    const char *where = "nxe_op_bind_inputs";
    if (!op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op is NULL", where);
    if (op->inputs_bound)
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: op '%s' ('%s') has its inputs bound already",
                         where, op_label_type(op), op->node.name);
    if (count > 0 && !tensors)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensors is NULL", where);
    nxe_status status = nxe_node_check_io_count(&op->node, false, count, where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < count; i++) {
        const nxe_op_param_info *param = nxe_node_param(&op->node, false, i);
        if (!tensors[i] && !param->optional)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input %d ('%s') of op '%s' ('%s') is required but NULL", where, i,
                             param->name, op_label_type(op), op->node.name);
        if (tensors[i] && tensors[i]->graph != op->graph)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%s' bound to op '%s' belongs to another graph", where,
                             tensors[i]->name, op->node.name);
    }
    nxe_tensor **copy = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(count ? count : 1));
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    for (int32_t i = 0; i < count; i++) {
        copy[i] = tensors[i];
        if (tensors[i])
            tensors[i]->num_consumers++;
    }
    nxe_graph_edited(op->graph);
    op->inputs = copy;
    op->num_inputs = count;
    op->inputs_bound = true;
    return NXE_OK;
}

NXE_API nxe_status nxe_op_bind_outputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count)
{
    const char *where = "nxe_op_bind_outputs";
    if (!op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op is NULL", where);
    if (op->outputs_bound)
        return nxe_error(NXE_ERROR_INVALID_STATE,
                         "%s: op '%s' ('%s') has its outputs bound already", where,
                         op_label_type(op), op->node.name);
    if (count > 0 && !tensors)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensors is NULL", where);
    nxe_status status = nxe_node_check_io_count(&op->node, true, count, where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < count; i++) {
        nxe_tensor *t = tensors[i];
        const nxe_op_param_info *param = nxe_node_param(&op->node, true, i);
        if (!t)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: output %d ('%s') of op '%s' ('%s') is NULL", where, i,
                             param->name, op_label_type(op), op->node.name);
        if (t->graph != op->graph)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%s' bound to op '%s' belongs to another graph", where,
                             t->name, op->node.name);
        if (t->kind == NXE_TENSOR_INPUT || t->kind == NXE_TENSOR_CONSTANT)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "%s: tensor '%s' is an %s and cannot be produced by op '%s' ('%s')",
                             where, t->name, t->kind == NXE_TENSOR_INPUT ? "INPUT" : "CONSTANT",
                             op_label_type(op), op->node.name);
        if (t->producer)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "%s: tensor '%s' is already produced by op '%s' ('%s'); op '%s' "
                             "cannot produce it too",
                             where, t->name, op_label_type(t->producer), t->producer->node.name,
                             op->node.name);
        for (int32_t j = 0; j < i; j++)
            if (tensors[j] == t)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "%s: tensor '%s' is bound twice as an output of op '%s'", where,
                                 t->name, op->node.name);
    }
    nxe_tensor **copy = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(count ? count : 1));
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    for (int32_t i = 0; i < count; i++) {
        copy[i] = tensors[i];
        tensors[i]->producer = op;
    }
    nxe_graph_edited(op->graph);
    op->outputs = copy;
    op->num_outputs = count;
    op->outputs_bound = true;
    return NXE_OK;
}
