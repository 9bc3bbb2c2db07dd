/* engine.c — the multi-model engine (nxe_engine.h) as a C host drives it: a kind registered
 * from C (batching, request tokens, the pipeline, cancellation checks), the built-in "tensor"
 * kind on model files and binaries written here (every answer compared with a direct
 * nxe_executable_run of the same file), the bounded queue, deadlines, cancellation, callbacks,
 * desired-state apply, residency (LRU order, the byte budget, pinning, idle unloading,
 * evict_policy none), model files corrupted or deleted on disk, many submitting threads, and
 * bad arguments on every entry point. Run under ASan/LSan and TSan in CI; a deadlock fails by
 * the meson test timeout. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, nanosleep */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nxe/nxe_engine.h>

#include "f32_tensor.h"

static int checks;
static int failures;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, const char *detail, int line)
{
    pthread_mutex_lock(&report_lock);
    fprintf(stderr, "engine.c:%d: %s%s%s\n", line, what, detail ? ": " : "", detail ? detail : "");
    failures++;
    pthread_mutex_unlock(&report_lock);
}

static void count_check(void)
{
    pthread_mutex_lock(&report_lock);
    checks++;
    pthread_mutex_unlock(&report_lock);
}

static void expect_status(nxe_status got, nxe_status expected, const char *needle, const char *what,
                          int line)
{
    count_check();
    if (got != expected) {
        char detail[1400];
        snprintf(detail, sizeof detail, "returned %s, expected %s (last error: \"%s\")",
                 nxe_status_name(got), nxe_status_name(expected), nxe_last_error());
        fail(what, detail, line);
    } else if (expected != NXE_OK && needle && !strstr(nxe_last_error(), needle)) {
        char detail[1400];
        snprintf(detail, sizeof detail, "message \"%s\" does not mention \"%s\"", nxe_last_error(),
                 needle);
        fail(what, detail, line);
    }
}

#define EXPECT_OK(call) expect_status((call), NXE_OK, NULL, #call, __LINE__)
#define EXPECT_FAIL(call, status, needle) expect_status((call), (status), (needle), #call, __LINE__)
#define EXPECT_TRUE(cond)                                                                          \
    do {                                                                                           \
        count_check();                                                                             \
        if (!(cond))                                                                               \
            fail(#cond " is false", NULL, __LINE__);                                               \
    } while (0)

static void sleep_s(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - floor(seconds)) * 1e9)};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char folder[64];

static const char *path_of(const char *name, char *buffer, size_t size)
{
    snprintf(buffer, size, "%s/%s", folder, name);
    return buffer;
}

/* ---- model files: y[2, n] = relu(x[2, 3] @ w[3, n] + b[n]), weights from a seed ---- */

#define X_COUNT 6

static void fill(float *values, size_t count, uint32_t seed)
{
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        values[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

static nxe_graph *build_graph(nxe_context *ctx, int64_t n, uint32_t seed)
{
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    const int64_t x_shape[2] = {2, 3}, w_shape[2] = {3, n}, b_shape[1] = {n}, y_shape[2] = {2, n};
    nxe_tensor *x, *w, *b, *t, *s, *y;
    EXPECT_OK(add_f32_tensor(graph, "x", NXE_TENSOR_INPUT, 2, x_shape, &x));
    EXPECT_OK(add_f32_tensor(graph, "w", NXE_TENSOR_CONSTANT, 2, w_shape, &w));
    EXPECT_OK(add_f32_tensor(graph, "b", NXE_TENSOR_CONSTANT, 1, b_shape, &b));
    EXPECT_OK(add_f32_tensor(graph, "t", NXE_TENSOR_TRANSIENT, -1, NULL, &t));
    EXPECT_OK(add_f32_tensor(graph, "s", NXE_TENSOR_TRANSIENT, -1, NULL, &s));
    EXPECT_OK(add_f32_tensor(graph, "y", NXE_TENSOR_OUTPUT, 2, y_shape, &y));
    float *values = malloc(sizeof(float) * (size_t)(3 * n));
    fill(values, (size_t)(3 * n), seed);
    EXPECT_OK(nxe_tensor_set_data(w, values, sizeof(float) * (size_t)(3 * n)));
    fill(values, (size_t)n, seed + 1);
    EXPECT_OK(nxe_tensor_set_data(b, values, sizeof(float) * (size_t)n));
    free(values);
    nxe_op *matmul, *add, *relu;
    EXPECT_OK(nxe_graph_add_op(graph, "MatMul", "matmul", &matmul));
    nxe_tensor *mm_in[2] = {x, w};
    EXPECT_OK(nxe_op_bind_inputs(matmul, mm_in, 2));
    EXPECT_OK(nxe_op_bind_outputs(matmul, &t, 1));
    EXPECT_OK(nxe_graph_add_op(graph, "Add", "add", &add));
    nxe_tensor *add_in[2] = {t, b};
    EXPECT_OK(nxe_op_bind_inputs(add, add_in, 2));
    EXPECT_OK(nxe_op_bind_outputs(add, &s, 1));
    EXPECT_OK(nxe_graph_add_op(graph, "Relu", "relu", &relu));
    EXPECT_OK(nxe_op_bind_inputs(relu, &s, 1));
    EXPECT_OK(nxe_op_bind_outputs(relu, &y, 1));
    return graph;
}

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    EXPECT_TRUE(file != NULL);
    if (!file)
        return;
    EXPECT_TRUE(fwrite(data, 1, size, file) == size);
    fclose(file);
}

/* Writes the model (.nxm) or its compiled binary (.nxb) to `path`. */
static void write_model(const char *path, int64_t n, uint32_t seed, bool binary)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *graph = build_graph(ctx, n, seed);
    size_t size = 0;
    if (binary)
        EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, NULL, &size));
    else
        EXPECT_OK(nxe_graph_save_model(graph, NULL, NULL, &size));
    void *buffer = malloc(size);
    if (binary)
        EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, buffer, &size));
    else
        EXPECT_OK(nxe_graph_save_model(graph, NULL, buffer, &size));
    write_bytes(path, buffer, size);
    free(buffer);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
}

/* The reference: the same file opened, compiled and run directly. */
static void direct_run(const char *path, const float *x, float *y, int64_t n)
{
    nxe_model *model = NULL;
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_model_open_file(path, NULL, &model));
    EXPECT_OK(nxe_context_create(&ctx));
    EXPECT_OK(nxe_model_build_graph(model, ctx, &graph));
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    EXPECT_OK(nxe_graph_compile(graph, &options, &exe));
    nxe_tensor_desc in = {(void *)x, sizeof(float) * X_COUNT, 2, NXE_DL_FLOAT, 32, 0, {2, 3}};
    nxe_tensor_desc out = {y, sizeof(float) * (size_t)(2 * n), 2, NXE_DL_FLOAT, 32, 0, {2, n}};
    EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
    nxe_executable_release(exe);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    nxe_model_release(model);
}

static nxe_engine_io x_input(const float *x)
{
    nxe_engine_io io = {"x", {(void *)x, sizeof(float) * X_COUNT, 2, NXE_DL_FLOAT, 32, 0, {2, 3}}};
    return io;
}

static nxe_engine_model_spec tensor_spec(const char *name, const char *path)
{
    nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
    spec.name = name;
    spec.kind = "tensor";
    spec.path = path;
    return spec;
}

/* Runs x through `model` and checks the answer against the direct run of `path`. */
static void check_tensor_answer(nxe_engine *engine, const char *model, const char *path, int64_t n,
                                uint32_t seed, int line)
{
    float x[X_COUNT];
    fill(x, X_COUNT, seed);
    float *expected = calloc((size_t)(2 * n), sizeof(float));
    direct_run(path, x, expected, n);
    nxe_engine_io in = x_input(x);
    nxe_engine_request *request = NULL;
    nxe_status status = nxe_engine_submit(engine, model, &in, 1, NULL, &request);
    if (status != NXE_OK) {
        fail("submit", nxe_last_error(), line);
        free(expected);
        return;
    }
    EXPECT_OK(nxe_engine_request_wait(request, -1));
    if (nxe_engine_request_status(request) != NXE_OK)
        fail("request failed", nxe_engine_request_error(request), line);
    nxe_engine_io out = {0};
    EXPECT_OK(nxe_engine_request_output(request, 0, &out));
    bool same = out.tensor.data && out.tensor.data_size == sizeof(float) * (size_t)(2 * n) &&
                strcmp(out.name, "y") == 0 && out.tensor.ndim == 2 && out.tensor.shape[1] == n &&
                memcmp(out.tensor.data, expected, out.tensor.data_size) == 0;
    count_check();
    if (!same)
        fail("the engine's answer differs from the direct run", model, line);
    nxe_engine_request_release(request);
    free(expected);
}

static int32_t model_state(nxe_engine *engine, const char *name)
{
    nxe_engine_model_info info = {.struct_size = sizeof info};
    if (nxe_engine_model_info_by_name(engine, name, &info) != NXE_OK)
        return -1;
    return info.state;
}

/* ---- a kind registered from C: y = x * scale, with a gate that holds the worker ---- */

static pthread_mutex_t toy_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t toy_cond = PTHREAD_COND_INITIALIZER;
static bool toy_gate_closed;
static bool toy_in_encoder;
static int toy_batch_sizes[64];
static int toy_batches;
static int toy_frontends, toy_heads, toy_releases, toy_loads, toy_unloads;
static pthread_t toy_worker;

