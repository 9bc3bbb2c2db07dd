/* normalization.c — the normalization op family: LayerNorm, BatchNorm, InstanceNorm,
 * GroupNorm, RMSNorm, LRN, LpNorm, Softmax, LogSoftmax and Hardmax. Schemas, shape rules and
 * lowering to kernels/ref/normalization. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ops/channels_last.h"
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
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "epsilon", &epsilon);
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
    if (status == NXE_OK && scale != NULL)
        status = check_affine(node, "Scale", scale, x, axis);
    if (status == NXE_OK && bias != NULL)
        status = check_affine(node, "B", bias, x, axis);
    if (status == NXE_OK)
        status = split_at_axis(node, x, axis, &params->rows, &params->row_size);
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
    const nxe_kernel_table *kernels = nxe_kernels();
    if (kernels->f32_layer_norm_rows)
        kernels->f32_layer_norm_rows(job->x, job->scale, job->bias, job->y, job->params->row_size,
                                     job->params->epsilon, begin, end);
    else
        nxe_ref_f32_layer_norm(job->x, job->scale, job->bias, job->y, job->params->row_size,
                               job->params->epsilon, begin, end);
}

static nxe_status layer_norm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const layer_norm_params *p = params_in;
    layer_norm_job job = {p, inputs[0].data, p->has_scale ? inputs[1].data : NULL,
                          p->has_bias ? inputs[2].data : NULL, outputs[0].data};
    nxe_parallel_for(pool, p->rows,
                     nxe_parallel_grain(3.0 * (double)p->row_size, NORMALIZATION_TASK_WORK),
                     layer_norm_rows, &job);
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
static const nxe_op_attr_info epsilon_layout_attrs[] = {
    {"epsilon", "Added to the variance before the square root; finite and >= 0.", NXE_ATTR_FLOAT,
     "1e-05"},
    NXE_LAYOUT_ATTR,
};

/* ---- Softmax ----------------------------------------------------------------------------- */

typedef struct softmax_params {
    int64_t outer;
    int64_t axis_size;
    int64_t inner;
    int32_t p; /* LpNorm only */
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
    if (status == NXE_OK)
        status = split_at_axis(node, x, axis, &params->outer, &from_axis);
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
    const nxe_kernel_table *kernels = nxe_kernels();
    /* Lanes are rows when the axis is innermost. */
    if (job->params->inner == 1 && kernels->f32_softmax_rows)
        kernels->f32_softmax_rows(job->x, job->y, job->params->axis_size, begin, end);
    else
        nxe_ref_f32_softmax(job->x, job->y, job->params->axis_size, job->params->inner, begin, end);
}

static nxe_status lanes_run(const softmax_params *p, const nxe_value *inputs, nxe_value *outputs,
                            nxe_thread_pool *pool, nxe_range_fn fn)
{
    softmax_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->outer * p->inner,
                     nxe_parallel_grain(3.0 * (double)p->axis_size, NORMALIZATION_TASK_WORK), fn,
                     &job);
    return NXE_OK;
}

static nxe_status softmax_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return lanes_run(params_in, inputs, outputs, pool, softmax_lanes);
}

static void log_softmax_lanes(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *job = ctx;
    nxe_ref_f32_log_softmax(job->x, job->y, job->params->axis_size, job->params->inner, begin, end);
}

static nxe_status log_softmax_run(const void *params_in, const nxe_value *inputs,
                                  int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                  nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return lanes_run(params_in, inputs, outputs, pool, log_softmax_lanes);
}

static void hardmax_lanes(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *job = ctx;
    nxe_ref_f32_hardmax(job->x, job->y, job->params->axis_size, job->params->inner, begin, end);
}

static nxe_status hardmax_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return lanes_run(params_in, inputs, outputs, pool, hardmax_lanes);
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

static const nxe_op_param_info log_softmax_outputs[] = {
    {"Y", "X - max - log(sum(exp(X - max))) along axis, shaped like X.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info log_softmax_attrs[] = {
    {"axis", "The one dimension the probabilities are taken over; negative counts from the end.",
     NXE_ATTR_INT, "-1"},
};
static const nxe_op_param_info hardmax_outputs[] = {
    {"Y",
     "1 at the first largest element along axis (NaN counts as the largest), 0 elsewhere; "
     "shaped like X.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info hardmax_attrs[] = {
    {"axis", "The dimension searched; negative counts from the end.", NXE_ATTR_INT, "-1"},
};

/* ---- LpNorm ------------------------------------------------------------------------------ */

static nxe_status lp_norm_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    softmax_params *params = params_out;
    int64_t p = 0;
    nxe_status status = nxe_node_attr_int(node, "p", &p);
    if (status != NXE_OK) {
        return status;
    }
    if (p != 1 && p != 2) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute p must be 1 or 2, got %" PRId64, p);
    }
    params->p = (int32_t)p;
    return softmax_infer(node, inputs, num_inputs, outputs, num_outputs, params_out);
}

