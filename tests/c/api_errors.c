/* api_errors.c — every public function of nxe.h given bad input: each call must return its
 * documented status, leave a message naming the function, op, tensor or argument at fault,
 * and clear its out-params. Ends with graphs whose results are checked against plain C. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <nxe/nxe_experimental.h> /* nxe_cpu_info_get, nxe_cpu_kernels */

static int checks;
static int failures;

/* A correctly aligned non-NULL address, so out-params can start out "set" and be seen cleared. */
static max_align_t sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

static void fail(int line, const char *what, const char *detail)
{
    fprintf(stderr, "api_errors.c:%d: %s: %s\n", line, what, detail);
    failures++;
}

/* Expects `got` == `expected`; on failure statuses also a message containing `needle`. */
static void expect_status(nxe_status got, nxe_status expected, const char *needle, const char *what,
                          int line)
{
    char detail[1400];
    checks++;
    if (got != expected) {
        snprintf(detail, sizeof detail, "returned %s, expected %s (last error: \"%s\")",
                 nxe_status_name(got), nxe_status_name(expected), nxe_last_error());
        fail(line, what, detail);
        return;
    }
    if (expected == NXE_OK)
        return;
    const char *message = nxe_last_error();
    if (!message || !message[0]) {
        fail(line, what, "failed with an empty nxe_last_error()");
    } else if (needle && !strstr(message, needle)) {
        snprintf(detail, sizeof detail, "message \"%s\" does not mention \"%s\"", message, needle);
        fail(line, what, detail);
    }
}

#define EXPECT_OK(call) expect_status((call), NXE_OK, NULL, #call, __LINE__)
#define EXPECT_FAIL(call, status, needle) expect_status((call), (status), (needle), #call, __LINE__)
#define EXPECT_TRUE(cond)                                                                          \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond))                                                                               \
            fail(__LINE__, #cond, "is false");                                                     \
    } while (0)

/* ---- helpers building small graphs ---- */

static nxe_graph *new_graph(void)
{
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    nxe_context_release(ctx);
    return graph;
}

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t kind, int32_t dtype,
                              int32_t ndim, const int64_t *shape)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.kind = kind;
    spec.dtype = dtype;
    spec.ndim = ndim;
    spec.shape = shape;
    nxe_tensor *tensor = NULL;
    EXPECT_OK(nxe_graph_add_tensor(graph, &spec, &tensor));
    return tensor;
}

static nxe_op *add_op(nxe_graph *graph, const char *type, const char *name, nxe_tensor **inputs,
                      int32_t num_inputs, nxe_tensor **outputs, int32_t num_outputs)
{
    nxe_op *op = NULL;
    EXPECT_OK(nxe_graph_add_op(graph, type, name, &op));
    if (!op)
        return NULL;
    EXPECT_OK(nxe_op_bind_inputs(op, inputs, num_inputs));
    EXPECT_OK(nxe_op_bind_outputs(op, outputs, num_outputs));
    return op;
}

static const int64_t shape_2x3[2] = {2, 3};

static nxe_tensor_desc f32_desc(float *data, size_t bytes, int32_t ndim, const int64_t *shape)
{
    nxe_tensor_desc desc = {data, bytes, ndim, NXE_DL_FLOAT, 32, 0, {0}};
    for (int32_t i = 0; i < ndim; i++)
        desc.shape[i] = shape[i];
    return desc;
}

/* x[2,3] (INPUT) + b[2,3] (CONSTANT) -> relu -> y (OUTPUT). */
static nxe_executable *compile_add_relu(const float *bias)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *b = add_tensor(graph, "b", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *s = add_tensor(graph, "s", NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    EXPECT_OK(nxe_tensor_set_data(b, bias, 6 * sizeof(float)));
    nxe_tensor *add_inputs[2] = {x, b};
    add_op(graph, "Add", "add", add_inputs, 2, &s, 1);
    add_op(graph, "Relu", "relu", &s, 1, &y, 1);
    nxe_executable *exe = NULL;
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    EXPECT_OK(nxe_graph_compile(graph, &options, &exe));
    nxe_graph_release(graph);
    return exe;
}

/* ---- versions, status names, errors, logging, dtypes ---- */

static void test_versions_match_the_header(void)
{
    EXPECT_TRUE(nxe_api_version() ==
                (((uint32_t)NXE_API_VERSION_MAJOR << 16) | (uint32_t)NXE_API_VERSION_MINOR));
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", NXE_API_VERSION_MAJOR, NXE_API_VERSION_MINOR,
             NXE_VERSION_PATCH);
    EXPECT_TRUE(strcmp(nxe_version_string(), expected) == 0);
}

static void test_status_names_cover_known_and_unknown_codes(void)
{
    EXPECT_TRUE(strcmp(nxe_status_name(NXE_OK), "NXE_OK") == 0);
    EXPECT_TRUE(strcmp(nxe_status_name(NXE_ERROR_SHAPE_MISMATCH), "NXE_ERROR_SHAPE_MISMATCH") == 0);
    EXPECT_TRUE(strcmp(nxe_status_name(NXE_ERROR_INTERNAL), "NXE_ERROR_INTERNAL") == 0);
    const char *unknown = nxe_status_name(12345);
    EXPECT_TRUE(unknown != NULL && unknown[0] != '\0');
    EXPECT_TRUE(nxe_last_error() != NULL);
}

static char logged[1024];
static int32_t logged_level = -1;
static int log_calls;

static void capture_log(void *user_data, int32_t level, const char *message)
{
    (void)user_data;
    log_calls++;
    if (level == NXE_LOG_WARNING) {
        logged_level = level;
        snprintf(logged, sizeof logged, "%s", message);
    }
}

static void test_log_callback_rejects_bad_levels_and_delivers_warnings(void)
{
    EXPECT_FAIL(nxe_set_log_callback(capture_log, NULL, -1), NXE_ERROR_INVALID_ARGUMENT,
                "max_level");
    EXPECT_FAIL(nxe_set_log_callback(capture_log, NULL, NXE_LOG_DEBUG + 1),
                NXE_ERROR_INVALID_ARGUMENT, "max_level");
    EXPECT_OK(nxe_set_log_callback(capture_log, NULL, NXE_LOG_WARNING));

    /* A produced but never consumed TRANSIENT tensor compiles, with a warning naming it. */
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *unused =
        add_tensor(graph, "unused", NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, -1, NULL);
    add_op(graph, "Relu", "relu", &x, 1, &y, 1);
    add_op(graph, "Tanh", "tanh", &x, 1, &unused, 1);
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    EXPECT_TRUE(logged_level == NXE_LOG_WARNING && strstr(logged, "unused") != NULL);
    nxe_executable_release(exe);

    /* Silenced: nothing more arrives. */
    EXPECT_OK(nxe_set_log_callback(NULL, NULL, NXE_LOG_DEBUG));
    int calls_before = log_calls;
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    EXPECT_TRUE(log_calls == calls_before);
    nxe_executable_release(exe);
    nxe_graph_release(graph);
}

