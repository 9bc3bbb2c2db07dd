/* resize.c — the resize op family: Resize (ONNX semantics: nearest, linear and cubic over any
 * axes, with ONNX's coordinate transformation and nearest-rounding modes) and GridSample. The shape rule turns
 * the attributes into one plain-value config; the kernels in kernels/ref compute from it. */
#include <math.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/cast.h"
#include "ref/resize.h"

_Static_assert(NXE_REF_RESIZE_MAX_RANK == NXE_MAX_RANK, "kernel and ABI ranks must agree");

#define ATTR_CAPACITY 16
#define GRAIN_ELEMENTS 4096

typedef struct resize_params {
    nxe_ref_resize_config config;
    int32_t elem_size;
    int32_t is_f32;
    int64_t numel;
    unsigned char fill[8];
} resize_params;

/* Index of `text` in `names`, or a node error naming the attribute and the choices. */
static nxe_status pick(const nxe_node *node, const char *attr, const char *const *names,
                       int32_t count, const char *choices, int32_t *out)
{
    const char *text;
    nxe_status status = nxe_node_attr_string(node, attr, &text);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < count; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = i;
            return NXE_OK;
        }
    }
    return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT, "attribute '%s' is '%s'; expected %s",
                          attr, text, choices);
}

static nxe_status read_modes(const nxe_node *node, nxe_ref_resize_config *c)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel",         "pytorch_half_pixel",
                                         "align_corners",      "asymmetric",
                                         "tf_crop_and_resize", "half_pixel_symmetric"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    int64_t exclude_outside = 0;
    nxe_status status = pick(node, "mode", modes, 3, "nearest, linear or cubic", &c->mode);
    if (status == NXE_OK)
        status = pick(node, "coordinate_transformation_mode", coords, 6,
                      "half_pixel, pytorch_half_pixel, align_corners, asymmetric, "
                      "tf_crop_and_resize or half_pixel_symmetric",
                      &c->coord);
    if (status == NXE_OK)
        status = pick(node, "nearest_mode", nearest, 4,
                      "round_prefer_floor, round_prefer_ceil, floor or ceil", &c->nearest);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "cubic_coeff_a", &c->cubic_a);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "exclude_outside", &exclude_outside);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "extrapolation_value", &c->extrapolation);
    c->exclude_outside = exclude_outside != 0;
    return status;
}

