/* dispatch.h — the one table of kernel entry points, filled once per process for the ISA level
 * the CPU allows (capped by NXE_ISA), and what detection found. Op code calls kernels through
 * the table and never tests CPU features itself. Internal: plain data, no status codes; the
 * public CPU calls (csrc/core/cpu.c) report it. */
#ifndef NXE_KERNELS_DISPATCH_H
#define NXE_KERNELS_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "gemm.h"
#include "list.h"

/* One row: the portable functions of one level (kernels/list.h) and the microkernels chosen
 * for this process. A NULL entry means the level has no such kernel and callers keep the
 * reference path (kernels/ref, which is all the scalar level runs). */
typedef struct nxe_kernel_table {
    nxe_isa_level level; /* the level these kernels need */
    const char *name;    /* the level's name */
    /* Packed GEMM: the f32 microkernel, the bf16 one (NULL without AVX512-BF16: relaxed work
     * runs the f32 one) and the 8-bit one (NULL at the scalar level: quantized ops keep their
     * reference kernels). */
    const nxe_gemm_kernel *f32_gemm_kernel;
    const nxe_gemm_kernel *bf16_gemm_kernel;
    const nxe_q8_gemm_kernel *q8_gemm_kernel;
#define NXE_TABLE_FIELD(type, name, level) type *name;
    NXE_PORTABLE_KERNELS(NXE_TABLE_FIELD, )
#undef NXE_TABLE_FIELD
} nxe_kernel_table;

/* A microkernel of the lists in kernels/list.h, with what it needs to run. */
typedef struct nxe_ukernel_entry {
    nxe_isa_level level;          /* its dispatch row (an AMX kernel's is avx512) */
    uint64_t features;            /* enum nxe_cpu_feature bits beyond the level's */
    const nxe_gemm_kernel *gemm;  /* f32 or bf16, or NULL */
    const nxe_q8_gemm_kernel *q8; /* or the 8-bit one */
} nxe_ukernel_entry;

/* From the lists of kernels/list.h: a level's row (microkernels unset); a list entry's
 * descriptor, defined static and named after it; its nxe_ukernel_entry. */
#define NXE_ROW_FIELD_INIT(type, name, row) .name = nxe_##name##_##row,
#define NXE_ROW_INIT(row)                                                                          \
    {.level = (nxe_isa_level)NXE_ISA_LEVEL_OF_##row,                                               \
     .name = #row,                                                                                 \
     NXE_PORTABLE_KERNELS(NXE_ROW_FIELD_INIT, row)}
#define NXE_UKERNEL_VAR(dtype, mr, nr, isa) nxe_kernel_##dtype##_##mr##x##nr##_##isa
#define NXE_DEFINE_GEMM_UKERNEL(dtype, mr, nr, isa, row, features)                                 \
    static const nxe_gemm_kernel NXE_UKERNEL_VAR(dtype, mr, nr, isa) =                             \
        NXE_GEMM_KERNEL_INIT(dtype, mr, nr, isa, row);
#define NXE_DEFINE_Q8_UKERNEL(dtype, mr, nr, isa, row, features)                                   \
    static const nxe_q8_gemm_kernel NXE_UKERNEL_VAR(dtype, mr, nr, isa) =                          \
        NXE_Q8_KERNEL_INIT(dtype, mr, nr, isa);
#define NXE_GEMM_UKERNEL_ENTRY(dtype, mr, nr, isa, row, features_)                                 \
    {.level = (nxe_isa_level)NXE_ISA_LEVEL_OF_##row,                                               \
     .features = (features_),                                                                      \
     .gemm = &NXE_UKERNEL_VAR(dtype, mr, nr, isa)},
#define NXE_Q8_UKERNEL_ENTRY(dtype, mr, nr, isa, row, features_)                                   \
    {.level = (nxe_isa_level)NXE_ISA_LEVEL_OF_##row,                                               \
     .features = (features_),                                                                      \
     .q8 = &NXE_UKERNEL_VAR(dtype, mr, nr, isa)},

/* What detection found, once per process. */
typedef struct nxe_cpu_detection {
    uint64_t features;           /* enum nxe_cpu_feature bits: CPUID and the OS's XCR0 */
    nxe_isa_level machine_level; /* the highest level the features allow */
    nxe_isa_level level;         /* after the NXE_ISA cap */
    char reason[256];            /* why that level */
    bool tile_permission_asked;  /* whether a chosen kernel needed the AMX permission */
    bool tiles_granted;          /* whether the OS granted it: AMX instructions may run */
    char kernel_names[192];      /* "f32=<name> bf16=<name> int8=<name>", "reference" for none;
                                    bf16 names the f32 kernel where relaxed work runs it */
    nxe_kernel_table table;      /* the chosen row and microkernels */
} nxe_cpu_detection;

/* This process's detection; runs on the first call from any thread, exactly once. */
const nxe_cpu_detection *nxe_cpu_detect(void);

/* The table for this process (nxe_cpu_detect()->table). Never NULL. */
const nxe_kernel_table *nxe_kernels(void);

/* For tests that compare a level against the reference path in one process (the graph
 * fuzzer): replaces this process's table with `table` and returns the one it replaces. Not
 * thread-safe: no executable may be compiled, loaded or run while the table changes. */
nxe_kernel_table nxe_kernels_replace(const nxe_kernel_table *table);

/* "scalar", "avx2", ... */
const char *nxe_isa_level_name(nxe_isa_level level);

/* Every row and every microkernel this build has, without regard to the CPU: rows in
 * increasing level order (the microkernels unset), microkernels in list order. For tests that
 * run every variant the machine can and name the ones it cannot. */
const nxe_kernel_table *nxe_kernel_rows(int32_t *count);
const nxe_ukernel_entry *nxe_ukernel_entries(int32_t *count);

/* Whether `entry` runs where detection found `features` at `level` (a kernel that needs AMX
 * features needs the amx level too); if not, why (a message into why, why_size bytes). */
bool nxe_ukernel_runnable(const nxe_ukernel_entry *entry, nxe_isa_level level, uint64_t features,
                          char *why, size_t why_size);

/* Fills table's microkernels from `entries`: per dtype the last entry at or below `level`
 * whose features are all in `features`. An entry that needs AMX tiles is taken only when
 * ask_tile_permission() returns 0; it is called at most once, and only then (*asked is set).
 * A refusal's nonzero result is kept in *refusal and the next candidate is taken. */
void nxe_choose_ukernels(const nxe_ukernel_entry *entries, int32_t count, nxe_isa_level level,
                         uint64_t features, int (*ask_tile_permission)(void),
                         nxe_kernel_table *table, bool *asked, int *refusal);

#endif