static void lp_norm_lanes(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *job = ctx;
    nxe_ref_f32_lp_norm(job->x, job->y, job->params->axis_size, job->params->inner, job->params->p,
                        begin, end);
}

static nxe_status lp_norm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return lanes_run(params_in, inputs, outputs, pool, lp_norm_lanes);
}

static const nxe_op_param_info lp_norm_outputs[] = {
    {"Y", "X / ||X||_p along axis (0 where the norm is 0), shaped like X.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info lp_norm_attrs[] = {
    {"axis", "The dimension the norm is taken over; negative counts from the end.", NXE_ATTR_INT,
     "-1"},
    {"p", "The norm: 1 (sum of |x|) or 2 (Euclidean).", NXE_ATTR_INT, "2"},
};

/* ---- channel-wise normalizations: BatchNorm, InstanceNorm, GroupNorm, LRN ---------------- */

typedef struct channel_norm_params {
    int64_t batch;
    int64_t channels;
    int64_t spatial;
    int64_t groups; /* GroupNorm / InstanceNorm */
    int64_t size;   /* LRN */
    float epsilon;
    float alpha;           /* LRN */
    float beta;            /* LRN */
    float bias;            /* LRN */
    int32_t channels_last; /* BatchNorm, InstanceNorm in NHWC: settled, never run */
} channel_norm_params;

/* Reads X as [batch, channels, spatial...] of rank >= 2. */
static nxe_status split_channels(const nxe_node *node, const nxe_value *x,
                                 channel_norm_params *params)
{
    char buf[128];
    if (x->ndim < 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 2 ([N, C, ...]), got %s",
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf));
    }
    int64_t total = 0;
    if (!nxe_shape_numel(x->ndim, x->shape, &total) ||
        !nxe_shape_numel(x->ndim - 2, x->shape + 2, &params->spatial)) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has more elements than int64 can count",
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf));
    }
    params->batch = x->shape[0];
    params->channels = x->shape[1];
    return NXE_OK;
}

/* A per-channel input must be [C]. */
static nxe_status check_channel_vector(const nxe_node *node, const char *what,
                                       const nxe_value *value, int64_t channels)
{
    if (value->ndim != 1 || value->shape[0] != channels) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input %s must have shape [%" PRId64 "] (the channels of X), got %s",
                              what, channels,
                              nxe_shape_str(value->ndim, value->shape, buf, sizeof buf));
    }
    return NXE_OK;
}

static nxe_status read_epsilon(const nxe_node *node, float *out)
{
    double epsilon = 0.0;
    nxe_status status = nxe_node_attr_float(node, "epsilon", &epsilon);
    if (status != NXE_OK) {
        return status;
    }
    if (!(epsilon >= 0.0) || !isfinite(epsilon)) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute epsilon must be finite and >= 0, got %g", epsilon);
    }
    *out = (float)epsilon;
    return NXE_OK;
}

static void same_shape_output(const nxe_value *x, nxe_value *y)
{
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
}

static nxe_status channel_inputs_infer(const nxe_node *node, const nxe_value *inputs, int32_t count,
                                       const char *const *names, nxe_value *outputs,
                                       channel_norm_params *params)
{
    nxe_status status = split_channels(node, &inputs[0], params);
    for (int32_t i = 1; status == NXE_OK && i < count; i++) {
        status = check_channel_vector(node, names[i], &inputs[i], params->channels);
    }
    if (status == NXE_OK)
        status = read_epsilon(node, &params->epsilon);
    if (status == NXE_OK)
        same_shape_output(&inputs[0], &outputs[0]);
    return status;
}

/* channel_inputs_infer for an op with a layout attribute: NHWC is settled as NCHW on the
 * permuted shape; Y keeps X's shape. */
