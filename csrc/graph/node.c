/* node.c — ops in a graph: creation by registered type, attributes checked against the
 * schema, input/output binding, and the attribute view op rules read (with schema defaults). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static const char *op_label_type(const nxe_op *op)
{
    return op->def->info.name;
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
    const nxe_op_def *def = nxe_op_def_find(op_type);
    if (!def)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "nxe_graph_add_op: no op type '%s' is registered (see nxe_op_registry_*)",
                         op_type);
    char generated[64];
    if (!name || !name[0]) {
        snprintf(generated, sizeof generated, "%s_%d", op_type, graph->num_ops);
        name = generated;
    }
    nxe_status status = nxe_grow_array((void **)&graph->ops, &graph->op_capacity,
                                       graph->num_ops + 1, sizeof(nxe_op *));
    if (status != NXE_OK)
        return status;
    nxe_op *op = nxe_alloc_zeroed(sizeof *op);
    char *name_copy = nxe_strdup(name);
    if (!op || !name_copy) {
        nxe_free(op);
        nxe_free(name_copy);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_add_op: out of memory");
    }
    op->graph = graph;
    op->index = graph->num_ops;
    op->def = def;
    op->name = name_copy;
    nxe_graph_edited(graph);
    graph->ops[graph->num_ops++] = op;
    *out = op;
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_remove_op(nxe_graph *graph, nxe_op *op)
{
    if (!graph || !op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_remove_op: %s is NULL",
                         graph ? "op" : "graph");
    if (op->graph != graph || op->index >= graph->num_ops || graph->ops[op->index] != op)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_graph_remove_op: op '%s' is not in this graph",
                         op->name);
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

static const nxe_op_attr_info *schema_attr(const nxe_op_def *def, const char *name)
{
    for (int32_t i = 0; i < def->info.num_attrs; i++)
        if (strcmp(def->info.attrs[i].name, name) == 0)
            return &def->info.attrs[i];
    return NULL;
}

static const char *attr_type_name(int32_t type)
{
    switch (type) {
    case NXE_ATTR_INT: return "int";
    case NXE_ATTR_FLOAT: return "float";
    case NXE_ATTR_STRING: return "string";
    case NXE_ATTR_INTS: return "ints";
    case NXE_ATTR_FLOATS: return "floats";
    default: return "?";
    }
}

/* Finds or appends the op's attribute slot for `name` after checking it against the schema. */
static nxe_status attr_slot(nxe_op *op, const char *name, int32_t type, const char *where,
                            nxe_attr **slot)
{
    *slot = NULL;
    if (!op || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, op ? "name" : "op");
    const nxe_op_attr_info *info = schema_attr(op->def, name);
    if (!info)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: op '%s' ('%s') has no attribute '%s'", where,
                         op_label_type(op), op->name, name);
    if (info->type != type)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: attribute '%s' of op '%s' ('%s') is of type %s, not %s", where,
                         name, op_label_type(op), op->name, attr_type_name(info->type),
                         attr_type_name(type));
    nxe_graph_edited(op->graph);
    for (int32_t i = 0; i < op->num_attrs; i++) {
        if (strcmp(op->attrs[i].name, name) == 0) {
            nxe_attr *attr = &op->attrs[i];
            nxe_free(attr->string_value);
            nxe_free(attr->ints);
            nxe_free(attr->floats);
            char *kept = attr->name;
            *attr = (nxe_attr){.name = kept, .type = type};
            *slot = attr;
            return NXE_OK;
        }
    }
    nxe_status status = nxe_grow_array((void **)&op->attrs, &op->attr_capacity,
                                       op->num_attrs + 1, sizeof(nxe_attr));
    if (status != NXE_OK)
        return status;
    char *name_copy = nxe_strdup(name);
    if (!name_copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    op->attrs[op->num_attrs] = (nxe_attr){.name = name_copy, .type = type};
    *slot = &op->attrs[op->num_attrs++];
    return NXE_OK;
}

NXE_API nxe_status nxe_op_set_attr_int(nxe_op *op, const char *name, int64_t value)
{
    nxe_attr *attr;
    nxe_status status = attr_slot(op, name, NXE_ATTR_INT, "nxe_op_set_attr_int", &attr);
    if (status == NXE_OK)
        attr->int_value = value;
    return status;
}

