/* binary_loader.c — the small executor's loader: maps a compiled binary (.nxb), checks every
 * byte of its plan and turns it into an executable without the graph builder: the nodes it
 * decodes go straight to the ops' shape rules, which re-derive each step's params. Constants
 * are used in place from the mapping. Only a binary for another ISA or kernel ABI goes through
 * the model reader and the compiler (allow_recompile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/binary.h"
#include "runtime/device.h"

typedef struct load_request {
    int32_t num_threads;
    bool verify;
    bool allow_recompile;
    uint64_t staging_bytes;
    nxe_limits limits;    /* resolved */
    nxe_context *context; /* custom ops the plan may name; NULL = built-ins only */
    /* Where it runs: checked; NULL = the default CPU. */
    const nxe_device *device;
} load_request;

typedef struct plan_buffer {
    uint64_t offset; /* in DATA */
    uint64_t size;
} plan_buffer;

/* What the decoder keeps beside the executable while it checks cross-references. */
typedef struct plan_state {
    const nxe_section *data_section;
    const uint8_t *data; /* DATA's first byte */
    plan_buffer *buffers;
    int32_t num_buffers;
    int32_t *buffer_of; /* per tensor: buffer index or -1 */
    bool *settled;      /* per tensor: dtype, rank and every dim known */
    bool *produced;     /* per tensor: written by a step decoded so far */
    bool *is_io;        /* per tensor: listed as a graph input or output */
} plan_state;

static void plan_state_free(plan_state *state)
{
    nxe_free(state->buffers);
    nxe_free(state->buffer_of);
    nxe_free(state->settled);
    nxe_free(state->produced);
    nxe_free(state->is_io);
}

