/* gemm_driver.c — the loops around a packed-GEMM microkernel (kernels/gemm.h): GEMM with a
 * packed B (or an f32 B read in place), and convolution as implicit GEMM that gathers one panel of the im2col matrix at
 * a time onto the stack. Portable C built once per ISA level (see portable.h) so the gathers
 * vectorize with that level's flags; the microkernel and epilogue come from the descriptor.
 * Every C element is produced by one tile, over the reduction in increasing order, so the
 * result does not depend on how callers split the tiles. */
#include <math.h> /* isless, isgreater, isunordered */
#include <stdbool.h>
#include <string.h>

#include "portable/portable.h"

/* Columns of B per block of the GEMM driver: with a reduction block of NXE_GEMM_KC, the block
 * of B (at most 480 KiB) stays in L2 while every row tile of A passes over it. */
#define GEMM_NC_BYTES (480 * 1024)
#define GEMM_NC_MAX_PANELS 16

/* Stack scratch for one gathered panel: the widest panel over one reduction block (48 KiB;
 * with the packed copy bf16 needs and the row pointers, the drivers use about 110 KiB of
 * stack). */
#define PANEL_SCRATCH_FLOATS (NXE_GEMM_MAX_NR * NXE_GEMM_KC)

/* Reduction block of the convolution driver (a multiple of every k unit): one block's B rows
 * are visited by every row panel of weights before the next block. 128 and 640 measured the
 * same on ESPCN's and EDSR's layers. */
#define CONV_KC 256

/* A row of zeros as wide as any panel: the B row of a padding tap. */
static const float zero_row[NXE_GEMM_MAX_NR * 2];

/* f32 -> bf16 round to nearest even, branchless so that it vectorizes (NaN inputs become some
 * NaN or infinity-adjacent value; activations of finite models stay finite). */
static inline uint32_t bf16_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

/* Packs rows[k] (k < count; `valid` floats read from each, the rest of the `width` zero)
 * into a bf16 panel: pairs of k interleaved, an odd count completed by a zero row. */
static void pack_rows_bf16(uint16_t *panel, int32_t width, int32_t valid, const float *const *rows,
                           int64_t count)
{
    for (int64_t k = 0; k < count; k += 2) {
        const float *even = rows[k], *odd = k + 1 < count ? rows[k + 1] : zero_row;
        uint32_t *dst = (uint32_t *)(void *)(panel + k * width);
        for (int32_t j = 0; j < valid; j++)
            dst[j] = bf16_bits(even[j]) | (bf16_bits(odd[j]) << 16);
        for (int32_t j = valid; j < width; j++)
            dst[j] = 0;
    }
}

/* Row pointers of a packed panel block: group q of k_unit rows at q * width * k_unit. */
static void panel_rows(const nxe_gemm_kernel *kernel, const void *block, int32_t width, int64_t kc,
                       const void **rows)
{
    const size_t group_bytes =
        (size_t)width * (size_t)kernel->k_unit * nxe_gemm_element_size(kernel->type);
    const int64_t groups = (kc + kernel->k_unit - 1) / kernel->k_unit;
    for (int64_t q = 0; q < groups; q++)
        rows[q] = (const char *)block + (size_t)q * group_bytes;
}

/* ---- GEMM with a packed B, or an f32 B read in place ---- */

int64_t NXE_ISA_NAME(nxe_gemm_packed_tiles)(const nxe_gemm_packed_args *args)
{
    return (args->m + args->kernel->mr - 1) / args->kernel->mr;
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* Eight rows of 16 floats as bf16, each row becoming 8 pairs (32-bit) in order. */
static inline __m256i bf16_pairs16(const float *row)
{
    const __m512i bits = _mm512_castps_si512(_mm512_loadu_ps(row));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
}

/* The bf16 A panel of 8 full rows, 8 pairs at a time: convert each row's 16 floats, then
 * transpose the 8 x 8 block of pairs into k-major order. Returns the pairs done. */
static int64_t pack_bf16_8rows(const float *const *rows, int64_t pairs, uint32_t *out)
{
    int64_t q = 0;
    for (; q + 8 <= pairs; q += 8) {
        __m256i r[8];
        for (int i = 0; i < 8; i++)
            r[i] = bf16_pairs16(rows[i] + 2 * q);
        /* 8 x 8 transpose of 32-bit elements. */
        __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
        __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
        __m256i *dst = (__m256i *)(void *)(out + q * 8);
        _mm256_storeu_si256(dst + 0, _mm256_permute2x128_si256(u0, u4, 0x20));
        _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(u1, u5, 0x20));
        _mm256_storeu_si256(dst + 2, _mm256_permute2x128_si256(u2, u6, 0x20));
        _mm256_storeu_si256(dst + 3, _mm256_permute2x128_si256(u3, u7, 0x20));
        _mm256_storeu_si256(dst + 4, _mm256_permute2x128_si256(u0, u4, 0x31));
        _mm256_storeu_si256(dst + 5, _mm256_permute2x128_si256(u1, u5, 0x31));
        _mm256_storeu_si256(dst + 6, _mm256_permute2x128_si256(u2, u6, 0x31));
        _mm256_storeu_si256(dst + 7, _mm256_permute2x128_si256(u3, u7, 0x31));
    }
    return q;
}
#endif

/* Packs rows [i0, i0 + mr) of A over k in [k0, k0 + kc) into an A panel mr_max wide. Rows
 * of A with k dense (the common case) are read pair by pair into bf16 directly. */
