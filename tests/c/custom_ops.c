/* custom_ops.c — custom ops registered from C: a scaled Swish with an attribute, a prepare
 * callback and a parallel loop on the library's threads, and a two-output op, used in a graph,
 * compiled in memory and to a binary, loaded with and without the context that registers them
 * (a missing op is NXE_ERROR_NOT_FOUND naming it), run after the context is released; a
 * composed GELU (tanh form) built from built-in ops; failing callbacks and shape rules that give
 * bad shapes. References are computed here with libm. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "expect.h"
#include "f32_tensor.h"

/* ---- the ops ---- */

static atomic_int prepared_states; /* made by prepare and not yet released */
static atomic_int destroyed;       /* user data destroyed with an op entry */

/* Same dtype and shape as input 0, on every output. */
static nxe_status same_as_input(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, nxe_custom_tensor *outputs, int32_t num_outputs)
{
    (void)call;
    if (num_inputs < 1 || inputs[0].dtype != NXE_DTYPE_F32)
        return nxe_custom_fail(NXE_ERROR_DTYPE_MISMATCH, "input 0 must be f32");
    for (int32_t i = 0; i < num_outputs; i++) {
        outputs[i].dtype = NXE_DTYPE_F32;
        outputs[i].ndim = inputs[0].ndim;
        memcpy(outputs[i].shape, inputs[0].shape, sizeof outputs[i].shape);
    }
    return NXE_OK;
}

