/* nxe_sr.h — the super-resolution frame ABI of libnxe_sr: open an SR model by built-in name or
 * .nxm path, then upscale images and video frames in common pixel formats, with colour
 * conversion, chroma and alpha handling and tiling done by the library. Plain C99; parses
 * with pycparser after `cc -E`. Link with -lnxe_sr (it brings libnxe).
 *
 * A worked example (a 960x540 YUV420P frame to 1920x1080):
 *
 *   nxe_sr *sr;
 *   nxe_sr_options opts = NXE_SR_OPTIONS_INIT;
 *   opts.precision = NXE_SR_PRECISION_RELAX;
 *   if (nxe_sr_open("espcn-x2", &opts, &sr) != NXE_OK) puts(nxe_last_error());
 *   nxe_sr_frame in = NXE_SR_FRAME_INIT, out = NXE_SR_FRAME_INIT;
 *   in.format = NXE_SR_FORMAT_YUV420P; in.width = 960; in.height = 540;
 *   in.color_matrix = NXE_SR_MATRIX_BT709;            // what the frame's source says
 *   in.data[0] = y; in.data[1] = u; in.data[2] = v;   // planes with their strides in bytes
 *   in.strides[0] = 960; in.strides[1] = in.strides[2] = 480;
 *   out.format = in.format; out.width = 1920; out.height = 1080;  // scale x input
 *   ...   // out.data / out.strides: the caller's output planes
 *   nxe_sr_process(sr, &in, &out);
 *   nxe_sr_release(sr);
 *
 * Luma models (ESPCN) run on Y and upscale chroma bicubically; RGB models (EDSR) run on RGB,
 * converting YUV with the frame's matrix and range. Alpha is upscaled bicubically and kept.
 * Frames larger than the tile size go through overlapping tiles; with the default overlap
 * (the model's receptive radius) the result equals an untiled run exactly. A frame of a new
 * size reconfigures the session (recompiles for the new tile shape) without reopening.
 *
 * Conventions are nxe.h's: every call returns nxe_status and leaves a message for
 * nxe_last_error(). One nxe_sr processes one frame at a time (calls must not overlap);
 * distinct nxe_sr objects may be used from distinct threads.
 */
#ifndef NXE_NXE_SR_H
#define NXE_NXE_SR_H

#include "nxe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NXE_SR_API_VERSION_MAJOR 0
#define NXE_SR_API_VERSION_MINOR 1

/* (major << 16) | minor of the libnxe_sr actually loaded. */
NXE_API uint32_t nxe_sr_api_version(void);

/* ---- Pixel formats ----------------------------------------------------------------------
 * Planar YUV: data[0] Y, data[1] U (Cb), data[2] V (Cr); 4:2:0 chroma planes are
 * ceil(w/2) x ceil(h/2), 4:2:2 ceil(w/2) x h. The 10-bit formats hold one sample per
 * little-endian uint16 (values 0..1023, as FFmpeg's yuv4xxp10le). NV12: data[0] Y, data[1]
 * interleaved UV at 4:2:0. Packed RGB formats use data[0] only; RGBA/BGRA keep alpha. */
#define NXE_SR_FORMAT_GRAY8 1
#define NXE_SR_FORMAT_YUV420P 2
#define NXE_SR_FORMAT_YUV422P 3
#define NXE_SR_FORMAT_YUV444P 4
#define NXE_SR_FORMAT_YUV420P10 5
#define NXE_SR_FORMAT_YUV422P10 6
#define NXE_SR_FORMAT_YUV444P10 7
#define NXE_SR_FORMAT_NV12 8
#define NXE_SR_FORMAT_RGB24 9
#define NXE_SR_FORMAT_BGR24 10
#define NXE_SR_FORMAT_RGBA 11
#define NXE_SR_FORMAT_BGRA 12

/* Short lower-case name of a format ("yuv420p10", as FFmpeg spells it without "le"), or NULL
 * for a code that is not one; static storage. */
NXE_API const char *nxe_sr_format_name(int32_t format);

/* Colour of a frame, as the caller states it. YUV<->RGB conversion (RGB frames through a luma
 * model, YUV frames through an RGB model) uses them; they are ignored where none happens. */
#define NXE_SR_MATRIX_BT601 0
#define NXE_SR_MATRIX_BT709 1
#define NXE_SR_RANGE_LIMITED 0 /* Y 16..235, chroma 16..240 (x4 at 10 bits) */
#define NXE_SR_RANGE_FULL 1

typedef struct nxe_sr_frame {
    uint32_t struct_size; /* sizeof(nxe_sr_frame) */
    int32_t format;       /* NXE_SR_FORMAT_* */
    int32_t width;        /* in pixels, >= 1 */
    int32_t height;
    int32_t color_matrix; /* NXE_SR_MATRIX_*; the output frame's is ignored (the input's holds) */
    int32_t color_range;  /* NXE_SR_RANGE_* */
    void *data[4];        /* planes, first row first; unused planes may be NULL */
    int64_t strides[4];   /* bytes from one row to the next; negative for bottom-up; the
                             magnitude at least the row's bytes */
} nxe_sr_frame;
#define NXE_SR_FRAME_INIT                                                                     \
    {sizeof(nxe_sr_frame), 0, 0, 0, NXE_SR_MATRIX_BT601, NXE_SR_RANGE_LIMITED, {0, 0, 0, 0}, \
     {0, 0, 0, 0}}

