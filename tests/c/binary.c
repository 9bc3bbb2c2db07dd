/* binary.c — compiled binaries and zero-copy I/O as a C user drives them: compile_to_binary
 * (two-call), load_memory and load_file run bit-identical to the in-memory executable,
 * create_input skips the input copy, run_nocopy hands out the result area, and bad input
 * (NULL, truncated or corrupted bytes, staging overflow) gets a status and a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "expect.h"
#include "f32_tensor.h"

/* ---- the graph: x[1,2,4,4] -> Conv2d 3x3 (3 filters, SAME) -> Reshape [1,3,16] -> MatMul
 * [16,5] -> y[1,3,5] ---- */

static const int64_t x_shape[4] = {1, 2, 4, 4};
static const int64_t y_shape[3] = {1, 3, 5};
#define X_COUNT 32
#define Y_COUNT 15

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t kind, int32_t ndim,
                              const int64_t *shape)
{
    nxe_tensor *tensor = NULL;
    EXPECT_OK(add_f32_tensor(graph, name, kind, ndim, shape, &tensor));
    return tensor;
}

static void add_op(nxe_graph *graph, const char *type, nxe_tensor **inputs, int32_t num_inputs,
                   nxe_tensor *output, nxe_op **out)
{
    nxe_op *op = NULL;
    EXPECT_OK(nxe_graph_add_op(graph, type, NULL, &op));
    EXPECT_OK(nxe_op_bind_inputs(op, inputs, num_inputs));
    EXPECT_OK(nxe_op_bind_outputs(op, &output, 1));
    if (out)
        *out = op;
}

static void fill(float *values, int count, uint32_t seed)
{
    for (int i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        values[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

static nxe_graph *build_graph(nxe_context *ctx)
{
    static const int64_t w_shape[4] = {3, 2, 3, 3}, b_shape[1] = {3}, m_shape[2] = {16, 5};
    float w[54], b[3], m[80];
    fill(w, 54, 1);
    fill(b, 3, 2);
    fill(m, 80, 3);
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, 4, x_shape);
    nxe_tensor *wt = add_tensor(graph, "w", NXE_TENSOR_CONSTANT, 4, w_shape);
    nxe_tensor *bt = add_tensor(graph, "b", NXE_TENSOR_CONSTANT, 1, b_shape);
    nxe_tensor *mt = add_tensor(graph, "m", NXE_TENSOR_CONSTANT, 2, m_shape);
    nxe_tensor *conv = add_tensor(graph, "conv", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *flat = add_tensor(graph, "flat", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL);
    EXPECT_OK(nxe_tensor_set_data(wt, w, sizeof w));
    EXPECT_OK(nxe_tensor_set_data(bt, b, sizeof b));
    EXPECT_OK(nxe_tensor_set_data(mt, m, sizeof m));
    nxe_op *op = NULL;
    nxe_tensor *conv_in[3] = {x, wt, bt};
    add_op(graph, "Conv2d", conv_in, 3, conv, &op);
    static const int64_t pads[4] = {1, 1, 1, 1}, flat_shape[3] = {1, 3, 16};
    EXPECT_OK(nxe_op_set_attr_ints(op, "pads", pads, 4));
    add_op(graph, "Reshape", &conv, 1, flat, &op);
    EXPECT_OK(nxe_op_set_attr_ints(op, "shape", flat_shape, 3));
    nxe_tensor *matmul_in[2] = {flat, mt};
    add_op(graph, "MatMul", matmul_in, 2, y, NULL);
    return graph;
}

static nxe_tensor_desc f32_desc(float *data, size_t bytes, int32_t ndim, const int64_t *shape)
{
    nxe_tensor_desc desc = {data, bytes, ndim, NXE_DL_FLOAT, 32, 0, {0}};
    for (int32_t i = 0; i < ndim; i++)
        desc.shape[i] = shape[i];
    return desc;
}

static nxe_status run(nxe_executable *exe, float *x, float *y)
{
    nxe_tensor_desc in = f32_desc(x, X_COUNT * sizeof(float), 4, x_shape);
    nxe_tensor_desc out = f32_desc(y, Y_COUNT * sizeof(float), 3, y_shape);
    return nxe_executable_run(exe, &in, 1, &out, 1);
}

static nxe_run_stats stats_of(const nxe_executable *exe)
{
    nxe_run_stats stats = {.struct_size = sizeof stats};
    EXPECT_OK(nxe_executable_stats(exe, &stats));
    return stats;
}

static nxe_load_options one_thread(void)
{
    nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
    options.num_threads = 1;
    return options;
}

/* ---- tests ---- */

static uint8_t *compile_to_binary(nxe_graph *graph, size_t *size)
{
    *size = 0;
    EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, NULL, size));
    EXPECT_TRUE(*size > 64);
    size_t too_small = 16;
    uint8_t small[16];
    EXPECT_FAIL(nxe_graph_compile_to_binary(graph, NULL, small, &too_small),
                NXE_ERROR_BUFFER_TOO_SMALL, "bytes");
    EXPECT_TRUE(too_small == *size);
    uint8_t *binary = malloc(*size);
    if (binary)
        EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, binary, size));
    return binary;
}

