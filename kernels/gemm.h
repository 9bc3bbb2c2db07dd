/* gemm.h — the packed GEMM every fast convolution and dense layer runs on: the microkernel
 * contract, the packed panel layout, the epilogue (bias, scale, residual, activation) and the
 * convolution and GEMM drivers built on them. Kernels here are pure functions over pointers:
 * no allocation, no threads, no graph knowledge.
 *
 * A microkernel computes one tile C[mr x nr] (mr <= MR, nr <= NR) from two packed panels:
 * A holds MR rows and B holds NR columns of a kc-long slice of the reduction, both k-major in
 * groups of `k_unit` consecutive k values (1 for f32, 2 for bf16 pairs):
 *     element (k, i) of a W-wide panel sits at index ((k / k_unit) * W + i) * k_unit + k % k_unit
 * and k runs to kc rounded up to k_unit, the extra entries zero. Rows >= mr of an A panel are
 * zero too; a microkernel may read them, reads no B column >= nr, and never stores outside
 * the tile. */
#ifndef NXE_KERNELS_GEMM_H
#define NXE_KERNELS_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "ref/conv.h"
#include "ref/quantized.h"

/* The activations an epilogue applies; numbering is internal to the build. */
typedef enum nxe_activation {
    NXE_ACTIVATION_NONE = 0,
    NXE_ACTIVATION_RELU,
    NXE_ACTIVATION_CLIP,       /* min(max(v, alpha), beta) */
    NXE_ACTIVATION_LEAKY_RELU, /* v < 0 ? alpha * v : v */
    NXE_ACTIVATION_TANH,
    NXE_ACTIVATION_SIGMOID,
    NXE_ACTIVATION_GELU_ERF,  /* 0.5 v (1 + erf(v / sqrt 2)) */
    NXE_ACTIVATION_GELU_TANH, /* 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) */
    NXE_ACTIVATION_SILU,      /* v * sigmoid(v) */
    NXE_ACTIVATION_COUNT
} nxe_activation;

/* What happens to each accumulated value v of C before it is final:
 *     v = scale * v + bias_scale * bias   (bias indexed by row or by column, or absent)
 *     v += residual                       (when residual_before_activation)
 *     v = activation(v)
 *     v += residual                       (otherwise)
 * A neutral epilogue has scale and bias_scale 1. */
typedef struct nxe_epilogue {
    float scale;
    int32_t activation; /* nxe_activation */
    float alpha;
    float beta;
    int32_t residual_before_activation;
    float bias_scale;
} nxe_epilogue;

/* Where an epilogue reads its per-tile operands; both may be NULL. The bias broadcasts over
 * the tile through its strides: element (i, j) is bias[i * bias_stride_m + j * bias_stride_n],
 * bias_stride_n being 0 or 1 (per row: 1, 0; per column: 0, 1; one value: 0, 0; a matrix:
 * its row stride, 1). */
typedef struct nxe_epilogue_operands {
    const float *bias; /* the tile's first bias value */
    int64_t bias_stride_m;
    int64_t bias_stride_n;
    const float *residual; /* the tile's first residual value, rows ldr apart */
    int64_t ldr;
} nxe_epilogue_operands;

/* Element types of packed panels. */
typedef enum nxe_gemm_type {
    NXE_GEMM_F32 = 0, /* f32 panels, f32 accumulation */
    NXE_GEMM_BF16 = 1 /* bf16 panels (round to nearest even), f32 accumulation */
} nxe_gemm_type;

/* C[i, j] (+)= sum over k < kc of A[k, i] * B[k, j] for i < mr, j < nr; rows of C are ldc
 * apart. A is a packed panel (layout above); B is given row by row: b_rows[q] points at row
 * group q (k in [q * k_unit, (q + 1) * k_unit)) laid out as in a packed panel, nr columns of
 * which are read — rows of a packed B panel, or rows of the input itself where a convolution
 * can use them in place. accumulate = 0 overwrites C, 1 adds to what C holds. Every C element
 * is one chain of multiply-adds over k in increasing order (pairs for bf16; the AMX kernels add
 * one tile product per 16 pairs, in the order of its instruction: x86/amx/tile.h), whatever mr
 * and nr are. */
typedef void nxe_gemm_ukernel_fn(int32_t mr, int32_t nr, int64_t kc, const void *a,
                                 const void *const *b_rows, float *c, int64_t ldc,
                                 int32_t accumulate);