NXE_API nxe_status nxe_op_set_attr_float(nxe_op *op, const char *name, double value)
{
    nxe_attr *attr;
    nxe_status status = attr_slot(op, name, NXE_ATTR_FLOAT, "nxe_op_set_attr_float", &attr);
    if (status == NXE_OK)
        attr->float_value = value;
    return status;
}

NXE_API nxe_status nxe_op_set_attr_string(nxe_op *op, const char *name, const char *value)
{
    if (!value)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_set_attr_string: value is NULL");
    nxe_attr *attr;
    nxe_status status = attr_slot(op, name, NXE_ATTR_STRING, "nxe_op_set_attr_string", &attr);
    if (status != NXE_OK)
        return status;
    attr->string_value = nxe_strdup(value);
    if (!attr->string_value)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_op_set_attr_string: out of memory");
    return NXE_OK;
}

#define MAX_ATTR_VALUES 4096

NXE_API nxe_status nxe_op_set_attr_ints(nxe_op *op, const char *name, const int64_t *values,
                                        int32_t count)
{
    if (count < 0 || count > MAX_ATTR_VALUES || (count > 0 && !values))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_op_set_attr_ints: %d values at %p (at most %d, non-NULL)", count,
                         (const void *)values, MAX_ATTR_VALUES);
    nxe_attr *attr;
    nxe_status status = attr_slot(op, name, NXE_ATTR_INTS, "nxe_op_set_attr_ints", &attr);
    if (status != NXE_OK)
        return status;
    attr->ints = nxe_alloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    if (!attr->ints)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_op_set_attr_ints: out of memory");
    if (count)
        memcpy(attr->ints, values, sizeof(int64_t) * (size_t)count);
    attr->count = count;
    return NXE_OK;
}

NXE_API nxe_status nxe_op_set_attr_floats(nxe_op *op, const char *name, const float *values,
                                          int32_t count)
{
    if (count < 0 || count > MAX_ATTR_VALUES || (count > 0 && !values))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_op_set_attr_floats: %d values at %p (at most %d, non-NULL)", count,
                         (const void *)values, MAX_ATTR_VALUES);
    nxe_attr *attr;
    nxe_status status = attr_slot(op, name, NXE_ATTR_FLOATS, "nxe_op_set_attr_floats", &attr);
    if (status != NXE_OK)
        return status;
    attr->floats = nxe_alloc(sizeof(float) * (size_t)(count ? count : 1));
    if (!attr->floats)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_op_set_attr_floats: out of memory");
    if (count)
        memcpy(attr->floats, values, sizeof(float) * (size_t)count);
    attr->count = count;
    return NXE_OK;
}

/* ---- binding ---- */

static nxe_status check_binding_count(const nxe_op *op, const nxe_op_param_info *params,
                                      int32_t num_params, int32_t count, const char *what,
                                      const char *where)
{
    bool variadic = num_params > 0 && params[num_params - 1].variadic;
    int32_t required = 0;
    for (int32_t i = 0; i < num_params; i++)
        if (!params[i].optional && !(variadic && i == num_params - 1))
            required = i + 1;
    if (variadic && !params[num_params - 1].optional)
        required = num_params;
    if (count < required || (!variadic && count > num_params) || count > 65536)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op '%s' ('%s') takes %s%d %s, got %d", where, op_label_type(op),
                         op->name, variadic ? "at least " : (required < num_params ? "up to " : ""),
                         variadic ? required : num_params, what, count);
    return NXE_OK;
}

static const nxe_op_param_info *param_at(const nxe_op_param_info *params, int32_t num_params,
                                         int32_t index)
{
    return index < num_params ? &params[index] : &params[num_params - 1];
}

