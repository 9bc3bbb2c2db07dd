/* node.c — nodes: attributes checked against the op's schema, the binding-count rule, and the
 * attribute view shape rules read (set values, else the schema's defaults). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "ops/custom.h"
#include "ops/op_def.h"

nxe_status nxe_node_init(nxe_node *node, const nxe_op_def *def, const char *name)
{
    *node = (nxe_node){.def = def, .name = nxe_strdup(name)};
    if (!node->name) {
        *node = (nxe_node){0};
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for op '%.48s'", name);
    }
    nxe_custom_def_retain(def); /* a registered op lives while its nodes do */
    return NXE_OK;
}

void nxe_attr_clear(nxe_attr *attr)
{
    nxe_free(attr->name);
    nxe_free(attr->string_value);
    nxe_free(attr->ints);
    nxe_free(attr->floats);
    *attr = (nxe_attr){0};
}

void nxe_node_clear(nxe_node *node)
{
    for (int32_t i = 0; i < node->num_attrs; i++)
        nxe_attr_clear(&node->attrs[i]);
    nxe_free(node->attrs);
    nxe_free(node->name);
    nxe_custom_def_release(node->def);
    *node = (nxe_node){0};
}

nxe_status nxe_node_copy(nxe_node *copy, const nxe_node *node)
{
    nxe_status status = nxe_node_init(copy, node->def, node->name);
    for (int32_t i = 0; status == NXE_OK && i < node->num_attrs; i++)
        status = nxe_node_set_attr(copy, &node->attrs[i], "copying an op");
    if (status != NXE_OK)
        nxe_node_clear(copy);
    return status;
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

/* A copy of `value` into the empty slot `attr`. */
static nxe_status copy_attr(nxe_attr *attr, const nxe_attr *value, const char *where)
{
    *attr = (nxe_attr){.type = value->type,
                       .int_value = value->int_value,
                       .float_value = value->float_value,
                       .count = value->count};
    attr->name = nxe_strdup(value->name);
    bool ok = attr->name != NULL;
    if (ok && value->type == NXE_ATTR_STRING)
        ok = (attr->string_value = nxe_strdup(value->string_value)) != NULL;
    size_t count = (size_t)(value->count > 0 ? value->count : 1);
    if (ok && value->type == NXE_ATTR_INTS) {
        ok = (attr->ints = nxe_alloc(sizeof(int64_t) * count)) != NULL;
        if (ok && value->count > 0)
            memcpy(attr->ints, value->ints, sizeof(int64_t) * (size_t)value->count);
    }
    if (ok && value->type == NXE_ATTR_FLOATS) {
        ok = (attr->floats = nxe_alloc(sizeof(float) * count)) != NULL;
        if (ok && value->count > 0)
            memcpy(attr->floats, value->floats, sizeof(float) * (size_t)value->count);
    }
    if (!ok) {
        nxe_attr_clear(attr);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    return NXE_OK;
}

nxe_status nxe_node_set_attr(nxe_node *node, const nxe_attr *value, const char *where)
{
    const nxe_op_attr_info *info = schema_attr(node->def, value->name);
    if (!info && !nxe_custom_def_is_placeholder(node->def))
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: op '%s' ('%s') has no attribute '%s'", where,
                         nxe_node_type(node), node->name, value->name);
    if (info && info->type != value->type)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: attribute '%s' of op '%s' ('%s') is of type %s, not %s", where,
                         value->name, nxe_node_type(node), node->name, attr_type_name(info->type),
                         attr_type_name(value->type));
    if ((value->type == NXE_ATTR_INTS || value->type == NXE_ATTR_FLOATS) &&
        (value->count < 0 || value->count > NXE_LIMIT_ATTR_VALUES))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: attribute '%s' of op '%s' ('%s') has %d values; at most %d", where,
                         value->name, nxe_node_type(node), node->name, value->count,
                         NXE_LIMIT_ATTR_VALUES);
    nxe_attr copy;
    nxe_status status = copy_attr(&copy, value, where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < node->num_attrs; i++) {
        if (strcmp(node->attrs[i].name, value->name) == 0) {
            nxe_attr_clear(&node->attrs[i]);
            node->attrs[i] = copy;
            return NXE_OK;
        }
    }
    status = nxe_grow_array((void **)&node->attrs, &node->attr_capacity, node->num_attrs + 1,
                            sizeof(nxe_attr));
    if (status != NXE_OK) {
        nxe_attr_clear(&copy);
        return status;
    }
    node->attrs[node->num_attrs++] = copy;
    return NXE_OK;
}

