/* model_reader.c — opens model files (.nxm) from a read-only mapping or a private copy and
 * treats every byte as hostile: checksums, tensor index, graph and fingerprint are checked
 * before anything is handed out. Tensor bytes are used in place, never copied at open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_map.h"
#include "graph/graph_internal.h"
#include "model/graph_codec.h"
#include "model/model.h"

typedef struct model_tensor {
    char *name;
    int32_t dtype;
    int32_t kind; /* from the graph: CONSTANT or VARIABLE */
    int32_t ndim;
    int64_t shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales;   /* storage behind quant.scales */
    uint64_t offset; /* within DATA */
    uint64_t size;
} model_tensor;

struct nxe_model {
    nxe_file_map file;
    char *what; /* the path, or "model in memory", for messages */
    nxe_container container;
    const nxe_section *metadata, *annotations, *graph, *index, *data, *fingerprint_section;
    model_tensor *tensors;
    int32_t num_tensors;
    uint8_t fingerprint[32]; /* as stored */
    nxe_limits limits;       /* the opener's, resolved */
};

static const char *section_name(uint32_t type)
{
    switch (type) {
    case NXE_SECTION_METADATA: return "METADATA";
    case NXE_SECTION_ANNOTATIONS: return "ANNOTATIONS";
    case NXE_SECTION_GRAPH: return "GRAPH";
    case NXE_SECTION_TENSORS: return "TENSORS";
    case NXE_SECTION_DATA: return "DATA";
    case NXE_SECTION_FINGERPRINT: return "FINGERPRINT";
    default: return "unknown";
    }
}

static const uint8_t *section_bytes(const nxe_model *model, const nxe_section *section)
{
    return model->container.base + section->offset;
}

NXE_API void nxe_model_release(nxe_model *model)
{
    if (!model)
        return;
    for (int32_t i = 0; i < model->num_tensors; i++) {
        nxe_free(model->tensors[i].name);
        nxe_free(model->tensors[i].scales);
    }
    nxe_free(model->tensors);
    nxe_file_map_release(&model->file);
    nxe_free(model->what);
    nxe_free(model);
}

static nxe_status find_sections(nxe_model *model)
{
    const uint32_t required[] = {NXE_SECTION_METADATA, NXE_SECTION_GRAPH, NXE_SECTION_TENSORS,
                                 NXE_SECTION_DATA, NXE_SECTION_FINGERPRINT};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!nxe_container_find(&model->container, required[i]))
            return nxe_error(NXE_ERROR_FORMAT, "%s: the file has no %s section (type %u)",
                             model->what, section_name(required[i]), required[i]);
    model->metadata = nxe_container_find(&model->container, NXE_SECTION_METADATA);
    model->annotations = nxe_container_find(&model->container, NXE_SECTION_ANNOTATIONS);
    model->graph = nxe_container_find(&model->container, NXE_SECTION_GRAPH);
    model->index = nxe_container_find(&model->container, NXE_SECTION_TENSORS);
    model->data = nxe_container_find(&model->container, NXE_SECTION_DATA);
    model->fingerprint_section = nxe_container_find(&model->container, NXE_SECTION_FINGERPRINT);
    if (model->fingerprint_section->size != 32)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: the FINGERPRINT section at offset %llu has %llu bytes, not 32",
                         model->what, (unsigned long long)model->fingerprint_section->offset,
                         (unsigned long long)model->fingerprint_section->size);
    memcpy(model->fingerprint, section_bytes(model, model->fingerprint_section), 32);
    return NXE_OK;
}

static nxe_status checksum_error(const nxe_model *model, const nxe_section *section,
                                 nxe_status status)
{
    return nxe_error(status,
                     "%s: checksum mismatch in the %s section (type %u, offset %llu, "
                     "%llu bytes): the file is corrupted",
                     model->what, section_name(section->type), section->type,
                     (unsigned long long)section->offset, (unsigned long long)section->size);
}