static nxe_status layout_channel_inputs_infer(const nxe_node *node, const nxe_value *inputs,
                                              int32_t count, const char *const *names,
                                              nxe_value *outputs, channel_norm_params *params)
{
    nxe_value view[5];
    memcpy(view, inputs, sizeof(nxe_value) * (size_t)count);
    nxe_status status = nxe_read_channels_last(node, &inputs[0], &params->channels_last);
    if (status != NXE_OK)
        return status;
    if (params->channels_last)
        view[0] = nxe_channels_first_view(&inputs[0]);
    status = channel_inputs_infer(node, view, count, names, outputs, params);
    if (status == NXE_OK)
        same_shape_output(&inputs[0], &outputs[0]);
    return status;
}

static nxe_status batch_norm_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    static const char *const names[] = {"X", "Scale", "B", "Mean", "Var"};
    return layout_channel_inputs_infer(node, inputs, 5, names, outputs, params_out);
}

typedef struct channel_norm_job {
    const channel_norm_params *params;
    const nxe_value *inputs;
    float *y;
} channel_norm_job;

static void batch_norm_planes(void *ctx, int64_t begin, int64_t end)
{
    const channel_norm_job *job = ctx;
    const channel_norm_params *p = job->params;
    nxe_ref_f32_batch_norm(job->inputs[0].data, job->inputs[1].data, job->inputs[2].data,
                           job->inputs[3].data, job->inputs[4].data, job->y, p->channels,
                           p->spatial, p->epsilon, begin, end);
}

static nxe_status batch_norm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const channel_norm_params *p = params_in;
    if (p->channels_last)
        return nxe_channels_last_refused("BatchNorm");
    channel_norm_job job = {p, inputs, outputs[0].data};
    nxe_parallel_for(pool, p->batch * p->channels,
                     nxe_parallel_grain((double)p->spatial, NORMALIZATION_TASK_WORK),
                     batch_norm_planes, &job);
    return NXE_OK;
}

static nxe_status instance_norm_infer(const nxe_node *node, const nxe_value *inputs,
                                      int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                      void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    channel_norm_params *params = params_out;
    static const char *const names[] = {"X", "Scale", "B"};
    nxe_status status = layout_channel_inputs_infer(node, inputs, 3, names, outputs, params);
    params->groups = params->channels;
    return status;
}

static nxe_status group_norm_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    channel_norm_params *params = params_out;
    static const char *const names[] = {"X", "Scale", "B"};
    nxe_status status = channel_inputs_infer(node, inputs, 3, names, outputs, params);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "num_groups", &params->groups);
    if (status != NXE_OK) {
        return status;
    }
    if (params->groups < 1 || params->channels % params->groups != 0) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute num_groups must be >= 1 and divide the %" PRId64
                              " channels of X, got %" PRId64,
                              params->channels, params->groups);
    }
    return NXE_OK;
}

static void group_norm_rows(void *ctx, int64_t begin, int64_t end)
{
    const channel_norm_job *job = ctx;
    const channel_norm_params *p = job->params;
    nxe_ref_f32_group_norm(job->inputs[0].data, job->inputs[1].data, job->inputs[2].data, job->y,
                           p->groups, p->channels / p->groups, p->spatial, p->epsilon, begin, end);
}

static nxe_status group_norm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const channel_norm_params *p = params_in;
    channel_norm_job job = {p, inputs, outputs[0].data};
    /* A zero-channel X has no groups to normalize. */
    const int64_t rows = p->channels == 0 ? 0 : p->batch * p->groups;
    const double row_size =
        (double)(p->channels / (p->groups > 0 ? p->groups : 1)) * (double)p->spatial;
    nxe_parallel_for(pool, rows, nxe_parallel_grain(3.0 * row_size, NORMALIZATION_TASK_WORK),
                     group_norm_rows, &job);
    return NXE_OK;
}

static nxe_status instance_norm_run(const void *params_in, const nxe_value *inputs,
                                    int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                    nxe_thread_pool *pool)
{
    if (((const channel_norm_params *)params_in)->channels_last)
        return nxe_channels_last_refused("InstanceNorm");
    return group_norm_run(params_in, inputs, num_inputs, outputs, num_outputs, pool);
}

