/* conv.c — the conv op family: Conv2d and DepthToSpace. Schemas, shape rules and lowering to
 * kernels/ref/conv; no arithmetic on tensor data lives here. */
#include <inttypes.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/conv.h"

/* Attribute values beyond this are rejected so that index arithmetic stays within int64. */
#define CONV_ATTR_MAX INT64_C(2147483647)
/* About this many multiply-adds per parallel task keeps scheduling overhead negligible. */
#define CONV_TASK_WORK 65536.0

static bool input_present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

static nxe_status read_layout(const nxe_node *node, int32_t *channels_last)
{
    const char *layout;
    nxe_status status = nxe_node_attr_string(node, "layout", &layout);
    if (status != NXE_OK) {
        return status;
    }
    if (strcmp(layout, "NCHW") == 0) {
        *channels_last = 0;
    } else if (strcmp(layout, "NHWC") == 0) {
        *channels_last = 1;
    } else {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute layout must be \"NCHW\" or \"NHWC\", got \"%s\"", layout);
    }
    return NXE_OK;
}

/* Reads an ints attribute that must hold exactly `expected` values, each in
 * [min_value, CONV_ATTR_MAX]. */
static nxe_status read_ints_exact(const nxe_node *node, const char *name, int32_t expected,
                                  int64_t min_value, int64_t *values)
{
    int64_t buffer[16];
    int32_t count = 0;
    nxe_status status = nxe_node_attr_ints(node, name, buffer, 16, &count);
    if (status != NXE_OK) {
        return status;
    }
    if (count != expected) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute %s needs %" PRId32 " values, got %" PRId32, name,
                              expected, count);
    }
    for (int32_t i = 0; i < count; i++) {
        if (buffer[i] < min_value || buffer[i] > CONV_ATTR_MAX) {
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute %s[%" PRId32 "] must be in [%" PRId64 ", %" PRId64
                                  "], got %" PRId64,
                                  name, i, min_value, CONV_ATTR_MAX, buffer[i]);
        }
        values[i] = buffer[i];
    }
    return NXE_OK;
}

static nxe_status check_output_size(const nxe_node *node, int32_t ndim, const int64_t *shape)
{
    int64_t numel;
    if (!nxe_shape_numel(ndim, shape, &numel)) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "output shape %s has more elements than int64 can count",
                              nxe_shape_str(ndim, shape, buf, sizeof buf));
    }
    return NXE_OK;
}

/* ---- Conv2d ------------------------------------------------------------------------------ */

enum conv_padding { PADDING_EXPLICIT, PADDING_SAME, PADDING_VALID };

typedef struct conv2d_params {
    nxe_conv2d_geometry geometry;
    int32_t channels_last;
    int32_t has_bias;
} conv2d_params;

static nxe_status read_padding(const nxe_node *node, enum conv_padding *padding)
{
    const char *text;
    nxe_status status = nxe_node_attr_string(node, "padding", &text);
    if (status != NXE_OK) {
        return status;
    }
    if (strcmp(text, "EXPLICIT") == 0) {
        *padding = PADDING_EXPLICIT;
    } else if (strcmp(text, "SAME") == 0) {
        *padding = PADDING_SAME;
    } else if (strcmp(text, "VALID") == 0) {
        *padding = PADDING_VALID;
    } else {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute padding must be \"EXPLICIT\", \"SAME\" or \"VALID\", "
                              "got \"%s\"",
                              text);
    }
    return NXE_OK;
}

/* One spatial axis (in >= 1): resolves SAME/VALID padding into pads and computes the output
 * extent. SAME follows ONNX SAME_UPPER: output = ceil(input / stride), the odd pad at the end. */
static nxe_status conv_axis(const nxe_node *node, const char *axis, enum conv_padding padding,
                            int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                            int64_t *pad_begin, int64_t *pad_end, int64_t *out)
{
    if (kernel - 1 > (INT64_MAX - 1) / dilation) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "kernel %s %" PRId64 " with dilation %" PRId64 " overflows int64",
                              axis, kernel, dilation);
    }
    const int64_t span = (kernel - 1) * dilation + 1;
    if (padding == PADDING_SAME) {
        const int64_t extent = in / stride + (in % stride != 0);
        const int64_t reach = extent > 0 ? (extent - 1) * stride : 0;
        if (span > INT64_MAX - reach) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "SAME padding along %s overflows int64 (dilated kernel %" PRId64
                                  ")",
                                  axis, span);
        }
        const int64_t total = reach + span > in ? reach + span - in : 0;
        *pad_begin = total / 2;
        *pad_end = total - total / 2;
        *out = extent;
        return NXE_OK;
    }
    if (padding == PADDING_VALID) {
        *pad_begin = 0;
        *pad_end = 0;
    }
    if (in > INT64_MAX - *pad_begin - *pad_end) { /* each pad <= CONV_ATTR_MAX */
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s %" PRId64 " plus pads overflows int64", axis, in);
    }
    const int64_t padded = in + *pad_begin + *pad_end;
    if (padded < span) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s %" PRId64 " plus pads %" PRId64 "+%" PRId64
                              " is smaller than the dilated kernel %s %" PRId64
                              ": the output would be empty",
                              axis, in, *pad_begin, *pad_end, axis, span);
    }
    *out = (padded - span) / stride + 1;
    return NXE_OK;
}

