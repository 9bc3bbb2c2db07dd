/* nxe_tokenizer.h — the text tokenizer of libnxe: what BERT-family embedding models use
 * (Hugging Face `tokenizer.json` with a WordPiece model, or a plain `vocab.txt`) and what
 * GPT-2-style and Whisper models use (tokenizer.json with a byte-level BPE model), turning UTF-8
 * text into token ids, attention masks and character offsets, and ids back into text, equal to
 * the `tokenizers` package's. Plain C99; parses with pycparser after `cc -E`. Link with -lnxe.
 *
 *   nxe_tokenizer *tok;
 *   if (nxe_tokenizer_create(json, json_size, &tok) != NXE_OK) puts(nxe_last_error());
 *   nxe_encoding *enc;
 *   nxe_tokenizer_options opts = NXE_TOKENIZER_OPTIONS_INIT;
 *   opts.max_length = 128;
 *   nxe_tokenizer_encode(tok, "Hello world", 11, &opts, &enc);
 *   // enc->ids[0 .. enc->length), enc->attention_mask, enc->offsets
 *   nxe_encoding_release(enc);
 *   nxe_tokenizer_release(tok);
 *
 * What it implements: the BertNormalizer (clean text, CJK spacing, strip accents, lowercase;
 * Unicode NFD and character categories from tables generated at build time from Python's
 * unicodedata), the BertPreTokenizer (whitespace and punctuation splits), WordPiece (greedy
 * longest match, continuing-subword prefix, the unknown token, max input chars per word), the
 * TemplateProcessing / BertProcessing post-processor (the special tokens around one sequence),
 * truncation (longest first, right side) and padding (to the longest in a batch or a fixed
 * length, right side). Since 0.9 also byte-level BPE: the ByteLevel pre-tokenizer (prefix space,
 * GPT-2's split pattern, bytes as characters), the BPE model (merges by rank; unknown token,
 * fuse_unk and ignore_merges honoured), the ByteLevel post-processor (offset trimming), and
 * decoding (nxe_tokenizer_decode: ByteLevel and WordPiece decoders). Added tokens
 * (tokenizer.json's added_tokens; lstrip and rstrip honoured; their ids as `tokenizers` assigns
 * them) are split out as `tokenizers` does: those not normalized from the raw text before
 * anything else (so a literal "[MASK]" in the text is that token), the normalized ones from the
 * normalized text. A tokenizer.json that asks for anything else (a single_word added token
 * among them) is refused at creation with NXE_ERROR_UNSUPPORTED naming the component.
 *
 * Conventions are nxe.h's: every call that can fail returns an nxe_status and leaves a message
 * for nxe_last_error() on the calling thread; out-params are NULL/0 on failure. A tokenizer is
 * immutable after creation: any number of threads may encode with it at once. Each declaration
 * names the API version (nxe.h's) that added it.
 */
#ifndef NXE_NXE_TOKENIZER_H
#define NXE_NXE_TOKENIZER_H

#include "nxe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Since 0.8. */
typedef struct nxe_tokenizer nxe_tokenizer;

/* Creates a tokenizer from the text of a Hugging Face tokenizer.json (UTF-8 JSON, `size`
 * bytes, not NUL-terminated); the text is copied or parsed at once, so the caller may free it.
 * Padding uses tokenizer.json's padding.pad_id (else the id of "[PAD]", else 0).
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_FORMAT (not JSON: the message gives
 * the byte offset; or a field of the wrong type or out of range, or a special token id outside
 * the vocabulary: the message names it), NXE_ERROR_UNSUPPORTED (a model,
 * normalizer, pre-tokenizer or post-processor this library does not implement),
 * NXE_ERROR_OUT_OF_MEMORY; *out is then NULL. Since 0.8. */
NXE_API nxe_status nxe_tokenizer_create(const char *json, size_t size, nxe_tokenizer **out);

