/* tile.h — the AMX tile layer the AMX microkernels are written against: the tile configuration
 * (palette 1: 8 tiles of up to 16 rows of up to 64 bytes, row-major) and the operations
 * configure, release, load, store, zero and the dot products TDPBF16PS (bf16 pairs into f32),
 * TDPBUSD (u8 x s8 quadruples into s32) and TDPBSSD (s8 x s8). Two back ends behind the same
 * macros:
 *   - the instructions (x86-64, built with -mamx-tile -mamx-bf16 -mamx-int8), and
 *   - with NXE_AMX_EMULATED defined, a portable C emulation of their semantics as Intel's SDM
 *     states them (tile-emulated.c), so that the kernels' blocking, packing and tails are
 *     tested on every machine.
 * Tile numbers are literal constants 0-7 (the instructions encode them). A source compiled for
 * either back end names its functions with NXE_AMX_FN(name): name_amx or name_amxemu. */
#ifndef NXE_KERNELS_X86_AMX_TILE_H
#define NXE_KERNELS_X86_AMX_TILE_H

#include <stdint.h>
#include <string.h>

#define NXE_TILE_COUNT 8
#define NXE_TILE_MAX_ROWS 16
#define NXE_TILE_MAX_COLSB 64

/* The 64-byte operand of LDTILECFG. */
typedef struct nxe_tile_config {
    uint8_t palette;   /* 1; 0 is the released state */
    uint8_t start_row; /* 0: only a load interrupted midway sets it */
    uint8_t reserved[14];
    uint16_t colsb[16]; /* bytes per row; tiles 8-15 do not exist in palette 1 */
    uint8_t rows[16];
} nxe_tile_config;

_Static_assert(sizeof(nxe_tile_config) == 64, "LDTILECFG takes 64 bytes");

/* A configuration with every tile unused; nxe_tile_shape then gives tiles their shape. */
static inline void nxe_tile_config_init(nxe_tile_config *config)
{
    memset(config, 0, sizeof *config);
    config->palette = 1;
}

static inline void nxe_tile_shape(nxe_tile_config *config, int tile, int rows, int colsb)
{
    config->rows[tile] = (uint8_t)rows;
    config->colsb[tile] = (uint16_t)colsb;
}

#if defined(NXE_AMX_EMULATED)

/* The emulation keeps one tile state per thread, as the CPU does. A use the hardware faults
 * on (#GP or #UD: a bad configuration, an unconfigured tile, shapes that do not chain, one
 * tile as two operands) prints what it was and aborts. */
void nxe_amx_emu_configure(const nxe_tile_config *config);
void nxe_amx_emu_release(void);
void nxe_amx_emu_load(int tile, const void *base, int64_t stride);
void nxe_amx_emu_store(int tile, void *base, int64_t stride);
void nxe_amx_emu_zero(int tile);
void nxe_amx_emu_dpbf16ps(int c, int a, int b);
void nxe_amx_emu_dpbusd(int c, int a, int b);
void nxe_amx_emu_dpbssd(int c, int a, int b);

#define NXE_AMX_FN(name) name##_amxemu
#define NXE_TILE_CONFIGURE(config) nxe_amx_emu_configure(config)
#define NXE_TILE_RELEASE() nxe_amx_emu_release()
#define NXE_TILE_LOAD(tile, base, stride) nxe_amx_emu_load(tile, base, stride)
#define NXE_TILE_STORE(tile, base, stride) nxe_amx_emu_store(tile, base, stride)
#define NXE_TILE_ZERO(tile) nxe_amx_emu_zero(tile)
#define NXE_TILE_DPBF16PS(c, a, b) nxe_amx_emu_dpbf16ps(c, a, b)
#define NXE_TILE_DPBUSD(c, a, b) nxe_amx_emu_dpbusd(c, a, b)
#define NXE_TILE_DPBSSD(c, a, b) nxe_amx_emu_dpbssd(c, a, b)

#elif defined(__x86_64__)

#include <immintrin.h>

/* GCC's LDTILECFG and TILELOADD statements name only the operand's address, not the memory
 * they read: barriers on both sides keep every store to that memory on its side. */
#define NXE_TILE_BARRIER() __asm__ volatile("" ::: "memory")

#define NXE_AMX_FN(name) name##_amx
#define NXE_TILE_CONFIGURE(config)                                                                 \
    do {                                                                                           \
        NXE_TILE_BARRIER();                                                                        \
        _tile_loadconfig(config);                                                                  \
        NXE_TILE_BARRIER();                                                                        \
    } while (0)
#define NXE_TILE_RELEASE() _tile_release()
#define NXE_TILE_LOAD(tile, base, stride)                                                          \
    do {                                                                                           \
        NXE_TILE_BARRIER();                                                                        \
        _tile_loadd(tile, base, stride);                                                           \
        NXE_TILE_BARRIER();                                                                        \
    } while (0)
#define NXE_TILE_STORE(tile, base, stride) _tile_stored(tile, base, stride)
#define NXE_TILE_ZERO(tile) _tile_zero(tile)
#define NXE_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#define NXE_TILE_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#define NXE_TILE_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)

#endif

#endif
