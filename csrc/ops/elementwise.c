/* elementwise.c — the elementwise op family: Add/Sub/Mul/Div with numpy broadcasting and the
 * f32 activations. Shape rules and lowering only; the arithmetic lives in kernels/ref. */
#include <string.h>

#include "ops/op_def.h"
#include "ref/elementwise.h"

_Static_assert(NXE_REF_MAX_RANK == NXE_MAX_RANK, "kernel and ABI ranks must agree");

/* Output elements per parallel chunk: large enough that waking a worker pays for itself. */
#define ELEMENTWISE_GRAIN 16384

enum binary_op { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV };

typedef struct binary_params {
    int32_t op;         /* enum binary_op */
    int32_t dtype;
    int32_t contiguous; /* both operands dense with the output's shape */
    int32_t ndim;       /* of the walk below, after merging dimensions; >= 1 */
    int64_t numel;
    int64_t shape[NXE_MAX_RANK];
    int64_t a_strides[NXE_MAX_RANK];
    int64_t b_strides[NXE_MAX_RANK];
} binary_params;

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

/* Drops size-1 dimensions and merges neighbours that both operands traverse contiguously, so
 * the common cases (same shape, scalar operand, bias along one axis) become one or two loops. */
static void merge_dims(binary_params *p, int32_t ndim, const int64_t *shape, const int64_t *sa,
                       const int64_t *sb)
{
    int32_t m = 0;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        if (m > 0 && p->a_strides[m - 1] == sa[d] * shape[d] &&
            p->b_strides[m - 1] == sb[d] * shape[d]) {
            p->shape[m - 1] *= shape[d];
            p->a_strides[m - 1] = sa[d];
            p->b_strides[m - 1] = sb[d];
            continue;
        }
        p->shape[m] = shape[d];
        p->a_strides[m] = sa[d];
        p->b_strides[m] = sb[d];
        m++;
    }
    if (m == 0) {
        p->shape[0] = 1;
        p->a_strides[0] = 1;
        p->b_strides[0] = 1;
        m = 1;
    }
    p->ndim = m;
    p->contiguous = m == 1 && p->a_strides[0] == 1 && p->b_strides[0] == 1;
}

static nxe_status binary_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                               binary_params *p, enum binary_op op)
{
    const nxe_value *a = &inputs[0], *b = &inputs[1];
    if (a->dtype != b->dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "inputs 'A' (%s) and 'B' (%s) must have the same dtype",
                              nxe_dtype_name(a->dtype), nxe_dtype_name(b->dtype));
    int32_t ndim = 0;
    int64_t shape[NXE_MAX_RANK];
    nxe_status status = nxe_broadcast_shapes(node, a->ndim, a->shape, b->ndim, b->shape, &ndim,
                                             shape);
    if (status != NXE_OK)
        return status;
    outputs[0].dtype = a->dtype;
    outputs[0].ndim = ndim;
    memcpy(outputs[0].shape, shape, (size_t)ndim * sizeof shape[0]);

    int64_t sa[NXE_MAX_RANK], sb[NXE_MAX_RANK];
    broadcast_strides(a, ndim, sa);
    broadcast_strides(b, ndim, sb);
    p->op = op;
    p->dtype = a->dtype;
    p->numel = nxe_value_numel(&outputs[0]);
    merge_dims(p, ndim, shape, sa, sb);
    return NXE_OK;
}

#define BINARY_INFER(fn, op)                                                                  \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,   \
                         nxe_value *outputs, int32_t num_outputs, void *params)               \
    {                                                                                         \
        (void)num_inputs;                                                                     \
        (void)num_outputs;                                                                    \
        return binary_infer(node, inputs, outputs, params, op);                               \
    }
BINARY_INFER(add_infer, BINARY_ADD)
BINARY_INFER(sub_infer, BINARY_SUB)
BINARY_INFER(mul_infer, BINARY_MUL)
BINARY_INFER(div_infer, BINARY_DIV)
#undef BINARY_INFER

typedef struct binary_job {
    const binary_params *p;
    const void *a;
    const void *b;
    void *out;
} binary_job;

#define BINARY_CASE(prefix, op_enum, op)                                                      \
    case op_enum:                                                                             \
        if (p->contiguous)                                                                    \
            nxe_ref_##prefix##_##op(end - begin, a + begin, b + begin, out + begin);          \
        else                                                                                  \
            nxe_ref_##prefix##_##op##_strided(p->ndim, p->shape, p->a_strides, a,             \
                                              p->b_strides, b, out, begin, end);              \
        break;
