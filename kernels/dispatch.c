/* dispatch.c — CPU feature detection (CPUID and XCR0), the NXE_ISA cap, and the kernel table
 * chosen from them once per process: the richest row at or below the level and, per dtype,
 * the last microkernel of kernels/list.h that the level and the features allow. The Linux AMX
 * tile-data permission is asked for only when a chosen microkernel needs AMX tiles. Plain data
 * for csrc/core/cpu.c: nothing above kernels/ is called. */
#if defined(__linux__)
#define _GNU_SOURCE /* syscall() */
#endif

#include "dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nxe/nxe_experimental.h" /* enum nxe_cpu_feature */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NXE_DISPATCH_X86 1
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static const char *const level_names[] = {
#define LEVEL_NAME(NAME, name) #name,
    NXE_ISA_LEVELS(LEVEL_NAME)
#undef LEVEL_NAME
};

/* ---- the lists of kernels/list.h as data ---- */

/* The scalar row is empty: its ops run the reference kernels. */
#define ROW(level) NXE_ROW_INIT(level),
static const nxe_kernel_table rows[] = {{.level = NXE_ISA_LEVEL_SCALAR, .name = "scalar"},
                                        NXE_ROW_LEVELS(ROW)};
#undef ROW

NXE_GEMM_UKERNELS(NXE_DEFINE_GEMM_UKERNEL)
NXE_Q8_UKERNELS(NXE_DEFINE_Q8_UKERNEL)

/* Ends with an empty entry, not counted: the lists are empty off x86-64, and C has no empty
 * arrays. */
static const nxe_ukernel_entry entries[] = {
    NXE_GEMM_UKERNELS(NXE_GEMM_UKERNEL_ENTRY) NXE_Q8_UKERNELS(NXE_Q8_UKERNEL_ENTRY){.gemm = NULL},
};
#define ENTRY_COUNT ((int32_t)(sizeof entries / sizeof entries[0]) - 1)

/* ---- detection ---- */

#define AVX2_LEVEL_FEATURES (NXE_CPU_FEATURE_AVX2 | NXE_CPU_FEATURE_FMA)
#define AVX512_LEVEL_FEATURES                                                                      \
    (NXE_CPU_FEATURE_AVX512F | NXE_CPU_FEATURE_AVX512BW | NXE_CPU_FEATURE_AVX512VL)
#define AMX_LEVEL_FEATURES                                                                         \
    (NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_BF16 | NXE_CPU_FEATURE_AMX_INT8)

#if defined(NXE_DISPATCH_X86)

/* XCR0 state-component bits the OS sets when it saves and restores the registers. */
#define XCR0_AVX_STATE 0x6ull                        /* SSE + upper YMM */
#define XCR0_AVX512_STATE 0xE6ull                    /* + opmask, ZMM_Hi256, Hi16_ZMM */
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

static void detect_x86(nxe_cpu_detection *d, char *missing, size_t size)
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

    if (avx_state)
        d->features |= avx_group;
    if (avx_state && avx512_state)
        d->features |= avx512_group;
    if (amx_state)
        d->features |= amx_group;

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
    } else {
        d->machine_level = NXE_ISA_LEVEL_AMX;
    }
}

#endif

static void detect_machine(nxe_cpu_detection *d, char *missing, size_t size)
{
    d->features = 0;
    d->machine_level = NXE_ISA_LEVEL_SCALAR;
#if defined(NXE_DISPATCH_X86)
    detect_x86(d, missing, size);
#else
    snprintf(missing, size, "not an x86-64 CPU: only scalar kernels apply");
#endif
}

/* The NXE_ISA level, or -1 when unset or empty, -2 when not a level name. */
static int requested_level(const char *value)
{
    if (!value || !value[0])
        return -1;
    for (int level = 0; level < NXE_ISA_LEVEL_COUNT; level++)
        if (strcmp(value, level_names[level]) == 0)
            return level;
    return -2;
}

/* "scalar, avx2, avx512 or amx" */
static void level_list(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int level = 0; level < NXE_ISA_LEVEL_COUNT && used < size; level++) {
        const char *separator = level == 0 ? "" : level == NXE_ISA_LEVEL_COUNT - 1 ? " or " : ", ";
        used += (size_t)snprintf(out + used, size - used, "%s%s", separator, level_names[level]);
    }
}

static void apply_cap(nxe_cpu_detection *d, const char *missing, const char *value)
{
    const char *machine = level_names[d->machine_level];
    const char *why_not_higher = missing[0] ? missing : "no higher level exists";
    int requested = requested_level(value);
    d->level = d->machine_level;
    if (requested == -1) {
        snprintf(d->reason, sizeof d->reason, "the best this machine allows: %s", why_not_higher);
    } else if (requested == -2) {
        char levels[64];
        level_list(levels, sizeof levels);
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%.32s is not %s: ignored; %s", value, levels,
                 why_not_higher);
    } else if (requested < (int)d->machine_level) {
        d->level = (nxe_isa_level)requested;
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s caps %s", level_names[requested],
                 machine);
    } else if (requested == (int)d->machine_level) {
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s is this machine's best level", machine);
    } else {
        snprintf(d->reason, sizeof d->reason, "NXE_ISA=%s is above this machine, kept %s: %s",
                 level_names[requested], machine, missing);
    }
}

