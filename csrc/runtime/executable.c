/* executable.c — running a compiled plan: checks the caller's descriptors, stages inputs,
 * calls each step's op and hands outputs back by copy (run) or in place (run_nocopy).
 * One run at a time per executable: runs, create_input and reset_staging must not overlap.
 *
 * Staging buffer, allocated once (64-byte aligned, every region 64-byte aligned):
 *   [result area: output 0, output 1, ...][input slots: input 0, input 1, ...][created inputs]
 * Outputs are always produced in the result area. A run copies each input into its slot,
 * except an input lying entirely inside the created-input region (nxe_executable_create_input),
 * which is read in place. An input inside the result area (a previous run_nocopy result) is
 * copied, so a run never reads what it is overwriting. The default capacity is the result
 * area plus twice the input slots: room for one created copy of every input. */
#include <string.h>

#include "runtime/executable_internal.h"

#define STAGING_ALIGNMENT 64u

nxe_status nxe_executable_alloc(int32_t num_tensors, int32_t num_steps, nxe_executable **out)
{
    *out = NULL;
    nxe_executable *exe = nxe_alloc_zeroed(sizeof *exe);
    if (!exe)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "executable: out of memory");
    exe->tensors = nxe_alloc_zeroed(sizeof(nxe_exe_tensor) * (size_t)(num_tensors + 1));
    exe->data = nxe_alloc_zeroed(sizeof(void *) * (size_t)(num_tensors + 1));
    exe->steps = nxe_alloc_zeroed(sizeof(nxe_exe_step) * (size_t)(num_steps + 1));
    exe->num_tensors = num_tensors;
    exe->num_steps = num_steps;
    if (!exe->tensors || !exe->data || !exe->steps) {
        nxe_executable_release(exe);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "executable: out of memory");
    }
    for (int32_t i = 0; i < num_tensors; i++)
        exe->tensors[i].constant = -1;
    exe->kernel_abi = NXE_KERNEL_ABI_VERSION;
    memcpy(exe->isa, NXE_ISA_REF, sizeof NXE_ISA_REF);
    exe->stats.struct_size = sizeof(nxe_run_stats);
    *out = exe;
    return NXE_OK;
}

NXE_API void nxe_executable_release(nxe_executable *exe)
{
    if (!exe)
        return;
    nxe_thread_pool_release(exe->pool);
    for (int32_t i = 0; exe->tensors && i < exe->num_tensors; i++) {
        nxe_free(exe->tensors[i].name);
        nxe_free(exe->tensors[i].scales);
        if (exe->tensors[i].owns_storage)
            nxe_free(exe->tensors[i].storage);
    }
    for (int32_t c = 0; exe->constants && c < exe->num_constants; c++)
        if (exe->constants[c].owned)
            nxe_free(exe->constants[c].data);
    for (int32_t s = 0; exe->steps && s < exe->num_steps; s++)
        nxe_exe_step_clear(&exe->steps[s]);
    nxe_free(exe->tensors);
    nxe_free(exe->constants);
    nxe_free(exe->data);
    nxe_free(exe->steps);
    nxe_free(exe->input_ids);
    nxe_free(exe->output_ids);
    nxe_free(exe->arena);
    nxe_free(exe->workspace);
    nxe_free(exe->staging);
    nxe_free(exe->output_offsets);
    nxe_free(exe->input_offsets);
    nxe_file_map_release(&exe->file);
    nxe_free(exe);
}

bool nxe_isa_runs_here(const char *isa)
{
    return strcmp(isa, NXE_ISA_REF) == 0;
}

