/* data_movement.c — the data_movement op family: Gather, Reshape, Transpose, Concat, Split,
 * Slice, Squeeze, Unsqueeze. Shape rules and lowering to the byte-moving kernels in
 * kernels/ref; these ops never look at values, so every dtype is accepted. */
#include <string.h>

#include "ops/op_def.h"
#include "ref/data_movement.h"

_Static_assert(NXE_REF_MAX_RANK == NXE_MAX_RANK, "kernel and ABI ranks must agree");

/* Room for attribute lists: more than any valid rank, so an over-long list gets a message
 * from this file rather than a capacity failure. */
#define ATTR_CAPACITY 16
/* Bytes per parallel chunk of a copy. */
#define COPY_GRAIN_BYTES 65536

static void contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= shape[d];
    }
}

static int64_t product(const int64_t *dims, int32_t begin, int32_t end)
{
    int64_t p = 1;
    for (int32_t d = begin; d < end; d++)
        p *= dims[d];
    return p;
}

static void set_output(nxe_value *out, int32_t dtype, int32_t ndim, const int64_t *shape)
{
    out->dtype = dtype;
    out->ndim = ndim;
    memcpy(out->shape, shape, (size_t)ndim * sizeof(int64_t));
}

static nxe_status get_ints(const nxe_node *node, const char *name, int64_t *values,
                           int32_t *count)
{
    return nxe_node_attr_ints(node, name, values, ATTR_CAPACITY, count);
}

static nxe_status rank_too_high(const nxe_node *node, int32_t ndim)
{
    return nxe_node_error(node, NXE_ERROR_UNSUPPORTED, "output rank %d exceeds the maximum %d",
                          ndim, NXE_MAX_RANK);
}

/* ---- Dense copies: Reshape, Squeeze, Unsqueeze ------------------------------------------ */

typedef struct copy_params {
    int64_t bytes;
} copy_params;

static nxe_status copy_finish(const nxe_value *in, nxe_value *out, int32_t ndim,
                              const int64_t *shape, void *params)
{
    set_output(out, in->dtype, ndim, shape);
    ((copy_params *)params)->bytes = (int64_t)nxe_value_bytes(in);
    return NXE_OK;
}

static nxe_status copy_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    (void)pool;
    nxe_ref_x8_copy((size_t)((const copy_params *)params)->bytes, inputs[0].data,
                    outputs[0].data);
    return NXE_OK;
}

static nxe_status reshape_infer(const nxe_node *node, const nxe_value *inputs,
                                int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t target[ATTR_CAPACITY];
    int32_t count = 0;
    int64_t allowzero = 0;
    nxe_status status = get_ints(node, "shape", target, &count);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "allowzero", &allowzero);
    if (status != NXE_OK)
        return status;
    if (count > NXE_MAX_RANK)
        return rank_too_high(node, count);

    int64_t shape[NXE_MAX_RANK];
    int32_t inferred = -1;
    bool has_zero = false;
    for (int32_t i = 0; i < count; i++) {
        const int64_t v = target[i];
        if (v == -1) {
            if (inferred >= 0)
                return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                      "attribute 'shape' has -1 at both %d and %d; at most one "
                                      "dimension can be inferred",
                                      inferred, i);
            inferred = i;
            shape[i] = 1;
        } else if (v == 0 && !allowzero) {
            if (i >= x->ndim)
                return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                      "attribute 'shape'[%d] is 0 (copy the input dimension) but "
                                      "input 'data' has rank %d",
                                      i, x->ndim);
            shape[i] = x->shape[i];
        } else if (v < 0) {
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'shape'[%d] is %lld; dimensions must be >= -1", i,
                                  (long long)v);
        } else {
            has_zero |= v == 0;
            shape[i] = v;
        }
    }
    if (allowzero && has_zero && inferred >= 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'shape' combines 0 (allowzero=1) with -1; the inferred "
                              "dimension would be ambiguous");

    const int64_t in_numel = nxe_value_numel(x);
    int64_t known = 0;
    if (!nxe_shape_numel(count, shape, &known))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'shape' has more elements than int64 can count");
    if (inferred >= 0) {
        if (known == 0 || in_numel % known != 0)
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "cannot infer the -1 in attribute 'shape': input 'data' has %lld "
                                  "elements, the other dimensions hold %lld",
                                  (long long)in_numel, (long long)known);
        shape[inferred] = in_numel / known;
        known = in_numel;
    }
    if (known != in_numel) {
        char a[96], b[96];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "cannot reshape input 'data' of shape %s (%lld elements) to %s (%lld "
                              "elements)",
                              nxe_shape_str(x->ndim, x->shape, a, sizeof a), (long long)in_numel,
                              nxe_shape_str(count, shape, b, sizeof b), (long long)known);
    }
    return copy_finish(x, &outputs[0], count, shape, params);
}

