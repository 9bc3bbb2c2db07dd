/* custom.h — op types a program registers in a context (nxe_context_register_op and
 * nxe_context_register_composed_op, graph/custom_ops.c): each is an op definition owned by a
 * reference-counted entry, which every node of the type holds (nxe_node_init, nxe_node_clear),
 * so the entry outlives the context while graphs, plans and executables use it. */
#ifndef NXE_CUSTOM_H
#define NXE_CUSTOM_H

#include "ops/op_def.h"

typedef struct nxe_context nxe_context;
typedef struct nxe_graph nxe_graph;

/* Whether `def` is a registered op (callbacks or composed); NULL is neither. */
bool nxe_custom_def_is_registered(const nxe_op_def *def);
/* Whether `def` is an op with callbacks (it has a per-step instance, see below). */
bool nxe_custom_def_has_callbacks(const nxe_op_def *def);
/* The body of a composed op, NULL for any other def. */
const nxe_graph *nxe_custom_def_body(const nxe_op_def *def);

/* Reference counting of registered defs; both ignore built-in defs and NULL. */
void nxe_custom_def_retain(const nxe_op_def *def);
void nxe_custom_def_release(const nxe_op_def *def);

/* The op type `op_type` in `ctx` (registered first, then built-in); ctx may be NULL. */
const nxe_op_def *nxe_context_find_op(const nxe_context *ctx, const char *op_type);
/* Drops the context's registrations (at its release). */
void nxe_context_custom_free(nxe_context *ctx);

/* A step of an op with callbacks, once its params are made: copies the node (its attributes
 * for compute) and calls the op's prepare with the inputs (data set for constants). */
nxe_status nxe_custom_prepare_step(const nxe_node *node, void *params, const nxe_value *inputs,
                                   int32_t num_inputs);
/* Frees what nxe_custom_prepare_step made (params may be NULL or unprepared). */
void nxe_custom_step_clear(const nxe_node *node, void *params);

/* A copy of `graph` with every composed op replaced by its body (recursively), in the graph's
 * context; *out is NULL when the graph has no composed op. */
nxe_status nxe_composed_expand(const nxe_graph *graph, nxe_graph **out);
/* Compiles `expanded` (from nxe_composed_expand, which this releases) for `graph`: the
 * executable owns all its bytes, and the graph's tensors report what inference settled. */
typedef struct nxe_compile_request nxe_compile_request;
typedef struct nxe_executable nxe_executable;
nxe_status nxe_composed_compile(nxe_graph *graph, nxe_graph *expanded,
                                const nxe_compile_request *request, nxe_executable **out);

#endif
