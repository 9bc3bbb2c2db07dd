/* conv.c — the conv op family: Conv1d/2d/3d, ConvTranspose1d/2d/3d and DepthToSpace. Schemas,
 * shape rules and lowering to kernels/ref/conv; no arithmetic on tensor data lives here. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/window.h"
#include "dispatch.h"
#include "gemm.h"
#include "ref/conv.h"

#define CONV_ATTR_MAX NXE_WINDOW_ATTR_MAX
/* About this many multiply-adds per parallel task keeps scheduling overhead negligible. */
#define CONV_TASK_WORK 65536.0
/* Relaxed convolutions reducing over fewer terms than this stay in f32. */
#define BF16_MIN_REDUCTION 64
/* Winograd scratch: one per block computed at once, at most this many blocks and bytes. */
#define WINOGRAD_MAX_SLOTS 16
#define WINOGRAD_SCRATCH_CAP ((size_t)64 << 20)
/* The cost model's price of the transforms, in multiply-adds of the GEMM per channel and
 * tile (input and output channels alike): each costs about 150 flops per tile, at a fraction
 * of the GEMM's rate since they are bound by memory traffic. */
#define WINOGRAD_TRANSFORM_COST 64.0
/* Winograd runs when its estimated cost is below this share of the direct path's. */
#define WINOGRAD_MAX_COST_RATIO 0.6
/* Fewer input or output channels than this keep the direct path (see winograd_pays). */
#define WINOGRAD_MIN_CHANNELS 4

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

nxe_status nxe_window_read_ints(const nxe_node *node, const char *name, int32_t expected,
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
                              "attribute %s needs %" PRId32 " values, got %" PRId32, name, expected,
                              count);
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

nxe_status nxe_window_check_output(const nxe_node *node, int32_t ndim, const int64_t *shape)
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

/* ---- Conv1d, Conv2d, Conv3d and ConvTranspose1d/2d/3d ------------------------------------ */

typedef struct conv_params {
    nxe_conv_geometry geometry;
    int32_t channels_last;
    int32_t has_bias;
} conv_params;

/* Names of the three geometry slots; a rank-r op uses the last r. */
static const char *const slot_names[3] = {"depth", "height", "width"};
static const char *const layouts_first[4] = {"", "NCW", "NCHW", "NCDHW"};
static const char *const layouts_last[4] = {"", "NWC", "NHWC", "NDHWC"};
static const char *const weights_first[4] = {"", "OIW", "OIHW", "OIDHW"};
static const char *const weights_last[4] = {"", "OWI", "OHWI", "ODHWI"};

static nxe_status read_conv_layout(const nxe_node *node, int32_t rank, int32_t *channels_last)
{
    const char *layout;
    nxe_status status = nxe_node_attr_string(node, "layout", &layout);
    if (status != NXE_OK) {
        return status;
    }
    if (strcmp(layout, layouts_first[rank]) == 0) {
        *channels_last = 0;
    } else if (strcmp(layout, layouts_last[rank]) == 0) {
        *channels_last = 1;
    } else {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute layout must be \"%s\" or \"%s\", got \"%s\"",
                              layouts_first[rank], layouts_last[rank], layout);
    }
    return NXE_OK;
}

nxe_status nxe_window_read_padding(const nxe_node *node, enum nxe_window_padding *padding)
{
    const char *text;
    nxe_status status = nxe_node_attr_string(node, "padding", &text);
    if (status != NXE_OK) {
        return status;
    }
    if (strcmp(text, "EXPLICIT") == 0) {
        *padding = NXE_PADDING_EXPLICIT;
    } else if (strcmp(text, "SAME") == 0) {
        *padding = NXE_PADDING_SAME;
    } else if (strcmp(text, "SAME_LOWER") == 0) {
        *padding = NXE_PADDING_SAME_LOWER;
    } else if (strcmp(text, "VALID") == 0) {
        *padding = NXE_PADDING_VALID;
    } else {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute padding must be \"EXPLICIT\", \"SAME\", \"SAME_LOWER\" "
                              "or \"VALID\", got \"%s\"",
                              text);
    }
    return NXE_OK;
}

static nxe_status read_group(const nxe_node *node, int64_t *group)
{
    nxe_status status = nxe_node_attr_int(node, "group", group);
    if (status == NXE_OK && (*group < 1 || *group > CONV_ATTR_MAX)) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute group must be in [1, %" PRId64 "], got %" PRId64,
                              CONV_ATTR_MAX, *group);
    }
    return status;
}

/* The extent of a dilated kernel, (kernel - 1) * dilation + 1, kept below INT64_MAX / 4 so
 * that sums of a few such extents cannot overflow. */
static nxe_status dilated_span(const nxe_node *node, const char *axis, int64_t kernel,
                               int64_t dilation, int64_t *span)
{
    if (kernel - 1 > (INT64_MAX / 4 - 1) / dilation) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "kernel %s %" PRId64 " with dilation %" PRId64 " overflows int64",
                              axis, kernel, dilation);
    }
    *span = (kernel - 1) * dilation + 1;
    return NXE_OK;
}

