/* reduce.c — the reduce op family: reductions over any set of axes (ReduceSum, ReduceMax,
 * ReduceLogSumExp, ...), ArgMax/ArgMin, TopK, CumSum and CumProd along one axis. Schemas,
 * shape rules and lowering to kernels/ref/reduce. */
#include <inttypes.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/reduce.h"

_Static_assert(NXE_REF_REDUCE_MAX_DIMS >= NXE_MAX_RANK, "reduce kernels must take any rank");

/* About this many elements per parallel task keeps scheduling overhead negligible. */
#define REDUCE_TASK_WORK 16384.0

typedef struct reduce_params {
    nxe_reduce_geometry geometry;
    int64_t out_count;
    int32_t kind; /* nxe_reduce_kind */
} reduce_params;

/* Describes a non-empty dense x as kept and reduced dimensions, dropping size-1 dimensions
 * and merging neighbours of the same kind so the kernels loop over as few as possible. */
static void reduce_geometry(const nxe_value *x, const bool *reduced, nxe_reduce_geometry *g)
{
    int64_t strides[NXE_MAX_RANK];
    int64_t stride = 1;
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x->shape[d];
    }
    memset(g, 0, sizeof *g);
    g->reduced_count = 1;
    int32_t last_kind = -1; /* kind of the last dimension appended: 0 kept, 1 reduced */
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) {
            continue;
        }
        const int32_t kind = reduced[d] ? 1 : 0;
        int32_t *ndim = kind ? &g->reduced_ndim : &g->kept_ndim;
        int64_t *shape = kind ? g->reduced_shape : g->kept_shape;
        int64_t *dim_strides = kind ? g->reduced_strides : g->kept_strides;
        if (kind == last_kind) {
            /* Dense, with only size-1 dimensions between: the two merge into one. */
            shape[*ndim - 1] *= x->shape[d];
            dim_strides[*ndim - 1] = strides[d];
        } else {
            shape[*ndim] = x->shape[d];
            dim_strides[*ndim] = strides[d];
            (*ndim)++;
        }
        if (kind) {
            g->reduced_count *= x->shape[d];
        }
        last_kind = kind;
    }
}

static nxe_status reduce_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                               reduce_params *params)
{
    const nxe_value *x = &inputs[0];
    int64_t axes[16];
    int32_t num_axes = 0;
    int64_t keepdims = 0;
    nxe_status status = nxe_node_attr_ints(node, "axes", axes, 16, &num_axes);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "keepdims", &keepdims);
    if (status != NXE_OK) {
        return status;
    }
    if (keepdims != 0 && keepdims != 1) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute keepdims must be 0 or 1, got %" PRId64, keepdims);
    }
    bool reduced[NXE_MAX_RANK] = {false};
    for (int32_t d = 0; d < x->ndim; d++) {
        reduced[d] = num_axes == 0;
    }
    for (int32_t i = 0; i < num_axes; i++) {
        int32_t axis;
        status = nxe_normalize_axis(node, axes[i], x->ndim, &axis);
        if (status != NXE_OK) {
            return status;
        }
        if (reduced[axis]) {
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute axes names dimension %" PRId32 " twice (axes[%" PRId32
                                  "] = %" PRId64 ")",
                                  axis, i, axes[i]);
        }
        reduced[axis] = true;
    }

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (!reduced[d]) {
            y->shape[y->ndim++] = x->shape[d];
        } else if (keepdims) {
            y->shape[y->ndim++] = 1;
        }
    }
    if (!nxe_shape_numel(y->ndim, y->shape, &params->out_count)) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "output shape %s has more elements than int64 can count",
                              nxe_shape_str(y->ndim, y->shape, buf, sizeof buf));
    }
    if (nxe_value_numel(x) > 0) {
        reduce_geometry(x, reduced, &params->geometry);
    } else {
        /* Nothing to read: either no outputs, or each output reduces an empty set. */
        memset(&params->geometry, 0, sizeof params->geometry);
    }
    return NXE_OK;
}

/* One infer per op, so each op's params carry its kind. */
#define DEFINE_REDUCE_INFER(fn, reduce_kind)                                                       \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params_out)                \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        reduce_params *params = params_out;                                                        \
        params->kind = (reduce_kind);                                                              \
        return reduce_infer(node, inputs, outputs, params);                                        \
    }

