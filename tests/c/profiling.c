/* profiling.c — per-step profiles of runs (nxe_executable_set_profiling and
 * nxe_executable_get_profile): off by default, one step per step of the plan with the op's
 * type and name, the kernel and shapes, times that fit inside the run's wall time; the errors
 * of a bad query; and threads running, querying and toggling at once (built with
 * ThreadSanitizer in CI). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nxe/nxe.h>

#include "f32_tensor.h"

#define THREADS 4
#define RUNS 40 /* per thread */

static int checks;
static int failures;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *what, int line)
{
    pthread_mutex_lock(&report_lock);
    checks++;
    if (!ok) {
        fprintf(stderr, "profiling.c:%d: %s (last error: %s)\n", line, what, nxe_last_error());
        failures++;
    }
    pthread_mutex_unlock(&report_lock);
}

#define CHECK(cond) check((cond) != 0, #cond, __LINE__)
#define CHECK_STATUS(call, expected) check((call) == (expected), #call " != " #expected, __LINE__)

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* ---- the graph ---- */

/* The ops in graph order: a Relu after a convolution may be folded into it, the others each
 * remain a step of their own. */
static const char *const op_names[] = {"conv1", "relu1", "conv2", "flip"};
static const char *const op_types[] = {"Conv2d", "Relu", "Conv2d", "Transpose"};
#define NUM_OPS 4

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t kind, int32_t ndim,
                              const int64_t *shape)
{
    nxe_tensor *tensor = NULL;
    CHECK_STATUS(add_f32_tensor(graph, name, kind, ndim, shape, &tensor), NXE_OK);
    if (kind == NXE_TENSOR_CONSTANT && tensor) {
        size_t count = 1;
        for (int32_t i = 0; i < ndim; i++)
            count *= (size_t)shape[i];
        float *values = malloc(count * sizeof *values);
        CHECK(values != NULL);
        for (size_t i = 0; values && i < count; i++)
            values[i] = (float)((i * 7919u) % 17u) / 17.0f - 0.5f;
        if (values)
            CHECK_STATUS(nxe_tensor_set_data(tensor, values, count * sizeof *values), NXE_OK);
        free(values);
    }
    return tensor;
}

static nxe_op *add_op(nxe_graph *graph, int index, nxe_tensor **inputs, int32_t num_inputs,
                      nxe_tensor *output)
{
    nxe_op *op = NULL;
    CHECK_STATUS(nxe_graph_add_op(graph, op_types[index], op_names[index], &op), NXE_OK);
    CHECK_STATUS(nxe_op_bind_inputs(op, inputs, num_inputs), NXE_OK);
    CHECK_STATUS(nxe_op_bind_outputs(op, &output, 1), NXE_OK);
    return op;
}

/* x[1,3,32,32] -> conv1 3x3 (8 filters, bias, same size) -> relu1 -> conv2 3x3 (4 filters)
 * -> flip (transpose to [1,32,32,4]) -> y */