static nxe_status resize_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    const nxe_value *x = &inputs[0];
    resize_params *p = params;
    nxe_ref_resize_config *c = &p->config;
    nxe_status status = read_modes(node, c);
    float scales[ATTR_CAPACITY], roi[ATTR_CAPACITY];
    int64_t sizes[ATTR_CAPACITY];
    int32_t num_scales = 0, num_sizes = 0, num_roi = 0;
    if (status == NXE_OK)
        status = nxe_node_attr_floats(node, "scales", scales, ATTR_CAPACITY, &num_scales);
    if (status == NXE_OK)
        status = nxe_node_attr_ints(node, "sizes", sizes, ATTR_CAPACITY, &num_sizes);
    if (status == NXE_OK)
        status = nxe_node_attr_floats(node, "roi", roi, ATTR_CAPACITY, &num_roi);
    if (status != NXE_OK)
        return status;
    const int32_t r = x->ndim;
    if (r < 1)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'X' is a scalar; Resize needs rank >= 1");
    if (c->mode != NXE_REF_RESIZE_NEAREST && x->dtype != NXE_DTYPE_F32)
        return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                              "%s mode needs f32 input 'X', not %s; only nearest moves other "
                              "dtypes",
                              c->mode == NXE_REF_RESIZE_LINEAR ? "linear" : "cubic",
                              nxe_dtype_name(x->dtype));
    if (num_scales == 0 && num_sizes == 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "neither 'scales' nor 'sizes' is set; give one entry per axis in "
                              "at least one");
    if ((num_scales != 0 && num_scales != r) || (num_sizes != 0 && num_sizes != r))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "'scales' has %d and 'sizes' %d entries; input 'X' of rank %d needs "
                              "%d (or none)",
                              num_scales, num_sizes, r, r);
    if (num_roi != 0 && num_roi != 2 * r)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'roi' has %d entries; rank %d needs %d (starts, then "
                              "ends) or none",
                              num_roi, r, 2 * r);
    c->ndim = r;
    int64_t shape[NXE_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
        nxe_ref_resize_axis *a = &c->axes[d];
        a->in = x->shape[d];
        if (num_sizes != 0) {
            a->out = sizes[d];
        } else {
            const double out = floor((double)scales[d] * (double)a->in);
            a->out = out >= 0.0 && out < 4.0e18 ? (int64_t)out : -1;
        }
        a->scale = num_scales != 0 ? (double)scales[d] : (double)a->out / (double)a->in;
        a->roi_start = num_roi != 0 ? (double)roi[d] : 0.0;
        a->roi_end = num_roi != 0 ? (double)roi[r + d] : 1.0;
        if (a->in < 1 || a->out < 0 || !(a->scale > 0.0) || !isfinite(a->scale) ||
            !isfinite(a->roi_start) || !isfinite(a->roi_end))
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "axis %d: input size %lld, output size %lld, scale %g; sizes "
                                  "must be >= 1 in and >= 0 out, scales positive and finite",
                                  d, (long long)a->in, (long long)a->out, a->scale);
        a->identity = a->out == a->in && fabs(a->scale - 1.0) <= 1e-9 &&
                      (c->coord != NXE_REF_COORD_TF_CROP_AND_RESIZE ||
                       (fabs(a->roi_start) <= 1e-9 && fabs(a->roi_end - 1.0) <= 1e-9));
        shape[d] = a->out;
    }
    if (!nxe_shape_numel(r, shape, &p->numel))
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "the output has more elements than int64 can count");
    p->elem_size = (int32_t)nxe_dtype_size(x->dtype);
    p->is_f32 = x->dtype == NXE_DTYPE_F32;
    const float fill = (float)c->extrapolation;
    nxe_ref_cast(NXE_REF_F32, &fill, x->dtype - NXE_DTYPE_F32, p->fill, 0, 1);
    outputs[0].dtype = x->dtype;
    outputs[0].ndim = r;
    memcpy(outputs[0].shape, shape, (size_t)r * sizeof shape[0]);
    return NXE_OK;
}

typedef struct resize_job {
    const resize_params *p;
    const void *src;
    void *dst;
} resize_job;

static void resize_range(void *ctx, int64_t begin, int64_t end)
{
    const resize_job *job = ctx;
    const resize_params *p = job->p;
    if (p->is_f32 && p->config.mode != NXE_REF_RESIZE_NEAREST)
        nxe_ref_f32_resize(&p->config, job->src, job->dst, begin, end);
    else
        nxe_ref_x8_resize_nearest(&p->config, (size_t)p->elem_size, p->fill, job->src, job->dst,
                                  begin, end);
}

static nxe_status resize_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const resize_params *p = params;
    if (p->numel == 0)
        return NXE_OK;
    resize_job job = {p, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, p->numel, GRAIN_ELEMENTS, resize_range, &job);
    return NXE_OK;
}

/* ---- GridSample ---------------------------------------------------------------------------- */

#define GRID_GRAIN_POINTS 256

typedef struct grid_sample_params {
    nxe_ref_grid_sample_config config;
    int64_t total_points; /* batch * points */
} grid_sample_params;

