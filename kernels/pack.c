/* pack.c — the packed-panel layouts every level shares (kernels/gemm.h): bf16 rounding, panel
 * sizes and packing of GEMM operands, convolution and depthwise weights, the bf16 pair copy's
 * sizes and 8-bit B panels with their column sums. Portable C11, compiled once; no
 * allocation. */
#include "gemm.h"

#include <stdbool.h>
#include <string.h>

uint16_t nxe_f32_to_bf16(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)((bits >> 16) | 0x0040u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

float nxe_bf16_to_f32(uint16_t bits)
{
    uint32_t wide = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &wide, sizeof value);
    return value;
}

size_t nxe_gemm_element_size(int32_t type)
{
    return type == NXE_GEMM_BF16 ? 2u : 4u;
}

size_t nxe_gemm_packed_bytes(const nxe_gemm_kernel *kernel, int64_t k, int64_t w, int32_t width)
{
    int64_t panels = (w + width - 1) / width;
    int64_t k_padded = nxe_round_up(k, kernel->k_unit);
    return (size_t)(panels * k_padded * width) * nxe_gemm_element_size(kernel->type);
}

const void *nxe_gemm_panel_block(const nxe_gemm_kernel *kernel, const void *packed, int32_t width,
                                 int64_t k, int64_t panel, int64_t k0)
{
    int64_t k_padded = nxe_round_up(k, kernel->k_unit);
    size_t offset = (size_t)(panel * k_padded * width + k0 * width);
    return (const char *)packed + offset * nxe_gemm_element_size(kernel->type);
}

/* One row group of one panel from a source whose x is contiguous (stride_x 1): a copy or a
 * conversion of `valid` values per row, zeros after them. */
static void pack_contiguous_rows(const nxe_gemm_kernel *kernel, int32_t width, const float *src,
                                 int64_t stride_k, int64_t k, int64_t k_count, int64_t valid,
                                 void *dst)
{
    if (kernel->type == NXE_GEMM_BF16) {
        const float *even = src + k * stride_k;
        const float *odd = k + 1 < k_count ? even + stride_k : NULL;
        uint32_t *out = dst;
        for (int64_t i = 0; i < valid; i++)
            out[i] = (uint32_t)nxe_f32_to_bf16(even[i]) |
                     (odd ? (uint32_t)nxe_f32_to_bf16(odd[i]) << 16 : 0u);
        for (int64_t i = valid; i < width; i++)
            out[i] = 0;
    } else {
        float *out = dst;
        memcpy(out, src + k * stride_k, sizeof(float) * (size_t)valid);
        for (int64_t i = valid; i < width; i++)
            out[i] = 0.0f;
    }
}

void nxe_gemm_pack_panels(const nxe_gemm_kernel *kernel, int32_t width, const float *src,
                          int64_t stride_k, int64_t stride_x, int64_t k_count, int64_t w_count,
                          int64_t panel_begin, int64_t panel_end, void *dst)
{
    const int64_t unit = kernel->k_unit;
    const int64_t k_padded = nxe_round_up(k_count, unit);
    const size_t element = nxe_gemm_element_size(kernel->type);
    for (int64_t p = panel_begin; p < panel_end; p++) {
        const int64_t x0 = p * width;
        const int64_t valid = w_count - x0 < width ? w_count - x0 : width;
        char *panel = (char *)dst + (size_t)(p * k_padded * width) * element;
        if (stride_x == 1) {
            for (int64_t k = 0; k < k_padded; k += unit) {
                char *row = panel + (size_t)(k * width) * element;
                if (k < k_count)
                    pack_contiguous_rows(kernel, width, src + x0, stride_k, k, k_count, valid, row);
                else
                    memset(row, 0, (size_t)(width * unit) * element);
            }
            continue;
        }
        for (int64_t k = 0; k < k_padded; k++) {
            for (int64_t i = 0; i < width; i++) {
                int64_t x = x0 + i;
                float value = k < k_count && x < w_count ? src[k * stride_k + x * stride_x] : 0.0f;
                size_t index = (size_t)(((k / unit) * width + i) * unit + k % unit);
                if (kernel->type == NXE_GEMM_BF16)
                    ((uint16_t *)(void *)panel)[index] = nxe_f32_to_bf16(value);
                else
                    ((float *)(void *)panel)[index] = value;
            }
        }
    }
}

void nxe_gemm_pack(const nxe_gemm_kernel *kernel, int32_t width, const float *src, int64_t stride_k,
                   int64_t stride_x, int64_t k_count, int64_t w_count, void *dst)
{
    nxe_gemm_pack_panels(kernel, width, src, stride_k, stride_x, k_count, w_count, 0,
                         (w_count + width - 1) / width, dst);
}

