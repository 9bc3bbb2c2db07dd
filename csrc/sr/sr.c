/* sr.c — the super-resolution session behind nxe_sr.h: finds and opens the model, compiles it
 * for the tile shape a frame needs, and takes a frame through colour conversion, tiled model
 * runs and chroma/alpha resampling. The arithmetic lives in kernels/ref/image.c; the network
 * runs in libnxe. Nothing here touches a frame before the frame has been checked. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image.h"
#include "sr/builtin_models.h" /* SR_BUILTIN_MODELS, generated from models/sr/models.txt */
#include "sr/metadata.h"
#include "sr/sr_internal.h"

#define MAX_TILE 16384
#define MIN_TILE 8
#define MAX_SCALE 8
#define PLANES 6 /* float planes at each resolution: the widest path needs six */

static const char *const builtin_models[] = {SR_BUILTIN_MODELS};
#define NUM_BUILTINS ((int32_t)(sizeof builtin_models / sizeof builtin_models[0]))

/* What open sets stays fixed; what follows `lock` changes with each frame and is read and
 * written only under it, so that overlapping calls run one after another. */
struct nxe_sr {
    nxe_model *model;
    sr_metadata meta;
    int32_t num_threads;
    int32_t tile_size; /* largest tile side, or NXE_SR_TILE_NONE */
    int32_t overlap;
    int32_t precision;
    uint64_t model_bytes; /* the model file's tensors, mapped for the session's life */

    pthread_mutex_t lock;

    nxe_executable *exe; /* compiled for tile_width x tile_height */
    int32_t tile_width, tile_height;
    nxe_tensor_desc tile_input; /* in the executable's staging buffer */
    nxe_binding *binding;       /* a whole-frame tile: the planes bound in place */

    int32_t frame_width, frame_height; /* what the buffers below are sized for */
    float *buffer;                     /* one allocation: the planes and the scratch */
    float *lr[PLANES];                 /* frame_width x frame_height */
    float *hr[PLANES];                 /* scale x that */
    float *scratch;                    /* for nxe_image_upscale_cubic */
    uint64_t buffer_bytes;             /* of `buffer` */

    uint64_t frames, tiles, reconfigurations;
    uint64_t bytes_copied_in, bytes_copied_out; /* between the planes and the model's tensors */
};

NXE_SR_API uint32_t nxe_sr_api_version(void)
{
    return (uint32_t)NXE_SR_API_VERSION_MAJOR << 16 | NXE_SR_API_VERSION_MINOR;
}

NXE_SR_API nxe_status nxe_sr_builtin_count(int32_t *count)
{
    if (!count)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_builtin_count: count is NULL");
    *count = NUM_BUILTINS;
    return NXE_OK;
}

NXE_SR_API nxe_status nxe_sr_builtin_name(int32_t index, const char **name)
{
    if (!name)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_builtin_name: name is NULL");
    *name = NULL;
    if (index < 0 || index >= NUM_BUILTINS)
        return sr_error(NXE_ERROR_NOT_FOUND, "nxe_sr_builtin_name: index %d is outside 0 .. %d",
                        index, NUM_BUILTINS - 1);
    *name = builtin_models[index];
    return NXE_OK;
}

/* ---- finding the model ---- */

static bool is_builtin(const char *name)
{
    for (int32_t i = 0; i < NUM_BUILTINS; i++)
        if (strcmp(name, builtin_models[i]) == 0)
            return true;
    return false;
}

/* The folder holding the built-in models: NXE_SR_MODEL_DIR, else the one installed beside
 * this library (a path relative to the library's own folder when the build says so). */
static nxe_status builtin_folder(char *out, size_t cap)
{
    const char *env = getenv("NXE_SR_MODEL_DIR");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return NXE_OK;
    }
#ifdef NXE_SR_MODELS_BESIDE_LIBRARY
    Dl_info info;
    if (!dladdr((void *)nxe_sr_open, &info) || !info.dli_fname)
        return sr_error(NXE_ERROR_IO, "nxe_sr_open: cannot tell where libnxe_sr is installed");
    snprintf(out, cap, "%s", info.dli_fname);
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(out, cap, ".");
    size_t used = strlen(out);
    snprintf(out + used, cap - used, "/%s", NXE_SR_MODELS_BESIDE_LIBRARY);
#else
    snprintf(out, cap, "%s", NXE_SR_MODEL_FOLDER);
#endif
    return NXE_OK;
}

nxe_status sr_resolve_model(const char *model, char *path, size_t cap)
{
    size_t length = strlen(model);
    bool is_path = strchr(model, '/') || (length >= 4 && strcmp(model + length - 4, ".nxm") == 0);
    if (is_path) {
        if (length >= cap)
            return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_open: model path is too long");
        memcpy(path, model, length + 1);
        return NXE_OK;
    }
    if (!is_builtin(model)) {
        char names[256] = "";
        for (int32_t i = 0; i < NUM_BUILTINS; i++) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", builtin_models[i]);
        }
        return sr_error(NXE_ERROR_NOT_FOUND,
                        "nxe_sr_open: no built-in SR model named '%s' (built in: %s; a .nxm path "
                        "also works)",
                        model, names);
    }
    char folder[4096];
    nxe_status status = builtin_folder(folder, sizeof folder);
    if (status != NXE_OK)
        return status;
    if ((size_t)snprintf(path, cap, "%s/%s.nxm", folder, model) >= cap)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_open: model folder path too long");
    return NXE_OK;
}

