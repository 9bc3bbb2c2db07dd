/* prepare.c — what happens between a plan's steps and running them, shared by the compiler and
 * the binary loader: each op prepares for this process's kernels (constant weights packed
 * once), the epilogue-folding pass (transform/fold_epilogues.c) runs, chains of steps that run
 * depth-first are marked (transform/bands.c), and the arena is planned
 * (transform/memory_plan.c) and allocated for the steps that remain. */
#include <string.h>

#include "ops/custom.h"
#include "runtime/executable_internal.h"
#include "runtime/variable_writes.h"
#include "transform/bands.h"
#include "transform/fold_epilogues.h"
#include "transform/memory_plan.h"

static nxe_status prepare_steps(nxe_executable *exe)
{
    const nxe_prepare_context context = {nxe_kernels(), exe->relax_precision, exe->winograd};
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        step->fused = (nxe_fused_epilogue){
            .epilogue = {.scale = 1.0f, .activation = NXE_ACTIVATION_NONE, .bias_scale = 1.0f},
            .residual_input = -1,
        };
        const bool custom = nxe_custom_def_has_callbacks(step->node.def);
        if (!step->node.def->prepare && !custom)
            continue;
        /* Constants are the only inputs with data at this point. */
        for (int32_t j = 0; j < step->num_inputs; j++) {
            int32_t id = step->input_ids[j];
            step->input_values[j].data = id >= 0 && exe->tensors[id].kind == NXE_TENSOR_CONSTANT
                                             ? exe->tensors[id].storage
                                             : NULL;
        }
        size_t workspace = 0;
        nxe_status status =
            custom ? nxe_custom_prepare_step(&step->node, step->params, step->input_values,
                                             step->num_inputs)
                   : step->node.def->prepare(step->params, step->input_values, step->num_inputs,
                                             &context, &step->prepared, &workspace);
        if (step->prepared && workspace > exe->workspace_bytes)
            exe->workspace_bytes = workspace;
        for (int32_t j = 0; j < step->num_inputs; j++)
            step->input_values[j].data = NULL;
        if (status != NXE_OK) {
            nxe_error_prefix("prepare: op '%s' ('%s'): ", nxe_node_type(&step->node),
                             step->node.name);
            return status;
        }
    }
    return NXE_OK;
}

nxe_status nxe_executable_plan_arena(nxe_executable *exe)
{
    size_t n = (size_t)exe->num_tensors + 1;
    nxe_buffer_request *requests = nxe_alloc_zeroed(sizeof(nxe_buffer_request) * n);
    int32_t *request_tensor = nxe_alloc(sizeof(int32_t) * n);
    int32_t *first = nxe_alloc(sizeof(int32_t) * n), *last = nxe_alloc(sizeof(int32_t) * n);
    uint64_t *offsets = nxe_alloc(sizeof(uint64_t) * n);
    nxe_status status = NXE_OK;
    if (!requests || !request_tensor || !first || !last || !offsets)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "plan: out of memory");
    for (int32_t i = 0; status == NXE_OK && i < exe->num_tensors; i++)
        first[i] = last[i] = -1;
    for (int32_t s = 0; status == NXE_OK && s < exe->num_steps; s++) {
        const nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_outputs; j++)
            first[step->output_ids[j]] = last[step->output_ids[j]] = s;
        for (int32_t j = 0; j < step->num_inputs; j++)
            if (step->input_ids[j] >= 0)
                last[step->input_ids[j]] = s;
    }
    /* A band run interleaves a chain's steps: what they touch lives until its last step. */
    for (int32_t head = 0; status == NXE_OK && head < exe->num_steps; head++) {
        if (!exe->steps[head].band_steps)
            continue;
        const int32_t end = nxe_band_chain_end(exe->steps, head);
        for (int32_t s = head; s < end; s++) {
            const nxe_exe_step *step = &exe->steps[s];
            for (int32_t j = 0; j < step->num_inputs; j++)
                if (step->input_ids[j] >= 0 && last[step->input_ids[j]] < end - 1)
                    last[step->input_ids[j]] = end - 1;
            for (int32_t j = 0; j < step->num_outputs; j++)
                if (last[step->output_ids[j]] < end - 1)
                    last[step->output_ids[j]] = end - 1;
        }
    }
    int32_t count = 0;
    for (int32_t i = 0; status == NXE_OK && i < exe->num_tensors; i++) {
        nxe_exe_tensor *t = &exe->tensors[i];
        if (!t->in_arena)
            continue;
        if (first[i] < 0) { /* no step writes it any more */
            t->in_arena = false;
            exe->data[i] = NULL;
            continue;
        }
        request_tensor[count] = i;
        requests[count] = (nxe_buffer_request){t->bytes, first[i], last[i]};
        count++;
    }
    if (status == NXE_OK)
        status = nxe_plan_memory(requests, count, offsets, &exe->arena_bytes);
    for (int32_t r = 0; status == NXE_OK && r < count; r++)
        exe->tensors[request_tensor[r]].arena_offset = offsets[r];
    nxe_free(requests);
    nxe_free(request_tensor);
    nxe_free(first);
    nxe_free(last);
    nxe_free(offsets);
    return status;
}

nxe_status nxe_executable_prepare(nxe_executable *exe)
{
    nxe_status status = prepare_steps(exe);
    if (status == NXE_OK)
        status = nxe_executable_stage_variable_writes(exe);
    if (status == NXE_OK)
        status = nxe_fold_epilogues(exe->tensors, exe->num_tensors, exe->steps, &exe->num_steps);
    if (status == NXE_OK)
        nxe_plan_bands(exe->steps, exe->num_steps);
    if (status == NXE_OK)
        status = nxe_executable_plan_arena(exe);
    return status;
}
