/* tokenizer.c — the tokenizer from C: created from a tokenizer.json text and from a vocab.txt,
 * texts encoded (ids looked up in the vocabulary, offsets found in the text), four threads
 * encoding with one tokenizer at once (each result equal to the single-threaded one), then bad
 * input: NULL arguments, invalid UTF-8, malformed and unsupported tokenizer.json. Then a small
 * byte-level BPE tokenizer.json written here: merges, decode round trips, partial UTF-8, the
 * two-call pattern and skipped specials. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_tokenizer.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "tokenizer.c:%d: %s failed (last error: %s)\n", __LINE__, #cond,       \
                    nxe_last_error());                                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char JSON[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"added_tokens\": ["
    "{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, \"normalized\": false},"
    "{\"id\": 1, \"content\": \"[UNK]\", \"special\": true, \"normalized\": false},"
    "{\"id\": 2, \"content\": \"[CLS]\", \"special\": true, \"normalized\": false},"
    "{\"id\": 3, \"content\": \"[SEP]\", \"special\": true, \"normalized\": false},"
    "{\"id\": 4, \"content\": \"[MASK]\", \"special\": true, \"normalized\": false}],"
    "\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
    "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},"
    "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    "\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3], "
    "\"cls\": [\"[CLS]\", 2]},"
    "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, \"vocab\": {"
    "\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"[MASK]\": 4, \"hello\": 5, "
    "\"world\": 6, \"un\": 7, \"##aff\": 8, \"##able\": 9, \"cafe\": 10, \",\": 11, \"!\": 12, "
    "\"\\u4e2d\": 13}}}";

static const char VOCAB[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\nun\n##aff\n"
                            "##able\ncafe\n,\n!\n\xe4\xb8\xad\n";

/* Encodes `text` and checks it is [CLS], then `tokens` (each found at `at` in the text), then
 * [SEP]. */
static void expect_tokens(const nxe_tokenizer *t, const char *text, const char *const *tokens,
                          const char *const *at, int count)
{
    nxe_encoding *e = NULL;
    CHECK(nxe_tokenizer_encode(t, text, strlen(text), NULL, &e) == NXE_OK);
    if (!e)
        return;
    CHECK(e->length == count + 2 && e->num_tokens == count + 2 && e->truncated == 0);
    CHECK(e->ids[0] == nxe_tokenizer_token_to_id(t, "[CLS]"));
    CHECK(e->ids[count + 1] == nxe_tokenizer_token_to_id(t, "[SEP]"));
    for (int i = 0; i < count && e->length == count + 2; i++) {
        const char *where = strstr(text, at[i]);
        CHECK(where != NULL);
        CHECK(e->ids[i + 1] == nxe_tokenizer_token_to_id(t, tokens[i]));
        CHECK(e->offsets[2 * (i + 1)] == where - text);
        CHECK(e->offsets[2 * (i + 1) + 1] == where - text + (ptrdiff_t)strlen(at[i]));
        CHECK(e->attention_mask[i + 1] == 1 && e->type_ids[i + 1] == 0);
        CHECK(e->special_mask[i + 1] == 0);
    }
    nxe_encoding_release(e);
}

static void check_tokenizer(const nxe_tokenizer *t)
{
    const char *hello[] = {"hello", ",", "world", "!"};
    expect_tokens(t, "Hello, WORLD!", hello, (const char *[]){"Hello", ",", "WORLD", "!"}, 4);
    const char *pieces[] = {"un", "##aff", "##able"};
    expect_tokens(t, "unaffable", pieces, (const char *[]){"un", "aff", "able"}, 3);
    /* Accents go (é is two bytes), CJK is spaced out, unknown words become [UNK]. */
    const char *mixed[] = {"cafe", "\xe4\xb8\xad", "[UNK]", "[MASK]"};
    expect_tokens(t, "Caf\xc3\xa9\xe4\xb8\xadzzz[MASK]", mixed,
                  (const char *[]){"Caf\xc3\xa9", "\xe4\xb8\xad", "zzz", "[MASK]"}, 4);
    const char *none[] = {""};
    expect_tokens(t, "", none, none, 0);

    nxe_tokenizer_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(nxe_tokenizer_get_info(t, &info) == NXE_OK);
    CHECK(info.vocab_size == 14 && info.num_special == 2 && info.unk_id == 1 && info.pad_id == 0);

    /* Truncation keeps the specials; batch padding pads to the longest. */
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    options.max_length = 3;
    options.pad_to = -1;
    const char *texts[2] = {"hello world hello", "hello"};
    size_t sizes[2] = {strlen(texts[0]), strlen(texts[1])};
    nxe_encoding *batch[2] = {NULL, NULL};
    CHECK(nxe_tokenizer_encode_batch(t, texts, sizes, 2, &options, batch) == NXE_OK);
    if (batch[0] && batch[1]) {
        CHECK(batch[0]->length == 3 && batch[0]->truncated == 2 && batch[0]->ids[2] == 3);
        CHECK(batch[1]->length == 3 && batch[1]->num_tokens == 3);
    }
    nxe_encoding_release(batch[0]);
    nxe_encoding_release(batch[1]);
}

