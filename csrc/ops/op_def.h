/* op_def.h — the contract between the graph compiler and one op family: a schema (what the
 * registry publishes), a shape/dtype rule run at compile time, and a run function that lowers
 * to kernels. Ops never allocate per run and never see the graph. */
#ifndef NXE_OP_DEF_H
#define NXE_OP_DEF_H

#include "core/core.h"
#include "core/threadpool.h"
#include "dispatch.h"
#include "ops/node.h"

/* Quantization of one tensor (internal mirror of the public setters). */
typedef struct nxe_quant {
    int32_t type; /* enum nxe_quant_type */
    float scale;
    int32_t zero_point;
    int32_t axis;
    int32_t num_scales;
    const float *scales;
    int32_t fractional_length;
} nxe_quant;

/* The quantization of unquantized values and absent optional inputs. */
extern const nxe_quant nxe_no_quant;

/* One tensor as an op sees it. At infer time `data` is set for CONSTANT tensors only
 * (NULL otherwise); at run time it is the tensor's buffer. An absent optional input has
 * dtype NXE_DTYPE_NONE. */
typedef struct nxe_value {
    int32_t dtype;
    int32_t ndim; /* -1 = unknown (outputs before inference) */
    int64_t shape[NXE_MAX_RANK];
    const nxe_quant *quant; /* never NULL at infer or run: type NONE when unquantized */
    void *data;
} nxe_value;

/* Compile-time rule. Inputs have settled dtypes and shapes (and data, for constants); their
 * dtypes already passed the schema's masks. Outputs arrive as declared by the user (dtype
 * NXE_DTYPE_NONE / ndim -1 / dims -1 where left to inference; quant as declared): the rule may
 * read them (QuantizeLinear takes its dtype and quantization from the declared output) and
 * must set every output's dtype, ndim and shape. The compiler then rejects a result that
 * contradicts what was declared. Fills `params` (params_size bytes, zeroed) with everything
 * run needs; params hold plain values, never pointers, so a plan can be saved. */
typedef nxe_status (*nxe_op_infer_fn)(const nxe_node *node, const nxe_value *inputs,
                                      int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                      void *params);

/* Run-time body. Shapes and dtypes are those infer settled; outputs' data are written.
 * May fail only on data-dependent errors (e.g. an index out of range), with NXE_ERROR_RUNTIME
 * and a message. Uses `pool` (maybe NULL) for parallel work; results must not depend on the
 * number of threads. */
typedef nxe_status (*nxe_op_run_fn)(const void *params, const nxe_value *inputs, int32_t num_inputs,
                                    nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool);

/* What the compiler fused into a step after its own op: an epilogue and maybe a residual
 * operand, which is one more input after the op's own. */
typedef struct nxe_fused_epilogue {
    nxe_epilogue epilogue;  /* kernels/gemm.h */
    int32_t residual_input; /* index into the step's inputs, -1 for none */
} nxe_fused_epilogue;

/* What preparation may depend on besides the step itself. */
typedef struct nxe_prepare_context {
    const nxe_kernel_table *kernels; /* this process's kernels */
    int32_t relax_precision;         /* fp32 work may run in bf16 */
    int32_t winograd;                /* an nxe_winograd_mode for 3x3 convolutions */
} nxe_prepare_context;

/* Optional, after infer (compile) or the loader's shape rules: readies the step for the
 * kernels this process runs — packs constant weights once, never per run. Inputs carry data
 * for constants. Leaves *prepared NULL when the op keeps its reference path (no fast kernel,
 * an unsupported configuration); otherwise *prepared is one nxe_alloc block the executable
 * frees with nxe_free. *workspace_bytes (0 on entry) is the scratch memory a run needs, e.g.
 * to pack an operand that changes every run; the executable allocates one workspace, as large
 * as its largest step needs, shared by all steps. */
typedef nxe_status (*nxe_op_prepare_fn)(const void *params, const nxe_value *inputs,
                                        int32_t num_inputs, const nxe_prepare_context *context,
                                        void **prepared, size_t *workspace_bytes);

