/* asr_kind.c — the built-in engine kind "asr": a Whisper model baked into one .nxm (one graph
 * holding the encoder and the decoder step, the mel filter bank, the tokenizer and the special
 * token ids in its metadata), turning each request's 16 kHz PCM into text, its language and
 * timestamped segments.
 *
 * The pipeline of a batch:
 *   frontend  checks each request's input "pcm" (f32 [n]) and reads its options; a request
 *             with bad input fails alone;
 *   encoder   runs the requests together, interleaved: each keeps its own transcription
 *             (asr_decode.c: windows, attempts, beams, its own KV cache) and every round
 *             advances each live request by one unit of work (a window's encoder and prefill,
 *             or one decoder step), checking for cancellation between rounds; rows of
 *             different requests never share a run;
 *   head      adds the outputs "text", "language", "segments" (JSON) and "duration".
 * The encoder (the graph kept to the cross-attention keys and values) compiles at load; the
 * decoder compiles per (rows, tokens) shape on first use, a few kept, least recently used
 * dropped. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json.h"
#include "engine/asr_internal.h"

/* Mel frames per encoder position. */
#define INPUT_FRAMES_PER_CTX 2

/* Default temperatures of the fallback (transcribe()'s). */
static const double default_temperatures[] = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0};

typedef struct asr_item {
    int32_t ok;
    asr_job *job;
    int32_t done;
} asr_item;

typedef struct asr_state {
    int32_t count;
    asr_item *items;
} asr_state;

/* ---- load ---------------------------------------------------------------------------------- */

static void asr_unload(void *user_data, void *instance)
{
    (void)user_data;
    asr_model *model = instance;
    if (!model)
        return;
    for (int32_t v = 0; v < ASR_VARIANTS; v++)
        nxe_executable_release(model->variants[v].exe);
    nxe_executable_release(model->encoder);
    nxe_tokenizer_release(model->tokenizer);
    nxe_model_release(model->file);
    nxe_free(model->filters);
    nxe_free(model->suppress);
    nxe_free(model->blank);
    nxe_free(model);
}

static nxe_status metadata_int(const nxe_json_value *object, const char *where, const char *key,
                               long low, long high, int32_t *out)
{
    double number = 0;
    const nxe_json_value *v = nxe_json_get(object, key);
    if (!v || !nxe_json_number(v, &number) || number != floor(number) || number < (double)low ||
        number > (double)high)
        return nxe_error(NXE_ERROR_FORMAT,
                         "asr: the metadata's %s%s is %s, expected an integer from %ld to %ld",
                         where, key, v ? "not such a number" : "missing", low, high);
    *out = (int32_t)number;
    return NXE_OK;
}

static bool metadata_string_is(const nxe_json_value *object, const char *key, const char *want)
{
    const char *text = nxe_json_string(nxe_json_get(object, key), NULL);
    return text && strcmp(text, want) == 0;
}

/* An array of token ids (each below the vocabulary) into a new array. */
static nxe_status metadata_ids(const nxe_json_value *root, const char *key, int32_t vocab,
                               int32_t extra, int32_t **out, int32_t *count)
{
    const nxe_json_value *array = nxe_json_get(root, key);
    if (nxe_json_kind(array) != NXE_JSON_ARRAY)
        return nxe_error(NXE_ERROR_FORMAT, "asr: the metadata's %s is %s, expected an array", key,
                         array ? "not an array" : "missing");
    const int32_t n = nxe_json_count(array);
    *out = nxe_alloc(sizeof **out * (size_t)(n + extra + 1));
    if (!*out)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
    for (int32_t i = 0; i < n; i++) {
        double id = 0;
        if (!nxe_json_number(nxe_json_item(array, i), &id) || id != floor(id) || id < 0 ||
            id >= vocab)
            return nxe_error(NXE_ERROR_FORMAT,
                             "asr: the metadata's %s[%d] is not a token id below %d", key, i,
                             vocab);
        (*out)[i] = (int32_t)id;
    }
    *count = n;
    return NXE_OK;
}