/* Marks each listed axis (normalized against `ndim`) in `seen`; fails on a repeat. */
static nxe_status mark_axes(const nxe_node *node, const char *attr, const int64_t *axes,
                            int32_t count, int32_t ndim, bool *seen, int32_t *normalized)
{
    for (int32_t d = 0; d < ndim; d++)
        seen[d] = false;
    for (int32_t i = 0; i < count; i++) {
        int32_t axis;
        nxe_status status = nxe_normalize_axis(node, axes[i], ndim, &axis);
        if (status != NXE_OK)
            return status;
        if (seen[axis])
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute '%s' names axis %d twice", attr, axis);
        seen[axis] = true;
        if (normalized)
            normalized[i] = axis;
    }
    return NXE_OK;
}

static nxe_status squeeze_infer(const nxe_node *node, const nxe_value *inputs,
                                int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t axes[ATTR_CAPACITY];
    int32_t count = 0;
    nxe_status status = get_ints(node, "axes", axes, &count);
    if (status != NXE_OK)
        return status;
    bool drop[NXE_MAX_RANK];
    if (count == 0) {
        for (int32_t d = 0; d < x->ndim; d++)
            drop[d] = x->shape[d] == 1;
    } else {
        if (count > x->ndim)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'axes' lists %d axes but input 'data' has rank %d",
                                  count, x->ndim);
        status = mark_axes(node, "axes", axes, count, x->ndim, drop, NULL);
        if (status != NXE_OK)
            return status;
        for (int32_t d = 0; d < x->ndim; d++)
            if (drop[d] && x->shape[d] != 1)
                return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                      "cannot squeeze axis %d of input 'data': its size is %lld, "
                                      "not 1",
                                      d, (long long)x->shape[d]);
    }
    int64_t shape[NXE_MAX_RANK];
    int32_t ndim = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (!drop[d])
            shape[ndim++] = x->shape[d];
    return copy_finish(x, &outputs[0], ndim, shape, params);
}

