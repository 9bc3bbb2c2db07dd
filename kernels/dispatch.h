/* dispatch.h — the one table of kernel entry points per op class, filled once per process for
 * the ISA level the CPU allows (capped by NXE_ISA). Op code calls kernels through it and never
 * tests CPU features itself. */
#ifndef NXE_KERNELS_DISPATCH_H
#define NXE_KERNELS_DISPATCH_H

#include <stdint.h>

#include "gemm.h"
#include "ref/conv.h"
#include "ref/matmul.h"

/* Ordered: a level can run every kernel of the levels below it. */
typedef enum nxe_isa_level {
    NXE_ISA_LEVEL_SCALAR = 0,
    NXE_ISA_LEVEL_AVX2 = 1,
    NXE_ISA_LEVEL_AVX512 = 2,
    NXE_ISA_LEVEL_AMX = 3
} nxe_isa_level;

typedef void (*nxe_f32_gemm_fn)(const nxe_f32_gemm_args *args, int64_t row_begin,
                                int64_t row_end);
typedef void (*nxe_f32_conv_fn)(const nxe_conv_geometry *geometry, const float *input,
                                const float *weight, const float *bias, float *output,
                                int64_t row_begin, int64_t row_end);

typedef void (*nxe_f32_activation_fn)(int32_t activation, float alpha, float beta,
                                      const float *x, float *y, int64_t n);

/* Each entry has the contract of its reference twin in kernels/ref/ (or kernels/gemm.h).
 * Entries after f32_conv_ndhwc may be NULL: the level has no such kernel, and callers keep
 * the reference path (the scalar level is the reference). */
typedef struct nxe_kernel_table {
    nxe_isa_level level;       /* the level these kernels need */
    const char *name;          /* "scalar", "avx2", ... */
    nxe_f32_gemm_fn f32_gemm;
    nxe_f32_conv_fn f32_conv_ncdhw;
    nxe_f32_conv_fn f32_conv_ndhwc;
    /* Packed GEMM: the f32 microkernel, the bf16 one (NULL without AVX512-BF16: relaxed work
     * runs in f32) and the drivers of this level. */
    const nxe_gemm_kernel *f32_gemm_kernel;
    const nxe_gemm_kernel *bf16_gemm_kernel;
    /* 8-bit GEMM: NULL without AVX512-VNNI (quantized ops keep their reference kernels). */
    const nxe_q8_gemm_kernel *q8_gemm_kernel;
    nxe_q8_gemm_tiles_fn q8_gemm_tiles;
    nxe_q8_gemm_run_fn q8_gemm_run;
    nxe_gemm_packed_tiles_fn gemm_packed_tiles;
    nxe_gemm_packed_run_fn gemm_packed_run;
    nxe_conv_gemm_tiles_fn conv_gemm_tiles;
    nxe_conv_gemm_tile_work_fn conv_gemm_tile_work;
    nxe_conv_gemm_run_fn conv_gemm_run;
    nxe_conv_bf16_pairs_fn conv_bf16_pairs;
    nxe_depthwise_rows_fn depthwise_rows;
    nxe_depthwise_run_fn depthwise_run;
    /* Vectorized activations over arrays (accuracy: kernels/generic/vmath.h), and softmax
     * and layer normalization over contiguous rows (contracts of their kernels/ref twins,
     * which accumulate in double where these use f32 partial sums). */
    nxe_f32_activation_fn f32_activation;
    void (*f32_softmax_rows)(const float *x, float *y, int64_t row_size, int64_t row_begin,
                             int64_t row_end);
    void (*f32_layer_norm_rows)(const float *x, const float *scale, const float *bias,
                                float *y, int64_t row_size, float epsilon, int64_t row_begin,
                                int64_t row_end);
    /* Depth-to-space of 32-bit elements, channels first (rows as the reference's). */
    void (*x32_depth_to_space)(const nxe_depth_to_space_geometry *g, const uint32_t *input,
                               uint32_t *output, int64_t row_begin, int64_t row_end);
} nxe_kernel_table;

/* The table for this process: the richest one at or below the chosen level. Never NULL;
 * detection runs on the first call from any thread, exactly once. */
const nxe_kernel_table *nxe_kernels(void);

/* Every table this build has, in increasing level order, without regard to the CPU (for
 * tests that compare each variant the machine can run with the reference). */
const nxe_kernel_table *nxe_kernel_tables(int32_t *count);

/* The level chosen for this process (detection as above). */
nxe_isa_level nxe_isa_level_chosen(void);

#endif