static size_t numel(const nxe_custom_tensor *t)
{
    size_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

/* y = scale * x * sigmoid(beta * x); beta is an attribute, scale what prepare packed. */
typedef struct swish_loop {
    const float *x;
    float *y;
    float beta, scale;
} swish_loop;

static void swish_range(void *arg, int64_t begin, int64_t end)
{
    const swish_loop *loop = arg;
    for (int64_t i = begin; i < end; i++)
        loop->y[i] = loop->scale * loop->x[i] / (1.0f + expf(-loop->beta * loop->x[i]));
}

static nxe_status swish_prepare(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, void **state)
{
    (void)num_inputs;
    /* Input 1 is a constant scalar: packed once, here. */
    if (!inputs[1].data || inputs[1].data_size != sizeof(float))
        return nxe_custom_fail(NXE_ERROR_INVALID_ARGUMENT, "the scale must be a constant scalar");
    float *scale = malloc(sizeof *scale);
    if (!scale)
        return nxe_custom_fail(NXE_ERROR_OUT_OF_MEMORY, "out of memory");
    *scale = *(const float *)inputs[1].data * *(const float *)call->user_data;
    *state = scale;
    atomic_fetch_add(&prepared_states, 1);
    return NXE_OK;
}

static void swish_release(void *user_data, void *state)
{
    (void)user_data;
    free(state);
    atomic_fetch_sub(&prepared_states, 1);
}

static nxe_status swish_compute(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, nxe_custom_tensor *outputs, int32_t num_outputs)
{
    (void)num_inputs, (void)num_outputs;
    double beta;
    nxe_status status = nxe_custom_attr_float(call->attrs, "beta", &beta);
    if (status != NXE_OK)
        return status;
    swish_loop loop = {inputs[0].data, outputs[0].data, (float)beta, *(const float *)call->state};
    return nxe_custom_parallel_for(call, (int64_t)numel(&inputs[0]), 4, swish_range, &loop);
}

/* (max(x, 0), min(x, 0)); fails on a NaN when its attribute asks it to. */
static nxe_status split_compute(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, nxe_custom_tensor *outputs, int32_t num_outputs)
{
    (void)num_inputs, (void)num_outputs;
    int64_t check_nan = 0;
    nxe_status status = nxe_custom_attr_int(call->attrs, "check_nan", &check_nan);
    if (status != NXE_OK)
        return status;
    const float *x = inputs[0].data;
    float *pos = outputs[0].data, *neg = outputs[1].data;
    for (size_t i = 0; i < numel(&inputs[0]); i++) {
        if (check_nan && isnan(x[i]))
            return nxe_custom_fail(NXE_ERROR_RUNTIME, "a NaN reached the split");
        pos[i] = x[i] > 0 ? x[i] : 0;
        neg[i] = x[i] < 0 ? x[i] : 0;
    }
    return NXE_OK;
}

static nxe_status bad_rank_infer(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                 int32_t num_inputs, nxe_custom_tensor *outputs,
                                 int32_t num_outputs)
{
    same_as_input(call, inputs, num_inputs, outputs, num_outputs);
    outputs[0].ndim = NXE_MAX_RANK + 1;
    return NXE_OK;
}

static nxe_status bad_dim_infer(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, nxe_custom_tensor *outputs, int32_t num_outputs)
{
    same_as_input(call, inputs, num_inputs, outputs, num_outputs);
    outputs[0].shape[0] = -3;
    return NXE_OK;
}

static nxe_status bad_dtype_infer(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                  int32_t num_inputs, nxe_custom_tensor *outputs,
                                  int32_t num_outputs)
{
    same_as_input(call, inputs, num_inputs, outputs, num_outputs);
    outputs[0].dtype = 99;
    return NXE_OK;
}

static nxe_status failing_infer(const nxe_custom_call *call, const nxe_custom_tensor *inputs,
                                int32_t num_inputs, nxe_custom_tensor *outputs, int32_t num_outputs)
{
    (void)call, (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs;
    return nxe_custom_fail(NXE_ERROR_SHAPE_MISMATCH, "this op refuses every shape");
}

static void destroy_user_data(void *user_data)
{
    (void)user_data;
    atomic_fetch_add(&destroyed, 1);
}

static float swish_factor = 2.0f; /* the user data of the Swish: multiplies the scale */

static const nxe_op_attr_info swish_attrs[] = {{"beta", "", NXE_ATTR_FLOAT, "1.0"}};
static const nxe_op_attr_info split_attrs[] = {{"check_nan", "", NXE_ATTR_INT, "0"}};

static void register_ops(nxe_context *ctx)
{
    nxe_custom_op swish = NXE_CUSTOM_OP_INIT;
    swish.name = "test.ScaledSwish";
    swish.domain = "test.domain";
    swish.onnx_op_type = "ScaledSwish";
    swish.num_inputs = 2;
    swish.num_outputs = 1;
    swish.attrs = swish_attrs;
    swish.num_attrs = 1;
    swish.infer = same_as_input;
    swish.compute = swish_compute;
    swish.prepare = swish_prepare;
    swish.release = swish_release;
    swish.user_data = &swish_factor;
    swish.destroy = destroy_user_data;
    EXPECT_OK(nxe_context_register_op(ctx, &swish));

    nxe_custom_op split = NXE_CUSTOM_OP_INIT;
    split.name = "test.SplitSign";
    split.num_inputs = 1;
    split.num_outputs = 2;
    split.attrs = split_attrs;
    split.num_attrs = 1;
    split.infer = same_as_input;
    split.compute = split_compute;
    EXPECT_OK(nxe_context_register_op(ctx, &split));
}

/* ---- graphs ---- */

#define ROWS 3
#define COLS 40
#define COUNT (ROWS * COLS)
static const int64_t shape[2] = {ROWS, COLS};
static const float beta = 1.5f, scale = 0.75f;

/* x -> ScaledSwish(x, scale; beta) -> SplitSign -> (pos, neg) */
static nxe_graph *swish_graph(nxe_context *ctx)
{
    nxe_graph *g = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &g));
    nxe_tensor *x, *s, *k, *pos, *neg;
    EXPECT_OK(add_f32_tensor(g, "x", NXE_TENSOR_INPUT, 2, shape, &x));
    EXPECT_OK(add_f32_tensor(g, "scale", NXE_TENSOR_CONSTANT, 0, NULL, &k));
    EXPECT_OK(nxe_tensor_set_data(k, &scale, sizeof scale));
    EXPECT_OK(add_f32_tensor(g, "s", NXE_TENSOR_TRANSIENT, -1, NULL, &s));
    EXPECT_OK(add_f32_tensor(g, "pos", NXE_TENSOR_OUTPUT, -1, NULL, &pos));
    EXPECT_OK(add_f32_tensor(g, "neg", NXE_TENSOR_OUTPUT, -1, NULL, &neg));
    nxe_op *swish, *split;
    EXPECT_OK(nxe_graph_add_op(g, "test.ScaledSwish", "swish", &swish));
    EXPECT_OK(nxe_op_set_attr_float(swish, "beta", beta));
    EXPECT_FAIL(nxe_op_set_attr_int(swish, "gamma", 1), NXE_ERROR_NOT_FOUND, "gamma");
    nxe_tensor *swish_in[2] = {x, k}, *split_out[2] = {pos, neg};
    EXPECT_OK(nxe_op_bind_inputs(swish, swish_in, 2));
    EXPECT_OK(nxe_op_bind_outputs(swish, &s, 1));
    EXPECT_OK(nxe_graph_add_op(g, "test.SplitSign", "split", &split));
    EXPECT_OK(nxe_op_set_attr_int(split, "check_nan", 1));
    EXPECT_OK(nxe_op_bind_inputs(split, &s, 1));
    EXPECT_OK(nxe_op_bind_outputs(split, split_out, 2));
    return g;
}

