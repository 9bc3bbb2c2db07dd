/* embedding.c — the engine's built-in "embedding" kind from C: text in, vectors out.
 *
 * The test writes its own embedding model file: a tokenizer.json over a small vocabulary and
 * an encoder graph with the kind's inputs and output (hidden = tanh(LayerNorm(word + segment +
 * position embeddings)) times the attention mask), weights from a seed, and the metadata of a
 * baked embedding model (mean pooling, normalized). Its reference is computed here in double
 * precision from the same weights, on token ids looked up word by word in the vocabulary
 * ([CLS] words [SEP]): the engine's answers to text requests (tokenized by the library,
 * batched, padded to a length bucket, pooled and normalized by the kind) must match it within
 * 1e-5, and so must the cosine of two sentences. Also: token ids equal text, Matryoshka
 * dimensions, an input over the limit failing alone (or truncated when asked), and bytes that
 * are not UTF-8. Run under ASan/LSan and TSan in CI. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nxe/nxe_engine.h>
#include <nxe/nxe_tokenizer.h>

#define HIDDEN 8
#define MAX_SEQ 16
#define TOL 1e-5

static int checks;
static int failures;

static void check(bool ok, const char *what, int line)
{
    checks++;
    if (!ok) {
        fprintf(stderr, "embedding.c:%d: %s (last error: \"%s\")\n", line, what, nxe_last_error());
        failures++;
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_OK(call) check((call) == NXE_OK, #call, __LINE__)

static const char *const VOCAB[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat",
                                    "sat",   "on",    "mat",   "a",     "dog", "ran",
                                    "in",    "park",  "quick", "brown", "fox", "jumps"};
#define VOCAB_SIZE ((int32_t)(sizeof VOCAB / sizeof VOCAB[0]))

static const char *const SENTENCES[] = {"the cat sat on the mat", "a dog ran in the park",
                                        "the quick brown fox jumps"};
#define NUM_SENTENCES 3

/* The weights: embedding tables and the LayerNorm's scale and offset. */
static float words[VOCAB_SIZE * HIDDEN], segments[2 * HIDDEN], positions[MAX_SEQ * HIDDEN];
static float gamma_[HIDDEN], beta_[HIDDEN];

static void fill(float *values, size_t count, uint32_t seed, float offset)
{
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        values[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f + offset;
    }
}

static nxe_tensor *tensor(nxe_graph *graph, const char *name, int32_t kind, int32_t dtype,
                          int32_t ndim, const int64_t *shape, const float *data, size_t count)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.kind = kind;
    spec.dtype = dtype;
    spec.ndim = ndim;
    spec.shape = shape;
    nxe_tensor *out = NULL;
    CHECK_OK(nxe_graph_add_tensor(graph, &spec, &out));
    if (data && out)
        CHECK_OK(nxe_tensor_set_data(out, data, sizeof *data * count));
    return out;
}

static nxe_tensor *transient(nxe_graph *graph, const char *name)
{
    return tensor(graph, name, NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, -1, NULL, NULL, 0);
}

static nxe_op *op(nxe_graph *graph, const char *type, nxe_tensor *const *in, int32_t n_in,
                  nxe_tensor *out)
{
    nxe_op *made = NULL;
    CHECK_OK(nxe_graph_add_op(graph, type, NULL, &made));
    if (made) {
        CHECK_OK(nxe_op_bind_inputs(made, in, n_in));
        CHECK_OK(nxe_op_bind_outputs(made, &out, 1));
    }
    return made;
}

