/* unicode.c — lookups in the generated Unicode tables, Hangul decomposition and strict UTF-8
 * coding for the tokenizer. */
#include "text/unicode.h"

#define HANGUL_S_BASE 0xAC00u
#define HANGUL_L_BASE 0x1100u
#define HANGUL_V_BASE 0x1161u
#define HANGUL_T_BASE 0x11A7u
#define HANGUL_V_COUNT 21u
#define HANGUL_T_COUNT 28u
#define HANGUL_S_COUNT 11172u

static int32_t mapping(uint32_t cp, int32_t count, const uint32_t *keys, const uint32_t *spans,
                       const uint32_t *pool, uint32_t out[NXE_UNICODE_MAX_MAPPING])
{
    int32_t lo = 0, hi = count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == count || keys[lo] != cp) {
        out[0] = cp;
        return 1;
    }
    uint32_t start = spans[lo] >> 8, n = spans[lo] & 0xFFu;
    if (n > NXE_UNICODE_MAX_MAPPING)
        n = NXE_UNICODE_MAX_MAPPING;
    for (uint32_t i = 0; i < n; i++)
        out[i] = pool[start + i];
    return (int32_t)n;
}

int32_t nxe_unicode_lower(uint32_t cp, uint32_t out[NXE_UNICODE_MAX_MAPPING])
{
    if (!(nxe_unicode_flags(cp) & NXE_UNICODE_HAS_LOWER)) {
        out[0] = cp;
        return 1;
    }
    return mapping(cp, nxe_unicode_lower_count, nxe_unicode_lower_keys, nxe_unicode_lower_spans,
                   nxe_unicode_lower_pool, out);
}

int32_t nxe_unicode_decompose(uint32_t cp, uint32_t out[NXE_UNICODE_MAX_MAPPING])
{
    if (cp >= HANGUL_S_BASE && cp < HANGUL_S_BASE + HANGUL_S_COUNT) {
        uint32_t s = cp - HANGUL_S_BASE;
        out[0] = HANGUL_L_BASE + s / (HANGUL_V_COUNT * HANGUL_T_COUNT);
        out[1] = HANGUL_V_BASE + (s % (HANGUL_V_COUNT * HANGUL_T_COUNT)) / HANGUL_T_COUNT;
        if (s % HANGUL_T_COUNT == 0)
            return 2;
        out[2] = HANGUL_T_BASE + s % HANGUL_T_COUNT;
        return 3;
    }
    if (!(nxe_unicode_flags(cp) & NXE_UNICODE_HAS_DECOMPOSITION)) {
        out[0] = cp;
        return 1;
    }
    return mapping(cp, nxe_unicode_nfd_count, nxe_unicode_nfd_keys, nxe_unicode_nfd_spans,
                   nxe_unicode_nfd_pool, out);
}
