/* amx_tiles.c — the AMX tile layer (kernels/x86/amx/tile.h) instruction by instruction,
 * against plain-C references of the semantics Intel's SDM documents, computed here on logical
 * matrices that this file lays out in tile bytes itself:
 *   - TILELOADD/TILESTORED/TILEZERO move exactly rows x colsb bytes, whatever the strides;
 *   - TDPBUSD/TDPBSSD: exact sums of byte products, wrapping in 32 bits;
 *   - TDPBF16PS: even and odd partial sums of fused multiply-adds, then their sum added to C,
 *     each step in f32 rounding to nearest even, subnormal inputs read as zero and subnormal
 *     results flushed; cases built so that another order, or no DAZ/FTZ, gives another
 *     answer;
 *   - partial tiles (fewer rows, columns and k than a full tile): nothing outside C's shape
 *     is written.
 * `amx_tile_tests emulated` runs them on the emulation (every machine). `amx_tile_tests real`
 * runs them on the instructions and checks that the AMX microkernels of libnxe give the same
 * bits as their emulated builds; where this process cannot run AMX it says why and exits 77,
 * which meson reports as a skip. Exits nonzero on any failure. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nxe/nxe_experimental.h" /* enum nxe_cpu_feature */
#include "amx_probe.h"
#include "dispatch.h"
#include "gemm.h"
#include "ref/gemm.h"

#include "check.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint32_t random_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

typedef struct backend {
    const char *name;
    amx_probe_dot_fn *dot;
    amx_probe_copy_fn *copy;
} backend;

/* Little-endian dwords, as tile bytes hold them on x86. */
static void put_u32(uint8_t *bytes, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        bytes[i] = (uint8_t)(value >> (8 * i));
}

static uint32_t get_u32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
           (uint32_t)bytes[3] << 24;
}

static float f32_of(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t bits_of(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* ---- loads, stores and zeroing ---- */

static void test_moves(const backend *be)
{
    const int shapes[][2] = {{1, 4}, {5, 20}, {16, 64}, {3, 1}, {16, 7}, {9, 63}};
    enum { SRC_STRIDE = 80, DST_STRIDE = 96, SENTINEL = 0xA5 };
    uint8_t src[16 * SRC_STRIDE], dst[16 * DST_STRIDE];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)random_u32();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int rows = shapes[s][0], colsb = shapes[s][1];
        for (int zero = 0; zero < 2; zero++) {
            memset(dst, SENTINEL, sizeof dst);
            be->copy(rows, colsb, zero ? NULL : src, SRC_STRIDE, dst, DST_STRIDE);
            int wrong = 0;
            for (int r = 0; r < 16; r++)
                for (int x = 0; x < DST_STRIDE; x++) {
                    const bool inside = r < rows && x < colsb;
                    const uint8_t want = !inside ? SENTINEL : zero ? 0 : src[r * SRC_STRIDE + x];
                    wrong += dst[r * DST_STRIDE + x] != want;
                }
            CHECK(wrong == 0, "%s: %s of a %d x %d-byte tile: %d bytes wrong", be->name,
                  zero ? "TILEZERO + TILESTORED" : "TILELOADD + TILESTORED", rows, colsb, wrong);
        }
    }
}

/* ---- 8-bit dot products ---- */

/* C[m][n] (+)= sum over k, i of A[m][4k + i] * B[k][4n + i], A's bytes unsigned or signed,
 * B's signed, in 64 bits and then wrapped to 32 as the instructions wrap. */
