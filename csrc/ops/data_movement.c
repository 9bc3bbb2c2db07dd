/* data_movement.c — the data_movement op family: Gather, Reshape, Transpose, Concat, Split,
 * Slice, Squeeze, Unsqueeze, Pad, Tile, Expand, SpaceToDepth, GatherElements, ScatterElements,
 * GatherND, ScatterND, OneHot, Trilu, ReverseSequence, BitCast. Shape rules and lowering to the byte-moving kernels in
 * kernels/ref; only scatter reductions look at values, so every dtype is accepted. */
#include <stdio.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/cast.h"
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

static nxe_status get_ints(const nxe_node *node, const char *name, int64_t *values, int32_t *count)
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
    nxe_ref_x8_copy((size_t)((const copy_params *)params)->bytes, inputs[0].data, outputs[0].data);
    return NXE_OK;
}

/* BitCast: the same bytes read as another dtype of the same element size. */
static nxe_status bit_cast_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t to = 0;
    nxe_status status = nxe_node_attr_int(node, "to", &to);
    if (status != NXE_OK)
        return status;
    if (to <= NXE_DTYPE_NONE || to >= NXE_DTYPE_COUNT)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'to' is %lld, not a dtype (expected %d..%d, enum "
                              "nxe_dtype)",
                              (long long)to, NXE_DTYPE_NONE + 1, NXE_DTYPE_COUNT - 1);
    const size_t from_size = nxe_dtype_size(x->dtype);
    const size_t to_size = nxe_dtype_size((int32_t)to);
    if (from_size != to_size)
        return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                              "input dtype %s (%zu bytes) and 'to' dtype %s (%zu bytes) differ "
                              "in size; only same-size bit casts are supported",
                              nxe_dtype_name(x->dtype), from_size, nxe_dtype_name((int32_t)to),
                              to_size);
    if (to == NXE_DTYPE_BOOL && x->dtype != NXE_DTYPE_BOOL)
        return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                              "bit cast from %s to bool is not supported (bytes other than 0 "
                              "and 1 are not bool values)",
                              nxe_dtype_name(x->dtype));
    set_output(&outputs[0], (int32_t)to, x->ndim, x->shape);
    ((copy_params *)params)->bytes = (int64_t)nxe_value_bytes(x);
    return NXE_OK;
}

static nxe_status reshape_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params)
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

static nxe_status squeeze_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params)
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

static nxe_status unsqueeze_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, void *params)
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
    int32_t ndim; /* after merging dimensions; >= 1 */
    int64_t numel;
    int64_t offset; /* elements from the input's start to the view's first element */
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
        /* Checked: inference refuses an oversized output only after this rule has run. */
        int64_t span, merged;
        if (m > 0 && nxe_checked_mul_i64(strides[d], shape[d], &span) &&
            p->strides[m - 1] == span && nxe_checked_mul_i64(p->shape[m - 1], shape[d], &merged)) {
            p->shape[m - 1] = merged;
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

#define VIEW_RANGE(bits)                                                                           \
    static void view_range_x##bits(void *ctx, int64_t begin, int64_t end)                          \
    {                                                                                              \
        const view_job *job = ctx;                                                                 \
        nxe_ref_x##bits##_copy_strided(job->p->ndim, job->p->shape, job->p->strides, job->src,     \
                                       job->dst, begin, end);                                      \
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

static nxe_status transpose_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, void *params)
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
        /* ONNX (and onnxruntime) take perm entries in [0, rank): no negative axes here. */
        for (int32_t i = 0; i < count; i++)
            if (perm_attr[i] < 0)
                return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                      "attribute 'perm'[%d] is %lld; entries must be in [0, %d)", i,
                                      (long long)perm_attr[i], x->ndim);
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
    int64_t starts[ATTR_CAPACITY], ends[ATTR_CAPACITY], axes[ATTR_CAPACITY], steps[ATTR_CAPACITY];
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
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT, "attribute 'steps'[%d] is 0",
                                  i);
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
    int64_t outer; /* product of data dims before axis */
    int64_t axis_dim;
    int64_t num_indices;
    int64_t row_bytes; /* bytes of data after axis: one gathered row */
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

/* ---- Shared by the ops below ------------------------------------------------------------ */

/* enum nxe_ref_type (cast.h) follows enum nxe_dtype from F32 on. */
static int32_t ref_type(int32_t dtype)
{
    return dtype - NXE_DTYPE_F32;
}

/* The bytes of `value` as one element of `dtype` (floats round to nearest; integers take an
 * integral value exactly when it fits in int64 and keep its low bits, else saturate). */
static void value_bytes(double value, int32_t dtype, unsigned char out[8])
{
    memset(out, 0, 8);
    const bool integer = dtype != NXE_DTYPE_F32 && dtype != NXE_DTYPE_F16 &&
                         dtype != NXE_DTYPE_BF16 && dtype != NXE_DTYPE_BOOL &&
                         dtype != NXE_DTYPE_F64;
    if (integer && value >= -9223372036854775808.0 && value < 9223372036854775808.0 &&
        value == (double)(int64_t)value) {
        const int64_t v = (int64_t)value;
        nxe_ref_cast(NXE_REF_I64, &v, ref_type(dtype), out, 0, 1);
        return;
    }
    nxe_ref_cast(NXE_REF_F64, &value, ref_type(dtype), out, 0, 1);
}

static nxe_status parse_reduction(const nxe_node *node, const nxe_value *data, int32_t *out)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *text;
    nxe_status status = nxe_node_attr_string(node, "reduction", &text);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < 5; i++) {
        if (strcmp(text, names[i]) == 0) {
            if (i != NXE_REF_REDUCE_NONE && data->dtype == NXE_DTYPE_BOOL)
                return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                                      "reduction '%s' is not defined for bool data", text);
            if (i != NXE_REF_REDUCE_NONE &&
                (data->dtype == NXE_DTYPE_F64 || data->dtype == NXE_DTYPE_U16 ||
                 data->dtype == NXE_DTYPE_U32 || data->dtype == NXE_DTYPE_U64))
                return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                                      "reduction '%s' is not implemented for %s data", text,
                                      nxe_dtype_name(data->dtype));
            *out = i;
            return NXE_OK;
        }
    }
    return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                          "attribute 'reduction' is '%s'; expected none, add, mul, max or min",
                          text);
}

