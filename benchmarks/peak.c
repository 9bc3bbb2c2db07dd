/* Measures this machine's arithmetic peaks for benchmarks/run.py: fp32 FMA (AVX-512, else AVX2)
 * and, where the CPU and OS allow AMX, AMX bf16 and int8 tile dot products, on N threads.
 * AVX512-BF16 and AVX512-VNNI dot-product peaks are measured too where present, since without
 * AMX they, not the fp32 FMA peak, bound bf16 and int8 work.
 * A stand-alone benchmark tool, not part of the library; it prints one JSON object on stdout.
 *
 *     cc -O2 -pthread benchmarks/peak.c -o peak && ./peak [threads] [seconds per figure]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PEAK_X86 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define PEAK_X86 0
#endif

/* Independent FMA chains per thread (see FMA_TWELVE) and inner loop length. */
#define FMA_CHAINS 12
#define FMA_INNER 1000

typedef struct {
    uint64_t iterations; /* inner loops to run */
    double sink;         /* keeps the result alive */
} peak_work;

#if PEAK_X86

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int has_xcr0_bits(uint64_t bits)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return 0;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((((uint64_t)hi << 32) | lo) & bits) == bits;
}

static int cpuid7(unsigned *b, unsigned *c, unsigned *d)
{
    unsigned a;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, *b, *c, *d);
    return 1;
}

static int has_avx512f(void)
{
    unsigned b, c, d;
    return cpuid7(&b, &c, &d) && (b & (1u << 16)) && has_xcr0_bits(0xE6);
}

static int has_avx2_fma(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 12))) /* FMA */
        return 0;
    return cpuid7(&b, &c, &d) && (b & (1u << 5)) && has_xcr0_bits(0x6);
}

/* Twelve named accumulators rather than an array: the compiler keeps each in a register
 * (an array of vectors it may leave in memory), and twelve chains cover FMA latency times
 * throughput on current cores while fitting AVX2's sixteen registers with the two constants. */
#define FMA_TWELVE(fma, mul, add)                                                                  \
    do {                                                                                           \
        a0 = fma(a0, mul, add);                                                                    \
        a1 = fma(a1, mul, add);                                                                    \
        a2 = fma(a2, mul, add);                                                                    \
        a3 = fma(a3, mul, add);                                                                    \
        a4 = fma(a4, mul, add);                                                                    \
        a5 = fma(a5, mul, add);                                                                    \
        a6 = fma(a6, mul, add);                                                                    \
        a7 = fma(a7, mul, add);                                                                    \
        a8 = fma(a8, mul, add);                                                                    \
        a9 = fma(a9, mul, add);                                                                    \
        a10 = fma(a10, mul, add);                                                                  \
        a11 = fma(a11, mul, add);                                                                  \
    } while (0)

__attribute__((target("avx512f"))) static void *fma512_thread(void *arg)
{
    peak_work *work = arg;
    const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f),
           a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f),
           a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k)
            FMA_TWELVE(_mm512_fmadd_ps, mul, add);
    __m512 total = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    total = _mm512_add_ps(total, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    work->sink = _mm512_reduce_add_ps(total);
    return NULL;
}

__attribute__((target("avx2,fma"))) static void *fma256_thread(void *arg)
{
    peak_work *work = arg;
    const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f), a2 = _mm256_set1_ps(2.0f),
           a3 = _mm256_set1_ps(3.0f), a4 = _mm256_set1_ps(4.0f), a5 = _mm256_set1_ps(5.0f),
           a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f), a8 = _mm256_set1_ps(8.0f),
           a9 = _mm256_set1_ps(9.0f), a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k)
            FMA_TWELVE(_mm256_fmadd_ps, mul, add);
    __m256 total = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    total = _mm256_add_ps(total, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, total);
    work->sink = lanes[0];
    return NULL;
}

/* vpmaddwd then vpaddd, what AVX2's 8-bit kernel does after widening its bytes: 16 s16
 * products summed in pairs into 8 int32 lanes = 32 ops per pair of instructions. */