DEFINE_REDUCE_INFER(reduce_sum_infer, NXE_REDUCE_SUM)
DEFINE_REDUCE_INFER(reduce_mean_infer, NXE_REDUCE_MEAN)
DEFINE_REDUCE_INFER(reduce_max_infer, NXE_REDUCE_MAX)
DEFINE_REDUCE_INFER(reduce_min_infer, NXE_REDUCE_MIN)
DEFINE_REDUCE_INFER(reduce_prod_infer, NXE_REDUCE_PROD)
DEFINE_REDUCE_INFER(reduce_l1_infer, NXE_REDUCE_L1)
DEFINE_REDUCE_INFER(reduce_l2_infer, NXE_REDUCE_L2)
DEFINE_REDUCE_INFER(reduce_sum_square_infer, NXE_REDUCE_SUM_SQUARE)
DEFINE_REDUCE_INFER(reduce_log_sum_infer, NXE_REDUCE_LOG_SUM)
DEFINE_REDUCE_INFER(reduce_log_sum_exp_infer, NXE_REDUCE_LOG_SUM_EXP)

typedef struct reduce_job {
    const reduce_params *params;
    int32_t dtype;
    const void *x;
    void *y;
} reduce_job;

static void reduce_range(void *ctx, int64_t begin, int64_t end)
{
    const reduce_job *job = ctx;
    const nxe_reduce_geometry *g = &job->params->geometry;
    const nxe_reduce_kind kind = (nxe_reduce_kind)job->params->kind;
    switch (job->dtype) {
    case NXE_DTYPE_I32: nxe_ref_i32_reduce(kind, g, job->x, job->y, begin, end); break;
    case NXE_DTYPE_I64: nxe_ref_i64_reduce(kind, g, job->x, job->y, begin, end); break;
    case NXE_DTYPE_BOOL: nxe_ref_bool_reduce(kind, g, job->x, job->y, begin, end); break;
    case NXE_DTYPE_F64: nxe_ref_f64_reduce(kind, g, job->x, job->y, begin, end); break;
    default: nxe_ref_f32_reduce(kind, g, job->x, job->y, begin, end); break;
    }
}

static nxe_status reduce_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const reduce_params *p = params;
    reduce_job job = {p, inputs[0].dtype, inputs[0].data, outputs[0].data};
    /* Log-sum-exp reads its elements twice. */
    const double work =
        (double)p->geometry.reduced_count * (p->kind == NXE_REDUCE_LOG_SUM_EXP ? 2.0 : 1.0);
    nxe_parallel_for(pool, p->out_count, nxe_parallel_grain(work, REDUCE_TASK_WORK), reduce_range,
                     &job);
    return NXE_OK;
}

/* ---- along one axis: ArgMax, ArgMin, TopK, CumSum ----------------------------------------- */

typedef struct axis_params {
    int64_t outer;
    int64_t axis_size;
    int64_t inner;
    int64_t k;      /* TopK */
    int32_t flag_a; /* ArgMax/ArgMin: select_last_index; TopK: largest; CumSum: exclusive */
    int32_t flag_b; /* ArgMax/ArgMin: want_max; CumSum: reverse */
} axis_params;

/* Reads attribute `name` that must be 0 or 1. */
static nxe_status attr_flag(const nxe_node *node, const char *name, int32_t *out)
{
    int64_t value = 0;
    nxe_status status = nxe_node_attr_int(node, name, &value);
    if (status != NXE_OK) {
        return status;
    }
    if (value != 0 && value != 1) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute %s must be 0 or 1, got %" PRId64, name, value);
    }
    *out = (int32_t)value;
    return NXE_OK;
}

/* Normalizes attribute "axis" and splits x's shape around it. */
static nxe_status split_axis(const nxe_node *node, const nxe_value *x, int32_t *axis_out,
                             axis_params *params)
{
    int64_t axis_attr = 0;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 1, got a scalar");
    }
    int32_t axis = 0;
    status = nxe_normalize_axis(node, axis_attr, x->ndim, &axis);
    if (status != NXE_OK) {
        return status;
    }
    int64_t total = 0;
    /* The lanes (outer x inner) are counted even when the axis is empty. */
    if (!nxe_shape_numel(x->ndim, x->shape, &total) ||
        !nxe_shape_numel(axis, x->shape, &params->outer) ||
        !nxe_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, &params->inner) ||
        (params->inner != 0 && params->outer > INT64_MAX / params->inner)) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has more elements than int64 can count",
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf));
    }
    params->axis_size = x->shape[axis];
    *axis_out = axis;
    return NXE_OK;
}