static nxe_status unsqueeze_infer(const nxe_node *node, const nxe_value *inputs,
                                  int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                  void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t axes[ATTR_CAPACITY];
    int32_t count = 0;
    nxe_status status = get_ints(node, "axes", axes, &count);
    if (status != NXE_OK)
        return status;
    if (count == 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'axes' is empty; name at least one axis to insert");
    const int32_t ndim = x->ndim + count;
    if (ndim > NXE_MAX_RANK)
        return rank_too_high(node, ndim);
    bool inserted[NXE_MAX_RANK];
    status = mark_axes(node, "axes", axes, count, ndim, inserted, NULL);
    if (status != NXE_OK)
        return status;
    int64_t shape[NXE_MAX_RANK];
    for (int32_t d = 0, from = 0; d < ndim; d++)
        shape[d] = inserted[d] ? 1 : x->shape[from++];
    return copy_finish(x, &outputs[0], ndim, shape, params);
}

/* ---- Strided views: Transpose, Slice ---------------------------------------------------- */

typedef struct view_params {
    int32_t elem_size;
    int32_t ndim;       /* after merging dimensions; >= 1 */
    int64_t numel;
    int64_t offset;     /* elements from the input's start to the view's first element */
    int64_t shape[NXE_MAX_RANK];
    int64_t strides[NXE_MAX_RANK]; /* input elements per step along each output dimension */
} view_params;

/* Records the view, dropping size-1 dimensions and merging neighbours that the input walks
 * contiguously relative to each other, so an identity view becomes one plain loop. */
static void view_finish(view_params *p, const nxe_value *in, nxe_value *out, int32_t ndim,
                        const int64_t *shape, const int64_t *strides, int64_t offset)
{
    set_output(out, in->dtype, ndim, shape);
    p->elem_size = (int32_t)nxe_dtype_size(in->dtype);
    p->numel = nxe_value_numel(out);
    p->offset = offset;
    int32_t m = 0;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        if (m > 0 && p->strides[m - 1] == strides[d] * shape[d]) {
            p->shape[m - 1] *= shape[d];
            p->strides[m - 1] = strides[d];
            continue;
        }
        p->shape[m] = shape[d];
        p->strides[m] = strides[d];
        m++;
    }
    if (m == 0) {
        p->shape[0] = 1;
        p->strides[0] = 1;
        m = 1;
    }
    p->ndim = m;
}

typedef struct view_job {
    const view_params *p;
    const void *src;
    void *dst;
} view_job;

#define VIEW_RANGE(bits)                                                                      \
    static void view_range_x##bits(void *ctx, int64_t begin, int64_t end)                     \
    {                                                                                         \
        const view_job *job = ctx;                                                            \
        nxe_ref_x##bits##_copy_strided(job->p->ndim, job->p->shape, job->p->strides,          \
                                       job->src, job->dst, begin, end);                       \
    }
VIEW_RANGE(8)
VIEW_RANGE(16)
VIEW_RANGE(32)
VIEW_RANGE(64)
#undef VIEW_RANGE

static nxe_status view_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const view_params *p = params;
    if (p->numel == 0)
        return NXE_OK;
    nxe_range_fn fn;
    switch (p->elem_size) {
    case 1: fn = view_range_x8; break;
    case 2: fn = view_range_x16; break;
    case 4: fn = view_range_x32; break;
    case 8: fn = view_range_x64; break;
    default:
        return nxe_error(NXE_ERROR_INTERNAL, "strided copy: element size %d reached run",
                         p->elem_size);
    }
    view_job job = {p, (const unsigned char *)inputs[0].data + p->offset * p->elem_size,
                    outputs[0].data};
    nxe_parallel_for(pool, p->numel, COPY_GRAIN_BYTES / p->elem_size, fn, &job);
    return NXE_OK;
}

