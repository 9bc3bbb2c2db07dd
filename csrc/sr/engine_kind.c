/* engine_kind.c — the engine's "super_resolution" kind (nxe_sr_engine_register): a model is an
 * nxe_sr session, a request one packed RGB or RGBA image through nxe_sr_process. It uses
 * libnxe's public engine ABI only. Every callback runs on the engine's worker thread but the
 * fingerprint, which runs on the thread adding or applying models and touches no session. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr/sr_internal.h"

#define MAX_SIDE 32768

/* Formats a message and hands it to the engine (nxe_engine_set_error) with `status`. */
static nxe_status kind_error(nxe_status status, const char *fmt, ...) SR_PRINTF(2, 3);
static nxe_status kind_error(nxe_status status, const char *fmt, ...)
{
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return nxe_engine_set_error(status, message);
}

/* A whole decimal int32 in [min, max], or false. */
static bool parse_int(const char *text, int32_t min, int32_t max, int32_t *out)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || end == text || *end || value < min || value > max)
        return false;
    *out = (int32_t)value;
    return true;
}

/* The model's options as nxe_sr_options: precision, tile_size, num_threads (the engine's
 * unless the model names its own). */
static nxe_status read_options(const nxe_engine_load_args *args, nxe_sr_options *options)
{
    options->num_threads = args->num_threads;
    for (int32_t i = 0; i < args->num_options; i++) {
        const char *key = args->options[i].key, *value = args->options[i].value;
        if (strcmp(key, "precision") == 0) {
            if (strcmp(value, "fp32") == 0)
                options->precision = NXE_SR_PRECISION_FP32;
            else if (strcmp(value, "relax") == 0)
                options->precision = NXE_SR_PRECISION_RELAX;
            else if (strcmp(value, "int8") == 0)
                options->precision = NXE_SR_PRECISION_INT8;
            else
                return kind_error(NXE_ERROR_INVALID_ARGUMENT,
                                  "super_resolution: option precision is '%s'; "
                                  "expected fp32, relax or int8",
                                  value);
        } else if (strcmp(key, "tile_size") == 0) {
            if (!parse_int(value, -1, INT32_MAX, &options->tile_size))
                return kind_error(NXE_ERROR_INVALID_ARGUMENT,
                                  "super_resolution: option tile_size is '%s'; "
                                  "expected a whole number (0: the default, -1: untiled)",
                                  value);
        } else if (strcmp(key, "num_threads") == 0) {
            if (!parse_int(value, 0, 1024, &options->num_threads))
                return kind_error(NXE_ERROR_INVALID_ARGUMENT,
                                  "super_resolution: option num_threads is '%s'; "
                                  "expected 0 (one per CPU) to 1024",
                                  value);
        } else {
            return kind_error(NXE_ERROR_INVALID_ARGUMENT,
                              "super_resolution: unknown option '%s' (known: "
                              "precision, tile_size, num_threads)",
                              key);
        }
    }
    return NXE_OK;
}

static nxe_status sr_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    *instance = NULL;
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    nxe_status status = read_options(args, &options);
    if (status != NXE_OK)
        return status;
    nxe_sr *sr;
    status = nxe_sr_open(args->path, &options, &sr);
    if (status != NXE_OK)
        return kind_error(status, "super_resolution: %s", nxe_sr_last_error());
    *instance = sr;
    return NXE_OK;
}

static void sr_unload(void *user_data, void *instance)
{
    (void)user_data;
    nxe_sr_release(instance);
}

static uint64_t sr_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    nxe_sr_info info = {sizeof info};
    return nxe_sr_get_info(instance, &info) == NXE_OK ? info.resident_bytes : 0;
}

/* Whether the options ask for precision int8. */
static bool wants_int8(const nxe_engine_option *options, int32_t num_options)
{
    for (int32_t i = 0; i < num_options; i++)
        if (strcmp(options[i].key, "precision") == 0)
            return strcmp(options[i].value, "int8") == 0;
    return false;
}

