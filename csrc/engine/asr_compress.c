/* asr_compress.c — the size zlib.compress would give a text, estimated without zlib: Whisper's
 * compression ratio (UTF-8 bytes / compressed bytes) is how its transcription loop tells a
 * decoder stuck repeating itself (ratio above 2.4) from speech.
 *
 * The estimate: LZ77 as zlib's level 6 does it (hash chains over a 32 KiB window, matches of
 * 3 to 258 bytes, one step of lazy matching), then the smallest of a stored block, a block of
 * DEFLATE's fixed Huffman codes and a block of Huffman codes built for the symbols' counts
 * (their bits exactly, the code-length header estimated at 5 bits per used symbol and 7 per
 * run of unused ones), plus zlib's 2-byte header and 4-byte Adler-32. zlib searches at most 128
 * chain links and builds a header of its own, so on short texts (what one 30-second window
 * gives) the estimate is within a few bytes of zlib's size and the ratio within a few percent
 * (tests/test_asr_kind.py compares it with zlib on the transcripts); on repetitive text, the
 * case the threshold is for, both find the same long matches. */
#include <string.h>

#include "engine/asr_internal.h"

#define WINDOW 32768
#define MIN_MATCH 3
#define MAX_MATCH 258
#define HASH_BITS 15
#define MAX_CHAIN 128
#define LAZY_BELOW 16
#define LITLEN_SYMBOLS 286
#define DIST_SYMBOLS 30

static const uint16_t length_base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                         15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};

static int length_code(int length)
{
    int code = 28;
    while (code > 0 && length_base[code] > length)
        code--;
    return code;
}

static int dist_code(int dist)
{
    int code = 29;
    while (code > 0 && dist_base[code] > dist)
        code--;
    return code;
}

static int dist_extra(int code)
{
    return code < 4 ? 0 : code / 2 - 1;
}

/* Huffman code lengths for `count` symbols of frequencies freq (0: unused) into bits; at most
 * 15 bits is not enforced (counts of one window's text stay far below it). */
static void huffman_lengths(const uint32_t *freq, int count, uint8_t *bits)
{
    uint64_t weight[2 * LITLEN_SYMBOLS];
    int parent[2 * LITLEN_SYMBOLS];
    bool alive[2 * LITLEN_SYMBOLS];
    int nodes = 0, used = 0;
    for (int s = 0; s < count; s++) {
        bits[s] = 0;
        weight[s] = freq[s];
        parent[s] = -1;
        alive[s] = freq[s] > 0;
        used += alive[s];
    }
    nodes = count;
    if (used == 1) {
        for (int s = 0; s < count; s++)
            if (freq[s])
                bits[s] = 1;
        return;
    }
    for (int merged = 1; merged < used; merged++) {
        int a = -1, b = -1;
        for (int n = 0; n < nodes; n++) {
            if (!alive[n])
                continue;
            if (a < 0 || weight[n] < weight[a]) {
                b = a;
                a = n;
            } else if (b < 0 || weight[n] < weight[b]) {
                b = n;
            }
        }
        weight[nodes] = weight[a] + weight[b];
        parent[nodes] = -1;
        alive[nodes] = true;
        alive[a] = alive[b] = false;
        parent[a] = parent[b] = nodes;
        nodes++;
    }
    for (int s = 0; s < count; s++) {
        if (!freq[s])
            continue;
        int depth = 0;
        for (int n = s; parent[n] >= 0; n = parent[n])
            depth++;
        bits[s] = (uint8_t)depth;
    }
}

/* Bits of a code-length header for these lengths: 5 per used symbol, 7 per run of unused. */
static uint64_t header_bits(const uint8_t *bits, int count)
{
    uint64_t total = 0;
    for (int s = 0; s < count; s++) {
        if (bits[s]) {
            total += 5;
        } else {
            total += 7;
            while (s + 1 < count && !bits[s + 1])
                s++;
        }
    }
    return total;
}

typedef struct lz {
    const uint8_t *data;
    size_t size;
    int32_t *head; /* per hash: the latest position inserted, -1 */
    int32_t *prev; /* per position: the previous one of its hash */
    size_t inserted;
} lz;

