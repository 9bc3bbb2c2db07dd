/* fuzz_sr_frames.c — libFuzzer harness over libnxe_sr's frame path: the input decodes session
 * options and an input/output frame pair (format, sides, colour, strides, data pointers) that
 * go through nxe_sr_open and nxe_sr_process on ESPCN x2. An independent reading of the
 * nxe_sr.h contract predicts each outcome: options outside their ranges and frames the
 * contract forbids must be refused with a message and an untouched output, every other small
 * frame must upscale. Frames are held small so that an execution takes about a millisecond. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_sr.h>

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_sr_frames: %s failed: %s\n", #cond, nxe_sr_last_error());        \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

#define MAX_SIDE 32768
#define MAX_TILE 16384
#define PLANE_CAP (1 << 16) /* the largest plane the harness allocates, in bytes */
#define CANARY 0xA5
#define SESSIONS 256 /* sessions kept open across inputs, by options and frame size */

/* The input, read front to back; past its end every read is 0. */
typedef struct reader {
    const uint8_t *data;
    size_t left;
} reader;

static uint8_t take8(reader *r)
{
    if (!r->left)
        return 0;
    r->left--;
    return *r->data++;
}

static uint64_t take64(reader *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | take8(r);
    return v;
}

/* Small sides, around the tile sizes below, or past the limits. The set is small so that
 * sessions compiled for a frame size are found again (a compilation costs tens of runs). */
static int32_t take_side(reader *r)
{
    static const int32_t small[] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 16, 17, 24, 25};
    static const int32_t extremes[] = {0,         -1,        MAX_SIDE, MAX_SIDE + 1,
                                       INT32_MAX, INT32_MIN, 1 << 20,  16385};
    uint8_t b = take8(r);
    if (b < 240)
        return small[b % 16];
    return extremes[b % 8];
}

/* ---- sessions ---- */

typedef struct session {
    nxe_sr_options options;
    int32_t width, height; /* the frame size it last compiled for */
    nxe_sr *sr;
} session;

static session sessions[SESSIONS];
static int next_session;
static int32_t scale, receptive_radius;

static bool options_valid(const nxe_sr_options *o)
{
    /* ESPCN x2 ships an int8 variant, so all three precisions open. */
    if (o->precision != NXE_SR_PRECISION_FP32 && o->precision != NXE_SR_PRECISION_RELAX &&
        o->precision != NXE_SR_PRECISION_INT8)
        return false;
    int64_t tile = o->tile_size == NXE_SR_TILE_DEFAULT ? 1024 : o->tile_size;
    if (tile != NXE_SR_TILE_NONE && (tile < 8 || tile > MAX_TILE))
        return false;
    int64_t overlap =
        o->tile_overlap == NXE_SR_OVERLAP_DEFAULT ? receptive_radius : o->tile_overlap;
    int64_t widest = tile == NXE_SR_TILE_NONE ? MAX_TILE : tile;
    return overlap >= 0 && 2 * overlap + 1 <= widest;
}

/* A session with these options for frames of this size, opened once and kept; NULL where
 * open must refuse the options. */
static bool same_options(const nxe_sr_options *a, const nxe_sr_options *b)
{
    return a->tile_size == b->tile_size && a->tile_overlap == b->tile_overlap &&
           a->precision == b->precision;
}

