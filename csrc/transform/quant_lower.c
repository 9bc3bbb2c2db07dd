/* quant_lower.c — runs ordinary ops (Conv2d, FullyConnected, MatMul, Relu, Clip, pools, data
 * movement, and through a fallback every other op) on tensors that carry quantization. The
 * user's graph is only read: a working copy is built in two stages. The first replaces every
 * such op by DequantizeLinear -> the f32 op -> QuantizeLinear, which any op accepts, and is
 * inferred only to learn the shapes of the user's tensors. The second, with those shapes,
 * maps Conv2d / FullyConnected / MatMul to QLinearConv / QLinearMatMul (requantizing in the
 * kernel, a following Relu or Clip folded into the clamp of the result), keeps the ops that
 * move 8-bit values without arithmetic, and falls back as in the first stage elsewhere. The
 * copy's first tensors are the user's at the same indices, so the plan's inputs and outputs
 * are the user's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/node.h"
#include "transform/quant_lower.h"

#define NAME_CAPACITY 256

typedef struct lowering {
    const nxe_graph *src;
    nxe_graph *dst;
    const nxe_value *settled; /* stage 2: per src tensor, its inferred value; NULL in stage 1 */
    nxe_tensor **deq;         /* per src tensor: its DequantizeLinear result in dst, if made */
    bool *folded;             /* per src op: an activation folded into its producer */
    int32_t serial;
} lowering;

static bool is_q8(int32_t dtype)
{
    return dtype == NXE_DTYPE_U8 || dtype == NXE_DTYPE_I8;
}

static bool quantized(const nxe_tensor *t)
{
    return t && t->quant.type != NXE_QUANT_NONE && (is_q8(t->dtype) || t->dtype == NXE_DTYPE_I32);
}

/* Per-tensor 8-bit quantization: asymmetric, or dynamic fixed point (scale 2^-fl, zero
 * point 0), which the integer kernels take alike. */
static bool asymmetric_q8(const nxe_tensor *t)
{
    return t && is_q8(t->dtype) &&
           (t->quant.type == NXE_QUANT_ASYMMETRIC ||
            (t->quant.type == NXE_QUANT_DYNAMIC_FIXED_POINT && t->quant.fractional_length >= -126 &&
             t->quant.fractional_length <= 126));
}

static float scale_of(const nxe_quant *q)
{
    return q->type == NXE_QUANT_DYNAMIC_FIXED_POINT ? ldexpf(1.0f, -q->fractional_length)
                                                    : q->scale;
}

static int32_t zero_of(const nxe_quant *q)
{
    return q->type == NXE_QUANT_ASYMMETRIC ? q->zero_point : 0;
}

/* Same kind and parameters (the model layer's equality, which this layer may not use). */
static bool same_quant(const nxe_quant *a, const nxe_quant *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case NXE_QUANT_ASYMMETRIC: return a->scale == b->scale && a->zero_point == b->zero_point;
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        return a->axis == b->axis && a->num_scales == b->num_scales &&
               memcmp(a->scales, b->scales, sizeof(float) * (size_t)a->num_scales) == 0;
    case NXE_QUANT_DYNAMIC_FIXED_POINT: return a->fractional_length == b->fractional_length;
    default: return true;
    }
}

static void q8_range(int32_t dtype, int32_t *lo, int32_t *hi)
{
    *lo = dtype == NXE_DTYPE_I8 ? -128 : 0;
    *hi = dtype == NXE_DTYPE_I8 ? 127 : 255;
}

static bool type_in(const char *type, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(type, *list) == 0)
            return true;
    return false;
}

/* Ops that already take quantized operands. */
static const char *const integer_family[] = {
    "QuantizeLinear", "DequantizeLinear", "QLinearConv",           "QLinearMatMul",
    "ConvInteger",    "MatMulInteger",    "DynamicQuantizeLinear", NULL};
/* Ops that move or select 8-bit values without arithmetic: they run on the quantized values
 * when every quantized tensor they touch has the same dtype and quantization. */
static const char *const pass_through[] = {
    "Reshape", "Transpose", "Squeeze",      "Unsqueeze",    "Flatten",   "Identity",      "Concat",
    "Slice",   "Split",     "MaxPool1d",    "MaxPool2d",    "MaxPool3d", "GlobalMaxPool", "Expand",
    "Tile",    "Gather",    "DepthToSpace", "SpaceToDepth", NULL};

/* An op this pass changes: outside the quantized family, and writing a quantized tensor or
 * reading one its schema does not take. Ops that ran on 8-bit values without quantization
 * before (a MaxPool or Reshape of a QuantizeLinear result into an undeclared tensor, as
 * imported QDQ models have) are left as they are. */
static bool needs_lowering(const nxe_op *op)
{
    if (type_in(nxe_node_type(&op->node), integer_family))
        return false;
    for (int32_t j = 0; j < op->num_outputs; j++)
        if (quantized(op->outputs[j]))
            return true;
    for (int32_t j = 0; j < op->num_inputs; j++) {
        const nxe_tensor *t = op->inputs[j];
        const nxe_op_param_info *param = nxe_node_param(&op->node, false, j);
        if (quantized(t) && (!param || !(param->dtypes & (1u << t->dtype))))
            return true;
    }
    return false;
}

