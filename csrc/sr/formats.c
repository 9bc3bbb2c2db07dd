/* formats.c — the pixel formats libnxe_sr reads and writes: their planes and geometry, and
 * the checks every frame passes before a byte of it is touched. Also the error helpers. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sr/sr_internal.h"

/* Frames are bounded so that every size computed from them fits comfortably in 64 bits. */
#define MAX_SIDE 32768

static nxe_status sr_error_v(nxe_status status, const char *cause, const char *fmt,
                             va_list args)
{
    char message[1024];
    int n = vsnprintf(message, sizeof message, fmt, args);
    size_t used = n < 0 ? 0 : (size_t)n < sizeof message ? (size_t)n : sizeof message - 1;
    message[used] = '\0';
    /* ": cause", cut to what is left of the buffer. */
    for (const char *from = cause ? ": " : ""; *from && used + 1 < sizeof message; from++)
        message[used++] = *from;
    for (const char *from = cause ? cause : ""; *from && used + 1 < sizeof message; from++)
        message[used++] = *from;
    message[used] = '\0';
    return nxe_set_last_error(status, message);
}

nxe_status sr_error(nxe_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    sr_error_v(status, NULL, fmt, args);
    va_end(args);
    return status;
}

nxe_status sr_error_with_cause(nxe_status status, const char *fmt, ...)
{
    char cause[1024];
    snprintf(cause, sizeof cause, "%s", nxe_last_error());
    va_list args;
    va_start(args, fmt);
    sr_error_v(status, cause, fmt, args);
    va_end(args);
    return status;
}

static const sr_format formats[] = {
    [NXE_SR_FORMAT_GRAY8] = {"gray8", SR_LAYOUT_GRAY, 8, 1, 1, 1, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV420P] = {"yuv420p", SR_LAYOUT_PLANAR, 8, 2, 2, 1, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV422P] = {"yuv422p", SR_LAYOUT_PLANAR, 8, 2, 1, 1, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV444P] = {"yuv444p", SR_LAYOUT_PLANAR, 8, 1, 1, 1, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV420P10] = {"yuv420p10", SR_LAYOUT_PLANAR, 10, 2, 2, 2, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV422P10] = {"yuv422p10", SR_LAYOUT_PLANAR, 10, 2, 1, 2, 0, 0, 0, -1},
    [NXE_SR_FORMAT_YUV444P10] = {"yuv444p10", SR_LAYOUT_PLANAR, 10, 1, 1, 2, 0, 0, 0, -1},
    [NXE_SR_FORMAT_NV12] = {"nv12", SR_LAYOUT_NV12, 8, 2, 2, 1, 0, 0, 0, -1},
    [NXE_SR_FORMAT_RGB24] = {"rgb24", SR_LAYOUT_PACKED, 8, 1, 1, 3, 0, 1, 2, -1},
    [NXE_SR_FORMAT_BGR24] = {"bgr24", SR_LAYOUT_PACKED, 8, 1, 1, 3, 2, 1, 0, -1},
    [NXE_SR_FORMAT_RGBA] = {"rgba", SR_LAYOUT_PACKED, 8, 1, 1, 4, 0, 1, 2, 3},
    [NXE_SR_FORMAT_BGRA] = {"bgra", SR_LAYOUT_PACKED, 8, 1, 1, 4, 2, 1, 0, 3},
};

const sr_format *sr_format_of(int32_t code)
{
    if (code <= 0 || code >= (int32_t)(sizeof formats / sizeof formats[0]))
        return NULL;
    return &formats[code];
}

NXE_API const char *nxe_sr_format_name(int32_t format)
{
    const sr_format *f = sr_format_of(format);
    return f ? f->name : NULL;
}

int32_t sr_format_planes(const sr_format *format)
{
    switch (format->layout) {
    case SR_LAYOUT_PLANAR: return 3;
    case SR_LAYOUT_NV12: return 2;
    default: return 1;
    }
}

void sr_plane_geometry(const sr_format *format, int32_t plane, int32_t width, int32_t height,
                       int32_t *plane_width, int32_t *plane_height, int64_t *row_bytes)
{
    int32_t w = width, h = height;
    if (plane > 0) {
        w = (width + format->chroma_fx - 1) / format->chroma_fx;
        h = (height + format->chroma_fy - 1) / format->chroma_fy;
    }
    int64_t samples_per_pixel = format->layout == SR_LAYOUT_PACKED ? format->pixel_bytes
                                : format->layout == SR_LAYOUT_NV12 && plane == 1 ? 2
                                                                                 : 1;
    int64_t sample_bytes = format->bits > 8 ? 2 : 1;
    *plane_width = w;
    *plane_height = h;
    *row_bytes = (int64_t)w * samples_per_pixel * sample_bytes;
}

nxe_status sr_check_frame(const nxe_sr_frame *frame, const char *which,
                          const sr_format **format)
{
    *format = NULL;
    if (!frame)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_process: the %s frame is NULL",
                        which);
    if (frame->struct_size < sizeof(nxe_sr_frame))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: %s frame struct_size is %u, expected at least %zu "
                        "(initialize with NXE_SR_FRAME_INIT)",
                        which, frame->struct_size, sizeof(nxe_sr_frame));
    const sr_format *f = sr_format_of(frame->format);
    if (!f)
        return sr_error(NXE_ERROR_UNSUPPORTED,
                        "nxe_sr_process: the %s frame has unknown pixel format %d (known: "
                        "NXE_SR_FORMAT_GRAY8 .. NXE_SR_FORMAT_BGRA, 1 .. 12)",
                        which, frame->format);
    if (frame->width < 1 || frame->height < 1 || frame->width > MAX_SIDE ||
        frame->height > MAX_SIDE)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: the %s frame is %dx%d; sides must be 1 to %d", which,
                        frame->width, frame->height, MAX_SIDE);
    if (frame->color_matrix != NXE_SR_MATRIX_BT601 && frame->color_matrix != NXE_SR_MATRIX_BT709)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: the %s frame has unknown color_matrix %d", which,
                        frame->color_matrix);
    if (frame->color_range != NXE_SR_RANGE_LIMITED && frame->color_range != NXE_SR_RANGE_FULL)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: the %s frame has unknown color_range %d", which,
                        frame->color_range);
    for (int32_t p = 0; p < sr_format_planes(f); p++) {
        int32_t w, h;
        int64_t row_bytes;
        sr_plane_geometry(f, p, frame->width, frame->height, &w, &h, &row_bytes);
        if (!frame->data[p])
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_process: %s plane %d of a %s frame is NULL", which, p,
                            f->name);
        int64_t stride = frame->strides[p];
        if (stride == INT64_MIN || (stride < 0 ? -stride : stride) < row_bytes)
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_process: %s plane %d stride %" PRId64 " is smaller than its "
                            "row of %" PRId64 " bytes (%s, %dx%d)",
                            which, p, stride, row_bytes, f->name, frame->width, frame->height);
    }
    *format = f;
    return NXE_OK;
}