NXE_API nxe_status nxe_op_bind_inputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count)
{
    const char *where = "nxe_op_bind_inputs";
    if (!op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op is NULL", where);
    if (op->inputs_bound)
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: op '%s' ('%s') has its inputs bound already",
                         where, op_label_type(op), op->name);
    if (count > 0 && !tensors)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensors is NULL", where);
    const nxe_op_info *info = &op->def->info;
    nxe_status status = check_binding_count(op, info->inputs, info->num_inputs, count, "inputs", where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < count; i++) {
        const nxe_op_param_info *param = param_at(info->inputs, info->num_inputs, i);
        if (!tensors[i] && !param->optional)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input %d ('%s') of op '%s' ('%s') is required but NULL", where,
                             i, param->name, op_label_type(op), op->name);
        if (tensors[i] && tensors[i]->graph != op->graph)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%s' bound to op '%s' belongs to another graph", where,
                             tensors[i]->name, op->name);
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
                         op_label_type(op), op->name);
    if (count > 0 && !tensors)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: tensors is NULL", where);
    const nxe_op_info *info = &op->def->info;
    nxe_status status = check_binding_count(op, info->outputs, info->num_outputs, count, "outputs", where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < count; i++) {
        nxe_tensor *t = tensors[i];
        const nxe_op_param_info *param = param_at(info->outputs, info->num_outputs, i);
        if (!t)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: output %d ('%s') of op '%s' ('%s') is NULL", where, i,
                             param->name, op_label_type(op), op->name);
        if (t->graph != op->graph)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%s' bound to op '%s' belongs to another graph", where,
                             t->name, op->name);
        if (t->kind == NXE_TENSOR_INPUT || t->kind == NXE_TENSOR_CONSTANT)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "%s: tensor '%s' is an %s and cannot be produced by op '%s' ('%s')",
                             where, t->name, t->kind == NXE_TENSOR_INPUT ? "INPUT" : "CONSTANT",
                             op_label_type(op), op->name);
        if (t->producer)
            return nxe_error(NXE_ERROR_INVALID_GRAPH,
                             "%s: tensor '%s' is already produced by op '%s' ('%s'); op '%s' "
                             "cannot produce it too",
                             where, t->name, op_label_type(t->producer), t->producer->name,
                             op->name);
        for (int32_t j = 0; j < i; j++)
            if (tensors[j] == t)
                return nxe_error(NXE_ERROR_INVALID_GRAPH,
                                 "%s: tensor '%s' is bound twice as an output of op '%s'", where,
                                 t->name, op->name);
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

/* ---- the node view for op rules ---- */

const char *nxe_node_type(const nxe_node *node)
{
    return nxe_node_op(node)->def->info.name;
}

const char *nxe_node_name(const nxe_node *node)
{
    return nxe_node_op(node)->name;
}

nxe_status nxe_node_error(const nxe_node *node, nxe_status status, const char *fmt, ...)
{
    char message[900];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return nxe_error(status, "op '%s' ('%s'): %s", nxe_node_type(node), nxe_node_name(node),
                     message);
}

static const nxe_attr *set_attr(const nxe_op *op, const char *name)
{
    for (int32_t i = 0; i < op->num_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0)
            return &op->attrs[i];
    return NULL;
}

/* Looks the attribute up: the value set on the node, or the schema default parsed into
 * `scratch`. Fails for unknown attributes (a bug in the op rule), wrong types, and required
 * attributes left unset. */
static nxe_status lookup_attr(const nxe_node *node, const char *name, int32_t type,
                              nxe_attr *scratch, const nxe_attr **found)
{
    const nxe_op *op = nxe_node_op(node);
    const nxe_op_attr_info *info = schema_attr(op->def, name);
    if (!info || info->type != type)
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "the rule reads attribute '%s' as %s, "
                              "which the schema does not declare", name, attr_type_name(type));
    const nxe_attr *attr = set_attr(op, name);
    if (attr) {
        *found = attr;
        return NXE_OK;
    }
    if (!info->default_value)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "required attribute '%s' (%s) is not set", name,
                              attr_type_name(type));
    *scratch = (nxe_attr){.type = type};
    *found = scratch;
    return NXE_OK;
}

/* Parses the schema default of a scalar attribute. */
static nxe_status parse_default_scalar(const nxe_node *node, const char *name, double *value)
{
    const nxe_op_attr_info *info = schema_attr(nxe_node_op(node)->def, name);
    char *end;
    *value = strtod(info->default_value, &end);
    if (end == info->default_value)
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "bad default '%s' for attribute '%s'",
                              info->default_value, name);
    return NXE_OK;
}

nxe_status nxe_node_attr_int(const nxe_node *node, const char *name, int64_t *value)
{
    nxe_attr scratch;
    const nxe_attr *attr;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_INT, &scratch, &attr);
    if (status != NXE_OK)
        return status;
    if (attr != &scratch) {
        *value = attr->int_value;
        return NXE_OK;
    }
    const nxe_op_attr_info *info = schema_attr(nxe_node_op(node)->def, name);
    char *end;
    *value = strtoll(info->default_value, &end, 10);
    if (end == info->default_value)
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "bad default '%s' for attribute '%s'",
                              info->default_value, name);
    return NXE_OK;
}