static int compare_int(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static nxe_status read_tokens(asr_model *model, const nxe_json_value *root)
{
    const nxe_json_value *tokens = nxe_json_get(root, "tokens");
    const int32_t top = model->n_vocab - 1;
    struct {
        const char *key;
        int32_t *out;
    } ids[] = {{"eot", &model->eot},
               {"sot", &model->sot},
               {"sot_prev", &model->sot_prev},
               {"sot_lm", &model->sot_lm},
               {"no_speech", &model->no_speech},
               {"no_timestamps", &model->no_timestamps},
               {"timestamp_begin", &model->timestamp_begin},
               {"transcribe", &model->transcribe},
               {"translate", &model->translate}};
    if (nxe_json_kind(tokens) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT, "asr: the metadata has no tokens object");
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        nxe_status status = metadata_int(tokens, "tokens.", ids[i].key, 0, top, ids[i].out);
        if (status != NXE_OK)
            return status;
    }
    if (model->eot >= model->timestamp_begin)
        return nxe_error(NXE_ERROR_FORMAT,
                         "asr: the metadata's tokens.eot (%d) is not below timestamp_begin (%d)",
                         model->eot, model->timestamp_begin);
    const nxe_json_value *languages = nxe_json_get(root, "languages");
    const int32_t count = nxe_json_count(languages);
    if (nxe_json_kind(languages) != NXE_JSON_ARRAY || count < 1 || count > ASR_MAX_LANGUAGES)
        return nxe_error(NXE_ERROR_FORMAT,
                         "asr: the metadata's languages must be an array of 1 to %d [code, id] "
                         "pairs",
                         ASR_MAX_LANGUAGES);
    for (int32_t i = 0; i < count; i++) {
        const nxe_json_value *pair = nxe_json_item(languages, i);
        size_t length = 0;
        const char *code = nxe_json_string(nxe_json_item(pair, 0), &length);
        double id = 0;
        if (nxe_json_count(pair) != 2 || !code || length == 0 ||
            length >= sizeof model->languages[i].code || strlen(code) != length ||
            !nxe_json_number(nxe_json_item(pair, 1), &id) || id != floor(id) || id < 0 || id > top)
            return nxe_error(NXE_ERROR_FORMAT,
                             "asr: the metadata's languages[%d] is not a [code, token id] pair", i);
        memcpy(model->languages[i].code, code, length + 1);
        model->languages[i].id = (int32_t)id;
    }
    model->num_languages = count;
    /* Whisper suppresses these specials too; its no-speech probability is read apart. */
    nxe_status status = metadata_ids(root, "suppress_tokens", model->n_vocab, 6, &model->suppress,
                                     &model->num_suppress);
    if (status == NXE_OK) {
        int32_t *s = model->suppress;
        int32_t n = model->num_suppress;
        const int32_t specials[6] = {model->transcribe, model->translate, model->sot,
                                     model->sot_prev,   model->sot_lm,    model->no_speech};
        for (int32_t i = 0; i < 6; i++)
            s[n++] = specials[i];
        qsort(s, (size_t)n, sizeof *s, compare_int);
        int32_t unique = 0;
        for (int32_t i = 0; i < n; i++)
            if (unique == 0 || s[unique - 1] != s[i])
                s[unique++] = s[i];
        model->num_suppress = unique;
    }
    if (status == NXE_OK)
        status = metadata_ids(root, "suppress_blank", model->n_vocab, 0, &model->blank,
                              &model->num_blank);
    int multilingual = 0;
    if (status == NXE_OK && !nxe_json_bool(nxe_json_get(root, "multilingual"), &multilingual))
        status = nxe_error(NXE_ERROR_FORMAT, "asr: the metadata's multilingual must be a boolean");
    model->multilingual = multilingual;
    return status;
}

/* The mel filter bank: the file's constant `mel_filters` f32 [n_mels, n_fft / 2 + 1]. */
static nxe_status read_filters(asr_model *model)
{
    int32_t count = 0;
    nxe_status status = nxe_model_tensor_count(model->file, &count);
    for (int32_t i = 0; status == NXE_OK && i < count; i++) {
        nxe_tensor_info info = {.struct_size = sizeof info};
        nxe_tensor_desc desc;
        status = nxe_model_tensor(model->file, i, &info, &desc);
        if (status != NXE_OK || !info.name || strcmp(info.name, "mel_filters") != 0)
            continue;
        const int64_t bins = model->n_fft / 2 + 1;
        if (info.dtype != NXE_DTYPE_F32 || desc.ndim != 2 || desc.shape[0] != model->n_mels ||
            desc.shape[1] != bins)
            return nxe_error(NXE_ERROR_FORMAT, "asr: the model's mel_filters is not f32 [%d, %lld]",
                             model->n_mels, (long long)bins);
        const size_t bytes = sizeof(float) * (size_t)model->n_mels * (size_t)bins;
        model->filters = nxe_alloc(bytes);
        if (!model->filters)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
        memcpy(model->filters, desc.data, bytes);
        for (size_t j = 0; j < bytes / sizeof(float); j++)
            if (!isfinite(model->filters[j]))
                return nxe_error(NXE_ERROR_FORMAT, "asr: the model's mel_filters is not finite");
        return NXE_OK;
    }
    if (status != NXE_OK)
        return status;
    return nxe_error(NXE_ERROR_FORMAT, "asr: the model file has no mel_filters tensor");
}