/* Every section's checksum; DATA's only when `with_data`. */
static nxe_status verify_checksums(const nxe_model *model, bool with_data)
{
    for (int32_t i = 0; i < model->container.num_sections; i++) {
        const nxe_section *section = &model->container.sections[i];
        if (section->type == NXE_SECTION_DATA && !with_data)
            continue;
        nxe_status status = nxe_container_verify(&model->container, section, model->what);
        if (status != NXE_OK)
            return checksum_error(model, section, status);
    }
    return NXE_OK;
}

static nxe_status check_text(const nxe_model *model, const nxe_section *section)
{
    if (section && !nxe_utf8_text(section_bytes(model, section), (size_t)section->size))
        return nxe_error(
            NXE_ERROR_FORMAT, "%s: the %s section at offset %llu is not UTF-8 text without NUL",
            model->what, section_name(section->type), (unsigned long long)section->offset);
    return NXE_OK;
}

/* One index entry: its name, dtype, shape, quantization and a byte range of DATA that holds
 * exactly numel * dtype size bytes at an aligned offset. */
static nxe_status parse_entry(nxe_reader *r, const nxe_model *model, const char *previous,
                              model_tensor *t)
{
    nxe_status status = nxe_read_string(r, NXE_LIMIT_NAME, &t->name);
    if (status != NXE_OK)
        return status;
    if (!t->name[0])
        return nxe_reader_error(r, "a tensor has an empty name");
    if (previous && strcmp(previous, t->name) >= 0)
        return nxe_reader_error(r,
                                "tensor '%s' is %s; entries are in strictly increasing "
                                "bytewise name order",
                                t->name,
                                strcmp(previous, t->name) ? "out of order" : "listed twice");
    if ((status = nxe_read_i32(r, &t->dtype)) != NXE_OK ||
        (status = nxe_read_i32(r, &t->ndim)) != NXE_OK)
        return status;
    if (!nxe_dtype_valid(t->dtype))
        return nxe_reader_error(r, "tensor '%s' has unknown dtype %d", t->name, t->dtype);
    if (t->ndim < 0 || t->ndim > NXE_MAX_RANK)
        return nxe_reader_error(r, "tensor '%s' has rank %d; stored tensors have rank 0 to %d",
                                t->name, t->ndim, NXE_MAX_RANK);
    for (int32_t d = 0; d < t->ndim; d++) {
        if ((status = nxe_read_i64(r, &t->shape[d])) != NXE_OK)
            return status;
        if (t->shape[d] < 0)
            return nxe_reader_error(r, "tensor '%s' has dimension %lld at axis %d", t->name,
                                    (long long)t->shape[d], d);
    }
    if ((status = nxe_quant_decode(r, &t->quant, &t->scales)) != NXE_OK)
        return status;
    if (t->quant.type == NXE_QUANT_SYMMETRIC_PER_CHANNEL &&
        (t->quant.axis < 0 || t->quant.axis >= t->ndim ||
         t->shape[t->quant.axis] != t->quant.num_scales))
        return nxe_reader_error(r,
                                "tensor '%s' has %d per-channel scales on axis %d, which its "
                                "shape does not have",
                                t->name, t->quant.num_scales, t->quant.axis);
    if ((status = nxe_read_u64(r, &t->offset)) != NXE_OK ||
        (status = nxe_read_u64(r, &t->size)) != NXE_OK)
        return status;
    size_t bytes;
    char shape[96];
    if (!nxe_shape_bytes(t->dtype, t->ndim, t->shape, &bytes) || bytes != t->size)
        return nxe_reader_error(r,
                                "tensor '%s' (%s %s) records %llu bytes, which is not its "
                                "element count times %zu",
                                t->name, nxe_dtype_name(t->dtype),
                                nxe_shape_str(t->ndim, t->shape, shape, sizeof shape),
                                (unsigned long long)t->size, nxe_dtype_size(t->dtype));
    uint64_t data_size = model->data->size;
    if (t->offset > data_size || t->size > data_size - t->offset)
        return nxe_reader_error(r,
                                "tensor '%s' at DATA offset %llu with %llu bytes runs past "
                                "the end of DATA (%llu bytes)",
                                t->name, (unsigned long long)t->offset, (unsigned long long)t->size,
                                (unsigned long long)data_size);
    if (t->offset % model->container.alignment != 0)
        return nxe_reader_error(r, "tensor '%s' at DATA offset %llu is not %u-byte aligned",
                                t->name, (unsigned long long)t->offset, model->container.alignment);
    return NXE_OK;
}