static void make_input(float *x)
{
    for (int i = 0; i < COUNT; i++)
        x[i] = (float)((i * 37) % 97 - 48) / 12.0f;
}

static void set_desc(nxe_tensor_desc *desc, float *data, int32_t ndim, const int64_t *dims,
                     size_t count)
{
    memset(desc, 0, sizeof *desc);
    desc->data = data;
    desc->data_size = count * sizeof(float);
    desc->ndim = ndim;
    desc->dtype_code = NXE_DL_FLOAT;
    desc->dtype_bits = 32;
    for (int32_t d = 0; d < ndim; d++)
        desc->shape[d] = dims[d];
}

/* Runs the swish graph's executable on x and compares with the reference. */
static void check_swish_run(nxe_executable *exe, const char *what)
{
    float x[COUNT], pos[COUNT], neg[COUNT];
    make_input(x);
    nxe_tensor_desc in, out[2];
    set_desc(&in, x, 2, shape, COUNT);
    set_desc(&out[0], pos, 2, shape, COUNT);
    set_desc(&out[1], neg, 2, shape, COUNT);
    EXPECT_OK(nxe_executable_run(exe, &in, 1, out, 2));
    double worst = 0;
    for (int i = 0; i < COUNT; i++) {
        double s = (double)scale * swish_factor * x[i] / (1.0 + exp(-(double)beta * x[i]));
        double p = s > 0 ? s : 0, n = s < 0 ? s : 0;
        worst = fmax(worst, fmax(fabs(p - pos[i]), fabs(n - neg[i])));
    }
    checks++;
    /* f32 expf against the double reference: a few ulps of values below 10 */
    if (!(worst < 1e-5)) {
        fprintf(stderr, "custom_ops.c: %s: largest error %g\n", what, worst);
        failures++;
    }
    /* A NaN input makes the split fail with its own status and message. */
    x[5] = NAN;
    EXPECT_FAIL(nxe_executable_run(exe, &in, 1, out, 2), NXE_ERROR_RUNTIME,
                "a NaN reached the split");
    EXPECT_TRUE(strstr(nxe_last_error(), "test.SplitSign") && strstr(nxe_last_error(), "split"));
}