static nxe_status read_metadata(asr_model *model, const char *path)
{
    const char *json = NULL;
    size_t size = 0;
    nxe_json *doc = NULL;
    nxe_status status = nxe_model_metadata(model->file, &json, &size);
    if (status == NXE_OK)
        status = nxe_json_parse(json, size, &doc);
    if (status != NXE_OK) {
        nxe_error_prefix("asr: the metadata of '%s': ", path);
        return status;
    }
    const nxe_json_value *root = nxe_json_root(doc);
    const nxe_json_value *config = nxe_json_get(root, "config");
    const nxe_json_value *audio = nxe_json_get(root, "audio");
    if (!metadata_string_is(root, "task", "asr")) {
        const char *named = nxe_json_string(nxe_json_get(root, "task"), NULL);
        status = nxe_error(NXE_ERROR_FORMAT,
                           "asr: '%s' is not a speech recognition model: its metadata's task is "
                           "%s%s%s, expected \"asr\"",
                           path, named ? "\"" : "", named ? named : "missing or not a string",
                           named ? "\"" : "");
    } else if (!metadata_string_is(root, "architecture", "whisper")) {
        status = nxe_error(NXE_ERROR_UNSUPPORTED,
                           "asr: '%s': the metadata's architecture is not \"whisper\", the one "
                           "this kind runs",
                           path);
    } else if (nxe_json_kind(config) != NXE_JSON_OBJECT ||
               nxe_json_kind(audio) != NXE_JSON_OBJECT) {
        status = nxe_error(NXE_ERROR_FORMAT,
                           "asr: '%s': the metadata has no config or no audio object", path);
    }
    struct {
        const nxe_json_value *object;
        const char *where, *key;
        long low, high;
        int32_t *out;
    } ints[] = {
        {config, "config.", "n_mels", 1, 1024, &model->n_mels},
        {config, "config.", "n_audio_ctx", 1, 1 << 16, &model->n_audio_ctx},
        {config, "config.", "n_audio_state", 1, 1 << 16, &model->n_audio_state},
        {config, "config.", "n_text_ctx", 8, 1 << 14, &model->n_text_ctx},
        {config, "config.", "n_text_state", 1, 1 << 16, &model->n_text_state},
        {config, "config.", "n_text_layer", 1, ASR_MAX_LAYERS, &model->n_text_layer},
        {config, "config.", "n_text_head", 1, 1 << 10, &model->n_text_head},
        {config, "config.", "n_vocab", 2, 1 << 24, &model->n_vocab},
        {audio, "audio.", "sample_rate", 1, 1 << 20, &model->sample_rate},
        {audio, "audio.", "n_fft", 2, 1 << 16, &model->n_fft},
        {audio, "audio.", "hop_length", 1, 1 << 16, &model->hop_length},
        {audio, "audio.", "n_frames", 2, 1 << 20, &model->n_frames},
    };
    for (size_t i = 0; status == NXE_OK && i < sizeof ints / sizeof *ints; i++)
        status = metadata_int(ints[i].object, ints[i].where, ints[i].key, ints[i].low, ints[i].high,
                              ints[i].out);
    if (status == NXE_OK && model->n_text_state % model->n_text_head)
        status = nxe_error(NXE_ERROR_FORMAT,
                           "asr: metadata config.n_text_state %d is not a multiple of "
                           "config.n_text_head %d",
                           model->n_text_state, model->n_text_head);
    if (status == NXE_OK && model->n_frames != INPUT_FRAMES_PER_CTX * model->n_audio_ctx)
        status = nxe_error(NXE_ERROR_FORMAT,
                           "asr: '%s': audio.n_frames (%d) is not twice config.n_audio_ctx (%d)",
                           path, model->n_frames, model->n_audio_ctx);
    if (status == NXE_OK && model->sample_rate != 16000)
        status = nxe_error(NXE_ERROR_UNSUPPORTED,
                           "asr: '%s': audio.sample_rate is %d; this kind takes 16000 Hz", path,
                           model->sample_rate);
    const nxe_json_value *precision = nxe_json_get(root, "precision");
    if (status == NXE_OK && precision && !metadata_string_is(root, "precision", "fp32") &&
        !metadata_string_is(root, "precision", "bf16") &&
        !metadata_string_is(root, "precision", "int8"))
        status = nxe_error(NXE_ERROR_FORMAT,
                           "asr: '%s': the metadata's precision must be \"fp32\", \"bf16\" or "
                           "\"int8\"",
                           path);
    if (status == NXE_OK && model->relax < 0)
        model->relax = metadata_string_is(root, "precision", "bf16");
    if (status == NXE_OK)
        status = read_tokens(model, root);
    if (status == NXE_OK) {
        const nxe_json_value *spec = nxe_json_get(root, "tokenizer");
        size_t offset = 0, length = 0;
        if (nxe_json_kind(spec) != NXE_JSON_OBJECT) {
            status = nxe_error(NXE_ERROR_FORMAT,
                               "asr: '%s': the metadata's tokenizer is not a tokenizer.json "
                               "object",
                               path);
        } else {
            nxe_json_span(spec, &offset, &length);
            status = nxe_tokenizer_create(json + offset, length, &model->tokenizer);
            if (status != NXE_OK)
                nxe_error_prefix("asr: the model's tokenizer: ");
            model->tokenizer_bytes = length;
        }
    }
    nxe_json_free(doc);
    if (status != NXE_OK && status != NXE_ERROR_OUT_OF_MEMORY && status != NXE_ERROR_UNSUPPORTED)
        status = NXE_ERROR_FORMAT; /* the message says what */
    return status;
}