static int compare_ranges(const void *a, const void *b)
{
    const model_tensor *x = *(const model_tensor *const *)a;
    const model_tensor *y = *(const model_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return (x->size > y->size) - (x->size < y->size);
}

/* Tensors may share a range exactly (de-duplicated bytes) but never overlap partly. */
static nxe_status check_overlaps(const nxe_model *model)
{
    int32_t n = model->num_tensors;
    if (n < 2)
        return NXE_OK;
    const model_tensor **sorted = nxe_alloc(sizeof *sorted * (size_t)n);
    if (!sorted)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", model->what);
    for (int32_t i = 0; i < n; i++)
        sorted[i] = &model->tensors[i];
    qsort(sorted, (size_t)n, sizeof *sorted, compare_ranges);
    nxe_status status = NXE_OK;
    const model_tensor *previous = NULL; /* the nonempty range reaching furthest so far */
    for (int32_t i = 0; i < n && status == NXE_OK; i++) {
        const model_tensor *t = sorted[i];
        if (t->size == 0)
            continue;
        if (previous && t->offset < previous->offset + previous->size &&
            !(t->offset == previous->offset && t->size == previous->size))
            status = nxe_error(NXE_ERROR_FORMAT,
                               "%s: TENSORS section: tensors '%s' (DATA offset %llu, %llu "
                               "bytes) and '%s' (DATA offset %llu, %llu bytes) overlap partly",
                               model->what, previous->name, (unsigned long long)previous->offset,
                               (unsigned long long)previous->size, t->name,
                               (unsigned long long)t->offset, (unsigned long long)t->size);
        if (!previous || t->offset + t->size > previous->offset + previous->size)
            previous = t;
    }
    nxe_free(sorted);
    return status;
}

static nxe_status parse_index(nxe_model *model)
{
    char what[600];
    snprintf(what, sizeof what, "%s: TENSORS section", model->what);
    nxe_reader r = nxe_reader_make(section_bytes(model, model->index), (size_t)model->index->size,
                                   what, (size_t)model->index->offset);
    uint32_t count;
    /* an entry takes at least a name length, dtype, rank, quantization type, offset, size */
    nxe_status status = nxe_read_count(&r, NXE_LIMIT_TENSORS, 32, &count);
    if (status != NXE_OK)
        return status;
    model->tensors = nxe_alloc_zeroed(sizeof *model->tensors * (count ? count : 1));
    if (!model->tensors)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %u entries", what, count);
    for (uint32_t i = 0; i < count; i++) {
        model->num_tensors = (int32_t)i + 1;
        status = parse_entry(&r, model, i ? model->tensors[i - 1].name : NULL, &model->tensors[i]);
        if (status == NXE_OK && model->tensors[i].size > model->limits.max_tensor_bytes)
            status =
                nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                          "%s: tensor '%s' takes %llu bytes, above the limit of %llu bytes "
                          "per tensor (raise nxe_limits.max_tensor_bytes)",
                          what, model->tensors[i].name, (unsigned long long)model->tensors[i].size,
                          (unsigned long long)model->limits.max_tensor_bytes);
        if (status != NXE_OK)
            return status;
    }
    status = nxe_reader_expect_end(&r);
    return status == NXE_OK ? check_overlaps(model) : status;
}

static nxe_status decode_graph(const nxe_model *model, nxe_context *ctx, nxe_graph **out)
{
    char what[600];
    snprintf(what, sizeof what, "%s: GRAPH section", model->what);
    return nxe_graph_decode(section_bytes(model, model->graph), (size_t)model->graph->size,
                            (size_t)model->graph->offset, what, ctx, out);
}