typedef struct toy_instance {
    float scale;
    uint64_t bytes;
} toy_instance;

static const char *find_option(const nxe_engine_option *options, int32_t count, const char *key)
{
    for (int32_t i = 0; i < count; i++)
        if (strcmp(options[i].key, key) == 0)
            return options[i].value;
    return NULL;
}

static nxe_status toy_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    if (strstr(args->path, "broken"))
        return nxe_engine_set_error(NXE_ERROR_FORMAT, "toy: this model is broken");
    toy_instance *toy = malloc(sizeof *toy);
    const char *scale = find_option(args->options, args->num_options, "scale");
    const char *bytes = find_option(args->options, args->num_options, "bytes");
    toy->scale = scale ? strtof(scale, NULL) : 1.0f;
    toy->bytes = bytes ? strtoull(bytes, NULL, 10) : 1000;
    pthread_mutex_lock(&toy_lock);
    toy_loads++;
    pthread_mutex_unlock(&toy_lock);
    *instance = toy;
    return NXE_OK;
}

static void toy_unload(void *user_data, void *instance)
{
    (void)user_data;
    pthread_mutex_lock(&toy_lock);
    toy_unloads++;
    pthread_mutex_unlock(&toy_lock);
    free(instance);
}

static uint64_t toy_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    return ((toy_instance *)instance)->bytes;
}

static nxe_status toy_fingerprint(void *user_data, const char *path,
                                  const nxe_engine_option *options, int32_t num_options,
                                  uint8_t fingerprint[32])
{
    (void)user_data;
    (void)options;
    (void)num_options;
    memset(fingerprint, 0, 32);
    memcpy(fingerprint, path, strlen(path) < 32 ? strlen(path) : 32);
    return NXE_OK;
}

static int64_t toy_tokens(void *user_data, void *instance, const nxe_engine_batch *batch,
                          int32_t request)
{
    (void)user_data;
    (void)instance;
    const nxe_engine_io *inputs;
    int32_t count;
    if (nxe_engine_batch_inputs(batch, request, &inputs, &count) != NXE_OK || count < 1)
        return 1;
    return inputs[0].tensor.shape[0];
}

static nxe_status toy_frontend(void *user_data, void *instance, nxe_engine_batch *batch,
                               void **state)
{
    (void)user_data;
    (void)instance;
    (void)batch;
    pthread_mutex_lock(&toy_lock);
    toy_frontends++;
    toy_worker = pthread_self();
    pthread_mutex_unlock(&toy_lock);
    int *marker = malloc(sizeof *marker);
    *marker = 7;
    *state = marker;
    return NXE_OK;
}

static nxe_status toy_encoder(void *user_data, void *instance, nxe_engine_batch *batch, void *state)
{
    (void)user_data;
    const toy_instance *toy = instance;
    if (!state || *(int *)state != 7)
        return nxe_engine_set_error(NXE_ERROR_INTERNAL, "toy: the frontend's state is lost");
    pthread_mutex_lock(&toy_lock);
    toy_in_encoder = true;
    pthread_cond_broadcast(&toy_cond);
    while (toy_gate_closed)
        pthread_cond_wait(&toy_cond, &toy_lock);
    toy_in_encoder = false;
    if (toy_batches < 64)
        toy_batch_sizes[toy_batches] = nxe_engine_batch_size(batch);
    toy_batches++;
    pthread_mutex_unlock(&toy_lock);
    for (int32_t r = 0; r < nxe_engine_batch_size(batch); r++) {
        const char *failing = nxe_engine_batch_option(batch, r, "fail");
        if (failing && strcmp(failing, "encoder") == 0)
            return nxe_engine_set_error(NXE_ERROR_RUNTIME, "toy: asked to fail in the encoder");
        if (failing && strcmp(failing, "request") == 0) {
            nxe_engine_batch_fail(batch, r, NXE_ERROR_RUNTIME, "toy: asked to fail this one");
            continue;
        }
        const char *steps = nxe_engine_batch_option(batch, r, "steps");
        bool stopped = false;
        for (int step = 0; steps && step < atoi(steps) && !stopped; step++) {
            stopped = nxe_engine_batch_cancelled(batch, r);
            sleep_s(0.001);
        }
        if (stopped)
            continue;
        const nxe_engine_io *inputs;
        int32_t count;
        nxe_engine_batch_inputs(batch, r, &inputs, &count);
        nxe_tensor_desc out;
        nxe_status status = nxe_engine_batch_add_output(batch, r, "y", NXE_DTYPE_F32, 1,
                                                        inputs[0].tensor.shape, &out);
        if (status != NXE_OK)
            return status;
        const float *x = inputs[0].tensor.data;
        for (int64_t i = 0; i < inputs[0].tensor.shape[0]; i++)
            ((float *)out.data)[i] = x[i] * toy->scale;
    }
    return NXE_OK;
}

static nxe_status toy_head(void *user_data, void *instance, nxe_engine_batch *batch, void *state)
{
    (void)user_data;
    (void)instance;
    (void)batch;
    (void)state;
    pthread_mutex_lock(&toy_lock);
    toy_heads++;
    pthread_mutex_unlock(&toy_lock);
    return NXE_OK;
}

static void toy_release_state(void *user_data, void *state)
{
    (void)user_data;
    pthread_mutex_lock(&toy_lock);
    toy_releases++;
    pthread_mutex_unlock(&toy_lock);
    free(state);
}

static nxe_engine_kind toy_kind(void)
{
    nxe_engine_kind kind = {0};
    kind.struct_size = sizeof kind;
    kind.name = "toy";
    kind.batchable = 1;
    kind.load = toy_load;
    kind.unload = toy_unload;
    kind.resident_bytes = toy_resident_bytes;
    kind.fingerprint = toy_fingerprint;
    kind.request_tokens = toy_tokens;
    kind.frontend = toy_frontend;
    kind.encoder = toy_encoder;
    kind.head = toy_head;
    kind.release_state = toy_release_state;
    return kind;
}

static void close_gate(void)
{
    pthread_mutex_lock(&toy_lock);
    toy_gate_closed = true;
    pthread_mutex_unlock(&toy_lock);
}

static void open_gate(void)
{
    pthread_mutex_lock(&toy_lock);
    toy_gate_closed = false;
    pthread_cond_broadcast(&toy_cond);
    pthread_mutex_unlock(&toy_lock);
}

/* Waits until the worker sits in the toy encoder behind the gate. */
static void wait_in_encoder(void)
{
    pthread_mutex_lock(&toy_lock);
    while (!toy_in_encoder)
        pthread_cond_wait(&toy_cond, &toy_lock);
    pthread_mutex_unlock(&toy_lock);
}

static nxe_engine_model_spec toy_spec(const char *name, const char *scale)
{
    static nxe_engine_option options[8][2];
    static int next;
    nxe_engine_option *o = options[next++ % 8];
    o[0] = (nxe_engine_option){"scale", scale};
    nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
    spec.name = name;
    spec.kind = "toy";
    spec.path = name;
    spec.options = o;
    spec.num_options = 1;
    return spec;
}

static nxe_engine *toy_engine(const nxe_engine_options *options)
{
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(options, &engine));
    nxe_engine_kind kind = toy_kind();
    EXPECT_OK(nxe_engine_register_kind(engine, &kind));
    return engine;
}

static nxe_engine_request *submit_toy(nxe_engine *engine, const char *model, const float *x,
                                      int64_t n, const nxe_engine_submit_options *options)
{
    nxe_engine_io in = {"x", {(void *)x, sizeof(float) * (size_t)n, 1, NXE_DL_FLOAT, 32, 0, {n}}};
    nxe_engine_request *request = NULL;
    EXPECT_OK(nxe_engine_submit(engine, model, &in, 1, options, &request));
    return request;
}

