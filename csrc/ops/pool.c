/* pool.c — the pool op family: MaxPool, AveragePool and LpPool over 1, 2 or 3 spatial axes
 * (channels first) and GlobalMaxPool, GlobalAveragePool, GlobalLpPool. Schemas, shape rules
 * and lowering to kernels/ref/pool; no arithmetic on tensor data lives here. */
#include <inttypes.h>
#include <string.h>

#include "ops/channels_last.h"
#include "ops/op_def.h"
#include "ops/window.h"
#include "ref/pool.h"

/* About this many visited taps per parallel task keeps scheduling overhead negligible. */
#define POOL_TASK_WORK 65536.0

enum pool_kind { POOL_MAX, POOL_AVERAGE, POOL_LP };

typedef struct pool_params {
    nxe_pool_geometry geometry;
    int32_t kind;
    int32_t dtype;
    int32_t count_include_pad;
    float p;
    int32_t channels_last; /* NHWC: settled, never run (ops/channels_last.h) */
} pool_params;

typedef struct global_pool_params {
    int64_t planes;
    int64_t size;
    int32_t kind;
    int32_t dtype;
    float p;
    int32_t channels_last; /* NHWC: settled, never run (ops/channels_last.h) */
} global_pool_params;

static const char *const slot_names[3] = {"depth", "height", "width"};

/* Reads an int attribute that must lie in [min_value, max_value]. */
static nxe_status read_int_in(const nxe_node *node, const char *name, int64_t min_value,
                              int64_t max_value, int64_t *value)
{
    nxe_status status = nxe_node_attr_int(node, name, value);
    if (status == NXE_OK && (*value < min_value || *value > max_value)) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute %s must be in [%" PRId64 ", %" PRId64 "], got %" PRId64,
                              name, min_value, max_value, *value);
    }
    return status;
}

/* The norm order of LpPool / GlobalLpPool. */
static nxe_status read_p(const nxe_node *node, float *p)
{
    int64_t value = 0;
    nxe_status status = read_int_in(node, "p", 1, 64, &value);
    *p = (float)value;
    return status;
}

static nxe_status pool_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                             void *params_out, enum pool_kind kind, int32_t rank)
{
    pool_params *params = params_out;
    int32_t channels_last = 0;
    if (rank == 2) {
        nxe_status status = nxe_read_channels_last(node, &inputs[0], &channels_last);
        if (status != NXE_OK)
            return status;
    }
    const nxe_value first = channels_last ? nxe_channels_first_view(&inputs[0]) : inputs[0];
    const nxe_value *x = &first;
    char xs[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);

    enum nxe_window_padding padding = NXE_PADDING_EXPLICIT;
    int64_t kernel[3] = {0}, strides[3] = {0}, dilations[3] = {0}, pads[6] = {0};
    int64_t ceil_mode = 0, count_include_pad = 0;
    float p = 0.0f;
    nxe_status status = nxe_window_read_ints(node, "kernel_shape", rank, 1, kernel);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "strides", rank, 1, strides);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "dilations", rank, 1, dilations);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "pads", 2 * rank, 0, pads);
    if (status == NXE_OK)
        status = nxe_window_read_padding(node, &padding);
    if (status == NXE_OK)
        status = read_int_in(node, "ceil_mode", 0, 1, &ceil_mode);
    if (status == NXE_OK && kind == POOL_AVERAGE) {
        status = read_int_in(node, "count_include_pad", 0, 1, &count_include_pad);
    }
    if (status == NXE_OK && kind == POOL_LP)
        status = read_p(node, &p);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim != rank + 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank %" PRId32 " ([N, C] and %" PRId32
                              " spatial axes), got shape %s",
                              rank + 2, rank, xs);
    }

    nxe_pool_geometry g;
    memset(&g, 0, sizeof g);
    for (int32_t s = 0; s < 3 - rank; s++) {
        g.in_size[s] = g.out_size[s] = g.kernel[s] = g.stride[s] = g.dilation[s] = 1;
    }
    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    y->shape[0] = x->shape[0];
    y->shape[1] = x->shape[1];
    for (int32_t i = 0; i < rank; i++) {
        const int32_t s = 3 - rank + i;
        g.in_size[s] = x->shape[2 + i];
        if (g.in_size[s] < 1) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input X %s has an empty spatial dimension", xs);
        }
        /* As onnxruntime: a pad as wide as the window would make windows of padding only. */
        if (padding == NXE_PADDING_EXPLICIT &&
            (pads[i] >= kernel[i] || pads[rank + i] >= kernel[i])) {
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute 'pads' gives spatial axis %" PRId32 " pads %" PRId64
                                  " and %" PRId64 "; each must be smaller than the kernel (%" PRId64
                                  ")",
                                  i, pads[i], pads[rank + i], kernel[i]);
        }
        g.kernel[s] = kernel[i];
        g.stride[s] = strides[i];
        g.dilation[s] = dilations[i];
        g.pad_begin[s] = pads[i];
        g.pad_end[s] = pads[rank + i];
        status = nxe_window_axis(node, slot_names[s], padding, (int32_t)ceil_mode, g.in_size[s],
                                 g.kernel[s], g.stride[s], g.dilation[s], &g.pad_begin[s],
                                 &g.pad_end[s], &g.out_size[s]);
        if (status != NXE_OK) {
            return status;
        }
        y->shape[2 + i] = g.out_size[s];
    }
    status = nxe_window_check_output(node, y->ndim, y->shape);
    if (status != NXE_OK) {
        return status;
    }
    if (channels_last)
        nxe_channels_last_shape(y);
    params->channels_last = channels_last;
    g.planes = x->shape[0] * x->shape[1]; /* spatial sizes >= 1: a factor of the element count */
    params->geometry = g;
    params->kind = kind;
    params->dtype = x->dtype;
    params->count_include_pad = (int32_t)count_include_pad;
    params->p = p;
    return NXE_OK;
}

