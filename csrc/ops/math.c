/* math.c — the math op family: unary math and activations, binary math (Pow, Min, Max, Mod,
 * BitShift, PRelu), comparisons, logic, bitwise ops and Where. Shape rules and lowering only; the
 * arithmetic lives in kernels/ref, broadcasting in the elementwise family's machinery. */
#include <math.h>
#include <string.h>

#include "ops/elementwise.h"
#include "ops/op_def.h"
#include "gemm.h"
#include "ref/cast.h"
#include "ref/math.h"

/* ---- Unary ops ----------------------------------------------------------------------------- */

/* Op codes past the kernels' enum nxe_ref_unary_op, for the ops with a bool output. */
enum { MATH_ISNAN = NXE_REF_UNARY_OP_COUNT, MATH_ISINF, MATH_NOT, MATH_BITWISE_NOT };

typedef struct unary_params {
    int32_t op; /* enum nxe_ref_unary_op or MATH_* */
    int32_t dtype;
    float alpha;
    float beta;
    int64_t lo; /* CLIP bounds for integer dtypes */
    int64_t hi;
    int32_t detect_negative;
    int32_t detect_positive;
    int64_t numel;
} unary_params;

static nxe_status read_float(const nxe_node *node, const char *name, float *out)
{
    double value;
    nxe_status status = nxe_node_attr_float(node, name, &value);
    if (status != NXE_OK)
        return status;
    if (isnan(value))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT, "attribute '%s' is NaN", name);
    *out = (float)value;
    return NXE_OK;
}

/* An integer bound from a float attribute: rounded inward (ceil for the lower bound, floor for
 * the upper), saturated to int64 so the conversion is always defined. */
static int64_t int_bound(double value, bool lower)
{
    const double rounded = lower ? ceil(value) : floor(value);
    if (rounded <= -9223372036854775808.0)
        return INT64_MIN;
    if (rounded >= 9223372036854775808.0)
        return INT64_MAX;
    return (int64_t)rounded;
}

static nxe_status unary_attrs(const nxe_node *node, unary_params *p)
{
    nxe_status status = NXE_OK;
    switch (p->op) {
    case NXE_REF_CLIP: {
        double lo, hi;
        status = nxe_node_attr_float(node, "min", &lo);
        if (status == NXE_OK)
            status = nxe_node_attr_float(node, "max", &hi);
        if (status != NXE_OK)
            return status;
        if (isnan(lo) || isnan(hi))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attributes 'min' (%g) and 'max' (%g) must not be NaN", lo, hi);
        p->alpha = (float)lo;
        p->beta = (float)hi;
        p->lo = int_bound(lo, true);
        p->hi = int_bound(hi, false);
        return NXE_OK;
    }
    case NXE_REF_ELU:
    case NXE_REF_SWISH:
    case NXE_REF_THRESHOLDED_RELU: return read_float(node, "alpha", &p->alpha);
    case NXE_REF_CELU:
        status = read_float(node, "alpha", &p->alpha);
        if (status == NXE_OK && p->alpha == 0.0f)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'alpha' must not be 0");
        return status;
    case NXE_REF_SELU:
        status = read_float(node, "alpha", &p->alpha);
        return status == NXE_OK ? read_float(node, "gamma", &p->beta) : status;
    case NXE_REF_HARD_SIGMOID:
        status = read_float(node, "alpha", &p->alpha);
        return status == NXE_OK ? read_float(node, "beta", &p->beta) : status;
    case MATH_ISINF: {
        int64_t negative, positive;
        status = nxe_node_attr_int(node, "detect_negative", &negative);
        if (status == NXE_OK)
            status = nxe_node_attr_int(node, "detect_positive", &positive);
        if (status != NXE_OK)
            return status;
        p->detect_negative = negative != 0;
        p->detect_positive = positive != 0;
        return NXE_OK;
    }
    default: return NXE_OK;
    }
}

static nxe_status unary_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                              unary_params *p, int32_t op)
{
    p->op = op;
    p->dtype = inputs[0].dtype;
    p->numel = nxe_value_numel(&inputs[0]);
    nxe_status status = unary_attrs(node, p);
    if (status != NXE_OK)
        return status;
    outputs[0].dtype = op == MATH_ISNAN || op == MATH_ISINF ? NXE_DTYPE_BOOL : inputs[0].dtype;
    outputs[0].ndim = inputs[0].ndim;
    memcpy(outputs[0].shape, inputs[0].shape, (size_t)inputs[0].ndim * sizeof(int64_t));
    return NXE_OK;
}

