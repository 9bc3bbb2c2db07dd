/* state.c — Assign: the op that writes a value into a VARIABLE tensor (in-graph state). It is an
 * exact copy of its input; bound to a VARIABLE output it stores a value computed in the graph
 * (an RNN's next state, an accumulator's sum) while the computed tensor stays usable by other
 * ops and as a graph output. The compiler also inserts it after an op that reads the variable
 * it writes (runtime/variable_writes.c), so that op writes a temporary first. */
#include <string.h>

#include "ops/op_def.h"

typedef struct assign_params {
    size_t bytes;
} assign_params;

static nxe_status assign_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)node;
    (void)num_inputs;
    (void)num_outputs;
    assign_params *p = params;
    outputs[0].dtype = inputs[0].dtype;
    outputs[0].ndim = inputs[0].ndim;
    memcpy(outputs[0].shape, inputs[0].shape, sizeof outputs[0].shape);
    p->bytes = nxe_value_bytes(&inputs[0]);
    return NXE_OK;
}

static nxe_status assign_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    (void)pool;
    const assign_params *p = params;
    if (p->bytes > 0 && outputs[0].data != inputs[0].data)
        memmove(outputs[0].data, inputs[0].data, p->bytes);
    return NXE_OK;
}

static const nxe_op_param_info assign_inputs[] = {
    {"value", "the new value, any dtype and shape", NXE_MASK_ALL, 0, 0},
};
static const nxe_op_param_info assign_outputs[] = {
    {"variable",
     "a copy of value, same dtype and shape; usually a VARIABLE tensor, which then holds value "
     "for the next run",
     NXE_MASK_ALL, 0, 0},
};

static const nxe_op_def state_defs[] = {
    {NXE_INFO_NOATTR("Assign",
                     "Copies value into its output, typically a VARIABLE tensor (in-graph "
                     "state), which keeps it for the next run. When value depends on the "
                     "variable itself, every op of the run reading the variable sees the value "
                     "the run started with and the write lands after them; otherwise the "
                     "variable is written first and its readers see the new value.",
                     assign_inputs, assign_outputs),
     sizeof(assign_params), assign_infer, assign_run},
};

const nxe_op_family nxe_ops_state = {state_defs,
                                     (int32_t)(sizeof state_defs / sizeof state_defs[0])};