/* ---- what gets added to the copy ---- */

static nxe_status add_tensor(lowering *L, const char *base, const char *what, int32_t dtype,
                             int32_t kind, int32_t ndim, const int64_t *shape, nxe_tensor **out)
{
    char name[NAME_CAPACITY];
    nxe_tensor *taken = NULL;
    do /* a name of the user's may look like ours */
        snprintf(name, sizeof name, "%.160s:%s%d", base, what, L->serial++);
    while (nxe_graph_find_tensor(L->dst, name, &taken) == NXE_OK);
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.dtype = dtype;
    spec.kind = kind;
    spec.ndim = ndim;
    spec.shape = shape;
    return nxe_graph_add_tensor(L->dst, &spec, out);
}

static nxe_status add_constant(lowering *L, const char *base, const char *what, int32_t dtype,
                               int32_t ndim, const int64_t *shape, const void *data, size_t size,
                               nxe_tensor **out)
{
    nxe_status status = add_tensor(L, base, what, dtype, NXE_TENSOR_CONSTANT, ndim, shape, out);
    return status == NXE_OK ? nxe_tensor_set_data(*out, data, size) : status;
}

static nxe_status add_f32_scalar(lowering *L, const char *base, const char *what, float value,
                                 nxe_tensor **out)
{
    return add_constant(L, base, what, NXE_DTYPE_F32, 0, NULL, &value, sizeof value, out);
}

static nxe_status add_q8_scalar(lowering *L, const char *base, const char *what, int32_t dtype,
                                int32_t value, nxe_tensor **out)
{
    uint8_t byte = dtype == NXE_DTYPE_I8 ? (uint8_t)(int8_t)value : (uint8_t)value;
    return add_constant(L, base, what, dtype, 0, NULL, &byte, 1, out);
}

static nxe_status add_op(lowering *L, const char *type, const char *name, nxe_tensor *const *inputs,
                         int32_t num_inputs, nxe_tensor *const *outputs, int32_t num_outputs,
                         nxe_op **out)
{
    nxe_op *op = NULL;
    nxe_status status = nxe_graph_add_op(L->dst, type, name, &op);
    if (status == NXE_OK)
        status = nxe_op_bind_inputs(op, inputs, num_inputs);
    if (status == NXE_OK)
        status = nxe_op_bind_outputs(op, outputs, num_outputs);
    if (out)
        *out = op;
    return status;
}

static nxe_status copy_quant(nxe_tensor *to, const nxe_quant *q)
{
    switch (q->type) {
    case NXE_QUANT_ASYMMETRIC: return nxe_tensor_set_quant_asymmetric(to, q->scale, q->zero_point);
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        return nxe_tensor_set_quant_per_channel(to, q->axis, q->scales, q->num_scales);
    case NXE_QUANT_DYNAMIC_FIXED_POINT:
        return nxe_tensor_set_quant_dynamic_fixed_point(to, q->fractional_length);
    default: return NXE_OK;
    }
}

/* Every tensor of the user's graph, at the same index. */
static nxe_status copy_tensors(lowering *L)
{
    for (int32_t i = 0; i < L->src->num_tensors; i++) {
        const nxe_tensor *t = L->src->tensors[i];
        nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
        spec.name = t->name;
        spec.dtype = t->dtype;
        spec.kind = t->kind;
        spec.ndim = t->ndim;
        spec.shape = t->shape;
        nxe_tensor *copy = NULL;
        nxe_status status = nxe_graph_add_tensor(L->dst, &spec, &copy);
        if (status == NXE_OK && t->data)
            status = nxe_tensor_set_data(copy, t->data, t->data_size);
        if (status == NXE_OK)
            status = copy_quant(copy, &t->quant);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

static nxe_tensor *mapped(const lowering *L, const nxe_tensor *t)
{
    return t ? L->dst->tensors[t->index] : NULL;
}

/* The op as the user wrote it, on the copy's tensors (or those given). */
static nxe_status copy_op(lowering *L, const nxe_op *op, nxe_tensor *const *inputs,
                          nxe_tensor *const *outputs)
{
    nxe_tensor **in = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(op->num_inputs + 1));
    nxe_tensor **outs = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(op->num_outputs + 1));
    nxe_status status = NXE_OK;
    if (!in || !outs)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t j = 0; status == NXE_OK && j < op->num_inputs; j++)
        in[j] = inputs ? inputs[j] : mapped(L, op->inputs[j]);
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++)
        outs[j] = outputs ? outputs[j] : mapped(L, op->outputs[j]);
    nxe_node node;
    nxe_op *copy = NULL;
    if (status == NXE_OK)
        status = nxe_node_copy(&node, &op->node);
    if (status == NXE_OK)
        status = nxe_graph_add_node(L->dst, &node, &copy);
    if (status == NXE_OK)
        status = nxe_op_bind_inputs(copy, in, op->num_inputs);
    if (status == NXE_OK)
        status = nxe_op_bind_outputs(copy, outs, op->num_outputs);
    nxe_free(in);
    nxe_free(outs);
    return status;
}

