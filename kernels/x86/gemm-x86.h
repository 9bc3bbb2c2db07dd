/* gemm-x86.h — the x86-64 packed-GEMM microkernels (contract: kernels/gemm.h); each runs only
 * where dispatch found its ISA. */
#ifndef NXE_KERNELS_X86_GEMM_X86_H
#define NXE_KERNELS_X86_GEMM_X86_H

#include "gemm.h"

#if defined(__x86_64__)
/* AVX-512F + FMA: 8 x 48 f32. */
void nxe_f32_gemm_8x48_avx512(int32_t mr, int32_t nr, int64_t kc, const void *a,
                              const void *const *b_rows, float *c, int64_t ldc,
                              int32_t accumulate);
void nxe_f32_gemm_8x48_rows_avx512(int32_t mr, int32_t nr, int64_t kc, const float *a,
                                   int64_t a_stride_m, const void *const *b_rows, float *c,
                                   int64_t ldc, int32_t accumulate);
/* AVX512-BF16: 8 x 48 bf16 pairs, f32 accumulation. */
void nxe_bf16_gemm_8x48_avx512bf16(int32_t mr, int32_t nr, int64_t kc, const void *a,
                                   const void *const *b_rows, float *c, int64_t ldc,
                                   int32_t accumulate);
/* AVX512-VNNI: 4 x 48 u8 x s8, int32 accumulation. */
void nxe_u8s8_gemm_4x48_avx512vnni(int32_t mr, int32_t nr, int64_t kc, const uint8_t *a,
                                   const int8_t *b, int32_t *c, int64_t ldc);
/* AVX2 + FMA: 6 x 16 f32. */
void nxe_f32_gemm_6x16_avx2(int32_t mr, int32_t nr, int64_t kc, const void *a,
                            const void *const *b_rows, float *c, int64_t ldc,
                            int32_t accumulate);
void nxe_f32_gemm_6x16_rows_avx2(int32_t mr, int32_t nr, int64_t kc, const float *a,
                                 int64_t a_stride_m, const void *const *b_rows, float *c,
                                 int64_t ldc, int32_t accumulate);
#endif

#endif