static nxe_status out_of_memory(void)
{
    return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* ---- buffers ---- */

static int compare_buffers(const void *a, const void *b)
{
    const plan_buffer *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static nxe_status read_buffers(nxe_reader *r, plan_state *state)
{
    uint32_t count;
    nxe_status status = nxe_read_count(r, NXE_LIMIT_TENSORS, 16, &count);
    if (status != NXE_OK)
        return status;
    state->buffers = nxe_alloc(sizeof(plan_buffer) * ((size_t)count + 1));
    plan_buffer *sorted = nxe_alloc(sizeof(plan_buffer) * ((size_t)count + 1));
    if (!state->buffers || !sorted) {
        nxe_free(sorted);
        return out_of_memory();
    }
    state->num_buffers = (int32_t)count;
    uint64_t data_size = state->data_section->size;
    for (uint32_t b = 0; b < count && status == NXE_OK; b++) {
        plan_buffer *buffer = &state->buffers[b];
        status = nxe_read_u64(r, &buffer->offset);
        if (status == NXE_OK)
            status = nxe_read_u64(r, &buffer->size);
        if (status != NXE_OK)
            break;
        if (buffer->offset % NXE_PLAN_DATA_ALIGNMENT != 0)
            status = nxe_reader_error(r, "buffer %u at DATA offset %llu is not %u-byte aligned", b,
                                      (unsigned long long)buffer->offset, NXE_PLAN_DATA_ALIGNMENT);
        else if (buffer->offset > data_size || buffer->size > data_size - buffer->offset)
            status =
                nxe_reader_error(r,
                                 "buffer %u ([%llu, +%llu)) runs past the end of the "
                                 "%llu-byte DATA section",
                                 b, (unsigned long long)buffer->offset,
                                 (unsigned long long)buffer->size, (unsigned long long)data_size);
        sorted[b] = *buffer;
    }
    if (status == NXE_OK && count > 1) {
        qsort(sorted, count, sizeof *sorted, compare_buffers);
        uint64_t end = 0;
        for (uint32_t b = 0; b < count && status == NXE_OK; b++) {
            if (sorted[b].size == 0)
                continue;
            if (sorted[b].offset < end)
                status = nxe_reader_error(r, "buffers overlap in DATA at offset %llu",
                                          (unsigned long long)sorted[b].offset);
            end = sorted[b].offset + sorted[b].size;
        }
    }
    nxe_free(sorted);
    return status;
}

/* ---- tensors ---- */

/* The tensor record, moved into the plan's tensor; `settled` when it has a definite dtype,
 * rank and dims. Per-channel kernels index scales by channel: a settled tensor's scale count
 * must be its channel count. */
static nxe_status read_tensor_record(nxe_reader *r, nxe_exe_tensor *t, bool *settled)
{
    nxe_tensor_record record = {0};
    nxe_status status = nxe_tensor_record_decode(r, &record);
    if (status != NXE_OK)
        return status;
    t->name = record.name;
    t->kind = record.kind;
    t->dtype = record.dtype;
    t->ndim = record.ndim;
    memcpy(t->shape, record.shape, sizeof t->shape);
    t->quant = record.quant;
    t->scales = record.scales;
    *settled = nxe_dtype_valid(t->dtype) && t->ndim >= 0;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            *settled = false;
    const nxe_quant *quant = &t->quant;
    if (quant->type == NXE_QUANT_SYMMETRIC_PER_CHANNEL && *settled &&
        (quant->axis < 0 || quant->axis >= t->ndim || t->shape[quant->axis] != quant->num_scales))
        return nxe_reader_error(r,
                                "tensor '%s' has %d per-channel scales on axis %d, which "
                                "does not match its shape",
                                t->name, quant->num_scales, quant->axis);
    return NXE_OK;
}

static nxe_status read_placement(nxe_reader *r, nxe_executable *exe, plan_state *state, int32_t i)
{
    nxe_exe_tensor *t = &exe->tensors[i];
    uint8_t placement;
    nxe_status status = nxe_read_u8(r, &placement);
    if (status != NXE_OK)
        return status;
    state->buffer_of[i] = -1;
    if (placement == NXE_PLAN_NONE)
        return NXE_OK;
    if (placement == NXE_PLAN_ARENA) {
        if (t->kind != NXE_TENSOR_TRANSIENT)
            return nxe_reader_error(r, "tensor '%s' of kind %d is placed in the arena", t->name,
                                    t->kind);
        t->in_arena = true;
        exe->transient_bytes += t->bytes;
        return NXE_OK;
    }
    if (placement != NXE_PLAN_DATA)
        return nxe_reader_error(r, "tensor '%s' has unknown placement %u", t->name, placement);
    uint32_t buffer;
    status = nxe_read_u32(r, &buffer);
    if (status != NXE_OK)
        return status;
    if (t->kind != NXE_TENSOR_CONSTANT && t->kind != NXE_TENSOR_VARIABLE)
        return nxe_reader_error(r, "tensor '%s' of kind %d is given data", t->name, t->kind);
    if (buffer >= (uint32_t)state->num_buffers)
        return nxe_reader_error(r, "tensor '%s' refers to buffer %u; DATA holds %d", t->name,
                                buffer, state->num_buffers);
    if (state->buffers[buffer].size != t->bytes)
        return nxe_reader_error(r, "tensor '%s' has %zu bytes but its buffer %u has %llu", t->name,
                                t->bytes, buffer, (unsigned long long)state->buffers[buffer].size);
    state->buffer_of[i] = (int32_t)buffer;
    return NXE_OK;
}

static nxe_status read_tensor(nxe_reader *r, nxe_executable *exe, plan_state *state, int32_t i)
{
    nxe_exe_tensor *t = &exe->tensors[i];
    bool settled = false;
    nxe_status status = read_tensor_record(r, t, &settled);
    uint64_t bytes = 0;
    if (status == NXE_OK)
        status = nxe_read_u64(r, &bytes);
    if (status != NXE_OK)
        return status;
    uint64_t expected = 0;
    if (settled) {
        size_t product;
        if (!nxe_shape_bytes(t->dtype, t->ndim, t->shape, &product) ||
            product > NXE_LIMIT_TENSOR_BYTES)
            return nxe_reader_error(r, "tensor '%s' is larger than the %llu-byte limit", t->name,
                                    (unsigned long long)NXE_LIMIT_TENSOR_BYTES);
        expected = product;
    }
    /* A tensor no step uses records 0 bytes. */
    if (bytes != 0 && bytes != expected)
        return nxe_reader_error(r, "tensor '%s' records %llu bytes; its dtype and shape make %llu",
                                t->name, (unsigned long long)bytes, (unsigned long long)expected);
    t->bytes = (size_t)bytes;
    state->settled[i] = settled;
    return read_placement(r, exe, state, i);
}

static nxe_status read_tensors(nxe_reader *r, nxe_executable *exe, plan_state *state)
{
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        nxe_status status = read_tensor(r, exe, state, i);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* ---- steps ---- */

static nxe_status read_step_tensors(nxe_reader *r, nxe_executable *exe, plan_state *state,
                                    nxe_exe_step *step, bool outputs)
{
    const char *type = nxe_node_type(&step->node), *op_name = step->node.name;
    const char *what = outputs ? "outputs" : "inputs";
    int32_t **ids = outputs ? &step->output_ids : &step->input_ids;
    int32_t *count = outputs ? &step->num_outputs : &step->num_inputs;
    nxe_status status = nxe_ids_decode(r, &step->node, outputs, ids, count);
    if (status != NXE_OK)
        return status;
    nxe_value **values = outputs ? &step->output_values : &step->input_values;
    *values = nxe_alloc_zeroed(sizeof(nxe_value) * ((size_t)*count + 1));
    if (!*values)
        return out_of_memory();
    for (int32_t j = 0; j < *count; j++) {
        const nxe_op_param_info *param = nxe_node_param(&step->node, outputs, j);
        int32_t id = (*ids)[j];
        nxe_value *value = &(*values)[j];
        if (id == -1 && !outputs && param->optional) {
            *value = (nxe_value){.dtype = NXE_DTYPE_NONE, .quant = &nxe_no_quant};
            continue;
        }
        if (id < 0 || id >= exe->num_tensors)
            return nxe_reader_error(r, "op '%s' ('%s'): %s %d is tensor %d; the plan has %d", type,
                                    op_name, what, j, id, exe->num_tensors);
        const nxe_exe_tensor *t = &exe->tensors[id];
        if (!state->settled[id] || !(param->dtypes & NXE_MASK(t->dtype)))
            return nxe_reader_error(r,
                                    "op '%s' ('%s'): %s %d ('%s', tensor '%s') has dtype %s "
                                    "or an unsettled shape the schema does not accept",
                                    type, op_name, what, j, param->name, t->name,
                                    nxe_dtype_name(t->dtype));
        if (outputs) {
            if (t->kind == NXE_TENSOR_INPUT || t->kind == NXE_TENSOR_CONSTANT)
                return nxe_reader_error(r, "op '%s' ('%s') writes %s tensor '%s'", type, op_name,
                                        t->kind == NXE_TENSOR_INPUT ? "input" : "constant",
                                        t->name);
            if (state->produced[id])
                return nxe_reader_error(r,
                                        "op '%s' ('%s') writes tensor '%s', which an earlier "
                                        "step already wrote",
                                        type, op_name, t->name);
            state->produced[id] = true;
        } else if ((t->kind == NXE_TENSOR_TRANSIENT || t->kind == NXE_TENSOR_OUTPUT) &&
                   !state->produced[id]) {
            return nxe_reader_error(r,
                                    "op '%s' ('%s') reads tensor '%s' before any step writes "
                                    "it",
                                    type, op_name, t->name);
        }
        *value = (nxe_value){.dtype = t->dtype, .ndim = t->ndim, .quant = &t->quant};
        memcpy(value->shape, t->shape, sizeof value->shape);
    }
    return NXE_OK;
}

static nxe_status read_steps(nxe_reader *r, nxe_executable *exe, plan_state *state)
{
    uint32_t count;
    nxe_status status = nxe_read_count(r, NXE_LIMIT_OPS, 20, &count);
    if (status != NXE_OK)
        return status;
    nxe_free(exe->steps);
    exe->num_steps = 0;
    exe->steps = nxe_alloc_zeroed(sizeof(nxe_exe_step) * ((size_t)count + 1));
    if (!exe->steps)
        return out_of_memory();
    exe->num_steps = (int32_t)count;
    for (uint32_t s = 0; s < count && status == NXE_OK; s++) {
        nxe_exe_step *step = &exe->steps[s];
        status = nxe_node_record_decode(r, &step->node);
        if (status == NXE_OK)
            status = read_step_tensors(r, exe, state, step, false);
        if (status == NXE_OK)
            status = read_step_tensors(r, exe, state, step, true);
    }
    return status;
}

/* ---- inputs, outputs and the final cross-checks ---- */

static nxe_status read_io(nxe_reader *r, nxe_executable *exe, plan_state *state, bool outputs)
{
    const char *what = outputs ? "output" : "input";
    int32_t kind = outputs ? NXE_TENSOR_OUTPUT : NXE_TENSOR_INPUT;
    uint32_t count;
    nxe_status status = nxe_read_count(r, (uint32_t)exe->num_tensors, 4, &count);
    if (status != NXE_OK)
        return status;
    int32_t *ids = nxe_alloc(sizeof(int32_t) * ((size_t)count + 1));
    if (!ids)
        return out_of_memory();
    if (outputs) {
        exe->output_ids = ids;
        exe->num_outputs = (int32_t)count;
    } else {
        exe->input_ids = ids;
        exe->num_inputs = (int32_t)count;
    }
    for (uint32_t i = 0; i < count; i++) {
        status = nxe_read_i32(r, &ids[i]);
        if (status != NXE_OK)
            return status;
        int32_t id = ids[i];
        if (id < 0 || id >= exe->num_tensors)
            return nxe_reader_error(r, "%s %u is tensor %d; the plan has %d", what, i, id,
                                    exe->num_tensors);
        const nxe_exe_tensor *t = &exe->tensors[id];
        int64_t numel = 0;
        if (state->settled[id])
            nxe_shape_numel(t->ndim, t->shape, &numel);
        if (t->kind != kind || !state->settled[id] || state->is_io[id] ||
            t->bytes != (size_t)numel * nxe_dtype_size(t->dtype))
            return nxe_reader_error(r,
                                    "%s %u is tensor '%s', which is not a distinct %s tensor "
                                    "with a settled shape and its byte size",
                                    what, i, t->name, what);
        if (outputs && !state->produced[id])
            return nxe_reader_error(r, "output %u ('%s') is written by no step", i, t->name);
        state->is_io[id] = true;
    }
    if (!outputs)
        return NXE_OK;
    if (count == 0)
        return nxe_reader_error(r, "the plan has no output");
    return NXE_OK;
}

/* Every tensor a step touches must have its bytes where the run will look for them. */
static nxe_status check_step_tensors(nxe_executable *exe, const plan_state *state)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        const nxe_exe_step *step = &exe->steps[s];
        for (int32_t k = 0; k < step->num_inputs + step->num_outputs; k++) {
            int32_t id =
                k < step->num_inputs ? step->input_ids[k] : step->output_ids[k - step->num_inputs];
            if (id < 0)
                continue;
            const nxe_exe_tensor *t = &exe->tensors[id];
            int64_t numel;
            nxe_shape_numel(t->ndim, t->shape, &numel);
            bool has_bytes = t->bytes == (size_t)numel * nxe_dtype_size(t->dtype);
            bool placed;
            switch (t->kind) {
            case NXE_TENSOR_INPUT:
            case NXE_TENSOR_OUTPUT: placed = state->is_io[id]; break;
            case NXE_TENSOR_TRANSIENT: placed = t->in_arena; break;
            default: placed = state->buffer_of[id] >= 0; break;
            }
            if (!has_bytes || !placed)
                return nxe_error(NXE_ERROR_FORMAT,
                                 "PLAN section: op '%s' ('%s') uses tensor '%s', which has no "
                                 "storage of its size",
                                 nxe_node_type(&step->node), step->node.name, t->name);
        }
    }
    return NXE_OK;
}

/* Constants point into DATA in place (one per distinct buffer); variables get a copy. */
static nxe_status bind_data(nxe_executable *exe, const plan_state *state)
{
    int32_t *constant_of = nxe_alloc(sizeof(int32_t) * ((size_t)state->num_buffers + 1));
    exe->constants = nxe_alloc_zeroed(sizeof(nxe_exe_constant) * ((size_t)exe->num_tensors + 1));
    if (!constant_of || !exe->constants) {
        nxe_free(constant_of);
        return out_of_memory();
    }
    for (int32_t b = 0; b < state->num_buffers; b++)
        constant_of[b] = -1;
    nxe_status status = NXE_OK;
    for (int32_t i = 0; i < exe->num_tensors && status == NXE_OK; i++) {
        nxe_exe_tensor *t = &exe->tensors[i];
        int32_t b = state->buffer_of[i];
        if (b < 0)
            continue;
        uint8_t *bytes = (uint8_t *)(uintptr_t)(state->data + state->buffers[b].offset);
        if (t->kind == NXE_TENSOR_VARIABLE) {
            t->storage = nxe_alloc(t->bytes);
            if (!t->storage) {
                status = out_of_memory();
                break;
            }
            memcpy(t->storage, bytes, t->bytes);
            t->owns_storage = true;
            t->initial = bytes; /* in the mapping the executable keeps */
            exe->constant_bytes += t->bytes;
        } else {
            if (constant_of[b] < 0) {
                constant_of[b] = exe->num_constants++;
                exe->constants[constant_of[b]] = (nxe_exe_constant){bytes, t->bytes, false};
                exe->constant_bytes += t->bytes;
            }
            t->constant = constant_of[b];
            t->storage = bytes;
        }
        exe->data[i] = t->storage;
    }
    nxe_free(constant_of);
    return status;
}

/* Runs each op's shape rule on the shapes and attributes the plan records: the rule makes the
 * params the kernels will use, and what it infers must be exactly what the plan says. */
static nxe_status derive_params(nxe_executable *exe)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        const nxe_op_def *def = step->node.def;
        for (int32_t j = 0; j < step->num_inputs; j++) {
            int32_t id = step->input_ids[j];
            if (id >= 0 && exe->tensors[id].kind == NXE_TENSOR_CONSTANT)
                step->input_values[j].data = exe->tensors[id].storage;
        }
        step->params = nxe_alloc_zeroed(def->params_size ? def->params_size : 1);
        if (!step->params)
            return out_of_memory();
        nxe_status status = def->infer(&step->node, step->input_values, step->num_inputs,
                                       step->output_values, step->num_outputs, step->params);
        for (int32_t j = 0; j < step->num_inputs; j++)
            step->input_values[j].data = NULL;
        if (status != NXE_OK) {
            nxe_error_prefix("PLAN section: step %d: ", s);
            return NXE_ERROR_FORMAT;
        }
        for (int32_t j = 0; j < step->num_outputs; j++) {
            const nxe_exe_tensor *t = &exe->tensors[step->output_ids[j]];
            const nxe_value *v = &step->output_values[j];
            bool same = v->dtype == t->dtype && v->ndim == t->ndim;
            for (int32_t d = 0; same && d < t->ndim; d++)
                same = v->shape[d] == t->shape[d];
            if (!same) {
                char recorded[128], inferred[128];
                return nxe_error(NXE_ERROR_FORMAT,
                                 "PLAN section: op '%s' ('%s') makes tensor '%s' %s %s, but the "
                                 "plan records %s %s",
                                 nxe_node_type(&step->node), step->node.name, t->name,
                                 nxe_dtype_name(v->dtype),
                                 nxe_shape_str(v->ndim, v->shape, inferred, sizeof inferred),
                                 nxe_dtype_name(t->dtype),
                                 nxe_shape_str(t->ndim, t->shape, recorded, sizeof recorded));
            }
        }
    }
    return NXE_OK;
}

