/* embedding_kind.c — the built-in engine kind "embedding": a BERT-family text encoder baked
 * into one .nxm (graph, weights, tokenizer, pooling and normalization in its metadata), turning
 * each request's text (or token ids) into one vector.
 *
 * The pipeline of a batch:
 *   frontend  tokenizes each request's "text" (or checks its "input_ids" and adds the special
 *             tokens), reads its options; a request with bad input fails alone;
 *   encoder   sorts the requests by length, cuts them into sub-batches of up to SUB_BATCH
 *             rows, each padded to a length bucket (powers of two from 16, the last one the
 *             model's max_seq_length), runs each on an executable compiled for that
 *             (rows, bucket) shape (a few kept, least recently used dropped), and pools each
 *             request's rows of hidden states (mean over its tokens, its [CLS] row, or the max);
 *   head      normalizes as the model does, truncates to the request's dimensions and
 *             normalizes again when asked (sentence-transformers' truncate_dim then
 *             normalize_embeddings), and adds the outputs "embedding" f32 [dims] and "tokens"
 *             i64 [1].
 * Cancelled requests are dropped between sub-batches. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json.h"
#include "engine/engine_internal.h"
#include "nxe/nxe_tokenizer.h"

/* Executables kept per model, one per (rows, length bucket) shape. */
#define EMBED_VARIANTS 6
/* Rows of a sub-batch: on the CPUs measured, per-token time stops falling past 8 rows
 * (docs/architecture.md has the numbers). */
#define SUB_BATCH 8
/* A remainder of at least this many rows runs as one padded sub-batch of SUB_BATCH rows;
 * fewer run one by one (a padded row costs what a real one does; a lone row ~1.5 times a
 * batched one). */
#define SUB_BATCH_PAD_FROM 6
/* The smallest length bucket; the others double up to max_seq_length. */
#define MIN_BUCKET 16
/* Special tokens the template may add before or after one sequence. */
#define MAX_SPECIALS 8

enum pooling { POOL_MEAN = 0, POOL_CLS = 1, POOL_MAX = 2 };

typedef struct embed_variant {
    int32_t rows;   /* 0: an unused slot */
    int32_t length; /* the bucket */
    nxe_executable *exe;
    uint64_t last_used;
} embed_variant;

typedef struct embed_model {
    nxe_model *file; /* kept open (mapped): every variant compiles from it */
    uint64_t file_bytes;
    nxe_tokenizer *tokenizer;
    uint64_t tokenizer_bytes; /* the size of its JSON: an estimate of its tables */
    int32_t vocab_size;       /* of the embedding table: ids must be below it */
    int32_t pad_id;
    int32_t prefix[MAX_SPECIALS], num_prefix; /* specials before a sequence ([CLS]) */
    int32_t suffix[MAX_SPECIALS], num_suffix; /* and after it ([SEP]) */
    int32_t max_seq_length;
    int32_t hidden;
    int32_t pooling;
    int32_t normalize; /* the file's Normalize module */
    int32_t truncate;  /* the model option's default for requests */
    int32_t relax;     /* -1 until set: the option, else on for a bf16 file */
    int32_t num_threads;
    embed_variant variants[EMBED_VARIANTS];
    uint64_t clock;
} embed_model;

/* One request of a batch, as the frontend leaves it. */
typedef struct embed_item {
    int32_t ok; /* 0: failed in the frontend (or later), skipped */
    int32_t length;
    int32_t *ids; /* length tokens, specials included */
    int32_t normalize;
    int32_t dimensions;
    float *pooled; /* hidden floats, filled by the encoder */
    int32_t pooled_ok;
} embed_item;

typedef struct embed_state {
    int32_t count;
    embed_item *items;
} embed_state;

/* ---- load ---------------------------------------------------------------------------------- */

static void embed_unload(void *user_data, void *instance)
{
    (void)user_data;
    embed_model *model = instance;
    if (!model)
        return;
    for (int32_t v = 0; v < EMBED_VARIANTS; v++)
        nxe_executable_release(model->variants[v].exe);
    nxe_tokenizer_release(model->tokenizer);
    nxe_model_release(model->file);
    nxe_free(model);
}

/* An integer member of a metadata object, in [low, high]. */
static nxe_status metadata_int(const nxe_json_value *object, const char *where, const char *key,
                               long low, long high, int32_t *out)
{
    double number = 0;
    const nxe_json_value *v = nxe_json_get(object, key);
    if (!v || !nxe_json_number(v, &number) || number != floor(number) || number < (double)low ||
        number > (double)high)
        return nxe_error(NXE_ERROR_FORMAT,
                         "embedding: the metadata's %s%s is %s, expected an integer from %ld to "
                         "%ld",
                         where, key, v ? "not such a number" : "missing", low, high);
    *out = (int32_t)number;
    return NXE_OK;
}

