/* custom_ops.h — the op types a context registers (graph/custom_ops.c, on the definitions of
 * ops/custom.h): lookup by name, release with the context, and the expansion of composed ops
 * before a graph compiles. */
#ifndef NXE_GRAPH_CUSTOM_OPS_H
#define NXE_GRAPH_CUSTOM_OPS_H

#include "ops/custom.h"

/* The op type `op_type` in `ctx` (registered first, then built-in); ctx may be NULL. */
const nxe_op_def *nxe_context_find_op(const nxe_context *ctx, const char *op_type);
/* Drops the context's registrations (at its release). */
void nxe_context_custom_free(nxe_context *ctx);

/* A copy of `graph` with every composed op replaced by its body (recursively), in the graph's
 * context; *out is NULL when the graph has no composed op. */
nxe_status nxe_composed_expand(const nxe_graph *graph, nxe_graph **out);

#endif