__attribute__((target("avx2"))) static inline __m256i madd_add_epi16(__m256i acc, __m256i x,
                                                                     __m256i y)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
}

__attribute__((target("avx2"))) static void *int8_avx2_thread(void *arg)
{
    peak_work *work = arg;
    const __m256i mul = _mm256_set1_epi16(1), add = _mm256_set1_epi16(1);
    __m256i a0 = _mm256_set1_epi32(0), a1 = _mm256_set1_epi32(1), a2 = _mm256_set1_epi32(2),
            a3 = _mm256_set1_epi32(3), a4 = _mm256_set1_epi32(4), a5 = _mm256_set1_epi32(5),
            a6 = _mm256_set1_epi32(6), a7 = _mm256_set1_epi32(7), a8 = _mm256_set1_epi32(8),
            a9 = _mm256_set1_epi32(9), a10 = _mm256_set1_epi32(10), a11 = _mm256_set1_epi32(11);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k)
            FMA_TWELVE(madd_add_epi16, mul, add);
    __m256i total =
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                         _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
    total = _mm256_add_epi32(
        total, _mm256_add_epi32(_mm256_add_epi32(a8, a9), _mm256_add_epi32(a10, a11)));
    int32_t lanes[8];
    _mm256_storeu_si256((__m256i *)(void *)lanes, total);
    work->sink = (double)lanes[0];
    return NULL;
}

static int has_avx512_bf16(void)
{
    unsigned a, b, c, d;
    if (!has_avx512f() || __get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 5) & 1u;
}

static int has_avx512_vnni(void)
{
    unsigned b, c, d;
    return has_avx512f() && cpuid7(&b, &c, &d) && (c & (1u << 11));
}

/* vdpbf16ps: 32 bf16 pairs multiplied and added into 16 fp32 lanes = 64 ops. */
__attribute__((target("avx512f,avx512bf16"))) static void *bf16_dot_thread(void *arg)
{
    peak_work *work = arg;
    const __m512bh mul = (__m512bh)_mm512_set1_epi16(0x3f80), add = mul;
    /* Distinct starting values, or the compiler merges identical chains into one. */
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f),
           a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f),
           a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k)
            FMA_TWELVE(_mm512_dpbf16_ps, mul, add);
    __m512 total = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    total = _mm512_add_ps(total, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    work->sink = _mm512_reduce_add_ps(total);
    return NULL;
}

/* vpdpbusd: 64 u8 x s8 products added into 16 int32 lanes = 128 ops. */
__attribute__((target("avx512f,avx512vnni"))) static void *vnni_int8_thread(void *arg)
{
    peak_work *work = arg;
    const __m512i mul = _mm512_set1_epi8(1), add = _mm512_set1_epi8(1);
    __m512i a0 = _mm512_set1_epi32(0), a1 = _mm512_set1_epi32(1), a2 = _mm512_set1_epi32(2),
            a3 = _mm512_set1_epi32(3), a4 = _mm512_set1_epi32(4), a5 = _mm512_set1_epi32(5),
            a6 = _mm512_set1_epi32(6), a7 = _mm512_set1_epi32(7), a8 = _mm512_set1_epi32(8),
            a9 = _mm512_set1_epi32(9), a10 = _mm512_set1_epi32(10), a11 = _mm512_set1_epi32(11);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k)
            FMA_TWELVE(_mm512_dpbusd_epi32, mul, add);
    __m512i total =
        _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                         _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));
    total = _mm512_add_epi32(
        total, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
    work->sink = (double)_mm512_reduce_add_epi32(total);
    return NULL;
}