static nxe_status parse_options(const nxe_engine_load_args *args, asr_model *model)
{
    model->num_threads = args->num_threads;
    model->relax = -1;
    for (int32_t i = 0; i < args->num_options; i++) {
        const char *key = args->options[i].key, *value = args->options[i].value;
        nxe_status status;
        if (strcmp(key, "relax") == 0)
            status = nxe_engine_parse_bool("asr: option", key, value, &model->relax);
        else if (strcmp(key, "num_threads") == 0)
            status = nxe_engine_parse_int("asr: option", key, value, 0, 4096, &model->num_threads);
        else
            status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                               "asr: unknown option '%s' (relax, num_threads)", key);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

static nxe_status set_shape(nxe_graph *graph, const char *name, int32_t ndim, const int64_t *shape)
{
    nxe_tensor *tensor = NULL;
    nxe_status status = nxe_graph_find_tensor(graph, name, &tensor);
    if (status == NXE_OK)
        status = nxe_tensor_set_shape(tensor, ndim, shape);
    if (status != NXE_OK)
        nxe_error_prefix("asr: input '%s': ", name);
    return status;
}

/* The graph of the file, kept to `names` (its outputs), with `shapes` set, compiled. */
typedef struct shape_of {
    char name[48];
    int32_t ndim;
    int64_t shape[4];
} shape_of;

static nxe_status compile_part(const asr_model *model, const char *const *names, int32_t count,
                               const shape_of *shapes, int32_t num_shapes, nxe_executable **exe)
{
    nxe_context *context = NULL;
    nxe_graph *graph = NULL;
    *exe = NULL;
    nxe_status status = nxe_context_create(&context);
    if (status == NXE_OK)
        status = nxe_model_build_graph(model->file, context, &graph);
    if (status == NXE_OK)
        status = nxe_graph_keep_outputs(graph, names, count);
    for (int32_t i = 0; status == NXE_OK && i < num_shapes; i++)
        status = set_shape(graph, shapes[i].name, shapes[i].ndim, shapes[i].shape);
    if (status == NXE_OK) {
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = model->num_threads;
        options.relax_precision = model->relax;
        status = nxe_graph_compile(graph, &options, exe);
    }
    nxe_graph_release(graph);
    nxe_context_release(context);
    return status;
}

static int32_t find_name(const char *name, char (*names)[48], int32_t count)
{
    for (int32_t i = 0; i < count; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* Checks an executable's inputs or outputs against `names` (shapes given in `shapes`, all f32
 * but the first `ints`, i32) and maps each to its place there. */
static nxe_status map_io(nxe_executable *exe, bool inputs, char (*names)[48],
                         const shape_of *shapes, int32_t count, int32_t ints, int32_t *slot)
{
    int32_t num_inputs = 0, num_outputs = 0;
    nxe_executable_io_count(exe, &num_inputs, &num_outputs);
    if ((inputs ? num_inputs : num_outputs) != count)
        return nxe_error(NXE_ERROR_FORMAT, "asr: the model's %s has %d %s, expected %d", names[0],
                         inputs ? num_inputs : num_outputs, inputs ? "inputs" : "outputs", count);
    for (int32_t i = 0; i < count; i++) {
        nxe_tensor_desc desc;
        const char *name = NULL;
        nxe_status status = inputs ? nxe_executable_input_desc(exe, i, &desc, &name)
                                   : nxe_executable_output_desc(exe, i, &desc, &name);
        int32_t at = status == NXE_OK && name ? find_name(name, names, count) : -1;
        bool good = at >= 0 && desc.dtype_bits == 32 &&
                    desc.dtype_code == (at < ints ? NXE_DL_INT : NXE_DL_FLOAT) &&
                    desc.ndim == shapes[at].ndim;
        for (int32_t d = 0; good && d < desc.ndim; d++)
            good = desc.shape[d] == shapes[at].shape[d];
        if (!good)
            return nxe_error(NXE_ERROR_FORMAT,
                             "asr: the model's %s '%s' is not what the kind expects (%s, rank "
                             "%d)",
                             inputs ? "input" : "output", name ? name : "?",
                             at >= 0 && at < ints ? "i32" : "f32", at >= 0 ? shapes[at].ndim : 0);
        slot[i] = at;
    }
    return NXE_OK;
}

static nxe_status compile_encoder(asr_model *model)
{
    const int32_t layers = model->n_text_layer;
    char names[2 * ASR_MAX_LAYERS][48];
    shape_of shapes[2 * ASR_MAX_LAYERS];
    const char *keep[2 * ASR_MAX_LAYERS];
    for (int32_t l = 0; l < layers; l++) {
        snprintf(names[2 * l], sizeof names[0], "encoder.cross_key.%d", l);
        snprintf(names[2 * l + 1], sizeof names[0], "encoder.cross_value.%d", l);
    }
    const int64_t h = model->n_text_head, hd = model->n_text_state / model->n_text_head;
    for (int32_t i = 0; i < 2 * layers; i++) {
        keep[i] = names[i];
        /* keys transposed for the scores' product, values as the context's product reads */
        shapes[i] = i % 2 == 0 ? (shape_of){"", 4, {1, h, hd, model->n_audio_ctx}}
                               : (shape_of){"", 4, {1, h, model->n_audio_ctx, hd}};
    }
    nxe_status status = compile_part(model, keep, 2 * layers, NULL, 0, &model->encoder);
    if (status == NXE_OK)
        status =
            map_io(model->encoder, false, names, shapes, 2 * layers, 0, model->encoder_output_slot);
    char mel_name[1][48] = {"encoder.mel"};
    shape_of mel_shape = {"", 3, {1, model->n_mels, model->n_frames, 0}};
    int32_t mel_slot = 0;
    if (status == NXE_OK)
        status = map_io(model->encoder, true, mel_name, &mel_shape, 1, 0, &mel_slot);
    if (status != NXE_OK)
        nxe_error_prefix("asr: the encoder: ");
    return status;
}

static nxe_status compile_decoder(const asr_model *model, int32_t rows, int32_t tokens,
                                  asr_variant *variant)
{
    const int32_t layers = model->n_text_layer;
    const int64_t c = model->n_text_ctx, d = model->n_text_state;
    const int64_t h = model->n_text_head, hd = d / h;
    char in_names[4 + 4 * ASR_MAX_LAYERS][48], out_names[1 + 2 * ASR_MAX_LAYERS][48];
    shape_of in_shapes[4 + 4 * ASR_MAX_LAYERS], out_shapes[1 + 2 * ASR_MAX_LAYERS];
    const char *keep[1 + 2 * ASR_MAX_LAYERS];
    snprintf(in_names[0], 48, "decoder.tokens");
    snprintf(in_names[1], 48, "decoder.positions");
    snprintf(in_names[2], 48, "decoder.mask");
    in_shapes[0] = (shape_of){"decoder.tokens", 2, {rows, tokens, 0, 0}};
    in_shapes[1] = (shape_of){"decoder.positions", 2, {rows, tokens, 0, 0}};
    in_shapes[2] = (shape_of){"decoder.mask", 4, {rows, 1, tokens, c + tokens}};
    snprintf(out_names[0], 48, "decoder.logits");
    out_shapes[0] = (shape_of){"", 2, {rows, model->n_vocab, 0, 0}};
    for (int32_t l = 0; l < layers; l++) {
        static const char *const kinds[4] = {"past_key", "past_value", "cross_key", "cross_value"};
        for (int32_t k = 0; k < 4; k++) {
            snprintf(in_names[3 + 4 * l + k], 48, "decoder.%s.%d", kinds[k], l);
            const shape_of layouts[4] = {{"", 4, {rows, h, hd, c}},
                                         {"", 4, {rows, h, c, hd}},
                                         {"", 4, {1, h, hd, model->n_audio_ctx}},
                                         {"", 4, {1, h, model->n_audio_ctx, hd}}};
            in_shapes[3 + 4 * l + k] = layouts[k];
            snprintf(in_shapes[3 + 4 * l + k].name, 48, "%s", in_names[3 + 4 * l + k]);
        }
        snprintf(out_names[1 + 2 * l], 48, "decoder.key.%d", l);
        snprintf(out_names[2 + 2 * l], 48, "decoder.value.%d", l);
        out_shapes[1 + 2 * l] = (shape_of){"", 3, {rows, tokens, d, 0}};
        out_shapes[2 + 2 * l] = out_shapes[1 + 2 * l];
    }
    for (int32_t i = 0; i < 1 + 2 * layers; i++)
        keep[i] = out_names[i];
    const int32_t num_in = 3 + 4 * layers, num_out = 1 + 2 * layers;
    /* Only the batch and length of the inputs change: the past ones by the rows. */
    shape_of set[3 + 2 * ASR_MAX_LAYERS];
    int32_t num_set = 0;
    for (int32_t i = 0; i < num_in; i++)
        if (i < 3 || (i - 3) % 4 < 2)
            set[num_set++] = in_shapes[i];
    nxe_executable *exe = NULL;
    nxe_status status = compile_part(model, keep, num_out, set, num_set, &exe);
    if (status == NXE_OK)
        status = map_io(exe, true, in_names, in_shapes, num_in, 2, variant->input_slot);
    if (status == NXE_OK)
        status = map_io(exe, false, out_names, out_shapes, num_out, 0, variant->output_slot);
    if (status != NXE_OK) {
        nxe_executable_release(exe);
        nxe_error_prefix("asr: the decoder for %d x %d tokens: ", rows, tokens);
        return status;
    }
    variant->exe = exe;
    variant->rows = rows;
    variant->tokens = tokens;
    return NXE_OK;
}

nxe_status asr_decoder_variant(asr_model *model, int32_t rows, int32_t tokens,
                               asr_variant **variant)
{
    asr_variant *slot = NULL;
    for (int32_t v = 0; v < ASR_VARIANTS; v++) {
        asr_variant *candidate = &model->variants[v];
        if (candidate->rows == rows && candidate->tokens == tokens) {
            candidate->last_used = ++model->clock;
            *variant = candidate;
            return NXE_OK;
        }
        if (!slot ||
            (slot->rows != 0 && (candidate->rows == 0 || candidate->last_used < slot->last_used)))
            slot = candidate;
    }
    asr_variant made = {0};
    nxe_status status = compile_decoder(model, rows, tokens, &made);
    if (status != NXE_OK)
        return status;
    nxe_executable_release(slot->exe);
    *slot = made;
    slot->last_used = ++model->clock;
    *variant = slot;
    return NXE_OK;
}

static nxe_status asr_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    *instance = NULL;
    asr_model *model = nxe_alloc_zeroed(sizeof *model);
    if (!model)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
    nxe_status status = parse_options(args, model);
    if (status == NXE_OK) {
        status = nxe_model_open_file(args->path, NULL, &model->file);
        if (status != NXE_OK)
            nxe_error_prefix("asr: '%s': ", args->path);
    }
    if (status == NXE_OK)
        status = read_metadata(model, args->path);
    if (status == NXE_OK)
        status = read_filters(model);
    if (status == NXE_OK)
        status = compile_encoder(model);
    /* The one-token step now: a decoder that does not compile fails the load. */
    asr_variant *first = NULL;
    if (status == NXE_OK)
        status = asr_decoder_variant(model, 1, 1, &first);
    if (status != NXE_OK) {
        nxe_error_prefix("asr: '%s': ", args->path);
        asr_unload(NULL, model);
        return status;
    }
    struct stat about;
    if (stat(args->path, &about) == 0)
        model->file_bytes = (uint64_t)about.st_size;
    *instance = model;
    return NXE_OK;
}

static uint64_t asr_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    const asr_model *model = instance;
    uint64_t bytes = model->file_bytes + model->tokenizer_bytes;
    bytes += nxe_engine_executable_bytes(model->encoder);
    for (int32_t v = 0; v < ASR_VARIANTS; v++)
        bytes += nxe_engine_executable_bytes(model->variants[v].exe);
    return bytes;
}

