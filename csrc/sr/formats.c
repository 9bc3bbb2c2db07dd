/* formats.c — the pixel formats libnxe_sr reads and writes: the one table of their planes and
 * samples, which nxe_sr_format_info answers from, their geometry, and the checks every frame
 * passes before a byte of it is touched. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sr/sr_internal.h"

/* Frames are bounded so that every size computed from them fits comfortably in 64 bits. */
#define MAX_SIDE 32768

#define NOT_PACKED .red = -1, .green = -1, .blue = -1, .alpha = -1
#define YUV(format_name, sample_bits, cx, cy)                                                      \
    {.name = format_name,                                                                          \
     .layout = NXE_SR_LAYOUT_PLANAR,                                                               \
     .planes = 3,                                                                                  \
     .bits = sample_bits,                                                                          \
     .sample_bytes = ((sample_bits) + 7) / 8,                                                      \
     .chroma_x = cx,                                                                               \
     .chroma_y = cy,                                                                               \
     .plane_samples = {1, 1, 1},                                                                   \
     NOT_PACKED}
#define PACKED(format_name, r, g, b, a)                                                            \
    {.name = format_name,                                                                          \
     .layout = NXE_SR_LAYOUT_PACKED,                                                               \
     .planes = 1,                                                                                  \
     .bits = 8,                                                                                    \
     .sample_bytes = 1,                                                                            \
     .chroma_x = 1,                                                                                \
     .chroma_y = 1,                                                                                \
     .plane_samples = {(a) < 0 ? 3 : 4},                                                           \
     .red = r,                                                                                     \
     .green = g,                                                                                   \
     .blue = b,                                                                                    \
     .alpha = a}

static const nxe_sr_format_desc formats[] = {
    [NXE_SR_FORMAT_GRAY8] = {.name = "gray8",
                             .layout = NXE_SR_LAYOUT_GRAY,
                             .planes = 1,
                             .bits = 8,
                             .sample_bytes = 1,
                             .chroma_x = 1,
                             .chroma_y = 1,
                             .plane_samples = {1},
                             NOT_PACKED},
    [NXE_SR_FORMAT_YUV420P] = YUV("yuv420p", 8, 2, 2),
    [NXE_SR_FORMAT_YUV422P] = YUV("yuv422p", 8, 2, 1),
    [NXE_SR_FORMAT_YUV444P] = YUV("yuv444p", 8, 1, 1),
    [NXE_SR_FORMAT_YUV420P10] = YUV("yuv420p10", 10, 2, 2),
    [NXE_SR_FORMAT_YUV422P10] = YUV("yuv422p10", 10, 2, 1),
    [NXE_SR_FORMAT_YUV444P10] = YUV("yuv444p10", 10, 1, 1),
    [NXE_SR_FORMAT_NV12] = {.name = "nv12",
                            .layout = NXE_SR_LAYOUT_SEMIPLANAR,
                            .planes = 2,
                            .bits = 8,
                            .sample_bytes = 1,
                            .chroma_x = 2,
                            .chroma_y = 2,
                            .plane_samples = {1, 2},
                            NOT_PACKED},
    [NXE_SR_FORMAT_RGB24] = PACKED("rgb24", 0, 1, 2, -1),
    [NXE_SR_FORMAT_BGR24] = PACKED("bgr24", 2, 1, 0, -1),
    [NXE_SR_FORMAT_RGBA] = PACKED("rgba", 0, 1, 2, 3),
    [NXE_SR_FORMAT_BGRA] = PACKED("bgra", 2, 1, 0, 3),
};
#define FORMAT_COUNT ((int32_t)(sizeof formats / sizeof formats[0]) - 1) /* codes 1 .. count */

const nxe_sr_format_desc *sr_format_of(int32_t code)
{
    if (code < 1 || code > FORMAT_COUNT)
        return NULL;
    return &formats[code];
}

