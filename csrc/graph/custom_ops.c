/* custom_ops.c — op types registered in a context: ops given by callbacks (shape rule, compute,
 * optional prepare/release) and composed ops (a subgraph of existing ops, expanded when a graph
 * compiles). Each registration is an entry whose first member is an nxe_op_def, so nodes carry
 * it like a built-in definition; the entry is reference counted by the context and by every
 * node of its type (ops/node.c), and freed with the last of them. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/utf8.h"
#include "graph/graph_internal.h"
#include "ops/custom.h"
#include "runtime/executable_internal.h"

#define CUSTOM_MAX_IO 64
#define CUSTOM_MAX_ATTRS 64
#define CUSTOM_MAX_NAME 63
#define MAX_EXPANSION_DEPTH 8

/* A declared attribute with its default parsed once. */
typedef struct custom_attr {
    bool has_default;
    int64_t int_value;
    double float_value;
    char *string_value;
    int64_t *ints;
    float *floats;
    int32_t count;
} custom_attr;

typedef struct custom_entry {
    nxe_op_def def; /* first: a node's def pointer is the entry's */
    atomic_int refcount;
    struct custom_entry *next; /* in the context's list */
    char *name;
    char *domain;
    char *onnx_op_type;
    nxe_op_param_info *inputs;
    nxe_op_param_info *outputs;
    nxe_op_attr_info *attr_infos;
    custom_attr *attrs;
    nxe_custom_op op;  /* callbacks and user data (strings point at the copies above) */
    nxe_graph *body;   /* composed ops: the subgraph, in a context of its own */
    char **body_names; /* composed ops: the param names */
    int32_t num_body_names;
} custom_entry;

/* What a step of an op with callbacks keeps: a copy of its node and the prepared state. */
typedef struct custom_instance {
    nxe_node node;
    void *state;
} custom_instance;

/* The params the shape rule makes (plain values; the instance is added at prepare). */
typedef struct custom_params {
    const custom_entry *entry;
    custom_instance *instance;
} custom_params;

static nxe_status callback_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params);
static nxe_status callback_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool);
static nxe_status composed_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params);
static nxe_status composed_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool);

bool nxe_custom_def_has_callbacks(const nxe_op_def *def)
{
    return def && def->infer == callback_infer;
}

bool nxe_custom_def_is_registered(const nxe_op_def *def)
{
    return def && (def->infer == callback_infer || def->infer == composed_infer);
}

const nxe_graph *nxe_custom_def_body(const nxe_op_def *def)
{
    return def && def->infer == composed_infer ? ((const custom_entry *)def)->body : NULL;
}

static void entry_free(custom_entry *entry)
{
    if (entry->op.destroy)
        entry->op.destroy(entry->op.user_data);
    for (int32_t i = 0; entry->attr_infos && i < entry->def.info.num_attrs; i++) {
        nxe_free((char *)(uintptr_t)entry->attr_infos[i].name);
        nxe_free((char *)(uintptr_t)entry->attr_infos[i].default_value);
        nxe_free(entry->attrs[i].string_value);
        nxe_free(entry->attrs[i].ints);
        nxe_free(entry->attrs[i].floats);
    }
    for (int32_t i = 0; i < entry->num_body_names; i++)
        nxe_free(entry->body_names[i]);
    nxe_free(entry->body_names);
    nxe_graph_release(entry->body);
    nxe_free(entry->attr_infos);
    nxe_free(entry->attrs);
    nxe_free(entry->inputs);
    nxe_free(entry->outputs);
    nxe_free(entry->name);
    nxe_free(entry->domain);
    nxe_free(entry->onnx_op_type);
    nxe_free(entry);
}

void nxe_custom_def_retain(const nxe_op_def *def)
{
    if (nxe_custom_def_is_registered(def))
        atomic_fetch_add(&((custom_entry *)(uintptr_t)def)->refcount, 1);
}

void nxe_custom_def_release(const nxe_op_def *def)
{
    if (!nxe_custom_def_is_registered(def))
        return;
    custom_entry *entry = (custom_entry *)(uintptr_t)def;
    if (atomic_fetch_sub(&entry->refcount, 1) == 1)
        entry_free(entry);
}