/* ---- checks ---- */

static nxe_status check_quant(const nxe_tensor *t, const nxe_value *settled)
{
    const nxe_quant *q = &t->quant;
    if (q->type == NXE_QUANT_ASYMMETRIC && is_q8(t->dtype)) {
        int32_t lo, hi;
        q8_range(t->dtype, &lo, &hi);
        if (q->zero_point < lo || q->zero_point > hi)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "compile: tensor '%s' has zero point %d, outside the %s range "
                             "[%d, %d]",
                             t->name, q->zero_point, nxe_dtype_name(t->dtype), lo, hi);
    }
    if (q->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL && settled && settled->ndim >= 0 &&
        (q->axis >= settled->ndim || settled->shape[q->axis] != q->num_scales))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "compile: tensor '%s' has %d per-channel scales along axis %d, but its "
                         "shape has %s",
                         t->name, q->num_scales, q->axis,
                         q->axis >= settled->ndim ? "no such axis" : "another size there");
    return NXE_OK;
}

static nxe_status check_op_quant(const lowering *L, const nxe_op *op)
{
    nxe_status status = NXE_OK;
    for (int32_t j = 0; status == NXE_OK && j < op->num_inputs + op->num_outputs; j++) {
        const nxe_tensor *t = j < op->num_inputs ? op->inputs[j] : op->outputs[j - op->num_inputs];
        if (quantized(t))
            status = check_quant(t, L->settled ? &L->settled[t->index] : NULL);
    }
    return status;
}

/* ---- the fallback: DequantizeLinear -> the f32 op -> QuantizeLinear ---- */

/* `op_type` (DequantizeLinear / QuantizeLinear) from `in` to `out`; in the first stage,
 * which only learns shapes, a Cast, so that quantization parameters are checked by the
 * second stage, which knows the shapes, and reported naming the tensor. */
static nxe_status convert(lowering *L, const char *name, nxe_tensor *in, nxe_tensor *out,
                          const char *op_type)
{
    if (L->settled)
        return add_op(L, op_type, name, &in, 1, &out, 1, NULL);
    nxe_op *cast = NULL;
    nxe_status status = add_op(L, "Cast", name, &in, 1, &out, 1, &cast);
    return status == NXE_OK ? nxe_op_set_attr_int(cast, "to", out->dtype) : status;
}

static nxe_status dequantized(lowering *L, const nxe_tensor *t, nxe_tensor **out)
{
    if (L->deq[t->index]) {
        *out = L->deq[t->index];
        return NXE_OK;
    }
    nxe_tensor *in = mapped(L, t);
    nxe_status status =
        add_tensor(L, t->name, "dequantized", NXE_DTYPE_F32, NXE_TENSOR_TRANSIENT, -1, NULL, out);
    if (status == NXE_OK)
        status = convert(L, t->name, in, *out, "DequantizeLinear");
    if (status == NXE_OK)
        L->deq[t->index] = *out;
    return status;
}

static nxe_status fallback(lowering *L, const nxe_op *op)
{
    nxe_tensor **in = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(op->num_inputs + 1));
    nxe_tensor **outs = nxe_alloc(sizeof(nxe_tensor *) * (size_t)(op->num_outputs + 1));
    nxe_status status = NXE_OK;
    if (!in || !outs)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t j = 0; status == NXE_OK && j < op->num_inputs; j++) {
        const nxe_tensor *t = op->inputs[j];
        in[j] = mapped(L, t);
        if (quantized(t))
            status = dequantized(L, t, &in[j]);
    }
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++) {
        const nxe_tensor *t = op->outputs[j];
        outs[j] = mapped(L, t);
        if (!quantized(t))
            continue;
        if (!is_q8(t->dtype))
            status = nxe_error(NXE_ERROR_UNSUPPORTED,
                               "compile: op '%s' ('%s') writes the quantized %s tensor '%s'; "
                               "quantized results are u8 or i8",
                               nxe_node_type(&op->node), op->node.name, nxe_dtype_name(t->dtype),
                               t->name);
        else
            status = add_tensor(L, t->name, "f32_", NXE_DTYPE_F32, NXE_TENSOR_TRANSIENT, -1, NULL,
                                &outs[j]);
    }
    if (status == NXE_OK)
        status = copy_op(L, op, in, outs);
    for (int32_t j = 0; status == NXE_OK && j < op->num_outputs; j++) {
        const nxe_tensor *t = op->outputs[j];
        if (quantized(t))
            status = convert(L, t->name, outs[j], mapped(L, t), "QuantizeLinear");
    }
    nxe_free(in);
    nxe_free(outs);
    return status;
}

/* ---- integer lowerings ---- */