/* Decodes the tensors, steps and I/O lists, then cross-checks them. */
static nxe_status decode_plan_tensors(nxe_reader *r, nxe_executable *exe, plan_state *state)
{
    nxe_status status = read_tensors(r, exe, state);
    if (status == NXE_OK)
        status = read_steps(r, exe, state);
    if (status == NXE_OK)
        status = read_io(r, exe, state, false);
    if (status == NXE_OK)
        status = read_io(r, exe, state, true);
    if (status == NXE_OK)
        status = nxe_reader_expect_end(r);
    if (status == NXE_OK)
        status = check_step_tensors(exe, state);
    if (status == NXE_OK)
        status = bind_data(exe, state);
    if (status == NXE_OK)
        status = derive_params(exe);
    return status;
}

/* Decodes everything after the PLAN prefix into a new executable without arena, staging or
 * threads. */
static nxe_status decode_plan(nxe_reader *r, const nxe_container *container,
                              const nxe_section *data_section, nxe_executable **out)
{
    *out = NULL;
    plan_state state = {.data_section = data_section,
                        .data = container->base + data_section->offset};
    uint32_t num_tensors;
    nxe_status status = read_buffers(r, &state);
    if (status == NXE_OK)
        status = nxe_read_count(r, NXE_LIMIT_TENSORS, 29, &num_tensors);
    nxe_executable *exe = NULL;
    if (status == NXE_OK)
        status = nxe_executable_alloc((int32_t)num_tensors, 0, &exe);
    if (status == NXE_OK) {
        size_t n = (size_t)num_tensors + 1;
        state.buffer_of = nxe_alloc(sizeof(int32_t) * n);
        state.settled = nxe_alloc_zeroed(sizeof(bool) * n);
        state.produced = nxe_alloc_zeroed(sizeof(bool) * n);
        state.is_io = nxe_alloc_zeroed(sizeof(bool) * n);
        if (!state.buffer_of || !state.settled || !state.produced || !state.is_io)
            status = out_of_memory();
    }
    for (uint32_t i = 0; status == NXE_OK && i < num_tensors; i++)
        state.buffer_of[i] = -1;
    if (status == NXE_OK)
        status = decode_plan_tensors(r, exe, &state);
    plan_state_free(&state);
    if (status != NXE_OK) {
        nxe_executable_release(exe);
        return status;
    }
    *out = exe;
    return NXE_OK;
}