static void pack_a_tile(const nxe_gemm_packed_args *args, int64_t i0, int32_t mr, int64_t k0,
                        int64_t kc, float *gathered, void *panel)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const int32_t width = kernel->mr;
    const float *rows[NXE_GEMM_MAX_MR];
    for (int32_t i = 0; i < width; i++)
        rows[i] = i < mr ? args->a + (i0 + i) * args->a_stride_m + k0 * args->a_stride_k : NULL;
    if (kernel->type == NXE_GEMM_BF16 && args->a_stride_k == 1) {
        uint32_t *out = panel;
        const int64_t pairs = kc / 2;
        int64_t q = 0;
#if defined(__AVX512F__)
        if (width == 8 && mr == 8)
            q = pack_bf16_8rows(rows, pairs, out);
#endif
        for (; q < pairs; q++)
            for (int32_t i = 0; i < width; i++)
                out[q * width + i] =
                    rows[i] ? bf16_bits(rows[i][2 * q]) | (bf16_bits(rows[i][2 * q + 1]) << 16)
                            : 0u;
        if (kc % 2)
            for (int32_t i = 0; i < width; i++)
                out[pairs * width + i] = rows[i] ? bf16_bits(rows[i][kc - 1]) : 0u;
        return;
    }
    float *dst = kernel->type == NXE_GEMM_F32 ? panel : gathered;
    for (int64_t k = 0; k < kc; k++)
        for (int32_t i = 0; i < width; i++)
            dst[k * width + i] = rows[i] ? rows[i][k * args->a_stride_k] : 0.0f;
    if (kernel->type == NXE_GEMM_BF16) {
        const float *row_ptrs[NXE_GEMM_KC];
        for (int64_t k = 0; k < kc; k++)
            row_ptrs[k] = gathered + k * width;
        pack_rows_bf16(panel, width, width, row_ptrs, kc);
    }
}

/* Applies the epilogue to the finished tile of y at (i0, j0). */
static void finish_tile(const nxe_gemm_packed_args *args, int64_t i0, int64_t j0, int32_t mr,
                        int32_t nr)
{
    const nxe_epilogue_operands ops = {
        .bias =
            args->bias ? args->bias + i0 * args->bias_stride_m + j0 * args->bias_stride_n : NULL,
        .bias_stride_m = args->bias_stride_m,
        .bias_stride_n = args->bias_stride_n,
        .residual = args->residual ? args->residual + i0 * args->residual_stride_m + j0 : NULL,
        .ldr = args->residual_stride_m,
    };
    args->kernel->epilogue(mr, nr, args->y + i0 * args->y_stride_m + j0, args->y_stride_m,
                           &args->epilogue, &ops);
}

/* Few rows (nxe_gemm_small_m): panel by panel, each over the whole reduction for every row
 * tile in turn, so that a panel comes from memory once, while the kernel fetches the next one,
 * and the row tiles after the first find it in cache. The next panel is fetched even past the
 * end of the range: the thread that computes it (this one or another, panels being split
 * between threads in contiguous groups) then finds it in a cache rather than in memory. */
static void gemm_small_m_run(const nxe_gemm_packed_args *args, int64_t first_panel, int64_t panels,
                             int64_t tile_begin, int64_t tile_end)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const int32_t mr_max = kernel->mr, nr_max = kernel->nr;
    const int64_t all_panels = (args->n + nr_max - 1) / nr_max;
    for (int64_t p = first_panel; p < panels; p++) {
        const float *b = nxe_gemm_panel_block(kernel, args->b_packed, nr_max, args->k, p, 0);
        const float *next = p + 1 < all_panels ? nxe_gemm_panel_block(kernel, args->b_packed,
                                                                      nr_max, args->k, p + 1, 0)
                                               : NULL;
        const int64_t j0 = p * nr_max;
        const int32_t nr = (int32_t)(args->n - j0 < nr_max ? args->n - j0 : nr_max);
        for (int64_t t = tile_begin; t < tile_end; t++) {
            const int64_t i0 = t * mr_max;
            const int32_t mr = (int32_t)(args->m - i0 < mr_max ? args->m - i0 : mr_max);
            float *c = args->y + i0 * args->y_stride_m + j0;
            kernel->run_panel(mr, nr, args->k, args->a + i0 * args->a_stride_m, args->a_stride_m, b,
                              next, c, args->y_stride_m);
            finish_tile(args, i0, j0, mr, nr);
        }
    }
}

void NXE_ISA_NAME(nxe_gemm_packed_run)(const nxe_gemm_packed_args *args, int64_t tile_begin,
                                       int64_t tile_end)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const int32_t mr_max = kernel->mr, nr_max = kernel->nr;
    const int64_t all_panels = (args->n + nr_max - 1) / nr_max;
    const int64_t first_panel = args->panel_end > 0 ? args->panel_begin : 0;
    const int64_t panels = args->panel_end > 0 ? args->panel_end : all_panels;
    if (nxe_gemm_small_m(args)) {
        gemm_small_m_run(args, first_panel, panels, tile_begin, tile_end);
        return;
    }
    int64_t nc_panels = GEMM_NC_BYTES / ((int64_t)NXE_GEMM_KC * nr_max *
                                         (int64_t)nxe_gemm_element_size(kernel->type));
    nc_panels = nc_panels < 1 ? 1 : nc_panels > GEMM_NC_MAX_PANELS ? GEMM_NC_MAX_PANELS : nc_panels;
    float gathered[NXE_GEMM_MAX_MR * NXE_GEMM_KC];
    _Alignas(64) float a_panel[NXE_GEMM_MAX_MR * NXE_GEMM_KC];
    const void *b_rows[GEMM_NC_MAX_PANELS][NXE_GEMM_KC];
    /* Rows of A with k dense are read in place where the kernel can. */
    const bool a_in_place = kernel->run_rows && args->a_stride_k == 1;
    for (int64_t pb = first_panel; pb < panels; pb += nc_panels) {
        const int64_t pe = pb + nc_panels < panels ? pb + nc_panels : panels;
        for (int64_t k0 = 0; k0 < args->k || k0 == 0; k0 += NXE_GEMM_KC) {
            const int64_t kc = args->k - k0 < NXE_GEMM_KC ? args->k - k0 : NXE_GEMM_KC;
            const int last = k0 + kc >= args->k;
            for (int64_t p = pb; p < pe; p++) {
                if (args->b_packed) {
                    panel_rows(kernel,
                               nxe_gemm_panel_block(kernel, args->b_packed, nr_max, args->k, p, k0),
                               nr_max, kc, b_rows[p - pb]);
                    continue;
                }
                for (int64_t q = 0; q < kc; q++)
                    b_rows[p - pb][q] = args->b + (k0 + q) * args->b_stride_k + p * nr_max;
            }
            for (int64_t t = tile_begin; t < tile_end; t++) {
                const int64_t i0 = t * mr_max;
                const int32_t mr = (int32_t)(args->m - i0 < mr_max ? args->m - i0 : mr_max);
                const float *a_rows = args->a + i0 * args->a_stride_m + k0;
                if (!a_in_place)
                    pack_a_tile(args, i0, mr, k0, kc, gathered, a_panel);
                for (int64_t p = pb; p < pe; p++) {
                    const int64_t j0 = p * nr_max;
                    const int32_t nr = (int32_t)(args->n - j0 < nr_max ? args->n - j0 : nr_max);
                    float *c = args->y + i0 * args->y_stride_m + j0;
                    if (a_in_place)
                        kernel->run_rows(mr, nr, kc, a_rows, args->a_stride_m, b_rows[p - pb], c,
                                         args->y_stride_m, k0 > 0);
                    else
                        kernel->run(mr, nr, kc, a_panel, b_rows[p - pb], c, args->y_stride_m,
                                    k0 > 0);
                    if (last)
                        finish_tile(args, i0, j0, mr, nr);
                }
            }
            if (args->k == 0)
                break;
        }
    }
}

