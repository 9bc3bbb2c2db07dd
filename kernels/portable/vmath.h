/* vmath.h — branchless single-precision exp, tanh, sigmoid and erf for loops the compiler
 * vectorizes: every function is straight-line arithmetic and selects, no calls and no table,
 * so a loop over them becomes vector code under each ISA's flags (with -fno-trapping-math, as
 * kernels/meson.build builds them: GCC keeps the selects as branches otherwise). Accuracy
 * against libm (tests/kernels/kernels.c checks them over a dense sweep): exp within a few ulp,
 * tanh within 4e-7 absolute and relative, the GELUs and sigmoid within about 1e-6 relative. */
#ifndef NXE_KERNELS_PORTABLE_VMATH_H
#define NXE_KERNELS_PORTABLE_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float nxe_vm_from_bits(int32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* e^x for x clamped to [-87.3, 88.7]: x = n ln 2 + r, |r| <= ln2 / 2, with Cephes expf's
 * polynomial for e^r; 2^n is built in the exponent bits. NaN stays NaN. */
static inline float nxe_vm_exp(float x)
{
    /* Written so that a NaN fails the first test and becomes 88.7: n is always a number that
     * converts to int (selects, not fminf/fmaxf, which would be library calls here). */
    float clamped = x < 88.7f ? x : 88.7f;
    clamped = clamped > -87.3f ? clamped : -87.3f;
    /* Round to nearest by the 1.5 * 2^23 trick, valid in the default rounding mode. */
    float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = clamped - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float result = p * nxe_vm_from_bits((int32_t)((uint32_t)((int32_t)n + 127) << 23));
    return x != x ? x : result;
}

/* The rational tanh's coefficients: x * P(x^2) / Q(x^2), P of degree 6 (odd powers up to
 * 13), Q of degree 3, valid on |x| <= NXE_VM_TANH_BOUND. */
#define NXE_VM_TANH_BOUND 7.90531110763549805f
#define NXE_VM_TANH_A13 -2.76076847742355e-16f
#define NXE_VM_TANH_A11 2.00018790482477e-13f
#define NXE_VM_TANH_A9 -8.60467152213735e-11f
#define NXE_VM_TANH_A7 5.12229709037114e-08f
#define NXE_VM_TANH_A5 1.48572235717979e-05f
#define NXE_VM_TANH_A3 6.37261928875436e-04f
#define NXE_VM_TANH_A1 4.89352455891786e-03f
#define NXE_VM_TANH_B6 1.19825839466702e-06f
#define NXE_VM_TANH_B4 1.18534705686654e-04f
#define NXE_VM_TANH_B2 2.26843463243900e-03f
#define NXE_VM_TANH_B0 4.89352518554385e-03f

/* tanh as a rational function of degree 13 over 6 on |x| <= 7.9053 (clamped beyond, where
 * tanh rounds to within 3e-7 of +-1): 7 + 4 multiply-adds and one division. Measured against
 * double tanh: at most 4e-7 absolute and relative error (7 ulp). */
static inline float nxe_vm_tanh(float x)
{
    const float bound = NXE_VM_TANH_BOUND;
    x = x < -bound ? -bound : x > bound ? bound : x;
    float x2 = x * x;
    float p = NXE_VM_TANH_A13;
    p = p * x2 + NXE_VM_TANH_A11;
    p = p * x2 + NXE_VM_TANH_A9;
    p = p * x2 + NXE_VM_TANH_A7;
    p = p * x2 + NXE_VM_TANH_A5;
    p = p * x2 + NXE_VM_TANH_A3;
    p = p * x2 + NXE_VM_TANH_A1;
    float q = NXE_VM_TANH_B6;
    q = q * x2 + NXE_VM_TANH_B4;
    q = q * x2 + NXE_VM_TANH_B2;
    q = q * x2 + NXE_VM_TANH_B0;
    return x * p / q;
}

static inline float nxe_vm_sigmoid(float x)
{
    return 1.0f / (1.0f + nxe_vm_exp(-x));
}

/* erfc(|x|) for the Gaussian tail, with relative accuracy everywhere (the Chebyshev fit of
 * Numerical Recipes' erfcc, fractional error below 1.2e-7 in exact arithmetic). */
static inline float nxe_vm_erfc_abs(float x)
{
    float z = fabsf(x);
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    return t * nxe_vm_exp(p - z * z);
}

/* GELU 0.5 x (1 + erf(x / sqrt 2)), through erfc so that the negative tail keeps its
 * relative accuracy: 1 + erf(u) is erfc(-u) = 2 - erfc(u) for u >= 0 and erfc(|u|) below. */
static inline float nxe_vm_gelu_erf(float x)
{
    float tail = nxe_vm_erfc_abs(x * 0.70710678118654752f);
    return 0.5f * x * (x < 0.0f ? tail : 2.0f - tail);
}

/* GELU's tanh form 0.5 x (1 + tanh(u)) = x * sigmoid(2u), which has no cancellation. */
static inline float nxe_vm_gelu_tanh(float x)
{
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x * nxe_vm_sigmoid(2.0f * u);
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* 1 / q from the 14-bit hardware estimate and one Newton step (about 1 ulp): a division's
 * throughput is what limits tanh otherwise. */
static inline __m512 nxe_vm_reciprocal16(__m512 q)
{
    __m512 r = _mm512_rcp14_ps(q);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(2.0f)));
}

/* nxe_vm_tanh on 16 lanes, the division replaced by nxe_vm_reciprocal16. */
static inline __m512 nxe_vm_tanh16(__m512 x)
{
    const __m512 bound = _mm512_set1_ps(NXE_VM_TANH_BOUND);
    /* max/min return their second operand when either is NaN: x goes second, NaN stays. */
    x = _mm512_min_ps(bound, _mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), bound), x));
    const __m512 x2 = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(NXE_VM_TANH_A13);
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A11));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A9));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A7));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A5));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A3));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(NXE_VM_TANH_A1));
    __m512 q = _mm512_set1_ps(NXE_VM_TANH_B6);
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(NXE_VM_TANH_B4));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(NXE_VM_TANH_B2));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(NXE_VM_TANH_B0));
    return _mm512_mul_ps(_mm512_mul_ps(x, p), nxe_vm_reciprocal16(q));
}
#endif

/* Reductions keep NXE_VM_LANES partial results, combined at the end, so that the loops
 * vectorize without reassociating a single accumulator. */
#define NXE_VM_LANES 16

static inline float nxe_vm_max_of(const float *x, int64_t n)
{
    float part[NXE_VM_LANES];
    for (int j = 0; j < NXE_VM_LANES; j++)
        part[j] = -INFINITY;
    int64_t i = 0;
    for (; i + NXE_VM_LANES <= n; i += NXE_VM_LANES)
        for (int j = 0; j < NXE_VM_LANES; j++)
            part[j] = x[i + j] > part[j] ? x[i + j] : part[j];
    float m = -INFINITY;
    for (int j = 0; j < NXE_VM_LANES; j++)
        m = part[j] > m ? part[j] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* The sum, with NaN kept: a NaN term reaches the sum. */
static inline float nxe_vm_sum_of(const float *x, int64_t n)
{
    float part[NXE_VM_LANES] = {0};
    int64_t i = 0;
    for (; i + NXE_VM_LANES <= n; i += NXE_VM_LANES)
        for (int j = 0; j < NXE_VM_LANES; j++)
            part[j] += x[i + j];
    float sum = 0.0f;
    for (int j = 0; j < NXE_VM_LANES; j++)
        sum += part[j];
    for (; i < n; i++)
        sum += x[i];
    return sum;
}

#endif