static void test_int8(const backend *be, int op)
{
    const int shapes[][3] = {{1, 1, 1},   {5, 7, 3},  {16, 16, 16}, {3, 16, 2},
                             {16, 1, 16}, {7, 9, 11}, {16, 5, 1},   {2, 16, 16}};
    const bool a_signed = op == AMX_PROBE_DPBSSD;
    const char *name = a_signed ? "TDPBSSD" : "TDPBUSD";
    enum { LDA = 72, LDB = 68, LDC = 80 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        for (int variant = 0; variant < 3; variant++) {
            uint8_t a[16 * LDA], b[16 * LDB], c[16 * LDC], before[16 * LDC];
            for (size_t i = 0; i < sizeof a; i++)
                a[i] = variant == 2 ? (a_signed ? 0x80 : 0xFF) : (uint8_t)random_u32();
            for (size_t i = 0; i < sizeof b; i++)
                b[i] = variant == 2 ? (uint8_t)(a_signed ? 0x80 : 0x7F) : (uint8_t)random_u32();
            /* Variant 1 starts C near the int32 limits, variant 2 at the top with every
             * product at its largest: both wrap. */
            for (int r = 0; r < 16; r++)
                for (int x = 0; x < LDC / 4; x++) {
                    uint32_t start = random_u32();
                    if (variant == 1)
                        start = (start & 1 ? 0x7FFFFFF0u : 0x80000010u) ^ (start >> 28);
                    else if (variant == 2)
                        start = 0x7FFFFFFFu - (uint32_t)x;
                    put_u32(&c[r * LDC + 4 * x], start);
                }
            memcpy(before, c, sizeof c);
            be->dot(op, m, n, k, a, LDA, b, LDB, c, LDC);
            int wrong = 0, wrapped = 0;
            for (int r = 0; r < 16; r++)
                for (int x = 0; x < LDC / 4; x++) {
                    const uint32_t old = get_u32(&before[r * LDC + 4 * x]);
                    uint32_t want = old;
                    if (r < m && x < n) {
                        int64_t sum = (int32_t)old;
                        for (int kk = 0; kk < 4 * k; kk++) {
                            const uint8_t av = a[r * LDA + kk];
                            const int64_t a_value = a_signed ? (int8_t)av : av;
                            sum += a_value * (int8_t)b[(kk / 4) * LDB + 4 * x + kk % 4];
                        }
                        want = (uint32_t)sum;
                        wrapped += sum != (int64_t)(int32_t)want;
                    }
                    wrong += get_u32(&c[r * LDC + 4 * x]) != want;
                }
            CHECK(wrong == 0, "%s: %s %dx%dx%d variant %d: %d dwords wrong", be->name, name, m, n,
                  k, variant, wrong);
            if (variant == 2)
                CHECK(wrapped > 0, "%s: %s variant 2 did not wrap", be->name, name);
        }
    }
}

/* ---- bf16 dot products ---- */

/* DAZ and FTZ alike: a subnormal becomes a zero of its sign. */
static float flush(float value)
{
    return value != 0.0f && fabsf(value) < FLT_MIN ? copysignf(0.0f, value) : value;
}

static float bf16_in(uint16_t bits)
{
    return flush(f32_of((uint32_t)bits << 16));
}

/* One element of TDPBF16PS as the SDM's pseudo-code computes it: a[2k + h] of C's row,
 * b[k][h] of C's column. */
static float sdm_dpbf16ps(float c, const uint16_t *a, const uint16_t (*b)[2], int k)
{
    float partial[2] = {0.0f, 0.0f};
    for (int kk = 0; kk < k; kk++)
        for (int h = 0; h < 2; h++)
            partial[h] = flush(fmaf(bf16_in(a[2 * kk + h]), bf16_in(b[kk][h]), partial[h]));
    const float sum = flush(partial[0] + partial[1]);
    return flush(flush(c) + sum);
}

/* A bf16 of random sign and mantissa with an exponent in [low, high] (powers of two), or a
 * subnormal bf16 one time in `subnormal_odds`. */
static uint16_t random_bf16(int low, int high, uint32_t subnormal_odds)
{
    const uint32_t r = random_u32();
    const uint16_t sign = (uint16_t)(r & 0x8000u);
    if (subnormal_odds && r % subnormal_odds == 0)
        return (uint16_t)(sign | (1 + (r >> 8) % 127));
    const int exponent = low + (int)((r >> 16) % (uint32_t)(high - low + 1));
    return (uint16_t)(sign | (uint16_t)((exponent + 127) << 7) | ((r >> 1) & 0x7F));
}