/* The integer bounds of Relu / Clip (real bounds) in quantization q of dtype `dtype`. */
static void activation_bounds(const nxe_op *act, int32_t dtype, const nxe_quant *q, int32_t *lo,
                              int32_t *hi)
{
    q8_range(dtype, lo, hi);
    double min = 0.0, max = INFINITY;
    if (strcmp(nxe_node_type(&act->node), "Clip") == 0) {
        nxe_node_attr_float(&act->node, "min", &min);
        nxe_node_attr_float(&act->node, "max", &max);
    }
    /* Quantizing is monotonic, so clamping the quantized value to the quantized bounds
     * equals quantizing the clamped real value. */
    double qmin = nearbyint(min / scale_of(q)) + zero_of(q);
    double qmax = nearbyint(max / scale_of(q)) + zero_of(q);
    if (qmin > *lo)
        *lo = qmin > *hi ? *hi : (int32_t)qmin;
    if (qmax < *hi)
        *hi = qmax < *lo ? *lo : (int32_t)qmax;
}

/* An activation reading `y` alone that can be folded into the result of y's producer: Relu
 * or Clip, y transient and read by nothing else, its result asymmetric of y's dtype. */
static const nxe_op *foldable_activation(const lowering *L, const nxe_tensor *y)
{
    if (y->kind != NXE_TENSOR_TRANSIENT || y->num_consumers != 1)
        return NULL;
    for (int32_t i = 0; i < L->src->num_ops; i++) {
        const nxe_op *op = L->src->ops[i];
        if (op->num_inputs < 1 || op->inputs[0] != y)
            continue;
        const char *type = nxe_node_type(&op->node);
        if ((strcmp(type, "Relu") != 0 && strcmp(type, "Clip") != 0) || op->num_inputs != 1 ||
            op->num_outputs != 1 || !asymmetric_q8(op->outputs[0]) ||
            op->outputs[0]->dtype != y->dtype)
            return NULL;
        return op;
    }
    return NULL;
}

/* Where an integer op's requantized result goes: `y`, or the result of the activation folded
 * into it, through an integer Clip when the activation's bounds are narrower than the
 * dtype's range. */
typedef struct result_plan {
    const nxe_tensor *target; /* src tensor whose quantization the result takes */
    const nxe_op *activation;
    int32_t lo, hi; /* integer clamp; the dtype's range when none */
} result_plan;

static result_plan plan_result(const lowering *L, const nxe_tensor *y)
{
    result_plan plan = {.target = y};
    q8_range(y->dtype, &plan.lo, &plan.hi);
    const nxe_op *act = foldable_activation(L, y);
    if (act) {
        plan.activation = act;
        plan.target = act->outputs[0];
        activation_bounds(act, plan.target->dtype, &plan.target->quant, &plan.lo, &plan.hi);
    }
    return plan;
}

static bool narrows(const result_plan *plan)
{
    int32_t lo, hi;
    q8_range(plan->target->dtype, &lo, &hi);
    return plan->lo > lo || plan->hi < hi;
}

static nxe_status add_clip(lowering *L, const char *name, nxe_tensor *in, int32_t lo, int32_t hi,
                           nxe_tensor *out)
{
    nxe_op *clip = NULL;
    nxe_status status = add_op(L, "Clip", name, &in, 1, &out, 1, &clip);
    if (status == NXE_OK)
        status = nxe_op_set_attr_float(clip, "min", (double)lo);
    if (status == NXE_OK)
        status = nxe_op_set_attr_float(clip, "max", (double)hi);
    return status;
}

/* The tensor an integer op writes before an optional clamp and reshape: the target itself,
 * or a new transient of its dtype. */
static nxe_status result_tensor(lowering *L, const result_plan *plan, bool reshape,
                                nxe_tensor **out)
{
    if (!narrows(plan) && !reshape) {
        *out = mapped(L, plan->target);
        return NXE_OK;
    }
    return add_tensor(L, plan->target->name, "requantized", plan->target->dtype,
                      NXE_TENSOR_TRANSIENT, -1, NULL, out);
}

/* Clamps (if the plan narrows) and reshapes (to `shape` when ndim >= 0) `written` into the
 * target. */
static nxe_status finish_result(lowering *L, const result_plan *plan, const char *name,
                                nxe_tensor *written, int32_t ndim, const int64_t *shape)
{
    nxe_tensor *target = mapped(L, plan->target);
    nxe_status status = NXE_OK;
    if (narrows(plan)) {
        nxe_tensor *clamped = target;
        if (ndim >= 0)
            status = add_tensor(L, plan->target->name, "clamped", plan->target->dtype,
                                NXE_TENSOR_TRANSIENT, -1, NULL, &clamped);
        if (status == NXE_OK)
            status = add_clip(L, name, written, plan->lo, plan->hi, clamped);
        written = clamped;
    }
    if (status == NXE_OK && ndim >= 0) {
        nxe_op *reshape = NULL;
        status = add_op(L, "Reshape", name, &written, 1, &target, 1, &reshape);
        if (status == NXE_OK)
            status = nxe_op_set_attr_ints(reshape, "shape", shape, ndim);
    }
    return status;
}