static nxe_status index_error(const char *what, int64_t position, int64_t value, int64_t dim)
{
    return nxe_error(NXE_ERROR_RUNTIME,
                     "'indices' element %lld is %lld, outside the valid range [%lld, %lld] of %s "
                     "(size %lld)",
                     (long long)position, (long long)value, (long long)-dim, (long long)dim - 1,
                     what, (long long)dim);
}

/* Fails the run when an index along one axis of size dim is out of range. */
static nxe_status check_axis_indices(const nxe_value *indices, int64_t dim, int32_t axis)
{
    const int64_t n = nxe_value_numel(indices);
    const int64_t bad = indices->dtype == NXE_DTYPE_I32
                            ? nxe_ref_i32_find_bad_index(n, indices->data, dim)
                            : nxe_ref_i64_find_bad_index(n, indices->data, dim);
    if (bad < 0)
        return NXE_OK;
    char what[32];
    snprintf(what, sizeof what, "axis %d of 'data'", axis);
    return index_error(
        what, bad, nxe_ref_load_index(indices->data, indices->dtype == NXE_DTYPE_I64, bad), dim);
}

/* ---- Pad and Tile ----------------------------------------------------------------------- */

typedef struct pad_params {
    int32_t ndim; /* >= 1: a scalar is padded as shape [1] with no pads */
    int32_t mode; /* enum nxe_ref_pad_mode */
    int32_t elem_size;
    int64_t rows; /* output rows (all but the last dimension) */
    int64_t in_shape[NXE_MAX_RANK];
    int64_t out_shape[NXE_MAX_RANK];
    int64_t begin[NXE_MAX_RANK];
    unsigned char fill[8];
} pad_params;

/* Completes params from in_shape/out_shape/begin, checking that every input axis that will
 * be read from is non-empty. */
static nxe_status pad_finish(const nxe_node *node, const nxe_value *x, nxe_value *out,
                             pad_params *p)
{
    int64_t numel = 0;
    if (!nxe_shape_numel(p->ndim, p->out_shape, &numel))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "the output has more elements than int64 can count");
    for (int32_t d = 0; d < p->ndim && numel > 0; d++)
        if (p->in_shape[d] == 0 && (p->mode != NXE_REF_PAD_CONSTANT))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "axis %d of the input is empty, so there is nothing to repeat "
                                  "into a non-empty output",
                                  d);
    p->elem_size = (int32_t)nxe_dtype_size(x->dtype);
    p->rows = numel == 0 ? 0 : numel / p->out_shape[p->ndim - 1];
    if (x->ndim == 0)
        set_output(out, x->dtype, 0, p->out_shape);
    else
        set_output(out, x->dtype, p->ndim, p->out_shape);
    return NXE_OK;
}

static void pad_prepare_rank(const nxe_value *x, pad_params *p)
{
    p->ndim = x->ndim == 0 ? 1 : x->ndim;
    for (int32_t d = 0; d < p->ndim; d++)
        p->in_shape[d] = x->ndim == 0 ? 1 : x->shape[d];
}

static nxe_status pad_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    const nxe_value *x = &inputs[0];
    pad_params *p = params;
    int64_t pads[ATTR_CAPACITY];
    int32_t count = 0;
    const char *mode;
    double value = 0.0;
    nxe_status status = get_ints(node, "pads", pads, &count);
    if (status == NXE_OK)
        status = nxe_node_attr_string(node, "mode", &mode);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "value", &value);
    if (status != NXE_OK)
        return status;
    p->mode = -1;
    for (int32_t i = 0; i < 4; i++)
        if (strcmp(mode, modes[i]) == 0)
            p->mode = i;
    if (p->mode < 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'mode' is '%s'; expected constant, reflect, edge or wrap",
                              mode);
    if (count != 2 * x->ndim)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'pads' has %d entries; input 'data' of rank %d needs %d "
                              "(all begins, then all ends)",
                              count, x->ndim, 2 * x->ndim);
    pad_prepare_rank(x, p);
    for (int32_t d = 0; d < x->ndim; d++) {
        const int64_t n = x->shape[d], before = pads[d], after = pads[d + x->ndim];
        if (before < -n || after < -n || before > INT64_MAX / 4 || after > INT64_MAX / 4 ||
            n + before + after < 0)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'pads' gives axis %d (size %lld) pads %lld and %lld; "
                                  "a negative pad may remove at most the whole axis",
                                  d, (long long)n, (long long)before, (long long)after);
        /* Reflection mirrors once without repeating the edge (as onnxruntime): a pad must be
           shorter than the axis. */
        if (p->mode == NXE_REF_PAD_REFLECT &&
            ((before > 0 && before >= n) || (after > 0 && after >= n)))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'pads' gives axis %d (size %lld) pads %lld and %lld; "
                                  "reflect pads must be smaller than the axis",
                                  d, (long long)n, (long long)before, (long long)after);
        p->begin[d] = before;
        p->out_shape[d] = n + before + after;
    }
    if (x->ndim == 0) {
        p->begin[0] = 0;
        p->out_shape[0] = 1;
    }
    value_bytes(value, x->dtype, p->fill);
    return pad_finish(node, x, &outputs[0], p);
}

static nxe_status tile_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    pad_params *p = params;
    int64_t repeats[ATTR_CAPACITY];
    int32_t count = 0;
    nxe_status status = get_ints(node, "repeats", repeats, &count);
    if (status != NXE_OK)
        return status;
    if (count != x->ndim)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'repeats' has %d entries but input 'input' has rank %d",
                              count, x->ndim);
    pad_prepare_rank(x, p);
    p->mode = NXE_REF_PAD_WRAP;
    p->out_shape[0] = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (repeats[d] < 0 || (x->shape[d] > 0 && repeats[d] > INT64_MAX / x->shape[d]))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'repeats'[%d] is %lld; repeats must be >= 0 and "
                                  "the result must fit in int64",
                                  d, (long long)repeats[d]);
        p->out_shape[d] = x->shape[d] * repeats[d];
    }
    return pad_finish(node, x, &outputs[0], p);
}

typedef struct pad_job {
    const pad_params *p;
    const void *src;
    void *dst;
} pad_job;

