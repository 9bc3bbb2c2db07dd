/* list.h — every ISA level and kernel of this build, declared once: the dispatch rows
 * (kernels/dispatch.c), the declarations below, the kernel tests' sweeps
 * (tests/kernels/kernels.c) and the names nxe_cpu_kernels reports all come from these lists.
 * Adding a microkernel is one line here, its source file and its line in kernels/meson.build. */
#ifndef NXE_KERNELS_LIST_H
#define NXE_KERNELS_LIST_H

#include <stdint.h>

#include "attention.h"
#include "gemm.h"

/* ---- ISA levels ---- */

/* X(NAME, name), in increasing order: a level runs every kernel of the levels below it. The
 * lowercase name is what NXE_ISA takes and nxe_cpu_info reports. */
#define NXE_ISA_LEVELS(X) X(SCALAR, scalar) X(AVX2, avx2) X(AVX512, avx512) X(AMX, amx)

#define NXE_ISA_LEVEL_ENUM(NAME, name) NXE_ISA_LEVEL_##NAME,
typedef enum nxe_isa_level { NXE_ISA_LEVELS(NXE_ISA_LEVEL_ENUM) NXE_ISA_LEVEL_COUNT } nxe_isa_level;
#undef NXE_ISA_LEVEL_ENUM

/* The same values by lowercase name (NXE_ISA_LEVEL_OF_avx2), for the lists below. */
#define NXE_ISA_LEVEL_BY_NAME(NAME, name) NXE_ISA_LEVEL_OF_##name = NXE_ISA_LEVEL_##NAME,
enum { NXE_ISA_LEVELS(NXE_ISA_LEVEL_BY_NAME) };
#undef NXE_ISA_LEVEL_BY_NAME

/* ---- kernels/portable/: portable C compiled once per level with a row of its own ---- */

typedef void nxe_f32_activation_fn(int32_t activation, float alpha, float beta, const float *x,
                                   float *y, int64_t n);
typedef void nxe_f32_softmax_rows_fn(const float *x, float *y, int64_t row_size, int64_t row_begin,
                                     int64_t row_end);
typedef void nxe_f32_layer_norm_rows_fn(const float *x, const float *scale, const float *bias,
                                        float *y, int64_t row_size, float epsilon,
                                        int64_t row_begin, int64_t row_end);
typedef void nxe_x32_depth_to_space_fn(const nxe_depth_to_space_geometry *g, const uint32_t *input,
                                       uint32_t *output, int64_t row_begin, int64_t row_end);

/* X(type, name, level): the copy for `level` is nxe_<name>_<level>, of function type `type`,
 * and fills the field `name` of that level's dispatch row. Contracts: kernels/gemm.h for the
 * drivers and the epilogue; the activations, softmax and layer normalization rows have those
 * of their kernels/ref twins (accuracy: kernels/portable/vmath.h; the twins accumulate in
 * double where these use f32 partial sums); depth-to-space of 32-bit elements, channels first,
 * rows as nxe_ref_xN_depth_to_space's; fused attention kernels/attention.h. */
#define NXE_PORTABLE_KERNELS(X, level)                                                             \
    X(nxe_epilogue_fn, epilogue, level)                                                            \
    X(nxe_f32_activation_fn, f32_activation, level)                                                \
    X(nxe_f32_softmax_rows_fn, f32_softmax_rows, level)                                            \
    X(nxe_f32_layer_norm_rows_fn, f32_layer_norm_rows, level)                                      \
    X(nxe_x32_depth_to_space_fn, x32_depth_to_space, level)                                        \
    X(nxe_gemm_packed_tiles_fn, gemm_packed_tiles, level)                                          \
    X(nxe_gemm_packed_run_fn, gemm_packed_run, level)                                              \
    X(nxe_conv_gemm_tiles_fn, conv_gemm_tiles, level)                                              \
    X(nxe_conv_gemm_tile_work_fn, conv_gemm_tile_work, level)                                      \
    X(nxe_conv_gemm_run_fn, conv_gemm_run, level)                                                  \
    X(nxe_conv_bf16_pairs_fn, conv_bf16_pairs, level)                                              \
    X(nxe_winograd_blocks_fn, winograd_blocks, level)                                              \
    X(nxe_winograd_run_fn, winograd_run, level)                                                    \
    X(nxe_depthwise_rows_fn, depthwise_rows, level)                                                \
    X(nxe_depthwise_run_fn, depthwise_run, level)                                                  \
    X(nxe_q8_gemm_tiles_fn, q8_gemm_tiles, level)                                                  \
    X(nxe_q8_gemm_run_fn, q8_gemm_run, level)                                                      \
    X(nxe_f32_attention_run_fn, f32_attention_run, level)

/* The levels with a dispatch row of their own (their portable copies are in libnxe), in
 * increasing order: X(level). The scalar level has none: its ops run kernels/ref. */
#if defined(__x86_64__)
#define NXE_ROW_LEVELS(X) X(avx2) X(avx512)
#else
#define NXE_ROW_LEVELS(X)
#endif

#define NXE_DECLARE_PORTABLE(type, name, level) type nxe_##name##_##level;
#define NXE_DECLARE_PORTABLE_LEVEL(level) NXE_PORTABLE_KERNELS(NXE_DECLARE_PORTABLE, level)
NXE_ROW_LEVELS(NXE_DECLARE_PORTABLE_LEVEL)

/* ---- microkernels ---- */