/* ---- opening ---- */

static nxe_status check_metadata(const sr_metadata *m, const char *path)
{
    if (strcmp(m->task, "super_resolution") != 0)
        return sr_error(NXE_ERROR_FORMAT,
                        "nxe_sr_open: '%s' is not an SR model (metadata \"task\" is '%s', "
                        "expected 'super_resolution')",
                        path, m->task);
    if (m->scale < 1 || m->scale > MAX_SCALE)
        return sr_error(NXE_ERROR_FORMAT,
                        "nxe_sr_open: '%s' has metadata \"scale\" %d; expected 1 to %d", path,
                        m->scale, MAX_SCALE);
    if (m->channels != 1 && m->channels != 3)
        return sr_error(NXE_ERROR_FORMAT,
                        "nxe_sr_open: '%s' has metadata \"channels\" %d; expected 1 (luma) or 3 "
                        "(RGB)",
                        path, m->channels);
    if (m->receptive_radius < 0 || m->receptive_radius > MAX_TILE / 4)
        return sr_error(NXE_ERROR_FORMAT,
                        "nxe_sr_open: '%s' has metadata \"receptive_radius\" %d; expected 0 to %d",
                        path, m->receptive_radius, MAX_TILE / 4);
    if (!m->input[0] || !m->output[0])
        return sr_error(NXE_ERROR_FORMAT,
                        "nxe_sr_open: '%s' lacks the metadata \"input\" and \"output\" tensor "
                        "names",
                        path);
    return NXE_OK;
}

static nxe_status apply_options(nxe_sr *sr, const nxe_sr_options *options)
{
    nxe_sr_options defaults = NXE_SR_OPTIONS_INIT;
    if (!options)
        options = &defaults;
    if (options->struct_size < sizeof(nxe_sr_options))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: options.struct_size is %u, expected at least %zu "
                        "(initialize with NXE_SR_OPTIONS_INIT)",
                        options->struct_size, sizeof(nxe_sr_options));
    if (options->num_threads < 0)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: num_threads is %d; use 0 for one per CPU",
                        options->num_threads);
    if (options->precision != NXE_SR_PRECISION_FP32 &&
        options->precision != NXE_SR_PRECISION_RELAX && options->precision != NXE_SR_PRECISION_INT8)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: precision %d is not NXE_SR_PRECISION_FP32 (0), "
                        "NXE_SR_PRECISION_RELAX (1) or NXE_SR_PRECISION_INT8 (2)",
                        options->precision);
    int32_t tile = options->tile_size;
    if (tile == NXE_SR_TILE_DEFAULT)
        tile = sr->meta.channels == 1 ? 1024 : 1024 / sr->meta.scale;
    if (tile != NXE_SR_TILE_NONE && (tile < MIN_TILE || tile > MAX_TILE))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: tile_size %d; expected %d to %d, NXE_SR_TILE_DEFAULT (0) "
                        "or NXE_SR_TILE_NONE (-1)",
                        options->tile_size, MIN_TILE, MAX_TILE);
    /* A tile keeps at least one pixel of its own between the overlaps; untiled frames borrow
     * nothing, and the overlap is held to what the largest tile allows. Both bounds keep
     * every tile sum and count far inside int32. */
    int32_t overlap = options->tile_overlap;
    if (overlap == NXE_SR_OVERLAP_DEFAULT)
        overlap = sr->meta.receptive_radius;
    int32_t max_overlap = ((tile == NXE_SR_TILE_NONE ? MAX_TILE : tile) - 1) / 2;
    if (overlap < 0 || (tile == NXE_SR_TILE_NONE && overlap > max_overlap))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: tile_overlap %d; expected 0 to %d or "
                        "NXE_SR_OVERLAP_DEFAULT (-1)",
                        overlap, max_overlap);
    if (overlap > max_overlap)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_open: tile_size %d leaves nothing between overlaps of %d on each "
                        "side (the model '%s' needs %d); tile_overlap must be 0 to %d, or use a "
                        "larger tile",
                        tile, overlap, sr->meta.name, sr->meta.receptive_radius, max_overlap);
    sr->num_threads = options->num_threads;
    sr->tile_size = tile;
    sr->overlap = overlap;
    sr->precision = options->precision;
    return NXE_OK;
}

/* The bytes of the model's stored tensors: the weights the session keeps mapped. */
static nxe_status count_model_bytes(nxe_sr *sr)
{
    int32_t count = 0;
    nxe_status status = nxe_model_tensor_count(sr->model, &count);
    for (int32_t i = 0; status == NXE_OK && i < count; i++) {
        nxe_tensor_desc desc;
        status = nxe_model_tensor(sr->model, i, NULL, &desc);
        sr->model_bytes += desc.data_size;
    }
    if (status != NXE_OK)
        return sr_error_with_cause(status, "nxe_sr_open: reading the model's tensors");
    return NXE_OK;
}

