/* fft.c — the real FFT of the audio frontend (fft.h). A frame of even length n is transformed
 * as a complex sequence of n / 2 (even samples real, odd samples imaginary) and split into the
 * real spectrum after; odd lengths take a complex transform of n. Tables are computed in
 * double and stored in float; the transform itself runs in float, as torch.stft does. */
#include "audio/fft.h"

#include <math.h>
#include <string.h>

static const double two_pi = 6.283185307179586476925286766559;

#define LANES NXE_FFT_LANES

/* Marks a loop over the lanes of one index: its iterations are independent. The butterflies
 * read and write several rows of one array a run-time stride apart, more row pairs than GCC
 * checks for overlap at run time, so without the mark it leaves radix 4 and 5 scalar. */
#if defined(__clang__)
#define LANE_LOOP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define LANE_LOOP _Pragma("GCC ivdep")
#else
#define LANE_LOOP
#endif

/* The butterfly radices in the order stages use them; other primes get the direct DFT. */
static int32_t factorize(int32_t size, int32_t *radices)
{
    int32_t count = 0;
    static const int32_t preferred[] = {4, 2, 3, 5};
    for (size_t i = 0; i < sizeof preferred / sizeof preferred[0]; i++) {
        while (size % preferred[i] == 0) {
            radices[count++] = preferred[i];
            size /= preferred[i];
        }
    }
    for (int32_t p = 7; size > 1; p += 2) {
        if ((int64_t)p * p > size)
            p = size; /* what is left is prime */
        while (size % p == 0) {
            radices[count++] = p;
            size /= p;
        }
    }
    return count;
}

nxe_status nxe_real_fft_init(nxe_real_fft *fft, int32_t n_fft)
{
    memset(fft, 0, sizeof *fft);
    fft->n_fft = n_fft;
    fft->size = n_fft % 2 == 0 ? n_fft / 2 : n_fft;
    fft->num_bins = n_fft / 2 + 1;
    int32_t radices[NXE_FFT_MAX_STAGES];
    fft->num_stages = factorize(fft->size, radices);

    /* One block: window, split twiddles, work, then each stage's twiddles (and a generic
     * stage's roots of unity), then the generic butterfly's scratch. Sizes are bounded by
     * NXE_AUDIO_MAX_N_FFT, far from overflowing. */
    size_t floats = (size_t)n_fft + 2 * (size_t)fft->num_bins + 4 * (size_t)fft->size * LANES;
    int32_t span = 1;
    for (int32_t s = 0; s < fft->num_stages; s++) {
        int32_t p = radices[s];
        floats += 2 * (size_t)(p - 1) * (size_t)span;
        if (p > 5) {
            floats += 2 * (size_t)p;
            if (p > fft->max_generic_radix)
                fft->max_generic_radix = p;
        }
        span *= p;
    }
    floats += 2 * (size_t)fft->max_generic_radix * LANES;
    float *memory = nxe_alloc(floats * sizeof(float));
    if (!memory)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "nxe_audio: no memory for the FFT tables of "
                         "n_fft %d (%zu bytes)",
                         n_fft, floats * sizeof(float));
    fft->memory = memory;
    fft->window = memory;
    fft->split_twiddle = fft->window + n_fft;
    fft->work = fft->split_twiddle + 2 * fft->num_bins;
    float *next = fft->work + 4 * (size_t)fft->size * LANES;

    /* The periodic Hann window (torch.hann_window's default). */
    for (int32_t j = 0; j < n_fft; j++)
        fft->window[j] = (float)(0.5 - 0.5 * cos(two_pi * j / n_fft));
    for (int32_t k = 0; k < fft->num_bins; k++) {
        fft->split_twiddle[k] = (float)cos(two_pi * k / n_fft);
        fft->split_twiddle[fft->num_bins + k] = (float)-sin(two_pi * k / n_fft);
    }
    span = 1;
    for (int32_t s = 0; s < fft->num_stages; s++) {
        int32_t p = radices[s];
        nxe_fft_stage *stage = &fft->stages[s];
        stage->radix = p;
        stage->span = span;
        stage->twiddle = next;
        /* twiddle[(q - 1) * 2 * span + k] and [.. + span + k]: W_{span p}^{q k}. */
        for (int32_t q = 1; q < p; q++) {
            float *re = next + (size_t)(q - 1) * 2 * span, *im = re + span;
            for (int32_t k = 0; k < span; k++) {
                double angle = two_pi * (double)((int64_t)q * k) / ((double)span * p);
                re[k] = (float)cos(angle);
                im[k] = (float)-sin(angle);
            }
        }
        next += 2 * (size_t)(p - 1) * span;
        if (p > 5) {
            /* Then the p-th roots of unity, real parts then imaginary. */
            for (int32_t r = 0; r < p; r++) {
                next[r] = (float)cos(two_pi * r / p);
                next[p + r] = (float)-sin(two_pi * r / p);
            }
            next += 2 * (size_t)p;
        }
        span *= p;
    }
    fft->generic = next;
    return NXE_OK;
}