/* ---- convolution weights ---- */

/* Both layouts keep one group's reduction contiguous per output channel ([O, C/g, KD, KH, KW]
 * channels first, [O, KD, KH, KW, C/g] channels last), in the order the drivers gather. The
 * bf16 kernels on channels-first input reduce over channel pairs instead: k = (pair, tap,
 * channel within the pair), pairs padded with a zero channel when C/g is odd, so that each
 * B row group is a run of the pair-interleaved input (nxe_conv_bf16_pairs). */
static bool pairs_layout(const nxe_gemm_kernel *kernel, int32_t channels_last)
{
    return kernel->type == NXE_GEMM_BF16 && !channels_last;
}

int64_t nxe_conv_gemm_reduction(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                                int32_t channels_last)
{
    const int64_t taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
    const int64_t group_in = g->in_channels / g->groups;
    return pairs_layout(kernel, channels_last) ? (group_in + 1) / 2 * 2 * taps : group_in * taps;
}

size_t nxe_conv_gemm_weight_bytes(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                                  int32_t channels_last)
{
    int64_t k = nxe_conv_gemm_reduction(kernel, g, channels_last);
    int32_t width = channels_last ? kernel->nr : kernel->mr;
    return (size_t)g->groups * nxe_gemm_packed_bytes(kernel, k, g->out_channels / g->groups, width);
}

void nxe_conv_gemm_pack_weight(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                               int32_t channels_last, const float *weight, void *dst)
{
    const int64_t group_out = g->out_channels / g->groups;
    const int64_t group_in = g->in_channels / g->groups;
    const int64_t taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
    const int64_t k = nxe_conv_gemm_reduction(kernel, g, channels_last);
    const int32_t width = channels_last ? kernel->nr : kernel->mr;
    const size_t group_bytes = nxe_gemm_packed_bytes(kernel, k, group_out, width);
    for (int64_t group = 0; group < g->groups; group++) {
        const float *w = weight + group * group_out * group_in * taps;
        char *out = (char *)dst + group * group_bytes;
        if (!pairs_layout(kernel, channels_last)) {
            nxe_gemm_pack(kernel, width, w, 1, k, k, group_out, out);
            continue;
        }
        /* Element (k, o) of the pair order, written where a bf16 panel keeps it. */
        uint16_t *packed = (uint16_t *)(void *)out;
        for (int64_t o = 0; o < nxe_round_up(group_out, width); o++) {
            for (int64_t kk = 0; kk < k; kk++) {
                const int64_t pair = kk / (2 * taps), tap = kk / 2 % taps;
                const int64_t channel = pair * 2 + kk % 2;
                const float value = o < group_out && channel < group_in
                                        ? w[(o * group_in + channel) * taps + tap]
                                        : 0.0f;
                const int64_t panel = o / width, i = o % width;
                packed[panel * k * width + ((kk / 2) * width + i) * 2 + kk % 2] =
                    nxe_f32_to_bf16(value);
            }
        }
    }
}

/* ---- depthwise weights ---- */

int nxe_conv_is_depthwise(const nxe_conv_geometry *g)
{
    return g->groups > 1 && g->in_channels == g->groups && g->out_channels % g->groups == 0;
}

void nxe_depthwise_pack_weight(const nxe_conv_geometry *g, int32_t channels_last,
                               const float *weight, float *dst)
{
    const int64_t taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
    for (int64_t o = 0; o < g->out_channels; o++)
        for (int64_t t = 0; t < taps; t++)
            dst[channels_last ? t * g->out_channels + o : o * taps + t] = weight[o * taps + t];
}

/* ---- the pair-interleaved input of bf16 convolutions ---- */

int64_t nxe_conv_bf16_pairs_rows(const nxe_conv_geometry *g)
{
    const int64_t pairs = (g->in_channels / g->groups + 1) / 2;
    return g->batch * g->groups * pairs * g->in_size[0] * g->in_size[1];
}

size_t nxe_conv_bf16_pairs_bytes(const nxe_conv_geometry *g)
{
    return (size_t)(nxe_conv_bf16_pairs_rows(g) * g->in_size[2]) * sizeof(uint32_t);
}

/* ---- 8-bit GEMM ---- */

size_t nxe_q8_packed_bytes(const nxe_q8_gemm_kernel *kernel, int64_t k, int64_t n)
{
    return (size_t)((n + kernel->nr - 1) / kernel->nr * nxe_round_up(k, 4) * kernel->nr);
}

/* Packs B's panels [panel_begin, panel_end) with reduction index kk read at offset
 * ((kk % channels) * taps + kk / channels) * stride_k: a matrix's rows in order (channels 1,
 * taps k), or convolution weights [C, taps] taken in (tap, channel) order. */