static nxe_status transpose_infer(const nxe_node *node, const nxe_value *inputs,
                                  int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                  void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t perm_attr[ATTR_CAPACITY];
    int32_t count = 0;
    nxe_status status = get_ints(node, "perm", perm_attr, &count);
    if (status != NXE_OK)
        return status;
    int32_t perm[NXE_MAX_RANK];
    if (count == 0) {
        for (int32_t d = 0; d < x->ndim; d++)
            perm[d] = x->ndim - 1 - d;
    } else {
        if (count != x->ndim)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'perm' has %d entries but input 'data' has rank %d",
                                  count, x->ndim);
        bool seen[NXE_MAX_RANK];
        status = mark_axes(node, "perm", perm_attr, count, x->ndim, seen, perm);
        if (status != NXE_OK)
            return status;
    }
    int64_t in_strides[NXE_MAX_RANK], shape[NXE_MAX_RANK], strides[NXE_MAX_RANK];
    contiguous_strides(x->ndim, x->shape, in_strides);
    for (int32_t d = 0; d < x->ndim; d++) {
        shape[d] = x->shape[perm[d]];
        strides[d] = in_strides[perm[d]];
    }
    view_finish(params, x, &outputs[0], x->ndim, shape, strides, 0);
    return NXE_OK;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static nxe_status slice_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t starts[ATTR_CAPACITY], ends[ATTR_CAPACITY], axes[ATTR_CAPACITY],
        steps[ATTR_CAPACITY];
    int32_t n_starts = 0, n_ends = 0, n_axes = 0, n_steps = 0;
    nxe_status status = get_ints(node, "starts", starts, &n_starts);
    if (status == NXE_OK)
        status = get_ints(node, "ends", ends, &n_ends);
    if (status == NXE_OK)
        status = get_ints(node, "axes", axes, &n_axes);
    if (status == NXE_OK)
        status = get_ints(node, "steps", steps, &n_steps);
    if (status != NXE_OK)
        return status;
    if (n_ends != n_starts || (n_axes != 0 && n_axes != n_starts) ||
        (n_steps != 0 && n_steps != n_starts))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attributes 'starts' (%d), 'ends' (%d), 'axes' (%d) and 'steps' "
                              "(%d) must have equal lengths ('axes' and 'steps' may be empty)",
                              n_starts, n_ends, n_axes, n_steps);
    if (n_starts > x->ndim)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "%d slices given but input 'data' has rank %d", n_starts, x->ndim);
    if (n_axes == 0)
        for (int32_t i = 0; i < n_starts; i++)
            axes[i] = i;
    bool seen[NXE_MAX_RANK];
    int32_t axis_of[NXE_MAX_RANK];
    status = mark_axes(node, "axes", axes, n_starts, x->ndim, seen, axis_of);
    if (status != NXE_OK)
        return status;

    int64_t shape[NXE_MAX_RANK], strides[NXE_MAX_RANK], in_strides[NXE_MAX_RANK];
    contiguous_strides(x->ndim, x->shape, in_strides);
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof shape[0]);
    memcpy(strides, in_strides, (size_t)x->ndim * sizeof strides[0]);
    int64_t offset = 0;
    for (int32_t i = 0; i < n_starts; i++) {
        const int32_t axis = axis_of[i];
        const int64_t dim = x->shape[axis];
        const int64_t step = n_steps ? steps[i] : 1;
        if (step == 0)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'steps'[%d] is 0", i);
        /* ONNX rules: negative bounds count from the end, then clamp to what the direction
         * can reach. dim >= 0, so adding it to a negative bound cannot overflow. */
        int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
        int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
        int64_t count;
        if (step > 0) {
            start = clamp(start, 0, dim);
            end = clamp(end, 0, dim);
            count = end > start ? (end - start - 1) / step + 1 : 0;
        } else {
            start = clamp(start, 0, dim - 1);
            end = clamp(end, -1, dim - 1);
            const uint64_t magnitude = (uint64_t)0 - (uint64_t)step;
            count = start > end ? (int64_t)((uint64_t)(start - end - 1) / magnitude) + 1 : 0;
        }
        shape[axis] = count;
        if (count > 0)
            offset += start * in_strides[axis];
        /* With two or more elements |step| < dim, so the product stays within the tensor. */
        strides[axis] = count > 1 ? step * in_strides[axis] : 0;
    }
    view_finish(params, x, &outputs[0], x->ndim, shape, strides, offset);
    return NXE_OK;
}

/* ---- Concat, Split ---------------------------------------------------------------------- */

typedef struct axis_params {
    int32_t axis; /* normalized */
} axis_params;

/* The whole tensor `v` seen as [outer, v.shape[axis] * inner bytes]. */
static void rows_around_axis(const nxe_value *v, int32_t axis, int64_t *outer, size_t *inner)
{
    *outer = product(v->shape, 0, axis);
    *inner = (size_t)product(v->shape, axis + 1, v->ndim) * nxe_dtype_size(v->dtype);
}

