/* sr_internal.h — what the parts of libnxe_sr share: error reporting through its own
 * last-error slot and the pixel-format table. Internal; nothing here is exported. */
#ifndef NXE_SR_INTERNAL_H
#define NXE_SR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nxe/nxe_sr.h"
#include "sr/metadata.h"

#if defined(__GNUC__)
#define SR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SR_PRINTF(fmt, args)
#endif

/* Checked int64 arithmetic for frame geometry: false, with *out unspecified, where the exact
 * result does not fit. Sizes a caller's numbers could push past int64 (plane spans from
 * strides, buffer totals) are formed with these; the tile loops work inside the bounds that
 * sr_check_frame (sides to 32768) and the options check (overlap below half a tile) set. */
static inline bool sr_mul(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool sr_add(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* Formats the message, records it for nxe_sr_last_error() and returns `status`. */
nxe_status sr_error(nxe_status status, const char *fmt, ...) SR_PRINTF(2, 3);
/* The same, with libnxe's nxe_last_error() text appended after ": ". */
nxe_status sr_error_with_cause(nxe_status status, const char *fmt, ...) SR_PRINTF(2, 3);

/* The file a model argument of nxe_sr_open names: a path as given, or a built-in name's file
 * (NXE_ERROR_NOT_FOUND for an unknown name). */
nxe_status sr_resolve_model(const char *model, char *path, size_t cap);
/* Whether an SR model's metadata marks it as an int8 variant ("precision": "int8"). */
bool sr_is_int8(const sr_metadata *m);
/* The file of the int8 variant beside model file `path`: "-int8" before its ".nxm" (or at the
 * end). False when it does not fit in `cap`. */
bool sr_int8_variant_path(const char *path, char *out, size_t cap);
/* The table entry of an NXE_SR_FORMAT_* code (struct_size and format left 0), or NULL. */
const nxe_sr_format_desc *sr_format_of(int32_t code);
/* Width and height in samples of plane `plane` of a width x height frame, and its row bytes. */
void sr_plane_geometry(const nxe_sr_format_desc *format, int32_t plane, int32_t width,
                       int32_t height, int32_t *plane_width, int32_t *plane_height,
                       int64_t *row_bytes);
/* Checks a frame's struct size, format, size and planes; `which` names it in messages
 * ("input", "output"). */
nxe_status sr_check_frame(const nxe_sr_frame *frame, const char *which,
                          const nxe_sr_format_desc **format);

#endif
