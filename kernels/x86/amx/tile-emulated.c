/* tile-emulated.c — the portable back end of the AMX tile layer (tile.h): the tile register
 * file of palette 1 and the instructions' semantics as Intel's SDM states them, in plain C,
 * built with NXE_AMX_EMULATED for the kernel tests on every machine (never into libnxe).
 *   - LDTILECFG zeroes every tile; TILELOADD fills rows x colsb bytes from base + row * stride
 *     and zeroes the rest of the tile; TILESTORED writes rows x colsb bytes; TILEZERO.
 *   - Tile bytes are little-endian, as on x86, whatever the host.
 *   - TDPBF16PS, per row m of C: two f32 partial sums, one of the even and one of the odd
 *     elements of the pairs, start at 0 and take one fused multiply-add per pair k in
 *     increasing order; then C[m][n] = C[m][n] + (even + odd). Every step rounds to nearest
 *     even, reads subnormal inputs (bf16 or f32) as zero of the same sign and flushes
 *     subnormal results to zero of the same sign; MXCSR plays no part. A result is taken as
 *     subnormal when its f32 rounding is; x86 judges tininess after rounding to 24 bits with
 *     an unbounded exponent, which differs only for exact results within 2^-150 below 2^-126.
 *     NaN results are NaN; their payload bits are not modelled.
 *   - TDPBUSD and TDPBSSD: C[m][n] += the four byte products of each quadruple k (u8 or s8 of
 *     A, s8 of B), in wrapping 32-bit arithmetic (no saturation). */
#include "x86/amx/tile.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct tile_state {
    bool configured;
    nxe_tile_config config;
    uint8_t tiles[NXE_TILE_COUNT][NXE_TILE_MAX_ROWS][NXE_TILE_MAX_COLSB];
} tile_state;

static _Thread_local tile_state state;

static void fault(const char *what, int tile)
{
    fprintf(stderr, "AMX emulation: %s (tile %d): the instruction would fault\n", what, tile);
    abort();
}

void nxe_amx_emu_configure(const nxe_tile_config *config)
{
    if (config->palette == 0) { /* the init state, as TILERELEASE leaves it */
        nxe_amx_emu_release();
        return;
    }
    if (config->palette != 1)
        fault("palette other than 0 or 1", -1);
    if (config->start_row != 0)
        fault("start_row other than 0 (not modelled)", -1);
    for (int i = 0; i < 14; i++)
        if (config->reserved[i])
            fault("reserved configuration byte set", -1);
    for (int t = 0; t < 16; t++) {
        const int rows = config->rows[t], colsb = config->colsb[t];
        if (t >= NXE_TILE_COUNT ? rows || colsb
                                : rows > NXE_TILE_MAX_ROWS || colsb > NXE_TILE_MAX_COLSB ||
                                      (rows == 0) != (colsb == 0))
            fault("tile shape out of range", t);
    }
    state.config = *config;
    state.configured = true;
    memset(state.tiles, 0, sizeof state.tiles);
}

void nxe_amx_emu_release(void)
{
    memset(&state, 0, sizeof state);
}

/* The tile's rows, after checking that it is configured. */
static int rows_of(int tile)
{
    if (!state.configured || tile < 0 || tile >= NXE_TILE_COUNT || state.config.rows[tile] == 0)
        fault("tile not configured", tile);
    return state.config.rows[tile];
}

static int colsb_of(int tile)
{
    return state.config.colsb[tile];
}

void nxe_amx_emu_load(int tile, const void *base, int64_t stride)
{
    const int rows = rows_of(tile), colsb = colsb_of(tile);
    memset(state.tiles[tile], 0, sizeof state.tiles[tile]);
    for (int r = 0; r < rows; r++)
        memcpy(state.tiles[tile][r], (const char *)base + r * stride, (size_t)colsb);
}

void nxe_amx_emu_store(int tile, void *base, int64_t stride)
{
    const int rows = rows_of(tile), colsb = colsb_of(tile);
    for (int r = 0; r < rows; r++)
        memcpy((char *)base + r * stride, state.tiles[tile][r], (size_t)colsb);
}

void nxe_amx_emu_zero(int tile)
{
    rows_of(tile);
    memset(state.tiles[tile], 0, sizeof state.tiles[tile]);
}