#define UNARY_INFER(fn, op)                                                                        \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return unary_infer(node, inputs, outputs, params, op);                                     \
    }
UNARY_INFER(abs_infer, NXE_REF_ABS)
UNARY_INFER(neg_infer, NXE_REF_NEG)
UNARY_INFER(exp_infer, NXE_REF_EXP)
UNARY_INFER(log_infer, NXE_REF_LOG)
UNARY_INFER(sqrt_infer, NXE_REF_SQRT)
UNARY_INFER(reciprocal_infer, NXE_REF_RECIPROCAL)
UNARY_INFER(floor_infer, NXE_REF_FLOOR)
UNARY_INFER(ceil_infer, NXE_REF_CEIL)
UNARY_INFER(round_infer, NXE_REF_ROUND)
UNARY_INFER(sign_infer, NXE_REF_SIGN)
UNARY_INFER(sin_infer, NXE_REF_SIN)
UNARY_INFER(cos_infer, NXE_REF_COS)
UNARY_INFER(tan_infer, NXE_REF_TAN)
UNARY_INFER(asin_infer, NXE_REF_ASIN)
UNARY_INFER(acos_infer, NXE_REF_ACOS)
UNARY_INFER(atan_infer, NXE_REF_ATAN)
UNARY_INFER(sinh_infer, NXE_REF_SINH)
UNARY_INFER(cosh_infer, NXE_REF_COSH)
UNARY_INFER(asinh_infer, NXE_REF_ASINH)
UNARY_INFER(acosh_infer, NXE_REF_ACOSH)
UNARY_INFER(atanh_infer, NXE_REF_ATANH)
UNARY_INFER(clip_infer, NXE_REF_CLIP)
UNARY_INFER(elu_infer, NXE_REF_ELU)
UNARY_INFER(selu_infer, NXE_REF_SELU)
UNARY_INFER(celu_infer, NXE_REF_CELU)
UNARY_INFER(hard_sigmoid_infer, NXE_REF_HARD_SIGMOID)
UNARY_INFER(hard_swish_infer, NXE_REF_HARD_SWISH)
UNARY_INFER(swish_infer, NXE_REF_SWISH)
UNARY_INFER(mish_infer, NXE_REF_MISH)
UNARY_INFER(softplus_infer, NXE_REF_SOFTPLUS)
UNARY_INFER(softsign_infer, NXE_REF_SOFTSIGN)
UNARY_INFER(thresholded_relu_infer, NXE_REF_THRESHOLDED_RELU)
UNARY_INFER(isnan_infer, MATH_ISNAN)
UNARY_INFER(isinf_infer, MATH_ISINF)
UNARY_INFER(not_infer, MATH_NOT)
UNARY_INFER(bitwise_not_infer, MATH_BITWISE_NOT)
#undef UNARY_INFER

typedef struct unary_job {
    const unary_params *p;
    int32_t type; /* enum nxe_ref_type */
    size_t in_size;
    size_t out_size;
    const char *x;
    char *y;
} unary_job;

static void unary_range(void *ctx, int64_t begin, int64_t end)
{
    const unary_job *job = ctx;
    const unary_params *p = job->p;
    const int64_t n = end - begin;
    const void *x = job->x + begin * (int64_t)job->in_size;
    void *y = job->y + begin * (int64_t)job->out_size;
    /* infer and the schema masks admit only dtypes these kernels take, so none returns -1. */
    switch (p->op) {
    case MATH_ISNAN: (void)nxe_ref_isnan(job->type, n, x, y); return;
    case MATH_ISINF:
        (void)nxe_ref_isinf(job->type, p->detect_negative, p->detect_positive, n, x, y);
        return;
    case MATH_NOT: nxe_ref_not(n, x, y); return;
    case MATH_BITWISE_NOT: (void)nxe_ref_bitwise_not(job->in_size, n, x, y); return;
    default: break;
    }
    switch (job->type) {
    case NXE_REF_F32: (void)nxe_ref_f32_unary(p->op, p->alpha, p->beta, n, x, y); return;
    case NXE_REF_F16:
    case NXE_REF_BF16:
        (void)nxe_ref_half_unary(p->op, job->type, p->alpha, p->beta, n, x, y);
        return;
    default: (void)nxe_ref_int_unary(p->op, job->type, p->lo, p->hi, n, x, y); return;
    }
}

static nxe_status unary_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const unary_params *p = params;
    unary_job job = {p,
                     nxe_elementwise_ref_type(p->dtype),
                     nxe_dtype_size(p->dtype),
                     nxe_dtype_size(outputs[0].dtype),
                     inputs[0].data,
                     outputs[0].data};
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, NXE_ELEMENTWISE_GRAIN, unary_range, &job);
    return NXE_OK;
}