/* The request finished with `status`; for NXE_OK its y is x * scale. */
static void expect_toy_result(nxe_engine_request *request, nxe_status status, const float *x,
                              int64_t n, float scale, int line)
{
    count_check();
    if (!request) {
        fail("no request", NULL, line);
        return;
    }
    if (nxe_engine_request_wait(request, 30) != NXE_OK) {
        fail("the request did not finish", NULL, line);
        return;
    }
    if (nxe_engine_request_status(request) != status) {
        char detail[700];
        snprintf(detail, sizeof detail, "status %s, expected %s (\"%s\")",
                 nxe_status_name(nxe_engine_request_status(request)), nxe_status_name(status),
                 nxe_engine_request_error(request));
        fail("request status", detail, line);
        return;
    }
    if (status != NXE_OK)
        return;
    nxe_engine_io out = {0};
    if (nxe_engine_request_output(request, 0, &out) != NXE_OK || out.tensor.shape[0] != n) {
        fail("request output", nxe_last_error(), line);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (((const float *)out.tensor.data)[i] != x[i] * scale) {
            fail("toy output is not x * scale", NULL, line);
            return;
        }
}

/* ---- tests ---- */

static void test_tensor_kind_answers_as_a_direct_run(void)
{
    char nxm[128], nxb[128];
    path_of("model.nxm", nxm, sizeof nxm);
    path_of("model.nxb", nxb, sizeof nxb);
    write_model(nxm, 4, 11, false);
    write_model(nxb, 4, 11, true);
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(NULL, &engine));
    nxe_engine_model_spec spec = tensor_spec("model", nxm);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = tensor_spec("binary", nxb);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    nxe_engine_option relax = {"relax", "true"};
    spec = tensor_spec("relaxed", nxm);
    spec.options = &relax;
    spec.num_options = 1;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    EXPECT_TRUE(model_state(engine, "model") == NXE_MODEL_UNLOADED);
    for (uint32_t seed = 1; seed <= 3; seed++) {
        check_tensor_answer(engine, "model", nxm, 4, seed, __LINE__);
        check_tensor_answer(engine, "binary", nxm, 4, seed, __LINE__);
    }

    /* The relaxed model answers within bf16's bound of the fp32 run. */
    float x[X_COUNT], expected[8];
    fill(x, X_COUNT, 5);
    direct_run(nxm, x, expected, 4);
    nxe_engine_io in = x_input(x);
    nxe_engine_request *request = NULL;
    EXPECT_OK(nxe_engine_submit(engine, "relaxed", &in, 1, NULL, &request));
    EXPECT_OK(nxe_engine_request_wait(request, -1));
    EXPECT_TRUE(nxe_engine_request_status(request) == NXE_OK);
    nxe_engine_io out = {0};
    EXPECT_OK(nxe_engine_request_output(request, 0, &out));
    for (int i = 0; out.tensor.data && i < 8; i++)
        EXPECT_TRUE(fabsf(((float *)out.tensor.data)[i] - expected[i]) <= 2e-2f);
    nxe_engine_request_release(request);

    /* Model info: resident with its measured bytes; the fingerprint is the file's, and the
     * binary's is the model it embeds. */
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "model", &info));
    EXPECT_TRUE(info.state == NXE_MODEL_RESIDENT && info.requests == 3 && info.loads == 1 &&
                info.queued == 0 && info.last_used > 1e9 && strcmp(info.kind, "tensor") == 0);
    nxe_model *file = NULL;
    uint8_t fingerprint[32];
    EXPECT_OK(nxe_model_open_file(nxm, NULL, &file));
    EXPECT_OK(nxe_model_fingerprint(file, fingerprint));
    nxe_model_release(file);
    EXPECT_TRUE(memcmp(info.fingerprint, fingerprint, 32) == 0);
    nxe_engine_model_info binary = {.struct_size = sizeof binary};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "binary", &binary));
    EXPECT_TRUE(memcmp(binary.fingerprint, fingerprint, 32) == 0);
    /* The measured size covers at least the weights, the arena and a run's staging. */
    EXPECT_TRUE(info.resident_bytes >= (3 * 4 + 4) * sizeof(float));
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.submitted == 7 && stats.completed == 7 && stats.failed == 0 &&
                stats.queue_depth == 0 && stats.resident_models == 3 && stats.loads == 3 &&
                stats.queue_capacity == NXE_ENGINE_DEFAULT_QUEUE_CAPACITY);
    uint64_t sum = 0;
    int32_t count = 0;
    EXPECT_OK(nxe_engine_model_count(engine, &count));
    EXPECT_TRUE(count == 3);
    for (int32_t i = 0; i < count; i++) {
        nxe_engine_model_info each = {.struct_size = sizeof each};
        EXPECT_OK(nxe_engine_model_info_at(engine, i, &each));
        sum += each.resident_bytes;
    }
    EXPECT_TRUE(sum == stats.resident_bytes);
    nxe_engine_release(engine);
}

static void test_memory_info_measures_resident_bytes(void)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *graph = build_graph(ctx, 1024, 3);
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    nxe_memory_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_executable_memory_info(exe, &info));
    EXPECT_TRUE(info.resident_bytes >= info.constant_bytes + info.arena_bytes);
    EXPECT_TRUE(info.resident_bytes >= (3 * 1024 + 1024) * sizeof(float));
    /* A 0.5 caller's struct ends before resident_bytes: accepted, and left alone past it. */
    nxe_memory_info old = {.struct_size = (uint32_t)offsetof(nxe_memory_info, resident_bytes),
                           .resident_bytes = 12345};
    EXPECT_OK(nxe_executable_memory_info(exe, &old));
    EXPECT_TRUE(old.resident_bytes == 12345 && old.constant_bytes == info.constant_bytes);
    nxe_executable_release(exe);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
}

static void test_tensor_kind_fails_bad_inputs_per_request(void)
{
    char nxm[128];
    path_of("model.nxm", nxm, sizeof nxm);
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(NULL, &engine));
    nxe_engine_model_spec spec = tensor_spec("model", nxm);
    spec.max_batch_size = 8;
    spec.max_batch_delay_ms = 200;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    float x[X_COUNT];
    fill(x, X_COUNT, 9);
    nxe_engine_io good = x_input(x);
    nxe_engine_io wrong_name = good, wrong_shape = good, wrong_dtype = good;
    wrong_name.name = "z";
    wrong_shape.tensor.shape[0] = 3;
    wrong_shape.tensor.shape[1] = 2;
    wrong_dtype.tensor.dtype_code = NXE_DL_INT;
    nxe_engine_request *requests[5] = {0};
    EXPECT_OK(nxe_engine_submit(engine, "model", &good, 1, NULL, &requests[0]));
    EXPECT_OK(nxe_engine_submit(engine, "model", &wrong_name, 1, NULL, &requests[1]));
    EXPECT_OK(nxe_engine_submit(engine, "model", &wrong_shape, 1, NULL, &requests[2]));
    EXPECT_OK(nxe_engine_submit(engine, "model", &wrong_dtype, 1, NULL, &requests[3]));
    EXPECT_OK(nxe_engine_submit(engine, "model", NULL, 0, NULL, &requests[4]));
    for (int i = 0; i < 5; i++)
        EXPECT_OK(nxe_engine_request_wait(requests[i], -1));
    EXPECT_TRUE(nxe_engine_request_status(requests[0]) == NXE_OK);
    EXPECT_TRUE(nxe_engine_request_status(requests[1]) == NXE_ERROR_INVALID_ARGUMENT &&
                strstr(nxe_engine_request_error(requests[1]), "no input 'z'"));
    EXPECT_TRUE(nxe_engine_request_status(requests[2]) == NXE_ERROR_SHAPE_MISMATCH &&
                strstr(nxe_engine_request_error(requests[2]), "[3, 2]"));
    EXPECT_TRUE(nxe_engine_request_status(requests[3]) == NXE_ERROR_DTYPE_MISMATCH);
    EXPECT_TRUE(nxe_engine_request_status(requests[4]) == NXE_ERROR_INVALID_ARGUMENT &&
                strstr(nxe_engine_request_error(requests[4]), "'x' is missing"));
    int32_t count = -1;
    EXPECT_OK(nxe_engine_request_output_count(requests[2], &count));
    EXPECT_TRUE(count == 0);
    nxe_engine_request_timing timing = {.struct_size = sizeof timing};
    EXPECT_OK(nxe_engine_request_get_timing(requests[0], &timing));
    /* Five requests queued together for one model make one batch. */
    EXPECT_TRUE(timing.batch_size == 5 && timing.loaded_model && timing.queued_s >= 0 &&
                timing.run_s >= 0);
    for (int i = 0; i < 5; i++)
        nxe_engine_request_release(requests[i]);
    /* Unknown options fail the load with the kind's message. */
    nxe_engine_option bad = {"precision", "fp8"};
    spec = tensor_spec("odd", nxm);
    spec.options = &bad;
    spec.num_options = 1;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    EXPECT_FAIL(nxe_engine_load_model(engine, "odd"), NXE_ERROR_INVALID_ARGUMENT,
                "unknown option 'precision'");
    nxe_engine_release(engine);
}

static int callback_calls;
static pthread_t callback_thread;
static nxe_status callback_status;

static void on_done(nxe_engine_request *request, void *user_data)
{
    pthread_mutex_lock(&toy_lock);
    callback_calls++;
    callback_thread = pthread_self();
    callback_status = nxe_engine_request_status(request);
    pthread_mutex_unlock(&toy_lock);
    if (user_data)
        nxe_engine_request_release(request);
}