/* How a vocab.txt tokenizer normalizes; the defaults are bert-base-uncased's. Since 0.8. */
typedef struct nxe_tokenizer_vocab_options {
    uint32_t struct_size;             /* sizeof(nxe_tokenizer_vocab_options) */
    int32_t lowercase;                /* nonzero: lowercase (and strip accents) */
    int32_t max_input_chars_per_word; /* longer words become the unknown token; 100 */
    const char *unk_token;            /* "[UNK]"; also cls, sep, pad, mask below */
    const char *cls_token;
    const char *sep_token;
    const char *pad_token;
    const char *mask_token;
} nxe_tokenizer_vocab_options;
/* Since 0.8. */
#define NXE_TOKENIZER_VOCAB_OPTIONS_INIT                                                           \
    {sizeof(nxe_tokenizer_vocab_options), 1, 100, "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"}

/* Creates a WordPiece tokenizer from a vocab.txt (one token a line, the line number its id),
 * with BERT's normalizer, pre-tokenizer and [CLS] .. [SEP] template. `options` may be NULL
 * (the defaults). Errors as nxe_tokenizer_create, NXE_ERROR_FORMAT also for a special token
 * missing from the vocabulary or a repeated token. Since 0.8. */
NXE_API nxe_status nxe_tokenizer_create_from_vocab(const char *vocab, size_t size,
                                                   const nxe_tokenizer_vocab_options *options,
                                                   nxe_tokenizer **out);

/* Releases a tokenizer; NULL is a no-op. Since 0.8. */
NXE_API void nxe_tokenizer_release(nxe_tokenizer *tokenizer);

/* Facts of a tokenizer. Since 0.8. */
typedef struct nxe_tokenizer_info {
    uint32_t struct_size; /* sizeof(nxe_tokenizer_info) */
    int32_t vocab_size;   /* ids are in [0, vocab_size) */
    int32_t pad_id;       /* the padding token's id, 0 when it has none */
    int32_t unk_id;       /* the unknown token's id; -1 when it has none (byte-level BPE) */
    int32_t max_length;   /* the truncation length tokenizer.json sets, 0 when none */
    int32_t num_special;  /* special tokens added around one sequence ([CLS] and [SEP]: 2) */
} nxe_tokenizer_info;

/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a short struct_size). Since 0.8. */
NXE_API nxe_status nxe_tokenizer_get_info(const nxe_tokenizer *tokenizer, nxe_tokenizer_info *info);

/* The id of a token string (exact, after no normalization; added tokens first, then the
 * vocabulary), or -1 when neither has it (or for bad arguments). Since 0.8. */
NXE_API int32_t nxe_tokenizer_token_to_id(const nxe_tokenizer *tokenizer, const char *token);

/* Truncation and padding of one encode call. Since 0.8. */
typedef struct nxe_tokenizer_options {
    uint32_t struct_size;       /* sizeof(nxe_tokenizer_options) */
    int32_t add_special_tokens; /* nonzero (the default): [CLS] text [SEP] */
    int32_t max_length;         /* > 0: truncate to this many tokens, specials included;
                                   0: tokenizer.json's truncation (none when it has none);
                                   -1: never truncate */
    int32_t pad_to;             /* 0: no padding; -1: to the longest of the batch;
                                   > 0: to this length (after truncation) */
} nxe_tokenizer_options;
/* Since 0.8. */
#define NXE_TOKENIZER_OPTIONS_INIT {sizeof(nxe_tokenizer_options), 1, 0, 0}

/* One encoded text. Arrays hold `length` entries; offsets are [start, end) in bytes of the
 * UTF-8 input (0, 0 for special and padding tokens). Since 0.8. */
typedef struct nxe_encoding {
    int32_t length;     /* tokens, padding included */
    int32_t num_tokens; /* tokens before padding */
    int32_t truncated;  /* tokens cut by truncation (0: none) */
    int32_t *ids;
    int32_t *attention_mask; /* 1 for tokens, 0 for padding */
    int32_t *type_ids;       /* 0 for one sequence */
    int32_t *special_mask;   /* 1 for special tokens and padding */
    int64_t *offsets;        /* 2 * length: start, end bytes */
} nxe_encoding;