/* Clip (Relu6 and friends) and SiLU on f32 are activations a GEMM epilogue applies. */
static bool unary_as_activation(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                nxe_epilogue *epilogue)
{
    (void)num_inputs;
    const unary_params *p = params;
    if (inputs[0].dtype != NXE_DTYPE_F32)
        return false;
    if (p->op == NXE_REF_CLIP) {
        epilogue->activation = NXE_ACTIVATION_CLIP;
        epilogue->alpha = p->alpha;
        epilogue->beta = p->beta;
        return true;
    }
    if (p->op == NXE_REF_SWISH && p->alpha == 1.0f) {
        epilogue->activation = NXE_ACTIVATION_SILU;
        return true;
    }
    return false;
}

/* ---- Binary ops ---------------------------------------------------------------------------- */

#define BINARY_INFER(fn, op, out_dtype)                                                            \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return nxe_binary_infer(node, inputs, outputs, params, op, out_dtype);                     \
    }
BINARY_INFER(pow_infer, NXE_REF_POW, NXE_DTYPE_NONE)
BINARY_INFER(min_infer, NXE_REF_MIN, NXE_DTYPE_NONE)
BINARY_INFER(max_infer, NXE_REF_MAX, NXE_DTYPE_NONE)
BINARY_INFER(equal_infer, NXE_REF_EQUAL, NXE_DTYPE_BOOL)
BINARY_INFER(less_infer, NXE_REF_LESS, NXE_DTYPE_BOOL)
BINARY_INFER(less_equal_infer, NXE_REF_LESS_EQUAL, NXE_DTYPE_BOOL)
BINARY_INFER(greater_infer, NXE_REF_GREATER, NXE_DTYPE_BOOL)
BINARY_INFER(greater_equal_infer, NXE_REF_GREATER_EQUAL, NXE_DTYPE_BOOL)
BINARY_INFER(and_infer, NXE_REF_AND, NXE_DTYPE_BOOL)
BINARY_INFER(or_infer, NXE_REF_OR, NXE_DTYPE_BOOL)
BINARY_INFER(xor_infer, NXE_REF_XOR, NXE_DTYPE_BOOL)
#undef BINARY_INFER

static nxe_status mod_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    int64_t fmod_flag;
    nxe_status status = nxe_node_attr_int(node, "fmod", &fmod_flag);
    if (status != NXE_OK)
        return status;
    if (fmod_flag != 0 && fmod_flag != 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'fmod' is %lld; expected 0 or 1", (long long)fmod_flag);
    return nxe_binary_infer(node, inputs, outputs, params, fmod_flag ? NXE_REF_FMOD : NXE_REF_MOD,
                            NXE_DTYPE_NONE);
}

static nxe_status bit_shift_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const char *direction;
    nxe_status status = nxe_node_attr_string(node, "direction", &direction);
    if (status != NXE_OK)
        return status;
    int32_t op;
    if (strcmp(direction, "LEFT") == 0)
        op = NXE_REF_SHIFT_LEFT;
    else if (strcmp(direction, "RIGHT") == 0)
        op = NXE_REF_SHIFT_RIGHT;
    else
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'direction' is \"%s\"; expected \"LEFT\" or \"RIGHT\"",
                              direction);
    return nxe_binary_infer(node, inputs, outputs, params, op, NXE_DTYPE_NONE);
}

static nxe_status prelu_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    nxe_status status =
        nxe_binary_infer(node, inputs, outputs, params, NXE_REF_PRELU, NXE_DTYPE_NONE);
    if (status != NXE_OK)
        return status;
    bool same = outputs[0].ndim == inputs[0].ndim;
    for (int32_t d = 0; same && d < inputs[0].ndim; d++)
        same = outputs[0].shape[d] == inputs[0].shape[d];
    if (!same) {
        char sx[128], ss[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "slope of shape %s must broadcast to X's shape %s",
                              nxe_shape_str(inputs[1].ndim, inputs[1].shape, ss, sizeof ss),
                              nxe_shape_str(inputs[0].ndim, inputs[0].shape, sx, sizeof sx));
    }
    return NXE_OK;
}

/* ---- Bitwise And / Or / Xor ---------------------------------------------------------------- */

typedef struct bitwise_params {
    int32_t op; /* enum nxe_ref_bitwise_op */
    int32_t dtype;
    int64_t numel;
    nxe_ref_broadcast walk; /* operands: A, B */
} bitwise_params;