void nxe_real_fft_release(nxe_real_fft *fft)
{
    nxe_free(fft->memory);
    memset(fft, 0, sizeof *fft);
}

/* One stage of radix p over span m (fft.h): for each sub-transform j and bin k of the previous
 * stage, the p inputs at (j + J q) m + k (J = n / (m p)) are twiddled by W_{m p}^{q k} and
 * their p-point DFT written to j m p + k + m r. Each index holds LANES frames side by side;
 * the loops over lanes are the vector loops. */
static void stage_radix2(const nxe_fft_stage *st, int32_t n, const float *restrict xr,
                         const float *restrict xi, float *restrict yr, float *restrict yi)
{
    const int32_t m = st->span, count = n / (m * 2);
    const size_t stride = (size_t)(n / 2) * LANES;
    const float *wr = st->twiddle, *wi = wr + m;
    for (int32_t j = 0; j < count; j++) {
        for (int32_t k = 0; k < m; k++) {
            const size_t in = ((size_t)j * m + k) * LANES, out = ((size_t)j * m * 2 + k) * LANES;
            const size_t step = (size_t)m * LANES;
            const float tr = wr[k], ti = wi[k];
            LANE_LOOP
            for (int l = 0; l < LANES; l++) {
                float a0r = xr[in + l], a0i = xi[in + l];
                float vr = xr[in + stride + l], vi = xi[in + stride + l];
                float a1r = vr * tr - vi * ti, a1i = vr * ti + vi * tr;
                yr[out + l] = a0r + a1r;
                yi[out + l] = a0i + a1i;
                yr[out + step + l] = a0r - a1r;
                yi[out + step + l] = a0i - a1i;
            }
        }
    }
}

static void stage_radix3(const nxe_fft_stage *st, int32_t n, const float *restrict xr,
                         const float *restrict xi, float *restrict yr, float *restrict yi)
{
    const int32_t m = st->span, count = n / (m * 3);
    const size_t stride = (size_t)(n / 3) * LANES, step = (size_t)m * LANES;
    const float *w = st->twiddle;
    const float c = -0.5f, s = 0.86602540378443864676f; /* cos, sin of 2 pi / 3 */
    for (int32_t j = 0; j < count; j++) {
        for (int32_t k = 0; k < m; k++) {
            const size_t in = ((size_t)j * m + k) * LANES, out = ((size_t)j * m * 3 + k) * LANES;
            const float w1r = w[k], w1i = w[m + k], w2r = w[2 * m + k], w2i = w[3 * m + k];
            LANE_LOOP
            for (int l = 0; l < LANES; l++) {
                float a0r = xr[in + l], a0i = xi[in + l];
                float x1r = xr[in + stride + l], x1i = xi[in + stride + l];
                float x2r = xr[in + 2 * stride + l], x2i = xi[in + 2 * stride + l];
                float a1r = x1r * w1r - x1i * w1i, a1i = x1r * w1i + x1i * w1r;
                float a2r = x2r * w2r - x2i * w2i, a2i = x2r * w2i + x2i * w2r;
                float tr = a1r + a2r, ti = a1i + a2i, dr = a1r - a2r, di = a1i - a2i;
                float mr = a0r + c * tr, mi = a0i + c * ti;
                yr[out + l] = a0r + tr;
                yi[out + l] = a0i + ti;
                yr[out + step + l] = mr + s * di;
                yi[out + step + l] = mi - s * dr;
                yr[out + 2 * step + l] = mr - s * di;
                yi[out + 2 * step + l] = mi + s * dr;
            }
        }
    }
}

