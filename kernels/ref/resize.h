/* resize.h — reference kernels for the resize op family (portable C11, the oracle for all
 * others): ONNX Resize with nearest, linear and cubic interpolation over any axes, computed
 * per output element from plain-value settings, so a kernel needs no tables or scratch. */
#ifndef NXE_KERNELS_REF_RESIZE_H
#define NXE_KERNELS_REF_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#define NXE_REF_RESIZE_MAX_RANK 6

enum nxe_ref_resize_mode { NXE_REF_RESIZE_NEAREST, NXE_REF_RESIZE_LINEAR, NXE_REF_RESIZE_CUBIC };

/* How an output coordinate x maps to an input coordinate (ONNX coordinate_transformation_mode;
 * s is the axis scale, n_in the input size, n_out = s * n_in as a real number). */
enum nxe_ref_resize_coord {
    NXE_REF_COORD_HALF_PIXEL,           /* (x + 0.5) / s - 0.5 */
    NXE_REF_COORD_PYTORCH_HALF_PIXEL,   /* as half_pixel, but -0.5 when n_out == 1 */
    NXE_REF_COORD_ALIGN_CORNERS,        /* x * (n_in - 1) / (n_out - 1); 0 when n_out == 1 */
    NXE_REF_COORD_ASYMMETRIC,           /* x / s */
    NXE_REF_COORD_TF_CROP_AND_RESIZE,   /* within the region of interest; outside the input
                                           gives the extrapolation value */
    NXE_REF_COORD_HALF_PIXEL_SYMMETRIC  /* half_pixel, centred for the rounded output size */
};

/* Which neighbour nearest mode takes (ONNX nearest_mode); an integral coordinate is itself. */
enum nxe_ref_resize_nearest {
    NXE_REF_NEAREST_ROUND_PREFER_FLOOR,
    NXE_REF_NEAREST_ROUND_PREFER_CEIL,
    NXE_REF_NEAREST_FLOOR,
    NXE_REF_NEAREST_CEIL
};

typedef struct nxe_ref_resize_axis {
    int64_t in;         /* input size, >= 1 */
    int64_t out;        /* output size */
    int32_t identity;   /* nonzero: the axis is copied (scale 1, same size, full roi) */
    double scale;
    double roi_start;   /* tf_crop_and_resize only, normalized to [0, 1] of the input */
    double roi_end;
} nxe_ref_resize_axis;

typedef struct nxe_ref_resize_config {
    int32_t ndim;       /* 1..NXE_REF_RESIZE_MAX_RANK */
    int32_t mode;       /* enum nxe_ref_resize_mode */
    int32_t coord;      /* enum nxe_ref_resize_coord */
    int32_t nearest;    /* enum nxe_ref_resize_nearest */
    int32_t exclude_outside; /* nonzero: taps outside the input get weight 0, the rest renormalized */
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

#endif