static void pad_range(void *ctx, int64_t begin, int64_t end)
{
    const pad_job *job = ctx;
    const pad_params *p = job->p;
    nxe_ref_x8_pad(p->ndim, p->in_shape, p->out_shape, p->begin, p->mode, (size_t)p->elem_size,
                   p->fill, job->src, job->dst, begin, end);
}

static nxe_status pad_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                          nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const pad_params *p = params;
    if (p->rows == 0)
        return NXE_OK;
    pad_job job = {p, inputs[0].data, outputs[0].data};
    const double row_bytes = (double)p->out_shape[p->ndim - 1] * p->elem_size;
    nxe_parallel_for(pool, p->rows, nxe_parallel_grain(row_bytes, COPY_GRAIN_BYTES), pad_range,
                     &job);
    return NXE_OK;
}

/* ---- Expand and SpaceToDepth: strided views --------------------------------------------- */

static nxe_status expand_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t target[ATTR_CAPACITY];
    int32_t count = 0;
    nxe_status status = get_ints(node, "shape", target, &count);
    if (status != NXE_OK)
        return status;
    if (count > NXE_MAX_RANK)
        return rank_too_high(node, count);
    for (int32_t i = 0; i < count; i++)
        if (target[i] < 0)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'shape'[%d] is %lld; dimensions must be >= 0", i,
                                  (long long)target[i]);
    int64_t shape[NXE_MAX_RANK];
    int32_t ndim;
    status = nxe_broadcast_shapes(node, x->ndim, x->shape, count, target, &ndim, shape);
    if (status != NXE_OK)
        return status;
    int64_t in_strides[NXE_MAX_RANK], strides[NXE_MAX_RANK];
    contiguous_strides(x->ndim, x->shape, in_strides);
    for (int32_t d = 0; d < ndim; d++) {
        const int32_t i = d - (ndim - x->ndim);
        strides[d] = i < 0 || x->shape[i] == 1 ? 0 : in_strides[i];
    }
    view_finish(params, x, &outputs[0], ndim, shape, strides, 0);
    return NXE_OK;
}

static nxe_status space_to_depth_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    int64_t bs;
    const char *mode;
    nxe_status status = nxe_node_attr_int(node, "blocksize", &bs);
    if (status == NXE_OK)
        status = nxe_node_attr_string(node, "mode", &mode);
    if (status != NXE_OK)
        return status;
    const bool crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'mode' is '%s'; expected DCR or CRD", mode);
    if (x->ndim != 4)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'input' has rank %d; SpaceToDepth needs NCHW (rank 4)",
                              x->ndim);
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    if (bs < 1 || h % bs != 0 || w % bs != 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'blocksize' is %lld; it must be >= 1 and divide the "
                              "height %lld and width %lld",
                              (long long)bs, (long long)h, (long long)w);
    /* DCR: output channel (by * bs + bx) * C + c at (y, x) reads input (c, y * bs + by,
     * x * bs + bx); CRD: output channel (c * bs + by) * bs + bx reads the same element. */
    const int64_t dcr_shape[6] = {n, bs, bs, c, h / bs, w / bs};
    const int64_t dcr_strides[6] = {c * h * w, w, 1, h * w, bs * w, bs};
    const int64_t crd_shape[6] = {n, c, bs, bs, h / bs, w / bs};
    const int64_t crd_strides[6] = {c * h * w, h * w, w, 1, bs * w, bs};
    view_finish(params, x, &outputs[0], 6, crd ? crd_shape : dcr_shape,
                crd ? crd_strides : dcr_strides, 0);
    const int64_t shape[4] = {n, c * bs * bs, h / bs, w / bs};
    set_output(&outputs[0], x->dtype, 4, shape);
    return NXE_OK;
}

/* ---- GatherElements and ScatterElements ------------------------------------------------- */

typedef struct elements_params {
    int32_t ndim;
    int32_t axis;
    int32_t is64;
    int32_t elem_size;
    int32_t type;      /* enum nxe_ref_type of data */
    int32_t reduction; /* enum nxe_ref_reduction (scatter) */
    int64_t axis_dim;
    int64_t numel; /* index elements */
    int64_t data_bytes;
    int64_t index_shape[NXE_MAX_RANK];
    int64_t data_strides[NXE_MAX_RANK];
} elements_params;

static nxe_status elements_infer_common(const nxe_node *node, const nxe_value *data,
                                        const nxe_value *indices, elements_params *p)
{
    int64_t axis_attr;
    nxe_status status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status != NXE_OK)
        return status;
    if (data->ndim == 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'data' is a scalar; rank >= 1 is needed");
    if (indices->ndim != data->ndim)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'indices' has rank %d but 'data' has rank %d; they must "
                              "match",
                              indices->ndim, data->ndim);
    int32_t axis;
    status = nxe_normalize_axis(node, axis_attr, data->ndim, &axis);
    if (status != NXE_OK)
        return status;
    for (int32_t d = 0; d < data->ndim; d++)
        if (d != axis && indices->shape[d] > data->shape[d]) {
            char a[96], b[96];
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input 'indices' of shape %s exceeds 'data' %s on axis %d "
                                  "(only the axis %d may differ freely)",
                                  nxe_shape_str(indices->ndim, indices->shape, a, sizeof a),
                                  nxe_shape_str(data->ndim, data->shape, b, sizeof b), d, axis);
        }
    p->ndim = data->ndim;
    p->axis = axis;
    p->is64 = indices->dtype == NXE_DTYPE_I64;
    p->elem_size = (int32_t)nxe_dtype_size(data->dtype);
    p->type = ref_type(data->dtype);
    p->axis_dim = data->shape[axis];
    p->numel = nxe_value_numel(indices);
    p->data_bytes = (int64_t)nxe_value_bytes(data);
    memcpy(p->index_shape, indices->shape, (size_t)indices->ndim * sizeof(int64_t));
    contiguous_strides(data->ndim, data->shape, p->data_strides);
    return NXE_OK;
}

static nxe_status gather_elements_infer(const nxe_node *node, const nxe_value *inputs,
                                        int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                        void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    nxe_status status = elements_infer_common(node, &inputs[0], &inputs[1], params);
    if (status == NXE_OK)
        set_output(&outputs[0], inputs[0].dtype, inputs[1].ndim, inputs[1].shape);
    return status;
}

typedef struct elements_job {
    const elements_params *p;
    const void *data;
    const void *indices;
    void *out;
} elements_job;