/* The same product with A read straight from memory instead of a packed panel: element
 * (k, i) at a[i * a_stride_m + k] (rows of A with k contiguous). Optional: f32 kernels only,
 * where it saves the GEMM driver packing A. */
typedef void nxe_gemm_ukernel_rows_fn(int32_t mr, int32_t nr, int64_t kc, const float *a,
                                      int64_t a_stride_m, const void *const *b_rows, float *c,
                                      int64_t ldc, int32_t accumulate);

/* The product of few rows with one whole packed B panel, for GEMMs of few rows (batch-1
 * inference), where every weight is read once or a few times and the time goes to streaming B
 * from memory: C[i, j] = sum over k < k of A[k, i] * B[k, j] for i < mr, j < nr, overwritten,
 * rows of C ldc apart. A is read in place (element (k, i) at a[i * a_stride_m + k]); b is the
 * start of one f32 panel packed NR wide over the whole reduction (element (k, j) at
 * b[k * NR + j]), of which nr columns are read. `next` is the panel the caller reads after
 * this one, or NULL: the kernel fetches it into cache as it goes, so that the memory system
 * works while the core computes. The chains are the microkernel's (k in increasing order), so
 * results equal the blocked driver's bit for bit. Optional: f32 kernels only. */
typedef void nxe_gemm_ukernel_panel_fn(int32_t mr, int32_t nr, int64_t k, const float *a,
                                       int64_t a_stride_m, const float *b, const float *next,
                                       float *c, int64_t ldc);

/* Applies the epilogue to C[mr x nr] in place. */
typedef void nxe_epilogue_fn(int32_t mr, int32_t nr, float *c, int64_t ldc,
                             const nxe_epilogue *epilogue, const nxe_epilogue_operands *operands);

/* One microkernel and what it needs around it. */
typedef struct nxe_gemm_kernel {
    const char *name; /* <dtype>-gemm-<MR>x<NR>-<isa>, e.g. "f32-gemm-8x48-avx512" */
    int32_t type;     /* nxe_gemm_type */
    int32_t mr;
    int32_t nr;
    int32_t k_unit;
    nxe_gemm_ukernel_fn *run;
    nxe_epilogue_fn *epilogue;            /* the portable epilogue of the kernel's level */
    nxe_gemm_ukernel_rows_fn *run_rows;   /* NULL: A is always packed */
    nxe_gemm_ukernel_panel_fn *run_panel; /* NULL: no few-row path */
} nxe_gemm_kernel;

/* Reduction slices longer than this are split into blocks whose partial sums wait in C. */
#define NXE_GEMM_KC 256
/* Widest panels any kernel uses (the bounds of the drivers' stack scratch). */
#define NXE_GEMM_MAX_MR 16
#define NXE_GEMM_MAX_NR 48

static inline int64_t nxe_round_up(int64_t value, int64_t unit)
{
    return (value + unit - 1) / unit * unit;
}

/* Bytes of one packed element. */
size_t nxe_gemm_element_size(int32_t type);

/* Bytes of the panels holding a [k x w] operand packed `width` wide: ceil(w / width) panels of
 * round_up(k, k_unit) * width elements each. A panel is k-major, so any block of the reduction
 * starting at a multiple of k_unit is one contiguous [kc x width] run inside it. */
size_t nxe_gemm_packed_bytes(const nxe_gemm_kernel *kernel, int64_t k, int64_t w, int32_t width);

/* Packs the operand element (k, x) = src[k * stride_k + x * stride_x], for k < k_count and
 * x < w_count, into panels `width` wide (kernel->mr for A, kernel->nr for B) at dst, laid out
 * as nxe_gemm_packed_bytes describes. Converts to bf16 for bf16 kernels. */
void nxe_gemm_pack(const nxe_gemm_kernel *kernel, int32_t width, const float *src, int64_t stride_k,
                   int64_t stride_x, int64_t k_count, int64_t w_count, void *dst);

/* The same for panels [panel_begin, panel_end) only (each panel is independent). */
void nxe_gemm_pack_panels(const nxe_gemm_kernel *kernel, int32_t width, const float *src,
                          int64_t stride_k, int64_t stride_x, int64_t k_count, int64_t w_count,
                          int64_t panel_begin, int64_t panel_end, void *dst);

/* Where packed panel `panel`'s block starting at reduction index k0 begins. */
const void *nxe_gemm_panel_block(const nxe_gemm_kernel *kernel, const void *packed, int32_t width,
                                 int64_t k, int64_t panel, int64_t k0);

/* ---- GEMM with a packed B ---- */

