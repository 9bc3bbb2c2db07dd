/* binary_writer.c — nxe_graph_compile_to_binary: compiles a graph and writes the plan, the
 * distinct constants and initial variable values, and the portable model it came from as a
 * .nxb container. binary_loader.c reads it back; docs/formats.md describes the bytes. */
#include <string.h>

#include "graph/graph_internal.h"
#include "model/container.h"
#include "model/model.h"
#include "model/records.h"
#include "runtime/binary.h"

/* Buffers of the DATA section: the distinct constants first (buffer c = constant c), then one
 * per variable in tensor order. */
typedef struct data_layout {
    int32_t num_buffers;
    const void **bytes;
    uint64_t *sizes;
    uint64_t *offsets;
    int32_t *tensor_buffer; /* per tensor: its buffer, -1 for none */
    uint64_t total;
} data_layout;

static uint64_t align_data(uint64_t offset)
{
    return (offset + NXE_PLAN_DATA_ALIGNMENT - 1) / NXE_PLAN_DATA_ALIGNMENT *
           NXE_PLAN_DATA_ALIGNMENT;
}

static void data_layout_free(data_layout *data)
{
    nxe_free(data->bytes);
    nxe_free(data->sizes);
    nxe_free(data->offsets);
    nxe_free(data->tensor_buffer);
}

static nxe_status lay_out_data(const nxe_executable *exe, data_layout *data)
{
    size_t n = (size_t)exe->num_tensors + (size_t)exe->num_constants + 1;
    *data = (data_layout){
        .bytes = nxe_alloc(sizeof(void *) * n),
        .sizes = nxe_alloc(sizeof(uint64_t) * n),
        .offsets = nxe_alloc(sizeof(uint64_t) * n),
        .tensor_buffer = nxe_alloc(sizeof(int32_t) * n),
    };
    if (!data->bytes || !data->sizes || !data->offsets || !data->tensor_buffer)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_graph_compile_to_binary: out of memory");
    for (int32_t c = 0; c < exe->num_constants; c++) {
        data->bytes[c] = exe->constants[c].data;
        data->sizes[c] = exe->constants[c].bytes;
    }
    data->num_buffers = exe->num_constants;
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        const nxe_exe_tensor *t = &exe->tensors[i];
        data->tensor_buffer[i] = -1;
        if (t->kind == NXE_TENSOR_CONSTANT && t->constant >= 0) {
            data->tensor_buffer[i] = t->constant;
        } else if (t->kind == NXE_TENSOR_VARIABLE && t->storage) {
            data->tensor_buffer[i] = data->num_buffers;
            data->bytes[data->num_buffers] = t->storage;
            data->sizes[data->num_buffers] = t->bytes;
            data->num_buffers++;
        }
    }
    uint64_t offset = 0;
    for (int32_t b = 0; b < data->num_buffers; b++) {
        offset = align_data(offset);
        data->offsets[b] = offset;
        offset += data->sizes[b];
    }
    data->total = offset;
    return NXE_OK;
}

/* The limits a loader enforces, checked before anything is written: the library refuses to
 * write what it would refuse to read. */
static nxe_status check_plan(const nxe_executable *exe, const char *where)
{
    if (exe->num_tensors > NXE_LIMIT_TENSORS || exe->num_steps > NXE_LIMIT_OPS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the plan has %d tensors and %d steps; binaries hold at most %d "
                         "tensors and %d steps",
                         where, exe->num_tensors, exe->num_steps, NXE_LIMIT_TENSORS, NXE_LIMIT_OPS);
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        const nxe_exe_tensor *t = &exe->tensors[i];
        nxe_status status = nxe_tensor_record_check(t->name, &t->quant, where);
        if (status != NXE_OK)
            return status;
        int64_t numel;
        size_t bytes;
        if (nxe_dtype_valid(t->dtype) && t->ndim >= 0 &&
            nxe_shape_numel(t->ndim, t->shape, &numel) &&
            (!nxe_shape_bytes(t->dtype, t->ndim, t->shape, &bytes) ||
             bytes > NXE_LIMIT_TENSOR_BYTES))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: tensor '%.48s' is larger than the %llu bytes a binary allows",
                             where, t->name, (unsigned long long)NXE_LIMIT_TENSOR_BYTES);
    }
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_status status = nxe_node_record_check(&exe->steps[s].node, where);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* The PLAN section. Its prefix (kernel ABI, ISA, compile flags, fingerprint) keeps this layout
 * in every version, so a loader can always tell why it cannot run a plan. The flags word is
 * bit 0 relax_precision, bits 1-2 the nxe_winograd_mode (before 0.7 the word was the relax
 * flag alone, so old plans read as NXE_WINOGRAD_AUTO). */
