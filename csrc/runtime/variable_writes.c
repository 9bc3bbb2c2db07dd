/* variable_writes.c — in-graph state in a plan (docs/architecture.md, "In-graph state"). A step
 * that writes a VARIABLE which it or an earlier step reads is an update: the readers at or
 * before it read the value the run started with. So that no kernel reads the variable while it
 * writes it, and so that later passes (epilogue folding moves a write into an earlier step) can
 * never move the write before a reader, the step writes a temporary in the arena instead and an
 * Assign step right after it copies the temporary into the variable (an Assign writing the
 * variable needs none). A ScatterND of the variable whose result only an Assign back into the
 * variable stores (a key/value cache append) writes the variable's storage in place. Run by nxe_executable_prepare
 * before folding, for compiled and loaded plans alike; a written binary keeps the plan without
 * these steps. */
#include <stdio.h>
#include <string.h>

#include "runtime/executable_internal.h"
#include "runtime/variable_writes.h"

/* Whether step `s` writes variable `id` that a step at or before it reads, and is not an
 * Assign (which copies with memmove, and which no pass folds into an earlier step). */
static bool is_update(const nxe_executable *exe, int32_t s, int32_t id)
{
    if (strcmp(nxe_node_type(&exe->steps[s].node), "Assign") == 0)
        return false;
    for (int32_t r = 0; r <= s; r++)
        for (int32_t j = 0; j < exe->steps[r].num_inputs; j++)
            if (exe->steps[r].input_ids[j] == id)
                return true;
    return false;
}

static int32_t count_updates(const nxe_executable *exe)
{
    int32_t count = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        for (int32_t j = 0; j < exe->steps[s].num_outputs; j++) {
            const int32_t id = exe->steps[s].output_ids[j];
            count += exe->tensors[id].kind == NXE_TENSOR_VARIABLE && is_update(exe, s, id);
        }
    return count;
}

/* Points every step's value descriptors at the quantization of their tensors (again, after the
 * tensor array moved). */
static void repoint_quant(nxe_executable *exe)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++)
            step->input_values[j].quant =
                step->input_ids[j] >= 0 ? &exe->tensors[step->input_ids[j]].quant : &nxe_no_quant;
        for (int32_t j = 0; j < step->num_outputs; j++)
            step->output_values[j].quant = &exe->tensors[step->output_ids[j]].quant;
    }
}

/* Tensor `temp` becomes a transient copy of variable `id`'s facts. */
static nxe_status make_temporary(nxe_executable *exe, int32_t id, int32_t temp)
{
    const nxe_exe_tensor *v = &exe->tensors[id];
    nxe_exe_tensor *t = &exe->tensors[temp];
    *t = (nxe_exe_tensor){.kind = NXE_TENSOR_TRANSIENT,
                          .dtype = v->dtype,
                          .ndim = v->ndim,
                          .quant = v->quant,
                          .bytes = v->bytes,
                          .in_arena = true,
                          .constant = -1};
    memcpy(t->shape, v->shape, sizeof t->shape);
    size_t length = strlen(v->name) + sizeof ":next";
    t->name = nxe_alloc(length);
    if (!t->name)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    snprintf(t->name, length, "%s:next", v->name);
    if (v->quant.num_scales > 0) {
        t->scales = nxe_alloc(sizeof(float) * (size_t)v->quant.num_scales);
        if (!t->scales)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
        memcpy(t->scales, v->quant.scales, sizeof(float) * (size_t)v->quant.num_scales);
        t->quant.scales = t->scales;
    }
    return NXE_OK;
}

/* Step `at` (zeroed) becomes Assign(temp) -> id, named after the step `writer`. */
static nxe_status make_assign(nxe_executable *exe, const nxe_exe_step *writer, int32_t at,
                              int32_t temp, int32_t id)
{
    const nxe_op_def *def = nxe_op_def_find("Assign");
    if (!def)
        return nxe_error(NXE_ERROR_INTERNAL, "prepare: the Assign op is not registered");
    nxe_exe_step *step = &exe->steps[at];
    size_t length = strlen(writer->node.name) + sizeof ":assign";
    char *name = nxe_alloc(length);
    if (!name)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    snprintf(name, length, "%s:assign", writer->node.name);
    nxe_status status = nxe_node_init(&step->node, def, name);
    nxe_free(name);
    if (status != NXE_OK)
        return status;
    step->num_inputs = step->num_outputs = 1;
    step->input_ids = nxe_alloc(sizeof(int32_t));
    step->output_ids = nxe_alloc(sizeof(int32_t));
    step->input_values = nxe_alloc_zeroed(sizeof(nxe_value));
    step->output_values = nxe_alloc_zeroed(sizeof(nxe_value));
    step->params = nxe_alloc_zeroed(def->params_size);
    if (!step->input_ids || !step->output_ids || !step->input_values || !step->output_values ||
        !step->params)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    step->input_ids[0] = temp;
    step->output_ids[0] = id;
    const nxe_exe_tensor *t = &exe->tensors[id];
    nxe_value value = {.dtype = t->dtype, .ndim = t->ndim, .quant = &nxe_no_quant};
    memcpy(value.shape, t->shape, sizeof value.shape);
    step->input_values[0] = step->output_values[0] = value;
    step->fused = (nxe_fused_epilogue){
        .epilogue = {.scale = 1.0f, .activation = NXE_ACTIVATION_NONE, .bias_scale = 1.0f},
        .residual_input = -1,
    };
    return def->infer(&step->node, step->input_values, 1, step->output_values, 1, step->params);
}

