/* portable.h — kernels written once in portable C and compiled once per ISA level, each copy
 * with that level's -m flags and names ending in the level (-DNXE_ISA_SUFFIX=<level>), so that
 * the compiler's vectorizer emits each level's vectors. kernels/list.h lists the functions and
 * the levels; kernels/dispatch.c puts each level's copies in its row. */
#ifndef NXE_KERNELS_PORTABLE_PORTABLE_H
#define NXE_KERNELS_PORTABLE_PORTABLE_H

#include <stdint.h>

#include "gemm.h"
#include "list.h"

/* NXE_ISA_NAME(f) is f_<level> in the copy for <level>, which this declares. */
#define NXE_CONCAT_(a, b) a##_##b
#define NXE_CONCAT(a, b) NXE_CONCAT_(a, b)
#define NXE_ISA_NAME(name) NXE_CONCAT(name, NXE_ISA_SUFFIX)
#define NXE_DECLARE_THIS_COPY(type, name, level) type NXE_ISA_NAME(nxe_##name);
NXE_PORTABLE_KERNELS(NXE_DECLARE_THIS_COPY, )
#undef NXE_DECLARE_THIS_COPY

#endif