nxe_status nxe_window_axis(const nxe_node *node, const char *axis, enum nxe_window_padding padding,
                           int32_t ceil_mode, int64_t in, int64_t kernel, int64_t stride,
                           int64_t dilation, int64_t *pad_begin, int64_t *pad_end, int64_t *out)
{
    if (in > INT64_MAX / 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s %" PRId64 " is too large to pad", axis, in);
    }
    int64_t span = 0;
    nxe_status status = dilated_span(node, axis, kernel, dilation, &span);
    if (status != NXE_OK) {
        return status;
    }
    if (padding == NXE_PADDING_SAME || padding == NXE_PADDING_SAME_LOWER) {
        const int64_t extent = in / stride + (in % stride != 0);
        const int64_t reach = (extent - 1) * stride; /* < in */
        const int64_t total = reach + span > in ? reach + span - in : 0;
        const int64_t small = total / 2;
        *pad_begin = padding == NXE_PADDING_SAME ? small : total - small;
        *pad_end = total - *pad_begin;
        *out = extent;
        return NXE_OK;
    }
    if (padding == NXE_PADDING_VALID) {
        *pad_begin = 0;
        *pad_end = 0;
    }
    const int64_t padded = in + *pad_begin + *pad_end; /* each pad <= CONV_ATTR_MAX */
    if (padded < span) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s %" PRId64 " plus pads %" PRId64 "+%" PRId64
                              " is smaller than the dilated kernel %s %" PRId64
                              ": the output would be empty",
                              axis, in, *pad_begin, *pad_end, axis, span);
    }
    *out = (padded - span) / stride + 1;
    if (ceil_mode && (padded - span) % stride != 0) {
        *out += 1;
        if ((*out - 1) * stride >= in + *pad_begin) {
            *out -= 1;
        }
    }
    return NXE_OK;
}

/* Geometry slots a rank-r op does not use: size 1, no padding. */
static void fill_unused_slots(nxe_conv_geometry *g, int32_t rank)
{
    for (int32_t s = 0; s < 3 - rank; s++) {
        g->in_size[s] = g->out_size[s] = g->kernel[s] = 1;
        g->stride[s] = g->dilation[s] = 1;
        g->pad_begin[s] = 0;
    }
}

static nxe_status check_bias(const nxe_node *node, const nxe_value *bias, int64_t out_channels,
                             const char *source)
{
    if (bias != NULL && (bias->ndim != 1 || bias->shape[0] != out_channels)) {
        char bs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "bias B must have shape [%" PRId64 "] (the output channels of %s), "
                              "got %s",
                              out_channels, source,
                              nxe_shape_str(bias->ndim, bias->shape, bs, sizeof bs));
    }
    return NXE_OK;
}

static nxe_status check_spatial(const nxe_node *node, const nxe_value *x, const nxe_value *w,
                                int32_t first_x, int32_t first_w, int32_t rank, const char *xs,
                                const char *ws)
{
    for (int32_t i = 0; i < rank; i++) {
        if (x->shape[first_x + i] < 1) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input X %s has an empty spatial dimension", xs);
        }
        if (w->shape[first_w + i] < 1) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH, "weight W %s has an empty kernel",
                                  ws);
        }
    }
    return NXE_OK;
}

static nxe_status conv_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, void *params_out, int32_t rank)
{
    conv_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *w = &inputs[1];
    const nxe_value *bias = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    char xs[128], ws[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    nxe_shape_str(w->ndim, w->shape, ws, sizeof ws);

    int32_t channels_last = 0;
    enum nxe_window_padding padding = NXE_PADDING_EXPLICIT;
    int64_t strides[3] = {0}, dilations[3] = {0}, pads[6] = {0}, group = 0;
    nxe_status status = read_conv_layout(node, rank, &channels_last);
    if (status == NXE_OK)
        status = nxe_window_read_padding(node, &padding);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "strides", rank, 1, strides);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "dilations", rank, 1, dilations);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "pads", 2 * rank, 0, pads);
    if (status == NXE_OK)
        status = read_group(node, &group);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim != rank + 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank %" PRId32 " (%s), got shape %s", rank + 2,
                              channels_last ? layouts_last[rank] : layouts_first[rank], xs);
    }
    if (w->ndim != rank + 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W must have rank %" PRId32 " (%s), got shape %s", rank + 2,
                              channels_last ? weights_last[rank] : weights_first[rank], ws);
    }
    const int32_t channel_axis = channels_last ? rank + 1 : 1;
    const int32_t first_spatial = channels_last ? 1 : 2;

    nxe_conv_geometry g;
    memset(&g, 0, sizeof g);
    fill_unused_slots(&g, rank);
    g.batch = x->shape[0];
    g.in_channels = x->shape[channel_axis];
    g.out_channels = w->shape[0];
    g.groups = group;
    const int64_t weight_in = w->shape[channel_axis];

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
    status = check_spatial(node, x, w, first_spatial, first_spatial, rank, xs, ws);
    if (status == NXE_OK)
        status = check_bias(node, bias, g.out_channels, "W");
    if (status != NXE_OK) {
        return status;
    }

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = rank + 2;
    y->shape[0] = g.batch;
    y->shape[channel_axis] = g.out_channels;
    for (int32_t i = 0; i < rank; i++) {
        const int32_t s = 3 - rank + i;
        int64_t pad_end = pads[rank + i];
        g.in_size[s] = x->shape[first_spatial + i];
        g.kernel[s] = w->shape[first_spatial + i];
        g.stride[s] = strides[i];
        g.dilation[s] = dilations[i];
        g.pad_begin[s] = pads[i];
        status =
            nxe_window_axis(node, slot_names[s], padding, 0, g.in_size[s], g.kernel[s], g.stride[s],
                            g.dilation[s], &g.pad_begin[s], &pad_end, &g.out_size[s]);
        if (status != NXE_OK) {
            return status;
        }
        y->shape[first_spatial + i] = g.out_size[s];
    }
    status = nxe_window_check_output(node, y->ndim, y->shape);
    if (status != NXE_OK) {
        return status;
    }
    params->geometry = g;
    params->channels_last = channels_last;
    params->has_bias = bias != NULL;
    return NXE_OK;
}