/* Runs TDPBF16PS on logical A [m][2k], B [k][n][2] and C [m][n] laid out in tile bytes, and
 * returns C as it comes back; checks that nothing outside C's shape was written. */
static void run_bf16(const backend *be, int m, int n, int k, const uint16_t (*a)[32],
                     const uint16_t (*b)[16][2], const float (*c)[16], float (*out)[16])
{
    enum { LDA = 68, LDB = 72, LDC = 76 };
    uint8_t ta[16 * LDA] = {0}, tb[16 * LDB] = {0}, tc[16 * LDC];
    memset(tc, 0x5A, sizeof tc);
    for (int r = 0; r < m; r++)
        for (int kk = 0; kk < k; kk++)
            put_u32(&ta[r * LDA + 4 * kk], a[r][2 * kk] | (uint32_t)a[r][2 * kk + 1] << 16);
    for (int kk = 0; kk < k; kk++)
        for (int x = 0; x < n; x++)
            put_u32(&tb[kk * LDB + 4 * x], b[kk][x][0] | (uint32_t)b[kk][x][1] << 16);
    for (int r = 0; r < m; r++)
        for (int x = 0; x < n; x++)
            put_u32(&tc[r * LDC + 4 * x], bits_of(c[r][x]));
    be->dot(AMX_PROBE_DPBF16PS, m, n, k, ta, LDA, tb, LDB, tc, LDC);
    int outside = 0;
    for (int r = 0; r < 16; r++)
        for (int x = 0; x < LDC; x++)
            if (r >= m || x >= 4 * n)
                outside += tc[r * LDC + x] != 0x5A;
            else if (x % 4 == 0)
                out[r][x / 4] = f32_of(get_u32(&tc[r * LDC + x]));
    CHECK(outside == 0, "%s: TDPBF16PS %dx%dx%d wrote %d bytes outside C", be->name, m, n, k,
          outside);
}

static void test_bf16_random(const backend *be)
{
    const int shapes[][3] = {{1, 1, 1},  {5, 7, 3},  {16, 16, 16}, {3, 16, 2},
                             {16, 1, 9}, {7, 9, 11}, {16, 5, 1},   {2, 16, 16}};
    static uint16_t a[16][32], b[16][16][2];
    static float c[16][16], out[16][16];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        /* Wide exponents, subnormal inputs and products small enough to be flushed: the
         * rounding of every step and both flushes decide bits here. */
        for (int variant = 0; variant < 3; variant++) {
            const int low = variant == 0 ? -8 : variant == 1 ? -40 : -75;
            const int high = variant == 0 ? 8 : variant == 1 ? 40 : -55;
            for (int r = 0; r < 16; r++)
                for (int kk = 0; kk < 32; kk++)
                    a[r][kk] = random_bf16(low, high, variant ? 8 : 0);
            for (int kk = 0; kk < 16; kk++)
                for (int x = 0; x < 16; x++)
                    for (int h = 0; h < 2; h++)
                        b[kk][x][h] = random_bf16(low, high, variant ? 8 : 0);
            for (int r = 0; r < 16; r++)
                for (int x = 0; x < 16; x++)
                    c[r][x] = f32_of((uint32_t)random_bf16(low, high, 0) << 16 |
                                     (random_u32() & 0xFFFFu));
            run_bf16(be, m, n, k, (const uint16_t (*)[32])a, (const uint16_t (*)[16][2])b,
                     (const float (*)[16])c, out);
            int wrong = 0;
            for (int r = 0; r < m; r++)
                for (int x = 0; x < n; x++) {
                    uint16_t column[16][2];
                    for (int kk = 0; kk < k; kk++)
                        memcpy(column[kk], b[kk][x], sizeof column[kk]);
                    const float want =
                        sdm_dpbf16ps(c[r][x], a[r], (const uint16_t (*)[2])column, k);
                    wrong += bits_of(out[r][x]) != bits_of(want);
                }
            CHECK(wrong == 0,
                  "%s: TDPBF16PS %dx%dx%d variant %d: %d elements differ from the "
                  "SDM's order",
                  be->name, m, n, k, variant, wrong);
        }
    }
}