/* The fingerprint of the file the session will run: the one the path names (a built-in name's
 * file included), or with precision int8 its int8 variant where one lies beside it (where none
 * does, the load fails and says so). The stored fingerprint is read without checking the data
 * (lazy open): a damaged file fails its load. */
static nxe_status sr_fingerprint(void *user_data, const char *path,
                                 const nxe_engine_option *options, int32_t num_options,
                                 uint8_t fingerprint[32])
{
    (void)user_data;
    char file[4352];
    nxe_status status = sr_resolve_model(path, file, sizeof file);
    if (status != NXE_OK)
        return kind_error(status, "super_resolution: %s", nxe_sr_last_error());
    nxe_model_options model_options = NXE_MODEL_OPTIONS_INIT;
    model_options.lazy = 1;
    nxe_model *model;
    status = nxe_model_open_file(file, &model_options, &model);
    if (status != NXE_OK)
        return kind_error(status, "super_resolution: cannot open model '%s' (%s): %s", path, file,
                          nxe_last_error());
    const char *json;
    size_t json_size;
    sr_metadata meta;
    char variant[4352];
    if (wants_int8(options, num_options) &&
        nxe_model_metadata(model, &json, &json_size) == NXE_OK &&
        sr_read_metadata(json, json_size, &meta) == NXE_OK && !sr_is_int8(&meta) &&
        sr_int8_variant_path(file, variant, sizeof variant)) {
        nxe_model *int8 = NULL;
        if (nxe_model_open_file(variant, &model_options, &int8) == NXE_OK) {
            nxe_model_release(model);
            model = int8;
        }
    }
    status = nxe_model_fingerprint(model, fingerprint);
    nxe_model_release(model);
    if (status != NXE_OK)
        return kind_error(status, "super_resolution: the fingerprint of '%s': %s", path,
                          nxe_last_error());
    return NXE_OK;
}

/* Fails request `r` of the batch with a formatted message. */
static void fail_request(nxe_engine_batch *batch, int32_t r, nxe_status status, const char *fmt,
                         ...) SR_PRINTF(4, 5);

static void fail_request(nxe_engine_batch *batch, int32_t r, nxe_status status, const char *fmt,
                         ...)
{
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    nxe_engine_batch_fail(batch, r, status, message);
}

/* The name of a DLPack type code, as numpy spells its dtypes before the width. */
static const char *dlpack_kind(int32_t code)
{
    switch (code) {
    case NXE_DL_INT: return "int";
    case NXE_DL_UINT: return "uint";
    case NXE_DL_FLOAT: return "float";
    case NXE_DL_BFLOAT: return "bfloat";
    case NXE_DL_BOOL: return "bool";
    default: return "an unknown DLPack type of width ";
    }
}

/* The request's one input `image` if it is a uint8 [H, W, 3 | 4] image; else the request is
 * failed with the reason and NULL is returned. */
static const nxe_tensor_desc *request_image(nxe_engine_batch *batch, int32_t r)
{
    const nxe_engine_io *inputs;
    int32_t count;
    nxe_status status = nxe_engine_batch_inputs(batch, r, &inputs, &count);
    if (status != NXE_OK) {
        fail_request(batch, r, status, "super_resolution: %s", nxe_last_error());
        return NULL;
    }
    if (count != 1 || strcmp(inputs[0].name, "image") != 0) {
        fail_request(batch, r, NXE_ERROR_INVALID_ARGUMENT,
                     "super_resolution: a request takes one input named 'image', got %d "
                     "input%s%s%s%s",
                     count, count == 1 ? "" : "s", count >= 1 ? " (first '" : "",
                     count >= 1 ? inputs[0].name : "", count >= 1 ? "')" : "");
        return NULL;
    }
    const nxe_tensor_desc *image = &inputs[0].tensor;
    if (image->dtype_code != NXE_DL_UINT || image->dtype_bits != 8) {
        fail_request(batch, r, NXE_ERROR_DTYPE_MISMATCH,
                     "super_resolution: input 'image' must be uint8, got %s%d",
                     dlpack_kind(image->dtype_code), image->dtype_bits);
        return NULL;
    }
    if (image->ndim != 3) {
        fail_request(batch, r, NXE_ERROR_SHAPE_MISMATCH,
                     "super_resolution: input 'image' must be [height, width, channels], got "
                     "rank %d",
                     image->ndim);
        return NULL;
    }
    if (image->shape[2] != 3 && image->shape[2] != 4) {
        fail_request(batch, r, NXE_ERROR_SHAPE_MISMATCH,
                     "super_resolution: input 'image' has %lld channels; expected 3 (RGB) or 4 "
                     "(RGBA)",
                     (long long)image->shape[2]);
        return NULL;
    }
    if (image->shape[0] < 1 || image->shape[0] > MAX_SIDE || image->shape[1] < 1 ||
        image->shape[1] > MAX_SIDE) {
        fail_request(batch, r, NXE_ERROR_SHAPE_MISMATCH,
                     "super_resolution: input 'image' is %lldx%lld pixels; each side must be 1 "
                     "to %d",
                     (long long)image->shape[1], (long long)image->shape[0], MAX_SIDE);
        return NULL;
    }
    return image;
}