typedef struct thread_job {
    const nxe_tokenizer *tokenizer;
    int mismatches;
} thread_job;

static const char *const THREAD_TEXTS[] = {"Hello, world!", "unaffable cafe", "",
                                           "\xe4\xb8\xad\xe4\xb8\xad hello [MASK]",
                                           "zzz, un, world"};
#define THREAD_TEXT_COUNT 5

static int same_encoding(const nxe_encoding *a, const nxe_encoding *b)
{
    return a->length == b->length && !memcmp(a->ids, b->ids, (size_t)a->length * 4) &&
           !memcmp(a->offsets, b->offsets, (size_t)a->length * 16);
}

static void *encode_many(void *arg)
{
    thread_job *job = arg;
    nxe_encoding *reference[THREAD_TEXT_COUNT];
    for (int i = 0; i < THREAD_TEXT_COUNT; i++)
        nxe_tokenizer_encode(job->tokenizer, THREAD_TEXTS[i], strlen(THREAD_TEXTS[i]), NULL,
                             &reference[i]);
    for (int round = 0; round < 200; round++) {
        int i = round % THREAD_TEXT_COUNT;
        nxe_encoding *e = NULL;
        if (nxe_tokenizer_encode(job->tokenizer, THREAD_TEXTS[i], strlen(THREAD_TEXTS[i]), NULL,
                                 &e) != NXE_OK ||
            !reference[i] || !same_encoding(e, reference[i]))
            job->mismatches++;
        nxe_encoding_release(e);
    }
    for (int i = 0; i < THREAD_TEXT_COUNT; i++)
        nxe_encoding_release(reference[i]);
    return NULL;
}

static void check_threads(const nxe_tokenizer *t)
{
    pthread_t threads[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job){t, 0};
        CHECK(pthread_create(&threads[i], NULL, encode_many, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].mismatches == 0);
    }
}

