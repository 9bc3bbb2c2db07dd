/* dispatch.c — CPU feature detection (CPUID, XCR0 and the Linux AMX permission), the NXE_ISA
 * cap, and the kernel table chosen from them, once per process. On x86-64 the avx2 and
 * avx512 tables carry their own packed-GEMM microkernels, drivers and activations; the avx512
 * table's bf16 kernel needs AVX512-BF16 and its 8-bit kernel AVX512-VNNI, each dropped
 * without its feature. amx runs the avx512 table:
 * no tile kernel is built yet. */
#if defined(__linux__)
#define _GNU_SOURCE /* syscall() */
#endif

#include "dispatch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "generic/vector.h"
#include "x86/f32-gemm-x86.h"
#include "x86/gemm-x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NXE_DISPATCH_X86 1
#include <cpuid.h>
#if defined(__linux__)
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

static const char *const level_names[] = {"scalar", "avx2", "avx512", "amx"};
#define LEVEL_COUNT ((int)(sizeof level_names / sizeof level_names[0]))

#if defined(__x86_64__)
static const nxe_gemm_kernel f32_gemm_6x16_avx2 = {
    "f32-gemm-6x16-avx2", NXE_GEMM_F32, 6, 16, 1, nxe_f32_gemm_6x16_avx2, nxe_epilogue_avx2,
    nxe_f32_gemm_6x16_rows_avx2,
};
static const nxe_gemm_kernel f32_gemm_8x48_avx512 = {
    "f32-gemm-8x48-avx512", NXE_GEMM_F32, 8, 48, 1, nxe_f32_gemm_8x48_avx512,
    nxe_epilogue_avx512, nxe_f32_gemm_8x48_rows_avx512,
};
static const nxe_q8_gemm_kernel u8s8_gemm_4x48_avx512vnni = {
    "u8s8-gemm-4x48-avx512vnni", 4, 48, nxe_u8s8_gemm_4x48_avx512vnni,
};
static const nxe_gemm_kernel bf16_gemm_8x48_avx512bf16 = {
    "bf16-gemm-8x48-avx512bf16", NXE_GEMM_BF16, 8, 48, 2, nxe_bf16_gemm_8x48_avx512bf16,
    nxe_epilogue_avx512,
};
#endif

#define DRIVERS(suffix)                                                                      \
    nxe_q8_gemm_tiles_##suffix, nxe_q8_gemm_run_##suffix, nxe_gemm_packed_tiles_##suffix,      \
        nxe_gemm_packed_run_##suffix, nxe_conv_gemm_tiles_##suffix,                          \
        nxe_conv_gemm_tile_work_##suffix, nxe_conv_gemm_run_##suffix,                        \
        nxe_conv_bf16_pairs_##suffix, nxe_depthwise_rows_##suffix, nxe_depthwise_run_##suffix, \
        nxe_f32_activation_##suffix, nxe_f32_softmax_rows_##suffix,                          \
        nxe_f32_layer_norm_rows_##suffix, nxe_x32_depth_to_space_##suffix

/* One row per level that has kernels of its own, in increasing level order. */
static const nxe_kernel_table kernel_tables[] = {
    {NXE_ISA_LEVEL_SCALAR, "scalar", nxe_ref_f32_gemm, nxe_ref_f32_conv_ncdhw,
     nxe_ref_f32_conv_ndhwc, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL},
#if defined(__x86_64__)
    {NXE_ISA_LEVEL_AVX2, "avx2", nxe_f32_gemm_avx2, nxe_ref_f32_conv_ncdhw,
     nxe_ref_f32_conv_ndhwc, &f32_gemm_6x16_avx2, NULL, NULL, DRIVERS(avx2)},
    {NXE_ISA_LEVEL_AVX512, "avx512", nxe_f32_gemm_avx512, nxe_ref_f32_conv_ncdhw,
     nxe_ref_f32_conv_ndhwc, &f32_gemm_8x48_avx512, &bf16_gemm_8x48_avx512bf16,
     &u8s8_gemm_4x48_avx512vnni, DRIVERS(avx512)},
#endif
};

typedef struct cpu_detection {
    uint64_t features;             /* usable: CPUID, XCR0 and (AMX) the OS permission */
    nxe_isa_level machine_level;   /* the highest level the features allow */
    char missing[160];             /* why the machine stops below amx ("" at amx) */
    nxe_isa_level level;           /* after the NXE_ISA cap */
    char reason[256];
    const nxe_kernel_table *table;
    nxe_kernel_table table_storage; /* the chosen row, less what the features lack */
    char kernels[192];              /* nxe_cpu_kernels */
} cpu_detection;

static cpu_detection detected;
_Static_assert(sizeof detected.reason == sizeof ((nxe_cpu_info *)0)->reason,
               "the reason is copied whole into nxe_cpu_info");
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

#define AVX2_LEVEL_FEATURES (NXE_CPU_FEATURE_AVX2 | NXE_CPU_FEATURE_FMA)
#define AVX512_LEVEL_FEATURES                                                                \
    (NXE_CPU_FEATURE_AVX512F | NXE_CPU_FEATURE_AVX512BW | NXE_CPU_FEATURE_AVX512VL)