/* One request: its image through the session into a new output `image`. */
static void process_request(nxe_sr *sr, nxe_engine_batch *batch, int32_t r)
{
    const nxe_tensor_desc *image = request_image(batch, r);
    if (!image)
        return;
    int32_t height = (int32_t)image->shape[0], width = (int32_t)image->shape[1];
    int32_t channels = (int32_t)image->shape[2];
    int32_t out_width, out_height;
    nxe_status status = nxe_sr_output_size(sr, width, height, &out_width, &out_height);
    if (status != NXE_OK) {
        fail_request(batch, r, status, "super_resolution: %s", nxe_sr_last_error());
        return;
    }
    int64_t shape[3] = {out_height, out_width, channels};
    nxe_tensor_desc out;
    status = nxe_engine_batch_add_output(batch, r, "image", NXE_DTYPE_U8, 3, shape, &out);
    if (status != NXE_OK) {
        fail_request(batch, r, status, "super_resolution: the output image: %s", nxe_last_error());
        return;
    }
    nxe_sr_frame in = NXE_SR_FRAME_INIT, result = NXE_SR_FRAME_INIT;
    in.format = result.format = channels == 3 ? NXE_SR_FORMAT_RGB24 : NXE_SR_FORMAT_RGBA;
    in.width = width;
    in.height = height;
    in.data[0] = image->data;
    in.strides[0] = (int64_t)width * channels;
    result.width = out_width;
    result.height = out_height;
    result.data[0] = out.data;
    result.strides[0] = (int64_t)out_width * channels;
    status = nxe_sr_process(sr, &in, &result);
    if (status != NXE_OK)
        fail_request(batch, r, status, "super_resolution: %s", nxe_sr_last_error());
}

static nxe_status sr_encoder(void *user_data, void *instance, nxe_engine_batch *batch, void *state)
{
    (void)user_data;
    (void)state;
    int32_t size = nxe_engine_batch_size(batch);
    for (int32_t r = 0; r < size; r++)
        if (!nxe_engine_batch_cancelled(batch, r))
            process_request(instance, batch, r);
    return NXE_OK;
}

NXE_SR_API nxe_status nxe_sr_engine_register(nxe_engine *engine)
{
    if (!engine)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_engine_register: engine is NULL");
    nxe_engine_kind kind;
    memset(&kind, 0, sizeof kind);
    kind.struct_size = sizeof kind;
    kind.name = "super_resolution";
    /* Frames of different sizes cannot share a run: one request at a time. */
    kind.batchable = 0;
    kind.load = sr_load;
    kind.unload = sr_unload;
    kind.resident_bytes = sr_resident_bytes;
    kind.fingerprint = sr_fingerprint;
    kind.encoder = sr_encoder;
    nxe_status status = nxe_engine_register_kind(engine, &kind);
    if (status != NXE_OK)
        return sr_error_with_cause(status, "nxe_sr_engine_register: registering the kind "
                                           "'super_resolution'");
    return NXE_OK;
}