static bool metadata_string_is(const nxe_json_value *object, const char *key, const char *want)
{
    const char *text = nxe_json_string(nxe_json_get(object, key), NULL);
    return text && strcmp(text, want) == 0;
}

/* The tokenizer of the metadata's "tokenizer" member: a tokenizer.json object, verbatim, or
 * {"vocab_txt": "...", "lowercase": bool}. */
static nxe_status make_tokenizer(const char *json, const nxe_json_value *spec, embed_model *model)
{
    if (nxe_json_kind(spec) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT,
                         "embedding: the metadata's tokenizer is %s, expected an object",
                         spec ? "not an object" : "missing");
    size_t offset = 0, size = 0;
    const nxe_json_value *vocab = nxe_json_get(spec, "vocab_txt");
    nxe_status status;
    if (vocab) {
        size_t vocab_size = 0;
        const char *text = nxe_json_string(vocab, &vocab_size);
        int lowercase = 1;
        const nxe_json_value *lower = nxe_json_get(spec, "lowercase");
        if (!text || (lower && !nxe_json_bool(lower, &lowercase)))
            return nxe_error(NXE_ERROR_FORMAT,
                             "embedding: the metadata's tokenizer.vocab_txt must be a string and "
                             "its lowercase a boolean");
        nxe_tokenizer_vocab_options options = NXE_TOKENIZER_VOCAB_OPTIONS_INIT;
        options.lowercase = lowercase;
        status = nxe_tokenizer_create_from_vocab(text, vocab_size, &options, &model->tokenizer);
        size = vocab_size;
    } else {
        nxe_json_span(spec, &offset, &size);
        status = nxe_tokenizer_create(json + offset, size, &model->tokenizer);
    }
    if (status != NXE_OK) {
        nxe_error_prefix("embedding: the model's tokenizer: ");
        return status;
    }
    model->tokenizer_bytes = size;
    nxe_tokenizer_info info = {.struct_size = sizeof info};
    status = nxe_tokenizer_get_info(model->tokenizer, &info);
    if (status != NXE_OK)
        return status;
    if (info.vocab_size > model->vocab_size)
        return nxe_error(NXE_ERROR_FORMAT,
                         "embedding: the tokenizer's vocabulary has %d tokens, the model's "
                         "embedding table %d",
                         info.vocab_size, model->vocab_size);
    model->pad_id = info.pad_id;
    /* The specials around one sequence, told apart by where they fall around a probe text. */
    nxe_encoding *probe = NULL;
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    options.max_length = -1;
    status = nxe_tokenizer_encode(model->tokenizer, "a", 1, &options, &probe);
    if (status != NXE_OK)
        return status;
    int32_t first = 0, last = probe->num_tokens;
    while (first < probe->num_tokens && probe->special_mask[first])
        first++;
    while (last > first && probe->special_mask[last - 1])
        last--;
    int32_t after = probe->num_tokens - last;
    if (first > MAX_SPECIALS || after > MAX_SPECIALS || first == probe->num_tokens) {
        nxe_encoding_release(probe);
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "embedding: the tokenizer's template adds %d special tokens; at most %d "
                         "on each side are supported",
                         probe->num_tokens, MAX_SPECIALS);
    }
    memcpy(model->prefix, probe->ids, sizeof *model->prefix * (size_t)first);
    memcpy(model->suffix, probe->ids + last, sizeof *model->suffix * (size_t)after);
    model->num_prefix = first;
    model->num_suffix = after;
    nxe_encoding_release(probe);
    if (model->num_prefix + model->num_suffix >= model->max_seq_length)
        return nxe_error(NXE_ERROR_FORMAT,
                         "embedding: max_seq_length %d leaves no room beside the %d special "
                         "tokens",
                         model->max_seq_length, model->num_prefix + model->num_suffix);
    return NXE_OK;
}

/* Checks the metadata (CONTRACT of the baked file: task, architecture, sizes, pooling) and
 * makes the tokenizer. */
