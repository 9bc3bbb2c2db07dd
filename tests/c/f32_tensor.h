/* f32_tensor.h — the tensor declaration the C tests share: f32 for inputs, constants and
 * variables; the dtype left to inference for transient and output tensors. */
#ifndef NXE_TESTS_F32_TENSOR_H
#define NXE_TESTS_F32_TENSOR_H

#include <nxe/nxe.h>

static inline nxe_status add_f32_tensor(nxe_graph *graph, const char *name, int32_t kind,
                                        int32_t ndim, const int64_t *shape, nxe_tensor **out)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.kind = kind;
    spec.dtype =
        kind == NXE_TENSOR_TRANSIENT || kind == NXE_TENSOR_OUTPUT ? NXE_DTYPE_NONE : NXE_DTYPE_F32;
    spec.ndim = ndim;
    spec.shape = shape;
    return nxe_graph_add_tensor(graph, &spec, out);
}

#endif
