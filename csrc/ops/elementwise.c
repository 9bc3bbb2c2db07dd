/* elementwise.c — the elementwise op family: Add/Sub/Mul/Div with numpy broadcasting, the f32
 * activations, and the broadcasting machinery the math family shares (ops/elementwise.h).
 * Shape rules and lowering only; the arithmetic lives in kernels/ref. */
#include <string.h>

#include "ops/op_def.h"
#include "ops/elementwise.h"
#include "ref/cast.h"

_Static_assert(NXE_REF_MAX_RANK == NXE_MAX_RANK, "kernel and ABI ranks must agree");

int32_t nxe_elementwise_ref_type(int32_t dtype)
{
    switch (dtype) {
    case NXE_DTYPE_F32: return NXE_REF_F32;
    case NXE_DTYPE_F16: return NXE_REF_F16;
    case NXE_DTYPE_BF16: return NXE_REF_BF16;
    case NXE_DTYPE_I8: return NXE_REF_I8;
    case NXE_DTYPE_U8: return NXE_REF_U8;
    case NXE_DTYPE_I16: return NXE_REF_I16;
    case NXE_DTYPE_I32: return NXE_REF_I32;
    case NXE_DTYPE_I64: return NXE_REF_I64;
    case NXE_DTYPE_BOOL: return NXE_REF_BOOL;
    case NXE_DTYPE_F64: return NXE_REF_EW_F64;
    case NXE_DTYPE_U16: return NXE_REF_EW_U16;
    case NXE_DTYPE_U32: return NXE_REF_EW_U32;
    case NXE_DTYPE_U64: return NXE_REF_EW_U64;
    default: return -1;
    }
}

/* Element strides of an operand seen through the output's shape: 0 on the dimensions it is
 * broadcast along (missing leading dims and size-1 dims). */
static void broadcast_strides(const nxe_value *v, int32_t out_ndim, int64_t *strides)
{
    int64_t stride = 1;
    for (int32_t d = out_ndim - 1; d >= 0; d--) {
        const int32_t vd = d - (out_ndim - v->ndim);
        if (vd < 0 || v->shape[vd] == 1) {
            strides[d] = 0;
        } else {
            strides[d] = stride;
            stride *= v->shape[vd];
        }
    }
}

nxe_status nxe_broadcast_plan(const nxe_node *node, const nxe_value *const *operands, int32_t count,
                              nxe_value *out, nxe_ref_broadcast *walk)
{
    int32_t ndim = operands[0]->ndim;
    int64_t shape[NXE_MAX_RANK];
    memcpy(shape, operands[0]->shape, (size_t)ndim * sizeof shape[0]);
    for (int32_t j = 1; j < count; j++) {
        int64_t next[NXE_MAX_RANK];
        nxe_status status = nxe_broadcast_shapes(node, ndim, shape, operands[j]->ndim,
                                                 operands[j]->shape, &ndim, next);
        if (status != NXE_OK)
            return status;
        memcpy(shape, next, (size_t)ndim * sizeof shape[0]);
    }
    out->ndim = ndim;
    memcpy(out->shape, shape, (size_t)ndim * sizeof shape[0]);

    int64_t strides[NXE_REF_MAX_OPERANDS][NXE_MAX_RANK];
    for (int32_t j = 0; j < count; j++)
        broadcast_strides(operands[j], ndim, strides[j]);

    /* Drops size-1 dimensions and merges neighbours that every operand traverses
     * contiguously, so the common cases (same shape, scalar operand, bias along one axis)
     * become one or two loops. */
    memset(walk, 0, sizeof *walk);
    walk->num_operands = count;
    int32_t m = 0;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        bool mergeable = m > 0;
        for (int32_t j = 0; mergeable && j < count; j++)
            mergeable = walk->strides[j][m - 1] == strides[j][d] * shape[d];
        if (mergeable) {
            walk->shape[m - 1] *= shape[d];
            for (int32_t j = 0; j < count; j++)
                walk->strides[j][m - 1] = strides[j][d];
            continue;
        }
        walk->shape[m] = shape[d];
        for (int32_t j = 0; j < count; j++)
            walk->strides[j][m] = strides[j][d];
        m++;
    }
    if (m == 0) {
        walk->shape[0] = 1;
        m = 1;
    }
    walk->ndim = m;
    return NXE_OK;
}