static void gather_elements_range(void *ctx, int64_t begin, int64_t end)
{
    const elements_job *job = ctx;
    const elements_params *p = job->p;
    nxe_ref_x8_gather_elements(p->ndim, p->index_shape, p->data_strides, p->axis, p->axis_dim,
                               job->indices, p->is64, (size_t)p->elem_size, job->data, job->out,
                               begin, end);
}

static nxe_status gather_elements_run(const void *params, const nxe_value *inputs,
                                      int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                      nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const elements_params *p = params;
    nxe_status status = check_axis_indices(&inputs[1], p->axis_dim, p->axis);
    if (status != NXE_OK || p->numel == 0)
        return status;
    elements_job job = {p, inputs[0].data, inputs[1].data, outputs[0].data};
    nxe_parallel_for(pool, p->numel, nxe_parallel_grain(64.0, COPY_GRAIN_BYTES),
                     gather_elements_range, &job);
    return NXE_OK;
}

static nxe_status scatter_elements_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *data = &inputs[0], *indices = &inputs[1], *updates = &inputs[2];
    elements_params *p = params;
    nxe_status status = elements_infer_common(node, data, indices, p);
    if (status == NXE_OK)
        status = parse_reduction(node, data, &p->reduction);
    if (status != NXE_OK)
        return status;
    if (updates->dtype != data->dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "input 'updates' is %s but 'data' is %s",
                              nxe_dtype_name(updates->dtype), nxe_dtype_name(data->dtype));
    bool same = updates->ndim == indices->ndim;
    for (int32_t d = 0; same && d < indices->ndim; d++)
        same = updates->shape[d] == indices->shape[d];
    if (!same) {
        char a[96], b[96];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'updates' has shape %s but 'indices' has %s; they must match",
                              nxe_shape_str(updates->ndim, updates->shape, a, sizeof a),
                              nxe_shape_str(indices->ndim, indices->shape, b, sizeof b));
    }
    set_output(&outputs[0], data->dtype, data->ndim, data->shape);
    return NXE_OK;
}

static nxe_status scatter_elements_run(const void *params, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    (void)pool; /* sequential: duplicate indices must resolve in index order */
    const elements_params *p = params;
    nxe_status status = check_axis_indices(&inputs[1], p->axis_dim, p->axis);
    if (status != NXE_OK)
        return status;
    nxe_ref_x8_copy((size_t)p->data_bytes, inputs[0].data, outputs[0].data);
    if (p->numel > 0)
        nxe_ref_scatter_elements(p->ndim, p->index_shape, p->data_strides, p->axis, p->axis_dim,
                                 inputs[1].data, p->is64, p->type, p->reduction, inputs[2].data,
                                 outputs[0].data);
    return NXE_OK;
}

/* ---- GatherND and ScatterND ------------------------------------------------------------- */

typedef struct nd_params {
    int32_t k; /* length of an index tuple */
    int32_t is64;
    int32_t elem_size;
    int32_t type;
    int32_t reduction;
    int64_t num_tuples;
    int64_t tuples_per_batch;
    int64_t batch_stride; /* elements of data per batch */
    int64_t slice_elems;
    int64_t data_bytes;
    int64_t dims[NXE_MAX_RANK];
    int64_t strides[NXE_MAX_RANK];
} nd_params;

/* Tuple length of `indices` and the common params; batch_dims leading axes are batches. */
static nxe_status nd_infer_common(const nxe_node *node, const nxe_value *data,
                                  const nxe_value *indices, int32_t batch_dims, nd_params *p)
{
    if (indices->ndim < 1)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'indices' is a scalar; its last axis holds index tuples");
    const int64_t k = indices->shape[indices->ndim - 1];
    if (k < 1 || k > data->ndim - batch_dims)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "index tuples have length %lld (last axis of 'indices'); it must "
                              "be in [1, %d], the rank of 'data' after %d batch axes",
                              (long long)k, data->ndim - batch_dims, batch_dims);
    for (int32_t d = 0; d < batch_dims; d++)
        if (indices->shape[d] != data->shape[d])
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "batch axis %d has size %lld in 'indices' but %lld in 'data'", d,
                                  (long long)indices->shape[d], (long long)data->shape[d]);
    int64_t strides[NXE_MAX_RANK];
    contiguous_strides(data->ndim, data->shape, strides);
    p->k = (int32_t)k;
    p->is64 = indices->dtype == NXE_DTYPE_I64;
    p->elem_size = (int32_t)nxe_dtype_size(data->dtype);
    p->type = ref_type(data->dtype);
    p->num_tuples = product(indices->shape, 0, indices->ndim - 1);
    p->tuples_per_batch = product(indices->shape, batch_dims, indices->ndim - 1);
    p->batch_stride = product(data->shape, batch_dims, data->ndim);
    p->slice_elems = product(data->shape, batch_dims + p->k, data->ndim);
    p->data_bytes = (int64_t)nxe_value_bytes(data);
    for (int32_t c = 0; c < p->k; c++) {
        p->dims[c] = data->shape[batch_dims + c];
        p->strides[c] = strides[batch_dims + c];
    }
    return NXE_OK;
}

static nxe_status gather_nd_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *data = &inputs[0], *indices = &inputs[1];
    int64_t batch_dims;
    nxe_status status = nxe_node_attr_int(node, "batch_dims", &batch_dims);
    if (status != NXE_OK)
        return status;
    const int32_t min_rank = data->ndim < indices->ndim ? data->ndim : indices->ndim;
    if (batch_dims < 0 || batch_dims >= min_rank)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'batch_dims' is %lld; it must be in [0, %d), below the "
                              "ranks of 'data' and 'indices'",
                              (long long)batch_dims, min_rank);
    nd_params *p = params;
    status = nd_infer_common(node, data, indices, (int32_t)batch_dims, p);
    if (status != NXE_OK)
        return status;
    const int32_t ndim = indices->ndim - 1 + data->ndim - (int32_t)batch_dims - p->k;
    if (ndim > NXE_MAX_RANK)
        return rank_too_high(node, ndim);
    int64_t shape[NXE_MAX_RANK];
    int32_t d = 0;
    for (int32_t i = 0; i < indices->ndim - 1; i++)
        shape[d++] = indices->shape[i];
    for (int32_t i = (int32_t)batch_dims + p->k; i < data->ndim; i++)
        shape[d++] = data->shape[i];
    set_output(&outputs[0], data->dtype, ndim, shape);
    return NXE_OK;
}

