/* fft.c — the real FFT of the audio frontend (fft.h). A frame of even length n is transformed
 * as a complex sequence of n / 2 (even samples real, odd samples imaginary) and split into the
 * real spectrum after; odd lengths take a complex transform of n. Tables are computed in
 * double and stored in float; the transform itself runs in float, as torch.stft does. */
#include "audio/fft.h"

#include <math.h>
#include <string.h>

static const double two_pi = 6.283185307179586476925286766559;

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
    size_t floats = (size_t)n_fft + 2 * (size_t)fft->num_bins + 4 * (size_t)fft->size;
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
    floats += 4 * (size_t)fft->max_generic_radix;
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
    float *next = fft->work + 4 * (size_t)fft->size;

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
 * their p-point DFT written to j m p + k + m r. The loops over k read and write contiguously. */
static void stage_radix2(const nxe_fft_stage *st, int32_t n, const float *xr, const float *xi,
                         float *yr, float *yi)
{
    const int32_t m = st->span, count = n / (m * 2), stride = n / 2;
    const float *wr = st->twiddle, *wi = wr + m;
    for (int32_t j = 0; j < count; j++) {
        const float *ar = xr + (size_t)j * m, *ai = xi + (size_t)j * m;
        float *br = yr + (size_t)j * m * 2, *bi = yi + (size_t)j * m * 2;
        for (int32_t k = 0; k < m; k++) {
            float a0r = ar[k], a0i = ai[k];
            float a1r = ar[stride + k] * wr[k] - ai[stride + k] * wi[k];
            float a1i = ar[stride + k] * wi[k] + ai[stride + k] * wr[k];
            br[k] = a0r + a1r;
            bi[k] = a0i + a1i;
            br[m + k] = a0r - a1r;
            bi[m + k] = a0i - a1i;
        }
    }
}

static void stage_radix3(const nxe_fft_stage *st, int32_t n, const float *xr, const float *xi,
                         float *yr, float *yi)
{
    const int32_t m = st->span, count = n / (m * 3), stride = n / 3;
    const float *w1r = st->twiddle, *w1i = w1r + m, *w2r = w1i + m, *w2i = w2r + m;
    const float c = -0.5f, s = 0.86602540378443864676f; /* cos, sin of 2 pi / 3 */
    for (int32_t j = 0; j < count; j++) {
        const float *ar = xr + (size_t)j * m, *ai = xi + (size_t)j * m;
        float *br = yr + (size_t)j * m * 3, *bi = yi + (size_t)j * m * 3;
        for (int32_t k = 0; k < m; k++) {
            float a0r = ar[k], a0i = ai[k];
            float x1r = ar[stride + k], x1i = ai[stride + k];
            float x2r = ar[2 * stride + k], x2i = ai[2 * stride + k];
            float a1r = x1r * w1r[k] - x1i * w1i[k], a1i = x1r * w1i[k] + x1i * w1r[k];
            float a2r = x2r * w2r[k] - x2i * w2i[k], a2i = x2r * w2i[k] + x2i * w2r[k];
            float tr = a1r + a2r, ti = a1i + a2i, dr = a1r - a2r, di = a1i - a2i;
            float mr = a0r + c * tr, mi = a0i + c * ti;
            br[k] = a0r + tr;
            bi[k] = a0i + ti;
            br[m + k] = mr + s * di;
            bi[m + k] = mi - s * dr;
            br[2 * m + k] = mr - s * di;
            bi[2 * m + k] = mi + s * dr;
        }
    }
}

