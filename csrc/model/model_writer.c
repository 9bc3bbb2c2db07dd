/* model_writer.c — saves a graph as a model file (.nxm), and the fingerprint a graph would
 * have as one. Tensors equal in dtype, shape, quantization and full SHA-256 of their bytes
 * share one stored copy. Never writes past the caller's buffer. */
#include <stdlib.h>
#include <string.h>

#include "model/graph_codec.h"
#include "model/model.h"

/* A tensor whose bytes go into the file, in bytewise name order. */
typedef struct stored_tensor {
    const nxe_tensor *tensor;
    uint8_t sha256[32];
    int32_t owner;   /* index of the tensor whose stored bytes this one uses (itself if own) */
    uint64_t offset; /* within DATA */
} stored_tensor;

static bool is_stored(const nxe_tensor *t)
{
    return (t->kind == NXE_TENSOR_CONSTANT || t->kind == NXE_TENSOR_VARIABLE) && t->data;
}

static int compare_names(const void *a, const void *b)
{
    const stored_tensor *x = a, *y = b;
    return strcmp(x->tensor->name, y->tensor->name);
}

/* The stored tensors of `graph` sorted by name; *out is nxe_alloc'd. */
static nxe_status collect_stored(const nxe_graph *graph, const char *where, stored_tensor **out,
                                 int32_t *count)
{
    *out = NULL;
    *count = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < graph->num_tensors; i++)
        n += is_stored(graph->tensors[i]);
    stored_tensor *stored = nxe_alloc_zeroed(sizeof *stored * (size_t)(n ? n : 1));
    if (!stored)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    int32_t k = 0;
    for (int32_t i = 0; i < graph->num_tensors; i++)
        if (is_stored(graph->tensors[i]))
            stored[k++].tensor = graph->tensors[i];
    qsort(stored, (size_t)n, sizeof *stored, compare_names);
    *out = stored;
    *count = n;
    return NXE_OK;
}

static int compare_digests(const void *a, const void *b)
{
    const stored_tensor *x = *(const stored_tensor *const *)a;
    const stored_tensor *y = *(const stored_tensor *const *)b;
    int order = memcmp(x->sha256, y->sha256, sizeof x->sha256);
    if (order)
        return order;
    /* equal digests keep name order, so the first name owns the shared bytes */
    return (x > y) - (x < y);
}

static bool same_content(const nxe_tensor *a, const nxe_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->data_size != b->data_size ||
        !nxe_quant_equal(&a->quant, &b->quant))
        return false;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return memcmp(a->data, b->data, a->data_size) == 0;
}

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

/* Hashes every stored tensor, lets equal ones share bytes and assigns DATA offsets;
 * returns DATA's size in *data_size. */
static nxe_status plan_data(stored_tensor *stored, int32_t n, uint32_t alignment, const char *where,
                            uint64_t *data_size)
{
    *data_size = 0;
    stored_tensor **by_digest = nxe_alloc(sizeof *by_digest * (size_t)(n ? n : 1));
    if (!by_digest)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    for (int32_t i = 0; i < n; i++) {
        nxe_sha256(stored[i].tensor->data, stored[i].tensor->data_size, stored[i].sha256);
        stored[i].owner = i;
        by_digest[i] = &stored[i];
    }
    qsort(by_digest, (size_t)n, sizeof *by_digest, compare_digests);
    for (int32_t start = 0, end; start < n; start = end) {
        for (end = start + 1; end < n; end++)
            if (memcmp(by_digest[end]->sha256, by_digest[start]->sha256, 32) != 0)
                break;
        for (int32_t j = start + 1; j < end; j++) {
            for (int32_t k = start; k < j; k++) {
                stored_tensor *candidate = by_digest[k];
                if (candidate->owner == (int32_t)(candidate - stored) &&
                    same_content(candidate->tensor, by_digest[j]->tensor)) {
                    by_digest[j]->owner = candidate->owner;
                    break;
                }
            }
        }
    }
    nxe_free(by_digest);
    uint64_t cursor = 0;
    for (int32_t i = 0; i < n; i++) {
        if (stored[i].owner != i) {
            stored[i].offset = stored[stored[i].owner].offset;
            continue;
        }
        stored[i].offset = align_up(cursor, alignment);
        cursor = stored[i].offset + stored[i].tensor->data_size;
        if (cursor > SIZE_MAX / 2)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: the tensors take more than %zu bytes",
                             where, SIZE_MAX / 2);
    }
    *data_size = cursor;
    return NXE_OK;
}