static nxe_status conv2d_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_outputs;
    conv2d_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *w = &inputs[1];
    const nxe_value *bias = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    char xs[128], ws[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    nxe_shape_str(w->ndim, w->shape, ws, sizeof ws);

    int32_t channels_last = 0;
    enum conv_padding padding = PADDING_EXPLICIT;
    int64_t strides[2] = {0}, dilations[2] = {0}, pads[4] = {0}, group = 0;
    nxe_status status = read_layout(node, &channels_last);
    if (status == NXE_OK) status = read_padding(node, &padding);
    if (status == NXE_OK) status = read_ints_exact(node, "strides", 2, 1, strides);
    if (status == NXE_OK) status = read_ints_exact(node, "dilations", 2, 1, dilations);
    if (status == NXE_OK) status = read_ints_exact(node, "pads", 4, 0, pads);
    if (status == NXE_OK) status = nxe_node_attr_int(node, "group", &group);
    if (status != NXE_OK) {
        return status;
    }
    if (group < 1 || group > CONV_ATTR_MAX) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute group must be in [1, %" PRId64 "], got %" PRId64,
                              CONV_ATTR_MAX, group);
    }
    if (x->ndim != 4) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank 4 (%s), got shape %s",
                              channels_last ? "NHWC" : "NCHW", xs);
    }
    if (w->ndim != 4) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W must have rank 4 (%s), got shape %s",
                              channels_last ? "OHWI" : "OIHW", ws);
    }

    nxe_conv2d_geometry g;
    memset(&g, 0, sizeof g);
    g.batch = x->shape[0];
    g.in_channels = x->shape[channels_last ? 3 : 1];
    g.in_height = x->shape[channels_last ? 1 : 2];
    g.in_width = x->shape[channels_last ? 2 : 3];
    g.out_channels = w->shape[0];
    g.kernel_height = w->shape[channels_last ? 1 : 2];
    g.kernel_width = w->shape[channels_last ? 2 : 3];
    g.groups = group;
    const int64_t weight_in = w->shape[channels_last ? 3 : 1];

    if (g.in_channels < 1 || g.in_channels % group != 0) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has %" PRId64
                              " channels, not a positive multiple of group %" PRId64,
                              xs, g.in_channels, group);
    }
    if (g.out_channels < 1 || g.out_channels % group != 0) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s has %" PRId64
                              " output channels, not a positive multiple of group %" PRId64,
                              ws, g.out_channels, group);
    }
    if (weight_in != g.in_channels / group) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s has %" PRId64 " input channels per group, but input X "
                              "%s with group %" PRId64 " needs %" PRId64,
                              ws, weight_in, xs, group, g.in_channels / group);
    }
    if (g.in_height < 1 || g.in_width < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has an empty spatial dimension", xs);
    }
    if (g.kernel_height < 1 || g.kernel_width < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s has an empty kernel", ws);
    }
    if (bias != NULL && (bias->ndim != 1 || bias->shape[0] != g.out_channels)) {
        char bs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "bias B must have shape [%" PRId64 "] (the output channels of W), "
                              "got %s",
                              g.out_channels,
                              nxe_shape_str(bias->ndim, bias->shape, bs, sizeof bs));
    }

    int64_t pad_bottom = pads[2], pad_right = pads[3];
    g.pad_top = pads[0];
    g.pad_left = pads[1];
    g.stride_height = strides[0];
    g.stride_width = strides[1];
    g.dilation_height = dilations[0];
    g.dilation_width = dilations[1];
    status = conv_axis(node, "height", padding, g.in_height, g.kernel_height, g.stride_height,
                       g.dilation_height, &g.pad_top, &pad_bottom, &g.out_height);
    if (status == NXE_OK) {
        status = conv_axis(node, "width", padding, g.in_width, g.kernel_width, g.stride_width,
                           g.dilation_width, &g.pad_left, &pad_right, &g.out_width);
    }
    if (status != NXE_OK) {
        return status;
    }

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = 4;
    y->shape[0] = g.batch;
    y->shape[channels_last ? 3 : 1] = g.out_channels;
    y->shape[channels_last ? 1 : 2] = g.out_height;
    y->shape[channels_last ? 2 : 3] = g.out_width;
    status = check_output_size(node, 4, y->shape);
    if (status != NXE_OK) {
        return status;
    }
    params->geometry = g;
    params->channels_last = channels_last;
    params->has_bias = bias != NULL;
    return NXE_OK;
}

