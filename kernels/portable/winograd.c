/* winograd.c — the Winograd F(4x4, 3x3) convolution driver (contract in kernels/gemm.h): input
 * transform, the 36 products of a block of tiles as GEMMs on this level's packed GEMM driver,
 * output transform and epilogue. Portable C built once per ISA level (see portable.h): the
 * transforms run along whole rows of a block's tiles, so they vectorize with the level's flags. */
#include <string.h>

#include "portable/portable.h"

/* Where a block's scratch regions start (sizes as nxe_winograd_scratch_bytes adds them). */
typedef struct winograd_scratch {
    float *v;       /* [36, C, tile_block] */
    float *m;       /* [36, O, tile_block] */
    float *rows;    /* 6 input rows of one channel, `row` floats each */
    float *t_rows;  /* their transforms along the tile height */
    float *q;       /* [4, 6, tile_block]: products transformed along the height */
    float *out_row; /* 4 output rows, `row` floats each */
    int64_t row;
} winograd_scratch;

static float *region(char **at, int64_t floats)
{
    float *start = (float *)(void *)*at;
    *at += nxe_round_up(floats, 16) * (int64_t)sizeof(float);
    return start;
}

static winograd_scratch scratch_of(const nxe_winograd_args *args, void *scratch)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t tb = args->tile_block;
    winograd_scratch s;
    char *at = scratch;
    s.row = 4 * tb + 8;
    s.v = region(&at, 36 * g->in_channels * tb);
    s.m = region(&at, 36 * g->out_channels * tb);
    s.rows = region(&at, 6 * s.row);
    s.t_rows = region(&at, 6 * s.row);
    s.q = region(&at, 24 * tb);
    s.out_row = region(&at, 4 * s.row);
    return s;
}

/* A run of tiles of one tile row: batch n, tile row ty, tile columns tx .. tx + count - 1,
 * at tile `offset` of its block. */
typedef struct tile_run {
    int64_t n, ty, tx, count, offset;
} tile_run;

static int64_t tile_rows(const nxe_conv_geometry *g)
{
    return (g->out_size[1] + 3) / 4;
}

static int64_t tile_columns(const nxe_conv_geometry *g)
{
    return (g->out_size[2] + 3) / 4;
}

/* Input rows 4 ty - pad + r (r < 6) of channel c over columns 4 tx - pad .. + width, zeros
 * outside the input. */
static void load_rows(const nxe_winograd_args *args, const tile_run *run, int64_t c, int64_t width,
                      float *rows, int64_t row_stride)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t h = g->in_size[1], w = g->in_size[2], channels = g->in_channels;
    const int64_t x0 = 4 * run->tx - g->pad_begin[2];
    int64_t lo = x0 < 0 ? -x0 : 0, hi = w - x0 < width ? w - x0 : width;
    if (hi < lo)
        hi = lo;
    for (int r = 0; r < 6; r++) {
        float *row = rows + r * row_stride;
        const int64_t iy = 4 * run->ty - g->pad_begin[1] + r;
        if (iy < 0 || iy >= h || hi <= lo) {
            memset(row, 0, sizeof(float) * (size_t)width);
            continue;
        }
        for (int64_t i = 0; i < lo; i++)
            row[i] = 0.0f;
        if (args->channels_last) {
            const float *src = args->input + ((run->n * h + iy) * w + x0) * channels + c;
            for (int64_t i = lo; i < hi; i++)
                row[i] = src[i * channels];
        } else {
            const float *src = args->input + ((run->n * channels + c) * h + iy) * w + x0;
            memcpy(row + lo, src + lo, sizeof(float) * (size_t)(hi - lo));
        }
        for (int64_t i = hi; i < width; i++)
            row[i] = 0.0f;
    }
}

/* The 1-D input transform B^T (six values to six), in halves: one loop storing all six rows
 * needs more run-time alias checks than the vectorizer makes, and it would stay scalar. */
#define INPUT_1D_FIRST(x0, x1, x2, x3, x4, y0, y1, y2)                                             \
    do {                                                                                           \
        y0 = 4.0f * (x0) - 5.0f * (x2) + (x4);                                                     \
        y1 = -4.0f * ((x1) + (x2)) + (x3) + (x4);                                                  \
        y2 = 4.0f * ((x1) - (x2)) - (x3) + (x4);                                                   \
    } while (0)
#define INPUT_1D_SECOND(x1, x2, x3, x4, x5, y3, y4, y5)                                            \
    do {                                                                                           \
        y3 = 2.0f * ((x3) - (x1)) - (x2) + (x4);                                                   \
        y4 = 2.0f * ((x1) - (x3)) - (x2) + (x4);                                                   \
        y5 = 4.0f * (x1) - 5.0f * (x3) + (x5);                                                     \
    } while (0)

/* Along the tile height: out[r] = sum over p of B^T[r][p] in[p], rows `stride` apart, `width`
 * columns. Restrict parameters: the vectorizer does not trust restrict on local pointers. */