/* Scale and zero-point constants of a per-tensor or per-channel (along `axis`) operand. */
static nxe_status operand_params(lowering *L, const nxe_tensor *t, int32_t axis, const char *base,
                                 nxe_tensor **scale, nxe_tensor **zero)
{
    const nxe_quant *q = &t->quant;
    nxe_status status;
    if (q->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL) {
        if (q->axis != axis)
            return NXE_ERROR_UNSUPPORTED;
        int64_t n = q->num_scales;
        status = add_constant(L, base, "scales", NXE_DTYPE_F32, 1, &n, q->scales,
                              sizeof(float) * (size_t)n, scale);
        if (status == NXE_OK)
            status = add_q8_scalar(L, base, "zero_point", t->dtype, 0, zero);
        return status;
    }
    status = add_f32_scalar(L, base, "scale", scale_of(q), scale);
    if (status == NXE_OK)
        status = add_q8_scalar(L, base, "zero_point", t->dtype, zero_of(q), zero);
    return status;
}

static float channel_scale(const nxe_quant *q, int64_t c)
{
    return q->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL ? q->scales[c] : scale_of(q);
}

/* The bias as the integer kernels take it: int32 in units of x_scale * w_scale[o] with zero
 * point 0. A bias already so is used as it is; a constant one in other units (or f32) is
 * requantized once, here, rounding half to even. Returns UNSUPPORTED (no error recorded) when
 * neither applies. */
static nxe_status integer_bias(lowering *L, const nxe_tensor *b, const nxe_tensor *x,
                               const nxe_tensor *w, int64_t channels, nxe_tensor **out)
{
    *out = NULL;
    if (!b)
        return NXE_OK;
    const nxe_value *bv = &L->settled[b->index];
    if (bv->ndim != 1 || bv->shape[0] != channels)
        return NXE_ERROR_UNSUPPORTED;
    bool exact = b->dtype == NXE_DTYPE_I32;
    if (exact && b->quant.type == NXE_QUANT_ASYMMETRIC && b->quant.zero_point == 0) {
        for (int64_t c = 0; c < channels && exact; c++) {
            double want = (double)scale_of(&x->quant) * channel_scale(&w->quant, c);
            exact = fabs(b->quant.scale - want) <= 1e-6 * want;
        }
    } else if (exact) {
        exact = b->quant.type == NXE_QUANT_NONE;
    }
    if (exact) {
        *out = mapped(L, b);
        return NXE_OK;
    }
    if (b->kind != NXE_TENSOR_CONSTANT || !b->data ||
        (b->dtype != NXE_DTYPE_F32 && b->dtype != NXE_DTYPE_I32))
        return NXE_ERROR_UNSUPPORTED;
    int32_t *q = nxe_alloc(sizeof(int32_t) * (size_t)(channels + 1));
    if (!q)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int64_t c = 0; c < channels; c++) {
        double real;
        if (b->dtype == NXE_DTYPE_F32) {
            real = ((const float *)b->data)[c];
        } else {
            const nxe_quant *bq = &b->quant;
            double v = ((const int32_t *)b->data)[c];
            real = bq->type == NXE_QUANT_ASYMMETRIC              ? bq->scale * (v - bq->zero_point)
                   : bq->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL ? bq->scales[c] * v
                                                                 : ldexp(v, -bq->fractional_length);
        }
        double r = nearbyint(real / ((double)scale_of(&x->quant) * channel_scale(&w->quant, c)));
        q[c] = !(r == r)           ? 0
               : r > 2147483647.0  ? INT32_MAX
               : r < -2147483648.0 ? INT32_MIN
                                   : (int32_t)r;
    }
    nxe_status status = add_constant(L, b->name, "bias", NXE_DTYPE_I32, 1, &channels, q,
                                     sizeof(int32_t) * (size_t)channels, out);
    nxe_free(q);
    return status;
}

static bool weights_fit(const nxe_tensor *w, int32_t axis)
{
    return asymmetric_q8(w) ||
           (is_q8(w->dtype) && w->quant.type == NXE_QUANT_SYMMETRIC_PER_CHANNEL &&
            w->quant.axis == axis);
}

/* QLinearConv over x [N, C, H, W] and w [O, C/group, KH, KW] with the given conv attributes
 * (strides, dilations, pads, group) into the plan's target. */
static nxe_status emit_qlinear_conv(lowering *L, const nxe_op *op, nxe_tensor *x_in,
                                    const nxe_tensor *x, nxe_tensor *w_in, const nxe_tensor *w,
                                    nxe_tensor *bias, int64_t channels, const int64_t *attrs,
                                    const result_plan *plan, int32_t ndim, const int64_t *shape)
{
    const char *name = op->node.name;
    nxe_tensor *in[9] = {x_in, NULL, NULL, w_in, NULL, NULL, NULL, NULL, bias};
    nxe_status status = operand_params(L, x, 0, x->name, &in[1], &in[2]);
    if (status == NXE_OK)
        status = operand_params(L, w, 0, w->name, &in[4], &in[5]);
    if (status == NXE_OK)
        status = operand_params(L, plan->target, 0, plan->target->name, &in[6], &in[7]);
    nxe_tensor *written = NULL;
    if (status == NXE_OK)
        status = result_tensor(L, plan, ndim >= 0, &written);
    nxe_op *conv = NULL;
    if (status == NXE_OK)
        status = add_op(L, "QLinearConv", name, in, bias ? 9 : 8, &written, 1, &conv);
    if (status == NXE_OK)
        status = nxe_op_set_attr_ints(conv, "strides", attrs, 2);
    if (status == NXE_OK)
        status = nxe_op_set_attr_ints(conv, "dilations", attrs + 2, 2);
    if (status == NXE_OK)
        status = nxe_op_set_attr_ints(conv, "pads", attrs + 4, 4);
    if (status == NXE_OK)
        status = nxe_op_set_attr_int(conv, "group", attrs[8]);
    (void)channels;
    if (status == NXE_OK)
        status = finish_result(L, plan, name, written, ndim, shape);
    return status;
}