/* ---- convolution ---- */

typedef struct conv_shape {
    int64_t group_in, group_out;
    int64_t taps;       /* KD * KH * KW */
    int64_t k;          /* group_in * taps: the reduction */
    int64_t out_pixels; /* OD * OH * OW */
    int64_t in_pixels;
    int64_t row_tiles;  /* pixel tiles per output row */
    int32_t tile_width; /* pixels per tile: nr channels first, mr channels last */
} conv_shape;

static conv_shape shape_of(const nxe_conv_gemm_args *args)
{
    const nxe_conv_geometry *g = args->geometry;
    conv_shape s;
    s.group_in = g->in_channels / g->groups;
    s.group_out = g->out_channels / g->groups;
    s.taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
    s.k = nxe_conv_gemm_reduction(args->kernel, g, args->channels_last);
    s.out_pixels = g->out_size[0] * g->out_size[1] * g->out_size[2];
    s.in_pixels = g->in_size[0] * g->in_size[1] * g->in_size[2];
    s.tile_width = args->channels_last ? args->kernel->mr : args->kernel->nr;
    s.row_tiles = (g->out_size[2] + s.tile_width - 1) / s.tile_width;
    return s;
}

int64_t NXE_ISA_NAME(nxe_conv_gemm_tiles)(const nxe_conv_gemm_args *args)
{
    const nxe_conv_geometry *g = args->geometry;
    conv_shape s = shape_of(args);
    return g->batch * g->groups * g->out_size[0] * g->out_size[1] * s.row_tiles;
}

double NXE_ISA_NAME(nxe_conv_gemm_tile_work)(const nxe_conv_gemm_args *args)
{
    conv_shape s = shape_of(args);
    return (double)s.tile_width * (double)s.group_out * (double)s.k;
}

/* Input column of output column ox at tap kx, and the output columns [*lo, *hi) of the tile
 * whose input column lies inside [0, width). */
static void valid_columns(int64_t ox0, int32_t count, int64_t stride, int64_t offset, int64_t width,
                          int32_t *lo, int32_t *hi)
{
    /* Input column of tile column j: start + j * stride. */
    const int64_t start = ox0 * stride + offset;
    int64_t first, past;
    if (stride == 1) { /* the common case, without divisions */
        first = start < 0 ? -start : 0;
        past = width - start;
    } else {
        first = start < 0 ? (-start + stride - 1) / stride : 0;
        past = width - start <= 0 ? 0 : (width - start + stride - 1) / stride;
    }
    if (past > count)
        past = count;
    if (first > past)
        first = past;
    *lo = (int32_t)first;
    *hi = (int32_t)(past < 0 ? 0 : past);
    if (*lo > *hi)
        *lo = *hi;
}

/* Channels first: the B rows k in [k0, k0 + kc) (k = channel, kz, ky, kx within the group) of
 * the im2col matrix for output pixels ox0 .. ox0 + count - 1 of output row (oz, oy). A row
 * wholly inside the input (stride 1) is used in place; a row at a padding tap is the zero
 * row; any other is gathered into `scratch` (a `width`-float row per k). */
/* Where one tap's B rows come from for a tile: all padding, wholly inside the input (used in
 * place at `offset` from a channel's plane) or to be gathered (columns [lo, hi) inside). */
enum { TAP_ZERO, TAP_DIRECT, TAP_GATHER };
typedef struct tap_rows {
    int8_t kind;
    int32_t lo, hi;
    int64_t offset;
} tap_rows;

static tap_rows tap_rows_at(const nxe_conv_geometry *g, int64_t kz, int64_t ky, int64_t kx,
                            int64_t oz, int64_t oy, int64_t ox0, int32_t count)
{
    const int64_t iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dilation[0];
    const int64_t iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dilation[1];
    const int64_t column = kx * g->dilation[2] - g->pad_begin[2];
    tap_rows t = {TAP_ZERO, 0, 0,
                  (iz * g->in_size[1] + iy) * g->in_size[2] + ox0 * g->stride[2] + column};
    if (iz >= 0 && iz < g->in_size[0] && iy >= 0 && iy < g->in_size[1])
        valid_columns(ox0, count, g->stride[2], column, g->in_size[2], &t.lo, &t.hi);
    t.kind = t.hi <= t.lo                                      ? TAP_ZERO
             : t.lo == 0 && t.hi == count && g->stride[2] == 1 ? TAP_DIRECT
                                                               : TAP_GATHER;
    return t;
}

static tap_rows tap_rows_of(const nxe_conv_geometry *g, int64_t tap, int64_t oz, int64_t oy,
                            int64_t ox0, int32_t count)
{
    return tap_rows_at(g, tap / (g->kernel[1] * g->kernel[2]), tap / g->kernel[2] % g->kernel[1],
                       tap % g->kernel[2], oz, oy, ox0, count);
}

/* Every tap of a tile in order, without the divisions of tap_rows_of: a tile's taps are worked
 * out for each of its reduction blocks, and for a short reduction that is a large share. */
static void all_tap_rows(const nxe_conv_geometry *g, int64_t oz, int64_t oy, int64_t ox0,
                         int32_t count, tap_rows *taps)
{
    for (int64_t kz = 0; kz < g->kernel[0]; kz++)
        for (int64_t ky = 0; ky < g->kernel[1]; ky++)
            for (int64_t kx = 0; kx < g->kernel[2]; kx++)
                *taps++ = tap_rows_at(g, kz, ky, kx, oz, oy, ox0, count);
}