const nxe_attr *nxe_node_next_attr(const nxe_node *node, const char *after)
{
    /* Ops hold a handful of attributes, so selecting in turn beats allocating to sort. */
    const nxe_attr *best = NULL;
    for (int32_t i = 0; i < node->num_attrs; i++) {
        const nxe_attr *attr = &node->attrs[i];
        if (after && strcmp(attr->name, after) <= 0)
            continue;
        if (!best || strcmp(attr->name, best->name) < 0)
            best = attr;
    }
    return best;
}

/* ---- binding ---- */

const nxe_op_param_info *nxe_node_param(const nxe_node *node, bool outputs, int32_t index)
{
    const nxe_op_info *info = &node->def->info;
    const nxe_op_param_info *params = outputs ? info->outputs : info->inputs;
    int32_t num_params = outputs ? info->num_outputs : info->num_inputs;
    return &params[index < num_params ? index : num_params - 1];
}

nxe_status nxe_node_check_io_count(const nxe_node *node, bool outputs, int64_t count,
                                   const char *where)
{
    const nxe_op_info *info = &node->def->info;
    const nxe_op_param_info *params = outputs ? info->outputs : info->inputs;
    int32_t num_params = outputs ? info->num_outputs : info->num_inputs;
    bool variadic = num_params > 0 && params[num_params - 1].variadic;
    int32_t required = 0;
    for (int32_t i = 0; i < num_params; i++)
        if (!params[i].optional && !(variadic && i == num_params - 1))
            required = i + 1;
    if (variadic && !params[num_params - 1].optional)
        required = num_params;
    if (count < required || (!variadic && count > num_params) || count > NXE_LIMIT_OP_IO)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op '%s' ('%s') takes %s%d %s (at most %d), got %lld", where,
                         info->name, node->name,
                         variadic ? "at least " : (required < num_params ? "up to " : ""),
                         variadic ? required : num_params, outputs ? "outputs" : "inputs",
                         NXE_LIMIT_OP_IO, (long long)count);
    return NXE_OK;
}

/* ---- the view shape rules read ---- */

const char *nxe_node_type(const nxe_node *node)
{
    return node->def->info.name;
}

const char *nxe_node_name(const nxe_node *node)
{
    return node->name;
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

/* The schema entry of an attribute a rule reads, and the value set on the node (NULL: use
 * the schema default). Fails for attributes the schema does not declare with that type (a bug
 * in the rule) and for required attributes left unset. */
static nxe_status lookup_attr(const nxe_node *node, const char *name, int32_t type,
                              const nxe_op_attr_info **info, const nxe_attr **set)
{
    *info = schema_attr(node->def, name);
    *set = NULL;
    if (!*info || (*info)->type != type)
        return nxe_node_error(node, NXE_ERROR_INTERNAL,
                              "the rule reads attribute '%s' as %s, "
                              "which the schema does not declare",
                              name, attr_type_name(type));
    for (int32_t i = 0; i < node->num_attrs && !*set; i++)
        if (strcmp(node->attrs[i].name, name) == 0)
            *set = &node->attrs[i];
    if (!*set && !(*info)->default_value)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "required attribute '%s' (%s) is not set", name,
                              attr_type_name(type));
    return NXE_OK;
}

static nxe_status bad_default(const nxe_node *node, const nxe_op_attr_info *info)
{
    return nxe_node_error(node, NXE_ERROR_INTERNAL, "bad default '%s' for attribute '%s'",
                          info->default_value, info->name);
}

/* A scalar attribute: the value set, or the schema default parsed (integers as integers, so
 * large ones do not round). Only the out-param of `type` is written. */