#define POOL_INFER(fn, kind, rank)                                                                 \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return pool_infer(node, inputs, outputs, params, kind, rank);                              \
    }

POOL_INFER(max_pool1d_infer, POOL_MAX, 1)
POOL_INFER(max_pool2d_infer, POOL_MAX, 2)
POOL_INFER(max_pool3d_infer, POOL_MAX, 3)
POOL_INFER(average_pool1d_infer, POOL_AVERAGE, 1)
POOL_INFER(average_pool2d_infer, POOL_AVERAGE, 2)
POOL_INFER(average_pool3d_infer, POOL_AVERAGE, 3)
POOL_INFER(lp_pool1d_infer, POOL_LP, 1)
POOL_INFER(lp_pool2d_infer, POOL_LP, 2)
POOL_INFER(lp_pool3d_infer, POOL_LP, 3)

typedef struct pool_job {
    const pool_params *params;
    const void *input;
    void *output;
} pool_job;

static void pool_rows(void *ctx, int64_t begin, int64_t end)
{
    const pool_job *job = ctx;
    const pool_params *params = job->params;
    const nxe_pool_geometry *g = &params->geometry;
    switch (params->kind) {
    case POOL_MAX:
        if (params->dtype == NXE_DTYPE_I8) {
            nxe_ref_i8_max_pool(g, job->input, job->output, begin, end);
        } else if (params->dtype == NXE_DTYPE_U8) {
            nxe_ref_u8_max_pool(g, job->input, job->output, begin, end);
        } else {
            nxe_ref_f32_max_pool(g, job->input, job->output, begin, end);
        }
        break;
    case POOL_AVERAGE:
        nxe_ref_f32_average_pool(g, params->count_include_pad, job->input, job->output, begin, end);
        break;
    default: nxe_ref_f32_lp_pool(g, params->p, job->input, job->output, begin, end); break;
    }
}

static nxe_status pool_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const pool_params *params = params_in;
    if (params->channels_last)
        return nxe_channels_last_refused("pool");
    const nxe_pool_geometry *g = &params->geometry;
    pool_job job = {params, inputs[0].data, outputs[0].data};
    const double row_work =
        (double)g->out_size[2] * (double)g->kernel[0] * (double)g->kernel[1] * (double)g->kernel[2];
    nxe_parallel_for(pool, g->planes * g->out_size[0] * g->out_size[1],
                     nxe_parallel_grain(row_work, POOL_TASK_WORK), pool_rows, &job);
    return NXE_OK;
}