static nxe_status grid_sample_infer(const nxe_node *node, const nxe_value *inputs,
                                    int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                    void *params)
{
    (void)num_inputs;
    (void)num_outputs;
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const paddings[] = {"zeros", "border", "reflection"};
    const nxe_value *x = &inputs[0], *grid = &inputs[1];
    grid_sample_params *p = params;
    nxe_ref_grid_sample_config *c = &p->config;
    int64_t align_corners = 0;
    nxe_status status = pick(node, "mode", modes, 3, "nearest, linear or cubic", &c->mode);
    if (status == NXE_OK)
        status =
            pick(node, "padding_mode", paddings, 3, "zeros, border or reflection", &c->padding);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "align_corners", &align_corners);
    if (status != NXE_OK)
        return status;
    if (align_corners != 0 && align_corners != 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute 'align_corners' is %lld; expected 0 or 1",
                              (long long)align_corners);
    c->align_corners = (int32_t)align_corners;
    const int32_t rank = x->ndim - 2;
    char sx[128], sg[128];
    if (rank < 1 || rank > NXE_REF_GRID_SAMPLE_MAX_RANK)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'X' %s must have rank 3, 4 or 5 (batch, channels and 1 to 3 "
                              "spatial axes)",
                              nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    if (grid->ndim != x->ndim || grid->shape[0] != x->shape[0] ||
        grid->shape[grid->ndim - 1] != rank)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input 'grid' %s must have X's rank, X's batch size and %d "
                              "coordinates in its last axis (X is %s)",
                              nxe_shape_str(grid->ndim, grid->shape, sg, sizeof sg), rank,
                              nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    c->rank = rank;
    c->channels = x->shape[1];
    for (int32_t d = 0; d < rank; d++) {
        c->in[d] = x->shape[2 + d];
        if (c->in[d] < 1)
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input 'X' %s has an empty spatial axis; nothing to sample",
                                  nxe_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    int64_t out_numel = 0;
    outputs[0].dtype = x->dtype;
    outputs[0].ndim = x->ndim;
    outputs[0].shape[0] = x->shape[0];
    outputs[0].shape[1] = x->shape[1];
    for (int32_t d = 0; d < rank; d++)
        outputs[0].shape[2 + d] = grid->shape[1 + d];
    if (!nxe_shape_numel(rank, grid->shape + 1, &c->points) ||
        !nxe_shape_numel(x->ndim, outputs[0].shape, &out_numel) ||
        !nxe_shape_numel(rank + 1, grid->shape, &p->total_points))
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "the output has more elements than int64 can count");
    return NXE_OK;
}

typedef struct grid_sample_job {
    const grid_sample_params *p;
    const float *x;
    const float *grid;
    float *y;
} grid_sample_job;

static void grid_sample_range(void *ctx, int64_t begin, int64_t end)
{
    const grid_sample_job *job = ctx;
    nxe_ref_f32_grid_sample(&job->p->config, job->x, job->grid, job->y, begin, end);
}

static nxe_status grid_sample_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                  nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const grid_sample_params *p = params;
    if (p->total_points == 0 || p->config.channels == 0)
        return NXE_OK;
    grid_sample_job job = {p, inputs[0].data, inputs[1].data, outputs[0].data};
    nxe_parallel_for(pool, p->total_points, GRID_GRAIN_POINTS, grid_sample_range, &job);
    return NXE_OK;
}

