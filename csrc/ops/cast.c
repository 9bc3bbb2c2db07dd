/* cast.c — the cast op family: Cast between the thirteen dtypes, QuantizeLinear and
 * DequantizeLinear. Quantization parameters come from the tensors (declared output for
 * QuantizeLinear, input for DequantizeLinear), never from attributes. */
#include <math.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/cast.h"

/* Elements per parallel chunk. */
#define CAST_GRAIN 16384

static void same_shape(const nxe_value *in, nxe_value *out, int32_t dtype)
{
    out->dtype = dtype;
    out->ndim = in->ndim;
    memcpy(out->shape, in->shape, (size_t)in->ndim * sizeof(int64_t));
}

/* ---- Cast ----------------------------------------------------------------------------- */

typedef struct cast_params {
    int32_t from; /* enum nxe_ref_type */
    int32_t to;
    int32_t elem_size;
    int32_t same; /* from == to: a byte copy keeps NaN payloads untouched */
    int64_t numel;
} cast_params;

static int32_t ref_type(int32_t dtype)
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
    case NXE_DTYPE_F64: return NXE_REF_F64;
    case NXE_DTYPE_U16: return NXE_REF_U16;
    case NXE_DTYPE_U32: return NXE_REF_U32;
    case NXE_DTYPE_U64: return NXE_REF_U64;
    default: return -1;
    }
}

static nxe_status cast_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    cast_params *p = params;
    int64_t to;
    nxe_status status = nxe_node_attr_int(node, "to", &to);
    if (status != NXE_OK)
        return status;
    if (to <= NXE_DTYPE_NONE || to >= NXE_DTYPE_COUNT)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'to' is %lld, not a dtype (expected %d..%d, enum "
                              "nxe_dtype)",
                              (long long)to, NXE_DTYPE_NONE + 1, NXE_DTYPE_COUNT - 1);
    same_shape(&inputs[0], &outputs[0], (int32_t)to);
    p->from = ref_type(inputs[0].dtype);
    p->to = ref_type((int32_t)to);
    p->elem_size = (int32_t)nxe_dtype_size(inputs[0].dtype);
    p->same = inputs[0].dtype == to;
    p->numel = nxe_value_numel(&inputs[0]);
    return NXE_OK;
}

typedef struct cast_job {
    const cast_params *p;
    const void *src;
    void *dst;
} cast_job;

static void cast_range(void *ctx, int64_t begin, int64_t end)
{
    const cast_job *job = ctx;
    nxe_ref_cast(job->p->from, job->src, job->p->to, job->dst, begin, end);
}

static nxe_status cast_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const cast_params *p = params;
    if (p->numel == 0)
        return NXE_OK;
    if (p->from < 0 || p->to < 0)
        return nxe_error(NXE_ERROR_INTERNAL, "unknown element type reached run");
    if (p->same) {
        memmove(outputs[0].data, inputs[0].data, (size_t)p->numel * (size_t)p->elem_size);
        return NXE_OK;
    }
    cast_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->numel, CAST_GRAIN, cast_range, &job);
    return NXE_OK;
}

/* ---- QuantizeLinear, DequantizeLinear -------------------------------------------------- */

/* The quantized tensor seen as [outer, channels, inner]; channels = 1 unless per channel. */
typedef struct quant_params {
    int32_t quant_dtype; /* of the quantized side: u8 / i8 (/ i32 when dequantizing) */
    int32_t per_channel; /* scales come from the tensor's quantization at run time */
    float scale;         /* per tensor */
    int32_t zero_point;
    int64_t channels;
    int64_t inner;
    int64_t rows; /* outer * channels */
} quant_params;

static bool int_range(int32_t dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case NXE_DTYPE_U8:
        *lo = 0;
        *hi = UINT8_MAX;
        return true;
    case NXE_DTYPE_I8:
        *lo = INT8_MIN;
        *hi = INT8_MAX;
        return true;
    case NXE_DTYPE_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        return true;
    default: return false;
    }
}

static bool valid_scale(float s)
{
    return isfinite(s) && s > 0.0f;
}