static void test_toy_kind_batches_by_size_and_tokens(void)
{
    nxe_engine *engine = toy_engine(NULL);
    nxe_engine_model_spec spec = toy_spec("toy", "2");
    spec.max_batch_size = 4;
    spec.max_batch_delay_ms = 5000;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("tokens", "3");
    spec.max_batch_size = 8;
    spec.max_batch_tokens = 6;
    spec.max_batch_delay_ms = 5000;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    EXPECT_OK(nxe_engine_load_model(engine, "toy"));
    EXPECT_OK(nxe_engine_load_model(engine, "tokens"));
    toy_batches = toy_frontends = toy_heads = toy_releases = 0;

    /* Four requests: a full batch at once, well before the delay; each gets its own answer. */
    float x[4][3];
    nxe_engine_request *requests[4];
    double start = now_s();
    for (int i = 0; i < 4; i++) {
        fill(x[i], 3, 100 + (uint32_t)i);
        requests[i] = submit_toy(engine, "toy", x[i], 3, NULL);
    }
    for (int i = 0; i < 4; i++)
        expect_toy_result(requests[i], NXE_OK, x[i], 3, 2.0f, __LINE__);
    EXPECT_TRUE(now_s() - start < 4.0);
    nxe_engine_request_timing timing = {.struct_size = sizeof timing};
    EXPECT_OK(nxe_engine_request_get_timing(requests[3], &timing));
    EXPECT_TRUE(timing.batch_size == 4 && !timing.loaded_model);
    for (int i = 0; i < 4; i++)
        nxe_engine_request_release(requests[i]);
    pthread_mutex_lock(&toy_lock);
    EXPECT_TRUE(toy_batches == 1 && toy_batch_sizes[0] == 4);
    EXPECT_TRUE(toy_frontends == 1 && toy_heads == 1 && toy_releases == 1);
    EXPECT_TRUE(pthread_equal(toy_worker, pthread_self()) == 0);
    pthread_mutex_unlock(&toy_lock);

    /* Tokens: 3 + 3 fill max_batch_tokens 6, the third request waits for the next batch. */
    toy_batches = 0;
    float y[3][3];
    for (int i = 0; i < 3; i++) {
        fill(y[i], 3, 200 + (uint32_t)i);
        requests[i] = submit_toy(engine, "tokens", y[i], 3, NULL);
    }
    /* The third batch waits out its delay unless more requests come: a short deadline-free
     * wait shows the first batch went at once, then cancelling the third ends the test. */
    expect_toy_result(requests[0], NXE_OK, y[0], 3, 3.0f, __LINE__);
    expect_toy_result(requests[1], NXE_OK, y[1], 3, 3.0f, __LINE__);
    EXPECT_FAIL(nxe_engine_request_wait(requests[2], 0.05), NXE_ERROR_TIMEOUT, "not finished");
    float z[3] = {1, 2, 3};
    requests[3] = submit_toy(engine, "tokens", z, 3, NULL);
    expect_toy_result(requests[2], NXE_OK, y[2], 3, 3.0f, __LINE__);
    expect_toy_result(requests[3], NXE_OK, z, 3, 3.0f, __LINE__);
    pthread_mutex_lock(&toy_lock);
    EXPECT_TRUE(toy_batches == 2 && toy_batch_sizes[0] == 2 && toy_batch_sizes[1] == 2);
    pthread_mutex_unlock(&toy_lock);
    for (int i = 0; i < 4; i++)
        nxe_engine_request_release(requests[i]);

    /* A batch waiting for more requests holds up no other model. */
    spec = toy_spec("alone", "4");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    nxe_engine_request *waiting = submit_toy(engine, "toy", z, 3, NULL);
    nxe_engine_request *other = submit_toy(engine, "alone", z, 3, NULL);
    expect_toy_result(other, NXE_OK, z, 3, 4.0f, __LINE__);
    EXPECT_TRUE(!nxe_engine_request_done(waiting));
    EXPECT_OK(nxe_engine_request_cancel(waiting));
    expect_toy_result(waiting, NXE_ERROR_CANCELLED, z, 3, 2.0f, __LINE__);
    nxe_engine_request_release(waiting);
    nxe_engine_request_release(other);

    /* A stage that fails fails its batch with the kind's message; batch_fail fails one. */
    nxe_engine_option fail_encoder = {"fail", "encoder"}, fail_one = {"fail", "request"};
    nxe_engine_submit_options options = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    options.options = &fail_encoder;
    options.num_options = 1;
    spec = toy_spec("single", "1");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    nxe_engine_request *failing = submit_toy(engine, "single", z, 3, &options);
    expect_toy_result(failing, NXE_ERROR_RUNTIME, z, 3, 1, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(failing), "asked to fail in the encoder"));
    nxe_engine_request_release(failing);
    options.options = &fail_one;
    failing = submit_toy(engine, "single", z, 3, &options);
    nxe_engine_request *fine = submit_toy(engine, "single", z, 3, NULL);
    expect_toy_result(failing, NXE_ERROR_RUNTIME, z, 3, 1, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(failing), "asked to fail this one"));
    expect_toy_result(fine, NXE_OK, z, 3, 1, __LINE__);
    nxe_engine_request_release(failing);
    nxe_engine_request_release(fine);
    nxe_engine_release(engine);
}

static void test_callbacks_run_once_on_the_worker(void)
{
    nxe_engine *engine = toy_engine(NULL);
    nxe_engine_model_spec spec = toy_spec("toy", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    callback_calls = 0;
    float x[2] = {1, 2};
    nxe_engine_submit_options options = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    options.callback = on_done;
    nxe_engine_request *request = submit_toy(engine, "toy", x, 2, &options);
    expect_toy_result(request, NXE_OK, x, 2, 2.0f, __LINE__);
    nxe_engine_request_release(request);
    /* The callback may release the request itself. */
    options.user_data = &options;
    request = submit_toy(engine, "toy", x, 2, &options);
    double start = now_s();
    bool done = false;
    while (!done && now_s() - start < 30) {
        pthread_mutex_lock(&toy_lock);
        done = callback_calls == 2;
        pthread_mutex_unlock(&toy_lock);
        sleep_s(0.001);
    }
    pthread_mutex_lock(&toy_lock);
    EXPECT_TRUE(callback_calls == 2 && callback_status == NXE_OK);
    EXPECT_TRUE(!pthread_equal(callback_thread, pthread_self()) &&
                pthread_equal(callback_thread, toy_worker));
    pthread_mutex_unlock(&toy_lock);
    nxe_engine_release(engine);
}

static void test_full_queue_refuses_at_once(void)
{
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.queue_capacity = 2;
    nxe_engine *engine = toy_engine(&options);
    nxe_engine_model_spec spec = toy_spec("toy", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    float x[2] = {1, 2};
    close_gate();
    nxe_engine_request *first = submit_toy(engine, "toy", x, 2, NULL);
    wait_in_encoder();
    nxe_engine_request *second = submit_toy(engine, "toy", x, 2, NULL);
    nxe_engine_io in = {"x", {x, sizeof x, 1, NXE_DL_FLOAT, 32, 0, {2}}};
    nxe_engine_request *third = (nxe_engine_request *)&in;
    double start = now_s();
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, 1, NULL, &third), NXE_ERROR_BUSY,
                "try again later");
    EXPECT_TRUE(third == NULL && now_s() - start < 1.0);
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.rejected == 1 && stats.queue_depth == 2 && stats.queue_capacity == 2);
    open_gate();
    expect_toy_result(first, NXE_OK, x, 2, 2.0f, __LINE__);
    expect_toy_result(second, NXE_OK, x, 2, 2.0f, __LINE__);
    /* Room again once they finished. */
    third = submit_toy(engine, "toy", x, 2, NULL);
    expect_toy_result(third, NXE_OK, x, 2, 2.0f, __LINE__);
    nxe_engine_request_release(first);
    nxe_engine_request_release(second);
    nxe_engine_request_release(third);
    nxe_engine_release(engine);
}

static void test_deadlines_and_cancellation(void)
{
    nxe_engine *engine = toy_engine(NULL);
    nxe_engine_model_spec spec = toy_spec("toy", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    float x[2] = {1, 2};
    close_gate();
    nxe_engine_request *blocker = submit_toy(engine, "toy", x, 2, NULL);
    wait_in_encoder();

    /* Queued behind the blocker: a deadline passes, a cancel finishes at once. */
    nxe_engine_submit_options options = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    options.deadline_s = 0.05;
    nxe_engine_request *late = submit_toy(engine, "toy", x, 2, &options);
    nxe_engine_request *cancelled = submit_toy(engine, "toy", x, 2, NULL);
    EXPECT_TRUE(!nxe_engine_request_done(cancelled));
    EXPECT_TRUE(nxe_engine_request_status(cancelled) == NXE_ERROR_INVALID_STATE);
    EXPECT_FAIL(nxe_engine_request_output(cancelled, 0, &(nxe_engine_io){0}),
                NXE_ERROR_INVALID_STATE, "not finished");
    EXPECT_OK(nxe_engine_request_cancel(cancelled));
    EXPECT_OK(nxe_engine_request_wait(cancelled, 1.0));
    EXPECT_TRUE(nxe_engine_request_status(cancelled) == NXE_ERROR_CANCELLED);
    /* Released unfinished: cancelled, and its callback still runs. */
    callback_calls = 0;
    nxe_engine_submit_options with_callback = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    with_callback.callback = on_done;
    nxe_engine_request *dropped = submit_toy(engine, "toy", x, 2, &with_callback);
    nxe_engine_request_release(dropped);
    sleep_s(0.1);
    open_gate();
    expect_toy_result(blocker, NXE_OK, x, 2, 2.0f, __LINE__);
    expect_toy_result(late, NXE_ERROR_TIMEOUT, x, 2, 2.0f, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(late), "deadline"));
    double start = now_s();
    bool done = false;
    while (!done && now_s() - start < 30) {
        pthread_mutex_lock(&toy_lock);
        done = callback_calls == 1;
        pthread_mutex_unlock(&toy_lock);
        sleep_s(0.001);
    }
    EXPECT_TRUE(done && callback_status == NXE_ERROR_CANCELLED);

    /* While running: the kind's check sees the deadline (or the cancel) and stops. */
    nxe_engine_option steps = {"steps", "5000"};
    options.options = &steps;
    options.num_options = 1;
    options.deadline_s = 0.05;
    nxe_engine_request *slow = submit_toy(engine, "toy", x, 2, &options);
    expect_toy_result(slow, NXE_ERROR_TIMEOUT, x, 2, 2.0f, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(slow), "while it ran"));
    options.deadline_s = 0;
    nxe_engine_request *stopped = submit_toy(engine, "toy", x, 2, &options);
    sleep_s(0.05);
    EXPECT_OK(nxe_engine_request_cancel(stopped));
    expect_toy_result(stopped, NXE_ERROR_CANCELLED, x, 2, 2.0f, __LINE__);
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.failed == 5 && stats.completed == 1 && stats.queue_depth == 0);
    nxe_engine_request *list[] = {blocker, late, cancelled, slow, stopped};
    for (int i = 0; i < 5; i++)
        nxe_engine_request_release(list[i]);

    /* Releasing the engine cancels what has not started (here: waiting to be batched);
     * requests stay readable after it. */
    nxe_engine_model_spec batching = toy_spec("batching", "2");
    batching.max_batch_size = 2;
    batching.max_batch_delay_ms = 60000;
    EXPECT_OK(nxe_engine_add_model(engine, &batching));
    nxe_engine_request *pending = submit_toy(engine, "batching", x, 2, NULL);
    nxe_engine_release(engine);
    EXPECT_TRUE(nxe_engine_request_done(pending));
    EXPECT_TRUE(nxe_engine_request_status(pending) == NXE_ERROR_CANCELLED);
    EXPECT_OK(nxe_engine_request_cancel(pending));
    nxe_engine_request_release(pending);
}