static void input_rows(int64_t width, const float *restrict in, float *restrict out, int64_t stride)
{
    for (int64_t i = 0; i < width; i++)
        INPUT_1D_FIRST(in[i], in[stride + i], in[2 * stride + i], in[3 * stride + i],
                       in[4 * stride + i], out[i], out[stride + i], out[2 * stride + i]);
    for (int64_t i = 0; i < width; i++)
        INPUT_1D_SECOND(in[stride + i], in[2 * stride + i], in[3 * stride + i], in[4 * stride + i],
                        in[5 * stride + i], out[3 * stride + i], out[4 * stride + i],
                        out[5 * stride + i]);
}

/* Columns 4 t + k of a row as four contiguous phases (t <= count), so that the transform
 * along the width reads vectors. */
static void deinterleave(int64_t count, const float *restrict row, float *restrict phases,
                         int64_t stride)
{
    for (int64_t t = 0; t <= count; t++) {
        phases[t] = row[4 * t];
        phases[stride + t] = row[4 * t + 1];
        phases[2 * stride + t] = row[4 * t + 2];
        phases[3 * stride + t] = row[4 * t + 3];
    }
}

/* Along the tile width: v[s] of tile t from columns 4 t .. 4 t + 5, element s at
 * v + s * e_stride. */
static void input_columns(int64_t count, const float *restrict phases, int64_t stride,
                          float *restrict v, int64_t e_stride)
{
    const float *p0 = phases, *p1 = p0 + stride, *p2 = p1 + stride, *p3 = p2 + stride;
    for (int64_t t = 0; t < count; t++)
        INPUT_1D_FIRST(p0[t], p1[t], p2[t], p3[t], p0[t + 1], v[t], v[e_stride + t],
                       v[2 * e_stride + t]);
    for (int64_t t = 0; t < count; t++)
        INPUT_1D_SECOND(p1[t], p2[t], p3[t], p0[t + 1], p1[t + 1], v[3 * e_stride + t],
                        v[4 * e_stride + t], v[5 * e_stride + t]);
}

/* V = B^T d B for the run's tiles, every input channel, into the block's V. The output
 * transform's q rows hold the phases meanwhile. */
static void input_transform(const nxe_winograd_args *args, const winograd_scratch *s,
                            const tile_run *run)
{
    const int64_t channels = args->geometry->in_channels, tb = args->tile_block;
    /* Two columns past the tiles' 4 count + 2 complete the last group of four phases. */
    const int64_t width = 4 * run->count + 4, stride = s->row;
    for (int64_t c = 0; c < channels; c++) {
        load_rows(args, run, c, width, s->rows, stride);
        input_rows(width, s->rows, s->t_rows, stride);
        for (int r = 0; r < 6; r++) {
            deinterleave(run->count, s->t_rows + r * stride, s->q, tb + 1);
            input_columns(run->count, s->q, tb + 1,
                          s->v + ((int64_t)r * 6 * channels + c) * tb + run->offset, channels * tb);
        }
    }
}

/* The 1-D output transform A^T (six values to four). */
#define OUTPUT_1D(x0, x1, x2, x3, x4, x5, y0, y1, y2, y3)                                          \
    do {                                                                                           \
        const float sum12 = (x1) + (x2), diff12 = (x1) - (x2);                                     \
        const float sum34 = (x3) + (x4), diff34 = (x3) - (x4);                                     \
        y0 = (x0) + sum12 + sum34;                                                                 \
        y1 = diff12 + 2.0f * diff34;                                                               \
        y2 = sum12 + 4.0f * sum34;                                                                 \
        y3 = diff12 + 8.0f * diff34 + (x5);                                                        \
    } while (0)

/* Along the tile height: q[i] (rows q_stride apart) from the products m[r] (e_stride apart). */
static void output_rows(int64_t count, const float *restrict m, int64_t e_stride, float *restrict q,
                        int64_t q_stride)
{
    for (int64_t t = 0; t < count; t++)
        OUTPUT_1D(m[t], m[e_stride + t], m[2 * e_stride + t], m[3 * e_stride + t],
                  m[4 * e_stride + t], m[5 * e_stride + t], q[t], q[q_stride + t],
                  q[2 * q_stride + t], q[3 * q_stride + t]);
}

/* Along the tile width: output columns 4 t .. 4 t + 3 from q[s] (tb apart). */
static void output_columns(int64_t count, const float *restrict q, int64_t tb, float *restrict out)
{
    for (int64_t t = 0; t < count; t++)
        OUTPUT_1D(q[t], q[tb + t], q[2 * tb + t], q[3 * tb + t], q[4 * tb + t], q[5 * tb + t],
                  out[4 * t], out[4 * t + 1], out[4 * t + 2], out[4 * t + 3]);
}