/* Packed-GEMM microkernels (contract: kernels/gemm.h), each in x86/<folder>/
 * <dtype>-gemm-<MR>x<NR>-<isa>.c as nxe_<dtype>_gemm_<MR>x<NR>_<isa>:
 *     X(dtype, MR, NR, isa, row, features)
 * dtype f32 (with _rows and _panel variants, kernels/gemm.h) or bf16; `row` is the level whose
 * dispatch row (drivers, epilogue) it runs in; `features` are the enum nxe_cpu_feature bits it
 * needs beyond that level's (a kernel that needs AMX tiles lists NXE_CPU_FEATURE_AMX_TILE, runs
 * only at the amx level, which has no row of its own and runs the avx512 row, and dispatch asks
 * the OS for the tile-data permission only when it chooses such a kernel).
 * Dispatch chooses, per dtype, the last kernel in the list that the level and the features
 * allow. */
#if defined(__x86_64__)
#define NXE_GEMM_UKERNELS(X)                                                                       \
    X(f32, 6, 16, avx2, avx2, 0)                                                                   \
    X(f32, 8, 48, avx512, avx512, 0)                                                               \
    X(bf16, 8, 48, avx512bf16, avx512, NXE_CPU_FEATURE_AVX512_BF16)                                \
    X(bf16, 16, 48, amx, avx512, NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_BF16)
/* 8-bit microkernels (u8 x s8, contract: kernels/gemm.h), the same way. */
#define NXE_Q8_UKERNELS(X)                                                                         \
    X(u8s8, 4, 8, avx2, avx2, 0)                                                                   \
    X(u8s8, 4, 24, avxvnni, avx2, NXE_CPU_FEATURE_AVX_VNNI)                                        \
    X(u8s8, 4, 48, avx512vnni, avx512, NXE_CPU_FEATURE_AVX512_VNNI)                                \
    X(u8s8, 16, 48, amx, avx512, NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_INT8)
#else
#define NXE_GEMM_UKERNELS(X)
#define NXE_Q8_UKERNELS(X)
#endif

/* What each dtype's microkernels are. */
#define NXE_GEMM_TYPE_f32 NXE_GEMM_F32
#define NXE_GEMM_TYPE_bf16 NXE_GEMM_BF16
#define NXE_GEMM_K_UNIT_f32 1
#define NXE_GEMM_K_UNIT_bf16 2

#define NXE_UKERNEL_FN(dtype, mr, nr, isa) nxe_##dtype##_gemm_##mr##x##nr##_##isa
#define NXE_UKERNEL_ROWS_FN(dtype, mr, nr, isa) nxe_##dtype##_gemm_##mr##x##nr##_rows_##isa
#define NXE_UKERNEL_PANEL_FN(dtype, mr, nr, isa) nxe_##dtype##_gemm_##mr##x##nr##_panel_##isa
#define NXE_UKERNEL_ROWS_f32(mr, nr, isa) NXE_UKERNEL_ROWS_FN(f32, mr, nr, isa)
#define NXE_UKERNEL_ROWS_bf16(mr, nr, isa) NULL
#define NXE_UKERNEL_PANEL_f32(mr, nr, isa) NXE_UKERNEL_PANEL_FN(f32, mr, nr, isa)
#define NXE_UKERNEL_PANEL_bf16(mr, nr, isa) NULL
#define NXE_DECLARE_ROWS_f32(mr, nr, isa)                                                          \
    nxe_gemm_ukernel_rows_fn NXE_UKERNEL_ROWS_FN(f32, mr, nr, isa);                                \
    nxe_gemm_ukernel_panel_fn NXE_UKERNEL_PANEL_FN(f32, mr, nr, isa);
#define NXE_DECLARE_ROWS_bf16(mr, nr, isa)

#define NXE_DECLARE_GEMM_UKERNEL(dtype, mr, nr, isa, ...)                                          \
    nxe_gemm_ukernel_fn NXE_UKERNEL_FN(dtype, mr, nr, isa);                                        \
    NXE_DECLARE_ROWS_##dtype(mr, nr, isa)
#define NXE_DECLARE_Q8_UKERNEL(dtype, mr, nr, isa, ...)                                            \
    nxe_q8_ukernel_fn NXE_UKERNEL_FN(dtype, mr, nr, isa);
NXE_GEMM_UKERNELS(NXE_DECLARE_GEMM_UKERNEL)
NXE_Q8_UKERNELS(NXE_DECLARE_Q8_UKERNEL)

/* The descriptor of one list entry: its epilogue is the portable one of its row's level. */
#define NXE_GEMM_KERNEL_INIT(dtype, mr_, nr_, isa, row)                                            \
    {                                                                                              \
        .name = #dtype "-gemm-" #mr_ "x" #nr_ "-" #isa,                                            \
        .type = NXE_GEMM_TYPE_##dtype,                                                             \
        .mr = mr_,                                                                                 \
        .nr = nr_,                                                                                 \
        .k_unit = NXE_GEMM_K_UNIT_##dtype,                                                         \
        .run = NXE_UKERNEL_FN(dtype, mr_, nr_, isa),                                               \
        .epilogue = nxe_epilogue_##row,                                                            \
        .run_rows = NXE_UKERNEL_ROWS_##dtype(mr_, nr_, isa),                                       \
        .run_panel = NXE_UKERNEL_PANEL_##dtype(mr_, nr_, isa),                                     \
    }
#define NXE_Q8_KERNEL_INIT(dtype, mr_, nr_, isa)                                                   \
    {                                                                                              \
        .name = #dtype "-gemm-" #mr_ "x" #nr_ "-" #isa,                                            \
        .mr = mr_,                                                                                 \
        .nr = nr_,                                                                                 \
        .run = NXE_UKERNEL_FN(dtype, mr_, nr_, isa),                                               \
    }

#endif
