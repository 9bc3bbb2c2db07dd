/* layout.h — the layout pass over a plan that is laid out but not yet prepared (layout.c). */
#ifndef NXE_LAYOUT_H
#define NXE_LAYOUT_H

#include "transform/plan.h"

/* The parts of a plan the pass rewrites. The arrays are nxe_alloc'd; the pass may replace them
 * with larger ones (freeing the old) and raise the counts. */
typedef struct nxe_layout_plan {
    nxe_exe_tensor *tensors;
    int32_t num_tensors;
    void **data; /* per tensor: a constant's or variable's bytes */
    nxe_exe_step *steps;
    int32_t num_steps;
    nxe_exe_constant *constants;
    int32_t num_constants;
    uint64_t transient_bytes; /* raised by the tensors the pass adds */
    uint64_t constant_bytes;
} nxe_layout_plan;

/* Rewrites the plan so that channels-last regions run channels first: every op with layout
 * "NHWC" becomes its "NCHW" twin, the activations between them are stored channels first
 * (their recorded shapes become the stored ones), Transposes that only relabel axes vanish,
 * constants (convolution weights OHWI -> OIHW, broadcast operands) are permuted here, once,
 * and Transpose steps are added only where a region meets a tensor that keeps its public
 * layout (graph inputs and outputs, variables, ops that read a layout as it is). A plan with no
 * channels-last op and no rank-4 Transpose is left untouched. Fails with
 * NXE_ERROR_OUT_OF_MEMORY, or NXE_ERROR_INTERNAL when an op's shape rule rejects a rewritten
 * step (naming it); the plan may then be half rewritten, and is only fit to be released. */
nxe_status nxe_layout_pass(nxe_layout_plan *plan);

#endif
