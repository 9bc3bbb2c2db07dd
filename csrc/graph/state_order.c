/* state_order.c — the op order of a graph with in-graph state: ops that write VARIABLE tensors.
 * Kahn's algorithm over explicit edges: an intermediate's producer before its readers; a written
 * variable's writer before its readers, unless the writer depends on the variable's value (an
 * update, s = Add(s, x)), in which case every reader comes first and sees the value the run
 * started with. */
#include <stdio.h>
#include <string.h>

#include "graph/state_order.h"

/* Op visits allowed to all the walks deciding which writes are updates together: far above a
 * decoder with a key and a value cache per layer (hundreds of walks over tens of thousands of
 * ops), far below what makes compiling hang. */
#define WALK_BUDGET (UINT64_C(1) << 28)

bool nxe_graph_writes_variables(const nxe_graph *graph)
{
    for (int32_t i = 0; i < graph->num_tensors; i++)
        if (graph->tensors[i]->kind == NXE_TENSOR_VARIABLE && graph->tensors[i]->producer)
            return true;
    return false;
}

/* Per tensor, the ops reading it (once per input slot): readers[first[t] .. first[t + 1]). */
typedef struct readers_of {
    int32_t *first;
    int32_t *readers;
} readers_of;

static bool readers_build(const nxe_graph *graph, readers_of *r)
{
    size_t edges = 0;
    for (int32_t i = 0; i < graph->num_ops; i++)
        edges += (size_t)graph->ops[i]->num_inputs;
    r->first = nxe_alloc_zeroed(sizeof(int32_t) * ((size_t)graph->num_tensors + 2));
    r->readers = nxe_alloc(sizeof(int32_t) * (edges + 1));
    if (!r->first || !r->readers)
        return false;
    for (int32_t i = 0; i < graph->num_ops; i++)
        for (int32_t j = 0; j < graph->ops[i]->num_inputs; j++)
            if (graph->ops[i]->inputs[j])
                r->first[graph->ops[i]->inputs[j]->index + 2]++;
    for (int32_t t = 0; t < graph->num_tensors; t++)
        r->first[t + 2] += r->first[t + 1];
    for (int32_t i = 0; i < graph->num_ops; i++)
        for (int32_t j = 0; j < graph->ops[i]->num_inputs; j++)
            if (graph->ops[i]->inputs[j])
                r->readers[r->first[graph->ops[i]->inputs[j]->index + 1]++] = i;
    return true;
}

/* Whether `writer` depends on variable `v` (1) or not (0): a walk from v through readers and
 * the tensors they produce, variables not followed; -1 once `budget` ops have been visited in
 * all walks together (a crafted model file could otherwise ask for millions of walks over
 * millions of ops). `seen` (num_ops) and `stack` (num_tensors + 1: each tensor
 * has one producer, so enters once) are scratch. */
static int depends_on(const nxe_graph *graph, const readers_of *r, const nxe_tensor *v,
                      const nxe_op *writer, bool *seen, int32_t *stack, uint64_t *budget)
{
    memset(seen, 0, sizeof(bool) * (size_t)graph->num_ops);
    int32_t top = 0;
    stack[top++] = v->index;
    while (top > 0) {
        int32_t t = stack[--top];
        for (int32_t c = r->first[t]; c < r->first[t + 1]; c++) {
            const nxe_op *op = graph->ops[r->readers[c]];
            if (op == writer)
                return 1;
            if (seen[op->index])
                continue;
            if (*budget == 0)
                return -1;
            (*budget)--;
            seen[op->index] = true;
            for (int32_t o = 0; o < op->num_outputs; o++)
                if (op->outputs[o]->kind != NXE_TENSOR_VARIABLE)
                    stack[top++] = op->outputs[o]->index;
        }
    }
    return 0;
}

/* The edges `from` -> `to` as lists per op: next[start[op] .. start[op + 1]). Two passes: count
 * (lists NULL), then fill. */
static void for_each_edge(const nxe_graph *graph, const bool *update, int32_t *count,
                          int32_t *start, int32_t *next, int32_t *pending)
{
    for (int32_t i = 0; i < graph->num_ops; i++) {
        const nxe_op *op = graph->ops[i];
        for (int32_t j = 0; j < op->num_inputs; j++) {
            const nxe_tensor *t = op->inputs[j];
            if (!t || !t->producer || t->producer == op)
                continue;
            int32_t from = t->producer->index, to = i;
            if (t->kind == NXE_TENSOR_VARIABLE && update[t->index])
                from = i, to = t->producer->index;
            if (!start) {
                count[from]++;
                continue;
            }
            next[start[from] + count[from]++] = to;
            pending[to]++;
        }
    }
}