/* Whether step `s` is ScatterND(v, indices, updates) -> t followed, at step `a`, by
 * Assign(t) -> v with no step between them touching v: then t can live in v's storage. */
static bool is_cache_append(const nxe_executable *exe, int32_t s, int32_t *assign)
{
    const nxe_exe_step *step = &exe->steps[s];
    if (strcmp(nxe_node_type(&step->node), "ScatterND") != 0 || step->num_inputs != 3 ||
        step->num_outputs != 1)
        return false;
    const int32_t v = step->input_ids[0], t = step->output_ids[0];
    if (v < 0 || exe->tensors[v].kind != NXE_TENSOR_VARIABLE || !exe->tensors[v].storage ||
        step->input_ids[1] == v || step->input_ids[2] == v ||
        exe->tensors[t].kind != NXE_TENSOR_TRANSIENT || !exe->tensors[t].in_arena)
        return false;
    for (int32_t a = s + 1; a < exe->num_steps; a++) {
        const nxe_exe_step *other = &exe->steps[a];
        bool reads_v = false, writes_v = false;
        for (int32_t j = 0; j < other->num_inputs; j++)
            reads_v = reads_v || other->input_ids[j] == v;
        for (int32_t j = 0; j < other->num_outputs; j++)
            writes_v = writes_v || other->output_ids[j] == v;
        if (reads_v)
            return false; /* would see the appended rows before the write */
        if (!writes_v)
            continue;
        *assign = a;
        return strcmp(nxe_node_type(&other->node), "Assign") == 0 && other->input_ids[0] == t;
    }
    return false;
}

/* ScatterND(v, ...) -> t then Assign(t) -> v: t is placed in v's storage, so ScatterND writes
 * only the updated slices (the key/value cache append) and the Assign copies nothing. */
static void place_cache_appends(nxe_executable *exe)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        int32_t assign = -1;
        if (!is_cache_append(exe, s, &assign))
            continue;
        const int32_t v = exe->steps[s].input_ids[0], t = exe->steps[s].output_ids[0];
        exe->tensors[t].in_arena = false;
        exe->data[t] = exe->tensors[v].storage;
        nxe_log(NXE_LOG_DEBUG, "prepare: op '%s' updates variable '%s' in place",
                exe->steps[s].node.name, exe->tensors[v].name);
    }
}

nxe_status nxe_executable_stage_variable_writes(nxe_executable *exe)
{
    place_cache_appends(exe);
    const int32_t updates = count_updates(exe);
    if (updates == 0)
        return NXE_OK;
    const size_t tensors = (size_t)exe->num_tensors + (size_t)updates;
    const size_t steps = (size_t)exe->num_steps + (size_t)updates;
    nxe_exe_tensor *new_tensors = nxe_alloc_zeroed(sizeof(nxe_exe_tensor) * (tensors + 1));
    void **new_data = nxe_alloc_zeroed(sizeof(void *) * (tensors + 1));
    nxe_exe_step *new_steps = nxe_alloc_zeroed(sizeof(nxe_exe_step) * (steps + 1));
    if (!new_tensors || !new_data || !new_steps) {
        nxe_free(new_tensors);
        nxe_free(new_data);
        nxe_free(new_steps);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    }
    /* Moved as they are: nothing but the steps' descriptors points into these arrays. */
    memcpy(new_tensors, exe->tensors, sizeof(nxe_exe_tensor) * (size_t)exe->num_tensors);
    memcpy(new_data, exe->data, sizeof(void *) * (size_t)exe->num_tensors);
    nxe_free(exe->tensors);
    nxe_free(exe->data);
    exe->tensors = new_tensors;
    exe->data = new_data;
    /* Every update is decided on the plan as it was, before any Assign is added: marked[k]
     * for the k-th output of the plan, counting outputs step by step. */
    size_t outputs = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        outputs += (size_t)exe->steps[s].num_outputs;
    bool *marked = nxe_alloc_zeroed(sizeof(bool) * (outputs + 1));
    if (!marked) {
        nxe_free(new_steps);
        repoint_quant(exe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    }
    size_t k = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        for (int32_t j = 0; j < exe->steps[s].num_outputs; j++, k++) {
            const int32_t id = exe->steps[s].output_ids[j];
            marked[k] = exe->tensors[id].kind == NXE_TENSOR_VARIABLE && is_update(exe, s, id);
        }
    nxe_exe_step *old_steps = exe->steps;
    const int32_t old_count = exe->num_steps;
    exe->steps = new_steps;
    exe->num_steps = 0;
    nxe_status status = NXE_OK;
    k = 0;
    for (int32_t s = 0; s < old_count; s++) {
        const int32_t writer = exe->num_steps++;
        exe->steps[writer] = old_steps[s];
        /* After a failure the remaining steps are only moved, so that release frees them. */
        for (int32_t j = 0; j < exe->steps[writer].num_outputs; j++, k++) {
            if (status != NXE_OK || !marked[k])
                continue;
            const int32_t id = exe->steps[writer].output_ids[j], temp = exe->num_tensors++;
            status = make_temporary(exe, id, temp);
            if (status != NXE_OK)
                continue;
            exe->steps[writer].output_ids[j] = temp;
            status = make_assign(exe, &exe->steps[writer], exe->num_steps++, temp, id);
        }
    }
    nxe_free(old_steps);
    nxe_free(marked);
    repoint_quant(exe);
    return status;
}