static void test_replace_and_remove_keep_queued_requests(void)
{
    nxe_engine *engine = toy_engine(NULL);
    nxe_engine_model_spec spec = toy_spec("toy", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("other", "5");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    float x[2] = {1, 2};
    close_gate();
    nxe_engine_request *blocker = submit_toy(engine, "other", x, 2, NULL);
    wait_in_encoder();
    nxe_engine_request *old_spec = submit_toy(engine, "toy", x, 2, NULL);
    spec = toy_spec("toy", "3");
    EXPECT_OK(nxe_engine_replace_model(engine, &spec));
    nxe_engine_request *new_spec = submit_toy(engine, "toy", x, 2, NULL);
    nxe_engine_request *removed = submit_toy(engine, "other", x, 2, NULL);
    EXPECT_OK(nxe_engine_remove_model(engine, "other"));
    nxe_engine_io in = {"x", {x, sizeof x, 1, NXE_DL_FLOAT, 32, 0, {2}}};
    nxe_engine_request *refused = NULL;
    EXPECT_FAIL(nxe_engine_submit(engine, "other", &in, 1, NULL, &refused), NXE_ERROR_NOT_FOUND,
                "no model 'other'");
    open_gate();
    expect_toy_result(blocker, NXE_OK, x, 2, 5.0f, __LINE__);
    expect_toy_result(old_spec, NXE_OK, x, 2, 2.0f, __LINE__);
    expect_toy_result(new_spec, NXE_OK, x, 2, 3.0f, __LINE__);
    expect_toy_result(removed, NXE_OK, x, 2, 5.0f, __LINE__);
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "toy", &info));
    EXPECT_TRUE(info.requests == 2 && info.queued == 0);
    int32_t count = 0;
    EXPECT_OK(nxe_engine_model_count(engine, &count));
    EXPECT_TRUE(count == 1);
    nxe_engine_request *list[] = {blocker, old_spec, new_spec, removed};
    for (int i = 0; i < 4; i++)
        nxe_engine_request_release(list[i]);
    /* Retired versions are unloaded once their requests are done. */
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    double start = now_s();
    do {
        sleep_s(0.01);
        EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    } while (stats.resident_models != 1 && now_s() - start < 30);
    EXPECT_TRUE(stats.resident_models == 1);
    nxe_engine_release(engine);
}

static void test_apply_reconciles_all_or_nothing(void)
{
    char a[128], b[128], c[128], missing[128];
    path_of("apply_a.nxm", a, sizeof a);
    path_of("apply_b.nxm", b, sizeof b);
    path_of("apply_c.nxm", c, sizeof c);
    path_of("apply_missing.nxm", missing, sizeof missing);
    write_model(a, 4, 21, false);
    write_model(b, 4, 22, false);
    write_model(c, 4, 23, false);
    nxe_engine *engine = toy_engine(NULL);
    nxe_engine_model_spec specs[3] = {tensor_spec("a", a), tensor_spec("b", b), toy_spec("t", "2")};
    nxe_engine_apply_report report = {.struct_size = sizeof report};
    EXPECT_OK(nxe_engine_apply(engine, specs, 3, &report));
    EXPECT_TRUE(report.added == 3 && report.reloaded == 0 && report.removed == 0);
    check_tensor_answer(engine, "a", a, 4, 1, __LINE__);
    EXPECT_OK(nxe_engine_apply(engine, specs, 3, &report));
    EXPECT_TRUE(report.added == 0 && report.unchanged == 3);
    EXPECT_TRUE(model_state(engine, "a") == NXE_MODEL_RESIDENT); /* kept loaded */

    /* a's file changes on disk: its fingerprint changes and it reloads with the new weights. */
    write_model(a, 4, 31, false);
    EXPECT_OK(nxe_engine_apply(engine, specs, 3, &report));
    EXPECT_TRUE(report.reloaded == 1 && report.unchanged == 2);
    EXPECT_TRUE(model_state(engine, "a") == NXE_MODEL_UNLOADED);
    check_tensor_answer(engine, "a", a, 4, 1, __LINE__);

    /* Bad sets change nothing: an unknown kind, a duplicate, a file that cannot be read. */
    nxe_engine_model_spec bad[3] = {tensor_spec("a", a), tensor_spec("c", c), tensor_spec("b", b)};
    bad[1].kind = "speech";
    EXPECT_FAIL(nxe_engine_apply(engine, bad, 3, &report), NXE_ERROR_NOT_FOUND, "'c'");
    bad[1] = tensor_spec("a", c);
    EXPECT_FAIL(nxe_engine_apply(engine, bad, 3, &report), NXE_ERROR_INVALID_ARGUMENT,
                "listed twice");
    bad[1] = tensor_spec("c", missing);
    EXPECT_FAIL(nxe_engine_apply(engine, bad, 3, &report), NXE_ERROR_IO, "model 'c'");
    bad[1] = tensor_spec("bad name!", c);
    EXPECT_FAIL(nxe_engine_apply(engine, bad, 3, &report), NXE_ERROR_INVALID_ARGUMENT, "bad name!");
    int32_t count = 0;
    EXPECT_OK(nxe_engine_model_count(engine, &count));
    EXPECT_TRUE(count == 3 && model_state(engine, "c") == -1);
    EXPECT_TRUE(report.reloaded == 1); /* untouched by the failures */

    /* Removing b and t, adding c. */
    nxe_engine_model_spec next[2] = {tensor_spec("a", a), tensor_spec("c", c)};
    EXPECT_OK(nxe_engine_apply(engine, next, 2, &report));
    EXPECT_TRUE(report.added == 1 && report.removed == 2 && report.unchanged == 1);
    EXPECT_OK(nxe_engine_model_count(engine, &count));
    EXPECT_TRUE(count == 2 && model_state(engine, "b") == -1);
    check_tensor_answer(engine, "c", c, 4, 2, __LINE__);
    EXPECT_OK(nxe_engine_apply(engine, NULL, 0, NULL));
    EXPECT_OK(nxe_engine_model_count(engine, &count));
    EXPECT_TRUE(count == 0);
    nxe_engine_release(engine);
}

static void use_toy(nxe_engine *engine, const char *model, float scale)
{
    float x[2] = {3, 4};
    nxe_engine_request *request = submit_toy(engine, model, x, 2, NULL);
    expect_toy_result(request, NXE_OK, x, 2, scale, __LINE__);
    nxe_engine_request_release(request);
}

static void test_residency_evicts_least_recently_used(void)
{
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.max_resident = 2;
    nxe_engine *engine = toy_engine(&options);
    const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        nxe_engine_model_spec spec = toy_spec(names[i], "2");
        EXPECT_OK(nxe_engine_add_model(engine, &spec));
    }
    use_toy(engine, "a", 2);
    use_toy(engine, "b", 2);
    use_toy(engine, "a", 2);
    use_toy(engine, "c", 2); /* b is the least recently used */
    EXPECT_TRUE(model_state(engine, "a") == NXE_MODEL_RESIDENT);
    EXPECT_TRUE(model_state(engine, "b") == NXE_MODEL_UNLOADED);
    EXPECT_TRUE(model_state(engine, "c") == NXE_MODEL_RESIDENT);
    use_toy(engine, "b", 2); /* now a */
    EXPECT_TRUE(model_state(engine, "a") == NXE_MODEL_UNLOADED);
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "b", &info));
    EXPECT_TRUE(info.evictions == 1 && info.loads == 2 && info.resident_bytes == 1000);
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.evictions == 2 && stats.loads == 4 && stats.resident_models == 2);
    /* A load that fails leaves the model FAILED with the reason; the others keep serving. */
    nxe_engine_model_spec broken = toy_spec("broken", "1");
    EXPECT_OK(nxe_engine_add_model(engine, &broken));
    EXPECT_FAIL(nxe_engine_load_model(engine, "broken"), NXE_ERROR_FORMAT, "this model is broken");
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "broken", &info));
    EXPECT_TRUE(info.state == NXE_MODEL_FAILED && strstr(info.error, "this model is broken"));
    use_toy(engine, "c", 2);
    /* unload_model: idle models go; one with requests queued does not. */
    EXPECT_OK(nxe_engine_unload_model(engine, "c"));
    EXPECT_TRUE(model_state(engine, "c") == NXE_MODEL_UNLOADED);
    close_gate();
    float x[2] = {1, 2};
    nxe_engine_request *blocker = submit_toy(engine, "b", x, 2, NULL);
    wait_in_encoder();
    nxe_engine_request *queued = submit_toy(engine, "b", x, 2, NULL);
    EXPECT_FAIL(nxe_engine_unload_model(engine, "b"), NXE_ERROR_BUSY, "queued");
    open_gate();
    expect_toy_result(blocker, NXE_OK, x, 2, 2, __LINE__);
    expect_toy_result(queued, NXE_OK, x, 2, 2, __LINE__);
    nxe_engine_request_release(blocker);
    nxe_engine_request_release(queued);
    nxe_engine_release(engine);
}