static void test_loaded_binaries_run_like_the_in_memory_executable(const uint8_t *binary,
                                                                   size_t size,
                                                                   nxe_executable *reference)
{
    float x[X_COUNT], expected[Y_COUNT], got[Y_COUNT];
    fill(x, X_COUNT, 4);
    EXPECT_OK(run(reference, x, expected));
    nxe_load_options options = one_thread();

    /* load_memory copies: the caller's buffer may go away before the run */
    uint8_t *copy = malloc(size);
    nxe_executable *exe = NULL;
    if (copy) {
        memcpy(copy, binary, size);
        EXPECT_OK(nxe_executable_load_memory(copy, size, &options, &exe));
        memset(copy, 0, size);
        free(copy);
    }
    EXPECT_OK(run(exe, x, got));
    EXPECT_TRUE(memcmp(expected, got, sizeof got) == 0);
    nxe_executable_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_executable_get_info(exe, &info));
    EXPECT_TRUE(info.loaded == 1 && info.recompiled == 0 && strcmp(info.isa, "ref") == 0);
    EXPECT_TRUE(info.num_constants == 3);
    nxe_executable_release(exe);

    const char *path = "binary_test.nxb";
    FILE *file = fopen(path, "wb");
    EXPECT_TRUE(file != NULL);
    if (file) {
        EXPECT_TRUE(fwrite(binary, 1, size, file) == size);
        fclose(file);
    }
    exe = NULL;
    EXPECT_OK(nxe_executable_load_file(path, &options, &exe));
    memset(got, 0, sizeof got);
    EXPECT_OK(run(exe, x, got));
    EXPECT_TRUE(memcmp(expected, got, sizeof got) == 0);
    nxe_executable_release(exe);
    remove(path);
}

static void test_created_inputs_skip_the_copy_and_nocopy_outputs_follow_runs(const uint8_t *binary,
                                                                             size_t size)
{
    nxe_load_options options = one_thread();
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &options, &exe));
    float x[X_COUNT], y[Y_COUNT];
    fill(x, X_COUNT, 5);
    EXPECT_OK(run(exe, x, y));
    nxe_run_stats stats = stats_of(exe);
    EXPECT_TRUE(stats.runs == 1 && stats.inputs_copied == 1 && stats.inputs_in_place == 0);
    EXPECT_TRUE(stats.bytes_copied_in == sizeof x && stats.bytes_copied_out == sizeof y);

    nxe_tensor_desc staged;
    EXPECT_OK(nxe_executable_create_input(exe, 0, &staged));
    EXPECT_TRUE(staged.data != NULL && (uintptr_t)staged.data % 64 == 0);
    EXPECT_TRUE(staged.data_size == sizeof x && staged.ndim == 4 && staged.shape[1] == 2);
    if (staged.data)
        memcpy(staged.data, x, sizeof x);
    nxe_tensor_desc result;
    EXPECT_OK(nxe_executable_run_nocopy(exe, &staged, 1, &result, 1));
    stats = stats_of(exe);
    EXPECT_TRUE(stats.runs == 2 && stats.inputs_copied == 1 && stats.inputs_in_place == 1);
    EXPECT_TRUE(stats.bytes_copied_in == sizeof x && stats.bytes_copied_out == sizeof y);
    EXPECT_TRUE(result.data != NULL && result.data_size == sizeof y && result.ndim == 3);
    if (result.data)
        EXPECT_TRUE(memcmp(result.data, y, sizeof y) == 0);

    /* the result area follows the next run; what run copied out does not */
    float other[X_COUNT], y_other[Y_COUNT], kept[Y_COUNT];
    fill(other, X_COUNT, 6);
    memcpy(kept, y, sizeof y);
    EXPECT_OK(run(exe, other, y_other));
    EXPECT_TRUE(memcmp(kept, y, sizeof y) == 0);
    if (result.data)
        EXPECT_TRUE(memcmp(result.data, y_other, sizeof y_other) == 0);
    nxe_executable_release(exe);
}