static nxe_status read_metadata(embed_model *model, const char *path)
{
    const char *json = NULL;
    size_t size = 0;
    nxe_json *doc = NULL;
    nxe_status status = nxe_model_metadata(model->file, &json, &size);
    if (status == NXE_OK)
        status = nxe_json_parse(json, size, &doc);
    if (status != NXE_OK) {
        nxe_error_prefix("embedding: the metadata of '%s': ", path);
        return status;
    }
    const nxe_json_value *root = nxe_json_root(doc);
    const nxe_json_value *config = nxe_json_get(root, "config");
    const nxe_json_value *task = nxe_json_get(root, "task");
    int32_t max_positions = 0, dimensions = 0, max_seq_length = 0;
    int normalize = 0;
    if (!metadata_string_is(root, "task", "embedding")) {
        const char *named = nxe_json_string(task, NULL);
        status = nxe_error(NXE_ERROR_FORMAT,
                           "embedding: '%s' is not an embedding model: its metadata's task is "
                           "%s%s%s, expected \"embedding\"",
                           path, named ? "\"" : "",
                           named  ? named
                           : task ? "not a string"
                                  : "missing",
                           named ? "\"" : "");
    } else if (!metadata_string_is(root, "architecture", "bert")) {
        status = nxe_error(NXE_ERROR_UNSUPPORTED,
                           "embedding: '%s': the metadata's architecture is not \"bert\", the one "
                           "this kind runs",
                           path);
    } else if (nxe_json_kind(config) != NXE_JSON_OBJECT) {
        status =
            nxe_error(NXE_ERROR_FORMAT, "embedding: '%s': the metadata has no config object", path);
    }
    if (status == NXE_OK)
        status = metadata_int(config, "config.", "hidden", 1, 1 << 20, &model->hidden);
    if (status == NXE_OK)
        status = metadata_int(config, "config.", "vocab_size", 1, INT32_MAX, &model->vocab_size);
    if (status == NXE_OK)
        status =
            metadata_int(config, "config.", "max_position_embeddings", 1, 1 << 20, &max_positions);
    if (status == NXE_OK)
        status = metadata_int(root, "", "max_seq_length", 2, max_positions, &max_seq_length);
    if (status == NXE_OK)
        status = metadata_int(root, "", "dimensions", model->hidden, model->hidden, &dimensions);
    if (status == NXE_OK) {
        if (metadata_string_is(root, "pooling", "mean"))
            model->pooling = POOL_MEAN;
        else if (metadata_string_is(root, "pooling", "cls"))
            model->pooling = POOL_CLS;
        else if (metadata_string_is(root, "pooling", "max"))
            model->pooling = POOL_MAX;
        else
            status = nxe_error(NXE_ERROR_FORMAT,
                               "embedding: '%s': the metadata's pooling must be \"mean\", \"cls\" "
                               "or \"max\"",
                               path);
    }
    const nxe_json_value *precision = nxe_json_get(root, "precision");
    if (status == NXE_OK && precision && !metadata_string_is(root, "precision", "fp32") &&
        !metadata_string_is(root, "precision", "bf16") &&
        !metadata_string_is(root, "precision", "int8"))
        status = nxe_error(NXE_ERROR_FORMAT,
                           "embedding: '%s': the metadata's precision must be \"fp32\", "
                           "\"bf16\" or \"int8\"",
                           path);
    /* A bf16 file holds bf16-rounded weights and was checked (its parity) in relax mode. */
    if (status == NXE_OK && model->relax < 0)
        model->relax = metadata_string_is(root, "precision", "bf16");
    if (status == NXE_OK && !nxe_json_bool(nxe_json_get(root, "normalize"), &normalize))
        status = nxe_error(NXE_ERROR_FORMAT,
                           "embedding: '%s': the metadata's normalize must be true or false", path);
    if (status == NXE_OK) {
        model->normalize = normalize;
        /* A max_seq_length option below the file's was applied before: keep the smaller. */
        if (model->max_seq_length == 0 || model->max_seq_length > max_seq_length) {
            if (model->max_seq_length > max_seq_length)
                status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                   "embedding: option max_seq_length is %d, more than the "
                                   "model's %d",
                                   model->max_seq_length, max_seq_length);
            else
                model->max_seq_length = max_seq_length;
        }
    }
    if (status == NXE_OK)
        status = make_tokenizer(json, nxe_json_get(root, "tokenizer"), model);
    nxe_json_free(doc);
    return status;
}