const nxe_op_def *nxe_context_find_op(const nxe_context *ctx, const char *op_type)
{
    for (const custom_entry *e = ctx ? ctx->custom_ops : NULL; e; e = e->next)
        if (strcmp(e->name, op_type) == 0)
            return &e->def;
    return nxe_op_def_find(op_type);
}

void nxe_context_custom_free(nxe_context *ctx)
{
    custom_entry *e = ctx->custom_ops;
    ctx->custom_ops = NULL;
    while (e) {
        custom_entry *next = e->next;
        nxe_custom_def_release(&e->def);
        e = next;
    }
}

/* ---- registration ---- */

static bool valid_text(const char *s, size_t max_length)
{
    size_t length = strlen(s);
    if (length > max_length)
        return false;
    for (size_t i = 0; i < length;) {
        uint32_t cp;
        size_t n = nxe_utf8_decode((const unsigned char *)s + i, length - i, &cp);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

static bool onnx_domain_default(const char *domain)
{
    return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

static const custom_entry *find_onnx(const nxe_context *ctx, const char *domain,
                                     const char *op_type)
{
    for (const custom_entry *e = ctx->custom_ops; e; e = e->next) {
        bool same_domain = onnx_domain_default(domain)
                               ? onnx_domain_default(e->domain)
                               : e->domain && strcmp(e->domain, domain) == 0;
        if (e->domain && same_domain && strcmp(e->onnx_op_type, op_type) == 0)
            return e;
    }
    return NULL;
}

/* Name, domain and ONNX op type checked and copied into a new entry. */
static nxe_status entry_begin(const nxe_context *ctx, const char *name, const char *domain,
                              const char *onnx_op_type, const char *where, custom_entry **out)
{
    *out = NULL;
    if (!name || !name[0] || !valid_text(name, CUSTOM_MAX_NAME))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the op name must be 1 to %d bytes of UTF-8", where, CUSTOM_MAX_NAME);
    if ((domain && !valid_text(domain, NXE_LIMIT_TYPE_NAME - 1)) ||
        (onnx_op_type && (!onnx_op_type[0] || !valid_text(onnx_op_type, CUSTOM_MAX_NAME))))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op '%s': the domain or ONNX op type is not valid UTF-8 of at most "
                         "%d bytes",
                         where, name, CUSTOM_MAX_NAME);
    if (nxe_op_def_find(name))
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: '%s' is a built-in op type", where, name);
    for (const custom_entry *e = ctx->custom_ops; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return nxe_error(NXE_ERROR_INVALID_STATE,
                             "%s: op type '%s' is already registered in this context", where, name);
    const char *onnx_type = onnx_op_type ? onnx_op_type : name;
    if (domain && domain[0]) {
        const custom_entry *other = find_onnx(ctx, domain, onnx_type);
        if (other)
            return nxe_error(NXE_ERROR_INVALID_STATE,
                             "%s: ONNX op '%s' of domain '%s' already answers as op type '%s'",
                             where, onnx_type, domain, other->name);
    }
    custom_entry *entry = nxe_alloc_zeroed(sizeof *entry);
    if (entry) {
        atomic_init(&entry->refcount, 1);
        entry->name = nxe_strdup(name);
        entry->onnx_op_type = nxe_strdup(onnx_type);
        entry->domain = domain && domain[0] ? nxe_strdup(domain) : NULL;
    }
    if (!entry || !entry->name || !entry->onnx_op_type || (domain && domain[0] && !entry->domain)) {
        if (entry)
            entry_free(entry);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    entry->def.info.struct_size = sizeof(nxe_op_info);
    entry->def.info.name = entry->name;
    entry->def.info.summary = "a custom op registered in the context";
    entry->def.params_size = sizeof(custom_params);
    *out = entry;
    return NXE_OK;
}

static nxe_status make_params(custom_entry *entry, int32_t num_inputs, int32_t num_optional,
                              int32_t num_outputs, const uint32_t *input_masks)
{
    entry->inputs = nxe_alloc_zeroed(sizeof(nxe_op_param_info) * (size_t)(num_inputs + 1));
    entry->outputs = nxe_alloc_zeroed(sizeof(nxe_op_param_info) * (size_t)(num_outputs + 1));
    if (!entry->inputs || !entry->outputs)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "registering an op: out of memory");
    for (int32_t i = 0; i < num_inputs; i++)
        entry->inputs[i] = (nxe_op_param_info){
            .name = entry->body_names ? entry->body_names[i] : "input",
            .doc = "",
            .dtypes = input_masks ? input_masks[i] : NXE_MASK_ALL,
            .optional = i >= num_inputs - num_optional,
        };
    for (int32_t i = 0; i < num_outputs; i++)
        entry->outputs[i] =
            (nxe_op_param_info){.name = "output", .doc = "", .dtypes = NXE_MASK_ALL};
    entry->def.info.num_inputs = num_inputs;
    entry->def.info.inputs = entry->inputs;
    entry->def.info.num_outputs = num_outputs;
    entry->def.info.outputs = entry->outputs;
    return NXE_OK;
}

/* Parses "[1, 2.5]" into doubles; false when it is not such a list or has too many values. */
static bool parse_list(const char *p, double *values, int32_t capacity, int32_t *count)
{
    *count = 0;
    while (*p == ' ')
        p++;
    if (*p++ != '[')
        return false;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ']')
            return p[1] == '\0';
        char *end;
        double v = strtod(p, &end);
        if (end == p || *count >= capacity)
            return false;
        values[(*count)++] = v;
        p = end;
    }
}

static nxe_status parse_default(const char *op, const nxe_op_attr_info *info, custom_attr *attr)
{
    const char *text = info->default_value;
    char *end = NULL;
    bool ok = true;
    double list[CUSTOM_MAX_ATTRS];
    switch (info->type) {
    case NXE_ATTR_INT:
        attr->int_value = strtoll(text, &end, 10);
        ok = end != text && *end == '\0';
        break;
    case NXE_ATTR_FLOAT:
        attr->float_value = strtod(text, &end);
        ok = end != text && *end == '\0';
        break;
    case NXE_ATTR_STRING: {
        size_t length = strlen(text);
        ok = length >= 2 && text[0] == '"' && text[length - 1] == '"' &&
             !memchr(text + 1, '"', length - 2) && !memchr(text + 1, '\\', length - 2);
        if (ok) {
            attr->string_value = nxe_alloc(length - 1);
            if (!attr->string_value)
                return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "registering an op: out of memory");
            memcpy(attr->string_value, text + 1, length - 2);
            attr->string_value[length - 2] = '\0';
        }
        break;
    }
    default: /* INTS, FLOATS */
        ok = parse_list(text, list, CUSTOM_MAX_ATTRS, &attr->count);
        if (ok && info->type == NXE_ATTR_INTS) {
            attr->ints = nxe_alloc(sizeof(int64_t) * (size_t)(attr->count + 1));
            for (int32_t i = 0; attr->ints && i < attr->count; i++)
                attr->ints[i] = (int64_t)list[i];
            if (!attr->ints)
                return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "registering an op: out of memory");
        } else if (ok) {
            attr->floats = nxe_alloc(sizeof(float) * (size_t)(attr->count + 1));
            for (int32_t i = 0; attr->floats && i < attr->count; i++)
                attr->floats[i] = (float)list[i];
            if (!attr->floats)
                return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "registering an op: out of memory");
        }
        break;
    }
    if (!ok)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_context_register_op: op '%s': attribute '%s' has default '%s', "
                         "which is not a JSON %s",
                         op, info->name, text,
                         info->type == NXE_ATTR_INT      ? "integer"
                         : info->type == NXE_ATTR_FLOAT  ? "number"
                         : info->type == NXE_ATTR_STRING ? "string without escapes"
                                                         : "list of at most 64 numbers");
    attr->has_default = true;
    return NXE_OK;
}

