/* epilogue.c — the GEMM epilogue and the f32 activations over arrays, in portable C that the
 * compiler vectorizes; built once per ISA level (see vector.h), NXE_ISA_SUFFIX naming the copy.
 * The math is kernels/generic/vmath.h; the reference twins are in kernels/ref/gemm.c. */
#include "generic/vector.h"
#include "generic/vmath.h"

#ifndef NXE_ISA_SUFFIX
#error "built once per ISA level with -DNXE_ISA_SUFFIX=<level>"
#endif
#define NXE_CONCAT_(a, b) a##_##b
#define NXE_CONCAT(a, b) NXE_CONCAT_(a, b)
#define NXE_ISA_NAME(name) NXE_CONCAT(name, NXE_ISA_SUFFIX)

void NXE_ISA_NAME(nxe_f32_activation)(int32_t activation, float alpha, float beta,
                                      const float *x, float *y, int64_t n)
{
    switch (activation) {
    case NXE_ACTIVATION_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] < 0.0f ? 0.0f : x[i]; /* NaN stays NaN */
        break;
    case NXE_ACTIVATION_CLIP:
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] < alpha ? alpha : x[i] > beta ? beta : x[i];
        break;
    case NXE_ACTIVATION_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
        break;
    case NXE_ACTIVATION_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_tanh(x[i]);
        break;
    case NXE_ACTIVATION_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_sigmoid(x[i]);
        break;
    case NXE_ACTIVATION_GELU_ERF:
        for (int64_t i = 0; i < n; i++)
            y[i] = 0.5f * x[i] * (1.0f + nxe_vm_erf(x[i] * 0.70710678118654752f));
        break;
    case NXE_ACTIVATION_GELU_TANH:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            y[i] = 0.5f * v * (1.0f + nxe_vm_tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
        }
        break;
    case NXE_ACTIVATION_SILU:
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] * nxe_vm_sigmoid(x[i]);
        break;
    default:
        if (x != y)
            for (int64_t i = 0; i < n; i++)
                y[i] = x[i];
        break;
    }
}

void NXE_ISA_NAME(nxe_epilogue)(int32_t mr, int32_t nr, float *c, int64_t ldc,
                                const nxe_epilogue *epilogue,
                                const nxe_epilogue_operands *operands)
{
    const float scale = epilogue->scale;
    const float *bias = operands->bias;
    const int before = epilogue->residual_before_activation;
    for (int32_t i = 0; i < mr; i++) {
        float *row = c + i * ldc;
        const float *residual = operands->residual ? operands->residual + i * operands->ldr
                                                   : NULL;
        if (bias && !operands->bias_per_row) {
            for (int32_t j = 0; j < nr; j++)
                row[j] = scale * row[j] + bias[j];
        } else {
            const float add = bias ? bias[i] : 0.0f;
            for (int32_t j = 0; j < nr; j++)
                row[j] = scale * row[j] + add;
        }
        if (residual && before)
            for (int32_t j = 0; j < nr; j++)
                row[j] += residual[j];
        if (epilogue->activation != NXE_ACTIVATION_NONE)
            NXE_ISA_NAME(nxe_f32_activation)(epilogue->activation, epilogue->alpha,
                                             epilogue->beta, row, row, nr);
        if (residual && !before)
            for (int32_t j = 0; j < nr; j++)
                row[j] += residual[j];
    }
}
