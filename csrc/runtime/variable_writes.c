/* variable_writes.c — in-graph state in a plan (docs/architecture.md, "In-graph state"). A step
 * that writes a VARIABLE which it or an earlier step reads is an update: the readers at or
 * before it read the value the run started with. So that no kernel reads the variable while it
 * writes it, and so that later passes (epilogue folding moves a write into an earlier step) can
 * never move the write before a reader, the step writes a temporary in the arena instead and an
 * Assign step right after it copies the temporary into the variable (an Assign writing the
 * variable needs none). A ScatterND of the variable whose result only an Assign back into the
 * variable stores (a key/value cache append) writes the variable's storage in place. Run by
 * nxe_executable_prepare before folding, for compiled and loaded plans alike; a written binary
 * keeps the plan without these steps. Linear in the plan's size (a crafted binary may hold
 * millions of steps). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/executable_internal.h"
#include "runtime/variable_writes.h"

/* Per tensor: the first step reading it and the step writing it (INT32_MAX and -1 for none),
 * of the plan as it came. */
typedef struct plan_facts {
    int32_t *first_read;
    int32_t *writer;
} plan_facts;

static nxe_status facts_build(const nxe_executable *exe, plan_facts *facts)
{
    facts->first_read = nxe_alloc(sizeof(int32_t) * ((size_t)exe->num_tensors + 1));
    facts->writer = nxe_alloc(sizeof(int32_t) * ((size_t)exe->num_tensors + 1));
    if (!facts->first_read || !facts->writer)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    for (int32_t i = 0; i < exe->num_tensors; i++)
        facts->first_read[i] = INT32_MAX, facts->writer[i] = -1;
    for (int32_t s = exe->num_steps - 1; s >= 0; s--) {
        const nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++)
            if (step->input_ids[j] >= 0)
                facts->first_read[step->input_ids[j]] = s;
        for (int32_t j = 0; j < step->num_outputs; j++)
            facts->writer[step->output_ids[j]] = s;
    }
    return NXE_OK;
}

/* Whether step `s` writes variable `id` that a step at or before it reads, and is not an
 * Assign (which copies with memmove, and which no pass folds into an earlier step). */
static bool is_update(const nxe_executable *exe, const plan_facts *facts, int32_t s, int32_t id)
{
    return exe->tensors[id].kind == NXE_TENSOR_VARIABLE && facts->first_read[id] <= s &&
           strcmp(nxe_node_type(&exe->steps[s].node), "Assign") != 0;
}

static int32_t count_updates(const nxe_executable *exe, const plan_facts *facts)
{
    int32_t count = 0;
    for (int32_t s = 0; s < exe->num_steps; s++)
        for (int32_t j = 0; j < exe->steps[s].num_outputs; j++)
            count += is_update(exe, facts, s, exe->steps[s].output_ids[j]);
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

/* Whether step `s` is ScatterND(v, indices, updates) -> t and v's writer is a later
 * Assign(t) -> v with no step reading v in between (`next_read`: the first step after `s`
 * reading each tensor, INT32_MAX for none): then t can live in v's storage. */
static bool is_cache_append(const nxe_executable *exe, const plan_facts *facts,
                            const int32_t *next_read, int32_t s)
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
    const int32_t a = facts->writer[v];
    return a > s && next_read[v] > a && strcmp(nxe_node_type(&exe->steps[a].node), "Assign") == 0 &&
           exe->steps[a].input_ids[0] == t;
}

/* ScatterND(v, ...) -> t then Assign(t) -> v: t is placed in v's storage, so ScatterND writes
 * only the updated slices (the key/value cache append) and the Assign copies nothing. */
static nxe_status place_cache_appends(nxe_executable *exe, const plan_facts *facts)
{
    int32_t *next_read = nxe_alloc(sizeof(int32_t) * ((size_t)exe->num_tensors + 1));
    if (!next_read)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "prepare: out of memory");
    for (int32_t i = 0; i < exe->num_tensors; i++)
        next_read[i] = INT32_MAX;
    for (int32_t s = exe->num_steps - 1; s >= 0; s--) {
        const nxe_exe_step *step = &exe->steps[s];
        if (is_cache_append(exe, facts, next_read, s)) {
            const int32_t v = step->input_ids[0], t = step->output_ids[0];
            exe->tensors[t].in_arena = false;
            exe->data[t] = exe->tensors[v].storage;
            nxe_log(NXE_LOG_DEBUG, "prepare: op '%s' updates variable '%s' in place",
                    step->node.name, exe->tensors[v].name);
        }
        for (int32_t j = 0; j < step->num_inputs; j++)
            if (step->input_ids[j] >= 0)
                next_read[step->input_ids[j]] = s;
    }
    nxe_free(next_read);
    return NXE_OK;
}

/* The temporaries and Assign steps of every update (the plan's first comment). */
static nxe_status stage_updates(nxe_executable *exe, const plan_facts *facts)
{
    const int32_t updates = count_updates(exe, facts);
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
        for (int32_t j = 0; j < exe->steps[s].num_outputs; j++, k++)
            marked[k] = is_update(exe, facts, s, exe->steps[s].output_ids[j]);
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

nxe_status nxe_executable_stage_variable_writes(nxe_executable *exe)
{
    plan_facts facts = {0};
    nxe_status status = facts_build(exe, &facts);
    if (status == NXE_OK)
        status = place_cache_appends(exe, &facts);
    if (status == NXE_OK)
        status = stage_updates(exe, &facts);
    nxe_free(facts.first_read);
    nxe_free(facts.writer);
    return status;
}
