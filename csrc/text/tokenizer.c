/* tokenizer.c — nxe_tokenizer.h: tokenization equal to the `tokenizers` package's: BERT-family
 * WordPiece (added tokens, BertNormalizer, BertPreTokenizer, WordPiece) and byte-level BPE
 * (ByteLevel pre-tokenizer with GPT-2's split pattern, BPE merges by rank), the template around
 * one sequence, truncation, padding, and decoding (ByteLevel and WordPiece decoders). The
 * tokenizer is immutable after creation; each encode or decode call works in buffers of its
 * own, so any number of threads may share one. */
#include <stdio.h>
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
#define TOK_MAX_MERGES 16777216

enum { MODEL_WORD_PIECE, MODEL_BPE };
enum { DECODER_NONE, DECODER_BYTE_LEVEL, DECODER_WORD_PIECE, DECODER_OTHER };

/* One BPE merge: the pair (left, right) of ids, its rank (the earlier the merge, the lower) and
 * the id of the merged token. key 0 is an empty slot. */
typedef struct merge_slot {
    uint64_t key;
    int32_t rank, id;
} merge_slot;

typedef struct vocab_entry {
    uint32_t offset, size; /* in the tokenizer's pool */
    int32_t id;
} vocab_entry;

typedef struct added_token {
    uint32_t offset, size; /* content, in the pool */
    int32_t id;
    bool lstrip, rstrip;
    bool special;                  /* left out by NXE_DECODE_SKIP_SPECIAL */
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

    int model; /* MODEL_* */
    /* Byte-level BPE: the ByteLevel pre-tokenizer's options, the ByteLevel post-processor's
     * offset trimming, the id of each byte's one-character token (-1: none), the merges. */
    bool byte_level, add_prefix_space, use_regex;
    bool trim_offsets, trim_keeps_prefix_space;
    bool fuse_unk, ignore_merges;
    int32_t byte_ids[256];
    merge_slot *merges;
    uint32_t merge_mask;

    int decoder; /* DECODER_* */
    char decoder_name[65];
    uint32_t decoder_prefix_offset, decoder_prefix_size;
    bool decoder_cleanup;
    int32_t *id_vocab; /* per id: its vocabulary entry, -1 none */
    int32_t *id_added; /* per id: its added token, -1 none */
    uint8_t *id_special;
    bool raw_first[256]; /* the first bytes of the added tokens matched in the raw text */
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
    if (strcmp(type, "ByteLevel") == 0) {
        nxe_status status;
        if ((status = json_flag(p, "add_prefix_space", "pre_tokenizer", true,
                                &t->add_prefix_space)) != NXE_OK ||
            (status = json_flag(p, "use_regex", "pre_tokenizer", true, &t->use_regex)) != NXE_OK)
            return status;
        t->byte_level = true;
        return NXE_OK;
    }
    if (strcmp(type, "BertPreTokenizer") != 0)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: the pre-tokenizer \"%.64s\" is not supported (only "
                         "BertPreTokenizer and ByteLevel)",
                         type);
    t->pre_tokenize = true;
    return NXE_OK;
}

static nxe_status read_bpe_model(nxe_tokenizer *t, const nxe_json_value *m);

static nxe_status read_model(nxe_tokenizer *t, const nxe_json_value *m)
{
    if (nxe_json_kind(m) != NXE_JSON_OBJECT)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model must be an object");
    const char *type = json_type_name(m, NULL);
    if (!type)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.type must be a string");
    if (strcmp(type, "BPE") == 0)
        return read_bpe_model(t, m);
    if (strcmp(type, "WordPiece") != 0)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: the model \"%.64s\" is not supported (only WordPiece "
                         "and BPE)",
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

/* ---- byte-level BPE: the model ---- */

/* The character GPT-2's byte-level alphabet writes for byte b: printable Latin-1 bytes stand for
 * themselves, the others for 256 + their rank among the others. */
static uint32_t byte_char(uint32_t b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return b;
    uint32_t rank = 0;
    for (uint32_t k = 0; k < b; k++)
        if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF)))
            rank++;
    return 256 + rank;
}

/* The byte a byte-level character stands for, or -1. */
static int32_t char_byte(uint32_t cp)
{
    static int16_t table[324];
    static int ready; /* benign: every thread writes the same values */
    if (!ready) {
        for (uint32_t c = 0; c < 324; c++)
            table[c] = -1;
        for (uint32_t b = 0; b < 256; b++)
            table[byte_char(b)] = (int16_t)b;
        ready = 1;
    }
    return cp < 324 ? table[cp] : -1;
}

static uint64_t merge_key(int32_t left, int32_t right)
{
    return ((uint64_t)(uint32_t)left + 1) << 32 | (uint32_t)right;
}

static uint32_t merge_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key;
}

static const merge_slot *merge_find(const nxe_tokenizer *t, int32_t left, int32_t right)
{
    uint64_t key = merge_key(left, right);
    for (uint32_t i = merge_hash(key) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        const merge_slot *m = &t->merges[i];
        if (m->key == key)
            return m;
        if (!m->key)
            return NULL;
    }
}