/* Encodes `size` bytes of UTF-8 text (not NUL-terminated; NULL with size 0 is the empty text).
 * `options` may be NULL (the defaults). The encoding is the caller's, released with
 * nxe_encoding_release. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, bad options or text that
 * is not valid UTF-8: the message gives the byte offset), NXE_ERROR_OUT_OF_MEMORY; *out is then
 * NULL. Since 0.8. */
NXE_API nxe_status nxe_tokenizer_encode(const nxe_tokenizer *tokenizer, const char *text,
                                        size_t size, const nxe_tokenizer_options *options,
                                        nxe_encoding **out);

/* Encodes `count` texts at once (texts[i] of sizes[i] bytes) into out[0 .. count), padding them
 * together when options->pad_to is -1. On failure every out[i] is NULL and the message names
 * the text. Since 0.8. */
NXE_API nxe_status nxe_tokenizer_encode_batch(const nxe_tokenizer *tokenizer,
                                              const char *const *texts, const size_t *sizes,
                                              int32_t count, const nxe_tokenizer_options *options,
                                              nxe_encoding **out);

/* Releases an encoding; NULL is a no-op. Since 0.8. */
NXE_API void nxe_encoding_release(nxe_encoding *encoding);

/* Flags of nxe_tokenizer_decode. Since 0.9. */
#define NXE_DECODE_SKIP_SPECIAL 1 /* leave out the special added tokens */

/* The text of `count` token ids (`ids` may be NULL when count is 0), as `tokenizers`' decode
 * gives it: the ByteLevel decoder (byte-level BPE: each token's characters mapped back to the
 * bytes they stand for, all concatenated, byte sequences that are not valid UTF-8 replaced by
 * U+FFFD, one per maximal invalid subpart), the WordPiece decoder (pieces joined, a space
 * before each that lacks the continuing-subword prefix, the prefix dropped, cleanup of spaces
 * before punctuation and contractions when tokenizer.json asks for it), or with no decoder the
 * tokens joined with spaces. With NXE_DECODE_SKIP_SPECIAL, special added tokens are left out.
 * The text is UTF-8 and NOT NUL-terminated: `*length` gets its size in bytes, and it is written
 * to out[0 .. *length) when it fits in `capacity` (out may be NULL with capacity 0 to ask for
 * the size). NXE_ERROR_INVALID_ARGUMENT (a NULL tokenizer or length, ids NULL with count > 0,
 * out NULL with capacity > 0, count < 0, unknown flags, or an id that names no token: the
 * message gives its position and value), NXE_ERROR_BUFFER_TOO_SMALL (capacity is below
 * *length, which holds the size needed; nothing is written), NXE_ERROR_UNSUPPORTED
 * (tokenizer.json's decoder is one this library does not implement: the message names it),
 * NXE_ERROR_OUT_OF_MEMORY; *length is 0 on any failure but NXE_ERROR_BUFFER_TOO_SMALL.
 * Since 0.9. */
NXE_API nxe_status nxe_tokenizer_decode(const nxe_tokenizer *tokenizer, const int32_t *ids,
                                        int64_t count, int32_t flags, char *out, size_t capacity,
                                        size_t *length);

/* The size of the id space: ids are in [0, *size) (the vocabulary and the added tokens; the
 * same as nxe_tokenizer_info's vocab_size). NXE_ERROR_INVALID_ARGUMENT (a NULL argument); *size
 * is then 0. Since 0.9. */
NXE_API nxe_status nxe_tokenizer_vocab_size(const nxe_tokenizer *tokenizer, int32_t *size);

#ifdef __cplusplus
}
#endif

#endif /* NXE_NXE_TOKENIZER_H */