static nxe_executable *compile_graph(void)
{
    static const int64_t x_shape[4] = {1, 3, 32, 32}, w1_shape[4] = {8, 3, 3, 3}, b1_shape[1] = {8},
                         w2_shape[4] = {4, 8, 3, 3};
    static const int64_t pads[4] = {1, 1, 1, 1}, perm[4] = {0, 2, 3, 1};
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    nxe_executable *exe = NULL;
    CHECK_STATUS(nxe_context_create(&ctx), NXE_OK);
    CHECK_STATUS(nxe_graph_create(ctx, &graph), NXE_OK);
    if (failures)
        return NULL;
    nxe_tensor *x = add_tensor(graph, "x", NXE_TENSOR_INPUT, 4, x_shape);
    nxe_tensor *c1 = add_tensor(graph, "c1", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *r1 = add_tensor(graph, "r1", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *c2 = add_tensor(graph, "c2", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = add_tensor(graph, "y", NXE_TENSOR_OUTPUT, -1, NULL);
    nxe_tensor *first[3] = {x, add_tensor(graph, "w1", NXE_TENSOR_CONSTANT, 4, w1_shape),
                            add_tensor(graph, "b1", NXE_TENSOR_CONSTANT, 1, b1_shape)};
    CHECK_STATUS(nxe_op_set_attr_ints(add_op(graph, 0, first, 3, c1), "pads", pads, 4), NXE_OK);
    add_op(graph, 1, &c1, 1, r1);
    nxe_tensor *second[2] = {r1, add_tensor(graph, "w2", NXE_TENSOR_CONSTANT, 4, w2_shape)};
    CHECK_STATUS(nxe_op_set_attr_ints(add_op(graph, 2, second, 2, c2), "pads", pads, 4), NXE_OK);
    CHECK_STATUS(nxe_op_set_attr_ints(add_op(graph, 3, &c2, 1, y), "perm", perm, 4), NXE_OK);
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 2;
    CHECK_STATUS(nxe_graph_compile(graph, &options, &exe), NXE_OK);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    return exe;
}

static float x_data[1 * 3 * 32 * 32], y_data[1 * 32 * 32 * 4];

static nxe_status run_once(nxe_executable *exe, float *y)
{
    nxe_tensor_desc in = {0}, out = {0};
    if (nxe_executable_input_desc(exe, 0, &in, NULL) != NXE_OK ||
        nxe_executable_output_desc(exe, 0, &out, NULL) != NXE_OK)
        return NXE_ERROR_INVALID_STATE;
    in.data = x_data;
    out.data = y;
    return nxe_executable_run(exe, &in, 1, &out, 1);
}

static int32_t plan_steps(const nxe_executable *exe)
{
    nxe_memory_info info = {.struct_size = sizeof info};
    CHECK_STATUS(nxe_executable_memory_info(exe, &info), NXE_OK);
    return info.num_steps;
}

/* ---- one thread ---- */

static void test_errors(nxe_executable *exe)
{
    nxe_profile_step steps[8];
    memset(steps, 0, sizeof steps);
    steps[0].struct_size = sizeof steps[0];
    int32_t count = -1;
    CHECK_STATUS(nxe_executable_set_profiling(NULL, 1), NXE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(nxe_executable_get_profile(NULL, steps, 8, &count), NXE_ERROR_INVALID_ARGUMENT);
    CHECK(count == 0);
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, NULL), NXE_ERROR_INVALID_ARGUMENT);
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, -1, &count), NXE_ERROR_INVALID_ARGUMENT);
    CHECK(count == 0);
    steps[0].struct_size = sizeof steps[0] - 8;
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, &count), NXE_ERROR_INVALID_ARGUMENT);
    CHECK(count == 0);
    CHECK(strstr(nxe_last_error(), "struct_size") != NULL);
    steps[0].struct_size = sizeof steps[0];
    /* Off by default: a run keeps no profile. */
    CHECK_STATUS(run_once(exe, y_data), NXE_OK);
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, &count), NXE_ERROR_NOT_FOUND);
    CHECK(count == 0);
    CHECK_STATUS(nxe_executable_get_profile(exe, NULL, 0, &count), NXE_ERROR_NOT_FOUND);
}

/* Steps follow the graph's ops in order, each op at most once, the convolutions and the
 * transpose always; types, names, kernels and shapes are the ops'. */
static void check_steps(const nxe_profile_step *steps, int32_t count, uint64_t wall_ns)
{
    int next_op = 0;
    uint64_t total = 0, end = 0;
    int seen[NUM_OPS] = {0};
    for (int32_t s = 0; s < count; s++) {
        const nxe_profile_step *step = &steps[s];
        CHECK(step->struct_size == sizeof *step);
        CHECK(step->index == s);
        int op = next_op;
        while (op < NUM_OPS && strcmp(op_names[op], step->op_name) != 0)
            op++;
        CHECK(op < NUM_OPS);
        if (op >= NUM_OPS)
            return;
        seen[op] = 1;
        next_op = op + 1;
        CHECK(strcmp(step->op_type, op_types[op]) == 0);
        CHECK(memchr(step->kernel, 0, sizeof step->kernel) != NULL && step->kernel[0] != 0);
        if (strcmp(step->op_type, "Transpose") == 0) {
            CHECK(strcmp(step->kernel, "reference") == 0);
            static const int64_t flipped[4] = {1, 32, 32, 4}, unflipped[4] = {1, 4, 32, 32};
            CHECK(step->output_ndim == 4 && memcmp(step->output_shape, flipped, 32) == 0);
            CHECK(step->input_ndim == 4 && memcmp(step->input_shape, unflipped, 32) == 0);
            CHECK(step->output_shape[4] == 0 && step->output_shape[5] == 0);
        }
        if (strcmp(step->op_name, "conv1") == 0) {
            static const int64_t shape[4] = {1, 8, 32, 32};
            CHECK(step->output_ndim == 4 && memcmp(step->output_shape, shape, 32) == 0);
            CHECK(step->num_inputs >= 3 && step->num_outputs == 1);
        }
        /* Steps run one after another, inside the run. */
        CHECK(step->start_ns >= end);
        end = step->start_ns + step->elapsed_ns;
        total += step->elapsed_ns;
    }
    CHECK(seen[0] && seen[2] && seen[3]);
    CHECK(total <= wall_ns && end <= wall_ns);
}