/* ---- loading ---- */

/* The part of PLAN every version keeps. */
typedef struct plan_prefix {
    uint32_t kernel_abi;
    char *isa;
    uint32_t flags; /* binary_writer.c: bit 0 relax_precision, bits 1-2 nxe_winograd_mode */
    const uint8_t *fingerprint;
} plan_prefix;

static nxe_status read_prefix(nxe_reader *r, plan_prefix *prefix)
{
    *prefix = (plan_prefix){0};
    nxe_status status = nxe_read_u32(r, &prefix->kernel_abi);
    if (status == NXE_OK)
        status = nxe_read_string(r, NXE_ISA_TAG_CAPACITY - 1, &prefix->isa);
    if (status == NXE_OK)
        status = nxe_read_u32(r, &prefix->flags);
    if (status == NXE_OK)
        status = nxe_read_bytes(r, 32, &prefix->fingerprint);
    if (status == NXE_OK && (prefix->flags > 7u || prefix->flags >> 1 > NXE_WINOGRAD_ON))
        status = nxe_error(NXE_ERROR_FORMAT,
                           "PLAN section: compile flags 0x%x name options this library does "
                           "not know",
                           prefix->flags);
    return status;
}

static nxe_status load_request_from(const nxe_load_options *options, const char *where,
                                    load_request *request)
{
    nxe_load_options opts = NXE_LOAD_OPTIONS_INIT;
    if (options) {
        /* A 0.4 caller's options end before `limits`. */
        if (options->struct_size < offsetof(nxe_load_options, limits))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: options.struct_size is %u, expected at least %zu "
                             "(initialize with NXE_LOAD_OPTIONS_INIT)",
                             where, options->struct_size, sizeof(nxe_load_options));
        memcpy(&opts, options,
               options->struct_size < sizeof opts ? options->struct_size : sizeof opts);
    }
    nxe_limits limits;
    nxe_status status = nxe_limits_resolve(opts.limits, where, &limits);
    if (status != NXE_OK)
        return status;
    if (opts.num_threads < 0 || opts.num_threads > 1024)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: num_threads %d is outside [0, 1024]",
                         where, opts.num_threads);
    if (opts.staging_bytes > NXE_LIMIT_TENSOR_BYTES)
        return nxe_error(
            NXE_ERROR_INVALID_ARGUMENT, "%s: staging_bytes %llu exceeds the %llu-byte limit", where,
            (unsigned long long)opts.staging_bytes, (unsigned long long)NXE_LIMIT_TENSOR_BYTES);
    status = nxe_device_check(opts.device, where);
    if (status != NXE_OK)
        return status;
    *request = (load_request){.device = opts.device,
                              .num_threads = opts.num_threads,
                              .verify = opts.verify != 0,
                              .allow_recompile = opts.allow_recompile != 0,
                              .staging_bytes = opts.staging_bytes,
                              .limits = limits,
                              .context = opts.context};
    return NXE_OK;
}