static void stage_radix4(const nxe_fft_stage *st, int32_t n, const float *xr, const float *xi,
                         float *yr, float *yi)
{
    const int32_t m = st->span, count = n / (m * 4), stride = n / 4;
    const float *w1r = st->twiddle, *w1i = w1r + m, *w2r = w1i + m, *w2i = w2r + m;
    const float *w3r = w2i + m, *w3i = w3r + m;
    for (int32_t j = 0; j < count; j++) {
        const float *ar = xr + (size_t)j * m, *ai = xi + (size_t)j * m;
        float *br = yr + (size_t)j * m * 4, *bi = yi + (size_t)j * m * 4;
        for (int32_t k = 0; k < m; k++) {
            float x1r = ar[stride + k], x1i = ai[stride + k];
            float x2r = ar[2 * stride + k], x2i = ai[2 * stride + k];
            float x3r = ar[3 * stride + k], x3i = ai[3 * stride + k];
            float a0r = ar[k], a0i = ai[k];
            float a1r = x1r * w1r[k] - x1i * w1i[k], a1i = x1r * w1i[k] + x1i * w1r[k];
            float a2r = x2r * w2r[k] - x2i * w2i[k], a2i = x2r * w2i[k] + x2i * w2r[k];
            float a3r = x3r * w3r[k] - x3i * w3i[k], a3i = x3r * w3i[k] + x3i * w3r[k];
            float t0r = a0r + a2r, t0i = a0i + a2i, t1r = a0r - a2r, t1i = a0i - a2i;
            float t2r = a1r + a3r, t2i = a1i + a3i, t3r = a1r - a3r, t3i = a1i - a3i;
            br[k] = t0r + t2r;
            bi[k] = t0i + t2i;
            br[m + k] = t1r + t3i; /* t1 - i t3 */
            bi[m + k] = t1i - t3r;
            br[2 * m + k] = t0r - t2r;
            bi[2 * m + k] = t0i - t2i;
            br[3 * m + k] = t1r - t3i; /* t1 + i t3 */
            bi[3 * m + k] = t1i + t3r;
        }
    }
}

static void stage_radix5(const nxe_fft_stage *st, int32_t n, const float *xr, const float *xi,
                         float *yr, float *yi)
{
    const int32_t m = st->span, count = n / (m * 5), stride = n / 5;
    const float *w = st->twiddle;
    /* cos and sin of 2 pi / 5 and 4 pi / 5 */
    const float c1 = 0.30901699437494742410f, c2 = -0.80901699437494742410f;
    const float s1 = 0.95105651629515357212f, s2 = 0.58778525229247312917f;
    for (int32_t j = 0; j < count; j++) {
        const float *ar = xr + (size_t)j * m, *ai = xi + (size_t)j * m;
        float *br = yr + (size_t)j * m * 5, *bi = yi + (size_t)j * m * 5;
        for (int32_t k = 0; k < m; k++) {
            float a[5][2];
            a[0][0] = ar[k];
            a[0][1] = ai[k];
            for (int32_t q = 1; q < 5; q++) {
                float vr = ar[q * stride + k], vi = ai[q * stride + k];
                float tr = w[(q - 1) * 2 * m + k], ti = w[(q - 1) * 2 * m + m + k];
                a[q][0] = vr * tr - vi * ti;
                a[q][1] = vr * ti + vi * tr;
            }
            float t1r = a[1][0] + a[4][0], t1i = a[1][1] + a[4][1];
            float t2r = a[2][0] + a[3][0], t2i = a[2][1] + a[3][1];
            float d1r = a[1][0] - a[4][0], d1i = a[1][1] - a[4][1];
            float d2r = a[2][0] - a[3][0], d2i = a[2][1] - a[3][1];
            float m1r = a[0][0] + c1 * t1r + c2 * t2r, m1i = a[0][1] + c1 * t1i + c2 * t2i;
            float m2r = a[0][0] + c2 * t1r + c1 * t2r, m2i = a[0][1] + c2 * t1i + c1 * t2i;
            /* -i u for u = s1 d1 + s2 d2 (bins 1, 4) and u = s2 d1 - s1 d2 (bins 2, 3) */
            float u1r = s1 * d1r + s2 * d2r, u1i = s1 * d1i + s2 * d2i;
            float u2r = s2 * d1r - s1 * d2r, u2i = s2 * d1i - s1 * d2i;
            br[k] = a[0][0] + t1r + t2r;
            bi[k] = a[0][1] + t1i + t2i;
            br[m + k] = m1r + u1i;
            bi[m + k] = m1i - u1r;
            br[4 * m + k] = m1r - u1i;
            bi[4 * m + k] = m1i + u1r;
            br[2 * m + k] = m2r + u2i;
            bi[2 * m + k] = m2i - u2r;
            br[3 * m + k] = m2r - u2i;
            bi[3 * m + k] = m2i + u2r;
        }
    }
}

/* Any other prime p: the p-point DFT directly, with the roots of unity stored after the
 * stage's twiddles; scratch holds the p twiddled inputs. */
