/* mel.c — nxe_audio.h: log-mel spectrogram frames and Whisper's scaling. Checks every argument
 * before writing anything, then works through blocks of frames: power spectra of a block,
 * stored bin-major, then each mel row's nonzero filter span applied across the block. */
#include <math.h>
#include <string.h>

#include "audio/fft.h"
#include "core/core.h"
#include "nxe/nxe_audio.h"

/* Frames per block: the power spectra of a block are [num_bins][FRAME_BLOCK] floats, so the mel
 * sums run across frames in vector-wide steps; the FFT fills them NXE_FFT_LANES at a time. */
#define FRAME_BLOCK 32
_Static_assert(FRAME_BLOCK % NXE_FFT_LANES == 0, "a block is whole groups of FFT lanes");

/* The value of a mel bin with no power: log10 of the floor Whisper clamps to. */
static float log10_floor(void)
{
    return log10f(1e-10f);
}

static nxe_status check_spec(const nxe_mel_spec *spec)
{
    if (!spec)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_audio_log10_mel: spec is NULL");
    if (spec->struct_size < sizeof(nxe_mel_spec))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: spec->struct_size is %u, sizeof(nxe_mel_spec) "
                         "is %zu",
                         spec->struct_size, sizeof(nxe_mel_spec));
    if (spec->n_fft < 2 || spec->n_fft > NXE_AUDIO_MAX_N_FFT)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: n_fft is %d, not in [2, %d]", spec->n_fft,
                         NXE_AUDIO_MAX_N_FFT);
    if (spec->hop_length < 1 || spec->hop_length > spec->n_fft)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: hop_length is %d, not in [1, n_fft = %d]",
                         spec->hop_length, spec->n_fft);
    if (spec->n_mels < 1 || spec->n_mels > NXE_AUDIO_MAX_MELS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: n_mels is %d, not in [1, %d]", spec->n_mels,
                         NXE_AUDIO_MAX_MELS);
    if (!spec->filters)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_audio_log10_mel: spec->filters is NULL");
    const int64_t num_bins = spec->n_fft / 2 + 1;
    for (int64_t i = 0; i < spec->n_mels * num_bins; i++) {
        if (!isfinite(spec->filters[i]))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "nxe_audio_log10_mel: filters[%lld][%lld] is not finite",
                             (long long)(i / num_bins), (long long)(i % num_bins));
    }
    return NXE_OK;
}

/* Counts, the frame range and the output size; then that every sample the frames read is
 * finite. */
static nxe_status check_frames(const nxe_mel_spec *spec, const float *samples, int64_t num_samples,
                               int64_t first_frame, int64_t num_frames, const float *out)
{
    if (num_samples < 0 || first_frame < 0 || num_frames < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: num_samples (%lld), first_frame (%lld) and "
                         "num_frames (%lld) must not be negative",
                         (long long)num_samples, (long long)first_frame, (long long)num_frames);
    if (!samples && num_samples > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: samples is NULL but num_samples is %lld",
                         (long long)num_samples);
    if (!out && num_frames > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: out is NULL but num_frames is %lld",
                         (long long)num_frames);
    int64_t end_frame, last_centre, last_end, values;
    if (!nxe_checked_add_i64(first_frame, num_frames, &end_frame) ||
        !nxe_checked_mul_i64(end_frame, spec->hop_length, &last_centre) ||
        !nxe_checked_add_i64(last_centre, spec->n_fft, &last_end))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: frames [%lld, %lld + %lld) at hop_length %d "
                         "overflow a sample index",
                         (long long)first_frame, (long long)first_frame, (long long)num_frames,
                         spec->hop_length);
    if (!nxe_checked_mul_i64(num_frames, spec->n_mels, &values) ||
        values > (int64_t)(SIZE_MAX / sizeof(float)))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_log10_mel: an output of %d x %lld floats overflows a size",
                         spec->n_mels, (long long)num_frames);
    if (num_frames == 0 || num_samples == 0)
        return NXE_OK;
    /* The frames read [first, end) of the padded signal; the part before 0 mirrors [1, -first]. */
    const int64_t pad = spec->n_fft / 2;
    int64_t first = first_frame * spec->hop_length - pad;
    int64_t end = (end_frame - 1) * spec->hop_length - pad + spec->n_fft;
    int64_t from = first < 0 ? 0 : first;
    int64_t to = end;
    if (first < 0 && 1 - first > to)
        to = 1 - first;
    if (to > num_samples)
        to = num_samples;
    for (int64_t i = from; i < to; i++) {
        if (!isfinite(samples[i]))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "nxe_audio_log10_mel: samples[%lld] is not finite", (long long)i);
    }
    return NXE_OK;
}

/* The first nonzero filter of each row and one past its last ([0, 0) for a row of zeros). */
static void filter_spans(const nxe_mel_spec *spec, int32_t num_bins, int32_t *spans)
{
    for (int32_t m = 0; m < spec->n_mels; m++) {
        const float *row = spec->filters + (size_t)m * num_bins;
        int32_t lo = 0, hi = num_bins;
        while (lo < num_bins && row[lo] == 0.0f)
            lo++;
        while (hi > lo && row[hi - 1] == 0.0f)
            hi--;
        spans[2 * m] = lo;
        spans[2 * m + 1] = hi;
    }
}

