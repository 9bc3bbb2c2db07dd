/* tensor_kind.c — the built-in engine kind "tensor": a model file (.nxm, compiled at load) or a
 * compiled binary (.nxb), with named tensors in and out exactly as the model declares them.
 *
 * Batching: a model file fixes every input's shape, so by default the requests of a batch run
 * one after the other on the one executable, each checked and answered on its own. With the
 * option batch = true the user declares that the model treats the leading dimension of every
 * input and output as independent samples (as a per-sample network does); the kind then stacks
 * a batch's requests along that dimension, padded with zeros up to a power of two, and runs
 * them at once on an executable compiled for that many (a few kept, least recently used
 * dropped). A batch size whose graph does not compile, or whose outputs do not scale with the
 * batch, runs one by one. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

/* Stacked executables kept per model, for batches of 2, 4, ... up to MAX_STACKED requests. */
#define STACKED_VARIANTS 6
#define MAX_STACKED 64

typedef struct stacked_variant {
    int32_t count;       /* requests it runs at once; 0 = an unused slot */
    nxe_executable *exe; /* NULL: this count does not stack (compile failed or shapes differ) */
    uint64_t last_used;
} stacked_variant;

/* The kind's options (parse_options). */
typedef struct tensor_options {
    int32_t relax;
    int32_t batch;
    int32_t num_threads;
    int32_t winograd; /* an nxe_winograd_mode */
} tensor_options;

typedef struct tensor_model {
    nxe_executable *exe;
    int32_t num_inputs;
    int32_t num_outputs;
    nxe_tensor_desc *input_descs; /* shape and dtype of each input, data NULL */
    const char **input_names;     /* owned by the executable */
    /* batch = true: the model file, kept open (mapped) to compile stacked variants from */
    nxe_model *file;
    uint64_t file_bytes;
    tensor_options options;
    stacked_variant variants[STACKED_VARIANTS];
    uint64_t batches;
} tensor_model;

static void tensor_unload(void *user_data, void *instance)
{
    (void)user_data;
    tensor_model *model = instance;
    if (!model)
        return;
    nxe_executable_release(model->exe);
    for (int32_t v = 0; v < STACKED_VARIANTS; v++)
        nxe_executable_release(model->variants[v].exe);
    nxe_model_release(model->file);
    nxe_free(model->input_descs);
    nxe_free(model->input_names);
    nxe_free(model);
}

/* The kind's options: relax and batch (bools), num_threads (integer >= 0) and winograd
 * (auto, on or off). */
static nxe_status parse_options(const nxe_engine_load_args *args, tensor_options *options)
{
    *options = (tensor_options){0, 0, args->num_threads, NXE_WINOGRAD_AUTO};
    for (int32_t i = 0; i < args->num_options; i++) {
        const char *key = args->options[i].key, *value = args->options[i].value;
        nxe_status status = NXE_OK;
        if (strcmp(key, "relax") == 0) {
            status = nxe_engine_parse_bool("tensor: option", key, value, &options->relax);
        } else if (strcmp(key, "batch") == 0) {
            status = nxe_engine_parse_bool("tensor: option", key, value, &options->batch);
        } else if (strcmp(key, "num_threads") == 0) {
            status =
                nxe_engine_parse_int("tensor: option", key, value, 0, 4096, &options->num_threads);
        } else if (strcmp(key, "winograd") == 0) {
            if (strcmp(value, "auto") == 0)
                options->winograd = NXE_WINOGRAD_AUTO;
            else if (strcmp(value, "on") == 0)
                options->winograd = NXE_WINOGRAD_ON;
            else if (strcmp(value, "off") == 0)
                options->winograd = NXE_WINOGRAD_OFF;
            else
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "tensor: option winograd is '%s', expected auto, on or off",
                                 value);
        } else {
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "tensor: unknown option '%s' (relax, batch, num_threads, winograd)",
                             key);
        }
        if (status != NXE_OK)
            return status;
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

/* Compiles the model's graph; with `stack` > 1, with the leading dimension of each of the
 * `num_names` inputs named multiplied by it. */