nxe_status nxe_binary_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                            nxe_binary_params *p, int32_t op, int32_t out_dtype)
{
    const nxe_value *a = &inputs[0], *b = &inputs[1];
    if (a->dtype != b->dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "inputs 0 (%s) and 1 (%s) must have the same dtype",
                              nxe_dtype_name(a->dtype), nxe_dtype_name(b->dtype));
    if (nxe_ref_binary_kernel(op, nxe_elementwise_ref_type(a->dtype)) == NULL)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH, "dtype %s is not supported",
                              nxe_dtype_name(a->dtype));
    const nxe_value *operands[2] = {a, b};
    nxe_status status = nxe_broadcast_plan(node, operands, 2, &outputs[0], &p->walk);
    if (status != NXE_OK)
        return status;
    outputs[0].dtype = out_dtype == NXE_DTYPE_NONE ? a->dtype : out_dtype;
    p->op = op;
    p->dtype = a->dtype;
    p->numel = nxe_value_numel(&outputs[0]);
    return NXE_OK;
}

typedef struct binary_job {
    nxe_ref_binary_fn kernel;
    const nxe_binary_params *p;
    const char *a;
    const char *b;
    char *out;
    size_t in_size;
    size_t out_size;
} binary_job;

static void binary_segment(void *ctx, int64_t n, int64_t out_offset, const int64_t *offsets,
                           const int64_t *steps)
{
    const binary_job *job = ctx;
    job->kernel(n, job->a + offsets[0] * (int64_t)job->in_size, steps[0],
                job->b + offsets[1] * (int64_t)job->in_size, steps[1],
                job->out + out_offset * (int64_t)job->out_size);
}

static void binary_range(void *ctx, int64_t begin, int64_t end)
{
    const binary_job *job = ctx;
    nxe_ref_broadcast_walk(&job->p->walk, begin, end, binary_segment, ctx);
}

nxe_status nxe_binary_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                          nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_binary_params *p = params;
    binary_job job = {nxe_ref_binary_kernel(p->op, nxe_elementwise_ref_type(p->dtype)),
                      p,
                      inputs[0].data,
                      inputs[1].data,
                      outputs[0].data,
                      nxe_dtype_size(p->dtype),
                      nxe_dtype_size(outputs[0].dtype)};
    if (job.kernel == NULL)
        return nxe_error(NXE_ERROR_INTERNAL, "binary elementwise op %d: dtype %s reached run",
                         p->op, nxe_dtype_name(p->dtype));
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, NXE_ELEMENTWISE_GRAIN, binary_range, &job);
    return NXE_OK;
}

#define BINARY_INFER(fn, op)                                                                       \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return nxe_binary_infer(node, inputs, outputs, params, op, NXE_DTYPE_NONE);                \
    }
BINARY_INFER(add_infer, NXE_REF_ADD)
BINARY_INFER(sub_infer, NXE_REF_SUB)
BINARY_INFER(mul_infer, NXE_REF_MUL)
BINARY_INFER(div_infer, NXE_REF_DIV)
#undef BINARY_INFER

/* ---- Activations ---------------------------------------------------------------------- */

enum unary_op {
    UNARY_RELU,
    UNARY_LEAKY_RELU,
    UNARY_TANH,
    UNARY_SIGMOID,
    UNARY_GELU,
    UNARY_GELU_TANH,
    UNARY_ERF
};

typedef struct unary_params {
    int32_t op; /* enum unary_op */
    float alpha;
    int64_t numel;
} unary_params;

static void unary_same_shape(const nxe_value *inputs, nxe_value *outputs, unary_params *p,
                             enum unary_op op)
{
    outputs[0].dtype = inputs[0].dtype;
    outputs[0].ndim = inputs[0].ndim;
    memcpy(outputs[0].shape, inputs[0].shape, (size_t)inputs[0].ndim * sizeof(int64_t));
    p->op = op;
    p->numel = nxe_value_numel(&inputs[0]);
}

#define UNARY_INFER(fn, op)                                                                        \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)node;                                                                                \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        unary_same_shape(inputs, outputs, params, op);                                             \
        return NXE_OK;                                                                             \
    }