static void describe(const nxe_exe_tensor *t, nxe_tensor_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->data_size = t->bytes;
    desc->ndim = t->ndim;
    nxe_dtype_to_dlpack(t->dtype, &desc->dtype_code, &desc->dtype_bits);
    memcpy(desc->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

/* ---- staging ---- */

static uint64_t staging_round(uint64_t bytes)
{
    return (bytes + STAGING_ALIGNMENT - 1) / STAGING_ALIGNMENT * STAGING_ALIGNMENT;
}

static uint64_t io_area_bytes(const nxe_executable *exe, const int32_t *ids, int32_t count)
{
    uint64_t total = 0;
    for (int32_t i = 0; i < count; i++)
        total += staging_round(exe->tensors[ids[i]].bytes);
    return total;
}

uint64_t nxe_executable_staging_minimum(const nxe_executable *exe)
{
    return io_area_bytes(exe, exe->output_ids, exe->num_outputs) +
           io_area_bytes(exe, exe->input_ids, exe->num_inputs);
}

uint64_t nxe_executable_staging_default(const nxe_executable *exe)
{
    return nxe_executable_staging_minimum(exe) +
           io_area_bytes(exe, exe->input_ids, exe->num_inputs);
}

nxe_status nxe_executable_init_staging(nxe_executable *exe, uint64_t capacity, const char *where)
{
    uint64_t minimum = nxe_executable_staging_minimum(exe);
    if (capacity == 0)
        capacity = nxe_executable_staging_default(exe);
    if (capacity < minimum)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: staging_bytes %llu is less than the %llu bytes the outputs and the "
                         "input slots need",
                         where, (unsigned long long)capacity, (unsigned long long)minimum);
    capacity = staging_round(capacity);
    if (capacity > SIZE_MAX - STAGING_ALIGNMENT)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: a %llu-byte staging buffer does not fit "
                         "in memory", where, (unsigned long long)capacity);
    exe->output_offsets = nxe_alloc(sizeof(uint64_t) * (size_t)(exe->num_outputs + 1));
    exe->input_offsets = nxe_alloc(sizeof(uint64_t) * (size_t)(exe->num_inputs + 1));
    /* Never zeroed as a whole: only what create_input hands out is cleared, so a large
     * capacity costs address space, not pages. */
    exe->staging = nxe_alloc((size_t)capacity);
    if (!exe->output_offsets || !exe->input_offsets || !exe->staging)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory for a %llu-byte staging "
                         "buffer", where, (unsigned long long)capacity);
    uint64_t offset = 0;
    for (int32_t i = 0; i < exe->num_outputs; i++) {
        exe->output_offsets[i] = offset;
        exe->data[exe->output_ids[i]] = exe->staging + offset;
        offset += staging_round(exe->tensors[exe->output_ids[i]].bytes);
    }
    for (int32_t i = 0; i < exe->num_inputs; i++) {
        exe->input_offsets[i] = offset;
        exe->data[exe->input_ids[i]] = exe->staging + offset;
        offset += staging_round(exe->tensors[exe->input_ids[i]].bytes);
    }
    exe->slots_end = exe->created_end = offset;
    exe->staging_bytes = capacity;
    exe->stats.staging_bytes = capacity;
    exe->stats.staging_used = offset;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_create_input(nxe_executable *exe, int32_t index,
                                               nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_create_input";
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!exe || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "desc" : "exe");
    if (index < 0 || index >= exe->num_inputs)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is outside [0, %d)", where, index,
                         exe->num_inputs);
    const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[index]];
    uint64_t needed = staging_round(t->bytes);
    if (needed > exe->staging_bytes - exe->created_end)
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                         "%s: input %d ('%s') needs %llu bytes but the staging buffer has "
                         "%llu of its capacity of %llu bytes in use (%llu free); call "
                         "nxe_executable_reset_staging or load with a larger staging_bytes",
                         where, index, t->name, (unsigned long long)needed,
                         (unsigned long long)exe->created_end,
                         (unsigned long long)exe->staging_bytes,
                         (unsigned long long)(exe->staging_bytes - exe->created_end));
    uint8_t *data = exe->staging + exe->created_end;
    memset(data, 0, (size_t)needed);
    exe->created_end += needed;
    exe->stats.staging_used = exe->created_end;
    describe(t, desc);
    desc->data = data;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_reset_staging(nxe_executable *exe)
{
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_reset_staging: exe is NULL");
    exe->created_end = exe->slots_end;
    exe->stats.staging_used = exe->created_end;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_stats(const nxe_executable *exe, nxe_run_stats *stats)
{
    const char *where = "nxe_executable_stats";
    if (!exe || !stats)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         exe ? "stats" : "exe");
    if (stats->struct_size < sizeof(nxe_run_stats))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: stats.struct_size is %u, expected at least %zu", where,
                         stats->struct_size, sizeof(nxe_run_stats));
    uint32_t struct_size = stats->struct_size;
    *stats = exe->stats;
    stats->struct_size = struct_size;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_get_info(const nxe_executable *exe, nxe_executable_info *info)
{
    const char *where = "nxe_executable_get_info";
    if (!exe || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "info" : "exe");
    if (info->struct_size < sizeof(nxe_executable_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_executable_info));
    uint32_t struct_size = info->struct_size;
    *info = (nxe_executable_info){.struct_size = struct_size};
    memcpy(info->fingerprint, exe->fingerprint, sizeof info->fingerprint);
    memcpy(info->isa, exe->isa, sizeof info->isa);
    info->kernel_abi = exe->kernel_abi;
    info->loaded = exe->loaded;
    info->recompiled = exe->recompiled;
    info->num_constants = exe->num_constants;
    return NXE_OK;
}