static nxe_status parse_options(const nxe_engine_load_args *args, embed_model *model)
{
    model->num_threads = args->num_threads;
    model->relax = -1;
    for (int32_t i = 0; i < args->num_options; i++) {
        const char *key = args->options[i].key, *value = args->options[i].value;
        nxe_status status;
        if (strcmp(key, "relax") == 0)
            status = nxe_engine_parse_bool("embedding: option", key, value, &model->relax);
        else if (strcmp(key, "truncate") == 0)
            status = nxe_engine_parse_bool("embedding: option", key, value, &model->truncate);
        else if (strcmp(key, "num_threads") == 0)
            status =
                nxe_engine_parse_int("embedding: option", key, value, 0, 4096, &model->num_threads);
        else if (strcmp(key, "max_seq_length") == 0)
            status = nxe_engine_parse_int("embedding: option", key, value, 2, 1 << 20,
                                          &model->max_seq_length);
        else
            status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                               "embedding: unknown option '%s' (relax, truncate, num_threads, "
                               "max_seq_length)",
                               key);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

static nxe_status set_input_shape(nxe_graph *graph, const char *name, int64_t rows, int64_t length)
{
    nxe_tensor *tensor = NULL;
    const int64_t shape[2] = {rows, length};
    nxe_status status = nxe_graph_find_tensor(graph, name, &tensor);
    if (status == NXE_OK)
        status = nxe_tensor_set_shape(tensor, 2, shape);
    if (status != NXE_OK)
        nxe_error_prefix("embedding: input '%s': ", name);
    return status;
}

/* Compiles the file's graph for `rows` sequences of `length` tokens and checks that it takes
 * and gives what the kind expects. */
static nxe_status compile_variant(const embed_model *model, int32_t rows, int32_t length,
                                  nxe_executable **exe)
{
    nxe_context *context = NULL;
    nxe_graph *graph = NULL;
    *exe = NULL;
    nxe_status status = nxe_context_create(&context);
    if (status == NXE_OK)
        status = nxe_model_build_graph(model->file, context, &graph);
    if (status == NXE_OK)
        status = set_input_shape(graph, "input_ids", rows, length);
    if (status == NXE_OK)
        status = set_input_shape(graph, "token_type_ids", rows, length);
    if (status == NXE_OK)
        status = set_input_shape(graph, "attention_mask", rows, length);
    if (status == NXE_OK)
        status = set_input_shape(graph, "position_ids", 1, length);
    if (status == NXE_OK) {
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = model->num_threads;
        options.relax_precision = model->relax;
        status = nxe_graph_compile(graph, &options, exe);
    }
    nxe_graph_release(graph);
    nxe_context_release(context);
    if (status != NXE_OK)
        return status;
    /* Inputs in the order the encoder fills them, and one output [rows, length, hidden]. */
    static const char *const names[4] = {"input_ids", "token_type_ids", "position_ids",
                                         "attention_mask"};
    int32_t num_inputs = 0, num_outputs = 0;
    nxe_executable_io_count(*exe, &num_inputs, &num_outputs);
    bool good = num_inputs == 4 && num_outputs == 1;
    for (int32_t i = 0; good && i < 4; i++) {
        nxe_tensor_desc desc;
        const char *name = NULL;
        nxe_executable_input_desc(*exe, i, &desc, &name);
        good = name && strcmp(name, names[i]) == 0 &&
               desc.dtype_code == (i == 3 ? NXE_DL_FLOAT : NXE_DL_INT) && desc.dtype_bits == 32;
    }
    nxe_tensor_desc out;
    if (good && nxe_executable_output_desc(*exe, 0, &out, NULL) == NXE_OK)
        good = out.ndim == 3 && out.shape[0] == rows && out.shape[1] == length &&
               out.shape[2] == model->hidden && out.dtype_code == NXE_DL_FLOAT &&
               out.dtype_bits == 32;
    if (!good) {
        nxe_executable_release(*exe);
        *exe = NULL;
        return nxe_error(NXE_ERROR_FORMAT,
                         "embedding: the model's graph does not take input_ids, token_type_ids, "
                         "position_ids (i32) and attention_mask (f32) and give hidden states "
                         "[batch, length, %d] f32",
                         model->hidden);
    }
    return NXE_OK;
}

static int32_t length_bucket(const embed_model *model, int32_t length)
{
    int32_t bucket = MIN_BUCKET;
    while (bucket < length)
        bucket *= 2;
    return bucket < model->max_seq_length ? bucket : model->max_seq_length;
}

/* The executable for (rows, length) in *exe, compiled on first use in a free or the least
 * recently used slot; compile_variant's status when it does not compile. */
static nxe_status variant_for(embed_model *model, int32_t rows, int32_t length,
                              nxe_executable **exe)
{
    embed_variant *slot = NULL;
    for (int32_t v = 0; v < EMBED_VARIANTS; v++) {
        embed_variant *candidate = &model->variants[v];
        if (candidate->rows == rows && candidate->length == length) {
            candidate->last_used = ++model->clock;
            *exe = candidate->exe;
            return NXE_OK;
        }
        if (!slot ||
            (slot->rows != 0 && (candidate->rows == 0 || candidate->last_used < slot->last_used)))
            slot = candidate;
    }
    nxe_status status = compile_variant(model, rows, length, exe);
    if (status != NXE_OK)
        return status;
    nxe_executable_release(slot->exe);
    *slot = (embed_variant){rows, length, *exe, ++model->clock};
    return NXE_OK;
}

static nxe_status embed_load(void *user_data, const nxe_engine_load_args *args, void **instance)
{
    (void)user_data;
    *instance = NULL;
    embed_model *model = nxe_alloc_zeroed(sizeof *model);
    if (!model)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "embedding: out of memory");
    nxe_status status = parse_options(args, model);
    if (status == NXE_OK) {
        status = nxe_model_open_file(args->path, NULL, &model->file);
        if (status != NXE_OK)
            nxe_error_prefix("embedding: '%s': ", args->path);
    }
    if (status == NXE_OK)
        status = read_metadata(model, args->path);
    /* The smallest shape now: a graph that does not compile fails the load, not a request. */
    nxe_executable *first = NULL;
    if (status == NXE_OK &&
        (status = variant_for(model, 1, length_bucket(model, 1), &first)) != NXE_OK)
        nxe_error_prefix("embedding: '%s': ", args->path);
    if (status != NXE_OK) {
        embed_unload(NULL, model);
        return status;
    }
    struct stat about;
    if (stat(args->path, &about) == 0)
        model->file_bytes = (uint64_t)about.st_size; /* mapped for the model's life */
    *instance = model;
    return NXE_OK;
}

