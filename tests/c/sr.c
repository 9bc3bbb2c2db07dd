/* sr.c — libnxe_sr as a C user links it: open a built-in model, upscale YUV420P frames of two
 * sizes in one session, check that tiles give the untiled result byte for byte, that bad
 * frames and options get their status and a message in nxe_sr_last_error(), that the format
 * table answers for every code, and that int8 opens where a model has an int8 variant (and its
 * tiles equal its whole frames) and is refused where it has none. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_sr.h>

static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "sr.c:%d: %s failed (last error: %s)\n", __LINE__, #cond,              \
                    nxe_sr_last_error());                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

typedef struct frame_buffer {
    nxe_sr_frame frame;
    unsigned char *planes[3];
} frame_buffer;

static void frame_alloc(frame_buffer *b, int32_t w, int32_t h)
{
    nxe_sr_frame init = NXE_SR_FRAME_INIT;
    b->frame = init;
    b->frame.format = NXE_SR_FORMAT_YUV420P;
    b->frame.width = w;
    b->frame.height = h;
    for (int p = 0; p < 3; p++) {
        int32_t pw = p ? (w + 1) / 2 : w, ph = p ? (h + 1) / 2 : h;
        b->planes[p] = calloc((size_t)pw * (size_t)ph, 1);
        b->frame.data[p] = b->planes[p];
        b->frame.strides[p] = pw;
    }
}

static void frame_fill(frame_buffer *b, unsigned seed)
{
    for (int p = 0; p < 3; p++) {
        int32_t pw = p ? (b->frame.width + 1) / 2 : b->frame.width;
        int32_t ph = p ? (b->frame.height + 1) / 2 : b->frame.height;
        for (int32_t i = 0; i < pw * ph; i++) {
            seed = seed * 1103515245u + 12345u;
            b->planes[p][i] = (unsigned char)(64 + (seed >> 16) % 128);
        }
    }
}

static size_t frame_bytes(const frame_buffer *b, int p)
{
    int32_t pw = p ? (b->frame.width + 1) / 2 : b->frame.width;
    int32_t ph = p ? (b->frame.height + 1) / 2 : b->frame.height;
    return (size_t)pw * (size_t)ph;
}

static void frame_free(frame_buffer *b)
{
    for (int p = 0; p < 3; p++)
        free(b->planes[p]);
}

static nxe_sr *open_model(const char *name, int32_t tile)
{
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.num_threads = 2;
    options.tile_size = tile;
    nxe_sr *sr = NULL;
    EXPECT(nxe_sr_open(name, &options, &sr) == NXE_OK);
    return sr;
}

/* NXE_SR_PRECISION_INT8: ESPCN's int8 variant runs, reports itself and tiles exactly; EDSR has
 * none and says so. */
static void check_int8(void)
{
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.precision = NXE_SR_PRECISION_INT8;
    options.num_threads = 2;
    options.tile_size = NXE_SR_TILE_NONE;
    nxe_sr *whole = NULL, *tiled = NULL, *none = NULL;
    EXPECT(nxe_sr_open("espcn-x2", &options, &whole) == NXE_OK);
    EXPECT(nxe_sr_open("edsr-x2", &options, &none) == NXE_ERROR_UNSUPPORTED && none == NULL);
    EXPECT(strstr(nxe_sr_last_error(), "'edsr-x2' has no int8 variant") != NULL);
    options.tile_size = 16;
    EXPECT(nxe_sr_open("espcn-x2", &options, &tiled) == NXE_OK);
    if (!whole || !tiled) {
        nxe_sr_release(whole);
        nxe_sr_release(tiled);
        return;
    }
    nxe_sr_info info = {.struct_size = sizeof info};
    EXPECT(nxe_sr_get_info(whole, &info) == NXE_OK && info.precision == NXE_SR_PRECISION_INT8 &&
           strcmp(info.name, "espcn-x2") == 0);
    frame_buffer in, out_whole, out_tiled;
    frame_alloc(&in, 45, 33);
    frame_fill(&in, 9);
    frame_alloc(&out_whole, 90, 66);
    frame_alloc(&out_tiled, 90, 66);
    EXPECT(nxe_sr_process(whole, &in.frame, &out_whole.frame) == NXE_OK);
    EXPECT(nxe_sr_process(tiled, &in.frame, &out_tiled.frame) == NXE_OK);
    for (int p = 0; p < 3; p++)
        EXPECT(memcmp(out_whole.planes[p], out_tiled.planes[p], frame_bytes(&out_whole, p)) == 0);
    EXPECT(nxe_sr_get_info(tiled, &info) == NXE_OK && info.tiles > 2);
    frame_free(&in);
    frame_free(&out_whole);
    frame_free(&out_tiled);
    nxe_sr_release(whole);
    nxe_sr_release(tiled);
}

/* Options and frames at the int32 and int64 limits are refused with a message naming the
 * field, or, where the contract allows them, upscale. */