/* Conv2d (NCHW) -> QLinearConv. */
static nxe_status lower_conv(lowering *L, const nxe_op *op, const char **how)
{
    const nxe_tensor *x = op->inputs[0], *w = op->inputs[1];
    const nxe_tensor *b = op->num_inputs > 2 ? op->inputs[2] : NULL;
    const nxe_tensor *y = op->outputs[0];
    const char *layout = "NCHW", *padding = "EXPLICIT";
    nxe_node_attr_string(&op->node, "layout", &layout);
    nxe_node_attr_string(&op->node, "padding", &padding);
    const nxe_value *xv = &L->settled[x->index], *wv = &L->settled[w->index];
    if (!asymmetric_q8(x) || !weights_fit(w, 0) || !asymmetric_q8(y) ||
        strcmp(layout, "NCHW") != 0 || xv->ndim != 4 || wv->ndim != 4)
        return NXE_ERROR_UNSUPPORTED;
    int64_t attrs[9] = {1, 1, 1, 1, 0, 0, 0, 0, 1};
    int32_t count = 0;
    if (nxe_node_attr_ints(&op->node, "strides", attrs, 2, &count) != NXE_OK ||
        nxe_node_attr_ints(&op->node, "dilations", attrs + 2, 2, &count) != NXE_OK ||
        nxe_node_attr_int(&op->node, "group", &attrs[8]) != NXE_OK)
        return NXE_ERROR_UNSUPPORTED;
    if (strcmp(padding, "EXPLICIT") == 0) {
        if (nxe_node_attr_ints(&op->node, "pads", attrs + 4, 4, &count) != NXE_OK)
            return NXE_ERROR_UNSUPPORTED;
    } else if (strcmp(padding, "SAME") == 0 || strcmp(padding, "SAME_LOWER") == 0) {
        for (int32_t d = 0; d < 2; d++) {
            int64_t in = xv->shape[2 + d], stride = attrs[d], k = wv->shape[2 + d];
            int64_t out = (in + stride - 1) / stride;
            int64_t total = (out - 1) * stride + (k - 1) * attrs[2 + d] + 1 - in;
            total = total < 0 ? 0 : total;
            int64_t small = total / 2;
            attrs[4 + d] = padding[4] == '\0' ? small : total - small;
            attrs[6 + d] = total - attrs[4 + d];
        }
    } else if (strcmp(padding, "VALID") != 0) {
        return NXE_ERROR_UNSUPPORTED;
    }
    nxe_tensor *bias = NULL;
    nxe_status status = integer_bias(L, b, x, w, wv->shape[0], &bias);
    if (status != NXE_OK)
        return status;
    result_plan plan = plan_result(L, y);
    status = emit_qlinear_conv(L, op, mapped(L, x), x, mapped(L, w), w, bias, wv->shape[0], attrs,
                               &plan, -1, NULL);
    if (status == NXE_OK && plan.activation)
        L->folded[plan.activation->index] = true;
    *how = w->quant.type == NXE_QUANT_SYMMETRIC_PER_CHANNEL ? "QLinearConv, per-channel weights"
                                                            : "QLinearConv";
    return status;
}

static nxe_status add_reshape(lowering *L, const char *name, nxe_tensor *in, const int64_t *shape,
                              int32_t ndim, nxe_tensor **out)
{
    nxe_status status =
        add_tensor(L, in->name, "reshaped", in->dtype, NXE_TENSOR_TRANSIENT, -1, NULL, out);
    nxe_op *reshape = NULL;
    if (status == NXE_OK)
        status = add_op(L, "Reshape", name, &in, 1, out, 1, &reshape);
    if (status == NXE_OK)
        status = nxe_op_set_attr_ints(reshape, "shape", shape, ndim);
    return status;
}