#define BINARY_RANGE(T, prefix)                                                               \
    static void binary_range_##prefix(void *ctx, int64_t begin, int64_t end)                  \
    {                                                                                         \
        const binary_job *job = ctx;                                                          \
        const binary_params *p = job->p;                                                      \
        const T *a = job->a;                                                                  \
        const T *b = job->b;                                                                  \
        T *out = job->out;                                                                    \
        switch (p->op) {                                                                      \
            BINARY_CASE(prefix, BINARY_ADD, add)                                              \
            BINARY_CASE(prefix, BINARY_SUB, sub)                                              \
            BINARY_CASE(prefix, BINARY_MUL, mul)                                              \
            BINARY_CASE(prefix, BINARY_DIV, div)                                              \
        }                                                                                     \
    }
BINARY_RANGE(float, f32)
BINARY_RANGE(int32_t, i32)
BINARY_RANGE(int64_t, i64)
#undef BINARY_RANGE
#undef BINARY_CASE

static nxe_status binary_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const binary_params *p = params;
    binary_job job = {p, inputs[0].data, inputs[1].data, outputs[0].data};
    nxe_range_fn fn;
    switch (p->dtype) {
    case NXE_DTYPE_F32: fn = binary_range_f32; break;
    case NXE_DTYPE_I32: fn = binary_range_i32; break;
    case NXE_DTYPE_I64: fn = binary_range_i64; break;
    default:
        return nxe_error(NXE_ERROR_INTERNAL, "binary elementwise op: dtype %s reached run",
                         nxe_dtype_name(p->dtype));
    }
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, ELEMENTWISE_GRAIN, fn, &job);
    return NXE_OK;
}

/* ---- Activations ---------------------------------------------------------------------- */

enum unary_op { UNARY_RELU, UNARY_LEAKY_RELU, UNARY_TANH, UNARY_SIGMOID, UNARY_GELU,
                UNARY_GELU_TANH, UNARY_ERF };

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

#define UNARY_INFER(fn, op)                                                                   \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,   \
                         nxe_value *outputs, int32_t num_outputs, void *params)               \
    {                                                                                         \
        (void)node;                                                                           \
        (void)num_inputs;                                                                     \
        (void)num_outputs;                                                                    \
        unary_same_shape(inputs, outputs, params, op);                                        \
        return NXE_OK;                                                                        \
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

static void unary_range(void *ctx, int64_t begin, int64_t end)
{
    const unary_job *job = ctx;
    const int64_t n = end - begin;
    const float *x = job->x + begin;
    float *y = job->y + begin;
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
        nxe_parallel_for(pool, p->numel, ELEMENTWISE_GRAIN, unary_range, &job);
    return NXE_OK;
}

/* ---- Schemas -------------------------------------------------------------------------- */

#define ARITH_MASK (NXE_MASK(NXE_DTYPE_F32) | NXE_MASK(NXE_DTYPE_I32) | NXE_MASK(NXE_DTYPE_I64))

static const nxe_op_param_info binary_inputs[] = {
    {"A", "first operand: f32, i32 or i64", ARITH_MASK, 0, 0},
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

#define BINARY_DEF(name, summary, infer)                                                      \
    {NXE_INFO_NOATTR(name, summary, binary_inputs, binary_outputs), sizeof(binary_params),    \
     infer, binary_run}

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
    BINARY_DEF("Div",
               "Elementwise quotient A / B with numpy broadcasting. f32 follows IEEE 754 "
               "(x/0 is inf or NaN). Integer division truncates toward zero; x / 0 gives 0 and "
               "MIN / -1 wraps to MIN, so no input traps.",
               div_infer),
    {NXE_INFO_NOATTR("Relu", "Rectified linear unit: Y = max(X, 0); NaN stays NaN.",
                     unary_inputs, unary_outputs),
     sizeof(unary_params), relu_infer, unary_run},
    {NXE_INFO("LeakyRelu", "Leaky rectifier: Y = X for X >= 0, alpha * X otherwise.",
              unary_inputs, unary_outputs, leaky_relu_attrs),
     sizeof(unary_params), leaky_relu_infer, unary_run},
    {NXE_INFO_NOATTR("Tanh", "Hyperbolic tangent, elementwise.", unary_inputs, unary_outputs),
     sizeof(unary_params), tanh_infer, unary_run},
    {NXE_INFO_NOATTR("Sigmoid", "Logistic function Y = 1 / (1 + exp(-X)), elementwise.",
                     unary_inputs, unary_outputs),
     sizeof(unary_params), sigmoid_infer, unary_run},
    {NXE_INFO("Gelu", "Gaussian error linear unit, exact (erf) or tanh approximation.",
              unary_inputs, unary_outputs, gelu_attrs),
     sizeof(unary_params), gelu_infer, unary_run},
    {NXE_INFO_NOATTR("Erf", "Gauss error function, elementwise.", unary_inputs, unary_outputs),
     sizeof(unary_params), erf_infer, unary_run},
};

#undef BINARY_DEF

const nxe_op_family nxe_ops_elementwise = {
    elementwise_defs, (int32_t)(sizeof elementwise_defs / sizeof elementwise_defs[0])};