/* AMX: CPUID leaf 7 EDX bits 22 (bf16), 24 (tile), 25 (int8); XCR0 bits 17-18 (tile state);
 * and the kernel's permission for the tile data, requested once per process. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static const char *amx_unusable_reason(void)
{
    unsigned b, c, d;
    if (!cpuid7(&b, &c, &d) || !(d & (1u << 24)))
        return "no AMX-TILE in CPUID";
    if (!(d & (1u << 22)) || !(d & (1u << 25)))
        return "AMX-TILE without AMX-BF16/AMX-INT8 in CPUID";
    if (!has_xcr0_bits((1ull << 17) | (1ull << 18)))
        return "AMX tile state not enabled by the OS (XCR0)";
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return "the kernel refused ARCH_REQ_XCOMP_PERM for XTILEDATA";
    return NULL;
}

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tile_config;

__attribute__((target("amx-tile"))) static void amx_configure(void)
{
    amx_tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    for (int t = 0; t < 8; ++t) {
        config.rows[t] = 16;
        config.colsb[t] = 64;
    }
    _tile_loadconfig(&config);
}

/* Four accumulators C0..C3 from two A tiles (4, 5) and two B tiles (6, 7): 2x2 blocking,
 * so every loaded tile feeds two dot products and the loop is bound by the multiply unit.
 * Each tile op is 16x16 outputs x 32 (bf16) or 64 (int8) products. */
__attribute__((target("amx-tile,amx-bf16"))) static void *amx_bf16_thread(void *arg)
{
    peak_work *work = arg;
    static const uint16_t operand[16 * 32];
    float out[16 * 16];
    amx_configure();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, operand, 64);
    _tile_loadd(5, operand, 64);
    _tile_loadd(6, operand, 64);
    _tile_loadd(7, operand, 64);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k) {
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    _tile_stored(0, out, 64);
    _tile_release();
    work->sink = out[0];
    return NULL;
}

__attribute__((target("amx-tile,amx-int8"))) static void *amx_int8_thread(void *arg)
{
    peak_work *work = arg;
    static const int8_t operand[16 * 64];
    int32_t out[16 * 16];
    amx_configure();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, operand, 64);
    _tile_loadd(5, operand, 64);
    _tile_loadd(6, operand, 64);
    _tile_loadd(7, operand, 64);
    for (uint64_t n = 0; n < work->iterations; ++n)
        for (int k = 0; k < FMA_INNER; ++k) {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
    _tile_stored(0, out, 64);
    _tile_release();
    work->sink = out[0];
    return NULL;
}

/* Runs `body` on `threads` threads for `iterations` inner loops each; returns the wall time. */
static double run_threads(void *(*body)(void *), int threads, uint64_t iterations)
{
    pthread_t ids[256];
    peak_work work[256];
    double start = now_seconds();
    int started = 0;
    for (int t = 0; t < threads; ++t) {
        work[t].iterations = iterations;
        work[t].sink = 0.0;
        if (pthread_create(&ids[t], NULL, body, &work[t]) != 0)
            break;
        ++started;
    }
    for (int t = 0; t < started; ++t)
        pthread_join(ids[t], NULL);
    return started == threads ? now_seconds() - start : -1.0;
}

/* Best rate over a few timed rounds, each sized to last about `seconds`; ops_per_iteration is
 * per thread per inner loop. Returns operations per second, or -1 when threads failed. */
static double measure(void *(*body)(void *), int threads, double ops_per_iteration, double seconds)
{
    uint64_t iterations = 10;
    double elapsed = run_threads(body, threads, iterations);
    if (elapsed < 0.0)
        return -1.0;
    while (elapsed < 0.05) {
        iterations *= 4;
        elapsed = run_threads(body, threads, iterations);
        if (elapsed < 0.0)
            return -1.0;
    }
    iterations = (uint64_t)((double)iterations * seconds / elapsed) + 1;
    double best = 0.0;
    for (int round = 0; round < 3; ++round) {
        elapsed = run_threads(body, threads, iterations);
        if (elapsed <= 0.0)
            return -1.0;
        double rate = ops_per_iteration * (double)iterations * threads / elapsed;
        if (rate > best)
            best = rate;
    }
    return best;
}

#endif /* PEAK_X86 */