/* ---- requests -------------------------------------------------------------------------------- */

static bool parse_double(const char *value, double low, double high, double *out)
{
    char *end = NULL;
    double x = strtod(value, &end);
    if (!value[0] || *end || !(x >= low && x <= high))
        return false;
    *out = x;
    return true;
}

/* A threshold: a number, or "none" (NaN: the test is off). */
static bool parse_threshold(const char *value, double *out)
{
    if (strcmp(value, "none") == 0) {
        *out = NAN;
        return true;
    }
    return parse_double(value, -1e30, 1e30, out);
}

static nxe_status bad_option(const char *key, const char *value, const char *expected)
{
    return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "asr: request option %s is '%s', expected %s", key,
                     value, expected);
}

static nxe_status parse_temperatures(const char *value, asr_options *opt)
{
    opt->num_temperatures = 0;
    const char *p = value;
    while (1) {
        char *end = NULL;
        double t = strtod(p, &end);
        if (end == p || !(t >= 0 && t <= 100) || opt->num_temperatures == ASR_MAX_TEMPERATURES)
            return bad_option("temperature", value,
                              "one temperature from 0 to 100 or up to 16 separated by commas");
        opt->temperatures[opt->num_temperatures++] = t;
        if (*end == '\0')
            return NXE_OK;
        if (*end != ',')
            return bad_option("temperature", value,
                              "one temperature from 0 to 100 or up to 16 separated by commas");
        p = end + 1;
    }
}

