/* channels_last.h — the `layout` attribute ("NCHW" or "NHWC") of the ops that accept a
 * channels-last input besides convolutions: the 2-D pools, the global pools, BatchNorm and
 * InstanceNorm. Their shape rules settle a channels-last op as its channels-first twin on the
 * permuted shape. The compiler's layout pass (transform/layout.c) turns every channels-last op
 * into its channels-first twin before a plan is prepared, so their run functions see
 * channels-first data only and refuse params that say otherwise. */
#ifndef NXE_CHANNELS_LAST_H
#define NXE_CHANNELS_LAST_H

#include <string.h>

#include "ops/op_def.h"

#define NXE_LAYOUT_ATTR                                                                            \
    {"layout",                                                                                     \
     "Memory layout of X and Y, \"NCHW\" (channels first) or \"NHWC\" (channels last, rank 4 "     \
     "only).",                                                                                     \
     NXE_ATTR_STRING, "\"NCHW\""}

/* Reads the layout attribute: *channels_last 1 for "NHWC" (which needs an X of rank 4). */
static inline nxe_status nxe_read_channels_last(const nxe_node *node, const nxe_value *x,
                                                int32_t *channels_last)
{
    const char *layout;
    *channels_last = 0;
    nxe_status status = nxe_node_attr_string(node, "layout", &layout);
    if (status != NXE_OK)
        return status;
    if (strcmp(layout, "NCHW") == 0)
        return NXE_OK;
    if (strcmp(layout, "NHWC") != 0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute layout must be \"NCHW\" or \"NHWC\", got \"%s\"", layout);
    if (x->ndim != 4) {
        char xs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "layout \"NHWC\" needs an input X of rank 4, got %s",
                              nxe_shape_str(x->ndim, x->shape, xs, sizeof xs));
    }
    *channels_last = 1;
    return NXE_OK;
}

/* x with its last axis moved to position 1 ([N, H, W, C] -> [N, C, H, W]). */
static inline nxe_value nxe_channels_first_view(const nxe_value *x)
{
    nxe_value v = *x;
    v.shape[1] = x->shape[x->ndim - 1];
    for (int32_t d = 2; d < x->ndim; d++)
        v.shape[d] = x->shape[d - 1];
    return v;
}

/* Moves axis 1 of y's shape last ([N, C, H, W] -> [N, H, W, C]). */
static inline void nxe_channels_last_shape(nxe_value *y)
{
    const int64_t channels = y->shape[1];
    for (int32_t d = 1; d + 1 < y->ndim; d++)
        y->shape[d] = y->shape[d + 1];
    y->shape[y->ndim - 1] = channels;
}

/* What a run function answers for channels-last params. */
static inline nxe_status nxe_channels_last_refused(const char *op)
{
    return nxe_error(NXE_ERROR_UNSUPPORTED,
                     "%s: a channels-last (NHWC) step runs only as the channels-first step the "
                     "compiler's layout pass makes of it; this plan skipped the pass",
                     op);
}

#endif
