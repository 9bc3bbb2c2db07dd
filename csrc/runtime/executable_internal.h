/* executable_internal.h — a compiled plan: tensors as the executable keeps them, the steps
 * (one op run each) and the arena. Independent of the graph it came from. */
#ifndef NXE_EXECUTABLE_INTERNAL_H
#define NXE_EXECUTABLE_INTERNAL_H

#include "core/core.h"
#include "core/threadpool.h"
#include "ops/op_def.h"

typedef struct nxe_exe_tensor {
    char *name;
    int32_t kind;
    int32_t dtype;
    int32_t ndim;
    int64_t shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales;     /* storage behind quant.scales */
    size_t bytes;
    bool in_arena;     /* TRANSIENT */
    uint64_t arena_offset;
    void *storage;     /* CONSTANT / VARIABLE contents, owned */
} nxe_exe_tensor;

typedef struct nxe_exe_step {
    const nxe_op_def *def;
    char *op_name;
    void *params;
    int32_t num_inputs;
    int32_t num_outputs;
    int32_t *input_ids;  /* tensor index, -1 for an absent optional input */
    int32_t *output_ids;
    nxe_value *input_values;
    nxe_value *output_values;
} nxe_exe_step;

struct nxe_executable {
    nxe_exe_tensor *tensors;
    int32_t num_tensors;
    void **data;          /* per tensor: where it lives during the current run */
    nxe_exe_step *steps;
    int32_t num_steps;
    int32_t *input_ids;
    int32_t num_inputs;
    int32_t *output_ids;
    int32_t num_outputs;
    void *arena;
    uint64_t arena_bytes;
    uint64_t transient_bytes;
    uint64_t constant_bytes;
    nxe_thread_pool *pool;
    int32_t relax_precision;
};

/* An executable with `num_tensors` zeroed tensor slots and `num_steps` zeroed steps. */
nxe_status nxe_executable_alloc(int32_t num_tensors, int32_t num_steps, nxe_executable **out);

#endif