static nxe_status conv1d_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_infer(node, inputs, num_inputs, outputs, params, 1);
}

static nxe_status conv2d_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_infer(node, inputs, num_inputs, outputs, params, 2);
}

static nxe_status conv3d_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_infer(node, inputs, num_inputs, outputs, params, 3);
}

/* Transposed convolution: output = stride * (input - 1) + output_padding + dilated kernel
 * - pads, per axis; channels first only. */
static nxe_status conv_transpose_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, void *params_out,
                                       int32_t rank)
{
    conv_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *w = &inputs[1];
    const nxe_value *bias = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    char xs[128], ws[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    nxe_shape_str(w->ndim, w->shape, ws, sizeof ws);

    int64_t strides[3] = {0}, dilations[3] = {0}, pads[6] = {0}, output_padding[3] = {0};
    int64_t group = 0;
    nxe_status status = nxe_window_read_ints(node, "strides", rank, 1, strides);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "dilations", rank, 1, dilations);
    if (status == NXE_OK)
        status = nxe_window_read_ints(node, "pads", 2 * rank, 0, pads);
    if (status == NXE_OK) {
        status = nxe_window_read_ints(node, "output_padding", rank, 0, output_padding);
    }
    if (status == NXE_OK)
        status = read_group(node, &group);
    if (status != NXE_OK) {
        return status;
    }
    if (x->ndim != rank + 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank %" PRId32 " (%s), got shape %s", rank + 2,
                              layouts_first[rank], xs);
    }
    if (w->ndim != rank + 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W must have rank %" PRId32 " ([C, O/group, kernel...]), "
                              "got shape %s",
                              rank + 2, ws);
    }

    nxe_conv_geometry g;
    memset(&g, 0, sizeof g);
    fill_unused_slots(&g, rank);
    g.batch = x->shape[0];
    g.in_channels = x->shape[1];
    g.groups = group;
    if (g.in_channels < 1 || g.in_channels % group != 0) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has %" PRId64
                              " channels, not a positive multiple of group %" PRId64,
                              xs, g.in_channels, group);
    }
    if (w->shape[0] != g.in_channels) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s must have the %" PRId64
                              " channels of input X %s in its first dimension",
                              ws, g.in_channels, xs);
    }
    if (w->shape[1] < 1 || w->shape[1] > CONV_ATTR_MAX) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s must have between 1 and %" PRId64
                              " output channels per group",
                              ws, CONV_ATTR_MAX);
    }
    g.out_channels = w->shape[1] * group;
    status = check_spatial(node, x, w, 2, 2, rank, xs, ws);
    if (status == NXE_OK)
        status = check_bias(node, bias, g.out_channels, "W times group");
    if (status != NXE_OK) {
        return status;
    }

    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = rank + 2;
    y->shape[0] = g.batch;
    y->shape[1] = g.out_channels;
    for (int32_t i = 0; i < rank; i++) {
        const int32_t s = 3 - rank + i;
        g.in_size[s] = x->shape[2 + i];
        g.kernel[s] = w->shape[2 + i];
        g.stride[s] = strides[i];
        g.dilation[s] = dilations[i];
        g.pad_begin[s] = pads[i];
        int64_t span = 0;
        status = dilated_span(node, slot_names[s], g.kernel[s], g.dilation[s], &span);
        if (status != NXE_OK) {
            return status;
        }
        if (g.in_size[s] - 1 > INT64_MAX / 4 / g.stride[s]) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input X %s %" PRId64 " times stride %" PRId64 " overflows int64",
                                  slot_names[s], g.in_size[s], g.stride[s]);
        }
        const int64_t full = (g.in_size[s] - 1) * g.stride[s] + output_padding[i] + span;
        const int64_t cut = pads[i] + pads[rank + i];
        if (full <= cut) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "pads %" PRId64 "+%" PRId64 " along %s leave no output (the "
                                  "unpadded output extent is %" PRId64 ")",
                                  pads[i], pads[rank + i], slot_names[s], full);
        }
        g.out_size[s] = full - cut;
        y->shape[2 + i] = g.out_size[s];
    }
    status = nxe_window_check_output(node, y->ndim, y->shape);
    if (status != NXE_OK) {
        return status;
    }
    params->geometry = g;
    params->channels_last = 0;
    params->has_bias = bias != NULL;
    return NXE_OK;
}

static nxe_status conv_transpose1d_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_transpose_infer(node, inputs, num_inputs, outputs, params, 1);
}

static nxe_status conv_transpose2d_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_transpose_infer(node, inputs, num_inputs, outputs, params, 2);
}

static nxe_status conv_transpose3d_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)num_outputs;
    return conv_transpose_infer(node, inputs, num_inputs, outputs, params, 3);
}

typedef struct conv_job {
    const conv_params *params;
    const float *input;
    const float *weight;
    const float *bias;
    float *output;
} conv_job;

