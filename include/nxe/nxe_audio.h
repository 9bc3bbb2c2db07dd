/* nxe_audio.h — the audio frontend of libnxe: the log-mel spectrogram speech models read
 * (Whisper's: a periodic Hann window, a real FFT per frame, a mel filter bank, log10 and
 * Whisper's scaling), computed from mono float samples. Decoding files and resampling are the
 * caller's (the Python package does both). Plain C99; parses with pycparser after `cc -E`.
 * Link with -lnxe.
 *
 *   // 30 s of 16 kHz audio as Whisper's encoder wants it: 3000 frames of 80 mel bins
 *   nxe_mel_spec spec = {sizeof(nxe_mel_spec), 400, 160, 80, filters};  // filters [80][201]
 *   float max_value;
 *   if (nxe_audio_log10_mel(&spec, pcm, n, 0, 3000, mel, &max_value) != NXE_OK)
 *       puts(nxe_last_error());
 *   nxe_audio_whisper_scale(mel, 80 * 3000, max_value);
 *
 * Conventions are nxe.h's: every call that can fail returns an nxe_status and leaves a message
 * for nxe_last_error() on the calling thread. The functions keep no state: any number of
 * threads may call them at once. Each declaration names the API version (nxe.h's) that added
 * it.
 */
#ifndef NXE_NXE_AUDIO_H
#define NXE_NXE_AUDIO_H

#include "nxe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most samples of one FFT frame, and most mel bins. Since 0.9. */
#define NXE_AUDIO_MAX_N_FFT 65536
#define NXE_AUDIO_MAX_MELS 4096

/* The frames and mel bank of a spectrogram. Since 0.9. */
typedef struct nxe_mel_spec {
    uint32_t struct_size; /* sizeof(nxe_mel_spec) */
    int32_t n_fft;        /* samples per frame, 2 .. NXE_AUDIO_MAX_N_FFT (Whisper: 400) */
    int32_t hop_length;   /* samples between frame centres, 1 .. n_fft (Whisper: 160) */
    int32_t n_mels;       /* mel bins, 1 .. NXE_AUDIO_MAX_MELS (Whisper-base: 80) */
    const float *filters; /* [n_mels][n_fft / 2 + 1], row-major, borrowed for the call */
} nxe_mel_spec;

/* log10(max(mel power, 1e-10)) of frames [first_frame, first_frame + num_frames) of `samples`
 * (num_samples floats; NULL only when num_samples is 0), read as Whisper reads a signal padded
 * with zeros at its end: frame f is centred on sample f * hop_length and weighted by a
 * periodic Hann window of n_fft samples; samples past the end are 0 and samples before the
 * start mirror the first ones (reflect padding: x[-i] = x[i]). The mel power of bin m is
 * sum_k filters[m][k] * |X_f[k]|^2 over the n_fft / 2 + 1 bins of the frame's real DFT X_f.
 * `out` holds [n_mels][num_frames] floats, row-major (NULL only when num_frames is 0).
 * `*max_out` (max_out may be NULL) gets the largest value written, -10 (the floor) when
 * num_frames is 0.
 * Frames of one long signal may be computed in windows: each frame depends only on the samples
 * around its centre, so the windows' values equal the whole signal's.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL spec, filters, samples or out where values are needed; a
 * short struct_size; n_fft, hop_length or n_mels out of range; a negative count or frame; a
 * frame range or an output size that overflows; a sample read by a frame that is NaN or
 * infinite: the message gives its index), NXE_ERROR_OUT_OF_MEMORY (the FFT tables and a few
 * frames of scratch); `out` is then untouched and *max_out 0. Since 0.9. */
NXE_API nxe_status nxe_audio_log10_mel(const nxe_mel_spec *spec, const float *samples,
                                       int64_t num_samples, int64_t first_frame, int64_t num_frames,
                                       float *out, float *max_out);

/* Whisper's scaling of log10 mel values, in place: x = (max(x, max_value - 8) + 4) / 4, with
 * max_value the largest value of the whole signal (nxe_audio_log10_mel's *max_out, or the
 * largest of several windows'). NXE_ERROR_INVALID_ARGUMENT (values NULL with count > 0, a
 * negative count, a NaN or infinite max_value); the values are then untouched. Since 0.9. */
NXE_API nxe_status nxe_audio_whisper_scale(float *values, int64_t count, float max_value);

#ifdef __cplusplus
}
#endif

#endif /* NXE_NXE_AUDIO_H */