static nxe_status copy_attrs(custom_entry *entry, const nxe_op_attr_info *attrs, int32_t count)
{
    const char *where = "nxe_context_register_op";
    if (count < 0 || count > CUSTOM_MAX_ATTRS || (count > 0 && !attrs))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op '%s': num_attrs is %d (at most %d, with attrs set)", where,
                         entry->name, count, CUSTOM_MAX_ATTRS);
    entry->attr_infos = nxe_alloc_zeroed(sizeof(nxe_op_attr_info) * (size_t)(count + 1));
    entry->attrs = nxe_alloc_zeroed(sizeof(custom_attr) * (size_t)(count + 1));
    if (!entry->attr_infos || !entry->attrs)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    entry->def.info.attrs = entry->attr_infos;
    for (int32_t i = 0; i < count; i++) {
        const nxe_op_attr_info *a = &attrs[i];
        if (!a->name || !a->name[0] || !valid_text(a->name, NXE_LIMIT_TYPE_NAME - 1) ||
            a->type < NXE_ATTR_INT || a->type > NXE_ATTR_FLOATS)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: op '%s': attribute %d has no valid name or type", where,
                             entry->name, i);
        for (int32_t j = 0; j < i; j++)
            if (strcmp(attrs[j].name, a->name) == 0)
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "%s: op '%s': attribute '%s' is declared twice", where,
                                 entry->name, a->name);
        nxe_op_attr_info *info = &entry->attr_infos[i];
        info->type = a->type;
        info->doc = "";
        info->name = nxe_strdup(a->name);
        info->default_value = a->default_value ? nxe_strdup(a->default_value) : NULL;
        entry->def.info.num_attrs = i + 1;
        if (!info->name || (a->default_value && !info->default_value))
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
        if (info->default_value) {
            nxe_status status = parse_default(entry->name, info, &entry->attrs[i]);
            if (status != NXE_OK)
                return status;
        }
    }
    return NXE_OK;
}