static void conv_rows(void *ctx, int64_t begin, int64_t end)
{
    const conv_job *job = ctx;
    if (job->params->channels_last) {
        nxe_ref_f32_conv_ndhwc(&job->params->geometry, job->input, job->weight, job->bias,
                               job->output, begin, end);
    } else {
        nxe_ref_f32_conv_ncdhw(&job->params->geometry, job->input, job->weight, job->bias,
                               job->output, begin, end);
    }
}

static void conv_transpose_rows(void *ctx, int64_t begin, int64_t end)
{
    const conv_job *job = ctx;
    nxe_ref_f32_conv_transpose_ncdhw(&job->params->geometry, job->input, job->weight, job->bias,
                                     job->output, begin, end);
}

/* Both directions split the flattened (batch, out depth, out height) rows across threads;
 * every output row is written by one task only. */
static nxe_status conv_run_rows(const void *params_in, const nxe_value *inputs, nxe_value *outputs,
                                nxe_thread_pool *pool, nxe_range_fn rows)
{
    const conv_params *params = params_in;
    const nxe_conv_geometry *g = &params->geometry;
    conv_job job = {params, inputs[0].data, inputs[1].data,
                    params->has_bias ? inputs[2].data : NULL, outputs[0].data};
    const double row_work = (double)g->out_channels * (double)g->out_size[2] *
                            (double)(g->in_channels / g->groups) * (double)g->kernel[0] *
                            (double)g->kernel[1] * (double)g->kernel[2];
    nxe_parallel_for(pool, g->batch * g->out_size[0] * g->out_size[1],
                     nxe_parallel_grain(row_work, CONV_TASK_WORK), rows, &job);
    return NXE_OK;
}

static nxe_status conv_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return conv_run_rows(params, inputs, outputs, pool, conv_rows);
}

static nxe_status conv_transpose_run(const void *params, const nxe_value *inputs,
                                     int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                     nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return conv_run_rows(params, inputs, outputs, pool, conv_transpose_rows);
}

/* ---- the packed path: implicit GEMM through the dispatch table ---- */

typedef struct conv_prepared {
    const nxe_kernel_table *kernels;
    const nxe_gemm_kernel *kernel; /* NULL: the depthwise kernel */
    void *weights;                 /* packed for that kernel, inside this block */
    /* Winograd F(4x4, 3x3) when tile_block > 0: weights transformed (nxe_winograd_*), and
     * `slots` scratch blocks of scratch_bytes in the workspace. */
    int64_t tile_block;
    int64_t slots;
    size_t scratch_bytes;
} conv_prepared;

/* The cost model: multiply-adds of the direct f32 product (9 C O per output pixel) against
 * Winograd's per 4x4 tile (36 C O, plus the transforms; the tiles of a tail compute outputs
 * that are thrown away). Few channels (a first layer on RGB, a last layer making 3) keep the
 * direct path: the transforms, not the products, would dominate. */
static bool winograd_pays(const nxe_conv_geometry *g)
{
    const double c = (double)g->in_channels, o = (double)g->out_channels;
    const double tiles =
        (double)g->batch * (double)((g->out_size[1] + 3) / 4) * (double)((g->out_size[2] + 3) / 4);
    const double direct =
        9.0 * c * o * (double)g->batch * (double)g->out_size[1] * (double)g->out_size[2];
    const double winograd = tiles * (36.0 * c * o + WINOGRAD_TRANSFORM_COST * (c + o));
    return g->in_channels >= WINOGRAD_MIN_CHANNELS && g->out_channels >= WINOGRAD_MIN_CHANNELS &&
           winograd < WINOGRAD_MAX_COST_RATIO * direct;
}

/* Whether the step runs Winograd, by the compile option (nxe_winograd_mode, the environment
 * already resolved into it): always where it applies when ON, never when OFF, by the cost
 * model when AUTO. Relax mode decides as exact mode does, so that it is never slower on
 * these layers: the bf16 direct product it would run instead does half the f32 work per
 * multiply-add but converts its whole input to bf16 pairs at every run, and Winograd's
 * quarter of the multiply-adds beat it (ESPCN x2 960x540 on a Zen 4: its 32-to-4 layer in
 * bf16 made relax mode 15 % slower than exact mode). */
static bool use_winograd(const nxe_conv_geometry *g, int32_t mode)
{
    if (!nxe_winograd_applies(g) || mode == NXE_WINOGRAD_OFF)
        return false;
    return mode == NXE_WINOGRAD_ON || winograd_pays(g);
}

/* Packs constant f32 weights for this level's kernels: the depthwise kernel for one input
 * channel per group, else the GEMM kernel — bf16 when relaxed, the CPU has a bf16 kernel and
 * the reduction is long enough, else f32. Without packed kernels or constant weights, the
 * reference runs. */