/* A plan for another ISA or kernel ABI: rebuild it from the embedded portable model. */
static nxe_status recompile(const nxe_container *container, const plan_prefix *prefix,
                            const load_request *request, const char *what, nxe_executable **out)
{
    const nxe_section *embedded = nxe_container_find(container, NXE_SECTION_EMBEDDED_MODEL);
    if (!embedded)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "%s: the binary was compiled for ISA '%s' with kernel ABI %u, this "
                         "library runs ISA '%s' with kernel ABI %d, and the binary holds no "
                         "embedded model to recompile from",
                         what, prefix->isa, prefix->kernel_abi, NXE_ISA_REF,
                         NXE_KERNEL_ABI_VERSION);
    if (request->verify) {
        nxe_status status = nxe_container_verify(container, embedded, what);
        if (status != NXE_OK)
            return status;
    }
    nxe_model *model = NULL;
    nxe_context *context = NULL;
    nxe_graph *graph = NULL;
    nxe_model_options model_options = NXE_MODEL_OPTIONS_INIT;
    model_options.limits = &request->limits;
    nxe_status status = nxe_model_open_memory(container->base + embedded->offset,
                                              (size_t)embedded->size, &model_options, &model);
    if (status == NXE_OK && !request->context)
        status = nxe_context_create(&context);
    nxe_context *ops = request->context ? request->context : context; /* its custom ops */
    if (status == NXE_OK)
        status = nxe_model_build_graph(model, ops, &graph);
    nxe_compile_request compile = {.device = request->device,
                                   .num_threads = request->num_threads,
                                   .relax_precision = (int32_t)(prefix->flags & 1u),
                                   .winograd = (int32_t)(prefix->flags >> 1),
                                   .staging_bytes = request->staging_bytes,
                                   .limits = request->limits};
    if (status == NXE_OK)
        status = nxe_compile_graph(graph, &compile, out);
    if (status != NXE_OK)
        nxe_error_prefix("%s: recompiling from the embedded model: ", what);
    nxe_graph_release(graph);
    nxe_context_release(context);
    nxe_model_release(model);
    if (status != NXE_OK)
        return status;
    nxe_executable *exe = *out;
    exe->loaded = true;
    exe->recompiled = true;
    memcpy(exe->fingerprint, prefix->fingerprint, sizeof exe->fingerprint);
    nxe_log(NXE_LOG_INFO,
            "%s: compiled for ISA '%s' with kernel ABI %u; recompiled from the embedded model "
            "for ISA '%s' with kernel ABI %d",
            what, prefix->isa, prefix->kernel_abi, NXE_ISA_REF, NXE_KERNEL_ABI_VERSION);
    return NXE_OK;
}