static nxe_status request_options(const asr_model *model, const nxe_engine_batch *batch, int32_t r,
                                  asr_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->language = -1;
    for (size_t i = 0; i < sizeof default_temperatures / sizeof *default_temperatures; i++)
        opt->temperatures[i] = default_temperatures[i];
    opt->num_temperatures = (int32_t)(sizeof default_temperatures / sizeof *default_temperatures);
    opt->beam_size = 5;
    opt->best_of = 5;
    opt->length_penalty = NAN;
    opt->patience = 1.0;
    opt->compression_ratio_threshold = 2.4;
    opt->logprob_threshold = -1.0;
    opt->no_speech_threshold = 0.6;
    opt->silence_threshold_db = -50.0;
    opt->condition_on_previous_text = 1;
    const char *value;
    nxe_status status = NXE_OK;
    if ((value = nxe_engine_batch_option(batch, r, "sample_rate"))) {
        double rate = 0;
        if (!parse_double(value, 1, 1e9, &rate) || rate != model->sample_rate)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "asr: request option sample_rate is '%s'; the model takes %d Hz "
                             "(resample the audio first)",
                             value, model->sample_rate);
    }
    if ((value = nxe_engine_batch_option(batch, r, "language")) && strcmp(value, "auto") != 0) {
        for (int32_t i = 0; i < model->num_languages && opt->language < 0; i++)
            if (strcmp(model->languages[i].code, value) == 0)
                opt->language = i;
        if (opt->language < 0)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "asr: request option language is '%s', not a language of the model "
                             "(a code such as en, de, fr, or auto)",
                             value);
        if (!model->multilingual && strcmp(value, "en") != 0)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "asr: request option language is '%s', but the model is "
                             "English-only",
                             value);
    }
    if ((value = nxe_engine_batch_option(batch, r, "task"))) {
        if (strcmp(value, "transcribe") == 0)
            opt->translate = 0;
        else if (strcmp(value, "translate") == 0)
            opt->translate = 1;
        else
            return bad_option("task", value, "transcribe or translate");
        if (opt->translate && !model->multilingual)
            return bad_option("task", value, "transcribe (the model is English-only)");
    }
    if ((value = nxe_engine_batch_option(batch, r, "temperature")))
        status = parse_temperatures(value, opt);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "beam_size")))
        status = nxe_engine_parse_int("asr: request option", "beam_size", value, 1,
                                      ASR_MAX_ROWS - 1, &opt->beam_size);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "best_of")))
        status = nxe_engine_parse_int("asr: request option", "best_of", value, 1, ASR_MAX_ROWS - 1,
                                      &opt->best_of);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "length_penalty")) &&
        strcmp(value, "none") != 0 && !parse_double(value, 0, 10, &opt->length_penalty))
        status = bad_option("length_penalty", value, "a number from 0 to 10, or none");
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "patience")) &&
        !parse_double(value, 0.01, 4, &opt->patience))
        status = bad_option("patience", value, "a number from 0.01 to 4");
    if (status == NXE_OK &&
        (value = nxe_engine_batch_option(batch, r, "compression_ratio_threshold")) &&
        !parse_threshold(value, &opt->compression_ratio_threshold))
        status = bad_option("compression_ratio_threshold", value, "a number or none");
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "logprob_threshold")) &&
        !parse_threshold(value, &opt->logprob_threshold))
        status = bad_option("logprob_threshold", value, "a number or none");
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "no_speech_threshold")) &&
        !parse_threshold(value, &opt->no_speech_threshold))
        status = bad_option("no_speech_threshold", value, "a number or none");
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "silence_threshold")) &&
        (!parse_threshold(value, &opt->silence_threshold_db) || opt->silence_threshold_db > 0))
        status = bad_option("silence_threshold", value, "a level in dBFS (at most 0) or none");
    if (status == NXE_OK &&
        (value = nxe_engine_batch_option(batch, r, "condition_on_previous_text")))
        status = nxe_engine_parse_bool("asr: request option", "condition_on_previous_text", value,
                                       &opt->condition_on_previous_text);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "without_timestamps")))
        status = nxe_engine_parse_bool("asr: request option", "without_timestamps", value,
                                       &opt->without_timestamps);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "seed"))) {
        char *end = NULL;
        unsigned long long seed = strtoull(value, &end, 10);
        if (!value[0] || *end || value[0] == '-')
            status = bad_option("seed", value, "an unsigned integer");
        opt->seed = seed;
    }
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, r, "prompt")) && value[0]) {
        /* " " + prompt.strip(), without special tokens, as transcribe() encodes it. */
        size_t from = 0, to = strlen(value);
        while (from < to && (value[from] == ' ' || (value[from] >= '\t' && value[from] <= '\r')))
            from++;
        while (to > from &&
               (value[to - 1] == ' ' || (value[to - 1] >= '\t' && value[to - 1] <= '\r')))
            to--;
        char *text = nxe_alloc(to - from + 2);
        if (!text)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
        text[0] = ' ';
        memcpy(text + 1, value + from, to - from);
        nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
        options.add_special_tokens = 0;
        options.max_length = -1;
        nxe_encoding *encoding = NULL;
        status = nxe_tokenizer_encode(model->tokenizer, text, to - from + 1, &options, &encoding);
        nxe_free(text);
        if (status != NXE_OK) {
            nxe_error_prefix("asr: request option prompt: ");
            return status;
        }
        opt->prompt = nxe_alloc(sizeof *opt->prompt * (size_t)(encoding->num_tokens + 1));
        if (!opt->prompt) {
            nxe_encoding_release(encoding);
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
        }
        memcpy(opt->prompt, encoding->ids, sizeof *opt->prompt * (size_t)encoding->num_tokens);
        opt->num_prompt = encoding->num_tokens;
        nxe_encoding_release(encoding);
    }
    return status;
}