static nxe_status conv_prepare(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                               const nxe_prepare_context *context, void **prepared,
                               size_t *workspace_bytes)
{
    (void)num_inputs;
    const conv_params *params = params_in;
    const nxe_conv_geometry *g = &params->geometry;
    const nxe_kernel_table *kernels = context->kernels;
    *prepared = NULL;
    if (!kernels->f32_gemm_kernel || !inputs[1].data || inputs[0].dtype != NXE_DTYPE_F32)
        return NXE_OK;
    const bool depthwise = nxe_conv_is_depthwise(g) && kernels->depthwise_run;
    /* A short reduction (a first layer on one to three channels) gains nothing from bf16:
     * converting its input costs as much as the product saves. */
    const int64_t reduction =
        g->in_channels / g->groups * g->kernel[0] * g->kernel[1] * g->kernel[2];
    const bool bf16_direct =
        context->relax_precision && kernels->bf16_gemm_kernel && reduction >= BF16_MIN_REDUCTION;
    /* Winograd runs in f32 only (bf16 operands' rounding the transforms would amplify); in
     * relax mode it replaces the bf16 direct product where it is cheaper still. */
    const bool winograd = !depthwise && use_winograd(g, context->winograd);
    const bool bf16 = bf16_direct && !winograd;
    const nxe_gemm_kernel *kernel = depthwise ? NULL
                                    : bf16    ? kernels->bf16_gemm_kernel
                                              : kernels->f32_gemm_kernel;
    size_t bytes =
        depthwise
            ? sizeof(float) * (size_t)(g->out_channels * g->kernel[0] * g->kernel[1] * g->kernel[2])
        : winograd ? nxe_winograd_weight_bytes(g)
                   : nxe_conv_gemm_weight_bytes(kernel, g, params->channels_last);
    void *weights;
    conv_prepared *p = nxe_prepared_alloc(sizeof *p, bytes, &weights);
    if (!p)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for %zu bytes of packed weights",
                         bytes);
    *p = (conv_prepared){kernels, kernel, weights, 0, 0, 0};
    if (winograd) {
        p->tile_block = nxe_winograd_tile_block(kernel, g);
        p->scratch_bytes = nxe_winograd_scratch_bytes(g, p->tile_block);
        const size_t fit = WINOGRAD_SCRATCH_CAP / p->scratch_bytes;
        p->slots = fit < 1 ? 1 : fit > WINOGRAD_MAX_SLOTS ? WINOGRAD_MAX_SLOTS : (int64_t)fit;
        *workspace_bytes = (size_t)p->slots * p->scratch_bytes + 64;
        nxe_winograd_transform_weight(g, params->channels_last, inputs[1].data, weights);
        *prepared = p;
        return NXE_OK;
    }
    /* bf16 on channels-first input reads a pair-interleaved copy made at every run. */
    if (kernel && kernel->type == NXE_GEMM_BF16 && !params->channels_last)
        *workspace_bytes = nxe_conv_bf16_pairs_bytes(g) + 64;
    if (depthwise)
        nxe_depthwise_pack_weight(g, params->channels_last, inputs[1].data, weights);
    else
        nxe_conv_gemm_pack_weight(kernel, g, params->channels_last, inputs[1].data, weights);
    *prepared = p;
    return NXE_OK;
}

typedef struct conv_gemm_job {
    const conv_prepared *prepared;
    nxe_conv_gemm_args args;
    int64_t first; /* the item the loop's 0 stands for */
} conv_gemm_job;

static void conv_gemm_tiles(void *ctx, int64_t begin, int64_t end)
{
    const conv_gemm_job *job = ctx;
    job->prepared->kernels->conv_gemm_run(&job->args, job->first + begin, job->first + end);
}

typedef struct depthwise_job {
    const conv_prepared *prepared;
    nxe_depthwise_args args;
} depthwise_job;

typedef struct winograd_job {
    const conv_prepared *prepared;
    nxe_winograd_args args;
    char *scratch; /* slot i at i * prepared->scratch_bytes */
    int64_t blocks;
    int64_t slots;
} winograd_job;

/* Slot i computes the i-th of `slots` equal shares of the blocks in its own scratch, so no two
 * threads share one; the blocks, and with them every output, do not depend on the split. */
static void winograd_slots(void *ctx, int64_t begin, int64_t end)
{
    const winograd_job *job = ctx;
    for (int64_t slot = begin; slot < end; slot++)
        job->prepared->kernels->winograd_run(
            &job->args, job->scratch + (size_t)slot * job->prepared->scratch_bytes,
            slot * job->blocks / job->slots, (slot + 1) * job->blocks / job->slots);
}

static void depthwise_rows(void *ctx, int64_t begin, int64_t end)
{
    const depthwise_job *job = ctx;
    job->prepared->kernels->depthwise_run(&job->args, begin, end);
}

typedef struct pairs_job {
    const nxe_kernel_table *kernels;
    const nxe_conv_geometry *geometry;
    const float *input;
    uint32_t *pairs;
} pairs_job;

static void pairs_rows(void *ctx, int64_t begin, int64_t end)
{
    const pairs_job *job = ctx;
    job->kernels->conv_bf16_pairs(job->geometry, job->input, job->pairs, begin, end);
}

/* Output rows [row_begin, row_end) of a step conv_band_shape accepts, or (0, 0) for the whole
 * output of any prepared step. */