static nxe_status compile_model(const nxe_model *file, int32_t stack, const char *const *names,
                                int32_t num_names, const tensor_options *settings,
                                nxe_executable **exe)
{
    nxe_context *context = NULL;
    nxe_graph *graph = NULL;
    nxe_status status = nxe_context_create(&context);
    if (status == NXE_OK)
        status = nxe_model_build_graph(file, context, &graph);
    for (int32_t i = 0; status == NXE_OK && stack > 1 && i < num_names; i++) {
        nxe_tensor *tensor = NULL;
        nxe_tensor_info info = {.struct_size = sizeof info};
        status = nxe_graph_find_tensor(graph, names[i], &tensor);
        if (status == NXE_OK)
            status = nxe_tensor_get_info(tensor, &info);
        if (status == NXE_OK) {
            info.shape[0] *= stack;
            status = nxe_tensor_set_shape(tensor, info.ndim, info.shape);
        }
    }
    if (status == NXE_OK) {
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = settings->num_threads;
        options.relax_precision = settings->relax;
        options.winograd = settings->winograd;
        status = nxe_graph_compile(graph, &options, exe);
    }
    nxe_graph_release(graph);
    nxe_context_release(context);
    return status;
}

static nxe_status compile_model_file(const char *path, const tensor_options *settings,
                                     nxe_model **kept, nxe_executable **exe)
{
    nxe_model *file = NULL;
    nxe_status status = nxe_model_open_file(path, NULL, &file);
    if (status == NXE_OK)
        status = compile_model(file, 1, NULL, 0, settings, exe);
    if (status == NXE_OK && kept)
        *kept = file;
    else
        nxe_model_release(file);
    return status;
}

/* batch = true needs a leading dimension on every input and output to stack along. */
static nxe_status check_stackable(const tensor_model *model)
{
    for (int32_t i = 0; i < model->num_inputs; i++)
        if (model->input_descs[i].ndim < 1)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "tensor: option batch needs a leading dimension on every input; "
                             "'%s' is a scalar",
                             model->input_names[i]);
    for (int32_t i = 0; i < model->num_outputs; i++) {
        nxe_tensor_desc desc;
        const char *name = NULL;
        nxe_executable_output_desc(model->exe, i, &desc, &name);
        if (desc.ndim < 1)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "tensor: option batch needs a leading dimension on every output; "
                             "'%s' is a scalar",
                             name);
    }
    return NXE_OK;
}

static nxe_status tensor_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    *instance = NULL;
    tensor_options settings;
    nxe_status status = parse_options(args, &settings);
    if (status != NXE_OK)
        return status;
    nxe_executable *exe = NULL;
    nxe_model *file = NULL;
    if (is_binary(args->path)) {
        if (settings.relax || settings.batch || settings.winograd != NXE_WINOGRAD_AUTO)
            return nxe_error(NXE_ERROR_UNSUPPORTED,
                             "tensor: %s applies to model files; the binary '%s' keeps the "
                             "plan it was compiled with",
                             settings.relax   ? "relax"
                             : settings.batch ? "batch"
                                              : "winograd",
                             args->path);
        nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
        options.num_threads = settings.num_threads;
        status = nxe_executable_load_file(args->path, &options, &exe);
    } else {
        status = compile_model_file(args->path, &settings, settings.batch ? &file : NULL, &exe);
    }
    if (status != NXE_OK) {
        nxe_error_prefix("tensor: '%s': ", args->path);
        return status;
    }
    tensor_model *model = nxe_alloc_zeroed(sizeof *model);
    if (model) {
        model->exe = exe;
        model->file = file;
        model->options = settings;
        nxe_executable_io_count(exe, &model->num_inputs, &model->num_outputs);
        model->input_descs =
            nxe_alloc_zeroed(sizeof *model->input_descs * (size_t)(model->num_inputs + 1));
        model->input_names =
            nxe_alloc_zeroed(sizeof *model->input_names * (size_t)(model->num_inputs + 1));
    }
    if (!model || !model->input_descs || !model->input_names) {
        if (model) {
            tensor_unload(NULL, model);
        } else {
            nxe_executable_release(exe);
            nxe_model_release(file);
        }
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory");
    }
    for (int32_t i = 0; i < model->num_inputs; i++)
        nxe_executable_input_desc(exe, i, &model->input_descs[i], &model->input_names[i]);
    struct stat about;
    if (file && stat(args->path, &about) == 0)
        model->file_bytes = (uint64_t)about.st_size; /* mapped for the model's life */
    if (file && (status = check_stackable(model)) != NXE_OK) {
        tensor_unload(NULL, model);
        return status;
    }
    *instance = model;
    return NXE_OK;
}