/* y[m x n] = epilogue(a[m x k] * B), a addressed by strides, B packed (width kernel->nr) from a
 * [k x n] operand or, for an f32 kernel, read in place from rows of B with n contiguous, y
 * dense rows y_stride_m apart. */
typedef struct nxe_gemm_packed_args {
    const nxe_gemm_kernel *kernel;
    int64_t m;
    int64_t n;
    int64_t k;
    const float *a;
    int64_t a_stride_m;
    int64_t a_stride_k;
    const void *b_packed;
    /* When b_packed is NULL (f32 kernels only): element (k, j) of B at b[k * b_stride_k + j],
     * whose rows the microkernel reads where they are. */
    const float *b;
    int64_t b_stride_k;
    float *y;
    int64_t y_stride_m;
    /* An addend scaled by epilogue.bias_scale, or NULL: element (i, j) at
     * bias[i * bias_stride_m + j * bias_stride_n], bias_stride_n 0 or 1 (a bias per column:
     * 0, 1). */
    const float *bias;
    int64_t bias_stride_m;
    int64_t bias_stride_n;
    const float *residual; /* [m x n], rows residual_stride_m apart, or NULL */
    int64_t residual_stride_m;
    nxe_epilogue epilogue;
    /* The panels of B (columns of y, kernel->nr each) to compute: [panel_begin, panel_end),
     * or all of them when both are 0. Splitting by panels lets few rows use many threads
     * without every thread reading all of B. */
    int64_t panel_begin;
    int64_t panel_end;
} nxe_gemm_packed_args;

/* Few rows: at most this many row tiles, A at most this many bytes (it is read once per
 * panel of B, from cache). */
#define NXE_GEMM_SMALL_M_TILES 4
#define NXE_GEMM_SMALL_M_A_BYTES (256 * 1024)

/* Whether the driver runs `args` on the few-row path: a kernel with run_panel, B packed, A rows
 * with k dense, and few rows. That path goes panel by panel over the whole reduction, each panel
 * read from memory once for all row tiles while the next is fetched; callers splitting the work
 * between threads should then split by panels of B (panel_begin, panel_end), not row tiles.
 * Results are the same either way. */
static inline int nxe_gemm_small_m(const nxe_gemm_packed_args *args)
{
    return args->kernel->run_panel && args->b_packed && args->a_stride_k == 1 &&
           args->m <= NXE_GEMM_SMALL_M_TILES * (int64_t)args->kernel->mr &&
           args->m * args->k <= NXE_GEMM_SMALL_M_A_BYTES / (int64_t)sizeof(float);
}

/* The drivers are compiled once per ISA level (kernels/portable/portable.h) and reached
 * through the dispatch table:
 *   gemm_packed_tiles(args): row tiles of kernel->mr rows;
 *   gemm_packed_run(args, tile_begin, tile_end): computes those row tiles. */
typedef int64_t nxe_gemm_packed_tiles_fn(const nxe_gemm_packed_args *args);
typedef void nxe_gemm_packed_run_fn(const nxe_gemm_packed_args *args, int64_t tile_begin,
                                    int64_t tile_end);

/* ---- convolution as implicit GEMM ---- */

/* A convolution (groups allowed) over f32 tensors. Channels first: output channels are the
 * rows of the product and output pixels its columns, the packed weights are A (width mr, one
 * set per group, reduction order input channel, kz, ky, kx as in [O, C/g, KD, KH, KW]), and
 * each tile of nr pixels of one output row is gathered into a B panel as it is needed.
 * Channels last: pixels are the rows, the weights B (width nr, order kz, ky, kx, channel as in
 * [O, KD, KH, KW, C/g]), and tiles of mr pixels are gathered into A panels. Either way no
 * im2col buffer larger than one panel exists. */
typedef struct nxe_conv_gemm_args {
    const nxe_gemm_kernel *kernel;
    const nxe_conv_geometry *geometry;
    int32_t channels_last;
    /* f32 [N, C, ...] or [N, ..., C]; for a bf16 kernel on channels-first input, the
     * pair-interleaved bf16 copy nxe_conv_bf16_pairs makes. */
    const void *input;
    const void *weight_packed; /* from nxe_conv_gemm_pack_weight */
    const float *bias;         /* [O] or NULL */
    const float *residual;     /* same shape and layout as the output, or NULL */
    float *output;
    nxe_epilogue epilogue;
} nxe_conv_gemm_args;

