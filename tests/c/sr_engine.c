/* sr_engine.c — the engine's "super_resolution" kind as a C user registers it: RGB and RGBA
 * images through an engine equal nxe_sr_process of the same frames byte for byte; bad requests
 * fail alone with their status and a message; the model's fingerprint and resident bytes are
 * known for a built-in name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_engine.h>
#include <nxe/nxe_sr.h>

static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "sr_engine.c:%d: %s failed (last error: %s / %s)\n", __LINE__, #cond,  \
                    nxe_last_error(), nxe_sr_last_error());                                        \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define THREADS 2

static uint8_t *random_image(int32_t w, int32_t h, int32_t c, unsigned seed)
{
    size_t n = (size_t)w * (size_t)h * (size_t)c;
    uint8_t *image = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        image[i] = (uint8_t)(seed >> 16);
    }
    return image;
}

/* The image upscaled by a session of its own, as the kind does it. */
static uint8_t *direct(const char *model, const uint8_t *image, int32_t w, int32_t h, int32_t c,
                       int32_t *scale)
{
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.num_threads = THREADS;
    nxe_sr *sr = NULL;
    EXPECT(nxe_sr_open(model, &options, &sr) == NXE_OK);
    if (!sr)
        return NULL;
    nxe_sr_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT(nxe_sr_get_info(sr, &info) == NXE_OK);
    *scale = info.scale;
    int32_t s = info.scale;
    uint8_t *out = calloc((size_t)w * s * (size_t)h * s * (size_t)c, 1);
    nxe_sr_frame in = NXE_SR_FRAME_INIT, result = NXE_SR_FRAME_INIT;
    in.format = result.format = c == 3 ? NXE_SR_FORMAT_RGB24 : NXE_SR_FORMAT_RGBA;
    in.width = w;
    in.height = h;
    in.data[0] = (void *)image;
    in.strides[0] = (int64_t)w * c;
    result.width = w * s;
    result.height = h * s;
    result.data[0] = out;
    result.strides[0] = (int64_t)w * s * c;
    EXPECT(nxe_sr_process(sr, &in, &result) == NXE_OK);
    EXPECT(nxe_sr_get_info(sr, &info) == NXE_OK);
    EXPECT(info.resident_bytes > 0);
    nxe_sr_release(sr);
    return out;
}

/* Submits one request and waits for it; the caller releases it. */
static nxe_engine_request *run(nxe_engine *engine, const char *model, const nxe_engine_io *inputs,
                               int32_t count)
{
    nxe_engine_request *request = NULL;
    EXPECT(nxe_engine_submit(engine, model, inputs, count, NULL, &request) == NXE_OK);
    if (request)
        EXPECT(nxe_engine_request_wait(request, 60.0) == NXE_OK);
    return request;
}

static nxe_engine_io image_io(const char *name, uint8_t *data, int32_t ndim, const int64_t *shape)
{
    nxe_engine_io io;
    memset(&io, 0, sizeof io);
    io.name = name;
    io.tensor.data = data;
    io.tensor.data_size = 1;
    io.tensor.ndim = ndim;
    io.tensor.dtype_code = NXE_DL_UINT;
    io.tensor.dtype_bits = 8;
    for (int32_t i = 0; i < ndim; i++) {
        io.tensor.shape[i] = shape[i];
        io.tensor.data_size *= (size_t)shape[i];
    }
    return io;
}

static void check_matches_direct(nxe_engine *engine, int32_t w, int32_t h, int32_t c)
{
    uint8_t *image = random_image(w, h, c, (unsigned)(w * 31 + c));
    int32_t scale = 0;
    uint8_t *want = direct("espcn-x2", image, w, h, c, &scale);
    int64_t shape[3] = {h, w, c};
    nxe_engine_io in = image_io("image", image, 3, shape);
    nxe_engine_request *request = run(engine, "up", &in, 1);
    EXPECT(nxe_engine_request_status(request) == NXE_OK);
    int32_t count = 0;
    EXPECT(nxe_engine_request_output_count(request, &count) == NXE_OK && count == 1);
    nxe_engine_io out;
    EXPECT(nxe_engine_request_output(request, 0, &out) == NXE_OK);
    EXPECT(strcmp(out.name, "image") == 0);
    EXPECT(out.tensor.dtype_code == NXE_DL_UINT && out.tensor.dtype_bits == 8);
    EXPECT(out.tensor.ndim == 3 && out.tensor.shape[0] == (int64_t)h * scale &&
           out.tensor.shape[1] == (int64_t)w * scale && out.tensor.shape[2] == c);
    size_t bytes = (size_t)w * scale * (size_t)h * scale * (size_t)c;
    EXPECT(want && out.tensor.data && out.tensor.data_size >= bytes &&
           memcmp(out.tensor.data, want, bytes) == 0);
    nxe_engine_request_release(request);
    free(want);
    free(image);
}

/* A request that must fail alone with `status` and a message containing `words`. */
static void check_refused(nxe_engine *engine, const nxe_engine_io *inputs, int32_t count,
                          nxe_status status, const char *words)
{
    nxe_engine_request *request = run(engine, "up", inputs, count);
    EXPECT(nxe_engine_request_status(request) == status);
    const char *message = nxe_engine_request_error(request);
    EXPECT(message && strstr(message, words));
    if (message && !strstr(message, words))
        fprintf(stderr, "  message: %s (expected '%s')\n", message, words);
    nxe_engine_request_release(request);
}

