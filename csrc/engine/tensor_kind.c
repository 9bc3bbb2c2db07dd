/* tensor_kind.c — the built-in engine kind "tensor": a model file (.nxm, compiled at load) or a
 * compiled binary (.nxb), with named tensors in and out exactly as the model declares them.
 *
 * Batching: model files fix every input's shape (an INPUT tensor may not leave a dimension
 * free), so requests cannot be concatenated along a batch axis. The kind still takes batches
 * (the engine's queueing and max_batch_delay_ms apply) and runs their requests one after the
 * other on the one executable, each checked and answered on its own: a batched answer is the
 * unbatched answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

typedef struct tensor_model {
    nxe_executable *exe;
    int32_t num_inputs;
    int32_t num_outputs;
    nxe_tensor_desc *input_descs; /* shape and dtype of each input, data NULL */
    const char **input_names;     /* owned by the executable */
} tensor_model;

static void tensor_unload(void *user_data, void *instance)
{
    (void)user_data;
    tensor_model *model = instance;
    if (!model)
        return;
    nxe_executable_release(model->exe);
    nxe_free(model->input_descs);
    nxe_free(model->input_names);
    nxe_free(model);
}

/* The kind's options: relax (bool) and num_threads (integer >= 0). */
static nxe_status parse_options(const nxe_engine_load_args *args, int32_t *relax,
                                int32_t *num_threads)
{
    *relax = 0;
    *num_threads = args->num_threads;
    for (int32_t i = 0; i < args->num_options; i++) {
        const char *key = args->options[i].key, *value = args->options[i].value;
        if (strcmp(key, "relax") == 0) {
            if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
                *relax = 1;
            else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
                *relax = 0;
            else
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "tensor: option relax is '%s', expected true or false", value);
        } else if (strcmp(key, "num_threads") == 0) {
            char *end = NULL;
            long n = strtol(value, &end, 10);
            if (!value[0] || *end || n < 0 || n > 4096)
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "tensor: option num_threads is '%s', expected 0 to 4096", value);
            *num_threads = (int32_t)n;
        } else {
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "tensor: unknown option '%s' (relax, num_threads)", key);
        }
    }
    return NXE_OK;
}

static bool is_binary(const char *path)
{
    char magic[8] = {0};
    FILE *file = fopen(path, "rb");
    if (!file)
        return false;
    size_t got = fread(magic, 1, sizeof magic, file);
    fclose(file);
    return got == sizeof magic && memcmp(magic, "NXEPLAN\0", sizeof magic) == 0;
}

static nxe_status compile_model_file(const char *path, int32_t relax, int32_t num_threads,
                                     nxe_executable **exe)
{
    nxe_model *file = NULL;
    nxe_context *context = NULL;
    nxe_graph *graph = NULL;
    nxe_status status = nxe_model_open_file(path, NULL, &file);
    if (status == NXE_OK)
        status = nxe_context_create(&context);
    if (status == NXE_OK)
        status = nxe_model_build_graph(file, context, &graph);
    if (status == NXE_OK) {
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = num_threads;
        options.relax_precision = relax;
        status = nxe_graph_compile(graph, &options, exe);
    }
    nxe_graph_release(graph);
    nxe_context_release(context);
    nxe_model_release(file);
    return status;
}

static nxe_status tensor_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    *instance = NULL;
    int32_t relax, num_threads;
    nxe_status status = parse_options(args, &relax, &num_threads);
    if (status != NXE_OK)
        return status;
    nxe_executable *exe = NULL;
    if (is_binary(args->path)) {
        if (relax)
            return nxe_error(NXE_ERROR_UNSUPPORTED,
                             "tensor: relax applies to model files; the binary '%s' keeps the "
                             "precision it was compiled with",
                             args->path);
        nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
        options.num_threads = num_threads;
        status = nxe_executable_load_file(args->path, &options, &exe);
    } else {
        status = compile_model_file(args->path, relax, num_threads, &exe);
    }
    if (status != NXE_OK) {
        nxe_error_prefix("tensor: '%s': ", args->path);
        return status;
    }
    tensor_model *model = nxe_alloc_zeroed(sizeof *model);
    if (model) {
        model->exe = exe;
        nxe_executable_io_count(exe, &model->num_inputs, &model->num_outputs);
        model->input_descs =
            nxe_alloc_zeroed(sizeof *model->input_descs * (size_t)(model->num_inputs + 1));
        model->input_names =
            nxe_alloc_zeroed(sizeof *model->input_names * (size_t)(model->num_inputs + 1));
    }
    if (!model || !model->input_descs || !model->input_names) {
        if (model)
            tensor_unload(NULL, model);
        else
            nxe_executable_release(exe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory");
    }
    for (int32_t i = 0; i < model->num_inputs; i++)
        nxe_executable_input_desc(exe, i, &model->input_descs[i], &model->input_names[i]);
    *instance = model;
    return NXE_OK;
}

static uint64_t tensor_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    const tensor_model *model = instance;
    nxe_memory_info info = {.struct_size = sizeof info};
    if (nxe_executable_memory_info(model->exe, &info) != NXE_OK)
        return 0;
    return info.resident_bytes;
}