static void encode_index(nxe_writer *w, const stored_tensor *stored, int32_t n)
{
    nxe_write_u32(w, (uint32_t)n);
    for (int32_t i = 0; i < n; i++) {
        const nxe_tensor *t = stored[i].tensor;
        nxe_write_string(w, t->name);
        nxe_write_i32(w, t->dtype);
        nxe_write_i32(w, t->ndim);
        for (int32_t d = 0; d < t->ndim; d++)
            nxe_write_i64(w, t->shape[d]);
        nxe_quant_encode(w, &t->quant);
        nxe_write_u64(w, stored[i].offset);
        nxe_write_u64(w, t->data_size);
    }
}

static void fingerprint_of(const uint8_t *graph_bytes, size_t graph_size, const char *metadata,
                           const stored_tensor *stored, int32_t n, uint8_t fingerprint[32])
{
    nxe_sha256_ctx ctx;
    nxe_fingerprint_begin(&ctx, graph_bytes, graph_size, (const uint8_t *)metadata,
                          strlen(metadata), (uint32_t)n);
    for (int32_t i = 0; i < n; i++) {
        const nxe_tensor *t = stored[i].tensor;
        nxe_fingerprint_add_tensor(&ctx, t->name, t->dtype, t->ndim, t->shape, &t->quant, t->data,
                                   t->data_size);
    }
    nxe_sha256_final(&ctx, fingerprint);
}

static nxe_status check_json_text(const char *text, const char *what, const char *where)
{
    if (!nxe_utf8_text((const uint8_t *)text, strlen(text)))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is not valid UTF-8 text", where, what);
    return NXE_OK;
}

/* The GRAPH section of `graph` in a new buffer. */
static nxe_status encode_graph(const nxe_graph *graph, const char *where, uint8_t **bytes,
                               size_t *size)
{
    *bytes = NULL;
    *size = 0;
    nxe_writer counter = nxe_writer_make(NULL, 0);
    nxe_status status = nxe_graph_encode(graph, &counter, where);
    if (status != NXE_OK)
        return status;
    uint8_t *buffer = nxe_alloc(counter.size);
    if (!buffer)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of graph", where,
                         counter.size);
    nxe_writer w = nxe_writer_make(buffer, counter.size);
    nxe_graph_encode(graph, &w, where);
    *bytes = buffer;
    *size = counter.size;
    return NXE_OK;
}

nxe_status nxe_graph_fingerprint(nxe_graph *graph, const char *metadata_json,
                                 uint8_t fingerprint[32])
{
    const char *where = "nxe_graph_fingerprint";
    if (!graph || !fingerprint)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         graph ? "fingerprint" : "graph");
    memset(fingerprint, 0, 32);
    const char *metadata = metadata_json ? metadata_json : "{}";
    nxe_status status = check_json_text(metadata, "metadata_json", where);
    if (status != NXE_OK)
        return status;
    uint8_t *graph_bytes;
    size_t graph_size;
    if ((status = encode_graph(graph, where, &graph_bytes, &graph_size)) != NXE_OK)
        return status;
    stored_tensor *stored;
    int32_t n;
    status = collect_stored(graph, where, &stored, &n);
    if (status == NXE_OK)
        fingerprint_of(graph_bytes, graph_size, metadata, stored, n, fingerprint);
    nxe_free(stored);
    nxe_free(graph_bytes);
    return status;
}

enum { SECTION_COUNT = 6 };