static nxe_status bitwise_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                                bitwise_params *p, int32_t op)
{
    if (inputs[0].dtype != inputs[1].dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "inputs 'A' (%s) and 'B' (%s) must have the same dtype",
                              nxe_dtype_name(inputs[0].dtype), nxe_dtype_name(inputs[1].dtype));
    const nxe_value *operands[2] = {&inputs[0], &inputs[1]};
    nxe_status status = nxe_broadcast_plan(node, operands, 2, &outputs[0], &p->walk);
    if (status != NXE_OK)
        return status;
    outputs[0].dtype = inputs[0].dtype;
    p->op = op;
    p->dtype = inputs[0].dtype;
    p->numel = nxe_value_numel(&outputs[0]);
    return NXE_OK;
}

#define BITWISE_INFER(fn, op)                                                                      \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return bitwise_infer(node, inputs, outputs, params, op);                                   \
    }
BITWISE_INFER(bitwise_and_infer, NXE_REF_BITWISE_AND)
BITWISE_INFER(bitwise_or_infer, NXE_REF_BITWISE_OR)
BITWISE_INFER(bitwise_xor_infer, NXE_REF_BITWISE_XOR)
#undef BITWISE_INFER

typedef struct bitwise_job {
    const bitwise_params *p;
    size_t size;
    const char *a;
    const char *b;
    char *out;
} bitwise_job;

static void bitwise_segment(void *ctx, int64_t n, int64_t out_offset, const int64_t *offsets,
                            const int64_t *steps)
{
    const bitwise_job *job = ctx;
    const int64_t size = (int64_t)job->size;
    /* The schema admits only integer dtypes of 1, 2, 4 or 8 bytes, so this cannot fail. */
    (void)nxe_ref_bitwise(job->p->op, job->size, n, job->a + offsets[0] * size, steps[0],
                          job->b + offsets[1] * size, steps[1], job->out + out_offset * size);
}

static void bitwise_range(void *ctx, int64_t begin, int64_t end)
{
    const bitwise_job *job = ctx;
    nxe_ref_broadcast_walk(&job->p->walk, begin, end, bitwise_segment, ctx);
}

static nxe_status bitwise_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const bitwise_params *p = params;
    bitwise_job job = {p, nxe_dtype_size(p->dtype), inputs[0].data, inputs[1].data,
                       outputs[0].data};
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, NXE_ELEMENTWISE_GRAIN, bitwise_range, &job);
    return NXE_OK;
}

/* ---- Where --------------------------------------------------------------------------------- */

typedef struct where_params {
    int32_t dtype;
    int64_t numel;
    nxe_ref_broadcast walk; /* operands: condition, X, Y */
} where_params;

static nxe_status where_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    where_params *p = params;
    if (inputs[1].dtype != inputs[2].dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "inputs 'X' (%s) and 'Y' (%s) must have the same dtype",
                              nxe_dtype_name(inputs[1].dtype), nxe_dtype_name(inputs[2].dtype));
    const nxe_value *operands[3] = {&inputs[0], &inputs[1], &inputs[2]};
    nxe_status status = nxe_broadcast_plan(node, operands, 3, &outputs[0], &p->walk);
    if (status != NXE_OK)
        return status;
    outputs[0].dtype = inputs[1].dtype;
    p->dtype = inputs[1].dtype;
    p->numel = nxe_value_numel(&outputs[0]);
    return NXE_OK;
}

typedef struct where_job {
    const where_params *p;
    size_t size;
    const uint8_t *cond;
    const char *x;
    const char *y;
    char *out;
} where_job;

static void where_segment(void *ctx, int64_t n, int64_t out_offset, const int64_t *offsets,
                          const int64_t *steps)
{
    const where_job *job = ctx;
    const int64_t size = (int64_t)job->size;
    (void)nxe_ref_select(job->size, n, job->cond + offsets[0], steps[0], job->x + offsets[1] * size,
                         steps[1], job->y + offsets[2] * size, steps[2],
                         job->out + out_offset * size);
}

static void where_range(void *ctx, int64_t begin, int64_t end)
{
    const where_job *job = ctx;
    nxe_ref_broadcast_walk(&job->p->walk, begin, end, where_segment, ctx);
}

static nxe_status where_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const where_params *p = params;
    where_job job = {p,
                     nxe_dtype_size(p->dtype),
                     inputs[0].data,
                     inputs[1].data,
                     inputs[2].data,
                     outputs[0].data};
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, NXE_ELEMENTWISE_GRAIN, where_range, &job);
    return NXE_OK;
}

