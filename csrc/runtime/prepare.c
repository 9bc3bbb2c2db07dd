/* prepare.c — the passes between a plan's steps and running them, shared by the compiler and
 * the binary loader: each op prepares for this process's kernels (constant weights packed
 * once), activations, products by a constant scalar and residual additions fold into the GEMM
 * or convolution step before them as its epilogue, and the arena is planned for the steps
 * that remain. A folded step is removed, so its intermediate tensor never reaches memory. */
#include <string.h>

#include "runtime/executable_internal.h"
#include "transform/memory_plan.h"

/* Per tensor: how many step inputs read it, the step of the last of them and the step that
 * writes it (-1: none). Counted once, then kept up to date as steps fold. */
typedef struct tensor_uses {
    int32_t *consumers;
    int32_t *consumer;
    int32_t *producer;
} tensor_uses;

static void count_uses(const nxe_executable *exe, tensor_uses *uses)
{
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        uses->consumers[i] = 0;
        uses->consumer[i] = uses->producer[i] = -1;
    }
    for (int32_t s = 0; s < exe->num_steps; s++) {
        const nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++) {
            if (step->input_ids[j] >= 0) {
                uses->consumers[step->input_ids[j]]++;
                uses->consumer[step->input_ids[j]] = s;
            }
        }
        for (int32_t j = 0; j < step->num_outputs; j++)
            uses->producer[step->output_ids[j]] = s;
    }
}