static void test_residency_byte_budget(void)
{
    /* Three tensor models of one size, measured first in an engine without budgets. */
    char paths[4][128];
    const char *names[4] = {"m0", "m1", "m2", "big"};
    for (int i = 0; i < 4; i++) {
        char file[32];
        snprintf(file, sizeof file, "budget_%d.nxm", i);
        path_of(file, paths[i], sizeof paths[i]);
        write_model(paths[i], i < 3 ? 2048 : 65536, 40 + (uint32_t)i, false);
    }
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(NULL, &engine));
    nxe_engine_model_spec spec = tensor_spec("m0", paths[0]);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    check_tensor_answer(engine, "m0", paths[0], 2048, 1, __LINE__);
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "m0", &info));
    const uint64_t size = info.resident_bytes;
    EXPECT_TRUE(size >= 3 * 2048 * sizeof(float));
    nxe_engine_release(engine);

    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.max_resident_bytes = size * 5 / 2; /* two fit, three do not */
    EXPECT_OK(nxe_engine_create(&options, &engine));
    for (int i = 0; i < 4; i++) {
        spec = tensor_spec(names[i], paths[i]);
        EXPECT_OK(nxe_engine_add_model(engine, &spec));
    }
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 3; i++) {
            check_tensor_answer(engine, names[i], paths[i], 2048, (uint32_t)(round * 3 + i),
                                __LINE__);
            EXPECT_OK(nxe_engine_get_stats(engine, &stats));
            EXPECT_TRUE(stats.resident_bytes <= options.max_resident_bytes);
            EXPECT_TRUE(stats.resident_models == (round == 0 && i == 0 ? 1 : 2));
        }
    EXPECT_TRUE(stats.evictions == 4);
    /* Least recently used first: m2 evicted m0, then m0 evicted m1, m1 m2, and m2 m0. */
    EXPECT_TRUE(model_state(engine, "m0") == NXE_MODEL_UNLOADED);

    /* A model that cannot fit even alone fails with its size and the budget. */
    float x[X_COUNT] = {0};
    nxe_engine_io in = x_input(x);
    nxe_engine_request *request = NULL;
    EXPECT_OK(nxe_engine_submit(engine, "big", &in, 1, NULL, &request));
    EXPECT_OK(nxe_engine_request_wait(request, -1));
    EXPECT_TRUE(nxe_engine_request_status(request) == NXE_ERROR_OUT_OF_MEMORY);
    char budget[64];
    snprintf(budget, sizeof budget, "max_resident_bytes %llu",
             (unsigned long long)options.max_resident_bytes);
    EXPECT_TRUE(strstr(nxe_engine_request_error(request), budget) &&
                strstr(nxe_engine_request_error(request), "bytes once loaded"));
    nxe_engine_request_release(request);
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "big", &info));
    EXPECT_TRUE(info.state == NXE_MODEL_FAILED && strstr(info.error, budget) &&
                info.resident_bytes == 0);
    EXPECT_FAIL(nxe_engine_load_model(engine, "big"), NXE_ERROR_OUT_OF_MEMORY, budget);
    check_tensor_answer(engine, "m1", paths[1], 2048, 7, __LINE__);
    nxe_engine_release(engine);
}

static void test_pinned_models_and_evict_policy_none(void)
{
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.max_resident = 1;
    nxe_engine *engine = toy_engine(&options);
    nxe_engine_model_spec spec = toy_spec("pinned", "2");
    spec.keep_alive_s = -1;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("other", "3");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    use_toy(engine, "pinned", 2);
    float x[2] = {1, 2};
    nxe_engine_request *request = submit_toy(engine, "other", x, 2, NULL);
    expect_toy_result(request, NXE_ERROR_BUSY, x, 2, 3, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(request), "pinned"));
    nxe_engine_request_release(request);
    EXPECT_TRUE(model_state(engine, "pinned") == NXE_MODEL_RESIDENT);
    /* unload_model unloads a pinned model; then the other fits. */
    EXPECT_OK(nxe_engine_unload_model(engine, "pinned"));
    use_toy(engine, "other", 3);
    nxe_engine_release(engine);

    options.evict_policy = NXE_EVICT_NONE;
    engine = toy_engine(&options);
    spec = toy_spec("a", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("b", "3");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    use_toy(engine, "a", 2);
    request = submit_toy(engine, "b", x, 2, NULL);
    expect_toy_result(request, NXE_ERROR_BUSY, x, 2, 3, __LINE__);
    EXPECT_TRUE(strstr(nxe_engine_request_error(request), "evict_policy is none"));
    nxe_engine_request_release(request);
    EXPECT_TRUE(model_state(engine, "a") == NXE_MODEL_RESIDENT &&
                model_state(engine, "b") == NXE_MODEL_UNLOADED);
    nxe_engine_release(engine);
}

static void test_idle_models_unload(void)
{
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.idle_unload_s = 0.2;
    options.sweep_interval_s = 0.02;
    nxe_engine *engine = toy_engine(&options);
    nxe_engine_model_spec spec = toy_spec("idle", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("pinned", "2");
    spec.keep_alive_s = -1;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("long", "2");
    spec.keep_alive_s = 30;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    use_toy(engine, "idle", 2);
    use_toy(engine, "pinned", 2);
    use_toy(engine, "long", 2);
    EXPECT_TRUE(model_state(engine, "idle") == NXE_MODEL_RESIDENT);
    double start = now_s();
    while (model_state(engine, "idle") == NXE_MODEL_RESIDENT && now_s() - start < 10)
        sleep_s(0.01);
    double waited = now_s() - start;
    EXPECT_TRUE(model_state(engine, "idle") == NXE_MODEL_UNLOADED);
    EXPECT_TRUE(waited >= 0.1 && waited < 5);
    EXPECT_TRUE(model_state(engine, "pinned") == NXE_MODEL_RESIDENT);
    EXPECT_TRUE(model_state(engine, "long") == NXE_MODEL_RESIDENT);
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "idle", &info));
    EXPECT_TRUE(info.idle_s >= 0.15 && info.evictions == 0);
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.idle_unloads == 1 && stats.evictions == 0);
    use_toy(engine, "idle", 2); /* loads again on demand */
    nxe_engine_release(engine);

    /* A model's own keep_alive_s applies when the engine's idle_unload_s is 0. */
    options.idle_unload_s = 0;
    engine = toy_engine(&options);
    spec = toy_spec("short", "2");
    spec.keep_alive_s = 0.1;
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = toy_spec("forever", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    use_toy(engine, "short", 2);
    use_toy(engine, "forever", 2);
    start = now_s();
    while (model_state(engine, "short") == NXE_MODEL_RESIDENT && now_s() - start < 10)
        sleep_s(0.01);
    EXPECT_TRUE(model_state(engine, "short") == NXE_MODEL_UNLOADED);
    sleep_s(0.2);
    EXPECT_TRUE(model_state(engine, "forever") == NXE_MODEL_RESIDENT);
    nxe_engine_release(engine);
}

static void test_corrupted_and_deleted_files_fail_only_their_model(void)
{
    char good[128], bad[128], gone[128];
    path_of("fault_good.nxm", good, sizeof good);
    path_of("fault_bad.nxm", bad, sizeof bad);
    path_of("fault_gone.nxm", gone, sizeof gone);
    write_model(good, 4, 51, false);
    write_model(bad, 4, 52, false);
    write_model(gone, 4, 53, false);
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(NULL, &engine));
    nxe_engine_model_spec spec = tensor_spec("good", good);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = tensor_spec("bad", bad);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    spec = tensor_spec("gone", gone);
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    /* Truncated to half and deleted after they were added. */
    FILE *file = fopen(bad, "rb");
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    EXPECT_TRUE(fread(bytes, 1, (size_t)size, file) == (size_t)size);
    fclose(file);
    write_bytes(bad, bytes, (size_t)size / 2);
    remove(gone);

    float x[X_COUNT] = {0};
    nxe_engine_io in = x_input(x);
    nxe_engine_request *requests[2];
    EXPECT_OK(nxe_engine_submit(engine, "bad", &in, 1, NULL, &requests[0]));
    EXPECT_OK(nxe_engine_submit(engine, "bad", &in, 1, NULL, &requests[1]));
    for (int i = 0; i < 2; i++) {
        EXPECT_OK(nxe_engine_request_wait(requests[i], -1));
        EXPECT_TRUE(nxe_engine_request_status(requests[i]) == NXE_ERROR_FORMAT);
        EXPECT_TRUE(strstr(nxe_engine_request_error(requests[i]), "model 'bad'"));
        nxe_engine_request_release(requests[i]);
    }
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "bad", &info));
    EXPECT_TRUE(info.state == NXE_MODEL_FAILED && info.error[0] && info.requests == 2);
    EXPECT_OK(nxe_engine_submit(engine, "gone", &in, 1, NULL, &requests[0]));
    EXPECT_OK(nxe_engine_request_wait(requests[0], -1));
    EXPECT_TRUE(nxe_engine_request_status(requests[0]) == NXE_ERROR_IO);
    nxe_engine_request_release(requests[0]);
    EXPECT_TRUE(model_state(engine, "gone") == NXE_MODEL_FAILED);
    check_tensor_answer(engine, "good", good, 4, 3, __LINE__);

    /* Repaired on disk: the next request loads it again. */
    write_bytes(bad, bytes, (size_t)size);
    free(bytes);
    check_tensor_answer(engine, "bad", bad, 4, 4, __LINE__);
    EXPECT_TRUE(model_state(engine, "bad") == NXE_MODEL_RESIDENT);
    EXPECT_OK(nxe_engine_model_info_by_name(engine, "bad", &info));
    EXPECT_TRUE(info.error[0] == '\0');
    nxe_engine_release(engine);
}