/* FullyConnected X [..., K] by W [N, K] -> a 1x1 QLinearConv over [rows, K, 1, 1]. */
static nxe_status lower_fully_connected(lowering *L, const nxe_op *op, const char **how)
{
    const nxe_tensor *x = op->inputs[0], *w = op->inputs[1];
    const nxe_tensor *b = op->num_inputs > 2 ? op->inputs[2] : NULL;
    const nxe_tensor *y = op->outputs[0];
    const nxe_value *xv = &L->settled[x->index], *wv = &L->settled[w->index];
    const nxe_value *yv = &L->settled[y->index];
    if (!asymmetric_q8(x) || !weights_fit(w, 0) || !asymmetric_q8(y) || xv->ndim < 1 ||
        wv->ndim != 2 || yv->ndim < 1)
        return NXE_ERROR_UNSUPPORTED;
    nxe_tensor *bias = NULL;
    nxe_status status = integer_bias(L, b, x, w, wv->shape[0], &bias);
    if (status != NXE_OK)
        return status;
    const char *name = op->node.name;
    int64_t x_shape[4] = {-1, wv->shape[1], 1, 1}, w_shape[4] = {wv->shape[0], wv->shape[1], 1, 1};
    nxe_tensor *x4 = NULL, *w4 = NULL;
    status = add_reshape(L, name, mapped(L, x), x_shape, 4, &x4);
    if (status == NXE_OK)
        status = add_reshape(L, name, mapped(L, w), w_shape, 4, &w4);
    int64_t attrs[9] = {1, 1, 1, 1, 0, 0, 0, 0, 1};
    result_plan plan = plan_result(L, y);
    if (status == NXE_OK)
        status = emit_qlinear_conv(L, op, x4, x, w4, w, bias, wv->shape[0], attrs, &plan, yv->ndim,
                                   yv->shape);
    if (status == NXE_OK && plan.activation)
        L->folded[plan.activation->index] = true;
    *how = "QLinearConv 1x1 between reshapes";
    return status;
}

/* MatMul of 2-D A [M, K] by B [K, N] -> QLinearMatMul. */
static nxe_status lower_matmul(lowering *L, const nxe_op *op, const char **how)
{
    const nxe_tensor *a = op->inputs[0], *b = op->inputs[1], *y = op->outputs[0];
    const nxe_value *av = &L->settled[a->index], *bv = &L->settled[b->index];
    if (!asymmetric_q8(a) || !weights_fit(b, 1) || !asymmetric_q8(y) || av->ndim != 2 ||
        bv->ndim != 2)
        return NXE_ERROR_UNSUPPORTED;
    result_plan plan = plan_result(L, y);
    nxe_tensor *in[8] = {mapped(L, a), NULL, NULL, mapped(L, b), NULL, NULL, NULL, NULL};
    nxe_status status = operand_params(L, a, 1, a->name, &in[1], &in[2]);
    if (status == NXE_OK)
        status = operand_params(L, b, 1, b->name, &in[4], &in[5]);
    if (status == NXE_OK)
        status = operand_params(L, plan.target, 0, plan.target->name, &in[6], &in[7]);
    nxe_tensor *written = NULL;
    if (status == NXE_OK)
        status = result_tensor(L, &plan, false, &written);
    if (status == NXE_OK)
        status = add_op(L, "QLinearMatMul", op->node.name, in, 8, &written, 1, NULL);
    if (status == NXE_OK)
        status = finish_result(L, &plan, op->node.name, written, -1, NULL);
    if (status == NXE_OK && plan.activation)
        L->folded[plan.activation->index] = true;
    *how = "QLinearMatMul";
    return status;
}

/* Relu / Clip alone: an integer Clip when input and result share dtype and quantization. */
static nxe_status lower_activation(lowering *L, const nxe_op *op, const char **how)
{
    const nxe_tensor *x = op->inputs[0], *y = op->outputs[0];
    if (!asymmetric_q8(x) || !asymmetric_q8(y) || x->dtype != y->dtype ||
        !same_quant(&x->quant, &y->quant))
        return NXE_ERROR_UNSUPPORTED;
    int32_t lo, hi;
    activation_bounds(op, y->dtype, &y->quant, &lo, &hi);
    *how = "integer Clip";
    return add_clip(L, op->node.name, mapped(L, x), lo, hi, mapped(L, y));
}

static bool passes_through(const nxe_op *op)
{
    const nxe_tensor *first = NULL;
    for (int32_t j = 0; j < op->num_inputs + op->num_outputs; j++) {
        const nxe_tensor *t = j < op->num_inputs ? op->inputs[j] : op->outputs[j - op->num_inputs];
        /* An index or shape operand, or 8-bit values without quantization (declared so or
         * left to inference), taken as being in the quantization of the result. */
        if (!t ||
            (j < op->num_inputs && !quantized(t) &&
             (is_q8(t->dtype) || t->dtype == NXE_DTYPE_NONE || t->kind == NXE_TENSOR_CONSTANT)))
            continue;
        if (!quantized(t) || !is_q8(t->dtype))
            return false;
        if (!first)
            first = t;
        else if (t->dtype != first->dtype || !same_quant(&t->quant, &first->quant))
            return false;
    }
    return first != NULL;
}