static void stage_radix4(const nxe_fft_stage *st, int32_t n, const float *restrict xr,
                         const float *restrict xi, float *restrict yr, float *restrict yi)
{
    const int32_t m = st->span, count = n / (m * 4);
    const size_t stride = (size_t)(n / 4) * LANES, step = (size_t)m * LANES;
    const float *w = st->twiddle;
    for (int32_t j = 0; j < count; j++) {
        for (int32_t k = 0; k < m; k++) {
            const size_t in = ((size_t)j * m + k) * LANES, out = ((size_t)j * m * 4 + k) * LANES;
            const float w1r = w[k], w1i = w[m + k], w2r = w[2 * m + k], w2i = w[3 * m + k];
            const float w3r = w[4 * m + k], w3i = w[5 * m + k];
            const float *x0r = xr + in, *x1r = x0r + stride, *x2r = x1r + stride;
            const float *x3r = x2r + stride;
            const float *x0i = xi + in, *x1i = x0i + stride, *x2i = x1i + stride;
            const float *x3i = x2i + stride;
            float *y0r = yr + out, *y1r = y0r + step, *y2r = y1r + step, *y3r = y2r + step;
            float *y0i = yi + out, *y1i = y0i + step, *y2i = y1i + step, *y3i = y2i + step;
            LANE_LOOP
            for (int l = 0; l < LANES; l++) {
                float a1r = x1r[l] * w1r - x1i[l] * w1i, a1i = x1r[l] * w1i + x1i[l] * w1r;
                float a2r = x2r[l] * w2r - x2i[l] * w2i, a2i = x2r[l] * w2i + x2i[l] * w2r;
                float a3r = x3r[l] * w3r - x3i[l] * w3i, a3i = x3r[l] * w3i + x3i[l] * w3r;
                float t0r = x0r[l] + a2r, t0i = x0i[l] + a2i;
                float t1r = x0r[l] - a2r, t1i = x0i[l] - a2i;
                float t2r = a1r + a3r, t2i = a1i + a3i, t3r = a1r - a3r, t3i = a1i - a3i;
                y0r[l] = t0r + t2r;
                y0i[l] = t0i + t2i;
                y1r[l] = t1r + t3i; /* t1 - i t3 */
                y1i[l] = t1i - t3r;
                y2r[l] = t0r - t2r;
                y2i[l] = t0i - t2i;
                y3r[l] = t1r - t3i; /* t1 + i t3 */
                y3i[l] = t1i + t3r;
            }
        }
    }
}