static nxe_status arg_extreme_infer(const nxe_node *node, const nxe_value *inputs,
                                    nxe_value *outputs, axis_params *params, bool want_max)
{
    const nxe_value *x = &inputs[0];
    int32_t axis = 0, keepdims = 0;
    nxe_status status = split_axis(node, x, &axis, params);
    if (status == NXE_OK)
        status = attr_flag(node, "keepdims", &keepdims);
    if (status == NXE_OK)
        status = attr_flag(node, "select_last_index", &params->flag_a);
    if (status != NXE_OK) {
        return status;
    }
    if (params->axis_size == 0) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "axis %" PRId32 " of input X %s is empty: no element to pick", axis,
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf));
    }
    params->flag_b = want_max;
    nxe_value *y = &outputs[0];
    y->dtype = NXE_DTYPE_I64;
    y->ndim = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d != axis) {
            y->shape[y->ndim++] = x->shape[d];
        } else if (keepdims) {
            y->shape[y->ndim++] = 1;
        }
    }
    return NXE_OK;
}

static nxe_status arg_max_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    return arg_extreme_infer(node, inputs, outputs, params, true);
}

static nxe_status arg_min_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    return arg_extreme_infer(node, inputs, outputs, params, false);
}

typedef struct axis_job {
    const axis_params *params;
    int32_t dtype;
    const void *x;
    void *y;
    int64_t *indices;
} axis_job;

static void arg_extreme_lanes(void *ctx, int64_t begin, int64_t end)
{
    const axis_job *job = ctx;
    const axis_params *p = job->params;
    switch (job->dtype) {
    case NXE_DTYPE_I32:
        nxe_ref_i32_arg_extreme(job->x, job->y, p->axis_size, p->inner, p->flag_b, p->flag_a, begin,
                                end);
        break;
    case NXE_DTYPE_I64:
        nxe_ref_i64_arg_extreme(job->x, job->y, p->axis_size, p->inner, p->flag_b, p->flag_a, begin,
                                end);
        break;
    case NXE_DTYPE_F64:
        nxe_ref_f64_arg_extreme(job->x, job->y, p->axis_size, p->inner, p->flag_b, p->flag_a, begin,
                                end);
        break;
    default:
        nxe_ref_f32_arg_extreme(job->x, job->y, p->axis_size, p->inner, p->flag_b, p->flag_a, begin,
                                end);
        break;
    }
}

static nxe_status axis_run(const axis_params *p, const nxe_value *inputs, nxe_value *outputs,
                           int32_t num_outputs, nxe_thread_pool *pool, nxe_range_fn fn,
                           double work_per_lane)
{
    axis_job job = {p, inputs[0].dtype, inputs[0].data, outputs[0].data,
                    num_outputs > 1 ? outputs[1].data : NULL};
    nxe_parallel_for(pool, p->outer * p->inner, nxe_parallel_grain(work_per_lane, REDUCE_TASK_WORK),
                     fn, &job);
    return NXE_OK;
}

static nxe_status arg_extreme_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    const axis_params *p = params;
    return axis_run(p, inputs, outputs, num_outputs, pool, arg_extreme_lanes, (double)p->axis_size);
}

static nxe_status top_k_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    axis_params *params = params_out;
    const nxe_value *x = &inputs[0];
    int32_t axis = 0, sorted = 0;
    int64_t k = 0;
    nxe_status status = split_axis(node, x, &axis, params);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "k", &k);
    if (status == NXE_OK)
        status = attr_flag(node, "largest", &params->flag_a);
    if (status == NXE_OK)
        status = attr_flag(node, "sorted", &sorted);
    if (status != NXE_OK) {
        return status;
    }
    if (k < 0 || k > params->axis_size) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute k must be in [0, %" PRId64 "] (axis %" PRId32
                              " of input X %s), got %" PRId64,
                              params->axis_size, axis,
                              nxe_shape_str(x->ndim, x->shape, buf, sizeof buf), k);
    }
    params->k = k;
    for (int32_t o = 0; o < 2; o++) {
        nxe_value *y = &outputs[o];
        y->dtype = o == 0 ? x->dtype : NXE_DTYPE_I64;
        y->ndim = x->ndim;
        memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
        y->shape[axis] = k;
    }
    return NXE_OK;
}

