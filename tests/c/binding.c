/* binding.c — bound caller memory from C: a graph whose output h = tanh(x) is also read by a
 * later step (y = h * x), run with caller buffers bound, results checked against libm, the run
 * statistics showing nothing copied; every refusal (NULL, index, dtype, shape, too small,
 * misaligned, overlapping, unbound); and four threads each running its own binding of one
 * executable (the TSan pass checks them). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "f32_tensor.h"

#define N 37
#define THREADS 4
#define RUNS 200

static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #cond,                \
                    nxe_last_error());                                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static nxe_executable *compile(void)
{
    nxe_context *ctx = NULL;
    nxe_graph *g = NULL;
    nxe_executable *exe = NULL;
    const int64_t shape[1] = {N};
    nxe_tensor *x, *h, *y;
    nxe_op *tanh_op, *mul;
    if (nxe_context_create(&ctx) != NXE_OK || nxe_graph_create(ctx, &g) != NXE_OK)
        return NULL;
    nxe_context_release(ctx);
    nxe_tensor *mul_inputs[2];
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    if (add_f32_tensor(g, "x", NXE_TENSOR_INPUT, 1, shape, &x) == NXE_OK &&
        add_f32_tensor(g, "h", NXE_TENSOR_OUTPUT, 1, shape, &h) == NXE_OK &&
        add_f32_tensor(g, "y", NXE_TENSOR_OUTPUT, 1, shape, &y) == NXE_OK &&
        nxe_graph_add_op(g, "Tanh", NULL, &tanh_op) == NXE_OK &&
        nxe_op_bind_inputs(tanh_op, &x, 1) == NXE_OK &&
        nxe_op_bind_outputs(tanh_op, &h, 1) == NXE_OK &&
        nxe_graph_add_op(g, "Mul", NULL, &mul) == NXE_OK) {
        mul_inputs[0] = h;
        mul_inputs[1] = x;
        if (nxe_op_bind_inputs(mul, mul_inputs, 2) == NXE_OK &&
            nxe_op_bind_outputs(mul, &y, 1) == NXE_OK)
            nxe_graph_compile(g, &options, &exe);
    }
    nxe_graph_release(g);
    return exe;
}

static nxe_tensor_desc desc_of(float *data, size_t bytes)
{
    nxe_tensor_desc desc = {data, bytes, 1, NXE_DL_FLOAT, 32, 0, {N}};
    return desc;
}

/* Whether h and y hold tanh(x) and tanh(x) * x (1e-6 relative, 1e-6 absolute). */
static int results_right(const float *x, const float *h, const float *y)
{
    for (int i = 0; i < N; i++) {
        double th = tanh((double)x[i]), want_y = th * (double)x[i];
        if (fabs(h[i] - th) > 1e-6 + 1e-6 * fabs(th) ||
            fabs(y[i] - want_y) > 1e-6 + 1e-6 * fabs(want_y))
            return 0;
    }
    return 1;
}

typedef struct worker {
    nxe_executable *exe;
    float x[N], h[N], y[N];
    int ok;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    nxe_binding *binding = NULL;
    nxe_tensor_desc x = desc_of(w->x, sizeof w->x), h = desc_of(w->h, sizeof w->h),
                    y = desc_of(w->y, sizeof w->y);
    w->ok = nxe_binding_create(w->exe, &binding) == NXE_OK &&
            nxe_binding_bind_input(binding, 0, &x) == NXE_OK &&
            nxe_binding_bind_output(binding, 0, &h) == NXE_OK &&
            nxe_binding_bind_output(binding, 1, &y) == NXE_OK;
    for (int r = 0; w->ok && r < RUNS; r++)
        w->ok = nxe_binding_run(binding) == NXE_OK && results_right(w->x, w->h, w->y);
    nxe_binding_release(binding);
    return NULL;
}

/* Two threads on one binding: each call either runs or is refused with
 * NXE_ERROR_INVALID_STATE, never anything else (and TSan sees no race). */
typedef struct sharer {
    nxe_binding *binding;
    int other; /* calls that failed with another status */
} sharer;

static void *share(void *arg)
{
    sharer *s = arg;
    for (int r = 0; r < RUNS; r++) {
        nxe_status status = nxe_binding_run(s->binding);
        if (status != NXE_OK && status != NXE_ERROR_INVALID_STATE)
            s->other++;
    }
    return NULL;
}

