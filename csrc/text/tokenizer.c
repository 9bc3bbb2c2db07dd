/* tokenizer.c — nxe_tokenizer.h: BERT-family WordPiece tokenization equal to the `tokenizers`
 * package's (added tokens, BertNormalizer, BertPreTokenizer, WordPiece, the template around one
 * sequence, truncation, padding). The tokenizer is immutable after creation; each encode call
 * works in buffers of its own, so any number of threads may share one. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/json.h"
#include "nxe/nxe_tokenizer.h"
#include "text/unicode.h"

/* Tokens of one vocabulary, ids of one template side, added tokens: bounds on what a hostile
 * tokenizer.json can make creation build. */
#define TOK_MAX_VOCAB 16777216
#define TOK_MAX_TOKEN_BYTES 1024
#define TOK_MAX_TEMPLATE 64
#define TOK_MAX_ADDED 65536

typedef struct vocab_entry {
    uint32_t offset, size; /* in the tokenizer's pool */
    int32_t id;
} vocab_entry;

typedef struct added_token {
    uint32_t offset, size; /* content, in the pool */
    int32_t id;
    bool lstrip, rstrip;
    bool normalized;               /* matched in the normalized text, as normalized content */
    int32_t cps_offset, cps_count; /* that content's code points, in normalized_cps */
} added_token;

typedef struct special_piece {
    int32_t id, type_id;
} special_piece;

struct nxe_tokenizer {
    char *pool;
    size_t pool_size, pool_capacity;
    vocab_entry *vocab;
    int32_t vocab_count, vocab_capacity;
    uint32_t *slots; /* open addressing: entry index + 1, 0 empty */
    uint32_t slot_mask;
    int32_t vocab_size;
    uint32_t max_token_bytes;

    bool normalize, clean_text, chinese_chars, strip_accents, lowercase;
    bool pre_tokenize;

    int32_t unk_id;
    uint32_t prefix_offset, prefix_size;
    int32_t max_input_chars_per_word;

    added_token *added;
    int32_t added_count;
    uint32_t *normalized_cps;
    int32_t normalized_cps_count, normalized_cps_capacity;
    bool any_normalized_added;

    special_piece before[TOK_MAX_TEMPLATE], after[TOK_MAX_TEMPLATE];
    int32_t before_count, after_count, sequence_type_id;

    int32_t truncation_max_length; /* 0: none */
    bool truncate_left;
    int32_t pad_id, pad_type_id;
};

/* ---- vocabulary ---- */

static uint32_t hash_bytes(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static nxe_status pool_add(nxe_tokenizer *t, const char *s, size_t n, uint32_t *offset)
{
    if (t->pool_size + n + 1 > UINT32_MAX)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer: vocabulary over 4 GiB of text");
    if (t->pool_size + n + 1 > t->pool_capacity) {
        size_t capacity = t->pool_capacity ? t->pool_capacity : 4096;
        while (capacity < t->pool_size + n + 1)
            capacity *= 2;
        char *grown = realloc(t->pool, capacity);
        if (!grown)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
        t->pool = grown;
        t->pool_capacity = capacity;
    }
    memcpy(t->pool + t->pool_size, s, n);
    t->pool[t->pool_size + n] = '\0';
    *offset = (uint32_t)t->pool_size;
    t->pool_size += n + 1;
    return NXE_OK;
}

/* The id of prefix + piece, or -1. */
static int32_t vocab_find(const nxe_tokenizer *t, const char *prefix, size_t prefix_size,
                          const char *piece, size_t piece_size)
{
    if (!t->slots)
        return -1;
    uint32_t h = hash_bytes(hash_bytes(2166136261u, prefix, prefix_size), piece, piece_size);
    for (uint32_t i = h & t->slot_mask;; i = (i + 1) & t->slot_mask) {
        uint32_t slot = t->slots[i];
        if (!slot)
            return -1;
        const vocab_entry *e = &t->vocab[slot - 1];
        if (e->size == prefix_size + piece_size &&
            memcmp(t->pool + e->offset, prefix, prefix_size) == 0 &&
            memcmp(t->pool + e->offset + prefix_size, piece, piece_size) == 0)
            return e->id;
    }
}

static nxe_status vocab_add(nxe_tokenizer *t, const char *token, size_t size, int32_t id)
{
    if (t->vocab_count >= TOK_MAX_VOCAB)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer: more than %d vocabulary entries",
                         TOK_MAX_VOCAB);
    if (size > TOK_MAX_TOKEN_BYTES)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer: a vocabulary token of %zu bytes (the limit "
                         "is %d)",
                         size, TOK_MAX_TOKEN_BYTES);
    if (vocab_find(t, "", 0, token, size) >= 0)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer: the vocabulary repeats the token \"%.*s\"",
                         (int)(size > 64 ? 64 : size), token);
    if (nxe_grow_array((void **)&t->vocab, &t->vocab_capacity, t->vocab_count + 1,
                       sizeof(vocab_entry)) != NXE_OK)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    uint32_t offset;
    nxe_status status = pool_add(t, token, size, &offset);
    if (status != NXE_OK)
        return status;
    t->vocab[t->vocab_count++] = (vocab_entry){offset, (uint32_t)size, id};
    if (size > t->max_token_bytes)
        t->max_token_bytes = (uint32_t)size;
    if (id >= t->vocab_size)
        t->vocab_size = id + 1;
    /* Keep the table at most half full. */
    if ((uint32_t)t->vocab_count * 2 > t->slot_mask) {
        uint32_t mask = t->slot_mask ? t->slot_mask * 2 + 1 : 1023;
        uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
        if (!slots)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
        free(t->slots);
        t->slots = slots;
        t->slot_mask = mask;
        for (int32_t k = 0; k < t->vocab_count; k++) {
            const vocab_entry *e = &t->vocab[k];
            uint32_t h = hash_bytes(2166136261u, t->pool + e->offset, e->size);
            uint32_t i = h & mask;
            while (slots[i])
                i = (i + 1) & mask;
            slots[i] = (uint32_t)k + 1;
        }
    } else {
        uint32_t i = hash_bytes(2166136261u, token, size) & t->slot_mask;
        while (t->slots[i])
            i = (i + 1) & t->slot_mask;
        t->slots[i] = (uint32_t)t->vocab_count;
    }
    return NXE_OK;
}

