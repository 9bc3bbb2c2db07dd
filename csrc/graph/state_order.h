/* state_order.h — ordering the ops of a graph whose ops write VARIABLE tensors (in-graph state;
 * docs/architecture.md, "In-graph state"). */
#ifndef NXE_STATE_ORDER_H
#define NXE_STATE_ORDER_H

#include "graph/graph_internal.h"

/* Whether an op of the graph writes a VARIABLE tensor. */
bool nxe_graph_writes_variables(const nxe_graph *graph);

/* Orders the graph's ops (op indices into `order`, num_ops entries) when ops write variables.
 * A variable whose writer depends on the variable's own value (through any chain of ops, other
 * variables not followed) is an update: every op reading it sees its value at the start of the
 * run, and its writer runs after all of them. Any other written variable is produced first and
 * read after, as an intermediate is. NXE_ERROR_INVALID_GRAPH naming the ops left unordered and
 * the updates among them when no order satisfies both, NXE_ERROR_OUT_OF_MEMORY. */
nxe_status nxe_graph_order_with_state(const nxe_graph *graph, int32_t *order);

#endif