static nxe_sr *session_for(const nxe_sr_options *options, int32_t width, int32_t height)
{
    int reusable = -1; /* a session with these options, compiled for another frame size */
    for (int i = 0; i < SESSIONS; i++) {
        if (!sessions[i].sr || !same_options(&sessions[i].options, options))
            continue;
        if (sessions[i].width == width && sessions[i].height == height)
            return sessions[i].sr;
        reusable = i;
    }
    /* Recompiling a session for a new frame size costs less than opening one, which reads
     * and verifies the model file again. */
    if (reusable >= 0) {
        sessions[reusable].width = width;
        sessions[reusable].height = height;
        return sessions[reusable].sr;
    }
    nxe_sr *sr = (nxe_sr *)&next_session; /* open must overwrite it */
    nxe_status status = nxe_sr_open(FUZZ_SR_MODEL, options, &sr);
    if (!options_valid(options)) {
        REQUIRE(status == NXE_ERROR_INVALID_ARGUMENT && sr == NULL);
        REQUIRE(nxe_sr_last_error()[0] != '\0');
        return NULL;
    }
    REQUIRE(status == NXE_OK && sr != NULL);
    session *slot = &sessions[next_session];
    next_session = (next_session + 1) % SESSIONS;
    nxe_sr_release(slot->sr);
    slot->options = *options;
    slot->width = width;
    slot->height = height;
    slot->sr = sr;
    return sr;
}

static void decode_options(reader *r, nxe_sr_options *o)
{
    static const int32_t tiles[] = {0, -1, 8, 9, 10, 12, 16, 24};
    static const int32_t overlaps[] = {-1, 0, 1, 2, 3, 4, 5, 7};
    nxe_sr_options init = NXE_SR_OPTIONS_INIT;
    *o = init;
    o->num_threads = 1;
    uint8_t b = take8(r);
    o->tile_size = b < 224 ? tiles[b % 8] : (int32_t)(uint32_t)take64(r);
    b = take8(r);
    o->tile_overlap = b < 224 ? overlaps[b % 8] : (int32_t)(uint32_t)take64(r);
    b = take8(r);
    o->precision = b < 248 ? b % 3 : (int32_t)(uint32_t)take64(r);
}

/* ---- frames ---- */

typedef struct frame {
    nxe_sr_frame f;
    nxe_sr_format_desc desc;
    bool known;          /* the format is one */
    uint8_t *buffers[4]; /* what the harness allocated, or NULL */
    size_t sizes[4];
} frame;

static void plane_geometry(const frame *fr, int p, int64_t *rows, int64_t *row_bytes)
{
    int64_t w = fr->f.width, h = fr->f.height;
    if (p > 0) {
        w = (w + fr->desc.chroma_x - 1) / fr->desc.chroma_x;
        h = (h + fr->desc.chroma_y - 1) / fr->desc.chroma_y;
    }
    *rows = h;
    *row_bytes = w * fr->desc.plane_samples[p] * fr->desc.sample_bytes;
}

static int64_t take_stride(reader *r, int64_t row_bytes)
{
    static const int64_t extremes[] = {INT64_MAX,     INT64_MIN,        -INT64_MAX,
                                       INT64_MAX / 2, (int64_t)1 << 62, -((int64_t)1 << 62),
                                       1 << 20,       -(1 << 20)};
    uint8_t mode = take8(r) % 16;
    if (mode < 8)
        return row_bytes;
    if (mode < 10)
        return row_bytes + take8(r) % 64;
    if (mode < 12)
        return -(row_bytes + take8(r) % 64);
    if (mode == 12)
        return row_bytes - 1 - take8(r) % 4;
    if (mode == 13)
        return extremes[take8(r) % 8];
    if (mode == 14)
        return (int64_t)take64(r);
    return 0;
}

/* Decodes a frame's fields; the planes get pointers later, once it is known what they need. */
static void decode_frame(reader *r, frame *fr, int32_t format, int32_t width, int32_t height)
{
    nxe_sr_frame init = NXE_SR_FRAME_INIT;
    memset(fr, 0, sizeof *fr);
    fr->f = init;
    fr->f.format = format;
    fr->f.width = width;
    fr->f.height = height;
    uint8_t b = take8(r);
    fr->f.color_matrix = b < 250 ? b % 2 : (int32_t)(b % 4) - 1;
    b = take8(r);
    fr->f.color_range = b < 250 ? b % 2 : (int32_t)(b % 4) - 1;
    fr->desc.struct_size = sizeof fr->desc;
    fr->known = nxe_sr_format_info(format, &fr->desc) == NXE_OK;
    if (!fr->known || width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE)
        return;
    for (int p = 0; p < fr->desc.planes; p++) {
        int64_t rows, row_bytes;
        plane_geometry(fr, p, &rows, &row_bytes);
        fr->f.strides[p] = take_stride(r, row_bytes);
    }
}

