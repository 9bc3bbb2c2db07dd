/* amx_probe.c — the probes of amx_probe.h, written once against the tile layer; the tiles
 * are not 0, 1, 2 so that every operand field of the instructions takes another value. */
#include "amx_probe.h"

#include "x86/amx/tile.h"

#define TILE_C 7
#define TILE_A 2
#define TILE_B 4

void NXE_AMX_FN(amx_probe_dot)(int op, int m, int n, int k, const void *a, int64_t lda,
                               const void *b, int64_t ldb, void *c, int64_t ldc)
{
    nxe_tile_config config;
    nxe_tile_config_init(&config);
    nxe_tile_shape(&config, TILE_C, m, 4 * n);
    nxe_tile_shape(&config, TILE_A, m, 4 * k);
    nxe_tile_shape(&config, TILE_B, k, 4 * n);
    NXE_TILE_CONFIGURE(&config);
    NXE_TILE_LOAD(TILE_C, c, ldc);
    NXE_TILE_LOAD(TILE_A, a, lda);
    NXE_TILE_LOAD(TILE_B, b, ldb);
    switch (op) {
    case AMX_PROBE_DPBF16PS: NXE_TILE_DPBF16PS(TILE_C, TILE_A, TILE_B); break;
    case AMX_PROBE_DPBUSD: NXE_TILE_DPBUSD(TILE_C, TILE_A, TILE_B); break;
    default: NXE_TILE_DPBSSD(TILE_C, TILE_A, TILE_B); break;
    }
    NXE_TILE_STORE(TILE_C, c, ldc);
    NXE_TILE_RELEASE();
}

void NXE_AMX_FN(amx_probe_copy)(int rows, int colsb, const void *src, int64_t src_stride, void *dst,
                                int64_t dst_stride)
{
    nxe_tile_config config;
    nxe_tile_config_init(&config);
    nxe_tile_shape(&config, TILE_B, rows, colsb);
    NXE_TILE_CONFIGURE(&config);
    if (src)
        NXE_TILE_LOAD(TILE_B, src, src_stride);
    else
        NXE_TILE_ZERO(TILE_B);
    NXE_TILE_STORE(TILE_B, dst, dst_stride);
    NXE_TILE_RELEASE();
}
