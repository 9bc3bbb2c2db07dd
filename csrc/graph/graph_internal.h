/* graph_internal.h — the graph IR behind the opaque handles of nxe.h: tensors, ops with their
 * attributes and bindings. Shared by csrc/graph and the compiler in csrc/runtime. */
#ifndef NXE_GRAPH_INTERNAL_H
#define NXE_GRAPH_INTERNAL_H

#include <stdatomic.h>

#include "core/core.h"
#include "ops/op_def.h"

struct nxe_context {
    atomic_int refcount;
};

typedef struct nxe_attr {
    char *name;
    int32_t type; /* enum nxe_attr_type */
    int64_t int_value;
    double float_value;
    char *string_value;
    int64_t *ints;
    float *floats;
    int32_t count; /* INTS / FLOATS */
} nxe_attr;

struct nxe_tensor {
    nxe_graph *graph;
    int32_t index;
    char *name;
    int32_t kind;
    /* as declared by the user */
    int32_t dtype;
    int32_t ndim;
    int64_t shape[NXE_MAX_RANK];
    /* as settled by the last compile (equal to the declaration where it was complete) */
    int32_t inferred_dtype;
    int32_t inferred_ndim;
    int64_t inferred_shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales; /* storage behind quant.scales */
    void *data;    /* CONSTANT / VARIABLE contents */
    size_t data_size;
    nxe_op *producer;
    int32_t num_consumers;
};

struct nxe_op {
    nxe_graph *graph;
    int32_t index;
    const nxe_op_def *def;
    char *name;
    nxe_attr *attrs;
    int32_t num_attrs;
    int32_t attr_capacity;
    nxe_tensor **inputs; /* NULL entries: absent optional inputs */
    int32_t num_inputs;
    bool inputs_bound;
    nxe_tensor **outputs;
    int32_t num_outputs;
    bool outputs_bound;
};

struct nxe_graph {
    nxe_context *context;
    nxe_tensor **tensors;
    int32_t num_tensors;
    int32_t tensor_capacity;
    nxe_op **ops;
    int32_t num_ops;
    int32_t op_capacity;
    /* set when the graph was built from a model file: binaries are tagged with it */
    bool has_source_fingerprint;
    uint8_t source_fingerprint[32];
};

/* Any successful edit makes the graph differ from the model file it was built from. */
static inline void nxe_graph_edited(nxe_graph *graph)
{
    graph->has_source_fingerprint = false;
}

/* The node view handed to op rules is the op itself. */
static inline const nxe_op *nxe_node_op(const nxe_node *node)
{
    return (const nxe_op *)(const void *)node;
}
static inline const nxe_node *nxe_op_node(const nxe_op *op)
{
    return (const nxe_node *)(const void *)op;
}

/* The unquoted text of a schema's JSON string default, in static storage; NULL if too long. */
const char *nxe_registry_unquoted(const char *quoted);

/* Frees an op and what it owns (not its tensors). */
void nxe_op_free(nxe_op *op);

/* Grows *items (an array of `size`-byte elements) to hold at least `needed`. */
nxe_status nxe_grow_array(void **items, int32_t *capacity, int32_t needed, size_t size);

#endif