/* The id of a vocabulary token, with a message naming it when the vocabulary lacks it. */
static nxe_status merge_token(const nxe_tokenizer *t, const char *token, size_t size, int32_t i,
                              int32_t *id)
{
    *id = vocab_find(t, "", 0, token, size);
    if (*id < 0)
        return nxe_error(
            NXE_ERROR_FORMAT,
            "tokenizer.json: model.merges[%d] uses the token \"%.*s\", which is not in "
            "the vocabulary",
            i, (int)(size > 64 ? 64 : size), token);
    return NXE_OK;
}

static nxe_status read_merges(nxe_tokenizer *t, const nxe_json_value *merges)
{
    if (nxe_json_kind(merges) != NXE_JSON_ARRAY)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.merges must be an array");
    int32_t count = nxe_json_count(merges);
    if (count > TOK_MAX_MERGES)
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: more than %d model.merges",
                         TOK_MAX_MERGES);
    uint32_t mask = 1023;
    while ((uint32_t)count * 2 > mask)
        mask = mask * 2 + 1;
    t->merges = calloc((size_t)mask + 1, sizeof *t->merges);
    if (!t->merges)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->merge_mask = mask;
    char joined[2 * TOK_MAX_TOKEN_BYTES];
    for (int32_t i = 0; i < count; i++) {
        const nxe_json_value *m = nxe_json_item(merges, i);
        const char *left, *right;
        size_t left_size, right_size;
        if (nxe_json_kind(m) == NXE_JSON_STRING) {
            /* "left right": exactly one space. */
            size_t size;
            const char *text = nxe_json_string(m, &size);
            const char *space = memchr(text, ' ', size);
            if (!space || memchr(space + 1, ' ', size - (size_t)(space - text) - 1))
                return nxe_error(NXE_ERROR_FORMAT,
                                 "tokenizer.json: model.merges[%d] must be two tokens separated "
                                 "by one space",
                                 i);
            left = text, left_size = (size_t)(space - text);
            right = space + 1, right_size = size - left_size - 1;
        } else {
            left = nxe_json_string(nxe_json_item(m, 0), &left_size);
            right = nxe_json_string(nxe_json_item(m, 1), &right_size);
            if (nxe_json_kind(m) != NXE_JSON_ARRAY || nxe_json_count(m) != 2 || !left || !right)
                return nxe_error(NXE_ERROR_FORMAT,
                                 "tokenizer.json: model.merges[%d] must be \"left right\" or "
                                 "[left, right]",
                                 i);
        }
        int32_t a, b, merged;
        nxe_status status;
        if ((status = merge_token(t, left, left_size, i, &a)) != NXE_OK ||
            (status = merge_token(t, right, right_size, i, &b)) != NXE_OK)
            return status;
        if (left_size + right_size > sizeof joined)
            return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.merges[%d] is too long", i);
        memcpy(joined, left, left_size);
        memcpy(joined + left_size, right, right_size);
        if ((status = merge_token(t, joined, left_size + right_size, i, &merged)) != NXE_OK)
            return status;
        /* A repeated pair takes its last rank, as `tokenizers` does. */
        uint64_t key = merge_key(a, b);
        uint32_t k = merge_hash(key) & mask;
        while (t->merges[k].key && t->merges[k].key != key)
            k = (k + 1) & mask;
        t->merges[k] = (merge_slot){key, i, merged};
    }
    return NXE_OK;
}

/* An optional string member that must be empty (or null) for this library. */
static nxe_status require_empty(const nxe_json_value *m, const char *key)
{
    const nxe_json_value *v = nxe_json_get(m, key);
    size_t size = 0;
    if (!v || nxe_json_kind(v) == NXE_JSON_NULL)
        return NXE_OK;
    if (!nxe_json_string(v, &size))
        return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: model.%s must be a string or null",
                         key);
    if (size)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: a BPE model.%s is not supported (only empty)", key);
    return NXE_OK;
}

static nxe_status read_bpe_model(nxe_tokenizer *t, const nxe_json_value *m)
{
    t->model = MODEL_BPE;
    t->unk_id = -1;
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
    bool byte_fallback = false;
    if ((status = require_empty(m, "continuing_subword_prefix")) != NXE_OK ||
        (status = require_empty(m, "end_of_word_suffix")) != NXE_OK ||
        (status = json_flag(m, "fuse_unk", "model", false, &t->fuse_unk)) != NXE_OK ||
        (status = json_flag(m, "ignore_merges", "model", false, &t->ignore_merges)) != NXE_OK ||
        (status = json_flag(m, "byte_fallback", "model", false, &byte_fallback)) != NXE_OK)
        return status;
    if (byte_fallback)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: a BPE model with byte_fallback is not supported");
    const nxe_json_value *dropout = nxe_json_get(m, "dropout");
    double p = 0;
    if (dropout && nxe_json_kind(dropout) != NXE_JSON_NULL &&
        (!nxe_json_number(dropout, &p) || p != 0))
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: a BPE model.dropout is not supported (only null)");
    const nxe_json_value *unk = nxe_json_get(m, "unk_token");
    if (unk && nxe_json_kind(unk) != NXE_JSON_NULL) {
        size_t size;
        const char *name = nxe_json_string(unk, &size);
        if (!name)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: model.unk_token must be a string or null");
        t->unk_id = vocab_find(t, "", 0, name, size);
        if (t->unk_id < 0)
            return nxe_error(NXE_ERROR_FORMAT,
                             "tokenizer.json: model.unk_token \"%.*s\" is not in the vocabulary",
                             (int)(size > 64 ? 64 : size), name);
    }
    for (uint32_t b = 0; b < 256; b++) {
        char c[4];
        size_t n = nxe_utf8_encode(byte_char(b), c);
        t->byte_ids[b] = vocab_find(t, "", 0, c, n);
    }
    return read_merges(t, nxe_json_get(m, "merges"));
}