static uint64_t embed_resident_bytes(void *user_data, void *instance)
{
    (void)user_data;
    const embed_model *model = instance;
    uint64_t bytes = model->file_bytes + model->tokenizer_bytes;
    for (int32_t v = 0; v < EMBED_VARIANTS; v++)
        bytes += nxe_engine_executable_bytes(model->variants[v].exe);
    return bytes;
}

/* ---- requests -------------------------------------------------------------------------------- */

/* Which of a request's inputs is "text" or "input_ids" (exactly one, else NULL with `why`). */
static const nxe_engine_io *request_input(const nxe_engine_batch *batch, int32_t request, char *why,
                                          size_t size)
{
    const nxe_engine_io *inputs = NULL, *found = NULL;
    int32_t count = 0;
    nxe_engine_batch_inputs(batch, request, &inputs, &count);
    for (int32_t i = 0; i < count; i++) {
        if (strcmp(inputs[i].name, "text") != 0 && strcmp(inputs[i].name, "input_ids") != 0) {
            snprintf(why, size, "embedding: unknown input '%s' (text or input_ids)",
                     inputs[i].name);
            return NULL;
        }
        if (found) {
            snprintf(why, size, "embedding: give one input, text or input_ids, not both");
            return NULL;
        }
        found = &inputs[i];
    }
    if (!found)
        snprintf(why, size, "embedding: the request has no input (text or input_ids)");
    return found;
}

/* Tokens of a 1-D input: its element count (bytes for text); -1 when not 1-D. */
static int64_t input_elements(const nxe_tensor_desc *desc)
{
    return desc->ndim == 1 ? desc->shape[0] : -1;
}

static int64_t embed_request_tokens(void *user_data, void *instance, const nxe_engine_batch *batch,
                                    int32_t request)
{
    (void)user_data;
    const embed_model *model = instance;
    char why[8];
    const nxe_engine_io *input = request_input(batch, request, why, sizeof why);
    if (!input)
        return 1;
    int64_t n = input_elements(&input->tensor);
    if (n < 0)
        return 1;
    /* Text: an estimate without tokenizing under the engine's lock (WordPiece gives about one
     * token per 4 bytes of English; 3 errs on the large side). */
    if (strcmp(input->name, "text") == 0)
        n = (n + 2) / 3;
    n += model->num_prefix + model->num_suffix;
    return n < model->max_seq_length ? n : model->max_seq_length;
}

static void free_state(embed_state *state)
{
    if (!state)
        return;
    for (int32_t r = 0; r < state->count; r++) {
        nxe_free(state->items[r].ids);
        nxe_free(state->items[r].pooled);
    }
    nxe_free(state->items);
    nxe_free(state);
}

static void embed_release_state(void *user_data, void *state)
{
    (void)user_data;
    free_state(state);
}

/* The request's options into `item`; false (with `why`) for an unknown or bad one. */
static bool request_options(const embed_model *model, const nxe_engine_batch *batch,
                            int32_t request, embed_item *item, int32_t *truncate, char *why,
                            size_t size)
{
    item->normalize = model->normalize;
    item->dimensions = model->hidden;
    *truncate = model->truncate;
    const char *value = nxe_engine_batch_option(batch, request, "normalize");
    nxe_status status = NXE_OK;
    if (value)
        status = nxe_engine_parse_bool("embedding: request option", "normalize", value,
                                       &item->normalize);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, request, "truncate")))
        status = nxe_engine_parse_bool("embedding: request option", "truncate", value, truncate);
    if (status == NXE_OK && (value = nxe_engine_batch_option(batch, request, "dimensions")))
        status = nxe_engine_parse_int("embedding: request option", "dimensions", value, 1,
                                      model->hidden, &item->dimensions);
    if (status != NXE_OK)
        snprintf(why, size, "%s", nxe_last_error());
    return status == NXE_OK;
}