nxe_status nxe_node_attr_float(const nxe_node *node, const char *name, double *value)
{
    nxe_attr scratch;
    const nxe_attr *attr;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_FLOAT, &scratch, &attr);
    if (status != NXE_OK)
        return status;
    if (attr != &scratch) {
        *value = attr->float_value;
        return NXE_OK;
    }
    return parse_default_scalar(node, name, value);
}

nxe_status nxe_node_attr_string(const nxe_node *node, const char *name, const char **value)
{
    nxe_attr scratch;
    const nxe_attr *attr;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_STRING, &scratch, &attr);
    if (status != NXE_OK)
        return status;
    if (attr != &scratch) {
        *value = attr->string_value;
        return NXE_OK;
    }
    /* Schema defaults of strings are JSON strings without escapes, e.g. "\"NCHW\"". */
    const nxe_op_attr_info *info = schema_attr(nxe_node_op(node)->def, name);
    const char *text = info->default_value;
    size_t length = strlen(text);
    if (length < 2 || text[0] != '"' || text[length - 1] != '"')
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "bad default '%s' for attribute '%s'",
                              text, name);
    *value = nxe_registry_unquoted(text);
    if (!*value)
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "default '%s' of attribute '%s' is too long",
                              text, name);
    return NXE_OK;
}

/* Parses "[1, 2, 3]" into doubles. */
static nxe_status parse_default_list(const nxe_node *node, const char *name, double *values,
                                     int32_t capacity, int32_t *count)
{
    const char *text = schema_attr(nxe_node_op(node)->def, name)->default_value;
    const char *p = text;
    *count = 0;
    while (*p == ' ')
        p++;
    if (*p++ != '[')
        return nxe_node_error(node, NXE_ERROR_INTERNAL, "bad default '%s' for attribute '%s'",
                              text, name);
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ']')
            return NXE_OK;
        char *end;
        double v = strtod(p, &end);
        if (end == p)
            return nxe_node_error(node, NXE_ERROR_INTERNAL,
                                  "bad default '%s' for attribute '%s'", text, name);
        if (*count >= capacity)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute '%s' has more than %d values", name, capacity);
        values[(*count)++] = v;
        p = end;
    }
}

nxe_status nxe_node_attr_ints(const nxe_node *node, const char *name, int64_t *values,
                              int32_t capacity, int32_t *count)
{
    *count = 0;
    nxe_attr scratch;
    const nxe_attr *attr;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_INTS, &scratch, &attr);
    if (status != NXE_OK)
        return status;
    if (attr != &scratch) {
        if (attr->count > capacity) {
            *count = attr->count;
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute '%s' has %d values; at most %d are accepted", name,
                                  attr->count, capacity);
        }
        memcpy(values, attr->ints, sizeof(int64_t) * (size_t)attr->count);
        *count = attr->count;
        return NXE_OK;
    }
    double parsed[64];
    status = parse_default_list(node, name, parsed, capacity < 64 ? capacity : 64, count);
    for (int32_t i = 0; status == NXE_OK && i < *count; i++)
        values[i] = (int64_t)parsed[i];
    return status;
}

nxe_status nxe_node_attr_floats(const nxe_node *node, const char *name, float *values,
                                int32_t capacity, int32_t *count)
{
    *count = 0;
    nxe_attr scratch;
    const nxe_attr *attr;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_FLOATS, &scratch, &attr);
    if (status != NXE_OK)
        return status;
    if (attr != &scratch) {
        if (attr->count > capacity) {
            *count = attr->count;
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute '%s' has %d values; at most %d are accepted", name,
                                  attr->count, capacity);
        }
        memcpy(values, attr->floats, sizeof(float) * (size_t)attr->count);
        *count = attr->count;
        return NXE_OK;
    }
    double parsed[64];
    status = parse_default_list(node, name, parsed, capacity < 64 ? capacity : 64, count);
    for (int32_t i = 0; status == NXE_OK && i < *count; i++)
        values[i] = (float)parsed[i];
    return status;
}
