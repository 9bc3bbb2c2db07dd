/* amx_probe.h — single tile operations through the tile layer (kernels/x86/amx/tile.h), built
 * once per back end from amx_probe.c: the tile tests run each probe on the emulation and,
 * where the CPU has AMX, on the instructions. */
#ifndef NXE_TESTS_AMX_PROBE_H
#define NXE_TESTS_AMX_PROBE_H

#include <stdint.h>

enum amx_probe_op { AMX_PROBE_DPBF16PS, AMX_PROBE_DPBUSD, AMX_PROBE_DPBSSD };

/* C (m x n dwords, rows ldc bytes apart) += A (m x k dwords) . B (k x n dwords) through one
 * dot-product instruction on tiles of exactly these shapes. */
typedef void amx_probe_dot_fn(int op, int m, int n, int k, const void *a, int64_t lda,
                              const void *b, int64_t ldb, void *c, int64_t ldc);
/* A tile of rows x colsb bytes loaded from src (or zeroed, when src is NULL) and stored to
 * dst. */
typedef void amx_probe_copy_fn(int rows, int colsb, const void *src, int64_t src_stride, void *dst,
                               int64_t dst_stride);

amx_probe_dot_fn amx_probe_dot_amxemu;
amx_probe_copy_fn amx_probe_copy_amxemu;
#if defined(__x86_64__)
amx_probe_dot_fn amx_probe_dot_amx;
amx_probe_copy_fn amx_probe_copy_amx;
#endif

#endif
