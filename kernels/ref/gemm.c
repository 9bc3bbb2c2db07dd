/* gemm.c — the reference twin of the packed GEMM's epilogue (libm activations), the list
 * entries of the reference microkernels, of the emulated AMX ones and of the AVX-VNNI kernel's
 * EVEX twin, and the row of the
 * portable kernels compiled at the scalar level, whose drivers and epilogue they run with.
 * Built for the kernel tests only. */
#include "ref/gemm.h"

#include "nxe/nxe_experimental.h" /* enum nxe_cpu_feature, for the AVX-VNNI twin's entry */

#include <math.h>

float nxe_ref_activation(int32_t activation, float alpha, float beta, float v)
{
    switch (activation) {
    case NXE_ACTIVATION_RELU: return v < 0.0f ? 0.0f : v; /* NaN stays NaN */
    case NXE_ACTIVATION_CLIP: return v < alpha ? alpha : v > beta ? beta : v;
    case NXE_ACTIVATION_LEAKY_RELU: return v < 0.0f ? alpha * v : v;
    case NXE_ACTIVATION_TANH: return tanhf(v);
    case NXE_ACTIVATION_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case NXE_ACTIVATION_GELU_ERF: /* 1 + erf(u) = erfc(-u), without cancellation */
        return 0.5f * v * erfcf(-v * 0.70710678118654752f);
    case NXE_ACTIVATION_GELU_TANH: /* 0.5 (1 + tanh(u)) = 1 / (1 + e^{-2u}) */
        return v / (1.0f + expf(-2.0f * 0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case NXE_ACTIVATION_SILU: return v / (1.0f + expf(-v));
    default: return v;
    }
}

void nxe_ref_epilogue(int32_t mr, int32_t nr, float *c, int64_t ldc, const nxe_epilogue *epilogue,
                      const nxe_epilogue_operands *operands)
{
    for (int32_t i = 0; i < mr; i++) {
        for (int32_t j = 0; j < nr; j++) {
            float v = epilogue->scale * c[i * ldc + j];
            if (operands->bias)
                v += epilogue->bias_scale *
                     operands->bias[i * operands->bias_stride_m + j * operands->bias_stride_n];
            float residual = operands->residual ? operands->residual[i * operands->ldr + j] : 0.0f;
            if (epilogue->residual_before_activation)
                v += residual;
            v = nxe_ref_activation(epilogue->activation, epilogue->alpha, epilogue->beta, v);
            if (!epilogue->residual_before_activation)
                v += residual;
            c[i * ldc + j] = v;
        }
    }
}

NXE_REF_GEMM_UKERNELS(NXE_DEFINE_GEMM_UKERNEL)
NXE_REF_Q8_UKERNELS(NXE_DEFINE_Q8_UKERNEL)

static const nxe_ukernel_entry entries[] = {NXE_REF_GEMM_UKERNELS(NXE_GEMM_UKERNEL_ENTRY)
                                                NXE_REF_Q8_UKERNELS(NXE_Q8_UKERNEL_ENTRY)};

const nxe_ukernel_entry *nxe_ref_ukernel_entries(int32_t *count)
{
    *count = (int32_t)(sizeof entries / sizeof entries[0]);
    return entries;
}

NXE_AMX_EMULATED_GEMM_UKERNELS(NXE_DEFINE_GEMM_UKERNEL)
NXE_AMX_EMULATED_Q8_UKERNELS(NXE_DEFINE_Q8_UKERNEL)

static const nxe_ukernel_entry amx_emulated[] = {NXE_AMX_EMULATED_GEMM_UKERNELS(
    NXE_GEMM_UKERNEL_ENTRY) NXE_AMX_EMULATED_Q8_UKERNELS(NXE_Q8_UKERNEL_ENTRY)};

const nxe_ukernel_entry *nxe_amx_emulated_entries(int32_t *count)
{
    *count = (int32_t)(sizeof amx_emulated / sizeof amx_emulated[0]);
    return amx_emulated;
}

#if defined(__x86_64__)
NXE_AVXVNNI_TWIN_Q8_UKERNELS(NXE_DEFINE_Q8_UKERNEL)
static const nxe_ukernel_entry avxvnni_twin[] = {
    NXE_AVXVNNI_TWIN_Q8_UKERNELS(NXE_Q8_UKERNEL_ENTRY)};
#endif

const nxe_ukernel_entry *nxe_avxvnni_twin_entries(int32_t *count)
{
#if defined(__x86_64__)
    *count = (int32_t)(sizeof avxvnni_twin / sizeof avxvnni_twin[0]);
    return avxvnni_twin;
#else
    *count = 0;
    return NULL;
#endif
}

static const nxe_kernel_table scalar_row = NXE_ROW_INIT(scalar);

const nxe_kernel_table *nxe_scalar_portable_row(void)
{
    return &scalar_row;
}