#define AMX_LEVEL_FEATURES                                                                   \
    (NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_BF16 | NXE_CPU_FEATURE_AMX_INT8)

#if defined(NXE_DISPATCH_X86)

/* XCR0 state-component bits the OS sets when it saves and restores the registers. */
#define XCR0_AVX_STATE 0x6ull                         /* SSE + upper YMM */
#define XCR0_AVX512_STATE 0xE6ull                     /* + opmask, ZMM_Hi256, Hi16_ZMM */
#define XCR0_AMX_STATE ((1ull << 17) | (1ull << 18)) /* XTILECFG + XTILEDATA */

static uint64_t read_xcr0(void)
{
    uint32_t low, high;
    /* Inline assembly, not the _xgetbv intrinsic, which needs -mxsave for the whole file. */
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return ((uint64_t)high << 32) | low;
}

static bool has_all(uint64_t features, uint64_t wanted)
{
    return (features & wanted) == wanted;
}

static bool bit(uint32_t word, int index)
{
    return (word >> index) & 1u;
}

/* Asks Linux for the AMX tile-data permission; 0 or the errno of the refusal. */
static int request_amx_permission(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0)
        return 0;
    return errno ? errno : -1;
#else
    return -1;
#endif
}

static void detect_x86(cpu_detection *d)
{
    uint32_t eax, ebx, ecx, edx;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    uint32_t leaf1_ecx = 0, leaf7_ebx = 0, leaf7_ecx = 0, leaf7_edx = 0, leaf7_1_eax = 0;
    if (max_leaf >= 1) {
        __cpuid(1, eax, ebx, ecx, edx);
        leaf1_ecx = ecx;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, eax, ebx, ecx, edx);
        leaf7_ebx = ebx;
        leaf7_ecx = ecx;
        leaf7_edx = edx;
        if (eax >= 1) {
            __cpuid_count(7, 1, eax, ebx, ecx, edx);
            leaf7_1_eax = eax;
        }
    }

    uint64_t avx_group = 0, avx512_group = 0, amx_group = 0;
    if (bit(leaf1_ecx, 28) && bit(leaf7_ebx, 5))
        avx_group |= NXE_CPU_FEATURE_AVX2;
    if (bit(leaf1_ecx, 28) && bit(leaf1_ecx, 12))
        avx_group |= NXE_CPU_FEATURE_FMA;
    if (bit(leaf7_1_eax, 4))
        avx_group |= NXE_CPU_FEATURE_AVX_VNNI;
    if (bit(leaf7_ebx, 16))
        avx512_group |= NXE_CPU_FEATURE_AVX512F;
    if (bit(leaf7_ebx, 30))
        avx512_group |= NXE_CPU_FEATURE_AVX512BW;
    if (bit(leaf7_ebx, 31))
        avx512_group |= NXE_CPU_FEATURE_AVX512VL;
    if (bit(leaf7_1_eax, 5))
        avx512_group |= NXE_CPU_FEATURE_AVX512_BF16;
    if (bit(leaf7_ecx, 11))
        avx512_group |= NXE_CPU_FEATURE_AVX512_VNNI;
    if (bit(leaf7_edx, 24))
        amx_group |= NXE_CPU_FEATURE_AMX_TILE;
    if (bit(leaf7_edx, 22))
        amx_group |= NXE_CPU_FEATURE_AMX_BF16;
    if (bit(leaf7_edx, 25))
        amx_group |= NXE_CPU_FEATURE_AMX_INT8;

    uint64_t xcr0 = bit(leaf1_ecx, 27) ? read_xcr0() : 0; /* OSXSAVE: XGETBV is usable */
    bool avx_state = (xcr0 & XCR0_AVX_STATE) == XCR0_AVX_STATE;
    bool avx512_state = (xcr0 & XCR0_AVX512_STATE) == XCR0_AVX512_STATE;
    bool amx_state = (xcr0 & XCR0_AMX_STATE) == XCR0_AMX_STATE;

    int amx_refusal = 0;
    if (avx_state)
        d->features |= avx_group;
    if (avx_state && avx512_state)
        d->features |= avx512_group;
    if (amx_group && amx_state) {
        amx_refusal = request_amx_permission();
        if (amx_refusal == 0)
            d->features |= amx_group;
    }

    char *missing = d->missing;
    size_t size = sizeof d->missing;
    if (!has_all(avx_group, AVX2_LEVEL_FEATURES)) {
        snprintf(missing, size, "no AVX2/FMA in CPUID");
    } else if (!avx_state) {
        snprintf(missing, size, "no AVX state in XCR0 (the OS has not enabled it)");
    } else if (!has_all(avx512_group, AVX512_LEVEL_FEATURES)) {
        d->machine_level = NXE_ISA_LEVEL_AVX2;
        snprintf(missing, size, "no AVX-512 F/BW/VL in CPUID");
    } else if (!avx512_state) {
        d->machine_level = NXE_ISA_LEVEL_AVX2;
        snprintf(missing, size, "no AVX-512 in XCR0 (the OS has not enabled it)");
    } else if (!has_all(amx_group, AMX_LEVEL_FEATURES)) {
        d->machine_level = NXE_ISA_LEVEL_AVX512;
        snprintf(missing, size, "no AMX-TILE/BF16/INT8 in CPUID");
    } else if (!amx_state) {
        d->machine_level = NXE_ISA_LEVEL_AVX512;
        snprintf(missing, size, "no AMX tile state in XCR0 (the OS has not enabled it)");
    } else if (amx_refusal > 0) {
        d->machine_level = NXE_ISA_LEVEL_AVX512;
        snprintf(missing, size, "the OS refused the AMX permission (arch_prctl errno %d)",
                 amx_refusal);
    } else if (amx_refusal < 0) {
        d->machine_level = NXE_ISA_LEVEL_AVX512;
        snprintf(missing, size, "no way to ask this OS for the AMX permission");
    } else {
        d->machine_level = NXE_ISA_LEVEL_AMX;
    }
}

