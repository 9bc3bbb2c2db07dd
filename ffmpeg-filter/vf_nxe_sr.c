/* vf_nxe_sr.c — the nxe_sr video filter: upscales each frame through libnxe_sr (nxe_sr.h),
 * which does the model, colour, chroma, alpha and tiling; the filter only maps FFmpeg's frames,
 * formats and options onto that ABI and never touches pixels itself. */

#include <nxe/nxe_sr.h>

#include "libavutil/opt.h"
#include "avfilter.h"
#include "formats.h"
#include "internal.h"
#include "video.h"

typedef struct NxeSrContext {
    const AVClass *class;
    char *model;
    int tile;
    int overlap;
    int precision;
    nxe_sr *sr;
} NxeSrContext;

/* No private "threads": every filter has that option already (AVFilterContext.nb_threads,
 * 0 by default), and it takes the key first, so its value is the library's thread count. */

#define OFFSET(x) offsetof(NxeSrContext, x)
#define FLAGS AV_OPT_FLAG_FILTERING_PARAM | AV_OPT_FLAG_VIDEO_PARAM
static const AVOption nxesr_options[] = {
    {"model",
     "built-in model name or .nxm file",
     OFFSET(model),
     AV_OPT_TYPE_STRING,
     {.str = "espcn-x2"},
     0,
     0,
     FLAGS},
    {"tile",
     "input tile side in pixels, >= 8 (0: library default, -1: untiled)",
     OFFSET(tile),
     AV_OPT_TYPE_INT,
     {.i64 = NXE_SR_TILE_DEFAULT},
     NXE_SR_TILE_NONE,
     INT_MAX,
     FLAGS},
    {"overlap",
     "input pixels tiles share with each neighbour (-1: the model's receptive radius, which makes "
     "tiles exact)",
     OFFSET(overlap),
     AV_OPT_TYPE_INT,
     {.i64 = NXE_SR_OVERLAP_DEFAULT},
     NXE_SR_OVERLAP_DEFAULT,
     INT_MAX,
     FLAGS},
    {"precision",
     "arithmetic the model may use",
     OFFSET(precision),
     AV_OPT_TYPE_INT,
     {.i64 = NXE_SR_PRECISION_FP32},
     NXE_SR_PRECISION_FP32,
     NXE_SR_PRECISION_INT8,
     FLAGS,
     "precision"},
    {"fp32",
     "exact fp32",
     0,
     AV_OPT_TYPE_CONST,
     {.i64 = NXE_SR_PRECISION_FP32},
     0,
     0,
     FLAGS,
     "precision"},
    {"relax",
     "fp32 work may run in bf16 with fp32 accumulation",
     0,
     AV_OPT_TYPE_CONST,
     {.i64 = NXE_SR_PRECISION_RELAX},
     0,
     0,
     FLAGS,
     "precision"},
    {"int8",
     "the model's int8 variant (ESPCN; within 0.05 dB of fp32)",
     0,
     AV_OPT_TYPE_CONST,
     {.i64 = NXE_SR_PRECISION_INT8},
     0,
     0,
     FLAGS,
     "precision"},
    {NULL}};

AVFILTER_DEFINE_CLASS(nxesr);

/* The pixel formats both sides know; which of them a session takes depends on its model. */
static const struct {
    enum AVPixelFormat av;
    int32_t nxe;
} pixel_formats[] = {
    {AV_PIX_FMT_GRAY8, NXE_SR_FORMAT_GRAY8},
    {AV_PIX_FMT_YUV420P, NXE_SR_FORMAT_YUV420P},
    {AV_PIX_FMT_YUV422P, NXE_SR_FORMAT_YUV422P},
    {AV_PIX_FMT_YUV444P, NXE_SR_FORMAT_YUV444P},
    {AV_PIX_FMT_YUV420P10LE, NXE_SR_FORMAT_YUV420P10},
    {AV_PIX_FMT_YUV422P10LE, NXE_SR_FORMAT_YUV422P10},
    {AV_PIX_FMT_YUV444P10LE, NXE_SR_FORMAT_YUV444P10},
    {AV_PIX_FMT_NV12, NXE_SR_FORMAT_NV12},
    {AV_PIX_FMT_RGB24, NXE_SR_FORMAT_RGB24},
    {AV_PIX_FMT_BGR24, NXE_SR_FORMAT_BGR24},
    {AV_PIX_FMT_RGBA, NXE_SR_FORMAT_RGBA},
    {AV_PIX_FMT_BGRA, NXE_SR_FORMAT_BGRA},
};