/* Asks Linux for the AMX tile-data permission; 0 or the errno of the refusal (-1: this OS
 * has no way to ask). */
static int request_tile_permission(void)
{
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0)
        return 0;
    return errno ? errno : -1;
#else
    return -1;
#endif
}

static bool needs_tiles(const nxe_ukernel_entry *entry)
{
    return (entry->features & NXE_CPU_FEATURE_AMX_TILE) != 0;
}

bool nxe_ukernel_runnable(const nxe_ukernel_entry *entry, nxe_isa_level level, uint64_t features,
                          char *why, size_t why_size)
{
    const uint64_t lacking = entry->features & ~features;
    /* AMX features make the amx level: a tile kernel runs in the avx512 row, at amx only. */
    const nxe_isa_level needed =
        entry->features & AMX_LEVEL_FEATURES ? NXE_ISA_LEVEL_AMX : entry->level;
    if (needed > level) {
        if (why)
            snprintf(why, why_size, "needs the %s level, this process runs %s", level_names[needed],
                     level_names[level]);
        return false;
    }
    if (lacking) {
        if (why)
            snprintf(why, why_size,
                     "needs CPU feature bits 0x%llx (enum nxe_cpu_feature) "
                     "this CPU lacks",
                     (unsigned long long)lacking);
        return false;
    }
    return true;
}

typedef struct choice {
    nxe_isa_level level;
    uint64_t features;
    int (*ask_tile_permission)(void);
    bool *asked;
    int *refusal;
} choice;

static bool take(const choice *c, const nxe_ukernel_entry *entry)
{
    if (!nxe_ukernel_runnable(entry, c->level, c->features, NULL, 0))
        return false;
    if (!needs_tiles(entry))
        return true;
    if (!*c->asked) {
        *c->asked = true;
        *c->refusal = c->ask_tile_permission();
    }
    return *c->refusal == 0;
}

void nxe_choose_ukernels(const nxe_ukernel_entry *entries_in, int32_t count, nxe_isa_level level,
                         uint64_t features, int (*ask_tile_permission)(void),
                         nxe_kernel_table *table, bool *asked, int *refusal)
{
    const choice c = {level, features, ask_tile_permission, asked, refusal};
    *asked = false;
    *refusal = 0;
    table->f32_gemm_kernel = table->bf16_gemm_kernel = NULL;
    table->q8_gemm_kernel = NULL;
    for (int32_t i = count - 1; i >= 0; i--) {
        const nxe_ukernel_entry *e = &entries_in[i];
        if (e->q8) {
            if (!table->q8_gemm_kernel && take(&c, e))
                table->q8_gemm_kernel = e->q8;
        } else if (e->gemm->type == NXE_GEMM_BF16) {
            if (!table->bf16_gemm_kernel && take(&c, e))
                table->bf16_gemm_kernel = e->gemm;
        } else if (!table->f32_gemm_kernel && take(&c, e)) {
            table->f32_gemm_kernel = e->gemm;
        }
    }
}

static nxe_cpu_detection detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
    nxe_cpu_detection *d = &detected;
    char missing[160] = "";
    detect_machine(d, missing, sizeof missing);
    apply_cap(d, missing, getenv("NXE_ISA"));
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].level <= d->level)
            d->table = rows[i];
    int refusal;
    nxe_choose_ukernels(entries, ENTRY_COUNT, d->level, d->features, request_tile_permission,
                        &d->table, &d->tile_permission_asked, &refusal);
    d->tiles_granted = d->tile_permission_asked && refusal == 0;
    if (refusal != 0) {
        const size_t used = strlen(d->reason);
        if (refusal > 0)
            snprintf(d->reason + used, sizeof d->reason - used,
                     "; the OS refused the AMX tile permission (arch_prctl errno %d)", refusal);
        else
            snprintf(d->reason + used, sizeof d->reason - used,
                     "; no way to ask this OS for the AMX tile permission");
    }
    const nxe_kernel_table *t = &d->table;
    /* Without a bf16 kernel, relaxed work runs the f32 one (never slower than exact mode), and
     * the name says so. */
    const char *f32 = t->f32_gemm_kernel ? t->f32_gemm_kernel->name : "reference";
    snprintf(d->kernel_names, sizeof d->kernel_names, "f32=%s bf16=%s int8=%s", f32,
             t->bf16_gemm_kernel ? t->bf16_gemm_kernel->name : f32,
             t->q8_gemm_kernel ? t->q8_gemm_kernel->name : "reference");
}

const nxe_cpu_detection *nxe_cpu_detect(void)
{
    pthread_once(&detect_once, detect);
    return &detected;
}

const nxe_kernel_table *nxe_kernels(void)
{
    return &nxe_cpu_detect()->table;
}

nxe_kernel_table nxe_kernels_replace(const nxe_kernel_table *table)
{
    pthread_once(&detect_once, detect);
    const nxe_kernel_table previous = detected.table;
    detected.table = *table;
    return previous;
}

const char *nxe_isa_level_name(nxe_isa_level level)
{
    return level_names[level];
}

const nxe_kernel_table *nxe_kernel_rows(int32_t *count)
{
    *count = (int32_t)(sizeof rows / sizeof rows[0]);
    return rows;
}

const nxe_ukernel_entry *nxe_ukernel_entries(int32_t *count)
{
    *count = ENTRY_COUNT;
    return entries;
}