/* Bytes from the lowest to the highest byte a plane's rows cover, or -1 beyond PTRDIFF_MAX. */
static __int128 plane_span(const frame *fr, int p)
{
    int64_t rows, row_bytes;
    plane_geometry(fr, p, &rows, &row_bytes);
    __int128 stride = fr->f.strides[p];
    __int128 span = (stride < 0 ? -stride : stride) * (rows - 1) + row_bytes;
    return span > PTRDIFF_MAX ? -1 : span;
}

/* What the contract says of a frame apart from where its planes lie: whether it is refused. */
static bool frame_refused(const frame *fr)
{
    const nxe_sr_frame *f = &fr->f;
    if (!fr->known || f->width < 1 || f->height < 1 || f->width > MAX_SIDE || f->height > MAX_SIDE)
        return true;
    if ((f->color_matrix != 0 && f->color_matrix != 1) ||
        (f->color_range != 0 && f->color_range != 1))
        return true;
    for (int p = 0; p < fr->desc.planes; p++) {
        int64_t rows, row_bytes;
        plane_geometry(fr, p, &rows, &row_bytes);
        int64_t s = f->strides[p];
        if (s == INT64_MIN || (s < 0 ? -s : s) < row_bytes || plane_span(fr, p) < 0)
            return true;
    }
    return false;
}

/* Planes of the sizes the frame describes, with data at the first row (the highest address of
 * a bottom-up plane). False where one would exceed PLANE_CAP. */
static bool allocate_planes(frame *fr, uint8_t fill)
{
    for (int p = 0; p < fr->desc.planes; p++)
        if (plane_span(fr, p) > PLANE_CAP)
            return false;
    for (int p = 0; p < fr->desc.planes; p++) {
        int64_t rows, row_bytes;
        plane_geometry(fr, p, &rows, &row_bytes);
        fr->sizes[p] = (size_t)plane_span(fr, p);
        fr->buffers[p] = malloc(fr->sizes[p]);
        REQUIRE(fr->buffers[p] != NULL);
        memset(fr->buffers[p], fill, fr->sizes[p]);
        int64_t s = fr->f.strides[p];
        fr->f.data[p] = fr->buffers[p] + (s < 0 ? -s * (rows - 1) : 0);
    }
    return true;
}

static void free_planes(frame *fr)
{
    for (int p = 0; p < 4; p++)
        free(fr->buffers[p]);
}

