/* gemm.h — the reference twins of the packed GEMM (kernels/gemm.h), built for the kernel tests
 * only, never into libnxe: plain-C microkernels listed as kernels/list.h lists the fast ones,
 * the epilogue with libm activations, and the portable kernels compiled at the scalar level
 * (a row through which the reference microkernels run the same drivers as the fast ones). */
#ifndef NXE_KERNELS_REF_GEMM_H
#define NXE_KERNELS_REF_GEMM_H

#include "dispatch.h"
#include "list.h"

/* X(dtype, MR, NR, isa, row, features) as in kernels/list.h; they run in the scalar row. */
#define NXE_REF_GEMM_UKERNELS(X) X(f32, 4, 8, ref, scalar, 0) X(bf16, 4, 8, ref, scalar, 0)
#define NXE_REF_Q8_UKERNELS(X) X(u8s8, 4, 8, ref, scalar, 0)
NXE_REF_GEMM_UKERNELS(NXE_DECLARE_GEMM_UKERNEL)
NXE_REF_Q8_UKERNELS(NXE_DECLARE_Q8_UKERNEL)

/* The AMX microkernels (kernels/x86/amx/) built on the tile emulation, on every machine: never
 * chosen by dispatch, they run in the scalar row as the reference microkernels do. */
#define NXE_AMX_EMULATED_GEMM_UKERNELS(X) X(bf16, 16, 48, amxemu, scalar, 0)
#define NXE_AMX_EMULATED_Q8_UKERNELS(X) X(u8s8, 16, 48, amxemu, scalar, 0)
NXE_AMX_EMULATED_GEMM_UKERNELS(NXE_DECLARE_GEMM_UKERNEL)
NXE_AMX_EMULATED_Q8_UKERNELS(NXE_DECLARE_Q8_UKERNEL)

/* The epilogue with nxe_ref_activation: the oracle of every portable epilogue. */
nxe_epilogue_fn nxe_ref_epilogue;
/* The activation of one value, with libm: the oracle of every vectorized activation. */
float nxe_ref_activation(int32_t activation, float alpha, float beta, float v);

/* The AVX-VNNI microkernel built on the EVEX form of vpdpbusd (x86/avx2/u8s8-gemm-4x24-avxvnni.c
 * with NXE_AVXVNNI_EVEX), run in the avx2 row where the CPU has AVX512-VNNI and VL. */
#if defined(__x86_64__)
#define NXE_AVXVNNI_TWIN_Q8_UKERNELS(X)                                                            \
    X(u8s8, 4, 24, avxvnnievex, avx2, NXE_CPU_FEATURE_AVX512_VNNI | NXE_CPU_FEATURE_AVX512VL)
#else
#define NXE_AVXVNNI_TWIN_Q8_UKERNELS(X)
#endif
NXE_AVXVNNI_TWIN_Q8_UKERNELS(NXE_DECLARE_Q8_UKERNEL)

/* The reference microkernels' entries, in list order; the emulated AMX ones'; the AVX-VNNI
 * twin's (none off x86-64). */
const nxe_ukernel_entry *nxe_ref_ukernel_entries(int32_t *count);
const nxe_ukernel_entry *nxe_amx_emulated_entries(int32_t *count);
const nxe_ukernel_entry *nxe_avxvnni_twin_entries(int32_t *count);

/* kernels/portable compiled at the scalar level, as a row (no microkernels set). */
NXE_DECLARE_PORTABLE_LEVEL(scalar)
const nxe_kernel_table *nxe_scalar_portable_row(void);

#endif