static nxe_status lrn_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    channel_norm_params *params = params_out;
    double alpha = 0.0, beta = 0.0, bias = 0.0;
    nxe_status status = split_channels(node, &inputs[0], params);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "size", &params->size);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "alpha", &alpha);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "beta", &beta);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "bias", &bias);
    if (status != NXE_OK) {
        return status;
    }
    if (params->size < 1) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute size must be >= 1, got %" PRId64, params->size);
    }
    if (!isfinite(alpha) || !isfinite(beta) || !isfinite(bias)) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attributes alpha, beta and bias must be finite, got %g, %g, %g",
                              alpha, beta, bias);
    }
    params->alpha = (float)alpha;
    params->beta = (float)beta;
    params->bias = (float)bias;
    same_shape_output(&inputs[0], &outputs[0]);
    return NXE_OK;
}

static void lrn_lanes(void *ctx, int64_t begin, int64_t end)
{
    const channel_norm_job *job = ctx;
    const channel_norm_params *p = job->params;
    nxe_ref_f32_lrn(job->inputs[0].data, job->y, p->channels, p->spatial, p->size, p->alpha,
                    p->beta, p->bias, begin, end);
}

static nxe_status lrn_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                          nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const channel_norm_params *p = params_in;
    channel_norm_job job = {p, inputs, outputs[0].data};
    const double window = (double)(p->size < p->channels ? p->size : p->channels);
    nxe_parallel_for(
        pool, p->batch * p->spatial,
        nxe_parallel_grain((double)p->channels * (window + 1.0), NORMALIZATION_TASK_WORK),
        lrn_lanes, &job);
    return NXE_OK;
}