static bool valid_utf8(const char *s, size_t n, size_t *bad)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp = 0;
        size_t len = nxe_utf8_decode(u + i, n - i, &cp);
        if (!len) {
            *bad = i;
            return false;
        }
        i += len;
    }
    return true;
}

/* ---- reading tokenizer.json ---- */

static nxe_status json_int(const nxe_json_value *v, const char *what, int64_t lo, int64_t hi,
                           int64_t *out)
{
    double d;
    /* The range first: converting a double outside int64_t's range is undefined. */
    if (!nxe_json_number(v, &d) || !(d >= (double)lo && d <= (double)hi) ||
        !(d > -9.2e18 && d < 9.2e18) || d != (double)(int64_t)d)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: %s must be an integer in [%lld, %lld]",
                         what, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return NXE_OK;
}

/* A boolean member, `fallback` when absent or null. */
static nxe_status json_flag(const nxe_json_value *object, const char *key, const char *where,
                            bool fallback, bool *out)
{
    const nxe_json_value *v = nxe_json_get(object, key);
    int b;
    if (!v || nxe_json_kind(v) == NXE_JSON_NULL) {
        *out = fallback;
        return NXE_OK;
    }
    if (!nxe_json_bool(v, &b))
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: %s.%s must be a boolean", where, key);
    *out = b != 0;
    return NXE_OK;
}

static const char *json_type_name(const nxe_json_value *component, size_t *size)
{
    return nxe_json_string(nxe_json_get(component, "type"), size);
}

static nxe_status read_normalizer(nxe_tokenizer *t, const nxe_json_value *n)
{
    if (!n || nxe_json_kind(n) == NXE_JSON_NULL)
        return NXE_OK;
    if (nxe_json_kind(n) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: normalizer must be an object or null");
    const char *type = json_type_name(n, NULL);
    if (!type)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: normalizer.type must be a string");
    if (strcmp(type, "BertNormalizer") != 0)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: the normalizer \"%.64s\" is not supported (only "
                         "BertNormalizer)",
                         type);
    t->normalize = true;
    nxe_status status;
    if ((status = json_flag(n, "clean_text", "normalizer", true, &t->clean_text)) != NXE_OK ||
        (status = json_flag(n, "handle_chinese_chars", "normalizer", true, &t->chinese_chars)) !=
            NXE_OK ||
        (status = json_flag(n, "lowercase", "normalizer", true, &t->lowercase)) != NXE_OK)
        return status;
    /* strip_accents null (or absent) follows lowercase, as BERT's uncased models expect. */
    return json_flag(n, "strip_accents", "normalizer", t->lowercase, &t->strip_accents);
}

static nxe_status read_pre_tokenizer(nxe_tokenizer *t, const nxe_json_value *p)
{
    if (!p || nxe_json_kind(p) == NXE_JSON_NULL)
        return NXE_OK;
    if (nxe_json_kind(p) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: pre_tokenizer must be an object or null");
    const char *type = json_type_name(p, NULL);
    if (!type)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: pre_tokenizer.type must be a string");
    if (strcmp(type, "BertPreTokenizer") != 0)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: the pre-tokenizer \"%.64s\" is not supported (only "
                         "BertPreTokenizer)",
                         type);
    t->pre_tokenize = true;
    return NXE_OK;
}

static nxe_status read_model(nxe_tokenizer *t, const nxe_json_value *m)
{
    if (nxe_json_kind(m) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model must be an object");
    const char *type = json_type_name(m, NULL);
    if (!type)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.type must be a string");
    if (strcmp(type, "WordPiece") != 0)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: the model \"%.64s\" is not supported (only WordPiece)",
                         type);
    const nxe_json_value *vocab = nxe_json_get(m, "vocab");
    if (nxe_json_kind(vocab) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.vocab must be an object");
    nxe_status status;
    for (int32_t i = 0; i < nxe_json_count(vocab); i++) {
        const char *token;
        size_t size;
        int64_t id = 0;
        const nxe_json_value *v = nxe_json_member(vocab, i, &token, &size);
        if ((status = json_int(v, "a model.vocab id", 0, INT32_MAX - 1, &id)) != NXE_OK ||
            (status = vocab_add(t, token, size, (int32_t)id)) != NXE_OK)
            return status;
    }
    size_t size;
    const nxe_json_value *v = nxe_json_get(m, "unk_token");
    const char *unk = nxe_json_string(v, &size);
    if (!unk)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.unk_token must be a string");
    t->unk_id = vocab_find(t, "", 0, unk, size);
    if (t->unk_id < 0)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: model.unk_token \"%.64s\" is not in the vocabulary", unk);
    v = nxe_json_get(m, "continuing_subword_prefix");
    const char *prefix = v ? nxe_json_string(v, &size) : "##";
    if (!v)
        size = 2;
    if (!prefix || size > TOK_MAX_TOKEN_BYTES)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.continuing_subword_prefix must "
                                           "be a string of at most 1024 bytes");
    if ((status = pool_add(t, prefix, size, &t->prefix_offset)) != NXE_OK)
        return status;
    t->prefix_size = (uint32_t)size;
    int64_t max_chars = 100;
    v = nxe_json_get(m, "max_input_chars_per_word");
    if (v && (status = json_int(v, "model.max_input_chars_per_word", 0, INT32_MAX, &max_chars)) !=
                 NXE_OK)
        return status;
    t->max_input_chars_per_word = (int32_t)max_chars;
    return NXE_OK;
}

static nxe_status normalize_added(nxe_tokenizer *t, added_token *at);

