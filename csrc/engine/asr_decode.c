/* asr_decode.c — Whisper's transcription loop for one request of the kind "asr", as
 * openai-whisper's transcribe() and DecodingTask run it, advanced one unit of work at a time
 * so that the worker can interleave the requests of a batch:
 *
 *   window   the log-mel of frames [seek, seek + 3000) (Whisper's whole-signal maximum, the
 *            frames past the audio zero), the encoder once (cross-attention keys and values
 *            of every decoder layer), language detection on the first window when asked;
 *   attempt  one decode at one temperature: the prompt (<|startofprev|> and the last 223
 *            tokens of the text so far) and the SOT sequence prefilled in two multi-token
 *            decoder runs (the first ends at <|startoftranscript|>, whose logits give the
 *            no-speech probability), the cache row copied to every beam or sample;
 *   step     the logit filters (blank, suppressed tokens, timestamp rules), the choice of the
 *            next tokens (greedy, sampling, or beam search with its cache rows reordered by
 *            copying), and one decoder run for the new tokens, whose keys and values are
 *            written into the cache slots of their positions.
 * An attempt that fails the compression-ratio or log-probability test is retried at the next
 * temperature; a window judged silent is skipped; segments come from timestamp pairs. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/asr_internal.h"
#include "nxe/nxe_audio.h"

/* Decoded tokens per attempt: Whisper's sample_len (n_text_ctx / 2). */
#define MASKED (-1e9f)
/* Mel frames per encoder output position (3000 / 1500) and seconds per timestamp token. */
#define INPUT_STRIDE 2
#define MAX_INITIAL_TIMESTAMP 50 /* 1.0 s / 0.02 s */

enum phase { PHASE_WINDOW = 0, PHASE_ATTEMPT = 1, PHASE_STEP = 2, PHASE_DONE = 3 };
enum mode { MODE_GREEDY = 0, MODE_SAMPLE = 1, MODE_BEAM = 2 };

typedef struct candidate {
    int32_t *tokens; /* sampled tokens, without the final <|endoftext|> */
    int32_t length;
    double score; /* sum of log-probabilities */
} candidate;

typedef struct buffer {
    char *data;
    size_t length, capacity;
} buffer;

struct asr_job {
    const float *pcm; /* the request's input: valid for the batch */
    int64_t samples;
    asr_options opt;
    int32_t layers, ctx, state, vocab;
    int32_t heads, head_dim; /* the caches' layout: per row, keys [heads][head_dim][ctx] and
                                values [heads][ctx][head_dim] */
    int64_t content_frames, seek, segment_size;
    float mel_max;
    bool mel_max_known;
    float *mel;   /* [n_mels][n_frames] */
    float *cross; /* 2 * layers buffers of n_audio_ctx * state: keys [heads][head_dim][n_audio_ctx],
                         values [heads][n_audio_ctx][head_dim] */
    int32_t language; /* index into the model's languages; -1 until known */
    int32_t phase;
    /* All tokens so far (the initial prompt first), and where the prompt starts. */
    int32_t *history;
    int32_t history_length, history_capacity, prompt_reset_since;
    buffer text, segments;
    int32_t num_segments;
    /* The attempt. */
    int32_t temperature_index;
    double temperature;
    int32_t mode, rows, max_rows;
    float *cache, *spare; /* 2 * layers buffers of max_rows rows of ctx * state (heads) */
    int32_t *seq;         /* [max_rows][ctx + 1]: each row's tokens */
    int32_t *new_seq;
    int32_t seq_length, sample_begin, sot_index, filled, sampled;
    double *sum_logprobs;
    float *logits; /* [max_rows][vocab] */
    float *scratch;
    float *step_kv; /* 2 * layers outputs of [rows][tokens][state] */
    size_t step_kv_floats;
    float no_speech_prob;
    candidate *finished;
    int32_t num_finished, max_candidates;
    uint64_t rng;
    /* The attempt's result. */
    int32_t *result;
    int32_t result_length;
    double result_sum, avg_logprob, compression_ratio;
    /* Seconds spent on the current window, for the debug log. */
    double window_s, prefill_s, step_s;
    int32_t steps, attempts;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static nxe_status oom(void)
{
    return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
}

static nxe_status append(buffer *b, const char *text, size_t length)
{
    if (b->length + length + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 256;
        while (capacity < b->length + length + 1)
            capacity *= 2;
        char *grown = nxe_alloc(capacity);
        if (!grown)
            return oom();
        if (b->data)
            memcpy(grown, b->data, b->length);
        nxe_free(b->data);
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, text, length);
    b->length += length;
    b->data[b->length] = '\0';
    return NXE_OK;
}

static nxe_status appendf(buffer *b, const char *format, double value)
{
    char text[64];
    int n = isfinite(value) ? snprintf(text, sizeof text, format, value)
                            : snprintf(text, sizeof text, "null");
    return append(b, text, (size_t)n);
}

/* A JSON string of `length` bytes of UTF-8. */
static nxe_status append_json_string(buffer *b, const char *text, size_t length)
{
    nxe_status status = append(b, "\"", 1);
    for (size_t i = 0; status == NXE_OK && i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        char escaped[8];
        if (c == '"' || c == '\\') {
            escaped[0] = '\\';
            escaped[1] = (char)c;
            status = append(b, escaped, 2);
        } else if (c < 0x20) {
            snprintf(escaped, sizeof escaped, "\\u%04x", c);
            status = append(b, escaped, 6);
        } else {
            status = append(b, (const char *)&c, 1);
        }
    }
    return status == NXE_OK ? append(b, "\"", 1) : status;
}

static nxe_status push_history(asr_job *job, const int32_t *tokens, int32_t count)
{
    if (job->history_length + count > job->history_capacity) {
        int32_t capacity = job->history_capacity ? job->history_capacity : 256;
        while (capacity < job->history_length + count)
            capacity *= 2;
        int32_t *grown = nxe_alloc(sizeof *grown * (size_t)capacity);
        if (!grown)
            return oom();
        if (job->history)
            memcpy(grown, job->history, sizeof *grown * (size_t)job->history_length);
        nxe_free(job->history);
        job->history = grown;
        job->history_capacity = capacity;
    }
    memcpy(job->history + job->history_length, tokens, sizeof *tokens * (size_t)count);
    job->history_length += count;
    return NXE_OK;
}

/* splitmix64: the seeded generator of sampling. */
static double next_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* log(sum(exp(x))) over x[0 .. n); -inf when every x is -inf. */
static double log_sum_exp(const float *x, int32_t n)
{
    float top = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        top = x[i] > top ? x[i] : top;
    if (top == -INFINITY)
        return -INFINITY;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)x[i] - top);
    return top + log(sum);
}

static void fill(float *x, int32_t from, int32_t to, float value)
{
    for (int32_t i = from; i < to; i++)
        x[i] = value;
}