/* The reduction length of the product (see nxe_conv_gemm_pack_weight for its order). */
int64_t nxe_conv_gemm_reduction(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                                int32_t channels_last);
size_t nxe_conv_gemm_weight_bytes(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                                  int32_t channels_last);
void nxe_conv_gemm_pack_weight(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g,
                               int32_t channels_last, const float *weight, void *dst);

/* The pair-interleaved bf16 copy of a channels-first input that bf16 convolutions read:
 * [N, groups, ceil(C/g / 2), D, H, W] 32-bit elements, each the bf16 of channel 2p of its
 * group (low half) and of channel 2p + 1 (high half, 0 past the group's last channel). */
size_t nxe_conv_bf16_pairs_bytes(const nxe_conv_geometry *g);
/* Rows of that copy: (batch, group, pair, depth, height). */
int64_t nxe_conv_bf16_pairs_rows(const nxe_conv_geometry *g);
typedef void nxe_conv_bf16_pairs_fn(const nxe_conv_geometry *g, const float *input, uint32_t *pairs,
                                    int64_t row_begin, int64_t row_end);

/* Drivers, per ISA level as above:
 *   conv_gemm_tiles(args): work items, one per (batch, group, output depth, output row, pixel
 *     tile of that row);
 *   conv_gemm_tile_work(args): multiply-adds one item costs, for splitting work;
 *   conv_gemm_run(args, tile_begin, tile_end): computes those items. */
typedef int64_t nxe_conv_gemm_tiles_fn(const nxe_conv_gemm_args *args);
typedef double nxe_conv_gemm_tile_work_fn(const nxe_conv_gemm_args *args);
typedef void nxe_conv_gemm_run_fn(const nxe_conv_gemm_args *args, int64_t tile_begin,
                                  int64_t tile_end);

/* ---- Winograd F(4x4, 3x3) convolution ---- */

/* A 3x3 convolution with stride 1, dilation 1 and one group (2-D: depth 1) as Winograd's
 * minimal filtering F(4x4, 3x3) (Lavin and Gray, interpolation points 0, +-1, +-2, infinity):
 * the output is cut into 4x4 tiles, each read as a 6x6 input tile (zeros outside the input).
 * Per tile the input transform V = B^T d B, the 36 element-wise products summed over input
 * channels, M[e] = U[e] V[e] with U = G g G^T the transformed weights, which for a block of
 * tiles are 36 GEMMs [O x C] x [C x tiles] on the packed f32 GEMM driver, and the output
 * transform Y = A^T M A, then the epilogue. 36 products per 16 outputs and channel pair instead
 * of 144: a quarter of the multiply-adds, for transforms that cost O(C + O) per tile.
 *
 * Error: every output is computed as sum over e of A-weights times U[e] V[e], so besides the
 * rounding of a direct convolution it rounds the transforms; to first order in the unit
 * roundoff u = 2^-24 the error of each output is at most (C + 20) u times the same expression
 * over absolute values, |A^T| (sum over c of |G| |g| |G^T| . |B^T| |d| |B|) |A|, which is at most
 * 861 = (88/3)^2 times sum over c, taps of |w| times the largest |x| of the channel's 6x6
 * input tile
 * (docs/architecture.md derives both; tests/test_winograd.py checks the first against float64). */
typedef struct nxe_winograd_args {
    const nxe_gemm_kernel *kernel; /* f32 */
    const nxe_conv_geometry *geometry;
    int32_t channels_last;
    int64_t tile_block;    /* tiles per block, nxe_winograd_tile_block */
    const float *input;    /* [N, C, H, W] or [N, H, W, C] */
    const float *weight;   /* nxe_winograd_transform_weight's [36, O, C] */
    const float *bias;     /* [O] or NULL */
    const float *residual; /* same shape and layout as the output, or NULL */
    float *output;
    nxe_epilogue epilogue;
    /* The tiles to compute, [tile_begin, tile_end) in (batch, tile row, tile column) order;
     * tile_end 0 means through the last tile. */
    int64_t tile_begin, tile_end;
} nxe_winograd_args;

/* Whether a convolution is one the Winograd path computes (above). */
int nxe_winograd_applies(const nxe_conv_geometry *g);
/* Tiles per block for a kernel: whole panels of the GEMM (kernel->nr), as many as keep one
 * block's transformed input and products near the size of an L2 cache. */
int64_t nxe_winograd_tile_block(const nxe_gemm_kernel *kernel, const nxe_conv_geometry *g);
/* Bytes of the scratch one block needs (transformed input, products, transform rows); blocks
 * computed at the same time need one scratch each. */