static int compare_tensor_names(const void *a, const void *b)
{
    return strcmp((*(nxe_tensor *const *)a)->name, (*(nxe_tensor *const *)b)->name);
}

/* The graph tensor of each index entry, found by walking both in name order (the index is
 * sorted already), so large graphs cost n log n rather than a lookup per entry. *out is
 * nxe_alloc'd; an entry the graph lacks is a format error. */
static nxe_status tensors_of_entries(const nxe_model *model, const nxe_graph *graph,
                                     nxe_tensor ***out)
{
    *out = NULL;
    size_t n = (size_t)graph->num_tensors;
    nxe_tensor **sorted = nxe_alloc(sizeof *sorted * (n ? n : 1));
    size_t entries = (size_t)model->num_tensors;
    nxe_tensor **found = nxe_alloc(sizeof *found * (entries ? entries : 1));
    if (!sorted || !found) {
        nxe_free(sorted);
        nxe_free(found);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", model->what);
    }
    if (n)
        memcpy(sorted, graph->tensors, sizeof *sorted * n);
    qsort(sorted, n, sizeof *sorted, compare_tensor_names);
    size_t k = 0;
    for (int32_t i = 0; i < model->num_tensors; i++) {
        const char *name = model->tensors[i].name;
        while (k < n && strcmp(sorted[k]->name, name) < 0)
            k++;
        if (k == n || strcmp(sorted[k]->name, name) != 0) {
            nxe_free(sorted);
            nxe_free(found);
            return nxe_error(NXE_ERROR_FORMAT,
                             "%s: TENSORS section: tensor '%s' is not in the GRAPH section",
                             model->what, name);
        }
        found[i] = sorted[k];
    }
    nxe_free(sorted);
    *out = found;
    return NXE_OK;
}

/* Each index entry must describe a constant or variable of the graph exactly as declared. */
static nxe_status match_entry(const nxe_model *model, const nxe_tensor *t, model_tensor *entry)
{
    if (t->kind != NXE_TENSOR_CONSTANT && t->kind != NXE_TENSOR_VARIABLE)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: TENSORS section: tensor '%s' has stored data but the graph "
                         "declares it kind %d; only constants and variables hold data",
                         model->what, entry->name, t->kind);
    bool same = t->dtype == entry->dtype && t->ndim == entry->ndim &&
                nxe_quant_equal(&t->quant, &entry->quant);
    for (int32_t d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == entry->shape[d];
    if (!same) {
        char declared[96], stored[96];
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: TENSORS section: tensor '%s' is stored as %s %s but the graph "
                         "declares %s %s (or another quantization)",
                         model->what, entry->name, nxe_dtype_name(entry->dtype),
                         nxe_shape_str(entry->ndim, entry->shape, stored, sizeof stored),
                         nxe_dtype_name(t->dtype),
                         nxe_shape_str(t->ndim, t->shape, declared, sizeof declared));
    }
    entry->kind = t->kind;
    return NXE_OK;
}

static nxe_status check_graph(nxe_model *model)
{
    nxe_context *ctx;
    nxe_status status = nxe_context_create(&ctx);
    if (status != NXE_OK)
        return status;
    /* Custom op types are checked when a graph is built in a context that has them. */
    ctx->custom_placeholders = true;
    nxe_graph *graph = NULL;
    nxe_tensor **tensors = NULL;
    status = decode_graph(model, ctx, &graph);
    if (status == NXE_OK)
        status = nxe_limits_check_ops(&model->limits, graph->num_ops, "GRAPH section");
    if (status == NXE_OK)
        status = tensors_of_entries(model, graph, &tensors);
    for (int32_t i = 0; status == NXE_OK && i < model->num_tensors; i++)
        status = match_entry(model, tensors[i], &model->tensors[i]);
    nxe_free(tensors);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    return status;
}