static void print_figure(const char *name, const char *isa, double rate, const char *reason,
                         int last)
{
    if (rate > 0.0)
        printf("  \"%s\": {\"isa\": \"%s\", \"gops\": %.1f}%s\n", name, isa, rate * 1e-9,
               last ? "" : ",");
    else
        printf("  \"%s\": {\"isa\": null, \"gops\": null, \"reason\": \"%s\"}%s\n", name, reason,
               last ? "" : ",");
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    double seconds = argc > 2 ? atof(argv[2]) : 0.3;
    if (threads < 1 || threads > 256 || !(seconds > 0.0)) {
        fprintf(stderr, "usage: %s [threads 1..256] [seconds > 0]\n", argv[0]);
        return 2;
    }
    printf("{\n  \"threads\": %d,\n", threads);
#if PEAK_X86
    /* One FMA is two floating-point operations per lane. */
    if (has_avx512f())
        print_figure("fp32_fma", "avx512",
                     measure(fma512_thread, threads, 2.0 * 16 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
    else if (has_avx2_fma())
        print_figure("fp32_fma", "avx2",
                     measure(fma256_thread, threads, 2.0 * 8 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
    else
        print_figure("fp32_fma", NULL, -1.0, "neither AVX-512F nor AVX2+FMA usable", 0);
    /* The AVX2 level's own units, also on machines with more: nxe capped to AVX2 (NXE_ISA)
     * is measured against these. */
    if (has_avx2_fma()) {
        print_figure("fp32_fma_avx2", "avx2",
                     measure(fma256_thread, threads, 2.0 * 8 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
        print_figure("int8_avx2", "avx2",
                     measure(int8_avx2_thread, threads, 32.0 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
    } else {
        print_figure("fp32_fma_avx2", NULL, -1.0, "no usable AVX2+FMA", 0);
        print_figure("int8_avx2", NULL, -1.0, "no usable AVX2", 0);
    }
    if (has_avx512_bf16())
        print_figure("avx512_bf16", "avx512_bf16",
                     measure(bf16_dot_thread, threads, 64.0 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
    else
        print_figure("avx512_bf16", NULL, -1.0, "no usable AVX512_BF16", 0);
    if (has_avx512_vnni())
        print_figure("avx512_vnni_int8", "avx512_vnni",
                     measure(vnni_int8_thread, threads, 128.0 * FMA_CHAINS * FMA_INNER, seconds),
                     "thread start failed", 0);
    else
        print_figure("avx512_vnni_int8", NULL, -1.0, "no usable AVX512_VNNI", 0);
    const char *amx_reason = amx_unusable_reason();
    if (amx_reason == NULL) {
        /* Per tile op: 16x16 outputs, each 32 bf16 (64 int8) multiply-adds = 2 ops apiece. */
        print_figure("amx_bf16", "amx",
                     measure(amx_bf16_thread, threads, 4.0 * 16 * 16 * 32 * 2 * FMA_INNER, seconds),
                     "thread start failed", 0);
        print_figure("amx_int8", "amx",
                     measure(amx_int8_thread, threads, 4.0 * 16 * 16 * 64 * 2 * FMA_INNER, seconds),
                     "thread start failed", 1);
    } else {
        print_figure("amx_bf16", NULL, -1.0, amx_reason, 0);
        print_figure("amx_int8", NULL, -1.0, amx_reason, 1);
    }
#else
    print_figure("fp32_fma", NULL, -1.0, "not x86-64: no FMA peak kernel for this machine", 0);
    print_figure("fp32_fma_avx2", NULL, -1.0, "not x86-64", 0);
    print_figure("int8_avx2", NULL, -1.0, "not x86-64", 0);
    print_figure("avx512_bf16", NULL, -1.0, "not x86-64", 0);
    print_figure("avx512_vnni_int8", NULL, -1.0, "not x86-64", 0);
    print_figure("amx_bf16", NULL, -1.0, "not x86-64", 0);
    print_figure("amx_int8", NULL, -1.0, "not x86-64", 1);
#endif
    printf("}\n");
    return 0;
}