/* The encoder graph, stored for one sequence of MAX_SEQ tokens (the kind sets other shapes). */
static nxe_graph *build_graph(nxe_context *ctx)
{
    nxe_graph *graph = NULL;
    CHECK_OK(nxe_graph_create(ctx, &graph));
    const int64_t seq[2] = {1, MAX_SEQ}, word_shape[2] = {VOCAB_SIZE, HIDDEN},
                  segment_shape[2] = {2, HIDDEN}, position_shape[2] = {MAX_SEQ, HIDDEN},
                  vector[1] = {HIDDEN};
    nxe_tensor *ids = tensor(graph, "input_ids", NXE_TENSOR_INPUT, NXE_DTYPE_I32, 2, seq, NULL, 0);
    nxe_tensor *types =
        tensor(graph, "token_type_ids", NXE_TENSOR_INPUT, NXE_DTYPE_I32, 2, seq, NULL, 0);
    nxe_tensor *places =
        tensor(graph, "position_ids", NXE_TENSOR_INPUT, NXE_DTYPE_I32, 2, seq, NULL, 0);
    nxe_tensor *mask =
        tensor(graph, "attention_mask", NXE_TENSOR_INPUT, NXE_DTYPE_F32, 2, seq, NULL, 0);
    nxe_tensor *w = tensor(graph, "words", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2, word_shape, words,
                           VOCAB_SIZE * HIDDEN);
    nxe_tensor *t = tensor(graph, "segments", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2, segment_shape,
                           segments, 2 * HIDDEN);
    nxe_tensor *p = tensor(graph, "positions", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 2,
                           position_shape, positions, MAX_SEQ * HIDDEN);
    nxe_tensor *g =
        tensor(graph, "gamma", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 1, vector, gamma_, HIDDEN);
    nxe_tensor *b =
        tensor(graph, "beta", NXE_TENSOR_CONSTANT, NXE_DTYPE_F32, 1, vector, beta_, HIDDEN);
    nxe_tensor *we = transient(graph, "we"), *te = transient(graph, "te"),
               *pe = transient(graph, "pe"), *s1 = transient(graph, "s1"),
               *s2 = transient(graph, "s2"), *norm = transient(graph, "norm"),
               *act = transient(graph, "act"), *m3 = transient(graph, "mask3");
    nxe_tensor *hidden =
        tensor(graph, "hidden_states", NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, -1, NULL, NULL, 0);
    op(graph, "Gather", (nxe_tensor *[]){w, ids}, 2, we);
    op(graph, "Gather", (nxe_tensor *[]){t, types}, 2, te);
    op(graph, "Gather", (nxe_tensor *[]){p, places}, 2, pe);
    op(graph, "Add", (nxe_tensor *[]){we, te}, 2, s1);
    op(graph, "Add", (nxe_tensor *[]){s1, pe}, 2, s2);
    nxe_op *layer_norm = op(graph, "LayerNorm", (nxe_tensor *[]){s2, g, b}, 3, norm);
    if (layer_norm)
        CHECK_OK(nxe_op_set_attr_float(layer_norm, "epsilon", 1e-12));
    op(graph, "Tanh", (nxe_tensor *[]){norm}, 1, act);
    nxe_op *reshape = op(graph, "Reshape", (nxe_tensor *[]){mask}, 1, m3);
    const int64_t mask_shape[3] = {0, 0, 1};
    if (reshape)
        CHECK_OK(nxe_op_set_attr_ints(reshape, "shape", mask_shape, 3));
    op(graph, "Mul", (nxe_tensor *[]){act, m3}, 2, hidden);
    return graph;
}

/* Appends printf-formatted text to buf (capacity `size`, `*used` bytes so far). */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int wrote = vsnprintf(buf + *used, size - *used, fmt, args);
    va_end(args);
    if (wrote > 0 && (size_t)wrote < size - *used)
        *used += (size_t)wrote;
    else
        check(false, "the metadata buffer is too small", __LINE__);
}

/* The metadata of a baked embedding model with its tokenizer.json (WordPiece over VOCAB,
 * BERT's normalizer and pre-tokenizer, [CLS] .. [SEP]) in `buf`. */
