/* concurrency.c — one executable run from many threads at once, as a C server would: every
 * answer (run, run_nocopy views after other threads have run, inputs made by create_input)
 * must equal the same executable's answer for that input when run alone, bit for bit, and
 * runs that write a variable must each see every earlier one. Built with ThreadSanitizer in
 * CI; a deadlock fails by the meson test timeout. */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "f32_tensor.h"

#define THREADS 8
#define RUNS 100   /* per thread */
#define SAMPLES 16 /* distinct inputs, each with its answer from a run alone */
#define MAX_INPUTS 2
#define POOL_THREADS 4 /* the executable's own workers, which the callers contend for */

static int checks;
static int failures;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, const char *detail, int line)
{
    pthread_mutex_lock(&report_lock);
    fprintf(stderr, "concurrency.c:%d: %s%s%s\n", line, what, detail ? ": " : "",
            detail ? detail : "");
    failures++;
    pthread_mutex_unlock(&report_lock);
}

static void count_check(void)
{
    pthread_mutex_lock(&report_lock);
    checks++;
    pthread_mutex_unlock(&report_lock);
}

#define EXPECT_OK(call)                                                                            \
    do {                                                                                           \
        count_check();                                                                             \
        nxe_status status_ = (call);                                                               \
        if (status_ != NXE_OK)                                                                     \
            fail(#call, nxe_last_error(), __LINE__);                                               \
    } while (0)
#define EXPECT_TRUE(cond)                                                                          \
    do {                                                                                           \
        count_check();                                                                             \
        if (!(cond))                                                                               \
            fail(#cond " is false", NULL, __LINE__);                                               \
    } while (0)

static void fill(float *values, size_t count, uint32_t seed)
{
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        values[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

/* ---- graphs ---- */

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t kind, int32_t ndim,
                              const int64_t *shape)
{
    nxe_tensor *tensor = NULL;
    EXPECT_OK(add_f32_tensor(graph, name, kind, ndim, shape, &tensor));
    return tensor;
}

static nxe_tensor *add_constant(nxe_graph *graph, const char *name, int32_t ndim,
                                const int64_t *shape, uint32_t seed)
{
    size_t count = 1;
    for (int32_t i = 0; i < ndim; i++)
        count *= (size_t)shape[i];
    float *values = malloc(count * sizeof *values);
    nxe_tensor *tensor = add_tensor(graph, name, NXE_TENSOR_CONSTANT, ndim, shape);
    if (values) {
        fill(values, count, seed);
        EXPECT_OK(nxe_tensor_set_data(tensor, values, count * sizeof *values));
    }
    free(values);
    return tensor;
}

static nxe_op *add_op(nxe_graph *graph, const char *type, nxe_tensor **inputs, int32_t num_inputs,
                      nxe_tensor *output)
{
    nxe_op *op = NULL;
    EXPECT_OK(nxe_graph_add_op(graph, type, NULL, &op));
    EXPECT_OK(nxe_op_bind_inputs(op, inputs, num_inputs));
    EXPECT_OK(nxe_op_bind_outputs(op, &output, 1));
    return op;
}

/* x[8,32] -> MatMul W1[32,24] -> Relu -> MatMul W2[24,16] -> y: packed weights, a folded
 * activation, a transient in the arena. */
static void build_matmul(nxe_graph *graph)
{
    static const int64_t x_shape[2] = {8, 32}, w1_shape[2] = {32, 24}, w2_shape[2] = {24, 16};
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, 2, x_shape);
    nxe_tensor *h = add_tensor(graph, "h", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *r = add_tensor(graph, "r", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL);
    nxe_tensor *first[2] = {x, add_constant(graph, "w1", 2, w1_shape, 11)};
    add_op(graph, "MatMul", first, 2, h);
    add_op(graph, "Relu", &h, 1, r);
    nxe_tensor *second[2] = {r, add_constant(graph, "w2", 2, w2_shape, 12)};
    add_op(graph, "MatMul", second, 2, y);
}

/* x[1,3,16,16] -> Conv2d 3x3 (8 filters, bias, SAME) -> Relu -> Conv2d 3x3 (4 filters) -> y */
static void build_conv(nxe_graph *graph)
{
    static const int64_t x_shape[4] = {1, 3, 16, 16}, w1_shape[4] = {8, 3, 3, 3}, b1_shape[1] = {8},
                         w2_shape[4] = {4, 8, 3, 3};
    static const int64_t pads[4] = {1, 1, 1, 1};
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, 4, x_shape);
    nxe_tensor *c = add_tensor(graph, "c", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *r = add_tensor(graph, "r", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL);
    nxe_tensor *first[3] = {x, add_constant(graph, "w1", 4, w1_shape, 21),
                            add_constant(graph, "b1", 1, b1_shape, 22)};
    EXPECT_OK(nxe_op_set_attr_ints(add_op(graph, "Conv2d", first, 3, c), "pads", pads, 4));
    add_op(graph, "Relu", &c, 1, r);
    nxe_tensor *second[2] = {r, add_constant(graph, "w2", 4, w2_shape, 23)};
    EXPECT_OK(nxe_op_set_attr_ints(add_op(graph, "Conv2d", second, 2, y), "pads", pads, 4));
}

/* a[4,16,32] x b[4,32,24] -> y: both operands change every run, so B is packed into the
 * workspace at every run. */
static void build_batched_matmul(nxe_graph *graph)
{
    static const int64_t a_shape[3] = {4, 16, 32}, b_shape[3] = {4, 32, 24};
    nxe_tensor *inputs[2] = {add_tensor(graph, "a", NXE_TENSOR_INPUT, 3, a_shape),
                             add_tensor(graph, "b", NXE_TENSOR_INPUT, 3, b_shape)};
    add_op(graph, "MatMul", inputs, 2, add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL));
}

/* ---- one executable, many threads ---- */

typedef struct test_case {
    const char *name;
    nxe_executable *exe;
    int32_t num_inputs;
    nxe_tensor_desc input_desc[MAX_INPUTS]; /* shape and dtype; data NULL */
    nxe_tensor_desc output_desc;
    float *inputs[SAMPLES][MAX_INPUTS];
    float *expected[SAMPLES];
} test_case;

typedef struct worker {
    pthread_t thread;
    test_case *tc;
    int id;
    float *created[MAX_INPUTS]; /* this thread's inputs from nxe_executable_create_input */
    uint64_t in_place;          /* runs that passed `created` */
} worker;

static size_t bytes_of(const nxe_tensor_desc *desc)
{
    return desc->data_size;
}

/* Compiles `build`'s graph to a binary and loads it with a staging buffer that holds one
 * created copy of every input per thread, then answers every sample with no other thread
 * running. */
static void open_case(test_case *tc, const char *name, void (*build)(nxe_graph *))
{
    memset(tc, 0, sizeof *tc);
    tc->name = name;
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    build(graph);
    size_t size = 0;
    EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, NULL, &size));
    uint8_t *binary = malloc(size);
    if (binary)
        EXPECT_OK(nxe_graph_compile_to_binary(graph, NULL, binary, &size));
    nxe_graph_release(graph);
    nxe_context_release(ctx);

    nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
    options.num_threads = POOL_THREADS;
    options.staging_bytes = 1u << 20;
    if (binary)
        EXPECT_OK(nxe_executable_load_memory(binary, size, &options, &tc->exe));
    free(binary);
    int32_t num_outputs = 0;
    EXPECT_OK(nxe_executable_io_count(tc->exe, &tc->num_inputs, &num_outputs));
    EXPECT_TRUE(tc->num_inputs >= 1 && tc->num_inputs <= MAX_INPUTS && num_outputs == 1);
    if (failures)
        return;
    for (int32_t j = 0; j < tc->num_inputs; j++)
        EXPECT_OK(nxe_executable_input_desc(tc->exe, j, &tc->input_desc[j], NULL));
    EXPECT_OK(nxe_executable_output_desc(tc->exe, 0, &tc->output_desc, NULL));
    size_t staging = 0;
    for (int32_t j = 0; j < tc->num_inputs; j++)
        staging += (bytes_of(&tc->input_desc[j]) + 63) / 64 * 64;
    EXPECT_TRUE(staging * (THREADS + 1) + bytes_of(&tc->output_desc) < options.staging_bytes);

    for (int s = 0; s < SAMPLES; s++) {
        nxe_tensor_desc in[MAX_INPUTS], out = tc->output_desc;
        for (int32_t j = 0; j < tc->num_inputs; j++) {
            tc->inputs[s][j] = malloc(bytes_of(&tc->input_desc[j]));
            in[j] = tc->input_desc[j];
            in[j].data = tc->inputs[s][j];
            if (tc->inputs[s][j])
                fill(tc->inputs[s][j], bytes_of(&in[j]) / sizeof(float),
                     (uint32_t)(100 * s + j + 1));
        }
        tc->expected[s] = malloc(bytes_of(&out));
        out.data = tc->expected[s];
        EXPECT_OK(nxe_executable_run(tc->exe, in, tc->num_inputs, &out, 1));
    }
}

