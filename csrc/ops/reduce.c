/* reduce.c — the reduce op family: ReduceSum and ReduceMean over any set of axes. Schemas,
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

static nxe_status reduce_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    reduce_params *params = params_out;
    const nxe_value *x = &inputs[0];
    int64_t axes[16];
    int32_t num_axes = 0;
    int64_t keepdims = 0;
    nxe_status status = nxe_node_attr_ints(node, "axes", axes, 16, &num_axes);
    if (status == NXE_OK) status = nxe_node_attr_int(node, "keepdims", &keepdims);
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

typedef struct reduce_job {
    const reduce_params *params;
    int32_t dtype;
    const void *x;
    void *y;
} reduce_job;

static void reduce_sum_range(void *ctx, int64_t begin, int64_t end)
{
    const reduce_job *job = ctx;
    const nxe_reduce_geometry *g = &job->params->geometry;
    switch (job->dtype) {
    case NXE_DTYPE_I32:
        nxe_ref_i32_reduce_sum(g, job->x, job->y, begin, end);
        break;
    case NXE_DTYPE_I64:
        nxe_ref_i64_reduce_sum(g, job->x, job->y, begin, end);
        break;
    default:
        nxe_ref_f32_reduce_sum(g, job->x, job->y, begin, end);
        break;
    }
}

static void reduce_mean_range(void *ctx, int64_t begin, int64_t end)
{
    const reduce_job *job = ctx;
    nxe_ref_f32_reduce_mean(&job->params->geometry, job->x, job->y, begin, end);
}

static nxe_status reduce_run(const reduce_params *p, const nxe_value *inputs, nxe_value *outputs,
                             nxe_thread_pool *pool, nxe_range_fn fn)
{
    reduce_job job = {p, inputs[0].dtype, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->out_count, nxe_parallel_grain((double)p->geometry.reduced_count, REDUCE_TASK_WORK), fn,
                     &job);
    return NXE_OK;
}

static nxe_status reduce_sum_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return reduce_run(params, inputs, outputs, pool, reduce_sum_range);
}

static nxe_status reduce_mean_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return reduce_run(params, inputs, outputs, pool, reduce_mean_range);
}

#define REDUCE_SUM_DTYPES (NXE_MASK_FLOAT | NXE_MASK_INDEX)

static const nxe_op_param_info reduce_sum_inputs[] = {
    {"X", "Input of any rank.", REDUCE_SUM_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_sum_outputs[] = {
    {"Y",
     "Sums over the reduced dimensions, same dtype as X; integer sums wrap around on overflow.",
     REDUCE_SUM_DTYPES, 0, 0},
};
static const nxe_op_param_info reduce_mean_inputs[] = {
    {"X", "Input of any rank.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info reduce_mean_outputs[] = {
    {"Y", "Means over the reduced dimensions (NaN where they hold no element).", NXE_MASK_FLOAT,
     0, 0},
};
static const nxe_op_attr_info reduce_attrs[] = {
    {"axes",
     "Dimensions to reduce, each at most once; negative counts from the end. Empty reduces "
     "every dimension.",
     NXE_ATTR_INTS, "[]"},
    {"keepdims", "1 keeps each reduced dimension with size 1; 0 removes it.", NXE_ATTR_INT, "1"},
};

static const nxe_op_def reduce_defs[] = {
    {NXE_INFO("ReduceSum", "Sum over the given axes (all axes by default).", reduce_sum_inputs,
              reduce_sum_outputs, reduce_attrs),
     sizeof(reduce_params), reduce_infer, reduce_sum_run},
    {NXE_INFO("ReduceMean", "Arithmetic mean over the given axes (all axes by default).",
              reduce_mean_inputs, reduce_mean_outputs, reduce_attrs),
     sizeof(reduce_params), reduce_infer, reduce_mean_run},
};

const nxe_op_family nxe_ops_reduce = {reduce_defs,
                                      (int32_t)(sizeof reduce_defs / sizeof reduce_defs[0])};