/* `taps` holds every tap of the tile when there are at most NXE_GEMM_KC (few_taps), else
 * each is worked out as it comes. */
static void rows_channels_first(const nxe_conv_gemm_args *args, const conv_shape *s,
                                const float *input_group, int64_t oz, int64_t oy, int64_t ox0,
                                int32_t count, int64_t k0, int64_t kc, const tap_rows *taps,
                                float *scratch, const float **rows)
{
    const nxe_conv_geometry *g = args->geometry;
    const int32_t width = args->kernel->nr;
    const bool few_taps = s->taps <= NXE_GEMM_KC;
    int64_t channel = k0 / s->taps, tap = k0 % s->taps;
    /* Inside the frame every tap is read in place: then row k is a channel plane plus a tap
     * offset, with no branch per row. */
    bool all_direct = few_taps;
    for (int64_t t = 0; all_direct && t < s->taps; t++)
        all_direct = taps[t].kind == TAP_DIRECT;
    if (all_direct) {
        for (int64_t k = 0; k < kc;) {
            const float *plane = input_group + channel * s->in_pixels;
            for (; tap < s->taps && k < kc; tap++, k++)
                rows[k] = plane + taps[tap].offset;
            if (tap == s->taps) {
                tap = 0;
                channel++;
            }
        }
        return;
    }
    for (int64_t k = 0; k < kc; k++) {
        const tap_rows t = few_taps ? taps[tap] : tap_rows_of(g, tap, oz, oy, ox0, count);
        const float *plane = input_group + channel * s->in_pixels;
        if (t.kind == TAP_ZERO) {
            rows[k] = zero_row;
        } else if (t.kind == TAP_DIRECT) {
            rows[k] = plane + t.offset;
        } else {
            float *row = scratch + k * width;
            for (int32_t j = 0; j < t.lo; j++)
                row[j] = 0.0f;
            for (int32_t j = t.lo; j < t.hi; j++)
                row[j] = plane[t.offset + j * g->stride[2]];
            for (int32_t j = t.hi; j < width; j++)
                row[j] = 0.0f;
            rows[k] = row;
        }
        if (++tap == s->taps) {
            tap = 0;
            channel++;
        }
    }
}

/* Channels last: gathers rows k in [k0, k0 + kc) (k = kz, ky, kx, channel) of the im2col
 * matrix for pixels ox0 .. ox0 + count - 1 of output row (oz, oy), as `rows` of mr floats. */
static void gather_channels_last(const nxe_conv_gemm_args *args, const conv_shape *s,
                                 const float *input_image, int64_t group, int64_t oz, int64_t oy,
                                 int64_t ox0, int32_t count, int64_t k0, int64_t kc, float *rows)
{
    const nxe_conv_geometry *g = args->geometry;
    const int32_t width = args->kernel->mr;
    const int64_t channels = g->in_channels;
    for (int64_t k = k0; k < k0 + kc;) {
        const int64_t tap = k / s->group_in, c0 = k % s->group_in;
        const int64_t run = s->group_in - c0 < k0 + kc - k ? s->group_in - c0 : k0 + kc - k;
        const int64_t kz = tap / (g->kernel[1] * g->kernel[2]);
        const int64_t ky = tap / g->kernel[2] % g->kernel[1];
        const int64_t kx = tap % g->kernel[2];
        const int64_t iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dilation[0];
        const int64_t iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dilation[1];
        const bool row_inside = iz >= 0 && iz < g->in_size[0] && iy >= 0 && iy < g->in_size[1];
        for (int32_t j = 0; j < width; j++) {
            const int64_t ix = (ox0 + j) * g->stride[2] - g->pad_begin[2] + kx * g->dilation[2];
            const bool inside = row_inside && j < count && ix >= 0 && ix < g->in_size[2];
            const float *src =
                inside ? input_image + ((iz * g->in_size[1] + iy) * g->in_size[2] + ix) * channels +
                             group * s->group_in + c0
                       : NULL;
            for (int64_t c = 0; c < run; c++)
                rows[(k - k0 + c) * width + j] = src ? src[c] : 0.0f;
        }
        k += run;
    }
}