static nxe_status check_tuples(const nd_params *p, const nxe_value *indices)
{
    const int64_t bad =
        nxe_ref_find_bad_tuple(p->num_tuples, p->k, indices->data, p->is64, p->dims);
    if (bad < 0)
        return NXE_OK;
    char what[48];
    snprintf(what, sizeof what, "tuple component %d", (int)(bad % p->k));
    return index_error(what, bad, nxe_ref_load_index(indices->data, p->is64, bad),
                       p->dims[bad % p->k]);
}

typedef struct nd_job {
    const nd_params *p;
    const void *data;
    const void *indices;
    void *out;
} nd_job;

static void gather_nd_range(void *ctx, int64_t begin, int64_t end)
{
    const nd_job *job = ctx;
    const nd_params *p = job->p;
    nxe_ref_gather_nd(p->k, p->dims, p->strides, p->batch_stride, p->tuples_per_batch, job->indices,
                      p->is64, (size_t)p->elem_size, (size_t)(p->slice_elems * p->elem_size),
                      job->data, job->out, begin, end);
}

static nxe_status gather_nd_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const nd_params *p = params;
    nxe_status status = check_tuples(p, &inputs[1]);
    if (status != NXE_OK || p->num_tuples == 0 || p->slice_elems == 0)
        return status;
    nd_job job = {p, inputs[0].data, inputs[1].data, outputs[0].data};
    const double slice_bytes = (double)(p->slice_elems * p->elem_size);
    nxe_parallel_for(pool, p->num_tuples, nxe_parallel_grain(slice_bytes, COPY_GRAIN_BYTES),
                     gather_nd_range, &job);
    return NXE_OK;
}

static nxe_status scatter_nd_infer(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *data = &inputs[0], *indices = &inputs[1], *updates = &inputs[2];
    nd_params *p = params;
    nxe_status status = nd_infer_common(node, data, indices, 0, p);
    if (status == NXE_OK)
        status = parse_reduction(node, data, &p->reduction);
    if (status != NXE_OK)
        return status;
    if (updates->dtype != data->dtype)
        return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH,
                              "input 'updates' is %s but 'data' is %s",
                              nxe_dtype_name(updates->dtype), nxe_dtype_name(data->dtype));
    int64_t expected[2 * NXE_MAX_RANK];
    int32_t ndim = 0;
    for (int32_t i = 0; i < indices->ndim - 1; i++)
        expected[ndim++] = indices->shape[i];
    for (int32_t i = p->k; i < data->ndim; i++)
        expected[ndim++] = data->shape[i];
    bool same = updates->ndim == ndim;
    for (int32_t d = 0; same && d < ndim; d++)
        same = updates->shape[d] == expected[d];
    if (!same) {
        char a[96], b[160];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'updates' has shape %s; indices.shape[:-1] + "
                              "data.shape[k:] is %s",
                              nxe_shape_str(updates->ndim, updates->shape, a, sizeof a),
                              nxe_shape_str(ndim, expected, b, sizeof b));
    }
    set_output(&outputs[0], data->dtype, data->ndim, data->shape);
    return NXE_OK;
}

static nxe_status scatter_nd_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                 nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    (void)pool; /* sequential: duplicate tuples must resolve in tuple order */
    const nd_params *p = params;
    nxe_status status = check_tuples(p, &inputs[1]);
    if (status != NXE_OK)
        return status;
    /* The output may be data itself: a key/value cache updated in place
     * (runtime/variable_writes.c). */
    if (outputs[0].data != inputs[0].data)
        nxe_ref_x8_copy((size_t)p->data_bytes, inputs[0].data, outputs[0].data);
    nxe_ref_scatter_nd(p->k, p->dims, p->strides, p->num_tuples, inputs[1].data, p->is64, p->type,
                       p->reduction, p->slice_elems, inputs[2].data, outputs[0].data);
    return NXE_OK;
}

/* ---- OneHot ----------------------------------------------------------------------------- */

typedef struct one_hot_params {
    int32_t is64;
    int32_t elem_size;
    int64_t depth;
    int64_t inner;
    int64_t num_indices;
    unsigned char on[8];
    unsigned char off[8];
} one_hot_params;

static nxe_status one_hot_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                                nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *indices = &inputs[0];
    one_hot_params *p = params;
    int64_t depth, axis_attr;
    double on, off;
    const char *dtype_name;
    nxe_status status = nxe_node_attr_int(node, "depth", &depth);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "axis", &axis_attr);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "on_value", &on);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "off_value", &off);
    if (status == NXE_OK)
        status = nxe_node_attr_string(node, "dtype", &dtype_name);
    if (status != NXE_OK)
        return status;
    int32_t dtype = NXE_DTYPE_NONE;
    for (int32_t dt = NXE_DTYPE_F32; dt < NXE_DTYPE_COUNT; dt++)
        if (strcmp(nxe_dtype_name(dt), dtype_name) == 0)
            dtype = dt;
    if (dtype == NXE_DTYPE_NONE)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'dtype' is '%s', which is not an nxe dtype", dtype_name);
    const int32_t ndim = indices->ndim + 1;
    if (ndim > NXE_MAX_RANK)
        return rank_too_high(node, ndim);
    int32_t axis;
    status = nxe_normalize_axis(node, axis_attr, ndim, &axis);
    if (status != NXE_OK)
        return status;
    int64_t shape[NXE_MAX_RANK];
    for (int32_t d = 0, from = 0; d < ndim; d++)
        shape[d] = d == axis ? depth : indices->shape[from++];
    int64_t numel;
    if (depth < 1 || !nxe_shape_numel(ndim, shape, &numel))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'depth' is %lld; it must be >= 1 and the output must "
                              "fit in int64",
                              (long long)depth);
    set_output(&outputs[0], dtype, ndim, shape);
    p->is64 = indices->dtype == NXE_DTYPE_I64;
    p->elem_size = (int32_t)nxe_dtype_size(dtype);
    p->depth = depth;
    p->inner = product(indices->shape, axis, indices->ndim);
    p->num_indices = nxe_value_numel(indices);
    value_bytes(on, dtype, p->on);
    value_bytes(off, dtype, p->off);
    return NXE_OK;
}

typedef struct one_hot_job {
    const one_hot_params *p;
    const void *indices;
    void *out;
} one_hot_job;

