/* composed.h — compiling a graph whose composed ops graph/custom_ops.c expanded into a copy. */
#ifndef NXE_RUNTIME_COMPOSED_H
#define NXE_RUNTIME_COMPOSED_H

#include "runtime/executable_internal.h"

/* Compiles `expanded` (from nxe_composed_expand, which this releases) for `graph`: the
 * executable owns all its bytes, and the graph's tensors report what inference settled. */
nxe_status nxe_composed_compile(nxe_graph *graph, nxe_graph *expanded,
                                const nxe_compile_request *request, nxe_executable **out);

#endif