void NXE_ISA_NAME(nxe_conv_gemm_run)(const nxe_conv_gemm_args *args, int64_t tile_begin,
                                     int64_t tile_end)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const nxe_conv_geometry *g = args->geometry;
    const conv_shape s = shape_of(args);
    const int32_t mr_max = kernel->mr, nr_max = kernel->nr;
    const bool f32 = kernel->type == NXE_GEMM_F32;
    float scratch[PANEL_SCRATCH_FLOATS];
    _Alignas(64) unsigned char panel[PANEL_SCRATCH_FLOATS * sizeof(float)];
    const float *rows[NXE_GEMM_KC];
    const void *b_rows[NXE_GEMM_KC];
    tap_rows taps[NXE_GEMM_KC];
    const int64_t out_rows = g->out_size[0] * g->out_size[1];
    for (int64_t t = tile_begin; t < tile_end; t++) {
        const int64_t row_tile = t % s.row_tiles;
        const int64_t out_row = t / s.row_tiles % out_rows;
        const int64_t group = t / s.row_tiles / out_rows % g->groups;
        const int64_t n = t / s.row_tiles / out_rows / g->groups;
        const int64_t oz = out_row / g->out_size[1], oy = out_row % g->out_size[1];
        const int64_t ox0 = row_tile * s.tile_width;
        const int32_t count =
            (int32_t)(g->out_size[2] - ox0 < s.tile_width ? g->out_size[2] - ox0 : s.tile_width);
        const int64_t pixel0 = out_row * g->out_size[2] + ox0;
        const int64_t o_first = group * s.group_out;
        /* A tile's taps, worked out once for all its reduction blocks. */
        if (!args->channels_last && s.taps <= NXE_GEMM_KC)
            all_tap_rows(g, oz, oy, ox0, count, taps);
        for (int64_t k0 = 0; k0 < s.k; k0 += CONV_KC) {
            const int64_t kc = s.k - k0 < CONV_KC ? s.k - k0 : CONV_KC;
            const int last = k0 + kc >= s.k;
            if (!args->channels_last) {
                /* Rows: output channels of the group (weights, A); columns: the tile's pixels,
                 * read in place from the input where possible — for bf16 from its
                 * pair-interleaved copy, one row per pair of channels at a tap. */
                if (f32) {
                    const float *input_group =
                        (const float *)args->input +
                        (n * g->in_channels + group * s.group_in) * s.in_pixels;
                    rows_channels_first(args, &s, input_group, oz, oy, ox0, count, k0, kc, taps,
                                        scratch, rows);
                } else {
                    conv_shape pairs = s;
                    pairs.group_in = (s.group_in + 1) / 2;
                    const float *pairs_group =
                        (const float *)args->input +
                        (n * g->groups + group) * pairs.group_in * s.in_pixels;
                    rows_channels_first(args, &pairs, pairs_group, oz, oy, ox0, count, k0 / 2,
                                        (kc + 1) / 2, taps, scratch, rows);
                }
                for (int64_t q = 0; q < (kc + kernel->k_unit - 1) / kernel->k_unit; q++)
                    b_rows[q] = rows[q];
                const int64_t panels = (s.group_out + mr_max - 1) / mr_max;
                const size_t group_weights =
                    nxe_gemm_packed_bytes(kernel, s.k, s.group_out, mr_max);
                const char *weights = (const char *)args->weight_packed + group * group_weights;
                for (int64_t p = 0; p < panels; p++) {
                    const int64_t o0 = p * mr_max;
                    const int32_t mr =
                        (int32_t)(s.group_out - o0 < mr_max ? s.group_out - o0 : mr_max);
                    const int64_t offset =
                        (n * g->out_channels + o_first + o0) * s.out_pixels + pixel0;
                    float *c = args->output + offset;
                    kernel->run(mr, count, kc,
                                nxe_gemm_panel_block(kernel, weights, mr_max, s.k, p, k0), b_rows,
                                c, s.out_pixels, k0 > 0);
                    if (last) {
                        nxe_epilogue_operands ops = {
                            .bias = args->bias ? args->bias + o_first + o0 : NULL,
                            .bias_stride_m = 1,
                            .bias_stride_n = 0,
                            .residual = args->residual ? args->residual + offset : NULL,
                            .ldr = s.out_pixels,
                        };
                        kernel->epilogue(mr, count, c, s.out_pixels, &args->epilogue, &ops);
                    }
                }
            } else {
                /* Rows: the tile's pixels (A, gathered); columns: output channels (weights, B). */
                const float *input_image =
                    (const float *)args->input + n * s.in_pixels * g->in_channels;
                float *gathered = f32 ? (float *)(void *)panel : scratch;
                gather_channels_last(args, &s, input_image, group, oz, oy, ox0, count, k0, kc,
                                     gathered);
                if (!f32) {
                    for (int64_t k = 0; k < kc; k++)
                        rows[k] = scratch + k * mr_max;
                    pack_rows_bf16((uint16_t *)(void *)panel, mr_max, mr_max, rows, kc);
                }
                const int64_t panels = (s.group_out + nr_max - 1) / nr_max;
                const size_t group_weights =
                    nxe_gemm_packed_bytes(kernel, s.k, s.group_out, nr_max);
                const char *weights = (const char *)args->weight_packed + group * group_weights;
                for (int64_t p = 0; p < panels; p++) {
                    const int64_t j0 = p * nr_max;
                    const int32_t nr =
                        (int32_t)(s.group_out - j0 < nr_max ? s.group_out - j0 : nr_max);
                    const int64_t offset =
                        (n * s.out_pixels + pixel0) * g->out_channels + o_first + j0;
                    float *c = args->output + offset;
                    panel_rows(kernel, nxe_gemm_panel_block(kernel, weights, nr_max, s.k, p, k0),
                               nr_max, kc, b_rows);
                    kernel->run(count, nr, kc, panel, b_rows, c, g->out_channels, k0 > 0);
                    if (last) {
                        nxe_epilogue_operands ops = {
                            .bias = args->bias ? args->bias + o_first + j0 : NULL,
                            .bias_stride_m = 0,
                            .bias_stride_n = 1,
                            .residual = args->residual ? args->residual + offset : NULL,
                            .ldr = g->out_channels,
                        };
                        kernel->epilogue(count, nr, c, g->out_channels, &args->epilogue, &ops);
                    }
                }
            }
        }
    }
}

void NXE_ISA_NAME(nxe_conv_bf16_pairs)(const nxe_conv_geometry *g, const float *input,
                                       uint32_t *pairs, int64_t row_begin, int64_t row_end)
{
    const int64_t group_in = g->in_channels / g->groups, count = (group_in + 1) / 2;
    const int64_t plane_rows = g->in_size[0] * g->in_size[1], width = g->in_size[2];
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t r = row % plane_rows;
        const int64_t pair = row / plane_rows % count;
        const int64_t group = row / plane_rows / count % g->groups;
        const int64_t n = row / plane_rows / count / g->groups;
        const int64_t channel = group * group_in + pair * 2;
        const float *even = input + ((n * g->in_channels + channel) * plane_rows + r) * width;
        uint32_t *out = pairs + row * width;
        if (pair * 2 + 1 < group_in) {
            const float *odd = even + plane_rows * width;
            for (int64_t x = 0; x < width; x++)
                out[x] = bf16_bits(even[x]) | (bf16_bits(odd[x]) << 16);
        } else {
            for (int64_t x = 0; x < width; x++)
                out[x] = bf16_bits(even[x]);
        }
    }
}

/* ---- 8-bit GEMM ---- */

/* Rows of A packed together (whole row tiles) and finished together: the block's output
 * columns are then runs of this many pixels for a convolution, not single bytes. */
#define Q8_BLOCK_ROWS NXE_GEMM_MAX_MR
#define Q8_NC_BYTES (768 * 1024)
/* Values of a row assembled at a time where rows cannot be transposed in place: the scratch
 * stays small beside the block's panels, which take most of the stack the kernels may use. */
#define Q8_CHUNK 512

int64_t NXE_ISA_NAME(nxe_q8_gemm_tiles)(const nxe_q8_packed_args *args)
{
    return (args->m + args->kernel->mr - 1) / args->kernel->mr;
}

static inline int32_t q8_at(nxe_q8_ref ref, int64_t index)
{
    return ref.is_signed ? (int32_t)((const int8_t *)ref.data)[index]
                         : (int32_t)((const uint8_t *)ref.data)[index];
}