/* The decoder decode uses; one this library lacks fails only decode, not creation. */
static nxe_status read_decoder(nxe_tokenizer *t, const nxe_json_value *d)
{
    if (!d || nxe_json_kind(d) == NXE_JSON_NULL) {
        t->decoder = DECODER_NONE;
        return NXE_OK;
    }
    const char *type = json_type_name(d, NULL);
    if (nxe_json_kind(d) != NXE_JSON_OBJECT || !type)
        return nxe_error(NXE_ERROR_FORMAT,
                         "tokenizer.json: decoder must be null or an object with a string type");
    if (strcmp(type, "ByteLevel") == 0) {
        t->decoder = DECODER_BYTE_LEVEL;
        return NXE_OK;
    }
    if (strcmp(type, "WordPiece") == 0) {
        size_t size = 2;
        const nxe_json_value *v = nxe_json_get(d, "prefix");
        const char *prefix = v ? nxe_json_string(v, &size) : "##";
        if (!prefix || size > TOK_MAX_TOKEN_BYTES)
            return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: decoder.prefix must be a string "
                                               "of at most 1024 bytes");
        nxe_status status = pool_add(t, prefix, size, &t->decoder_prefix_offset);
        if (status == NXE_OK)
            status = json_flag(d, "cleanup", "decoder", true, &t->decoder_cleanup);
        t->decoder_prefix_size = (uint32_t)size;
        t->decoder = DECODER_WORD_PIECE;
        return status;
    }
    t->decoder = DECODER_OTHER;
    snprintf(t->decoder_name, sizeof t->decoder_name, "%s", type);
    return NXE_OK;
}

/* Which components go together. */
static nxe_status check_components(const nxe_tokenizer *t)
{
    if (t->model == MODEL_BPE && (!t->byte_level || t->normalize))
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "tokenizer.json: a BPE model is supported with the ByteLevel "
                         "pre-tokenizer and no normalizer only");
    if (t->model == MODEL_WORD_PIECE && t->byte_level)
        return nxe_error(NXE_ERROR_UNSUPPORTED, "tokenizer.json: the ByteLevel pre-tokenizer is "
                                                "supported with a BPE model only");
    return NXE_OK;
}

/* The per-id tables decode reads and the first bytes of raw added tokens. */
static nxe_status finish(nxe_tokenizer *t)
{
    size_t n = t->vocab_size > 0 ? (size_t)t->vocab_size : 1;
    t->id_vocab = malloc(n * sizeof(int32_t));
    t->id_added = malloc(n * sizeof(int32_t));
    t->id_special = calloc(n, 1);
    if (!t->id_vocab || !t->id_added || !t->id_special)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    for (size_t i = 0; i < n; i++)
        t->id_vocab[i] = t->id_added[i] = -1;
    for (int32_t k = 0; k < t->vocab_count; k++)
        t->id_vocab[t->vocab[k].id] = k;
    /* An id's token is its added token's first (the first of them in the file), then its
     * vocabulary token's; the token is special when a special added token has that text. */
    for (int32_t k = t->added_count - 1; k >= 0; k--) {
        t->id_added[t->added[k].id] = k;
        if (!t->added[k].normalized)
            t->raw_first[(unsigned char)t->pool[t->added[k].offset]] = true;
    }
    for (int32_t k = 0; k < t->added_count; k++) {
        const added_token *a = &t->added[k];
        if (!a->special)
            continue;
        if (t->id_added[a->id] == k)
            t->id_special[a->id] = 1;
        int32_t id = vocab_find(t, "", 0, t->pool + a->offset, a->size);
        if (id >= 0 && t->id_added[id] < 0)
            t->id_special[id] = 1;
    }
    for (int32_t id = 0; id < t->vocab_size; id++) {
        int32_t k = t->id_added[id];
        if (k >= 0 && !t->added[k].special && !t->id_special[id]) {
            /* A non-special added token whose text a special one also has. */
            for (int32_t j = 0; j < t->added_count; j++)
                if (t->added[j].special && t->added[j].size == t->added[k].size &&
                    memcmp(t->pool + t->added[j].offset, t->pool + t->added[k].offset,
                           t->added[k].size) == 0)
                    t->id_special[id] = 1;
        }
    }
    return NXE_OK;
}

static nxe_status normalize_added(nxe_tokenizer *t, added_token *at);

/* Reads the `count` added tokens of `list`; `seen` (seen_mask + 1 slots, zeroed) finds repeated
 * contents. */