static uint64_t tensor_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    const tensor_model *model = instance;
    uint64_t bytes = nxe_engine_executable_bytes(model->exe) + model->file_bytes;
    for (int32_t v = 0; v < STACKED_VARIANTS; v++)
        bytes += nxe_engine_executable_bytes(model->variants[v].exe);
    return bytes;
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

/* Runs one request whose inputs are ordered as the model's: its outputs are added to it and
 * filled by the executable. */
static void run_one(const tensor_model *model, nxe_engine_batch *batch, int32_t request,
                    const nxe_tensor_desc *inputs, nxe_tensor_desc *outputs)
{
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

/* Whether `stacked` takes and gives what the model does, `count` times along the leading
 * dimension: the graph may compile for a larger batch and still not be per-sample (a reshape
 * that folds the batch away), which this catches. */
static bool stacks_outputs(const tensor_model *model, const nxe_executable *stacked, int32_t count)
{
    int32_t num_inputs = 0, num_outputs = 0;
    nxe_executable_io_count(stacked, &num_inputs, &num_outputs);
    if (num_inputs != model->num_inputs || num_outputs != model->num_outputs)
        return false;
    for (int32_t i = 0; i < model->num_inputs + model->num_outputs; i++) {
        bool input = i < model->num_inputs;
        int32_t index = input ? i : i - model->num_inputs;
        nxe_tensor_desc one, many;
        const char *one_name = NULL, *many_name = NULL;
        if (input) {
            nxe_executable_input_desc(model->exe, index, &one, &one_name);
            nxe_executable_input_desc(stacked, index, &many, &many_name);
        } else {
            nxe_executable_output_desc(model->exe, index, &one, &one_name);
            nxe_executable_output_desc(stacked, index, &many, &many_name);
        }
        if (!one_name || !many_name || strcmp(one_name, many_name) != 0 || one.ndim != many.ndim ||
            one.ndim < 1 || one.dtype_code != many.dtype_code ||
            one.dtype_bits != many.dtype_bits || many.shape[0] != one.shape[0] * count ||
            many.data_size != one.data_size * (size_t)count)
            return false;
        for (int32_t d = 1; d < one.ndim; d++)
            if (one.shape[d] != many.shape[d])
                return false;
    }
    return true;
}

/* The stacked variant for `count` requests, compiled on first use in a free or the least
 * recently used slot; its exe is NULL when that count does not stack. */
static const stacked_variant *stacked_variant_for(tensor_model *model, int32_t count)
{
    stacked_variant *slot = NULL;
    for (int32_t v = 0; v < STACKED_VARIANTS; v++) {
        stacked_variant *candidate = &model->variants[v];
        if (candidate->count == count) {
            candidate->last_used = ++model->batches;
            return candidate;
        }
        if (!slot ||
            (slot->count != 0 && (candidate->count == 0 || candidate->last_used < slot->last_used)))
            slot = candidate;
    }
    nxe_executable_release(slot->exe);
    *slot = (stacked_variant){count, NULL, ++model->batches};
    nxe_executable *exe = NULL;
    nxe_status status = compile_model(model->file, count, model->input_names, model->num_inputs,
                                      &model->options, &exe);
    if (status == NXE_OK && stacks_outputs(model, exe, count)) {
        slot->exe = exe;
    } else {
        nxe_log(NXE_LOG_INFO, "tensor: batches of %d run one request at a time: %s", count,
                status != NXE_OK ? nxe_last_error() : "the outputs do not grow with the batch");
        nxe_executable_release(exe);
    }
    return slot;
}

/* Runs `count` requests (their indices in `requests`, inputs ordered as the model's in
 * `inputs`, count x num_inputs) at once on `variant`, padded with zero samples up to its size,
 * and hands each its slice of the outputs. */
static void run_stacked(const tensor_model *model, const stacked_variant *variant,
                        nxe_engine_batch *batch, const int32_t *requests, int32_t count,
                        const nxe_tensor_desc *inputs)
{
    const int32_t n_in = model->num_inputs, n_out = model->num_outputs;
    nxe_tensor_desc *in = nxe_alloc_zeroed(sizeof *in * (size_t)(n_in + 1));
    nxe_tensor_desc *out = nxe_alloc_zeroed(sizeof *out * (size_t)(n_out + 1));
    nxe_status status =
        in && out ? NXE_OK : nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory");
    for (int32_t i = 0; status == NXE_OK && i < n_in; i++) {
        nxe_executable_input_desc(variant->exe, i, &in[i], NULL);
        in[i].data = nxe_alloc_zeroed(in[i].data_size);
        if (!in[i].data && in[i].data_size)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory for a batch");
        const size_t sample = in[i].data_size / (size_t)variant->count;
        for (int32_t r = 0; status == NXE_OK && r < count; r++)
            memcpy((char *)in[i].data + sample * (size_t)r, inputs[r * n_in + i].data, sample);
    }
    for (int32_t i = 0; status == NXE_OK && i < n_out; i++) {
        nxe_executable_output_desc(variant->exe, i, &out[i], NULL);
        out[i].data = nxe_alloc(out[i].data_size);
        if (!out[i].data && out[i].data_size)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory for a batch");
    }
    if (status == NXE_OK)
        status = nxe_executable_run(variant->exe, in, n_in, out, n_out);
    for (int32_t r = 0; r < count; r++) {
        for (int32_t i = 0; status == NXE_OK && i < n_out; i++) {
            nxe_tensor_desc one, mine;
            const char *name = NULL;
            int32_t dtype = NXE_DTYPE_NONE;
            nxe_executable_output_desc(model->exe, i, &one, &name);
            nxe_dtype_from_dlpack(one.dtype_code, one.dtype_bits, &dtype);
            nxe_status added = nxe_engine_batch_add_output(batch, requests[r], name, dtype,
                                                           one.ndim, one.shape, &mine);
            if (added != NXE_OK) {
                nxe_engine_batch_fail(batch, requests[r], added, nxe_last_error());
                break;
            }
            memcpy(mine.data, (const char *)out[i].data + one.data_size * (size_t)r, one.data_size);
        }
        if (status != NXE_OK)
            nxe_engine_batch_fail(batch, requests[r], status, nxe_last_error());
    }
    for (int32_t i = 0; in && i < n_in; i++)
        nxe_free(in[i].data);
    for (int32_t i = 0; out && i < n_out; i++)
        nxe_free(out[i].data);
    nxe_free(in);
    nxe_free(out);
}

static int32_t power_of_two_at_least(int32_t n)
{
    int32_t p = 2;
    while (p < n)
        p *= 2;
    return p;
}

static nxe_status tensor_encoder(void *user_data, void *instance, nxe_engine_batch *batch,
                                 void *state)
{
    (void)user_data;
    (void)state;
    tensor_model *model = instance;
    const int32_t size = nxe_engine_batch_size(batch), n_in = model->num_inputs;
    nxe_tensor_desc *ordered = nxe_alloc_zeroed(sizeof *ordered * (size_t)(size * n_in + 1));
    nxe_tensor_desc *outputs = nxe_alloc_zeroed(sizeof *outputs * (size_t)(model->num_outputs + 1));
    int32_t *ready = nxe_alloc(sizeof *ready * (size_t)size);
    nxe_status status = NXE_OK;
    if (!ordered || !outputs || !ready)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tensor: out of memory");
    /* Requests whose inputs match the model, each failed on its own otherwise. */
    int32_t count = 0;
    for (int32_t r = 0; status == NXE_OK && r < size; r++)
        if (!nxe_engine_batch_cancelled(batch, r) &&
            match_inputs(model, batch, r, &ordered[count * n_in]))
            ready[count++] = r;
    int32_t done = 0;
    while (status == NXE_OK && model->file && count - done >= 2) {
        int32_t chunk = count - done < MAX_STACKED ? count - done : MAX_STACKED;
        const stacked_variant *variant = stacked_variant_for(model, power_of_two_at_least(chunk));
        if (!variant->exe)
            break;
        run_stacked(model, variant, batch, ready + done, chunk, &ordered[done * n_in]);
        done += chunk;
    }
    for (int32_t r = done; status == NXE_OK && r < count; r++)
        run_one(model, batch, ready[r], &ordered[r * n_in], outputs);
    nxe_free(ordered);
    nxe_free(outputs);
    nxe_free(ready);
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