/* Opens the model file at `path` into sr->model and reads its metadata. */
static nxe_status open_model_file(nxe_sr *sr, const char *model, const char *path)
{
    nxe_model_options model_options = NXE_MODEL_OPTIONS_INIT;
    nxe_status status = nxe_model_open_file(path, &model_options, &sr->model);
    if (status != NXE_OK)
        return sr_error_with_cause(status, "nxe_sr_open: cannot open model '%s' (%s)", model, path);
    const char *json;
    size_t json_size;
    status = nxe_model_metadata(sr->model, &json, &json_size);
    if (status == NXE_OK)
        status = sr_read_metadata(json, json_size, &sr->meta);
    if (status == NXE_OK)
        status = check_metadata(&sr->meta, path);
    if (status == NXE_OK && !sr->meta.name[0])
        snprintf(sr->meta.name, sizeof sr->meta.name, "%s", model);
    return status;
}

bool sr_is_int8(const sr_metadata *m)
{
    return strcmp(m->precision, "int8") == 0;
}

bool sr_int8_variant_path(const char *path, char *out, size_t cap)
{
    size_t length = strlen(path);
    if (length >= 4 && strcmp(path + length - 4, ".nxm") == 0)
        length -= 4;
    return (size_t)snprintf(out, cap, "%.*s-int8.nxm", (int)length, path) < cap;
}

/* Int8 runs a model's int8 variant: the file itself when its metadata says int8, else the file
 * beside it with "-int8" before ".nxm", whose metadata then sets the option defaults. An int8
 * file runs only as int8, so that the session's precision always says what arithmetic it
 * does. */
static nxe_status open_precision_variant(nxe_sr *sr, const char *model, const char *path,
                                         const nxe_sr_options *options)
{
    bool int8 = sr_is_int8(&sr->meta);
    if (sr->precision != NXE_SR_PRECISION_INT8) {
        if (int8)
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_open: '%s' is an int8 model; open it with "
                            "NXE_SR_PRECISION_INT8 (2), or open its fp32 model",
                            path);
        return NXE_OK;
    }
    if (int8)
        return NXE_OK;
    char variant[4352];
    if (!sr_int8_variant_path(path, variant, sizeof variant))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_open: model path is too long");
    if (access(variant, F_OK) != 0)
        return sr_error(NXE_ERROR_UNSUPPORTED,
                        "nxe_sr_open: model '%s' has no int8 variant (no file '%s'); use "
                        "NXE_SR_PRECISION_FP32 or NXE_SR_PRECISION_RELAX",
                        model, variant);
    nxe_model_release(sr->model);
    sr->model = NULL;
    nxe_status status = open_model_file(sr, model, variant);
    if (status == NXE_OK && !sr_is_int8(&sr->meta))
        status = sr_error(NXE_ERROR_FORMAT,
                          "nxe_sr_open: '%s', the int8 variant of '%s', lacks the metadata "
                          "\"precision\": \"int8\"",
                          variant, model);
    if (status == NXE_OK)
        status = apply_options(sr, options);
    return status;
}

NXE_SR_API nxe_status nxe_sr_open(const char *model, const nxe_sr_options *options, nxe_sr **out)
{
    if (!out)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_open: out is NULL");
    *out = NULL;
    if (!model || !model[0])
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_open: model name is %s",
                        model ? "empty" : "NULL");
    char path[4352];
    nxe_status status = sr_resolve_model(model, path, sizeof path);
    if (status != NXE_OK)
        return status;
    nxe_sr *sr = calloc(1, sizeof *sr);
    if (!sr)
        return sr_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_sr_open: out of memory");
    if (pthread_mutex_init(&sr->lock, NULL) != 0) {
        free(sr);
        return sr_error(NXE_ERROR_OUT_OF_MEMORY, "nxe_sr_open: cannot create the session's lock");
    }
    status = open_model_file(sr, model, path);
    if (status == NXE_OK)
        status = apply_options(sr, options);
    if (status == NXE_OK)
        status = open_precision_variant(sr, model, path, options);
    if (status == NXE_OK)
        status = count_model_bytes(sr);
    if (status != NXE_OK) {
        nxe_sr_release(sr);
        return status;
    }
    *out = sr;
    return NXE_OK;
}

NXE_SR_API void nxe_sr_release(nxe_sr *sr)
{
    if (!sr)
        return;
    nxe_binding_release(sr->binding);
    nxe_executable_release(sr->exe);
    nxe_model_release(sr->model);
    free(sr->buffer);
    pthread_mutex_destroy(&sr->lock);
    free(sr);
}

/* What num_threads 0 means before an executable says: one per online CPU, as libnxe does. */
static int32_t online_cpus(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 1024 ? 1024 : (int32_t)cpus;
}