/* ---- Global pooling ---------------------------------------------------------------------- */

static nxe_status global_pool_infer(const nxe_node *node, const nxe_value *inputs,
                                    nxe_value *outputs, void *params_out, enum pool_kind kind)
{
    global_pool_params *params = params_out;
    int32_t channels_last = 0;
    if (kind != POOL_LP) {
        nxe_status status = nxe_read_channels_last(node, &inputs[0], &channels_last);
        if (status != NXE_OK)
            return status;
    }
    const nxe_value first = channels_last ? nxe_channels_first_view(&inputs[0]) : inputs[0];
    const nxe_value *x = &first;
    float p = 0.0f;
    if (kind == POOL_LP) {
        nxe_status status = read_p(node, &p);
        if (status != NXE_OK) {
            return status;
        }
    }
    char xs[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    if (x->ndim < 3) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank 3 or more ([N, C, spatial...]), got shape "
                              "%s",
                              xs);
    }
    int64_t size = 1;
    for (int32_t i = 2; i < x->ndim; i++) {
        if (x->shape[i] < 1) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input X %s has an empty spatial dimension", xs);
        }
        size *= x->shape[i]; /* a factor of the element count, which fits int64 */
    }
    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    for (int32_t i = 0; i < x->ndim; i++) {
        y->shape[i] = i < 2 ? x->shape[i] : 1;
    }
    if (channels_last)
        nxe_channels_last_shape(y);
    params->channels_last = channels_last;
    params->planes = x->shape[0] * x->shape[1];
    params->size = size;
    params->kind = kind;
    params->dtype = x->dtype;
    params->p = p;
    return NXE_OK;
}

#define GLOBAL_POOL_INFER(fn, kind)                                                                \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        (void)num_inputs;                                                                          \
        (void)num_outputs;                                                                         \
        return global_pool_infer(node, inputs, outputs, params, kind);                             \
    }

GLOBAL_POOL_INFER(global_max_pool_infer, POOL_MAX)
GLOBAL_POOL_INFER(global_average_pool_infer, POOL_AVERAGE)
GLOBAL_POOL_INFER(global_lp_pool_infer, POOL_LP)

typedef struct global_pool_job {
    const global_pool_params *params;
    const void *input;
    void *output;
} global_pool_job;

static void global_pool_planes(void *ctx, int64_t begin, int64_t end)
{
    const global_pool_job *job = ctx;
    const global_pool_params *params = job->params;
    switch (params->kind) {
    case POOL_MAX:
        if (params->dtype == NXE_DTYPE_I8) {
            nxe_ref_i8_global_max_pool(params->size, job->input, job->output, begin, end);
        } else if (params->dtype == NXE_DTYPE_U8) {
            nxe_ref_u8_global_max_pool(params->size, job->input, job->output, begin, end);
        } else {
            nxe_ref_f32_global_max_pool(params->size, job->input, job->output, begin, end);
        }
        break;
    case POOL_AVERAGE:
        nxe_ref_f32_global_average_pool(params->size, job->input, job->output, begin, end);
        break;
    default:
        nxe_ref_f32_global_lp_pool(params->size, params->p, job->input, job->output, begin, end);
        break;
    }
}

static nxe_status global_pool_run(const void *params_in, const nxe_value *inputs,
                                  int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                  nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const global_pool_params *params = params_in;
    if (params->channels_last)
        return nxe_channels_last_refused("global pool");
    global_pool_job job = {params, inputs[0].data, outputs[0].data};
    nxe_parallel_for(pool, params->planes, nxe_parallel_grain((double)params->size, POOL_TASK_WORK),
                     global_pool_planes, &job);
    return NXE_OK;
}

/* ---- Schemas ----------------------------------------------------------------------------- */

#define MASK_MAX_POOL (NXE_MASK_FLOAT | NXE_MASK(NXE_DTYPE_I8) | NXE_MASK(NXE_DTYPE_U8))