static void fill_input(reader *r, frame *fr)
{
    uint8_t seed = take8(r);
    for (int p = 0; p < fr->desc.planes; p++)
        for (size_t i = 0; i < fr->sizes[p]; i++)
            fr->buffers[p][i] = (uint8_t)(seed + i * 37u + (i >> 3));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scale) {
        nxe_sr *sr = NULL;
        REQUIRE(nxe_sr_open(FUZZ_SR_MODEL, NULL, &sr) == NXE_OK);
        nxe_sr_info info = {.struct_size = sizeof info};
        REQUIRE(nxe_sr_get_info(sr, &info) == NXE_OK);
        scale = info.scale;
        receptive_radius = info.receptive_radius;
        nxe_sr_release(sr);
    }
    reader r = {data, size};
    nxe_sr_options options;
    decode_options(&r, &options);
    uint8_t b = take8(&r);
    int32_t format = b < 240 ? 1 + b % NXE_SR_FORMAT_BGRA : (int32_t)(b % 16) - 2;
    int32_t width = take_side(&r), height = take_side(&r);
    nxe_sr *sr = session_for(&options, width, height);
    if (!sr)
        return 0;
    frame in, out;
    decode_frame(&r, &in, format, width, height);
    /* The output: usually what the input needs, else another format or size. */
    b = take8(&r);
    int32_t out_format = b < 240 ? format : 1 + b % NXE_SR_FORMAT_BGRA;
    int64_t need_width = (int64_t)width * scale, need_height = (int64_t)height * scale;
    int64_t out_width = need_width, out_height = need_height;
    b = take8(&r);
    if (b >= 240)
        out_width += b % 2 ? 1 : -1;
    else if (b >= 232)
        out_height = take_side(&r);
    bool size_fits = out_width >= INT32_MIN && out_width <= INT32_MAX;
    decode_frame(&r, &out, out_format, size_fits ? (int32_t)out_width : INT32_MAX,
                 (int32_t)out_height);
    bool refused = frame_refused(&in) || frame_refused(&out) || out_format != format ||
                   out.f.width != need_width || out.f.height != need_height;

    /* Planes the harness cannot hold get a pointer from the input that must never be read. */
    bool held = !refused && allocate_planes(&in, 0) && allocate_planes(&out, CANARY);
    uint8_t canary[64];
    memset(canary, CANARY, sizeof canary);
    if (!held) {
        free_planes(&in);
        free_planes(&out);
        memset(in.buffers, 0, sizeof in.buffers);
        memset(out.buffers, 0, sizeof out.buffers);
        for (int p = 0; p < 4; p++) {
            uint8_t mode = take8(&r) % 4;
            in.f.data[p] = mode == 0 ? NULL : mode == 1 ? canary : (void *)(uintptr_t)take64(&r);
            out.f.data[p] = canary;
        }
        /* A plane refused for its place: NULL, or rows that wrap the address space. */
        for (int p = 0; in.known && !refused && p < in.desc.planes; p++) {
            uintptr_t base = (uintptr_t)in.f.data[p];
            int64_t rows, row_bytes;
            plane_geometry(&in, p, &rows, &row_bytes);
            __int128 reach =
                (__int128)(in.f.strides[p] < 0 ? -in.f.strides[p] : in.f.strides[p]) * (rows - 1);
            __int128 low = in.f.strides[p] < 0 ? (__int128)base - reach : (__int128)base;
            __int128 high = (__int128)base + (in.f.strides[p] < 0 ? 0 : reach) + row_bytes;
            refused = !base || low < 0 || high > (__int128)UINTPTR_MAX;
        }
        if (!refused)
            return 0; /* a frame too large to hold that the library would accept */
    } else {
        fill_input(&r, &in);
    }

    nxe_status status = nxe_sr_process(sr, &in.f, &out.f);
    if (refused) {
        REQUIRE(status == NXE_ERROR_INVALID_ARGUMENT || status == NXE_ERROR_SHAPE_MISMATCH ||
                status == NXE_ERROR_UNSUPPORTED);
        REQUIRE(nxe_sr_last_error()[0] != '\0');
        for (size_t i = 0; i < sizeof canary; i++)
            REQUIRE(canary[i] == CANARY);
        for (int p = 0; held && p < out.desc.planes; p++)
            for (size_t i = 0; i < out.sizes[p]; i++)
                REQUIRE(out.buffers[p][i] == CANARY);
    } else {
        REQUIRE(status == NXE_OK);
        /* 10-bit samples stay within their 10 bits. */
        for (int p = 0; out.desc.bits == 10 && p < out.desc.planes; p++) {
            int64_t rows, row_bytes;
            plane_geometry(&out, p, &rows, &row_bytes);
            for (int64_t y = 0; y < rows; y++) {
                const uint8_t *row = (const uint8_t *)out.f.data[p] + y * out.f.strides[p];
                for (int64_t x = 0; x + 1 < row_bytes; x += 2)
                    REQUIRE((row[x] | row[x + 1] << 8) <= 1023);
            }
        }
    }
    free_planes(&in);
    free_planes(&out);
    return 0;
}
