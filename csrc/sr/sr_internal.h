/* sr_internal.h — what the parts of libnxe_sr share: error reporting through libnxe's
 * last-error slot and the pixel-format table. Internal; nothing here is exported. */
#ifndef NXE_SR_INTERNAL_H
#define NXE_SR_INTERNAL_H

#include <stdint.h>

#include "nxe/nxe_sr.h"

#if defined(__GNUC__)
#define SR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SR_PRINTF(fmt, args)
#endif

/* Formats the message, records it for nxe_last_error() and returns `status`. */
nxe_status sr_error(nxe_status status, const char *fmt, ...) SR_PRINTF(2, 3);
/* The same, with nxe_last_error()'s current text appended after ": ". */
nxe_status sr_error_with_cause(nxe_status status, const char *fmt, ...) SR_PRINTF(2, 3);

enum sr_layout {
    SR_LAYOUT_GRAY,   /* one plane */
    SR_LAYOUT_PLANAR, /* Y, U, V planes */
    SR_LAYOUT_NV12,   /* Y plane, interleaved UV plane */
    SR_LAYOUT_PACKED  /* one plane of 3 or 4 interleaved 8-bit channels */
};

typedef struct sr_format {
    const char *name;
    int32_t layout;     /* enum sr_layout */
    int32_t bits;       /* 8 or 10 (stored in 16-bit samples) */
    int32_t chroma_fx;  /* horizontal chroma subsampling factor, 1 or 2 */
    int32_t chroma_fy;
    int32_t pixel_bytes; /* packed: bytes per pixel */
    int32_t r, g, b, a;  /* packed: byte offsets of the channels; a = -1 without alpha */
} sr_format;

/* The table entry of a NXE_SR_FORMAT_* code, or NULL. */
const sr_format *sr_format_of(int32_t code);
int32_t sr_format_planes(const sr_format *format);
/* Width and height in samples of plane `plane` of a width x height frame, and its row bytes. */
void sr_plane_geometry(const sr_format *format, int32_t plane, int32_t width, int32_t height,
                       int32_t *plane_width, int32_t *plane_height, int64_t *row_bytes);
/* Checks a frame's struct size, format, size and planes; `which` names it in messages
 * ("input", "output"). */
nxe_status sr_check_frame(const nxe_sr_frame *frame, const char *which,
                          const sr_format **format);

#endif