static void compute_fingerprint(const nxe_model *model, uint8_t fingerprint[32])
{
    nxe_sha256_ctx ctx;
    nxe_fingerprint_begin(&ctx, section_bytes(model, model->graph), (size_t)model->graph->size,
                          section_bytes(model, model->metadata), (size_t)model->metadata->size,
                          (uint32_t)model->num_tensors);
    const uint8_t *data = section_bytes(model, model->data);
    for (int32_t i = 0; i < model->num_tensors; i++) {
        const model_tensor *t = &model->tensors[i];
        nxe_fingerprint_add_tensor(&ctx, t->name, t->dtype, t->ndim, t->shape, &t->quant,
                                   data + t->offset, (size_t)t->size);
    }
    nxe_sha256_final(&ctx, fingerprint);
}

/* DATA's checksum and the fingerprint recomputed from content: the work lazy opens defer. */
static nxe_status verify_content(const nxe_model *model)
{
    nxe_status status = nxe_container_verify(&model->container, model->data, model->what);
    if (status != NXE_OK)
        return checksum_error(model, model->data, status);
    uint8_t fingerprint[32];
    compute_fingerprint(model, fingerprint);
    if (memcmp(fingerprint, model->fingerprint, 32) != 0)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: fingerprint mismatch: the FINGERPRINT section does not match the "
                         "fingerprint of the graph, metadata and tensors",
                         model->what);
    return NXE_OK;
}

/* The bytes of the model file in `model->file`: the whole file, or, for a compiled binary,
 * the model file it embeds (its EMBEDDED_MODEL section, checked unless lazy). */
static nxe_status model_bytes(const nxe_model *model, bool lazy, const uint8_t **data, size_t *size)
{
    *data = model->file.data;
    *size = model->file.size;
    if (model->file.size < sizeof nxe_binary_magic ||
        memcmp(model->file.data, nxe_binary_magic, sizeof nxe_binary_magic) != 0)
        return NXE_OK;
    nxe_container binary;
    nxe_status status = nxe_container_parse(model->file.data, model->file.size, nxe_binary_magic,
                                            model->what, &binary);
    if (status != NXE_OK)
        return status;
    const nxe_section *embedded = nxe_container_find(&binary, NXE_SECTION_EMBEDDED_MODEL);
    if (!embedded)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: a compiled binary without an embedded model, so no model to open",
                         model->what);
    if (!lazy) {
        status = nxe_container_verify(&binary, embedded, model->what);
        if (status != NXE_OK)
            return status;
    }
    *data = model->file.data + embedded->offset;
    *size = (size_t)embedded->size;
    return NXE_OK;
}

static nxe_status open_model(nxe_model *model, bool lazy)
{
    const uint8_t *data;
    size_t size;
    nxe_status status = model_bytes(model, lazy, &data, &size);
    if (status == NXE_OK)
        status = nxe_container_parse(data, size, nxe_model_magic, model->what, &model->container);
    if (status == NXE_OK)
        status = find_sections(model);
    if (status == NXE_OK)
        status = verify_checksums(model, false);
    if (status == NXE_OK)
        status = check_text(model, model->metadata);
    if (status == NXE_OK)
        status = check_text(model, model->annotations);
    if (status == NXE_OK)
        status = parse_index(model);
    if (status == NXE_OK)
        status = check_graph(model);
    if (status == NXE_OK && !lazy)
        status = verify_content(model);
    return status;
}

static nxe_status check_open_args(const nxe_model_options *options, nxe_model **out,
                                  const char *where, bool *lazy, nxe_limits *limits)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out must not be NULL", where);
    *out = NULL;
    *lazy = false;
    const nxe_limits *asked = NULL;
    if (options) {
        /* A 0.4 caller's options end before `limits`. */
        if (options->struct_size < offsetof(nxe_model_options, limits))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu (initialize "
                             "with NXE_MODEL_OPTIONS_INIT)",
                             where, options->struct_size, sizeof(nxe_model_options));
        *lazy = options->lazy != 0;
        if (options->struct_size >= sizeof(nxe_model_options))
            asked = options->limits;
    }
    return nxe_limits_resolve(asked, where, limits);
}