static void top_k_lanes(void *ctx, int64_t begin, int64_t end)
{
    const axis_job *job = ctx;
    const axis_params *p = job->params;
    switch (job->dtype) {
    case NXE_DTYPE_I32:
        nxe_ref_i32_top_k(job->x, job->y, job->indices, p->axis_size, p->inner, p->k, p->flag_a,
                          begin, end);
        break;
    case NXE_DTYPE_I64:
        nxe_ref_i64_top_k(job->x, job->y, job->indices, p->axis_size, p->inner, p->k, p->flag_a,
                          begin, end);
        break;
    case NXE_DTYPE_F64:
        nxe_ref_f64_top_k(job->x, job->y, job->indices, p->axis_size, p->inner, p->k, p->flag_a,
                          begin, end);
        break;
    default:
        nxe_ref_f32_top_k(job->x, job->y, job->indices, p->axis_size, p->inner, p->k, p->flag_a,
                          begin, end);
        break;
    }
}

static nxe_status top_k_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    const axis_params *p = params;
    return axis_run(p, inputs, outputs, num_outputs, pool, top_k_lanes,
                    (double)p->axis_size * (double)(p->k > 0 ? p->k : 1));
}

static nxe_status cumsum_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    axis_params *params = params_out;
    const nxe_value *x = &inputs[0];
    int32_t axis = 0;
    nxe_status status = split_axis(node, x, &axis, params);
    if (status == NXE_OK)
        status = attr_flag(node, "exclusive", &params->flag_a);
    if (status == NXE_OK)
        status = attr_flag(node, "reverse", &params->flag_b);
    if (status != NXE_OK) {
        return status;
    }
    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    return NXE_OK;
}

static void cumsum_lanes(void *ctx, int64_t begin, int64_t end)
{
    const axis_job *job = ctx;
    const axis_params *p = job->params;
    switch (job->dtype) {
    case NXE_DTYPE_I32:
        nxe_ref_i32_cumsum(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                           end);
        break;
    case NXE_DTYPE_I64:
        nxe_ref_i64_cumsum(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                           end);
        break;
    case NXE_DTYPE_F64:
        nxe_ref_f64_cumsum(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                           end);
        break;
    default:
        nxe_ref_f32_cumsum(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                           end);
        break;
    }
}

static void cumprod_lanes(void *ctx, int64_t begin, int64_t end)
{
    const axis_job *job = ctx;
    const axis_params *p = job->params;
    switch (job->dtype) {
    case NXE_DTYPE_I32:
        nxe_ref_i32_cumprod(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                            end);
        break;
    case NXE_DTYPE_I64:
        nxe_ref_i64_cumprod(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                            end);
        break;
    case NXE_DTYPE_F64:
        nxe_ref_f64_cumprod(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                            end);
        break;
    default:
        nxe_ref_f32_cumprod(job->x, job->y, p->axis_size, p->inner, p->flag_a, p->flag_b, begin,
                            end);
        break;
    }
}

static nxe_status cumprod_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    const axis_params *p = params;
    return axis_run(p, inputs, outputs, num_outputs, pool, cumprod_lanes, (double)p->axis_size);
}

static nxe_status cumsum_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    const axis_params *p = params;
    return axis_run(p, inputs, outputs, num_outputs, pool, cumsum_lanes, (double)p->axis_size);
}

/* ---- schemas ------------------------------------------------------------------------------ */

/* f32 and f64; both compute in double. */
#define FLOAT_DTYPES (NXE_MASK_FLOAT | NXE_MASK(NXE_DTYPE_F64))
#define NUMERIC_DTYPES (FLOAT_DTYPES | NXE_MASK_INDEX)
#define ORDERED_DTYPES (NUMERIC_DTYPES | NXE_MASK(NXE_DTYPE_BOOL))