static void test_swish(void)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    register_ops(ctx);
    nxe_graph *g = swish_graph(ctx);
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(g, NULL, &exe));
    EXPECT_TRUE(atomic_load(&prepared_states) == 1);
    check_swish_run(exe, "compiled");

    size_t size = 0;
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, NULL, &size));
    void *binary = malloc(size);
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, binary, &size));

    /* A model file names the ops too: building its graph needs a context that has them. */
    size_t model_size = 0;
    EXPECT_OK(nxe_graph_save_model(g, NULL, NULL, &model_size));
    void *model_bytes = malloc(model_size);
    EXPECT_OK(nxe_graph_save_model(g, NULL, model_bytes, &model_size));
    nxe_graph_release(g);
    nxe_model *model = NULL;
    EXPECT_OK(nxe_model_open_memory(model_bytes, model_size, NULL, &model));
    free(model_bytes);
    nxe_context *bare = NULL;
    EXPECT_OK(nxe_context_create(&bare));
    nxe_graph *rebuilt = NULL;
    EXPECT_FAIL(nxe_model_build_graph(model, bare, &rebuilt), NXE_ERROR_NOT_FOUND,
                "test.ScaledSwish");
    EXPECT_TRUE(rebuilt == NULL);
    nxe_context_release(bare);
    EXPECT_OK(nxe_model_build_graph(model, ctx, &rebuilt));
    nxe_model_release(model);
    nxe_executable *from_model = NULL;
    EXPECT_OK(nxe_graph_compile(rebuilt, NULL, &from_model));
    nxe_graph_release(rebuilt);
    if (from_model)
        check_swish_run(from_model, "built from the model file");
    nxe_executable_release(from_model);

    /* Without the context: the missing op is named. */
    nxe_executable *loaded = NULL;
    EXPECT_FAIL(nxe_executable_load_memory(binary, size, NULL, &loaded), NXE_ERROR_NOT_FOUND,
                "test.ScaledSwish");
    EXPECT_TRUE(loaded == NULL);
    /* A context lacking one of the two ops names that one. */
    nxe_context *partial = NULL;
    EXPECT_OK(nxe_context_create(&partial));
    nxe_custom_op split = NXE_CUSTOM_OP_INIT;
    split.name = "test.SplitSign";
    split.num_inputs = 1;
    split.num_outputs = 2;
    split.infer = same_as_input;
    split.compute = split_compute;
    EXPECT_OK(nxe_context_register_op(partial, &split));
    nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
    options.context = partial;
    EXPECT_FAIL(nxe_executable_load_memory(binary, size, &options, &loaded), NXE_ERROR_NOT_FOUND,
                "test.ScaledSwish");
    nxe_context_release(partial);

    /* The loading program registers the same ops in its own context. */
    nxe_context *other = NULL;
    EXPECT_OK(nxe_context_create(&other));
    register_ops(other);
    options.context = other;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &options, &loaded));
    nxe_context_release(other); /* the executable keeps the ops it uses */
    EXPECT_TRUE(atomic_load(&prepared_states) == 2);
    if (loaded)
        check_swish_run(loaded, "loaded");
    nxe_executable_release(loaded);
    EXPECT_TRUE(atomic_load(&prepared_states) == 1);

    /* The executable compiled in memory outlives its context too. */
    nxe_context_release(ctx);
    check_swish_run(exe, "compiled, context released");
    int before = atomic_load(&destroyed);
    nxe_executable_release(exe);
    EXPECT_TRUE(atomic_load(&prepared_states) == 0);
    EXPECT_TRUE(atomic_load(&destroyed) == before + 1); /* the last user of the entry went */
    free(binary);
}

/* ---- registration errors and bad shape rules ---- */

static nxe_status bad_graph_compile(nxe_context *ctx, const char *op_type)
{
    nxe_graph *g = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &g));
    nxe_tensor *x, *y;
    EXPECT_OK(add_f32_tensor(g, "x", NXE_TENSOR_INPUT, 2, shape, &x));
    EXPECT_OK(add_f32_tensor(g, "y", NXE_TENSOR_OUTPUT, -1, NULL, &y));
    nxe_op *op = NULL;
    EXPECT_OK(nxe_graph_add_op(g, op_type, "bad", &op));
    EXPECT_OK(nxe_op_bind_inputs(op, &x, 1));
    EXPECT_OK(nxe_op_bind_outputs(op, &y, 1));
    nxe_executable *exe = NULL;
    nxe_status status = nxe_graph_compile(g, NULL, &exe);
    EXPECT_TRUE(exe == NULL);
    nxe_executable_release(exe);
    nxe_graph_release(g);
    return status;
}