static uint16_t bf16_of(float value)
{
    return (uint16_t)(bits_of(value) >> 16); /* exact for the powers of two used here */
}

/* One element, k pairs: the answer of each case follows from the documented order alone and
 * differs from what another order, or gradual underflow, would give. */
static void test_bf16_cases(const backend *be)
{
    const float big = 4096.0f; /* big * big = 2^24: adding 1 to it rounds back */
    const float tiny = ldexpf(1.0f, -70);
    struct {
        const char *what;
        int k;
        float a[4], b[4], c;
        float want, other; /* the documented answer, and one another order would give */
    } cases[] = {
        /* Both products of a pair are summed before C is added: C + (2^24 - 2^24) = C, where
         * C + 2^24 - 2^24 would give 0. */
        {"the pair is summed before C is added", 1, {big, big}, {big, -big}, 1.0f, 1.0f, 0.0f},
        /* The even partial sum is rounded at each k: 2^24 + 1 rounds to 2^24, and -2^24
         * leaves 0, where the exact sum is 1. */
        {"the even partial sum rounds at each k",
         3,
         {big, 0, 1, 0},
         {big, 0, 1, 0},
         0.0f,
         0.0f,
         1.0f},
        /* An f32 product below 2^-126 (2^-140) is flushed to zero. */
        {"subnormal results are flushed", 1, {tiny, 0}, {tiny, 0}, 0.0f, 0.0f, ldexpf(1.0f, -140)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static uint16_t a[16][32], b[16][16][2];
        static float c[16][16], out[16][16];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        for (int kk = 0; kk < 2 * cases[i].k && kk < 4; kk++) {
            a[0][kk] = bf16_of(cases[i].a[kk]);
            b[kk / 2][0][kk % 2] = bf16_of(cases[i].b[kk]);
        }
        /* The third case's k runs past the four listed values: its last pair is 1 * -2^24. */
        if (cases[i].k == 3) {
            a[0][4] = bf16_of(big);
            b[2][0][0] = bf16_of(-big);
        }
        c[0][0] = cases[i].c;
        run_bf16(be, 1, 1, cases[i].k, (const uint16_t (*)[32])a, (const uint16_t (*)[16][2])b,
                 (const float (*)[16])c, out);
        CHECK(bits_of(out[0][0]) == bits_of(cases[i].want) && out[0][0] != cases[i].other,
              "%s: TDPBF16PS: %s: %g (another order or no flush: %g)", be->name, cases[i].what,
              out[0][0], cases[i].other);
    }
    /* A subnormal bf16 input reads as zero: 2^-133 * 2^100 adds nothing to C. */
    static uint16_t a[16][32], b[16][16][2];
    static float c[16][16], out[16][16];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    a[0][0] = 0x0001; /* 2^-133 */
    b[0][0][0] = bf16_of(ldexpf(1.0f, 100));
    c[0][0] = 1.0f;
    run_bf16(be, 1, 1, 1, (const uint16_t (*)[32])a, (const uint16_t (*)[16][2])b,
             (const float (*)[16])c, out);
    CHECK(out[0][0] == 1.0f, "%s: TDPBF16PS read a subnormal bf16 as nonzero: %g", be->name,
          out[0][0]);
    /* A subnormal C reads as zero: 2^-127 + 0 gives 0. */
    c[0][0] = ldexpf(1.0f, -127);
    b[0][0][0] = 0;
    run_bf16(be, 1, 1, 1, (const uint16_t (*)[32])a, (const uint16_t (*)[16][2])b,
             (const float (*)[16])c, out);
    CHECK(out[0][0] == 0.0f, "%s: TDPBF16PS kept a subnormal C: %g", be->name, out[0][0]);
}

static void test_instructions(const backend *be)
{
    const int before = failures;
    test_moves(be);
    test_int8(be, AMX_PROBE_DPBUSD);
    test_int8(be, AMX_PROBE_DPBSSD);
    test_bf16_random(be);
    test_bf16_cases(be);
    printf("%-28s %s\n", be->name, failures == before ? "ok" : "FAILED");
}

/* ---- the microkernels on the instructions against their emulated builds ---- */

#if defined(__x86_64__)

static const nxe_ukernel_entry *find(const nxe_ukernel_entry *entries, int32_t count,
                                     const char *name)
{
    for (int32_t i = 0; i < count; i++) {
        const char *entry_name = entries[i].gemm ? entries[i].gemm->name : entries[i].q8->name;
        if (strcmp(entry_name, name) == 0)
            return &entries[i];
    }
    return NULL;
}

static float random_float(void)
{
    return (float)((double)random_u32() / 4294967296.0 * 2.0 - 1.0);
}

/* Bit for bit, over tile shapes with tails, B rows in a panel and scattered (reversed). */
static void test_bf16_kernels(const nxe_gemm_kernel *real, const nxe_gemm_kernel *emulated)
{
    const int64_t kcs[] = {1, 2, 31, 32, 33, 255};
    const int32_t mrs[] = {1, 7, 16}, nrs[] = {1, 17, 33, 48};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ni = 0; ni < 4; ni++) {
                const int64_t kc = kcs[ki];
                const int32_t mr = mrs[mi], nr = nrs[ni];
                float *a = malloc(sizeof(float) * (size_t)(kc * mr));
                float *b = malloc(sizeof(float) * (size_t)(kc * nr));
                for (int64_t i = 0; i < kc * mr; i++)
                    a[i] = random_float();
                for (int64_t i = 0; i < kc * nr; i++)
                    b[i] = random_float();
                void *ap = malloc(nxe_gemm_packed_bytes(real, kc, mr, real->mr));
                void *bp = malloc(nxe_gemm_packed_bytes(real, kc, nr, real->nr));
                nxe_gemm_pack(real, real->mr, a, mr, 1, kc, mr, ap);
                nxe_gemm_pack(real, real->nr, b, nr, 1, kc, nr, bp);
                const int64_t pairs = (kc + 1) / 2;
                const void *rows[128];
                float c[16 * 50], got[16 * 50], want[16 * 50];
                for (int i = 0; i < 16 * 50; i++)
                    c[i] = random_float();
                for (int scattered = 0; scattered < 2; scattered++) {
                    /* Scattered: each row a copy of its own, at falling addresses. */
                    uint32_t *copies = malloc(sizeof(uint32_t) * (size_t)(pairs * real->nr));
                    for (int64_t q = 0; q < pairs; q++) {
                        const uint32_t *row = (const uint32_t *)bp + q * real->nr;
                        uint32_t *copy = copies + (pairs - 1 - q) * real->nr;
                        memcpy(copy, row, sizeof(uint32_t) * (size_t)real->nr);
                        rows[q] = scattered ? (const void *)copy : (const void *)row;
                    }
                    for (int accumulate = 0; accumulate < 2; accumulate++) {
                        memcpy(got, c, sizeof c);
                        memcpy(want, c, sizeof c);
                        real->run(mr, nr, kc, ap, rows, got, 50, accumulate);
                        emulated->run(mr, nr, kc, ap, rows, want, 50, accumulate);
                        CHECK(memcmp(got, want, sizeof got) == 0,
                              "%s against %s: mr=%d nr=%d kc=%lld scattered=%d accumulate=%d",
                              real->name, emulated->name, mr, nr, (long long)kc, scattered,
                              accumulate);
                    }
                    free(copies);
                }
                free(a);
                free(b);
                free(ap);
                free(bp);
            }
}