static void write_plan(nxe_writer *w, const nxe_executable *exe, const data_layout *data)
{
    nxe_write_u32(w, (uint32_t)exe->kernel_abi);
    nxe_write_string(w, exe->isa);
    nxe_write_u32(w, (exe->relax_precision ? 1u : 0u) | (uint32_t)exe->winograd << 1);
    nxe_write_bytes(w, exe->fingerprint, sizeof exe->fingerprint);

    nxe_write_u32(w, (uint32_t)data->num_buffers);
    for (int32_t b = 0; b < data->num_buffers; b++) {
        nxe_write_u64(w, data->offsets[b]);
        nxe_write_u64(w, data->sizes[b]);
    }
    nxe_write_u32(w, (uint32_t)exe->num_tensors);
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        const nxe_exe_tensor *t = &exe->tensors[i];
        nxe_tensor_record_encode(w, t->name, t->kind, t->dtype, t->ndim, t->shape, &t->quant);
        nxe_write_u64(w, t->bytes);
        if (t->in_arena) {
            nxe_write_u8(w, NXE_PLAN_ARENA);
        } else if (data->tensor_buffer[i] >= 0) {
            nxe_write_u8(w, NXE_PLAN_DATA);
            nxe_write_u32(w, (uint32_t)data->tensor_buffer[i]);
        } else {
            nxe_write_u8(w, NXE_PLAN_NONE);
        }
    }
    nxe_write_u32(w, (uint32_t)exe->num_steps);
    for (int32_t s = 0; s < exe->num_steps; s++) {
        const nxe_exe_step *step = &exe->steps[s];
        nxe_node_record_encode(w, &step->node);
        nxe_ids_encode(w, step->input_ids, step->num_inputs);
        nxe_ids_encode(w, step->output_ids, step->num_outputs);
    }
    nxe_ids_encode(w, exe->input_ids, exe->num_inputs);
    nxe_ids_encode(w, exe->output_ids, exe->num_outputs);
}

static void write_data(uint8_t *section, const data_layout *data)
{
    uint64_t cursor = 0;
    for (int32_t b = 0; b < data->num_buffers; b++) {
        memset(section + cursor, 0, (size_t)(data->offsets[b] - cursor));
        if (data->sizes[b] > 0)
            memcpy(section + data->offsets[b], data->bytes[b], (size_t)data->sizes[b]);
        cursor = data->offsets[b] + data->sizes[b];
    }
}

enum { PLAN_INDEX, DATA_INDEX, MODEL_INDEX, NUM_SECTIONS };

/* Sizes every section and plans the file. */
/* The embedded model of an unedited graph from a model file carries that file's metadata and
 * annotations: it is then the same model, with the same fingerprint. */
static nxe_model_write_options embedded_model_options(const nxe_graph *graph)
{
    nxe_model_write_options options = NXE_MODEL_WRITE_OPTIONS_INIT;
    if (graph->has_source_fingerprint) {
        options.metadata_json = graph->source_metadata;
        options.annotations_json = graph->source_annotations;
    }
    return options;
}