static void test_dtype_queries_reject_unknown_dtypes(void)
{
    const char *name = SENTINEL;
    int32_t size = 99;
    EXPECT_FAIL(nxe_dtype_info(NXE_DTYPE_NONE, &name, &size), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_dtype_info");
    EXPECT_TRUE(name == NULL && size == 0);
    EXPECT_FAIL(nxe_dtype_info(NXE_DTYPE_COUNT, &name, &size), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_dtype_info");
    EXPECT_FAIL(nxe_dtype_info(-1, &name, &size), NXE_ERROR_INVALID_ARGUMENT, "nxe_dtype_info");
    EXPECT_OK(nxe_dtype_info(NXE_DTYPE_BF16, &name, &size));
    EXPECT_TRUE(name && strcmp(name, "bf16") == 0 && size == 2);

    int32_t code = 99, bits = 99;
    EXPECT_FAIL(nxe_dtype_to_dlpack(NXE_DTYPE_F32, NULL, &bits), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_dtype_to_dlpack");
    EXPECT_TRUE(bits == 0);
    EXPECT_FAIL(nxe_dtype_to_dlpack(42, &code, &bits), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_dtype_to_dlpack");
    EXPECT_TRUE(code == 0 && bits == 0);
    EXPECT_OK(nxe_dtype_to_dlpack(NXE_DTYPE_I16, &code, &bits));
    EXPECT_TRUE(code == NXE_DL_INT && bits == 16);

    int32_t dtype = 99;
    EXPECT_FAIL(nxe_dtype_from_dlpack(NXE_DL_FLOAT, 32, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_dtype_from_dlpack");
    EXPECT_FAIL(nxe_dtype_from_dlpack(NXE_DL_FLOAT, 128, &dtype), NXE_ERROR_DTYPE_MISMATCH,
                "128 bits");
    EXPECT_TRUE(dtype == NXE_DTYPE_NONE);
    EXPECT_OK(nxe_dtype_from_dlpack(NXE_DL_FLOAT, 64, &dtype));
    EXPECT_TRUE(dtype == NXE_DTYPE_F64);
    EXPECT_OK(nxe_dtype_from_dlpack(NXE_DL_BFLOAT, 16, &dtype));
    EXPECT_TRUE(dtype == NXE_DTYPE_BF16);
}

/* ---- contexts and graphs ---- */

static void test_context_and_graph_creation_reject_null(void)
{
    EXPECT_FAIL(nxe_context_create(NULL), NXE_ERROR_INVALID_ARGUMENT, "nxe_context_create");
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *graph = SENTINEL;
    EXPECT_FAIL(nxe_graph_create(NULL, &graph), NXE_ERROR_INVALID_ARGUMENT, "context");
    EXPECT_TRUE(graph == NULL);
    EXPECT_FAIL(nxe_graph_create(ctx, NULL), NXE_ERROR_INVALID_ARGUMENT, "nxe_graph_create");
    /* The graph keeps the context alive after the caller lets go. */
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    nxe_context_release(ctx);
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    EXPECT_TRUE(x != NULL);
    nxe_graph_release(graph);

    nxe_context_release(NULL);
    nxe_graph_release(NULL);
    nxe_executable_release(NULL);
}

/* ---- tensors ---- */

static void expect_add_tensor_fails(nxe_graph *graph, const nxe_tensor_spec *spec,
                                    nxe_status status, const char *needle, int line)
{
    nxe_tensor *out = SENTINEL;
    expect_status(nxe_graph_add_tensor(graph, spec, &out), status, needle, "nxe_graph_add_tensor",
                  line);
    checks++;
    if (out != NULL)
        fail(line, "nxe_graph_add_tensor", "out-param not cleared on failure");
}

static void test_add_tensor_rejects_bad_specs(void)
{
    nxe_graph *graph = new_graph();
    int64_t shape7[7] = {1, 1, 1, 1, 1, 1, 1};
    int64_t negative[2] = {2, -3};
    int64_t unknown[2] = {2, -1};
    int64_t huge[2] = {INT64_MAX / 2, 4};
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = "t";
    spec.kind = NXE_TENSOR_INPUT;
    spec.ndim = 2;
    spec.shape = shape_2x3;

    nxe_tensor *out = SENTINEL;
    EXPECT_FAIL(nxe_graph_add_tensor(NULL, &spec, &out), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_TRUE(out == NULL);
    EXPECT_FAIL(nxe_graph_add_tensor(graph, NULL, &out), NXE_ERROR_INVALID_ARGUMENT, "spec");
    EXPECT_FAIL(nxe_graph_add_tensor(graph, &spec, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_graph_add_tensor");

    nxe_tensor_spec bad = spec;
    bad.struct_size = 0;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "struct_size", __LINE__);
    bad = spec;
    bad.ndim = 7;
    bad.shape = shape7;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "rank 7", __LINE__);
    bad = spec;
    bad.shape = negative;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_SHAPE_MISMATCH, "'t'", __LINE__);
    bad = spec;
    bad.shape = unknown; /* only OUTPUT/TRANSIENT dims may be left to inference */
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_SHAPE_MISMATCH, "'t'", __LINE__);
    bad = spec;
    bad.ndim = -1;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "'t'", __LINE__);
    bad = spec;
    bad.ndim = -2;
    bad.kind = NXE_TENSOR_TRANSIENT;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "'t'", __LINE__);
    bad = spec;
    bad.shape = NULL;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "shape is NULL", __LINE__);
    bad = spec;
    bad.shape = huge;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_SHAPE_MISMATCH, "too large", __LINE__);
    bad = spec;
    bad.dtype = 77;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_DTYPE_MISMATCH, "dtype", __LINE__);
    bad = spec;
    bad.dtype = NXE_DTYPE_NONE; /* an INPUT's dtype cannot be inferred */
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_DTYPE_MISMATCH, "'t'", __LINE__);
    bad = spec;
    bad.kind = 0;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "kind", __LINE__);
    bad.kind = NXE_TENSOR_VARIABLE + 1;
    expect_add_tensor_fails(graph, &bad, NXE_ERROR_INVALID_ARGUMENT, "kind", __LINE__);

    nxe_tensor *t = add_tensor(graph, "t", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    EXPECT_TRUE(t != NULL);
    expect_add_tensor_fails(graph, &spec, NXE_ERROR_INVALID_ARGUMENT, "'t'", __LINE__);

    /* Nameless tensors get a generated, findable name. */
    spec.name = NULL;
    nxe_tensor *anonymous = NULL;
    EXPECT_OK(nxe_graph_add_tensor(graph, &spec, &anonymous));
    nxe_tensor_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_tensor_get_info(anonymous, &info));
    EXPECT_TRUE(info.name != NULL && info.name[0] != '\0');
    nxe_graph_release(graph);
}

