/* plan.h — a plan: the tensors and the ordered steps an executable runs, as the compiler and
 * the binary loader make them and the passes in transform/ rewrite them. Knows nothing of the
 * graph a plan came from. */
#ifndef NXE_PLAN_H
#define NXE_PLAN_H

#include "ops/op_def.h"

typedef struct nxe_exe_tensor {
    char *name;
    int32_t kind;
    int32_t dtype;
    int32_t ndim;
    int64_t shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales; /* storage behind quant.scales */
    size_t bytes;
    bool in_arena; /* TRANSIENT */
    uint64_t arena_offset;
    int32_t constant;  /* CONSTANT: which distinct constant buffer it uses; -1 otherwise */
    void *storage;     /* CONSTANT: the constant's bytes (shared, not owned by the tensor);
                          VARIABLE: the current value */
    bool owns_storage; /* VARIABLE storage to free with the executable */
    void *initial;     /* VARIABLE: the value it starts from (nxe_executable_reset_variable) */
    bool owns_initial; /* `initial` to free with the executable */
} nxe_exe_tensor;

/* One distinct constant buffer: tensors with equal dtype, shape, quantization and bytes
 * share it. */
typedef struct nxe_exe_constant {
    void *data;
    size_t bytes;
    bool owned; /* false: the bytes live in the executable's file mapping (or, in a plan to be
                   written, in the graph) */
} nxe_exe_constant;

typedef struct nxe_exe_step {
    nxe_node node; /* the op: its definition, name and attributes */
    void *params;  /* made by the op's shape rule, at compile and again at load */
    int32_t num_inputs;
    int32_t num_outputs;
    int32_t *input_ids; /* tensor index, -1 for an absent optional input */
    int32_t *output_ids;
    nxe_value *input_values;
    nxe_value *output_values;
    void *prepared;           /* from the op's prepare (packed weights), or NULL */
    nxe_fused_epilogue fused; /* what transform/fold_epilogues.c folded into this step */
    /* Depth-first runs (transform/bands.c): the first step of a chain run band by band holds
     * the chain's step count and the rows of its last step's output one band adds; 0 for
     * other steps. Every step of a chain has its band shape. */
    int32_t band_steps;
    int64_t band_rows;
    nxe_band_shape band;
} nxe_exe_step;

/* Frees what a step owns and zeroes it. */
void nxe_exe_step_clear(nxe_exe_step *step);

#endif