/* The decoded plan within the caller's limits, before anything is prepared for it. */
static nxe_status check_plan_limits(const nxe_executable *exe, const nxe_limits *limits)
{
    nxe_status status = nxe_limits_check_ops(limits, exe->num_steps, "the plan");
    for (int32_t i = 0; status == NXE_OK && i < exe->num_tensors; i++)
        if (exe->tensors[i].bytes > limits->max_tensor_bytes)
            status = nxe_error(NXE_ERROR_SHAPE_MISMATCH,
                               "tensor '%s' takes %zu bytes, above the limit of %llu bytes per "
                               "tensor (raise nxe_limits.max_tensor_bytes)",
                               exe->tensors[i].name, exe->tensors[i].bytes,
                               (unsigned long long)limits->max_tensor_bytes);
    return status;
}

static nxe_status load_plan(const nxe_container *container, const load_request *request,
                            const char *what, nxe_file_map *file, nxe_executable **out)
{
    const nxe_section *plan = nxe_container_find(container, NXE_SECTION_PLAN);
    const nxe_section *data = nxe_container_find(container, NXE_SECTION_DATA);
    if (!plan || !data)
        return nxe_error(NXE_ERROR_FORMAT, "%s: the binary has no %s section", what,
                         plan ? "DATA" : "PLAN");
    /* The embedded model is checked only when it is about to be used (recompile): hashing
     * it would double the cost of every verified load. */
    for (int32_t i = 0; request->verify && i < container->num_sections; i++) {
        if (container->sections[i].type == NXE_SECTION_EMBEDDED_MODEL)
            continue;
        nxe_status status = nxe_container_verify(container, &container->sections[i], what);
        if (status != NXE_OK)
            return status;
    }
    nxe_reader r = nxe_reader_make(container->base + plan->offset, (size_t)plan->size,
                                   "PLAN section", (size_t)plan->offset);
    r.ops = request->context;
    plan_prefix prefix;
    nxe_status status = read_prefix(&r, &prefix);
    if (status != NXE_OK)
        nxe_error_prefix("%s: ", what);
    if (status == NXE_OK &&
        (prefix.kernel_abi != NXE_KERNEL_ABI_VERSION || !nxe_isa_runs_here(prefix.isa))) {
        if (request->allow_recompile)
            status = recompile(container, &prefix, request, what, out);
        else
            status =
                nxe_error(NXE_ERROR_UNSUPPORTED,
                          "%s: the binary was compiled for ISA '%s' with kernel ABI %u; "
                          "this library runs ISA '%s' with kernel ABI %d (load with "
                          "allow_recompile to rebuild it from its embedded model)",
                          what, prefix.isa, prefix.kernel_abi, NXE_ISA_REF, NXE_KERNEL_ABI_VERSION);
        nxe_free(prefix.isa);
        return status;
    }
    nxe_executable *exe = NULL;
    if (status == NXE_OK) {
        status = decode_plan(&r, container, data, &exe);
        if (status == NXE_OK)
            status = check_plan_limits(exe, &request->limits);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", what);
    }
    if (status == NXE_OK) {
        /* From here the executable owns the mapping its constants point into. */
        exe->file = *file;
        *file = (nxe_file_map){0};
        exe->loaded = true;
        exe->kernel_abi = (int32_t)prefix.kernel_abi;
        exe->relax_precision = (int32_t)(prefix.flags & 1u);
        exe->winograd = (int32_t)(prefix.flags >> 1);
        memcpy(exe->isa, prefix.isa, strlen(prefix.isa) + 1);
        memcpy(exe->fingerprint, prefix.fingerprint, sizeof exe->fingerprint);
        /* The arena is planned after the steps are prepared and folded for this CPU, as the
         * compiler does. */
        status = nxe_executable_prepare(exe);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", what);
    }
    nxe_free(prefix.isa);
    if (status == NXE_OK)
        status = nxe_executable_init_staging(exe, request->staging_bytes,
                                             request->limits.max_arena_bytes, what);
    if (status == NXE_OK) {
        status = nxe_device_make_pool(request->device, request->num_threads,
                                      nxe_default_thread_count(), &exe->pool);
        if (status != NXE_OK)
            nxe_error_prefix("%s: ", what);
    }
    if (status != NXE_OK) {
        nxe_executable_release(exe);
        return status;
    }
    *out = exe;
    return NXE_OK;
}

