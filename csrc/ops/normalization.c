/* normalization.c — the normalization op family: LayerNorm and Softmax. Schemas, shape rules
 * and lowering to kernels/ref/normalization. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/normalization.h"

/* About this many elements per parallel task keeps scheduling overhead negligible. */
#define NORMALIZATION_TASK_WORK 16384.0

static bool input_present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

/* Splits x's shape at `axis` into the element counts before and from it. */
static nxe_status split_at_axis(const nxe_node *node, const nxe_value *x, int32_t axis,
                                int64_t *outer, int64_t *from_axis)
{
    if (!nxe_shape_numel(axis, x->shape, outer) ||
        !nxe_shape_numel(x->ndim - axis, x->shape + axis, from_axis)) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has more elements than int64 can count",
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf));
    }
    return NXE_OK;
}

/* ---- LayerNorm --------------------------------------------------------------------------- */

typedef struct layer_norm_params {
    int64_t rows;
    int64_t row_size;
    float epsilon;
    int32_t has_scale;
    int32_t has_bias;
} layer_norm_params;

/* Scale and B must have exactly the normalized trailing shape of X. */
static nxe_status check_affine(const nxe_node *node, const char *what, const nxe_value *param,
                               const nxe_value *x, int32_t axis)
{
    const int32_t ndim = x->ndim - axis;
    bool same = param->ndim == ndim;
    for (int32_t d = 0; same && d < ndim; d++) {
        same = param->shape[d] == x->shape[axis + d];
    }
    if (!same) {
        char ps[128], want[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input %s must have the normalized shape %s of X, got %s", what,
                              nxe_shape_str(ndim, x->shape + axis, want, sizeof want),
                              nxe_shape_str(param->ndim, param->shape, ps, sizeof ps));
    }
    return NXE_OK;
}

static nxe_status layer_norm_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params_out)
{
    (void)num_outputs;
    layer_norm_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *scale = input_present(inputs, num_inputs, 1) ? &inputs[1] : NULL;
    const nxe_value *bias = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    int64_t axis_attr = 0;
    double epsilon = 0.0;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status == NXE_OK) status = nxe_node_attr_float(node, "epsilon", &epsilon);
    if (status != NXE_OK) {
        return status;
    }
    if (!(epsilon >= 0.0) || !isfinite(epsilon)) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute epsilon must be finite and >= 0, got %g", epsilon);
    }
    if (x->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 1, got a scalar");
    }
    int32_t axis = 0;
    status = nxe_normalize_axis(node, axis_attr, x->ndim, &axis);
    if (status == NXE_OK && scale != NULL) status = check_affine(node, "Scale", scale, x, axis);
    if (status == NXE_OK && bias != NULL) status = check_affine(node, "B", bias, x, axis);
    if (status == NXE_OK) status = split_at_axis(node, x, axis, &params->rows, &params->row_size);
    if (status != NXE_OK) {
        return status;
    }
    params->epsilon = (float)epsilon;
    params->has_scale = scale != NULL;
    params->has_bias = bias != NULL;

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    return NXE_OK;
}

typedef struct layer_norm_job {
    const layer_norm_params *params;
    const float *x;
    const float *scale;
    const float *bias;
    float *y;
} layer_norm_job;

static void layer_norm_rows(void *ctx, int64_t begin, int64_t end)
{
    const layer_norm_job *job = ctx;
    nxe_ref_f32_layer_norm(job->x, job->scale, job->bias, job->y, job->params->row_size,
                           job->params->epsilon, begin, end);
}

static nxe_status layer_norm_run(const void *params_in, const nxe_value *inputs,
                                 int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                 nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const layer_norm_params *p = params_in;
    layer_norm_job job = {p, inputs[0].data, p->has_scale ? inputs[1].data : NULL,
                          p->has_bias ? inputs[2].data : NULL, outputs[0].data};
    nxe_parallel_for(pool, p->rows, nxe_parallel_grain(3.0 * (double)p->row_size, NORMALIZATION_TASK_WORK), layer_norm_rows,
                     &job);
    return NXE_OK;
}

