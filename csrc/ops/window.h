/* window.h — shape rules shared by the sliding-window op families (conv.c, pool.c): padding
 * modes, bounded ints attributes and the output extent of one spatial axis. Defined in conv.c. */
#ifndef NXE_OPS_WINDOW_H
#define NXE_OPS_WINDOW_H

#include "ops/op_def.h"

/* Attribute values beyond this are rejected so that index arithmetic stays within int64. */
#define NXE_WINDOW_ATTR_MAX INT64_C(2147483647)

/* SAME is ONNX SAME_UPPER (an odd pad at the end); SAME_LOWER puts it at the beginning. */
enum nxe_window_padding {
    NXE_PADDING_EXPLICIT,
    NXE_PADDING_SAME,
    NXE_PADDING_SAME_LOWER,
    NXE_PADDING_VALID
};

/* Reads the "padding" string attribute. */
nxe_status nxe_window_read_padding(const nxe_node *node, enum nxe_window_padding *padding);

/* Reads an ints attribute that must hold exactly `expected` values (at most 16), each in
 * [min_value, NXE_WINDOW_ATTR_MAX]. */
nxe_status nxe_window_read_ints(const nxe_node *node, const char *name, int32_t expected,
                                int64_t min_value, int64_t *values);

/* One spatial axis of extent `in` (>= 1): resolves SAME/VALID padding into the pads and
 * computes the output extent; `axis` names it in messages. SAME gives ceil(in / stride)
 * outputs. ceil_mode (pooling) rounds the window count up, dropping a last window that would
 * start in the end padding. Fails when no window fits. */
nxe_status nxe_window_axis(const nxe_node *node, const char *axis, enum nxe_window_padding padding,
                           int32_t ceil_mode, int64_t in, int64_t kernel, int64_t stride,
                           int64_t dilation, int64_t *pad_begin, int64_t *pad_end, int64_t *out);

/* Fails unless the number of elements of `shape` fits int64. */
nxe_status nxe_window_check_output(const nxe_node *node, int32_t ndim, const int64_t *shape);

#endif