NXE_SR_API nxe_status nxe_sr_get_info(const nxe_sr *sr, nxe_sr_info *info)
{
    if (!sr || !info)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_get_info: %s is NULL",
                        sr ? "info" : "sr");
    /* An SR API 0.2 caller's struct ends before resident_bytes, a 0.3 or 0.4 one before
     * bytes_copied_in. */
    size_t size_0_2 = offsetof(nxe_sr_info, resident_bytes);
    size_t size_0_4 = offsetof(nxe_sr_info, bytes_copied_in);
    if (info->struct_size < size_0_2)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_get_info: info.struct_size is %u, expected at least %zu",
                        info->struct_size, size_0_2);
    /* The counts and the executable change under a frame in progress; the lock is state the
     * session owns even where the caller holds it as const. */
    pthread_mutex_t *lock = (pthread_mutex_t *)&sr->lock;
    pthread_mutex_lock(lock);
    uint32_t size = info->struct_size;
    bool has_resident_bytes = size >= size_0_4;
    bool has_copies = size >= sizeof *info;
    memset(info, 0, has_copies ? sizeof *info : has_resident_bytes ? size_0_4 : size_0_2);
    info->struct_size = size;
    info->scale = sr->meta.scale;
    info->channels = sr->meta.channels;
    info->receptive_radius = sr->meta.receptive_radius;
    info->tile_size = sr->tile_size;
    info->tile_overlap = sr->overlap;
    info->precision = sr->precision;
    info->num_threads = sr->num_threads;
    info->frames = sr->frames;
    info->tiles = sr->tiles;
    info->reconfigurations = sr->reconfigurations;
    if (has_copies) {
        info->bytes_copied_in = sr->bytes_copied_in;
        info->bytes_copied_out = sr->bytes_copied_out;
    }
    snprintf(info->name, sizeof info->name, "%s", sr->meta.name);
    nxe_memory_info memory = {sizeof memory};
    bool has_memory = sr->exe && nxe_executable_memory_info(sr->exe, &memory) == NXE_OK;
    if (has_memory)
        info->num_threads = memory.num_threads;
    else if (info->num_threads == 0)
        info->num_threads = online_cpus();
    if (has_resident_bytes)
        info->resident_bytes =
            sr->model_bytes + sr->buffer_bytes + (has_memory ? memory.resident_bytes : 0);
    pthread_mutex_unlock(lock);
    return NXE_OK;
}

NXE_SR_API nxe_status nxe_sr_format_supported(const nxe_sr *sr, int32_t format)
{
    if (!sr)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_format_supported: sr is NULL");
    if (!sr_format_of(format))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_format_supported: %d is not an NXE_SR_FORMAT_* code", format);
    /* Every format goes through both kinds of model: luma models take Y (computed from RGB
     * where needed), RGB models take RGB (converted from YUV or repeated from gray). */
    return NXE_OK;
}

NXE_SR_API nxe_status nxe_sr_output_size(const nxe_sr *sr, int32_t width, int32_t height,
                                         int32_t *out_width, int32_t *out_height)
{
    if (out_width)
        *out_width = 0;
    if (out_height)
        *out_height = 0;
    if (!sr || !out_width || !out_height)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_output_size: %s is NULL",
                        !sr          ? "sr"
                        : !out_width ? "out_width"
                                     : "out_height");
    if (width < 1 || height < 1 || width > 32768 || height > 32768)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_output_size: %dx%d; sides must be 1 to 32768", width, height);
    *out_width = width * sr->meta.scale;
    *out_height = height * sr->meta.scale;
    return NXE_OK;
}

/* ---- configuring for a frame size ---- */

/* The tile side along one axis of n pixels: n itself when it fits, else the smallest side of
 * equal tiles, no larger than the limit, whose insides (less the overlap) cover n. */
static int32_t tile_side(int32_t n, int32_t limit, int32_t overlap)
{
    if (limit == NXE_SR_TILE_NONE || n <= limit)
        return n;
    /* apply_options holds 2 * overlap below limit and sr_check_frame n to MAX_SIDE: int64
     * cannot overflow here, and the result lies between 2 * overlap + 1 and limit. */
    int64_t inner = (int64_t)limit - 2 * (int64_t)overlap;
    int64_t span = (int64_t)n - 2 * (int64_t)overlap;
    int64_t count = (span + inner - 1) / inner;
    return (int32_t)((span + count - 1) / count + 2 * (int64_t)overlap);
}