/* Takes over `model` (its file, name and limits set): opens it or releases it. */
static nxe_status finish_open(nxe_model *model, bool lazy, const char *where, nxe_model **out)
{
    nxe_status status = open_model(model, lazy);
    if (status != NXE_OK) {
        nxe_model_release(model);
        nxe_error_prefix("%s: ", where);
        return status;
    }
    *out = model;
    return NXE_OK;
}

NXE_API nxe_status nxe_model_open_file(const char *path, const nxe_model_options *options,
                                       nxe_model **out)
{
    const char *where = "nxe_model_open_file";
    bool lazy = false;
    nxe_limits limits;
    nxe_status status = check_open_args(options, out, where, &lazy, &limits);
    if (status != NXE_OK)
        return status;
    if (!path)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: path is NULL", where);
    nxe_model *model = nxe_alloc_zeroed(sizeof *model);
    char *what = nxe_strdup(path);
    if (!model || !what) {
        nxe_free(model);
        nxe_free(what);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    model->what = what;
    model->limits = limits;
    status = nxe_file_map_open(path, &model->file);
    /* Only mapped so far: nothing is read or allocated for a file above the limit. */
    if (status == NXE_OK)
        status = nxe_limits_check_file(&limits, model->file.size, path);
    if (status != NXE_OK) {
        nxe_model_release(model);
        nxe_error_prefix("%s: ", where);
        return status;
    }
    return finish_open(model, lazy, where, out);
}

NXE_API nxe_status nxe_model_open_memory(const void *data, size_t size,
                                         const nxe_model_options *options, nxe_model **out)
{
    const char *where = "nxe_model_open_memory";
    bool lazy = false;
    nxe_limits limits;
    nxe_status status = check_open_args(options, out, where, &lazy, &limits);
    if (status != NXE_OK)
        return status;
    if (!data)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: data is NULL", where);
    status = nxe_limits_check_file(&limits, size, where);
    if (status != NXE_OK)
        return status;
    nxe_model *model = nxe_alloc_zeroed(sizeof *model);
    char *what = nxe_strdup("model in memory");
    uint8_t *copy = nxe_alloc(size);
    if (!model || !what || !copy) {
        nxe_free(model);
        nxe_free(what);
        nxe_free(copy);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", where, size);
    }
    if (size)
        memcpy(copy, data, size);
    model->what = what;
    model->limits = limits;
    model->file = (nxe_file_map){.data = copy, .size = size, .mapped = false};
    return finish_open(model, lazy, where, out);
}

NXE_API nxe_status nxe_model_verify(const nxe_model *model)
{
    if (!model)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_model_verify: model is NULL");
    nxe_status status = verify_checksums(model, true);
    if (status == NXE_OK)
        status = verify_content(model);
    if (status != NXE_OK)
        nxe_error_prefix("nxe_model_verify: ");
    return status;
}

NXE_API nxe_status nxe_model_fingerprint(const nxe_model *model, uint8_t fingerprint[32])
{
    if (!model || !fingerprint)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_model_fingerprint: %s is NULL",
                         model ? "fingerprint" : "model");
    memcpy(fingerprint, model->fingerprint, 32);
    return NXE_OK;
}

/* A JSON section as a NUL-terminated copy ("{}" for an absent one); NULL when out of memory. */
static char *copy_text(const nxe_model *model, const nxe_section *section)
{
    const size_t size = section ? (size_t)section->size : 2;
    char *text = nxe_alloc(size + 1);
    if (text) {
        memcpy(text, section ? (const char *)section_bytes(model, section) : "{}", size);
        text[size] = '\0';
    }
    return text;
}

static nxe_status json_section(const nxe_model *model, const nxe_section *section,
                               const char **json, size_t *size, const char *where)
{
    if (json)
        *json = NULL;
    if (size)
        *size = 0;
    if (!model || !json || !size)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         !model  ? "model"
                         : !json ? "json"
                                 : "size");
    if (!section) {
        *json = "{}";
        *size = 2;
        return NXE_OK;
    }
    *json = (const char *)section_bytes(model, section);
    *size = (size_t)section->size;
    return NXE_OK;
}