NXE_API nxe_status nxe_context_register_op(nxe_context *ctx, const nxe_custom_op *op)
{
    const char *where = "nxe_context_register_op";
    if (!ctx || !op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         ctx ? "op" : "context");
    if (op->struct_size < sizeof(nxe_custom_op))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op->struct_size is %u, expected at least %zu", where, op->struct_size,
                         sizeof(nxe_custom_op));
    custom_entry *entry;
    nxe_status status = entry_begin(ctx, op->name, op->domain, op->onnx_op_type, where, &entry);
    if (status != NXE_OK)
        return status;
    if (op->num_inputs < 0 || op->num_inputs > CUSTOM_MAX_IO || op->num_outputs < 1 ||
        op->num_outputs > CUSTOM_MAX_IO || op->num_optional_inputs < 0 ||
        op->num_optional_inputs > op->num_inputs)
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                           "%s: op '%s': %d inputs (%d optional) and %d outputs; expected 0-%d "
                           "inputs, at most all optional, and 1-%d outputs",
                           where, op->name, op->num_inputs, op->num_optional_inputs,
                           op->num_outputs, CUSTOM_MAX_IO, CUSTOM_MAX_IO);
    else if (!op->infer || !op->compute)
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op '%s' has no %s callback", where,
                           op->name, op->infer ? "compute" : "infer");
    if (status == NXE_OK)
        status = make_params(entry, op->num_inputs, op->num_optional_inputs, op->num_outputs, NULL);
    if (status == NXE_OK)
        status = copy_attrs(entry, op->attrs, op->num_attrs);
    if (status != NXE_OK) {
        entry_free(entry);
        return status;
    }
    entry->op = *op;
    entry->op.struct_size = sizeof(nxe_custom_op);
    entry->op.name = entry->name;
    entry->op.domain = entry->domain;
    entry->op.onnx_op_type = entry->onnx_op_type;
    entry->op.attrs = entry->attr_infos;
    entry->def.infer = callback_infer;
    entry->def.run = callback_run;
    entry->next = ctx->custom_ops;
    ctx->custom_ops = entry;
    return NXE_OK;
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
    const custom_entry *e = find_onnx(ctx, domain, op_type);
    if (!e)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "nxe_context_find_onnx_op: no op of the context answers to ONNX op "
                         "'%s' of domain '%s'",
                         op_type, domain);
    *name = e->name;
    return NXE_OK;
}