static nxe_status compile_tile(nxe_sr *sr, int32_t width, int32_t height)
{
    nxe_binding_release(sr->binding);
    sr->binding = NULL;
    nxe_executable_release(sr->exe);
    sr->exe = NULL;
    sr->tile_width = sr->tile_height = 0;
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    nxe_tensor *input = NULL;
    int64_t shape[4] = {1, sr->meta.channels, height, width};
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = sr->num_threads;
    options.relax_precision = sr->precision == NXE_SR_PRECISION_RELAX;
    nxe_status status = nxe_context_create(&ctx);
    if (status == NXE_OK)
        status = nxe_model_build_graph(sr->model, ctx, &graph);
    if (status == NXE_OK)
        status = nxe_graph_find_tensor(graph, sr->meta.input, &input);
    if (status == NXE_OK)
        status = nxe_tensor_set_shape(input, 4, shape);
    if (status == NXE_OK)
        status = nxe_graph_compile(graph, &options, &sr->exe);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    if (status != NXE_OK)
        return sr_error_with_cause(status, "nxe_sr_process: compiling '%s' for %dx%d tiles",
                                   sr->meta.name, width, height);
    int32_t inputs = 0, outputs = 0;
    nxe_tensor_desc out = {0};
    status = nxe_executable_io_count(sr->exe, &inputs, &outputs);
    if (status == NXE_OK && (inputs != 1 || outputs != 1))
        status = sr_error(NXE_ERROR_FORMAT,
                          "nxe_sr_process: SR model '%s' has %d inputs and %d outputs; expected "
                          "one of each",
                          sr->meta.name, inputs, outputs);
    if (status == NXE_OK)
        status = nxe_executable_output_desc(sr->exe, 0, &out, NULL);
    int32_t s = sr->meta.scale;
    if (status == NXE_OK &&
        (out.ndim != 4 || out.dtype_code != 2 || out.dtype_bits != 32 || out.shape[0] != 1 ||
         out.shape[1] != sr->meta.channels || out.shape[2] != (int64_t)height * s ||
         out.shape[3] != (int64_t)width * s))
        status = sr_error(NXE_ERROR_FORMAT,
                          "nxe_sr_process: SR model '%s' turns a [1, %d, %d, %d] input into an "
                          "output that is not f32 [1, %d, %d, %d]",
                          sr->meta.name, sr->meta.channels, height, width, sr->meta.channels,
                          height * s, width * s);
    if (status == NXE_OK)
        status = nxe_executable_create_input(sr->exe, 0, &sr->tile_input);
    if (status == NXE_OK)
        status = nxe_binding_create(sr->exe, &sr->binding);
    if (status != NXE_OK) {
        nxe_binding_release(sr->binding);
        sr->binding = NULL;
        nxe_executable_release(sr->exe);
        sr->exe = NULL;
        return status;
    }
    sr->tile_width = width;
    sr->tile_height = height;
    sr->reconfigurations++;
    return NXE_OK;
}

static nxe_status size_buffers(nxe_sr *sr, int32_t width, int32_t height)
{
    if (sr->buffer && sr->frame_width == width && sr->frame_height == height)
        return NXE_OK;
    free(sr->buffer);
    sr->buffer = NULL;
    sr->buffer_bytes = 0;
    sr->frame_width = sr->frame_height = 0;
    int64_t s = sr->meta.scale;
    int64_t lr, hr, planes, scratch = 0, total = 0;
    bool fits = sr_mul(width, height, &lr) && sr_mul(lr, s * s, &hr) && sr_add(lr, hr, &planes) &&
                sr_mul(planes, PLANES, &planes) && (int64_t)width * s <= INT32_MAX;
    if (fits) {
        scratch = nxe_image_upscale_scratch(height, (int32_t)(width * s));
        /* Cubic upscaling also runs from chroma or LR planes to the LR size (s = 1 .. 2). */
        int64_t lr_scratch = nxe_image_upscale_scratch(height, width);
        if (lr_scratch > scratch)
            scratch = lr_scratch;
        fits = sr_add(planes, scratch, &total) && (uint64_t)total <= SIZE_MAX / sizeof(float);
    }
    if (!fits)
        return sr_error(NXE_ERROR_OUT_OF_MEMORY,
                        "nxe_sr_process: a %dx%d frame at scale %lld needs more float planes "
                        "than memory can address",
                        width, height, (long long)s);
    sr->buffer = malloc((size_t)total * sizeof(float));
    if (!sr->buffer)
        return sr_error(NXE_ERROR_OUT_OF_MEMORY,
                        "nxe_sr_process: out of memory for the %dx%d frame's %lld MiB of planes",
                        width, height, (long long)(total * (int64_t)sizeof(float) >> 20));
    for (int p = 0; p < PLANES; p++) {
        sr->lr[p] = sr->buffer + p * lr;
        sr->hr[p] = sr->buffer + PLANES * lr + p * hr;
    }
    sr->scratch = sr->buffer + PLANES * lr + PLANES * hr;
    sr->buffer_bytes = (uint64_t)total * sizeof(float);
    sr->frame_width = width;
    sr->frame_height = height;
    return NXE_OK;
}

static nxe_status configure(nxe_sr *sr, int32_t width, int32_t height)
{
    int32_t tw = tile_side(width, sr->tile_size, sr->overlap);
    int32_t th = tile_side(height, sr->tile_size, sr->overlap);
    nxe_status status = NXE_OK;
    if (!sr->exe || tw != sr->tile_width || th != sr->tile_height)
        status = compile_tile(sr, tw, th);
    if (status == NXE_OK)
        status = size_buffers(sr, width, height);
    return status;
}

/* ---- the model over tiles ---- */

/* A frame that is one tile: its LR planes (contiguous, channel after channel, as the
 * [1, c, h, w] input lies) are the model's input and its HR planes its output, bound in place,
 * so nothing is copied between them and the executable. */