static nxe_status report_unordered(const nxe_graph *graph, const bool *update,
                                   const int32_t *pending)
{
    char ops[400] = "", updates[400] = "";
    size_t used = 0, used_updates = 0;
    int32_t listed = 0;
    for (int32_t i = 0; i < graph->num_ops && used < sizeof ops; i++) {
        if (pending[i] <= 0)
            continue;
        const nxe_op *op = graph->ops[i];
        if (listed++ < 8)
            used += (size_t)snprintf(ops + used, sizeof ops - used, "%s'%s'", used ? ", " : "",
                                     op->node.name);
        for (int32_t o = 0; o < op->num_outputs && used_updates < sizeof updates; o++)
            if (update[op->outputs[o]->index])
                used_updates += (size_t)snprintf(
                    updates + used_updates, sizeof updates - used_updates, "%s'%s' (by '%s')",
                    used_updates ? ", " : "", op->outputs[o]->name, op->node.name);
    }
    if (used_updates)
        return nxe_error(NXE_ERROR_INVALID_GRAPH,
                         "the graph has a cycle through ops %s%s; it updates variable %s, whose "
                         "writer runs after every op reading the variable's old value, so no "
                         "reader may depend on the writer's results",
                         ops, listed > 8 ? ", ..." : "", updates);
    return nxe_error(NXE_ERROR_INVALID_GRAPH, "the graph has a cycle through ops %s%s", ops,
                     listed > 8 ? ", ..." : "");
}

nxe_status nxe_graph_order_with_state(const nxe_graph *graph, int32_t *order)
{
    const size_t n = (size_t)graph->num_ops + 1, nt = (size_t)graph->num_tensors + 1;
    readers_of r = {0};
    bool *update = nxe_alloc_zeroed(sizeof(bool) * nt);
    bool *seen = nxe_alloc(sizeof(bool) * n);
    int32_t *stack = nxe_alloc(sizeof(int32_t) * nt);
    int32_t *count = nxe_alloc_zeroed(sizeof(int32_t) * n);
    int32_t *start = nxe_alloc_zeroed(sizeof(int32_t) * (n + 1));
    int32_t *pending = nxe_alloc_zeroed(sizeof(int32_t) * n);
    int32_t *next = NULL;
    nxe_status status = NXE_OK;
    if (!update || !seen || !stack || !count || !start || !pending || !readers_build(graph, &r))
        status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    uint64_t budget = WALK_BUDGET;
    for (int32_t i = 0; status == NXE_OK && i < graph->num_tensors; i++) {
        const nxe_tensor *t = graph->tensors[i];
        if (t->kind != NXE_TENSOR_VARIABLE || !t->producer)
            continue;
        int found = depends_on(graph, &r, t, t->producer, seen, stack, &budget);
        if (found < 0)
            status = nxe_error(NXE_ERROR_INVALID_GRAPH,
                               "ordering the writes of variables took more than %llu op visits "
                               "(at variable '%s'); the graph has too many variables written "
                               "over too many ops",
                               (unsigned long long)WALK_BUDGET, t->name);
        update[i] = found > 0;
    }
    if (status == NXE_OK) {
        for_each_edge(graph, update, count, NULL, NULL, NULL);
        for (int32_t i = 0; i < graph->num_ops; i++)
            start[i + 1] = start[i] + count[i];
        next = nxe_alloc(sizeof(int32_t) * ((size_t)start[graph->num_ops] + 1));
        if (!next)
            status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    if (status == NXE_OK) {
        memset(count, 0, sizeof(int32_t) * n);
        for_each_edge(graph, update, count, start, next, pending);
        /* `order` doubles as the queue: ops enter it in the order they run. */
        int32_t head = 0, tail = 0;
        for (int32_t i = 0; i < graph->num_ops; i++)
            if (pending[i] == 0)
                order[tail++] = i;
        while (head < tail) {
            int32_t op = order[head++];
            for (int32_t e = start[op]; e < start[op + 1]; e++)
                if (--pending[next[e]] == 0)
                    order[tail++] = next[e];
        }
        if (tail != graph->num_ops)
            status = report_unordered(graph, update, pending);
    }
    nxe_free(r.first);
    nxe_free(r.readers);
    nxe_free(update);
    nxe_free(seen);
    nxe_free(stack);
    nxe_free(count);
    nxe_free(start);
    nxe_free(pending);
    nxe_free(next);
    return status;
}