static void close_case(test_case *tc)
{
    for (int s = 0; s < SAMPLES; s++) {
        for (int32_t j = 0; j < tc->num_inputs; j++)
            free(tc->inputs[s][j]);
        free(tc->expected[s]);
    }
    nxe_executable_release(tc->exe);
}

static void expect_answer(const test_case *tc, int sample, const void *got, const char *how,
                          int line)
{
    count_check();
    if (memcmp(got, tc->expected[sample], bytes_of(&tc->output_desc)) != 0) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s: %s of sample %d differs from its run alone", tc->name,
                 how, sample);
        fail("wrong answer", detail, line);
    }
}

/* Each run takes one of three ways, in turn: caller buffers in and out; caller buffers in,
 * results as run_nocopy views, checked again after yielding to the other threads (they stay
 * valid until this thread's next run); this thread's created inputs in, used in place. */
static void *work(void *arg)
{
    worker *w = arg;
    test_case *tc = w->tc;
    for (int32_t j = 0; j < tc->num_inputs; j++) {
        nxe_tensor_desc desc;
        EXPECT_OK(nxe_executable_create_input(tc->exe, j, &desc));
        w->created[j] = desc.data;
    }
    float *out = malloc(bytes_of(&tc->output_desc));
    for (int i = 0; i < RUNS; i++) {
        const int sample = (w->id * 7 + i) % SAMPLES;
        nxe_tensor_desc in[MAX_INPUTS], result = tc->output_desc;
        for (int32_t j = 0; j < tc->num_inputs; j++) {
            in[j] = tc->input_desc[j];
            in[j].data = tc->inputs[sample][j];
        }
        switch (i % 3) {
        case 0:
            result.data = out;
            EXPECT_OK(nxe_executable_run(tc->exe, in, tc->num_inputs, &result, 1));
            expect_answer(tc, sample, out, "run", __LINE__);
            break;
        case 1:
            EXPECT_OK(nxe_executable_run_nocopy(tc->exe, in, tc->num_inputs, &result, 1));
            expect_answer(tc, sample, result.data, "a run_nocopy view", __LINE__);
            for (int y = 0; y < 20; y++)
                sched_yield();
            expect_answer(tc, sample, result.data, "a run_nocopy view, after yielding", __LINE__);
            break;
        default:
            for (int32_t j = 0; j < tc->num_inputs; j++) {
                memcpy(w->created[j], tc->inputs[sample][j], bytes_of(&in[j]));
                in[j].data = w->created[j];
            }
            result.data = out;
            EXPECT_OK(nxe_executable_run(tc->exe, in, tc->num_inputs, &result, 1));
            expect_answer(tc, sample, out, "a run from created inputs", __LINE__);
            w->in_place += (uint64_t)tc->num_inputs;
        }
    }
    free(out);
    return NULL;
}

