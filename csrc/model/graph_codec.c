/* graph_codec.c — the GRAPH section (tensors and ops in graph order, each op's attributes
 * sorted by name, no file offsets, no tensor data) from the shared records (records.c), and
 * the fingerprint stream. Decoding builds graphs through the graph API's own rules. */
#include <stdio.h>
#include <string.h>

#include "model/graph_codec.h"

/* ---- encoding ---- */

static nxe_status encode_op(const nxe_op *op, nxe_writer *w, int32_t *ids, const char *where)
{
    if (!op->inputs_bound || !op->outputs_bound)
        return nxe_error(NXE_ERROR_INVALID_GRAPH,
                         "%s: op '%s' ('%s') has no %s bound; only complete graphs are saved",
                         where, nxe_node_type(&op->node), op->node.name,
                         op->inputs_bound ? "outputs" : "inputs");
    nxe_status status = nxe_node_record_check(&op->node, where);
    if (status != NXE_OK)
        return status;
    nxe_node_record_encode(w, &op->node);
    for (int32_t i = 0; i < op->num_inputs; i++)
        ids[i] = op->inputs[i] ? op->inputs[i]->index : -1;
    nxe_ids_encode(w, ids, op->num_inputs);
    for (int32_t i = 0; i < op->num_outputs; i++)
        ids[i] = op->outputs[i]->index;
    nxe_ids_encode(w, ids, op->num_outputs);
    return NXE_OK;
}

nxe_status nxe_graph_encode(const nxe_graph *graph, nxe_writer *w, const char *where)
{
    if (graph->num_tensors > NXE_LIMIT_TENSORS || graph->num_ops > NXE_LIMIT_OPS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the graph has %d tensors and %d ops; files hold at most %d tensors "
                         "and %d ops",
                         where, graph->num_tensors, graph->num_ops, NXE_LIMIT_TENSORS,
                         NXE_LIMIT_OPS);
    nxe_write_u32(w, (uint32_t)graph->num_tensors);
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        nxe_status status = nxe_tensor_record_check(t->name, &t->quant, where);
        if (status != NXE_OK)
            return status;
        nxe_tensor_record_encode(w, t->name, t->kind, t->dtype, t->ndim, t->shape, &t->quant);
    }
    int32_t most = 1;
    for (int32_t i = 0; i < graph->num_ops; i++) {
        const nxe_op *op = graph->ops[i];
        most = op->num_inputs > most ? op->num_inputs : most;
        most = op->num_outputs > most ? op->num_outputs : most;
    }
    int32_t *ids = nxe_alloc(sizeof(int32_t) * (size_t)most);
    if (!ids)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    nxe_write_u32(w, (uint32_t)graph->num_ops);
    nxe_status status = NXE_OK;
    for (int32_t i = 0; i < graph->num_ops && status == NXE_OK; i++)
        status = encode_op(graph->ops[i], w, ids, where);
    nxe_free(ids);
    return status;
}

/* ---- decoding ---- */

static nxe_status decode_tensor(nxe_reader *r, nxe_graph *graph, uint32_t index)
{
    size_t start = r->pos;
    nxe_tensor_record t = {0};
    nxe_status status = nxe_tensor_record_decode(r, &t);
    if (status != NXE_OK)
        return status;
    char item[96];
    snprintf(item, sizeof item, "tensor %u ('%.48s')", index, t.name);
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = t.name;
    spec.dtype = t.dtype;
    spec.kind = t.kind;
    spec.ndim = t.ndim;
    spec.shape = t.shape;
    nxe_tensor *tensor = NULL;
    status = nxe_graph_add_tensor(graph, &spec, &tensor);
    if (status == NXE_OK) {
        switch (t.quant.type) {
        case NXE_QUANT_NONE: break;
        case NXE_QUANT_ASYMMETRIC:
            status = nxe_tensor_set_quant_asymmetric(tensor, t.quant.scale, t.quant.zero_point);
            break;
        case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
            status = nxe_tensor_set_quant_per_channel(tensor, t.quant.axis, t.quant.scales,
                                                      t.quant.num_scales);
            break;
        default:
            status = nxe_tensor_set_quant_dynamic_fixed_point(tensor, t.quant.fractional_length);
            break;
        }
    }
    if (status != NXE_OK)
        status = nxe_reader_refused(r, status, start, item);
    nxe_tensor_record_clear(&t);
    return status;
}