static void test_find_tensor_reports_missing_names(void)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *found = SENTINEL;
    EXPECT_FAIL(nxe_graph_find_tensor(NULL, "x", &found), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_TRUE(found == NULL);
    found = SENTINEL;
    EXPECT_FAIL(nxe_graph_find_tensor(graph, NULL, &found), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_TRUE(found == NULL);
    EXPECT_FAIL(nxe_graph_find_tensor(graph, "x", NULL), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_graph_find_tensor");
    found = SENTINEL;
    EXPECT_FAIL(nxe_graph_find_tensor(graph, "nope", &found), NXE_ERROR_NOT_FOUND, "'nope'");
    EXPECT_TRUE(found == NULL);
    EXPECT_OK(nxe_graph_find_tensor(graph, "x", &found));
    EXPECT_TRUE(found == x);
    nxe_graph_release(graph);
}

static void test_tensor_rename_rejects_null_empty_and_taken_names(void)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    add_tensor(graph, "taken", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *found = NULL;

    EXPECT_FAIL(nxe_tensor_set_name(NULL, "a"), NXE_ERROR_INVALID_ARGUMENT, "tensor is NULL");
    EXPECT_FAIL(nxe_tensor_set_name(x, NULL), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_tensor_set_name(x, ""), NXE_ERROR_INVALID_ARGUMENT, "empty");
    EXPECT_FAIL(nxe_tensor_set_name(x, "taken"), NXE_ERROR_INVALID_ARGUMENT, "'taken'");
    EXPECT_OK(nxe_tensor_set_name(x, "x"));
    EXPECT_OK(nxe_tensor_set_name(x, "renamed"));
    EXPECT_OK(nxe_graph_find_tensor(graph, "renamed", &found));
    EXPECT_TRUE(found == x);
    EXPECT_FAIL(nxe_graph_find_tensor(graph, "x", &found), NXE_ERROR_NOT_FOUND, "'x'");
    nxe_graph_release(graph);
}

static void test_remove_op_undoes_bindings_and_rejects_foreign_ops(void)
{
    nxe_graph *graph = new_graph();
    nxe_graph *other = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *ox = add_tensor(other, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *oy = add_tensor(other, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_op *foreign = add_op(other, "Relu", "foreign", &ox, 1, &oy, 1);
    nxe_op *first = add_op(graph, "Tanh", "first", &x, 1, &y, 1);
    nxe_executable *exe = NULL;

    EXPECT_FAIL(nxe_graph_remove_op(NULL, first), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_FAIL(nxe_graph_remove_op(graph, NULL), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_graph_remove_op(graph, foreign), NXE_ERROR_NOT_FOUND, "'foreign'");
    EXPECT_OK(nxe_graph_remove_op(graph, first));
    /* y lost its producer and x its consumer: the graph is empty again */
    EXPECT_FAIL(nxe_graph_compile(graph, NULL, &exe), NXE_ERROR_INVALID_GRAPH, "'x'");
    /* and y can be produced by a new op */
    add_op(graph, "Relu", "second", &x, 1, &y, 1);
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    nxe_executable_release(exe);
    nxe_graph_release(graph);
    nxe_graph_release(other);
}

static void test_keep_outputs_checks_names_and_prunes(void)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *a = add_tensor(graph, "a", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *b = add_tensor(graph, "b", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *ya = add_tensor(graph, "ya", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *yb = add_tensor(graph, "yb", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    add_op(graph, "Relu", "relu", &a, 1, &ya, 1);
    add_op(graph, "Tanh", "tanh", &b, 1, &yb, 1);
    const char *keep_b[] = {"yb"}, *missing[] = {"nope"}, *not_output[] = {"a"}, *null[] = {NULL};
    nxe_executable *exe = NULL;

    EXPECT_FAIL(nxe_graph_keep_outputs(NULL, keep_b, 1), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_FAIL(nxe_graph_keep_outputs(graph, NULL, 1), NXE_ERROR_INVALID_ARGUMENT, "names");
    EXPECT_FAIL(nxe_graph_keep_outputs(graph, keep_b, 0), NXE_ERROR_INVALID_ARGUMENT, "count");
    EXPECT_FAIL(nxe_graph_keep_outputs(graph, null, 1), NXE_ERROR_INVALID_ARGUMENT, "names[0]");
    EXPECT_FAIL(nxe_graph_keep_outputs(graph, missing, 1), NXE_ERROR_NOT_FOUND, "'nope'");
    EXPECT_FAIL(nxe_graph_keep_outputs(graph, not_output, 1), NXE_ERROR_INVALID_GRAPH, "'a'");
    EXPECT_OK(nxe_graph_keep_outputs(graph, keep_b, 1));
    nxe_tensor *found = NULL;
    EXPECT_FAIL(nxe_graph_find_tensor(graph, "a", &found), NXE_ERROR_NOT_FOUND, "'a'");
    EXPECT_OK(nxe_graph_find_tensor(graph, "b", &found));
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    int32_t inputs = 0, outputs = 0;
    EXPECT_OK(nxe_executable_io_count(exe, &inputs, &outputs));
    EXPECT_TRUE(inputs == 1 && outputs == 1);
    nxe_executable_release(exe);
    nxe_graph_release(graph);
}

static void test_tensor_kind_and_data_setters_check_the_kind(void)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *c = add_tensor(graph, "c", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *s = add_tensor(graph, "s", NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, -1, NULL);
    float values[6] = {0};

    EXPECT_FAIL(nxe_tensor_set_kind(NULL, NXE_TENSOR_OUTPUT), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_tensor_set_kind");
    EXPECT_FAIL(nxe_tensor_set_kind(x, NXE_TENSOR_OUTPUT), NXE_ERROR_INVALID_ARGUMENT, "'x'");
    EXPECT_FAIL(nxe_tensor_set_kind(s, NXE_TENSOR_CONSTANT), NXE_ERROR_INVALID_ARGUMENT, "'s'");
    EXPECT_FAIL(nxe_tensor_set_kind(s, 42), NXE_ERROR_INVALID_ARGUMENT, "'s'");
    EXPECT_OK(nxe_tensor_set_kind(s, NXE_TENSOR_OUTPUT));
    EXPECT_OK(nxe_tensor_set_kind(s, NXE_TENSOR_TRANSIENT));

    EXPECT_FAIL(nxe_tensor_set_data(NULL, values, sizeof values), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_tensor_set_data");
    EXPECT_FAIL(nxe_tensor_set_data(x, values, sizeof values), NXE_ERROR_INVALID_ARGUMENT, "'x'");
    EXPECT_FAIL(nxe_tensor_set_data(s, values, sizeof values), NXE_ERROR_INVALID_ARGUMENT, "'s'");
    EXPECT_FAIL(nxe_tensor_set_data(c, values, sizeof values - 1), NXE_ERROR_SHAPE_MISMATCH, "'c'");
    EXPECT_FAIL(nxe_tensor_set_data(c, NULL, sizeof values), NXE_ERROR_INVALID_ARGUMENT, "'c'");
    EXPECT_OK(nxe_tensor_set_data(c, values, sizeof values));
    nxe_graph_release(graph);
}

static void test_quantization_setters_reject_bad_parameters(void)
{
    nxe_graph *graph = new_graph();
    int64_t shape[2] = {3, 4};
    nxe_tensor *w = add_tensor(graph, "w", NXE_TENSOR_CONSTANT, NXE_DTYPE_I8, 2, shape);
    const float scales[3] = {0.5f, 0.25f, 0.125f};
    const float bad_scales[3] = {0.5f, -1.0f, 0.125f};

    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(NULL, 1.0f, 0), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_tensor_set_quant_asymmetric");
    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(w, 0.0f, 0), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(w, -0.5f, 0), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(w, NAN, 0), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(w, INFINITY, 0), NXE_ERROR_INVALID_ARGUMENT, "'w'");

    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(NULL, 0, scales, 3), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_tensor_set_quant_per_channel");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, 0, NULL, 3), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, 0, scales, 0), NXE_ERROR_INVALID_ARGUMENT,
                "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, 2, scales, 3), NXE_ERROR_INVALID_ARGUMENT,
                "axis 2");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, -1, scales, 3), NXE_ERROR_INVALID_ARGUMENT,
                "axis -1");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, 1, scales, 3), NXE_ERROR_SHAPE_MISMATCH, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_per_channel(w, 0, bad_scales, 3), NXE_ERROR_INVALID_ARGUMENT,
                "scale 1");

    EXPECT_FAIL(nxe_tensor_set_quant_dynamic_fixed_point(NULL, 3), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_tensor_set_quant_dynamic_fixed_point");
    EXPECT_FAIL(nxe_tensor_set_quant_dynamic_fixed_point(w, 65), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_FAIL(nxe_tensor_set_quant_dynamic_fixed_point(w, -65), NXE_ERROR_INVALID_ARGUMENT,
                "'w'");

    /* A failed setter leaves the previous quantization in place; a good one replaces it. */
    nxe_tensor_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_tensor_set_quant_per_channel(w, 0, scales, 3));
    EXPECT_FAIL(nxe_tensor_set_quant_asymmetric(w, -1.0f, 0), NXE_ERROR_INVALID_ARGUMENT, "'w'");
    EXPECT_OK(nxe_tensor_get_info(w, &info));
    EXPECT_TRUE(info.quant_type == NXE_QUANT_SYMMETRIC_PER_CHANNEL && info.axis == 0 &&
                info.num_scales == 3 && info.scales && info.scales[2] == 0.125f);
    EXPECT_OK(nxe_tensor_set_quant_asymmetric(w, 0.5f, -3));
    EXPECT_OK(nxe_tensor_get_info(w, &info));
    EXPECT_TRUE(info.quant_type == NXE_QUANT_ASYMMETRIC && info.scale == 0.5f &&
                info.zero_point == -3);
    EXPECT_OK(nxe_tensor_set_quant_dynamic_fixed_point(w, 7));
    EXPECT_OK(nxe_tensor_get_info(w, &info));
    EXPECT_TRUE(info.quant_type == NXE_QUANT_DYNAMIC_FIXED_POINT && info.fractional_length == 7);
    nxe_graph_release(graph);
}

static void test_tensor_info_checks_its_arguments(void)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_I16, 2, shape_2x3);
    nxe_tensor_info info = {.struct_size = sizeof info};
    EXPECT_FAIL(nxe_tensor_get_info(NULL, &info), NXE_ERROR_INVALID_ARGUMENT, "tensor");
    EXPECT_FAIL(nxe_tensor_get_info(x, NULL), NXE_ERROR_INVALID_ARGUMENT, "info");
    info.struct_size = 4;
    EXPECT_FAIL(nxe_tensor_get_info(x, &info), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info;
    EXPECT_OK(nxe_tensor_get_info(x, &info));
    EXPECT_TRUE(strcmp(info.name, "x") == 0 && info.dtype == NXE_DTYPE_I16 &&
                info.kind == NXE_TENSOR_INPUT && info.ndim == 2 && info.shape[0] == 2 &&
                info.shape[1] == 3 && info.quant_type == NXE_QUANT_NONE);
    nxe_graph_release(graph);
}

/* ---- ops and attributes ---- */

static void test_add_op_rejects_unknown_types_and_null(void)
{
    nxe_graph *graph = new_graph();
    nxe_op *op = SENTINEL;
    EXPECT_FAIL(nxe_graph_add_op(NULL, "Add", NULL, &op), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_TRUE(op == NULL);
    op = SENTINEL;
    EXPECT_FAIL(nxe_graph_add_op(graph, NULL, NULL, &op), NXE_ERROR_INVALID_ARGUMENT, "op_type");
    EXPECT_TRUE(op == NULL);
    EXPECT_FAIL(nxe_graph_add_op(graph, "Add", NULL, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_graph_add_op");
    op = SENTINEL;
    EXPECT_FAIL(nxe_graph_add_op(graph, "NoSuchOp", "n", &op), NXE_ERROR_NOT_FOUND, "'NoSuchOp'");
    EXPECT_TRUE(op == NULL);
    EXPECT_OK(nxe_graph_add_op(graph, "Add", NULL, &op));
    EXPECT_TRUE(op != NULL);
    nxe_graph_release(graph);
}

/* The first registered (op type, attribute) whose attribute has `type`, if any. */
static int find_attr_of_type(int32_t type, const char **op_type, const char **attr)
{
    int32_t count = 0;
    EXPECT_OK(nxe_op_registry_count(&count));
    for (int32_t i = 0; i < count; i++) {
        const nxe_op_info *info = NULL;
        EXPECT_OK(nxe_op_registry_get(i, &info));
        for (int32_t a = 0; info && a < info->num_attrs; a++) {
            if (info->attrs[a].type == type) {
                *op_type = info->name;
                *attr = info->attrs[a].name;
                return 1;
            }
        }
    }
    return 0;
}

/* Calls the setter for `setter_type` on op.attr with a harmless value. */
static nxe_status set_attr_as(nxe_op *op, const char *attr, int32_t setter_type)
{
    const int64_t ints[2] = {1, 1};
    const float floats[2] = {1.0f, 1.0f};
    switch (setter_type) {
    case NXE_ATTR_INT: return nxe_op_set_attr_int(op, attr, 1);
    case NXE_ATTR_FLOAT: return nxe_op_set_attr_float(op, attr, 1.0);
    case NXE_ATTR_STRING: return nxe_op_set_attr_string(op, attr, "x");
    case NXE_ATTR_INTS: return nxe_op_set_attr_ints(op, attr, ints, 2);
    default: return nxe_op_set_attr_floats(op, attr, floats, 2);
    }
}

static void test_attribute_setters_check_names_and_types(void)
{
    nxe_graph *graph = new_graph();
    const int64_t ints[2] = {1, 1};
    const float floats[2] = {1.0f, 1.0f};
    nxe_op *add = NULL;
    EXPECT_OK(nxe_graph_add_op(graph, "Add", "adder", &add));

    /* NULL op, NULL name and an attribute the schema lacks, for every setter. */
    EXPECT_FAIL(nxe_op_set_attr_int(NULL, "axis", 1), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_op_set_attr_int(add, NULL, 1), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_op_set_attr_int(add, "bogus", 1), NXE_ERROR_NOT_FOUND, "'bogus'");
    EXPECT_FAIL(nxe_op_set_attr_float(NULL, "alpha", 1.0), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_op_set_attr_float(add, NULL, 1.0), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_op_set_attr_float(add, "bogus", 1.0), NXE_ERROR_NOT_FOUND, "'adder'");
    EXPECT_FAIL(nxe_op_set_attr_string(NULL, "mode", "x"), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_op_set_attr_string");
    EXPECT_FAIL(nxe_op_set_attr_string(add, NULL, "x"), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_op_set_attr_string(add, "bogus", "x"), NXE_ERROR_NOT_FOUND, "'bogus'");
    EXPECT_FAIL(nxe_op_set_attr_ints(NULL, "axes", ints, 2), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_op_set_attr_ints(add, NULL, ints, 2), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_op_set_attr_ints(add, "bogus", ints, 2), NXE_ERROR_NOT_FOUND, "'bogus'");
    EXPECT_FAIL(nxe_op_set_attr_floats(NULL, "scales", floats, 2), NXE_ERROR_INVALID_ARGUMENT,
                "op");
    EXPECT_FAIL(nxe_op_set_attr_floats(add, NULL, floats, 2), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_op_set_attr_floats(add, "bogus", floats, 2), NXE_ERROR_NOT_FOUND, "'bogus'");

    /* Value arguments. */
    EXPECT_FAIL(nxe_op_set_attr_string(add, "bogus", NULL), NXE_ERROR_INVALID_ARGUMENT, "value");
    EXPECT_FAIL(nxe_op_set_attr_ints(add, "bogus", NULL, 2), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_op_set_attr_ints");
    EXPECT_FAIL(nxe_op_set_attr_ints(add, "bogus", ints, -1), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_op_set_attr_ints");
    EXPECT_FAIL(nxe_op_set_attr_floats(add, "bogus", NULL, 2), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_op_set_attr_floats");
    EXPECT_FAIL(nxe_op_set_attr_floats(add, "bogus", floats, -1), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_op_set_attr_floats");

    /* Every attribute type the registry uses: its own setter works, every other one fails. */
    for (int32_t type = NXE_ATTR_INT; type <= NXE_ATTR_FLOATS; type++) {
        const char *op_type = NULL, *attr = NULL;
        if (!find_attr_of_type(type, &op_type, &attr))
            continue;
        nxe_op *op = NULL;
        EXPECT_OK(nxe_graph_add_op(graph, op_type, NULL, &op));
        for (int32_t setter = NXE_ATTR_INT; setter <= NXE_ATTR_FLOATS; setter++) {
            if (setter == type)
                EXPECT_OK(set_attr_as(op, attr, setter));
            else
                EXPECT_FAIL(set_attr_as(op, attr, setter), NXE_ERROR_INVALID_ARGUMENT, attr);
        }
    }
    nxe_graph_release(graph);
}

static void test_binding_rejects_bad_counts_nulls_and_double_binding(void)
{
    nxe_graph *graph = new_graph();
    nxe_graph *other = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *z = add_tensor(graph, "z", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *foreign =
        add_tensor(other, "foreign", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_op *add = NULL, *relu = NULL, *tanh_op = NULL, *split = NULL;
    EXPECT_OK(nxe_graph_add_op(graph, "Add", "add", &add));
    EXPECT_OK(nxe_graph_add_op(graph, "Relu", "relu", &relu));
    EXPECT_OK(nxe_graph_add_op(graph, "Tanh", "tanh", &tanh_op));
    EXPECT_OK(nxe_graph_add_op(graph, "Split", "split", &split));
    nxe_tensor *pair[2] = {x, x};
    nxe_tensor *three[3] = {x, x, x};
    nxe_tensor *with_null[2] = {x, NULL};
    nxe_tensor *with_foreign[2] = {x, foreign};

    EXPECT_FAIL(nxe_op_bind_inputs(NULL, pair, 2), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_op_bind_inputs(add, NULL, 2), NXE_ERROR_INVALID_ARGUMENT, "tensors");
    EXPECT_FAIL(nxe_op_bind_inputs(add, pair, 1), NXE_ERROR_INVALID_ARGUMENT, "'add'");
    EXPECT_FAIL(nxe_op_bind_inputs(add, three, 3), NXE_ERROR_INVALID_ARGUMENT, "'add'");
    EXPECT_FAIL(nxe_op_bind_inputs(add, pair, -1), NXE_ERROR_INVALID_ARGUMENT, "'add'");
    EXPECT_FAIL(nxe_op_bind_inputs(add, with_null, 2), NXE_ERROR_INVALID_ARGUMENT, "required");
    EXPECT_FAIL(nxe_op_bind_inputs(add, with_foreign, 2), NXE_ERROR_INVALID_ARGUMENT, "'foreign'");
    EXPECT_OK(nxe_op_bind_inputs(add, pair, 2));
    EXPECT_FAIL(nxe_op_bind_inputs(add, pair, 2), NXE_ERROR_INVALID_STATE, "'add'");

    nxe_tensor *outputs_with_null[1] = {NULL};
    EXPECT_FAIL(nxe_op_bind_outputs(NULL, &y, 1), NXE_ERROR_INVALID_ARGUMENT, "op");
    EXPECT_FAIL(nxe_op_bind_outputs(add, NULL, 1), NXE_ERROR_INVALID_ARGUMENT, "tensors");
    EXPECT_FAIL(nxe_op_bind_outputs(add, outputs_with_null, 1), NXE_ERROR_INVALID_ARGUMENT,
                "'add'");
    EXPECT_FAIL(nxe_op_bind_outputs(add, &x, 1), NXE_ERROR_INVALID_GRAPH, "'x'");
    EXPECT_FAIL(nxe_op_bind_outputs(add, &foreign, 1), NXE_ERROR_INVALID_ARGUMENT, "'foreign'");
    EXPECT_FAIL(nxe_op_bind_outputs(add, pair, 2), NXE_ERROR_INVALID_ARGUMENT, "'add'");
    EXPECT_OK(nxe_op_bind_outputs(add, &y, 1));
    EXPECT_FAIL(nxe_op_bind_outputs(add, &z, 1), NXE_ERROR_INVALID_STATE, "'add'");

    /* One tensor, two producers: the second binding names both ops. */
    EXPECT_OK(nxe_op_bind_inputs(relu, &x, 1));
    EXPECT_FAIL(nxe_op_bind_outputs(relu, &y, 1), NXE_ERROR_INVALID_GRAPH, "'add'");
    EXPECT_OK(nxe_op_bind_outputs(relu, &z, 1));

    /* The same tensor twice among one op's outputs. */
    nxe_tensor *w = add_tensor(graph, "w", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *twice[2] = {w, w};
    EXPECT_OK(nxe_op_bind_inputs(split, &x, 1));
    EXPECT_FAIL(nxe_op_bind_outputs(split, twice, 2), NXE_ERROR_INVALID_GRAPH, "'w'");

    /* An op whose inputs were never bound is reported by the compiler. */
    nxe_tensor *v = add_tensor(graph, "v", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    EXPECT_OK(nxe_op_bind_outputs(tanh_op, &v, 1));
    nxe_executable *exe = SENTINEL;
    EXPECT_FAIL(nxe_graph_compile(graph, NULL, &exe), NXE_ERROR_INVALID_GRAPH, "'tanh'");
    EXPECT_TRUE(exe == NULL);
    nxe_graph_release(other);
    nxe_graph_release(graph);
}

/* ---- the registry ---- */

static void test_registry_lookups_reject_bad_indices_and_names(void)
{
    int32_t count = 0;
    EXPECT_FAIL(nxe_op_registry_count(NULL), NXE_ERROR_INVALID_ARGUMENT, "count");
    EXPECT_OK(nxe_op_registry_count(&count));
    EXPECT_TRUE(count > 0);

    const nxe_op_info *info = SENTINEL;
    EXPECT_FAIL(nxe_op_registry_get(-1, &info), NXE_ERROR_NOT_FOUND, "-1");
    EXPECT_TRUE(info == NULL);
    info = SENTINEL;
    EXPECT_FAIL(nxe_op_registry_get(count, &info), NXE_ERROR_NOT_FOUND, "nxe_op_registry_get");
    EXPECT_TRUE(info == NULL);
    EXPECT_FAIL(nxe_op_registry_get(0, NULL), NXE_ERROR_INVALID_ARGUMENT, "info");
    info = SENTINEL;
    EXPECT_FAIL(nxe_op_registry_find(NULL, &info), NXE_ERROR_INVALID_ARGUMENT, "op_type");
    EXPECT_TRUE(info == NULL);
    EXPECT_FAIL(nxe_op_registry_find("Add", NULL), NXE_ERROR_INVALID_ARGUMENT, "info");
    info = SENTINEL;
    EXPECT_FAIL(nxe_op_registry_find("NoSuchOp", &info), NXE_ERROR_NOT_FOUND, "'NoSuchOp'");
    EXPECT_TRUE(info == NULL);

    /* Every entry is complete, unique by name, and found by name at the same address. */
    for (int32_t i = 0; i < count; i++) {
        const nxe_op_info *entry = NULL, *found = NULL;
        EXPECT_OK(nxe_op_registry_get(i, &entry));
        if (!entry)
            continue;
        EXPECT_TRUE(entry->struct_size >= sizeof(nxe_op_info) && entry->name && entry->summary);
        EXPECT_OK(nxe_op_registry_find(entry->name, &found));
        EXPECT_TRUE(found == entry);
        for (int32_t a = 0; a < entry->num_attrs; a++)
            EXPECT_TRUE(entry->attrs[a].type >= NXE_ATTR_INT &&
                        entry->attrs[a].type <= NXE_ATTR_FLOATS);
        for (int32_t p = 0; p + 1 < entry->num_inputs; p++)
            EXPECT_TRUE(!entry->inputs[p].variadic);
    }
}

/* ---- compiling ---- */

static void expect_compile_fails(nxe_graph *graph, nxe_status status, const char *needle,
                                 const char *needle2, int line)
{
    nxe_executable *exe = SENTINEL;
    expect_status(nxe_graph_compile(graph, NULL, &exe), status, needle, "nxe_graph_compile", line);
    checks++;
    if (exe != NULL)
        fail(line, "nxe_graph_compile", "out-param not cleared on failure");
    if (needle2 && !strstr(nxe_last_error(), needle2))
        fail(line, "nxe_graph_compile", "message does not name the second culprit");
    nxe_graph_release(graph);
}

static void test_compile_rejects_null_and_bad_options(void)
{
    nxe_graph *graph = new_graph();
    nxe_executable *exe = SENTINEL;
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    EXPECT_FAIL(nxe_graph_compile(NULL, &options, &exe), NXE_ERROR_INVALID_ARGUMENT, "graph");
    EXPECT_TRUE(exe == NULL);
    EXPECT_FAIL(nxe_graph_compile(graph, &options, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "nxe_graph_compile");
    options.struct_size = 2;
    exe = SENTINEL;
    EXPECT_FAIL(nxe_graph_compile(graph, &options, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "struct_size");
    EXPECT_TRUE(exe == NULL);
    options = (nxe_compile_options)NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = -1;
    EXPECT_FAIL(nxe_graph_compile(graph, &options, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "num_threads");
    options = (nxe_compile_options)NXE_COMPILE_OPTIONS_INIT;
    options.winograd = 3;
    EXPECT_FAIL(nxe_graph_compile(graph, &options, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "options.winograd is 3");
    nxe_graph_release(graph);
    /* A 0.6 caller's options end before winograd: accepted, meaning NXE_WINOGRAD_AUTO. */
    graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    add_op(graph, "Relu", "relu", &x, 1, &y, 1);
    options.struct_size = (uint32_t)offsetof(nxe_compile_options, winograd);
    EXPECT_TRUE(nxe_graph_compile(graph, &options, &exe) == NXE_OK && exe != NULL);
    nxe_executable_release(exe);
    nxe_graph_release(graph);
}

static void test_compile_rejects_invalid_graphs_naming_the_culprit(void)
{
    /* A -> B -> A: a cycle naming both ops. */
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *a = add_tensor(graph, "a", NXE_TENSOR_TRANSIENT, NXE_DTYPE_F32, -1, NULL);
    nxe_tensor *b = add_tensor(graph, "b", NXE_TENSOR_TRANSIENT, NXE_DTYPE_F32, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *first_in[2] = {x, b};
    add_op(graph, "Add", "first", first_in, 2, &a, 1);
    add_op(graph, "Relu", "second", &a, 1, &b, 1);
    add_op(graph, "Relu", "third", &a, 1, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "'first'", "'second'", __LINE__);

    /* An INPUT that no op reads. */
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *idle = add_tensor(graph, "idle", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    add_op(graph, "Relu", "relu", &x, 1, &y, 1);
    (void)idle;
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "'idle'", NULL, __LINE__);

    /* A tensor consumed but never produced. */
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *orphan =
        add_tensor(graph, "orphan", NXE_TENSOR_TRANSIENT, NXE_DTYPE_F32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *orphan_in[2] = {x, orphan};
    add_op(graph, "Add", "adder", orphan_in, 2, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "'orphan'", "'adder'", __LINE__);

    /* An OUTPUT nothing produces, and a graph without outputs. */
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *lost = add_tensor(graph, "lost", NXE_TENSOR_OUTPUT, NXE_DTYPE_F32, 2, shape_2x3);
    add_op(graph, "Relu", "relu", &x, 1, &y, 1);
    (void)lost;
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "'lost'", NULL, __LINE__);
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *s = add_tensor(graph, "s", NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, -1, NULL);
    add_op(graph, "Relu", "relu", &x, 1, &s, 1);
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "OUTPUT", NULL, __LINE__);

    /* A CONSTANT without data. */
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *empty =
        add_tensor(graph, "empty", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *empty_in[2] = {x, empty};
    add_op(graph, "Add", "add", empty_in, 2, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_INVALID_GRAPH, "'empty'", NULL, __LINE__);

    /* Shapes that do not broadcast, and mixed dtypes, name the op. */
    graph = new_graph();
    int64_t shape_4x5[2] = {4, 5};
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *wide = add_tensor(graph, "wide", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_4x5);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *mismatched[2] = {x, wide};
    add_op(graph, "Add", "adder", mismatched, 2, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_SHAPE_MISMATCH, "'adder'", NULL, __LINE__);
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *ints = add_tensor(graph, "ints", NXE_TENSOR_INPUT, NXE_DTYPE_I32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    nxe_tensor *mixed[2] = {x, ints};
    add_op(graph, "Add", "adder", mixed, 2, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_DTYPE_MISMATCH, "'adder'", NULL, __LINE__);

    /* A declared output shape that inference contradicts. */
    graph = new_graph();
    x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_F32, 2, shape_4x5);
    add_op(graph, "Relu", "relu", &x, 1, &y, 1);
    expect_compile_fails(graph, NXE_ERROR_SHAPE_MISMATCH, "'y'", NULL, __LINE__);
}

/* ---- executables ---- */

static void test_executable_queries_reject_null_and_out_of_range_indices(void)
{
    const float bias[6] = {0};
    nxe_executable *exe = compile_add_relu(bias);
    if (!exe)
        return;
    int32_t num_inputs = 99, num_outputs = 99;
    EXPECT_FAIL(nxe_executable_io_count(NULL, &num_inputs, &num_outputs),
                NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_TRUE(num_inputs == 0 && num_outputs == 0);
    EXPECT_FAIL(nxe_executable_io_count(exe, NULL, &num_outputs), NXE_ERROR_INVALID_ARGUMENT,
                "num_inputs");
    EXPECT_FAIL(nxe_executable_io_count(exe, &num_inputs, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "num_outputs");
    EXPECT_OK(nxe_executable_io_count(exe, &num_inputs, &num_outputs));
    EXPECT_TRUE(num_inputs == 1 && num_outputs == 1);

    nxe_tensor_desc desc;
    const char *name = SENTINEL;
    memset(&desc, 0xff, sizeof desc);
    EXPECT_FAIL(nxe_executable_input_desc(exe, 1, &desc, &name), NXE_ERROR_NOT_FOUND, "index 1");
    EXPECT_TRUE(name == NULL && desc.ndim == 0 && desc.data_size == 0);
    name = SENTINEL;
    EXPECT_FAIL(nxe_executable_input_desc(exe, -1, &desc, &name), NXE_ERROR_NOT_FOUND, "index -1");
    EXPECT_TRUE(name == NULL);
    EXPECT_FAIL(nxe_executable_input_desc(NULL, 0, &desc, &name), NXE_ERROR_INVALID_ARGUMENT,
                "exe");
    EXPECT_FAIL(nxe_executable_input_desc(exe, 0, NULL, &name), NXE_ERROR_INVALID_ARGUMENT, "desc");
    name = SENTINEL;
    EXPECT_FAIL(nxe_executable_output_desc(exe, 1, &desc, &name), NXE_ERROR_NOT_FOUND, "index 1");
    EXPECT_TRUE(name == NULL);
    EXPECT_FAIL(nxe_executable_output_desc(NULL, 0, &desc, &name), NXE_ERROR_INVALID_ARGUMENT,
                "exe");
    EXPECT_FAIL(nxe_executable_output_desc(exe, 0, NULL, &name), NXE_ERROR_INVALID_ARGUMENT,
                "desc");

    EXPECT_OK(nxe_executable_input_desc(exe, 0, &desc, &name));
    EXPECT_TRUE(name && strcmp(name, "x") == 0 && desc.data == NULL &&
                desc.data_size == 6 * sizeof(float) && desc.ndim == 2 && desc.shape[0] == 2 &&
                desc.shape[1] == 3 && desc.dtype_code == NXE_DL_FLOAT && desc.dtype_bits == 32);
    EXPECT_OK(nxe_executable_output_desc(exe, 0, &desc, NULL));
    EXPECT_TRUE(desc.ndim == 2 && desc.shape[0] == 2 && desc.shape[1] == 3);

    nxe_memory_info info = {.struct_size = sizeof info};
    EXPECT_FAIL(nxe_executable_memory_info(NULL, &info), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_memory_info(exe, NULL), NXE_ERROR_INVALID_ARGUMENT, "info");
    info.struct_size = 3;
    EXPECT_FAIL(nxe_executable_memory_info(exe, &info), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info;
    EXPECT_OK(nxe_executable_memory_info(exe, &info));
    EXPECT_TRUE(info.num_threads == 1 && info.num_steps == 2 &&
                info.constant_bytes >= 6 * sizeof(float));
    nxe_executable_release(exe);
}

static void test_run_rejects_mismatched_descriptors(void)
{
    const float bias[6] = {0};
    nxe_executable *exe = compile_add_relu(bias);
    if (!exe)
        return;
    float x[6] = {0}, y[6] = {0};
    int64_t shape_3x2[2] = {3, 2};
    int64_t shape7[7] = {1, 1, 1, 1, 1, 1, 1};
    nxe_tensor_desc in = f32_desc(x, sizeof x, 2, shape_2x3);
    nxe_tensor_desc out = f32_desc(y, sizeof y, 2, shape_2x3);

    EXPECT_FAIL(nxe_executable_run(NULL, &in, 1, &out, 1), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_run(exe, &in, 2, &out, 1), NXE_ERROR_INVALID_ARGUMENT, "1 inputs");
    EXPECT_FAIL(nxe_executable_run(exe, &in, 1, &out, 0), NXE_ERROR_INVALID_ARGUMENT, "1 outputs");
    EXPECT_FAIL(nxe_executable_run(exe, NULL, 1, &out, 1), NXE_ERROR_INVALID_ARGUMENT, "inputs");
    EXPECT_FAIL(nxe_executable_run(exe, &in, 1, NULL, 1), NXE_ERROR_INVALID_ARGUMENT, "outputs");

    nxe_tensor_desc bad = in;
    bad.dtype_bits = 16;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_DTYPE_MISMATCH, "'x'");
    bad = in;
    bad.dtype_code = NXE_DL_INT;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_DTYPE_MISMATCH, "'x'");
    bad = f32_desc(x, sizeof x, 2, shape_3x2);
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_SHAPE_MISMATCH, "'x'");
    bad = in;
    bad.ndim = 7;
    memcpy(bad.shape, shape7, sizeof bad.shape); /* the descriptor holds at most 6 dims */
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_SHAPE_MISMATCH, "'x'");
    bad = in;
    bad.ndim = -1;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_SHAPE_MISMATCH, "'x'");
    bad = in;
    bad.data_size = sizeof x - 1;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_BUFFER_TOO_SMALL, "'x'");
    bad = in;
    bad.data = NULL;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_INVALID_ARGUMENT, "'x'");
    bad = in;
    bad.reserved = 1;
    EXPECT_FAIL(nxe_executable_run(exe, &bad, 1, &out, 1), NXE_ERROR_INVALID_ARGUMENT, "reserved");
    bad = out;
    bad.data_size = 4;
    EXPECT_FAIL(nxe_executable_run(exe, &in, 1, &bad, 1), NXE_ERROR_BUFFER_TOO_SMALL, "'y'");
    bad = out;
    bad.dtype_code = NXE_DL_BFLOAT;
    bad.dtype_bits = 16;
    EXPECT_FAIL(nxe_executable_run(exe, &in, 1, &bad, 1), NXE_ERROR_DTYPE_MISMATCH, "'y'");

    EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
    nxe_executable_release(exe);
}

/* x + v -> y, where v is a VARIABLE. */
static nxe_executable *compile_variable_graph(const float *initial)
{
    nxe_graph *graph = new_graph();
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *v = add_tensor(graph, "v", NXE_TENSOR_VARIABLE, NXE_DTYPE_F32, 2, shape_2x3);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL);
    EXPECT_OK(nxe_tensor_set_data(v, initial, 6 * sizeof(float)));
    nxe_tensor *inputs[2] = {x, v};
    add_op(graph, "Add", "add", inputs, 2, &y, 1);
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(graph, NULL, &exe));
    nxe_graph_release(graph);
    return exe;
}

static void test_variables_reject_unknown_names_and_bad_descriptors(void)
{
    const float initial[6] = {1, 2, 3, 4, 5, 6};
    nxe_executable *exe = compile_variable_graph(initial);
    if (!exe)
        return;
    float value[6] = {0};
    int64_t shape_6[1] = {6};
    nxe_tensor_desc desc = f32_desc(value, sizeof value, 2, shape_2x3);
    nxe_tensor_desc flat = f32_desc(value, sizeof value, 1, shape_6);
    nxe_tensor_desc small = f32_desc(value, sizeof value - 4, 2, shape_2x3);

    EXPECT_FAIL(nxe_executable_read_variable(NULL, "v", &desc), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_read_variable(exe, NULL, &desc), NXE_ERROR_INVALID_ARGUMENT, "name");
    EXPECT_FAIL(nxe_executable_read_variable(exe, "v", NULL), NXE_ERROR_INVALID_ARGUMENT, "desc");
    EXPECT_FAIL(nxe_executable_read_variable(exe, "nope", &desc), NXE_ERROR_NOT_FOUND, "'nope'");
    EXPECT_FAIL(nxe_executable_read_variable(exe, "x", &desc), NXE_ERROR_NOT_FOUND, "'x'");
    EXPECT_FAIL(nxe_executable_read_variable(exe, "v", &flat), NXE_ERROR_SHAPE_MISMATCH, "'v'");
    EXPECT_FAIL(nxe_executable_read_variable(exe, "v", &small), NXE_ERROR_BUFFER_TOO_SMALL, "'v'");

    EXPECT_FAIL(nxe_executable_write_variable(NULL, "v", &desc), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_write_variable(exe, NULL, &desc), NXE_ERROR_INVALID_ARGUMENT,
                "name");
    EXPECT_FAIL(nxe_executable_write_variable(exe, "v", NULL), NXE_ERROR_INVALID_ARGUMENT, "desc");
    EXPECT_FAIL(nxe_executable_write_variable(exe, "nope", &desc), NXE_ERROR_NOT_FOUND, "'nope'");
    EXPECT_FAIL(nxe_executable_write_variable(exe, "v", &flat), NXE_ERROR_SHAPE_MISMATCH, "'v'");

    /* Failed calls changed nothing: the variable still holds its initial value. */
    EXPECT_OK(nxe_executable_read_variable(exe, "v", &desc));
    EXPECT_TRUE(memcmp(value, initial, sizeof value) == 0);
    nxe_executable_release(exe);
}

/* ---- results ---- */

static void test_add_relu_computes_what_plain_c_computes(void)
{
    const float bias[6] = {0.5f, -1.0f, 2.0f, -0.25f, 3.0f, -6.0f};
    nxe_executable *exe = compile_add_relu(bias);
    if (!exe)
        return;
    float x[6] = {1.0f, -2.0f, 3.0f, 0.25f, -5.0f, 6.5f}, y[6];
    nxe_tensor_desc in = f32_desc(x, sizeof x, 2, shape_2x3);
    nxe_tensor_desc out = f32_desc(y, sizeof y, 2, shape_2x3);
    for (int run = 0; run < 2; run++) {
        memset(y, 0xff, sizeof y);
        EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
        for (int i = 0; i < 6; i++) {
            float sum = x[i] + bias[i];
            EXPECT_TRUE(y[i] == (sum > 0.0f ? sum : 0.0f));
        }
        for (int i = 0; i < 6; i++)
            x[i] = -x[i] * 1.5f;
    }
    nxe_executable_release(exe);
}

static void test_variable_written_between_runs_is_used_by_the_next_run(void)
{
    const float initial[6] = {1, 2, 3, 4, 5, 6};
    nxe_executable *exe = compile_variable_graph(initial);
    if (!exe)
        return;
    float x[6] = {10, 20, 30, 40, 50, 60}, y[6], v[6] = {-1, -2, -3, -4, -5, -6};
    nxe_tensor_desc in = f32_desc(x, sizeof x, 2, shape_2x3);
    nxe_tensor_desc out = f32_desc(y, sizeof y, 2, shape_2x3);
    EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
    for (int i = 0; i < 6; i++)
        EXPECT_TRUE(y[i] == x[i] + initial[i]);
    nxe_tensor_desc vdesc = f32_desc(v, sizeof v, 2, shape_2x3);
    EXPECT_OK(nxe_executable_write_variable(exe, "v", &vdesc));
    EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
    for (int i = 0; i < 6; i++)
        EXPECT_TRUE(y[i] == x[i] + v[i]);
    float read_back[6] = {0};
    nxe_tensor_desc rdesc = f32_desc(read_back, sizeof read_back, 2, shape_2x3);
    EXPECT_OK(nxe_executable_read_variable(exe, "v", &rdesc));
    EXPECT_TRUE(memcmp(read_back, v, sizeof v) == 0);
    nxe_executable_release(exe);
}

static void test_cpu_info_checks_its_argument_and_names_a_level(void)
{
    EXPECT_FAIL(nxe_cpu_info_get(NULL), NXE_ERROR_INVALID_ARGUMENT, "nxe_cpu_info_get");
    nxe_cpu_info info = {0};
    info.struct_size = sizeof info - 1;
    EXPECT_FAIL(nxe_cpu_info_get(&info), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info;
    EXPECT_OK(nxe_cpu_info_get(&info));
    EXPECT_FAIL(nxe_cpu_kernels(NULL), NXE_ERROR_INVALID_ARGUMENT, "names");
    const char *kernel_names = NULL;
    EXPECT_OK(nxe_cpu_kernels(&kernel_names));
    EXPECT_TRUE(kernel_names != NULL && strncmp(kernel_names, "f32=", 4) == 0);
    EXPECT_TRUE(info.struct_size == sizeof info);
    EXPECT_TRUE(strcmp(info.isa, "scalar") == 0 || strcmp(info.isa, "avx2") == 0 ||
                strcmp(info.isa, "avx512") == 0 || strcmp(info.isa, "amx") == 0);
    EXPECT_TRUE(memchr(info.reason, '\0', sizeof info.reason) != NULL && info.reason[0] != '\0');
    EXPECT_TRUE((info.features & ~(uint64_t)0x7FF) == 0);
}

int main(void)
{
    test_versions_match_the_header();
    test_status_names_cover_known_and_unknown_codes();
    test_log_callback_rejects_bad_levels_and_delivers_warnings();
    test_dtype_queries_reject_unknown_dtypes();
    test_context_and_graph_creation_reject_null();
    test_add_tensor_rejects_bad_specs();
    test_find_tensor_reports_missing_names();
    test_tensor_rename_rejects_null_empty_and_taken_names();
    test_remove_op_undoes_bindings_and_rejects_foreign_ops();
    test_keep_outputs_checks_names_and_prunes();
    test_tensor_kind_and_data_setters_check_the_kind();
    test_quantization_setters_reject_bad_parameters();
    test_tensor_info_checks_its_arguments();
    test_add_op_rejects_unknown_types_and_null();
    test_attribute_setters_check_names_and_types();
    test_binding_rejects_bad_counts_nulls_and_double_binding();
    test_registry_lookups_reject_bad_indices_and_names();
    test_cpu_info_checks_its_argument_and_names_a_level();
    test_compile_rejects_null_and_bad_options();
    test_compile_rejects_invalid_graphs_naming_the_culprit();
    test_executable_queries_reject_null_and_out_of_range_indices();
    test_run_rejects_mismatched_descriptors();
    test_variables_reject_unknown_names_and_bad_descriptors();
    test_add_relu_computes_what_plain_c_computes();
    test_variable_written_between_runs_is_used_by_the_next_run();
    printf("api_errors: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
