/* executable.c — running a compiled plan: checks the caller's descriptors, points inputs and
 * outputs at the caller's buffers (no staging copy), and calls each step's op. One run at a
 * time per executable. */
#include <string.h>

#include "runtime/executable_internal.h"

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
        nxe_free(exe->tensors[i].storage);
    }
    for (int32_t s = 0; exe->steps && s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        nxe_free(step->op_name);
        nxe_free(step->params);
        nxe_free(step->input_ids);
        nxe_free(step->output_ids);
        nxe_free(step->input_values);
        nxe_free(step->output_values);
    }
    nxe_free(exe->tensors);
    nxe_free(exe->data);
    nxe_free(exe->steps);
    nxe_free(exe->input_ids);
    nxe_free(exe->output_ids);
    nxe_free(exe->arena);
    nxe_free(exe);
}

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

static void describe(const nxe_exe_tensor *t, nxe_tensor_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->data_size = t->bytes;
    desc->ndim = t->ndim;
    nxe_dtype_to_dlpack(t->dtype, &desc->dtype_code, &desc->dtype_bits);
    memcpy(desc->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
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

NXE_API nxe_status nxe_executable_run(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                      int32_t num_inputs, nxe_tensor_desc *outputs,
                                      int32_t num_outputs)
{
    const char *where = "nxe_executable_run";
    if (!exe)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: exe is NULL", where);
    if (num_inputs != exe->num_inputs || num_outputs != exe->num_outputs)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the executable takes %d inputs and %d outputs, got %d and %d",
                         where, exe->num_inputs, exe->num_outputs, num_inputs, num_outputs);
    if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         num_inputs > 0 && !inputs ? "inputs" : "outputs");
    for (int32_t i = 0; i < num_inputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->input_ids[i]];
        nxe_status status = check_desc(t, &inputs[i], where, "input", i);
        if (status != NXE_OK)
            return status;
        exe->data[exe->input_ids[i]] = inputs[i].data;
    }
    for (int32_t i = 0; i < num_outputs; i++) {
        const nxe_exe_tensor *t = &exe->tensors[exe->output_ids[i]];
        nxe_status status = check_desc(t, &outputs[i], where, "output", i);
        if (status != NXE_OK)
            return status;
        exe->data[exe->output_ids[i]] = outputs[i].data;
    }
    for (int32_t s = 0; s < exe->num_steps; s++) {
        nxe_exe_step *step = &exe->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++)
            if (step->input_ids[j] >= 0)
                step->input_values[j].data = exe->data[step->input_ids[j]];
        for (int32_t j = 0; j < step->num_outputs; j++)
            step->output_values[j].data = exe->data[step->output_ids[j]];
        nxe_status status = step->def->run(step->params, step->input_values, step->num_inputs,
                                           step->output_values, step->num_outputs, exe->pool);
        if (status != NXE_OK) {
            nxe_error_prefix("%s: op '%s' ('%s'): ", where, step->def->info.name, step->op_name);
            return status;
        }
    }
    return NXE_OK;
}

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