static nxe_status read_added_tokens(nxe_tokenizer *t, const nxe_json_value *list)
{
    if (!list || nxe_json_kind(list) == NXE_JSON_NULL)
        return NXE_OK;
    if (nxe_json_kind(list) != NXE_JSON_ARRAY)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: added_tokens must be an array");
    int32_t count = nxe_json_count(list);
    if (count > TOK_MAX_ADDED)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: more than %d added_tokens",
                         TOK_MAX_ADDED);
    t->added = calloc((size_t)count + 1, sizeof *t->added);
    if (!t->added)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    for (int32_t i = 0; i < count; i++) {
        const nxe_json_value *a = nxe_json_item(list, i);
        size_t size;
        const char *content = nxe_json_string(nxe_json_get(a, "content"), &size);
        if (!content || size == 0 || size > TOK_MAX_TOKEN_BYTES)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: added_tokens[%d].content must be "
                             "a non-empty string of at most 1024 bytes",
                             i);
        int64_t id = 0;
        nxe_status status =
            json_int(nxe_json_get(a, "id"), "added_tokens[].id", 0, INT32_MAX - 1, &id);
        bool single_word = false, lstrip = false, rstrip = false, normalized = false,
             special = false;
        if (status != NXE_OK ||
            (status = json_flag(a, "single_word", "added_tokens[]", false, &single_word)) !=
                NXE_OK ||
            (status = json_flag(a, "lstrip", "added_tokens[]", false, &lstrip)) != NXE_OK ||
            (status = json_flag(a, "rstrip", "added_tokens[]", false, &rstrip)) != NXE_OK ||
            (status = json_flag(a, "special", "added_tokens[]", false, &special)) != NXE_OK ||
            (status = json_flag(a, "normalized", "added_tokens[]", !special, &normalized)) !=
                NXE_OK)
            return status;
        if (single_word)
            return nxe_error(NXE_ERROR_UNSUPPORTED,
                             "tokenizer.json: added token \"%.64s\" is single_word, which is not "
                             "supported",
                             content);
        added_token *at = &t->added[t->added_count++];
        if ((status = pool_add(t, content, size, &at->offset)) != NXE_OK)
            return status;
        at->size = (uint32_t)size;
        at->id = (int32_t)id;
        at->lstrip = lstrip;
        at->rstrip = rstrip;
        if (normalized && (status = normalize_added(t, at)) != NXE_OK)
            return status;
        if (at->id >= t->vocab_size)
            t->vocab_size = at->id + 1;
    }
    return NXE_OK;
}

/* The ids a template's special token stands for (special_tokens[name].ids). */
static nxe_status add_special(nxe_tokenizer *t, const nxe_json_value *specials, const char *name,
                              int64_t type_id, bool before)
{
    const nxe_json_value *ids = nxe_json_get(nxe_json_get(specials, name), "ids");
    if (nxe_json_kind(ids) != NXE_JSON_ARRAY)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: post_processor.special_tokens[\"%.64s\"].ids must be an "
                         "array",
                         name);
    for (int32_t i = 0; i < nxe_json_count(ids); i++) {
        int64_t id = 0;
        nxe_status status =
            json_int(nxe_json_item(ids, i), "a special token id", 0, INT32_MAX - 1, &id);
        if (status != NXE_OK)
            return status;
        int32_t *count = before ? &t->before_count : &t->after_count;
        if (*count >= TOK_MAX_TEMPLATE)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: more than %d special tokens in the template",
                             TOK_MAX_TEMPLATE);
        (before ? t->before : t->after)[(*count)++] =
            (special_piece){(int32_t)id, (int32_t)type_id};
    }
    return NXE_OK;
}

static nxe_status read_template(nxe_tokenizer *t, const nxe_json_value *p)
{
    const nxe_json_value *single = nxe_json_get(p, "single");
    const nxe_json_value *specials = nxe_json_get(p, "special_tokens");
    if (nxe_json_kind(single) != NXE_JSON_ARRAY)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: post_processor.single must be an array");
    bool seen_sequence = false;
    for (int32_t i = 0; i < nxe_json_count(single); i++) {
        const nxe_json_value *piece = nxe_json_item(single, i);
        const nxe_json_value *special = nxe_json_get(piece, "SpecialToken");
        const nxe_json_value *sequence = nxe_json_get(piece, "Sequence");
        const nxe_json_value *body = special ? special : sequence;
        int64_t type_id = 0;
        nxe_status status;
        if (!body || nxe_json_count(piece) != 1)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: post_processor.single[%d] must be "
                             "a SpecialToken or a Sequence",
                             i);
        if ((status = json_int(nxe_json_get(body, "type_id"), "a template type_id", 0, INT32_MAX,
                               &type_id)) != NXE_OK)
            return status;
        const char *id = nxe_json_string(nxe_json_get(body, "id"), NULL);
        if (!id)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: post_processor.single[%d].id must be a string", i);
        if (sequence) {
            if (seen_sequence || strcmp(id, "A") != 0)
                return nxe_error(NXE_ERROR_UNSUPPORTED, "tokenizer.json: a single-sequence "
                                                        "template must hold sequence A once");
            seen_sequence = true;
            t->sequence_type_id = (int32_t)type_id;
        } else if ((status = add_special(t, specials, id, type_id, !seen_sequence)) != NXE_OK) {
            return status;
        }
    }
    if (!seen_sequence)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: post_processor.single lacks the sequence A");
    return NXE_OK;
}

/* BertProcessing: "cls": [token, id], "sep": [token, id]. */
static nxe_status read_bert_processing(nxe_tokenizer *t, const nxe_json_value *p)
{
    const char *names[2] = {"cls", "sep"};
    for (int k = 0; k < 2; k++) {
        const nxe_json_value *pair = nxe_json_get(p, names[k]);
        int64_t id = 0;
        if (nxe_json_count(pair) != 2 || !nxe_json_string(nxe_json_item(pair, 0), NULL))
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: post_processor.%s must be [token, id]", names[k]);
        nxe_status status =
            json_int(nxe_json_item(pair, 1), "a BertProcessing id", 0, INT32_MAX - 1, &id);
        if (status != NXE_OK)
            return status;
        if (k == 0)
            t->before[t->before_count++] = (special_piece){(int32_t)id, 0};
        else
            t->after[t->after_count++] = (special_piece){(int32_t)id, 0};
    }
    return NXE_OK;
}