static nxe_status conv_run_range(const conv_params *params, const conv_prepared *prepared,
                                 const nxe_fused_epilogue *fused, void *workspace,
                                 const nxe_value *inputs, nxe_value *outputs, nxe_thread_pool *pool,
                                 int64_t row_begin, int64_t row_end)
{
    const nxe_kernel_table *kernels = prepared->kernels;
    const nxe_conv_geometry *g = &params->geometry;
    const bool whole = row_end == 0;
    const float *bias = params->has_bias ? inputs[2].data : NULL;
    const float *residual = fused->residual_input >= 0 ? inputs[fused->residual_input].data : NULL;
    if (!prepared->kernel) {
        depthwise_job job = {prepared,
                             {&params->geometry, params->channels_last, inputs[0].data,
                              prepared->weights, bias, residual, outputs[0].data, fused->epilogue}};
        const double row_work = (double)g->out_size[2] * (double)g->kernel[0] *
                                (double)g->kernel[1] * (double)g->kernel[2] *
                                (params->channels_last ? (double)g->out_channels : 1.0);
        nxe_parallel_for(pool, kernels->depthwise_rows(&job.args),
                         nxe_parallel_grain(row_work, CONV_TASK_WORK), depthwise_rows, &job);
        return NXE_OK;
    }
    if (prepared->tile_block > 0) {
        /* Tile rows of 4 output rows; a range starts on one (row_unit 4). */
        const int64_t tile_columns = (g->out_size[2] + 3) / 4;
        winograd_job job = {
            prepared,
            {
                .kernel = prepared->kernel,
                .geometry = &params->geometry,
                .channels_last = params->channels_last,
                .tile_block = prepared->tile_block,
                .input = inputs[0].data,
                .weight = prepared->weights,
                .bias = bias,
                .residual = residual,
                .output = outputs[0].data,
                .epilogue = fused->epilogue,
                .tile_begin = whole ? 0 : row_begin / 4 * tile_columns,
                .tile_end = whole ? 0 : (row_end + 3) / 4 * tile_columns,
            },
            (char *)nxe_round_up((int64_t)(uintptr_t)workspace, 64),
            0,
            0,
        };
        job.blocks = kernels->winograd_blocks(&job.args);
        job.slots = nxe_thread_pool_size(pool);
        job.slots = job.slots < prepared->slots ? job.slots : prepared->slots;
        job.slots = job.slots < job.blocks ? job.slots : job.blocks;
        nxe_parallel_for(pool, job.slots, 1, winograd_slots, &job);
        return NXE_OK;
    }
    conv_gemm_job job = {
        prepared,
        {
            .kernel = prepared->kernel,
            .geometry = &params->geometry,
            .channels_last = params->channels_last,
            .input = inputs[0].data,
            .weight_packed = prepared->weights,
            .bias = bias,
            .residual = residual,
            .output = outputs[0].data,
            .epilogue = fused->epilogue,
        },
        0,
    };
    if (prepared->kernel->type == NXE_GEMM_BF16 && !params->channels_last) {
        pairs_job convert = {kernels, &params->geometry, inputs[0].data, workspace};
        nxe_parallel_for(pool, nxe_conv_bf16_pairs_rows(&params->geometry),
                         nxe_parallel_grain((double)params->geometry.in_size[2], 16384.0),
                         pairs_rows, &convert);
        job.args.input = workspace;
    }
    int64_t tiles = kernels->conv_gemm_tiles(&job.args);
    if (!whole) {
        /* Items run by (output row, pixel tile of the row) for one image, group and depth. */
        const int64_t row_tiles = tiles / g->out_size[1];
        job.first = row_begin * row_tiles;
        tiles = (row_end - row_begin) * row_tiles;
    }
    nxe_parallel_for(pool, tiles,
                     nxe_parallel_grain(kernels->conv_gemm_tile_work(&job.args), CONV_TASK_WORK),
                     conv_gemm_tiles, &job);
    return NXE_OK;
}

static nxe_status conv_run_prepared(const void *params, const void *prepared,
                                    const nxe_fused_epilogue *fused, void *workspace,
                                    const nxe_value *inputs, int32_t num_inputs, nxe_value *outputs,
                                    int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    return conv_run_range(params, prepared, fused, workspace, inputs, outputs, pool, 0, 0);
}

/* Depth-first runs (transform/bands.c) take 2-D convolutions of one image and one group,
 * channels first, stride 1 and dilation 1 along the height, on f32 operands (the direct
 * product or Winograd): their work items are output rows. The bf16 product converts its whole
 * input first and depthwise convolutions are cheap to stream; both keep whole runs. */
static bool conv_band_shape(const void *params_in, const void *prepared_in, nxe_band_shape *shape)
{
    const conv_params *params = params_in;
    const conv_prepared *prepared = prepared_in;
    const nxe_conv_geometry *g = &params->geometry;
    if (!prepared->kernel || prepared->kernel->type != NXE_GEMM_F32 || params->channels_last ||
        g->batch != 1 || g->groups != 1 || g->out_size[0] != 1 || g->kernel[0] != 1 ||
        g->stride[1] != 1 || g->dilation[1] != 1 || g->out_size[1] < 1)
        return false;
    *shape = (nxe_band_shape){
        .rows = g->out_size[1],
        .halo_top = g->pad_begin[1],
        .halo_bottom = g->kernel[1] - 1 - g->pad_begin[1],
        .row_unit = prepared->tile_block > 0 ? 4 : 1,
        .row_bytes = (int64_t)sizeof(float) * g->out_channels * g->out_size[2],
    };
    return true;
}

static nxe_status conv_run_band(const void *params, const void *prepared,
                                const nxe_fused_epilogue *fused, void *workspace,
                                const nxe_value *inputs, int32_t num_inputs, nxe_value *outputs,
                                int32_t num_outputs, nxe_thread_pool *pool, int64_t row_begin,
                                int64_t row_end)
{
    (void)num_inputs;
    (void)num_outputs;
    return conv_run_range(params, prepared, fused, workspace, inputs, outputs, pool, row_begin,
                          row_end);
}