static void check_bad_requests(nxe_engine *engine)
{
    uint8_t *image = random_image(8, 8, 4, 7);
    int64_t good[3] = {8, 8, 3};
    nxe_engine_io wrong_name = image_io("pixels", image, 3, good);
    check_refused(engine, &wrong_name, 1, NXE_ERROR_INVALID_ARGUMENT, "'image'");
    nxe_engine_io two[2] = {image_io("image", image, 3, good), image_io("mask", image, 3, good)};
    check_refused(engine, two, 2, NXE_ERROR_INVALID_ARGUMENT, "one input");
    nxe_engine_io wrong_dtype = image_io("image", image, 3, (int64_t[]){4, 8, 2});
    wrong_dtype.tensor.dtype_code = NXE_DL_INT;
    check_refused(engine, &wrong_dtype, 1, NXE_ERROR_DTYPE_MISMATCH, "uint8");
    nxe_engine_io rank2 = image_io("image", image, 2, (int64_t[]){8, 24});
    check_refused(engine, &rank2, 1, NXE_ERROR_SHAPE_MISMATCH, "rank 2");
    nxe_engine_io two_channels = image_io("image", image, 3, (int64_t[]){8, 16, 2});
    check_refused(engine, &two_channels, 1, NXE_ERROR_SHAPE_MISMATCH, "2 channels");
    uint8_t *row = random_image(40000, 1, 3, 9);
    nxe_engine_io too_wide = image_io("image", row, 3, (int64_t[]){1, 40000, 3});
    check_refused(engine, &too_wide, 1, NXE_ERROR_SHAPE_MISMATCH, "1 to 32768");
    free(row);
    free(image);
    /* The model still serves after them. */
    check_matches_direct(engine, 9, 5, 3);
}

static void check_model_state(nxe_engine *engine)
{
    nxe_engine_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT(nxe_engine_model_info_by_name(engine, "up", &info) == NXE_OK);
    EXPECT(strcmp(info.kind, "super_resolution") == 0);
    EXPECT(info.state == NXE_MODEL_RESIDENT);
    EXPECT(info.resident_bytes > 0);
    uint8_t zero[32] = {0};
    EXPECT(memcmp(info.fingerprint, zero, sizeof zero) != 0);
}

static void check_bad_models(nxe_engine *engine)
{
    nxe_engine_model_spec specs[2] = {NXE_ENGINE_MODEL_SPEC_INIT, NXE_ENGINE_MODEL_SPEC_INIT};
    specs[0].name = "up";
    specs[0].kind = "super_resolution";
    specs[0].path = "espcn-x2";
    nxe_engine_option precision = {"precision", "fp32"};
    specs[0].options = &precision;
    specs[0].num_options = 1;
    /* An unknown built-in name cannot be fingerprinted: apply changes nothing. */
    specs[1] = specs[0];
    specs[1].name = "nowhere";
    specs[1].path = "no-such-model";
    specs[1].options = NULL;
    specs[1].num_options = 0;
    EXPECT(nxe_engine_apply(engine, specs, 2, NULL) != NXE_OK);
    EXPECT(strstr(nxe_last_error(), "nowhere"));
    int32_t count = 0;
    EXPECT(nxe_engine_model_count(engine, &count) == NXE_OK && count == 1);
    /* A bad option fails the load, and with it the request, with the option's name. */
    nxe_engine_option tile = {"tile_size", "big"};
    specs[1].path = "espcn-x2";
    specs[1].options = &tile;
    specs[1].num_options = 1;
    EXPECT(nxe_engine_add_model(engine, &specs[1]) == NXE_OK);
    int64_t shape[3] = {4, 4, 3};
    uint8_t pixels[48] = {0};
    nxe_engine_io in = image_io("image", pixels, 3, shape);
    nxe_engine_request *request = NULL;
    EXPECT(nxe_engine_submit(engine, "nowhere", &in, 1, NULL, &request) == NXE_OK);
    EXPECT(nxe_engine_request_wait(request, 60.0) == NXE_OK);
    EXPECT(nxe_engine_request_status(request) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_engine_request_error(request), "tile_size"));
    nxe_engine_request_release(request);
    nxe_engine_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT(nxe_engine_model_info_by_name(engine, "nowhere", &info) == NXE_OK);
    EXPECT(info.state == NXE_MODEL_FAILED && strstr(info.error, "tile_size"));
    EXPECT(nxe_engine_remove_model(engine, "nowhere") == NXE_OK);
}

int main(void)
{
    EXPECT(nxe_sr_engine_register(NULL) == NXE_ERROR_INVALID_ARGUMENT);
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.num_threads = THREADS;
    nxe_engine *engine = NULL;
    EXPECT(nxe_engine_create(&options, &engine) == NXE_OK);
    if (!engine)
        return 1;
    EXPECT(nxe_sr_engine_register(engine) == NXE_OK);
    /* A kind is registered once per engine. */
    EXPECT(nxe_sr_engine_register(engine) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "super_resolution"));

    nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
    spec.name = "up";
    spec.kind = "super_resolution";
    spec.path = "espcn-x2";
    EXPECT(nxe_engine_add_model(engine, &spec) == NXE_OK);
    check_matches_direct(engine, 37, 23, 3);
    check_matches_direct(engine, 16, 31, 4);
    check_model_state(engine);
    check_bad_requests(engine);
    check_bad_models(engine);
    nxe_engine_release(engine);
    if (failures)
        fprintf(stderr, "sr_engine.c: %d failures\n", failures);
    return failures != 0;
}
