/* asr_internal.h — what the files of the engine kind "asr" (asr_kind.c: loading, options,
 * outputs; asr_decode.c: Whisper's transcription loop; asr_compress.c: the compression ratio)
 * share. Internal. */
#ifndef NXE_ASR_INTERNAL_H
#define NXE_ASR_INTERNAL_H

#include "core/core.h"
#include "engine/engine_internal.h"
#include "nxe/nxe_tokenizer.h"

/* Decoder executables kept per model, one per (rows, tokens) shape. */
#define ASR_VARIANTS 8
/* Whisper-base's sizes bound these; larger models raise them. */
#define ASR_MAX_LAYERS 64
#define ASR_MAX_LANGUAGES 256
#define ASR_MAX_TEMPERATURES 16
#define ASR_MAX_ROWS 32

typedef struct asr_variant {
    int32_t rows; /* 0: an unused slot */
    int32_t tokens;
    nxe_executable *exe;
    uint64_t last_used;
    int32_t input_slot[4 + 4 * ASR_MAX_LAYERS];  /* the executable's input i is ours [slot] */
    int32_t output_slot[1 + 2 * ASR_MAX_LAYERS]; /* and its output i ours [slot] */
} asr_variant;

typedef struct asr_language {
    char code[16];
    int32_t id;
} asr_language;

typedef struct asr_model {
    nxe_model *file; /* kept open (mapped): every executable compiles from it */
    uint64_t file_bytes;
    nxe_tokenizer *tokenizer;
    uint64_t tokenizer_bytes;
    /* config */
    int32_t n_mels, n_audio_ctx, n_audio_state, n_text_ctx, n_text_state, n_text_layer, n_vocab;
    int32_t n_text_head; /* the caches and cross keys/values are in heads of n_text_state / it */
    /* audio */
    int32_t sample_rate, n_fft, hop_length, n_frames;
    float *filters; /* [n_mels][n_fft / 2 + 1] */
    /* tokens */
    int32_t eot, sot, sot_prev, sot_lm, no_speech, no_timestamps, timestamp_begin, transcribe,
        translate;
    asr_language languages[ASR_MAX_LANGUAGES];
    int32_t num_languages;
    int32_t *suppress; /* suppress_tokens plus the specials Whisper adds, sorted */
    int32_t num_suppress;
    int32_t *blank; /* suppress_blank: at the first sampled position */
    int32_t num_blank;
    int32_t multilingual;
    /* compilation */
    int32_t relax; /* -1 until set: the option, else on for a bf16 file */
    int32_t num_threads;
    nxe_executable *encoder;
    int32_t encoder_output_slot[2 * ASR_MAX_LAYERS]; /* cross key l: 2l, value: 2l + 1 */
    asr_variant variants[ASR_VARIANTS];
    uint64_t clock;
} asr_model;

/* A request's options, as the frontend reads them. */
typedef struct asr_options {
    int32_t language; /* index into model->languages, -1: detect */
    int32_t translate;
    int32_t *prompt; /* the initial prompt's tokens */
    int32_t num_prompt;
    double temperatures[ASR_MAX_TEMPERATURES];
    int32_t num_temperatures;
    int32_t beam_size;
    int32_t best_of;
    double length_penalty; /* NaN: none (Whisper's default: divide by the length) */
    double patience;
    double compression_ratio_threshold; /* NaN: none */
    double logprob_threshold;           /* NaN: none */
    double no_speech_threshold;         /* NaN: none */
    double silence_threshold_db;        /* NaN: none */
    int32_t condition_on_previous_text;
    int32_t without_timestamps;
    uint64_t seed;
} asr_options;

typedef struct asr_job asr_job; /* one request's transcription in progress (asr_decode.c) */

/* The executable for (rows, tokens) in *variant, compiled on first use (asr_kind.c). */
nxe_status asr_decoder_variant(asr_model *model, int32_t rows, int32_t tokens,
                               asr_variant **variant);

/* A request's transcription: created by the frontend, advanced by asr_job_step, its outputs
 * written by asr_job_finish. */
nxe_status asr_job_create(const asr_model *model, const float *pcm, int64_t samples,
                          const asr_options *options, asr_job **out);
void asr_job_release(asr_job *job);
/* Does the next unit of work (a window's encoder and prefill, or one decoder step); *done
 * becomes 1 when the transcription is complete. A failure fails this request only. */
nxe_status asr_job_step(asr_model *model, asr_job *job, int32_t *done);
/* The fraction of the audio done (0..1). */
double asr_job_progress(const asr_job *job);
/* Adds the outputs text, language, segments and duration to request `request`. */
nxe_status asr_job_finish(const asr_model *model, asr_job *job, nxe_engine_batch *batch,
                          int32_t request);

/* zlib.compress-like size of `size` bytes (header and checksum included): an estimate
 * (asr_compress.c). */
size_t asr_deflate_size(const uint8_t *data, size_t size);

#endif