static void check_geometry_limits(nxe_sr *sr)
{
    /* 2 * overlap used to wrap: these opened, and the first tiled frame crashed. */
    const int32_t overlaps[] = {1 << 30, INT32_MAX, 512};
    for (int i = 0; i < 3; i++) {
        nxe_sr_options options = NXE_SR_OPTIONS_INIT;
        options.tile_overlap = overlaps[i];
        nxe_sr *opened = NULL;
        EXPECT(nxe_sr_open("espcn-x2", &options, &opened) == NXE_ERROR_INVALID_ARGUMENT);
        EXPECT(opened == NULL && strstr(nxe_sr_last_error(), "must be 0 to 511") != NULL);
    }
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.tile_size = INT32_MAX;
    nxe_sr *opened = NULL;
    EXPECT(nxe_sr_open("espcn-x2", &options, &opened) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "expected 8 to 16384") != NULL);
    options.tile_size = 10;
    options.tile_overlap = 4; /* the largest a 10-pixel tile allows */
    EXPECT(nxe_sr_open("espcn-x2", &options, &opened) == NXE_OK);

    frame_buffer in, out, want;
    frame_alloc(&in, 29, 1);
    frame_fill(&in, 5);
    frame_alloc(&out, 58, 2);
    frame_alloc(&want, 58, 2);
    if (opened) {
        EXPECT(nxe_sr_process(opened, &in.frame, &out.frame) == NXE_OK);
        EXPECT(nxe_sr_process(sr, &in.frame, &want.frame) == NXE_OK);
        for (int p = 0; p < 3; p++)
            EXPECT(memcmp(out.planes[p], want.planes[p], frame_bytes(&out, p)) == 0);
        nxe_sr_release(opened);
    }
    /* A one-row frame never steps a row: strides at the int64 limits are valid there. */
    const int64_t limits[] = {INT64_MAX, -INT64_MAX};
    for (int i = 0; i < 2; i++) {
        nxe_sr_frame one_row = in.frame;
        for (int p = 0; p < 3; p++)
            one_row.strides[p] = limits[i];
        memset(out.planes[0], 0, frame_bytes(&out, 0));
        EXPECT(nxe_sr_process(sr, &one_row, &out.frame) == NXE_OK);
        EXPECT(memcmp(out.planes[0], want.planes[0], frame_bytes(&out, 0)) == 0);
    }
    /* Strides whose rows reach past the address space, and sides past the limits. */
    nxe_sr_frame bad = out.frame;
    bad.strides[0] = INT64_MAX - 8; /* one stride down fits int64; the row's bytes past it do not */
    EXPECT(nxe_sr_process(sr, &in.frame, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "output plane 0 stride") != NULL &&
           strstr(nxe_sr_last_error(), "reaches outside the address space") != NULL);
    bad = out.frame;
    bad.strides[1] = -INT64_MAX;
    bad.strides[2] = INT64_MAX;
    EXPECT(nxe_sr_process(sr, &in.frame, &bad) == NXE_OK); /* the chroma planes have one row */
    bad.strides[0] = -INT64_MAX; /* two luma rows: one stride below the first wraps below 0 */
    EXPECT(nxe_sr_process(sr, &in.frame, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "reaches outside the address space") != NULL);
    /* Bottom-up from a high address: the rows stay above 0, but they span more than
     * PTRDIFF_MAX bytes (found by fuzzing: this frame was written to). */
    bad = out.frame;
    bad.data[0] = (uint8_t *)(uintptr_t)0xc2c2c2c2c2c2c2c2u;
    bad.strides[0] = -INT64_MAX;
    EXPECT(nxe_sr_process(sr, &in.frame, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "reaches outside the address space") != NULL);
    bad = out.frame;
    bad.strides[0] = INT64_MIN;
    EXPECT(nxe_sr_process(sr, &in.frame, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    nxe_sr_frame wide = in.frame;
    wide.width = INT32_MAX;
    EXPECT(nxe_sr_process(sr, &wide, &out.frame) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "sides must be 1 to 32768") != NULL);
    wide.width = 32768; /* the output would be 65536 wide */
    for (int p = 0; p < 3; p++)
        wide.strides[p] = 32768;
    bad = out.frame;
    bad.width = 65536;
    EXPECT(nxe_sr_process(sr, &wide, &bad) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "output frame is 65536x2") != NULL);
    frame_free(&in);
    frame_free(&out);
    frame_free(&want);
}