#endif

static void detect_machine(cpu_detection *d)
{
    d->features = 0;
    d->machine_level = NXE_ISA_LEVEL_SCALAR;
#if defined(NXE_DISPATCH_X86)
    detect_x86(d);
#else
    snprintf(d->missing, sizeof d->missing, "not an x86-64 CPU: only scalar kernels apply");
#endif
}

/* The NXE_ISA level, or -1 when unset or empty, -2 when not a level name. */
static int requested_level(const char *value)
{
    if (!value || !value[0])
        return -1;
    for (int level = 0; level < LEVEL_COUNT; level++)
        if (strcmp(value, level_names[level]) == 0)
            return level;
    return -2;
}

static void apply_cap(cpu_detection *d, const char *value)
{
    const char *machine = level_names[d->machine_level];
    const char *why_not_higher = d->missing[0] ? d->missing : "no higher level exists";
    int requested = requested_level(value);
    d->level = d->machine_level;
    if (requested == -1) {
        snprintf(d->reason, sizeof d->reason, "the best this machine allows: %s",
                 why_not_higher);
    } else if (requested == -2) {
        snprintf(d->reason, sizeof d->reason,
                 "NXE_ISA=%.32s is not scalar, avx2, avx512 or amx: ignored; %s", value,
                 why_not_higher);
    } else if (requested < (int)d->machine_level) {
        d->level = (nxe_isa_level)requested;
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s caps %s", level_names[requested],
                 machine);
    } else if (requested == (int)d->machine_level) {
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s is this machine's best level",
                 machine);
    } else {
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s is above this machine, kept %s: %s",
                 level_names[requested], machine, d->missing);
    }
}

static void detect(void)
{
    detect_machine(&detected);
    apply_cap(&detected, getenv("NXE_ISA"));
    detected.table_storage = kernel_tables[0];
    for (size_t i = 0; i < sizeof kernel_tables / sizeof kernel_tables[0]; i++)
        if (kernel_tables[i].level <= detected.level)
            detected.table_storage = kernel_tables[i];
    if (!(detected.features & NXE_CPU_FEATURE_AVX512_BF16))
        detected.table_storage.bf16_gemm_kernel = NULL;
    if (!(detected.features & NXE_CPU_FEATURE_AVX512_VNNI))
        detected.table_storage.q8_gemm_kernel = NULL;
    detected.table = &detected.table_storage;
    const nxe_kernel_table *t = detected.table;
    snprintf(detected.kernels, sizeof detected.kernels, "f32=%s bf16=%s int8=%s",
             t->f32_gemm_kernel ? t->f32_gemm_kernel->name : "reference",
             t->bf16_gemm_kernel ? t->bf16_gemm_kernel->name : "reference",
             t->q8_gemm_kernel ? t->q8_gemm_kernel->name : "reference");
}

static const cpu_detection *detection(void)
{
    pthread_once(&detect_once, detect);
    return &detected;
}

const nxe_kernel_table *nxe_kernels(void)
{
    return detection()->table;
}

const nxe_kernel_table *nxe_kernel_tables(int32_t *count)
{
    *count = (int32_t)(sizeof kernel_tables / sizeof kernel_tables[0]);
    return kernel_tables;
}

nxe_isa_level nxe_isa_level_chosen(void)
{
    return detection()->level;
}

NXE_API nxe_status nxe_cpu_info_get(nxe_cpu_info *info)
{
    const char *where = "nxe_cpu_info_get";
    if (!info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: info is NULL", where);
    if (info->struct_size < sizeof(nxe_cpu_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_cpu_info));
    const cpu_detection *d = detection();
    uint32_t struct_size = info->struct_size;
    *info = (nxe_cpu_info){.struct_size = struct_size, .features = d->features};
    snprintf(info->isa, sizeof info->isa, "%s", level_names[d->level]);
    memcpy(info->reason, d->reason, sizeof info->reason);
    return NXE_OK;
}

NXE_API nxe_status nxe_cpu_kernels(const char **names)
{
    if (!names)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_cpu_kernels: names is NULL");
    *names = detection()->kernels;
    return NXE_OK;
}