static int32_t nxe_format_of(enum AVPixelFormat format)
{
    for (int i = 0; i < FF_ARRAY_ELEMS(pixel_formats); i++)
        if (pixel_formats[i].av == format)
            return pixel_formats[i].nxe;
    return 0;
}

/* Logs the library's message for a failed call and turns its status into an AVERROR. */
static int library_error(AVFilterContext *ctx, nxe_status status, const char *what)
{
    av_log(ctx, AV_LOG_ERROR, "%s: %s (%s)\n", what, nxe_sr_last_error(), nxe_status_name(status));
    switch (status) {
    case NXE_ERROR_OUT_OF_MEMORY: return AVERROR(ENOMEM);
    case NXE_ERROR_INVALID_ARGUMENT:
    case NXE_ERROR_UNSUPPORTED:
    case NXE_ERROR_NOT_FOUND:
    case NXE_ERROR_SHAPE_MISMATCH:
    case NXE_ERROR_IO:
    case NXE_ERROR_FORMAT: return AVERROR(EINVAL);
    default: return AVERROR_EXTERNAL;
    }
}

static av_cold int init(AVFilterContext *ctx)
{
    NxeSrContext *s = ctx->priv;
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    nxe_sr_info info = {sizeof(nxe_sr_info)};
    nxe_status status;

    options.num_threads = ctx->nb_threads;
    options.tile_size = s->tile;
    options.tile_overlap = s->overlap;
    options.precision = s->precision;
    status = nxe_sr_open(s->model, &options, &s->sr);
    if (status != NXE_OK)
        return library_error(ctx, status, "cannot open model");
    status = nxe_sr_get_info(s->sr, &info);
    if (status != NXE_OK)
        return library_error(ctx, status, "cannot read the model's info");
    av_log(ctx, AV_LOG_VERBOSE, "model %s: x%d on %s, tile %d, overlap %d, %s, %d threads\n",
           info.name, info.scale, info.channels == 1 ? "luma" : "RGB", info.tile_size,
           info.tile_overlap,
           info.precision == NXE_SR_PRECISION_INT8    ? "int8"
           : info.precision == NXE_SR_PRECISION_RELAX ? "relax"
                                                      : "fp32",
           info.num_threads);
    return 0;
}

static int query_formats(AVFilterContext *ctx)
{
    NxeSrContext *s = ctx->priv;
    int formats[FF_ARRAY_ELEMS(pixel_formats) + 1];
    int count = 0;

    for (int i = 0; i < FF_ARRAY_ELEMS(pixel_formats); i++)
        if (nxe_sr_format_supported(s->sr, pixel_formats[i].nxe) == NXE_OK)
            formats[count++] = pixel_formats[i].av;
    if (!count) {
        av_log(ctx, AV_LOG_ERROR, "model %s takes none of the filter's pixel formats\n", s->model);
        return AVERROR(EINVAL);
    }
    formats[count] = AV_PIX_FMT_NONE;
    return ff_set_common_formats_from_list(ctx, formats);
}

static int config_output(AVFilterLink *outlink)
{
    AVFilterContext *ctx = outlink->src;
    NxeSrContext *s = ctx->priv;
    AVFilterLink *inlink = ctx->inputs[0];
    int32_t width, height;
    nxe_status status = nxe_sr_output_size(s->sr, inlink->w, inlink->h, &width, &height);

    if (status != NXE_OK)
        return library_error(ctx, status, "cannot size the output");
    outlink->w = width;
    outlink->h = height;
    /* Both axes grow by the same factor, so the pixels keep their shape. */
    outlink->sample_aspect_ratio = inlink->sample_aspect_ratio;
    return 0;
}

