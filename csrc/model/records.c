/* records.c — the records of docs/formats.md that both file formats share, each with its one
 * encoder, its writer-side limit check and its one decoder. */
#include <stdio.h>
#include <string.h>

#include "model/records.h"

#include "graph/custom_ops.h"
#include "graph/graph_internal.h"

/* ---- quantization ---- */

void nxe_quant_encode(nxe_writer *w, const nxe_quant *quant)
{
    nxe_write_u32(w, (uint32_t)quant->type);
    switch (quant->type) {
    case NXE_QUANT_ASYMMETRIC:
        nxe_write_f32(w, quant->scale);
        nxe_write_i32(w, quant->zero_point);
        break;
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        nxe_write_i32(w, quant->axis);
        nxe_write_u32(w, (uint32_t)quant->num_scales);
        for (int32_t i = 0; i < quant->num_scales; i++)
            nxe_write_f32(w, quant->scales[i]);
        break;
    case NXE_QUANT_DYNAMIC_FIXED_POINT: nxe_write_i32(w, quant->fractional_length); break;
    default: break;
    }
}

/* The setters' rule for a scale: finite and positive. */
static bool scale_valid(float scale)
{
    return scale > 0.0f && scale <= 3.0e38f;
}

nxe_status nxe_quant_decode(nxe_reader *r, nxe_quant *quant, float **scales)
{
    *quant = (nxe_quant){.type = NXE_QUANT_NONE};
    *scales = NULL;
    uint32_t type;
    nxe_status status = nxe_read_u32(r, &type);
    if (status != NXE_OK)
        return status;
    switch (type) {
    case NXE_QUANT_NONE: return NXE_OK;
    case NXE_QUANT_ASYMMETRIC:
        quant->type = NXE_QUANT_ASYMMETRIC;
        if ((status = nxe_read_f32(r, &quant->scale)) != NXE_OK ||
            (status = nxe_read_i32(r, &quant->zero_point)) != NXE_OK)
            return status;
        if (!scale_valid(quant->scale))
            return nxe_reader_error(r, "quantization scale %g is not finite and positive",
                                    (double)quant->scale);
        return NXE_OK;
    case NXE_QUANT_DYNAMIC_FIXED_POINT:
        quant->type = NXE_QUANT_DYNAMIC_FIXED_POINT;
        if ((status = nxe_read_i32(r, &quant->fractional_length)) != NXE_OK)
            return status;
        if (quant->fractional_length < -64 || quant->fractional_length > 64)
            return nxe_reader_error(r, "fractional length %d is outside [-64, 64]",
                                    quant->fractional_length);
        return NXE_OK;
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL: break;
    default: return nxe_reader_error(r, "unknown quantization type %u", type);
    }
    uint32_t count;
    if ((status = nxe_read_i32(r, &quant->axis)) != NXE_OK ||
        (status = nxe_read_count(r, NXE_LIMIT_SCALES, sizeof(float), &count)) != NXE_OK)
        return status;
    if (count == 0)
        return nxe_reader_error(r, "per-channel quantization without scales");
    float *values = nxe_alloc(sizeof(float) * count);
    if (!values)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %u scales", r->what,
                         count);
    for (uint32_t i = 0; i < count; i++) {
        status = nxe_read_f32(r, &values[i]);
        if (status == NXE_OK && !scale_valid(values[i]))
            status = nxe_reader_error(r, "scale %u is %g; scales must be finite and positive", i,
                                      (double)values[i]);
        if (status != NXE_OK) {
            nxe_free(values);
            return status;
        }
    }
    quant->type = NXE_QUANT_SYMMETRIC_PER_CHANNEL;
    quant->num_scales = (int32_t)count;
    quant->scales = values;
    *scales = values;
    return NXE_OK;
}

bool nxe_quant_equal(const nxe_quant *a, const nxe_quant *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case NXE_QUANT_ASYMMETRIC:
        return memcmp(&a->scale, &b->scale, sizeof a->scale) == 0 && a->zero_point == b->zero_point;
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        return a->axis == b->axis && a->num_scales == b->num_scales &&
               memcmp(a->scales, b->scales, sizeof(float) * (size_t)a->num_scales) == 0;
    case NXE_QUANT_DYNAMIC_FIXED_POINT: return a->fractional_length == b->fractional_length;
    default: return true;
    }
}

/* ---- text ---- */

