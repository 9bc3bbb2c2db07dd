/* unicode.h — the character facts the tokenizer needs (categories, canonical decomposition and
 * combining classes, lowercase mapping), looked up in tables tools/gen_unicode_tables.py
 * generates at build time. Internal to the text layer; no table here is typed in. */
#ifndef NXE_TEXT_UNICODE_H
#define NXE_TEXT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/utf8.h"

/* Flags of a code point (the low byte of its table entry; the high byte is its canonical
 * combining class). The meanings are the `tokenizers` package's: see the generator. */
#define NXE_UNICODE_CONTROL 1u
#define NXE_UNICODE_WHITESPACE 2u
#define NXE_UNICODE_PUNCTUATION 4u
#define NXE_UNICODE_NONSPACING_MARK 8u
#define NXE_UNICODE_HAS_LOWER 16u
#define NXE_UNICODE_HAS_DECOMPOSITION 32u
#define NXE_UNICODE_LETTER 64u  /* general category L*: the pattern's \p{L} */
#define NXE_UNICODE_NUMBER 128u /* general category N*: the pattern's \p{N} */

/* The longest full lowercase mapping and full canonical decomposition of one code point. */
#define NXE_UNICODE_MAX_MAPPING 8

/* The generated tables (unicode_tables.c). */
extern const uint16_t nxe_unicode_index[];
extern const uint16_t nxe_unicode_blocks[];
extern const int32_t nxe_unicode_lower_count;
extern const uint32_t nxe_unicode_lower_keys[];
extern const uint32_t nxe_unicode_lower_spans[];
extern const uint32_t nxe_unicode_lower_pool[];
extern const int32_t nxe_unicode_nfd_count;
extern const uint32_t nxe_unicode_nfd_keys[];
extern const uint32_t nxe_unicode_nfd_spans[];
extern const uint32_t nxe_unicode_nfd_pool[];

static inline uint32_t nxe_unicode_entry(uint32_t cp)
{
    if (cp >= 0x110000)
        return 0;
    return nxe_unicode_blocks[(uint32_t)nxe_unicode_index[cp >> 7] * 128u + (cp & 127u)];
}

static inline uint32_t nxe_unicode_flags(uint32_t cp)
{
    return nxe_unicode_entry(cp) & 0xFFu;
}

static inline uint32_t nxe_unicode_combining_class(uint32_t cp)
{
    return nxe_unicode_entry(cp) >> 8;
}

/* The full lowercase mapping of cp into out (the code point itself when it has none); returns
 * the count. */
int32_t nxe_unicode_lower(uint32_t cp, uint32_t out[NXE_UNICODE_MAX_MAPPING]);
/* The full canonical decomposition of cp into out (Hangul syllables by the algorithm; the code
 * point itself when it has none); returns the count. */
int32_t nxe_unicode_decompose(uint32_t cp, uint32_t out[NXE_UNICODE_MAX_MAPPING]);

#endif