static nxe_status concat_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_outputs;
    if (num_inputs < 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT, "no inputs are bound");
    const nxe_value *first = &inputs[0];
    int64_t axis_attr;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK)
        return status;
    if (first->ndim == 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'inputs'[0] is a scalar; Concat needs rank >= 1");
    int32_t axis;
    status = nxe_normalize_axis(node, axis_attr, first->ndim, &axis);
    if (status != NXE_OK)
        return status;
    int64_t shape[NXE_MAX_RANK];
    memcpy(shape, first->shape, (size_t)first->ndim * sizeof shape[0]);
    for (int32_t i = 1; i < num_inputs; i++) {
        const nxe_value *v = &inputs[i];
        if (v->dtype != first->dtype)
            return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                                  "input 'inputs'[%d] is %s but 'inputs'[0] is %s", i,
                                  nxe_dtype_name(v->dtype), nxe_dtype_name(first->dtype));
        bool same = v->ndim == first->ndim;
        for (int32_t d = 0; same && d < first->ndim; d++)
            same = d == axis || v->shape[d] == first->shape[d];
        if (!same) {
            char a[96], b[96];
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input 'inputs'[%d] has shape %s, which does not match "
                                  "'inputs'[0] %s outside axis %d",
                                  i, nxe_shape_str(v->ndim, v->shape, a, sizeof a),
                                  nxe_shape_str(first->ndim, first->shape, b, sizeof b), axis);
        }
        if (v->shape[axis] > INT64_MAX - shape[axis])
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "concatenated axis %d overflows int64", axis);
        shape[axis] += v->shape[axis];
    }
    set_output(&outputs[0], first->dtype, first->ndim, shape);
    ((axis_params *)params)->axis = axis;
    return NXE_OK;
}

static nxe_status concat_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_outputs;
    (void)pool;
    const int32_t axis = ((const axis_params *)params)->axis;
    const nxe_value *out = &outputs[0];
    if (nxe_value_numel(out) == 0)
        return NXE_OK;
    int64_t outer;
    size_t inner;
    rows_around_axis(out, axis, &outer, &inner);
    const size_t out_row = (size_t)out->shape[axis] * inner;
    unsigned char *dst = out->data;
    for (int32_t i = 0; i < num_inputs; i++) {
        const size_t chunk = (size_t)inputs[i].shape[axis] * inner;
        nxe_ref_x8_copy_rows(outer, chunk, inputs[i].data, chunk, dst, out_row);
        dst += chunk;
    }
    return NXE_OK;
}

/* Turns the 'split' attribute (count entries, or none) into one size per output, in place. */
static nxe_status split_sizes(const nxe_node *node, int32_t axis, int64_t dim, int64_t *split,
                              int32_t count, int32_t num_outputs)
{
    if (count == 0) {
        /* Equal parts as in ONNX: when dim does not divide evenly the last part is smaller. */
        const int64_t part = dim / num_outputs + (dim % num_outputs != 0);
        const int64_t last = dim - part * (num_outputs - 1);
        if (last < 0 || (last == 0 && dim > 0))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "axis %d of size %lld cannot be split into %d parts", axis,
                                  (long long)dim, num_outputs);
        for (int32_t i = 0; i < num_outputs; i++)
            split[i] = i + 1 < num_outputs ? part : last;
        return NXE_OK;
    }
    if (count != num_outputs)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'split' has %d entries but %d outputs are bound", count,
                              num_outputs);
    int64_t sum = 0;
    for (int32_t i = 0; i < count; i++) {
        if (split[i] < 0 || split[i] > dim - sum)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'split'[%d] is %lld; sizes must be >= 0 and sum to "
                                  "%lld, the size of axis %d",
                                  i, (long long)split[i], (long long)dim, axis);
        sum += split[i];
    }
    if (sum != dim)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'split' sums to %lld but axis %d has size %lld",
                              (long long)sum, axis, (long long)dim);
    return NXE_OK;
}