/* ---- description ---- */

NXE_API nxe_status nxe_executable_io_count(const nxe_executable *exe, int32_t *num_inputs,
                                           int32_t *num_outputs)
{
    if (num_inputs)
        *num_inputs = 0;
    if (num_outputs)
        *num_outputs = 0;
    if (!exe || !num_inputs || !num_outputs)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_io_count: %s is NULL",
                         !exe ? "exe" : !num_inputs ? "num_inputs" : "num_outputs");
    *num_inputs = exe->num_inputs;
    *num_outputs = exe->num_outputs;
    return NXE_OK;
}

static nxe_status io_desc(const nxe_executable *exe, int32_t index, nxe_tensor_desc *desc,
                          const char **name, bool input)
{
    const char *where = input ? "nxe_executable_input_desc" : "nxe_executable_output_desc";
    if (name)
        *name = NULL;
    if (desc)
        memset(desc, 0, sizeof *desc);
    if (!exe || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "desc" : "exe");
    int32_t count = input ? exe->num_inputs : exe->num_outputs;
    if (index < 0 || index >= count)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is outside [0, %d)", where, index,
                         count);
    const nxe_exe_tensor *t = &exe->tensors[(input ? exe->input_ids : exe->output_ids)[index]];
    describe(t, desc);
    if (name)
        *name = t->name;
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_input_desc(const nxe_executable *exe, int32_t index,
                                             nxe_tensor_desc *desc, const char **name)
{
    return io_desc(exe, index, desc, name, true);
}

NXE_API nxe_status nxe_executable_output_desc(const nxe_executable *exe, int32_t index,
                                              nxe_tensor_desc *desc, const char **name)
{
    return io_desc(exe, index, desc, name, false);
}

/* A caller's descriptor must match the tensor exactly: dtype, rank, shape, enough bytes. */
static nxe_status check_desc(const nxe_exe_tensor *t, const nxe_tensor_desc *desc,
                             const char *where, const char *role, int32_t index)
{
    int32_t dtype = NXE_DTYPE_NONE;
    if (desc->reserved != 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s %d ('%s'): reserved field is %d, must be 0",
                         where, role, index, t->name, desc->reserved);
    if (nxe_dtype_from_dlpack(desc->dtype_code, desc->dtype_bits, &dtype) != NXE_OK ||
        dtype != t->dtype)
        return nxe_error(NXE_ERROR_DTYPE_MISMATCH,
                         "%s: %s %d ('%s') is %s, but the descriptor says DLPack code %d, %d bits",
                         where, role, index, t->name, nxe_dtype_name(t->dtype), desc->dtype_code,
                         desc->dtype_bits);
    bool same = desc->ndim == t->ndim;
    for (int32_t i = 0; same && i < t->ndim; i++)
        same = desc->shape[i] == t->shape[i];
    if (!same) {
        char expected[128], given[128];
        int32_t given_ndim = desc->ndim < 0 || desc->ndim > NXE_MAX_RANK ? -1 : desc->ndim;
        return nxe_error(NXE_ERROR_SHAPE_MISMATCH, "%s: %s %d ('%s') has shape %s, descriptor has %s%s",
                         where, role, index, t->name,
                         nxe_shape_str(t->ndim, t->shape, expected, sizeof expected),
                         nxe_shape_str(given_ndim, desc->shape, given, sizeof given),
                         given_ndim < 0 ? " (invalid rank)" : "");
    }
    if (desc->data_size < t->bytes)
        return nxe_error(NXE_ERROR_BUFFER_TOO_SMALL,
                         "%s: %s %d ('%s') needs %zu bytes, the descriptor holds %zu", where,
                         role, index, t->name, t->bytes, desc->data_size);
    if (!desc->data && t->bytes > 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s %d ('%s') has NULL data", where,
                         role, index, t->name);
    return NXE_OK;
}

/* ---- running ---- */

static bool within_staging(const nxe_executable *exe, const void *data, size_t bytes,
                           uint64_t begin, uint64_t end)
{
    uintptr_t base = (uintptr_t)exe->staging, p = (uintptr_t)data;
    return p >= base + begin && p - base <= end && bytes <= end - (p - base);
}

