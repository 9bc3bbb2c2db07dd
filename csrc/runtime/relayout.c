/* relayout.c — hands an executable's plan to the layout pass and takes the result back. */
#include "runtime/relayout.h"

#include "transform/layout.h"

nxe_status nxe_executable_relayout(nxe_executable *exe)
{
    nxe_layout_plan plan = {
        .tensors = exe->tensors,
        .num_tensors = exe->num_tensors,
        .data = exe->data,
        .steps = exe->steps,
        .num_steps = exe->num_steps,
        .constants = exe->constants,
        .num_constants = exe->num_constants,
        .transient_bytes = exe->transient_bytes,
        .constant_bytes = exe->constant_bytes,
    };
    nxe_status status = nxe_layout_pass(&plan);
    exe->tensors = plan.tensors;
    exe->num_tensors = plan.num_tensors;
    exe->data = plan.data;
    exe->steps = plan.steps;
    exe->num_steps = plan.num_steps;
    exe->constants = plan.constants;
    exe->num_constants = plan.num_constants;
    exe->transient_bytes = plan.transient_bytes;
    exe->constant_bytes = plan.constant_bytes;
    return status;
}