static void test_errors(void)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_custom_op op = NXE_CUSTOM_OP_INIT;
    op.name = "test.Bad";
    op.num_inputs = 1;
    op.num_outputs = 1;
    op.infer = same_as_input;
    op.compute = split_compute;
    EXPECT_FAIL(nxe_context_register_op(NULL, &op), NXE_ERROR_INVALID_ARGUMENT, "context");
    EXPECT_FAIL(nxe_context_register_op(ctx, NULL), NXE_ERROR_INVALID_ARGUMENT, "op");
    nxe_custom_op short_op = op;
    short_op.struct_size = 8;
    EXPECT_FAIL(nxe_context_register_op(ctx, &short_op), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    nxe_custom_op builtin = op;
    builtin.name = "Add";
    EXPECT_FAIL(nxe_context_register_op(ctx, &builtin), NXE_ERROR_INVALID_STATE, "built-in");
    nxe_custom_op bad_name = op;
    bad_name.name = "\xff\xfe";
    EXPECT_FAIL(nxe_context_register_op(ctx, &bad_name), NXE_ERROR_INVALID_ARGUMENT, "UTF-8");
    nxe_custom_op no_dot = op;
    no_dot.name = "Undotted";
    EXPECT_FAIL(nxe_context_register_op(ctx, &no_dot), NXE_ERROR_INVALID_ARGUMENT, "no '.'");
    nxe_custom_op no_compute = op;
    no_compute.compute = NULL;
    EXPECT_FAIL(nxe_context_register_op(ctx, &no_compute), NXE_ERROR_INVALID_ARGUMENT, "compute");
    nxe_custom_op counts = op;
    counts.num_outputs = 0;
    EXPECT_FAIL(nxe_context_register_op(ctx, &counts), NXE_ERROR_INVALID_ARGUMENT, "outputs");
    static const nxe_op_attr_info bad_default[] = {{"k", "", NXE_ATTR_INTS, "[1, x]"}};
    nxe_custom_op defaults = op;
    defaults.attrs = bad_default;
    defaults.num_attrs = 1;
    EXPECT_FAIL(nxe_context_register_op(ctx, &defaults), NXE_ERROR_INVALID_ARGUMENT, "'k'");
    EXPECT_OK(nxe_context_register_op(ctx, &op));
    EXPECT_FAIL(nxe_context_register_op(ctx, &op), NXE_ERROR_INVALID_STATE, "already");

    const char *names[] = {"test.BadRank", "test.BadDim", "test.BadDtype", "test.Refuses"};
    nxe_custom_infer_fn infers[] = {bad_rank_infer, bad_dim_infer, bad_dtype_infer, failing_infer};
    for (int i = 0; i < 4; i++) {
        nxe_custom_op bad = op;
        bad.name = names[i];
        bad.infer = infers[i];
        EXPECT_OK(nxe_context_register_op(ctx, &bad));
    }
    EXPECT_FAIL(bad_graph_compile(ctx, "test.BadRank"), NXE_ERROR_SHAPE_MISMATCH, "rank 7");
    EXPECT_FAIL(bad_graph_compile(ctx, "test.BadDim"), NXE_ERROR_SHAPE_MISMATCH, "negative");
    EXPECT_FAIL(bad_graph_compile(ctx, "test.BadDtype"), NXE_ERROR_DTYPE_MISMATCH, "dtype 99");
    EXPECT_FAIL(bad_graph_compile(ctx, "test.Refuses"), NXE_ERROR_SHAPE_MISMATCH,
                "this op refuses every shape");
    EXPECT_TRUE(strstr(nxe_last_error(), "test.Refuses") != NULL);

    /* Ops of one context are unknown to another. */
    nxe_context *other = NULL;
    EXPECT_OK(nxe_context_create(&other));
    nxe_graph *g = NULL;
    EXPECT_OK(nxe_graph_create(other, &g));
    nxe_op *missing = NULL;
    EXPECT_FAIL(nxe_graph_add_op(g, "test.Bad", NULL, &missing), NXE_ERROR_NOT_FOUND, "test.Bad");
    nxe_graph_release(g);
    nxe_context_release(other);

    const char *found = NULL;
    EXPECT_FAIL(nxe_context_find_onnx_op(ctx, "nope", "Bad", &found), NXE_ERROR_NOT_FOUND, "nope");
    EXPECT_TRUE(found == NULL);
    EXPECT_FAIL(nxe_custom_parallel_for(NULL, 1, 1, swish_range, NULL), NXE_ERROR_INVALID_ARGUMENT,
                "call");
    EXPECT_FAIL(nxe_custom_attr_int(NULL, "x", &(int64_t){0}), NXE_ERROR_INVALID_ARGUMENT, "attrs");
    nxe_context_release(ctx);
}