static bool overlaps_staging(const nxe_executable *exe, const void *data, size_t bytes,
                             uint64_t begin, uint64_t end)
{
    uintptr_t base = (uintptr_t)exe->staging, p = (uintptr_t)data;
    return bytes > 0 && begin < end && p < base + end && base + begin < p + bytes;
}

/* Every descriptor is checked before anything is copied, so a refused run changes nothing. */
static nxe_status check_run_args(const nxe_executable *exe, const nxe_tensor_desc *inputs,
                                 int32_t num_inputs, const nxe_tensor_desc *outputs,
                                 int32_t num_outputs, bool outputs_are_buffers, const char *where)
{
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: exe is NULL", where);
    if (!exe->staging)
        return nxe_error(NXE_ERROR_INVALID_STATE, "%s: the executable has no staging buffer",
                         where);
    if (num_inputs != exe->num_inputs || num_outputs != exe->num_outputs)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the executable takes %d inputs and %d outputs, got %d and %d",
                         where, exe->num_inputs, exe->num_outputs, num_inputs, num_outputs);
    if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         num_inputs > 0 && !inputs ? "inputs" : "outputs");
    uint64_t slots_begin = exe->num_inputs > 0 ? exe->input_offsets[0] : exe->slots_end;
    for (int32_t i = 0; i < num_inputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[i]];
        nxe_status status = check_desc(t, &inputs[i], where, "input", i);
        if (status != NXE_OK)
            return status;
        /* Only pointer arithmetic on staging memory the caller was never given lands here. */
        if (overlaps_staging(exe, inputs[i].data, t->bytes, slots_begin, exe->slots_end))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: input %d ('%s') overlaps the executable's input slots; pass "
                             "caller memory or a buffer from nxe_executable_create_input",
                             where, i, t->name);
    }
    for (int32_t i = 0; outputs_are_buffers && i < num_outputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->output_ids[i]];
        nxe_status status = check_desc(t, &outputs[i], where, "output", i);
        if (status != NXE_OK)
            return status;
    }
    return NXE_OK;
}

/* Points each input at its data: in place when it lies inside the created inputs (suitably
 * aligned for its dtype), else copied into its slot. */
static void stage_inputs(nxe_executable *exe, const nxe_tensor_desc *inputs, nxe_run_stats *delta)
{
    for (int32_t i = 0; i < exe->num_inputs; i++) {
        int32_t id = exe->input_ids[i];
        const nxe_exe_tensor *t = &exe->tensors[id];
        const void *data = inputs[i].data;
        size_t element = nxe_dtype_size(t->dtype);
        if (t->bytes > 0 && (uintptr_t)data % element == 0 &&
            within_staging(exe, data, t->bytes, exe->slots_end, exe->created_end)) {
            exe->data[id] = (void *)(uintptr_t)data;
            delta->inputs_in_place++;
            continue;
        }
        uint8_t *slot = exe->staging + exe->input_offsets[i];
        if (t->bytes > 0)
            memcpy(slot, data, t->bytes);
        exe->data[id] = slot;
        delta->inputs_copied++;
        delta->bytes_copied_in += t->bytes;
    }
}

static nxe_status run_steps(nxe_executable *exe, const char *where)
{
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++)
            if (step->input_ids[j] >= 0)
                step->input_values[j].data = exe->data[step->input_ids[j]];
        for (int32_t j = 0; j < step->num_outputs; j++)
            step->output_values[j].data = exe->data[step->output_ids[j]];
        nxe_status status =
            step->prepared
                ? step->node.def->run_prepared(step->params, step->prepared, &step->fused,
                                               exe->workspace, step->input_values,
                                               step->num_inputs, step->output_values,
                                               step->num_outputs, exe->pool)
                : step->node.def->run(step->params, step->input_values, step->num_inputs,
                                      step->output_values, step->num_outputs, exe->pool);
        if (status != NXE_OK) {
            nxe_error_prefix("%s: op '%s' ('%s'): ", where, nxe_node_type(&step->node),
                             step->node.name);
            return status;
        }
    }
    return NXE_OK;
}

static void add_stats(nxe_executable *exe, const nxe_run_stats *delta)
{
    exe->stats.runs++;
    exe->stats.inputs_copied += delta->inputs_copied;
    exe->stats.inputs_in_place += delta->inputs_in_place;
    exe->stats.bytes_copied_in += delta->bytes_copied_in;
    exe->stats.bytes_copied_out += delta->bytes_copied_out;
}

