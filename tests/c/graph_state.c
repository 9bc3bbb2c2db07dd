/* graph_state.c — in-graph state from C: s = Add(s, x) updates the VARIABLE it reads, runs see
 * the value their run started with, the value is kept across runs, reset by name or all at
 * once, survives compile_to_binary and load_memory, and threads running at once each apply a
 * whole update. Bad arguments get a status and a message. Built with the C tests; under the
 * sanitizer builds LeakSanitizer and ThreadSanitizer watch it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "expect.h"
#include "f32_tensor.h"

#define N 1024
static const int64_t shape[1] = {N};

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t kind)
{
    nxe_tensor *tensor = NULL;
    EXPECT_OK(add_f32_tensor(graph, name, kind, 1, shape, &tensor));
    return tensor;
}

static void add_op(nxe_graph *graph, const char *type, const char *name, nxe_tensor *a,
                   nxe_tensor *b, nxe_tensor *output)
{
    nxe_op *op = NULL;
    nxe_tensor *inputs[2] = {a, b};
    EXPECT_OK(nxe_graph_add_op(graph, type, name, &op));
    EXPECT_OK(nxe_op_bind_inputs(op, inputs, 2));
    EXPECT_OK(nxe_op_bind_outputs(op, &output, 1));
}

/* s = Add(s, x); y = Mul(s, 2): y is twice the value the run found. */
static nxe_graph *build_accumulator(nxe_context *ctx, const float *initial)
{
    static float two[N];
    for (int i = 0; i < N; i++)
        two[i] = 2.0f;
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT);
    nxe_tensor *s = add_tensor(graph, "s", NXE_TENSOR_VARIABLE);
    nxe_tensor *c = add_tensor(graph, "two", NXE_TENSOR_CONSTANT);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT);
    EXPECT_OK(nxe_tensor_set_data(s, initial, sizeof(float) * N));
    EXPECT_OK(nxe_tensor_set_data(c, two, sizeof two));
    add_op(graph, "Add", "accumulate", s, x, s);
    add_op(graph, "Mul", "twice", s, c, y);
    /* A second writer of s is refused when bound. */
    nxe_op *op = NULL;
    nxe_tensor *inputs[2] = {s, x};
    EXPECT_OK(nxe_graph_add_op(graph, "Sub", "second", &op));
    EXPECT_OK(nxe_op_bind_inputs(op, inputs, 2));
    EXPECT_FAIL(nxe_op_bind_outputs(op, &s, 1), NXE_ERROR_INVALID_GRAPH, "already produced");
    return graph;
}

static nxe_tensor_desc desc_of(float *data)
{
    nxe_tensor_desc desc = {data, sizeof(float) * N, 1, NXE_DL_FLOAT, 32, 0, {N}};
    return desc;
}

/* Runs `runs` times with x[i] = i + r and checks y and s against the sums kept here. */
static void check_runs(nxe_executable *exe, float *state, int runs)
{
    static float x[N], y[N], s[N];
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < N; i++)
            x[i] = (float)(i % 7) + (float)r;
        nxe_tensor_desc in = desc_of(x), out = desc_of(y), var = desc_of(s);
        EXPECT_OK(nxe_executable_run(exe, &in, 1, &out, 1));
        int wrong_y = 0, wrong_s = 0;
        for (int i = 0; i < N; i++) {
            wrong_y += y[i] != 2.0f * state[i];
            state[i] += x[i];
        }
        EXPECT_OK(nxe_executable_read_variable(exe, "s", &var));
        for (int i = 0; i < N; i++)
            wrong_s += s[i] != state[i];
        EXPECT_TRUE(wrong_y == 0);
        EXPECT_TRUE(wrong_s == 0);
    }
}