static bool same_shape(const nxe_tensor_desc *a, const nxe_tensor_desc *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* Orders a request's inputs as the model's into `ordered`, or fails the request with a message
 * saying what does not match. */
static bool match_inputs(const tensor_model *model, nxe_engine_batch *batch, int32_t request,
                         nxe_tensor_desc *ordered)
{
    const nxe_engine_io *inputs;
    int32_t count;
    nxe_engine_batch_inputs(batch, request, &inputs, &count);
    char message[512];
    for (int32_t i = 0; i < count; i++) {
        int32_t found = -1;
        for (int32_t j = 0; j < model->num_inputs && found < 0; j++)
            if (strcmp(inputs[i].name, model->input_names[j]) == 0)
                found = j;
        if (found < 0) {
            snprintf(message, sizeof message, "tensor: the model has no input '%s'",
                     inputs[i].name);
            nxe_engine_batch_fail(batch, request, NXE_ERROR_INVALID_ARGUMENT, message);
            return false;
        }
        const nxe_tensor_desc *want = &model->input_descs[found];
        const nxe_tensor_desc *got = &inputs[i].tensor;
        if (got->dtype_code != want->dtype_code || got->dtype_bits != want->dtype_bits) {
            snprintf(message, sizeof message,
                     "tensor: input '%s' has DLPack dtype (code %d, %d bits), the model's is "
                     "(code %d, %d bits)",
                     inputs[i].name, got->dtype_code, got->dtype_bits, want->dtype_code,
                     want->dtype_bits);
            nxe_engine_batch_fail(batch, request, NXE_ERROR_DTYPE_MISMATCH, message);
            return false;
        }
        if (!same_shape(got, want)) {
            char got_shape[128], want_shape[128];
            nxe_shape_str(got->ndim, got->shape, got_shape, sizeof got_shape);
            nxe_shape_str(want->ndim, want->shape, want_shape, sizeof want_shape);
            snprintf(message, sizeof message, "tensor: input '%s' has shape %s, the model's is %s",
                     inputs[i].name, got_shape, want_shape);
            nxe_engine_batch_fail(batch, request, NXE_ERROR_SHAPE_MISMATCH, message);
            return false;
        }
        ordered[found] = *got;
    }
    if (count != model->num_inputs) {
        for (int32_t j = 0; j < model->num_inputs; j++) {
            bool given = false;
            for (int32_t i = 0; i < count && !given; i++)
                given = strcmp(inputs[i].name, model->input_names[j]) == 0;
            if (!given) {
                snprintf(message, sizeof message, "tensor: input '%s' is missing (%d of %d given)",
                         model->input_names[j], count, model->num_inputs);
                nxe_engine_batch_fail(batch, request, NXE_ERROR_INVALID_ARGUMENT, message);
                return false;
            }
        }
    }
    return true;
}

/* Runs one request: its outputs are added to it and filled by the executable. */
static void run_request(const tensor_model *model, nxe_engine_batch *batch, int32_t request,
                        nxe_tensor_desc *inputs, nxe_tensor_desc *outputs)
{
    if (!match_inputs(model, batch, request, inputs))
        return;
    nxe_status status = NXE_OK;
    for (int32_t i = 0; status == NXE_OK && i < model->num_outputs; i++) {
        nxe_tensor_desc desc;
        const char *name = NULL;
        int32_t dtype = NXE_DTYPE_NONE;
        status = nxe_executable_output_desc(model->exe, i, &desc, &name);
        if (status == NXE_OK)
            status = nxe_dtype_from_dlpack(desc.dtype_code, desc.dtype_bits, &dtype);
        if (status == NXE_OK)
            status = nxe_engine_batch_add_output(batch, request, name, dtype, desc.ndim, desc.shape,
                                                 &outputs[i]);
    }
    if (status == NXE_OK)
        status =
            nxe_executable_run(model->exe, inputs, model->num_inputs, outputs, model->num_outputs);
    if (status != NXE_OK)
        nxe_engine_batch_fail(batch, request, status, nxe_last_error());
}

static nxe_status tensor_encoder(void *user_data, void *instance, nxe_engine_batch *batch,
                                 void *state)
{
    (void)user_data;
    (void)state;
    const tensor_model *model = instance;
    nxe_tensor_desc *inputs = nxe_alloc_zeroed(sizeof *inputs * (size_t)(model->num_inputs + 1));
    nxe_tensor_desc *outputs = nxe_alloc_zeroed(sizeof *outputs * (size_t)(model->num_outputs + 1));
    nxe_status status = NXE_OK;
    if (!inputs || !outputs)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory");
    for (int32_t r = 0; status == NXE_OK && r < nxe_engine_batch_size(batch); r++)
        if (!nxe_engine_batch_cancelled(batch, r))
            run_request(model, batch, r, inputs, outputs);
    nxe_free(inputs);
    nxe_free(outputs);
    return status;
}

nxe_status nxe_tensor_kind_register(nxe_engine *engine)
{
    nxe_engine_kind kind = {0};
    kind.struct_size = sizeof kind;
    kind.name = "tensor";
    kind.batchable = 1;
    kind.load = tensor_load;
    kind.unload = tensor_unload;
    kind.resident_bytes = tensor_resident_bytes;
    kind.encoder = tensor_encoder;
    return nxe_engine_register_kind(engine, &kind);
}
