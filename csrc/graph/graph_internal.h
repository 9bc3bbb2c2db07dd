/* graph_internal.h — the graph IR behind the opaque handles of nxe.h: tensors, ops (a node of
 * the ops layer plus its bindings) and the graph's shape inference. Shared by csrc/graph, the
 * model-file codec and the compiler. */
#ifndef NXE_GRAPH_INTERNAL_H
#define NXE_GRAPH_INTERNAL_H

#include <stdatomic.h>

#include "core/core.h"
#include "ops/op_def.h"

struct nxe_context {
    atomic_int refcount;
    nxe_limits limits; /* resolved: what its graphs may grow to and compile with by default */
    /* registered op types (graph/custom_ops.c), newest first */
    struct nxe_custom_entry *custom_ops;
    /* set only while a model file is checked at open: op types with a '.' that nothing
     * registers decode as placeholders (ops/custom.h) */
    bool custom_placeholders;
};

struct nxe_tensor {
    nxe_graph *graph;
    int32_t index;
    char *name;
    int32_t kind;
    /* as declared by the user */
    int32_t dtype;
    int32_t ndim;
    int64_t shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales; /* storage behind quant.scales */
    void *data;    /* CONSTANT / VARIABLE contents */
    size_t data_size;
    nxe_op *producer;
    int32_t num_consumers;
};

struct nxe_op {
    nxe_node node; /* type, name, attributes */
    nxe_graph *graph;
    int32_t index;
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
    int32_t *name_slots;    /* open-addressing table of tensor indices by name, -1 free */
    int32_t num_name_slots; /* a power of two, at least twice the tensor count */
    nxe_op **ops;
    int32_t num_ops;
    int32_t op_capacity;
    /* the last inference (graph/infer.c): per tensor, its dtype and shape as settled, for
     * nxe_tensor_get_info; tensors added since report their declaration */
    nxe_value *inferred;
    int32_t num_inferred;
    /* set when the graph was built from a model file: binaries are tagged with it, and while
     * the graph is unedited they embed it with the file's metadata and annotations (JSON,
     * nxe_alloc'd, NUL-terminated), so that the embedded model is the file's model */
    bool has_source_fingerprint;
    uint8_t source_fingerprint[32];
    char *source_metadata;
    char *source_annotations;
};

/* Any successful edit makes the graph differ from the model file it was built from. */
static inline void nxe_graph_edited(nxe_graph *graph)
{
    graph->has_source_fingerprint = false;
}

/* Adds an op made from `node`, which the graph takes over (it is cleared, on failure too).
 * The node's name must be non-empty. */
nxe_status nxe_graph_add_node(nxe_graph *graph, nxe_node *node, nxe_op **out);

/* Frees an op and what it owns (not its tensors). */
void nxe_op_free(nxe_op *op);

/* What inference settles for the compiler. */
typedef struct nxe_graph_inference {
    int32_t *order;          /* the ops' indices in an order that runs producers first */
    void **params;           /* per op index: the params its rule made (nxe_alloc'd) */
    const nxe_value *values; /* per tensor index: settled dtype, rank and shape (the graph's
                                `inferred`; quant points at the tensor's, data is NULL) */
} nxe_graph_inference;

/* Checks that every op is bound, every consumed tensor produced and every input consumed,
 * orders the ops (naming the ops of a cycle) and runs each op's shape rule after checking its
 * inputs' dtypes against the schema; a result that contradicts what the user declared, or a
 * tensor above `max_tensor_bytes` (NXE_ERROR_SHAPE_MISMATCH), fails. On failure nothing needs
 * freeing. */
nxe_status nxe_graph_infer(nxe_graph *graph, uint64_t max_tensor_bytes, nxe_graph_inference *out);
/* Frees the order and the params not taken (set to NULL) by the caller. */
void nxe_graph_inference_free(const nxe_graph *graph, nxe_graph_inference *inference);

#endif