static const nxe_op_param_info max_pool_inputs[] = {
    {"X", "Input [N, C, spatial...] (channels first), f32, i8 or u8.", MASK_MAX_POOL, 0, 0},
};
static const nxe_op_param_info max_pool_outputs[] = {
    {"Y", "[N, C, out spatial...], same dtype as X.", MASK_MAX_POOL, 0, 0},
};
static const nxe_op_param_info float_pool_inputs[] = {
    {"X", "Input [N, C, spatial...] (channels first).", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info float_pool_outputs[] = {
    {"Y", "[N, C, out spatial...].", NXE_MASK_FLOAT, 0, 0},
};

#define POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc)                                            \
    {"kernel_shape", "Window size, one per spatial axis " axes "; each >= 1.", NXE_ATTR_INTS,      \
     NULL},                                                                                        \
        {"strides", "Step between windows, one per spatial axis " axes "; each >= 1.",             \
         NXE_ATTR_INTS, ones},                                                                     \
        {"dilations", "Spacing between window taps, one per spatial axis " axes "; each >= 1.",    \
         NXE_ATTR_INTS, ones},                                                                     \
        {"pads",                                                                                   \
         "Padding " pads_doc ", all beginnings then all ends; each >= 0. Padded positions "        \
         "are never taken as values. Used only when padding is \"EXPLICIT\".",                     \
         NXE_ATTR_INTS, zeros2},                                                                   \
        {"padding",                                                                                \
         "\"EXPLICIT\" uses pads; \"SAME\" pads so that each output size is ceil(input / "         \
         "stride), putting an odd pad at the end (ONNX SAME_UPPER); \"SAME_LOWER\" likewise "      \
         "with the odd pad at the beginning; \"VALID\" pads nothing.",                             \
         NXE_ATTR_STRING, "\"EXPLICIT\""},                                                         \
        {"ceil_mode",                                                                              \
         "1: output size (input + pads - dilated window) / stride + 1 rounded up instead of "      \
         "down, dropping a last window that would start in the end padding.",                      \
         NXE_ATTR_INT, "0"}

#define COUNT_INCLUDE_PAD_ATTR                                                                     \
    {"count_include_pad",                                                                          \
     "1: divide by the number of window taps inside the padded input (pads included); 0: by "      \
     "the taps inside the input only.",                                                            \
     NXE_ATTR_INT, "0"}

#define P_ATTR {"p", "Order of the norm, 1 to 64.", NXE_ATTR_INT, "2"}

#define POOL_ATTRS(rank_id, axes, ones, zeros2, pads_doc)                                          \
    static const nxe_op_attr_info max_pool##rank_id##_attrs[] = {                                  \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc)};                                          \
    static const nxe_op_attr_info average_pool##rank_id##_attrs[] = {                              \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc), COUNT_INCLUDE_PAD_ATTR};                  \
    static const nxe_op_attr_info lp_pool##rank_id##_attrs[] = {                                   \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc), P_ATTR};

POOL_ATTRS(1d, "[w]", "[1]", "[0, 0]", "[left, right]")
#define POOL_ATTRS_2D(axes, ones, zeros2, pads_doc)                                                \
    static const nxe_op_attr_info max_pool2d_attrs[] = {                                           \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc), NXE_LAYOUT_ATTR};                         \
    static const nxe_op_attr_info average_pool2d_attrs[] = {                                       \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc), COUNT_INCLUDE_PAD_ATTR, NXE_LAYOUT_ATTR}; \
    static const nxe_op_attr_info lp_pool2d_attrs[] = {                                            \
        POOL_COMMON_ATTRS(axes, ones, zeros2, pads_doc), P_ATTR, NXE_LAYOUT_ATTR};

POOL_ATTRS_2D("[h, w]", "[1, 1]", "[0, 0, 0, 0]", "[top, left, bottom, right]")
POOL_ATTRS(3d, "[d, h, w]", "[1, 1, 1]", "[0, 0, 0, 0, 0, 0]",
           "[front, top, left, back, bottom, right]")

static const nxe_op_attr_info global_lp_pool_attrs[] = {P_ATTR};
static const nxe_op_attr_info global_pool_attrs[] = {NXE_LAYOUT_ATTR};

