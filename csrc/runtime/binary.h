/* binary.h — the PLAN section of a compiled binary (.nxb), shared by its writer and loader:
 * the placement codes and the limits the loader enforces. docs/formats.md has the layout. */
#ifndef NXE_BINARY_H
#define NXE_BINARY_H

#include "runtime/executable_internal.h"

/* Where a tensor's bytes live at run time. */
enum nxe_plan_placement {
    NXE_PLAN_NONE = 0,  /* an input or output (staging), or a tensor no step uses */
    NXE_PLAN_ARENA = 1, /* followed by the u64 arena offset */
    NXE_PLAN_DATA = 2   /* followed by the u32 index of a buffer in the DATA section */
};

/* Buffers in DATA start at multiples of this, relative to the section. */
#define NXE_PLAN_DATA_ALIGNMENT 64u
/* Loader limits: beyond these a plan is treated as corrupt rather than allocated. */
#define NXE_PLAN_MAX_TENSORS (1u << 24)
#define NXE_PLAN_MAX_STEPS (1u << 24)
#define NXE_PLAN_MAX_BUFFERS (1u << 24)
#define NXE_PLAN_MAX_OP_IO 65536u
#define NXE_PLAN_MAX_NAME 65535u
#define NXE_PLAN_MAX_SCALES (1u << 24)
#define NXE_PLAN_MAX_ATTR_VALUES 4096u
/* One tensor, the arena and the staging buffer are each at most this large (1 TiB). */
#define NXE_PLAN_MAX_BYTES (UINT64_C(1) << 40)

#endif
