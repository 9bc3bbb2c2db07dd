/* graph_codec.c — the GRAPH section (tensors and ops in graph order, attributes sorted by
 * name, no file offsets, no tensor data), quantization records and the fingerprint stream.
 * Decoding builds graphs through the public graph API only, so the API's rules guard it too. */
#include <stdio.h>
#include <string.h>

#include "model/graph_codec.h"

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
    case NXE_QUANT_DYNAMIC_FIXED_POINT:
        nxe_write_i32(w, quant->fractional_length);
        break;
    default:
        break;
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
    case NXE_QUANT_NONE:
        return NXE_OK;
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
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        break;
    default:
        return nxe_reader_error(r, "unknown quantization type %u", type);
    }
    uint32_t count;
    if ((status = nxe_read_i32(r, &quant->axis)) != NXE_OK ||
        (status = nxe_read_count(r, NXE_CODEC_MAX_SCALES, sizeof(float), &count)) != NXE_OK)
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
        return memcmp(&a->scale, &b->scale, sizeof a->scale) == 0 &&
               a->zero_point == b->zero_point;
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        return a->axis == b->axis && a->num_scales == b->num_scales &&
               memcmp(a->scales, b->scales, sizeof(float) * (size_t)a->num_scales) == 0;
    case NXE_QUANT_DYNAMIC_FIXED_POINT:
        return a->fractional_length == b->fractional_length;
    default:
        return true;
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

/* ---- encoding ---- */

static nxe_status check_length(const char *text, size_t limit, const char *what,
                               const char *where)
{
    size_t length = strlen(text);
    if (length > limit)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: %s '%.48s...' has %zu bytes; model files allow at most %zu", where,
                         what, text, length, limit);
    return NXE_OK;
}

