/* composed.c — compiling a graph whose composed ops were expanded into a copy of it
 * (graph/custom_ops.c): the copy is compiled, the executable made to own every byte it borrowed
 * from the copy, and the original graph's tensors told what inference settled. */
#include <string.h>

#include "graph/graph_internal.h"
#include "runtime/composed.h"

/* The bytes a serialize-only compile borrowed from `graph`, copied into the executable. */
static nxe_status own_borrowed_data(nxe_executable *exe)
{
    for (int32_t c = 0; c < exe->num_constants; c++) {
        nxe_exe_constant *constant = &exe->constants[c];
        if (constant->owned || !constant->data)
            continue;
        void *copy = nxe_alloc(constant->bytes ? constant->bytes : 1);
        if (!copy)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        memcpy(copy, constant->data, constant->bytes);
        for (int32_t i = 0; i < exe->num_tensors; i++)
            if (exe->tensors[i].constant == c && exe->tensors[i].storage == constant->data) {
                exe->tensors[i].storage = copy;
                exe->data[i] = copy;
            }
        constant->data = copy;
        constant->owned = true;
    }
    for (int32_t i = 0; i < exe->num_tensors; i++) {
        nxe_exe_tensor *t = &exe->tensors[i];
        if (t->kind != NXE_TENSOR_VARIABLE || !t->storage || t->owns_storage)
            continue;
        void *copy = nxe_alloc(t->bytes ? t->bytes : 1);
        if (!copy)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        memcpy(copy, t->storage, t->bytes);
        t->storage = copy;
        t->owns_storage = true;
        exe->data[i] = copy;
    }
    return NXE_OK;
}

nxe_status nxe_composed_compile(nxe_graph *graph, nxe_graph *expanded,
                                const nxe_compile_request *request, nxe_executable **out)
{
    nxe_status status = nxe_compile_graph(expanded, request, out);
    if (status == NXE_OK && request->serialize_only)
        status = own_borrowed_data(*out);
    /* What inference settled for the graph's own tensors, which lead the copy in order. */
    nxe_value *inferred =
        status == NXE_OK ? nxe_alloc_zeroed(sizeof(nxe_value) * (size_t)(graph->num_tensors + 1))
                         : NULL;
    if (status == NXE_OK && !inferred)
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    if (status == NXE_OK) {
        for (int32_t i = 0; i < graph->num_tensors && i < expanded->num_inferred; i++) {
            inferred[i] = expanded->inferred[i];
            inferred[i].quant = &graph->tensors[i]->quant;
            inferred[i].data = NULL;
        }
        nxe_free(graph->inferred);
        graph->inferred = inferred;
        graph->num_inferred = graph->num_tensors < expanded->num_inferred ? graph->num_tensors
                                                                          : expanded->num_inferred;
    }
    if (status != NXE_OK) {
        nxe_executable_release(*out);
        *out = NULL;
    }
    nxe_graph_release(expanded);
    return status;
}