/* Four rows of k-groups (words), rows `stride` bytes apart, into columns [0, 4) of a panel
 * `width` words wide: a 4 x 4 word transpose per step, which the compiler vectorizes when
 * width is a constant. */
static inline __attribute__((always_inline)) void
q8_transpose4(const uint8_t *rows, int64_t stride, int64_t groups, int32_t width, uint32_t *out)
{
    for (int64_t q = 0; q < groups; q++) {
        uint32_t w[4];
        for (int32_t i = 0; i < 4; i++)
            memcpy(&w[i], rows + i * stride + 4 * q, sizeof w[i]);
        for (int32_t i = 0; i < 4; i++)
            out[q * width + i] = w[i];
    }
}

/* q8_transpose4 with the kernels' panel widths as constants. */
static void q8_transpose4_into(const uint8_t *rows, int64_t stride, int64_t groups, int32_t width,
                               uint32_t *out)
{
    if (width == 4)
        q8_transpose4(rows, stride, groups, 4, out);
    else if (width == 16)
        q8_transpose4(rows, stride, groups, 16, out);
    else
        q8_transpose4(rows, stride, groups, width, out);
}

/* Where a convolution's im2col rows come from in the staged input (kernels/gemm.h): row
 * `pixel` is `runs` runs of `run` bytes per kernel row, run r of kernel row ky at
 * start(pixel) + ky * ky_step + r * run_step. */
typedef struct q8_conv_rows {
    const uint8_t *stage;
    int64_t line; /* bytes per staged row */
    int64_t channels;
    int64_t run, runs, ky_step, run_step;
} q8_conv_rows;

static q8_conv_rows q8_conv_rows_of(const nxe_q8_packed_args *args)
{
    const nxe_q8_conv2d_geometry *g = args->conv;
    const int64_t channels = g->in_channels / g->groups;
    const int64_t line = nxe_q8_conv_stage_width(g) * channels;
    const bool dense = g->dilation_width == 1; /* a kernel row is one run */
    return (q8_conv_rows){args->a.data,
                          line,
                          channels,
                          dense ? g->kernel_width * channels : channels,
                          dense ? 1 : g->kernel_width,
                          g->dilation_height * line,
                          g->dilation_width * channels};
}

static const uint8_t *q8_conv_row_start(const nxe_q8_packed_args *args, const q8_conv_rows *c,
                                        int64_t pixel)
{
    const nxe_q8_conv2d_geometry *g = args->conv;
    const int64_t oy = pixel / g->out_width, ox = pixel % g->out_width;
    return c->stage + oy * g->stride_height * c->line + ox * g->stride_width * c->channels;
}

/* Bytes [k0, k0 + len) of row `pixel` into dst: the parts of its runs that fall there. */
static void q8_conv_row_part(const nxe_q8_packed_args *args, const q8_conv_rows *c, int64_t pixel,
                             int64_t k0, int64_t len, uint8_t *dst)
{
    const uint8_t *start = q8_conv_row_start(args, c, pixel);
    int64_t at = 0; /* the run's first k */
    for (int64_t ky = 0; ky < args->conv->kernel_height; ky++) {
        for (int64_t r = 0; r < c->runs; r++, at += c->run) {
            const int64_t lo = at > k0 ? at : k0;
            const int64_t hi = at + c->run < k0 + len ? at + c->run : k0 + len;
            if (lo < hi)
                memcpy(dst + (lo - k0), start + ky * c->ky_step + r * c->run_step + (lo - at),
                       (size_t)(hi - lo));
        }
    }
}

/* Packs rows [i0, i0 + rows) of A shifted to u8 into ceil(rows / MR) panels of the kernel's
 * width, one after another, rows past the last zero; with `sums`, row_sums[r] is the sum of
 * row r's packed values. A panel is a transpose of 32-bit words (one k-group of a row each),
 * filled four rows at a time. Four pixels of one output row whose runs are whole words are
 * equally spaced in the staged input and are transposed from there; other rows are first
 * assembled, shifted and zero-padded to whole k-groups, Q8_CHUNK values at a time, in
 * `scratch` (4 x Q8_CHUNK bytes). */
static void q8_pack_a(const nxe_q8_packed_args *args, int64_t i0, int32_t rows, bool sums,
                      uint8_t *panels, uint32_t *row_sums, uint8_t *scratch)
{
    const int32_t width = args->kernel->mr; /* a multiple of 4 (kernels/gemm.h) */
    const int64_t k = args->k, groups = (k + 3) / 4, k_padded = groups * 4;
    const int32_t padded_rows = (rows + width - 1) / width * width;
    const uint8_t flip = args->a.is_signed ? 0x80u : 0u; /* s8 + 128 as u8 */
    const q8_conv_rows c = args->conv ? q8_conv_rows_of(args) : (q8_conv_rows){0};
    for (int32_t r0 = 0; r0 < padded_rows; r0 += 4) {
        uint32_t *out = (uint32_t *)(void *)(panels + (r0 / width) * width * k_padded) + r0 % width;
        if (args->conv && r0 + 4 <= rows && c.run % 4 == 0 &&
            (i0 + r0) % args->conv->out_width + 3 < args->conv->out_width) {
            const uint8_t *start = q8_conv_row_start(args, &c, i0 + r0);
            const int64_t spacing = args->conv->stride_width * c.channels;
            for (int32_t i = 0; i < 4 && sums; i++)
                row_sums[r0 + i] = 0;
            int64_t q = 0; /* k-group of the run's first word */
            for (int64_t ky = 0; ky < args->conv->kernel_height; ky++) {
                for (int64_t r = 0; r < c.runs; r++, q += c.run / 4) {
                    const uint8_t *src = start + ky * c.ky_step + r * c.run_step;
                    q8_transpose4_into(src, spacing, c.run / 4, width, out + q * width);
                    for (int32_t i = 0; i < 4 && sums; i++) {
                        uint32_t sum = 0;
                        for (int64_t b = 0; b < c.run; b++)
                            sum += src[i * spacing + b];
                        row_sums[r0 + i] += sum;
                    }
                }
            }
            continue;
        }
        for (int32_t i = 0; i < 4 && sums; i++)
            row_sums[r0 + i] = 0;
        for (int64_t k0 = 0; k0 < k_padded; k0 += Q8_CHUNK) {
            const int64_t len = k - k0 < Q8_CHUNK ? k - k0 : Q8_CHUNK;
            const int64_t chunk = (len + 3) / 4 * 4;
            for (int32_t i = 0; i < 4; i++) {
                const int32_t r = r0 + i;
                uint8_t *part = scratch + i * Q8_CHUNK;
                if (r >= rows) {
                    memset(part, 0, (size_t)chunk);
                    continue;
                }
                if (args->conv) { /* staged: already shifted */
                    q8_conv_row_part(args, &c, i0 + r, k0, len, part);
                } else {
                    const uint8_t *src =
                        (const uint8_t *)args->a.data + (i0 + r) * args->a_stride_m + k0;
                    for (int64_t b = 0; b < len; b++)
                        part[b] = (uint8_t)(src[b] ^ flip);
                }
                memset(part + len, 0, (size_t)(chunk - len));
                if (sums) {
                    uint32_t sum = 0;
                    for (int64_t b = 0; b < len; b++)
                        sum += part[b];
                    row_sums[r] += sum;
                }
            }
            q8_transpose4_into(scratch, Q8_CHUNK, chunk / 4, width, out + k0 / 4 * width);
        }
    }
}