/* The n_fft samples of the frame that starts at `start` of the padded signal: a pointer into
 * `samples` when they lie inside it, else gathered into `frame` with the padding applied. */
static const float *frame_samples(const float *samples, int64_t num_samples, int64_t start,
                                  int32_t n_fft, float *frame)
{
    if (start >= 0 && start + n_fft <= num_samples)
        return samples + start;
    for (int32_t j = 0; j < n_fft; j++) {
        int64_t i = start + j;
        if (i < 0)
            i = -i;
        frame[j] = i < num_samples ? samples[i] : 0.0f;
    }
    return frame;
}

NXE_API nxe_status nxe_audio_log10_mel(const nxe_mel_spec *spec, const float *samples,
                                       int64_t num_samples, int64_t first_frame, int64_t num_frames,
                                       float *out, float *max_out)
{
    if (max_out)
        *max_out = 0.0f;
    nxe_status status = check_spec(spec);
    if (status == NXE_OK)
        status = check_frames(spec, samples, num_samples, first_frame, num_frames, out);
    if (status != NXE_OK)
        return status;
    const float floor_value = log10_floor();
    if (num_frames == 0) {
        if (max_out)
            *max_out = floor_value;
        return NXE_OK;
    }

    const int32_t n_fft = spec->n_fft, n_mels = spec->n_mels, num_bins = n_fft / 2 + 1;
    const int64_t pad = n_fft / 2;
    nxe_real_fft fft;
    status = nxe_real_fft_init(&fft, n_fft);
    if (status != NXE_OK)
        return status;
    /* Scratch: a gathered frame per lane, the block's power spectra, one row of sums, the
     * spans. */
    size_t scratch_floats =
        (size_t)n_fft * NXE_FFT_LANES + (size_t)num_bins * FRAME_BLOCK + FRAME_BLOCK;
    size_t scratch_bytes = scratch_floats * sizeof(float) + 2 * (size_t)n_mels * sizeof(int32_t);
    float *scratch = nxe_alloc_zeroed(scratch_bytes);
    if (!scratch) {
        nxe_real_fft_release(&fft);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "nxe_audio_log10_mel: no memory for %zu bytes of scratch", scratch_bytes);
    }
    float *gathered = scratch, *power = gathered + (size_t)n_fft * NXE_FFT_LANES;
    float *sums = power + (size_t)num_bins * FRAME_BLOCK;
    int32_t *spans = (int32_t *)(sums + FRAME_BLOCK);
    filter_spans(spec, num_bins, spans);

    float max_value = floor_value;
    for (int64_t block = 0; block < num_frames; block += FRAME_BLOCK) {
        const int32_t count =
            (int32_t)(num_frames - block < FRAME_BLOCK ? num_frames - block : FRAME_BLOCK);
        for (int32_t group = 0; group < count; group += NXE_FFT_LANES) {
            const float *frames[NXE_FFT_LANES];
            for (int32_t l = 0; l < NXE_FFT_LANES; l++) {
                /* Lanes past the last frame repeat the group's first; their sums are unused. */
                int64_t frame = first_frame + block + group + (group + l < count ? l : 0);
                frames[l] = frame_samples(samples, num_samples, frame * spec->hop_length - pad,
                                          n_fft, gathered + (size_t)l * n_fft);
            }
            nxe_real_fft_power(&fft, frames, power + group, FRAME_BLOCK);
        }
        for (int32_t m = 0; m < n_mels; m++) {
            const float *row = spec->filters + (size_t)m * num_bins;
            for (int32_t b = 0; b < FRAME_BLOCK; b++)
                sums[b] = 0.0f;
            for (int32_t k = spans[2 * m]; k < spans[2 * m + 1]; k++) {
                const float weight = row[k], *bin = power + (size_t)k * FRAME_BLOCK;
                for (int32_t b = 0; b < FRAME_BLOCK; b++)
                    sums[b] += weight * bin[b];
            }
            float *dst = out + (size_t)m * (size_t)num_frames + (size_t)block;
            for (int32_t b = 0; b < count; b++) {
                float value = log10f(sums[b] > 1e-10f ? sums[b] : 1e-10f);
                dst[b] = value;
                max_value = value > max_value ? value : max_value;
            }
        }
    }
    nxe_free(scratch);
    nxe_real_fft_release(&fft);
    if (max_out)
        *max_out = max_value;
    return NXE_OK;
}

NXE_API nxe_status nxe_audio_whisper_scale(float *values, int64_t count, float max_value)
{
    if (count < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_whisper_scale: count is %lld, negative", (long long)count);
    if (!values && count > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_whisper_scale: values is NULL but count is %lld",
                         (long long)count);
    if (!isfinite(max_value))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_audio_whisper_scale: max_value is not finite");
    const float least = max_value - 8.0f;
    for (int64_t i = 0; i < count; i++)
        values[i] = ((values[i] > least ? values[i] : least) + 4.0f) / 4.0f;
    return NXE_OK;
}