static nxe_status read_post_processor(nxe_tokenizer *t, const nxe_json_value *p)
{
    if (!p || nxe_json_kind(p) == NXE_JSON_NULL)
        return NXE_OK;
    if (nxe_json_kind(p) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: post_processor must be an object or null");
    const char *type = json_type_name(p, NULL);
    if (!type)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: post_processor.type must be a string");
    if (strcmp(type, "TemplateProcessing") == 0)
        return read_template(t, p);
    if (strcmp(type, "BertProcessing") == 0)
        return read_bert_processing(t, p);
    return nxe_error(NXE_ERROR_UNSUPPORTED,
                     "tokenizer.json: the post-processor \"%.64s\" is not supported (only "
                     "TemplateProcessing and BertProcessing)",
                     type);
}

static nxe_status read_truncation_padding(nxe_tokenizer *t, const nxe_json_value *root)
{
    const nxe_json_value *trunc = nxe_json_get(root, "truncation");
    nxe_status status;
    if (trunc && nxe_json_kind(trunc) != NXE_JSON_NULL) {
        int64_t max_length = 0;
        if (nxe_json_kind(trunc) != NXE_JSON_OBJECT)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: truncation must be an object or null");
        if ((status = json_int(nxe_json_get(trunc, "max_length"), "truncation.max_length", 1,
                               INT32_MAX, &max_length)) != NXE_OK)
            return status;
        t->truncation_max_length = (int32_t)max_length;
        const char *direction = nxe_json_string(nxe_json_get(trunc, "direction"), NULL);
        if (direction && strcmp(direction, "Left") != 0 && strcmp(direction, "Right") != 0)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: truncation.direction must be Left or Right");
        t->truncate_left = direction && strcmp(direction, "Left") == 0;
    }
    t->pad_id = vocab_find(t, "", 0, "[PAD]", 5);
    if (t->pad_id < 0)
        t->pad_id = 0;
    const nxe_json_value *pad = nxe_json_get(root, "padding");
    if (pad && nxe_json_kind(pad) != NXE_JSON_NULL) {
        int64_t v;
        if (nxe_json_kind(pad) != NXE_JSON_OBJECT)
            return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: padding must be an object or null");
        if (nxe_json_get(pad, "pad_id")) {
            if ((status = json_int(nxe_json_get(pad, "pad_id"), "padding.pad_id", 0, INT32_MAX - 1,
                                   &v)) != NXE_OK)
                return status;
            t->pad_id = (int32_t)v;
        }
        if (nxe_json_get(pad, "pad_type_id")) {
            if ((status = json_int(nxe_json_get(pad, "pad_type_id"), "padding.pad_type_id", 0,
                                   INT32_MAX, &v)) != NXE_OK)
                return status;
            t->pad_type_id = (int32_t)v;
        }
    }
    return NXE_OK;
}

/* Every id an encoding can hold lies in [0, vocab_size): a model may index with it. */
static nxe_status check_special_ids(const nxe_tokenizer *t)
{
    int32_t worst = t->pad_id;
    for (int32_t i = 0; i < t->before_count; i++)
        worst = t->before[i].id > worst ? t->before[i].id : worst;
    for (int32_t i = 0; i < t->after_count; i++)
        worst = t->after[i].id > worst ? t->after[i].id : worst;
    if (worst >= t->vocab_size)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: the special token id %d is outside the vocabulary of %d",
                         worst, t->vocab_size);
    return NXE_OK;
}

static nxe_tokenizer *tokenizer_new(void)
{
    nxe_tokenizer *t = calloc(1, sizeof *t);
    if (t)
        t->max_input_chars_per_word = 100;
    return t;
}

NXE_API nxe_status nxe_tokenizer_create(const char *json, size_t size, nxe_tokenizer **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_create: out is NULL");
    *out = NULL;
    if (!json)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_create: json is NULL");
    nxe_json *doc;
    nxe_status status = nxe_json_parse(json, size, &doc);
    if (status != NXE_OK) {
        nxe_error_prefix("tokenizer.json: ");
        return status;
    }
    const nxe_json_value *root = nxe_json_root(doc);
    nxe_tokenizer *t = tokenizer_new();
    if (!t) {
        nxe_json_free(doc);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    }
    if (nxe_json_kind(root) != NXE_JSON_OBJECT)
        status = nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: the top value must be an object");
    else if (!nxe_json_get(root, "model"))
        status = nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: no model");
    if (status == NXE_OK)
        status = read_model(t, nxe_json_get(root, "model"));
    if (status == NXE_OK)
        status = read_normalizer(t, nxe_json_get(root, "normalizer"));
    if (status == NXE_OK)
        status = read_pre_tokenizer(t, nxe_json_get(root, "pre_tokenizer"));
    if (status == NXE_OK)
        status = read_added_tokens(t, nxe_json_get(root, "added_tokens"));
    if (status == NXE_OK)
        status = read_post_processor(t, nxe_json_get(root, "post_processor"));
    if (status == NXE_OK)
        status = read_truncation_padding(t, root);
    if (status == NXE_OK)
        status = check_special_ids(t);
    nxe_json_free(doc);
    if (status != NXE_OK) {
        nxe_tokenizer_release(t);
        return status;
    }
    *out = t;
    return NXE_OK;
}

NXE_API nxe_status nxe_tokenizer_create_from_vocab(const char *vocab, size_t size,
                                                   const nxe_tokenizer_vocab_options *options,
                                                   nxe_tokenizer **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_create_from_vocab: out is NULL");
    *out = NULL;
    nxe_tokenizer_vocab_options defaults = NXE_TOKENIZER_VOCAB_OPTIONS_INIT;
    if (!options)
        options = &defaults;
    if (!vocab || options->struct_size < sizeof *options || options->max_input_chars_per_word < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_create_from_vocab: vocab is NULL, or options has a short "
                         "struct_size or a negative max_input_chars_per_word");
    size_t bad;
    if (!valid_utf8(vocab, size, &bad))
        return nxe_error(NXE_ERROR_FORMAT, "vocab.txt: invalid UTF-8 at byte %zu", bad);
    nxe_tokenizer *t = tokenizer_new();
    if (!t)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    nxe_status status = NXE_OK;
    size_t start = 0;
    int32_t line = 0;
    while (status == NXE_OK && start < size) {
        const char *nl = memchr(vocab + start, '\n', size - start);
        size_t end = nl ? (size_t)(nl - vocab) : size;
        size_t stop = end;
        while (stop > start &&
               (vocab[stop - 1] == ' ' || vocab[stop - 1] == '\t' || vocab[stop - 1] == '\r' ||
                vocab[stop - 1] == '\f' || vocab[stop - 1] == '\v'))
            stop--;
        status = vocab_add(t, vocab + start, stop - start, line++);
        start = end + 1;
    }
    const char *specials[5] = {options->unk_token, options->cls_token, options->sep_token,
                               options->pad_token, options->mask_token};
    int32_t ids[5] = {-1, -1, -1, -1, -1};
    for (int k = 0; k < 5 && status == NXE_OK; k++) {
        if (!specials[k])
            continue;
        ids[k] = vocab_find(t, "", 0, specials[k], strlen(specials[k]));
        if (ids[k] < 0)
            status = nxe_error(NXE_ERROR_FORMAT,
                               "vocab.txt: the special token \"%.64s\" is not "
                               "in the vocabulary",
                               specials[k]);
    }
    if (status == NXE_OK && (ids[0] < 0 || ids[1] < 0 || ids[2] < 0))
        status = nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                           "nxe_tokenizer_create_from_vocab: unk, cls and sep tokens are needed");
    if (status == NXE_OK) {
        t->added = calloc(5, sizeof *t->added);
        if (!t->added)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    }
    /* BertWordPieceTokenizer's order: pad, unk, cls, sep, mask. */
    const int order[5] = {3, 0, 1, 2, 4};
    for (int k = 0; k < 5 && status == NXE_OK; k++) {
        int s = order[k];
        if (ids[s] < 0)
            continue;
        added_token *at = &t->added[t->added_count++];
        at->size = (uint32_t)strlen(specials[s]);
        at->id = ids[s];
        status = pool_add(t, specials[s], at->size, &at->offset);
    }
    if (status == NXE_OK)
        status = pool_add(t, "##", 2, &t->prefix_offset);
    if (status != NXE_OK) {
        nxe_tokenizer_release(t);
        return status;
    }
    t->prefix_size = 2;
    t->unk_id = ids[0];
    t->pad_id = ids[3] >= 0 ? ids[3] : 0;
    t->max_input_chars_per_word = options->max_input_chars_per_word;
    t->normalize = t->clean_text = t->chinese_chars = true;
    t->lowercase = t->strip_accents = options->lowercase != 0;
    t->pre_tokenize = true;
    t->before[t->before_count++] = (special_piece){ids[1], 0};
    t->after[t->after_count++] = (special_piece){ids[2], 0};
    *out = t;
    return NXE_OK;
}