/* x rounded to the nearest integer, ties to even, for |x| < 2^51 (the default rounding mode
 * does it in the addition); larger values come back larger than 2^51 in magnitude, with their
 * sign, and NaN and infinities unchanged, which is all a clamp to 8 bits needs. */
static inline double round_half_even(double x)
{
    const double shift = 6755399441055744.0; /* 1.5 * 2^52 */
    return (x + shift) - shift;
}

/* multiplier[j] = a_scale * b_scale[j] / y_scale, the f32 multiplier nxe_ref_q8_store takes. */
static void q8_multipliers(int32_t nr, const float *b_scale, float a_scale, float y_scale,
                           float *multiplier)
{
    for (int32_t j = 0; j < nr; j++)
        multiplier[j] = a_scale * b_scale[j] / y_scale;
}

/* q[j] = nxe_ref_q8_store's 8-bit result for accumulator acc[j] plus bias[j] with
 * multiplier[j], bit for bit (the same double product, rounding and clamps), written without
 * branches or library calls and with quiet comparisons so that the loop vectorizes. */
static void q8_requantize(int32_t nr, const uint32_t *acc, const int32_t *bias,
                          const float *multiplier, const nxe_q8_output *out, int32_t *q)
{
    const double lo = out->y_signed ? -128.0 : 0.0, hi = out->y_signed ? 127.0 : 255.0;
    const double zero_point = (double)out->y_zero_point;
    const double nan_q = zero_point < lo ? lo : zero_point > hi ? hi : zero_point;
    for (int32_t j = 0; j < nr; j++) {
        const double v =
            round_half_even(((double)(int32_t)acc[j] + (double)bias[j]) * (double)multiplier[j]) +
            zero_point;
        double c = isless(v, lo) ? lo : v;
        c = isgreater(c, hi) ? hi : c;
        q[j] = (int32_t)(isunordered(v, v) ? nan_q : c);
    }
}

/* The per-column operands of output columns [j0, j0 + nr). */
typedef struct q8_columns {
    int64_t j0;
    int32_t nr;
    uint32_t beta[NXE_GEMM_MAX_NR]; /* B's shift minus its zero point */
    const uint32_t *col_sums;
    int32_t bias[NXE_GEMM_MAX_NR];
    float b_scale[NXE_GEMM_MAX_NR];
    float multiplier[NXE_GEMM_MAX_NR]; /* when A has one scale */
} q8_columns;

/* Turns the products of block rows [i0, i0 + rows) in acc (rows NXE_GEMM_MAX_NR apart) into
 * results and stores them: zero-point corrections, then int32 or requantized 8-bit values. A
 * convolution's block is transposed on the way, so each output channel gets one run of
 * `rows` pixels: 8-bit results four rows to a word (one vector op per 16 columns), the words
 * then transposed as A's rows are. */
