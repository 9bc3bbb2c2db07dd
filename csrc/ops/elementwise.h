/* elementwise.h — the broadcasting machinery of the elementwise op family, shared with the math
 * family (math.c) so both walk broadcast operands one way. Shape rules and lowering only. */
#ifndef NXE_OPS_ELEMENTWISE_H
#define NXE_OPS_ELEMENTWISE_H

#include "ops/op_def.h"
#include "ref/elementwise.h"

/* Output elements per parallel chunk: large enough that waking a worker pays for itself. */
#define NXE_ELEMENTWISE_GRAIN 16384

/* Params of a broadcasting binary op (plain values, so a plan can be saved). */
typedef struct nxe_binary_params {
    int32_t op;    /* enum nxe_ref_binary_op */
    int32_t dtype; /* the operands' dtype */
    int64_t numel; /* output elements */
    nxe_ref_broadcast walk;
} nxe_binary_params;

/* enum nxe_ref_type of a dtype, -1 for NONE or an unknown dtype. */
int32_t nxe_elementwise_ref_type(int32_t dtype);

/* Broadcasts `count` (1..NXE_REF_MAX_OPERANDS) operand shapes as numpy does, sets out's ndim
 * and shape, and fills `walk` with each operand's strides through the output, dimensions merged
 * where every operand allows. Fails with a node error naming the shapes that do not broadcast. */
nxe_status nxe_broadcast_plan(const nxe_node *node, const nxe_value *const *operands, int32_t count,
                              nxe_value *out, nxe_ref_broadcast *walk);

/* Shape rule of a binary op: inputs 0 and 1 of one dtype that `op` has a kernel for, output
 * dtype `out_dtype` (NXE_DTYPE_NONE: the inputs' dtype). Fills nxe_binary_params. */
nxe_status nxe_binary_infer(const nxe_node *node, const nxe_value *inputs, nxe_value *outputs,
                            nxe_binary_params *params, int32_t op, int32_t out_dtype);

/* Run function of every op whose params are nxe_binary_params. */
nxe_status nxe_binary_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                          nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool);

#endif