static const nxe_op_param_info batch_norm_inputs[] = {
    {"X", "Input [N, C, ...] of rank >= 2.", NXE_MASK_FLOAT, 0, 0},
    {"Scale", "Per-channel multiplier [C].", NXE_MASK_FLOAT, 0, 0},
    {"B", "Per-channel offset [C].", NXE_MASK_FLOAT, 0, 0},
    {"Mean", "Per-channel running mean [C].", NXE_MASK_FLOAT, 0, 0},
    {"Var", "Per-channel running variance [C].", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info batch_norm_outputs[] = {
    {"Y", "(X - Mean) / sqrt(Var + epsilon) * Scale + B per channel, shaped like X.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info affine_channel_inputs[] = {
    {"X", "Input [N, C, ...] of rank >= 2.", NXE_MASK_FLOAT, 0, 0},
    {"Scale", "Per-channel multiplier [C].", NXE_MASK_FLOAT, 0, 0},
    {"B", "Per-channel offset [C].", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info instance_norm_outputs[] = {
    {"Y",
     "Each (n, c) plane normalized by its own mean and biased variance plus epsilon, then "
     "times Scale[c] plus B[c]; shaped like X.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info group_norm_outputs[] = {
    {"Y",
     "Each group of C / num_groups consecutive channels of each sample normalized by its mean "
     "and biased variance plus epsilon, then times Scale[c] plus B[c]; shaped like X.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info group_norm_attrs[] = {
    {"num_groups", "Number of channel groups; divides C.", NXE_ATTR_INT, NULL},
    {"epsilon", "Added to the variance before the square root; finite and >= 0.", NXE_ATTR_FLOAT,
     "1e-05"},
};
static const nxe_op_param_info lrn_inputs[] = {
    {"X", "Input [N, C, ...] of rank >= 2.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info lrn_outputs[] = {
    {"Y",
     "X / (bias + alpha / size * S) ^ beta, where S sums X^2 over the channels from "
     "c - floor((size - 1) / 2) to c + ceil((size - 1) / 2) that exist; shaped like X.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info lrn_attrs[] = {
    {"size", "Number of channels in the window, >= 1.", NXE_ATTR_INT, NULL},
    {"alpha", "Scale of the window's sum of squares; finite.", NXE_ATTR_FLOAT, "0.0001"},
    {"beta", "Exponent; finite.", NXE_ATTR_FLOAT, "0.75"},
    {"bias", "Added before the power; finite.", NXE_ATTR_FLOAT, "1.0"},
};

/* ---- RMSNorm ----------------------------------------------------------------------------- */

static nxe_status rms_norm_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_outputs;
    layer_norm_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *scale = input_present(inputs, num_inputs, 1) ? &inputs[1] : NULL;
    int64_t axis_attr = 0;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status == NXE_OK)
        status = read_epsilon(node, &params->epsilon);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 1, got a scalar");
    }
    int32_t axis = 0;
    status = nxe_normalize_axis(node, axis_attr, x->ndim, &axis);
    if (status == NXE_OK && scale != NULL)
        status = check_affine(node, "Scale", scale, x, axis);
    if (status == NXE_OK)
        status = split_at_axis(node, x, axis, &params->rows, &params->row_size);
    if (status != NXE_OK) {
        return status;
    }
    params->has_scale = scale != NULL;
    same_shape_output(x, &outputs[0]);
    return NXE_OK;
}

typedef struct rms_norm_job {
    const layer_norm_params *params;
    const float *x;
    const float *scale;
    float *y;
} rms_norm_job;

static void rms_norm_rows(void *ctx, int64_t begin, int64_t end)
{
    const rms_norm_job *job = ctx;
    nxe_ref_f32_rms_norm(job->x, job->scale, job->y, job->params->row_size, job->params->epsilon,
                         begin, end);
}

static nxe_status rms_norm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const layer_norm_params *p = params_in;
    rms_norm_job job = {p, inputs[0].data, p->has_scale ? inputs[1].data : NULL, outputs[0].data};
    nxe_parallel_for(pool, p->rows,
                     nxe_parallel_grain(2.0 * (double)p->row_size, NORMALIZATION_TASK_WORK),
                     rms_norm_rows, &job);
    return NXE_OK;
}

static const nxe_op_param_info rms_norm_inputs[] = {
    {"X", "Input of rank >= 1; normalized over the dimensions from axis to the last.",
     NXE_MASK_FLOAT, 0, 0},
    {"Scale", "Multiplier with the normalized trailing shape X.shape[axis:].", NXE_MASK_FLOAT, 1,
     0},
};
static const nxe_op_param_info rms_norm_outputs[] = {
    {"Y", "X / sqrt(mean(X^2) + epsilon) * Scale, shaped like X.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info rms_norm_attrs[] = {
    {"axis",
     "First normalized dimension; the mean of squares is taken over X.shape[axis:]. Negative "
     "counts from the end.",
     NXE_ATTR_INT, "-1"},
    {"epsilon", "Added to the mean of squares before the square root; finite and >= 0.",
     NXE_ATTR_FLOAT, "1e-05"},
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
    {NXE_INFO("LogSoftmax", "Numerically stable log of the softmax along one axis.", softmax_inputs,
              log_softmax_outputs, log_softmax_attrs),
     sizeof(softmax_params), softmax_infer, log_softmax_run},
    {NXE_INFO("Hardmax", "One-hot of the first largest element along one axis.", softmax_inputs,
              hardmax_outputs, hardmax_attrs),
     sizeof(softmax_params), softmax_infer, hardmax_run},
    {NXE_INFO("LpNorm", "Divides by the L1 or L2 norm along one axis (p = 2 is L2Norm).",
              softmax_inputs, lp_norm_outputs, lp_norm_attrs),
     sizeof(softmax_params), lp_norm_infer, lp_norm_run},
    {NXE_INFO("BatchNorm",
              "Inference-mode batch normalization with per-channel running statistics.",
              batch_norm_inputs, batch_norm_outputs, epsilon_layout_attrs),
     sizeof(channel_norm_params), batch_norm_infer, batch_norm_run},
    {NXE_INFO("InstanceNorm", "Normalizes each channel of each sample over its spatial dimensions.",
              affine_channel_inputs, instance_norm_outputs, epsilon_layout_attrs),
     sizeof(channel_norm_params), instance_norm_infer, instance_norm_run},
    {NXE_INFO("GroupNorm",
              "Normalizes groups of channels of each sample over the group's channels and "
              "spatial dimensions.",
              affine_channel_inputs, group_norm_outputs, group_norm_attrs),
     sizeof(channel_norm_params), group_norm_infer, group_norm_run},
    {NXE_INFO("RMSNorm",
              "Root-mean-square normalization over the trailing dimensions from axis, with an "
              "optional elementwise Scale.",
              rms_norm_inputs, rms_norm_outputs, rms_norm_attrs),
     sizeof(layer_norm_params), rms_norm_infer, rms_norm_run},
    {NXE_INFO("LRN", "Local response normalization across neighbouring channels.", lrn_inputs,
              lrn_outputs, lrn_attrs),
     sizeof(channel_norm_params), lrn_infer, lrn_run},
};

const nxe_op_family nxe_ops_normalization = {
    normalization_defs, (int32_t)(sizeof normalization_defs / sizeof normalization_defs[0])};