/* ---- the callbacks' view ---- */

static const char *status_text(nxe_status status)
{
    return nxe_status_name(status);
}

/* The message a callback left (via nxe_custom_fail) copied out, or a generic one. */
static void callback_message(nxe_status status, char *message, size_t size)
{
    const char *left = nxe_last_error();
    if (left && left[0])
        snprintf(message, size, "%s", left);
    else
        snprintf(message, size, "failed with %s and no message", status_text(status));
}

/* A status a callback returned, as one this library reports: unknown codes become RUNTIME. */
static nxe_status callback_status(nxe_status status)
{
    return status > 0 && status <= NXE_ERROR_CANCELLED ? status : NXE_ERROR_RUNTIME;
}

static void to_custom(const nxe_value *value, nxe_custom_tensor *tensor)
{
    *tensor = (nxe_custom_tensor){.dtype = value->dtype, .ndim = value->ndim};
    memcpy(tensor->shape, value->shape, sizeof tensor->shape);
    tensor->data = value->data;
    tensor->data_size = value->data && value->dtype != NXE_DTYPE_NONE && value->ndim >= 0
                            ? nxe_value_bytes(value)
                            : 0;
}

static nxe_custom_call make_call(const custom_entry *entry, const nxe_node *node, void *state,
                                 nxe_thread_pool *pool)
{
    return (nxe_custom_call){
        .struct_size = sizeof(nxe_custom_call),
        .user_data = entry->op.user_data,
        .state = state,
        .attrs = (const nxe_custom_attrs *)node,
        .op_type = entry->name,
        .op_name = node->name,
        .pool = pool,
    };
}

static nxe_status callback_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params)
{
    const custom_entry *entry = (const custom_entry *)node->def;
    ((custom_params *)params)->entry = entry;
    nxe_custom_tensor ins[CUSTOM_MAX_IO], outs[CUSTOM_MAX_IO];
    for (int32_t i = 0; i < num_inputs; i++)
        to_custom(&inputs[i], &ins[i]);
    for (int32_t i = 0; i < num_outputs; i++)
        outs[i] = (nxe_custom_tensor){.dtype = NXE_DTYPE_NONE, .ndim = -1};
    nxe_custom_call call = make_call(entry, node, NULL, NULL);
    nxe_error_clear();
    nxe_status status = entry->op.infer(&call, ins, num_inputs, outs, num_outputs);
    if (status != NXE_OK) {
        char message[700];
        callback_message(status, message, sizeof message);
        return nxe_node_error(node, callback_status(status), "the shape rule failed: %s", message);
    }
    for (int32_t i = 0; i < num_outputs; i++) {
        const nxe_custom_tensor *t = &outs[i];
        if (!nxe_dtype_valid(t->dtype))
            return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                                  "the shape rule gave output %d dtype %d, which is not an "
                                  "nxe_dtype",
                                  i, t->dtype);
        if (t->ndim < 0 || t->ndim > NXE_MAX_RANK)
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "the shape rule gave output %d rank %d; expected 0 to %d", i,
                                  t->ndim, NXE_MAX_RANK);
        for (int32_t d = 0; d < t->ndim; d++)
            if (t->shape[d] < 0)
                return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                      "the shape rule gave output %d dimension %d the negative "
                                      "size %lld",
                                      i, d, (long long)t->shape[d]);
        outputs[i].dtype = t->dtype;
        outputs[i].ndim = t->ndim;
        memset(outputs[i].shape, 0, sizeof outputs[i].shape);
        memcpy(outputs[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
    return NXE_OK;
}

nxe_status nxe_custom_prepare_step(const nxe_node *node, void *params, const nxe_value *inputs,
                                   int32_t num_inputs)
{
    custom_params *p = params;
    const custom_entry *entry = p->entry;
    custom_instance *instance = nxe_alloc_zeroed(sizeof *instance);
    if (!instance)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory");
    nxe_status status = nxe_node_copy(&instance->node, node);
    if (status != NXE_OK) {
        nxe_free(instance);
        return status;
    }
    p->instance = instance;
    if (!entry->op.prepare)
        return NXE_OK;
    nxe_custom_tensor ins[CUSTOM_MAX_IO];
    for (int32_t i = 0; i < num_inputs; i++)
        to_custom(&inputs[i], &ins[i]);
    nxe_custom_call call = make_call(entry, &instance->node, NULL, NULL);
    nxe_error_clear();
    status = entry->op.prepare(&call, ins, num_inputs, &instance->state);
    if (status != NXE_OK) {
        char message[700];
        callback_message(status, message, sizeof message);
        return nxe_error(callback_status(status), "the prepare callback failed: %s", message);
    }
    return NXE_OK;
}

void nxe_custom_step_clear(const nxe_node *node, void *params)
{
    if (!params || !nxe_custom_def_has_callbacks(node->def))
        return;
    custom_params *p = params;
    custom_instance *instance = p->instance;
    p->instance = NULL;
    if (!instance)
        return;
    if (instance->state && p->entry->op.release)
        p->entry->op.release(p->entry->op.user_data, instance->state);
    nxe_node_clear(&instance->node);
    nxe_free(instance);
}

static nxe_status callback_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    const custom_params *p = params;
    if (!p->instance)
        return nxe_error(NXE_ERROR_INTERNAL, "the custom op's step was not prepared");
    nxe_custom_tensor ins[CUSTOM_MAX_IO], outs[CUSTOM_MAX_IO];
    for (int32_t i = 0; i < num_inputs; i++)
        to_custom(&inputs[i], &ins[i]);
    for (int32_t i = 0; i < num_outputs; i++)
        to_custom(&outputs[i], &outs[i]);
    nxe_custom_call call = make_call(p->entry, &p->instance->node, p->instance->state, pool);
    nxe_error_clear();
    nxe_status status = p->entry->op.compute(&call, ins, num_inputs, outs, num_outputs);
    if (status == NXE_OK)
        return NXE_OK;
    char message[700];
    callback_message(status, message, sizeof message);
    return nxe_error(callback_status(status), "%s", message);
}