static void q8_pack_b_panels(const nxe_q8_gemm_kernel *kernel, nxe_q8_ref b, int64_t stride_k,
                             int64_t stride_n, int64_t k, int64_t channels, int64_t taps, int64_t n,
                             int64_t panel_begin, int64_t panel_end, int8_t *dst, int32_t *col_sums)
{
    const int32_t width = kernel->nr;
    const int64_t k_padded = nxe_round_up(k, 4);
    const uint8_t flip = b.is_signed ? 0u : 0x80u; /* u8 - 128 as s8 */
    const uint8_t *src = b.data;
    for (int64_t p = panel_begin; p < panel_end; p++) {
        int8_t *panel = dst + p * k_padded * width;
        const int64_t j0 = p * width;
        const int64_t valid = n - j0 < width ? n - j0 : width;
        uint32_t sums[64] = {0}; /* width <= NXE_GEMM_MAX_NR */
        for (int64_t kk = 0; kk < k_padded; kk++) {
            int8_t *out = panel + (kk / 4) * width * 4 + kk % 4;
            const uint8_t *row =
                kk < k ? src + ((kk % channels) * taps + kk / channels) * stride_k + j0 * stride_n
                       : NULL;
            for (int64_t i = 0; i < width; i++) {
                const int8_t value =
                    row && i < valid ? (int8_t)(uint8_t)(row[i * stride_n] ^ flip) : 0;
                out[i * 4] = value;
                sums[i] += (uint32_t)(int32_t)value;
            }
        }
        for (int64_t i = 0; i < valid; i++)
            col_sums[j0 + i] = (int32_t)sums[i];
    }
}

void nxe_q8_pack_b(const nxe_q8_gemm_kernel *kernel, nxe_q8_ref b, int64_t stride_k,
                   int64_t stride_n, int64_t k, int64_t n, int64_t panel_begin, int64_t panel_end,
                   int8_t *dst, int32_t *col_sums)
{
    q8_pack_b_panels(kernel, b, stride_k, stride_n, k, 1, k, n, panel_begin, panel_end, dst,
                     col_sums);
}

void nxe_q8_pack_conv_b(const nxe_q8_gemm_kernel *kernel, const nxe_q8_conv2d_geometry *g,
                        nxe_q8_ref w, int8_t *dst, int32_t *col_sums)
{
    const int64_t channels = g->in_channels / g->groups;
    const int64_t taps = g->kernel_height * g->kernel_width;
    const int64_t n = g->out_channels / g->groups;
    q8_pack_b_panels(kernel, w, 1, channels * taps, channels * taps, channels, taps, n, 0,
                     (n + kernel->nr - 1) / kernel->nr, dst, col_sums);
}

int64_t nxe_q8_conv_stage_height(const nxe_q8_conv2d_geometry *g)
{
    return (g->out_height - 1) * g->stride_height + (g->kernel_height - 1) * g->dilation_height + 1;
}

int64_t nxe_q8_conv_stage_width(const nxe_q8_conv2d_geometry *g)
{
    return (g->out_width - 1) * g->stride_width + (g->kernel_width - 1) * g->dilation_width + 1;
}

size_t nxe_q8_conv_stage_bytes(const nxe_q8_conv2d_geometry *g)
{
    return (size_t)(nxe_q8_conv_stage_height(g) * nxe_q8_conv_stage_width(g) *
                    (g->in_channels / g->groups));
}

void nxe_q8_conv_stage(const nxe_q8_conv2d_geometry *g, nxe_q8_ref x, nxe_q8_ref x_zero,
                       int64_t row_begin, int64_t row_end, uint8_t *dst)
{
    const uint8_t flip = x.is_signed ? 0x80u : 0u; /* s8 + 128 as u8 */
    const uint8_t pad =
        (uint8_t)((x_zero.data ? *(const uint8_t *)x_zero.data : 0) ^ flip); /* per tensor */
    const int64_t channels = g->in_channels / g->groups;
    const int64_t width = nxe_q8_conv_stage_width(g), plane = g->in_height * g->in_width;
    /* Staged columns [inside_begin, inside_end) are input columns from 0; the rest border. */
    const int64_t inside_begin = g->pad_left < width ? g->pad_left : width;
    const int64_t inside_end =
        g->pad_left + g->in_width < width ? g->pad_left + g->in_width : width;
    const uint8_t *src = x.data;
    for (int64_t sy = row_begin; sy < row_end; sy++) {
        uint8_t *out = dst + sy * width * channels;
        const int64_t iy = sy - g->pad_top;
        if (iy < 0 || iy >= g->in_height || inside_end <= inside_begin) {
            memset(out, pad, (size_t)(width * channels));
            continue;
        }
        memset(out, pad, (size_t)(inside_begin * channels));
        memset(out + inside_end * channels, pad, (size_t)((width - inside_end) * channels));
        /* Four channels at a time, each pixel's four bytes one word store. */
        const uint8_t *row = src + iy * g->in_width;
        int64_t c = 0;
        for (; c + 4 <= channels; c += 4) {
            const uint8_t *r = row + c * plane;
            for (int64_t sx = inside_begin; sx < inside_end; sx++) {
                const int64_t ix = sx - g->pad_left;
                const uint32_t word =
                    ((uint32_t)r[ix] | (uint32_t)r[plane + ix] << 8 |
                     (uint32_t)r[2 * plane + ix] << 16 | (uint32_t)r[3 * plane + ix] << 24) ^
                    flip * 0x01010101u;
                memcpy(out + sx * channels + c, &word, sizeof word);
            }
        }
        for (; c < channels; c++) {
            const uint8_t *r = row + c * plane;
            for (int64_t sx = inside_begin; sx < inside_end; sx++)
                out[sx * channels + c] = (uint8_t)(r[sx - g->pad_left] ^ flip);
        }
    }
}