static nxe_status split_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    const nxe_value *x = &inputs[0];
    if (num_outputs < 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT, "no outputs are bound");
    int64_t axis_attr;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK)
        return status;
    if (x->ndim == 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'input' is a scalar; Split needs rank >= 1");
    int32_t axis;
    status = nxe_normalize_axis(node, axis_attr, x->ndim, &axis);
    if (status != NXE_OK)
        return status;
    const int64_t dim = x->shape[axis];
    /* The split list is as long as the outputs, which may outnumber any fixed buffer; one
     * spare entry lets a list that is too long reach the count check below. */
    const int32_t capacity = num_outputs + 1;
    int64_t *split = nxe_alloc((size_t)capacity * sizeof *split);
    if (!split)
        return nxe_node_error(node, NXE_ERROR_OUT_OF_MEMORY, "no memory for attribute 'split'");
    int32_t count = 0;
    status = nxe_node_attr_ints(node, "split", split, capacity, &count);
    if (status == NXE_OK) {
        status = split_sizes(node, axis, dim, split, count, num_outputs);
        for (int32_t i = 0; status == NXE_OK && i < num_outputs; i++) {
            set_output(&outputs[i], x->dtype, x->ndim, x->shape);
            outputs[i].shape[axis] = split[i];
        }
    }
    nxe_free(split);
    if (status == NXE_OK)
        ((axis_params *)params)->axis = axis;
    return status;
}

static nxe_status split_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)pool;
    const int32_t axis = ((const axis_params *)params)->axis;
    const nxe_value *x = &inputs[0];
    if (nxe_value_numel(x) == 0)
        return NXE_OK;
    int64_t outer;
    size_t inner;
    rows_around_axis(x, axis, &outer, &inner);
    const size_t in_row = (size_t)x->shape[axis] * inner;
    const unsigned char *src = x->data;
    for (int32_t i = 0; i < num_outputs; i++) {
        const size_t chunk = (size_t)outputs[i].shape[axis] * inner;
        nxe_ref_x8_copy_rows(outer, chunk, src, in_row, outputs[i].data, chunk);
        src += chunk;
    }
    return NXE_OK;
}

/* ---- Gather ----------------------------------------------------------------------------- */

typedef struct gather_params {
    int32_t index_dtype;
    int32_t axis;
    int64_t outer;       /* product of data dims before axis */
    int64_t axis_dim;
    int64_t num_indices;
    int64_t row_bytes;   /* bytes of data after axis: one gathered row */
} gather_params;

static nxe_status gather_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *data = &inputs[0], *indices = &inputs[1];
    gather_params *p = params;
    int64_t axis_attr;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK)
        return status;
    if (data->ndim == 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'data' is a scalar; Gather needs rank >= 1");
    int32_t axis;
    status = nxe_normalize_axis(node, axis_attr, data->ndim, &axis);
    if (status != NXE_OK)
        return status;
    const int32_t ndim = data->ndim + indices->ndim - 1;
    if (ndim > NXE_MAX_RANK)
        return rank_too_high(node, ndim);
    int64_t shape[NXE_MAX_RANK];
    int32_t d = 0;
    for (int32_t i = 0; i < axis; i++)
        shape[d++] = data->shape[i];
    for (int32_t i = 0; i < indices->ndim; i++)
        shape[d++] = indices->shape[i];
    for (int32_t i = axis + 1; i < data->ndim; i++)
        shape[d++] = data->shape[i];
    set_output(&outputs[0], data->dtype, ndim, shape);

    p->index_dtype = indices->dtype;
    p->axis = axis;
    p->outer = product(data->shape, 0, axis);
    p->axis_dim = data->shape[axis];
    p->num_indices = nxe_value_numel(indices);
    p->row_bytes =
        product(data->shape, axis + 1, data->ndim) * (int64_t)nxe_dtype_size(data->dtype);
    return NXE_OK;
}

typedef struct gather_job {
    const gather_params *p;
    const void *data;
    const void *indices;
    void *out;
} gather_job;

static void gather_range(void *ctx, int64_t begin, int64_t end)
{
    const gather_job *job = ctx;
    const gather_params *p = job->p;
    if (p->index_dtype == NXE_DTYPE_I32)
        nxe_ref_i32_gather(job->data, p->axis_dim, (size_t)p->row_bytes, job->indices,
                           p->num_indices, job->out, begin, end);
    else
        nxe_ref_i64_gather(job->data, p->axis_dim, (size_t)p->row_bytes, job->indices,
                           p->num_indices, job->out, begin, end);
}