/* The shapes the dot products need, as the instructions check them: C is m x n dwords, A
 * m x k dwords, B k x n dwords, three distinct tiles. */
static void check_product(int c, int a, int b)
{
    const int m = rows_of(c);
    rows_of(a);
    rows_of(b);
    if (c == a || c == b || a == b)
        fault("one tile as two operands", c);
    if (rows_of(a) != m || colsb_of(a) / 4 != rows_of(b) || colsb_of(b) != colsb_of(c))
        fault("operand shapes that do not chain", c);
}

/* What a dot product leaves outside C's shape: zeros, as the instructions write it. */
static void zero_outside(int c)
{
    const int rows = rows_of(c), colsb = colsb_of(c);
    for (int r = 0; r < NXE_TILE_MAX_ROWS; r++)
        memset(&state.tiles[c][r][r < rows ? colsb : 0], 0,
               (size_t)(NXE_TILE_MAX_COLSB - (r < rows ? colsb : 0)));
}

static uint32_t dword_at(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
           (uint32_t)bytes[3] << 24;
}

static void put_dword(uint8_t *bytes, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        bytes[i] = (uint8_t)(value >> (8 * i));
}

static float f32_of(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t bits_of(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* DAZ and FTZ alike: a subnormal becomes a zero of its sign. */
static float flush(float value)
{
    return value != 0.0f && fabsf(value) < FLT_MIN ? copysignf(0.0f, value) : value;
}

/* Element `half` (0: bits 15-0, 1: bits 31-16) of a bf16 pair, widened, subnormals as 0. */
static float bf16_in(uint32_t pair, int half)
{
    return flush(f32_of((pair >> (16 * half)) << 16));
}

void nxe_amx_emu_dpbf16ps(int c, int a, int b)
{
    check_product(c, a, b);
    const int m_count = rows_of(c), n_count = colsb_of(c) / 4, k_count = colsb_of(a) / 4;
    for (int m = 0; m < m_count; m++) {
        float partial[NXE_TILE_MAX_COLSB / 4][2] = {{0.0f}};
        for (int k = 0; k < k_count; k++) {
            const uint32_t a_pair = dword_at(&state.tiles[a][m][4 * k]);
            for (int n = 0; n < n_count; n++) {
                const uint32_t b_pair = dword_at(&state.tiles[b][k][4 * n]);
                for (int half = 0; half < 2; half++)
                    partial[n][half] =
                        flush(fmaf(bf16_in(a_pair, half), bf16_in(b_pair, half), partial[n][half]));
            }
        }
        for (int n = 0; n < n_count; n++) {
            const float sum = flush(partial[n][0] + partial[n][1]);
            const float old = flush(f32_of(dword_at(&state.tiles[c][m][4 * n])));
            put_dword(&state.tiles[c][m][4 * n], bits_of(flush(old + sum)));
        }
    }
    zero_outside(c);
}

/* The 8-bit products: A's bytes unsigned or signed, B's signed. */
static void dot_bytes(int c, int a, int b, bool a_signed)
{
    check_product(c, a, b);
    const int m_count = rows_of(c), n_count = colsb_of(c) / 4, k_count = colsb_of(a) / 4;
    for (int m = 0; m < m_count; m++) {
        for (int n = 0; n < n_count; n++) {
            uint32_t acc = dword_at(&state.tiles[c][m][4 * n]); /* wraps */
            for (int k = 0; k < k_count; k++) {
                for (int i = 0; i < 4; i++) {
                    const uint8_t x = state.tiles[a][m][4 * k + i];
                    const int32_t a_value = a_signed ? (int32_t)(int8_t)x : (int32_t)x;
                    const int32_t b_value = (int8_t)state.tiles[b][k][4 * n + i];
                    acc += (uint32_t)(a_value * b_value);
                }
            }
            put_dword(&state.tiles[c][m][4 * n], acc);
        }
    }
    zero_outside(c);
}

void nxe_amx_emu_dpbusd(int c, int a, int b)
{
    dot_bytes(c, a, b, false);
}

void nxe_amx_emu_dpbssd(int c, int a, int b)
{
    dot_bytes(c, a, b, true);
}