/* ---- Winograd F(4x4, 3x3) (kernels/gemm.h) ---- */

/* The scratch of a block of tiles that kernels/portable/winograd.c lays out: transformed
 * input V [36, C, tile_block], products M [36, O, tile_block], six input rows and their row
 * transforms (4 tile_block + 8 floats each), and the output transform's rows (24 tile_block
 * and 4 (4 tile_block + 8) floats), each region a whole number of 64-byte lines. */
static size_t winograd_region(int64_t floats)
{
    return (size_t)nxe_round_up(floats, 16) * sizeof(float);
}

int nxe_winograd_applies(const nxe_conv_geometry *g)
{
    return g->groups == 1 && g->in_size[0] == 1 && g->kernel[0] == 1 && g->pad_begin[0] == 0 &&
           g->kernel[1] == 3 && g->kernel[2] == 3 && g->stride[1] == 1 && g->stride[2] == 1 &&
           g->dilation[1] == 1 && g->dilation[2] == 1;
}

int64_t nxe_winograd_tile_block(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g)
{
    /* A block's V and M (144 (C + O) bytes per tile) in about 1 MiB: one to four panels. */
    const int64_t per_panel = 144 * (g->in_channels + g->out_channels) * kernel->nr;
    int64_t panels = ((int64_t)1 << 20) / per_panel;
    panels = panels < 1 ? 1 : panels > 4 ? 4 : panels;
    return panels * kernel->nr;
}

size_t nxe_winograd_scratch_bytes(const nxe_conv_geometry *g, int64_t tile_block)
{
    const int64_t row = 4 * tile_block + 8;
    return winograd_region(36 * g->in_channels * tile_block) +
           winograd_region(36 * g->out_channels * tile_block) + 2 * winograd_region(6 * row) +
           winograd_region(24 * tile_block) + winograd_region(4 * row);
}

size_t nxe_winograd_weight_bytes(const nxe_conv_geometry *g)
{
    return sizeof(float) * 36 * (size_t)(g->out_channels * g->in_channels);
}

void nxe_winograd_transform_weight(const nxe_conv_geometry *g, int32_t channels_last,
                                   const float *weight, float *dst)
{
    static const double G[6][3] = {
        {1.0 / 4, 0, 0},
        {-1.0 / 6, -1.0 / 6, -1.0 / 6},
        {-1.0 / 6, 1.0 / 6, -1.0 / 6},
        {1.0 / 24, 1.0 / 12, 1.0 / 6},
        {1.0 / 24, -1.0 / 12, 1.0 / 6},
        {0, 0, 1},
    };
    const int64_t out_channels = g->out_channels, in_channels = g->in_channels;
    for (int64_t o = 0; o < out_channels; o++) {
        for (int64_t c = 0; c < in_channels; c++) {
            double w[3][3], gw[6][3];
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++)
                    w[ky][kx] = channels_last ? weight[((o * 3 + ky) * 3 + kx) * in_channels + c]
                                              : weight[((o * in_channels + c) * 3 + ky) * 3 + kx];
            for (int r = 0; r < 6; r++)
                for (int kx = 0; kx < 3; kx++)
                    gw[r][kx] = G[r][0] * w[0][kx] + G[r][1] * w[1][kx] + G[r][2] * w[2][kx];
            for (int r = 0; r < 6; r++)
                for (int s = 0; s < 6; s++)
                    dst[((r * 6 + s) * out_channels + o) * in_channels + c] =
                        (float)(gw[r][0] * G[s][0] + gw[r][1] * G[s][1] + gw[r][2] * G[s][2]);
        }
    }
}
