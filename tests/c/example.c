/* example.c — the README's C example: y = relu(x + b), built and run against the installed nxe. */
#include <stdio.h>

#include <nxe/nxe.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != NXE_OK) {                                                                    \
            fprintf(stderr, "%s: %s\n", #call, nxe_last_error());                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    nxe_context *ctx;
    nxe_graph *g;
    CHECK(nxe_context_create(&ctx));
    CHECK(nxe_graph_create(ctx, &g));
    nxe_context_release(ctx); /* the graph keeps its context alive */

    int64_t shape[2] = {2, 3};
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    nxe_tensor *x, *b, *s, *y;
    spec.name = "x";
    spec.dtype = NXE_DTYPE_F32;
    spec.kind = NXE_TENSOR_INPUT;
    spec.ndim = 2;
    spec.shape = shape;
    CHECK(nxe_graph_add_tensor(g, &spec, &x));
    spec.name = "b";
    spec.kind = NXE_TENSOR_CONSTANT;
    CHECK(nxe_graph_add_tensor(g, &spec, &b));
    const float bias[6] = {0.5f, -1.0f, 2.0f, 0.5f, -1.0f, 2.0f};
    CHECK(nxe_tensor_set_data(b, bias, sizeof bias));
    spec.name = "s";
    spec.kind = NXE_TENSOR_TRANSIENT;
    spec.ndim = -1; /* left to inference */
    CHECK(nxe_graph_add_tensor(g, &spec, &s));
    spec.name = "y";
    spec.kind = NXE_TENSOR_OUTPUT;
    CHECK(nxe_graph_add_tensor(g, &spec, &y));

    nxe_op *add, *relu;
    nxe_tensor *add_inputs[2] = {x, b};
    CHECK(nxe_graph_add_op(g, "Add", "add0", &add));
    CHECK(nxe_op_bind_inputs(add, add_inputs, 2));
    CHECK(nxe_op_bind_outputs(add, &s, 1));
    CHECK(nxe_graph_add_op(g, "Relu", "relu0", &relu));
    CHECK(nxe_op_bind_inputs(relu, &s, 1));
    CHECK(nxe_op_bind_outputs(relu, &y, 1));

    nxe_executable *exe;
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    CHECK(nxe_graph_compile(g, &options, &exe));
    nxe_graph_release(g); /* the executable does not need the graph */

    float x_values[6] = {1, -2, 3, -4, 5, -6}, y_values[6];
    nxe_tensor_desc in = {x_values, sizeof x_values, 2, NXE_DL_FLOAT, 32, 0, {2, 3}};
    nxe_tensor_desc out = {y_values, sizeof y_values, 2, NXE_DL_FLOAT, 32, 0, {2, 3}};
    CHECK(nxe_executable_run(exe, &in, 1, &out, 1));
    nxe_executable_release(exe);

    for (int i = 0; i < 6; i++) {
        float expected = x_values[i] + bias[i] > 0 ? x_values[i] + bias[i] : 0;
        printf("%g%c", y_values[i], i % 3 == 2 ? '\n' : ' ');
        if (y_values[i] != expected) {
            fprintf(stderr, "y[%d] = %g, expected %g\n", i, y_values[i], expected);
            return 1;
        }
    }
    return 0;
}