/* ---- a composed op: GELU, tanh form, from built-in ops ---- */

static nxe_tensor *constant(nxe_graph *g, const char *name, float value)
{
    nxe_tensor *t = NULL;
    EXPECT_OK(add_f32_tensor(g, name, NXE_TENSOR_CONSTANT, 0, NULL, &t));
    EXPECT_OK(nxe_tensor_set_data(t, &value, sizeof value));
    return t;
}

static nxe_tensor *binary_op(nxe_graph *g, const char *type, nxe_tensor *a, nxe_tensor *b,
                             nxe_tensor *out)
{
    if (!out)
        EXPECT_OK(add_f32_tensor(g, NULL, NXE_TENSOR_TRANSIENT, -1, NULL, &out));
    nxe_op *op = NULL;
    nxe_tensor *in[2] = {a, b};
    EXPECT_OK(nxe_graph_add_op(g, type, NULL, &op));
    EXPECT_OK(nxe_op_bind_inputs(op, in, b ? 2 : 1));
    EXPECT_OK(nxe_op_bind_outputs(op, &out, 1));
    return out;
}

/* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static void register_gelu(nxe_context *ctx)
{
    nxe_graph *body = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &body));
    const int64_t body_shape[1] = {4}; /* any shape works where it is used */
    nxe_tensor *x, *y;
    EXPECT_OK(add_f32_tensor(body, "x", NXE_TENSOR_INPUT, 1, body_shape, &x));
    EXPECT_OK(add_f32_tensor(body, "y", NXE_TENSOR_OUTPUT, -1, NULL, &y));
    nxe_tensor *x2 = binary_op(body, "Mul", x, x, NULL);
    nxe_tensor *x3 = binary_op(body, "Mul", x2, x, NULL);
    nxe_tensor *c3 = binary_op(body, "Mul", x3, constant(body, "c", 0.044715f), NULL);
    nxe_tensor *inner = binary_op(body, "Add", x, c3, NULL);
    nxe_tensor *scaled = binary_op(body, "Mul", inner, constant(body, "k", 0.7978845608f), NULL);
    nxe_tensor *t = binary_op(body, "Tanh", scaled, NULL, NULL);
    nxe_tensor *one_plus = binary_op(body, "Add", t, constant(body, "one", 1.0f), NULL);
    nxe_tensor *half_x = binary_op(body, "Mul", x, constant(body, "half", 0.5f), NULL);
    binary_op(body, "Mul", half_x, one_plus, y);
    EXPECT_OK(nxe_context_register_composed_op(ctx, "test.GeluTanh", "test.domain", body));
    EXPECT_FAIL(nxe_context_register_composed_op(ctx, "test.GeluTanh", NULL, body),
                NXE_ERROR_INVALID_STATE, "already");
    nxe_graph_release(body); /* the op keeps its own copy */
}