/* ---- Schemas ------------------------------------------------------------------------------- */

#define HALF_MASK (NXE_MASK(NXE_DTYPE_F16) | NXE_MASK(NXE_DTYPE_BF16))
#define FLOATS_MASK (NXE_MASK(NXE_DTYPE_F32) | HALF_MASK)
#define INTS_MASK                                                                                  \
    (NXE_MASK(NXE_DTYPE_I8) | NXE_MASK(NXE_DTYPE_U8) | NXE_MASK(NXE_DTYPE_I16) |                   \
     NXE_MASK(NXE_DTYPE_I32) | NXE_MASK(NXE_DTYPE_I64))
#define NUMERIC_MASK (FLOATS_MASK | INTS_MASK)
#define BOOL_MASK NXE_MASK(NXE_DTYPE_BOOL)
/* Dtypes of API 0.2 that the binary kernels, bitwise ops and Where take. */
#define WIDE_UINTS_MASK                                                                            \
    (NXE_MASK(NXE_DTYPE_U16) | NXE_MASK(NXE_DTYPE_U32) | NXE_MASK(NXE_DTYPE_U64))
#define BINARY_INTS_MASK (INTS_MASK | WIDE_UINTS_MASK)
#define BINARY_NUMERIC_MASK (NUMERIC_MASK | NXE_MASK(NXE_DTYPE_F64) | WIDE_UINTS_MASK)
#define WHERE_MASK (NXE_MASK_ALL | NXE_MASK(NXE_DTYPE_F64) | WIDE_UINTS_MASK)

static const nxe_op_param_info float_in[] = {
    {"X", "input: f32, f16 or bf16 (half types compute in f32 and round once)", FLOATS_MASK, 0, 0},
};
static const nxe_op_param_info float_out[] = {
    {"Y", "result, dtype and shape of X", FLOATS_MASK, 0, 0},
};
static const nxe_op_param_info numeric_in[] = {
    {"X", "input: f32, f16, bf16, i8, u8, i16, i32 or i64", NUMERIC_MASK, 0, 0},
};
static const nxe_op_param_info numeric_out[] = {
    {"Y", "result, dtype and shape of X", NUMERIC_MASK, 0, 0},
};
static const nxe_op_param_info classify_out[] = {
    {"Y", "bool, shape of X", BOOL_MASK, 0, 0},
};
static const nxe_op_param_info bool_in[] = {
    {"X", "bool input", BOOL_MASK, 0, 0},
};
static const nxe_op_param_info bool_out[] = {
    {"Y", "bool, shape of X", BOOL_MASK, 0, 0},
};
static const nxe_op_param_info int_in[] = {
    {"X", "input: i8, u8, i16, i32 or i64", INTS_MASK, 0, 0},
};
static const nxe_op_param_info int_out[] = {
    {"Y", "result, dtype and shape of X", INTS_MASK, 0, 0},
};

#define BINARY_INPUTS(var, mask, what)                                                             \
    static const nxe_op_param_info var[] = {                                                       \
        {"A", "first operand: " what, mask, 0, 0},                                                 \
        {"B",                                                                                      \
         "second operand, same dtype as A; A and B broadcast against each other as in "            \
         "numpy",                                                                                  \
         mask, 0, 0},                                                                              \
    };
BINARY_INPUTS(numeric_pair_in, BINARY_NUMERIC_MASK,
              "f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64 or u64")
BINARY_INPUTS(compare_pair_in, BINARY_NUMERIC_MASK,
              "f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64 or u64")
BINARY_INPUTS(equal_pair_in, BINARY_NUMERIC_MASK | BOOL_MASK, "any dtype")
BINARY_INPUTS(bool_pair_in, BOOL_MASK, "bool")
BINARY_INPUTS(int_pair_in, BINARY_INTS_MASK, "i8, u8, i16, u16, i32, u32, i64 or u64")
#undef BINARY_INPUTS