static const nxe_op_param_info numeric_inputs[] = {
    {"X", "Input of any rank.", NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info ordered_inputs[] = {
    {"X", "Input of any rank.", ORDERED_DTYPES, 0, 0},
};
static const nxe_op_param_info float_inputs[] = {
    {"X", "Input of any rank.", FLOAT_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_sum_outputs[] = {
    {"Y",
     "Sums over the reduced dimensions (0 where they hold no element), same dtype as X; "
     "integer sums wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_mean_outputs[] = {
    {"Y", "Means over the reduced dimensions (NaN where they hold no element).", FLOAT_DTYPES, 0,
     0},
};
static const nxe_op_param_info reduce_max_outputs[] = {
    {"Y",
     "Maxima over the reduced dimensions, same dtype as X: NaN if any element is NaN; over no "
     "element -inf, the lowest integer, or false.",
     ORDERED_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_min_outputs[] = {
    {"Y",
     "Minima over the reduced dimensions, same dtype as X: NaN if any element is NaN; over no "
     "element +inf, the highest integer, or true.",
     ORDERED_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_prod_outputs[] = {
    {"Y",
     "Products over the reduced dimensions (1 where they hold no element), same dtype as X; "
     "integer products wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_l1_outputs[] = {
    {"Y",
     "Sums of |X| over the reduced dimensions (0 where they hold no element); integer sums "
     "wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_l2_outputs[] = {
    {"Y", "sqrt(sum(X^2)) over the reduced dimensions (0 where they hold no element).",
     FLOAT_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_sum_square_outputs[] = {
    {"Y",
     "Sums of X^2 over the reduced dimensions (0 where they hold no element); integer sums "
     "wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_log_sum_outputs[] = {
    {"Y", "log(sum(X)) over the reduced dimensions (-inf where they hold no element).",
     FLOAT_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_log_sum_exp_outputs[] = {
    {"Y",
     "log(sum(exp(X))) over the reduced dimensions, computed as max + log(sum(exp(X - max))) so "
     "large inputs do not overflow (-inf where they hold no element).",
     FLOAT_DTYPES, 0, 0},
};
static const nxe_op_attr_info reduce_attrs[] = {
    {"axes",
     "Dimensions to reduce, each at most once; negative counts from the end. Empty reduces "
     "every dimension.",
     NXE_ATTR_INTS, "[]"},
    {"keepdims", "1 keeps each reduced dimension with size 1; 0 removes it.", NXE_ATTR_INT, "1"},
};

static const nxe_op_param_info arg_inputs[] = {
    {"X", "Input of rank >= 1 whose axis is not empty.", NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info arg_max_outputs[] = {
    {"Y", "Index along axis of the largest element (NaN counts as the largest).",
     NXE_MASK(NXE_DTYPE_I64), 0, 0},
};
static const nxe_op_param_info arg_min_outputs[] = {
    {"Y", "Index along axis of the smallest element (NaN counts as the smallest).",
     NXE_MASK(NXE_DTYPE_I64), 0, 0},
};
static const nxe_op_attr_info arg_attrs[] = {
    {"axis", "The dimension searched; negative counts from the end.", NXE_ATTR_INT, "0"},
    {"keepdims", "1 keeps the searched dimension with size 1; 0 removes it.", NXE_ATTR_INT, "1"},
    {"select_last_index", "On ties, 0 picks the first index, 1 the last.", NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info top_k_inputs[] = {
    {"X", "Input of rank >= 1.", NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info top_k_outputs[] = {
    {"Values", "The k selected elements along axis, best first, same dtype as X.", NUMERIC_DTYPES,
     0, 0},
    {"Indices", "Their indices along axis in X.", NXE_MASK(NXE_DTYPE_I64), 0, 0},
};
static const nxe_op_attr_info top_k_attrs[] = {
    {"k", "How many elements to select along axis, in [0, X.shape[axis]].", NXE_ATTR_INT, NULL},
    {"axis", "The dimension searched; negative counts from the end.", NXE_ATTR_INT, "-1"},
    {"largest",
     "1 selects the largest elements in descending order, 0 the smallest in ascending order. "
     "Equal elements keep index order; NaN sorts above every number.",
     NXE_ATTR_INT, "1"},
    {"sorted", "Accepted as 0 or 1; the output is sorted either way (0 leaves the order open).",
     NXE_ATTR_INT, "1"},
};

static const nxe_op_param_info cumsum_inputs[] = {
    {"X", "Input of rank >= 1.", NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_param_info cumsum_outputs[] = {
    {"Y",
     "Running sums along axis, shaped like X. Floating sums accumulate in double; integer sums "
     "wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_attr_info cumsum_attrs[] = {
    {"axis", "The dimension summed along; negative counts from the end.", NXE_ATTR_INT, "0"},
    {"exclusive", "1 leaves each element out of its own sum (the first sum is 0).", NXE_ATTR_INT,
     "0"},
    {"reverse", "1 sums from the last element towards the first.", NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info cumprod_outputs[] = {
    {"Y",
     "Running products along axis, shaped like X. Floating products accumulate in double; "
     "integer products wrap around on overflow.",
     NUMERIC_DTYPES, 0, 0},
};
static const nxe_op_attr_info cumprod_attrs[] = {
    {"axis", "The dimension multiplied along; negative counts from the end.", NXE_ATTR_INT, "0"},
    {"exclusive", "1 leaves each element out of its own product (the first product is 1).",
     NXE_ATTR_INT, "0"},
    {"reverse", "1 multiplies from the last element towards the first.", NXE_ATTR_INT, "0"},
};

#define REDUCE_DEF(name, summary, inputs, outputs, infer)                                          \
    {NXE_INFO(name, summary, inputs, outputs, reduce_attrs), sizeof(reduce_params), infer,         \
     reduce_run}

static const nxe_op_def reduce_defs[] = {
    REDUCE_DEF("ReduceSum", "Sum over the given axes (all axes by default).", numeric_inputs,
               reduce_sum_outputs, reduce_sum_infer),
    REDUCE_DEF("ReduceMean", "Arithmetic mean over the given axes (all axes by default).",
               float_inputs, reduce_mean_outputs, reduce_mean_infer),
    REDUCE_DEF("ReduceMax", "Maximum over the given axes (all axes by default).", ordered_inputs,
               reduce_max_outputs, reduce_max_infer),
    REDUCE_DEF("ReduceMin", "Minimum over the given axes (all axes by default).", ordered_inputs,
               reduce_min_outputs, reduce_min_infer),
    REDUCE_DEF("ReduceProd", "Product over the given axes (all axes by default).", numeric_inputs,
               reduce_prod_outputs, reduce_prod_infer),
    REDUCE_DEF("ReduceL1", "Sum of absolute values over the given axes (all axes by default).",
               numeric_inputs, reduce_l1_outputs, reduce_l1_infer),
    REDUCE_DEF("ReduceL2", "Euclidean norm over the given axes (all axes by default).",
               float_inputs, reduce_l2_outputs, reduce_l2_infer),
    REDUCE_DEF("ReduceSumSquare", "Sum of squares over the given axes (all axes by default).",
               numeric_inputs, reduce_sum_square_outputs, reduce_sum_square_infer),
    REDUCE_DEF("ReduceLogSum", "Logarithm of the sum over the given axes (all axes by default).",
               float_inputs, reduce_log_sum_outputs, reduce_log_sum_infer),
    REDUCE_DEF("ReduceLogSumExp",
               "Logarithm of the sum of exponentials over the given axes (all axes by default).",
               float_inputs, reduce_log_sum_exp_outputs, reduce_log_sum_exp_infer),
    {NXE_INFO("ArgMax", "Index of the largest element along one axis.", arg_inputs, arg_max_outputs,
              arg_attrs),
     sizeof(axis_params), arg_max_infer, arg_extreme_run},
    {NXE_INFO("ArgMin", "Index of the smallest element along one axis.", arg_inputs,
              arg_min_outputs, arg_attrs),
     sizeof(axis_params), arg_min_infer, arg_extreme_run},
    {NXE_INFO("TopK", "The k largest or smallest elements along one axis, with their indices.",
              top_k_inputs, top_k_outputs, top_k_attrs),
     sizeof(axis_params), top_k_infer, top_k_run},
    {NXE_INFO("CumSum", "Inclusive or exclusive running sums along one axis, either direction.",
              cumsum_inputs, cumsum_outputs, cumsum_attrs),
     sizeof(axis_params), cumsum_infer, cumsum_run},
    {NXE_INFO("CumProd",
              "Inclusive or exclusive running products along one axis, either direction.",
              cumsum_inputs, cumprod_outputs, cumprod_attrs),
     sizeof(axis_params), cumsum_infer, cumprod_run},
};

const nxe_op_family nxe_ops_reduce = {reduce_defs,
                                      (int32_t)(sizeof reduce_defs / sizeof reduce_defs[0])};