UNARY_INFER(relu_infer, UNARY_RELU)
UNARY_INFER(tanh_infer, UNARY_TANH)
UNARY_INFER(sigmoid_infer, UNARY_SIGMOID)
UNARY_INFER(erf_infer, UNARY_ERF)
#undef UNARY_INFER

static nxe_status leaky_relu_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    unary_params *p = params;
    double alpha;
    nxe_status status = nxe_node_attr_float(node, "alpha", &alpha);
    if (status != NXE_OK)
        return status;
    unary_same_shape(inputs, outputs, p, UNARY_LEAKY_RELU);
    p->alpha = (float)alpha;
    return NXE_OK;
}

static nxe_status gelu_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const char *approximate;
    nxe_status status = nxe_node_attr_string(node, "approximate", &approximate);
    if (status != NXE_OK)
        return status;
    enum unary_op op;
    if (strcmp(approximate, "none") == 0)
        op = UNARY_GELU;
    else if (strcmp(approximate, "tanh") == 0)
        op = UNARY_GELU_TANH;
    else
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'approximate' is \"%s\"; expected \"none\" or \"tanh\"",
                              approximate);
    unary_same_shape(inputs, outputs, params, op);
    return NXE_OK;
}

typedef struct unary_job {
    const unary_params *p;
    const float *x;
    float *y;
} unary_job;

/* The epilogue activation of each unary op, NONE for Erf (not an activation). */
static int32_t unary_activation(int32_t op)
{
    switch (op) {
    case UNARY_RELU: return NXE_ACTIVATION_RELU;
    case UNARY_LEAKY_RELU: return NXE_ACTIVATION_LEAKY_RELU;
    case UNARY_TANH: return NXE_ACTIVATION_TANH;
    case UNARY_SIGMOID: return NXE_ACTIVATION_SIGMOID;
    case UNARY_GELU: return NXE_ACTIVATION_GELU_ERF;
    case UNARY_GELU_TANH: return NXE_ACTIVATION_GELU_TANH;
    default: return NXE_ACTIVATION_NONE;
    }
}

static void unary_range(void *ctx, int64_t begin, int64_t end)
{
    const unary_job *job = ctx;
    const int64_t n = end - begin;
    const float *x = job->x + begin;
    float *y = job->y + begin;
    const int32_t activation = unary_activation(job->p->op);
    nxe_f32_activation_fn *const vectorized = nxe_kernels()->f32_activation;
    if (vectorized && activation != NXE_ACTIVATION_NONE) {
        vectorized(activation, job->p->alpha, 0.0f, x, y, n);
        return;
    }
    switch (job->p->op) {
    case UNARY_RELU: nxe_ref_f32_relu(n, x, y); break;
    case UNARY_LEAKY_RELU: nxe_ref_f32_leaky_relu(n, job->p->alpha, x, y); break;
    case UNARY_TANH: nxe_ref_f32_tanh(n, x, y); break;
    case UNARY_SIGMOID: nxe_ref_f32_sigmoid(n, x, y); break;
    case UNARY_GELU: nxe_ref_f32_gelu(n, x, y); break;
    case UNARY_GELU_TANH: nxe_ref_f32_gelu_tanh(n, x, y); break;
    case UNARY_ERF: nxe_ref_f32_erf(n, x, y); break;
    }
}

static nxe_status unary_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const unary_params *p = params;
    unary_job job = {p, inputs[0].data, outputs[0].data};
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, NXE_ELEMENTWISE_GRAIN, unary_range, &job);
    return NXE_OK;
}

static bool unary_as_activation(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                nxe_epilogue *epilogue)
{
    (void)num_inputs;
    const unary_params *p = params;
    int32_t activation = unary_activation(p->op);
    if (activation == NXE_ACTIVATION_NONE || inputs[0].dtype != NXE_DTYPE_F32)
        return false;
    epilogue->activation = activation;
    epilogue->alpha = p->alpha;
    epilogue->beta = 0.0f;
    return true;
}

/* ---- Schemas -------------------------------------------------------------------------- */

#define ARITH_MASK                                                                                 \
    ((NXE_MASK_ALL & ~NXE_MASK(NXE_DTYPE_BOOL)) | NXE_MASK(NXE_DTYPE_F64) |                        \
     NXE_MASK(NXE_DTYPE_U16) | NXE_MASK(NXE_DTYPE_U32) | NXE_MASK(NXE_DTYPE_U64))