static nxe_status read_added_list(nxe_tokenizer *t, const nxe_json_value *list, int32_t count,
                                  uint32_t *seen, uint32_t seen_mask)
{
    int32_t max_added = -1;
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
        /* `tokenizers` keeps the first of tokens with the same content and gives each its id
         * anew: the vocabulary's when it has the content, else the next after the vocabulary
         * (its entry count) and the ids given so far to added tokens the vocabulary lacks; the
         * file's ids are only checked. */
        uint32_t h = hash_bytes(2166136261u, content, size) & seen_mask;
        bool repeated = false;
        for (; seen[h] && !repeated; h = (h + 1) & seen_mask) {
            const added_token *other = &t->added[seen[h] - 1];
            repeated = other->size == size && memcmp(t->pool + other->offset, content, size) == 0;
        }
        if (repeated)
            continue;
        int32_t assigned = vocab_find(t, "", 0, content, size);
        if (assigned < 0) {
            assigned = max_added < 0                                        ? t->vocab_count
                       : max_added >= t->vocab_count || t->vocab_count == 0 ? max_added + 1
                                                                            : t->vocab_count;
            if (assigned > INT32_MAX - 1)
                return nxe_error(NXE_ERROR_FORMAT, "tokenizer.json: added token ids past %d",
                                 INT32_MAX - 1);
            max_added = assigned > max_added ? assigned : max_added;
        }
        seen[h] = (uint32_t)t->added_count + 1;
        added_token *at = &t->added[t->added_count++];
        if ((status = pool_add(t, content, size, &at->offset)) != NXE_OK)
            return status;
        at->size = (uint32_t)size;
        at->id = assigned;
        at->lstrip = lstrip;
        at->rstrip = rstrip;
        at->special = special;
        if (normalized && (status = normalize_added(t, at)) != NXE_OK)
            return status;
        if (at->id >= t->vocab_size)
            t->vocab_size = at->id + 1;
    }
    return NXE_OK;
}

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
    uint32_t mask = 63;
    while ((uint32_t)count * 2 > mask)
        mask = mask * 2 + 1;
    uint32_t *seen = calloc((size_t)mask + 1, sizeof *seen);
    t->added = calloc((size_t)count + 1, sizeof *t->added);
    nxe_status status = seen && t->added
                            ? read_added_list(t, list, count, seen, mask)
                            : nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: out of memory");
    free(seen);
    return status;
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
    if (strcmp(type, "ByteLevel") == 0) {
        /* No special tokens; the offsets of tokens leave out their leading and trailing spaces. */
        nxe_status status = json_flag(p, "trim_offsets", "post_processor", true, &t->trim_offsets);
        if (status == NXE_OK)
            status = json_flag(p, "add_prefix_space", "post_processor", true,
                               &t->trim_keeps_prefix_space);
        return status;
    }
    return nxe_error(NXE_ERROR_UNSUPPORTED,
                     "tokenizer.json: the post-processor \"%.64s\" is not supported (only "
                     "TemplateProcessing, BertProcessing and ByteLevel)",
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
        status = check_components(t);
    if (status == NXE_OK)
        status = read_added_tokens(t, nxe_json_get(root, "added_tokens"));
    if (status == NXE_OK)
        status = read_post_processor(t, nxe_json_get(root, "post_processor"));
    if (status == NXE_OK)
        status = read_truncation_padding(t, root);
    if (status == NXE_OK)
        status = read_decoder(t, nxe_json_get(root, "decoder"));
    if (status == NXE_OK)
        status = check_special_ids(t);
    if (status == NXE_OK)
        status = finish(t);
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
    /* BertWordPieceTokenizer's decoder: WordPiece with "##" and cleanup. */
    for (int32_t k = 0; k < t->added_count; k++)
        t->added[k].special = true;
    t->decoder = DECODER_WORD_PIECE;
    t->decoder_prefix_offset = t->prefix_offset;
    t->decoder_prefix_size = 2;
    t->decoder_cleanup = true;
    if ((status = finish(t)) != NXE_OK) {
        nxe_tokenizer_release(t);
        return status;
    }
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
    free(t->merges);
    free(t->id_vocab);
    free(t->id_added);
    free(t->id_special);
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
    unsigned char *piece; /* byte-level BPE: the bytes of one piece */
    int64_t *piece_from;  /* per byte: the input bytes of its character */
    int32_t piece_capacity;
    struct bpe_symbol *symbols;
    int32_t symbols_capacity;
    struct bpe_merge *heap;
    int32_t heap_count, heap_capacity;
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

static const char *id_token(const nxe_tokenizer *t, int32_t id, size_t *size);

/* ---- byte-level BPE: encoding ---- */

typedef struct bpe_symbol {
    int32_t id, prev, next, start, len; /* len 0: merged into the symbol before */
} bpe_symbol;

typedef struct bpe_merge {
    int32_t rank, pos, id;
} bpe_merge;

static bool merge_before(const bpe_merge *a, const bpe_merge *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static nxe_status heap_push(encode_state *s, const nxe_tokenizer *t, int32_t pos, int32_t left,
                            int32_t right)
{
    const merge_slot *m = merge_find(t, left, right);
    if (!m)
        return NXE_OK;
    if (s->heap_count == s->heap_capacity &&
        nxe_grow_array((void **)&s->heap, &s->heap_capacity, s->heap_count + 1,
                       sizeof(bpe_merge)) != NXE_OK)
        return oom();
    bpe_merge item = {m->rank, pos, m->id};
    int32_t i = s->heap_count++;
    while (i > 0 && merge_before(&item, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = item;
    return NXE_OK;
}

static bpe_merge heap_pop(encode_state *s)
{
    bpe_merge top = s->heap[0], last = s->heap[--s->heap_count];
    int32_t i = 0, n = s->heap_count;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && merge_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!merge_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0)
        s->heap[i] = last;
    return top;
}

/* BPE over the piece s->piece[0 .. n) (bytes, each one byte-level character), byte k of which
 * came from input bytes [s->piece_from[2k], s->piece_from[2k + 1]). */
static nxe_status bpe_piece(const nxe_tokenizer *t, encode_state *s, int32_t n)
{
    nxe_status status;
    if (t->ignore_merges) {
        /* The whole piece, when the vocabulary has it, as its characters spell it. */
        if (s->word_capacity < 2 * n + 1) {
            int32_t capacity = s->word_capacity;
            if (nxe_grow_array((void **)&s->word, &capacity, 2 * n + 1, 1) != NXE_OK)
                return oom();
            s->word_capacity = capacity;
        }
        size_t size = 0;
        for (int32_t k = 0; k < n; k++)
            size += nxe_utf8_encode(byte_char(s->piece[k]), s->word + size);
        int32_t id = vocab_find(t, "", 0, s->word, size);
        if (id >= 0)
            return push_token(s, id, s->piece_from[0], s->piece_from[2 * n - 1]);
    }
    if (s->symbols_capacity < n &&
        nxe_grow_array((void **)&s->symbols, &s->symbols_capacity, n, sizeof(bpe_symbol)) != NXE_OK)
        return oom();
    int32_t count = 0;
    bool pending_unk = false;
    for (int32_t k = 0; k < n; k++) {
        int32_t id = t->byte_ids[s->piece[k]];
        if (id < 0) {
            /* A byte the vocabulary lacks: the unknown token (one for a run of them with
             * fuse_unk), or nothing without one. */
            if (t->unk_id < 0)
                continue;
            if (pending_unk && t->fuse_unk) {
                s->symbols[count - 1].len++;
                continue;
            }
            id = t->unk_id;
            pending_unk = true;
        } else {
            pending_unk = false;
        }
        s->symbols[count] = (bpe_symbol){id, count - 1, count + 1, k, 1};
        count++;
    }
    if (count == 0)
        return NXE_OK;
    s->symbols[count - 1].next = -1;
    s->heap_count = 0;
    for (int32_t i = 0; i + 1 < count; i++)
        if ((status = heap_push(s, t, i, s->symbols[i].id, s->symbols[i + 1].id)) != NXE_OK)
            return status;
    /* The lowest-ranked pair first, the leftmost of equal ones; entries whose pair a merge
     * changed since are stale and skipped. */
    while (s->heap_count > 0) {
        bpe_merge top = heap_pop(s);
        bpe_symbol *a = &s->symbols[top.pos];
        if (a->len == 0 || a->next < 0)
            continue;
        bpe_symbol *b = &s->symbols[a->next];
        const merge_slot *m = merge_find(t, a->id, b->id);
        if (!m || m->id != top.id)
            continue;
        a->id = m->id;
        a->len += b->len;
        a->next = b->next;
        b->len = 0;
        if (a->next >= 0)
            s->symbols[a->next].prev = top.pos;
        if (a->prev >= 0 &&
            (status = heap_push(s, t, a->prev, s->symbols[a->prev].id, a->id)) != NXE_OK)
            return status;
        if (a->next >= 0 &&
            (status = heap_push(s, t, top.pos, a->id, s->symbols[a->next].id)) != NXE_OK)
            return status;
    }
    for (int32_t i = 0; i < count; i++) {
        const bpe_symbol *y = &s->symbols[i];
        if (y->len > 0 &&
            (status = push_token(s, y->id, s->piece_from[2 * y->start],
                                 s->piece_from[2 * (y->start + y->len - 1) + 1])) != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* The class of a character in GPT-2's split pattern. */
enum { CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE, CLASS_OTHER };

static int char_class(uint32_t cp)
{
    uint32_t flags = nxe_unicode_flags(cp);
    if (flags & NXE_UNICODE_LETTER)
        return CLASS_LETTER;
    if (flags & NXE_UNICODE_NUMBER)
        return CLASS_NUMBER;
    if (flags & NXE_UNICODE_WHITESPACE)
        return CLASS_SPACE;
    return CLASS_OTHER;
}

/* The end of the match of GPT-2's pattern at c[i] (i < n):
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * tried in that order, as a backtracking engine does. Every character is a letter, a number,
 * a space or another, so a match starts at every position. */
static int32_t split_end(const norm_char *c, int32_t i, int32_t n)
{
    uint32_t cp = c[i].cp;
    if (cp == '\'' && i + 1 < n) {
        uint32_t a = c[i + 1].cp, b = i + 2 < n ? c[i + 2].cp : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return i + 3;
    }
    int32_t j = i;
    int cls = char_class(cp);
    if (cp == ' ' && i + 1 < n && char_class(c[i + 1].cp) != CLASS_SPACE)
        cls = char_class(c[++j].cp);
    if (cls != CLASS_SPACE) {
        while (j < n && char_class(c[j].cp) == cls)
            j++;
        return j;
    }
    while (j < n && char_class(c[j].cp) == CLASS_SPACE)
        j++;
    /* \s+(?!\S): the run when it ends the text, else the run less its last space (when that
     * leaves one); then \s+. */
    return j == n || j - i < 2 ? j : j - 1;
}

/* Turns the characters c[a, b) into the bytes of a piece and BPE-encodes it. */
static nxe_status byte_level_piece(const nxe_tokenizer *t, encode_state *s, const norm_char *c,
                                   int32_t a, int32_t b)
{
    int64_t bytes = 0;
    for (int32_t i = a; i < b; i++)
        bytes += c[i].cp < 0x80 ? 1 : c[i].cp < 0x800 ? 2 : c[i].cp < 0x10000 ? 3 : 4;
    if (bytes > INT32_MAX / 4)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "tokenizer: a piece of %lld bytes is too long",
                         (long long)bytes);
    int32_t need = (int32_t)bytes;
    if (s->piece_capacity < need) {
        int32_t capacity = s->piece_capacity;
        if (nxe_grow_array((void **)&s->piece, &capacity, need, 1) != NXE_OK)
            return oom();
        int32_t from_capacity = s->piece_capacity;
        if (nxe_grow_array((void **)&s->piece_from, &from_capacity, capacity,
                           2 * sizeof(int64_t)) != NXE_OK)
            return oom();
        s->piece_capacity = capacity;
    }
    int32_t n = 0;
    for (int32_t i = a; i < b; i++) {
        size_t len = nxe_utf8_encode(c[i].cp, (char *)s->piece + n);
        for (size_t k = 0; k < len; k++, n++) {
            s->piece_from[2 * n] = c[i].start;
            s->piece_from[2 * n + 1] = c[i].end;
        }
    }
    return bpe_piece(t, s, n);
}

/* The ByteLevel pre-tokenizer and BPE over the characters [first, last) of s->chars: a space
 * before them unless they start with one (add_prefix_space), split by GPT-2's pattern
 * (use_regex), each piece through BPE. */
static nxe_status byte_level_words(const nxe_tokenizer *t, encode_state *s, int32_t first,
                                   int32_t last)
{
    if (last <= first)
        return NXE_OK;
    const norm_char *c = s->chars + first;
    int32_t n = last - first;
    if (t->add_prefix_space && c[0].cp != ' ') {
        /* The space takes the first character's place in the input, as `tokenizers` aligns it. */
        s->scratch_count = 0;
        nxe_status status = push_char(&s->scratch, &s->scratch_count, &s->scratch_capacity, ' ',
                                      c[0].start, c[0].end);
        for (int32_t i = 0; i < n && status == NXE_OK; i++)
            status = push_char(&s->scratch, &s->scratch_count, &s->scratch_capacity, c[i].cp,
                               c[i].start, c[i].end);
        if (status != NXE_OK)
            return status;
        c = s->scratch;
        n = s->scratch_count;
    }
    if (!t->use_regex)
        return byte_level_piece(t, s, c, 0, n);
    for (int32_t i = 0; i < n;) {
        int32_t j = split_end(c, i, n);
        nxe_status status = byte_level_piece(t, s, c, i, j);
        if (status != NXE_OK)
            return status;
        i = j;
    }
    return NXE_OK;
}

/* Pre-tokenizes and WordPiece-encodes the normalized characters [first, last). */
static nxe_status encode_words(const nxe_tokenizer *t, encode_state *s, int32_t first, int32_t last)
{
    if (t->model == MODEL_BPE)
        return byte_level_words(t, s, first, last);
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
        if (a->lstrip && match_start < done)
            match_start = done;
        while (a->lstrip && match_start > done &&
               (nxe_unicode_flags(s->chars[match_start - 1].cp) & NXE_UNICODE_WHITESPACE))
            match_start--;
        while (a->rstrip && match_end < n &&
               (nxe_unicode_flags(s->chars[match_end].cp) & NXE_UNICODE_WHITESPACE))
            match_end++;
        if (match_start >= match_end) /* a whitespace token inside the previous one's rstrip */
            match_start = match_end - 1;
        if ((status = encode_words(t, s, done, match_start)) != NXE_OK ||
            (status = push_token(s, a->id, s->chars[match_start].start,
                                 s->chars[match_end - 1].end)) != NXE_OK)
            return status;
        i += a->cps_count;
        done = match_end > done ? match_end : done;
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
        if (!t->raw_first[(unsigned char)text[i]]) {
            i++;
            continue;
        }
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
        /* As `tokenizers` does: matches are found in the text as it is, one after the other's
         * content; lstrip reaches back no further than the previous match's end, rstrip's
         * whitespace may hold the start of the next match. */
        size_t match_start = i, match_end = i + best->size, len;
        if (best->lstrip)
            match_start = i > done ? whitespace_before(text, i, done, size) : done;
        i = match_end;
        if (best->rstrip)
            while (match_end < size && whitespace_at(text, match_end, size, &len))
                match_end += len;
        if (match_start > done &&
            (status = encode_segment(t, s, text, done, match_start)) != NXE_OK)
            return status;
        if (match_start > match_end) /* a whitespace token inside the previous one's rstrip */
            match_start = match_end;
        if ((status = push_token(s, best->id, (int64_t)match_start, (int64_t)match_end)) != NXE_OK)
            return status;
        done = match_end > done ? match_end : done;
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
    nxe_free(s->piece);
    nxe_free(s->piece_from);
    nxe_free(s->symbols);
    nxe_free(s->heap);
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

/* The ByteLevel post-processor's trim_offsets: a token's offsets leave out as many characters
 * of the input as the token has leading and trailing spaces (byte-level spaces, U+0120, or
 * whitespace), but the first token keeps one leading space when add_prefix_space put it there.
 * `tokenizers`' Python binding trims its character offsets so, which is why characters of the
 * input, not bytes, are counted (a prefix space stands for no input of its own). */
static void trim_offsets(const nxe_tokenizer *t, encode_state *s, const char *text, int32_t first,
                         int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        int64_t *o = &s->offsets[2 * (first + i)];
        size_t size;
        const char *token = id_token(t, s->ids[first + i], &size);
        int64_t leading = 0, trailing = 0;
        bool lead = true;
        for (size_t k = 0; k < size;) {
            uint32_t cp = 0;
            size_t len = nxe_utf8_decode((const unsigned char *)token + k, size - k, &cp);
            k += len ? len : 1;
            bool space = cp == 0x120 || (nxe_unicode_flags(cp) & NXE_UNICODE_WHITESPACE);
            if (space && lead)
                leading++;
            lead = lead && space;
            trailing = space ? trailing + 1 : 0;
        }
        if (leading > 0 && (i == 0 || o[0] == 0) && t->trim_keeps_prefix_space && leading == 1)
            leading = 0;
        for (int64_t k = 0; k < leading && o[0] < o[1]; k++) {
            o[0]++;
            while (o[0] < o[1] && ((unsigned char)text[o[0]] & 0xC0) == 0x80)
                o[0]++;
        }
        /* The end moves back only when the input before it has that many characters. */
        int64_t end = o[1], k = 0;
        for (; k < trailing && end > 0; k++) {
            end--;
            while (end > 0 && ((unsigned char)text[end] & 0xC0) == 0x80)
                end--;
        }
        if (trailing > 0 && k == trailing)
            o[1] = end > o[0] ? end : o[0];
    }
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
    if (t->trim_offsets)
        trim_offsets(t, &s, text, skip, content);
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

/* ---- decoding ---- */

typedef struct text_buffer {
    char *data;
    size_t size, capacity;
} text_buffer;

static nxe_status buffer_put(text_buffer *b, const char *s, size_t n)
{
    if (b->size + n > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 256;
        while (capacity < b->size + n)
            capacity *= 2;
        char *grown = realloc(b->data, capacity);
        if (!grown)
            return oom();
        b->data = grown;
        b->capacity = capacity;
    }
    if (n)
        memcpy(b->data + b->size, s, n);
    b->size += n;
    return NXE_OK;
}

/* Appends bytes[0, n) with every maximal subpart of an ill-formed UTF-8 sequence replaced by
 * U+FFFD (Unicode's recommended practice, which Rust's from_utf8_lossy follows). */
static nxe_status put_lossy_utf8(text_buffer *out, const unsigned char *u, size_t n)
{
    static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    nxe_status status = NXE_OK;
    for (size_t i = 0; i < n && status == NXE_OK;) {
        unsigned char b = u[i];
        int need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b < 0x80) {
            status = buffer_put(out, (const char *)u + i, 1);
            i++;
            continue;
        }
        if (b >= 0xC2 && b <= 0xDF)
            need = 1;
        else if (b >= 0xE0 && b <= 0xEF)
            need = 2, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
        else if (b >= 0xF0 && b <= 0xF4)
            need = 3, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
        size_t j = i + 1;
        int got = 0;
        while (got < need && j < n && u[j] >= (got == 0 ? lo : 0x80) &&
               u[j] <= (got == 0 ? hi : 0xBF))
            j++, got++;
        if (need > 0 && got == need)
            status = buffer_put(out, (const char *)u + i, j - i);
        else
            status = buffer_put(out, replacement, 3);
        i = j;
    }
    return status;
}

/* Appends s with every `from` replaced by `to`, left to right. */
static nxe_status put_replaced(text_buffer *out, const char *s, size_t n, const char *from,
                               const char *to)
{
    size_t from_size = strlen(from), to_size = strlen(to);
    nxe_status status = NXE_OK;
    size_t i = 0;
    while (i < n && status == NXE_OK) {
        if (n - i >= from_size && memcmp(s + i, from, from_size) == 0) {
            status = buffer_put(out, to, to_size);
            i += from_size;
        } else {
            status = buffer_put(out, s + i, 1);
            i++;
        }
    }
    return status;
}

/* tokenizers' WordPiece cleanup, in its order, on one token. */
static nxe_status put_cleaned(text_buffer *out, const char *s, size_t n)
{
    static const char *const pairs[][2] = {{" .", "."},     {" ?", "?"},           {" !", "!"},
                                           {" ,", ","},     {" ' ", "'"},          {" n't", "n't"},
                                           {" 'm", "'m"},   {" do not", " don't"}, {" 's", "'s"},
                                           {" 've", "'ve"}, {" 're", "'re"}};
    text_buffer a = {0}, b = {0};
    nxe_status status = buffer_put(&a, s, n);
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0] && status == NXE_OK; k++) {
        b.size = 0;
        status = put_replaced(&b, a.data, a.size, pairs[k][0], pairs[k][1]);
        text_buffer swap = a;
        a = b;
        b = swap;
    }
    if (status == NXE_OK)
        status = buffer_put(out, a.data, a.size);
    free(a.data);
    free(b.data);
    return status;
}

/* The text of one id's token (its added token's, else its vocabulary token's). */
static const char *id_token(const nxe_tokenizer *t, int32_t id, size_t *size)
{
    int32_t k = t->id_added[id];
    if (k >= 0) {
        *size = t->added[k].size;
        return t->pool + t->added[k].offset;
    }
    k = t->id_vocab[id];
    *size = t->vocab[k].size;
    return t->pool + t->vocab[k].offset;
}

static nxe_status decode_into(const nxe_tokenizer *t, const int32_t *ids, int64_t count,
                              int32_t flags, text_buffer *out)
{
    text_buffer bytes = {0};
    nxe_status status = NXE_OK;
    int64_t emitted = 0;
    for (int64_t i = 0; i < count && status == NXE_OK; i++) {
        int32_t id = ids[i];
        if ((flags & NXE_DECODE_SKIP_SPECIAL) && t->id_special[id])
            continue;
        size_t size;
        const char *token = id_token(t, id, &size);
        if (t->decoder == DECODER_BYTE_LEVEL) {
            /* Each character back to its byte; a token with a character outside the byte-level
             * alphabet stays as it is. */
            size_t start = bytes.size;
            bool all = true;
            for (size_t k = 0; k < size && status == NXE_OK && all;) {
                uint32_t cp = 0;
                k += nxe_utf8_decode((const unsigned char *)token + k, size - k, &cp);
                int32_t b = char_byte(cp);
                if (b < 0) {
                    all = false;
                } else {
                    char c = (char)b;
                    status = buffer_put(&bytes, &c, 1);
                }
            }
            if (!all) {
                bytes.size = start;
                status = buffer_put(&bytes, token, size);
            }
        } else if (t->decoder == DECODER_WORD_PIECE) {
            const char *prefix = t->pool + t->decoder_prefix_offset;
            size_t prefix_size = t->decoder_prefix_size;
            text_buffer piece = {0};
            if (emitted > 0 && size >= prefix_size && memcmp(token, prefix, prefix_size) == 0)
                status = buffer_put(&piece, token + prefix_size, size - prefix_size);
            else if (emitted > 0)
                status =
                    buffer_put(&piece, " ", 1) == NXE_OK ? buffer_put(&piece, token, size) : oom();
            else
                status = buffer_put(&piece, token, size);
            if (status == NXE_OK)
                status = t->decoder_cleanup ? put_cleaned(out, piece.data, piece.size)
                                            : buffer_put(out, piece.data, piece.size);
            free(piece.data);
        } else {
            if (emitted > 0)
                status = buffer_put(out, " ", 1);
            if (status == NXE_OK)
                status = buffer_put(out, token, size);
        }
        emitted++;
    }
    if (status == NXE_OK && t->decoder == DECODER_BYTE_LEVEL)
        status = put_lossy_utf8(out, (const unsigned char *)bytes.data, bytes.size);
    free(bytes.data);
    return status;
}

NXE_API nxe_status nxe_tokenizer_decode(const nxe_tokenizer *t, const int32_t *ids, int64_t count,
                                        int32_t flags, char *out, size_t capacity, size_t *length)
{
    if (!length)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_decode: length is NULL");
    *length = 0;
    if (!t || count < 0 || (!ids && count > 0) || (!out && capacity > 0))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_decode: a NULL tokenizer, ids NULL with a count of %lld, "
                         "a negative count or out NULL with a capacity",
                         (long long)count);
    if (flags & ~NXE_DECODE_SKIP_SPECIAL)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_tokenizer_decode: unknown flags 0x%x",
                         (unsigned)flags);
    if (t->decoder == DECODER_OTHER)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "nxe_tokenizer_decode: the decoder \"%s\" of this tokenizer.json is not "
                         "supported (only ByteLevel and WordPiece)",
                         t->decoder_name);
    for (int64_t i = 0; i < count; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->vocab_size || (t->id_added[id] < 0 && t->id_vocab[id] < 0))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "nxe_tokenizer_decode: ids[%lld] = %d names no token (the "
                             "vocabulary has ids 0 .. %d)",
                             (long long)i, id, t->vocab_size - 1);
    }
    text_buffer text = {0};
    nxe_status status = decode_into(t, ids, count, flags, &text);
    if (status != NXE_OK) {
        free(text.data);
        nxe_error_prefix("nxe_tokenizer_decode: ");
        return status;
    }
    if (text.size > capacity) {
        *length = text.size;
        free(text.data);
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                         "nxe_tokenizer_decode: the text needs %zu bytes, the buffer holds %zu",
                         *length, capacity);
    }
    if (text.size)
        memcpy(out, text.data, text.size);
    *length = text.size;
    free(text.data);
    return NXE_OK;
}

NXE_API nxe_status nxe_tokenizer_vocab_size(const nxe_tokenizer *t, int32_t *size)
{
    if (size)
        *size = 0;
    if (!t || !size)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_tokenizer_vocab_size: a NULL tokenizer or size");
    *size = t->vocab_size;
    return NXE_OK;
}