/* UTF-8 of `count` tokens, the timestamps and specials left out (those at or above
 * <|endoftext|>), into b (replacing its content). */
static nxe_status decode_text(const asr_model *model, const int32_t *tokens, int32_t count,
                              buffer *b)
{
    int32_t *text_tokens = nxe_alloc(sizeof *text_tokens * (size_t)(count + 1));
    if (!text_tokens)
        return oom();
    int32_t n = 0;
    for (int32_t i = 0; i < count; i++)
        if (tokens[i] < model->eot)
            text_tokens[n++] = tokens[i];
    b->length = 0;
    size_t length = 0;
    nxe_status status = append(b, "", 0);
    while (status == NXE_OK) {
        status = nxe_tokenizer_decode(model->tokenizer, text_tokens, n, NXE_DECODE_SKIP_SPECIAL,
                                      b->data, b->capacity - 1, &length);
        if (status != NXE_ERROR_BUFFER_TOO_SMALL)
            break;
        char *grown = nxe_alloc(length + 1);
        if (!grown) {
            status = oom();
            break;
        }
        nxe_free(b->data);
        b->data = grown;
        b->capacity = length + 1;
        status = NXE_OK;
    }
    nxe_free(text_tokens);
    if (status != NXE_OK) {
        nxe_error_prefix("asr: decoding tokens: ");
        return status;
    }
    b->length = length;
    b->data[length] = '\0';
    return NXE_OK;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- the model's executables ------------------------------------------------------------- */

static nxe_tensor_desc make_desc(void *data, int32_t code, int32_t ndim, const int64_t *shape)
{
    nxe_tensor_desc desc = {data, 0, ndim, code, 32, 0, {0}};
    size_t count = 1;
    for (int32_t d = 0; d < ndim; d++) {
        desc.shape[d] = shape[d];
        count *= (size_t)shape[d];
    }
    desc.data_size = count * 4;
    return desc;
}

static size_t layer_floats(const asr_job *job)
{
    return (size_t)job->max_rows * (size_t)job->ctx * (size_t)job->state;
}

/* Runs the decoder on `rows` rows of `tokens` new tokens each (row r's cache is row r of the
 * job's cache), leaving the logits of each row's last token in job->logits and the new keys
 * and values written into the cache slots of their positions (pad tokens, position -1, are
 * not written). */
static nxe_status run_decoder(asr_model *model, asr_job *job, int32_t rows, int32_t tokens,
                              const int32_t *ids, const int32_t *positions, const float *mask)
{
    asr_variant *variant = NULL;
    nxe_status status = asr_decoder_variant(model, rows, tokens, &variant);
    if (status != NXE_OK)
        return status;
    const int32_t layers = job->layers;
    const int64_t c = job->ctx, d = job->state;
    int32_t *safe_positions = nxe_alloc(sizeof *safe_positions * (size_t)rows * (size_t)tokens);
    size_t kv_floats = (size_t)rows * (size_t)tokens * (size_t)d;
    if (!safe_positions)
        return oom();
    if (job->step_kv_floats < kv_floats * 2 * (size_t)layers) {
        nxe_free(job->step_kv);
        job->step_kv_floats = kv_floats * 2 * (size_t)layers;
        job->step_kv = nxe_alloc(sizeof *job->step_kv * job->step_kv_floats);
        if (!job->step_kv) {
            job->step_kv_floats = 0;
            nxe_free(safe_positions);
            return oom();
        }
    }
    for (int32_t i = 0; i < rows * tokens; i++)
        safe_positions[i] = positions[i] < 0 ? 0 : positions[i];
    nxe_tensor_desc in[4 + 4 * ASR_MAX_LAYERS], out[1 + 2 * ASR_MAX_LAYERS];
    nxe_tensor_desc ours_in[4 + 4 * ASR_MAX_LAYERS], ours_out[1 + 2 * ASR_MAX_LAYERS];
    const int64_t token_shape[2] = {rows, tokens};
    const int64_t mask_shape[4] = {rows, 1, tokens, c + tokens};
    const int64_t h = job->heads, hd = job->head_dim, a = model->n_audio_ctx;
    const int64_t key_shape[4] = {rows, h, hd, c}, value_shape[4] = {rows, h, c, hd};
    const int64_t cross_key_shape[4] = {1, h, hd, a}, cross_value_shape[4] = {1, h, a, hd};
    const int64_t logits_shape[2] = {rows, job->vocab};
    const int64_t kv_shape[3] = {rows, tokens, d};
    const size_t cross_floats = (size_t)model->n_audio_ctx * (size_t)d;
    ours_in[0] = make_desc((void *)ids, NXE_DL_INT, 2, token_shape);
    ours_in[1] = make_desc(safe_positions, NXE_DL_INT, 2, token_shape);
    ours_in[2] = make_desc((void *)mask, NXE_DL_FLOAT, 4, mask_shape);
    for (int32_t l = 0; l < layers; l++) {
        ours_in[3 + 4 * l] =
            make_desc(job->cache + (size_t)(2 * l) * layer_floats(job), NXE_DL_FLOAT, 4, key_shape);
        ours_in[4 + 4 * l] = make_desc(job->cache + (size_t)(2 * l + 1) * layer_floats(job),
                                       NXE_DL_FLOAT, 4, value_shape);
        ours_in[5 + 4 * l] = make_desc(job->cross + (size_t)(2 * l) * cross_floats, NXE_DL_FLOAT, 4,
                                       cross_key_shape);
        ours_in[6 + 4 * l] = make_desc(job->cross + (size_t)(2 * l + 1) * cross_floats,
                                       NXE_DL_FLOAT, 4, cross_value_shape);
    }
    ours_out[0] = make_desc(job->logits, NXE_DL_FLOAT, 2, logits_shape);
    for (int32_t b = 0; b < 2 * layers; b++)
        ours_out[1 + b] =
            make_desc(job->step_kv + (size_t)b * kv_floats, NXE_DL_FLOAT, 3, kv_shape);
    const int32_t num_in = 3 + 4 * layers, num_out = 1 + 2 * layers;
    for (int32_t i = 0; i < num_in; i++)
        in[i] = ours_in[variant->input_slot[i]];
    for (int32_t i = 0; i < num_out; i++)
        out[i] = ours_out[variant->output_slot[i]];
    status = nxe_executable_run(variant->exe, in, num_in, out, num_out);
    if (status != NXE_OK) {
        nxe_free(safe_positions);
        nxe_error_prefix("asr: the decoder: ");
        return status;
    }
    /* Slot p of a row: column p of each head's [head_dim][ctx] keys, row p of its
     * [ctx][head_dim] values. */
    for (int32_t b = 0; b < 2 * layers; b++) {
        float *cache = job->cache + (size_t)b * layer_floats(job);
        const float *kv = job->step_kv + (size_t)b * kv_floats;
        for (int32_t r = 0; r < rows; r++)
            for (int32_t j = 0; j < tokens; j++) {
                int32_t p = positions[r * tokens + j];
                if (p < 0 || p >= c)
                    continue;
                float *row = cache + (size_t)r * (size_t)c * (size_t)d;
                const float *src = kv + ((size_t)r * (size_t)tokens + (size_t)j) * (size_t)d;
                for (int64_t head = 0; head < h; head++) {
                    const float *part = src + head * hd;
                    if (b % 2 == 0) {
                        float *keys = row + (size_t)(head * hd * c) + (size_t)p;
                        for (int64_t e = 0; e < hd; e++)
                            keys[e * c] = part[e];
                    } else {
                        memcpy(row + (size_t)((head * c + p) * hd), part,
                               sizeof(float) * (size_t)hd);
                    }
                }
            }
    }
    nxe_free(safe_positions);
    return NXE_OK;
}

/* Tokens of a multi-token run, padded at the front to one of a few lengths. */
static int32_t prefill_bucket(int32_t count)
{
    static const int32_t buckets[] = {1, 4, 64, 256};
    for (size_t i = 0; i < sizeof buckets / sizeof *buckets; i++)
        if (count <= buckets[i])
            return buckets[i];
    return count;
}

/* Runs `count` tokens on row 0 at positions job->filled.., padded at the front (pads attend
 * only to themselves and are seen by nothing); the logits of the last are in row 0. */
static nxe_status prefill(asr_model *model, asr_job *job, const int32_t *ids, int32_t count)
{
    const int32_t tokens = prefill_bucket(count), pad = tokens - count;
    const int32_t c = job->ctx, width = c + tokens, start = job->filled;
    int32_t *row_ids = nxe_alloc(sizeof *row_ids * (size_t)tokens * 2);
    float *mask = nxe_alloc(sizeof *mask * (size_t)tokens * (size_t)width);
    if (!row_ids || !mask) {
        nxe_free(row_ids);
        nxe_free(mask);
        return oom();
    }
    int32_t *positions = row_ids + tokens;
    for (int32_t j = 0; j < tokens; j++) {
        bool real = j >= pad;
        row_ids[j] = real ? ids[j - pad] : model->eot;
        positions[j] = real ? start + j - pad : -1;
        float *m = mask + (size_t)j * (size_t)width;
        fill(m, 0, width, MASKED);
        if (real) {
            fill(m, 0, start, 0.0f);
            fill(m, c + pad, c + j + 1, 0.0f);
        } else {
            m[c + j] = 0.0f;
        }
    }
    nxe_status status = run_decoder(model, job, 1, tokens, row_ids, positions, mask);
    nxe_free(row_ids);
    nxe_free(mask);
    if (status == NXE_OK)
        job->filled = start + count;
    return status;
}

/* Runs every row's last token (position seq_length - 1). */
static nxe_status step(asr_model *model, asr_job *job)
{
    const int32_t rows = job->rows, c = job->ctx, width = c + 1, stride = c + 1;
    const int32_t position = job->seq_length - 1;
    int32_t *ids = nxe_alloc(sizeof *ids * (size_t)rows * 2);
    float *mask = nxe_alloc(sizeof *mask * (size_t)rows * (size_t)width);
    if (!ids || !mask) {
        nxe_free(ids);
        nxe_free(mask);
        return oom();
    }
    int32_t *positions = ids + rows;
    for (int32_t r = 0; r < rows; r++) {
        ids[r] = job->seq[(size_t)r * (size_t)stride + (size_t)position];
        positions[r] = position;
        float *m = mask + (size_t)r * (size_t)width;
        fill(m, 0, position, 0.0f);
        fill(m, position, c, MASKED);
        m[c] = 0.0f;
    }
    nxe_status status = run_decoder(model, job, rows, 1, ids, positions, mask);
    nxe_free(ids);
    nxe_free(mask);
    if (status == NXE_OK)
        job->filled = position + 1;
    return status;
}

static nxe_status run_encoder(asr_model *model, asr_job *job)
{

    const int64_t mel_shape[3] = {1, model->n_mels, model->n_frames};
    const int64_t h = job->heads, hd = job->head_dim, a = model->n_audio_ctx;
    const int64_t key_shape[4] = {1, h, hd, a}, value_shape[4] = {1, h, a, hd};
    const size_t cross_floats = (size_t)model->n_audio_ctx * (size_t)job->state;
    nxe_tensor_desc in = make_desc(job->mel, NXE_DL_FLOAT, 3, mel_shape);
    nxe_tensor_desc out[2 * ASR_MAX_LAYERS];
    for (int32_t i = 0; i < 2 * job->layers; i++) {
        int32_t slot = model->encoder_output_slot[i];
        out[i] = make_desc(job->cross + (size_t)slot * cross_floats, NXE_DL_FLOAT, 4,
                           slot % 2 == 0 ? key_shape : value_shape);
    }
    nxe_status status = nxe_executable_run(model->encoder, &in, 1, out, 2 * job->layers);
    if (status != NXE_OK)
        nxe_error_prefix("asr: the encoder: ");
    return status;
}

/* ---- log-mel ------------------------------------------------------------------------------ */

static nxe_mel_spec mel_spec(const asr_model *model)
{
    nxe_mel_spec spec = {sizeof spec, model->n_fft, model->hop_length, model->n_mels,
                         model->filters};
    return spec;
}

/* Frames of Whisper's padded signal: (samples + 30 s of zeros) / hop. */
static int64_t total_frames(const asr_model *model, int64_t samples)
{
    return (samples + (int64_t)model->n_frames * model->hop_length) / model->hop_length;
}

/* The maximum of log10 mel over every frame of the padded signal (Whisper's normalization). */
static nxe_status whole_max(const asr_model *model, asr_job *job)
{
    nxe_mel_spec spec = mel_spec(model);
    const int64_t frames = total_frames(model, job->samples);
    /* Frames whose window lies past the signal are all zero: log10(1e-10) = -10. */
    int64_t live = (job->samples + model->n_fft / 2) / model->hop_length + 1;
    if (live > frames)
        live = frames;
    float top = live < frames ? -10.0f : -INFINITY;
    for (int64_t first = 0; first < live; first += model->n_frames) {
        int64_t count = live - first < model->n_frames ? live - first : model->n_frames;
        float chunk_max = -INFINITY;
        nxe_status status =
            nxe_audio_log10_mel(&spec, job->pcm, job->samples, first, count, job->mel, &chunk_max);
        if (status != NXE_OK) {
            nxe_error_prefix("asr: log-mel: ");
            return status;
        }
        top = chunk_max > top ? chunk_max : top;
    }
    job->mel_max = top;
    return NXE_OK;
}

/* job->mel = Whisper's scaled log-mel of frames [first, first + n_frames); columns from `keep`
 * on are zero (pad_or_trim of a shorter segment). */
static nxe_status window_mel(const asr_model *model, asr_job *job, int64_t first, int64_t keep)
{
    nxe_mel_spec spec = mel_spec(model);
    const int64_t n = model->n_frames;
    nxe_status status =
        nxe_audio_log10_mel(&spec, job->pcm, job->samples, first, n, job->mel, NULL);
    if (status == NXE_OK)
        status = nxe_audio_whisper_scale(job->mel, (int64_t)model->n_mels * n, job->mel_max);
    if (status != NXE_OK) {
        nxe_error_prefix("asr: log-mel: ");
        return status;
    }
    for (int32_t m = 0; m < model->n_mels; m++)
        fill(job->mel + (size_t)m * (size_t)n, (int32_t)keep, (int32_t)n, 0.0f);
    return NXE_OK;
}

/* ---- the job ------------------------------------------------------------------------------ */

void asr_job_release(asr_job *job)
{
    if (!job)
        return;
    nxe_free(job->opt.prompt);
    nxe_free(job->mel);
    nxe_free(job->cross);
    nxe_free(job->history);
    nxe_free(job->text.data);
    nxe_free(job->segments.data);
    nxe_free(job->cache);
    nxe_free(job->spare);
    nxe_free(job->seq);
    nxe_free(job->new_seq);
    nxe_free(job->sum_logprobs);
    nxe_free(job->logits);
    nxe_free(job->scratch);
    nxe_free(job->step_kv);
    if (job->finished)
        for (int32_t i = 0; i < job->num_finished; i++)
            nxe_free(job->finished[i].tokens);
    nxe_free(job->finished);
    nxe_free(job->result);
    nxe_free(job);
}

nxe_status asr_job_create(const asr_model *model, const float *pcm, int64_t samples,
                          const asr_options *options, asr_job **out)
{
    *out = NULL;
    asr_job *job = nxe_alloc_zeroed(sizeof *job);
    if (!job)
        return oom();
    job->pcm = pcm;
    job->samples = samples;
    job->opt = *options;
    job->opt.prompt = NULL;
    job->layers = model->n_text_layer;
    job->ctx = model->n_text_ctx;
    job->state = model->n_text_state;
    job->heads = model->n_text_head;
    job->head_dim = model->n_text_state / model->n_text_head;
    job->vocab = model->n_vocab;
    job->content_frames = samples / model->hop_length;
    job->language = options->language;
    job->rng = options->seed;
    int32_t rows = options->beam_size > options->best_of ? options->beam_size : options->best_of;
    job->max_rows = rows < 1 ? 1 : rows;
    const size_t cache_floats = layer_floats(job) * 2 * (size_t)job->layers;
    const size_t cross_floats =
        (size_t)model->n_audio_ctx * (size_t)job->state * 2 * (size_t)job->layers;
    const size_t seq_ints = (size_t)job->max_rows * (size_t)(job->ctx + 1);
    nxe_status status = NXE_OK;
    if (options->num_prompt > 0)
        status = push_history(job, options->prompt, options->num_prompt);
    if (job->content_frames > 0 && status == NXE_OK) {
        job->mel = nxe_alloc(sizeof *job->mel * (size_t)model->n_mels * (size_t)model->n_frames);
        job->cross = nxe_alloc(sizeof *job->cross * cross_floats);
        job->cache = nxe_alloc_zeroed(sizeof *job->cache * cache_floats);
        job->spare =
            job->max_rows > 1 ? nxe_alloc_zeroed(sizeof *job->spare * cache_floats) : nxe_alloc(64);
        job->seq = nxe_alloc(sizeof *job->seq * seq_ints);
        job->new_seq = nxe_alloc(sizeof *job->new_seq * seq_ints);
        job->sum_logprobs = nxe_alloc(sizeof *job->sum_logprobs * (size_t)job->max_rows * 4);
        job->logits = nxe_alloc(sizeof *job->logits * (size_t)job->max_rows * (size_t)job->vocab);
        job->scratch = nxe_alloc(sizeof *job->scratch * (size_t)job->vocab);
        job->finished = nxe_alloc_zeroed(sizeof *job->finished * (size_t)(job->max_rows * 4 + 8));
        job->result = nxe_alloc(sizeof *job->result * (size_t)(job->ctx + 1));
        if (!job->mel || !job->cross || !job->cache || !job->spare || !job->seq || !job->new_seq ||
            !job->sum_logprobs || !job->logits || !job->scratch || !job->finished || !job->result)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                               "asr: out of memory for a request's decoder state (%zu MiB)",
                               (cache_floats * 2 + cross_floats) * 4 >> 20);
    }
    if (status == NXE_OK)
        status = append(&job->text, "", 0);
    if (status == NXE_OK)
        status = append(&job->segments, "[", 1);
    if (status != NXE_OK) {
        asr_job_release(job);
        return status;
    }
    job->phase = job->content_frames > 0 ? PHASE_WINDOW : PHASE_DONE;
    *out = job;
    return NXE_OK;
}