static void test_profile(nxe_executable *exe)
{
    const int32_t num_steps = plan_steps(exe);
    nxe_profile_step steps[8];
    memset(steps, 0, sizeof steps);
    steps[0].struct_size = sizeof steps[0];
    int32_t count = -1;
    CHECK(num_steps >= 3 && num_steps <= NUM_OPS);
    CHECK_STATUS(nxe_executable_set_profiling(exe, 1), NXE_OK);
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, &count), NXE_ERROR_NOT_FOUND);

    const uint64_t before = monotonic_ns();
    CHECK_STATUS(run_once(exe, y_data), NXE_OK);
    const uint64_t wall = monotonic_ns() - before;
    CHECK_STATUS(nxe_executable_get_profile(exe, NULL, 0, &count), NXE_OK);
    CHECK(count == num_steps);
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, num_steps - 1, &count),
                 NXE_ERROR_BUFFER_TOO_SMALL);
    CHECK(count == num_steps);
    CHECK(steps[0].op_type == NULL); /* unchanged on failure */
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 0, &count), NXE_ERROR_BUFFER_TOO_SMALL);
    CHECK(count == num_steps);
    steps[0].struct_size = sizeof steps[0] + 4; /* would misalign the next element */
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, &count), NXE_ERROR_INVALID_ARGUMENT);
    CHECK(count == 0 && steps[0].op_type == NULL);
    steps[0].struct_size = sizeof steps[0];
    count = -1;
    CHECK_STATUS(nxe_executable_get_profile(exe, steps, 8, &count), NXE_OK);
    CHECK(count == num_steps);
    if (count == num_steps)
        check_steps(steps, count, wall);

    /* A caller with a larger struct (a later version's) gets elements at its stride, the rest
     * of each left alone. */
    struct {
        nxe_profile_step step;
        uint64_t later[3];
    } wide[8];
    memset(wide, 0xab, sizeof wide);
    wide[0].step.struct_size = sizeof wide[0];
    CHECK_STATUS(nxe_executable_get_profile(exe, &wide[0].step, 8, &count), NXE_OK);
    for (int32_t s = 0; s < count; s++) {
        CHECK(wide[s].step.struct_size == sizeof wide[0]);
        CHECK(strcmp(wide[s].step.op_name, steps[s].op_name) == 0);
        CHECK(wide[s].step.elapsed_ns == steps[s].elapsed_ns);
        CHECK(wide[s].later[2] == 0xababababababababu);
    }

    /* Off: the profile stays, later runs leave it alone. */
    CHECK_STATUS(nxe_executable_set_profiling(exe, 0), NXE_OK);
    CHECK_STATUS(run_once(exe, y_data), NXE_OK);
    nxe_profile_step again[8];
    memset(again, 0, sizeof again);
    again[0].struct_size = sizeof again[0];
    CHECK_STATUS(nxe_executable_get_profile(exe, again, 8, &count), NXE_OK);
    for (int32_t s = 0; s < count; s++)
        CHECK(again[s].start_ns == steps[s].start_ns && again[s].elapsed_ns == steps[s].elapsed_ns);
    /* On again: a fresh start. */
    CHECK_STATUS(nxe_executable_set_profiling(exe, 1), NXE_OK);
    CHECK_STATUS(nxe_executable_get_profile(exe, again, 8, &count), NXE_ERROR_NOT_FOUND);
    CHECK_STATUS(nxe_executable_set_profiling(exe, 0), NXE_OK);
}

/* ---- many threads ---- */

typedef struct worker {
    pthread_t thread;
    nxe_executable *exe;
    int32_t num_steps;
    int toggles; /* this worker turns profiling on and off between runs */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    float *y = malloc(sizeof y_data);
    nxe_profile_step steps[8];
    for (int r = 0; y && r < RUNS; r++) {
        if (w->toggles)
            CHECK_STATUS(nxe_executable_set_profiling(w->exe, r % 4 != 3), NXE_OK);
        CHECK_STATUS(run_once(w->exe, y), NXE_OK);
        memset(steps, 0, sizeof steps);
        steps[0].struct_size = sizeof steps[0];
        int32_t count = -1;
        nxe_status status = nxe_executable_get_profile(w->exe, steps, 8, &count);
        /* NOT_FOUND right after profiling was turned on again; else one whole run. */
        CHECK(status == NXE_OK || status == NXE_ERROR_NOT_FOUND);
        if (status == NXE_OK) {
            CHECK(count == w->num_steps);
            uint64_t end = 0;
            for (int32_t s = 0; s < count; s++) {
                CHECK(steps[s].start_ns >= end);
                end = steps[s].start_ns + steps[s].elapsed_ns;
            }
        }
    }
    free(y);
    return NULL;
}

static void test_threads(nxe_executable *exe)
{
    worker workers[THREADS];
    CHECK_STATUS(nxe_executable_set_profiling(exe, 1), NXE_OK);
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.exe = exe, .num_steps = plan_steps(exe), .toggles = t == 0};
        CHECK(pthread_create(&workers[t].thread, NULL, work, &workers[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(workers[t].thread, NULL);
}

int main(void)
{
    for (size_t i = 0; i < sizeof x_data / sizeof x_data[0]; i++)
        x_data[i] = (float)(i % 13u) / 13.0f;
    nxe_executable *exe = compile_graph();
    if (exe) {
        test_errors(exe);
        test_profile(exe);
        test_threads(exe);
    }
    nxe_executable_release(exe);
    printf("profiling: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