static nxe_status plan_file(nxe_graph *graph, const nxe_executable *exe, const data_layout *data,
                            nxe_container_layout *layout)
{
    *layout =
        (nxe_container_layout){.alignment = NXE_LIMIT_MIN_ALIGNMENT, .num_sections = NUM_SECTIONS};
    nxe_writer counter = nxe_writer_make(NULL, 0);
    write_plan(&counter, exe, data);
    size_t model_size = 0;
    const nxe_model_write_options options = embedded_model_options(graph);
    nxe_status status = nxe_graph_save_model(graph, &options, NULL, &model_size);
    if (status != NXE_OK) {
        nxe_error_prefix("embedding the portable model: ");
        return status;
    }
    layout->types[PLAN_INDEX] = NXE_SECTION_PLAN;
    layout->sizes[PLAN_INDEX] = counter.size;
    layout->types[DATA_INDEX] = NXE_SECTION_DATA;
    layout->sizes[DATA_INDEX] = data->total;
    layout->types[MODEL_INDEX] = NXE_SECTION_EMBEDDED_MODEL;
    layout->sizes[MODEL_INDEX] = model_size;
    return nxe_container_plan(layout);
}

static nxe_status write_file(nxe_graph *graph, const nxe_executable *exe, const data_layout *data,
                             const nxe_container_layout *layout, uint8_t *file)
{
    uint8_t *plan = file + layout->offsets[PLAN_INDEX];
    nxe_writer w = nxe_writer_make(plan, (size_t)layout->sizes[PLAN_INDEX]);
    write_plan(&w, exe, data);
    if (w.size != layout->sizes[PLAN_INDEX])
        return nxe_error(NXE_ERROR_INTERNAL, "the PLAN section changed size while written");
    write_data(file + layout->offsets[DATA_INDEX], data);
    size_t model_size = (size_t)layout->sizes[MODEL_INDEX];
    const nxe_model_write_options options = embedded_model_options(graph);
    nxe_status status =
        nxe_graph_save_model(graph, &options, file + layout->offsets[MODEL_INDEX], &model_size);
    if (status != NXE_OK) {
        nxe_error_prefix("embedding the portable model: ");
        return status;
    }
    if (model_size != layout->sizes[MODEL_INDEX])
        return nxe_error(NXE_ERROR_INTERNAL, "the embedded model changed size while written");
    nxe_container_finish(file, layout, nxe_binary_magic);
    return NXE_OK;
}

NXE_API nxe_status nxe_graph_compile_to_binary(nxe_graph *graph, const nxe_compile_options *options,
                                               void *buffer, size_t *size)
{
    const char *where = "nxe_graph_compile_to_binary";
    if (!size)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: size is NULL", where);
    size_t capacity = *size;
    *size = 0;
    if (!graph)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: graph is NULL", where);
    nxe_compile_request request;
    nxe_status status = nxe_compile_request_from(graph, options, where, &request);
    if (status != NXE_OK)
        return status;
    request.serialize_only = true;
    nxe_executable *exe = NULL;
    status = nxe_compile_graph(graph, &request, &exe);
    if (status != NXE_OK) {
        nxe_error_prefix("%s: ", where);
        return status;
    }
    if (!graph->has_source_fingerprint) {
        status = nxe_graph_fingerprint(graph, NULL, exe->fingerprint);
        if (status != NXE_OK)
            nxe_error_prefix("%s: fingerprinting the graph: ", where);
    }
    data_layout data = {0};
    nxe_container_layout layout;
    if (status == NXE_OK)
        status = check_plan(exe, where);
    if (status == NXE_OK)
        status = lay_out_data(exe, &data);
    if (status == NXE_OK) {
        status = plan_file(graph, exe, &data, &layout);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", where);
    }
    if (status == NXE_OK && buffer && capacity >= layout.file_size) {
        status = write_file(graph, exe, &data, &layout, buffer);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", where);
        else
            nxe_log(NXE_LOG_INFO, "%s: %d steps, %d distinct constants, %llu bytes", where,
                    exe->num_steps, exe->num_constants, (unsigned long long)layout.file_size);
    } else if (status == NXE_OK && buffer) {
        status = nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                           "%s: the binary needs %llu bytes, the buffer holds %zu", where,
                           (unsigned long long)layout.file_size, capacity);
    }
    if (status == NXE_OK || status == NXE_ERROR_BUFFER_TOO_SMALL)
        *size = (size_t)layout.file_size;
    data_layout_free(&data);
    nxe_executable_release(exe);
    return status;
}