size_t nxe_winograd_scratch_bytes(const nxe_conv_geometry *g, int64_t tile_block);
/* The transformed weights [36, O, C] (element e = 6 r + s of G g G^T, computed in double and
 * rounded once) of [O, C, 3, 3] (channels first) or [O, 3, 3, C] (channels last) weights. */
size_t nxe_winograd_weight_bytes(const nxe_conv_geometry *g);
void nxe_winograd_transform_weight(const nxe_conv_geometry *g, int32_t channels_last,
                                   const float *weight, float *dst);

/* Drivers, per ISA level:
 *   winograd_blocks(args): blocks of tile_block consecutive tiles of args' tile range, the
 *     first starting at tile_begin, tiles ordered by (batch, tile row, tile column);
 *   winograd_run(args, scratch, block_begin, block_end): computes those blocks' outputs, one
 *     after the other in `scratch` (nxe_winograd_scratch_bytes, 64-byte aligned). A tile's
 *     result does not depend on how blocks are split among calls. */
typedef int64_t nxe_winograd_blocks_fn(const nxe_winograd_args *args);
typedef void nxe_winograd_run_fn(const nxe_winograd_args *args, void *scratch, int64_t block_begin,
                                 int64_t block_end);

/* ---- depthwise convolution ---- */

/* A convolution with one input channel per group (groups == C, O a multiple of C), which a
 * GEMM would reduce over the taps alone. Weights: [O, taps] channels first, [taps, O] channels
 * last (nxe_depthwise_pack_weight). Rows: (batch, output channel, out depth, out height)
 * channels first, (batch, out depth, out height) channels last. */
typedef struct nxe_depthwise_args {
    const nxe_conv_geometry *geometry;
    int32_t channels_last;
    const float *input;
    const float *weight;   /* packed */
    const float *bias;     /* [O] or NULL */
    const float *residual; /* same shape and layout as the output, or NULL */
    float *output;
    nxe_epilogue epilogue;
} nxe_depthwise_args;

/* Whether a convolution is depthwise in the sense above. */
int nxe_conv_is_depthwise(const nxe_conv_geometry *g);
/* Packs [O, C/g = 1, taps...] channels first or [O, taps..., 1] channels last. */
void nxe_depthwise_pack_weight(const nxe_conv_geometry *g, int32_t channels_last,
                               const float *weight, float *dst);

/* Drivers, per ISA level: depthwise_rows(args) rows; depthwise_run(args, begin, end). */
typedef int64_t nxe_depthwise_rows_fn(const nxe_depthwise_args *args);
typedef void nxe_depthwise_run_fn(const nxe_depthwise_args *args, int64_t row_begin,
                                  int64_t row_end);

/* ---- 8-bit GEMM (u8 x s8 dot products, int32 accumulation) ---- */

/* Operands are shifted into the types the dot-product instructions take: A to u8 (+128 when
 * signed) and B to s8 (-128 when unsigned); zero points and the shifts are folded back in
 * per row and column from the row sums of A and the column sums of B, in wrapping int32
 * arithmetic, so every result equals nxe_ref_q8_gemm's exactly.
 * A panels: u8, k-groups of 4: element (k, i) at ((k / 4) * MR + i) * 4 + k % 4; B panels
 * likewise s8 with NR columns (always packed: no 8-bit convolution reads its input in place).
 * C[i, j] = sum over k < kc of A[k, i] * B[k, j] (int32, wrapping) for i < mr, j < nr,
 * overwritten; rows ldc apart. */
typedef void nxe_q8_ukernel_fn(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a,
                               const int8_t *b, int32_t *c, int64_t ldc);

typedef struct nxe_q8_gemm_kernel {
    const char *name; /* "u8s8-gemm-4x48-avx512vnni" */
    int32_t mr;       /* a multiple of 4: the drivers pack A four rows at a time */
    int32_t nr;
    nxe_q8_ukernel_fn *run;
} nxe_q8_gemm_kernel;

/* The longest reduction the 8-bit drivers take: a block of up to NXE_GEMM_MAX_MR rows of A
 * over all of it is packed on the stack (NXE_GEMM_MAX_MR x this many bytes). */
#define NXE_Q8_MAX_K 8192

size_t nxe_q8_packed_bytes(const nxe_q8_gemm_kernel *kernel, int64_t k, int64_t n);
/* Packs panels [panel_begin, panel_end) of B (element (k, j) at b[k * stride_k + j *
 * stride_n], signed or not) as s8, and the column sums of the packed values into
 * col_sums[j]. */
