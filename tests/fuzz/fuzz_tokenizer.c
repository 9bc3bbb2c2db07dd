/* fuzz_tokenizer.c — libFuzzer harness over the tokenizer: the input is a tokenizer.json, then
 * the bytes 0xFF 0x00, then a text (no separator: the whole input is both). Any tokenizer.json
 * must create a tokenizer or fail with a format, unsupported or memory status and a message;
 * any text must encode (with that tokenizer and two fixed ones, WordPiece and byte-level BPE)
 * or fail as invalid UTF-8, every encoding must hold ids in the vocabulary and offsets inside
 * the text, its ids must decode (or the decoder be unsupported) with the two-call pattern
 * agreeing, and the text's bytes read as ids must decode or be refused as bad ids. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_tokenizer.h>

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_tokenizer: %s failed: %s\n", #cond, nxe_last_error());           \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

/* A small tokenizer with every component the library implements. */
static const char FIXED_JSON[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, \"normalized\": "
    "false}, {\"id\": 1, \"content\": \"[UNK]\", \"special\": true, \"normalized\": false}, "
    "{\"id\": 2, \"content\": \"[CLS]\", \"special\": true, \"normalized\": false}, {\"id\": 3, "
    "\"content\": \"[SEP]\", \"special\": true, \"normalized\": false}, {\"id\": 4, \"content\": "
    "\"[MASK]\", \"special\": true, \"normalized\": false, \"lstrip\": true, \"rstrip\": true}, "
    "{\"id\": 17, \"content\": \"A B\", \"special\": false, \"normalized\": true}],"
    "\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
    "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},"
    "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
    "{\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, "
    "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}], \"special_tokens\": {\"[CLS]\": "
    "{\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": [\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", "
    "\"ids\": [3], \"tokens\": [\"[SEP]\"]}}},"
    "\"truncation\": {\"max_length\": 16, \"direction\": \"Right\"},"
    "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 12, \"vocab\": "
    "{\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"[MASK]\": 4, \"a\": 5, \"b\": 6, "
    "\"##a\": 7, \"##b\": 8, \"ab\": 9, \"e\": 10, \"##e\": 11, \"\\u4e2d\": 12, \".\": 13, "
    "\"\\u00df\": 14, \"i\": 15, \"##\\u0307\": 16}}}";

/* A byte-level BPE tokenizer.json with every BPE component: the byte characters but the first
 * nine bytes' (those become the fused unknown token), merges as pairs, ignore_merges, a prefix
 * space, offset trimming, a special and an lstrip/rstrip added token. */
static char *bpe_json(void)
{
    size_t capacity = 16384, n = 0;
    char *json = malloc(capacity);
    if (!json)
        return NULL;
    n += (size_t)snprintf(
        json + n, capacity - n,
        "{\"added_tokens\": [{\"id\": 260, \"content\": \"<|endoftext|>\", \"special\": "
        "true}, {\"id\": 261, \"content\": \" sp \", \"lstrip\": true, \"rstrip\": true}], "
        "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true}, "
        "\"post_processor\": {\"type\": \"ByteLevel\", \"trim_offsets\": true}, "
        "\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", "
        "\"unk_token\": \"<unk>\", \"fuse_unk\": true, \"ignore_merges\": true, \"vocab\": {");
    unsigned rank = 0;
    for (unsigned b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned c = printable ? b : 256 + rank++;
        if (b >= 9)
            n += (size_t)snprintf(json + n, capacity - n, "\"\\u%04x\": %u, ", c, b);
    }
    snprintf(json + n, capacity - n,
             "\"<unk>\": 0, \"ab\": 256, \"abc\": 257, \"\\u0120a\": 258, \"\\u0120abc\": 259}, "
             "\"merges\": [[\"a\", \"b\"], [\"ab\", \"c\"], [\"\\u0120\", \"a\"], "
             "[\"\\u0120\", \"abc\"]]}}");
    return json;
}

/* Decodes `count` ids both ways (the size, then the text), or sees them refused. */
static void check_decode(const nxe_tokenizer *t, const int32_t *ids, int64_t count, int valid)
{
    for (int32_t flags = 0; flags <= NXE_DECODE_SKIP_SPECIAL; flags++) {
        size_t length = 0;
        nxe_status status = nxe_tokenizer_decode(t, ids, count, flags, NULL, 0, &length);
        if (status == NXE_ERROR_UNSUPPORTED || (!valid && status == NXE_ERROR_INVALID_ARGUMENT)) {
            REQUIRE(length == 0 && nxe_last_error()[0] != '\0');
            return;
        }
        REQUIRE(status == NXE_OK || status == NXE_ERROR_BUFFER_TOO_SMALL);
        REQUIRE((status == NXE_OK) == (length == 0));
        char *out = malloc(length + 1);
        REQUIRE(out != NULL);
        size_t again = 0;
        REQUIRE(nxe_tokenizer_decode(t, ids, count, flags, out, length, &again) == NXE_OK);
        REQUIRE(again == length);
        free(out);
    }
}

static void check_encoding(const nxe_encoding *e, const nxe_tokenizer_info *info, size_t size)
{
    REQUIRE(e->length >= e->num_tokens && e->num_tokens >= 0 && e->truncated >= 0);
    for (int32_t i = 0; i < e->length; i++) {
        REQUIRE(e->ids[i] >= 0 && e->ids[i] < info->vocab_size);
        REQUIRE(e->attention_mask[i] == (i < e->num_tokens));
        REQUIRE(e->offsets[2 * i] >= 0 && e->offsets[2 * i] <= e->offsets[2 * i + 1] &&
                (size_t)e->offsets[2 * i + 1] <= size);
    }
}

static void encode_all_ways(const nxe_tokenizer *t, const char *text, size_t size)
{
    nxe_tokenizer_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    REQUIRE(nxe_tokenizer_get_info(t, &info) == NXE_OK);
    nxe_tokenizer_options options = NXE_TOKENIZER_OPTIONS_INIT;
    unsigned char pick = size ? (unsigned char)text[0] : 0;
    options.add_special_tokens = pick & 1;
    options.max_length = (pick >> 1) & 1 ? -1 : (pick >> 2) & 7;
    options.pad_to = (pick >> 5) & 1 ? 20 : 0;
    nxe_encoding *e = NULL;
    nxe_status status = nxe_tokenizer_encode(t, text, size, &options, &e);
    REQUIRE(status == NXE_OK || status == NXE_ERROR_INVALID_ARGUMENT);
    if (status != NXE_OK) {
        REQUIRE(e == NULL && nxe_last_error()[0] != '\0');
        return;
    }
    check_encoding(e, &info, size);
    /* Tokens of the text always decode (padding and template ids may name no token). */
    int32_t *content = malloc(((size_t)e->length + 1) * sizeof *content);
    REQUIRE(content != NULL);
    int64_t count = 0;
    for (int32_t i = 0; i < e->num_tokens; i++)
        if (!e->special_mask[i])
            content[count++] = e->ids[i];
    check_decode(t, content, count, 1);
    free(content);
    nxe_encoding_release(e);
    /* The text's bytes as ids, some outside the vocabulary. */
    int32_t ids[64];
    count = 0;
    for (size_t i = 0; i + 1 < size && count < 64; i += 2)
        ids[count++] = (int32_t)(((unsigned char)text[i] << 8 | (unsigned char)text[i + 1]) %
                                 (info.vocab_size + 2)) -
                       1;
    check_decode(t, ids, count, 0);

    const char *texts[2] = {text, text};
    size_t sizes[2] = {size, size / 2};
    nxe_encoding *batch[2];
    options.pad_to = -1;
    status = nxe_tokenizer_encode_batch(t, texts, sizes, 2, &options, batch);
    /* Half the text may cut a character in two. */
    REQUIRE(status == NXE_OK || status == NXE_ERROR_INVALID_ARGUMENT);
    if (status != NXE_OK) {
        REQUIRE(batch[0] == NULL && batch[1] == NULL);
        return;
    }
    REQUIRE(batch[0]->length == batch[1]->length);
    check_encoding(batch[0], &info, size);
    check_encoding(batch[1], &info, size / 2);
    nxe_encoding_release(batch[0]);
    nxe_encoding_release(batch[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static nxe_tokenizer *fixed, *fixed_bpe;
    if (!fixed)
        REQUIRE(nxe_tokenizer_create(FIXED_JSON, sizeof FIXED_JSON - 1, &fixed) == NXE_OK);
    if (!fixed_bpe) {
        char *json = bpe_json();
        REQUIRE(json != NULL && nxe_tokenizer_create(json, strlen(json), &fixed_bpe) == NXE_OK);
        free(json);
    }
    const char *json = (const char *)data, *text = json;
    size_t json_size = size, text_size = size;
    for (size_t i = 0; i + 1 < size; i++) {
        if (data[i] == 0xFF && data[i + 1] == 0x00) {
            json_size = i;
            text = json + i + 2;
            text_size = size - i - 2;
            break;
        }
    }
    nxe_tokenizer *t = NULL;
    nxe_status status = nxe_tokenizer_create(json, json_size, &t);
    REQUIRE(status == NXE_OK || status == NXE_ERROR_FORMAT || status == NXE_ERROR_UNSUPPORTED ||
            status == NXE_ERROR_OUT_OF_MEMORY);
    if (status != NXE_OK) {
        REQUIRE(t == NULL && nxe_last_error()[0] != '\0');
    } else {
        encode_all_ways(t, text, text_size);
        nxe_tokenizer_release(t);
    }
    encode_all_ways(fixed, text, text_size);
    encode_all_ways(fixed_bpe, text, text_size);
    return 0;
}