/* A composed op is expanded before inference; reaching its rule means it was not. */
static nxe_status composed_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs, (void)params;
    return nxe_node_error(node, NXE_ERROR_INTERNAL, "a composed op was not expanded");
}

static nxe_status composed_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)params, (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs, (void)pool;
    return nxe_error(NXE_ERROR_INTERNAL, "a composed op was not expanded");
}

/* ---- attributes, loops and failures ---- */

/* The declared attribute `name` of `type` and the value set on the node (NULL: the default). */
static nxe_status custom_attr_lookup(const nxe_custom_attrs *attrs, const char *name, int32_t type,
                                     const char *where, const custom_attr **declared,
                                     const nxe_attr **set)
{
    if (!attrs || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         attrs ? "name" : "attrs");
    const nxe_node *node = (const nxe_node *)attrs;
    if (!nxe_custom_def_has_callbacks(node->def))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: attrs is not a custom op's", where);
    const custom_entry *entry = (const custom_entry *)node->def;
    *declared = NULL;
    *set = NULL;
    for (int32_t i = 0; i < entry->def.info.num_attrs; i++)
        if (entry->attr_infos[i].type == type && strcmp(entry->attr_infos[i].name, name) == 0)
            *declared = &entry->attrs[i];
    if (!*declared)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "%s: op '%s' ('%s') declares no attribute '%s' of this type", where,
                         entry->name, node->name, name);
    for (int32_t i = 0; i < node->num_attrs && !*set; i++)
        if (strcmp(node->attrs[i].name, name) == 0)
            *set = &node->attrs[i];
    if (!*set && !(*declared)->has_default)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op '%s' ('%s'): required attribute '%s' is not set", where,
                         entry->name, node->name, name);
    return NXE_OK;
}