int main(void)
{
    nxe_executable *exe = compile();
    if (!exe) {
        fprintf(stderr, "compile: %s\n", nxe_last_error());
        return 1;
    }
    /* 64-byte aligned storage; [1] is 4 bytes in (element-aligned), bytes + 1 misaligned. */
    _Alignas(64) float x[N + 1], h[N], y[N], block[2 * N];
    for (int i = 0; i <= N; i++)
        x[i] = (float)(i - N / 2) / 7.0f;
    nxe_tensor_desc dx = desc_of(x, sizeof(float) * N), dh = desc_of(h, sizeof h),
                    dy = desc_of(y, sizeof y);

    nxe_binding *binding = NULL;
    EXPECT(nxe_binding_create(NULL, &binding) == NXE_ERROR_INVALID_ARGUMENT && !binding);
    EXPECT(nxe_binding_create(exe, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(nxe_binding_create(exe, &binding) == NXE_OK && binding);
    nxe_binding_release(NULL);

    /* Refusals. */
    EXPECT(nxe_binding_bind_input(NULL, 0, &dx) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(nxe_binding_bind_input(binding, 0, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(nxe_binding_bind_input(binding, 1, &dx) == NXE_ERROR_NOT_FOUND);
    EXPECT(nxe_binding_bind_output(binding, -1, &dh) == NXE_ERROR_NOT_FOUND);
    nxe_tensor_desc bad = dx;
    bad.data = NULL;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    bad = dx;
    bad.data_size = sizeof(float) * N - 1;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_BUFFER_TOO_SMALL);
    bad = dx;
    bad.dtype_bits = 64;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_DTYPE_MISMATCH);
    bad = dx;
    bad.shape[0] = N + 1;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_SHAPE_MISMATCH);
    bad = dx;
    bad.ndim = 99;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_SHAPE_MISMATCH);
    bad = dx;
    bad.reserved = 1;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    bad = dx;
    bad.data = (char *)x + 1;
    EXPECT(nxe_binding_bind_input(binding, 0, &bad) == NXE_ERROR_INVALID_ARGUMENT &&
           strstr(nxe_last_error(), "aligned"));
    EXPECT(nxe_binding_run(NULL) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(nxe_binding_run(binding) == NXE_ERROR_INVALID_STATE);
    EXPECT(nxe_binding_clear(NULL) == NXE_ERROR_INVALID_ARGUMENT);

    /* Overlaps: an output over another output or an input; inputs over nothing bound. */
    nxe_tensor_desc first = desc_of(block, sizeof(float) * N);
    nxe_tensor_desc shifted = desc_of(block + N / 2, sizeof(float) * N);
    EXPECT(nxe_binding_bind_output(binding, 0, &first) == NXE_OK);
    EXPECT(nxe_binding_bind_output(binding, 1, &shifted) == NXE_ERROR_INVALID_ARGUMENT &&
           strstr(nxe_last_error(), "overlaps"));
    EXPECT(nxe_binding_bind_input(binding, 0, &shifted) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(nxe_binding_bind_output(binding, 0, &first) == NXE_OK); /* rebinding itself */
    EXPECT(nxe_binding_clear(binding) == NXE_OK);

    /* A bound run: nothing copied, results right. */
    nxe_run_stats before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    EXPECT(nxe_binding_bind_input(binding, 0, &dx) == NXE_OK);
    EXPECT(nxe_binding_bind_output(binding, 0, &dh) == NXE_OK);
    EXPECT(nxe_binding_run(binding) == NXE_ERROR_INVALID_STATE); /* y unbound */
    EXPECT(nxe_binding_bind_output(binding, 1, &dy) == NXE_OK);
    EXPECT(nxe_executable_stats(exe, &before) == NXE_OK);
    EXPECT(nxe_binding_run(binding) == NXE_OK);
    EXPECT(nxe_executable_stats(exe, &after) == NXE_OK);
    EXPECT(results_right(x, h, y));
    EXPECT(after.runs == before.runs + 1);
    EXPECT(after.inputs_in_place == before.inputs_in_place + 1);
    EXPECT(after.inputs_copied == before.inputs_copied);
    EXPECT(after.bytes_copied_in == before.bytes_copied_in);
    EXPECT(after.bytes_copied_out == before.bytes_copied_out);

    /* An element-aligned input off a 64-byte boundary, refilled in place. */
    nxe_tensor_desc dx1 = desc_of(x + 1, sizeof(float) * N);
    EXPECT(nxe_binding_bind_input(binding, 0, &dx1) == NXE_OK);
    EXPECT(nxe_binding_run(binding) == NXE_OK);
    EXPECT(results_right(x + 1, h, y));

    sharer sharers[2] = {{binding, 0}, {binding, 0}};
    pthread_t pair[2];
    for (int t = 0; t < 2; t++)
        EXPECT(pthread_create(&pair[t], NULL, share, &sharers[t]) == 0);
    for (int t = 0; t < 2; t++) {
        pthread_join(pair[t], NULL);
        EXPECT(sharers[t].other == 0);
    }
    EXPECT(results_right(x + 1, h, y));
    nxe_binding_release(binding);

    /* Four threads, a binding each. */
    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t].exe = exe;
        for (int i = 0; i < N; i++)
            workers[t].x[i] = (float)(t + 1) * (float)(i - N / 2) / 11.0f;
        EXPECT(pthread_create(&threads[t], NULL, work, &workers[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        EXPECT(workers[t].ok);
    }
    nxe_executable_release(exe);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