/* The run of a prepared step; `fused` is never NULL (activation NONE and residual_input -1
 * when nothing was fused); `workspace` holds at least the bytes prepare asked for, 64-byte
 * aligned. */
typedef nxe_status (*nxe_op_run_prepared_fn)(const void *params, const void *prepared,
                                             const nxe_fused_epilogue *fused, void *workspace,
                                             const nxe_value *inputs, int32_t num_inputs,
                                             nxe_value *outputs, int32_t num_outputs,
                                             nxe_thread_pool *pool);

/* How a prepared step runs by rows of its output, for depth-first runs of convolution stacks
 * (transform/bands.c): output 0 has `rows` rows; its rows [r0, r1) read rows [r0 - halo_top,
 * r1 + halo_bottom) of input 0 (clipped to that input) and the same rows of a fused residual;
 * a range must start at a multiple of `row_unit`; one output row holds `row_bytes`. */
typedef struct nxe_band_shape {
    int64_t rows;
    int64_t halo_top, halo_bottom;
    int64_t row_unit;
    int64_t row_bytes;
} nxe_band_shape;

/* Optional, with prepare: whether the prepared step can run by rows, and how (*shape). */
typedef bool (*nxe_op_band_shape_fn)(const void *params, const void *prepared,
                                     nxe_band_shape *shape);
/* With band_shape: run_prepared restricted to output rows [row_begin, row_end); running every
 * row once, in any split, writes what run_prepared writes, bit for bit. */
typedef nxe_status (*nxe_op_run_rows_fn)(const void *params, const void *prepared,
                                         const nxe_fused_epilogue *fused, void *workspace,
                                         const nxe_value *inputs, int32_t num_inputs,
                                         nxe_value *outputs, int32_t num_outputs,
                                         nxe_thread_pool *pool, int64_t row_begin, int64_t row_end);

/* Optional: whether this step (f32, one input, elementwise) is an activation a GEMM epilogue
 * can apply, and which one (sets activation, alpha, beta). */
typedef bool (*nxe_op_as_activation_fn)(const void *params, const nxe_value *inputs,
                                        int32_t num_inputs, nxe_epilogue *epilogue);

/* With prepare: the name of the kernel a prepared step runs ("f32-gemm-8x48-avx512"), written
 * NUL-terminated into name[size], for profiles (nxe_executable_get_profile). */
typedef void (*nxe_op_kernel_name_fn)(const void *prepared, char *name, size_t size);

typedef struct nxe_op_def {
    nxe_op_info info; /* the published schema */
    size_t params_size;
    nxe_op_infer_fn infer;
    nxe_op_run_fn run;
    nxe_op_prepare_fn prepare; /* optional, with run_prepared */
    nxe_op_run_prepared_fn run_prepared;
    nxe_op_as_activation_fn as_activation; /* optional */
    nxe_op_kernel_name_fn kernel_name;     /* with prepare */
    nxe_op_band_shape_fn band_shape;       /* optional, with run_rows */
    nxe_op_run_rows_fn run_rows;
} nxe_op_def;

/* Each op family file exports a table; the registry (csrc/ops/registry.c) lists them. */
typedef struct nxe_op_family {
    const nxe_op_def *defs;
    int32_t count;
} nxe_op_family;

const nxe_op_def *nxe_op_def_find(const char *op_type);
/* The unquoted text of a schema's JSON string default, in static storage; NULL if too long. */
const char *nxe_registry_unquoted(const char *quoted);