/* Writes every section at its planned offset; the container adds header and checksums. */
static void write_file(uint8_t *file, const nxe_container_layout *layout, const char *metadata,
                       const char *annotations, const uint8_t *graph_bytes, size_t graph_size,
                       const stored_tensor *stored, int32_t n)
{
    const uint64_t *at = layout->offsets;
    memcpy(file + at[0], metadata, (size_t)layout->sizes[0]);
    memcpy(file + at[1], annotations, (size_t)layout->sizes[1]);
    memcpy(file + at[2], graph_bytes, graph_size);
    nxe_writer index = nxe_writer_make(file + at[3], (size_t)layout->sizes[3]);
    encode_index(&index, stored, n);
    uint8_t *data = file + at[4];
    memset(data, 0, (size_t)layout->sizes[4]);
    for (int32_t i = 0; i < n; i++)
        if (stored[i].owner == i && stored[i].tensor->data_size)
            memcpy(data + stored[i].offset, stored[i].tensor->data, stored[i].tensor->data_size);
    fingerprint_of(graph_bytes, graph_size, metadata, stored, n, file + at[5]);
    nxe_container_finish(file, layout, nxe_model_magic);
}

NXE_API nxe_status nxe_graph_save_model(nxe_graph *graph, const nxe_model_write_options *options,
                                        void *buffer, size_t *size)
{
    const char *where = "nxe_graph_save_model";
    if (!size)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: size must not be NULL", where);
    size_t capacity = buffer ? *size : 0;
    *size = 0;
    if (!graph)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: graph is NULL", where);
    nxe_model_write_options defaults = NXE_MODEL_WRITE_OPTIONS_INIT;
    if (!options)
        options = &defaults;
    if (options->struct_size < sizeof(nxe_model_write_options))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: options.struct_size is %u, expected at least %zu (initialize with "
                         "NXE_MODEL_WRITE_OPTIONS_INIT)",
                         where, options->struct_size, sizeof(nxe_model_write_options));
    uint32_t alignment = options->alignment ? options->alignment : NXE_LIMIT_MIN_ALIGNMENT;
    if (alignment < NXE_LIMIT_MIN_ALIGNMENT || alignment > NXE_LIMIT_MAX_ALIGNMENT ||
        (alignment & (alignment - 1)))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: alignment %u is not a power of two in [%u, %u]", where, alignment,
                         NXE_LIMIT_MIN_ALIGNMENT, NXE_LIMIT_MAX_ALIGNMENT);
    const char *metadata = options->metadata_json ? options->metadata_json : "{}";
    const char *annotations = options->annotations_json ? options->annotations_json : "{}";
    nxe_status status = check_json_text(metadata, "metadata_json", where);
    if (status == NXE_OK)
        status = check_json_text(annotations, "annotations_json", where);
    if (status != NXE_OK)
        return status;

    uint8_t *graph_bytes = NULL;
    size_t graph_size = 0;
    stored_tensor *stored = NULL;
    int32_t n = 0;
    uint64_t data_size = 0;
    status = encode_graph(graph, where, &graph_bytes, &graph_size);
    if (status == NXE_OK)
        status = collect_stored(graph, where, &stored, &n);
    if (status == NXE_OK)
        status = plan_data(stored, n, alignment, where, &data_size);
    nxe_container_layout layout = {.alignment = alignment, .num_sections = SECTION_COUNT};
    if (status == NXE_OK) {
        nxe_writer index = nxe_writer_make(NULL, 0);
        encode_index(&index, stored, n);
        const uint32_t types[SECTION_COUNT] = {NXE_SECTION_METADATA, NXE_SECTION_ANNOTATIONS,
                                               NXE_SECTION_GRAPH,    NXE_SECTION_TENSORS,
                                               NXE_SECTION_DATA,     NXE_SECTION_FINGERPRINT};
        const uint64_t sizes[SECTION_COUNT] = {strlen(metadata), strlen(annotations), graph_size,
                                               index.size,       data_size,           32};
        memcpy(layout.types, types, sizeof types);
        memcpy(layout.sizes, sizes, sizeof sizes);
        status = nxe_container_plan(&layout);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", where);
    }
    if (status == NXE_OK) {
        *size = (size_t)layout.file_size;
        if (buffer && capacity < layout.file_size)
            status = nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                               "%s: the model file takes %llu bytes; the buffer holds %zu", where,
                               (unsigned long long)layout.file_size, capacity);
        else if (buffer)
            write_file(buffer, &layout, metadata, annotations, graph_bytes, graph_size, stored, n);
    }
    nxe_free(stored);
    nxe_free(graph_bytes);
    return status;
}