static void write_metadata(char *buf, size_t size)
{
    size_t used = 0;
    append(buf, size, &used,
           "{\"task\": \"embedding\", \"architecture\": \"bert\", \"name\": \"c-test\", "
           "\"precision\": \"fp32\", \"max_seq_length\": %d, \"dimensions\": %d, "
           "\"pooling\": \"mean\", \"normalize\": true, ",
           MAX_SEQ, HIDDEN);
    append(buf, size, &used,
           "\"config\": {\"hidden\": %d, \"heads\": 1, \"intermediate\": 8, \"layers\": 0, "
           "\"layer_norm_eps\": 1e-12, \"type_vocab_size\": 2, \"vocab_size\": %d, "
           "\"max_position_embeddings\": %d}, ",
           HIDDEN, VOCAB_SIZE, MAX_SEQ);
    append(buf, size, &used,
           "\"tokenizer\": {\"version\": \"1.0\", \"truncation\": null, \"padding\": null, "
           "\"added_tokens\": [], \"normalizer\": {\"type\": \"BertNormalizer\", "
           "\"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": null, "
           "\"lowercase\": true}, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, ");
    append(buf, size, &used,
           "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
           "[{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": "
           "\"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}], "
           "\"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": "
           "\"B\", \"type_id\": 1}}], \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", "
           "\"ids\": [2], \"tokens\": [\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": "
           "[3], \"tokens\": [\"[SEP]\"]}}}, ");
    append(buf, size, &used,
           "\"decoder\": null, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
           "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, "
           "\"vocab\": {");
    for (int32_t i = 0; i < VOCAB_SIZE; i++)
        append(buf, size, &used, "%s\"%s\": %d", i ? ", " : "", VOCAB[i], i);
    append(buf, size, &used, "}}}}");
}

static void write_model(const char *path)
{
    fill(words, VOCAB_SIZE * HIDDEN, 11, 0.0f);
    fill(segments, 2 * HIDDEN, 12, 0.0f);
    fill(positions, MAX_SEQ * HIDDEN, 13, 0.0f);
    fill(gamma_, HIDDEN, 14, 1.0f);
    fill(beta_, HIDDEN, 15, 0.0f);
    static char metadata[8192];
    write_metadata(metadata, sizeof metadata);
    nxe_context *ctx = NULL;
    CHECK_OK(nxe_context_create(&ctx));
    nxe_graph *graph = build_graph(ctx);
    nxe_model_write_options options = NXE_MODEL_WRITE_OPTIONS_INIT;
    options.metadata_json = metadata;
    size_t size = 0;
    CHECK_OK(nxe_graph_save_model(graph, &options, NULL, &size));
    void *buffer = malloc(size);
    CHECK(buffer != NULL);
    if (buffer) {
        CHECK_OK(nxe_graph_save_model(graph, &options, buffer, &size));
        FILE *file = fopen(path, "wb");
        CHECK(file != NULL);
        if (file) {
            CHECK(fwrite(buffer, 1, size, file) == size);
            fclose(file);
        }
    }
    free(buffer);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
}

/* ---- the reference -------------------------------------------------------------------------- */

/* [CLS] + the id of each space-separated word + [SEP]: the vocabulary looked up word by word
 * (every test sentence is lowercase words of the vocabulary). Returns the token count. */
static int32_t reference_ids(const char *sentence, int32_t *ids, int32_t capacity)
{
    int32_t n = 0;
    ids[n++] = 2;
    const char *word = sentence;
    while (*word && n < capacity - 1) {
        size_t len = strcspn(word, " ");
        int32_t id = 1;
        for (int32_t v = 0; v < VOCAB_SIZE; v++)
            if (strlen(VOCAB[v]) == len && strncmp(VOCAB[v], word, len) == 0)
                id = v;
        ids[n++] = id;
        word += len;
        word += *word == ' ';
    }
    ids[n++] = 3;
    return n;
}

/* The model in double precision: mean over the tokens of tanh(LayerNorm(w + s + p)), then
 * normalized to unit length. */
static void reference_embedding(const int32_t *ids, int32_t n, double *out)
{
    for (int32_t j = 0; j < HIDDEN; j++)
        out[j] = 0.0;
    for (int32_t t = 0; t < n; t++) {
        double x[HIDDEN], mean = 0.0, var = 0.0;
        for (int32_t j = 0; j < HIDDEN; j++) {
            x[j] = (double)words[ids[t] * HIDDEN + j] + (double)segments[j] +
                   (double)positions[t * HIDDEN + j];
            mean += x[j] / HIDDEN;
        }
        for (int32_t j = 0; j < HIDDEN; j++)
            var += (x[j] - mean) * (x[j] - mean) / HIDDEN;
        for (int32_t j = 0; j < HIDDEN; j++)
            out[j] += tanh((x[j] - mean) / sqrt(var + 1e-12) * gamma_[j] + beta_[j]) / n;
    }
    double norm = 0.0;
    for (int32_t j = 0; j < HIDDEN; j++)
        norm += out[j] * out[j];
    for (int32_t j = 0; j < HIDDEN; j++)
        out[j] /= sqrt(norm);
}

