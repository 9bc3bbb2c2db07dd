/* nxe_experimental.h — the experimental tier of libnxe's ABI: what the kernels of this process
 * run on (CPU features, the ISA level and its reason, the matrix kernels' names). Plain C99;
 * parses with pycparser after `cc -E`. Include it instead of nxe.h, which it brings; libnxe
 * exports these functions like the stable ones.
 *
 * Experimental means: a declaration here, its values (feature bits, level and kernel names)
 * and the strings it returns may change or go in any minor version, without the major version
 * changing. They follow the kernel set, which grows and is renamed as kernels are added; a
 * declaration that settles moves to nxe.h, tagged with the version it arrived there. The
 * "since" tags say when a declaration appeared; nxe.h's conventions (status codes, the
 * thread's last error) hold here too.
 */
#ifndef NXE_NXE_EXPERIMENTAL_H
#define NXE_NXE_EXPERIMENTAL_H

#include "nxe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU features and kernel dispatch --------------------------------------------------
 * The library picks one ISA level per process, the first time it needs one: the highest the
 * CPU and the OS allow, capped by the environment variable NXE_ISA=scalar|avx2|avx512|amx.
 * An NXE_ISA above what the machine allows keeps the machine's level; an unknown value is
 * ignored. Either way `reason` says so. The amx level runs avx512's kernels, except that bf16
 * and int8 matrix products use AMX tile kernels once the OS grants the tile permission. */

/* Bits of nxe_cpu_info.features. A bit is set only when CPUID reports the feature and the OS
 * has enabled its register state (XCR0). Using AMX tiles also needs the Linux permission
 * (arch_prctl ARCH_REQ_XCOMP_PERM), which nxe requests once, and only when it chooses a kernel
 * that uses tiles. Since 0.2. */
enum nxe_cpu_feature {
    NXE_CPU_FEATURE_AVX2 = 0x1,
    NXE_CPU_FEATURE_FMA = 0x2,
    NXE_CPU_FEATURE_AVX512F = 0x4,
    NXE_CPU_FEATURE_AVX512BW = 0x8,
    NXE_CPU_FEATURE_AVX512VL = 0x10,
    NXE_CPU_FEATURE_AVX512_BF16 = 0x20,
    NXE_CPU_FEATURE_AVX512_VNNI = 0x40,
    NXE_CPU_FEATURE_AVX_VNNI = 0x80,
    NXE_CPU_FEATURE_AMX_TILE = 0x100,
    NXE_CPU_FEATURE_AMX_BF16 = 0x200,
    NXE_CPU_FEATURE_AMX_INT8 = 0x400
};

/* Since 0.2. */
typedef struct nxe_cpu_info {
    uint32_t struct_size; /* set by the caller: sizeof(nxe_cpu_info) */
    uint64_t features;    /* enum nxe_cpu_feature bits; 0 on CPUs other than x86-64 */
    char isa[16];         /* the level chosen: "amx", "avx512", "avx2" or "scalar" */
    char reason[256];     /* why that level, e.g. "NXE_ISA=avx2 caps avx512" */
} nxe_cpu_info;
/* Describes this process's CPU features and the ISA level its kernels are chosen for.
 * NXE_ERROR_INVALID_ARGUMENT (info is NULL or its struct_size short); *info is then
 * unchanged. Since 0.2. */
NXE_API nxe_status nxe_cpu_info_get(nxe_cpu_info *info);
/* The matrix kernels this process runs, one "<precision>=<kernel>" entry per precision,
 * space-separated: "f32=f32-gemm-8x48-avx512 bf16=bf16-gemm-8x48-avx512bf16
 * int8=u8s8-gemm-4x48-avx512vnni", with "reference" where a precision runs the portable
 * reference kernels (bf16 work in relax mode then runs in f32). The string is NUL-terminated,
 * owned by the library and lives as long as the process. NXE_ERROR_INVALID_ARGUMENT when names
 * is NULL. Since 0.3. */
NXE_API nxe_status nxe_cpu_kernels(const char **names);

#ifdef __cplusplus
}
#endif
#endif /* NXE_NXE_EXPERIMENTAL_H */