static const nxe_op_param_info numeric_pair_out[] = {
    {"C", "result, dtype of A, shape of A and B broadcast together", BINARY_NUMERIC_MASK, 0, 0},
};
static const nxe_op_param_info int_pair_out[] = {
    {"C", "result, dtype of A, shape of A and B broadcast together", BINARY_INTS_MASK, 0, 0},
};
static const nxe_op_param_info bool_pair_out[] = {
    {"C", "bool, shape of A and B broadcast together", BOOL_MASK, 0, 0},
};
static const nxe_op_param_info prelu_in[] = {
    {"X", "input: f32, f16, bf16, i8, u8, i16, i32 or i64", NUMERIC_MASK, 0, 0},
    {"slope", "slope for negative X, same dtype; broadcasts to X's shape (numpy rules)",
     NUMERIC_MASK, 0, 0},
};
static const nxe_op_param_info prelu_out[] = {
    {"Y", "result, dtype and shape of X", NUMERIC_MASK, 0, 0},
};
static const nxe_op_param_info where_in[] = {
    {"condition", "bool selector", BOOL_MASK, 0, 0},
    {"X", "values taken where condition is true: any dtype", WHERE_MASK, 0, 0},
    {"Y",
     "values taken where condition is false, dtype of X; condition, X and Y broadcast "
     "together as in numpy",
     WHERE_MASK, 0, 0},
};
static const nxe_op_param_info where_out[] = {
    {"output", "dtype of X, shape of the three inputs broadcast together", WHERE_MASK, 0, 0},
};

static const nxe_op_attr_info clip_attrs[] = {
    {"min", "lower bound; for integer X rounded up to an integer", NXE_ATTR_FLOAT, "-Infinity"},
    {"max", "upper bound; for integer X rounded down to an integer", NXE_ATTR_FLOAT, "Infinity"},
};
static const nxe_op_attr_info elu_attrs[] = {
    {"alpha", "scale of the negative branch", NXE_ATTR_FLOAT, "1.0"},
};
static const nxe_op_attr_info selu_attrs[] = {
    {"alpha", "scale inside the negative branch", NXE_ATTR_FLOAT, "1.67326319217681884765625"},
    {"gamma", "overall scale", NXE_ATTR_FLOAT, "1.05070102214813232421875"},
};
static const nxe_op_attr_info celu_attrs[] = {
    {"alpha", "the curve's scale; must not be 0", NXE_ATTR_FLOAT, "1.0"},
};
static const nxe_op_attr_info hard_sigmoid_attrs[] = {
    {"alpha", "slope", NXE_ATTR_FLOAT, "0.2"},
    {"beta", "offset", NXE_ATTR_FLOAT, "0.5"},
};
static const nxe_op_attr_info swish_attrs[] = {
    {"alpha", "scale inside the sigmoid (1 gives SiLU)", NXE_ATTR_FLOAT, "1.0"},
};
static const nxe_op_attr_info thresholded_relu_attrs[] = {
    {"alpha", "threshold", NXE_ATTR_FLOAT, "1.0"},
};
static const nxe_op_attr_info isinf_attrs[] = {
    {"detect_negative", "nonzero: -inf counts", NXE_ATTR_INT, "1"},
    {"detect_positive", "nonzero: +inf counts", NXE_ATTR_INT, "1"},
};
static const nxe_op_attr_info mod_attrs[] = {
    {"fmod",
     "0: the result takes the sign of B (floored, like Python's %); 1: the sign of A (C fmod)",
     NXE_ATTR_INT, "0"},
};
static const nxe_op_attr_info bit_shift_attrs[] = {
    {"direction", "\"LEFT\" or \"RIGHT\"", NXE_ATTR_STRING, NULL},
};

#define FLOAT_UNARY(name, summary, infer)                                                          \
    {NXE_INFO_NOATTR(name, summary, float_in, float_out), sizeof(unary_params), infer, unary_run}
#define FLOAT_UNARY_ATTRS(name, summary, attrs, infer)                                             \
    {NXE_INFO(name, summary, float_in, float_out, attrs), sizeof(unary_params), infer, unary_run}
#define NUMERIC_UNARY(name, summary, infer)                                                        \
    {NXE_INFO_NOATTR(name, summary, numeric_in, numeric_out), sizeof(unary_params), infer,         \
     unary_run}
#define BINARY(name, summary, ins, outs, infer)                                                    \
    {NXE_INFO_NOATTR(name, summary, ins, outs), sizeof(nxe_binary_params), infer, nxe_binary_run}
#define BINARY_ATTRS(name, summary, ins, outs, attrs, infer)                                       \
    {NXE_INFO(name, summary, ins, outs, attrs), sizeof(nxe_binary_params), infer, nxe_binary_run}