static const nxe_op_param_info binary_inputs[] = {
    {"A",
     "first operand: any numeric dtype (f16 and bf16 compute in f32 and round once, f64 in "
     "double; unsigned integers wrap modulo 2^bits)",
     ARITH_MASK, 0, 0},
    {"B", "second operand, same dtype as A; A and B broadcast against each other as in numpy",
     ARITH_MASK, 0, 0},
};
static const nxe_op_param_info binary_outputs[] = {
    {"C", "result, dtype of A, shape of A and B broadcast together", ARITH_MASK, 0, 0},
};

static const nxe_op_param_info unary_inputs[] = {
    {"X", "input tensor, f32, any shape", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info unary_outputs[] = {
    {"Y", "result, same shape as X", NXE_MASK_FLOAT, 0, 0},
};

static const nxe_op_attr_info leaky_relu_attrs[] = {
    {"alpha", "slope applied to negative inputs", NXE_ATTR_FLOAT, "0.01"},
};
static const nxe_op_attr_info gelu_attrs[] = {
    {"approximate",
     "\"none\": exact form 0.5*x*(1+erf(x/sqrt(2))); \"tanh\": "
     "0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))",
     NXE_ATTR_STRING, "\"none\""},
};

#define BINARY_DEF(name, summary, infer)                                                           \
    {NXE_INFO_NOATTR(name, summary, binary_inputs, binary_outputs), sizeof(nxe_binary_params),     \
     infer, nxe_binary_run}

static const nxe_op_def elementwise_defs[] = {
    BINARY_DEF("Add",
               "Elementwise sum A + B with numpy broadcasting. Integer sums wrap around on "
               "overflow (two's complement).",
               add_infer),
    BINARY_DEF("Sub",
               "Elementwise difference A - B with numpy broadcasting. Integer differences wrap "
               "around on overflow (two's complement).",
               sub_infer),
    BINARY_DEF("Mul",
               "Elementwise product A * B with numpy broadcasting. Integer products wrap "
               "around on overflow (two's complement).",
               mul_infer),
    BINARY_DEF(
        "Div",
        "Elementwise quotient A / B with numpy broadcasting. f32 follows IEEE 754 "
        "(x/0 is inf or NaN). Integer division truncates toward zero; x / 0 gives 0 (signed and "
        "unsigned) and MIN / -1 wraps to MIN, so no input traps.",
        div_infer),
    {NXE_INFO_NOATTR("Relu", "Rectified linear unit: Y = max(X, 0); NaN stays NaN.", unary_inputs,
                     unary_outputs),
     sizeof(unary_params), relu_infer, unary_run, NULL, NULL, unary_as_activation},
    {NXE_INFO("LeakyRelu", "Leaky rectifier: Y = X for X >= 0, alpha * X otherwise.", unary_inputs,
              unary_outputs, leaky_relu_attrs),
     sizeof(unary_params), leaky_relu_infer, unary_run, NULL, NULL, unary_as_activation},
    {NXE_INFO_NOATTR("Tanh", "Hyperbolic tangent, elementwise.", unary_inputs, unary_outputs),
     sizeof(unary_params), tanh_infer, unary_run, NULL, NULL, unary_as_activation},
    {NXE_INFO_NOATTR("Sigmoid", "Logistic function Y = 1 / (1 + exp(-X)), elementwise.",
                     unary_inputs, unary_outputs),
     sizeof(unary_params), sigmoid_infer, unary_run, NULL, NULL, unary_as_activation},
    {NXE_INFO("Gelu", "Gaussian error linear unit, exact (erf) or tanh approximation.",
              unary_inputs, unary_outputs, gelu_attrs),
     sizeof(unary_params), gelu_infer, unary_run, NULL, NULL, unary_as_activation},
    {NXE_INFO_NOATTR("Erf", "Gauss error function, elementwise.", unary_inputs, unary_outputs),
     sizeof(unary_params), erf_infer, unary_run},
};

#undef BINARY_DEF

const nxe_op_family nxe_ops_elementwise = {
    elementwise_defs, (int32_t)(sizeof elementwise_defs / sizeof elementwise_defs[0])};
