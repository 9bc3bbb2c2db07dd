/* binding.c — caller buffers bound to an executable's inputs and outputs (nxe.h, "Bound
 * caller memory"): every rule a buffer must meet is checked when it is bound, so a run only
 * points the steps at the buffers (executable.c, nxe_executable_run_bound). */
#include <stdatomic.h>
#include <string.h>

#include "runtime/executable_internal.h"

struct nxe_binding {
    nxe_executable *exe;
    nxe_tensor_desc *inputs; /* per input: the bound buffer, data NULL while unbound */
    nxe_tensor_desc *outputs;
    bool *input_bound;
    bool *output_bound;
    void **input_data; /* what a run hands the executable */
    void **output_data;
    atomic_bool busy; /* a call is using the binding */
};

/* Claims the binding for one call; false (with the error set) when another call has it. */
static bool claim(nxe_binding *binding, const char *where)
{
    if (atomic_exchange(&binding->busy, true)) {
        nxe_error(NXE_ERROR_INVALID_STATE,
                  "%s: another call is using the binding (one call at a time; make a binding "
                  "per thread)",
                  where);
        return false;
    }
    return true;
}

static void unclaim(nxe_binding *binding)
{
    atomic_store(&binding->busy, false);
}

NXE_API nxe_status nxe_binding_create(nxe_executable *exe, nxe_binding **out)
{
    const char *where = "nxe_binding_create";
    if (out)
        *out = NULL;
    if (!exe || !out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where, exe ? "out" : "exe");
    if (!exe->created)
        return nxe_error(NXE_ERROR_INVALID_STATE,
                         "%s: the executable cannot run (it was compiled only to be written out)",
                         where);
    const size_t n_in = (size_t)exe->num_inputs + 1, n_out = (size_t)exe->num_outputs + 1;
    nxe_binding *binding = nxe_alloc_zeroed(sizeof *binding);
    if (binding) {
        binding->inputs = nxe_alloc_zeroed(sizeof(nxe_tensor_desc) * n_in);
        binding->outputs = nxe_alloc_zeroed(sizeof(nxe_tensor_desc) * n_out);
        binding->input_bound = nxe_alloc_zeroed(sizeof(bool) * n_in);
        binding->output_bound = nxe_alloc_zeroed(sizeof(bool) * n_out);
        binding->input_data = nxe_alloc_zeroed(sizeof(void *) * n_in);
        binding->output_data = nxe_alloc_zeroed(sizeof(void *) * n_out);
    }
    if (!binding || !binding->inputs || !binding->outputs || !binding->input_bound ||
        !binding->output_bound || !binding->input_data || !binding->output_data) {
        nxe_binding_release(binding);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    }
    binding->exe = exe;
    atomic_init(&binding->busy, false);
    *out = binding;
    return NXE_OK;
}

NXE_API void nxe_binding_release(nxe_binding *binding)
{
    if (!binding)
        return;
    nxe_free(binding->inputs);
    nxe_free(binding->outputs);
    nxe_free(binding->input_bound);
    nxe_free(binding->output_bound);
    nxe_free(binding->input_data);
    nxe_free(binding->output_data);
    nxe_free(binding);
}

static bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

static size_t tensor_bytes(const nxe_binding *binding, bool input, int32_t index)
{
    nxe_tensor_desc desc;
    nxe_status status = input ? nxe_executable_input_desc(binding->exe, index, &desc, NULL)
                              : nxe_executable_output_desc(binding->exe, index, &desc, NULL);
    return status == NXE_OK ? desc.data_size : 0;
}

/* An output buffer must not overlap any other bound buffer; an input one must not overlap a
 * bound output. `skip` is the slot being rebound. */
static nxe_status check_overlaps(const nxe_binding *binding, bool input, int32_t index,
                                 const void *data, size_t bytes, const char *where)
{
    const nxe_executable *exe = binding->exe;
    for (int32_t pass = 0; pass < 2; pass++) {
        const bool other_input = pass == 0;
        if (input && other_input)
            continue; /* inputs are only read: they may share memory */
        const int32_t count = other_input ? exe->num_inputs : exe->num_outputs;
        for (int32_t j = 0; j < count; j++) {
            if (other_input == input && j == index)
                continue;
            if (!(other_input ? binding->input_bound : binding->output_bound)[j])
                continue;
            const void *other = (other_input ? binding->inputs : binding->outputs)[j].data;
            if (overlap(data, bytes, other, tensor_bytes(binding, other_input, j)))
                return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                                 "%s: %s %d's buffer overlaps the buffer bound to %s %d; an "
                                 "output's buffer must overlap no other bound buffer",
                                 where, input ? "input" : "output", index,
                                 other_input ? "input" : "output", j);
        }
    }
    return NXE_OK;
}