static void stage_radix5(const nxe_fft_stage *st, int32_t n, const float *restrict xr,
                         const float *restrict xi, float *restrict yr, float *restrict yi)
{
    const int32_t m = st->span, count = n / (m * 5);
    const size_t stride = (size_t)(n / 5) * LANES, step = (size_t)m * LANES;
    const float *w = st->twiddle;
    /* cos and sin of 2 pi / 5 and 4 pi / 5 */
    const float c1 = 0.30901699437494742410f, c2 = -0.80901699437494742410f;
    const float s1 = 0.95105651629515357212f, s2 = 0.58778525229247312917f;
    for (int32_t j = 0; j < count; j++) {
        for (int32_t k = 0; k < m; k++) {
            const size_t in = ((size_t)j * m + k) * LANES, out = ((size_t)j * m * 5 + k) * LANES;
            const float w1r = w[k], w1i = w[m + k], w2r = w[2 * m + k], w2i = w[3 * m + k];
            const float w3r = w[4 * m + k], w3i = w[5 * m + k], w4r = w[6 * m + k];
            const float w4i = w[7 * m + k];
            LANE_LOOP
            for (int l = 0; l < LANES; l++) {
                float a0r = xr[in + l], a0i = xi[in + l];
                float x1r = xr[in + stride + l], x1i = xi[in + stride + l];
                float x2r = xr[in + 2 * stride + l], x2i = xi[in + 2 * stride + l];
                float x3r = xr[in + 3 * stride + l], x3i = xi[in + 3 * stride + l];
                float x4r = xr[in + 4 * stride + l], x4i = xi[in + 4 * stride + l];
                float a1r = x1r * w1r - x1i * w1i, a1i = x1r * w1i + x1i * w1r;
                float a2r = x2r * w2r - x2i * w2i, a2i = x2r * w2i + x2i * w2r;
                float a3r = x3r * w3r - x3i * w3i, a3i = x3r * w3i + x3i * w3r;
                float a4r = x4r * w4r - x4i * w4i, a4i = x4r * w4i + x4i * w4r;
                float t1r = a1r + a4r, t1i = a1i + a4i, t2r = a2r + a3r, t2i = a2i + a3i;
                float d1r = a1r - a4r, d1i = a1i - a4i, d2r = a2r - a3r, d2i = a2i - a3i;
                float m1r = a0r + c1 * t1r + c2 * t2r, m1i = a0i + c1 * t1i + c2 * t2i;
                float m2r = a0r + c2 * t1r + c1 * t2r, m2i = a0i + c2 * t1i + c1 * t2i;
                /* -i u for u = s1 d1 + s2 d2 (bins 1, 4) and u = s2 d1 - s1 d2 (bins 2, 3) */
                float u1r = s1 * d1r + s2 * d2r, u1i = s1 * d1i + s2 * d2i;
                float u2r = s2 * d1r - s1 * d2r, u2i = s2 * d1i - s1 * d2i;
                yr[out + l] = a0r + t1r + t2r;
                yi[out + l] = a0i + t1i + t2i;
                yr[out + step + l] = m1r + u1i;
                yi[out + step + l] = m1i - u1r;
                yr[out + 4 * step + l] = m1r - u1i;
                yi[out + 4 * step + l] = m1i + u1r;
                yr[out + 2 * step + l] = m2r + u2i;
                yi[out + 2 * step + l] = m2i - u2r;
                yr[out + 3 * step + l] = m2r - u2i;
                yi[out + 3 * step + l] = m2i + u2r;
            }
        }
    }
}

/* Any other prime p: the p-point DFT directly, with the roots of unity stored after the
 * stage's twiddles; scratch holds the p twiddled inputs of every lane. */
static void stage_generic(const nxe_fft_stage *st, int32_t n, const float *restrict xr,
                          const float *restrict xi, float *restrict yr, float *restrict yi,
                          float *restrict scratch)
{
    const int32_t m = st->span, p = st->radix, count = n / (m * p);
    const size_t stride = (size_t)(n / p) * LANES, step = (size_t)m * LANES;
    const float *w = st->twiddle, *root_r = w + 2 * (size_t)(p - 1) * m, *root_i = root_r + p;
    float *sr = scratch, *si = scratch + (size_t)p * LANES;
    for (int32_t j = 0; j < count; j++) {
        for (int32_t k = 0; k < m; k++) {
            const size_t in = ((size_t)j * m + k) * LANES, out = ((size_t)j * m * p + k) * LANES;
            LANE_LOOP
            for (int l = 0; l < LANES; l++) {
                sr[l] = xr[in + l];
                si[l] = xi[in + l];
            }
            for (int32_t q = 1; q < p; q++) {
                const float tr = w[(size_t)(q - 1) * 2 * m + k];
                const float ti = w[(size_t)(q - 1) * 2 * m + m + k];
                const float *vr = xr + in + q * stride, *vi = xi + in + q * stride;
                float *dr = sr + (size_t)q * LANES, *di = si + (size_t)q * LANES;
                LANE_LOOP
                for (int l = 0; l < LANES; l++) {
                    dr[l] = vr[l] * tr - vi[l] * ti;
                    di[l] = vr[l] * ti + vi[l] * tr;
                }
            }
            for (int32_t r = 0; r < p; r++) {
                float accr[LANES] = {0}, acci[LANES] = {0};
                int32_t index = 0; /* q * r mod p, stepped */
                for (int32_t q = 0; q < p; q++) {
                    const float cr = root_r[index], ci = root_i[index];
                    const float *ar = sr + (size_t)q * LANES, *ai = si + (size_t)q * LANES;
                    LANE_LOOP
                    for (int l = 0; l < LANES; l++) {
                        accr[l] += ar[l] * cr - ai[l] * ci;
                        acci[l] += ar[l] * ci + ai[l] * cr;
                    }
                    index += r;
                    if (index >= p)
                        index -= p;
                }
                LANE_LOOP
                for (int l = 0; l < LANES; l++) {
                    yr[out + r * step + l] = accr[l];
                    yi[out + r * step + l] = acci[l];
                }
            }
        }
    }
}