static bool same_shape(const nxe_exe_tensor *a, const nxe_exe_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* Adds `residual` as one more input of step s. */
static nxe_status append_input(nxe_exe_step *step, int32_t residual, const nxe_exe_tensor *t)
{
    int32_t n = step->num_inputs;
    int32_t *ids = nxe_alloc(sizeof(int32_t) * (size_t)(n + 1));
    nxe_value *values = nxe_alloc(sizeof(nxe_value) * (size_t)(n + 1));
    if (!ids || !values) {
        nxe_free(ids);
        nxe_free(values);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    }
    memcpy(ids, step->input_ids, sizeof(int32_t) * (size_t)n);
    memcpy(values, step->input_values, sizeof(nxe_value) * (size_t)n);
    ids[n] = residual;
    values[n] = (nxe_value){.dtype = t->dtype, .ndim = t->ndim, .quant = &t->quant};
    memcpy(values[n].shape, t->shape, sizeof values[n].shape);
    nxe_free(step->input_ids);
    nxe_free(step->input_values);
    step->input_ids = ids;
    step->input_values = values;
    step->fused.residual_input = n;
    step->num_inputs = n + 1;
    return NXE_OK;
}

/* Tries to fold step u, the only reader of step s's output, into s. */
static nxe_status try_fold(nxe_executable *exe, tensor_uses *uses, int32_t s, int32_t u,
                           bool *folded)
{
    nxe_exe_step *step = &exe->steps[s], *next = &exe->steps[u];
    nxe_fused_epilogue *fused = &step->fused;
    const int32_t produced = step->output_ids[0];
    const nxe_exe_tensor *t = &exe->tensors[produced];
    *folded = false;
    if (next->num_outputs != 1 || !same_shape(t, &exe->tensors[next->output_ids[0]]))
        return NXE_OK;
    nxe_epilogue activation = fused->epilogue;
    if (next->def->as_activation && fused->epilogue.activation == NXE_ACTIVATION_NONE &&
        next->def->as_activation(next->params, next->input_values, next->num_inputs,
                                 &activation)) {
        fused->epilogue = activation;
    } else if (strcmp(next->def->info.name, "Mul") == 0 && next->num_inputs == 2 &&
               fused->epilogue.activation == NXE_ACTIVATION_NONE && fused->residual_input < 0) {
        /* A product by a constant scalar scales the whole result so far. */
        int32_t other = next->input_ids[0] == produced ? next->input_ids[1] : next->input_ids[0];
        if (other < 0 || other == produced)
            return NXE_OK;
        const nxe_exe_tensor *factor = &exe->tensors[other];
        int64_t count;
        if (factor->kind != NXE_TENSOR_CONSTANT || factor->dtype != NXE_DTYPE_F32 ||
            !nxe_shape_numel(factor->ndim, factor->shape, &count) || count != 1)
            return NXE_OK;
        const float value = *(const float *)factor->storage;
        fused->epilogue.scale *= value;
        fused->epilogue.bias_scale *= value;
        uses->consumers[other]--; /* the factor is read no more */
    } else if (strcmp(next->def->info.name, "Add") == 0 && fused->residual_input < 0 &&
               next->num_inputs == 2) {
        int32_t other = next->input_ids[0] == produced ? next->input_ids[1] : next->input_ids[0];
        if (other < 0 || other == produced)
            return NXE_OK;
        const nxe_exe_tensor *r = &exe->tensors[other];
        /* The residual must exist when step s runs and keep its value until then. */
        if (!same_shape(t, r) || r->kind == NXE_TENSOR_VARIABLE || uses->producer[other] >= s)
            return NXE_OK;
        nxe_status status = append_input(step, other, r);
        if (status != NXE_OK)
            return status;
        uses->consumer[other] = s; /* read by step s now, instead of step u */
        fused->epilogue.residual_before_activation =
            fused->epilogue.activation == NXE_ACTIVATION_NONE;
    } else {
        return NXE_OK;
    }
    /* Step s now writes step u's output; u goes. */
    step->output_ids[0] = next->output_ids[0];
    step->output_values[0] = next->output_values[0];
    uses->producer[next->output_ids[0]] = s;
    uses->consumers[produced] = 0;
    exe->tensors[produced].in_arena = false;
    exe->data[produced] = NULL;
    nxe_log(NXE_LOG_DEBUG, "prepare: op '%s' ('%s') runs in the epilogue of '%s' ('%s')",
            next->def->info.name, next->op_name, step->def->info.name, step->op_name);
    nxe_free(next->op_name);
    nxe_free(next->params);
    nxe_free(next->input_ids);
    nxe_free(next->output_ids);
    nxe_free(next->input_values);
    nxe_free(next->output_values);
    nxe_free(next->prepared);
    memset(next, 0, sizeof *next);
    *folded = true;
    return NXE_OK;
}

static nxe_status fold_epilogues(nxe_executable *exe)
{
    const size_t bytes = sizeof(int32_t) * (size_t)(exe->num_tensors + 1);
    tensor_uses uses = {nxe_alloc(bytes), nxe_alloc(bytes), nxe_alloc(bytes)};
    nxe_status status = NXE_OK;
    if (!uses.consumers || !uses.consumer || !uses.producer)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    else
        count_uses(exe, &uses);
    for (int32_t s = 0; status == NXE_OK && s < exe->num_steps; s++) {
        bool folded = true;
        while (status == NXE_OK && folded) {
            folded = false;
            nxe_exe_step *step = &exe->steps[s];
            if (!step->def || !step->prepared || step->num_outputs != 1)
                break;
            const int32_t produced = step->output_ids[0];
            /* Epilogues act on f32 results; integer GEMMs fold nothing. */
            if (exe->tensors[produced].kind != NXE_TENSOR_TRANSIENT ||
                exe->tensors[produced].dtype != NXE_DTYPE_F32)
                break;
            /* The only reader, which comes later in the order. */
            if (uses.consumers[produced] == 1 && uses.consumer[produced] > s)
                status = try_fold(exe, &uses, s, uses.consumer[produced], &folded);
        }
    }
    /* Close the gaps folded steps left. */
    int32_t kept = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        if (exe->steps[s].def)
            exe->steps[kept++] = exe->steps[s];
    for (int32_t s = kept; s < exe->num_steps; s++)
        memset(&exe->steps[s], 0, sizeof exe->steps[s]);
    exe->num_steps = kept;
    nxe_free(uses.consumers);
    nxe_free(uses.consumer);
    nxe_free(uses.producer);
    return status;
}

static nxe_status prepare_steps(nxe_executable *exe)
{
    const nxe_prepare_context context = {nxe_kernels(), exe->relax_precision};
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        step->fused = (nxe_fused_epilogue){
            .epilogue = {.scale = 1.0f, .activation = NXE_ACTIVATION_NONE, .bias_scale = 1.0f},
            .residual_input = -1,
        };
        if (!step->def->prepare)
            continue;
        /* Constants are the only inputs with data at this point. */
        for (int32_t j = 0; j < step->num_inputs; j++) {
            int32_t id = step->input_ids[j];
            step->input_values[j].data =
                id >= 0 && exe->tensors[id].kind == NXE_TENSOR_CONSTANT ? exe->tensors[id].storage
                                                                        : NULL;
        }
        size_t workspace = 0;
        nxe_status status = step->def->prepare(step->params, step->input_values,
                                               step->num_inputs, &context, &step->prepared,
                                               &workspace);
        if (step->prepared && workspace > exe->workspace_bytes)
            exe->workspace_bytes = workspace;
        for (int32_t j = 0; j < step->num_inputs; j++)
            step->input_values[j].data = NULL;
        if (status != NXE_OK) {
            nxe_error_prefix("prepare: op '%s' ('%s'): ", step->def->info.name, step->op_name);
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
        status = fold_epilogues(exe);
    if (status == NXE_OK)
        status = nxe_executable_plan_arena(exe);
    return status;
}