double asr_job_progress(const asr_job *job)
{
    if (job->phase == PHASE_DONE || job->content_frames <= 0)
        return 1.0;
    double f = (double)job->seek / (double)job->content_frames;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* Language detection: one decoder run on <|startoftranscript|>, the most likely language
 * token. The encoder output must be in job->cross. */
static nxe_status detect_language(asr_model *model, asr_job *job)
{
    job->filled = 0;
    nxe_status status = prefill(model, job, &model->sot, 1);
    if (status != NXE_OK)
        return status;
    int32_t best = 0;
    for (int32_t i = 1; i < model->num_languages; i++)
        if (job->logits[model->languages[i].id] > job->logits[model->languages[best].id])
            best = i;
    job->language = best;
    return NXE_OK;
}

/* Whether the window's samples all stay below the silence threshold (digital silence or a
 * faint hiss, on which Whisper's own no-speech rule may still let " you" through). */
static bool window_silent(const asr_model *model, const asr_job *job)
{
    if (isnan(job->opt.silence_threshold_db))
        return false;
    const double limit = pow(10.0, job->opt.silence_threshold_db / 20.0);
    int64_t from = job->seek * model->hop_length;
    int64_t to = (job->seek + job->segment_size) * model->hop_length;
    if (to > job->samples)
        to = job->samples;
    for (int64_t i = from; i < to; i++)
        if (fabs((double)job->pcm[i]) >= limit)
            return false;
    return true;
}

static nxe_status start_window(asr_model *model, asr_job *job)
{
    nxe_status status = NXE_OK;
    job->segment_size = job->content_frames - job->seek < model->n_frames
                            ? job->content_frames - job->seek
                            : model->n_frames;
    if (window_silent(model, job)) {
        job->seek += job->segment_size; /* skipped as a no-speech window is */
        return NXE_OK;
    }
    if (!job->mel_max_known) {
        status = whole_max(model, job);
        job->mel_max_known = true;
    }
    if (status == NXE_OK && job->language < 0) {
        if (!model->multilingual) {
            job->language = 0;
            for (int32_t i = 0; i < model->num_languages; i++)
                if (strcmp(model->languages[i].code, "en") == 0)
                    job->language = i;
        } else {
            /* Whisper detects on the first 30 s of the padded log-mel (not zeroed past the
             * audio); that is the first window when the audio fills it. */
            status = window_mel(model, job, 0, model->n_frames);
            if (status == NXE_OK)
                status = run_encoder(model, job);
            if (status == NXE_OK)
                status = detect_language(model, job);
            if (status == NXE_OK && job->segment_size == model->n_frames && job->seek == 0) {
                job->temperature_index = 0;
                job->phase = PHASE_ATTEMPT;
                return NXE_OK;
            }
        }
    }
    if (status == NXE_OK)
        status = window_mel(model, job, job->seek, job->segment_size);
    if (status == NXE_OK)
        status = run_encoder(model, job);
    job->temperature_index = 0;
    job->phase = PHASE_ATTEMPT;
    return status;
}

static int32_t *row_seq(asr_job *job, int32_t r)
{
    return job->seq + (size_t)r * (size_t)(job->ctx + 1);
}

/* Copies the cache slots [0, filled) of row `from` into row `to` (of cache `dst`): the first
 * `filled` columns of every key row [head][e][:] and the first `filled` rows of every head's
 * values. */
static void copy_row(asr_job *job, const float *src, float *dst, int32_t from, int32_t to)
{
    const size_t ctx = (size_t)job->ctx, hd = (size_t)job->head_dim;
    const size_t row = ctx * (size_t)job->state, filled = (size_t)job->filled;
    const size_t lines = (size_t)job->heads * hd; /* key rows of ctx slots in one cache row */
    for (int32_t b = 0; b < 2 * job->layers; b++) {
        const size_t base = (size_t)b * layer_floats(job);
        const float *from_row = src + base + (size_t)from * row;
        float *to_row = dst + base + (size_t)to * row;
        if (b % 2 == 0) {
            for (size_t line = 0; line < lines; line++)
                memcpy(to_row + line * ctx, from_row + line * ctx, sizeof(float) * filled);
        } else {
            for (size_t head = 0; head < (size_t)job->heads; head++)
                memcpy(to_row + head * ctx * hd, from_row + head * ctx * hd,
                       sizeof(float) * filled * hd);
        }
    }
}

static void clear_finished(asr_job *job)
{
    for (int32_t i = 0; i < job->num_finished; i++)
        nxe_free(job->finished[i].tokens);
    job->num_finished = 0;
}

static nxe_status start_attempt(asr_model *model, asr_job *job)
{
    const asr_options *opt = &job->opt;
    job->temperature = opt->temperatures[job->temperature_index];
    if (job->temperature > 0) {
        job->mode = MODE_SAMPLE;
        job->rows = opt->best_of;
    } else if (opt->beam_size > 1) {
        job->mode = MODE_BEAM;
        job->rows = opt->beam_size;
    } else {
        job->mode = MODE_GREEDY;
        job->rows = 1;
    }
    clear_finished(job);
    double patience = job->mode == MODE_BEAM ? opt->patience : 1.0;
    job->max_candidates = (int32_t)lround(job->rows * patience);
    if (job->max_candidates < 1)
        job->max_candidates = 1;
    if (job->max_candidates > job->max_rows * 4 + 8)
        job->max_candidates = job->max_rows * 4 + 8;
    /* The prefix: the prompt, then the SOT sequence. */
    int32_t *seq = row_seq(job, 0);
    int32_t length = 0;
    const int32_t prompt_from = job->prompt_reset_since;
    int32_t prompt = job->history_length - prompt_from;
    const int32_t max_prompt = job->ctx / 2 - 1;
    if (prompt > 0) {
        if (prompt > max_prompt)
            prompt = max_prompt;
        seq[length++] = model->sot_prev;
        memcpy(seq + length, job->history + job->history_length - prompt,
               sizeof *seq * (size_t)prompt);
        length += prompt;
    }
    job->sot_index = length;
    seq[length++] = model->sot;
    if (model->multilingual) {
        seq[length++] = model->languages[job->language].id;
        seq[length++] = opt->translate ? model->translate : model->transcribe;
    }
    if (opt->without_timestamps)
        seq[length++] = model->no_timestamps;
    job->seq_length = length;
    job->sample_begin = length;
    job->sampled = 0;
    job->filled = 0;
    nxe_status status = prefill(model, job, seq, job->sot_index + 1);
    if (status != NXE_OK)
        return status;
    /* No-speech: the probability of <|nospeech|> after <|startoftranscript|>. */
    double lse = log_sum_exp(job->logits, job->vocab);
    job->no_speech_prob = (float)exp((double)job->logits[model->no_speech] - lse);
    if (length > job->sot_index + 1)
        status = prefill(model, job, seq + job->sot_index + 1, length - job->sot_index - 1);
    if (status != NXE_OK)
        return status;
    for (int32_t r = 1; r < job->rows; r++) {
        copy_row(job, job->cache, job->cache, 0, r);
        memcpy(row_seq(job, r), seq, sizeof *seq * (size_t)length);
        memcpy(job->logits + (size_t)r * (size_t)job->vocab, job->logits,
               sizeof *job->logits * (size_t)job->vocab);
    }
    for (int32_t r = 0; r < job->rows; r++)
        job->sum_logprobs[r] = 0.0;
    job->phase = PHASE_STEP;
    return NXE_OK;
}

/* Whisper's logit filters on one row: SuppressBlank, SuppressTokens, ApplyTimestampRules. */
static void apply_filters(const asr_model *model, asr_job *job, int32_t r, float *logits)
{
    const int32_t *seq = row_seq(job, r);
    const int32_t begin = job->sample_begin, n = job->seq_length - begin;
    const int32_t tb = model->timestamp_begin, vocab = job->vocab;
    if (n == 0)
        for (int32_t i = 0; i < model->num_blank; i++)
            logits[model->blank[i]] = -INFINITY;
    for (int32_t i = 0; i < model->num_suppress; i++)
        logits[model->suppress[i]] = -INFINITY;
    if (job->opt.without_timestamps)
        return;
    logits[model->no_timestamps] = -INFINITY;
    const int32_t *sampled = seq + begin;
    bool last = n >= 1 && sampled[n - 1] >= tb;
    bool penultimate = n < 2 || sampled[n - 2] >= tb;
    if (last) {
        if (penultimate)
            fill(logits, tb, vocab, -INFINITY);
        else
            fill(logits, 0, model->eot, -INFINITY);
    }
    int32_t last_timestamp = -1;
    for (int32_t i = n - 1; i >= 0 && last_timestamp < 0; i--)
        if (sampled[i] >= tb)
            last_timestamp = sampled[i];
    if (last_timestamp >= 0) {
        int32_t limit = last && !penultimate ? last_timestamp : last_timestamp + 1;
        fill(logits, tb, limit < vocab ? limit : vocab, -INFINITY);
    }
    if (n == 0) {
        fill(logits, 0, tb, -INFINITY);
        int32_t allowed = tb + MAX_INITIAL_TIMESTAMP;
        if (allowed + 1 < vocab)
            fill(logits, allowed + 1, vocab, -INFINITY);
    }
    /* Sample a timestamp when their total probability beats every text token's. */
    double lse = log_sum_exp(logits, vocab);
    double timestamp = log_sum_exp(logits + tb, vocab - tb) - lse;
    float text_max = -INFINITY;
    for (int32_t i = 0; i < tb; i++)
        text_max = logits[i] > text_max ? logits[i] : text_max;
    if (timestamp > (double)text_max - lse)
        fill(logits, 0, tb, -INFINITY);
}

static nxe_status add_finished(asr_job *job, const int32_t *sampled, int32_t length, double score)
{
    candidate *c = &job->finished[job->num_finished];
    c->tokens = nxe_alloc(sizeof *c->tokens * (size_t)(length + 1));
    if (!c->tokens)
        return oom();
    memcpy(c->tokens, sampled, sizeof *sampled * (size_t)length);
    c->length = length;
    c->score = score;
    job->num_finished++;
    return NXE_OK;
}

typedef struct beam_choice {
    double score;
    int32_t source;
    int32_t token;
    int32_t order; /* insertion order, for a stable sort */
} beam_choice;

static int compare_choice(const void *a, const void *b)
{
    const beam_choice *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->order - y->order;
}

/* Whisper's BeamSearchDecoder.update: the beam_size best continuations of all rows (top
 * beam_size + 1 tokens of each), those ending in <|endoftext|> set aside as finished. */
static nxe_status beam_update(const asr_model *model, asr_job *job, int32_t *completed)
{
    const int32_t rows = job->rows, k = rows + 1, vocab = job->vocab;
    beam_choice choices[ASR_MAX_ROWS * (ASR_MAX_ROWS + 1)];
    int32_t count = 0;
    for (int32_t r = 0; r < rows; r++) {
        float *logits = job->logits + (size_t)r * (size_t)vocab;
        double lse = log_sum_exp(logits, vocab);
        /* top k by logit (ties: the lower id first) */
        int32_t top[ASR_MAX_ROWS + 1];
        int32_t found = 0;
        for (int32_t i = 0; i < vocab; i++) {
            if (found == k && logits[i] <= logits[top[k - 1]])
                continue;
            int32_t at = found < k ? found++ : k - 1;
            while (at > 0 && logits[top[at - 1]] < logits[i]) {
                top[at] = top[at - 1];
                at--;
            }
            top[at] = i;
        }
        const int32_t *prefix = row_seq(job, r);
        for (int32_t t = 0; t < found; t++) {
            double score = job->sum_logprobs[r] + ((double)logits[top[t]] - lse);
            /* The same sequence from an identical row replaces the earlier entry's score and
             * source but keeps its place (a dict in Whisper). */
            int32_t same = -1;
            for (int32_t e = 0; e < count && same < 0; e++)
                if (choices[e].token == top[t] &&
                    memcmp(row_seq(job, choices[e].source), prefix,
                           sizeof *prefix * (size_t)job->seq_length) == 0)
                    same = e;
            if (same >= 0) {
                choices[same].score = score;
                choices[same].source = r;
            } else {
                choices[count] = (beam_choice){score, r, top[t], count};
                count++;
            }
        }
    }
    qsort(choices, (size_t)count, sizeof *choices, compare_choice);
    int32_t saved = 0;
    int32_t sources[ASR_MAX_ROWS];
    double scores[ASR_MAX_ROWS];
    const int32_t stride = job->ctx + 1;
    const int32_t sampled_length = job->seq_length - job->sample_begin;
    nxe_status status = NXE_OK;
    for (int32_t i = 0; i < count && saved < rows && status == NXE_OK; i++) {
        const beam_choice *c = &choices[i];
        if (c->token == model->eot) {
            /* Newly finished, in score order, while the candidate list has room. */
            if (job->num_finished < job->max_candidates)
                status = add_finished(job, row_seq(job, c->source) + job->sample_begin,
                                      sampled_length, c->score);
            continue;
        }
        int32_t *dst = job->new_seq + (size_t)saved * (size_t)stride;
        memcpy(dst, row_seq(job, c->source), sizeof *dst * (size_t)job->seq_length);
        dst[job->seq_length] = c->token;
        sources[saved] = c->source;
        scores[saved] = c->score;
        saved++;
    }
    if (status != NXE_OK)
        return status;
    /* Rows left short (all candidates exhausted) repeat the last one. */
    for (; saved < rows && saved > 0; saved++) {
        memcpy(job->new_seq + (size_t)saved * (size_t)stride,
               job->new_seq + (size_t)(saved - 1) * (size_t)stride,
               sizeof(int32_t) * (size_t)(job->seq_length + 1));
        sources[saved] = sources[saved - 1];
        scores[saved] = -INFINITY;
    }
    int32_t *swap = job->seq;
    job->seq = job->new_seq;
    job->new_seq = swap;
    job->seq_length++;
    for (int32_t r = 0; r < rows; r++)
        job->sum_logprobs[r] = scores[r];
    /* The cache rows follow their sources. */
    bool identity = true;
    for (int32_t r = 0; r < rows; r++)
        identity = identity && sources[r] == r;
    if (!identity) {
        for (int32_t r = 0; r < rows; r++)
            copy_row(job, job->cache, job->spare, sources[r], r);
        float *t = job->cache;
        job->cache = job->spare;
        job->spare = t;
    }
    *completed = job->num_finished >= job->max_candidates;
    return NXE_OK;
}

/* Greedy (temperature 0) or sampling: one token per row; rows that ended keep <|endoftext|>. */
static void sample_update(const asr_model *model, asr_job *job, int32_t *completed)
{
    const int32_t vocab = job->vocab, stride = job->ctx + 1;
    bool all_ended = true;
    for (int32_t r = 0; r < job->rows; r++) {
        int32_t *seq = job->seq + (size_t)r * (size_t)stride;
        const float *logits = job->logits + (size_t)r * (size_t)vocab;
        int32_t next = model->eot;
        bool ended = job->seq_length > job->sample_begin && seq[job->seq_length - 1] == model->eot;
        if (!ended) {
            if (job->temperature <= 0) {
                next = 0;
                for (int32_t i = 1; i < vocab; i++)
                    if (logits[i] > logits[next])
                        next = i;
            } else {
                float top = -INFINITY;
                for (int32_t i = 0; i < vocab; i++)
                    top = logits[i] > top ? logits[i] : top;
                double total = 0.0;
                for (int32_t i = 0; i < vocab; i++) {
                    job->scratch[i] = (float)exp(((double)logits[i] - top) / job->temperature);
                    total += job->scratch[i];
                }
                double u = next_uniform(&job->rng) * total, acc = 0.0;
                next = -1;
                for (int32_t i = 0; i < vocab && next < 0; i++) {
                    acc += job->scratch[i];
                    if (u < acc && job->scratch[i] > 0)
                        next = i;
                }
                if (next < 0) /* rounding at the top end */
                    for (int32_t i = vocab - 1; i >= 0 && next < 0; i--)
                        if (job->scratch[i] > 0)
                            next = i;
            }
            job->sum_logprobs[r] += (double)logits[next] - log_sum_exp(logits, vocab);
        }
        seq[job->seq_length] = next;
        all_ended = all_ended && next == model->eot;
    }
    job->seq_length++;
    *completed = all_ended;
}

/* MaximumLikelihoodRanker: the best of `count` candidates by sum / length (no penalty) or
 * sum / ((5 + length) / 6) ** penalty. */
static int32_t rank(const asr_job *job, const candidate *candidates, int32_t count)
{
    int32_t best = 0;
    double best_score = -INFINITY;
    for (int32_t i = 0; i < count; i++) {
        double length = candidates[i].length;
        double penalty = isnan(job->opt.length_penalty)
                             ? length
                             : pow((5.0 + length) / 6.0, job->opt.length_penalty);
        double score = candidates[i].score / (penalty > 0 ? penalty : 1.0);
        if (i == 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

/* The attempt's result: the chosen tokens, their log-probabilities and text statistics. */
static nxe_status finish_attempt(const asr_model *model, asr_job *job)
{
    const int32_t stride = job->ctx + 1;
    nxe_status status = NXE_OK;
    if (job->mode == MODE_BEAM) {
        if (job->num_finished < job->rows) {
            /* Not enough finished: the live beams, best first, end here. */
            int32_t order[ASR_MAX_ROWS];
            for (int32_t r = 0; r < job->rows; r++)
                order[r] = r;
            for (int32_t i = 1; i < job->rows; i++)
                for (int32_t j = i;
                     j > 0 && job->sum_logprobs[order[j]] > job->sum_logprobs[order[j - 1]]; j--) {
                    int32_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
            for (int32_t i = 0; i < job->rows && job->num_finished < job->rows && status == NXE_OK;
                 i++)
                status =
                    add_finished(job, row_seq(job, order[i]) + job->sample_begin,
                                 job->seq_length - job->sample_begin, job->sum_logprobs[order[i]]);
        }
    } else {
        clear_finished(job);
        for (int32_t r = 0; r < job->rows && status == NXE_OK; r++) {
            const int32_t *seq = job->seq + (size_t)r * (size_t)stride + job->sample_begin;
            int32_t length = 0;
            while (length < job->seq_length - job->sample_begin && seq[length] != model->eot)
                length++;
            status = add_finished(job, seq, length, job->sum_logprobs[r]);
        }
    }
    if (status != NXE_OK)
        return status;
    const candidate *best = &job->finished[rank(job, job->finished, job->num_finished)];
    memcpy(job->result, best->tokens, sizeof *job->result * (size_t)best->length);
    job->result_length = best->length;
    job->result_sum = best->score;
    job->avg_logprob = best->score / (best->length + 1);
    buffer text = {0};
    status = decode_text(model, job->result, job->result_length, &text);
    if (status == NXE_OK) {
        size_t from = 0, to = text.length;
        while (from < to && is_space(text.data[from]))
            from++;
        while (to > from && is_space(text.data[to - 1]))
            to--;
        size_t compressed = asr_deflate_size((const uint8_t *)text.data + from, to - from);
        job->compression_ratio = (double)(to - from) / (double)compressed;
    }
    nxe_free(text.data);
    return status;
}

static nxe_status add_segment(const asr_model *model, asr_job *job, double start, double end,
                              const int32_t *tokens, int32_t count)
{
    buffer text = {0};
    nxe_status status = decode_text(model, tokens, count, &text);
    if (status != NXE_OK)
        return status;
    bool blank = true;
    for (size_t i = 0; i < text.length && blank; i++)
        blank = is_space(text.data[i]);
    if (start == end || blank) {
        text.length = 0;
        count = 0;
    }
    buffer *s = &job->segments;
    char head[96];
    snprintf(head, sizeof head,
             "%s{\"id\": %d, \"seek\": %lld, \"start\": ", job->num_segments ? ", " : "",
             job->num_segments, (long long)job->seek);
    status = append(s, head, strlen(head));
    if (status == NXE_OK)
        status = appendf(s, "%.3f", start);
    if (status == NXE_OK)
        status = append(s, ", \"end\": ", 9);
    if (status == NXE_OK)
        status = appendf(s, "%.3f", end);
    if (status == NXE_OK)
        status = append(s, ", \"text\": ", 10);
    if (status == NXE_OK)
        status = append_json_string(s, text.data ? text.data : "", text.length);
    if (status == NXE_OK)
        status = append(s, ", \"tokens\": [", 13);
    for (int32_t i = 0; i < count && status == NXE_OK; i++) {
        char number[16];
        int n = snprintf(number, sizeof number, "%s%d", i ? ", " : "", tokens[i]);
        status = append(s, number, (size_t)n);
    }
    if (status == NXE_OK)
        status = append(s, "], \"temperature\": ", 18);
    if (status == NXE_OK)
        status = appendf(s, "%.2f", job->temperature);
    if (status == NXE_OK)
        status = append(s, ", \"avg_logprob\": ", 17);
    if (status == NXE_OK)
        status = appendf(s, "%.9g", job->avg_logprob);
    if (status == NXE_OK)
        status = append(s, ", \"compression_ratio\": ", 23);
    if (status == NXE_OK)
        status = appendf(s, "%.9g", job->compression_ratio);
    if (status == NXE_OK)
        status = append(s, ", \"no_speech_prob\": ", 20);
    if (status == NXE_OK)
        status = appendf(s, "%.9g", job->no_speech_prob);
    if (status == NXE_OK)
        status = append(s, "}", 1);
    if (status == NXE_OK && text.length)
        status = append(&job->text, text.data, text.length);
    if (status == NXE_OK && count)
        status = push_history(job, tokens, count);
    nxe_free(text.data);
    job->num_segments++;
    return status;
}

/* transcribe()'s handling of a window's result: skip silence, cut segments at timestamp pairs,
 * move seek. */
static nxe_status finish_window(const asr_model *model, asr_job *job)
{
    const asr_options *opt = &job->opt;
    bool skip = !isnan(opt->no_speech_threshold) && job->no_speech_prob > opt->no_speech_threshold;
    if (!isnan(opt->logprob_threshold) && job->avg_logprob > opt->logprob_threshold)
        skip = false;
    const int64_t segment_size = job->segment_size;
    job->phase = PHASE_WINDOW;
    if (skip) {
        job->seek += segment_size;
        return NXE_OK;
    }
    const double hop_s = (double)model->hop_length / model->sample_rate;
    const double precision = INPUT_STRIDE * hop_s;
    const double offset = (double)job->seek * hop_s;
    const int32_t *tokens = job->result, n = job->result_length, tb = model->timestamp_begin;
    bool single_ending = n >= 2 && tokens[n - 2] < tb && tokens[n - 1] >= tb;
    int32_t slices[450], num_slices = 0;
    for (int32_t i = 1; i < n; i++)
        if (tokens[i - 1] >= tb && tokens[i] >= tb)
            slices[num_slices++] = i;
    nxe_status status = NXE_OK;
    int64_t advance = segment_size;
    if (num_slices > 0) {
        if (single_ending)
            slices[num_slices++] = n;
        int32_t last = 0;
        for (int32_t i = 0; i < num_slices && status == NXE_OK; i++) {
            const int32_t *slice = tokens + last;
            int32_t length = slices[i] - last;
            double start = offset + (slice[0] - tb) * precision;
            double end = offset + (slice[length - 1] - tb) * precision;
            status = add_segment(model, job, start, end, slice, length);
            last = slices[i];
        }
        if (!single_ending)
            advance = (int64_t)(tokens[last - 1] - tb) * INPUT_STRIDE;
    } else {
        double duration = (double)segment_size * hop_s;
        int32_t last_timestamp = -1;
        for (int32_t i = 0; i < n; i++)
            if (tokens[i] >= tb)
                last_timestamp = tokens[i];
        if (last_timestamp >= 0 && last_timestamp != tb)
            duration = (last_timestamp - tb) * precision;
        status = add_segment(model, job, offset, offset + duration, tokens, n);
    }
    if (!opt->condition_on_previous_text || job->temperature > 0.5)
        job->prompt_reset_since = job->history_length;
    job->seek += advance > 0 ? advance : segment_size;
    return status;
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static nxe_status step_job(asr_model *model, asr_job *job, int32_t *done);

nxe_status asr_job_step(asr_model *model, asr_job *job, int32_t *done)
{
    const double start = seconds_now();
    const int32_t phase = job->phase;
    const int64_t seek = job->seek;
    nxe_status status = step_job(model, job, done);
    const double spent = seconds_now() - start;
    if (phase == PHASE_WINDOW) {
        job->window_s = spent;
        job->prefill_s = job->step_s = 0;
        job->steps = job->attempts = 0;
    } else if (phase == PHASE_ATTEMPT) {
        job->prefill_s += spent;
        job->attempts++;
    } else if (phase == PHASE_STEP) {
        job->step_s += spent;
        job->steps++;
    }
    /* A window done: what it took (the log at debug level). */
    if (status == NXE_OK && phase == PHASE_STEP && job->phase == PHASE_WINDOW)
        nxe_log(NXE_LOG_DEBUG,
                "asr: window at %.2f s: log-mel and encoder %.1f ms, %d attempt(s) prefilled in "
                "%.1f ms, %d steps of %d row(s), %.2f ms each",
                (double)seek * model->hop_length / model->sample_rate, job->window_s * 1e3,
                job->attempts, job->prefill_s * 1e3, job->steps, job->rows,
                job->steps ? job->step_s * 1e3 / job->steps : 0.0);
    return status;
}

static nxe_status step_job(asr_model *model, asr_job *job, int32_t *done)
{
    nxe_status status = NXE_OK;
    *done = 0;
    if (job->phase == PHASE_WINDOW) {
        if (job->seek >= job->content_frames) {
            job->phase = PHASE_DONE;
        } else {
            return start_window(model, job);
        }
    } else if (job->phase == PHASE_ATTEMPT) {
        return start_attempt(model, job);
    } else if (job->phase == PHASE_STEP) {
        for (int32_t r = 0; r < job->rows; r++)
            apply_filters(model, job, r, job->logits + (size_t)r * (size_t)job->vocab);
        int32_t completed = 0;
        if (job->mode == MODE_BEAM)
            status = beam_update(model, job, &completed);
        else
            sample_update(model, job, &completed);
        if (status != NXE_OK)
            return status;
        job->sampled++;
        if (!completed && job->sampled < job->ctx / 2 && job->seq_length <= job->ctx)
            return step(model, job);
        status = finish_attempt(model, job);
        if (status != NXE_OK)
            return status;
        const asr_options *opt = &job->opt;
        bool fallback =
            (!isnan(opt->compression_ratio_threshold) &&
             job->compression_ratio > opt->compression_ratio_threshold) ||
            (!isnan(opt->logprob_threshold) && job->avg_logprob < opt->logprob_threshold);
        if (!isnan(opt->no_speech_threshold) && job->no_speech_prob > opt->no_speech_threshold &&
            !isnan(opt->logprob_threshold) && job->avg_logprob < opt->logprob_threshold)
            fallback = false; /* silence: no point in trying harder */
        if (fallback && job->temperature_index + 1 < opt->num_temperatures) {
            job->temperature_index++;
            job->phase = PHASE_ATTEMPT;
            return NXE_OK;
        }
        return finish_window(model, job);
    }
    *done = job->phase == PHASE_DONE;
    return status;
}

nxe_status asr_job_finish(const asr_model *model, asr_job *job, nxe_engine_batch *batch,
                          int32_t request)
{
    nxe_status status = append(&job->segments, "]", 1);
    const char *language = job->language >= 0 ? model->languages[job->language].code : "";
    const int64_t text_length = (int64_t)job->text.length;
    const int64_t language_length = (int64_t)strlen(language);
    const int64_t segments_length = (int64_t)job->segments.length, one = 1;
    nxe_tensor_desc text, code, segments, duration;
    if (status == NXE_OK)
        status = nxe_engine_batch_add_output(batch, request, "text", NXE_DTYPE_U8, 1, &text_length,
                                             &text);
    if (status == NXE_OK)
        status = nxe_engine_batch_add_output(batch, request, "language", NXE_DTYPE_U8, 1,
                                             &language_length, &code);
    if (status == NXE_OK)
        status = nxe_engine_batch_add_output(batch, request, "segments", NXE_DTYPE_U8, 1,
                                             &segments_length, &segments);
    if (status == NXE_OK)
        status = nxe_engine_batch_add_output(batch, request, "duration", NXE_DTYPE_F64, 1, &one,
                                             &duration);
    if (status != NXE_OK)
        return status;
    if (text_length)
        memcpy(text.data, job->text.data, (size_t)text_length);
    if (language_length)
        memcpy(code.data, language, (size_t)language_length);
    memcpy(segments.data, job->segments.data, (size_t)segments_length);
    *(double *)duration.data = (double)job->samples / model->sample_rate;
    return NXE_OK;
}