static void check_reset(nxe_executable *exe, const float *initial, const char *name)
{
    static float s[N];
    nxe_tensor_desc var = desc_of(s);
    EXPECT_OK(nxe_executable_reset_variable(exe, name));
    EXPECT_OK(nxe_executable_read_variable(exe, "s", &var));
    EXPECT_TRUE(memcmp(s, initial, sizeof s) == 0);
}

#define THREADS 4
#define THREAD_RUNS 40

static void *run_ones(void *arg)
{
    nxe_executable *exe = arg;
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    int torn = 0;
    for (int i = 0; x && i < N; i++)
        x[i] = 1.0f;
    for (int r = 0; x && y && r < THREAD_RUNS; r++) {
        nxe_tensor_desc in = desc_of(x), out = desc_of(y);
        if (nxe_executable_run(exe, &in, 1, &out, 1) != NXE_OK)
            torn++;
        for (int i = 1; i < N; i++)
            torn += y[i] != y[0];
    }
    free(x);
    free(y);
    return (void *)(intptr_t)(torn || !x || !y);
}

static void test_concurrent_updates(nxe_executable *exe)
{
    static float zeros[N], s[N];
    nxe_tensor_desc var = desc_of(zeros);
    EXPECT_OK(nxe_executable_write_variable(exe, "s", &var));
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        EXPECT_TRUE(pthread_create(&threads[t], NULL, run_ones, exe) == 0);
    for (int t = 0; t < THREADS; t++) {
        void *result = NULL;
        pthread_join(threads[t], &result);
        EXPECT_TRUE(result == NULL);
    }
    var = desc_of(s);
    EXPECT_OK(nxe_executable_read_variable(exe, "s", &var));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += s[i] != (float)(THREADS * THREAD_RUNS);
    EXPECT_TRUE(wrong == 0);
}

int main(void)
{
    static float initial[N], state[N];
    for (int i = 0; i < N; i++)
        initial[i] = (float)(i % 5) - 2.0f;
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *graph = build_accumulator(ctx, initial);
    /* The op left without outputs by the refused bind keeps the graph from compiling; drop it
     * by keeping only y's computation. */
    const char *keep[1] = {"y"};
    EXPECT_OK(nxe_graph_keep_outputs(graph, keep, 1));
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 2;
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(graph, &options, &exe));
    if (exe) {
        memcpy(state, initial, sizeof state);
        check_runs(exe, state, 5);
        check_reset(exe, initial, "s");
        memcpy(state, initial, sizeof state);
        check_runs(exe, state, 2);
        check_reset(exe, initial, NULL);
        test_concurrent_updates(exe);
        EXPECT_FAIL(nxe_executable_reset_variable(NULL, "s"), NXE_ERROR_INVALID_ARGUMENT, "exe");
        EXPECT_FAIL(nxe_executable_reset_variable(NULL, NULL), NXE_ERROR_INVALID_ARGUMENT, "exe");
        EXPECT_FAIL(nxe_executable_reset_variable(exe, "nope"), NXE_ERROR_NOT_FOUND, "'nope'");
        EXPECT_FAIL(nxe_executable_reset_variable(exe, "x"), NXE_ERROR_NOT_FOUND, "'x'");
    }
    nxe_executable_release(exe);

    size_t size = 0;
    EXPECT_OK(nxe_graph_compile_to_binary(graph, &options, NULL, &size));
    uint8_t *binary = malloc(size ? size : 1);
    EXPECT_OK(nxe_graph_compile_to_binary(graph, &options, binary, &size));
    nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
    load.num_threads = 2;
    exe = NULL;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &load, &exe));
    free(binary); /* the executable keeps its own copy */
    if (exe) {
        memcpy(state, initial, sizeof state);
        check_runs(exe, state, 3);
        check_reset(exe, initial, NULL);
        memcpy(state, initial, sizeof state);
        check_runs(exe, state, 2);
        check_reset(exe, initial, "s");
        test_concurrent_updates(exe);
    }
    nxe_executable_release(exe);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    printf("graph_state: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