NXE_SR_API nxe_status nxe_sr_format_info(int32_t format, nxe_sr_format_desc *desc)
{
    if (!desc)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_format_info: desc is NULL");
    uint32_t size = desc->struct_size;
    if (size < sizeof(nxe_sr_format_desc))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_format_info: desc.struct_size is %u, expected at least %zu", size,
                        sizeof(nxe_sr_format_desc));
    const nxe_sr_format_desc *entry = sr_format_of(format);
    if (!entry) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = size;
        return sr_error(NXE_ERROR_NOT_FOUND,
                        "nxe_sr_format_info: %d is not a pixel format (codes are 1 .. %d)", format,
                        FORMAT_COUNT);
    }
    *desc = *entry;
    desc->struct_size = size;
    desc->format = format;
    return NXE_OK;
}

NXE_SR_API const char *nxe_sr_format_name(int32_t format)
{
    const nxe_sr_format_desc *f = sr_format_of(format);
    return f ? f->name : NULL;
}

void sr_plane_geometry(const nxe_sr_format_desc *format, int32_t plane, int32_t width,
                       int32_t height, int32_t *plane_width, int32_t *plane_height,
                       int64_t *row_bytes)
{
    int32_t w = width, h = height;
    if (plane > 0) {
        w = (width + format->chroma_x - 1) / format->chroma_x;
        h = (height + format->chroma_y - 1) / format->chroma_y;
    }
    *plane_width = w;
    *plane_height = h;
    *row_bytes = (int64_t)w * format->plane_samples[plane] * format->sample_bytes;
}

/* Whether every row of a plane lies at an address: the rows reach |stride| x (rows - 1) bytes
 * below or above `data`, and a row's bytes past that, without wrapping around, and the whole
 * span is at most PTRDIFF_MAX bytes (pointer differences within it stay defined). */
static bool plane_fits_address_space(const void *data, int64_t stride, int32_t rows,
                                     int64_t row_bytes)
{
    int64_t reach, span;
    if (!sr_mul(stride < 0 ? -stride : stride, (int64_t)rows - 1, &reach) ||
        !sr_add(reach, row_bytes, &span) || span > PTRDIFF_MAX)
        return false;
    uintptr_t base = (uintptr_t)data;
    if (stride < 0) /* bottom-up: the rows go down from data, each row's bytes up */
        return (uint64_t)reach <= base && (uint64_t)row_bytes <= UINTPTR_MAX - base;
    return (uint64_t)span <= UINTPTR_MAX - base;
}

nxe_status sr_check_frame(const nxe_sr_frame *frame, const char *which,
                          const nxe_sr_format_desc **format)
{
    *format = NULL;
    if (!frame)
        return sr_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_sr_process: the %s frame is NULL", which);
    if (frame->struct_size < sizeof(nxe_sr_frame))
        return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                        "nxe_sr_process: %s frame struct_size is %u, expected at least %zu "
                        "(initialize with NXE_SR_FRAME_INIT)",
                        which, frame->struct_size, sizeof(nxe_sr_frame));
    const nxe_sr_format_desc *f = sr_format_of(frame->format);
    if (!f)
        return sr_error(NXE_ERROR_UNSUPPORTED,
                        "nxe_sr_process: the %s frame has unknown pixel format %d (known: "
                        "1 .. %d, see nxe_sr_format_info)",
                        which, frame->format, FORMAT_COUNT);
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
    for (int32_t p = 0; p < f->planes; p++) {
        int32_t w, h;
        int64_t row_bytes;
        sr_plane_geometry(f, p, frame->width, frame->height, &w, &h, &row_bytes);
        if (!frame->data[p])
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_process: %s plane %d of a %s frame is NULL", which, p, f->name);
        int64_t stride = frame->strides[p];
        if (stride == INT64_MIN || (stride < 0 ? -stride : stride) < row_bytes)
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_process: %s plane %d stride %" PRId64 " is smaller than its "
                            "row of %" PRId64 " bytes (%s, %dx%d)",
                            which, p, stride, row_bytes, f->name, frame->width, frame->height);
        if (!plane_fits_address_space(frame->data[p], stride, h, row_bytes))
            return sr_error(NXE_ERROR_INVALID_ARGUMENT,
                            "nxe_sr_process: %s plane %d stride %" PRId64 " over %d rows reaches "
                            "outside the address space from its data pointer (%s, %dx%d)",
                            which, p, stride, h, f->name, frame->width, frame->height);
    }
    *format = f;
    return NXE_OK;
}