static void stage_generic(const nxe_fft_stage *st, int32_t n, const float *xr, const float *xi,
                          float *yr, float *yi, float *scratch)
{
    const int32_t m = st->span, p = st->radix, count = n / (m * p), stride = n / p;
    const float *w = st->twiddle, *root_r = w + 2 * (size_t)(p - 1) * m, *root_i = root_r + p;
    float *sr = scratch, *si = scratch + p;
    for (int32_t j = 0; j < count; j++) {
        const float *ar = xr + (size_t)j * m, *ai = xi + (size_t)j * m;
        float *br = yr + (size_t)j * m * p, *bi = yi + (size_t)j * m * p;
        for (int32_t k = 0; k < m; k++) {
            sr[0] = ar[k];
            si[0] = ai[k];
            for (int32_t q = 1; q < p; q++) {
                float vr = ar[(size_t)q * stride + k], vi = ai[(size_t)q * stride + k];
                float tr = w[(size_t)(q - 1) * 2 * m + k], ti = w[(size_t)(q - 1) * 2 * m + m + k];
                sr[q] = vr * tr - vi * ti;
                si[q] = vr * ti + vi * tr;
            }
            for (int32_t r = 0; r < p; r++) {
                float accr = 0.0f, acci = 0.0f;
                int32_t index = 0; /* q * r mod p, stepped */
                for (int32_t q = 0; q < p; q++) {
                    accr += sr[q] * root_r[index] - si[q] * root_i[index];
                    acci += sr[q] * root_i[index] + si[q] * root_r[index];
                    index += r;
                    if (index >= p)
                        index -= p;
                }
                br[(size_t)r * m + k] = accr;
                bi[(size_t)r * m + k] = acci;
            }
        }
    }
}

/* The complex transform of (re, im) in the first half of the work area; returns the array
 * pair holding the result (real parts, imaginary at + size). */
static float *complex_transform(nxe_real_fft *fft)
{
    const int32_t n = fft->size;
    float *x = fft->work, *y = fft->work + 2 * (size_t)n;
    for (int32_t s = 0; s < fft->num_stages; s++) {
        const nxe_fft_stage *st = &fft->stages[s];
        switch (st->radix) {
        case 2: stage_radix2(st, n, x, x + n, y, y + n); break;
        case 3: stage_radix3(st, n, x, x + n, y, y + n); break;
        case 4: stage_radix4(st, n, x, x + n, y, y + n); break;
        case 5: stage_radix5(st, n, x, x + n, y, y + n); break;
        default: stage_generic(st, n, x, x + n, y, y + n, fft->generic); break;
        }
        float *swap = x;
        x = y;
        y = swap;
    }
    return x;
}

void nxe_real_fft_power(nxe_real_fft *fft, const float *frame, float *power, int64_t stride)
{
    const int32_t n = fft->size;
    const float *window = fft->window;
    float *re = fft->work, *im = fft->work + n;
    if (fft->n_fft % 2 != 0) {
        for (int32_t j = 0; j < n; j++) {
            re[j] = frame[j] * window[j];
            im[j] = 0.0f;
        }
        const float *z = complex_transform(fft);
        for (int32_t k = 0; k < fft->num_bins; k++)
            power[k * stride] = z[k] * z[k] + z[n + k] * z[n + k];
        return;
    }
    for (int32_t j = 0; j < n; j++) {
        re[j] = frame[2 * j] * window[2 * j];
        im[j] = frame[2 * j + 1] * window[2 * j + 1];
    }
    const float *zr = complex_transform(fft), *zi = zr + n;
    /* X[k] = E[k] + W^k O[k], E = (Z[k] + conj Z[n - k]) / 2, O = -i (Z[k] - conj Z[n - k]) / 2,
     * Z[n] = Z[0]: bins 0 and n are the sum and difference of Z[0]'s parts. */
    float dc = zr[0] + zi[0], nyquist = zr[0] - zi[0];
    power[0] = dc * dc;
    power[n * stride] = nyquist * nyquist;
    const float *wr = fft->split_twiddle, *wi = wr + fft->num_bins;
    for (int32_t k = 1; k < n; k++) {
        float ar = zr[k], ai = zi[k], br = zr[n - k], bi = -zi[n - k];
        float er = 0.5f * (ar + br), ei = 0.5f * (ai + bi);
        float dr = 0.5f * (ar - br), di = 0.5f * (ai - bi);
        float or_ = di, oi = -dr;
        float xr = er + wr[k] * or_ - wi[k] * oi;
        float xi = ei + wr[k] * oi + wi[k] * or_;
        power[k * stride] = xr * xr + xi * xi;
    }
}