/* ---- Sessions ---------------------------------------------------------------------------- */

typedef struct nxe_sr nxe_sr;

#define NXE_SR_PRECISION_FP32 0  /* exact fp32 */
#define NXE_SR_PRECISION_RELAX 1 /* fp32 work may run in bf16 with fp32 accumulation */

/* tile_size: the library's choice, 1024 for luma models (a 960x540 frame runs whole, a
 * 1920x1080 one in four tiles) and 1024 / scale for RGB models (whose features at the output
 * size take the most memory); nxe_sr_get_info tells. */
#define NXE_SR_TILE_DEFAULT 0
#define NXE_SR_TILE_NONE (-1) /* tile_size: whole frames, never tiled */
#define NXE_SR_OVERLAP_DEFAULT (-1) /* tile_overlap: the model's receptive radius */

typedef struct nxe_sr_options {
    uint32_t struct_size;  /* sizeof(nxe_sr_options) */
    int32_t num_threads;   /* worker threads; 0 = one per online CPU */
    int32_t tile_size;     /* the largest side of an input tile in input pixels (8 to
                              16384), or NXE_SR_TILE_DEFAULT / NXE_SR_TILE_NONE; a frame is
                              cut into equal tiles no larger than this */
    int32_t tile_overlap;  /* input pixels of context a tile borrows from each neighbour, or
                              NXE_SR_OVERLAP_DEFAULT; below the receptive radius tiles may
                              show seams; tile_size - 2 * overlap must stay >= 1 */
    int32_t precision;     /* NXE_SR_PRECISION_* */
} nxe_sr_options;
#define NXE_SR_OPTIONS_INIT                                                                   \
    {sizeof(nxe_sr_options), 0, NXE_SR_TILE_DEFAULT, NXE_SR_OVERLAP_DEFAULT,                  \
     NXE_SR_PRECISION_FP32}

/* Opens `model`: a built-in name (see nxe_sr_builtin_name, e.g. "espcn-x2") looked up in the
 * model folder installed beside the library, or the environment variable NXE_SR_MODEL_DIR
 * when set; anything containing '/' or ending in ".nxm" is a path to a model file. The file
 * must be an SR model (metadata "task": "super_resolution"). `options` may be NULL. Nothing is
 * compiled until the first frame. */
NXE_API nxe_status nxe_sr_open(const char *model, const nxe_sr_options *options, nxe_sr **out);
NXE_API void nxe_sr_release(nxe_sr *sr);

/* The built-in model names, index 0 .. count-1 (NXE_ERROR_NOT_FOUND past the end); static
 * storage. A name is listed whether or not its file is installed. */
NXE_API nxe_status nxe_sr_builtin_count(int32_t *count);
NXE_API nxe_status nxe_sr_builtin_name(int32_t index, const char **name);

typedef struct nxe_sr_info {
    uint32_t struct_size;     /* sizeof(nxe_sr_info) */
    int32_t scale;            /* output = scale x input in each dimension */
    int32_t channels;         /* 1: the model works on luma; 3: on RGB */
    int32_t receptive_radius; /* input pixels of context one output pixel depends on */
    int32_t tile_size;        /* in effect: input pixels per tile side, or NXE_SR_TILE_NONE */
    int32_t tile_overlap;     /* in effect */
    int32_t precision;
    int32_t num_threads;      /* in effect */
    uint64_t frames;          /* frames processed since open */
    uint64_t tiles;           /* model runs since open */
    uint64_t reconfigurations; /* compilations for a new tile shape since open */
    char name[64];            /* the model's name from its metadata, NUL-terminated */
} nxe_sr_info;
NXE_API nxe_status nxe_sr_get_info(const nxe_sr *sr, nxe_sr_info *info);

/* NXE_OK when `format` can go through this session's model; NXE_ERROR_UNSUPPORTED (with a
 * message) otherwise, NXE_ERROR_INVALID_ARGUMENT for a code that is not a format. */
NXE_API nxe_status nxe_sr_format_supported(const nxe_sr *sr, int32_t format);

/* The output frame size for an input of width x height. */
NXE_API nxe_status nxe_sr_output_size(const nxe_sr *sr, int32_t width, int32_t height,
                                      int32_t *out_width, int32_t *out_height);

/* Upscales `input` into `output`, whose planes the caller owns: the same format, scale x the
 * input's width and height. Planes may not overlap. Fails without touching `output` on a
 * wrong size or format, a NULL plane, a stride smaller than a row, or an unsupported format.
 * Output samples are the model's values rounded to the nearest code and clamped to the
 * format's range. */
NXE_API nxe_status nxe_sr_process(nxe_sr *sr, const nxe_sr_frame *input,
                                  const nxe_sr_frame *output);

#ifdef __cplusplus
}
#endif

#endif /* NXE_NXE_SR_H */