/* ---- many threads submitting at once ---- */

#define THREADS 8
#define PER_THREAD 150

typedef struct thread_args {
    nxe_engine *engine;
    int index;
    const float (*expected)[3][8]; /* per model, per input sample */
    const float (*samples)[X_COUNT];
    int busy;
} thread_args;

static void *submitter(void *argument)
{
    thread_args *args = argument;
    const char *names[3] = {"t0", "t1", "t2"};
    for (int i = 0; i < PER_THREAD; i++) {
        int model = (args->index + i) % 3, sample = (args->index * 7 + i) % 3;
        nxe_engine_io in = x_input(args->samples[sample]);
        nxe_engine_request *request = NULL;
        nxe_status status = nxe_engine_submit(args->engine, names[model], &in, 1, NULL, &request);
        if (status == NXE_ERROR_BUSY) {
            args->busy++;
            i--;
            sleep_s(0.001);
            continue;
        }
        if (status != NXE_OK) {
            fail("submit from a thread", nxe_last_error(), __LINE__);
            return NULL;
        }
        if (i % 5 == 0)
            nxe_engine_request_done(request); /* polled while the worker may finish it */
        nxe_engine_request_wait(request, -1);
        nxe_engine_io out = {0};
        count_check();
        if (nxe_engine_request_status(request) != NXE_OK ||
            nxe_engine_request_output(request, 0, &out) != NXE_OK ||
            memcmp(out.tensor.data, args->expected[model][sample], sizeof(float) * 8) != 0)
            fail("a threaded answer differs from the direct run", nxe_engine_request_error(request),
                 __LINE__);
        nxe_engine_request_release(request);
    }
    return NULL;
}

static void test_many_threads_submit_at_once(void)
{
    char paths[3][128];
    float samples[3][X_COUNT];
    float expected[3][3][8];
    for (int m = 0; m < 3; m++) {
        char file[32];
        snprintf(file, sizeof file, "thread_%d.nxm", m);
        path_of(file, paths[m], sizeof paths[m]);
        write_model(paths[m], 4, 60 + (uint32_t)m, false);
    }
    for (int s = 0; s < 3; s++)
        fill(samples[s], X_COUNT, 70 + (uint32_t)s);
    for (int m = 0; m < 3; m++)
        for (int s = 0; s < 3; s++)
            direct_run(paths[m], samples[s], expected[m][s], 4);
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    options.max_resident = 2; /* forces evictions */
    options.queue_capacity = 6;
    options.num_threads = 1;
    nxe_engine *engine = NULL;
    EXPECT_OK(nxe_engine_create(&options, &engine));
    const char *names[3] = {"t0", "t1", "t2"};
    for (int m = 0; m < 3; m++) {
        nxe_engine_model_spec spec = tensor_spec(names[m], paths[m]);
        spec.max_batch_size = 4;
        spec.max_batch_delay_ms = 1;
        EXPECT_OK(nxe_engine_add_model(engine, &spec));
    }
    pthread_t threads[THREADS];
    thread_args args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (thread_args){engine, t, (const float (*)[3][8])expected,
                                (const float (*)[X_COUNT])samples, 0};
        pthread_create(&threads[t], NULL, submitter, &args[t]);
    }
    /* Queries and a reconcile while the threads run. */
    for (int i = 0; i < 20; i++) {
        nxe_engine_stats stats = {.struct_size = sizeof stats};
        EXPECT_OK(nxe_engine_get_stats(engine, &stats));
        EXPECT_TRUE(stats.resident_models <= 2 && stats.queue_depth <= 6);
        nxe_engine_model_info info = {.struct_size = sizeof info};
        EXPECT_OK(nxe_engine_model_info_at(engine, i % 3, &info));
        sleep_s(0.005);
    }
    nxe_engine_model_spec specs[3];
    for (int m = 0; m < 3; m++) {
        specs[m] = tensor_spec(names[m], paths[m]);
        specs[m].max_batch_size = 4;
        specs[m].max_batch_delay_ms = m == 0 ? 2 : 1; /* t0 reloads, its queue keeps running */
    }
    nxe_engine_apply_report report = {.struct_size = sizeof report};
    EXPECT_OK(nxe_engine_apply(engine, specs, 3, &report));
    EXPECT_TRUE(report.reloaded == 1 && report.unchanged == 2);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    nxe_engine_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_engine_get_stats(engine, &stats));
    EXPECT_TRUE(stats.completed == THREADS * PER_THREAD && stats.failed == 0);
    EXPECT_TRUE(stats.batched_requests == stats.completed && stats.batches <= stats.completed);
    EXPECT_TRUE(stats.evictions > 0 && stats.queue_depth == 0);
    nxe_engine_release(engine);
}

/* ---- bad arguments on every entry point ---- */