typedef struct conv2d_job {
    const conv2d_params *params;
    const float *input;
    const float *weight;
    const float *bias;
    float *output;
} conv2d_job;

static void conv2d_rows(void *ctx, int64_t begin, int64_t end)
{
    const conv2d_job *job = ctx;
    if (job->params->channels_last) {
        nxe_ref_f32_conv2d_nhwc(&job->params->geometry, job->input, job->weight, job->bias,
                                job->output, begin, end);
    } else {
        nxe_ref_f32_conv2d_nchw(&job->params->geometry, job->input, job->weight, job->bias,
                                job->output, begin, end);
    }
}

static nxe_status conv2d_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const conv2d_params *params = params_in;
    const nxe_conv2d_geometry *g = &params->geometry;
    conv2d_job job = {params, inputs[0].data, inputs[1].data,
                      params->has_bias ? inputs[2].data : NULL, outputs[0].data};
    const double row_work = (double)g->out_channels * (double)g->out_width *
                            (double)(g->in_channels / g->groups) * (double)g->kernel_height *
                            (double)g->kernel_width;
    nxe_parallel_for(pool, g->batch * g->out_height, nxe_parallel_grain(row_work, CONV_TASK_WORK), conv2d_rows, &job);
    return NXE_OK;
}

static const nxe_op_param_info conv2d_inputs[] = {
    {"X", "Input images: [N, C, H, W] for layout NCHW, [N, H, W, C] for NHWC.", NXE_MASK_FLOAT,
     0, 0},
    {"W",
     "Filters: [O, C/group, KH, KW] (OIHW) for layout NCHW, [O, KH, KW, C/group] (OHWI) for "
     "NHWC.",
     NXE_MASK_FLOAT, 0, 0},
    {"B", "Bias [O], added to every output position of its channel.", NXE_MASK_FLOAT, 1, 0},
};
static const nxe_op_param_info conv2d_outputs[] = {
    {"Y",
     "[N, O, OH, OW] (NCHW) or [N, OH, OW, O] (NHWC), with OH = (H + pad_top + pad_bottom - "
     "dilation_h * (KH - 1) - 1) / stride_h + 1 rounded down, OW likewise.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info conv2d_attrs[] = {
    {"strides", "Step between output positions, [stride_h, stride_w]; each >= 1.", NXE_ATTR_INTS,
     "[1, 1]"},
    {"dilations", "Spacing between kernel taps, [dilation_h, dilation_w]; each >= 1.",
     NXE_ATTR_INTS, "[1, 1]"},
    {"pads",
     "Zero padding [top, left, bottom, right]; each >= 0. Used only when padding is "
     "\"EXPLICIT\".",
     NXE_ATTR_INTS, "[0, 0, 0, 0]"},
    {"padding",
     "\"EXPLICIT\" uses pads; \"SAME\" pads so that the output size is ceil(input / stride), "
     "putting an odd pad at the bottom/right (ONNX SAME_UPPER); \"VALID\" pads nothing.",
     NXE_ATTR_STRING, "\"EXPLICIT\""},
    {"group",
     "Number of channel groups; divides C and O. group == C with O a multiple of C is a "
     "depthwise convolution.",
     NXE_ATTR_INT, "1"},
    {"layout", "Memory layout of X and Y, \"NCHW\" or \"NHWC\"; W follows it (OIHW or OHWI).",
     NXE_ATTR_STRING, "\"NCHW\""},
};

/* ---- DepthToSpace ------------------------------------------------------------------------ */

typedef struct depth_to_space_params {
    nxe_depth_to_space_geometry geometry;
    int64_t element_size;
} depth_to_space_params;

static nxe_status depth_to_space_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs,
                                       int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    depth_to_space_params *params = params_out;
    const nxe_value *x = &inputs[0];
    char xs[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);

    int32_t channels_last = 0;
    int64_t block = 0;
    const char *mode = "";
    nxe_status status = read_layout(node, &channels_last);
    if (status == NXE_OK) status = nxe_node_attr_int(node, "blocksize", &block);
    if (status == NXE_OK) status = nxe_node_attr_string(node, "mode", &mode);
    if (status != NXE_OK) {
        return status;
    }
    if (block < 1 || block > CONV_ATTR_MAX) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute blocksize must be in [1, %" PRId64 "], got %" PRId64,
                              CONV_ATTR_MAX, block);
    }
    const bool crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute mode must be \"DCR\" or \"CRD\", got \"%s\"", mode);
    }
    if (x->ndim != 4) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank 4 (%s), got shape %s",
                              channels_last ? "NHWC" : "NCHW", xs);
    }

    nxe_depth_to_space_geometry g;
    memset(&g, 0, sizeof g);
    g.batch = x->shape[0];
    g.in_channels = x->shape[channels_last ? 3 : 1];
    g.in_height = x->shape[channels_last ? 1 : 2];
    g.in_width = x->shape[channels_last ? 2 : 3];
    g.block_size = block;
    g.channels_last = channels_last;
    g.crd_mode = crd;
    const int64_t block_area = block * block;
    if (g.in_channels % block_area != 0) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has %" PRId64
                              " channels, not a multiple of blocksize^2 = %" PRId64,
                              xs, g.in_channels, block_area);
    }
    if (g.in_height > INT64_MAX / block || g.in_width > INT64_MAX / block) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s times blocksize %" PRId64 " overflows int64", xs, block);
    }

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = 4;
    y->shape[0] = g.batch;
    y->shape[channels_last ? 3 : 1] = g.in_channels / block_area;
    y->shape[channels_last ? 1 : 2] = g.in_height * block;
    y->shape[channels_last ? 2 : 3] = g.in_width * block;
    params->geometry = g;
    params->element_size = (int64_t)nxe_dtype_size(x->dtype);
    return NXE_OK;
}

