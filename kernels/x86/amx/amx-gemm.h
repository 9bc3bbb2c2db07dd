/* amx-gemm.h — the body the AMX microkernels share, written against the tile layer (tile.h)
 * and compiled with either back end: a tile of up to 16 rows by 48 columns of C (kernels/
 * gemm.h's contract) in tiles 0-2, 16 columns each, A in tile 3 and B in tiles 4-6.
 * Operands move in 32-bit k-groups (a bf16 pair, or a quadruple of bytes); a step takes 16
 * groups: one 64-byte row of A per row of C, and 16 rows of B.
 *   - A: the packed panel is k-major (group g of rows 0-15, then group g + 1), while a tile
 *     row holds one row's groups side by side, so each step transposes a 16 x 16 block of
 *     groups into a buffer.
 *   - B: 16 rows equally far apart (a packed panel) load where they are; otherwise (rows
 *     scattered over a convolution's input, or the last step of a ragged reduction) they are
 *     copied into a buffer first.
 *   - Past the reduction's last group, A and B both hold zero groups: padding adds 0 * 0.
 *   - The tiles are configured for the call's mr and nr (C and A: mr rows; C and B: the
 *     columns each C tile holds), so no row or column outside the tile is read or written;
 *     they are released on return.
 * Each C element thus takes, per step of 16 groups, one tile product in the order of its
 * instruction (tile.h), steps in increasing k, whatever mr and nr are. */
#ifndef NXE_KERNELS_X86_AMX_AMX_GEMM_H
#define NXE_KERNELS_X86_AMX_AMX_GEMM_H

#include <stdbool.h>

#include "x86/amx/tile.h"

#define NXE_AMX_MR 16
#define NXE_AMX_NR 48
#define NXE_AMX_STEP 16 /* k-groups per tile product */

/* The tiles: C by 16-column slices, A, B by the same slices. */
#define NXE_AMX_TILE_C0 0
#define NXE_AMX_TILE_C1 1
#define NXE_AMX_TILE_C2 2
#define NXE_AMX_TILE_A 3
#define NXE_AMX_TILE_B0 4
#define NXE_AMX_TILE_B1 5
#define NXE_AMX_TILE_B2 6

/* Where B's rows are: row pointers (one per group) or a packed panel, NR groups a row. */
typedef struct nxe_amx_b {
    const void *const *rows;
    const void *panel;
} nxe_amx_b;

static inline const char *nxe_amx_b_row(nxe_amx_b b, int64_t group)
{
    return b.rows ? (const char *)b.rows[group]
                  : (const char *)b.panel + group * (int64_t)(NXE_AMX_NR * 4);
}

/* The 16 rows of B from group g0 on, `count` of them real: where they are and their stride
 * when they are equally far apart, else copied (nr columns) into `staged`, zero rows after
 * them. */
static inline const char *nxe_amx_b_block(nxe_amx_b b, int64_t g0, int64_t count, int32_t nr,
                                          uint32_t *staged, int64_t *stride)
{
    const uintptr_t first = (uintptr_t)nxe_amx_b_row(b, g0);
    if (count == NXE_AMX_STEP) {
        const uintptr_t step = (uintptr_t)nxe_amx_b_row(b, g0 + 1) - first;
        bool even = true;
        for (int64_t r = 2; r < NXE_AMX_STEP && even; r++)
            even = (uintptr_t)nxe_amx_b_row(b, g0 + r) - first == step * (uintptr_t)r;
        if (even) {
            *stride = (int64_t)step;
            return (const char *)first;
        }
    }
    for (int64_t r = 0; r < NXE_AMX_STEP; r++) {
        if (r < count)
            memcpy(staged + r * NXE_AMX_NR, nxe_amx_b_row(b, g0 + r),
                   sizeof(uint32_t) * (size_t)nr);
        else
            memset(staged + r * NXE_AMX_NR, 0, sizeof(uint32_t) * (size_t)nr);
    }
    *stride = NXE_AMX_NR * 4;
    return (const char *)staged;
}

/* Rows [0, mr) of A's groups [g0, g0 + count) side by side, zero groups after them. */
static inline void nxe_amx_a_block(const void *a, int32_t mr, int64_t g0, int64_t count,
                                   uint32_t *block)
{
    const char *panel = a;
    for (int32_t i = 0; i < mr; i++)
        for (int64_t g = 0; g < NXE_AMX_STEP; g++) {
            uint32_t group = 0;
            if (g < count)
                memcpy(&group, panel + ((g0 + g) * NXE_AMX_MR + i) * 4, sizeof group);
            block[i * NXE_AMX_STEP + g] = group;
        }
}

