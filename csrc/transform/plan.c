/* plan.c — what the steps of a plan own. */
#include "transform/plan.h"

#include "ops/custom.h"

void nxe_exe_step_clear(nxe_exe_step *step)
{
    nxe_custom_step_clear(&step->node, step->params);
    nxe_node_clear(&step->node);
    nxe_free(step->params);
    nxe_free(step->input_ids);
    nxe_free(step->output_ids);
    nxe_free(step->input_values);
    nxe_free(step->output_values);
    nxe_free(step->prepared);
    *step = (nxe_exe_step){0};
}