static void test_composed(void)
{
    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    register_gelu(ctx);
    const char *found = NULL;
    EXPECT_OK(nxe_context_find_onnx_op(ctx, "test.domain", "test.GeluTanh", &found));
    EXPECT_TRUE(found && strcmp(found, "test.GeluTanh") == 0);
    /* Used twice in one graph, on a shape other than the body's. */
    nxe_graph *g = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &g));
    nxe_tensor *x, *h, *y;
    EXPECT_OK(add_f32_tensor(g, "x", NXE_TENSOR_INPUT, 2, shape, &x));
    EXPECT_OK(add_f32_tensor(g, "h", NXE_TENSOR_TRANSIENT, -1, NULL, &h));
    EXPECT_OK(add_f32_tensor(g, "y", NXE_TENSOR_OUTPUT, -1, NULL, &y));
    binary_op(g, "test.GeluTanh", x, NULL, h);
    binary_op(g, "test.GeluTanh", h, NULL, y);
    nxe_executable *exe = NULL;
    EXPECT_OK(nxe_graph_compile(g, NULL, &exe));
    nxe_tensor_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(nxe_tensor_get_info(y, &info));
    EXPECT_TRUE(info.ndim == 2 && info.shape[0] == ROWS && info.shape[1] == COLS);
    size_t size = 0;
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, NULL, &size));
    void *binary = malloc(size);
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, binary, &size));
    nxe_graph_release(g);
    nxe_context_release(ctx);
    /* The plan holds the body's ops: it loads without the context. */
    nxe_executable *loaded = NULL;
    nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
    options.allow_recompile = 0;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &options, &loaded));
    free(binary);
    nxe_executable *exes[2] = {exe, loaded};
    for (int e = 0; e < 2; e++) {
        if (!exes[e])
            continue;
        float xs[COUNT], ys[COUNT];
        make_input(xs);
        nxe_tensor_desc in, out;
        set_desc(&in, xs, 2, shape, COUNT);
        set_desc(&out, ys, 2, shape, COUNT);
        EXPECT_OK(nxe_executable_run(exes[e], &in, 1, &out, 1));
        double worst = 0;
        for (int i = 0; i < COUNT; i++) {
            double v = xs[i];
            for (int k = 0; k < 2; k++)
                v = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
            worst = fmax(worst, fabs(v - ys[i]));
        }
        checks++;
        /* f32 arithmetic through two GELUs of values below 4 */
        if (!(worst < 1e-5)) {
            fprintf(stderr, "custom_ops.c: composed op %d: largest error %g\n", e, worst);
            failures++;
        }
        nxe_executable_release(exes[e]);
    }

    /* A body that does not compile is refused at registration. */
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *body = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &body));
    nxe_tensor *a, *b, *c;
    const int64_t s3[1] = {3}, s4[1] = {4};
    EXPECT_OK(add_f32_tensor(body, "a", NXE_TENSOR_INPUT, 1, s3, &a));
    EXPECT_OK(add_f32_tensor(body, "b", NXE_TENSOR_INPUT, 1, s4, &b));
    EXPECT_OK(add_f32_tensor(body, "c", NXE_TENSOR_OUTPUT, -1, NULL, &c));
    binary_op(body, "Add", a, b, c);
    EXPECT_FAIL(nxe_context_register_composed_op(ctx, "test.Broken", NULL, body),
                NXE_ERROR_SHAPE_MISMATCH, "does not compile");
    EXPECT_FAIL(nxe_context_register_composed_op(ctx, "test.Broken", NULL, NULL),
                NXE_ERROR_INVALID_ARGUMENT, "body");
    nxe_graph_release(body);
    nxe_context_release(ctx);
}

int main(void)
{
    test_swish();
    test_errors();
    test_composed();
    if (failures) {
        fprintf(stderr, "custom_ops: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("custom_ops: %d checks passed\n", checks);
    return 0;
}