/* Takes the file: it ends up in the executable or is released. */
static nxe_status load_file_map(nxe_file_map *file, const load_request *request, const char *where,
                                const char *name, nxe_executable **out)
{
    char what[300];
    snprintf(what, sizeof what, "%s: %s", where, name);
    nxe_container container;
    nxe_status status =
        nxe_container_parse(file->data, file->size, nxe_binary_magic, what, &container);
    if (status == NXE_OK)
        status = load_plan(&container, request, what, file, out);
    if (status == NXE_OK && nxe_device_is_remote(request->device)) {
        const nxe_file_map *bytes = file->data ? file : &(*out)->file; /* moved in or not */
        status = nxe_device_place_remote(request->device, NULL, NULL, bytes->data, bytes->size,
                                         *out, what);
        if (status != NXE_OK) {
            nxe_executable_release(*out);
            *out = NULL;
        }
    }
    nxe_file_map_release(file);
    if (status == NXE_OK)
        nxe_log(NXE_LOG_INFO,
                "%s: %d steps, %d distinct constants, arena %llu bytes, staging "
                "%llu bytes",
                what, (*out)->num_steps, (*out)->num_constants,
                (unsigned long long)(*out)->arena_bytes, (unsigned long long)(*out)->staging_bytes);
    return status;
}