NXE_API void nxe_tokenizer_release(nxe_tokenizer *t)
{
    if (!t)
        return;
    free(t->pool);
    nxe_free(t->vocab);
    free(t->slots);
    free(t->added);
    nxe_free(t->normalized_cps);
    free(t);
}

NXE_API nxe_status nxe_tokenizer_get_info(const nxe_tokenizer *t, nxe_tokenizer_info *info)
{
    if (!t || !info || info->struct_size < sizeof *info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_get_info: a NULL argument or a short struct_size");
    info->vocab_size = t->vocab_size;
    info->pad_id = t->pad_id;
    info->unk_id = t->unk_id;
    info->max_length = t->truncation_max_length;
    info->num_special = t->before_count + t->after_count;
    return NXE_OK;
}

NXE_API int32_t nxe_tokenizer_token_to_id(const nxe_tokenizer *t, const char *token)
{
    if (!t || !token)
        return -1;
    size_t n = strlen(token);
    for (int32_t i = 0; i < t->added_count; i++) {
        const added_token *a = &t->added[i];
        if (a->size == n && memcmp(t->pool + a->offset, token, n) == 0)
            return a->id;
    }
    return vocab_find(t, "", 0, token, n);
}

/* ---- encoding ---- */

/* A character of the normalized text and the bytes of the input it came from. */
typedef struct norm_char {
    uint32_t cp;
    int64_t start, end;
} norm_char;

typedef struct encode_state {
    norm_char *chars, *scratch;
    int32_t chars_count, chars_capacity, scratch_count, scratch_capacity;
    int32_t *ids;
    int64_t *offsets;
    int32_t count, capacity;
    char *word;
    int32_t word_capacity;
    int32_t *word_bytes; /* byte offset of each char of the word, then its end */
    int32_t word_bytes_capacity;
} encode_state;

static nxe_status oom(void)
{
    return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
}

static nxe_status push_char(norm_char **chars, int32_t *count, int32_t *capacity, uint32_t cp,
                            int64_t start, int64_t end)
{
    if (*count == *capacity &&
        nxe_grow_array((void **)chars, capacity, *count + 1, sizeof(norm_char)) != NXE_OK)
        return oom();
    (*chars)[(*count)++] = (norm_char){cp, start, end};
    return NXE_OK;
}

static nxe_status push_token(encode_state *s, int32_t id, int64_t start, int64_t end)
{
    if (s->count == s->capacity) {
        int32_t capacity = s->capacity;
        if (nxe_grow_array((void **)&s->ids, &capacity, s->count + 1, sizeof(int32_t)) != NXE_OK)
            return oom();
        int32_t offsets_capacity = s->capacity;
        if (nxe_grow_array((void **)&s->offsets, &offsets_capacity, capacity,
                           2 * sizeof(int64_t)) != NXE_OK)
            return oom();
        s->capacity = capacity;
    }
    s->ids[s->count] = id;
    s->offsets[2 * s->count] = start;
    s->offsets[2 * s->count + 1] = end;
    s->count++;
    return NXE_OK;
}

static bool is_chinese_char(uint32_t cp)
{
    /* The CJK ideograph blocks BERT's reference tokenizer spaces out. */
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* The BertNormalizer over text[start, end) into s->chars: clean, CJK spacing, NFD with
 * nonspacing marks removed, lowercase, in that order. */
static nxe_status normalize(const nxe_tokenizer *t, encode_state *s, const char *text, size_t start,
                            size_t end)
{
    const unsigned char *u = (const unsigned char *)text;
    s->chars_count = 0;
    nxe_status status;
    for (size_t i = start; i < end;) {
        uint32_t cp = 0;
        size_t len = nxe_utf8_decode(u + i, end - i, &cp);
        int64_t a = (int64_t)i, b = (int64_t)(i + len);
        i += len;
        if (t->normalize && t->clean_text) {
            uint32_t flags = nxe_unicode_flags(cp);
            if (cp == 0 || cp == 0xFFFD || (flags & NXE_UNICODE_CONTROL))
                continue;
            if (flags & NXE_UNICODE_WHITESPACE)
                cp = ' ';
        }
        bool space = t->normalize && t->chinese_chars && is_chinese_char(cp);
        if ((space && (status = push_char(&s->chars, &s->chars_count, &s->chars_capacity, ' ', a,
                                          b)) != NXE_OK) ||
            (status = push_char(&s->chars, &s->chars_count, &s->chars_capacity, cp, a, b)) !=
                NXE_OK ||
            (space && (status = push_char(&s->chars, &s->chars_count, &s->chars_capacity, ' ', a,
                                          b)) != NXE_OK))
            return status;
    }
    if (!t->normalize)
        return NXE_OK;
    uint32_t mapped[NXE_UNICODE_MAX_MAPPING];
    if (t->strip_accents) {
        /* NFD. As in `tokenizers`, the offsets do not travel with reordered marks: each
         * character a decomposition starts with takes the next input character's place, each
         * further one the place of the input character before it, in output order. */
        s->scratch_count = 0;
        for (int32_t i = 0; i < s->chars_count; i++) {
            int32_t n = nxe_unicode_decompose(s->chars[i].cp, mapped);
            for (int32_t k = 0; k < n; k++) {
                /* Canonical ordering: a mark moves before the marks of higher class it follows. */
                uint32_t ccc = nxe_unicode_combining_class(mapped[k]);
                if ((status = push_char(&s->scratch, &s->scratch_count, &s->scratch_capacity,
                                        mapped[k], k > 0, 0)) != NXE_OK)
                    return status;
                for (int32_t j = s->scratch_count - 1; ccc && j > 0; j--) {
                    uint32_t before = nxe_unicode_combining_class(s->scratch[j - 1].cp);
                    if (before <= ccc)
                        break;
                    norm_char swap = s->scratch[j - 1];
                    s->scratch[j - 1] = s->scratch[j];
                    s->scratch[j] = swap;
                }
            }
        }
        int32_t consumed = 0;
        for (int32_t i = 0; i < s->scratch_count; i++) {
            norm_char *c = &s->scratch[i];
            if (c->start == 0)
                consumed++;
            const norm_char *from = consumed > 0 ? &s->chars[consumed - 1] : NULL;
            c->start = from ? from->start : 0;
            c->end = from ? from->end : 0;
        }
        s->chars_count = 0;
        for (int32_t i = 0; i < s->scratch_count; i++) {
            norm_char c = s->scratch[i];
            if (nxe_unicode_flags(c.cp) & NXE_UNICODE_NONSPACING_MARK)
                continue;
            if ((status = push_char(&s->chars, &s->chars_count, &s->chars_capacity, c.cp, c.start,
                                    c.end)) != NXE_OK)
                return status;
        }
    }
    if (t->lowercase) {
        s->scratch_count = 0;
        for (int32_t i = 0; i < s->chars_count; i++) {
            norm_char c = s->chars[i];
            int32_t n = nxe_unicode_lower(c.cp, mapped);
            for (int32_t k = 0; k < n; k++)
                if ((status = push_char(&s->scratch, &s->scratch_count, &s->scratch_capacity,
                                        mapped[k], c.start, c.end)) != NXE_OK)
                    return status;
        }
        norm_char *swap = s->chars;
        int32_t swap_capacity = s->chars_capacity;
        s->chars = s->scratch;
        s->chars_capacity = s->scratch_capacity;
        s->chars_count = s->scratch_count;
        s->scratch = swap;
        s->scratch_capacity = swap_capacity;
    }
    return NXE_OK;
}

/* WordPiece over the word s->chars[first, last): greedy longest match from the left. */
static nxe_status word_piece(const nxe_tokenizer *t, encode_state *s, int32_t first, int32_t last)
{
    int32_t n = last - first;
    const norm_char *c = s->chars + first;
    if (n > t->max_input_chars_per_word)
        return push_token(s, t->unk_id, c[0].start, c[n - 1].end);
    if (s->word_capacity < 4 * n + 4) {
        int32_t capacity = s->word_capacity;
        if (nxe_grow_array((void **)&s->word, &capacity, 4 * n + 4, 1) != NXE_OK)
            return oom();
        s->word_capacity = capacity;
    }
    if (s->word_bytes_capacity < n + 1 &&
        nxe_grow_array((void **)&s->word_bytes, &s->word_bytes_capacity, n + 1, sizeof(int32_t)) !=
            NXE_OK)
        return oom();
    int32_t bytes = 0;
    for (int32_t i = 0; i < n; i++) {
        s->word_bytes[i] = bytes;
        bytes += (int32_t)nxe_utf8_encode(c[i].cp, s->word + bytes);
    }
    s->word_bytes[n] = bytes;
    int32_t mark = s->count;
    const char *prefix = t->pool + t->prefix_offset;
    for (int32_t begin = 0; begin < n;) {
        size_t prefix_size = begin > 0 ? t->prefix_size : 0;
        int32_t end = n, id = -1;
        /* No vocabulary token is longer than max_token_bytes: start below that. */
        while (end > begin && (size_t)(s->word_bytes[end] - s->word_bytes[begin]) + prefix_size >
                                  t->max_token_bytes)
            end--;
        for (; end > begin; end--) {
            id = vocab_find(t, prefix, prefix_size, s->word + s->word_bytes[begin],
                            (size_t)(s->word_bytes[end] - s->word_bytes[begin]));
            if (id >= 0)
                break;
        }
        if (id < 0) {
            s->count = mark;
            return push_token(s, t->unk_id, c[0].start, c[n - 1].end);
        }
        nxe_status status = push_token(s, id, c[begin].start, c[end - 1].end);
        if (status != NXE_OK)
            return status;
        begin = end;
    }
    return NXE_OK;
}

/* Pre-tokenizes and WordPiece-encodes the normalized characters [first, last). */
static nxe_status encode_words(const nxe_tokenizer *t, encode_state *s, int32_t first, int32_t last)
{
    if (!t->pre_tokenize)
        return last > first ? word_piece(t, s, first, last) : NXE_OK;
    for (int32_t i = first; i < last;) {
        uint32_t flags = nxe_unicode_flags(s->chars[i].cp);
        if (flags & NXE_UNICODE_WHITESPACE) {
            i++;
            continue;
        }
        int32_t j = i + 1;
        if (!(flags & NXE_UNICODE_PUNCTUATION))
            while (j < last && !(nxe_unicode_flags(s->chars[j].cp) &
                                 (NXE_UNICODE_WHITESPACE | NXE_UNICODE_PUNCTUATION)))
                j++;
        nxe_status status = word_piece(t, s, i, j);
        if (status != NXE_OK)
            return status;
        i = j;
    }
    return NXE_OK;
}

/* The longest normalized added token whose code points start at s->chars[i], or NULL. */
static const added_token *normalized_match(const nxe_tokenizer *t, const encode_state *s, int32_t i)
{
    const added_token *best = NULL;
    for (int32_t k = 0; k < t->added_count; k++) {
        const added_token *a = &t->added[k];
        if (!a->normalized || a->cps_count == 0 || a->cps_count > s->chars_count - i ||
            (best && a->cps_count <= best->cps_count))
            continue;
        int32_t j = 0;
        while (j < a->cps_count && s->chars[i + j].cp == t->normalized_cps[a->cps_offset + j])
            j++;
        if (j == a->cps_count)
            best = a;
    }
    return best;
}

/* Normalizes text[start, end) (no raw added token in it), splits out the normalized added
 * tokens, and pre-tokenizes and WordPiece-encodes the rest. */
static nxe_status encode_segment(const nxe_tokenizer *t, encode_state *s, const char *text,
                                 size_t start, size_t end)
{
    nxe_status status = normalize(t, s, text, start, end);
    if (status != NXE_OK)
        return status;
    int32_t n = s->chars_count, done = 0;
    for (int32_t i = 0; i < n && t->any_normalized_added;) {
        const added_token *a = normalized_match(t, s, i);
        if (!a) {
            i++;
            continue;
        }
        int32_t match_start = i, match_end = i + a->cps_count;
        while (a->lstrip && match_start > done &&
               (nxe_unicode_flags(s->chars[match_start - 1].cp) & NXE_UNICODE_WHITESPACE))
            match_start--;
        while (a->rstrip && match_end < n &&
               (nxe_unicode_flags(s->chars[match_end].cp) & NXE_UNICODE_WHITESPACE))
            match_end++;
        if ((status = encode_words(t, s, done, match_start)) != NXE_OK ||
            (status = push_token(s, a->id, s->chars[match_start].start,
                                 s->chars[match_end - 1].end)) != NXE_OK)
            return status;
        done = i = match_end;
    }
    return encode_words(t, s, done, n);
}

static bool whitespace_at(const char *text, size_t at, size_t size, size_t *len)
{
    uint32_t cp = 0;
    *len = nxe_utf8_decode((const unsigned char *)text + at, size - at, &cp);
    return *len && (nxe_unicode_flags(cp) & NXE_UNICODE_WHITESPACE);
}

/* The start of the whitespace run ending at `at` (not before `floor`). */
static size_t whitespace_before(const char *text, size_t at, size_t floor, size_t size)
{
    while (at > floor) {
        size_t back = at - 1, len;
        while (back > floor && ((unsigned char)text[back] & 0xC0) == 0x80)
            back--;
        if (!whitespace_at(text, back, size, &len))
            break;
        at = back;
    }
    return at;
}

/* The content tokens of a text: added tokens matched in the raw text (leftmost, then longest),
 * everything between them through the normalizer, pre-tokenizer and WordPiece. */
static nxe_status encode_content(const nxe_tokenizer *t, encode_state *s, const char *text,
                                 size_t size)
{
    size_t done = 0; /* the input before this is encoded */
    nxe_status status;
    for (size_t i = 0; i < size && t->added_count;) {
        const added_token *best = NULL;
        for (int32_t k = 0; k < t->added_count; k++) {
            const added_token *a = &t->added[k];
            if (!a->normalized && a->size <= size - i && (!best || a->size > best->size) &&
                memcmp(t->pool + a->offset, text + i, a->size) == 0)
                best = a;
        }
        if (!best) {
            i++;
            continue;
        }
        size_t match_start = i, match_end = i + best->size, len;
        if (best->lstrip)
            match_start = whitespace_before(text, match_start, done, size);
        if (best->rstrip)
            while (match_end < size && whitespace_at(text, match_end, size, &len))
                match_end += len;
        if (match_start > done &&
            (status = encode_segment(t, s, text, done, match_start)) != NXE_OK)
            return status;
        if ((status = push_token(s, best->id, (int64_t)match_start, (int64_t)match_end)) != NXE_OK)
            return status;
        done = i = match_end;
    }
    if (size > done)
        return encode_segment(t, s, text, done, size);
    return NXE_OK;
}

static void state_free(encode_state *s)
{
    nxe_free(s->chars);
    nxe_free(s->scratch);
    nxe_free(s->ids);
    nxe_free(s->offsets);
    nxe_free(s->word);
    nxe_free(s->word_bytes);
}

/* A normalized added token is matched as the normalizer leaves its content, in the normalized
 * text (`tokenizers` does the same). */
static nxe_status normalize_added(nxe_tokenizer *t, added_token *at)
{
    encode_state s = {0};
    at->normalized = true;
    nxe_status status = normalize(t, &s, t->pool + at->offset, 0, at->size);
    if (status == NXE_OK && s.chars_count > 0) {
        if (nxe_grow_array((void **)&t->normalized_cps, &t->normalized_cps_capacity,
                           t->normalized_cps_count + s.chars_count, sizeof(uint32_t)) != NXE_OK) {
            status = oom();
        } else {
            at->cps_offset = t->normalized_cps_count;
            at->cps_count = s.chars_count;
            for (int32_t i = 0; i < s.chars_count; i++)
                t->normalized_cps[t->normalized_cps_count++] = s.chars[i].cp;
            t->any_normalized_added = true;
        }
    }
    state_free(&s);
    return status;
}

static nxe_encoding *encoding_new(int32_t length)
{
    size_t n = length > 0 ? (size_t)length : 1;
    nxe_encoding *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->ids = malloc(n * sizeof(int32_t));
    e->attention_mask = malloc(n * sizeof(int32_t));
    e->type_ids = malloc(n * sizeof(int32_t));
    e->special_mask = malloc(n * sizeof(int32_t));
    e->offsets = malloc(2 * n * sizeof(int64_t));
    if (!e->ids || !e->attention_mask || !e->type_ids || !e->special_mask || !e->offsets) {
        nxe_encoding_release(e);
        return NULL;
    }
    e->length = length;
    return e;
}

/* Pads e (in place, reallocating) to `length` tokens. */
static nxe_status pad_encoding(const nxe_tokenizer *t, nxe_encoding *e, int32_t length)
{
    if (length <= e->length)
        return NXE_OK;
    nxe_encoding *p = encoding_new(length);
    if (!p)
        return oom();
    int32_t n = e->length;
    memcpy(p->ids, e->ids, (size_t)n * sizeof(int32_t));
    memcpy(p->attention_mask, e->attention_mask, (size_t)n * sizeof(int32_t));
    memcpy(p->type_ids, e->type_ids, (size_t)n * sizeof(int32_t));
    memcpy(p->special_mask, e->special_mask, (size_t)n * sizeof(int32_t));
    memcpy(p->offsets, e->offsets, 2 * (size_t)n * sizeof(int64_t));
    for (int32_t i = n; i < length; i++) {
        p->ids[i] = t->pad_id;
        p->attention_mask[i] = 0;
        p->type_ids[i] = t->pad_type_id;
        p->special_mask[i] = 1;
        p->offsets[2 * i] = p->offsets[2 * i + 1] = 0;
    }
    int32_t *swap[4] = {e->ids, e->attention_mask, e->type_ids, e->special_mask};
    int64_t *swap_offsets = e->offsets;
    e->ids = p->ids, e->attention_mask = p->attention_mask, e->type_ids = p->type_ids;
    e->special_mask = p->special_mask, e->offsets = p->offsets, e->length = length;
    p->ids = swap[0], p->attention_mask = swap[1], p->type_ids = swap[2];
    p->special_mask = swap[3], p->offsets = swap_offsets;
    nxe_encoding_release(p);
    return NXE_OK;
}

static nxe_status check_options(const nxe_tokenizer_options *o, const char *where)
{
    if (o->struct_size < sizeof *o || o->max_length < -1 || o->pad_to < -1)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: options has a short struct_size, max_length < -1 or pad_to < -1",
                         where);
    return NXE_OK;
}

static nxe_status encode_one(const nxe_tokenizer *t, const char *text, size_t size,
                             const nxe_tokenizer_options *o, nxe_encoding **out)
{
    *out = NULL;
    if (!text && size)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "text is NULL with a size of %zu", size);
    size_t bad;
    if (size && !valid_utf8(text, size, &bad))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "text is not valid UTF-8 at byte %zu", bad);
    if (size > (size_t)INT32_MAX)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "text of %zu bytes, over 2 GiB", size);
    bool specials = o->add_special_tokens != 0;
    int32_t num_special = specials ? t->before_count + t->after_count : 0;
    int32_t limit = o->max_length > 0    ? o->max_length
                    : o->max_length == 0 ? t->truncation_max_length
                                         : 0;
    if (limit > 0 && limit < num_special)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "max_length %d is below the %d special tokens added", limit, num_special);
    encode_state s = {0};
    nxe_status status = size ? encode_content(t, &s, text, size) : NXE_OK;
    if (status != NXE_OK) {
        state_free(&s);
        return status;
    }
    int32_t content = s.count, skip = 0, truncated = 0;
    if (limit > 0 && content > limit - num_special) {
        truncated = content - (limit - num_special);
        content = limit - num_special;
        skip = t->truncate_left ? truncated : 0;
    }
    int32_t length = content + num_special;
    nxe_encoding *e = encoding_new(length);
    if (!e) {
        state_free(&s);
        return oom();
    }
    e->num_tokens = length;
    e->truncated = truncated;
    int32_t k = 0;
    for (int32_t i = 0; specials && i < t->before_count; i++, k++) {
        e->ids[k] = t->before[i].id, e->type_ids[k] = t->before[i].type_id;
        e->special_mask[k] = 1, e->offsets[2 * k] = e->offsets[2 * k + 1] = 0;
    }
    for (int32_t i = 0; i < content; i++, k++) {
        e->ids[k] = s.ids[skip + i], e->type_ids[k] = t->sequence_type_id, e->special_mask[k] = 0;
        e->offsets[2 * k] = s.offsets[2 * (skip + i)];
        e->offsets[2 * k + 1] = s.offsets[2 * (skip + i) + 1];
    }
    for (int32_t i = 0; specials && i < t->after_count; i++, k++) {
        e->ids[k] = t->after[i].id, e->type_ids[k] = t->after[i].type_id;
        e->special_mask[k] = 1, e->offsets[2 * k] = e->offsets[2 * k + 1] = 0;
    }
    for (int32_t i = 0; i < length; i++)
        e->attention_mask[i] = 1;
    state_free(&s);
    if (o->pad_to > 0 && (status = pad_encoding(t, e, o->pad_to)) != NXE_OK) {
        nxe_encoding_release(e);
        return status;
    }
    *out = e;
    return NXE_OK;
}