void nxe_q8_pack_b(const nxe_q8_gemm_kernel *kernel, nxe_q8_ref b, int64_t stride_k,
                   int64_t stride_n, int64_t k, int64_t n, int64_t panel_begin, int64_t panel_end,
                   int8_t *dst, int32_t *col_sums);

/* y[m x n] from a[m x k] (rows a_stride_m apart, k dense) and a packed B; zero points and
 * scales as nxe_q8_gemm_args (row-indexed for A, column-indexed for B); out as there, rows
 * dense unless y_column_stride says otherwise. b_signed says what B was before packing.
 *
 * A convolution is the same product with the pixels of one image and group as the rows:
 * `conv` set, A is the implicit im2col of the group's input staged channels last by
 * nxe_q8_conv_stage (a.data points at the staged block, a.is_signed says what the input was);
 * row i is output pixel i (row-major over out_height x out_width) and k runs over (kernel row,
 * kernel column, the group's input channel), the weights packed in that order by
 * nxe_q8_pack_conv_b. Each row is a few contiguous runs of the staged block (one per kernel
 * row when dilation_width is 1), copied as each row tile is packed: no im2col buffer exists;
 * a_stride_m is unused. */
typedef struct nxe_q8_packed_args {
    const nxe_q8_gemm_kernel *kernel;
    int64_t m;
    int64_t n;
    int64_t k;
    nxe_q8_ref a;
    int64_t a_stride_m;
    nxe_q8_ref a_zero;
    int64_t a_zero_stride;
    const int8_t *b_packed;
    const int32_t *b_col_sums;
    int32_t b_signed;
    nxe_q8_ref b_zero;
    int64_t b_zero_stride;
    const float *a_scale;
    int64_t a_scale_stride;
    const float *b_scale;
    int64_t b_scale_stride;
    nxe_q8_output out;
    const int32_t *bias; /* per column, added before requantizing; or NULL */
    /* 0: y rows dense (element (i, j) at i * n + j); else element (i, j) at
     * i + j * y_column_stride (a convolution's output, pixels by channels). */
    int64_t y_column_stride;
    const nxe_q8_conv2d_geometry *conv; /* or NULL: A is a matrix */
} nxe_q8_packed_args;

/* A convolution's staged input, one block per (image, group): [stage_height, stage_width,
 * C/g] bytes, the input shifted to u8 (+128 when signed) and framed by a border of the shifted
 * zero point wide enough that every tap of every output pixel falls inside, so the drivers
 * check no bounds: staged (sy, sx) is input (sy - pad_top, sx - pad_left) where that exists. */
int64_t nxe_q8_conv_stage_height(const nxe_q8_conv2d_geometry *g);
int64_t nxe_q8_conv_stage_width(const nxe_q8_conv2d_geometry *g);
size_t nxe_q8_conv_stage_bytes(const nxe_q8_conv2d_geometry *g);
/* Stages rows [row_begin, row_end) of one (image, group): x points at the group's first input
 * channel of the image (NCHW), x_zero at the input's one zero point (or NULL: 0). */
void nxe_q8_conv_stage(const nxe_q8_conv2d_geometry *g, nxe_q8_ref x, nxe_q8_ref x_zero,
                       int64_t row_begin, int64_t row_end, uint8_t *dst);
/* Packs one group's weights (w pointing at its first output channel of [O, C/g, KH, KW]) as B
 * of the group's product, reduction in (kernel row, kernel column, channel) order, and their
 * column sums as nxe_q8_pack_b does; dst holds nxe_q8_packed_bytes(kernel, C/g KH KW, O/g). */
void nxe_q8_pack_conv_b(const nxe_q8_gemm_kernel *kernel, const nxe_q8_conv2d_geometry *g,
                        nxe_q8_ref w, int8_t *dst, int32_t *col_sums);

/* Drivers, per ISA level: q8_gemm_tiles(args) row tiles; q8_gemm_run(args, begin, end). */
typedef int64_t nxe_q8_gemm_tiles_fn(const nxe_q8_packed_args *args);
typedef void nxe_q8_gemm_run_fn(const nxe_q8_packed_args *args, int64_t tile_begin,
                                int64_t tile_end);

/* f32 -> bf16 bits, round to nearest even (NaN kept quiet), as the packing functions store
 * them. */
uint16_t nxe_f32_to_bf16(float value);
float nxe_bf16_to_f32(uint16_t bits);

#endif