static nxe_status lower_op(lowering *L, const nxe_op *op)
{
    const char *type = nxe_node_type(&op->node);
    if (L->folded[op->index])
        return NXE_OK;
    if (!needs_lowering(op))
        return copy_op(L, op, NULL, NULL);
    nxe_status status = check_op_quant(L, op);
    if (status != NXE_OK)
        return status;
    bool log = L->settled != NULL;
    if (type_in(type, pass_through) && passes_through(op)) {
        if (log)
            nxe_log(NXE_LOG_INFO, "quantized op %s '%s': integer (8-bit values pass through)", type,
                    op->node.name);
        return copy_op(L, op, NULL, NULL);
    }
    if (L->settled) {
        const char *how = NULL;
        status = NXE_ERROR_UNSUPPORTED;
        if (strcmp(type, "Conv2d") == 0)
            status = lower_conv(L, op, &how);
        else if (strcmp(type, "FullyConnected") == 0)
            status = lower_fully_connected(L, op, &how);
        else if (strcmp(type, "MatMul") == 0)
            status = lower_matmul(L, op, &how);
        else if (strcmp(type, "Relu") == 0 || strcmp(type, "Clip") == 0)
            status = lower_activation(L, op, &how);
        if (status == NXE_OK) {
            const nxe_tensor *y = op->outputs[0];
            const nxe_op *act = strcmp(how, "integer Clip") != 0 ? foldable_activation(L, y) : NULL;
            if (act && L->folded[act->index])
                nxe_log(NXE_LOG_INFO,
                        "quantized op %s '%s': integer (%s), %s '%s' folded into its "
                        "requantization clamp",
                        type, op->node.name, how, nxe_node_type(&act->node), act->node.name);
            else
                nxe_log(NXE_LOG_INFO, "quantized op %s '%s': integer (%s)", type, op->node.name,
                        how);
            return NXE_OK;
        }
        if (status != NXE_ERROR_UNSUPPORTED)
            return status;
        bool requantizes = false;
        for (int32_t j = 0; j < op->num_outputs; j++)
            requantizes = requantizes || quantized(op->outputs[j]);
        nxe_log(NXE_LOG_INFO, "quantized op %s '%s': fallback (DequantizeLinear -> f32 %s%s)", type,
                op->node.name, type, requantizes ? " -> QuantizeLinear" : "");
    }
    return fallback(L, op);
}

static nxe_status build(const nxe_graph *src, const nxe_value *settled, nxe_graph **out)
{
    *out = NULL;
    lowering L = {.src = src, .settled = settled};
    nxe_status status = nxe_graph_create(src->context, &L.dst);
    if (status != NXE_OK)
        return status;
    L.deq = nxe_alloc_zeroed(sizeof(nxe_tensor *) * (size_t)(src->num_tensors + 1));
    L.folded = nxe_alloc_zeroed(sizeof(bool) * (size_t)(src->num_ops + 1));
    if (!L.deq || !L.folded)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (status == NXE_OK)
        status = copy_tensors(&L);
    /* Activations last, so that one folded into its producer is known as such when it is
     * reached (the copy's op order does not matter: inference orders it). */
    for (int32_t pass = 0; pass < 2; pass++)
        for (int32_t i = 0; status == NXE_OK && i < src->num_ops; i++) {
            const char *type = nxe_node_type(&src->ops[i]->node);
            bool activation = strcmp(type, "Relu") == 0 || strcmp(type, "Clip") == 0;
            if (activation == (pass == 1))
                status = lower_op(&L, src->ops[i]);
        }
    nxe_free(L.deq);
    nxe_free(L.folded);
    if (status != NXE_OK) {
        nxe_graph_release(L.dst);
        return status;
    }
    L.dst->has_source_fingerprint = src->has_source_fingerprint;
    memcpy(L.dst->source_fingerprint, src->source_fingerprint, sizeof src->source_fingerprint);
    *out = L.dst;
    return NXE_OK;
}

nxe_status nxe_quant_lower(const nxe_graph *graph, uint64_t max_tensor_bytes, nxe_graph **out)
{
    *out = NULL;
    bool needed = false;
    for (int32_t i = 0; i < graph->num_ops; i++) {
        const nxe_op *op = graph->ops[i];
        /* an op left unbound: inference reports it on the user's graph */
        if (!op->inputs_bound || !op->outputs_bound)
            return NXE_OK;
        needed = needed || needs_lowering(op);
    }
    if (!needed)
        return NXE_OK;
    /* Stage 1: everything through the fallback, inferred for the shapes. */
    nxe_graph *probe = NULL;
    nxe_status status = build(graph, NULL, &probe);
    nxe_graph_inference inference;
    if (status == NXE_OK)
        status = nxe_graph_infer(probe, max_tensor_bytes, &inference);
    if (status != NXE_OK) {
        nxe_graph_release(probe);
        return status;
    }
    nxe_graph_inference_free(probe, &inference);
    nxe_value *settled = nxe_alloc(sizeof(nxe_value) * (size_t)(graph->num_tensors + 1));
    if (!settled) {
        nxe_graph_release(probe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    memcpy(settled, probe->inferred, sizeof(nxe_value) * (size_t)graph->num_tensors);
    nxe_graph_release(probe);
    /* Stage 2: the integer lowerings where they apply. */
    status = build(graph, settled, out);
    nxe_free(settled);
    return status;
}

nxe_status nxe_quant_lower_settle(nxe_graph *graph, const nxe_graph *lowered)
{
    nxe_value *values = nxe_alloc(sizeof(nxe_value) * (size_t)(graph->num_tensors + 1));
    if (!values)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    for (int32_t i = 0; i < graph->num_tensors; i++) {
        values[i] = lowered->inferred[i];
        values[i].quant = &graph->tensors[i]->quant;
        values[i].data = NULL;
    }
    nxe_free(graph->inferred);
    graph->inferred = values;
    graph->num_inferred = graph->num_tensors;
    return NXE_OK;
}