NXE_API nxe_status nxe_tokenizer_encode(const nxe_tokenizer *t, const char *text, size_t size,
                                        const nxe_tokenizer_options *options, nxe_encoding **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_encode: out is NULL");
    *out = NULL;
    nxe_tokenizer_options defaults = NXE_TOKENIZER_OPTIONS_INIT;
    if (!options)
        options = &defaults;
    if (!t)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_encode: tokenizer is NULL");
    nxe_status status = check_options(options, "nxe_tokenizer_encode");
    if (status != NXE_OK)
        return status;
    status = encode_one(t, text, size, options, out);
    if (status != NXE_OK)
        nxe_error_prefix("nxe_tokenizer_encode: ");
    return status;
}

NXE_API nxe_status nxe_tokenizer_encode_batch(const nxe_tokenizer *t, const char *const *texts,
                                              const size_t *sizes, int32_t count,
                                              const nxe_tokenizer_options *options,
                                              nxe_encoding **out)
{
    if (!out || count < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_encode_batch: out is NULL or count negative");
    for (int32_t i = 0; i < count; i++)
        out[i] = NULL;
    nxe_tokenizer_options defaults = NXE_TOKENIZER_OPTIONS_INIT;
    if (!options)
        options = &defaults;
    if (!t || (count > 0 && (!texts || !sizes)))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_encode_batch: a NULL tokenizer, texts or sizes");
    nxe_status status = check_options(options, "nxe_tokenizer_encode_batch");
    if (status != NXE_OK)
        return status;
    int32_t longest = 0;
    for (int32_t i = 0; i < count && status == NXE_OK; i++) {
        status = encode_one(t, texts[i], sizes[i], options, &out[i]);
        if (status != NXE_OK)
            nxe_error_prefix("nxe_tokenizer_encode_batch: text %d: ", i);
        else if (out[i]->length > longest)
            longest = out[i]->length;
    }
    for (int32_t i = 0; i < count && status == NXE_OK && options->pad_to == -1; i++)
        status = pad_encoding(t, out[i], longest);
    if (status != NXE_OK) {
        for (int32_t i = 0; i < count; i++) {
            nxe_encoding_release(out[i]);
            out[i] = NULL;
        }
    }
    return status;
}

NXE_API void nxe_encoding_release(nxe_encoding *e)
{
    if (!e)
        return;
    free(e->ids);
    free(e->attention_mask);
    free(e->type_ids);
    free(e->special_mask);
    free(e->offsets);
    free(e);
}