/* The complex transform of the first [size][LANES] real and imaginary arrays of the work
 * area; returns the pair holding the result (real parts, imaginary at + size * LANES). */
static float *complex_transform(nxe_real_fft *fft)
{
    const int32_t n = fft->size;
    const size_t half = (size_t)n * LANES;
    float *x = fft->work, *y = fft->work + 2 * half;
    for (int32_t s = 0; s < fft->num_stages; s++) {
        const nxe_fft_stage *st = &fft->stages[s];
        switch (st->radix) {
        case 2: stage_radix2(st, n, x, x + half, y, y + half); break;
        case 3: stage_radix3(st, n, x, x + half, y, y + half); break;
        case 4: stage_radix4(st, n, x, x + half, y, y + half); break;
        case 5: stage_radix5(st, n, x, x + half, y, y + half); break;
        default: stage_generic(st, n, x, x + half, y, y + half, fft->generic); break;
        }
        float *swap = x;
        x = y;
        y = swap;
    }
    return x;
}

void nxe_real_fft_power(nxe_real_fft *fft, const float *const frames[NXE_FFT_LANES], float *power,
                        int64_t stride)
{
    const int32_t n = fft->size;
    const size_t half = (size_t)n * LANES;
    const float *window = fft->window;
    float *re = fft->work, *im = fft->work + half;
    if (fft->n_fft % 2 != 0) {
        LANE_LOOP
        for (int l = 0; l < LANES; l++) {
            for (int32_t j = 0; j < n; j++) {
                re[(size_t)j * LANES + l] = frames[l][j] * window[j];
                im[(size_t)j * LANES + l] = 0.0f;
            }
        }
        const float *zr = complex_transform(fft), *zi = zr + half;
        for (int32_t k = 0; k < fft->num_bins; k++) {
            const float *ar = zr + (size_t)k * LANES, *ai = zi + (size_t)k * LANES;
            float *dst = power + k * stride;
            LANE_LOOP
            for (int l = 0; l < LANES; l++)
                dst[l] = ar[l] * ar[l] + ai[l] * ai[l];
        }
        return;
    }
    LANE_LOOP
    for (int l = 0; l < LANES; l++) {
        const float *frame = frames[l];
        for (int32_t j = 0; j < n; j++) {
            re[(size_t)j * LANES + l] = frame[2 * j] * window[2 * j];
            im[(size_t)j * LANES + l] = frame[2 * j + 1] * window[2 * j + 1];
        }
    }
    const float *zr = complex_transform(fft), *zi = zr + half;
    /* X[k] = E[k] + W^k O[k], E = (Z[k] + conj Z[n - k]) / 2, O = -i (Z[k] - conj Z[n - k]) / 2,
     * Z[n] = Z[0]: bins 0 and n are the sum and difference of Z[0]'s parts. */
    LANE_LOOP
    for (int l = 0; l < LANES; l++) {
        float dc = zr[l] + zi[l], nyquist = zr[l] - zi[l];
        power[l] = dc * dc;
        power[n * stride + l] = nyquist * nyquist;
    }
    const float *wr = fft->split_twiddle, *wi = wr + fft->num_bins;
    for (int32_t k = 1; k < n; k++) {
        const float *ar = zr + (size_t)k * LANES, *ai = zi + (size_t)k * LANES;
        const float *br = zr + (size_t)(n - k) * LANES, *bi = zi + (size_t)(n - k) * LANES;
        const float twr = wr[k], twi = wi[k];
        float *dst = power + k * stride;
        LANE_LOOP
        for (int l = 0; l < LANES; l++) {
            float er = 0.5f * (ar[l] + br[l]), ei = 0.5f * (ai[l] - bi[l]);
            float dr = 0.5f * (ar[l] - br[l]), di = 0.5f * (ai[l] + bi[l]);
            /* O = -i D = (di, -dr) */
            float xr = er + twr * di + twi * dr;
            float xi = ei - twr * dr + twi * di;
            dst[l] = xr * xr + xi * xi;
        }
    }
}
