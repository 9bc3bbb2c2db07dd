/* epilogue.c — the GEMM epilogue, the f32 activations over arrays and row-wise softmax and
 * layer normalization, in portable C that the compiler vectorizes; built once per ISA level
 * (see portable.h), NXE_ISA_SUFFIX naming the copy. The math is kernels/portable/vmath.h; the
 * reference twins are in kernels/ref/gemm.c and kernels/ref/normalization.c. */
#include "portable/portable.h"
#include "portable/vmath.h"

void NXE_ISA_NAME(nxe_f32_activation)(int32_t activation, float alpha, float beta, const float *x,
                                      float *y, int64_t n)
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
#if defined(__AVX512F__)
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
            _mm512_mask_storeu_ps(y + i, m, nxe_vm_tanh16(_mm512_maskz_loadu_ps(m, x + i)));
        }
#else
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_tanh(x[i]);
#endif
        break;
    case NXE_ACTIVATION_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_sigmoid(x[i]);
        break;
    case NXE_ACTIVATION_GELU_ERF:
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_gelu_erf(x[i]);
        break;
    case NXE_ACTIVATION_GELU_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = nxe_vm_gelu_tanh(x[i]);
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
                                const nxe_epilogue *epilogue, const nxe_epilogue_operands *operands)
{
    const float scale = epilogue->scale, bias_scale = epilogue->bias_scale;
    const int before = epilogue->residual_before_activation;
    for (int32_t i = 0; i < mr; i++) {
        float *row = c + i * ldc;
        const float *bias = operands->bias ? operands->bias + i * operands->bias_stride_m : NULL;
        const float *residual = operands->residual ? operands->residual + i * operands->ldr : NULL;
        if (bias && operands->bias_stride_n) {
            for (int32_t j = 0; j < nr; j++)
                row[j] = scale * row[j] + bias_scale * bias[j];
        } else if (bias || scale != 1.0f) {
            const float add = bias ? bias_scale * bias[0] : 0.0f;
            for (int32_t j = 0; j < nr; j++)
                row[j] = scale * row[j] + add;
        }
        if (residual && before)
            for (int32_t j = 0; j < nr; j++)
                row[j] += residual[j];
        if (epilogue->activation != NXE_ACTIVATION_NONE)
            NXE_ISA_NAME(nxe_f32_activation)(epilogue->activation, epilogue->alpha, epilogue->beta,
                                             row, row, nr);
        if (residual && !before)
            for (int32_t j = 0; j < nr; j++)
                row[j] += residual[j];
    }
}

/* Reductions keep LANES partial results, combined at the end, so that the loops vectorize
 * without reassociating a single accumulator. */
#define LANES NXE_VM_LANES

/* Mean and sum of squared deviations in double, as the reference: a large mean over a small
 * spread must not cancel. */
static void moments(const float *x, int64_t n, double *mean, double *squares)
{
    double part[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            part[j] += x[i + j];
    double s = 0.0;
    for (int j = 0; j < LANES; j++)
        s += part[j];
    for (; i < n; i++)
        s += x[i];
    const double m = s / (double)n;
    for (int j = 0; j < LANES; j++)
        part[j] = 0.0;
    for (i = 0; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            part[j] += ((double)x[i + j] - m) * ((double)x[i + j] - m);
    double q = 0.0;
    for (int j = 0; j < LANES; j++)
        q += part[j];
    for (; i < n; i++)
        q += ((double)x[i] - m) * ((double)x[i] - m);
    *mean = m;
    *squares = q;
}

void NXE_ISA_NAME(nxe_f32_softmax_rows)(const float *x, float *y, int64_t row_size,
                                        int64_t row_begin, int64_t row_end)
{
    for (int64_t row = row_begin; row < row_end && row_size > 0; row++) {
        const float *xr = x + row * row_size;
        float *yr = y + row * row_size;
        const float max = nxe_vm_max_of(xr, row_size);
        for (int64_t i = 0; i < row_size; i++)
            yr[i] = nxe_vm_exp(xr[i] - max);
        const float inv = 1.0f / nxe_vm_sum_of(yr, row_size);
        for (int64_t i = 0; i < row_size; i++)
            yr[i] *= inv;
    }
}

void NXE_ISA_NAME(nxe_f32_layer_norm_rows)(const float *x, const float *scale, const float *bias,
                                           float *y, int64_t row_size, float epsilon,
                                           int64_t row_begin, int64_t row_end)
{
    for (int64_t row = row_begin; row < row_end && row_size > 0; row++) {
        const float *xr = x + row * row_size;
        float *yr = y + row * row_size;
        double mean, squares;
        moments(xr, row_size, &mean, &squares);
        const double inv_std = 1.0 / sqrt(squares / (double)row_size + (double)epsilon);
        for (int64_t i = 0; i < row_size; i++) {
            float v = (float)(((double)xr[i] - mean) * inv_std);
            v = scale ? v * scale[i] : v;
            yr[i] = bias ? v + bias[i] : v;
        }
    }
}