/* Binds the tensors a list of ids names. */
static nxe_status decode_bindings(nxe_reader *r, nxe_graph *graph, nxe_op *op, bool outputs)
{
    int32_t *ids, count;
    nxe_status status = nxe_ids_decode(r, &op->node, outputs, &ids, &count);
    if (status != NXE_OK)
        return status;
    size_t end = r->pos;
    nxe_tensor **tensors = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(count + 1));
    if (!tensors)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
    for (int32_t i = 0; i < count && status == NXE_OK; i++) {
        if (ids[i] < -1 || ids[i] >= graph->num_tensors) {
            nxe_reader at = *r;
            at.pos = end - sizeof(int32_t) * (size_t)(count - i);
            status = nxe_reader_error(&at, "%s %d of op '%s' is tensor %d; the graph has %d",
                                      outputs ? "output" : "input", i, op->node.name, ids[i],
                                      graph->num_tensors);
        } else {
            tensors[i] = ids[i] < 0 ? NULL : graph->tensors[ids[i]];
        }
    }
    if (status == NXE_OK) {
        status = outputs ? nxe_op_bind_outputs(op, tensors, count)
                         : nxe_op_bind_inputs(op, tensors, count);
        if (status != NXE_OK) {
            char item[96];
            snprintf(item, sizeof item, "%s of op '%.48s'", outputs ? "outputs" : "inputs",
                     op->node.name);
            status = nxe_reader_refused(r, status, end - sizeof(int32_t) * (size_t)count - 4, item);
        }
    }
    nxe_free(tensors);
    nxe_free(ids);
    return status;
}

static nxe_status decode_op(nxe_reader *r, nxe_graph *graph)
{
    nxe_node node;
    nxe_status status = nxe_node_record_decode(r, &node);
    nxe_op *op = NULL;
    if (status == NXE_OK)
        status = nxe_graph_add_node(graph, &node, &op);
    if (status == NXE_OK)
        status = decode_bindings(r, graph, op, false);
    if (status == NXE_OK)
        status = decode_bindings(r, graph, op, true);
    return status;
}

nxe_status nxe_graph_decode(const uint8_t *bytes, size_t size, size_t file_offset, const char *what,
                            nxe_context *ctx, nxe_graph **out)
{
    *out = NULL;
    nxe_reader r = nxe_reader_make(bytes, size, what, file_offset);
    r.ops = ctx;
    nxe_graph *graph;
    nxe_status status = nxe_graph_create(ctx, &graph);
    if (status != NXE_OK)
        return status;
    uint32_t num_tensors, num_ops;
    /* each tensor takes at least its name length, kind, dtype, rank and quantization type */
    status = nxe_read_count(&r, NXE_LIMIT_TENSORS, 20, &num_tensors);
    for (uint32_t i = 0; i < num_tensors && status == NXE_OK; i++)
        status = decode_tensor(&r, graph, i);
    /* and each op its type, name and three counts */
    if (status == NXE_OK)
        status = nxe_read_count(&r, NXE_LIMIT_OPS, 20, &num_ops);
    for (uint32_t i = 0; status == NXE_OK && i < num_ops; i++)
        status = decode_op(&r, graph);
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

void nxe_fingerprint_add_tensor(nxe_sha256_ctx *ctx, const char *name, int32_t dtype, int32_t ndim,
                                const int64_t *shape, const nxe_quant *quant, const void *data,
                                size_t size)
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