static nxe_status request_pcm(const nxe_engine_batch *batch, int32_t r, const float **pcm,
                              int64_t *samples)
{
    const nxe_engine_io *inputs = NULL;
    int32_t count = 0;
    nxe_engine_batch_inputs(batch, r, &inputs, &count);
    const nxe_engine_io *found = NULL;
    for (int32_t i = 0; i < count; i++) {
        if (strcmp(inputs[i].name, "pcm") != 0)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "asr: unknown input '%s' (pcm)",
                             inputs[i].name);
        found = &inputs[i];
    }
    if (!found)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "asr: the request has no input 'pcm' (f32 [n], 16 kHz mono)");
    const nxe_tensor_desc *t = &found->tensor;
    if (t->dtype_code != NXE_DL_FLOAT || t->dtype_bits != 32 || t->ndim != 1)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "asr: input 'pcm' must be f32 [n] (16 kHz mono samples)");
    *pcm = t->data;
    *samples = t->shape[0];
    for (int64_t i = 0; i < *samples; i++)
        if (!isfinite((*pcm)[i]))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "asr: input 'pcm' holds a value that is not finite at sample %lld",
                             (long long)i);
    return NXE_OK;
}

static void free_state(asr_state *state)
{
    if (!state)
        return;
    for (int32_t r = 0; r < state->count; r++)
        asr_job_release(state->items[r].job);
    nxe_free(state->items);
    nxe_free(state);
}