static nxe_status run_whole_frame(nxe_sr *sr, float *lr, float *hr)
{
    nxe_tensor_desc in = {0}, out = {0};
    nxe_status status = nxe_executable_input_desc(sr->exe, 0, &in, NULL);
    if (status == NXE_OK)
        status = nxe_executable_output_desc(sr->exe, 0, &out, NULL);
    in.data = lr;
    out.data = hr;
    if (status == NXE_OK)
        status = nxe_binding_bind_input(sr->binding, 0, &in);
    if (status == NXE_OK)
        status = nxe_binding_bind_output(sr->binding, 0, &out);
    if (status == NXE_OK)
        status = nxe_binding_run(sr->binding);
    if (status != NXE_OK)
        return sr_error_with_cause(status, "nxe_sr_process: running '%s'", sr->meta.name);
    sr->tiles++;
    return NXE_OK;
}

/* Runs the model over `channels` LR planes (frame size, contiguous) into HR planes. Each tile
 * writes only the part of its output whose context lies wholly inside the tile (or reaches the
 * frame's edge), so with an overlap of the receptive radius tiles equal one whole run. */
static nxe_status run_tiles(nxe_sr *sr, float *const *lr, float *const *hr)
{
    int32_t w = sr->frame_width, h = sr->frame_height;
    int32_t tw = sr->tile_width, th = sr->tile_height, o = sr->overlap;
    int32_t c = sr->meta.channels, s = sr->meta.scale;
    /* size_buffers lays the planes out one after another, each w x h (LR) or scale^2 that. */
    bool contiguous = true;
    for (int32_t ch = 1; ch < c; ch++)
        contiguous = contiguous && lr[ch] == lr[ch - 1] + (int64_t)w * h &&
                     hr[ch] == hr[ch - 1] + (int64_t)w * h * s * s;
    if (tw == w && th == h && contiguous)
        return run_whole_frame(sr, lr[0], hr[0]);
    float *input = sr->tile_input.data;
    int64_t out_w = (int64_t)tw * s, out_h = (int64_t)th * s;
    int32_t y0 = 0, valid_y0 = 0;
    for (;;) {
        int32_t valid_y1 = y0 + th >= h ? h : y0 + th - o;
        int32_t x0 = 0, valid_x0 = 0;
        for (;;) {
            int32_t valid_x1 = x0 + tw >= w ? w : x0 + tw - o;
            for (int32_t ch = 0; ch < c; ch++)
                for (int32_t row = 0; row < th; row++)
                    memcpy(input + ((int64_t)ch * th + row) * tw,
                           lr[ch] + (int64_t)(y0 + row) * w + x0, sizeof(float) * (size_t)tw);
            sr->bytes_copied_in += sizeof(float) * (uint64_t)c * (uint64_t)th * (uint64_t)tw;
            nxe_tensor_desc out = {0};
            nxe_status status = nxe_executable_run_nocopy(sr->exe, &sr->tile_input, 1, &out, 1);
            if (status != NXE_OK)
                return sr_error_with_cause(status, "nxe_sr_process: running '%s'", sr->meta.name);
            sr->tiles++;
            const float *result = out.data;
            int64_t cols = (int64_t)(valid_x1 - valid_x0) * s;
            for (int32_t ch = 0; ch < c; ch++)
                for (int64_t y = (int64_t)valid_y0 * s; y < (int64_t)valid_y1 * s; y++)
                    memcpy(hr[ch] + y * w * s + (int64_t)valid_x0 * s,
                           result + ((int64_t)ch * out_h + y - (int64_t)y0 * s) * out_w +
                               ((int64_t)valid_x0 - x0) * s,
                           sizeof(float) * (size_t)cols);
            sr->bytes_copied_out += sizeof(float) * (uint64_t)c * (uint64_t)(valid_y1 - valid_y0) *
                                    (uint64_t)s * (uint64_t)cols;
            if (valid_x1 == w)
                break;
            x0 = x0 + tw - 2 * o < w - tw ? x0 + tw - 2 * o : w - tw;
            valid_x0 = valid_x1;
        }
        if (valid_y1 == h)
            break;
        y0 = y0 + th - 2 * o < h - th ? y0 + th - 2 * o : h - th;
        valid_y0 = valid_y1;
    }
    return NXE_OK;
}

/* ---- frames ---- */

typedef struct plane_view {
    uint8_t *data;
    int64_t stride;
    int32_t step; /* samples between neighbours in a row */
    int32_t width, height;
} plane_view;

/* Plane `plane` of a frame, offset to channel `offset` of an interleaved row. */
static plane_view view_of(const nxe_sr_frame *frame, const nxe_sr_format_desc *f, int32_t plane,
                          int32_t offset)
{
    plane_view v;
    int64_t row_bytes;
    sr_plane_geometry(f, plane, frame->width, frame->height, &v.width, &v.height, &row_bytes);
    v.data = (uint8_t *)frame->data[plane] + offset * f->sample_bytes;
    v.stride = frame->strides[plane];
    v.step = f->plane_samples[plane];
    return v;
}

static float max_code(const nxe_sr_format_desc *f)
{
    return (float)((1 << f->bits) - 1);
}

