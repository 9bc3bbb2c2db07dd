/* f32-gemm-x86.h — the x86-64 f32 GEMM kernels; each has exactly the contract of
 * nxe_ref_f32_gemm (kernels/ref/matmul.h) and runs only where dispatch found its ISA. */
#ifndef NXE_KERNELS_X86_F32_GEMM_X86_H
#define NXE_KERNELS_X86_F32_GEMM_X86_H

#include "ref/matmul.h"

#if defined(__x86_64__)
/* AVX-512 F/BW/VL + FMA. */
void nxe_f32_gemm_avx512(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end);
/* AVX2 + FMA. */
void nxe_f32_gemm_avx2(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end);
#endif

#endif