static const char *too_long(int64_t tokens, int32_t limit, char *why, size_t size)
{
    snprintf(why, size, "input has %lld tokens, more than the model's limit of %d",
             (long long)tokens, limit);
    return why;
}

/* Token ids of a "text" input (UTF-8 bytes), specials included. */
static bool tokenize_text(const embed_model *model, const nxe_tensor_desc *text, int32_t truncate,
                          embed_item *item, nxe_status *failure, char *why, size_t size)
{
    if (text->dtype_code != NXE_DL_UINT || text->dtype_bits != 8 || text->ndim != 1) {
        snprintf(why, size, "embedding: input 'text' must be u8 [n] (UTF-8 bytes)");
        return false;
    }
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    options.max_length = truncate ? model->max_seq_length : -1;
    nxe_encoding *encoding = NULL;
    nxe_status status = nxe_tokenizer_encode(model->tokenizer, text->data, (size_t)text->shape[0],
                                             &options, &encoding);
    if (status != NXE_OK) {
        *failure = status;
        snprintf(why, size, "embedding: input 'text': %s", nxe_last_error());
        return false;
    }
    if (encoding->num_tokens > model->max_seq_length) {
        too_long(encoding->num_tokens, model->max_seq_length, why, size);
        nxe_encoding_release(encoding);
        return false;
    }
    item->length = encoding->num_tokens;
    item->ids = nxe_alloc(sizeof *item->ids * (size_t)(item->length + 1));
    if (!item->ids) {
        nxe_encoding_release(encoding);
        *failure = NXE_ERROR_OUT_OF_MEMORY;
        snprintf(why, size, "embedding: out of memory");
        return false;
    }
    memcpy(item->ids, encoding->ids, sizeof *item->ids * (size_t)item->length);
    nxe_encoding_release(encoding);
    return true;
}

/* Token ids of an "input_ids" input (i32 or i64, the content without specials), checked
 * against the vocabulary, with the specials added. */
static bool take_ids(const embed_model *model, const nxe_tensor_desc *input, int32_t truncate,
                     embed_item *item, nxe_status *failure, char *why, size_t size)
{
    if (input->dtype_code != NXE_DL_INT || (input->dtype_bits != 32 && input->dtype_bits != 64) ||
        input->ndim != 1) {
        snprintf(why, size, "embedding: input 'input_ids' must be i32 or i64 [n]");
        return false;
    }
    const int32_t specials = model->num_prefix + model->num_suffix;
    int64_t n = input->shape[0];
    if (n + specials > model->max_seq_length) {
        if (!truncate) {
            too_long(n + specials, model->max_seq_length, why, size);
            return false;
        }
        n = model->max_seq_length - specials;
    }
    item->length = (int32_t)n + specials;
    item->ids = nxe_alloc(sizeof *item->ids * (size_t)item->length);
    if (!item->ids) {
        *failure = NXE_ERROR_OUT_OF_MEMORY;
        snprintf(why, size, "embedding: out of memory");
        return false;
    }
    memcpy(item->ids, model->prefix, sizeof *item->ids * (size_t)model->num_prefix);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = input->dtype_bits == 32 ? ((const int32_t *)input->data)[i]
                                             : ((const int64_t *)input->data)[i];
        if (id < 0 || id >= model->vocab_size) {
            snprintf(why, size,
                     "embedding: input_ids[%lld] is %lld, outside the vocabulary [0, %d)",
                     (long long)i, (long long)id, model->vocab_size);
            return false;
        }
        item->ids[model->num_prefix + i] = (int32_t)id;
    }
    memcpy(item->ids + model->num_prefix + n, model->suffix,
           sizeof *item->ids * (size_t)model->num_suffix);
    return true;
}

static nxe_status embed_frontend(void *user_data, void *instance, nxe_engine_batch *batch,
                                 void **out)
{
    (void)user_data;
    const embed_model *model = instance;
    const int32_t size = nxe_engine_batch_size(batch);
    embed_state *state = nxe_alloc_zeroed(sizeof *state);
    if (state)
        state->items = nxe_alloc_zeroed(sizeof *state->items * (size_t)size);
    if (!state || !state->items) {
        nxe_free(state);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "embedding: out of memory");
    }
    state->count = size;
    char why[512];
    for (int32_t r = 0; r < size; r++) {
        embed_item *item = &state->items[r];
        nxe_status failure = NXE_ERROR_INVALID_ARGUMENT;
        int32_t truncate = 0;
        why[0] = '\0';
        const nxe_engine_io *input = request_input(batch, r, why, sizeof why);
        bool ok = input && request_options(model, batch, r, item, &truncate, why, sizeof why);
        if (ok && strcmp(input->name, "text") == 0)
            ok = tokenize_text(model, &input->tensor, truncate, item, &failure, why, sizeof why);
        else if (ok)
            ok = take_ids(model, &input->tensor, truncate, item, &failure, why, sizeof why);
        if (ok)
            item->pooled = nxe_alloc(sizeof *item->pooled * (size_t)model->hidden);
        if (ok && !item->pooled) {
            failure = NXE_ERROR_OUT_OF_MEMORY;
            snprintf(why, sizeof why, "embedding: out of memory");
            ok = false;
        }
        item->ok = ok;
        if (!ok)
            nxe_engine_batch_fail(batch, r, failure, why);
    }
    *out = state;
    return NXE_OK;
}