static void q8_finish_block(const nxe_q8_packed_args *args, const q8_columns *col, int64_t i0,
                            int32_t rows, const uint32_t *row_sums, int32_t *acc)
{
    const int32_t nr = col->nr;
    const int64_t k = args->k;
    const uint32_t a_shift = args->a.is_signed ? 128u : 0u;
    const int requant = args->out.y_i32 == NULL;
    const int64_t stride = args->y_column_stride;
    enum { QUADS = Q8_BLOCK_ROWS / 4 };
    /* [column][row]: a convolution's int32 results, or its 8-bit results as words; before
     * those words, [row][column] the 8-bit results themselves, rows to a whole quad zero */
    _Alignas(64) int32_t block[NXE_GEMM_MAX_NR * Q8_BLOCK_ROWS];
    int32_t *results = block;
    for (int32_t i = 0; i < rows; i++) {
        const int64_t row = i0 + i;
        const uint32_t alpha =
            a_shift +
            (uint32_t)(args->a_zero.data ? q8_at(args->a_zero, row * args->a_zero_stride) : 0);
        const uint32_t sum_a = row_sums[i], ka = (uint32_t)k * alpha;
        uint32_t *v = (uint32_t *)(void *)(acc + i * NXE_GEMM_MAX_NR);
        /* sum (A - alpha)(B + beta) = P + beta sum A - alpha sum B - k alpha beta, in wrapping
         * arithmetic like the accumulators; alpha per row, beta per column. */
        for (int32_t j = 0; j < nr; j++)
            v[j] = v[j] + col->beta[j] * sum_a - alpha * col->col_sums[j] - ka * col->beta[j];
        int32_t row_q[NXE_GEMM_MAX_NR];
        int32_t *q = stride ? results + i * NXE_GEMM_MAX_NR : row_q;
        if (requant) {
            float row_multiplier[NXE_GEMM_MAX_NR];
            const float *multiplier = col->multiplier;
            if (args->a_scale_stride) {
                q8_multipliers(nr, col->b_scale, args->a_scale[row * args->a_scale_stride],
                               args->out.y_scale, row_multiplier);
                multiplier = row_multiplier;
            }
            q8_requantize(nr, v, col->bias, multiplier, &args->out, q);
        }
        if (stride && !requant) {
            for (int32_t j = 0; j < nr; j++)
                block[j * Q8_BLOCK_ROWS + i] = (int32_t)v[j];
        } else if (!stride && !requant) {
            memcpy(args->out.y_i32 + row * args->n + col->j0, v, sizeof(int32_t) * (size_t)nr);
        } else if (!stride) {
            uint8_t bytes[NXE_GEMM_MAX_NR];
            for (int32_t j = 0; j < nr; j++)
                bytes[j] = (uint8_t)q[j]; /* the two's complement byte when signed */
            memcpy((uint8_t *)args->out.y_q8 + row * args->n + col->j0, bytes, (size_t)nr);
        }
    }
    if (!stride)
        return;
    if (requant) {
        const int32_t quads = (rows + 3) / 4;
        memset(results + rows * NXE_GEMM_MAX_NR, 0,
               sizeof(int32_t) * (size_t)((quads * 4 - rows) * NXE_GEMM_MAX_NR));
        uint32_t words[QUADS][NXE_GEMM_MAX_NR]; /* rows 4g..4g+3 of column j: words[g][j] */
        for (int32_t g = 0; g < QUADS; g++) {
            const int32_t *r = results + 4 * g * NXE_GEMM_MAX_NR;
            for (int32_t j = 0; j < nr; j++)
                words[g][j] = g < quads ? ((uint32_t)r[j] & 0xFFu) |
                                              ((uint32_t)r[NXE_GEMM_MAX_NR + j] & 0xFFu) << 8 |
                                              ((uint32_t)r[2 * NXE_GEMM_MAX_NR + j] & 0xFFu) << 16 |
                                              (uint32_t)r[3 * NXE_GEMM_MAX_NR + j] << 24
                                        : 0;
        }
        q8_transpose4((const uint8_t *)words, sizeof words[0], nr, QUADS,
                      (uint32_t *)(void *)block);
    }
    for (int32_t j = 0; j < nr; j++) {
        const int64_t at = i0 + (col->j0 + j) * stride;
        if (requant && rows == Q8_BLOCK_ROWS) /* a constant size: one vector store */
            memcpy((uint8_t *)args->out.y_q8 + at, (const uint8_t *)block + j * Q8_BLOCK_ROWS,
                   Q8_BLOCK_ROWS);
        else if (requant)
            memcpy((uint8_t *)args->out.y_q8 + at, (const uint8_t *)block + j * Q8_BLOCK_ROWS,
                   (size_t)rows);
        else
            memcpy(args->out.y_i32 + at, block + j * Q8_BLOCK_ROWS, sizeof(int32_t) * (size_t)rows);
    }
}

void NXE_ISA_NAME(nxe_q8_gemm_run)(const nxe_q8_packed_args *args, int64_t tile_begin,
                                   int64_t tile_end)
{
    const nxe_q8_gemm_kernel *kernel = args->kernel;
    const int32_t mr_max = kernel->mr, nr_max = kernel->nr;
    const int64_t k = args->k, k_padded = nxe_round_up(k, 4);
    const int64_t panels = (args->n + nr_max - 1) / nr_max;
    const int64_t panel_bytes = k_padded * nr_max;
    int64_t nc_panels = panel_bytes > 0 ? Q8_NC_BYTES / panel_bytes : panels;
    nc_panels = nc_panels < 1 ? 1 : nc_panels;
    const int64_t block_tiles = Q8_BLOCK_ROWS / mr_max;
    _Alignas(64) uint8_t a_panels[Q8_BLOCK_ROWS * NXE_Q8_MAX_K];
    _Alignas(64) uint8_t scratch[4 * Q8_CHUNK];
    uint32_t row_sums[Q8_BLOCK_ROWS] = {0};
    _Alignas(64) int32_t acc[Q8_BLOCK_ROWS * NXE_GEMM_MAX_NR];
    /* The operands were shifted by these; zero points add to them (see kernels/gemm.h). B
     * of s8 with zero points 0, as symmetric weights are, has every beta 0: A's row sums
     * then drop out of the corrections and are not computed. */
    const uint32_t b_shift = args->b_signed ? 0u : 128u;
    bool sums = false;
    for (int64_t j = 0; j < args->n && !sums; j++)
        sums = b_shift !=
               (uint32_t)(args->b_zero.data ? q8_at(args->b_zero, j * args->b_zero_stride) : 0);
    const int requant = args->out.y_i32 == NULL;
    q8_columns col;
    for (int64_t pb = 0; pb < panels; pb += nc_panels) {
        const int64_t pe = pb + nc_panels < panels ? pb + nc_panels : panels;
        for (int64_t t = tile_begin; t < tile_end; t += block_tiles) {
            const int64_t i0 = t * mr_max;
            const int64_t tiles = tile_end - t < block_tiles ? tile_end - t : block_tiles;
            const int32_t rows =
                (int32_t)(args->m - i0 < tiles * mr_max ? args->m - i0 : tiles * mr_max);
            q8_pack_a(args, i0, rows, sums, a_panels, row_sums, scratch);
            for (int64_t p = pb; p < pe; p++) {
                col.j0 = p * nr_max;
                col.nr = (int32_t)(args->n - col.j0 < nr_max ? args->n - col.j0 : nr_max);
                for (int32_t r = 0; r < rows; r += mr_max)
                    kernel->run(rows - r < mr_max ? rows - r : mr_max, col.nr, k,
                                a_panels + r * k_padded, args->b_packed + p * panel_bytes,
                                acc + r * NXE_GEMM_MAX_NR, NXE_GEMM_MAX_NR);
                for (int32_t j = 0; j < col.nr; j++) {
                    const int64_t column = col.j0 + j;
                    col.beta[j] =
                        b_shift - (uint32_t)(args->b_zero.data
                                                 ? q8_at(args->b_zero, column * args->b_zero_stride)
                                                 : 0);
                    col.b_scale[j] = requant ? args->b_scale[column * args->b_scale_stride] : 0;
                    col.bias[j] = args->bias ? args->bias[column] : 0;
                }
                col.col_sums = (const uint32_t *)(const void *)(args->b_col_sums + col.j0);
                if (requant && !args->a_scale_stride)
                    q8_multipliers(col.nr, col.b_scale, args->a_scale[0], args->out.y_scale,
                                   col.multiplier);
                q8_finish_block(args, &col, i0, rows, row_sums, acc);
            }
        }
    }
}