/* Y = A^T M A for the run's tiles, written to the output, then the epilogue. */
static void output_transform(const nxe_winograd_args *args, const winograd_scratch *s,
                             const tile_run *run)
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t outs = g->out_channels, tb = args->tile_block, count = run->count;
    const int64_t oh = g->out_size[1], ow = g->out_size[2];
    const int64_t oy0 = 4 * run->ty, ox0 = 4 * run->tx;
    const int32_t rows = (int32_t)(oh - oy0 < 4 ? oh - oy0 : 4);
    const int32_t cols = (int32_t)(ow - ox0 < 4 * count ? ow - ox0 : 4 * count);
    nxe_epilogue_fn *const epilogue = args->kernel->epilogue;
    for (int64_t o = 0; o < outs; o++) {
        /* q [4, 6, tb]: element (i, s) at q + (6 i + s) tb. */
        for (int sx = 0; sx < 6; sx++)
            output_rows(count, s->m + ((int64_t)sx * outs + o) * tb + run->offset, 6 * outs * tb,
                        s->q + sx * tb, 6 * tb);
        for (int32_t i = 0; i < rows; i++)
            output_columns(count, s->q + (int64_t)i * 6 * tb, tb, s->out_row + i * s->row);
        if (args->channels_last) {
            for (int32_t i = 0; i < rows; i++) {
                float *dst = args->output + ((run->n * oh + oy0 + i) * ow + ox0) * outs + o;
                const float *src = s->out_row + i * s->row;
                for (int32_t x = 0; x < cols; x++)
                    dst[x * outs] = src[x];
            }
            continue;
        }
        const int64_t first = ((run->n * outs + o) * oh + oy0) * ow + ox0;
        for (int32_t i = 0; i < rows; i++)
            memcpy(args->output + first + i * ow, s->out_row + i * s->row,
                   sizeof(float) * (size_t)cols);
        const nxe_epilogue_operands operands = {
            .bias = args->bias ? args->bias + o : NULL,
            .residual = args->residual ? args->residual + first : NULL,
            .ldr = ow,
        };
        epilogue(rows, cols, args->output + first, ow, &args->epilogue, &operands);
    }
    if (!args->channels_last)
        return;
    for (int32_t i = 0; i < rows; i++) {
        const int64_t first = ((run->n * oh + oy0 + i) * ow + ox0) * outs;
        const nxe_epilogue_operands operands = {
            .bias = args->bias,
            .bias_stride_n = 1,
            .residual = args->residual ? args->residual + first : NULL,
            .ldr = outs,
        };
        epilogue(cols, (int32_t)outs, args->output + first, outs, &args->epilogue, &operands);
    }
}

/* The end of args' tile range. */
static int64_t tile_range_end(const nxe_winograd_args *args)
{
    const nxe_conv_geometry *g = args->geometry;
    return args->tile_end ? args->tile_end : g->batch * tile_rows(g) * tile_columns(g);
}

int64_t NXE_ISA_NAME(nxe_winograd_blocks)(const nxe_winograd_args *args)
{
    return (tile_range_end(args) - args->tile_begin + args->tile_block - 1) / args->tile_block;
}

/* Calls fn for each run of tiles of one tile row in block `block`. */
static void for_each_run(const nxe_winograd_args *args, const winograd_scratch *s, int64_t block,
                         void (*fn)(const nxe_winograd_args *, const winograd_scratch *,
                                    const tile_run *))
{
    const nxe_conv_geometry *g = args->geometry;
    const int64_t columns = tile_columns(g), per_image = tile_rows(g) * columns;
    const int64_t tiles = tile_range_end(args);
    const int64_t begin = args->tile_begin + block * args->tile_block;
    const int64_t end = begin + args->tile_block < tiles ? begin + args->tile_block : tiles;
    for (int64_t t = begin; t < end;) {
        tile_run run = {t / per_image, t % per_image / columns, t % columns, 0, t - begin};
        run.count = columns - run.tx < end - t ? columns - run.tx : end - t;
        fn(args, s, &run);
        t += run.count;
    }
}

void NXE_ISA_NAME(nxe_winograd_run)(const nxe_winograd_args *args, void *scratch,
                                    int64_t block_begin, int64_t block_end)
{
    const nxe_conv_geometry *g = args->geometry;
    const winograd_scratch s = scratch_of(args, scratch);
    const int64_t tiles = tile_range_end(args);
    const int64_t tb = args->tile_block, c = g->in_channels, o = g->out_channels;
    for (int64_t block = block_begin; block < block_end; block++) {
        const int64_t begin = args->tile_begin + block * tb;
        const int64_t n = tiles - begin < tb ? tiles - begin : tb;
        for_each_run(args, &s, block, input_transform);
        for (int64_t e = 0; e < 36; e++) {
            const nxe_gemm_packed_args product = {
                .kernel = args->kernel,
                .m = o,
                .n = n,
                .k = c,
                .a = args->weight + e * o * c,
                .a_stride_m = c,
                .a_stride_k = 1,
                .b = s.v + e * c * tb,
                .b_stride_k = tb,
                .y = s.m + e * o * tb,
                .y_stride_m = tb,
                .epilogue = {.scale = 1.0f, .bias_scale = 1.0f},
            };
            NXE_ISA_NAME(nxe_gemm_packed_run)
            (&product, 0, NXE_ISA_NAME(nxe_gemm_packed_tiles)(&product));
        }
        for_each_run(args, &s, block, output_transform);
    }
}