/* ---- encoder ------------------------------------------------------------------------------- */

/* A request's place in the encoder's order: by length, longest first (ties in batch order). */
typedef struct sort_key {
    int32_t length;
    int32_t index;
} sort_key;

static int compare_length(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->length != y->length)
        return x->length > y->length ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Pools rows [0, length) of one sequence's hidden states into `out`. */
static void pool(const embed_model *model, const float *hidden, int32_t length, float *out)
{
    const int32_t h = model->hidden;
    if (model->pooling == POOL_CLS) {
        memcpy(out, hidden, sizeof *out * (size_t)h);
        return;
    }
    if (model->pooling == POOL_MAX) {
        memcpy(out, hidden, sizeof *out * (size_t)h);
        for (int32_t t = 1; t < length; t++)
            for (int32_t j = 0; j < h; j++)
                out[j] = fmaxf(out[j], hidden[(size_t)t * (size_t)h + (size_t)j]);
        return;
    }
    for (int32_t j = 0; j < h; j++) {
        double sum = 0.0;
        for (int32_t t = 0; t < length; t++)
            sum += hidden[(size_t)t * (size_t)h + (size_t)j];
        out[j] = (float)(sum / length);
    }
}

/* Runs rows `rows[0 .. count)` (indices into state->items) padded to `batch_rows` rows of
 * `length` tokens, and pools each request's hidden states. */
static nxe_status run_sub_batch(embed_model *model, embed_state *state, const int32_t *rows,
                                int32_t count, int32_t batch_rows, int32_t length)
{
    nxe_executable *exe = NULL;
    nxe_status status = variant_for(model, batch_rows, length, &exe);
    if (status != NXE_OK)
        return status;
    const size_t cells = (size_t)batch_rows * (size_t)length;
    const size_t hidden_floats = cells * (size_t)model->hidden;
    int32_t *ids = nxe_alloc(sizeof *ids * cells);
    int32_t *types = nxe_alloc_zeroed(sizeof *types * cells);
    int32_t *positions = nxe_alloc(sizeof *positions * (size_t)length);
    float *mask = nxe_alloc_zeroed(sizeof *mask * cells);
    float *hidden = nxe_alloc(sizeof *hidden * hidden_floats);
    if (!ids || !types || !positions || !mask || !hidden)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                           "embedding: out of memory for a batch of "
                           "%d x %d tokens",
                           batch_rows, length);
    if (status == NXE_OK) {
        for (size_t i = 0; i < cells; i++)
            ids[i] = model->pad_id;
        for (int32_t t = 0; t < length; t++)
            positions[t] = t;
        for (int32_t r = 0; r < count; r++) {
            const embed_item *item = &state->items[rows[r]];
            memcpy(ids + (size_t)r * (size_t)length, item->ids, sizeof *ids * (size_t)item->length);
            for (int32_t t = 0; t < item->length; t++)
                mask[(size_t)r * (size_t)length + (size_t)t] = 1.0f;
        }
        const int64_t shape[2] = {batch_rows, length};
        const int64_t position_shape[2] = {1, length};
        const int64_t hidden_shape[3] = {batch_rows, length, model->hidden};
        nxe_tensor_desc in[4] = {
            {ids, sizeof *ids * cells, 2, NXE_DL_INT, 32, 0, {shape[0], shape[1]}},
            {types, sizeof *types * cells, 2, NXE_DL_INT, 32, 0, {shape[0], shape[1]}},
            {positions,
             sizeof *positions * (size_t)length,
             2,
             NXE_DL_INT,
             32,
             0,
             {position_shape[0], position_shape[1]}},
            {mask, sizeof *mask * cells, 2, NXE_DL_FLOAT, 32, 0, {shape[0], shape[1]}},
        };
        nxe_tensor_desc out = {hidden,
                               sizeof *hidden * hidden_floats,
                               3,
                               NXE_DL_FLOAT,
                               32,
                               0,
                               {hidden_shape[0], hidden_shape[1], hidden_shape[2]}};
        status = nxe_executable_run(exe, in, 4, &out, 1);
    }
    for (int32_t r = 0; status == NXE_OK && r < count; r++) {
        embed_item *item = &state->items[rows[r]];
        pool(model, hidden + (size_t)r * (size_t)length * (size_t)model->hidden, item->length,
             item->pooled);
        item->pooled_ok = 1;
    }
    nxe_free(ids);
    nxe_free(types);
    nxe_free(positions);
    nxe_free(mask);
    nxe_free(hidden);
    return status;
}