static const nxe_op_param_info global_max_pool_inputs[] = {
    {"X", "Input [N, C, spatial...] with one or more spatial axes, f32, i8 or u8.", MASK_MAX_POOL,
     0, 0},
};
static const nxe_op_param_info global_max_pool_outputs[] = {
    {"Y", "[N, C, 1, ...], one per spatial axis of X; same dtype as X.", MASK_MAX_POOL, 0, 0},
};
static const nxe_op_param_info global_float_pool_inputs[] = {
    {"X", "Input [N, C, spatial...] with one or more spatial axes.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info global_float_pool_outputs[] = {
    {"Y", "[N, C, 1, ...], one 1 per spatial axis of X.", NXE_MASK_FLOAT, 0, 0},
};

#define POOL_DEF(name, summary, ins, outs, attrs, infer)                                           \
    {NXE_INFO(name, summary, ins, outs, attrs), sizeof(pool_params), infer, pool_run}

#define MAX_SUMMARY(n)                                                                             \
    "Max pooling over " n " spatial axes of channels-first input, with pads, SAME/VALID "          \
    "padding, ceil mode and dilations; NaN propagates."
#define AVERAGE_SUMMARY(n)                                                                         \
    "Average pooling over " n " spatial axes of channels-first input, with pads, SAME/VALID "      \
    "padding, ceil mode, dilations and count_include_pad."
#define LP_SUMMARY(n)                                                                              \
    "Lp-norm pooling, (sum |x|^p)^(1/p) over each window, over " n " spatial axes of "             \
    "channels-first input."

static const nxe_op_def pool_defs[] = {
    POOL_DEF("MaxPool1d", MAX_SUMMARY("1"), max_pool_inputs, max_pool_outputs, max_pool1d_attrs,
             max_pool1d_infer),
    POOL_DEF("MaxPool2d", MAX_SUMMARY("2"), max_pool_inputs, max_pool_outputs, max_pool2d_attrs,
             max_pool2d_infer),
    POOL_DEF("MaxPool3d", MAX_SUMMARY("3"), max_pool_inputs, max_pool_outputs, max_pool3d_attrs,
             max_pool3d_infer),
    POOL_DEF("AveragePool1d", AVERAGE_SUMMARY("1"), float_pool_inputs, float_pool_outputs,
             average_pool1d_attrs, average_pool1d_infer),
    POOL_DEF("AveragePool2d", AVERAGE_SUMMARY("2"), float_pool_inputs, float_pool_outputs,
             average_pool2d_attrs, average_pool2d_infer),
    POOL_DEF("AveragePool3d", AVERAGE_SUMMARY("3"), float_pool_inputs, float_pool_outputs,
             average_pool3d_attrs, average_pool3d_infer),
    POOL_DEF("LpPool1d", LP_SUMMARY("1"), float_pool_inputs, float_pool_outputs, lp_pool1d_attrs,
             lp_pool1d_infer),
    POOL_DEF("LpPool2d", LP_SUMMARY("2"), float_pool_inputs, float_pool_outputs, lp_pool2d_attrs,
             lp_pool2d_infer),
    POOL_DEF("LpPool3d", LP_SUMMARY("3"), float_pool_inputs, float_pool_outputs, lp_pool3d_attrs,
             lp_pool3d_infer),
    {NXE_INFO("GlobalMaxPool",
              "Maximum over all spatial positions of each channel of [N, C, spatial...] (or "
              "[N, H, W, C] with layout NHWC); NaN propagates.",
              global_max_pool_inputs, global_max_pool_outputs, global_pool_attrs),
     sizeof(global_pool_params), global_max_pool_infer, global_pool_run},
    {NXE_INFO("GlobalAveragePool",
              "Mean over all spatial positions of each channel of [N, C, spatial...] (or [N, H, "
              "W, C] with layout NHWC).",
              global_float_pool_inputs, global_float_pool_outputs, global_pool_attrs),
     sizeof(global_pool_params), global_average_pool_infer, global_pool_run},
    {NXE_INFO("GlobalLpPool",
              "Lp norm, (sum |x|^p)^(1/p), over all spatial positions of each channel of [N, C, "
              "spatial...].",
              global_float_pool_inputs, global_float_pool_outputs, global_lp_pool_attrs),
     sizeof(global_pool_params), global_lp_pool_infer, global_pool_run},
};

const nxe_op_family nxe_ops_pool = {pool_defs, (int32_t)(sizeof pool_defs / sizeof pool_defs[0])};