/* Dtype masks for schemas. */
#define NXE_MASK(dt) (1u << (dt))
#define NXE_MASK_FLOAT (NXE_MASK(NXE_DTYPE_F32))
#define NXE_MASK_INDEX (NXE_MASK(NXE_DTYPE_I32) | NXE_MASK(NXE_DTYPE_I64))
#define NXE_MASK_ALL                                                                               \
    (NXE_MASK(NXE_DTYPE_F32) | NXE_MASK(NXE_DTYPE_F16) | NXE_MASK(NXE_DTYPE_BF16) |                \
     NXE_MASK(NXE_DTYPE_I8) | NXE_MASK(NXE_DTYPE_U8) | NXE_MASK(NXE_DTYPE_I16) |                   \
     NXE_MASK(NXE_DTYPE_I32) | NXE_MASK(NXE_DTYPE_I64) | NXE_MASK(NXE_DTYPE_BOOL) |                \
     NXE_MASK(NXE_DTYPE_F64) | NXE_MASK(NXE_DTYPE_U16) | NXE_MASK(NXE_DTYPE_U32) |                 \
     NXE_MASK(NXE_DTYPE_U64))
#define NXE_INFO(name_, summary_, ins, outs, attrs_)                                               \
    {sizeof(nxe_op_info),                                                                          \
     name_,                                                                                        \
     summary_,                                                                                     \
     (int32_t)(sizeof(ins) / sizeof((ins)[0])),                                                    \
     ins,                                                                                          \
     (int32_t)(sizeof(outs) / sizeof((outs)[0])),                                                  \
     outs,                                                                                         \
     (int32_t)(sizeof(attrs_) / sizeof((attrs_)[0])),                                              \
     attrs_}
#define NXE_INFO_NOATTR(name_, summary_, ins, outs)                                                \
    {sizeof(nxe_op_info),                                                                          \
     name_,                                                                                        \
     summary_,                                                                                     \
     (int32_t)(sizeof(ins) / sizeof((ins)[0])),                                                    \
     ins,                                                                                          \
     (int32_t)(sizeof(outs) / sizeof((outs)[0])),                                                  \
     outs,                                                                                         \
     0,                                                                                            \
     NULL}

/* One nxe_alloc block for a prepared step: a header of header_size bytes, then data_bytes
 * starting 64-byte aligned at *data. NULL when out of memory. */
void *nxe_prepared_alloc(size_t header_size, size_t data_bytes, void **data);

/* Where batch `batch` of two broadcast operands starts (elements): batch is an index into the
 * row-major batch shape, each operand's strides are 0 along dimensions it repeats. */
void nxe_batch_offsets(int32_t batch_ndim, const int64_t *batch_shape, const int64_t *a_strides,
                       const int64_t *b_strides, int64_t batch, int64_t *a_offset,
                       int64_t *b_offset);

/* A parallel range [begin, end) over tiles numbered batch by batch, tiles_per_batch each: the
 * batch `begin` lies in, and its tiles [*first, *last) inside the range. */
static inline int64_t nxe_batch_tile_span(int64_t begin, int64_t end, int64_t tiles_per_batch,
                                          int64_t *first, int64_t *last)
{
    *first = begin % tiles_per_batch;
    *last = end - begin < tiles_per_batch - *first ? *first + (end - begin) : tiles_per_batch;
    return begin / tiles_per_batch;
}

/* Shared shape helpers for op rules. */
/* numpy broadcasting of two shapes; fails with a node error naming both shapes. */
nxe_status nxe_broadcast_shapes(const nxe_node *node, int32_t ndim_a, const int64_t *a,
                                int32_t ndim_b, const int64_t *b, int32_t *ndim_out, int64_t *out);
/* Normalizes a possibly negative axis into [0, ndim); node error when out of range. */
nxe_status nxe_normalize_axis(const nxe_node *node, int64_t axis, int32_t ndim, int32_t *out);
/* Element count and byte size of a value, saturating at INT64_MAX and SIZE_MAX where they
 * overflow: a rule may size the outputs it just shaped without checking, because inference
 * refuses any output above the per-tensor limit (graph/infer.c) before its params are used. */
int64_t nxe_value_numel(const nxe_value *value);
size_t nxe_value_bytes(const nxe_value *value);
/* Fails (DTYPE_MISMATCH, naming the input) unless value dtype is in mask. */
nxe_status nxe_check_dtype(const nxe_node *node, const char *what, const nxe_value *value,
                           uint32_t mask);

#endif