/* Samples to floats in [0, 1] of the largest code. */
static void load(const nxe_sr_format_desc *f, plane_view v, float *dst)
{
    if (f->sample_bytes == 2)
        nxe_image_load_u16(v.data, v.stride, v.step, v.width, v.height, 1.0f / max_code(f), dst,
                           v.width);
    else
        nxe_image_load_u8(v.data, v.stride, v.step, v.width, v.height, 1.0f / max_code(f), dst,
                          v.width);
}

static void store(const nxe_sr_format_desc *f, const float *src, plane_view v)
{
    int32_t max = (1 << f->bits) - 1;
    if (f->sample_bytes == 2)
        nxe_image_store_u16(src, v.width, v.width, v.height, (float)max, max, v.data, v.stride,
                            v.step);
    else
        nxe_image_store_u8(src, v.width, v.width, v.height, (float)max, max, v.data, v.stride,
                           v.step);
}

/* A chroma or alpha plane of the input, cubically upscaled into the output's plane. */
static void upscale_plane(nxe_sr *sr, const nxe_sr_format_desc *f, plane_view in, plane_view out,
                          float *lr, float *hr)
{
    int32_t s = sr->meta.scale;
    load(f, in, lr);
    nxe_image_upscale_cubic(lr, in.width, in.width, in.height, hr, out.width, out.width, out.height,
                            s, s, sr->scratch);
    store(f, hr, out);
}

/* R, G, B planes into a packed output frame, and its alpha cubically from the input's (through
 * the spare planes lr and hr). */
static void store_packed(nxe_sr *sr, const nxe_sr_format_desc *f, const nxe_sr_frame *in,
                         const nxe_sr_frame *out, float *const *rgb, float *lr, float *hr)
{
    store(f, rgb[0], view_of(out, f, 0, f->red));
    store(f, rgb[1], view_of(out, f, 0, f->green));
    store(f, rgb[2], view_of(out, f, 0, f->blue));
    if (f->alpha >= 0)
        upscale_plane(sr, f, view_of(in, f, 0, f->alpha), view_of(out, f, 0, f->alpha), lr, hr);
}

static nxe_yuv_coefficients coefficients(const nxe_sr_frame *frame, int32_t bits)
{
    return nxe_yuv_coefficients_for(frame->color_matrix == NXE_SR_MATRIX_BT709,
                                    frame->color_range == NXE_SR_RANGE_FULL, bits);
}

static void clamp_unit(float *plane, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        plane[i] = plane[i] < 0.0f ? 0.0f : plane[i] > 1.0f ? 1.0f : plane[i];
}

/* Luma model: Y through the network; chroma, or the Cb/Cr of RGB, and alpha cubically. */
static nxe_status process_luma(nxe_sr *sr, const nxe_sr_format_desc *f, const nxe_sr_frame *in,
                               const nxe_sr_frame *out)
{
    int32_t w = in->width, h = in->height, s = sr->meta.scale;
    int64_t wo = (int64_t)w * s, ho = (int64_t)h * s;
    float **lr = sr->lr, **hr = sr->hr;
    nxe_yuv_coefficients c = coefficients(in, 8);
    if (f->layout == NXE_SR_LAYOUT_PACKED) {
        load(f, view_of(in, f, 0, f->red), lr[1]);
        load(f, view_of(in, f, 0, f->green), lr[2]);
        load(f, view_of(in, f, 0, f->blue), lr[3]);
        nxe_image_rgb_to_yuv(&c, lr[1], lr[2], lr[3], lr[0], lr[4], lr[5], w, h, w);
    } else {
        load(f, view_of(in, f, 0, 0), lr[0]);
    }
    nxe_status status = run_tiles(sr, &lr[0], &hr[0]);
    if (status != NXE_OK)
        return status;
    if (f->layout == NXE_SR_LAYOUT_PACKED) {
        for (int p = 4; p <= 5; p++)
            nxe_image_upscale_cubic(lr[p], w, w, h, hr[p], wo, (int32_t)wo, (int32_t)ho, s, s,
                                    sr->scratch);
        nxe_image_yuv_to_rgb(&c, hr[0], hr[4], hr[5], hr[1], hr[2], hr[3], (int32_t)wo, (int32_t)ho,
                             wo);
        store_packed(sr, f, in, out, &hr[1], lr[1], hr[1]);
        return NXE_OK;
    }
    store(f, hr[0], view_of(out, f, 0, 0));
    if (f->layout == NXE_SR_LAYOUT_PLANAR)
        for (int32_t p = 1; p <= 2; p++)
            upscale_plane(sr, f, view_of(in, f, p, 0), view_of(out, f, p, 0), lr[1], hr[1]);
    else if (f->layout == NXE_SR_LAYOUT_SEMIPLANAR)
        for (int32_t k = 0; k <= 1; k++)
            upscale_plane(sr, f, view_of(in, f, 1, k), view_of(out, f, 1, k), lr[1], hr[1]);
    return NXE_OK;
}