static nxe_status scalar_attr(const nxe_node *node, const char *name, int32_t type,
                              int64_t *int_value, double *float_value)
{
    const nxe_op_attr_info *info;
    const nxe_attr *set;
    nxe_status status = lookup_attr(node, name, type, &info, &set);
    if (status != NXE_OK)
        return status;
    char *end = NULL;
    if (type == NXE_ATTR_INT)
        *int_value = set ? set->int_value : strtoll(info->default_value, &end, 10);
    else
        *float_value = set ? set->float_value : strtod(info->default_value, &end);
    return !set && end == info->default_value ? bad_default(node, info) : NXE_OK;
}

nxe_status nxe_node_attr_int(const nxe_node *node, const char *name, int64_t *value)
{
    return scalar_attr(node, name, NXE_ATTR_INT, value, NULL);
}

nxe_status nxe_node_attr_float(const nxe_node *node, const char *name, double *value)
{
    return scalar_attr(node, name, NXE_ATTR_FLOAT, NULL, value);
}

nxe_status nxe_node_attr_string(const nxe_node *node, const char *name, const char **value)
{
    const nxe_op_attr_info *info;
    const nxe_attr *set;
    nxe_status status = lookup_attr(node, name, NXE_ATTR_STRING, &info, &set);
    if (status != NXE_OK || set) {
        if (set)
            *value = set->string_value;
        return status;
    }
    /* Schema defaults of strings are JSON strings without escapes, e.g. "\"NCHW\"". */
    const char *text = info->default_value;
    size_t length = strlen(text);
    if (length < 2 || text[0] != '"' || text[length - 1] != '"')
        return bad_default(node, info);
    *value = nxe_registry_unquoted(text);
    if (!*value)
        return nxe_node_error(node, NXE_ERROR_INTERNAL,
                              "default '%s' of attribute '%s' is too long", text, name);
    return NXE_OK;
}

/* Parses a schema default "[1, 2, 3]" into doubles. */
static nxe_status parse_default_list(const nxe_node *node, const nxe_op_attr_info *info,
                                     double *values, int32_t capacity, int32_t *count)
{
    const char *p = info->default_value;
    *count = 0;
    while (*p == ' ')
        p++;
    if (*p++ != '[')
        return bad_default(node, info);
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ']')
            return NXE_OK;
        char *end;
        double v = strtod(p, &end);
        if (end == p)
            return bad_default(node, info);
        if (*count >= capacity)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute '%s' has more than %d values", info->name, capacity);
        values[(*count)++] = v;
        p = end;
    }
}

/* The values of a list attribute: copied from the node, or parsed from the schema default
 * (then *parsed holds them as doubles and *from_node is NULL). */
static nxe_status list_attr(const nxe_node *node, const char *name, int32_t type, int32_t capacity,
                            const nxe_attr **from_node, double *parsed, int32_t *count)
{
    *count = 0;
    const nxe_op_attr_info *info;
    nxe_status status = lookup_attr(node, name, type, &info, from_node);
    if (status != NXE_OK)
        return status;
    if (!*from_node)
        return parse_default_list(node, info, parsed, capacity < 64 ? capacity : 64, count);
    *count = (*from_node)->count;
    if ((*from_node)->count > capacity)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute '%s' has %d values; at most %d are accepted", name,
                              (*from_node)->count, capacity);
    return NXE_OK;
}

nxe_status nxe_node_attr_ints(const nxe_node *node, const char *name, int64_t *values,
                              int32_t capacity, int32_t *count)
{
    const nxe_attr *set;
    double parsed[64];
    nxe_status status = list_attr(node, name, NXE_ATTR_INTS, capacity, &set, parsed, count);
    for (int32_t i = 0; status == NXE_OK && i < *count; i++)
        values[i] = set ? set->ints[i] : (int64_t)parsed[i];
    return status;
}

nxe_status nxe_node_attr_floats(const nxe_node *node, const char *name, float *values,
                                int32_t capacity, int32_t *count)
{
    const nxe_attr *set;
    double parsed[64];
    nxe_status status = list_attr(node, name, NXE_ATTR_FLOATS, capacity, &set, parsed, count);
    for (int32_t i = 0; status == NXE_OK && i < *count; i++)
        values[i] = set ? set->floats[i] : (float)parsed[i];
    return status;
}