NXE_API nxe_status nxe_custom_attr_int(const nxe_custom_attrs *attrs, const char *name,
                                       int64_t *value)
{
    const custom_attr *declared;
    const nxe_attr *set;
    if (!value)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_attr_int: value is NULL");
    nxe_status status =
        custom_attr_lookup(attrs, name, NXE_ATTR_INT, "nxe_custom_attr_int", &declared, &set);
    if (status == NXE_OK)
        *value = set ? set->int_value : declared->int_value;
    return status;
}

NXE_API nxe_status nxe_custom_attr_float(const nxe_custom_attrs *attrs, const char *name,
                                         double *value)
{
    const custom_attr *declared;
    const nxe_attr *set;
    if (!value)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_attr_float: value is NULL");
    nxe_status status =
        custom_attr_lookup(attrs, name, NXE_ATTR_FLOAT, "nxe_custom_attr_float", &declared, &set);
    if (status == NXE_OK)
        *value = set ? set->float_value : declared->float_value;
    return status;
}

NXE_API nxe_status nxe_custom_attr_string(const nxe_custom_attrs *attrs, const char *name,
                                          const char **value)
{
    const custom_attr *declared;
    const nxe_attr *set;
    if (!value)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_attr_string: value is NULL");
    nxe_status status =
        custom_attr_lookup(attrs, name, NXE_ATTR_STRING, "nxe_custom_attr_string", &declared, &set);
    if (status == NXE_OK)
        *value = set ? set->string_value : declared->string_value;
    return status;
}

NXE_API nxe_status nxe_custom_attr_ints(const nxe_custom_attrs *attrs, const char *name,
                                        const int64_t **values, int32_t *count)
{
    const custom_attr *declared;
    const nxe_attr *set;
    if (!values || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_attr_ints: %s is NULL",
                         values ? "count" : "values");
    nxe_status status =
        custom_attr_lookup(attrs, name, NXE_ATTR_INTS, "nxe_custom_attr_ints", &declared, &set);
    if (status == NXE_OK) {
        *values = set ? set->ints : declared->ints;
        *count = set ? set->count : declared->count;
    }
    return status;
}

NXE_API nxe_status nxe_custom_attr_floats(const nxe_custom_attrs *attrs, const char *name,
                                          const float **values, int32_t *count)
{
    const custom_attr *declared;
    const nxe_attr *set;
    if (!values || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_attr_floats: %s is NULL",
                         values ? "count" : "values");
    nxe_status status =
        custom_attr_lookup(attrs, name, NXE_ATTR_FLOATS, "nxe_custom_attr_floats", &declared, &set);
    if (status == NXE_OK) {
        *values = set ? set->floats : declared->floats;
        *count = set ? set->count : declared->count;
    }
    return status;
}

NXE_API nxe_status nxe_custom_parallel_for(const nxe_custom_call *call, int64_t count,
                                           int64_t grain, nxe_custom_range_fn fn, void *arg)
{
    if (!call || !fn || count < 0 || grain < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_custom_parallel_for: %s",
                         !call ? "call is NULL"
                         : !fn ? "fn is NULL"
                               : "count or grain < 0");
    if (count > 0)
        nxe_parallel_for((nxe_thread_pool *)call->pool, count, grain ? grain : 1, fn, arg);
    return NXE_OK;
}

