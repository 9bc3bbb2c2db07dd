/* fft.h — the real FFT behind the audio frontend: a plan (factors, twiddles, Hann window)
 * made once per call of the frontend, then power spectra of windowed frames, NXE_FFT_LANES
 * frames at a time. Mixed radix (2, 3, 4, 5, and a direct DFT for any other prime factor) in
 * Stockham order over split real and imaginary arrays whose innermost dimension is the frame:
 * every butterfly runs on NXE_FFT_LANES contiguous floats, which the compiler vectorizes.
 * Internal. */
#ifndef NXE_AUDIO_FFT_H
#define NXE_AUDIO_FFT_H

#include <stdint.h>

#include "core/core.h"

/* Frames transformed together: the innermost dimension of the work arrays. */
#define NXE_FFT_LANES 8

/* Most factors a length can have (2^16 has 16). */
#define NXE_FFT_MAX_STAGES 32

typedef struct nxe_fft_stage {
    int32_t radix;  /* p */
    int32_t span;   /* m: the sub-transform length before this stage */
    float *twiddle; /* [radix - 1][span] real then imaginary parts: W_{m p}^{q k} */
} nxe_fft_stage;

typedef struct nxe_real_fft {
    int32_t n_fft;    /* real samples per frame */
    int32_t size;     /* complex transform length: n_fft / 2 when even, n_fft when odd */
    int32_t num_bins; /* n_fft / 2 + 1 */
    int32_t num_stages;
    nxe_fft_stage stages[NXE_FFT_MAX_STAGES];
    int32_t max_generic_radix; /* largest factor without a butterfly of its own, 0 if none */
    float *window;             /* [n_fft] periodic Hann */
    float *split_twiddle;      /* [2][num_bins] e^{-2 pi i k / n_fft}, even n_fft only */
    float *work;    /* 4 * size * NXE_FFT_LANES floats: two complex arrays [size][lanes] */
    float *generic; /* 2 * max_generic_radix * NXE_FFT_LANES floats of butterfly scratch */
    void *memory;   /* the one block all the arrays above live in */
} nxe_real_fft;

/* Builds the plan for frames of n_fft samples (2 <= n_fft <= NXE_AUDIO_MAX_N_FFT).
 * NXE_ERROR_OUT_OF_MEMORY; the plan is then empty (releasing it is still safe). */
nxe_status nxe_real_fft_init(nxe_real_fft *fft, int32_t n_fft);
void nxe_real_fft_release(nxe_real_fft *fft);

/* For each lane l, |X_l[k]|^2 for k in [0, num_bins) of the DFT of frames[l][j] * window[j],
 * written to power[k * stride + l]. */
void nxe_real_fft_power(nxe_real_fft *fft, const float *const frames[NXE_FFT_LANES], float *power,
                        int64_t stride);

#endif