static double cosine(const double *a, const double *b, int32_t n)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int32_t i = 0; i < n; i++) {
        ab += a[i] * b[i];
        aa += a[i] * a[i];
        bb += b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* ---- the engine ----------------------------------------------------------------------------- */

static nxe_engine_io text_input(const char *text)
{
    nxe_engine_io io = {"text", {(void *)text, strlen(text), 1, NXE_DL_UINT, 8, 0, {0}}};
    io.tensor.shape[0] = (int64_t)strlen(text);
    return io;
}

/* The request's "embedding" (as doubles, `dims` of them) and "tokens"; false if it failed. */
static bool answer(nxe_engine_request *request, double *vector, int32_t dims, int64_t *tokens)
{
    CHECK_OK(nxe_engine_request_wait(request, 60.0));
    if (nxe_engine_request_status(request) != NXE_OK)
        return false;
    int32_t count = 0;
    CHECK_OK(nxe_engine_request_output_count(request, &count));
    CHECK(count == 2);
    nxe_engine_io out;
    CHECK_OK(nxe_engine_request_output(request, 0, &out));
    CHECK(strcmp(out.name, "embedding") == 0 && out.tensor.ndim == 1 &&
          out.tensor.shape[0] == dims && out.tensor.dtype_code == NXE_DL_FLOAT);
    for (int32_t j = 0; j < dims && out.tensor.shape[0] == dims; j++)
        vector[j] = ((const float *)out.tensor.data)[j];
    CHECK_OK(nxe_engine_request_output(request, 1, &out));
    CHECK(strcmp(out.name, "tokens") == 0 && out.tensor.shape[0] == 1);
    *tokens = *(const int64_t *)out.tensor.data;
    return true;
}

static double max_difference(const double *a, const double *b, int32_t n)
{
    double worst = 0.0;
    for (int32_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]));
    return worst;
}

static void test_text_in_vectors_out(nxe_engine *engine)
{
    /* The sentences together (one batch: they are queued before the worker's delay ends). */
    nxe_engine_request *requests[NUM_SENTENCES] = {NULL};
    for (int32_t s = 0; s < NUM_SENTENCES; s++) {
        nxe_engine_io in = text_input(SENTENCES[s]);
        CHECK_OK(nxe_engine_submit(engine, "minibert", &in, 1, NULL, &requests[s]));
    }
    double got[NUM_SENTENCES][HIDDEN], want[NUM_SENTENCES][HIDDEN];
    for (int32_t s = 0; s < NUM_SENTENCES; s++) {
        int32_t ids[MAX_SEQ];
        int32_t n = reference_ids(SENTENCES[s], ids, MAX_SEQ);
        reference_embedding(ids, n, want[s]);
        int64_t tokens = 0;
        CHECK(requests[s] && answer(requests[s], got[s], HIDDEN, &tokens));
        CHECK(tokens == n);
        CHECK(max_difference(got[s], want[s], HIDDEN) <= TOL);
        nxe_engine_request_timing timing = {.struct_size = sizeof timing};
        CHECK_OK(nxe_engine_request_get_timing(requests[s], &timing));
        CHECK(timing.batch_size == NUM_SENTENCES);
        nxe_engine_request_release(requests[s]);
    }
    double want_cos = cosine(want[0], want[1], HIDDEN), got_cos = cosine(got[0], got[1], HIDDEN);
    printf("embedding: cosine of the first two sentences %.6f (reference %.6f)\n", got_cos,
           want_cos);
    CHECK(fabs(got_cos - want_cos) <= TOL);
    CHECK(fabs(cosine(got[0], got[0], HIDDEN) - 1.0) <= TOL);

    /* Token ids (content only) give what the text gives. */
    int32_t ids[MAX_SEQ];
    int32_t n = reference_ids(SENTENCES[1], ids, MAX_SEQ);
    int64_t content[MAX_SEQ];
    for (int32_t i = 1; i < n - 1; i++)
        content[i - 1] = ids[i];
    nxe_engine_io in = {
        "input_ids", {content, sizeof *content * (size_t)(n - 2), 1, NXE_DL_INT, 64, 0, {n - 2}}};
    nxe_engine_request *request = NULL;
    CHECK_OK(nxe_engine_submit(engine, "minibert", &in, 1, NULL, &request));
    double from_ids[HIDDEN];
    int64_t tokens = 0;
    CHECK(request && answer(request, from_ids, HIDDEN, &tokens));
    CHECK(tokens == n && max_difference(from_ids, got[1], HIDDEN) <= 1e-6);
    nxe_engine_request_release(request);

    /* Matryoshka: the first 4 dimensions, normalized again. */
    nxe_engine_option option = {"dimensions", "4"};
    nxe_engine_submit_options submit = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.options = &option;
    submit.num_options = 1;
    in = text_input(SENTENCES[0]);
    CHECK_OK(nxe_engine_submit(engine, "minibert", &in, 1, &submit, &request));
    double short_vector[4], short_want[4], norm = 0.0;
    for (int32_t j = 0; j < 4; j++)
        norm += want[0][j] * want[0][j];
    for (int32_t j = 0; j < 4; j++)
        short_want[j] = want[0][j] / sqrt(norm);
    CHECK(request && answer(request, short_vector, 4, &tokens));
    CHECK(max_difference(short_vector, short_want, 4) <= TOL);
    nxe_engine_request_release(request);
}

