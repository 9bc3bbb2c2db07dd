/* fold_epilogues.c — the pass that folds what follows a prepared f32 step into its epilogue:
 * activations, products by a constant scalar and residual additions, when the step's result
 * has no other reader. A folded step is removed, so its intermediate tensor never reaches
 * memory. Runs after the steps are prepared for this process's kernels (the epilogue is a
 * property of the machine), before the arena is planned. */
#include <string.h>

#include "transform/fold_epilogues.h"

/* The plan being rewritten. */
typedef struct fold_plan {
    nxe_exe_tensor *tensors;
    int32_t num_tensors;
    nxe_exe_step *steps;
    int32_t num_steps;
} fold_plan;

/* Per tensor: how many step inputs read it, the step of the last of them and the step that
 * writes it (-1: none). Counted once, then kept up to date as steps fold. */
typedef struct tensor_uses {
    int32_t *consumers;
    int32_t *consumer;
    int32_t *producer;
} tensor_uses;

static void count_uses(const fold_plan *exe, tensor_uses *uses)
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
static nxe_status try_fold(fold_plan *exe, tensor_uses *uses, int32_t s, int32_t u, bool *folded)
{
    nxe_exe_step *step = &exe->steps[s], *next = &exe->steps[u];
    nxe_fused_epilogue *fused = &step->fused;
    const int32_t produced = step->output_ids[0];
    const nxe_exe_tensor *t = &exe->tensors[produced];
    *folded = false;
    if (next->num_outputs != 1 || !same_shape(t, &exe->tensors[next->output_ids[0]]))
        return NXE_OK;
    nxe_epilogue activation = fused->epilogue;
    if (next->node.def->as_activation && fused->epilogue.activation == NXE_ACTIVATION_NONE &&
        next->node.def->as_activation(next->params, next->input_values, next->num_inputs,
                                      &activation)) {
        fused->epilogue = activation;
    } else if (strcmp(nxe_node_type(&next->node), "Mul") == 0 && next->num_inputs == 2 &&
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
    } else if (strcmp(nxe_node_type(&next->node), "Add") == 0 && fused->residual_input < 0 &&
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
    nxe_log(NXE_LOG_DEBUG, "prepare: op '%s' ('%s') runs in the epilogue of '%s' ('%s')",
            nxe_node_type(&next->node), next->node.name, nxe_node_type(&step->node),
            step->node.name);
    nxe_exe_step_clear(next);
    *folded = true;
    return NXE_OK;
}

static nxe_status fold_all(fold_plan *exe)
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
            if (!step->node.def || !step->prepared || step->num_outputs != 1)
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
        if (exe->steps[s].node.def)
            exe->steps[kept++] = exe->steps[s];
    for (int32_t s = kept; s < exe->num_steps; s++)
        memset(&exe->steps[s], 0, sizeof exe->steps[s]);
    exe->num_steps = kept;
    nxe_free(uses.consumers);
    nxe_free(uses.consumer);
    nxe_free(uses.producer);
    return status;
}

nxe_status nxe_fold_epilogues(nxe_exe_tensor *tensors, int32_t num_tensors, nxe_exe_step *steps,
                              int32_t *num_steps)
{
    fold_plan plan = {tensors, num_tensors, steps, *num_steps};
    nxe_status status = fold_all(&plan);
    *num_steps = plan.num_steps;
    return status;
}
