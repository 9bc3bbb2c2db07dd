/* layout.c — a channels-last graph from C (NHWC input, OHWI conv weight, bias Add, Relu, NHWC
 * max pool): compiled in memory and through a binary, both checked against a direct
 * computation here, and a plan whose Transpose steps are its first and last only. Under the
 * sanitizer build LeakSanitizer reports what the layout pass fails to release. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != NXE_OK) {                                                                    \
            fprintf(stderr, "%s: %s\n", #call, nxe_last_error());                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum { H = 6, W = 4, CI = 2, CO = 3, K = 3, OH = H / 2, OW = W / 2 };

static nxe_tensor *tensor(nxe_graph *g, const char *name, int32_t kind, int32_t ndim,
                          const int64_t *shape)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    nxe_tensor *t;
    spec.name = name;
    spec.dtype = NXE_DTYPE_F32;
    spec.kind = kind;
    spec.ndim = ndim;
    spec.shape = shape;
    CHECK(nxe_graph_add_tensor(g, &spec, &t));
    return t;
}

static nxe_op *op(nxe_graph *g, const char *type, const char *name, nxe_tensor **in, int32_t n,
                  nxe_tensor *out)
{
    nxe_op *o;
    CHECK(nxe_graph_add_op(g, type, name, &o));
    CHECK(nxe_op_bind_inputs(o, in, n));
    CHECK(nxe_op_bind_outputs(o, &out, 1));
    return o;
}

static nxe_graph *build(const float *weight, const float *bias)
{
    nxe_context *ctx;
    nxe_graph *g;
    CHECK(nxe_context_create(&ctx));
    CHECK(nxe_graph_create(ctx, &g));
    nxe_context_release(ctx);
    const int64_t x_shape[4] = {1, H, W, CI}, w_shape[4] = {CO, K, K, CI}, b_shape[1] = {CO};
    const int64_t y_shape[4] = {1, OH, OW, CO};
    nxe_tensor *x = tensor(g, "x", NXE_TENSOR_INPUT, 4, x_shape);
    nxe_tensor *w = tensor(g, "w", NXE_TENSOR_CONSTANT, 4, w_shape);
    nxe_tensor *b = tensor(g, "b", NXE_TENSOR_CONSTANT, 1, b_shape);
    CHECK(nxe_tensor_set_data(w, weight, sizeof(float) * CO * K * K * CI));
    CHECK(nxe_tensor_set_data(b, bias, sizeof(float) * CO));
    nxe_tensor *c = tensor(g, "c", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *s = tensor(g, "s", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *r = tensor(g, "r", NXE_TENSOR_TRANSIENT, -1, NULL);
    nxe_tensor *y = tensor(g, "y", NXE_TENSOR_OUTPUT, 4, y_shape);
    nxe_tensor *conv_in[2] = {x, w}, *add_in[2] = {c, b};
    nxe_op *conv = op(g, "Conv2d", "conv", conv_in, 2, c);
    CHECK(nxe_op_set_attr_string(conv, "layout", "NHWC"));
    CHECK(nxe_op_set_attr_string(conv, "padding", "SAME"));
    op(g, "Add", "add", add_in, 2, s);
    op(g, "Relu", "relu", &s, 1, r);
    nxe_op *pool = op(g, "MaxPool2d", "pool", &r, 1, y);
    const int64_t window[2] = {2, 2};
    CHECK(nxe_op_set_attr_ints(pool, "kernel_shape", window, 2));
    CHECK(nxe_op_set_attr_ints(pool, "strides", window, 2));
    CHECK(nxe_op_set_attr_string(pool, "layout", "NHWC"));
    return g;
}

/* The NHWC forward, in double. */
static void reference(const float *x, const float *weight, const float *bias, double *y)
{
    double act[H][W][CO];
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++)
            for (int o = 0; o < CO; o++) {
                double sum = bias[o];
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        int yy = i + ky - K / 2, xx = j + kx - K / 2;
                        if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                            continue;
                        for (int c = 0; c < CI; c++)
                            sum += (double)x[(yy * W + xx) * CI + c] *
                                   weight[((o * K + ky) * K + kx) * CI + c];
                    }
                act[i][j][o] = sum > 0 ? sum : 0;
            }
    for (int i = 0; i < OH; i++)
        for (int j = 0; j < OW; j++)
            for (int o = 0; o < CO; o++) {
                double m = act[2 * i][2 * j][o];
                for (int d = 1; d < 4; d++)
                    if (act[2 * i + d / 2][2 * j + d % 2][o] > m)
                        m = act[2 * i + d / 2][2 * j + d % 2][o];
                y[(i * OW + j) * CO + o] = m;
            }
}

static int run_and_compare(nxe_executable *exe, const float *x, const double *want,
                           const char *what)
{
    float y[OH * OW * CO];
    nxe_tensor_desc in = {(void *)x,    sizeof(float) * H * W * CI, 4, NXE_DL_FLOAT, 32, 0,
                          {1, H, W, CI}};
    nxe_tensor_desc out = {y, sizeof y, 4, NXE_DL_FLOAT, 32, 0, {1, OH, OW, CO}};
    CHECK(nxe_executable_set_profiling(exe, 1));
    CHECK(nxe_executable_run(exe, &in, 1, &out, 1));
    for (int i = 0; i < OH * OW * CO; i++) {
        double diff = y[i] - want[i];
        if (diff > 1e-5 || diff < -1e-5) {
            fprintf(stderr, "%s: y[%d] = %g, expected %g\n", what, i, y[i], want[i]);
            return 1;
        }
    }
    nxe_profile_step steps[16];
    int32_t count = 0;
    steps[0].struct_size = sizeof steps[0];
    CHECK(nxe_executable_get_profile(exe, steps, 16, &count));
    for (int32_t s = 0; s < count; s++) {
        printf("%s: step %d %s '%s'\n", what, s, steps[s].op_type, steps[s].op_name);
        bool transpose = strcmp(steps[s].op_type, "Transpose") == 0;
        if (transpose != (s == 0 || s == count - 1)) {
            fprintf(stderr, "%s: step %d is %s\n", what, s, steps[s].op_type);
            return 1;
        }
    }
    return 0;
}

int main(void)
{
    float x[H * W * CI], weight[CO * K * K * CI], bias[CO];
    unsigned state = 12345;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)((state = state * 1103515245u + 12345u) >> 16 & 0xff) / 128.0f - 1.0f;
    for (size_t i = 0; i < sizeof weight / sizeof weight[0]; i++)
        weight[i] = (float)((state = state * 1103515245u + 12345u) >> 16 & 0xff) / 256.0f - 0.5f;
    for (int i = 0; i < CO; i++)
        bias[i] = 0.1f * (float)(i - 1);
    double want[OH * OW * CO];
    reference(x, weight, bias, want);

    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    nxe_graph *g = build(weight, bias);
    nxe_executable *exe;
    CHECK(nxe_graph_compile(g, &options, &exe));
    int failed = run_and_compare(exe, x, want, "compiled");
    nxe_executable_release(exe);

    size_t size = 0;
    CHECK(nxe_graph_compile_to_binary(g, &options, NULL, &size));
    void *binary = malloc(size);
    if (!binary)
        return 1;
    CHECK(nxe_graph_compile_to_binary(g, &options, binary, &size));
    nxe_graph_release(g);
    nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
    CHECK(nxe_executable_load_memory(binary, size, &load, &exe));
    free(binary);
    failed |= run_and_compare(exe, x, want, "loaded");
    nxe_executable_release(exe);
    return failed;
}
