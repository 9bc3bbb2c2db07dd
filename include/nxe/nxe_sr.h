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
 *   if (nxe_sr_open("espcn-x2", &opts, &sr) != NXE_OK) puts(nxe_sr_last_error());
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
 * (the model's receptive radius) the result equals an untiled run exactly when convolutions
 * run direct (int8, or NXE_WINOGRAD=off in the environment), and within one code value at a
 * few samples when fp32 3x3 layers run Winograd, as nxe's cost model chooses by default. A
 * frame of a new size reconfigures the session (recompiles for the new tile shape) without
 * reopening.
 *
 * Conventions are nxe.h's, with libnxe_sr's own last-error slot: every call that can fail
 * returns an nxe_status (enum nxe_status_code; callers must accept codes they do not know) and,
 * on failure, leaves a message for nxe_sr_last_error() on the calling thread. Pointers the
 * caller passes are borrowed for the call. Each declaration names the SR API version that
 * added it.
 *
 * Threads: every function may be called from any thread. Calls on one nxe_sr may overlap:
 * the session runs them one at a time (nxe_sr_process and nxe_sr_get_info take the session's
 * lock; a call waits for the one in progress), so each gets exactly the result it would get
 * alone. For frames in parallel, open one session per thread; each session's model already
 * runs on a pool of worker threads. nxe_sr_release must not overlap any other call on the same
 * session.
 */
#ifndef NXE_NXE_SR_H
#define NXE_NXE_SR_H

#include "nxe.h"
#include "nxe_engine.h"

/* The symbols libnxe_sr exports; libnxe's own are NXE_API. */
#ifndef NXE_SR_API
#if defined(_WIN32) && defined(NXE_SR_BUILDING)
#define NXE_SR_API __declspec(dllexport)
#elif defined(_WIN32)
#define NXE_SR_API __declspec(dllimport)
#else
#define NXE_SR_API __attribute__((visibility("default")))
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version and errors -------------------------------------------------------------------
 * The SR API version, independent of libnxe's; the library file's version is
 * MAJOR.MINOR.0 of it. */

#define NXE_SR_API_VERSION_MAJOR 0
#define NXE_SR_API_VERSION_MINOR 5

/* since SR API 0.1. (major << 16) | minor of the libnxe_sr actually loaded; compare with the
 * macros above. Cannot fail. */
NXE_SR_API uint32_t nxe_sr_api_version(void);

/* since SR API 0.2. The message of the last libnxe_sr call that failed on this thread ("" if
 * none), naming the function and the argument, frame, plane or file at fault; where the cause
 * was a libnxe call, its nxe_last_error() text follows after ": ". Thread-local storage owned
 * by the library, valid until the next failing libnxe_sr call on the same thread. Cannot
 * fail. */
NXE_SR_API const char *nxe_sr_last_error(void);

/* ---- Pixel formats ------------------------------------------------------------------------
 * Planar YUV: data[0] Y, data[1] U (Cb), data[2] V (Cr); 4:2:0 chroma planes are
 * ceil(w/2) x ceil(h/2), 4:2:2 ceil(w/2) x h. The 10-bit formats hold one sample per
 * little-endian uint16 (values 0..1023, as FFmpeg's yuv4xxp10le). NV12: data[0] Y, data[1]
 * interleaved UV at 4:2:0. Packed RGB formats use data[0] only; RGBA/BGRA keep alpha.
 * nxe_sr_format_info describes each code; codes run from 1 without gaps. */
enum nxe_sr_format {
    NXE_SR_FORMAT_GRAY8 = 1, /* since SR API 0.1, as all codes up to BGRA */
    NXE_SR_FORMAT_YUV420P = 2,
    NXE_SR_FORMAT_YUV422P = 3,
    NXE_SR_FORMAT_YUV444P = 4,
    NXE_SR_FORMAT_YUV420P10 = 5,
    NXE_SR_FORMAT_YUV422P10 = 6,
    NXE_SR_FORMAT_YUV444P10 = 7,
    NXE_SR_FORMAT_NV12 = 8,
    NXE_SR_FORMAT_RGB24 = 9,
    NXE_SR_FORMAT_BGR24 = 10,
    NXE_SR_FORMAT_RGBA = 11,
    NXE_SR_FORMAT_BGRA = 12
};

/* since SR API 0.2. How a format's samples lie in its planes. */
enum nxe_sr_layout {
    NXE_SR_LAYOUT_GRAY = 1,       /* one plane of luma */
    NXE_SR_LAYOUT_PLANAR = 2,     /* Y, U, V planes */
    NXE_SR_LAYOUT_SEMIPLANAR = 3, /* a Y plane and an interleaved UV plane (NV12) */
    NXE_SR_LAYOUT_PACKED = 4      /* one plane of interleaved R, G, B (and A) samples */
};

/* since SR API 0.2. What a pixel format is, as nxe_sr_format_info tells it. */
typedef struct nxe_sr_format_desc {
    uint32_t struct_size;     /* sizeof(nxe_sr_format_desc), set by the caller */
    int32_t format;           /* the enum nxe_sr_format code described */
    const char *name;         /* lower case, as FFmpeg spells it without "le" ("yuv420p10");
                                 static storage */
    int32_t layout;           /* enum nxe_sr_layout */
    int32_t planes;           /* data[0] .. data[planes - 1] are used: 1 to 3 */
    int32_t bits;             /* significant bits per sample: 8 or 10 */
    int32_t sample_bytes;     /* bytes each sample is stored in: 1, or 2 (little-endian) */
    int32_t chroma_x;         /* planes after the first are ceil(width / chroma_x) samples */
    int32_t chroma_y;         /* wide and ceil(height / chroma_y) rows high (1 or 2) */
    int32_t plane_samples[4]; /* interleaved samples per pixel in each plane; 0 past planes */
    int32_t red, green, blue; /* packed: a channel's sample index within a pixel; else -1 */
    int32_t alpha;            /* the alpha sample's index within a pixel, or -1 for none */
} nxe_sr_format_desc;

/* since SR API 0.2. Describes pixel format `format` in *desc, whose struct_size the caller
 * sets. Returns NXE_OK; NXE_ERROR_NOT_FOUND for a code that is not a format (so a caller lists
 * them all by counting from 1 until this status); NXE_ERROR_INVALID_ARGUMENT when desc is NULL
 * or its struct_size is smaller than this header's (then *desc is left as it was). After
 * NXE_ERROR_NOT_FOUND *desc is zeroed but for struct_size. Nothing is allocated. */
NXE_SR_API nxe_status nxe_sr_format_info(int32_t format, nxe_sr_format_desc *desc);

/* since SR API 0.1. nxe_sr_format_info's name of `format`, or NULL for a code that is not one
 * (then without touching nxe_sr_last_error); static storage. */
NXE_SR_API const char *nxe_sr_format_name(int32_t format);

/* since SR API 0.1. The colour of a frame, as the caller states it. YUV<->RGB conversion (RGB
 * frames through a luma model, YUV frames through an RGB model) uses them; they are ignored
 * where none happens. */
enum nxe_sr_matrix { NXE_SR_MATRIX_BT601 = 0, NXE_SR_MATRIX_BT709 = 1 };
enum nxe_sr_range {
    NXE_SR_RANGE_LIMITED = 0, /* Y 16..235, chroma 16..240 (x4 at 10 bits) */
    NXE_SR_RANGE_FULL = 1
};

/* since SR API 0.1. A frame the caller owns: the library reads an input's planes and writes an
 * output's during nxe_sr_process, and keeps no pointer after it returns. */
typedef struct nxe_sr_frame {
    uint32_t struct_size; /* sizeof(nxe_sr_frame) */
    int32_t format;       /* enum nxe_sr_format */
    int32_t width;        /* in pixels, >= 1 */
    int32_t height;
    int32_t color_matrix; /* enum nxe_sr_matrix; the output frame's is ignored (the input's
                             holds) */
    int32_t color_range;  /* enum nxe_sr_range */
    void *data[4];        /* planes, first row first; unused planes may be NULL */
    int64_t strides[4];   /* bytes from one row to the next; negative for bottom-up; the
                             magnitude at least the row's bytes, and every row's address
                             (data + row x stride) representable */
} nxe_sr_frame;
/* clang-format off */
#define NXE_SR_FRAME_INIT                                                                     \
    {sizeof(nxe_sr_frame), 0, 0, 0, NXE_SR_MATRIX_BT601, NXE_SR_RANGE_LIMITED, {0, 0, 0, 0}, \
     {0, 0, 0, 0}}
/* clang-format on */

/* ---- Built-in models ---------------------------------------------------------------------- */

/* since SR API 0.1. The number of built-in model names in *count; NXE_ERROR_INVALID_ARGUMENT
 * when count is NULL. A name is listed whether or not its file is installed. */
NXE_SR_API nxe_status nxe_sr_builtin_count(int32_t *count);
/* since SR API 0.1. The built-in model name at `index` (0 .. count - 1, in the order the build
 * lists them) in *name, static storage. NXE_ERROR_NOT_FOUND past the end and
 * NXE_ERROR_INVALID_ARGUMENT when name is NULL; on failure *name, where there is one, is
 * NULL. */
NXE_SR_API nxe_status nxe_sr_builtin_name(int32_t index, const char **name);

/* ---- Sessions ----------------------------------------------------------------------------- */

/* since SR API 0.1. A session: one model, its options, and what it compiled for the frame
 * size it last saw. */
typedef struct nxe_sr nxe_sr;

/* since SR API 0.1. */
enum nxe_sr_precision {
    NXE_SR_PRECISION_FP32 = 0,  /* exact fp32 */
    NXE_SR_PRECISION_RELAX = 1, /* fp32 work may run in bf16 with fp32 accumulation */
    /* since SR API 0.4: the model's int8 variant, an SR model file whose metadata has
     * "precision": "int8" (8-bit activations and weights, int32 accumulation): the file
     * opened itself when it is one, else the file beside it named with "-int8" before ".nxm"
     * ("espcn-x2" -> espcn-x2-int8.nxm). Its PSNR is within 0.05 dB of fp32's on the
     * evaluation images (models/sr/README.md); the output has 8 bits of luma precision. */
    NXE_SR_PRECISION_INT8 = 2
};

/* since SR API 0.1. Special values of nxe_sr_options.tile_size and tile_overlap. */
enum nxe_sr_tiling {
    /* tile_size: the library's choice, 1024 for luma models (a 960x540 frame runs whole, a
     * 1920x1080 one in four tiles) and 1024 / scale for RGB models (whose features at the
     * output size take the most memory); nxe_sr_get_info tells. */
    NXE_SR_TILE_DEFAULT = 0,
    NXE_SR_TILE_NONE = -1,      /* tile_size: whole frames, never tiled */
    NXE_SR_OVERLAP_DEFAULT = -1 /* tile_overlap: the model's receptive radius */
};

/* since SR API 0.1. */
typedef struct nxe_sr_options {
    uint32_t struct_size; /* sizeof(nxe_sr_options) */
    int32_t num_threads;  /* worker threads; 0 = one per online CPU */
    int32_t tile_size;    /* the largest side of an input tile in input pixels (8 to
                              16384), or NXE_SR_TILE_DEFAULT / NXE_SR_TILE_NONE; a frame is
                              cut into equal tiles no larger than this */
    int32_t tile_overlap; /* input pixels of context a tile borrows from each neighbour, or
                              NXE_SR_OVERLAP_DEFAULT; below the receptive radius tiles may
                              show seams; 0 to (tile_size - 1) / 2, so that a tile keeps a
                              pixel of its own (0 to 8191 with NXE_SR_TILE_NONE) */
    int32_t precision;    /* enum nxe_sr_precision */
} nxe_sr_options;
#define NXE_SR_OPTIONS_INIT                                                                        \
    {sizeof(nxe_sr_options), 0, NXE_SR_TILE_DEFAULT, NXE_SR_OVERLAP_DEFAULT, NXE_SR_PRECISION_FP32}

/* since SR API 0.1. Opens `model`: a built-in name (see nxe_sr_builtin_name, e.g. "espcn-x2")
 * looked up in the model folder installed beside the library, or the environment variable
 * NXE_SR_MODEL_DIR when set; anything containing '/' or ending in ".nxm" is a path to a model
 * file. The file must be an SR model (metadata "task": "super_resolution"). `options` may be
 * NULL for the defaults. Nothing is compiled until the first frame. With
 * NXE_SR_PRECISION_INT8 the session runs the model's int8 variant (see enum nxe_sr_precision);
 * an int8 file opens only with that precision.
 * On NXE_OK, *out is a session the caller releases with nxe_sr_release; on failure *out (when
 * out is not NULL) is NULL and nothing is left to release. Returns NXE_ERROR_INVALID_ARGUMENT
 * (NULL out or model, an empty name, a bad option, an int8 file opened with another precision),
 * NXE_ERROR_NOT_FOUND (an unknown built-in name), NXE_ERROR_UNSUPPORTED (since SR API 0.4:
 * int8 asked of a model that has no int8 variant), NXE_ERROR_IO (a file that cannot be read), NXE_ERROR_FORMAT (a corrupt file or one
 * that is not an SR model), NXE_ERROR_OUT_OF_MEMORY. */
NXE_SR_API nxe_status nxe_sr_open(const char *model, const nxe_sr_options *options, nxe_sr **out);
/* since SR API 0.1. Frees the session and everything it holds; NULL does nothing. No other
 * call on the session may be in progress or follow. */
NXE_SR_API void nxe_sr_release(nxe_sr *sr);

/* since SR API 0.1. */
typedef struct nxe_sr_info {
    uint32_t struct_size;     /* sizeof(nxe_sr_info) */
    int32_t scale;            /* output = scale x input in each dimension */
    int32_t channels;         /* 1: the model works on luma; 3: on RGB */
    int32_t receptive_radius; /* input pixels of context one output pixel depends on */
    int32_t tile_size;        /* in effect: input pixels per tile side, or NXE_SR_TILE_NONE */
    int32_t tile_overlap;     /* in effect */
    int32_t precision;
    int32_t num_threads;       /* in effect */
    uint64_t frames;           /* frames processed since open */
    uint64_t tiles;            /* model runs since open */
    uint64_t reconfigurations; /* compilations for a new tile shape since open */
    char name[64];             /* the model's name from its metadata, NUL-terminated */
    uint64_t resident_bytes;   /* since SR API 0.3: bytes the session holds now, measured: the
                                  model file's mapped tensors, the executable's resident bytes
                                  (nxe_memory_info) and the frame planes */
    uint64_t bytes_copied_in;  /* since SR API 0.5: bytes copied from the session's float
                                  planes into the model's input since open; 0 while every
                                  frame is one tile (the planes are bound to the executable,
                                  nxe_binding_run) */
    uint64_t bytes_copied_out; /* since SR API 0.5: likewise out of the model's output */
} nxe_sr_info;
/* since SR API 0.1. Fills *info, whose struct_size the caller sets, with the session's model,
 * settings and counts; waits for a frame in progress on another thread. Returns NXE_OK, or
 * NXE_ERROR_INVALID_ARGUMENT for a NULL argument or a struct_size smaller than the SR API 0.2
 * struct's (then *info is left as it was); a 0.2 struct_size gets every field but
 * resident_bytes and the copy counts, a 0.3 or 0.4 one every field but the copy counts. Nothing
 * is allocated. */
NXE_SR_API nxe_status nxe_sr_get_info(const nxe_sr *sr, nxe_sr_info *info);

/* since SR API 0.1. NXE_OK when `format` can go through this session's model;
 * NXE_ERROR_UNSUPPORTED otherwise, NXE_ERROR_INVALID_ARGUMENT for a NULL session or a code
 * that is not a format. No out-params. */
NXE_SR_API nxe_status nxe_sr_format_supported(const nxe_sr *sr, int32_t format);

/* since SR API 0.1. The output frame size for an input of width x height in *out_width and
 * *out_height. NXE_ERROR_INVALID_ARGUMENT for a NULL argument or a side outside 1 .. 32768;
 * on failure the out-params that are not NULL hold 0. */
NXE_SR_API nxe_status nxe_sr_output_size(const nxe_sr *sr, int32_t width, int32_t height,
                                         int32_t *out_width, int32_t *out_height);

/* since SR API 0.1. Upscales `input` into `output`, whose planes the caller owns: the same
 * format, scale x the input's width and height. Planes may not overlap. Output samples are the
 * model's values rounded to the nearest code and clamped to the format's range. A frame of a
 * new size first reconfigures the session; a call made while another thread's call on the
 * same session is in progress waits for it.
 * Returns NXE_OK; NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a bad struct_size, side,
 * colour, NULL plane, stride smaller than a row or whose rows reach outside the address space,
 * formats that differ),
 * NXE_ERROR_SHAPE_MISMATCH (an output that is not scale x the input), NXE_ERROR_UNSUPPORTED
 * (an unknown format) — in these cases `output` is not touched — or, once the frame has been
 * checked, NXE_ERROR_OUT_OF_MEMORY, NXE_ERROR_FORMAT (a model whose graph does not fit its
 * metadata) or another libnxe status from compiling or running the model, after which the
 * output's contents are unspecified. The session stays usable after any failure. */
NXE_SR_API nxe_status nxe_sr_process(nxe_sr *sr, const nxe_sr_frame *input,
                                     const nxe_sr_frame *output);

/* ---- The engine's super_resolution kind --------------------------------------------------- */

/* since SR API 0.3. Registers the kind "super_resolution" in `engine` (nxe_engine.h): a model's
 * path is what nxe_sr_open takes (a built-in name or a .nxm file), its options `precision`
 * (fp32 | relax | int8 since SR API 0.4), `tile_size` and `num_threads` (default: the engine's). A request gives one
 * input `image`, uint8 [H, W, C] with C = 3 (RGB) or 4 (RGBA), and gets one output `image`,
 * uint8 [scale x H, scale x W, C]: nxe_sr_process of that frame as RGB24 or RGBA (BT.601
 * limited, as nxe_sr_frame's defaults). A request with another input fails alone with
 * NXE_ERROR_INVALID_ARGUMENT (a missing or extra input), NXE_ERROR_DTYPE_MISMATCH or
 * NXE_ERROR_SHAPE_MISMATCH (rank, channels or a side outside 1 .. 32768), and a message
 * naming what is wrong. A model's fingerprint is its file's (the built-in name's file for a
 * name; with precision int8 since SR API 0.4, the int8 variant's where there is one). Returns NXE_OK, or nxe_engine_register_kind's codes (NXE_ERROR_INVALID_ARGUMENT for
 * a NULL engine or a kind already registered there). */
NXE_SR_API nxe_status nxe_sr_engine_register(nxe_engine *engine);

#ifdef __cplusplus
}
#endif

#endif /* NXE_NXE_SR_H */