static nxe_status bind(nxe_binding *binding, bool input, int32_t index, const nxe_tensor_desc *desc,
                       const char *where)
{
    if (!binding || !desc)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         binding ? "desc" : "binding");
    const nxe_executable *exe = binding->exe;
    const int32_t count = input ? exe->num_inputs : exe->num_outputs;
    if (index < 0 || index >= count)
        return nxe_error(NXE_ERROR_NOT_FOUND, "%s: index %d is outside [0, %d)", where, index,
                         count);
    nxe_status status = nxe_executable_check_io_desc(exe, input, index, desc, where);
    if (status != NXE_OK)
        return status;
    const size_t bytes = tensor_bytes(binding, input, index);
    int32_t dtype = NXE_DTYPE_NONE, element = 1;
    nxe_dtype_from_dlpack(desc->dtype_code, desc->dtype_bits, &dtype);
    nxe_dtype_info(dtype, NULL, &element);
    if (element > 1 && (uintptr_t)desc->data % (uintptr_t)element != 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: %s %d's buffer at %p is not aligned to its %d-byte elements", where,
                         input ? "input" : "output", index, desc->data, element);
    if (!claim(binding, where))
        return NXE_ERROR_INVALID_STATE;
    status = check_overlaps(binding, input, index, desc->data, bytes, where);
    if (status == NXE_OK) {
        (input ? binding->inputs : binding->outputs)[index] = *desc;
        (input ? binding->input_bound : binding->output_bound)[index] = true;
        (input ? binding->input_data : binding->output_data)[index] = desc->data;
    }
    unclaim(binding);
    return status;
}

NXE_API nxe_status nxe_binding_bind_input(nxe_binding *binding, int32_t index,
                                          const nxe_tensor_desc *desc)
{
    return bind(binding, true, index, desc, "nxe_binding_bind_input");
}

NXE_API nxe_status nxe_binding_bind_output(nxe_binding *binding, int32_t index,
                                           const nxe_tensor_desc *desc)
{
    return bind(binding, false, index, desc, "nxe_binding_bind_output");
}

NXE_API nxe_status nxe_binding_clear(nxe_binding *binding)
{
    const char *where = "nxe_binding_clear";
    if (!binding)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: binding is NULL", where);
    if (!claim(binding, where))
        return NXE_ERROR_INVALID_STATE;
    const nxe_executable *exe = binding->exe;
    memset(binding->inputs, 0, sizeof(nxe_tensor_desc) * (size_t)exe->num_inputs);
    memset(binding->outputs, 0, sizeof(nxe_tensor_desc) * (size_t)exe->num_outputs);
    memset(binding->input_bound, 0, sizeof(bool) * (size_t)exe->num_inputs);
    memset(binding->output_bound, 0, sizeof(bool) * (size_t)exe->num_outputs);
    unclaim(binding);
    return NXE_OK;
}

NXE_API nxe_status nxe_binding_run(nxe_binding *binding)
{
    const char *where = "nxe_binding_run";
    if (!binding)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: binding is NULL", where);
    nxe_executable *exe = binding->exe;
    if (!claim(binding, where))
        return NXE_ERROR_INVALID_STATE;
    nxe_status status = NXE_OK;
    for (int32_t i = 0; status == NXE_OK && i < exe->num_inputs; i++)
        if (!binding->input_bound[i])
            status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: input %d is not bound", where, i);
    for (int32_t i = 0; status == NXE_OK && i < exe->num_outputs; i++)
        if (!binding->output_bound[i])
            status = nxe_error(NXE_ERROR_INVALID_STATE, "%s: output %d is not bound", where, i);
    /* A remote executable's steps run on the worker: its transport reads the bound inputs and
     * writes the results straight into the bound output buffers. */
    if (status == NXE_OK && exe->remote)
        status = nxe_executable_run(exe, binding->inputs, exe->num_inputs, binding->outputs,
                                    exe->num_outputs);
    else if (status == NXE_OK)
        status = nxe_executable_run_bound(exe, binding->input_data, binding->output_data, where);
    unclaim(binding);
    return status;
}