static void describe_frame(nxe_sr_frame *frame, const AVFrame *av_frame, int32_t format)
{
    frame->format = format;
    frame->width = av_frame->width;
    frame->height = av_frame->height;
    for (int i = 0; i < 4; i++) {
        frame->data[i] = av_frame->data[i];
        frame->strides[i] = av_frame->linesize[i];
    }
}

static int filter_frame(AVFilterLink *inlink, AVFrame *in)
{
    AVFilterContext *ctx = inlink->dst;
    NxeSrContext *s = ctx->priv;
    AVFilterLink *outlink = ctx->outputs[0];
    nxe_sr_frame input = NXE_SR_FRAME_INIT, output = NXE_SR_FRAME_INIT;
    int32_t format = nxe_format_of(in->format);
    nxe_status status;
    AVFrame *out;
    int ret;

    out = ff_get_video_buffer(outlink, outlink->w, outlink->h);
    if (!out) {
        av_frame_free(&in);
        return AVERROR(ENOMEM);
    }
    ret = av_frame_copy_props(out, in);
    if (ret < 0)
        goto fail;

    describe_frame(&input, in, format);
    input.color_matrix =
        in->colorspace == AVCOL_SPC_BT709 ? NXE_SR_MATRIX_BT709 : NXE_SR_MATRIX_BT601;
    input.color_range =
        in->color_range == AVCOL_RANGE_JPEG ? NXE_SR_RANGE_FULL : NXE_SR_RANGE_LIMITED;
    describe_frame(&output, out, format);
    output.color_matrix = input.color_matrix;
    output.color_range = input.color_range;
    status = nxe_sr_process(s->sr, &input, &output);
    if (status != NXE_OK) {
        ret = library_error(ctx, status, "cannot upscale the frame");
        goto fail;
    }
    av_frame_free(&in);
    return ff_filter_frame(outlink, out);

fail:
    av_frame_free(&in);
    av_frame_free(&out);
    return ret;
}

static av_cold void uninit(AVFilterContext *ctx)
{
    NxeSrContext *s = ctx->priv;
    nxe_sr_info info = {sizeof(nxe_sr_info)};

    /* A frame that is one tile runs on float planes bound to the model: nothing is copied
     * between them and the executable (SR API 0.5); only the tiles of larger frames are. */
    if (s->sr && nxe_sr_get_info(s->sr, &info) == NXE_OK)
        av_log(ctx, AV_LOG_VERBOSE,
               "%llu frames in %llu model runs; %llu bytes copied into the model's input, %llu "
               "out of its output\n",
               (unsigned long long)info.frames, (unsigned long long)info.tiles,
               (unsigned long long)info.bytes_copied_in, (unsigned long long)info.bytes_copied_out);
    nxe_sr_release(s->sr);
    s->sr = NULL;
}

static const AVFilterPad nxe_sr_inputs[] = {
    {
        .name = "default",
        .type = AVMEDIA_TYPE_VIDEO,
        .filter_frame = filter_frame,
    },
};

static const AVFilterPad nxe_sr_outputs[] = {
    {
        .name = "default",
        .type = AVMEDIA_TYPE_VIDEO,
        .config_props = config_output,
    },
};

const AVFilter ff_vf_nxe_sr = {
    .name = "nxe_sr",
    .description =
        NULL_IF_CONFIG_SMALL("Upscale video with a super-resolution model through libnxe_sr."),
    .priv_size = sizeof(NxeSrContext),
    .priv_class = &nxesr_class,
    .init = init,
    .uninit = uninit,
    FILTER_INPUTS(nxe_sr_inputs),
    FILTER_OUTPUTS(nxe_sr_outputs),
    FILTER_QUERY_FUNC(query_formats),
};