/* Schemas. Attribute defaults depend on the rank, so each op has its own tables. */
#define CONV_INPUTS(id, x_doc, w_doc)                                                              \
    static const nxe_op_param_info id##_inputs[] = {                                               \
        {"X", x_doc, NXE_MASK_FLOAT, 0, 0},                                                        \
        {"W", w_doc, NXE_MASK_FLOAT, 0, 0},                                                        \
        {"B", "Bias [O], added to every output position of its channel.", NXE_MASK_FLOAT, 1, 0},   \
    };

#define CONV_ATTRS(id, axes, ones, zeros2, pads_doc, first, last, weight_first, weight_last)       \
    static const nxe_op_attr_info id##_attrs[] = {                                                 \
        {"strides", "Step between output positions, one per spatial axis " axes "; each >= 1.",    \
         NXE_ATTR_INTS, ones},                                                                     \
        {"dilations", "Spacing between kernel taps, one per spatial axis " axes "; each >= 1.",    \
         NXE_ATTR_INTS, ones},                                                                     \
        {"pads",                                                                                   \
         "Zero padding " pads_doc ", all beginnings then all ends; each >= 0. Used only when "     \
         "padding is \"EXPLICIT\".",                                                               \
         NXE_ATTR_INTS, zeros2},                                                                   \
        {"padding",                                                                                \
         "\"EXPLICIT\" uses pads; \"SAME\" pads so that each output size is ceil(input / "         \
         "stride), putting an odd pad at the end (ONNX SAME_UPPER); \"SAME_LOWER\" likewise "      \
         "with the odd pad at the beginning; \"VALID\" pads nothing.",                             \
         NXE_ATTR_STRING, "\"EXPLICIT\""},                                                         \
        {"group",                                                                                  \
         "Number of channel groups; divides C and O. group == C with O a multiple of C is a "      \
         "depthwise convolution.",                                                                 \
         NXE_ATTR_INT, "1"},                                                                       \
        {"layout",                                                                                 \
         "Memory layout of X and Y, \"" first "\" or \"" last "\"; W follows it (" weight_first    \
         " or " weight_last ").",                                                                  \
         NXE_ATTR_STRING, "\"" first "\""},                                                        \
    };

#define CONV_TRANSPOSE_ATTRS(id, axes, ones, zeros, zeros2, pads_doc)                              \
    static const nxe_op_attr_info id##_attrs[] = {                                                 \
        {"strides",                                                                                \
         "Step between the output positions of neighbouring inputs, one per spatial axis " axes    \
         "; each >= 1.",                                                                           \
         NXE_ATTR_INTS, ones},                                                                     \
        {"dilations", "Spacing between kernel taps, one per spatial axis " axes "; each >= 1.",    \
         NXE_ATTR_INTS, ones},                                                                     \
        {"pads", "Output positions cut " pads_doc ", all beginnings then all ends; each >= 0.",    \
         NXE_ATTR_INTS, zeros2},                                                                   \
        {"output_padding",                                                                         \
         "Extra output positions at the end of each spatial axis " axes                            \
         " (they receive only the bias where no input reaches them); each >= 0.",                  \
         NXE_ATTR_INTS, zeros},                                                                    \
        {"group", "Number of channel groups; divides C. O = group * W's second dimension.",        \
         NXE_ATTR_INT, "1"},                                                                       \
    };

static const nxe_op_param_info conv_outputs[] = {
    {"Y",
     "[N, O, spatial...] (channels first) or [N, spatial..., O] (channels last), each output "
     "size (input + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride + 1 rounded "
     "down.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info conv_transpose_outputs[] = {
    {"Y",
     "[N, O, spatial...], each output size stride * (input - 1) + output_padding + dilation * "
     "(kernel - 1) + 1 - pad_begin - pad_end.",
     NXE_MASK_FLOAT, 0, 0},
};

CONV_INPUTS(conv1d, "Input sequences: [N, C, W] for layout NCW, [N, W, C] for NWC.",
            "Filters: [O, C/group, KW] (OIW) for layout NCW, [O, KW, C/group] (OWI) for NWC.")
CONV_INPUTS(conv2d, "Input images: [N, C, H, W] for layout NCHW, [N, H, W, C] for NHWC.",
            "Filters: [O, C/group, KH, KW] (OIHW) for layout NCHW, [O, KH, KW, C/group] (OHWI) "
            "for NHWC.")
CONV_INPUTS(conv3d, "Input volumes: [N, C, D, H, W] for layout NCDHW, [N, D, H, W, C] for NDHWC.",
            "Filters: [O, C/group, KD, KH, KW] (OIDHW) for layout NCDHW, [O, KD, KH, KW, "
            "C/group] (ODHWI) for NDHWC.")
CONV_ATTRS(conv1d, "[w]", "[1]", "[0, 0]", "[left, right]", "NCW", "NWC", "OIW", "OWI")
CONV_ATTRS(conv2d, "[h, w]", "[1, 1]", "[0, 0, 0, 0]", "[top, left, bottom, right]", "NCHW", "NHWC",
           "OIHW", "OHWI")
CONV_ATTRS(conv3d, "[d, h, w]", "[1, 1, 1]", "[0, 0, 0, 0, 0, 0]",
           "[front, top, left, back, bottom, right]", "NCDHW", "NDHWC", "OIDHW", "ODHWI")

CONV_INPUTS(conv_transpose1d, "Input sequences [N, C, W].", "Filters [C, O/group, KW].")
CONV_INPUTS(conv_transpose2d, "Input images [N, C, H, W].", "Filters [C, O/group, KH, KW].")
CONV_INPUTS(conv_transpose3d, "Input volumes [N, C, D, H, W].", "Filters [C, O/group, KD, KH, KW].")
CONV_TRANSPOSE_ATTRS(conv_transpose1d, "[w]", "[1]", "[0]", "[0, 0]", "[left, right]")
CONV_TRANSPOSE_ATTRS(conv_transpose2d, "[h, w]", "[1, 1]", "[0, 0]", "[0, 0, 0, 0]",
                     "[top, left, bottom, right]")
CONV_TRANSPOSE_ATTRS(conv_transpose3d, "[d, h, w]", "[1, 1, 1]", "[0, 0, 0]", "[0, 0, 0, 0, 0, 0]",
                     "[front, top, left, back, bottom, right]")

/* ---- DepthToSpace ------------------------------------------------------------------------ */

typedef struct depth_to_space_params {
    nxe_depth_to_space_geometry geometry;
    int64_t element_size;
} depth_to_space_params;

static nxe_status depth_to_space_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       void *params_out)
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
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "blocksize", &block);
    if (status == NXE_OK)
        status = nxe_node_attr_string(node, "mode", &mode);
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
    const nxe_depth_to_space_geometry *g = &job->params->geometry;
    const nxe_kernel_table *kernels = nxe_kernels();
    if (job->params->element_size == 4 && !g->channels_last && kernels->x32_depth_to_space)
        kernels->x32_depth_to_space(g, job->input, job->output, begin, end);
    else
        nxe_ref_xN_depth_to_space(g, (size_t)job->params->element_size, job->input, job->output,
                                  begin, end);
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
    nxe_parallel_for(pool, g->batch * g->in_height * g->block_size,
                     nxe_parallel_grain(row_work, CONV_TASK_WORK), depth_to_space_rows, &job);
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