void nxe_attr_encode(nxe_writer *w, const nxe_attr *attr)
{
    nxe_write_string(w, attr->name);
    nxe_write_i32(w, attr->type);
    switch (attr->type) {
    case NXE_ATTR_INT:
        nxe_write_i64(w, attr->int_value);
        break;
    case NXE_ATTR_FLOAT:
        nxe_write_f64(w, attr->float_value);
        break;
    case NXE_ATTR_STRING:
        nxe_write_string(w, attr->string_value);
        break;
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

/* The attribute with the smallest name above `after` (NULL: the smallest of all). Ops hold a
 * handful of attributes, so selecting in turn beats allocating to sort. */
static const nxe_attr *next_attr(const nxe_op *op, const char *after)
{
    const nxe_attr *best = NULL;
    for (int32_t i = 0; i < op->num_attrs; i++) {
        const nxe_attr *attr = &op->attrs[i];
        if (after && strcmp(attr->name, after) <= 0)
            continue;
        if (!best || strcmp(attr->name, best->name) < 0)
            best = attr;
    }
    return best;
}

static nxe_status encode_op(const nxe_op *op, nxe_writer *w, const char *where)
{
    const char *type = op->def->info.name;
    if (!op->inputs_bound || !op->outputs_bound)
        return nxe_error(NXE_ERROR_INVALID_GRAPH,
                         "%s: op '%s' ('%s') has no %s bound; only complete graphs are saved",
                         where, type, op->name, op->inputs_bound ? "outputs" : "inputs");
    nxe_status status = check_length(op->name, NXE_CODEC_MAX_NAME, "op name", where);
    if (status != NXE_OK)
        return status;
    if (op->num_attrs > NXE_CODEC_MAX_ATTRS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: op '%s' has %d attributes; at most %d",
                         where, op->name, op->num_attrs, NXE_CODEC_MAX_ATTRS);
    nxe_write_string(w, type);
    nxe_write_string(w, op->name);
    nxe_write_u32(w, (uint32_t)op->num_attrs);
    const nxe_attr *attr = NULL;
    while ((attr = next_attr(op, attr ? attr->name : NULL)) != NULL) {
        if ((status = check_length(attr->name, NXE_CODEC_MAX_TYPE_NAME, "attribute name",
                                   where)) != NXE_OK)
            return status;
        if (attr->type == NXE_ATTR_STRING &&
            (status = check_length(attr->string_value, NXE_CODEC_MAX_STRING_ATTR,
                                   "string attribute", where)) != NXE_OK)
            return status;
        nxe_attr_encode(w, attr);
    }
    nxe_write_u32(w, (uint32_t)op->num_inputs);
    for (int32_t i = 0; i < op->num_inputs; i++)
        nxe_write_i32(w, op->inputs[i] ? op->inputs[i]->index : -1);
    nxe_write_u32(w, (uint32_t)op->num_outputs);
    for (int32_t i = 0; i < op->num_outputs; i++)
        nxe_write_i32(w, op->outputs[i]->index);
    return NXE_OK;
}

nxe_status nxe_graph_encode(const nxe_graph *graph, nxe_writer *w, const char *where)
{
    if (graph->num_tensors > NXE_CODEC_MAX_TENSORS || graph->num_ops > NXE_CODEC_MAX_OPS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the graph has %d tensors and %d ops; model files hold at most %d "
                         "of each",
                         where, graph->num_tensors, graph->num_ops, NXE_CODEC_MAX_TENSORS);
    nxe_write_u32(w, (uint32_t)graph->num_tensors);
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        nxe_status status = check_length(t->name, NXE_CODEC_MAX_NAME, "tensor name", where);
        if (status != NXE_OK)
            return status;
        if (t->quant.type == NXE_QUANT_SYMMETRIC_PER_CHANNEL &&
            t->quant.num_scales > NXE_CODEC_MAX_SCALES)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%s' has %d scales; model files hold at most %d", where,
                             t->name, t->quant.num_scales, NXE_CODEC_MAX_SCALES);
        nxe_write_string(w, t->name);
        nxe_write_i32(w, t->kind);
        nxe_write_i32(w, t->dtype);
        nxe_write_i32(w, t->ndim);
        for (int32_t d = 0; d < t->ndim; d++)
            nxe_write_i64(w, t->shape[d]);
        nxe_quant_encode(w, &t->quant);
    }
    nxe_write_u32(w, (uint32_t)graph->num_ops);
    for (int32_t i = 0; i < graph->num_ops; i++) {
        nxe_status status = encode_op(graph->ops[i], w, where);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* ---- decoding ---- */

/* A graph API call refused what the file says: the API's message, as a format error at the
 * start of the item (out of memory stays what it is). */
static nxe_status refused(nxe_status status, const nxe_reader *r, size_t item_pos,
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

static nxe_status decode_tensor(nxe_reader *r, nxe_graph *graph, uint32_t index)
{
    size_t start = r->pos;
    char item[96];
    snprintf(item, sizeof item, "tensor %u", index);
    char *name = NULL;
    float *scales = NULL;
    int32_t kind = 0, dtype = 0, ndim = 0;
    int64_t shape[NXE_MAX_RANK] = {0};
    nxe_quant quant = {.type = NXE_QUANT_NONE};
    nxe_status status = nxe_read_string(r, NXE_CODEC_MAX_NAME, &name);
    if (status == NXE_OK && !name[0])
        status = nxe_reader_error(r, "%s has an empty name", item);
    if (status == NXE_OK && (status = nxe_read_i32(r, &kind)) == NXE_OK &&
        (status = nxe_read_i32(r, &dtype)) == NXE_OK &&
        (status = nxe_read_i32(r, &ndim)) == NXE_OK && (ndim < -1 || ndim > NXE_MAX_RANK))
        status = nxe_reader_error(r, "%s ('%s') has rank %d; ranks are -1 (unknown) to %d", item,
                                  name, ndim, NXE_MAX_RANK);
    for (int32_t d = 0; status == NXE_OK && d < ndim; d++)
        status = nxe_read_i64(r, &shape[d]);
    if (status == NXE_OK)
        status = nxe_quant_decode(r, &quant, &scales);
    if (status == NXE_OK)
        snprintf(item, sizeof item, "tensor %u ('%.48s')", index, name);
    nxe_tensor *tensor = NULL;
    if (status == NXE_OK) {
        nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
        spec.name = name;
        spec.dtype = dtype;
        spec.kind = kind;
        spec.ndim = ndim;
        spec.shape = shape;
        status = nxe_graph_add_tensor(graph, &spec, &tensor);
        if (status != NXE_OK)
            status = refused(status, r, start, item);
    }
    if (status == NXE_OK && quant.type != NXE_QUANT_NONE) {
        switch (quant.type) {
        case NXE_QUANT_ASYMMETRIC:
            status = nxe_tensor_set_quant_asymmetric(tensor, quant.scale, quant.zero_point);
            break;
        case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
            status = nxe_tensor_set_quant_per_channel(tensor, quant.axis, quant.scales,
                                                      quant.num_scales);
            break;
        default:
            status = nxe_tensor_set_quant_dynamic_fixed_point(tensor, quant.fractional_length);
            break;
        }
        if (status != NXE_OK)
            status = refused(status, r, start, item);
    }
    nxe_free(name);
    nxe_free(scales);
    return status;
}

static nxe_status decode_attr(nxe_reader *r, nxe_op *op, const char *previous, char **name_out)
{
    size_t start = r->pos;
    *name_out = NULL;
    char *name = NULL;
    int32_t type;
    nxe_status status = nxe_read_string(r, NXE_CODEC_MAX_TYPE_NAME, &name);
    if (status != NXE_OK)
        return status;
    if (previous && strcmp(previous, name) >= 0) {
        status = nxe_reader_error(r, "attribute '%s' of op '%s' is not in strictly increasing "
                                  "name order", name, op->name);
        nxe_free(name);
        return status;
    }
    status = nxe_read_i32(r, &type);
    char item[160];
    snprintf(item, sizeof item, "attribute '%.48s' of op '%.48s'", name,
             op->name);
    uint32_t count = 0;
    void *values = NULL;
    char *text = NULL;
    if (status == NXE_OK) {
        switch (type) {
        case NXE_ATTR_INT: {
            int64_t value;
            if ((status = nxe_read_i64(r, &value)) == NXE_OK)
                status = nxe_op_set_attr_int(op, name, value);
            break;
        }
        case NXE_ATTR_FLOAT: {
            double value;
            if ((status = nxe_read_f64(r, &value)) == NXE_OK)
                status = nxe_op_set_attr_float(op, name, value);
            break;
        }
        case NXE_ATTR_STRING:
            if ((status = nxe_read_string(r, NXE_CODEC_MAX_STRING_ATTR, &text)) == NXE_OK)
                status = nxe_op_set_attr_string(op, name, text);
            break;
        case NXE_ATTR_INTS:
        case NXE_ATTR_FLOATS: {
            size_t item_size = type == NXE_ATTR_INTS ? sizeof(int64_t) : sizeof(float);
            status = nxe_read_count(r, NXE_CODEC_MAX_ATTR_VALUES, item_size, &count);
            if (status != NXE_OK)
                break;
            values = nxe_alloc(item_size * (count ? count : 1));
            if (!values) {
                status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
                break;
            }
            for (uint32_t i = 0; i < count && status == NXE_OK; i++)
                status = type == NXE_ATTR_INTS ? nxe_read_i64(r, (int64_t *)values + i)
                                               : nxe_read_f32(r, (float *)values + i);
            if (status == NXE_OK)
                status = type == NXE_ATTR_INTS
                             ? nxe_op_set_attr_ints(op, name, values, (int32_t)count)
                             : nxe_op_set_attr_floats(op, name, values, (int32_t)count);
            break;
        }
        default:
            status = nxe_reader_error(r, "%s has unknown type %d", item, type);
            break;
        }
        /* a format error of the reader already names its place; a refusal of the API gets one */
        if (status != NXE_OK && status != NXE_ERROR_FORMAT)
            status = refused(status, r, start, item);
    }
    nxe_free(values);
    nxe_free(text);
    if (status != NXE_OK) {
        nxe_free(name);
        return status;
    }
    *name_out = name;
    return NXE_OK;
}

static nxe_status decode_bindings(nxe_reader *r, nxe_graph *graph, nxe_op *op, bool outputs)
{
    size_t start = r->pos;
    uint32_t count;
    nxe_status status = nxe_read_count(r, NXE_CODEC_MAX_OP_IO, sizeof(int32_t), &count);
    if (status != NXE_OK)
        return status;
    nxe_tensor **tensors = nxe_alloc(sizeof(nxe_tensor *) * (count ? count : 1));
    if (!tensors)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
    const char *op_name = op->name;
    for (uint32_t i = 0; i < count && status == NXE_OK; i++) {
        int32_t index;
        status = nxe_read_i32(r, &index);
        if (status != NXE_OK)
            break;
        if (index < -1 || index >= graph->num_tensors)
            status = nxe_reader_error(r, "%s %u of op '%s' is tensor %d; the graph has %d",
                                      outputs ? "output" : "input", i, op_name, index,
                                      graph->num_tensors);
        else
            tensors[i] = index < 0 ? NULL : graph->tensors[index];
    }
    if (status == NXE_OK) {
        status = outputs ? nxe_op_bind_outputs(op, tensors, (int32_t)count)
                         : nxe_op_bind_inputs(op, tensors, (int32_t)count);
        if (status != NXE_OK) {
            char item[96];
            snprintf(item, sizeof item, "%s of op '%.48s'", outputs ? "outputs" : "inputs",
                     op_name);
            status = refused(status, r, start, item);
        }
    }
    nxe_free(tensors);
    return status;
}

static nxe_status decode_op(nxe_reader *r, nxe_graph *graph, uint32_t index)
{
    size_t start = r->pos;
    char *type = NULL, *name = NULL;
    nxe_status status = nxe_read_string(r, NXE_CODEC_MAX_TYPE_NAME, &type);
    if (status == NXE_OK)
        status = nxe_read_string(r, NXE_CODEC_MAX_NAME, &name);
    if (status == NXE_OK && !name[0])
        status = nxe_reader_error(r, "op %u has an empty name", index);
    nxe_op *op = NULL;
    if (status == NXE_OK) {
        status = nxe_graph_add_op(graph, type, name, &op);
        if (status != NXE_OK) {
            char item[96];
            snprintf(item, sizeof item, "op %u ('%.48s')", index, name);
            status = refused(status, r, start, item);
        }
    }
    nxe_free(type);
    nxe_free(name);
    if (status != NXE_OK)
        return status;
    uint32_t num_attrs;
    status = nxe_read_count(r, NXE_CODEC_MAX_ATTRS, 12, &num_attrs);
    char *previous = NULL;
    for (uint32_t i = 0; i < num_attrs && status == NXE_OK; i++) {
        char *attr_name;
        status = decode_attr(r, op, previous, &attr_name);
        nxe_free(previous);
        previous = status == NXE_OK ? attr_name : NULL;
    }
    nxe_free(previous);
    if (status == NXE_OK)
        status = decode_bindings(r, graph, op, false);
    if (status == NXE_OK)
        status = decode_bindings(r, graph, op, true);
    return status;
}

nxe_status nxe_graph_decode(const uint8_t *bytes, size_t size, size_t file_offset,
                            const char *what, nxe_context *ctx, nxe_graph **out)
{
    *out = NULL;
    nxe_reader r = nxe_reader_make(bytes, size, what, file_offset);
    nxe_graph *graph;
    nxe_status status = nxe_graph_create(ctx, &graph);
    if (status != NXE_OK)
        return status;
    uint32_t num_tensors, num_ops;
    /* each tensor takes at least its name length, kind, dtype, rank and quantization type */
    status = nxe_read_count(&r, NXE_CODEC_MAX_TENSORS, 20, &num_tensors);
    for (uint32_t i = 0; i < num_tensors && status == NXE_OK; i++)
        status = decode_tensor(&r, graph, i);
    /* and each op its type, name and three counts */
    if (status == NXE_OK)
        status = nxe_read_count(&r, NXE_CODEC_MAX_OPS, 20, &num_ops);
    for (uint32_t i = 0; status == NXE_OK && i < num_ops; i++)
        status = decode_op(&r, graph, i);
    if (status == NXE_OK)
        status = nxe_reader_expect_end(&r);
    if (status != NXE_OK) {
        nxe_graph_release(graph);
        return status;
    }
    *out = graph;
    return NXE_OK;
}

/* ---- the fingerprint stream ---- */

static const char fingerprint_tag[] = "nxe-model-fingerprint";

static void hash_u64(nxe_sha256_ctx *ctx, uint64_t value)
{
    uint8_t bytes[8];
    nxe_store_u64(bytes, value);
    nxe_sha256_update(ctx, bytes, sizeof bytes);
}

/* Every field is its byte length (u64) and then its bytes, so no two streams collide. */
static void hash_field(nxe_sha256_ctx *ctx, const void *bytes, size_t size)
{
    hash_u64(ctx, size);
    nxe_sha256_update(ctx, bytes, size);
}

static void hash_u32_field(nxe_sha256_ctx *ctx, uint32_t value)
{
    uint8_t bytes[4];
    nxe_store_u32(bytes, value);
    hash_field(ctx, bytes, sizeof bytes);
}

void nxe_fingerprint_begin(nxe_sha256_ctx *ctx, const uint8_t *graph, size_t graph_size,
                           const uint8_t *metadata, size_t metadata_size, uint32_t num_tensors)
{
    nxe_sha256_init(ctx);
    hash_field(ctx, fingerprint_tag, sizeof fingerprint_tag - 1);
    hash_u32_field(ctx, NXE_CONTAINER_FORMAT_MAJOR);
    hash_field(ctx, graph, graph_size);
    hash_field(ctx, metadata, metadata_size);
    hash_u32_field(ctx, num_tensors);
}

void nxe_fingerprint_add_tensor(nxe_sha256_ctx *ctx, const char *name, int32_t dtype,
                                int32_t ndim, const int64_t *shape, const nxe_quant *quant,
                                const void *data, size_t size)
{
    hash_field(ctx, name, strlen(name));
    hash_u32_field(ctx, (uint32_t)dtype);
    hash_u64(ctx, (uint64_t)ndim * 8);
    for (int32_t d = 0; d < ndim; d++)
        hash_u64(ctx, (uint64_t)shape[d]);
    /* the quantization record as nxe_quant_encode writes it, scales streamed */
    nxe_writer counter = nxe_writer_make(NULL, 0);
    nxe_quant_encode(&counter, quant);
    hash_u64(ctx, counter.size);
    uint8_t head[12];
    nxe_writer w = nxe_writer_make(head, sizeof head);
    if (quant->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL) {
        nxe_write_u32(&w, (uint32_t)quant->type);
        nxe_write_i32(&w, quant->axis);
        nxe_write_u32(&w, (uint32_t)quant->num_scales);
        nxe_sha256_update(ctx, head, w.size);
        for (int32_t i = 0; i < quant->num_scales; i++) {
            w = nxe_writer_make(head, sizeof head);
            nxe_write_f32(&w, quant->scales[i]);
            nxe_sha256_update(ctx, head, w.size);
        }
    } else {
        nxe_quant_encode(&w, quant);
        nxe_sha256_update(ctx, head, w.size);
    }
    hash_field(ctx, data, size);
}
