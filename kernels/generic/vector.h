/* vector.h — kernels written once in portable C and compiled once per ISA level (plain, avx2,
 * avx512), each copy with that level's -m flags and names ending in its suffix, so that the
 * compiler's vectorizer emits each level's vectors. kernels/dispatch.c picks the copy. */
#ifndef NXE_KERNELS_GENERIC_VECTOR_H
#define NXE_KERNELS_GENERIC_VECTOR_H

#include <stdint.h>

#include "gemm.h"

/* In a file built once per level (-DNXE_ISA_SUFFIX=<level>), NXE_ISA_NAME(f) is f_<level>. */
#ifdef NXE_ISA_SUFFIX
#define NXE_CONCAT_(a, b) a##_##b
#define NXE_CONCAT(a, b) NXE_CONCAT_(a, b)
#define NXE_ISA_NAME(name) NXE_CONCAT(name, NXE_ISA_SUFFIX)
#endif

#define NXE_GENERIC_DECLARE(suffix)                                                          \
    void nxe_epilogue_##suffix(int32_t mr, int32_t nr, float *c, int64_t ldc,                \
                               const nxe_epilogue *epilogue,                                 \
                               const nxe_epilogue_operands *operands);                       \
    void nxe_f32_activation_##suffix(int32_t activation, float alpha, float beta,           \
                                     const float *x, float *y, int64_t n);                  \
    int64_t nxe_gemm_packed_tiles_##suffix(const nxe_gemm_packed_args *args);                \
    void nxe_gemm_packed_run_##suffix(const nxe_gemm_packed_args *args, int64_t tile_begin,  \
                                      int64_t tile_end);                                     \
    int64_t nxe_conv_gemm_tiles_##suffix(const nxe_conv_gemm_args *args);                    \
    double nxe_conv_gemm_tile_work_##suffix(const nxe_conv_gemm_args *args);                 \
    void nxe_conv_gemm_run_##suffix(const nxe_conv_gemm_args *args, int64_t tile_begin,      \
                                    int64_t tile_end);                                       \
    void nxe_f32_softmax_rows_##suffix(const float *x, float *y, int64_t row_size,           \
                                       int64_t row_begin, int64_t row_end);                  \
    void nxe_f32_layer_norm_rows_##suffix(const float *x, const float *scale,                \
                                          const float *bias, float *y, int64_t row_size,     \
                                          float epsilon, int64_t row_begin, int64_t row_end); \
    int64_t nxe_depthwise_rows_##suffix(const nxe_depthwise_args *args);                     \
    void nxe_depthwise_run_##suffix(const nxe_depthwise_args *args, int64_t row_begin,       \
                                    int64_t row_end);                                        \
    void nxe_conv_bf16_pairs_##suffix(const nxe_conv_geometry *g, const float *input,        \
                                      uint32_t *pairs, int64_t row_begin, int64_t row_end);  \
    void nxe_x32_depth_to_space_##suffix(const nxe_depth_to_space_geometry *g,               \
                                         const uint32_t *input, uint32_t *output,           \
                                         int64_t row_begin, int64_t row_end);               \
    int64_t nxe_q8_gemm_tiles_##suffix(const nxe_q8_packed_args *args);                      \
    void nxe_q8_gemm_run_##suffix(const nxe_q8_packed_args *args, int64_t tile_begin,        \
                                  int64_t tile_end);

NXE_GENERIC_DECLARE(generic)
#if defined(__x86_64__)
NXE_GENERIC_DECLARE(avx2)
NXE_GENERIC_DECLARE(avx512)
#endif

#endif