static void test_staging_overflow_and_bad_staging_calls_fail_clearly(const uint8_t *binary,
                                                                     size_t size)
{
    nxe_load_options options = one_thread();
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &options, &exe));
    nxe_tensor_desc desc;
    EXPECT_OK(nxe_executable_create_input(exe, 0, &desc));
    EXPECT_FAIL(nxe_executable_create_input(exe, 0, &desc), NXE_ERROR_BUFFER_TOO_SMALL, "capacity");
    EXPECT_TRUE(desc.data == NULL);
    EXPECT_OK(nxe_executable_reset_staging(exe));
    EXPECT_OK(nxe_executable_create_input(exe, 0, &desc));
    EXPECT_FAIL(nxe_executable_create_input(exe, 1, &desc), NXE_ERROR_NOT_FOUND, "index 1");
    EXPECT_FAIL(nxe_executable_create_input(NULL, 0, &desc), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_create_input(exe, 0, NULL), NXE_ERROR_INVALID_ARGUMENT, "desc");
    EXPECT_FAIL(nxe_executable_reset_staging(NULL), NXE_ERROR_INVALID_ARGUMENT, "exe");
    EXPECT_FAIL(nxe_executable_stats(exe, NULL), NXE_ERROR_INVALID_ARGUMENT, "stats");
    nxe_run_stats stats = {.struct_size = 4};
    EXPECT_FAIL(nxe_executable_stats(exe, &stats), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    nxe_executable_info info = {.struct_size = 4};
    EXPECT_FAIL(nxe_executable_get_info(exe, &info), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    nxe_tensor_desc out;
    EXPECT_FAIL(nxe_executable_run_nocopy(exe, NULL, 1, &out, 1), NXE_ERROR_INVALID_ARGUMENT,
                "inputs is NULL");
    nxe_executable_release(exe);

    options.staging_bytes = 64;
    EXPECT_FAIL(nxe_executable_load_memory(binary, size, &options, &exe),
                NXE_ERROR_INVALID_ARGUMENT, "staging_bytes");
    EXPECT_TRUE(exe == NULL);
}

static void test_bad_binaries_fail_with_a_status_and_a_message(const uint8_t *binary, size_t size)
{
    nxe_load_options options = one_thread();
    nxe_executable *exe = NULL;
    EXPECT_FAIL(nxe_executable_load_memory(binary, size, &options, NULL),
                NXE_ERROR_INVALID_ARGUMENT, "out");
    EXPECT_FAIL(nxe_executable_load_file(NULL, &options, &exe), NXE_ERROR_INVALID_ARGUMENT, "path");
    EXPECT_FAIL(nxe_executable_load_file("no/such/file.nxb", &options, &exe), NXE_ERROR_IO,
                "no/such/file.nxb");
    EXPECT_FAIL(nxe_executable_load_memory(NULL, size, &options, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "data");
    for (size_t length = 0; length < size; length += 1 + length / 4) {
        EXPECT_FAIL(nxe_executable_load_memory(binary, length, &options, &exe), NXE_ERROR_FORMAT,
                    "nxe_executable_load_memory");
        EXPECT_TRUE(exe == NULL);
    }
    uint8_t *copy = malloc(size);
    if (!copy)
        return;
    memcpy(copy, binary, size);
    copy[0] = 'X';
    EXPECT_FAIL(nxe_executable_load_memory(copy, size, &options, &exe), NXE_ERROR_FORMAT, "magic");
    memcpy(copy, binary, size);
    uint64_t plan_offset = 0; /* section 0 is PLAN; its offset is at bytes 72..79 */
    for (int i = 0; i < 8; i++)
        plan_offset |= (uint64_t)copy[72 + i] << (8 * i);
    copy[plan_offset + 1] ^= 0x5a; /* inside PLAN, behind its checksum */
    EXPECT_FAIL(nxe_executable_load_memory(copy, size, &options, &exe), NXE_ERROR_FORMAT,
                "checksum mismatch");
    EXPECT_TRUE(exe == NULL);
    nxe_load_options bad = NXE_LOAD_OPTIONS_INIT;
    bad.struct_size = 3;
    EXPECT_FAIL(nxe_executable_load_memory(binary, size, &bad, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "struct_size");
    free(copy);
}

int main(void)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *graph = build_graph(ctx);
    nxe_compile_options compile = NXE_COMPILE_OPTIONS_INIT;
    compile.num_threads = 1;
    nxe_executable *reference = NULL;
    EXPECT_OK(nxe_graph_compile(graph, &compile, &reference));
    size_t size = 0;
    uint8_t *binary = compile_to_binary(graph, &size);
    if (binary && reference) {
        test_loaded_binaries_run_like_the_in_memory_executable(binary, size, reference);
        test_created_inputs_skip_the_copy_and_nocopy_outputs_follow_runs(binary, size);
        test_staging_overflow_and_bad_staging_calls_fail_clearly(binary, size);
        test_bad_binaries_fail_with_a_status_and_a_message(binary, size);
    }
    free(binary);
    nxe_executable_release(reference);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    printf("binary: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