static void test_q8_kernels(const nxe_q8_gemm_kernel *real, const nxe_q8_gemm_kernel *emulated)
{
    const int64_t kcs[] = {1, 4, 63, 64, 65, 700};
    const int32_t mrs[] = {1, 7, 16}, nrs[] = {1, 17, 33, 48};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ni = 0; ni < 4; ni++) {
                const int64_t kc = kcs[ki], groups = (kc + 3) / 4;
                const int32_t mr = mrs[mi], nr = nrs[ni];
                uint8_t *ap = calloc((size_t)(groups * 4 * real->mr), 1);
                uint8_t *b = malloc((size_t)(kc * nr));
                int8_t *bp = malloc(nxe_q8_packed_bytes(real, kc, nr));
                int32_t sums[48];
                for (int64_t kk = 0; kk < kc; kk++)
                    for (int32_t i = 0; i < mr; i++)
                        ap[((kk / 4) * real->mr + i) * 4 + kk % 4] = (uint8_t)random_u32();
                for (int64_t i = 0; i < kc * nr; i++)
                    b[i] = (uint8_t)random_u32();
                nxe_q8_ref bref = {b, 1};
                nxe_q8_pack_b(real, bref, nr, 1, kc, nr, 0, 1, bp, sums);
                int32_t got[16 * 50], want[16 * 50];
                memset(got, 0x33, sizeof got);
                memset(want, 0x33, sizeof want);
                real->run(mr, nr, kc, ap, bp, got, 50);
                emulated->run(mr, nr, kc, ap, bp, want, 50);
                CHECK(memcmp(got, want, sizeof got) == 0, "%s against %s: mr=%d nr=%d kc=%lld",
                      real->name, emulated->name, mr, nr, (long long)kc);
                free(ap);
                free(b);
                free(bp);
            }
}