static void test_bad_inputs_fail_alone(nxe_engine *engine)
{
    const char *too_long = "the cat the cat the cat the cat the cat the cat the cat the cat";
    const char not_utf8[] = {'t', 'h', 'e', ' ', (char)0xff, (char)0xfe, 0};
    nxe_engine_io inputs[3] = {text_input(too_long), text_input(not_utf8),
                               text_input(SENTENCES[2])};
    nxe_engine_request *requests[3] = {NULL};
    for (int32_t i = 0; i < 3; i++)
        CHECK_OK(nxe_engine_submit(engine, "minibert", &inputs[i], 1, NULL, &requests[i]));
    for (int32_t i = 0; i < 3; i++)
        CHECK_OK(nxe_engine_request_wait(requests[i], 60.0));
    CHECK(nxe_engine_request_status(requests[0]) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(nxe_engine_request_error(requests[0]),
                 "input has 18 tokens, more than the model's limit of 16") != NULL);
    CHECK(nxe_engine_request_status(requests[1]) == NXE_ERROR_INVALID_ARGUMENT);
    double vector[HIDDEN];
    int64_t tokens = 0;
    CHECK(answer(requests[2], vector, HIDDEN, &tokens));
    for (int32_t i = 0; i < 3; i++)
        nxe_engine_request_release(requests[i]);

    /* Truncated on request: [CLS] and the first 14 words and [SEP]. */
    nxe_engine_option option = {"truncate", "true"};
    nxe_engine_submit_options submit = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.options = &option;
    submit.num_options = 1;
    nxe_engine_request *request = NULL;
    CHECK_OK(nxe_engine_submit(engine, "minibert", &inputs[0], 1, &submit, &request));
    int32_t ids[32];
    int32_t n = reference_ids(too_long, ids, 32);
    CHECK(n == 18);
    ids[MAX_SEQ - 1] = 3;
    double want[HIDDEN];
    reference_embedding(ids, MAX_SEQ, want);
    CHECK(request && answer(request, vector, HIDDEN, &tokens));
    CHECK(tokens == MAX_SEQ && max_difference(vector, want, HIDDEN) <= TOL);
    nxe_engine_request_release(request);
}

int main(void)
{
    char folder[64], path[128];
    snprintf(folder, sizeof folder, "/tmp/nxe-embedding-XXXXXX");
    if (!mkdtemp(folder)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/minibert.nxm", folder);
    write_model(path);

    nxe_engine *engine = NULL;
    CHECK_OK(nxe_engine_create(NULL, &engine));
    nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
    spec.name = "minibert";
    spec.kind = "embedding";
    spec.path = path;
    spec.max_batch_size = 8;
    spec.max_batch_delay_ms = 500;
    CHECK_OK(nxe_engine_add_model(engine, &spec));
    CHECK_OK(nxe_engine_load_model(engine, "minibert"));
    if (engine) {
        test_text_in_vectors_out(engine);
        test_bad_inputs_fail_alone(engine);
    }
    nxe_engine_release(engine);
    remove(path);
    rmdir(folder);
    printf("embedding: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