NXE_API nxe_status nxe_executable_run(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                      int32_t num_inputs, nxe_tensor_desc *outputs,
                                      int32_t num_outputs)
{
    const char *where = "nxe_executable_run";
    nxe_status status = check_run_args(exe, inputs, num_inputs, outputs, num_outputs, true, where);
    if (status != NXE_OK)
        return status;
    nxe_run_stats delta = {0};
    stage_inputs(exe, inputs, &delta);
    status = run_steps(exe, where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < num_outputs; i++) {
        size_t bytes = exe->tensors[exe->output_ids[i]].bytes;
        /* memmove: the caller may hand back staging memory (a created input) as a buffer. */
        if (bytes > 0)
            memmove(outputs[i].data, exe->staging + exe->output_offsets[i], bytes);
        delta.bytes_copied_out += bytes;
    }
    add_stats(exe, &delta);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_run_nocopy(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                             int32_t num_inputs, nxe_tensor_desc *outputs,
                                             int32_t num_outputs)
{
    const char *where = "nxe_executable_run_nocopy";
    if (outputs && exe && num_outputs == exe->num_outputs)
        memset(outputs, 0, sizeof *outputs * (size_t)num_outputs);
    nxe_status status = check_run_args(exe, inputs, num_inputs, outputs, num_outputs, false, where);
    if (status != NXE_OK)
        return status;
    nxe_run_stats delta = {0};
    stage_inputs(exe, inputs, &delta);
    status = run_steps(exe, where);
    if (status != NXE_OK)
        return status;
    for (int32_t i = 0; i < num_outputs; i++) {
        describe(&exe->tensors[exe->output_ids[i]], &outputs[i]);
        outputs[i].data = exe->staging + exe->output_offsets[i];
    }
    add_stats(exe, &delta);
    return NXE_OK;
}

/* ---- variables and memory ---- */

static nxe_status find_variable(nxe_executable *exe, const char *name, const char *where,
                                nxe_exe_tensor **out)
{
    *out = NULL;
    if (!exe || !name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "name" : "exe");
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        if (exe->tensors[i].kind == NXE_TENSOR_VARIABLE && strcmp(exe->tensors[i].name, name) == 0) {
            if (!exe->tensors[i].storage)
                return nxe_error(NXE_ERROR_NOT_FOUND,
                                 "%s: variable '%s' is not used by any op and was not kept", where,
                                 name);
            *out = &exe->tensors[i];
            return NXE_OK;
        }
    }
    return nxe_error(NXE_ERROR_NOT_FOUND, "%s: the executable has no variable named '%s'", where,
                     name);
}

NXE_API nxe_status nxe_executable_read_variable(nxe_executable *exe, const char *name,
                                                nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_read_variable";
    nxe_exe_tensor *t;
    nxe_status status = find_variable(exe, name, where, &t);
    if (status != NXE_OK)
        return status;
    if (!desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", where);
    status = check_desc(t, desc, where, "variable", 0);
    if (status != NXE_OK)
        return status;
    memcpy(desc->data, t->storage, t->bytes);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_write_variable(nxe_executable *exe, const char *name,
                                                 const nxe_tensor_desc *desc)
{
    const char *where = "nxe_executable_write_variable";
    nxe_exe_tensor *t;
    nxe_status status = find_variable(exe, name, where, &t);
    if (status != NXE_OK)
        return status;
    if (!desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", where);
    status = check_desc(t, desc, where, "variable", 0);
    if (status != NXE_OK)
        return status;
    memmove(t->storage, desc->data, t->bytes);
    return NXE_OK;
}

NXE_API nxe_status nxe_executable_memory_info(const nxe_executable *exe, nxe_memory_info *info)
{
    if (!exe || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_executable_memory_info: %s is NULL",
                         exe ? "info" : "exe");
    if (info->struct_size < sizeof(nxe_memory_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_executable_memory_info: info.struct_size is %u, expected at least %zu",
                         info->struct_size, sizeof(nxe_memory_info));
    uint32_t struct_size = info->struct_size;
    *info = (nxe_memory_info){.struct_size = struct_size};
    info->arena_bytes = exe->arena_bytes;
    info->transient_bytes = exe->transient_bytes;
    info->constant_bytes = exe->constant_bytes;
    info->num_threads = nxe_thread_pool_size(exe->pool);
    info->num_steps = exe->num_steps;
    return NXE_OK;
}