static void check_errors(const nxe_tokenizer *t)
{
    nxe_tokenizer *made = (nxe_tokenizer *)&failures;
    CHECK(nxe_tokenizer_create(NULL, 0, &made) == NXE_ERROR_INVALID_ARGUMENT && made == NULL);
    CHECK(nxe_tokenizer_create(JSON, sizeof JSON - 1, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    made = (nxe_tokenizer *)&failures;
    CHECK(nxe_tokenizer_create("{\"model\": [1,", 13, &made) == NXE_ERROR_FORMAT && !made);
    CHECK(strstr(nxe_last_error(), "at byte 13") != NULL);
    const char bpe[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}";
    CHECK(nxe_tokenizer_create(bpe, sizeof bpe - 1, &made) == NXE_ERROR_UNSUPPORTED && !made);
    CHECK(strstr(nxe_last_error(), "BPE") != NULL);
    const char bad_id[] = "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"u\", "
                          "\"vocab\": {\"u\": \"0\"}}}";
    CHECK(nxe_tokenizer_create(bad_id, sizeof bad_id - 1, &made) == NXE_ERROR_FORMAT && !made);

    nxe_encoding *e = (nxe_encoding *)&failures;
    CHECK(nxe_tokenizer_encode(NULL, "a", 1, NULL, &e) == NXE_ERROR_INVALID_ARGUMENT && !e);
    CHECK(nxe_tokenizer_encode(t, "a", 1, NULL, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    e = (nxe_encoding *)&failures;
    CHECK(nxe_tokenizer_encode(t, "ok \xc3(", 5, NULL, &e) == NXE_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(nxe_last_error(), "at byte 3") != NULL);
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    options.struct_size = 4;
    CHECK(nxe_tokenizer_encode(t, "a", 1, &options, &e) == NXE_ERROR_INVALID_ARGUMENT);
    const char *texts[2] = {"fine", "\xff"};
    size_t sizes[2] = {4, 1};
    nxe_encoding *batch[2] = {(nxe_encoding *)&failures, (nxe_encoding *)&failures};
    CHECK(nxe_tokenizer_encode_batch(t, texts, sizes, 2, NULL, batch) ==
              NXE_ERROR_INVALID_ARGUMENT &&
          !batch[0] && !batch[1]);
    CHECK(strstr(nxe_last_error(), "text 1") != NULL);
    CHECK(nxe_tokenizer_get_info(t, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_tokenizer_token_to_id(t, NULL) == -1);
    nxe_tokenizer_release(NULL);
    nxe_encoding_release(NULL);
}

/* The character GPT-2's byte-level alphabet writes for byte b (the test's own derivation):
 * printable Latin-1 bytes stand for themselves, the others for 256 + their rank among them. */
static unsigned byte_char(unsigned b)
{
    unsigned rank = 0;
    for (unsigned k = 0; k <= b; k++) {
        int printable = (k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE;
        if (k == b)
            return printable ? b : 256 + rank;
        rank += !printable;
    }
    return 0;
}

/* A byte-level BPE tokenizer.json: the 256 byte characters (ids 0 .. 255), "he" 256, "ll" 257,
 * "hell" 258, "hello" 259, "\u0120hello" 260 (a space then hello), the special added token
 * <|endoftext|> 261 appended by the template. */
static char *bpe_json(void)
{
    size_t capacity = 16384, n = 0;
    char *json = malloc(capacity);
    if (!json)
        return NULL;
    n += (size_t)snprintf(json + n, capacity - n,
                          "{\"added_tokens\": [{\"id\": 261, \"content\": \"<|endoftext|>\", "
                          "\"special\": true, \"normalized\": false}], \"normalizer\": null, "
                          "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                          "false, \"use_regex\": true}, \"decoder\": {\"type\": \"ByteLevel\"}, "
                          "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
                          "[{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": "
                          "{\"id\": \"<|endoftext|>\", \"type_id\": 0}}], \"special_tokens\": "
                          "{\"<|endoftext|>\": {\"id\": \"<|endoftext|>\", \"ids\": [261]}}}, "
                          "\"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (unsigned b = 0; b < 256; b++)
        n += (size_t)snprintf(json + n, capacity - n, "\"\\u%04x\": %u, ", byte_char(b), b);
    snprintf(json + n, capacity - n,
             "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\\u0120hello\": 260}, "
             "\"merges\": [\"h e\", \"l l\", \"he ll\", \"hell o\", \"\\u0120 hello\"]}}");
    return json;
}

/* Decodes ids with the two-call pattern and compares with `expected`. */
static void expect_decode(const nxe_tokenizer *t, const int32_t *ids, int64_t count, int32_t flags,
                          const char *expected)
{
    size_t length = 12345;
    nxe_status first = nxe_tokenizer_decode(t, ids, count, flags, NULL, 0, &length);
    CHECK(length == strlen(expected));
    CHECK(first == (length ? NXE_ERROR_BUFFER_TOO_SMALL : NXE_OK));
    char out[256];
    memset(out, '#', sizeof out);
    if (length > 0) {
        CHECK(nxe_tokenizer_decode(t, ids, count, flags, out, length - 1, &length) ==
              NXE_ERROR_BUFFER_TOO_SMALL);
        CHECK(out[0] == '#'); /* nothing written */
    }
    CHECK(nxe_tokenizer_decode(t, ids, count, flags, out, sizeof out, &length) == NXE_OK);
    CHECK(length == strlen(expected) && memcmp(out, expected, length) == 0);
}

static void check_bpe(void)
{
    char *json = bpe_json();
    nxe_tokenizer *t = NULL;
    CHECK(json && nxe_tokenizer_create(json, strlen(json), &t) == NXE_OK);
    free(json);
    if (!t)
        return;
    int32_t size = 0;
    CHECK(nxe_tokenizer_vocab_size(t, &size) == NXE_OK && size == 262);
    CHECK(nxe_tokenizer_token_to_id(t, "\xc4\xa0hello") == 260);
    CHECK(nxe_tokenizer_token_to_id(t, "<|endoftext|>") == 261);

    /* "hello hello": the merges give hello, then a space and hello; the template appends 261. */
    nxe_encoding *e = NULL;
    CHECK(nxe_tokenizer_encode(t, "hello hello", 11, NULL, &e) == NXE_OK);
    if (e) {
        CHECK(e->length == 3 && e->ids[0] == 259 && e->ids[1] == 260 && e->ids[2] == 261);
        CHECK(e->offsets[0] == 0 && e->offsets[1] == 5 && e->offsets[2] == 5 &&
              e->offsets[3] == 11 && e->special_mask[2] == 1);
        expect_decode(t, e->ids, e->length, 0, "hello hello<|endoftext|>");
        expect_decode(t, e->ids, e->length, NXE_DECODE_SKIP_SPECIAL, "hello hello");
    }
    nxe_encoding_release(e);

    /* Round trips: every byte of these texts has its own token, so decode gives them back. */
    const char *texts[] = {"", "h\xc3\xa9llo w\xc3\xb6rld",
                           "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80!", "  spaces   and\ttabs\n\n",
                           "it's <|endoftext|> hello"};
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    options.add_special_tokens = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        e = NULL;
        CHECK(nxe_tokenizer_encode(t, texts[i], strlen(texts[i]), &options, &e) == NXE_OK);
        if (e)
            expect_decode(t, e->ids, e->length, 0, texts[i]);
        nxe_encoding_release(e);
    }
    /* Partial UTF-8: the first byte of a three-byte character (a byte's id is the byte),
     * alone or before "he". */
    int32_t partial[2] = {0xE4, 256};
    expect_decode(t, partial, 1, 0, "\xef\xbf\xbd");
    expect_decode(t, partial, 2, 0, "\xef\xbf\xbdhe");

    /* Bad ids and arguments. */
    int32_t bad[2] = {5, 262};
    size_t length = 7;
    char out[8];
    CHECK(nxe_tokenizer_decode(t, bad, 2, 0, out, sizeof out, &length) ==
              NXE_ERROR_INVALID_ARGUMENT &&
          length == 0);
    CHECK(strstr(nxe_last_error(), "ids[1] = 262") != NULL);
    bad[1] = -3;
    CHECK(nxe_tokenizer_decode(t, bad, 2, 0, out, sizeof out, &length) ==
          NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_tokenizer_decode(t, NULL, 1, 0, out, sizeof out, &length) ==
          NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_tokenizer_decode(t, bad, 1, 2, out, sizeof out, &length) ==
          NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_tokenizer_decode(t, bad, 1, 0, out, sizeof out, NULL) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_tokenizer_vocab_size(NULL, &size) == NXE_ERROR_INVALID_ARGUMENT && size == 0);
    check_threads(t);
    nxe_tokenizer_release(t);
}

int main(void)
{
    nxe_tokenizer *from_json = NULL, *from_vocab = NULL;
    CHECK(nxe_tokenizer_create(JSON, sizeof JSON - 1, &from_json) == NXE_OK);
    CHECK(nxe_tokenizer_create_from_vocab(VOCAB, sizeof VOCAB - 1, NULL, &from_vocab) == NXE_OK);
    if (from_json && from_vocab) {
        check_tokenizer(from_json);
        check_tokenizer(from_vocab);
        check_threads(from_json);
        check_errors(from_json);
        /* The WordPiece decoder: pieces joined, "##" glued, spaces before punctuation gone. */
        nxe_encoding *e = NULL;
        CHECK(nxe_tokenizer_encode(from_vocab, "Hello, unaffable world!", 23, NULL, &e) == NXE_OK);
        if (e) {
            expect_decode(from_vocab, e->ids, e->length, NXE_DECODE_SKIP_SPECIAL,
                          "hello, unaffable world!");
            /* JSON has no decoder: tokenizers joins the tokens with spaces. */
            expect_decode(from_json, e->ids, e->length, 0,
                          "[CLS] hello , un ##aff ##able world ! [SEP]");
        }
        nxe_encoding_release(e);
    }
    check_bpe();
    nxe_tokenizer_release(from_json);
    nxe_tokenizer_release(from_vocab);
    if (failures)
        fprintf(stderr, "tokenizer.c: %d failures\n", failures);
    return failures ? 1 : 0;
}