static nxe_status gather_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const gather_params *p = params;
    const void *indices = inputs[1].data;
    const int64_t bad = p->index_dtype == NXE_DTYPE_I32
                            ? nxe_ref_i32_find_bad_index(p->num_indices, indices, p->axis_dim)
                            : nxe_ref_i64_find_bad_index(p->num_indices, indices, p->axis_dim);
    if (bad >= 0) {
        const int64_t value = p->index_dtype == NXE_DTYPE_I32 ? ((const int32_t *)indices)[bad]
                                                              : ((const int64_t *)indices)[bad];
        return nxe_error(NXE_ERROR_RUNTIME,
                         "'indices' element %lld is %lld, outside the valid range "
                         "[%lld, %lld] for axis %d of 'data' (size %lld)",
                         (long long)bad, (long long)value, (long long)-p->axis_dim,
                         (long long)p->axis_dim - 1, p->axis, (long long)p->axis_dim);
    }
    const int64_t rows = p->outer * p->num_indices;
    if (rows == 0 || p->row_bytes == 0)
        return NXE_OK;
    gather_job job = {p, inputs[0].data, indices, outputs[0].data};
    const int64_t grain = p->row_bytes >= COPY_GRAIN_BYTES ? 1 : COPY_GRAIN_BYTES / p->row_bytes;
    nxe_parallel_for(pool, rows, grain, gather_range, &job);
    return NXE_OK;
}

/* ---- Schemas ---------------------------------------------------------------------------- */