NXE_API nxe_status nxe_executable_load_file(const char *path, const nxe_load_options *options,
                                            nxe_executable **out)
{
    const char *where = "nxe_executable_load_file";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out is NULL", where);
    *out = NULL;
    if (!path)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: path is NULL", where);
    load_request request;
    nxe_status status = load_request_from(options, where, &request);
    if (status != NXE_OK)
        return status;
    nxe_file_map file;
    status = nxe_file_map_open(path, &file);
    if (status != NXE_OK) {
        nxe_error_prefix("%s: ", where);
        return status;
    }
    char name[260];
    snprintf(name, sizeof name, "'%s'", path);
    /* Only mapped so far: nothing is read or allocated for a file above the limit. */
    char what[300];
    snprintf(what, sizeof what, "%s: %s", where, name);
    status = nxe_limits_check_file(&request.limits, file.size, what);
    if (status != NXE_OK) {
        nxe_file_map_release(&file);
        return status;
    }
    return load_file_map(&file, &request, where, name, out);
}

NXE_API nxe_status nxe_executable_load_memory(const void *data, size_t size,
                                              const nxe_load_options *options, nxe_executable **out)
{
    const char *where = "nxe_executable_load_memory";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out is NULL", where);
    *out = NULL;
    if (!data)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: data is NULL", where);
    load_request request;
    nxe_status status = load_request_from(options, where, &request);
    if (status != NXE_OK)
        return status;
    status = nxe_limits_check_file(&request.limits, size, where);
    if (status != NXE_OK)
        return status;
    /* Too short to hold a header: no point in copying it. */
    if (size < NXE_CONTAINER_HEADER_SIZE)
        return nxe_error(NXE_ERROR_FORMAT, "%s: %zu bytes is too short for an nxe file header (%d)",
                         where, size, NXE_CONTAINER_HEADER_SIZE);
    uint8_t *copy = nxe_alloc(size);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory copying %zu bytes", where,
                         size);
    memcpy(copy, data, size);
    nxe_file_map file = {.data = copy, .size = size, .mapped = false};
    return load_file_map(&file, &request, where, "binary in memory", out);
}
