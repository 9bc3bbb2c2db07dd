/* binary.h — the PLAN section of a compiled binary (.nxb), shared by its writer and loader:
 * the placement codes. Its records and limits are model/records.h and core/limits.h;
 * docs/formats.md has the layout. */
#ifndef NXE_BINARY_H
#define NXE_BINARY_H

#include "model/records.h"
#include "runtime/executable_internal.h"

/* Where a tensor's bytes live at run time. */
enum nxe_plan_placement {
    NXE_PLAN_NONE = 0,  /* an input or output (staging), or a tensor no step uses */
    NXE_PLAN_ARENA = 1, /* a transient in the arena, which the loader plans */
    NXE_PLAN_DATA = 2   /* followed by the u32 index of a buffer in the DATA section */
};

/* Buffers in DATA start at multiples of this, relative to the section. */
#define NXE_PLAN_DATA_ALIGNMENT 64u

#endif