static void one_hot_range(void *ctx, int64_t begin, int64_t end)
{
    const one_hot_job *job = ctx;
    const one_hot_params *p = job->p;
    nxe_ref_one_hot(p->depth, p->inner, job->indices, p->is64, (size_t)p->elem_size, p->on, p->off,
                    job->out, begin, end);
}

static nxe_status one_hot_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const one_hot_params *p = params;
    if (p->num_indices == 0)
        return NXE_OK;
    one_hot_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->num_indices,
                     nxe_parallel_grain((double)(p->depth * p->elem_size), COPY_GRAIN_BYTES),
                     one_hot_range, &job);
    return NXE_OK;
}

/* ---- Trilu ------------------------------------------------------------------------------ */

typedef struct trilu_params {
    int32_t upper;
    int32_t elem_size;
    int64_t k;
    int64_t rows;
    int64_t cols;
    int64_t total_rows;
} trilu_params;

static nxe_status trilu_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    trilu_params *p = params;
    int64_t upper;
    nxe_status status = nxe_node_attr_int(node, "upper", &upper);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "k", &p->k);
    if (status != NXE_OK)
        return status;
    if (x->ndim < 2)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'input' has rank %d; Trilu needs rank >= 2", x->ndim);
    p->upper = upper != 0;
    p->elem_size = (int32_t)nxe_dtype_size(x->dtype);
    p->rows = x->shape[x->ndim - 2];
    p->cols = x->shape[x->ndim - 1];
    p->total_rows = product(x->shape, 0, x->ndim - 1);
    set_output(&outputs[0], x->dtype, x->ndim, x->shape);
    return NXE_OK;
}

typedef struct trilu_job {
    const trilu_params *p;
    const void *src;
    void *dst;
} trilu_job;

static void trilu_range(void *ctx, int64_t begin, int64_t end)
{
    const trilu_job *job = ctx;
    const trilu_params *p = job->p;
    nxe_ref_trilu(p->rows, p->cols, p->upper, p->k, (size_t)p->elem_size, job->src, job->dst, begin,
                  end);
}