static uint32_t hash3(const uint8_t *p)
{
    return (((uint32_t)p[0] << 10) ^ ((uint32_t)p[1] << 5) ^ p[2]) & ((1u << HASH_BITS) - 1);
}

/* The longest earlier match at `at` (0 when under MIN_MATCH), its distance in *distance. */
static int longest_match(lz *z, size_t at, int *distance)
{
    *distance = 0;
    if (at + MIN_MATCH > z->size)
        return 0;
    while (z->inserted < at) {
        size_t p = z->inserted++;
        if (p + MIN_MATCH > z->size)
            continue;
        uint32_t h = hash3(z->data + p);
        z->prev[p] = z->head[h];
        z->head[h] = (int32_t)p;
    }
    int best = 0;
    int32_t candidate = z->head[hash3(z->data + at)];
    for (int chain = 0; candidate >= 0 && chain < MAX_CHAIN; chain++) {
        size_t c = (size_t)candidate;
        if (at - c > WINDOW)
            break;
        int n = 0;
        while (at + (size_t)n < z->size && n < MAX_MATCH &&
               z->data[c + (size_t)n] == z->data[at + (size_t)n])
            n++;
        if (n > best) {
            best = n;
            *distance = (int)(at - c);
        }
        candidate = z->prev[c];
    }
    return best >= MIN_MATCH ? best : 0;
}

size_t asr_deflate_size(const uint8_t *data, size_t size)
{
    uint32_t litlen[LITLEN_SYMBOLS] = {0}, dist[DIST_SYMBOLS] = {0};
    uint64_t extra_bits = 0, fixed_bits = 0;
    lz z = {data, size, nxe_alloc(sizeof(int32_t) << HASH_BITS),
            nxe_alloc(sizeof(int32_t) * (size + 1)), 0};
    if (!z.head || !z.prev) {
        nxe_free(z.head);
        nxe_free(z.prev);
        return size + 11; /* a stored block */
    }
    for (size_t i = 0; i < (size_t)1 << HASH_BITS; i++)
        z.head[i] = -1;
    size_t pos = 0;
    while (pos < size) {
        int best_dist = 0, next_dist = 0;
        int best = longest_match(&z, pos, &best_dist);
        /* Lazy matching: a longer match one byte on makes this byte a literal. */
        if (best > 0 && best < LAZY_BELOW && longest_match(&z, pos + 1, &next_dist) > best)
            best = 0;
        if (best == 0) {
            litlen[data[pos]]++;
            fixed_bits += data[pos] < 144 ? 8 : 9;
            pos++;
            continue;
        }
        int lc = length_code(best), dc = dist_code(best_dist);
        litlen[257 + lc]++;
        dist[dc]++;
        extra_bits += (uint64_t)length_extra[lc] + (uint64_t)dist_extra(dc);
        fixed_bits += (257 + lc < 280 ? 7 : 8) + 5;
        pos += (size_t)best;
    }
    nxe_free(z.head);
    nxe_free(z.prev);
    litlen[256]++; /* end of block */
    fixed_bits += 7 + extra_bits;
    uint8_t lit_bits[LITLEN_SYMBOLS], dist_bits[DIST_SYMBOLS];
    huffman_lengths(litlen, LITLEN_SYMBOLS, lit_bits);
    huffman_lengths(dist, DIST_SYMBOLS, dist_bits);
    uint64_t dynamic_bits = 14 + 19 * 3 + header_bits(lit_bits, LITLEN_SYMBOLS) +
                            header_bits(dist_bits, DIST_SYMBOLS) + extra_bits;
    for (int s = 0; s < LITLEN_SYMBOLS; s++)
        dynamic_bits += (uint64_t)litlen[s] * lit_bits[s];
    for (int s = 0; s < DIST_SYMBOLS; s++)
        dynamic_bits += (uint64_t)dist[s] * dist_bits[s];
    uint64_t bits = fixed_bits < dynamic_bits ? fixed_bits : dynamic_bits;
    size_t block = (size_t)((3 + bits + 7) / 8);
    size_t stored = size + 5;
    return 2 + (block < stored ? block : stored) + 4;
}