bool nxe_utf8_text(const uint8_t *bytes, size_t size)
{
    size_t i = 0;
    while (i < size) {
        uint8_t c = bytes[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t extra;
        uint32_t code, least;
        if ((c & 0xe0) == 0xc0) {
            extra = 1, code = c & 0x1fu, least = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2, code = c & 0x0fu, least = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3, code = c & 0x07u, least = 0x10000;
        } else {
            return false;
        }
        if (extra > size - i - 1)
            return false;
        for (size_t k = 1; k <= extra; k++) {
            if ((bytes[i + k] & 0xc0) != 0x80)
                return false;
            code = code << 6 | (bytes[i + k] & 0x3fu);
        }
        /* overlong forms, UTF-16 surrogates and code points past Unicode are not text */
        if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
            return false;
        i += extra + 1;
    }
    return true;
}

static nxe_status check_length(const char *text, size_t limit, const char *what, const char *where)
{
    size_t length = strlen(text);
    if (length > limit)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: %s '%.48s...' has %zu bytes; files allow at most %zu", where, what,
                         text, length, limit);
    return NXE_OK;
}

nxe_status nxe_reader_refused(const nxe_reader *r, nxe_status status, size_t item_pos,
                              const char *item)
{
    char message[800];
    snprintf(message, sizeof message, "%s", nxe_last_error());
    if (status == NXE_ERROR_OUT_OF_MEMORY)
        return nxe_error(status, "%s: %s: %s", r->what, item, message);
    nxe_reader at = *r;
    at.pos = item_pos;
    return nxe_reader_error(&at, "%s: %s", item, message);
}

/* ---- tensors ---- */

nxe_status nxe_tensor_record_check(const char *name, const nxe_quant *quant, const char *where)
{
    nxe_status status = check_length(name, NXE_LIMIT_NAME, "tensor name", where);
    if (status == NXE_OK && quant->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL &&
        quant->num_scales > NXE_LIMIT_SCALES)
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                           "%s: tensor '%.48s' has %d scales; files hold at most %d", where, name,
                           quant->num_scales, NXE_LIMIT_SCALES);
    return status;
}

void nxe_tensor_record_encode(nxe_writer *w, const char *name, int32_t kind, int32_t dtype,
                              int32_t ndim, const int64_t *shape, const nxe_quant *quant)
{
    nxe_write_string(w, name);
    nxe_write_i32(w, kind);
    nxe_write_i32(w, dtype);
    nxe_write_i32(w, ndim);
    for (int32_t d = 0; d < ndim; d++)
        nxe_write_i64(w, shape[d]);
    nxe_quant_encode(w, quant);
}

void nxe_tensor_record_clear(nxe_tensor_record *record)
{
    nxe_free(record->name);
    nxe_free(record->scales);
    *record = (nxe_tensor_record){.quant = {.type = NXE_QUANT_NONE}};
}

nxe_status nxe_tensor_record_decode(nxe_reader *r, nxe_tensor_record *record)
{
    nxe_tensor_record_clear(record);
    nxe_tensor_record *t = record;
    nxe_status status = nxe_read_string(r, NXE_LIMIT_NAME, &t->name);
    if (status == NXE_OK && !t->name[0])
        status = nxe_reader_error(r, "a tensor has an empty name");
    if (status == NXE_OK)
        status = nxe_read_i32(r, &t->kind);
    if (status == NXE_OK)
        status = nxe_read_i32(r, &t->dtype);
    if (status == NXE_OK)
        status = nxe_read_i32(r, &t->ndim);
    if (status == NXE_OK && (t->kind < NXE_TENSOR_INPUT || t->kind > NXE_TENSOR_VARIABLE))
        status = nxe_reader_error(r, "tensor '%s' has unknown kind %d", t->name, t->kind);
    if (status == NXE_OK && (t->dtype < NXE_DTYPE_NONE || t->dtype >= NXE_DTYPE_COUNT))
        status = nxe_reader_error(r, "tensor '%s' has unknown dtype %d", t->name, t->dtype);
    if (status == NXE_OK && (t->ndim < -1 || t->ndim > NXE_MAX_RANK))
        status = nxe_reader_error(r, "tensor '%s' has rank %d; ranks are -1 (unknown) to %d",
                                  t->name, t->ndim, NXE_MAX_RANK);
    for (int32_t d = 0; status == NXE_OK && d < t->ndim; d++) {
        status = nxe_read_i64(r, &t->shape[d]);
        if (status == NXE_OK && t->shape[d] < -1)
            status = nxe_reader_error(r, "tensor '%s' has dimension %d = %lld", t->name, d,
                                      (long long)t->shape[d]);
    }
    if (status == NXE_OK)
        status = nxe_quant_decode(r, &t->quant, &t->scales);
    if (status != NXE_OK)
        nxe_tensor_record_clear(record);
    return status;
}