/* Validates the quantization of `tensor` (shape of `v`, dtype `dtype`) and fills p. */
static nxe_status quant_layout(const nxe_node *node, const char *tensor, const nxe_value *v,
                               int32_t dtype, const nxe_quant *q, quant_params *p)
{
    const int64_t numel = nxe_value_numel(v);
    p->quant_dtype = dtype;
    p->channels = 1;
    p->inner = numel;
    switch (q->type) {
    case NXE_QUANT_ASYMMETRIC: {
        int64_t lo = 0, hi = 0;
        int_range(dtype, &lo, &hi);
        if (!valid_scale(q->scale))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "tensor '%s' has quantization scale %g; it must be finite "
                                  "and > 0",
                                  tensor, (double)q->scale);
        if (q->zero_point < lo || q->zero_point > hi)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "tensor '%s' has zero point %d, outside the %s range [%lld, "
                                  "%lld]",
                                  tensor, q->zero_point, nxe_dtype_name(dtype), (long long)lo,
                                  (long long)hi);
        p->scale = q->scale;
        p->zero_point = q->zero_point;
        break;
    }
    case NXE_QUANT_SYMMETRIC_PER_CHANNEL: {
        int32_t axis;
        nxe_status status = nxe_normalize_axis(node, q->axis, v->ndim, &axis);
        if (status != NXE_OK)
            return status;
        if (q->num_scales != v->shape[axis])
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "tensor '%s' has %d per-channel scales but its axis %d has "
                                  "size %lld",
                                  tensor, q->num_scales, axis, (long long)v->shape[axis]);
        for (int32_t c = 0; q->scales && c < q->num_scales; c++)
            if (!valid_scale(q->scales[c]))
                return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                      "tensor '%s' has scale %g for channel %d; scales must be "
                                      "finite and > 0",
                                      tensor, (double)q->scales[c], c);
        p->per_channel = 1;
        p->channels = v->shape[axis];
        int64_t inner = 1;
        for (int32_t d = axis + 1; d < v->ndim; d++)
            inner *= v->shape[d];
        p->inner = inner;
        break;
    }
    case NXE_QUANT_DYNAMIC_FIXED_POINT:
        /* Keeps 2^-fractional_length a normal float. */
        if (q->fractional_length < -126 || q->fractional_length > 126)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "tensor '%s' has fractional length %d; expected -126..126",
                                  tensor, q->fractional_length);
        p->scale = ldexpf(1.0f, -q->fractional_length);
        break;
    default:
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "tensor '%s' carries no quantization; set it (asymmetric, "
                              "per-channel or dynamic fixed point) before compiling",
                              tensor);
    }
    p->rows = p->inner > 0 ? numel / p->inner : 0;
    return NXE_OK;
}

static nxe_status quantize_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    nxe_value *y = &outputs[0];
    if (y->dtype == NXE_DTYPE_NONE)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "output 'y' has no declared dtype; declare it as a u8 or i8 "
                              "tensor with its quantization");
    if (y->dtype != NXE_DTYPE_U8 && y->dtype != NXE_DTYPE_I8)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "output 'y' is declared %s; QuantizeLinear writes u8 or i8",
                              nxe_dtype_name(y->dtype));
    nxe_status status = quant_layout(node, "y", &inputs[0], y->dtype, y->quant, params);
    if (status != NXE_OK)
        return status;
    same_shape(&inputs[0], y, y->dtype);
    return NXE_OK;
}

static nxe_status dequantize_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    nxe_status status = quant_layout(node, "x", x, x->dtype, x->quant, params);
    if (status != NXE_OK)
        return status;
    same_shape(x, &outputs[0], NXE_DTYPE_F32);
    return NXE_OK;
}

typedef struct quant_job {
    const quant_params *p;
    const float *scales;
    const void *src;
    void *dst;
} quant_job;

static const float *job_scales(const quant_params *p, const nxe_quant *q)
{
    return p->per_channel ? q->scales : &p->scale;
}

static void quantize_range(void *ctx, int64_t begin, int64_t end)
{
    const quant_job *job = ctx;
    const quant_params *p = job->p;
    if (p->quant_dtype == NXE_DTYPE_U8)
        nxe_ref_f32_quantize_u8(job->src, job->dst, p->channels, p->inner, job->scales,
                                p->zero_point, begin, end);
    else
        nxe_ref_f32_quantize_i8(job->src, job->dst, p->channels, p->inner, job->scales,
                                p->zero_point, begin, end);
}