static const nxe_op_param_info layer_norm_inputs[] = {
    {"X", "Input of rank >= 1; normalized over the dimensions from axis to the last.",
     NXE_MASK_FLOAT, 0, 0},
    {"Scale", "Multiplier with the normalized trailing shape X.shape[axis:].", NXE_MASK_FLOAT, 1,
     0},
    {"B", "Offset with the normalized trailing shape X.shape[axis:].", NXE_MASK_FLOAT, 1, 0},
};
static const nxe_op_param_info layer_norm_outputs[] = {
    {"Y", "(X - mean) / sqrt(variance + epsilon) * Scale + B, shaped like X.", NXE_MASK_FLOAT, 0,
     0},
};
static const nxe_op_attr_info layer_norm_attrs[] = {
    {"axis",
     "First normalized dimension; the mean and (biased) variance are taken over "
     "X.shape[axis:]. Negative counts from the end.",
     NXE_ATTR_INT, "-1"},
    {"epsilon", "Added to the variance before the square root; finite and >= 0.", NXE_ATTR_FLOAT,
     "1e-05"},
};

/* ---- Softmax ----------------------------------------------------------------------------- */

typedef struct softmax_params {
    int64_t outer;
    int64_t axis_size;
    int64_t inner;
} softmax_params;

static nxe_status softmax_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    softmax_params *params = params_out;
    const nxe_value *x = &inputs[0];
    int64_t axis_attr;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 1, got a scalar");
    }
    int32_t axis = 0;
    int64_t from_axis = 0;
    status = nxe_normalize_axis(node, axis_attr, x->ndim, &axis);
    if (status == NXE_OK) status = split_at_axis(node, x, axis, &params->outer, &from_axis);
    if (status != NXE_OK) {
        return status;
    }
    params->axis_size = x->shape[axis];
    /* A zero-sized axis leaves nothing to compute; its neighbours need not be counted. */
    params->inner = params->axis_size == 0 ? 0 : from_axis / params->axis_size;

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    return NXE_OK;
}

typedef struct softmax_job {
    const softmax_params *params;
    const float *x;
    float *y;
} softmax_job;

static void softmax_lanes(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *job = ctx;
    nxe_ref_f32_softmax(job->x, job->y, job->params->axis_size, job->params->inner, begin, end);
}

static nxe_status softmax_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const softmax_params *p = params_in;
    softmax_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->outer * p->inner, nxe_parallel_grain(3.0 * (double)p->axis_size, NORMALIZATION_TASK_WORK),
                     softmax_lanes, &job);
    return NXE_OK;
}

static const nxe_op_param_info softmax_inputs[] = {
    {"X", "Input of rank >= 1.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info softmax_outputs[] = {
    {"Y", "exp(X - max) / sum(exp(X - max)) along axis, shaped like X.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info softmax_attrs[] = {
    {"axis", "The one dimension the probabilities sum to 1 over; negative counts from the end.",
     NXE_ATTR_INT, "-1"},
};

static const nxe_op_def normalization_defs[] = {
    {NXE_INFO("LayerNorm",
              "Layer normalization over the trailing dimensions from axis, with optional "
              "elementwise Scale and B.",
              layer_norm_inputs, layer_norm_outputs, layer_norm_attrs),
     sizeof(layer_norm_params), layer_norm_infer, layer_norm_run},
    {NXE_INFO("Softmax", "Numerically stable softmax along one axis.", softmax_inputs,
              softmax_outputs, softmax_attrs),
     sizeof(softmax_params), softmax_infer, softmax_run},
};

const nxe_op_family nxe_ops_normalization = {
    normalization_defs, (int32_t)(sizeof normalization_defs / sizeof normalization_defs[0])};
