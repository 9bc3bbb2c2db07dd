/* churn.c — memory hygiene under churn: many cycles of build -> compile -> run -> release and of
 * compiled-binary loads (from memory and from a file) -> run -> release, each result checked
 * against plain C. Run under LeakSanitizer (the sanitizer build), any object a cycle fails to
 * release is reported as a leak at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

enum { ROWS = 4, WIDTH = 32, CYCLES = 300 };

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != NXE_OK) {                                                                    \
            fprintf(stderr, "churn.c:%d: %s: %s\n", __LINE__, #call, nxe_last_error());            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static nxe_tensor *add_tensor(nxe_graph *g, const char *name, int32_t kind, int32_t ndim,
                              const int64_t *shape)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.kind = kind;
    spec.ndim = ndim;
    spec.shape = shape;
    nxe_tensor *t = NULL;
    CHECK(nxe_graph_add_tensor(g, &spec, &t));
    return t;
}

static void bind(nxe_graph *g, const char *type, nxe_tensor *a, nxe_tensor *b, nxe_tensor *out)
{
    nxe_op *op = NULL;
    CHECK(nxe_graph_add_op(g, type, NULL, &op));
    nxe_tensor *inputs[2] = {a, b};
    CHECK(nxe_op_bind_inputs(op, inputs, b ? 2 : 1));
    CHECK(nxe_op_bind_outputs(op, &out, 1));
}

/* y = relu(x @ w + b) for x [ROWS, WIDTH], w [WIDTH, WIDTH], b [WIDTH]. */
static nxe_graph *build(const float *w, const float *b)
{
    nxe_context *ctx = NULL;
    nxe_graph *g = NULL;
    CHECK(nxe_context_create(&ctx));
    CHECK(nxe_graph_create(ctx, &g));
    nxe_context_release(ctx);
    const int64_t x_shape[2] = {ROWS, WIDTH}, w_shape[2] = {WIDTH, WIDTH}, b_shape[1] = {WIDTH};
    nxe_tensor *x = add_tensor(g, "x", NXE_TENSOR_INPUT, 2, x_shape);
    nxe_tensor *wt = add_tensor(g, "w", NXE_TENSOR_CONSTANT, 2, w_shape);
    nxe_tensor *bt = add_tensor(g, "b", NXE_TENSOR_CONSTANT, 1, b_shape);
    CHECK(nxe_tensor_set_data(wt, w, sizeof(float) * WIDTH * WIDTH));
    CHECK(nxe_tensor_set_data(bt, b, sizeof(float) * WIDTH));
    nxe_tensor *m = add_tensor(g, "m", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *s = add_tensor(g, "s", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = add_tensor(g, "y", NXE_TENSOR_OUTPUT, -1, NULL);
    bind(g, "MatMul", x, wt, m);
    bind(g, "Add", m, bt, s);
    bind(g, "Relu", s, NULL, y);
    return g;
}

static nxe_tensor_desc f32_desc(float *data, int64_t rows, int64_t cols)
{
    nxe_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.data = data;
    d.data_size = sizeof(float) * (size_t)(rows * cols);
    d.ndim = 2;
    d.dtype_code = NXE_DL_FLOAT;
    d.dtype_bits = 32;
    d.shape[0] = rows;
    d.shape[1] = cols;
    return d;
}

/* Runs `exe` on x and compares with plain C within 1e-4 (sums of 32 products of values below 1:
 * far above fp32 rounding, far below any wrong term). */
static void run_and_check(nxe_executable *exe, float *x, const float *expected)
{
    float y[ROWS * WIDTH];
    nxe_tensor_desc in = f32_desc(x, ROWS, WIDTH), out = f32_desc(y, ROWS, WIDTH);
    CHECK(nxe_executable_run(exe, &in, 1, &out, 1));
    for (int i = 0; i < ROWS * WIDTH; i++) {
        float diff = y[i] - expected[i];
        if (diff > 1e-4f || diff < -1e-4f) {
            fprintf(stderr, "churn.c: y[%d] = %g, expected %g\n", i, y[i], expected[i]);
            exit(1);
        }
    }
}

int main(void)
{
    const char *path = "churn_test.nxb";
    static float w[WIDTH * WIDTH], b[WIDTH], x[ROWS * WIDTH], expected[ROWS * WIDTH];
    unsigned seed = 1;
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        /* fresh values each cycle, so a cached result could not pass */
        for (int i = 0; i < WIDTH * WIDTH; i++)
            w[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 256.0f - 0.5f;
        for (int i = 0; i < WIDTH; i++)
            b[i] = (float)(cycle % 7) * 0.125f - 0.25f;
        for (int i = 0; i < ROWS * WIDTH; i++)
            x[i] = (float)((i + cycle) % 11) / 11.0f - 0.5f;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < WIDTH; c++) {
                double sum = b[c];
                for (int k = 0; k < WIDTH; k++)
                    sum += (double)x[r * WIDTH + k] * w[k * WIDTH + c];
                expected[r * WIDTH + c] = sum > 0 ? (float)sum : 0.0f;
            }

        nxe_graph *g = build(w, b);
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = 1 + cycle % 2; /* with and without a worker thread */
        nxe_executable *exe = NULL;
        CHECK(nxe_graph_compile(g, &options, &exe));
        run_and_check(exe, x, expected);
        nxe_executable_release(exe);

        size_t size = 0;
        CHECK(nxe_graph_compile_to_binary(g, &options, NULL, &size));
        void *binary = malloc(size);
        if (!binary)
            return 1;
        CHECK(nxe_graph_compile_to_binary(g, &options, binary, &size));
        nxe_graph_release(g);

        nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
        load.num_threads = options.num_threads;
        CHECK(nxe_executable_load_memory(binary, size, &load, &exe));
        run_and_check(exe, x, expected);
        nxe_executable_release(exe);

        FILE *file = fopen(path, "wb");
        if (!file || fwrite(binary, 1, size, file) != size || fclose(file) != 0) {
            fprintf(stderr, "churn.c: cannot write %s\n", path);
            return 1;
        }
        free(binary);
        CHECK(nxe_executable_load_file(path, &load, &exe));
        run_and_check(exe, x, expected);
        nxe_executable_release(exe);
    }
    remove(path);
    printf("churn: %d cycles of build/compile/run/release and binary loads\n", CYCLES);
    return 0;
}