static nxe_status embed_encoder(void *user_data, void *instance, nxe_engine_batch *batch,
                                void *opaque)
{
    (void)user_data;
    embed_model *model = instance;
    embed_state *state = opaque;
    sort_key *order = nxe_alloc(sizeof *order * (size_t)(state->count + 1));
    if (!order)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "embedding: out of memory");
    int32_t live = 0;
    for (int32_t r = 0; r < state->count; r++)
        if (state->items[r].ok)
            order[live++] = (sort_key){state->items[r].length, r};
    qsort(order, (size_t)live, sizeof *order, compare_length);
    nxe_status status = NXE_OK;
    int32_t next = 0;
    while (status == NXE_OK && next < live) {
        /* Drop what was cancelled meanwhile: the engine finishes it with its status. */
        int32_t rows[SUB_BATCH], count = 0;
        while (next < live && count < SUB_BATCH) {
            int32_t r = order[next++].index;
            if (nxe_engine_batch_cancelled(batch, r))
                state->items[r].ok = 0;
            else
                rows[count++] = r;
        }
        if (count == 0)
            break;
        const int32_t length = length_bucket(model, state->items[rows[0]].length);
        if (count == SUB_BATCH || count >= SUB_BATCH_PAD_FROM) {
            status = run_sub_batch(model, state, rows, count, SUB_BATCH, length);
        } else {
            for (int32_t i = 0; status == NXE_OK && i < count; i++) {
                if (i > 0 && nxe_engine_batch_cancelled(batch, rows[i])) {
                    state->items[rows[i]].ok = 0;
                    continue;
                }
                status = run_sub_batch(model, state, &rows[i], 1, 1,
                                       length_bucket(model, state->items[rows[i]].length));
            }
        }
    }
    nxe_free(order);
    return status;
}

/* ---- head ---------------------------------------------------------------------------------- */

/* x / max(||x||, 1e-12), as torch.nn.functional.normalize. */
static void l2_normalize(float *x, int32_t n)
{
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += (double)x[i] * (double)x[i];
    double norm = sqrt(sum);
    if (norm < 1e-12)
        norm = 1e-12;
    for (int32_t i = 0; i < n; i++)
        x[i] = (float)(x[i] / norm);
}

static nxe_status embed_head(void *user_data, void *instance, nxe_engine_batch *batch, void *opaque)
{
    (void)user_data;
    const embed_model *model = instance;
    embed_state *state = opaque;
    for (int32_t r = 0; r < state->count; r++) {
        embed_item *item = &state->items[r];
        if (!item->ok || !item->pooled_ok)
            continue;
        /* The model's own Normalize module, then truncation, then the request's. */
        if (model->normalize)
            l2_normalize(item->pooled, model->hidden);
        const int64_t dims = item->dimensions, one = 1;
        nxe_tensor_desc embedding, tokens;
        nxe_status status =
            nxe_engine_batch_add_output(batch, r, "embedding", NXE_DTYPE_F32, 1, &dims, &embedding);
        if (status == NXE_OK)
            status =
                nxe_engine_batch_add_output(batch, r, "tokens", NXE_DTYPE_I64, 1, &one, &tokens);
        if (status != NXE_OK) {
            nxe_engine_batch_fail(batch, r, status, nxe_last_error());
            continue;
        }
        float *vector = embedding.data;
        memcpy(vector, item->pooled, sizeof *vector * (size_t)dims);
        if (item->normalize)
            l2_normalize(vector, item->dimensions);
        *(int64_t *)tokens.data = item->length;
    }
    return NXE_OK;
}

nxe_status nxe_embedding_kind_register(nxe_engine *engine)
{
    nxe_engine_kind kind = {0};
    kind.struct_size = sizeof kind;
    kind.name = "embedding";
    kind.batchable = 1;
    kind.load = embed_load;
    kind.unload = embed_unload;
    kind.resident_bytes = embed_resident_bytes;
    kind.request_tokens = embed_request_tokens;
    kind.frontend = embed_frontend;
    kind.encoder = embed_encoder;
    kind.head = embed_head;
    kind.release_state = embed_release_state;
    return nxe_engine_register_kind(engine, &kind);
}