NXE_API nxe_status nxe_model_metadata(const nxe_model *model, const char **json, size_t *size)
{
    return json_section(model, model ? model->metadata : NULL, json, size, "nxe_model_metadata");
}

NXE_API nxe_status nxe_model_annotations(const nxe_model *model, const char **json, size_t *size)
{
    return json_section(model, model ? model->annotations : NULL, json, size,
                        "nxe_model_annotations");
}

NXE_API nxe_status nxe_model_tensor_count(const nxe_model *model, int32_t *count)
{
    if (count)
        *count = 0;
    if (!model || !count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_model_tensor_count: %s is NULL",
                         model ? "count" : "model");
    *count = model->num_tensors;
    return NXE_OK;
}

NXE_API nxe_status nxe_model_tensor(const nxe_model *model, int32_t index, nxe_tensor_info *info,
                                    nxe_tensor_desc *desc)
{
    const char *where = "nxe_model_tensor";
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!model || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         model ? "desc" : "model");
    if (info && info->struct_size < sizeof(nxe_tensor_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_tensor_info));
    if (index < 0 || index >= model->num_tensors)
        return nxe_error(NXE_ERROR_NOT_FOUND,
                         "%s: index %d is out of range; the model stores %d "
                         "tensors",
                         where, index, model->num_tensors);
    const model_tensor *t = &model->tensors[index];
    desc->data = (void *)(section_bytes(model, model->data) + t->offset);
    desc->data_size = (size_t)t->size;
    desc->ndim = t->ndim;
    nxe_dtype_to_dlpack(t->dtype, &desc->dtype_code, &desc->dtype_bits);
    for (int32_t d = 0; d < t->ndim; d++)
        desc->shape[d] = t->shape[d];
    if (info) {
        *info = (nxe_tensor_info){.struct_size = info->struct_size};
        info->name = t->name;
        info->dtype = t->dtype;
        info->kind = t->kind;
        info->ndim = t->ndim;
        memcpy(info->shape, t->shape, sizeof info->shape);
        info->quant_type = t->quant.type;
        info->scale = t->quant.scale;
        info->zero_point = t->quant.zero_point;
        info->axis = t->quant.axis;
        info->num_scales = t->quant.num_scales;
        info->scales = t->quant.scales;
        info->fractional_length = t->quant.fractional_length;
    }
    return NXE_OK;
}

NXE_API nxe_status nxe_model_build_graph(const nxe_model *model, nxe_context *ctx, nxe_graph **out)
{
    const char *where = "nxe_model_build_graph";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out must not be NULL", where);
    *out = NULL;
    if (!model || !ctx)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         model ? "ctx" : "model");
    nxe_graph *graph = NULL;
    nxe_tensor **tensors = NULL;
    nxe_status status = decode_graph(model, ctx, &graph);
    if (status == NXE_OK)
        status = tensors_of_entries(model, graph, &tensors);
    const uint8_t *data = section_bytes(model, model->data);
    for (int32_t i = 0; status == NXE_OK && i < model->num_tensors; i++) {
        const model_tensor *entry = &model->tensors[i];
        status = nxe_tensor_set_data(tensors[i], data + entry->offset, (size_t)entry->size);
    }
    nxe_free(tensors);
    if (status != NXE_OK) {
        nxe_graph_release(graph);
        nxe_error_prefix("%s: ", where);
        return status;
    }
    graph->source_metadata = copy_text(model, model->metadata);
    graph->source_annotations = copy_text(model, model->annotations);
    if (!graph->source_metadata || !graph->source_annotations) {
        nxe_graph_release(graph);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    graph->has_source_fingerprint = true;
    memcpy(graph->source_fingerprint, model->fingerprint, 32);
    *out = graph;
    return NXE_OK;
}