/* RGB model: RGB through the network, from and back to the frame's own layout. */
static nxe_status process_rgb(nxe_sr *sr, const nxe_sr_format_desc *f, const nxe_sr_frame *in,
                              const nxe_sr_frame *out)
{
    int32_t w = in->width, h = in->height, s = sr->meta.scale;
    int64_t wo = (int64_t)w * s, ho = (int64_t)h * s;
    float **lr = sr->lr, **hr = sr->hr;
    nxe_yuv_coefficients c = coefficients(in, f->bits);
    nxe_yuv_coefficients gray = nxe_yuv_coefficients_for(0, 1, 8);
    switch (f->layout) {
    case NXE_SR_LAYOUT_PACKED:
        load(f, view_of(in, f, 0, f->red), lr[0]);
        load(f, view_of(in, f, 0, f->green), lr[1]);
        load(f, view_of(in, f, 0, f->blue), lr[2]);
        break;
    case NXE_SR_LAYOUT_GRAY:
        load(f, view_of(in, f, 0, 0), lr[0]);
        memcpy(lr[1], lr[0], sizeof(float) * (size_t)w * (size_t)h);
        memcpy(lr[2], lr[0], sizeof(float) * (size_t)w * (size_t)h);
        break;
    default: {
        /* Chroma to the luma grid (cubic on the same half-pixel centres), then to RGB. */
        load(f, view_of(in, f, 0, 0), lr[3]);
        for (int32_t k = 0; k <= 1; k++) {
            plane_view v = f->layout == NXE_SR_LAYOUT_SEMIPLANAR ? view_of(in, f, 1, k)
                                                                 : view_of(in, f, 1 + k, 0);
            load(f, v, lr[0]);
            nxe_image_upscale_cubic(lr[0], v.width, v.width, v.height, lr[4 + k], w, w, h,
                                    f->chroma_x, f->chroma_y, sr->scratch);
        }
        nxe_image_yuv_to_rgb(&c, lr[3], lr[4], lr[5], lr[0], lr[1], lr[2], w, h, w);
        for (int p = 0; p < 3; p++)
            clamp_unit(lr[p], (int64_t)w * h);
        break;
    }
    }
    nxe_status status = run_tiles(sr, &lr[0], &hr[0]);
    if (status != NXE_OK)
        return status;
    switch (f->layout) {
    case NXE_SR_LAYOUT_PACKED: store_packed(sr, f, in, out, &hr[0], lr[0], hr[3]); break;
    case NXE_SR_LAYOUT_GRAY:
        for (int p = 0; p < 3; p++)
            clamp_unit(hr[p], wo * ho);
        nxe_image_rgb_to_yuv(&gray, hr[0], hr[1], hr[2], hr[3], hr[4], hr[5], (int32_t)wo,
                             (int32_t)ho, wo);
        store(f, hr[3], view_of(out, f, 0, 0));
        break;
    default:
        for (int p = 0; p < 3; p++)
            clamp_unit(hr[p], wo * ho);
        nxe_image_rgb_to_yuv(&c, hr[0], hr[1], hr[2], hr[3], hr[4], hr[5], (int32_t)wo, (int32_t)ho,
                             wo);
        store(f, hr[3], view_of(out, f, 0, 0));
        for (int32_t k = 0; k <= 1; k++) {
            plane_view v = f->layout == NXE_SR_LAYOUT_SEMIPLANAR ? view_of(out, f, 1, k)
                                                                 : view_of(out, f, 1 + k, 0);
            nxe_image_downsample_box(hr[4 + k], wo, (int32_t)wo, (int32_t)ho, hr[0], v.width,
                                     v.width, v.height, f->chroma_x, f->chroma_y);
            store(f, hr[0], v);
        }
        break;
    }
    return NXE_OK;
}

NXE_SR_API nxe_status nxe_sr_process(nxe_sr *sr, const nxe_sr_frame *input,
                                     const nxe_sr_frame *output)
{
    if (!sr)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_process: sr is NULL");
    const nxe_sr_format_desc *f, *out_format;
    nxe_status status = sr_check_frame(input, "input", &f);
    if (status == NXE_OK)
        status = sr_check_frame(output, "output", &out_format);
    if (status != NXE_OK)
        return status;
    int32_t s = sr->meta.scale;
    if (out_format != f)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: the output frame is %s but the input is %s; they must "
                        "match",
                        out_format->name, f->name);
    if ((int64_t)output->width != (int64_t)input->width * s ||
        (int64_t)output->height != (int64_t)input->height * s)
        return sr_error(NXE_ERROR_SHAPE_MISMATCH,
                        "nxe_sr_process: the output frame is %dx%d; a %dx%d input at scale %d "
                        "needs %lldx%lld",
                        output->width, output->height, input->width, input->height, s,
                        (long long)input->width * s, (long long)input->height * s);
    /* Reconfiguring releases the executable and buffers a frame in progress would be using:
     * one frame at a time, from configuration to the last sample stored. */
    pthread_mutex_lock(&sr->lock);
    status = configure(sr, input->width, input->height);
    if (status == NXE_OK)
        status = sr->meta.channels == 1 ? process_luma(sr, f, input, output)
                                        : process_rgb(sr, f, input, output);
    if (status == NXE_OK)
        sr->frames++;
    pthread_mutex_unlock(&sr->lock);
    return status;
}