static bool disjoint(const uint8_t *a, size_t a_bytes, const uint8_t *b, size_t b_bytes)
{
    return a + a_bytes <= b || b + b_bytes <= a;
}

static void test_threads_share_one_executable(const char *name, void (*build)(nxe_graph *))
{
    test_case tc;
    open_case(&tc, name, build);
    if (failures) {
        close_case(&tc);
        return;
    }
    nxe_run_stats before = {.struct_size = sizeof before};
    EXPECT_OK(nxe_executable_stats(tc.exe, &before));
    worker workers[THREADS];
    int started = 0;
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.tc = &tc, .id = t};
        if (pthread_create(&workers[t].thread, NULL, work, &workers[t]) != 0) {
            fail("pthread_create failed", name, __LINE__);
            break;
        }
        started++;
    }
    uint64_t in_place = 0;
    for (int t = 0; t < started; t++) {
        pthread_join(workers[t].thread, NULL);
        in_place += workers[t].in_place;
    }

    /* create_input from eight threads at once handed out separate memory */
    for (int t = 0; t < started; t++)
        for (int u = 0; u < t; u++)
            for (int32_t j = 0; j < tc.num_inputs; j++)
                for (int32_t k = 0; k < tc.num_inputs; k++)
                    EXPECT_TRUE(disjoint(
                        (const uint8_t *)workers[t].created[j], bytes_of(&tc.input_desc[j]),
                        (const uint8_t *)workers[u].created[k], bytes_of(&tc.input_desc[k])));
    /* every run was counted, and the created inputs were read where they lay */
    nxe_run_stats after = {.struct_size = sizeof after};
    EXPECT_OK(nxe_executable_stats(tc.exe, &after));
    EXPECT_TRUE(after.runs - before.runs == (uint64_t)started * RUNS);
    EXPECT_TRUE(after.inputs_in_place - before.inputs_in_place == in_place);
    EXPECT_TRUE(in_place > 0);
    close_case(&tc);
}