static const nxe_op_param_info resize_inputs[] = {
    {"X",
     "tensor to resize, rank >= 1 with every axis non-empty; f32 for linear and cubic, any "
     "dtype for nearest",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info resize_outputs[] = {
    {"Y", "dtype of X; axis d has size sizes[d], or floor(X.shape[d] * scales[d]) without sizes",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info resize_attrs[] = {
    {"scales",
     "scale per axis (output / input), used by the coordinate mapping; empty: sizes[d] / "
     "X.shape[d]",
     NXE_ATTR_FLOATS, "[]"},
    {"sizes", "output size per axis; empty: floor(X.shape[d] * scales[d])", NXE_ATTR_INTS, "[]"},
    {"mode",
     "\"nearest\" (one input element), \"linear\" (2 taps per axis) or \"cubic\" (4 taps per "
     "axis, Keys kernel with cubic_coeff_a)",
     NXE_ATTR_STRING, "\"nearest\""},
    {"coordinate_transformation_mode",
     "maps output coordinate x to an input coordinate, with s the scale: \"half_pixel\" "
     "(x + 0.5) / s - 0.5, \"pytorch_half_pixel\" (the same, but -0.5 for an output of "
     "size 1), \"align_corners\" x (in - 1) / (s in - 1), \"asymmetric\" x / s, "
     "\"tf_crop_and_resize\" (within 'roi'; outside the input gives extrapolation_value), "
     "\"half_pixel_symmetric\" (half_pixel centred for the rounded size)",
     NXE_ATTR_STRING, "\"half_pixel\""},
    {"nearest_mode",
     "nearest mode's choice between the two neighbours of a fractional coordinate: "
     "\"round_prefer_floor\", \"round_prefer_ceil\", \"floor\" or \"ceil\"",
     NXE_ATTR_STRING, "\"round_prefer_floor\""},
    {"cubic_coeff_a", "the 'a' of the cubic kernel (-0.75 as PyTorch, -0.5 as TensorFlow)",
     NXE_ATTR_FLOAT, "-0.75"},
    {"exclude_outside",
     "1: taps outside the input get weight 0 and the others are renormalized; 0: outside "
     "taps repeat the edge",
     NXE_ATTR_INT, "0"},
    {"extrapolation_value", "value of tf_crop_and_resize outputs that fall outside the input",
     NXE_ATTR_FLOAT, "0.0"},
    {"roi",
     "tf_crop_and_resize region: 2 * rank entries, all starts then all ends, as fractions of "
     "the input (0 to 1); empty: the whole input",
     NXE_ATTR_FLOATS, "[]"},
};

static const nxe_op_param_info grid_sample_inputs[] = {
    {"X", "f32 input of shape (N, C, D1, .., Dr), r = 1 to 3 spatial axes, each non-empty",
     NXE_MASK_FLOAT, 0, 0},
    {"grid",
     "f32 sampling points of shape (N, O1, .., Or, r): normalized coordinates in [-1, 1], "
     "the last axis in reverse axis order (x = width first, then height, then depth)",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info grid_sample_outputs[] = {
    {"Y", "f32 samples of shape (N, C, O1, .., Or)", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info grid_sample_attrs[] = {
    {"mode",
     "\"nearest\" (the pixel at the coordinate rounded half to even), \"linear\" (2 taps per "
     "axis) or \"cubic\" (4 taps per axis, Keys kernel with a = -0.75)",
     NXE_ATTR_STRING, "\"linear\""},
    {"padding_mode",
     "samples outside the input: \"zeros\" read 0, \"border\" the nearest edge pixel, "
     "\"reflection\" the input mirrored at its borders",
     NXE_ATTR_STRING, "\"zeros\""},
    {"align_corners", "1: -1 and 1 are the centres of the corner pixels; 0: their outer edges",
     NXE_ATTR_INT, "0"},
};

static const nxe_op_def resize_defs[] = {
    {NXE_INFO("Resize",
              "Resizes a tensor by interpolation: nearest, linear or cubic, over any axes "
              "(ONNX Resize without antialias).",
              resize_inputs, resize_outputs, resize_attrs),
     sizeof(resize_params), resize_infer, resize_run},
    {NXE_INFO("GridSample",
              "Samples X at the points of a grid of normalized coordinates, by nearest, linear "
              "or cubic interpolation (ONNX GridSample; a NaN coordinate gives NaN).",
              grid_sample_inputs, grid_sample_outputs, grid_sample_attrs),
     sizeof(grid_sample_params), grid_sample_infer, grid_sample_run},
};

const nxe_op_family nxe_ops_resize = {resize_defs,
                                      (int32_t)(sizeof resize_defs / sizeof resize_defs[0])};