int main(void)
{
    EXPECT(nxe_sr_api_version() >> 16 == NXE_SR_API_VERSION_MAJOR);
    int32_t count = 0;
    EXPECT(nxe_sr_builtin_count(&count) == NXE_OK && count >= 1);
    const char *name = NULL;
    EXPECT(nxe_sr_builtin_name(0, &name) == NXE_OK && strcmp(name, "espcn-x2") == 0);

    /* Codes from 1 describe themselves until the first that is not a format. */
    nxe_sr_format_desc desc = {.struct_size = sizeof desc};
    int32_t formats = 0;
    while (nxe_sr_format_info(formats + 1, &desc) == NXE_OK) {
        formats++;
        EXPECT(desc.format == formats && desc.planes >= 1 && desc.planes <= 3);
        EXPECT(strcmp(desc.name, nxe_sr_format_name(formats)) == 0);
    }
    EXPECT(formats >= NXE_SR_FORMAT_BGRA && desc.name == NULL && desc.planes == 0);
    EXPECT(strstr(nxe_sr_last_error(), "not a pixel format") != NULL);
    EXPECT(nxe_sr_format_info(NXE_SR_FORMAT_NV12, &desc) == NXE_OK && desc.planes == 2 &&
           desc.plane_samples[1] == 2 && desc.layout == NXE_SR_LAYOUT_SEMIPLANAR);
    EXPECT(nxe_sr_format_info(NXE_SR_FORMAT_NV12, NULL) == NXE_ERROR_INVALID_ARGUMENT);

    /* Tiles equal the whole frame byte for byte with direct convolutions; Winograd's rounding
     * depends on where a frame is cut (docs/architecture.md). */
    setenv("NXE_WINOGRAD", "off", 1);
    nxe_sr *whole = open_model("espcn-x2", NXE_SR_TILE_NONE);
    nxe_sr *tiled = open_model("espcn-x2", 24);
    if (!whole || !tiled)
        return 1;
    nxe_sr_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT(nxe_sr_get_info(tiled, &info) == NXE_OK && info.scale == 2 && info.channels == 1);

    const int32_t sizes[2][2] = {{53, 37}, {30, 22}};
    for (int s = 0; s < 2; s++) {
        int32_t w = sizes[s][0], h = sizes[s][1];
        frame_buffer in, out_whole, out_tiled;
        frame_alloc(&in, w, h);
        frame_fill(&in, (unsigned)s + 1);
        frame_alloc(&out_whole, 2 * w, 2 * h);
        frame_alloc(&out_tiled, 2 * w, 2 * h);
        EXPECT(nxe_sr_process(whole, &in.frame, &out_whole.frame) == NXE_OK);
        EXPECT(nxe_sr_process(tiled, &in.frame, &out_tiled.frame) == NXE_OK);
        for (int p = 0; p < 3; p++)
            EXPECT(memcmp(out_whole.planes[p], out_tiled.planes[p], frame_bytes(&out_whole, p)) ==
                   0);
        /* Bad frames: the output must stay as it was. */
        memset(out_tiled.planes[0], 7, frame_bytes(&out_tiled, 0));
        nxe_sr_frame bad = in.frame;
        bad.data[1] = NULL;
        EXPECT(nxe_sr_process(tiled, &bad, &out_tiled.frame) == NXE_ERROR_INVALID_ARGUMENT);
        EXPECT(strstr(nxe_sr_last_error(), "plane 1") != NULL);
        bad = in.frame;
        bad.strides[0] = w - 1;
        EXPECT(nxe_sr_process(tiled, &bad, &out_tiled.frame) == NXE_ERROR_INVALID_ARGUMENT);
        bad = out_tiled.frame;
        bad.height += 1;
        EXPECT(nxe_sr_process(tiled, &in.frame, &bad) == NXE_ERROR_SHAPE_MISMATCH);
        bad = in.frame;
        bad.format = 99;
        EXPECT(nxe_sr_process(tiled, &bad, &out_tiled.frame) == NXE_ERROR_UNSUPPORTED);
        EXPECT(out_tiled.planes[0][0] == 7 &&
               out_tiled.planes[0][frame_bytes(&out_tiled, 0) - 1] == 7);
        frame_free(&in);
        frame_free(&out_whole);
        frame_free(&out_tiled);
    }
    EXPECT(nxe_sr_get_info(tiled, &info) == NXE_OK && info.frames == 2 &&
           info.reconfigurations == 2 && info.tiles > 2);

    nxe_sr *sr = (nxe_sr *)&info; /* must be overwritten with NULL on failure */
    EXPECT(nxe_sr_open("no-such-model", NULL, &sr) == NXE_ERROR_NOT_FOUND && sr == NULL);
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.tile_size = 3;
    EXPECT(nxe_sr_open("espcn-x2", &options, &sr) == NXE_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(nxe_sr_last_error(), "tile_size 3") != NULL);
    EXPECT(nxe_sr_process(NULL, NULL, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    check_geometry_limits(tiled);
    check_int8();

    nxe_sr_release(whole);
    nxe_sr_release(tiled);
    nxe_sr_release(NULL);
    if (failures)
        fprintf(stderr, "sr.c: %d failures\n", failures);
    return failures ? 1 : 0;
}