/* ---- nodes ---- */

static void attr_encode(nxe_writer *w, const nxe_attr *attr)
{
    nxe_write_string(w, attr->name);
    nxe_write_i32(w, attr->type);
    switch (attr->type) {
    case NXE_ATTR_INT: nxe_write_i64(w, attr->int_value); break;
    case NXE_ATTR_FLOAT: nxe_write_f64(w, attr->float_value); break;
    case NXE_ATTR_STRING: nxe_write_string(w, attr->string_value); break;
    case NXE_ATTR_INTS:
        nxe_write_u32(w, (uint32_t)attr->count);
        for (int32_t i = 0; i < attr->count; i++)
            nxe_write_i64(w, attr->ints[i]);
        break;
    default: /* FLOATS */
        nxe_write_u32(w, (uint32_t)attr->count);
        for (int32_t i = 0; i < attr->count; i++)
            nxe_write_f32(w, attr->floats[i]);
        break;
    }
}

nxe_status nxe_node_record_check(const nxe_node *node, const char *where)
{
    nxe_status status = check_length(node->name, NXE_LIMIT_NAME, "op name", where);
    if (status == NXE_OK && node->num_attrs > NXE_LIMIT_ATTRS)
        status =
            nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op '%.48s' has %d attributes; at most %d",
                      where, node->name, node->num_attrs, NXE_LIMIT_ATTRS);
    for (int32_t i = 0; status == NXE_OK && i < node->num_attrs; i++) {
        const nxe_attr *attr = &node->attrs[i];
        status = check_length(attr->name, NXE_LIMIT_TYPE_NAME, "attribute name", where);
        if (status == NXE_OK && attr->type == NXE_ATTR_STRING)
            status =
                check_length(attr->string_value, NXE_LIMIT_STRING_ATTR, "string attribute", where);
    }
    return status;
}

void nxe_node_record_encode(nxe_writer *w, const nxe_node *node)
{
    nxe_write_string(w, nxe_node_type(node));
    nxe_write_string(w, node->name);
    nxe_write_u32(w, (uint32_t)node->num_attrs);
    const nxe_attr *attr = NULL;
    while ((attr = nxe_node_next_attr(node, attr ? attr->name : NULL)) != NULL)
        attr_encode(w, attr);
}

/* One attribute's value of type attr->type. */
static nxe_status attr_value_decode(nxe_reader *r, nxe_attr *attr)
{
    uint32_t count;
    nxe_status status;
    switch (attr->type) {
    case NXE_ATTR_INT: return nxe_read_i64(r, &attr->int_value);
    case NXE_ATTR_FLOAT: return nxe_read_f64(r, &attr->float_value);
    case NXE_ATTR_STRING: return nxe_read_string(r, NXE_LIMIT_STRING_ATTR, &attr->string_value);
    case NXE_ATTR_INTS:
    case NXE_ATTR_FLOATS: {
        bool ints = attr->type == NXE_ATTR_INTS;
        size_t item_size = ints ? sizeof(int64_t) : sizeof(float);
        status = nxe_read_count(r, NXE_LIMIT_ATTR_VALUES, item_size, &count);
        if (status != NXE_OK)
            return status;
        void *values = nxe_alloc(item_size * ((size_t)count + 1));
        if (!values)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
        if (ints)
            attr->ints = values;
        else
            attr->floats = values;
        attr->count = (int32_t)count;
        for (uint32_t i = 0; i < count && status == NXE_OK; i++)
            status = ints ? nxe_read_i64(r, &attr->ints[i]) : nxe_read_f32(r, &attr->floats[i]);
        return status;
    }
    default:
        return nxe_reader_error(r, "attribute '%s' has unknown type %d", attr->name, attr->type);
    }
}