static void test_bad_arguments(void)
{
    nxe_engine *engine = (nxe_engine *)&checks;
    nxe_engine_options options = NXE_ENGINE_OPTIONS_INIT;
    EXPECT_FAIL(nxe_engine_create(NULL, NULL), NXE_ERROR_INVALID_ARGUMENT, "out");
    options.struct_size = 4;
    EXPECT_FAIL(nxe_engine_create(&options, &engine), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    EXPECT_TRUE(engine == NULL);
    options = (nxe_engine_options)NXE_ENGINE_OPTIONS_INIT;
    options.queue_capacity = -1;
    EXPECT_FAIL(nxe_engine_create(&options, &engine), NXE_ERROR_INVALID_ARGUMENT, "queue_capacity");
    options = (nxe_engine_options)NXE_ENGINE_OPTIONS_INIT;
    options.idle_unload_s = NAN;
    EXPECT_FAIL(nxe_engine_create(&options, &engine), NXE_ERROR_INVALID_ARGUMENT, "idle_unload_s");
    options = (nxe_engine_options)NXE_ENGINE_OPTIONS_INIT;
    options.evict_policy = 7;
    EXPECT_FAIL(nxe_engine_create(&options, &engine), NXE_ERROR_INVALID_ARGUMENT, "evict_policy");
    nxe_engine_release(NULL);

    engine = toy_engine(NULL);
    nxe_engine_kind kind = toy_kind();
    EXPECT_FAIL(nxe_engine_register_kind(NULL, &kind), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_register_kind(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "kind");
    EXPECT_FAIL(nxe_engine_register_kind(engine, &kind), NXE_ERROR_INVALID_ARGUMENT,
                "already registered");
    kind.name = "other";
    kind.encoder = NULL;
    EXPECT_FAIL(nxe_engine_register_kind(engine, &kind), NXE_ERROR_INVALID_ARGUMENT, "encoder");
    kind = toy_kind();
    kind.name = "";
    EXPECT_FAIL(nxe_engine_register_kind(engine, &kind), NXE_ERROR_INVALID_ARGUMENT, "empty");
    kind.name = "other";
    kind.struct_size = 8;
    EXPECT_FAIL(nxe_engine_register_kind(engine, &kind), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    kind = toy_kind();
    kind.name = "tensor";
    EXPECT_FAIL(nxe_engine_register_kind(engine, &kind), NXE_ERROR_INVALID_ARGUMENT, "tensor");
    EXPECT_TRUE(nxe_engine_set_error(NXE_ERROR_RUNTIME, "kind message") == NXE_ERROR_RUNTIME &&
                strcmp(nxe_last_error(), "kind message") == 0);

    nxe_engine_model_spec spec = toy_spec("toy", "2");
    EXPECT_FAIL(nxe_engine_add_model(NULL, &spec), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_add_model(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "spec");
    spec.struct_size = 4;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    spec = toy_spec("white space", "2");
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "white space");
    spec = toy_spec("toy", "2");
    spec.kind = "nothing";
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_NOT_FOUND, "nothing");
    spec = toy_spec("toy", "2");
    spec.path = NULL;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "path");
    spec = toy_spec("toy", "2");
    spec.keep_alive_s = -2;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "keep_alive_s");
    spec = toy_spec("toy", "2");
    spec.max_batch_delay_ms = NAN;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT,
                "max_batch_delay_ms");
    spec = toy_spec("toy", "2");
    spec.num_options = -1;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "num_options");
    nxe_engine_option null_value = {"scale", NULL};
    spec.options = &null_value;
    spec.num_options = 1;
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "NULL value");
    spec = toy_spec("toy", "2");
    EXPECT_OK(nxe_engine_add_model(engine, &spec));
    EXPECT_FAIL(nxe_engine_add_model(engine, &spec), NXE_ERROR_INVALID_ARGUMENT, "exists");
    EXPECT_FAIL(nxe_engine_replace_model(NULL, &spec), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_replace_model(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "spec");
    spec = toy_spec("absent", "2");
    EXPECT_FAIL(nxe_engine_replace_model(engine, &spec), NXE_ERROR_NOT_FOUND, "absent");
    EXPECT_FAIL(nxe_engine_remove_model(NULL, "toy"), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_remove_model(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_engine_remove_model(engine, "absent"), NXE_ERROR_NOT_FOUND, "absent");
    nxe_engine_apply_report report = {.struct_size = 2};
    EXPECT_FAIL(nxe_engine_apply(NULL, NULL, 0, NULL), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_apply(engine, NULL, 1, NULL), NXE_ERROR_INVALID_ARGUMENT, "specs");
    EXPECT_FAIL(nxe_engine_apply(engine, &spec, -1, NULL), NXE_ERROR_INVALID_ARGUMENT, "count");
    EXPECT_FAIL(nxe_engine_apply(engine, &spec, 1, &report), NXE_ERROR_INVALID_ARGUMENT,
                "struct_size");
    EXPECT_FAIL(nxe_engine_load_model(NULL, "toy"), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_load_model(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_engine_load_model(engine, "absent"), NXE_ERROR_NOT_FOUND, "absent");
    EXPECT_FAIL(nxe_engine_unload_model(NULL, "toy"), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_unload_model(engine, "absent"), NXE_ERROR_NOT_FOUND, "absent");

    int32_t count = 5;
    EXPECT_FAIL(nxe_engine_model_count(NULL, &count), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_TRUE(count == 0);
    EXPECT_FAIL(nxe_engine_model_count(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "count");
    nxe_engine_model_info info = {.struct_size = sizeof info};
    EXPECT_FAIL(nxe_engine_model_info_at(NULL, 0, &info), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_model_info_at(engine, 0, NULL), NXE_ERROR_INVALID_ARGUMENT, "info");
    EXPECT_FAIL(nxe_engine_model_info_at(engine, 1, &info), NXE_ERROR_NOT_FOUND, "out of range");
    EXPECT_FAIL(nxe_engine_model_info_at(engine, -1, &info), NXE_ERROR_NOT_FOUND, "negative");
    EXPECT_FAIL(nxe_engine_model_info_by_name(engine, NULL, &info), NXE_ERROR_INVALID_ARGUMENT,
                "name");
    EXPECT_FAIL(nxe_engine_model_info_by_name(engine, "absent", &info), NXE_ERROR_NOT_FOUND,
                "absent");
    info.struct_size = 8;
    EXPECT_FAIL(nxe_engine_model_info_by_name(engine, "toy", &info), NXE_ERROR_INVALID_ARGUMENT,
                "struct_size");
    nxe_engine_stats stats = {.struct_size = 8};
    EXPECT_FAIL(nxe_engine_get_stats(engine, &stats), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    EXPECT_FAIL(nxe_engine_get_stats(NULL, &stats), NXE_ERROR_INVALID_ARGUMENT, "engine");
    EXPECT_FAIL(nxe_engine_get_stats(engine, NULL), NXE_ERROR_INVALID_ARGUMENT, "stats");

    float x[2] = {1, 2};
    nxe_engine_io in = {"x", {x, sizeof x, 1, NXE_DL_FLOAT, 32, 0, {2}}};
    nxe_engine_request *request = (nxe_engine_request *)&checks;
    EXPECT_FAIL(nxe_engine_submit(NULL, "toy", &in, 1, NULL, &request), NXE_ERROR_INVALID_ARGUMENT,
                "engine");
    EXPECT_TRUE(request == NULL);
    EXPECT_FAIL(nxe_engine_submit(engine, NULL, &in, 1, NULL, &request), NXE_ERROR_INVALID_ARGUMENT,
                "model");
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, 1, NULL, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "out");
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", NULL, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "inputs");
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, -1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "num_inputs");
    EXPECT_FAIL(nxe_engine_submit(engine, "absent", &in, 1, NULL, &request), NXE_ERROR_NOT_FOUND,
                "absent");
    nxe_engine_io bad = in;
    bad.tensor.data_size = 4;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "needs 8 bytes");
    bad = in;
    bad.tensor.ndim = 9;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "descriptor");
    bad = in;
    bad.tensor.dtype_bits = 12;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "descriptor");
    bad = in;
    bad.tensor.shape[0] = -2;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "descriptor");
    bad = in;
    bad.tensor.data = NULL;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "no data");
    bad = in;
    bad.name = NULL;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &bad, 1, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "no name");
    nxe_engine_io twice[2] = {in, in};
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", twice, 2, NULL, &request),
                NXE_ERROR_INVALID_ARGUMENT, "twice");
    nxe_engine_submit_options submit = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.deadline_s = -1;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, 1, &submit, &request),
                NXE_ERROR_INVALID_ARGUMENT, "deadline_s");
    submit = (nxe_engine_submit_options)NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.struct_size = 4;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, 1, &submit, &request),
                NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    submit = (nxe_engine_submit_options)NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.num_options = 2;
    EXPECT_FAIL(nxe_engine_submit(engine, "toy", &in, 1, &submit, &request),
                NXE_ERROR_INVALID_ARGUMENT, "options is NULL");

    EXPECT_FAIL(nxe_engine_request_wait(NULL, 1), NXE_ERROR_INVALID_ARGUMENT, "request");
    EXPECT_TRUE(nxe_engine_request_done(NULL) == 0);
    EXPECT_FAIL(nxe_engine_request_cancel(NULL), NXE_ERROR_INVALID_ARGUMENT, "request");
    EXPECT_TRUE(nxe_engine_request_status(NULL) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(strcmp(nxe_engine_request_error(NULL), "") == 0);
    EXPECT_FAIL(nxe_engine_request_output_count(NULL, &count), NXE_ERROR_INVALID_ARGUMENT,
                "request");
    nxe_engine_io out;
    EXPECT_FAIL(nxe_engine_request_output(NULL, 0, &out), NXE_ERROR_INVALID_ARGUMENT, "request");
    nxe_engine_request_timing timing = {.struct_size = sizeof timing};
    EXPECT_FAIL(nxe_engine_request_get_timing(NULL, &timing), NXE_ERROR_INVALID_ARGUMENT,
                "request");
    nxe_engine_request_release(NULL);

    request = submit_toy(engine, "toy", x, 2, NULL);
    expect_toy_result(request, NXE_OK, x, 2, 2, __LINE__);
    EXPECT_FAIL(nxe_engine_request_output_count(request, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "count");
    EXPECT_FAIL(nxe_engine_request_output(request, 1, &out), NXE_ERROR_NOT_FOUND, "out of range");
    EXPECT_TRUE(out.name == NULL && out.tensor.data == NULL);
    EXPECT_FAIL(nxe_engine_request_output(request, 0, NULL), NXE_ERROR_INVALID_ARGUMENT, "out");
    timing.struct_size = 4;
    EXPECT_FAIL(nxe_engine_request_get_timing(request, &timing), NXE_ERROR_INVALID_ARGUMENT,
                "struct_size");
    EXPECT_FAIL(nxe_engine_request_get_timing(request, NULL), NXE_ERROR_INVALID_ARGUMENT, "timing");
    EXPECT_FAIL(nxe_engine_request_wait(request, NAN), NXE_ERROR_INVALID_ARGUMENT, "NaN");
    EXPECT_OK(nxe_engine_request_cancel(request)); /* finished: nothing happens */
    EXPECT_TRUE(nxe_engine_request_status(request) == NXE_OK);
    nxe_engine_request_release(request);

    /* Batch accessors refuse what is not a batch's. */
    const nxe_engine_io *inputs = in.name ? &in : NULL;
    EXPECT_TRUE(nxe_engine_batch_size(NULL) == 0);
    EXPECT_FAIL(nxe_engine_batch_inputs(NULL, 0, &inputs, &count), NXE_ERROR_INVALID_ARGUMENT,
                "batch");
    EXPECT_TRUE(inputs == NULL && count == 0);
    EXPECT_TRUE(nxe_engine_batch_option(NULL, 0, "x") == NULL);
    EXPECT_TRUE(nxe_engine_batch_cancelled(NULL, 0) == 0);
    nxe_tensor_desc desc;
    int64_t shape[1] = {2};
    EXPECT_FAIL(nxe_engine_batch_add_output(NULL, 0, "y", NXE_DTYPE_F32, 1, shape, &desc),
                NXE_ERROR_INVALID_ARGUMENT, "batch");
    EXPECT_FAIL(nxe_engine_batch_fail(NULL, 0, NXE_ERROR_RUNTIME, "x"), NXE_ERROR_INVALID_ARGUMENT,
                "batch");
    nxe_engine_release(engine);
}

int main(void)
{
    snprintf(folder, sizeof folder, "/tmp/nxe-engine-XXXXXX");
    if (!mkdtemp(folder)) {
        perror("mkdtemp");
        return 1;
    }
    test_memory_info_measures_resident_bytes();
    test_tensor_kind_answers_as_a_direct_run();
    test_tensor_kind_fails_bad_inputs_per_request();
    test_toy_kind_batches_by_size_and_tokens();
    test_callbacks_run_once_on_the_worker();
    test_full_queue_refuses_at_once();
    test_deadlines_and_cancellation();
    test_replace_and_remove_keep_queued_requests();
    test_apply_reconciles_all_or_nothing();
    test_residency_evicts_least_recently_used();
    test_residency_byte_budget();
    test_pinned_models_and_evict_policy_none();
    test_idle_models_unload();
    test_corrupted_and_deleted_files_fail_only_their_model();
    test_many_threads_submit_at_once();
    test_bad_arguments();
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0)
        fprintf(stderr, "engine.c: could not remove %s\n", folder);
    printf("engine: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