NXE_API nxe_status nxe_custom_fail(nxe_status status, const char *message)
{
    if (message)
        nxe_error(status, "%.*s", 600, message);
    else
        nxe_error_clear();
    return status;
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
    if (!ctx || !body)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         ctx ? "body" : "context");
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
    custom_entry *entry;
    nxe_status status = entry_begin(ctx, name, domain, NULL, where, &entry);
    if (status != NXE_OK)
        return status;
    /* The body must compile as declared: a broken definition fails here, not at each use. */
    nxe_compile_request request;
    nxe_executable *exe = NULL;
    status = nxe_compile_request_from(body, NULL, where, &request);
    if (status == NXE_OK) {
        request.serialize_only = true;
        status = nxe_compile_graph((nxe_graph *)(uintptr_t)body, &request, &exe);
        nxe_executable_release(exe);
        if (status != NXE_OK)
            nxe_error_prefix("%s: op '%s': the body does not compile: ", where, name);
    }
    /* The body is kept in a context of its own: the registering context holds the entry, which
     * must not hold the context. */
    nxe_context *own = NULL;
    if (status == NXE_OK)
        status = nxe_context_create(&own);
    if (status == NXE_OK) {
        own->limits = ctx->limits;
        status = copy_graph(body, own, &entry->body);
        nxe_context_release(own);
    }
    uint32_t masks[CUSTOM_MAX_IO];
    if (status == NXE_OK) {
        entry->body_names = nxe_alloc_zeroed(sizeof(char *) * (size_t)(num_inputs + 1));
        if (!entry->body_names)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    for (int32_t i = 0, in = 0; status == NXE_OK && i < body->num_tensors; i++) {
        const nxe_tensor *t = body->tensors[i];
        if (t->kind != NXE_TENSOR_INPUT)
            continue;
        masks[in] = NXE_MASK(t->dtype);
        entry->body_names[in] = nxe_strdup(t->name);
        entry->num_body_names = ++in;
        if (!entry->body_names[in - 1])
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    if (status == NXE_OK)
        status = make_params(entry, num_inputs, 0, num_outputs, masks);
    if (status == NXE_OK)
        status = copy_attrs(entry, NULL, 0);
    if (status != NXE_OK) {
        entry_free(entry);
        return status;
    }
    entry->def.info.summary = "a composed op registered in the context";
    entry->def.infer = composed_infer;
    entry->def.run = composed_run;
    entry->next = ctx->custom_ops;
    ctx->custom_ops = entry;
    return NXE_OK;
}

/* The bytes a serialize-only compile borrowed from `graph`, copied into the executable. */
static nxe_status own_borrowed_data(nxe_executable *exe)
{
    for (int32_t c = 0; c < exe->num_constants; c++) {
        nxe_exe_constant *constant = &exe->constants[c];
        if (constant->owned || !constant->data)
            continue;
        void *copy = nxe_alloc(constant->bytes ? constant->bytes : 1);
        if (!copy)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        memcpy(copy, constant->data, constant->bytes);
        for (int32_t i = 0; i < exe->num_tensors; i++)
            if (exe->tensors[i].constant == c && exe->tensors[i].storage == constant->data) {
                exe->tensors[i].storage = copy;
                exe->data[i] = copy;
            }
        constant->data = copy;
        constant->owned = true;
    }
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        nxe_exe_tensor *t = &exe->tensors[i];
        if (t->kind != NXE_TENSOR_VARIABLE || !t->storage || t->owns_storage)
            continue;
        void *copy = nxe_alloc(t->bytes ? t->bytes : 1);
        if (!copy)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        memcpy(copy, t->storage, t->bytes);
        t->storage = copy;
        t->owns_storage = true;
        exe->data[i] = copy;
    }
    return NXE_OK;
}

nxe_status nxe_composed_compile(nxe_graph *graph, nxe_graph *expanded,
                                const nxe_compile_request *request, nxe_executable **out)
{
    nxe_status status = nxe_compile_graph(expanded, request, out);
    if (status == NXE_OK && request->serialize_only)
        status = own_borrowed_data(*out);
    /* What inference settled for the graph's own tensors, which lead the copy in order. */
    nxe_value *inferred =
        status == NXE_OK ? nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(graph->num_tensors + 1))
                         : NULL;
    if (status == NXE_OK && !inferred)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (status == NXE_OK) {
        for (int32_t i = 0; i < graph->num_tensors && i < expanded->num_inferred; i++) {
            inferred[i] = expanded->inferred[i];
            inferred[i].quant = &graph->tensors[i]->quant;
            inferred[i].data = NULL;
        }
        nxe_free(graph->inferred);
        graph->inferred = inferred;
        graph->num_inferred = graph->num_tensors < expanded->num_inferred ? graph->num_tensors
                                                                          : expanded->num_inferred;
    }
    if (status != NXE_OK) {
        nxe_executable_release(*out);
        *out = NULL;
    }
    nxe_graph_release(expanded);
    return status;
}