static void dequantize_range(void *ctx, int64_t begin, int64_t end)
{
    const quant_job *job = ctx;
    const quant_params *p = job->p;
    switch (p->quant_dtype) {
    case NXE_DTYPE_U8:
        nxe_ref_u8_dequantize(job->src, job->dst, p->channels, p->inner, job->scales, p->zero_point,
                              begin, end);
        break;
    case NXE_DTYPE_I8:
        nxe_ref_i8_dequantize(job->src, job->dst, p->channels, p->inner, job->scales, p->zero_point,
                              begin, end);
        break;
    default:
        nxe_ref_i32_dequantize(job->src, job->dst, p->channels, p->inner, job->scales,
                               p->zero_point, begin, end);
        break;
    }
}

static int64_t row_grain(const quant_params *p)
{
    return p->inner >= CAST_GRAIN ? 1 : CAST_GRAIN / p->inner;
}

static nxe_status quantize_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const quant_params *p = params;
    if (p->rows == 0 || p->inner == 0)
        return NXE_OK;
    quant_job job = {p, job_scales(p, outputs[0].quant), inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->rows, row_grain(p), quantize_range, &job);
    return NXE_OK;
}

static nxe_status dequantize_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const quant_params *p = params;
    if (p->rows == 0 || p->inner == 0)
        return NXE_OK;
    quant_job job = {p, job_scales(p, inputs[0].quant), inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->rows, row_grain(p), dequantize_range, &job);
    return NXE_OK;
}

/* ---- Schemas -------------------------------------------------------------------------- */

static const nxe_op_param_info cast_inputs[] = {
    {"input", "tensor to convert, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info cast_outputs[] = {
    {"output", "same shape, dtype 'to'", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info cast_attrs[] = {
    {"to",
     "target dtype as an enum nxe_dtype value (1 f32, 2 f16, 3 bf16, 4 i8, 5 u8, 6 i16, "
     "7 i32, 8 i64, 9 bool, 10 f64, 11 u16, 12 u32, 13 u64)",
     NXE_ATTR_INT, NULL},
};

static const nxe_op_param_info quantize_inputs[] = {
    {"x", "f32 values to quantize", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info quantize_outputs[] = {
    {"y",
     "must be declared by the caller as u8 or i8 with its quantization: asymmetric per tensor "
     "(scale, zero point), symmetric per channel (one scale per index of its axis) or dynamic "
     "fixed point (scale 2^-fractional_length)",
     NXE_MASK(NXE_DTYPE_U8) | NXE_MASK(NXE_DTYPE_I8), 0, 0},
};

static const nxe_op_param_info dequantize_inputs[] = {
    {"x",
     "u8, i8 or i32 tensor carrying its quantization: asymmetric per tensor, symmetric per "
     "channel or dynamic fixed point",
     NXE_MASK(NXE_DTYPE_U8) | NXE_MASK(NXE_DTYPE_I8) | NXE_MASK(NXE_DTYPE_I32), 0, 0},
};
static const nxe_op_param_info dequantize_outputs[] = {
    {"y", "f32 values, same shape", NXE_MASK_FLOAT, 0, 0},
};

static const nxe_op_def cast_defs[] = {
    {NXE_INFO("Cast",
              "Converts every element to dtype 'to'. To f64: exact from every dtype but u64 "
              "and i64 (rounded to nearest even). To f32/f16/bf16: rounded once to nearest "
              "even from the exact source value, f64 included (f16 keeps subnormals, overflow "
              "gives inf, NaN stays NaN). Float to integer: truncated toward zero and "
              "saturated at the target's range, NaN gives 0. Integer to integer (signed or "
              "unsigned): low bits kept (two's complement wrap), so -1 becomes the maximum of "
              "an unsigned type. To bool: x != 0. From bool: 0 or 1.",
              cast_inputs, cast_outputs, cast_attrs),
     sizeof(cast_params), cast_infer, cast_run},
    {NXE_INFO_NOATTR("QuantizeLinear",
                     "y = saturate(round_half_even(x / scale) + zero_point), with the dtype and "
                     "quantization of the declared output y (zero point 0 for per-channel and "
                     "fixed point); NaN gives the zero point.",
                     quantize_inputs, quantize_outputs),
     sizeof(quant_params), quantize_infer, quantize_run},
    {NXE_INFO_NOATTR("DequantizeLinear",
                     "y = (x - zero_point) * scale in f32, with the quantization of input x "
                     "(per channel: scales[c] * x; fixed point: x * 2^-fractional_length).",
                     dequantize_inputs, dequantize_outputs),
     sizeof(quant_params), dequantize_infer, dequantize_run},
};

const nxe_op_family nxe_ops_cast = {cast_defs, (int32_t)(sizeof cast_defs / sizeof cast_defs[0])};