typedef struct depth_to_space_job {
    const depth_to_space_params *params;
    const void *input;
    void *output;
} depth_to_space_job;

static void depth_to_space_rows(void *ctx, int64_t begin, int64_t end)
{
    const depth_to_space_job *job = ctx;
    nxe_ref_xN_depth_to_space(&job->params->geometry, (size_t)job->params->element_size,
                              job->input, job->output, begin, end);
}

static nxe_status depth_to_space_run(const void *params_in, const nxe_value *inputs,
                                     int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                     nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const depth_to_space_params *params = params_in;
    const nxe_depth_to_space_geometry *g = &params->geometry;
    depth_to_space_job job = {params, inputs[0].data, outputs[0].data};
    const double row_work = (double)g->in_width * (double)g->in_channels / (double)g->block_size;
    nxe_parallel_for(pool, g->batch * g->in_height * g->block_size, nxe_parallel_grain(row_work, CONV_TASK_WORK),
                     depth_to_space_rows, &job);
    return NXE_OK;
}

static const nxe_op_param_info depth_to_space_inputs[] = {
    {"X", "[N, C, H, W] (layout NCHW) or [N, H, W, C] (NHWC); C a multiple of blocksize^2.",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info depth_to_space_outputs[] = {
    {"Y",
     "[N, C / blocksize^2, H * blocksize, W * blocksize] (NCHW) or the NHWC equivalent, same "
     "dtype as X.",
     NXE_MASK_ALL, 0, 0},
};
static const nxe_op_attr_info depth_to_space_attrs[] = {
    {"blocksize", "Side of the square block each group of blocksize^2 channels becomes; >= 1.",
     NXE_ATTR_INT, NULL},
    {"mode",
     "Channel order of a block: \"DCR\" (depth-column-row, ONNX and TensorFlow) or \"CRD\" "
     "(column-row-depth, PyTorch pixel_shuffle).",
     NXE_ATTR_STRING, "\"DCR\""},
    {"layout", "Memory layout of X and Y, \"NCHW\" or \"NHWC\".", NXE_ATTR_STRING, "\"NCHW\""},
};

static const nxe_op_def conv_defs[] = {
    {NXE_INFO("Conv2d",
              "2-D convolution with optional bias, strides, dilations, padding and groups "
              "(depthwise when group == C), in NCHW or NHWC.",
              conv2d_inputs, conv2d_outputs, conv2d_attrs),
     sizeof(conv2d_params), conv2d_infer, conv2d_run},
    {NXE_INFO("DepthToSpace",
              "Rearranges blocks of channels into spatial blocks (pixel shuffle); any dtype.",
              depth_to_space_inputs, depth_to_space_outputs, depth_to_space_attrs),
     sizeof(depth_to_space_params), depth_to_space_infer, depth_to_space_run},
};

const nxe_op_family nxe_ops_conv = {conv_defs, (int32_t)(sizeof conv_defs / sizeof conv_defs[0])};