static void asr_release_state(void *user_data, void *state)
{
    (void)user_data;
    free_state(state);
}

static nxe_status asr_frontend(void *user_data, void *instance, nxe_engine_batch *batch, void **out)
{
    (void)user_data;
    const asr_model *model = instance;
    const int32_t size = nxe_engine_batch_size(batch);
    asr_state *state = nxe_alloc_zeroed(sizeof *state);
    if (state)
        state->items = nxe_alloc_zeroed(sizeof *state->items * (size_t)size);
    if (!state || !state->items) {
        nxe_free(state);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "asr: out of memory");
    }
    state->count = size;
    for (int32_t r = 0; r < size; r++) {
        asr_options opt;
        const float *pcm = NULL;
        int64_t samples = 0;
        nxe_status status = request_pcm(batch, r, &pcm, &samples);
        if (status == NXE_OK)
            status = request_options(model, batch, r, &opt);
        if (status == NXE_OK) {
            status = asr_job_create(model, pcm, samples, &opt, &state->items[r].job);
            nxe_free(opt.prompt);
        } else {
            opt.prompt = NULL;
        }
        state->items[r].ok = status == NXE_OK;
        if (status != NXE_OK)
            nxe_engine_batch_fail(batch, r, status, nxe_last_error());
    }
    *out = state;
    return NXE_OK;
}

static nxe_status asr_encoder(void *user_data, void *instance, nxe_engine_batch *batch,
                              void *opaque)
{
    (void)user_data;
    asr_model *model = instance;
    asr_state *state = opaque;
    int32_t live = 0;
    for (int32_t r = 0; r < state->count; r++)
        live += state->items[r].ok;
    /* Round robin: one unit of work per live request per round. */
    while (live > 0) {
        for (int32_t r = 0; r < state->count; r++) {
            asr_item *item = &state->items[r];
            if (!item->ok || item->done)
                continue;
            if (nxe_engine_batch_cancelled(batch, r)) {
                item->ok = 0;
                live--;
                continue;
            }
            nxe_status status = asr_job_step(model, item->job, &item->done);
            if (status != NXE_OK) {
                nxe_engine_batch_fail(batch, r, status, nxe_last_error());
                item->ok = 0;
                live--;
                continue;
            }
            nxe_engine_batch_set_progress(batch, r, asr_job_progress(item->job));
            if (item->done)
                live--;
        }
    }
    return NXE_OK;
}

static nxe_status asr_head(void *user_data, void *instance, nxe_engine_batch *batch, void *opaque)
{
    (void)user_data;
    const asr_model *model = instance;
    asr_state *state = opaque;
    for (int32_t r = 0; r < state->count; r++) {
        asr_item *item = &state->items[r];
        if (!item->ok || !item->done)
            continue;
        nxe_status status = asr_job_finish(model, item->job, batch, r);
        if (status != NXE_OK)
            nxe_engine_batch_fail(batch, r, status, nxe_last_error());
    }
    return NXE_OK;
}

nxe_status nxe_asr_kind_register(nxe_engine *engine)
{
    nxe_engine_kind kind = {0};
    kind.struct_size = sizeof kind;
    kind.name = "asr";
    kind.batchable = 1;
    kind.load = asr_load;
    kind.unload = asr_unload;
    kind.resident_bytes = asr_resident_bytes;
    kind.frontend = asr_frontend;
    kind.encoder = asr_encoder;
    kind.head = asr_head;
    kind.release_state = asr_release_state;
    return nxe_engine_register_kind(engine, &kind);
}