static nxe_status trilu_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const trilu_params *p = params;
    if (p->total_rows == 0 || p->cols == 0)
        return NXE_OK;
    trilu_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->total_rows,
                     nxe_parallel_grain((double)(p->cols * p->elem_size), COPY_GRAIN_BYTES),
                     trilu_range, &job);
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
    {"inputs", "one or more tensors of one dtype and rank, equal in every dimension except 'axis'",
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
    {"axes", "axes that starts/ends refer to, distinct; empty: 0 .. len(starts)-1", NXE_ATTR_INTS,
     "[]"},
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
    {"axes", "size-1 axes to remove, distinct; empty removes every size-1 axis", NXE_ATTR_INTS,
     "[]"},
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

static const nxe_op_param_info pad_inputs[] = {
    {"data", "tensor to pad, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info pad_outputs[] = {
    {"output", "dtype of data; axis d has size data.shape[d] + pads[d] + pads[r + d]", NXE_MASK_ALL,
     0, 0},
};
static const nxe_op_attr_info pad_attrs[] = {
    {"pads",
     "2 * rank entries: the amount added before each axis, then after each axis (ONNX order); "
     "a negative pad removes up to the whole axis",
     NXE_ATTR_INTS, NULL},
    {"mode",
     "\"constant\" (fill with 'value'), \"reflect\" (mirror without repeating the edge), "
     "\"edge\" (repeat the edge element) or \"wrap\" (continue periodically)",
     NXE_ATTR_STRING, "\"constant\""},
    {"value",
     "fill value of constant mode, converted to the data dtype (integers: exact when integral "
     "and in int64, low bits kept; otherwise saturated)",
     NXE_ATTR_FLOAT, "0.0"},
};

static const nxe_op_param_info tile_inputs[] = {
    {"input", "tensor to repeat, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info tile_outputs[] = {
    {"output", "dtype of input; axis d has size input.shape[d] * repeats[d]", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info tile_attrs[] = {
    {"repeats", "copies along each axis, one entry per input axis, each >= 0", NXE_ATTR_INTS, NULL},
};

static const nxe_op_param_info expand_inputs[] = {
    {"input", "tensor to broadcast, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info expand_outputs[] = {
    {"output", "input broadcast (numpy rules, both ways) with 'shape'", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info expand_attrs[] = {
    {"shape",
     "shape to broadcast with; the output shape is the broadcast of input.shape and this, so a "
     "1 here keeps the input dimension",
     NXE_ATTR_INTS, NULL},
};

static const nxe_op_param_info space_to_depth_inputs[] = {
    {"input", "NCHW tensor, any dtype; H and W divisible by blocksize", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info space_to_depth_outputs[] = {
    {"output",
     "[N, C * b * b, H / b, W / b]; the channel at (y, x) that holds input "
     "(c, y * b + by, x * b + bx) is (by * b + bx) * C + c (DCR) or (c * b + by) * b + bx (CRD)",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info space_to_depth_attrs[] = {
    {"blocksize", "side b of the square blocks moved into channels, >= 1", NXE_ATTR_INT, NULL},
    {"mode",
     "channel order: \"DCR\" (block offset, then channel) or \"CRD\" (channel, then "
     "block offset)",
     NXE_ATTR_STRING, "\"DCR\""},
};

static const nxe_op_param_info gather_elements_inputs[] = {
    {"data", "tensor to gather from, any dtype, rank >= 1", NXE_MASK_ALL, 0, 0},
    {"indices",
     "i32 or i64 of the rank of data, no larger than data outside 'axis'; positions along "
     "'axis', negative counting from the end. A value outside [-n, n-1] fails the run with "
     "NXE_ERROR_RUNTIME",
     NXE_MASK_INDEX, 0, 0},
};
static const nxe_op_param_info gather_elements_outputs[] = {
    {"output",
     "shape of indices; output[i][j][k] = data[indices[i][j][k]][j][k] for axis 0, and so on",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info gather_elements_attrs[] = {
    {"axis", "axis the indices select along; negative counts from the end", NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info scatter_elements_inputs[] = {
    {"data", "initial values, any dtype, rank >= 1", NXE_MASK_ALL, 0, 0},
    {"indices",
     "i32 or i64 of the rank of data, no larger than data outside 'axis'; target positions "
     "along 'axis', negative counting from the end. Out of range fails the run",
     NXE_MASK_INDEX, 0, 0},
    {"updates", "values to write, dtype of data, shape of indices", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info scatter_outputs[] = {
    {"output", "a copy of data with the updates applied in order", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info scatter_elements_attrs[] = {
    {"axis", "axis the indices select along; negative counts from the end", NXE_ATTR_INT, "0"},
    {"reduction",
     "how an update meets the value it lands on: \"none\" (replace; with duplicate indices the "
     "last in index order wins), \"add\", \"mul\", \"max\" or \"min\" (not for bool; integers "
     "wrap, f16/bf16 compute in f32)",
     NXE_ATTR_STRING, "\"none\""},
};

static const nxe_op_param_info gather_nd_inputs[] = {
    {"data", "tensor to gather from, any dtype, rank r >= 1", NXE_MASK_ALL, 0, 0},
    {"indices",
     "i32 or i64, rank q >= 1; the last axis holds index tuples of length k in [1, r - b] "
     "into the axes after the b batch axes, negative counting from the end. Out of range fails "
     "the run",
     NXE_MASK_INDEX, 0, 0},
};
static const nxe_op_param_info gather_nd_outputs[] = {
    {"output", "indices.shape[:-1] + data.shape[b + k:]: the slice each tuple selects",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info gather_nd_attrs[] = {
    {"batch_dims",
     "b leading axes shared by data and indices (equal sizes); each tuple indexes its own "
     "batch. In [0, min(q, r))",
     NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info scatter_nd_inputs[] = {
    {"data", "initial values, any dtype, rank r >= 1", NXE_MASK_ALL, 0, 0},
    {"indices",
     "i32 or i64, rank q >= 1; the last axis holds index tuples of length k in [1, r], "
     "negative counting from the end. Out of range fails the run",
     NXE_MASK_INDEX, 0, 0},
    {"updates", "dtype of data, shape indices.shape[:-1] + data.shape[k:]", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info scatter_nd_attrs[] = {
    {"reduction",
     "how an update meets the value it lands on: \"none\" (replace; with duplicate tuples the "
     "last wins), \"add\", \"mul\", \"max\" or \"min\" (not for bool; integers wrap, f16/bf16 "
     "compute in f32)",
     NXE_ATTR_STRING, "\"none\""},
};

static const nxe_op_param_info one_hot_inputs[] = {
    {"indices",
     "i32 or i64 class numbers; negative counts from depth; a value outside [-depth, depth) "
     "gives all off_value",
     NXE_MASK_INDEX, 0, 0},
};
static const nxe_op_param_info one_hot_outputs[] = {
    {"output", "dtype 'dtype'; the shape of indices with an axis of size depth inserted at 'axis'",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info one_hot_attrs[] = {
    {"depth", "number of classes, >= 1", NXE_ATTR_INT, NULL},
    {"axis", "position of the new axis in the output; negative counts from the end", NXE_ATTR_INT,
     "-1"},
    {"on_value", "value at the class position", NXE_ATTR_FLOAT, "1.0"},
    {"off_value", "value everywhere else", NXE_ATTR_FLOAT, "0.0"},
    {"dtype", "output dtype name (\"f32\", \"i64\", ...); the values are converted to it",
     NXE_ATTR_STRING, "\"f32\""},
};

static const nxe_op_param_info trilu_inputs[] = {
    {"input", "tensor of rank >= 2, any dtype; the last two axes are the matrices", NXE_MASK_ALL, 0,
     0},
};
static const nxe_op_param_info trilu_outputs[] = {
    {"output", "input with the elements outside the triangle set to zero", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info trilu_attrs[] = {
    {"upper", "1: keep (i, j) with j - i >= k (upper triangle); 0: keep j - i <= k (lower)",
     NXE_ATTR_INT, "1"},
    {"k", "diagonal offset: 0 the main diagonal, positive above it, negative below", NXE_ATTR_INT,
     "0"},
};

/* ---- ReverseSequence ------------------------------------------------------------------------ */

typedef struct reverse_sequence_params {
    int64_t dim1;  /* size of axis 1 */
    int64_t rows;  /* dim0 * dim1 */
    int64_t inner; /* elements per (axis 0, axis 1) position */
    int64_t batch;
    int64_t time;
    int32_t batch_axis;
    int32_t elem_size;
} reverse_sequence_params;

static nxe_status reverse_sequence_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0], *lens = &inputs[1];
    reverse_sequence_params *p = params;
    int64_t batch_axis = 0, time_axis = 0;
    nxe_status status = nxe_node_attr_int(node, "batch_axis", &batch_axis);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "time_axis", &time_axis);
    if (status != NXE_OK)
        return status;
    if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attributes 'batch_axis' (%lld) and 'time_axis' (%lld) must be 0 "
                              "and 1 in either order",
                              (long long)batch_axis, (long long)time_axis);
    char sx[128], sl[128];
    if (x->ndim < 2)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'input' %s must have rank >= 2",
                              nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    p->batch_axis = (int32_t)batch_axis;
    p->batch = x->shape[batch_axis];
    p->time = x->shape[time_axis];
    if (lens->ndim != 1 || lens->shape[0] != p->batch)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'sequence_lens' %s must be 1-D with one length per batch "
                              "item (%lld; input is %s)",
                              nxe_shape_str(lens->ndim, lens->shape, sl, sizeof sl),
                              (long long)p->batch, nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    if (!nxe_shape_numel(x->ndim - 2, x->shape + 2, &p->inner) ||
        !nxe_shape_numel(2, x->shape, &p->rows))
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'input' %s has more elements than int64 can count",
                              nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    p->dim1 = x->shape[1];
    p->elem_size = (int32_t)nxe_dtype_size(x->dtype);
    outputs[0].dtype = x->dtype;
    outputs[0].ndim = x->ndim;
    memcpy(outputs[0].shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    return NXE_OK;
}

typedef struct reverse_sequence_job {
    const reverse_sequence_params *p;
    const int64_t *lens;
    const void *src;
    void *dst;
} reverse_sequence_job;

static void reverse_sequence_range(void *ctx, int64_t begin, int64_t end)
{
    const reverse_sequence_job *job = ctx;
    const reverse_sequence_params *p = job->p;
    nxe_ref_x8_reverse_sequence((size_t)p->elem_size, p->dim1, p->inner, p->batch_axis, job->lens,
                                job->src, job->dst, begin, end);
}

static nxe_status reverse_sequence_run(const void *params, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const reverse_sequence_params *p = params;
    const int64_t *lens = inputs[1].data;
    const int64_t bad = nxe_ref_i64_find_bad_length(p->batch, lens, p->time);
    if (bad >= 0)
        return nxe_error(NXE_ERROR_RUNTIME,
                         "'sequence_lens' element %lld is %lld, outside "
                         "[0, %lld] (the time axis' size)",
                         (long long)bad, (long long)lens[bad], (long long)p->time);
    if (p->rows == 0 || p->inner == 0)
        return NXE_OK;
    reverse_sequence_job job = {p, lens, inputs[0].data, outputs[0].data};
    const int64_t row_bytes = p->inner * p->elem_size;
    const int64_t grain = row_bytes >= COPY_GRAIN_BYTES ? 1 : COPY_GRAIN_BYTES / row_bytes;
    nxe_parallel_for(pool, p->rows, grain, reverse_sequence_range, &job);
    return NXE_OK;
}

static const nxe_op_param_info reverse_sequence_inputs[] = {
    {"input", "tensor of rank >= 2, any dtype; axes 0 and 1 are the batch and time axes",
     NXE_MASK_ALL, 0, 0},
    {"sequence_lens",
     "i64 length per batch item, each in [0, time size] (checked at run time: another value "
     "fails the run with NXE_ERROR_RUNTIME); 0 and 1 leave the item as it is",
     NXE_MASK(NXE_DTYPE_I64), 0, 0},
};
static const nxe_op_param_info reverse_sequence_outputs[] = {
    {"Y", "dtype and shape of input", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info reverse_sequence_attrs[] = {
    {"batch_axis", "the batch axis: 0 or 1, not time_axis", NXE_ATTR_INT, "1"},
    {"time_axis", "the time axis: 0 or 1, not batch_axis", NXE_ATTR_INT, "0"},
};

static const nxe_op_param_info bit_cast_inputs[] = {
    {"input", "tensor to reinterpret, any dtype", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info bit_cast_outputs[] = {
    {"output", "same shape and bytes as input, dtype 'to'", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info bit_cast_attrs[] = {
    {"to",
     "target dtype as an enum nxe_dtype value (1 f32, 2 f16, 3 bf16, 4 i8, 5 u8, 6 i16, 7 i32, "
     "8 i64, 9 bool, 10 f64, 11 u16, 12 u32, 13 u64); its element size must equal the "
     "input's, and bool is accepted only from bool",
     NXE_ATTR_INT, NULL},
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
    {NXE_INFO("Squeeze", "Removes size-1 axes.", squeeze_inputs, squeeze_outputs, squeeze_attrs),
     sizeof(copy_params), squeeze_infer, copy_run},
    {NXE_INFO("Unsqueeze", "Inserts size-1 axes.", unsqueeze_inputs, unsqueeze_outputs,
              unsqueeze_attrs),
     sizeof(copy_params), unsqueeze_infer, copy_run},
    {NXE_INFO("Pad", "Pads (or crops) every axis: constant, reflect, edge or wrap.", pad_inputs,
              pad_outputs, pad_attrs),
     sizeof(pad_params), pad_infer, pad_run},
    {NXE_INFO("Tile", "Repeats the input along every axis.", tile_inputs, tile_outputs, tile_attrs),
     sizeof(pad_params), tile_infer, pad_run},
    {NXE_INFO("Expand", "Broadcasts the input to a shape (numpy rules).", expand_inputs,
              expand_outputs, expand_attrs),
     sizeof(view_params), expand_infer, view_run},
    {NXE_INFO("SpaceToDepth", "Moves square blocks of pixels into channels (NCHW).",
              space_to_depth_inputs, space_to_depth_outputs, space_to_depth_attrs),
     sizeof(view_params), space_to_depth_infer, view_run},
    {NXE_INFO("GatherElements",
              "Picks one element of 'data' per index, along one axis (take_along_axis).",
              gather_elements_inputs, gather_elements_outputs, gather_elements_attrs),
     sizeof(elements_params), gather_elements_infer, gather_elements_run},
    {NXE_INFO("ScatterElements",
              "Writes (or combines) each update into a copy of 'data' at its index along one "
              "axis.",
              scatter_elements_inputs, scatter_outputs, scatter_elements_attrs),
     sizeof(elements_params), scatter_elements_infer, scatter_elements_run},
    {NXE_INFO("GatherND", "Picks slices of 'data' addressed by index tuples.", gather_nd_inputs,
              gather_nd_outputs, gather_nd_attrs),
     sizeof(nd_params), gather_nd_infer, gather_nd_run},
    {NXE_INFO("ScatterND",
              "Writes (or combines) slices of updates into a copy of 'data' at index tuples.",
              scatter_nd_inputs, scatter_outputs, scatter_nd_attrs),
     sizeof(nd_params), scatter_nd_infer, scatter_nd_run},
    {NXE_INFO("OneHot", "Turns class numbers into one-hot vectors along a new axis.",
              one_hot_inputs, one_hot_outputs, one_hot_attrs),
     sizeof(one_hot_params), one_hot_infer, one_hot_run},
    {NXE_INFO("Trilu", "Keeps the upper or lower triangle of the last two axes.", trilu_inputs,
              trilu_outputs, trilu_attrs),
     sizeof(trilu_params), trilu_infer, trilu_run},
    {NXE_INFO("ReverseSequence",
              "Reverses the first sequence_lens[b] time steps of every batch item b; the rest "
              "stay in place.",
              reverse_sequence_inputs, reverse_sequence_outputs, reverse_sequence_attrs),
     sizeof(reverse_sequence_params), reverse_sequence_infer, reverse_sequence_run},
    {NXE_INFO("BitCast",
              "Reinterprets the bytes of each element as dtype 'to' of the same size (no "
              "value conversion; shape unchanged).",
              bit_cast_inputs, bit_cast_outputs, bit_cast_attrs),
     sizeof(copy_params), bit_cast_infer, copy_run},
};

const nxe_op_family nxe_ops_data_movement = {
    data_movement_defs, (int32_t)(sizeof data_movement_defs / sizeof data_movement_defs[0])};