#define NXE_AMX_DOT(bf16, c, a, b)                                                                 \
    do {                                                                                           \
        if (bf16)                                                                                  \
            NXE_TILE_DPBF16PS(c, a, b);                                                            \
        else                                                                                       \
            NXE_TILE_DPBUSD(c, a, b);                                                              \
    } while (0)

/* C[mr x nr] (+)= A * B over `groups` k-groups; bf16 selects TDPBF16PS over TDPBUSD. C's
 * rows are ldc elements of 4 bytes apart. */
static inline __attribute__((always_inline)) void nxe_amx_gemm(int bf16, int32_t mr, int32_t nr,
                                                               int64_t groups, const void *a,
                                                               nxe_amx_b b, void *c, int64_t ldc,
                                                               int32_t accumulate)
{
    _Alignas(64) uint32_t a_block[NXE_AMX_MR * NXE_AMX_STEP];
    _Alignas(64) uint32_t staged[NXE_AMX_STEP * NXE_AMX_NR];
    const int tiles = (nr + 15) / 16;
    const int64_t ldc_bytes = ldc * 4;
    char *c0 = c;

    nxe_tile_config config;
    nxe_tile_config_init(&config);
    for (int t = 0; t < tiles; t++) {
        const int colsb = 4 * (nr - 16 * t < 16 ? nr - 16 * t : 16);
        nxe_tile_shape(&config, NXE_AMX_TILE_C0 + t, mr, colsb);
        nxe_tile_shape(&config, NXE_AMX_TILE_B0 + t, NXE_AMX_STEP, colsb);
    }
    nxe_tile_shape(&config, NXE_AMX_TILE_A, mr, NXE_AMX_STEP * 4);
    NXE_TILE_CONFIGURE(&config);

    if (accumulate) {
        NXE_TILE_LOAD(NXE_AMX_TILE_C0, c0, ldc_bytes);
        if (tiles > 1)
            NXE_TILE_LOAD(NXE_AMX_TILE_C1, c0 + 64, ldc_bytes);
        if (tiles > 2)
            NXE_TILE_LOAD(NXE_AMX_TILE_C2, c0 + 128, ldc_bytes);
    } else {
        NXE_TILE_ZERO(NXE_AMX_TILE_C0);
        if (tiles > 1)
            NXE_TILE_ZERO(NXE_AMX_TILE_C1);
        if (tiles > 2)
            NXE_TILE_ZERO(NXE_AMX_TILE_C2);
    }
    for (int64_t g0 = 0; g0 < groups; g0 += NXE_AMX_STEP) {
        const int64_t count = groups - g0 < NXE_AMX_STEP ? groups - g0 : NXE_AMX_STEP;
        nxe_amx_a_block(a, mr, g0, count, a_block);
        NXE_TILE_LOAD(NXE_AMX_TILE_A, a_block, NXE_AMX_STEP * 4);
        int64_t stride;
        const char *rows = nxe_amx_b_block(b, g0, count, nr, staged, &stride);
        NXE_TILE_LOAD(NXE_AMX_TILE_B0, rows, stride);
        NXE_AMX_DOT(bf16, NXE_AMX_TILE_C0, NXE_AMX_TILE_A, NXE_AMX_TILE_B0);
        if (tiles > 1) {
            NXE_TILE_LOAD(NXE_AMX_TILE_B1, rows + 64, stride);
            NXE_AMX_DOT(bf16, NXE_AMX_TILE_C1, NXE_AMX_TILE_A, NXE_AMX_TILE_B1);
        }
        if (tiles > 2) {
            NXE_TILE_LOAD(NXE_AMX_TILE_B2, rows + 128, stride);
            NXE_AMX_DOT(bf16, NXE_AMX_TILE_C2, NXE_AMX_TILE_A, NXE_AMX_TILE_B2);
        }
    }
    NXE_TILE_STORE(NXE_AMX_TILE_C0, c0, ldc_bytes);
    if (tiles > 1)
        NXE_TILE_STORE(NXE_AMX_TILE_C1, c0 + 64, ldc_bytes);
    if (tiles > 2)
        NXE_TILE_STORE(NXE_AMX_TILE_C2, c0 + 128, ldc_bytes);
    NXE_TILE_RELEASE();
}

#endif