static void conv_kernel_name(const void *prepared_in, char *name, size_t size)
{
    const conv_prepared *prepared = prepared_in;
    if (prepared->tile_block > 0)
        snprintf(name, size, "winograd-f4x4-3x3-%s+%s", prepared->kernels->name,
                 prepared->kernel->name);
    else if (prepared->kernel)
        snprintf(name, size, "%s", prepared->kernel->name);
    else
        snprintf(name, size, "f32-depthwise-%s", prepared->kernels->name);
}

#define CONV_DEF(op_name, id, summary, outputs_, infer_, run_, prepare_, run_prepared_,            \
                 band_shape_, run_rows_)                                                           \
    {NXE_INFO(op_name, summary, id##_inputs, outputs_, id##_attrs),                                \
     sizeof(conv_params),                                                                          \
     infer_,                                                                                       \
     run_,                                                                                         \
     prepare_,                                                                                     \
     run_prepared_,                                                                                \
     NULL,                                                                                         \
     conv_kernel_name,                                                                             \
     band_shape_,                                                                                  \
     run_rows_}

static const nxe_op_def conv_defs[] = {
    CONV_DEF("Conv1d", conv1d,
             "1-D convolution with optional bias, strides, dilations, padding and groups "
             "(depthwise when group == C), in NCW or NWC.",
             conv_outputs, conv1d_infer, conv_run, conv_prepare, conv_run_prepared, NULL, NULL),
    CONV_DEF("Conv2d", conv2d,
             "2-D convolution with optional bias, strides, dilations, padding and groups "
             "(depthwise when group == C), in NCHW or NHWC.",
             conv_outputs, conv2d_infer, conv_run, conv_prepare, conv_run_prepared, conv_band_shape,
             conv_run_band),
    CONV_DEF("Conv3d", conv3d,
             "3-D convolution with optional bias, strides, dilations, padding and groups "
             "(depthwise when group == C), in NCDHW or NDHWC.",
             conv_outputs, conv3d_infer, conv_run, conv_prepare, conv_run_prepared, NULL, NULL),
    CONV_DEF("ConvTranspose1d", conv_transpose1d,
             "1-D transposed convolution (fractionally strided; the gradient of Conv1d) with "
             "optional bias, strides, dilations, pads, output_padding and groups, in NCW.",
             conv_transpose_outputs, conv_transpose1d_infer, conv_transpose_run, NULL, NULL, NULL,
             NULL),
    CONV_DEF("ConvTranspose2d", conv_transpose2d,
             "2-D transposed convolution (fractionally strided; the gradient of Conv2d) with "
             "optional bias, strides, dilations, pads, output_padding and groups, in NCHW.",
             conv_transpose_outputs, conv_transpose2d_infer, conv_transpose_run, NULL, NULL, NULL,
             NULL),
    CONV_DEF("ConvTranspose3d", conv_transpose3d,
             "3-D transposed convolution (fractionally strided; the gradient of Conv3d) with "
             "optional bias, strides, dilations, pads, output_padding and groups, in NCDHW.",
             conv_transpose_outputs, conv_transpose3d_infer, conv_transpose_run, NULL, NULL, NULL,
             NULL),
    {NXE_INFO("DepthToSpace",
              "Rearranges blocks of channels into spatial blocks (pixel shuffle); any dtype.",
              depth_to_space_inputs, depth_to_space_outputs, depth_to_space_attrs),
     sizeof(depth_to_space_params), depth_to_space_infer, depth_to_space_run},
};

const nxe_op_family nxe_ops_conv = {conv_defs, (int32_t)(sizeof conv_defs / sizeof conv_defs[0])};