/* Reads one attribute and sets it on the node. */
static nxe_status attr_decode(nxe_reader *r, nxe_node *node, const char *previous, char **name_out)
{
    size_t start = r->pos;
    nxe_attr attr = {0};
    nxe_status status = nxe_read_string(r, NXE_LIMIT_TYPE_NAME, &attr.name);
    if (status == NXE_OK && previous && strcmp(previous, attr.name) >= 0)
        status = nxe_reader_error(r,
                                  "attribute '%s' of op '%s' is not in strictly increasing "
                                  "name order",
                                  attr.name, node->name);
    if (status == NXE_OK)
        status = nxe_read_i32(r, &attr.type);
    if (status == NXE_OK)
        status = attr_value_decode(r, &attr);
    if (status == NXE_OK) {
        status = nxe_node_set_attr(node, &attr, "reading an op");
        if (status != NXE_OK) {
            char item[160];
            snprintf(item, sizeof item, "attribute '%.48s' of op '%.48s'", attr.name, node->name);
            status = nxe_reader_refused(r, status, start, item);
        }
    }
    *name_out = status == NXE_OK ? attr.name : NULL;
    if (status == NXE_OK)
        attr.name = NULL;
    nxe_attr_clear(&attr);
    return status;
}

nxe_status nxe_node_record_decode(nxe_reader *r, nxe_node *node)
{
    *node = (nxe_node){0};
    char *type = NULL, *name = NULL;
    nxe_status status = nxe_read_string(r, NXE_LIMIT_TYPE_NAME, &type);
    const nxe_op_def *def = status == NXE_OK ? nxe_context_find_op(r->ops, type) : NULL;
    if (status == NXE_OK && !def && strchr(type, '.') && r->ops && r->ops->custom_placeholders)
        def = nxe_custom_placeholder_def();
    if (status == NXE_OK && !def && strchr(type, '.'))
        /* A dotted name is how custom op types are named: the loading program lacks it. */
        status = nxe_error(NXE_ERROR_NOT_FOUND,
                           "%s: op type '%s' is neither built in nor registered in the context "
                           "given (nxe_load_options.context, nxe_context_register_op)",
                           r->what, type);
    else if (status == NXE_OK && !def)
        status = nxe_reader_error(r, "unknown op type '%s' (this library has no such op)", type);
    if (status == NXE_OK)
        status = nxe_read_string(r, NXE_LIMIT_NAME, &name);
    if (status == NXE_OK && !name[0])
        status = nxe_reader_error(r, "an op of type '%s' has an empty name", type);
    if (status == NXE_OK)
        status = nxe_node_init(node, def, name);
    nxe_free(type);
    nxe_free(name);
    uint32_t num_attrs = 0;
    if (status == NXE_OK)
        status = nxe_read_count(r, NXE_LIMIT_ATTRS, 8, &num_attrs);
    char *previous = NULL;
    for (uint32_t i = 0; i < num_attrs && status == NXE_OK; i++) {
        char *attr_name;
        status = attr_decode(r, node, previous, &attr_name);
        nxe_free(previous);
        previous = attr_name;
    }
    nxe_free(previous);
    if (status != NXE_OK)
        nxe_node_clear(node);
    return status;
}

/* ---- tensor ids ---- */

void nxe_ids_encode(nxe_writer *w, const int32_t *ids, int32_t count)
{
    nxe_write_u32(w, (uint32_t)count);
    for (int32_t i = 0; i < count; i++)
        nxe_write_i32(w, ids[i]);
}

nxe_status nxe_ids_decode(nxe_reader *r, const nxe_node *node, bool outputs, int32_t **ids,
                          int32_t *count)
{
    *ids = NULL;
    *count = 0;
    size_t start = r->pos;
    uint32_t n;
    nxe_status status = nxe_read_count(r, NXE_LIMIT_OP_IO, sizeof(int32_t), &n);
    if (status != NXE_OK)
        return status;
    status = nxe_node_check_io_count(node, outputs, n, "reading an op");
    if (status != NXE_OK)
        return nxe_reader_refused(r, status, start, outputs ? "outputs" : "inputs");
    *ids = nxe_alloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!*ids)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
    for (uint32_t i = 0; i < n && status == NXE_OK; i++)
        status = nxe_read_i32(r, &(*ids)[i]);
    if (status != NXE_OK) {
        nxe_free(*ids);
        *ids = NULL;
        return status;
    }
    *count = (int32_t)n;
    return NXE_OK;
}
