/* custom.c — the op definitions a context registers (graph/custom_ops.c): ops given by callbacks
 * (shape rule, compute, optional prepare/release) and composed ops (a subgraph of existing ops,
 * expanded when a graph compiles). Each registration is an entry whose first member is an
 * nxe_op_def, so nodes carry it like a built-in definition; the entry is reference counted by
 * its list (the context's) and by every node of its type (ops/node.c), and freed with the last
 * of them. Here too: the callbacks' view of a step (tensors, attributes, parallel loops). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/utf8.h"
#include "ops/custom.h"

#define CUSTOM_MAX_IO 64
#define CUSTOM_MAX_ATTRS 64
#define CUSTOM_MAX_NAME 63

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

struct nxe_custom_entry {
    nxe_op_def def; /* first: a node's def pointer is the entry's */
    atomic_int refcount;
    struct nxe_custom_entry *next; /* in the context's list */
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
};

/* What a step of an op with callbacks keeps: a copy of its node and the prepared state. */
typedef struct custom_instance {
    nxe_node node;
    void *state;
} custom_instance;

/* The params the shape rule makes (plain values; the instance is added at prepare). */
typedef struct custom_params {
    const nxe_custom_entry *entry;
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
    return def && def->infer == composed_infer ? ((const nxe_custom_entry *)def)->body : NULL;
}

static void entry_free(nxe_custom_entry *entry)
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
        atomic_fetch_add(&((nxe_custom_entry *)(uintptr_t)def)->refcount, 1);
}

void nxe_custom_def_release(const nxe_op_def *def)
{
    if (!nxe_custom_def_is_registered(def))
        return;
    nxe_custom_entry *entry = (nxe_custom_entry *)(uintptr_t)def;
    if (atomic_fetch_sub(&entry->refcount, 1) == 1)
        entry_free(entry);
}

const nxe_op_def *nxe_custom_list_find(const nxe_custom_entry *head, const char *op_type)
{
    for (const nxe_custom_entry *e = head; e; e = e->next)
        if (strcmp(e->name, op_type) == 0)
            return &e->def;
    return NULL;
}

void nxe_custom_list_free(nxe_custom_entry **head)
{
    nxe_custom_entry *e = *head;
    *head = NULL;
    while (e) {
        nxe_custom_entry *next = e->next;
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

static const nxe_custom_entry *find_onnx(const nxe_custom_entry *head, const char *domain,
                                         const char *op_type)
{
    for (const nxe_custom_entry *e = head; e; e = e->next) {
        bool same_domain = onnx_domain_default(domain)
                               ? onnx_domain_default(e->domain)
                               : e->domain && strcmp(e->domain, domain) == 0;
        if (e->domain && same_domain && strcmp(e->onnx_op_type, op_type) == 0)
            return e;
    }
    return NULL;
}

/* Name, domain and ONNX op type checked and copied into a new entry. */
static nxe_status entry_begin(const nxe_custom_entry *head, const char *name, const char *domain,
                              const char *onnx_op_type, const char *where, nxe_custom_entry **out)
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
    if (!strchr(name, '.'))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op type '%s' has no '.': custom op types are named like "
                         "'domain.Name', apart from the built-in ones",
                         where, name);
    for (const nxe_custom_entry *e = head; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return nxe_error(NXE_ERROR_INVALID_STATE,
                             "%s: op type '%s' is already registered in this context", where, name);
    const char *onnx_type = onnx_op_type ? onnx_op_type : name;
    if (domain && domain[0]) {
        const nxe_custom_entry *other = find_onnx(head, domain, onnx_type);
        if (other)
            return nxe_error(NXE_ERROR_INVALID_STATE,
                             "%s: ONNX op '%s' of domain '%s' already answers as op type '%s'",
                             where, onnx_type, domain, other->name);
    }
    nxe_custom_entry *entry = nxe_alloc_zeroed(sizeof *entry);
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

static nxe_status make_params(nxe_custom_entry *entry, int32_t num_inputs, int32_t num_optional,
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

static nxe_status copy_attrs(nxe_custom_entry *entry, const nxe_op_attr_info *attrs, int32_t count)
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

nxe_status nxe_custom_list_add_op(nxe_custom_entry **head, const nxe_custom_op *op)
{
    const char *where = "nxe_context_register_op";
    if (!op)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op is NULL", where);
    if (op->struct_size < sizeof(nxe_custom_op))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: op->struct_size is %u, expected at least %zu", where, op->struct_size,
                         sizeof(nxe_custom_op));
    nxe_custom_entry *entry;
    nxe_status status = entry_begin(*head, op->name, op->domain, op->onnx_op_type, where, &entry);
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
    entry->next = *head;
    *head = entry;
    return NXE_OK;
}

const char *nxe_custom_list_find_onnx(const nxe_custom_entry *head, const char *domain,
                                      const char *op_type)
{
    const nxe_custom_entry *e = find_onnx(head, domain, op_type);
    return e ? e->name : NULL;
}

nxe_status nxe_custom_list_add_composed(nxe_custom_entry **head, const char *name,
                                        const char *domain, nxe_graph *body, int32_t num_inputs,
                                        int32_t num_outputs, char **input_names,
                                        const uint32_t *input_masks)
{
    const char *where = "nxe_context_register_composed_op";
    nxe_custom_entry *entry;
    nxe_status status = entry_begin(*head, name, domain, NULL, where, &entry);
    if (status != NXE_OK) {
        nxe_graph_release(body);
        for (int32_t i = 0; i < num_inputs; i++)
            nxe_free(input_names[i]);
        nxe_free(input_names);
        return status;
    }
    entry->body = body;
    entry->body_names = input_names;
    entry->num_body_names = num_inputs;
    status = make_params(entry, num_inputs, 0, num_outputs, input_masks);
    if (status == NXE_OK)
        status = copy_attrs(entry, NULL, 0);
    if (status != NXE_OK) {
        entry_free(entry);
        return status;
    }
    entry->def.info.summary = "a composed op registered in the context";
    entry->def.infer = composed_infer;
    entry->def.run = composed_run;
    entry->next = *head;
    *head = entry;
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

static nxe_custom_call make_call(const nxe_custom_entry *entry, const nxe_node *node, void *state,
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
    const nxe_custom_entry *entry = (const nxe_custom_entry *)node->def;
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
    const nxe_custom_entry *entry = p->entry;
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

/* ---- placeholders ---- */

static const nxe_op_param_info placeholder_params[] = {
    {"values", "any tensors", NXE_MASK_ALL, 1, 1},
};

static nxe_status placeholder_infer(const nxe_node *node, const nxe_value *inputs,
                                    int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                    void *params)
{
    (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs, (void)params;
    return nxe_node_error(node, NXE_ERROR_NOT_FOUND, "the op type is not registered");
}

static const nxe_op_def placeholder_def = {
    .info = NXE_INFO_NOATTR("(custom op)", "a custom op type decoded without its registration",
                            placeholder_params, placeholder_params),
    .params_size = 1,
    .infer = placeholder_infer,
    .run = composed_run,
};

const nxe_op_def *nxe_custom_placeholder_def(void)
{
    return &placeholder_def;
}

bool nxe_custom_def_is_placeholder(const nxe_op_def *def)
{
    return def == &placeholder_def;
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
    const nxe_custom_entry *entry = (const nxe_custom_entry *)node->def;
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