/* ---- runs that write a variable ---- */

#define STATE 4096

typedef struct writer {
    pthread_t thread;
    nxe_executable *exe;
    int id;
} writer;

static bool all_equal(const float *values, float value)
{
    for (int i = 0; i < STATE; i++)
        if (values[i] != value)
            return false;
    return true;
}

static void *write_state(void *arg)
{
    writer *w = arg;
    float *x = malloc(STATE * sizeof *x), *y = malloc(STATE * sizeof *y);
    nxe_tensor_desc in = {x, STATE * sizeof *x, 1, NXE_DL_FLOAT, 32, 0, {STATE}};
    nxe_tensor_desc out = {y, STATE * sizeof *y, 1, NXE_DL_FLOAT, 32, 0, {STATE}};
    for (int i = 0; x && y && i < RUNS; i++) {
        const float value = (float)(w->id * RUNS + i + 1);
        for (int k = 0; k < STATE; k++)
            x[k] = value;
        EXPECT_OK(nxe_executable_run(w->exe, &in, 1, &out, 1));
        EXPECT_TRUE(all_equal(y, value));
    }
    free(x);
    free(y);
    return NULL;
}

/* state (VARIABLE) = Relu(x), y = Relu(state): a run that shared the variable with another
 * would read back the other's value. Runs that write a variable take turns, so each reads
 * its own, and reading the variable by name meanwhile never sees half of a run's write. */
static void test_runs_that_write_a_variable_take_turns(void)
{
    static const int64_t shape[1] = {STATE};
    float *zeros = calloc(STATE, sizeof *zeros);
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    EXPECT_OK(nxe_graph_create(ctx, &graph));
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, 1, shape);
    nxe_tensor *state = add_tensor(graph, "state", NXE_TENSOR_VARIABLE, 1, shape);
    if (zeros)
        EXPECT_OK(nxe_tensor_set_data(state, zeros, STATE * sizeof *zeros));
    add_op(graph, "Relu", &x, 1, state);
    add_op(graph, "Relu", &state, 1, add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL));
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = POOL_THREADS;
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(graph, &options, &exe));
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    float *now = zeros;
    if (failures || !now) {
        nxe_executable_release(exe);
        free(zeros);
        return;
    }

    writer writers[THREADS];
    int started = 0;
    for (int t = 0; t < THREADS; t++) {
        writers[t] = (writer){.exe = exe, .id = t};
        if (pthread_create(&writers[t].thread, NULL, write_state, &writers[t]) != 0) {
            fail("pthread_create failed", "writers", __LINE__);
            break;
        }
        started++;
    }
    nxe_tensor_desc desc = {now, STATE * sizeof *now, 1, NXE_DL_FLOAT, 32, 0, {STATE}};
    for (int i = 0; i < RUNS; i++) {
        EXPECT_OK(nxe_executable_read_variable(exe, "state", &desc));
        EXPECT_TRUE(all_equal(now, now[0]));
    }
    for (int t = 0; t < started; t++)
        pthread_join(writers[t].thread, NULL);
    /* the last run's value: some thread's last */
    EXPECT_OK(nxe_executable_read_variable(exe, "state", &desc));
    bool last = false;
    for (int t = 0; t < started; t++)
        last = last || now[0] == (float)(t * RUNS + RUNS);
    EXPECT_TRUE(last && all_equal(now, now[0]));
    nxe_executable_release(exe);
    free(zeros);
}

int main(void)
{
    test_threads_share_one_executable("matmul", build_matmul);
    test_threads_share_one_executable("conv", build_conv);
    test_threads_share_one_executable("batched matmul", build_batched_matmul);
    test_runs_that_write_a_variable_take_turns();
    printf("concurrency: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