static const nxe_op_param_info gather_inputs[] = {
    {"data", "tensor to gather from, any dtype, rank >= 1", NXE_MASK_ALL, 0, 0},
    {"indices",
     "positions along 'axis', i32 or i64, any shape; negative values count from the end. "
     "Checked at run time: a value outside [-n, n-1] fails the run with NXE_ERROR_RUNTIME",
     NXE_MASK_INDEX, 0, 0},
};
static const nxe_op_param_info gather_outputs[] = {
    {"output",
     "dtype of data; shape data.shape[:axis] + indices.shape + data.shape[axis+1:] "
     "(rank r + q - 1)",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info gather_attrs[] = {
    {"axis", "axis of 'data' to gather along; negative counts from the end", NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info reshape_inputs[] = {
    {"data", "tensor to reshape, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info reshape_outputs[] = {
    {"reshaped", "same elements in the same row-major order, new shape", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info reshape_attrs[] = {
    {"shape",
     "target shape (at most 6 dims): 0 copies the input dimension at the same position "
     "(unless allowzero), -1 (at most one) is inferred from the element count",
     NXE_ATTR_INTS, NULL},
    {"allowzero", "1: a 0 in 'shape' is a literal zero-size dimension instead of a copy",
     NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info transpose_inputs[] = {
    {"data", "tensor to permute, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info transpose_outputs[] = {
    {"transposed", "output dimension i is input dimension perm[i]", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info transpose_attrs[] = {
    {"perm", "a permutation of the input axes; empty reverses them", NXE_ATTR_INTS, "[]"},
};

static const nxe_op_param_info concat_inputs[] = {
    {"inputs",
     "one or more tensors of one dtype and rank, equal in every dimension except 'axis'",
     NXE_MASK_ALL, 0, 1},
};
static const nxe_op_param_info concat_outputs[] = {
    {"concat_result", "the inputs joined along 'axis' in order", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info concat_attrs[] = {
    {"axis", "axis to join along; negative counts from the end", NXE_ATTR_INT, NULL},
};

static const nxe_op_param_info split_inputs[] = {
    {"input", "tensor to split, any dtype, rank >= 1", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info split_outputs[] = {
    {"outputs", "the consecutive parts along 'axis'; as many as are bound", NXE_MASK_ALL, 0, 1},
};
static const nxe_op_attr_info split_attrs[] = {
    {"axis", "axis to split along; negative counts from the end", NXE_ATTR_INT, "0"},
    {"split",
     "size of each part, one per bound output, summing to the axis size; empty: equal parts "
     "of ceil(n / outputs), the last part taking the remainder",
     NXE_ATTR_INTS, "[]"},
};

static const nxe_op_param_info slice_inputs[] = {
    {"data", "tensor to slice, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info slice_outputs[] = {
    {"output", "the selected elements", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info slice_attrs[] = {
    {"starts",
     "first index per sliced axis; negative counts from the end; clamped to [0, n] "
     "(step > 0) or [0, n-1] (step < 0)",
     NXE_ATTR_INTS, NULL},
    {"ends",
     "exclusive end per sliced axis; negative counts from the end; clamped to [0, n] "
     "(step > 0) or [-1, n-1] (step < 0), so INT64_MAX / INT64_MIN mean 'to the end'",
     NXE_ATTR_INTS, NULL},
    {"axes", "axes that starts/ends refer to, distinct; empty: 0 .. len(starts)-1",
     NXE_ATTR_INTS, "[]"},
    {"steps", "stride per sliced axis, nonzero, negative walks backwards; empty: all 1",
     NXE_ATTR_INTS, "[]"},
};

static const nxe_op_param_info squeeze_inputs[] = {
    {"data", "tensor to squeeze, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info squeeze_outputs[] = {
    {"squeezed", "same elements without the removed size-1 dimensions", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info squeeze_attrs[] = {
    {"axes", "size-1 axes to remove, distinct; empty removes every size-1 axis",
     NXE_ATTR_INTS, "[]"},
};

static const nxe_op_param_info unsqueeze_inputs[] = {
    {"data", "tensor to expand, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info unsqueeze_outputs[] = {
    {"expanded", "same elements with size-1 dimensions inserted", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info unsqueeze_attrs[] = {
    {"axes",
     "positions of the new size-1 axes in the output (rank r + len(axes)), distinct; negative "
     "counts from the end of the output",
     NXE_ATTR_INTS, NULL},
};

static const nxe_op_def data_movement_defs[] = {
    {NXE_INFO("Gather", "Picks entries of 'data' along one axis at the given indices.",
              gather_inputs, gather_outputs, gather_attrs),
     sizeof(gather_params), gather_infer, gather_run},
    {NXE_INFO("Reshape", "Gives the elements of 'data' a new shape with the same count.",
              reshape_inputs, reshape_outputs, reshape_attrs),
     sizeof(copy_params), reshape_infer, copy_run},
    {NXE_INFO("Transpose", "Permutes the axes of 'data'.", transpose_inputs, transpose_outputs,
              transpose_attrs),
     sizeof(view_params), transpose_infer, view_run},
    {NXE_INFO("Concat", "Joins tensors along one axis.", concat_inputs, concat_outputs,
              concat_attrs),
     sizeof(axis_params), concat_infer, concat_run},
    {NXE_INFO("Split", "Cuts a tensor into consecutive parts along one axis.", split_inputs,
              split_outputs, split_attrs),
     sizeof(axis_params), split_infer, split_run},
    {NXE_INFO("Slice",
              "Takes a strided range along some axes (ONNX Slice, with the ranges as "
              "attributes).",
              slice_inputs, slice_outputs, slice_attrs),
     sizeof(view_params), slice_infer, view_run},
    {NXE_INFO("Squeeze", "Removes size-1 axes.", squeeze_inputs, squeeze_outputs,
              squeeze_attrs),
     sizeof(copy_params), squeeze_infer, copy_run},
    {NXE_INFO("Unsqueeze", "Inserts size-1 axes.", unsqueeze_inputs, unsqueeze_outputs,
              unsqueeze_attrs),
     sizeof(copy_params), unsqueeze_infer, copy_run},
};

const nxe_op_family nxe_ops_data_movement = {
    data_movement_defs, (int32_t)(sizeof data_movement_defs / sizeof data_movement_defs[0])};