static void test_kernels_against_emulation(void)
{
    int32_t real_count, emulated_count;
    const nxe_ukernel_entry *real = nxe_ukernel_entries(&real_count);
    const nxe_ukernel_entry *emulated = nxe_amx_emulated_entries(&emulated_count);
    const nxe_ukernel_entry *bf16 = find(real, real_count, "bf16-gemm-16x48-amx");
    const nxe_ukernel_entry *bf16_emulated =
        find(emulated, emulated_count, "bf16-gemm-16x48-amxemu");
    const nxe_ukernel_entry *q8 = find(real, real_count, "u8s8-gemm-16x48-amx");
    const nxe_ukernel_entry *q8_emulated = find(emulated, emulated_count, "u8s8-gemm-16x48-amxemu");
    CHECK(bf16 && bf16_emulated && q8 && q8_emulated, "an AMX microkernel is missing from a list");
    if (!(bf16 && bf16_emulated && q8 && q8_emulated))
        return;
    const int before = failures;
    test_bf16_kernels(bf16->gemm, bf16_emulated->gemm);
    test_q8_kernels(q8->q8, q8_emulated->q8);
    printf("%-28s %s\n", "AMX kernels vs emulation", failures == before ? "ok" : "FAILED");
}

#endif

/* Why this process cannot run the instructions, or NULL when it can. */
static const char *why_no_amx(void)
{
#if defined(__x86_64__)
    const uint64_t amx =
        NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_BF16 | NXE_CPU_FEATURE_AMX_INT8;
    const nxe_cpu_detection *d = nxe_cpu_detect();
    if ((d->features & amx) != amx)
        return "this CPU (or its OS) has no AMX-TILE/BF16/INT8";
    if (d->level < NXE_ISA_LEVEL_AMX)
        return "NXE_ISA caps this process below amx";
    if (!d->tiles_granted)
        return "the OS did not grant the AMX tile-data permission";
    return NULL;
#else
    return "not an x86-64 build";
#endif
}

int main(int argc, char **argv)
{
    const bool real = argc > 1 && strcmp(argv[1], "real") == 0;
    if (!real) {
        const backend emulation = {"AMX emulation", amx_probe_dot_amxemu, amx_probe_copy_amxemu};
        test_instructions(&emulation);
    } else {
        const char *why = why_no_amx();
        if (why) {
            printf("AMX instructions SKIPPED: %s\n", why);
            return 77;
        }
#if defined(__x86_64__)
        const backend instructions = {"AMX instructions", amx_probe_dot_amx, amx_probe_copy_amx};
        test_instructions(&instructions);
        test_kernels_against_emulation();
#endif
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
