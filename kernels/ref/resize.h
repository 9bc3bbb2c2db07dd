/* resize.h — reference kernels for the resize op family (portable C11, the oracle for all
 * others): ONNX Resize with nearest, linear and cubic interpolation over any axes, and
 * GridSample, computed per output element from plain-value settings, so a kernel needs no
 * tables or scratch. */
#ifndef NXE_KERNELS_REF_RESIZE_H
#define NXE_KERNELS_REF_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#define NXE_REF_RESIZE_MAX_RANK 6

enum nxe_ref_resize_mode { NXE_REF_RESIZE_NEAREST, NXE_REF_RESIZE_LINEAR, NXE_REF_RESIZE_CUBIC };

/* How an output coordinate x maps to an input coordinate (ONNX coordinate_transformation_mode;
 * s is the axis scale, n_in the input size, n_out = s * n_in as a real number). */
enum nxe_ref_resize_coord {
    NXE_REF_COORD_HALF_PIXEL,          /* (x + 0.5) / s - 0.5 */
    NXE_REF_COORD_PYTORCH_HALF_PIXEL,  /* as half_pixel, but -0.5 when n_out == 1 */
    NXE_REF_COORD_ALIGN_CORNERS,       /* x * (n_in - 1) / (n_out - 1); 0 when n_out == 1 */
    NXE_REF_COORD_ASYMMETRIC,          /* x / s */
    NXE_REF_COORD_TF_CROP_AND_RESIZE,  /* within the region of interest; outside the input
                                           gives the extrapolation value */
    NXE_REF_COORD_HALF_PIXEL_SYMMETRIC /* half_pixel, centred for the rounded output size */
};

/* Which neighbour nearest mode takes (ONNX nearest_mode); an integral coordinate is itself. */
enum nxe_ref_resize_nearest {
    NXE_REF_NEAREST_ROUND_PREFER_FLOOR,
    NXE_REF_NEAREST_ROUND_PREFER_CEIL,
    NXE_REF_NEAREST_FLOOR,
    NXE_REF_NEAREST_CEIL
};

typedef struct nxe_ref_resize_axis {
    int64_t in;       /* input size, >= 1 */
    int64_t out;      /* output size */
    int32_t identity; /* nonzero: the axis is copied (scale 1, same size, full roi) */
    double scale;
    double roi_start; /* tf_crop_and_resize only, normalized to [0, 1] of the input */
    double roi_end;
} nxe_ref_resize_axis;

typedef struct nxe_ref_resize_config {
    int32_t ndim;    /* 1..NXE_REF_RESIZE_MAX_RANK */
    int32_t mode;    /* enum nxe_ref_resize_mode */
    int32_t coord;   /* enum nxe_ref_resize_coord */
    int32_t nearest; /* enum nxe_ref_resize_nearest */
    int32_t
        exclude_outside; /* nonzero: taps outside the input get weight 0, the rest renormalized */
    double cubic_a;
    double extrapolation;
    nxe_ref_resize_axis axes[NXE_REF_RESIZE_MAX_RANK];
} nxe_ref_resize_config;

/* Writes output elements [begin, end) of a dense f32 tensor resized from the dense src. The
 * taps of all axes are combined in double and rounded once. */
void nxe_ref_f32_resize(const nxe_ref_resize_config *config, const float *src, float *dst,
                        int64_t begin, int64_t end);

/* Nearest mode for any element size: copies the chosen element, or `fill` (elem_size bytes)
 * where tf_crop_and_resize extrapolates. `config->mode` must be NEAREST. */
void nxe_ref_x8_resize_nearest(const nxe_ref_resize_config *config, size_t elem_size,
                               const void *fill, const void *src, void *dst, int64_t begin,
                               int64_t end);

/* GridSample: X of shape (batch, channels, in[0], .., in[rank - 1]) sampled at the points of a
 * grid of shape (batch, points..., rank), whose last axis holds normalized coordinates in
 * [-1, 1] in reverse axis order (x for the last axis of X first). The output has shape
 * (batch, channels, points...). Follows ONNX GridSample: a coordinate maps to
 * (c + 1) / 2 * (in - 1) with align_corners, else ((c + 1) * in - 1) / 2; nearest rounds half
 * to even; linear takes 2 taps per axis, cubic 4 (Keys kernel, a = -0.75). Padding: zeros
 * (samples outside read 0), border (clamped to the edge) or reflection (mirrored at the
 * borders: the corner pixels' centres with align_corners, their outer edges without). A NaN
 * coordinate gives a NaN sample. */
#define NXE_REF_GRID_SAMPLE_MAX_RANK 3

enum nxe_ref_grid_padding {
    NXE_REF_GRID_PADDING_ZEROS,
    NXE_REF_GRID_PADDING_BORDER,
    NXE_REF_GRID_PADDING_REFLECTION
};

typedef struct nxe_ref_grid_sample_config {
    int32_t rank;          /* spatial axes, 1..NXE_REF_GRID_SAMPLE_MAX_RANK */
    int32_t mode;          /* enum nxe_ref_resize_mode */
    int32_t padding;       /* enum nxe_ref_grid_padding */
    int32_t align_corners; /* nonzero: -1 and 1 are the centres of the corner pixels */
    int64_t channels;
    int64_t in[NXE_REF_GRID_SAMPLE_MAX_RANK]; /* spatial sizes of X, each >= 1 */
    int64_t points;                           /* grid points per batch item */
} nxe_ref_grid_sample_config;

/* Writes the samples of grid points [begin, end), counted over batch * points (every channel
 * of each), taps combined in double and rounded once. */
void nxe_ref_f32_grid_sample(const nxe_ref_grid_sample_config *config, const float *x,
                             const float *grid, float *y, int64_t begin, int64_t end);

#endif