static const nxe_op_def math_defs[] = {
    NUMERIC_UNARY("Abs", "Absolute value. Integers wrap: Abs(MIN) = MIN.", abs_infer),
    NUMERIC_UNARY("Neg", "Negation. Integers wrap: Neg(MIN) = MIN.", neg_infer),
    NUMERIC_UNARY("Sign", "Sign: -1, 0 or 1 in X's dtype; NaN stays NaN.", sign_infer),
    FLOAT_UNARY("Exp", "Exponential e^x, elementwise.", exp_infer),
    FLOAT_UNARY("Log", "Natural logarithm; log(0) = -inf, negative inputs give NaN.", log_infer),
    FLOAT_UNARY("Sqrt", "Square root; negative inputs give NaN.", sqrt_infer),
    FLOAT_UNARY("Reciprocal", "1 / x, IEEE 754 (1 / 0 = inf).", reciprocal_infer),
    FLOAT_UNARY("Floor", "Largest integer not above x.", floor_infer),
    FLOAT_UNARY("Ceil", "Smallest integer not below x.", ceil_infer),
    FLOAT_UNARY("Round", "Nearest integer, halves rounded to even (2.5 -> 2, 3.5 -> 4).",
                round_infer),
    FLOAT_UNARY("Sin", "Sine (radians).", sin_infer),
    FLOAT_UNARY("Cos", "Cosine (radians).", cos_infer),
    FLOAT_UNARY("Tan", "Tangent (radians).", tan_infer),
    FLOAT_UNARY("Asin", "Arcsine; outside [-1, 1] gives NaN.", asin_infer),
    FLOAT_UNARY("Acos", "Arccosine; outside [-1, 1] gives NaN.", acos_infer),
    FLOAT_UNARY("Atan", "Arctangent.", atan_infer),
    FLOAT_UNARY("Sinh", "Hyperbolic sine.", sinh_infer),
    FLOAT_UNARY("Cosh", "Hyperbolic cosine.", cosh_infer),
    FLOAT_UNARY("Asinh", "Inverse hyperbolic sine.", asinh_infer),
    FLOAT_UNARY("Acosh", "Inverse hyperbolic cosine; below 1 gives NaN.", acosh_infer),
    FLOAT_UNARY("Atanh", "Inverse hyperbolic tangent; outside [-1, 1] gives NaN.", atanh_infer),
    {NXE_INFO("Clip",
              "Y = min(max(X, min), max); NaN stays NaN, and min > max gives max everywhere. "
              "Relu6 is Clip with min 0 and max 6.",
              numeric_in, numeric_out, clip_attrs),
     sizeof(unary_params), clip_infer, unary_run, NULL, NULL, unary_as_activation},
    FLOAT_UNARY_ATTRS("Elu", "Exponential linear unit: x for x >= 0, alpha * (e^x - 1) below.",
                      elu_attrs, elu_infer),
    FLOAT_UNARY_ATTRS("Selu",
                      "Scaled ELU: gamma * x for x > 0, gamma * alpha * (e^x - 1) otherwise.",
                      selu_attrs, selu_infer),
    FLOAT_UNARY_ATTRS("Celu",
                      "Continuously differentiable ELU: max(0, x) + min(0, alpha * "
                      "(e^(x / alpha) - 1)).",
                      celu_attrs, celu_infer),
    FLOAT_UNARY_ATTRS("HardSigmoid", "max(0, min(1, alpha * x + beta)).", hard_sigmoid_attrs,
                      hard_sigmoid_infer),
    FLOAT_UNARY("HardSwish", "x * max(0, min(1, x / 6 + 1 / 2)).", hard_swish_infer),
    {NXE_INFO("Swish", "x * sigmoid(alpha * x); with alpha = 1 this is SiLU.", float_in, float_out,
              swish_attrs),
     sizeof(unary_params), swish_infer, unary_run, NULL, NULL, unary_as_activation},
    FLOAT_UNARY("Mish", "x * tanh(softplus(x)).", mish_infer),
    FLOAT_UNARY("Softplus", "log(1 + e^x), computed without overflow for large x.", softplus_infer),
    FLOAT_UNARY("Softsign", "x / (1 + |x|).", softsign_infer),
    FLOAT_UNARY_ATTRS("ThresholdedRelu", "x for x > alpha, 0 otherwise.", thresholded_relu_attrs,
                      thresholded_relu_infer),
    {NXE_INFO_NOATTR("IsNaN", "True where X is NaN.", float_in, classify_out), sizeof(unary_params),
     isnan_infer, unary_run},
    {NXE_INFO("IsInf", "True where X is an infinity of a detected sign.", float_in, classify_out,
              isinf_attrs),
     sizeof(unary_params), isinf_infer, unary_run},
    {NXE_INFO_NOATTR("Not", "Logical negation of bool X.", bool_in, bool_out), sizeof(unary_params),
     not_infer, unary_run},
    BINARY("Pow",
           "A raised to the power B with numpy broadcasting. Floats use powf (f16/bf16 through "
           "f32), f64 uses pow. Integers are exact with wrap-around; a negative exponent "
           "gives the truncated 1 / A^|B| (1 for A = 1, +-1 for A = -1, else 0).",
           numeric_pair_in, numeric_pair_out, pow_infer),
    BINARY("Min", "Elementwise minimum with numpy broadcasting; NaN in either operand gives NaN.",
           numeric_pair_in, numeric_pair_out, min_infer),
    BINARY("Max", "Elementwise maximum with numpy broadcasting; NaN in either operand gives NaN.",
           numeric_pair_in, numeric_pair_out, max_infer),
    BINARY_ATTRS("Mod",
                 "Remainder of A / B with numpy broadcasting. fmod = 0: A - floor(A / B) * B "
                 "(sign of B); fmod = 1: A - trunc(A / B) * B (sign of A). Floats follow IEEE "
                 "(x mod 0 and inf mod y are NaN; finite x mod inf is x, or B when the signs "
                 "differ and fmod = 0). Integer x mod 0 is 0, signed or unsigned.",
                 numeric_pair_in, numeric_pair_out, mod_attrs, mod_infer),
    BINARY_ATTRS("BitShift",
                 "A shifted by B bits with numpy broadcasting. Right shifts of signed values "
                 "are arithmetic (sign-extending); left shifts drop the bits shifted out. A "
                 "negative B or one of the bit width or more gives what the sign fill alone "
                 "gives: -1 for a right shift of a negative A, else 0 (always 0 for the "
                 "unsigned u8, u16, u32 and u64).",
                 int_pair_in, int_pair_out, bit_shift_attrs, bit_shift_infer),
    {NXE_INFO_NOATTR("PRelu", "Parametric ReLU: x for x >= 0, slope * x below.", prelu_in,
                     prelu_out),
     sizeof(nxe_binary_params), prelu_infer, nxe_binary_run},
    BINARY("Equal", "A == B with numpy broadcasting, as bool; NaN equals nothing.", equal_pair_in,
           bool_pair_out, equal_infer),
    BINARY("Less", "A < B with numpy broadcasting, as bool.", compare_pair_in, bool_pair_out,
           less_infer),
    BINARY("LessOrEqual", "A <= B with numpy broadcasting, as bool.", compare_pair_in,
           bool_pair_out, less_equal_infer),
    BINARY("Greater", "A > B with numpy broadcasting, as bool.", compare_pair_in, bool_pair_out,
           greater_infer),
    BINARY("GreaterOrEqual", "A >= B with numpy broadcasting, as bool.", compare_pair_in,
           bool_pair_out, greater_equal_infer),
    BINARY("And", "Logical and of bool A and B with numpy broadcasting.", bool_pair_in,
           bool_pair_out, and_infer),
    BINARY("Or", "Logical or of bool A and B with numpy broadcasting.", bool_pair_in, bool_pair_out,
           or_infer),
    BINARY("Xor", "Logical exclusive or of bool A and B with numpy broadcasting.", bool_pair_in,
           bool_pair_out, xor_infer),
    {NXE_INFO_NOATTR("BitwiseNot",
                     "Complement of every bit of integer X (two's complement: ~x = -x - 1 for "
                     "signed, MAX - x for unsigned).",
                     int_in, int_out),
     sizeof(unary_params), bitwise_not_infer, unary_run},
    {NXE_INFO_NOATTR("BitwiseAnd", "Bitwise and of integers A and B with numpy broadcasting.",
                     int_pair_in, int_pair_out),
     sizeof(bitwise_params), bitwise_and_infer, bitwise_run},
    {NXE_INFO_NOATTR("BitwiseOr", "Bitwise or of integers A and B with numpy broadcasting.",
                     int_pair_in, int_pair_out),
     sizeof(bitwise_params), bitwise_or_infer, bitwise_run},
    {NXE_INFO_NOATTR("BitwiseXor",
                     "Bitwise exclusive or of integers A and B with numpy broadcasting.",
                     int_pair_in, int_pair_out),
     sizeof(bitwise_params), bitwise_xor_infer, bitwise_run},
    {NXE_INFO_NOATTR("Where",
                     "Selects X where condition is true and Y elsewhere; condition, X and Y "
                     "broadcast together as in numpy.",
                     where_in, where_out),
     sizeof(where_params), where_infer, where_run},
};

#undef FLOAT_UNARY
#undef FLOAT_UNARY_ATTRS
#undef NUMERIC_UNARY
#undef BINARY
#undef BINARY_ATTRS

const nxe_op_family nxe_ops_math = {math_defs, (int32_t)(sizeof math_defs / sizeof math_defs[0])};
