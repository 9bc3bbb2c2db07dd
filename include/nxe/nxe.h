/* nxe.h — the nxe core ABI: errors, logging, graphs of tensors and ops, the op registry,
 * compilation and executables. Plain C99; parses with pycparser after `cc -E`.
 *
 * A worked example (y = relu(x + b)):
 *
 *   nxe_context *ctx; nxe_graph *g; nxe_executable *exe;
 *   nxe_context_create(&ctx);
 *   nxe_graph_create(ctx, &g);
 *   int64_t shape[2] = {2, 3};
 *   nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
 *   spec.name = "x"; spec.dtype = NXE_DTYPE_F32; spec.kind = NXE_TENSOR_INPUT;
 *   spec.ndim = 2; spec.shape = shape;
 *   nxe_tensor *x, *b, *s, *y;
 *   nxe_graph_add_tensor(g, &spec, &x);
 *   spec.name = "b"; spec.kind = NXE_TENSOR_CONSTANT;
 *   nxe_graph_add_tensor(g, &spec, &b);
 *   nxe_tensor_set_data(b, bias_values, sizeof bias_values);
 *   spec.name = "s"; spec.kind = NXE_TENSOR_TRANSIENT; spec.ndim = -1;   // left to inference
 *   nxe_graph_add_tensor(g, &spec, &s);
 *   spec.name = "y"; spec.kind = NXE_TENSOR_OUTPUT;
 *   nxe_graph_add_tensor(g, &spec, &y);
 *   nxe_op *add, *relu;
 *   nxe_graph_add_op(g, "Add", "add0", &add);
 *   nxe_tensor *add_in[2] = {x, b};
 *   nxe_op_bind_inputs(add, add_in, 2);
 *   nxe_op_bind_outputs(add, &s, 1);
 *   nxe_graph_add_op(g, "Relu", "relu0", &relu);
 *   nxe_op_bind_inputs(relu, &s, 1);
 *   nxe_op_bind_outputs(relu, &y, 1);
 *   nxe_compile_options opts = NXE_COMPILE_OPTIONS_INIT;
 *   if (nxe_graph_compile(g, &opts, &exe) != NXE_OK) puts(nxe_last_error());
 *   nxe_tensor_desc in = {0}, out = {0};   // fill data, data_size, ndim, dtype, shape
 *   nxe_executable_run(exe, &in, 1, &out, 1);
 *   nxe_executable_release(exe); nxe_graph_release(g); nxe_context_release(ctx);
 *
 * Conventions: every call that can fail returns nxe_status (NXE_OK = 0) and leaves a message
 * for nxe_last_error() on the calling thread; out-params are set to NULL/0 on failure;
 * objects end with their _release function, and _release(NULL) does nothing. Pointers the
 * caller passes are borrowed for the duration of the call. The library never aborts, exits,
 * prints or reads stdin: it logs only through nxe_set_log_callback.
 *
 * Threads: a graph is used from one thread at a time; an executable runs one request at a
 * time (calls on one executable must not overlap); distinct objects may be used from
 * distinct threads freely.
 */
#ifndef NXE_NXE_H
#define NXE_NXE_H

#ifndef NXE_NO_SYSTEM_HEADERS
#include <stddef.h>
#include <stdint.h>
#endif

#ifndef NXE_API
#if defined(_WIN32) && defined(NXE_BUILDING)
#define NXE_API __declspec(dllexport)
#elif defined(_WIN32)
#define NXE_API __declspec(dllimport)
#else
#define NXE_API __attribute__((visibility("default")))
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ------------------------------------------------------------------------ */

#define NXE_API_VERSION_MAJOR 0
#define NXE_API_VERSION_MINOR 4
#define NXE_MAX_RANK 6

/* (major << 16) | minor of the library actually loaded; compare with the macros above. */
NXE_API uint32_t nxe_api_version(void);
/* Library version as "MAJOR.MINOR.PATCH"; static storage. */
NXE_API const char *nxe_version_string(void);

/* ---- Status and errors ------------------------------------------------------------------ */

typedef int32_t nxe_status;
/* Callers must accept codes not listed here (treat them as failures). */
enum nxe_status_code {
    NXE_OK = 0,
    NXE_ERROR_INVALID_ARGUMENT = 1, /* NULL where a value is needed, out-of-range value */
    NXE_ERROR_OUT_OF_MEMORY = 2,
    NXE_ERROR_INVALID_GRAPH = 3,    /* cycles, unbound or doubly-bound tensors, unknown ops */
    NXE_ERROR_SHAPE_MISMATCH = 4,
    NXE_ERROR_DTYPE_MISMATCH = 5,
    NXE_ERROR_UNSUPPORTED = 6,      /* valid request this build or op cannot do */
    NXE_ERROR_NOT_FOUND = 7,        /* no such op type, attribute, tensor or index */
    NXE_ERROR_INVALID_STATE = 8,    /* call out of order, e.g. editing a compiled graph */
    NXE_ERROR_BUFFER_TOO_SMALL = 9, /* two-call pattern: the size needed is reported back */
    NXE_ERROR_IO = 10,
    NXE_ERROR_FORMAT = 11,          /* malformed or corrupted file */
    NXE_ERROR_RUNTIME = 12,         /* data-dependent failure during a run (index out of range) */
    NXE_ERROR_INTERNAL = 13
};

/* Message of the last failed call on this thread ("" if none). Valid until the next failing
 * call on the same thread. */
NXE_API const char *nxe_last_error(void);
/* Short name of a status code, e.g. "NXE_ERROR_SHAPE_MISMATCH"; static storage. */
NXE_API const char *nxe_status_name(nxe_status status);

/* ---- Logging --------------------------------------------------------------------------- */

enum nxe_log_level {
    NXE_LOG_ERROR = 0,
    NXE_LOG_WARNING = 1,
    NXE_LOG_INFO = 2,
    NXE_LOG_DEBUG = 3
};
/* Called from any thread of the library; `message` lives for the call only. */
typedef void (*nxe_log_fn)(void *user_data, int32_t level, const char *message);
/* Sets the process-wide log callback (NULL: silence) and the most verbose level delivered. */
NXE_API nxe_status nxe_set_log_callback(nxe_log_fn fn, void *user_data, int32_t max_level);

/* ---- Data types ------------------------------------------------------------------------ */

enum nxe_dtype {
    NXE_DTYPE_NONE = 0,
    NXE_DTYPE_F32 = 1,
    NXE_DTYPE_F16 = 2,
    NXE_DTYPE_BF16 = 3,
    NXE_DTYPE_I8 = 4,
    NXE_DTYPE_U8 = 5,
    NXE_DTYPE_I16 = 6,
    NXE_DTYPE_I32 = 7,
    NXE_DTYPE_I64 = 8,
    NXE_DTYPE_BOOL = 9,
    NXE_DTYPE_F64 = 10, /* since API 0.2 */
    NXE_DTYPE_U16 = 11,
    NXE_DTYPE_U32 = 12,
    NXE_DTYPE_U64 = 13,
    NXE_DTYPE_COUNT = 14 /* grows as dtypes are added: do not size stored data by it */
};
/* Name ("f32", ...) and element size in bytes of a dtype. */
NXE_API nxe_status nxe_dtype_info(int32_t dtype, const char **name, int32_t *size_bytes);

/* DLPack type codes used by nxe_tensor_desc. */
enum nxe_dlpack_code {
    NXE_DL_INT = 0,
    NXE_DL_UINT = 1,
    NXE_DL_FLOAT = 2,
    NXE_DL_BFLOAT = 4,
    NXE_DL_BOOL = 6
};
/* DLPack (code, bits) of a dtype, and back. */
NXE_API nxe_status nxe_dtype_to_dlpack(int32_t dtype, int32_t *code, int32_t *bits);
NXE_API nxe_status nxe_dtype_from_dlpack(int32_t code, int32_t bits, int32_t *dtype);

/* The 80-byte tensor descriptor that crosses the ABI (the one NPU host clients use).
 * Shapes are row-major, outermost first; data is dense. */
typedef struct nxe_tensor_desc {
    void *data;
    size_t data_size;   /* bytes available at data */
    int32_t ndim;
    int32_t dtype_code; /* enum nxe_dlpack_code */
    int32_t dtype_bits;
    int32_t reserved;   /* must be 0 */
    int64_t shape[NXE_MAX_RANK];
} nxe_tensor_desc;

#if !defined(NXE_NO_SYSTEM_HEADERS) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(nxe_tensor_desc) == 80, "nxe_tensor_desc must be 80 bytes");
#endif

/* ---- Context --------------------------------------------------------------------------- */

typedef struct nxe_context nxe_context;
typedef struct nxe_graph nxe_graph;
typedef struct nxe_tensor nxe_tensor;
typedef struct nxe_op nxe_op;
typedef struct nxe_executable nxe_executable;

NXE_API nxe_status nxe_context_create(nxe_context **out);
/* Graphs keep their context alive: releasing it while graphs exist is safe. */
NXE_API void nxe_context_release(nxe_context *ctx);

/* ---- Graphs and tensors ---------------------------------------------------------------- */

NXE_API nxe_status nxe_graph_create(nxe_context *ctx, nxe_graph **out);
/* Releases the graph with its tensors and ops. Executables compiled from it stay valid. */
NXE_API void nxe_graph_release(nxe_graph *graph);

enum nxe_tensor_kind {
    NXE_TENSOR_INPUT = 1,     /* fed on every run */
    NXE_TENSOR_OUTPUT = 2,    /* returned by every run; shape may be left to inference */
    NXE_TENSOR_CONSTANT = 3,  /* data given with nxe_tensor_set_data, fixed at compile */
    NXE_TENSOR_TRANSIENT = 4, /* intermediate; lives in the arena; shape may be left to inference */
    NXE_TENSOR_VARIABLE = 5   /* persistent state: initial data from nxe_tensor_set_data, kept
                                 across runs, readable and writable between runs */
};

typedef struct nxe_tensor_spec {
    uint32_t struct_size;  /* sizeof(nxe_tensor_spec) */
    const char *name;      /* unique within the graph; NULL or "" gets a generated name */
    int32_t dtype;         /* enum nxe_dtype; NONE = inferred (OUTPUT/TRANSIENT only) */
    int32_t kind;          /* enum nxe_tensor_kind */
    int32_t ndim;          /* 0..NXE_MAX_RANK; -1 = rank unknown (OUTPUT/TRANSIENT only) */
    const int64_t *shape;  /* ndim entries; -1 = dimension unknown (OUTPUT/TRANSIENT only) */
} nxe_tensor_spec;
#define NXE_TENSOR_SPEC_INIT {sizeof(nxe_tensor_spec), NULL, NXE_DTYPE_F32, NXE_TENSOR_TRANSIENT, -1, NULL}

/* Adds a tensor to the graph; it belongs to the graph. A rank above NXE_MAX_RANK fails with
 * NXE_ERROR_INVALID_ARGUMENT, a negative dimension where none may be unknown with
 * NXE_ERROR_SHAPE_MISMATCH. */
NXE_API nxe_status nxe_graph_add_tensor(nxe_graph *graph, const nxe_tensor_spec *spec,
                                        nxe_tensor **out);
NXE_API nxe_status nxe_graph_find_tensor(nxe_graph *graph, const char *name, nxe_tensor **out);
/* Renames a tensor before compiling; the name must be unique within the graph. */
NXE_API nxe_status nxe_tensor_set_name(nxe_tensor *tensor, const char *name);
/* Switches a tensor between TRANSIENT and OUTPUT before compiling (other kinds are fixed). */
NXE_API nxe_status nxe_tensor_set_kind(nxe_tensor *tensor, int32_t kind);
/* Changes the declared shape of an INPUT, OUTPUT or TRANSIENT tensor before compiling (the
 * rules of nxe_graph_add_tensor apply): a graph built for one input size is compiled for
 * another, shapes downstream being inferred again. CONSTANT and VARIABLE tensors keep theirs
 * (NXE_ERROR_INVALID_ARGUMENT). */
NXE_API nxe_status nxe_tensor_set_shape(nxe_tensor *tensor, int32_t ndim, const int64_t *shape);
/* Copies `size` bytes (exactly the tensor's byte size) into a CONSTANT or VARIABLE tensor. */
NXE_API nxe_status nxe_tensor_set_data(nxe_tensor *tensor, const void *data, size_t size);

enum nxe_quant_type {
    NXE_QUANT_NONE = 0,
    NXE_QUANT_ASYMMETRIC = 1,           /* real = scale * (q - zero_point), per tensor */
    NXE_QUANT_SYMMETRIC_PER_CHANNEL = 2, /* real = scales[c] * q along `axis` */
    NXE_QUANT_DYNAMIC_FIXED_POINT = 3   /* real = q * 2^-fractional_length */
};
NXE_API nxe_status nxe_tensor_set_quant_asymmetric(nxe_tensor *tensor, float scale,
                                                   int32_t zero_point);
NXE_API nxe_status nxe_tensor_set_quant_per_channel(nxe_tensor *tensor, int32_t axis,
                                                    const float *scales, int32_t count);
NXE_API nxe_status nxe_tensor_set_quant_dynamic_fixed_point(nxe_tensor *tensor,
                                                            int32_t fractional_length);

typedef struct nxe_tensor_info {
    uint32_t struct_size;  /* set by the caller: sizeof(nxe_tensor_info) */
    const char *name;      /* owned by the graph */
    int32_t dtype;
    int32_t kind;
    int32_t ndim;          /* after compile: the inferred rank */
    int64_t shape[NXE_MAX_RANK];
    int32_t quant_type;    /* enum nxe_quant_type */
    float scale;           /* ASYMMETRIC */
    int32_t zero_point;    /* ASYMMETRIC */
    int32_t axis;          /* PER_CHANNEL */
    int32_t num_scales;    /* PER_CHANNEL */
    const float *scales;   /* PER_CHANNEL; owned by the graph */
    int32_t fractional_length; /* DYNAMIC_FIXED_POINT */
} nxe_tensor_info;
/* Describes a tensor; shapes left to inference are filled in by nxe_graph_compile. */
NXE_API nxe_status nxe_tensor_get_info(const nxe_tensor *tensor, nxe_tensor_info *info);

/* ---- Ops ------------------------------------------------------------------------------- */

/* Adds an op of a registered type ("Conv2d", "Add", ...); `name` may be NULL. */
NXE_API nxe_status nxe_graph_add_op(nxe_graph *graph, const char *op_type, const char *name,
                                    nxe_op **out);
/* Removes an op from the graph, undoing its bindings (e.g. after a failed attribute or
 * binding call). Tensors it produced lose their producer; the op handle becomes invalid. */
NXE_API nxe_status nxe_graph_remove_op(nxe_graph *graph, nxe_op *op);
/* Attributes are checked against the op's schema: an unknown name fails with
 * NXE_ERROR_NOT_FOUND, a wrong type with NXE_ERROR_INVALID_ARGUMENT. */
NXE_API nxe_status nxe_op_set_attr_int(nxe_op *op, const char *name, int64_t value);
NXE_API nxe_status nxe_op_set_attr_float(nxe_op *op, const char *name, double value);
NXE_API nxe_status nxe_op_set_attr_string(nxe_op *op, const char *name, const char *value);
NXE_API nxe_status nxe_op_set_attr_ints(nxe_op *op, const char *name, const int64_t *values,
                                        int32_t count);
NXE_API nxe_status nxe_op_set_attr_floats(nxe_op *op, const char *name, const float *values,
                                          int32_t count);
/* Binds tensors to the op's inputs/outputs in schema order, once per op (a second call fails
 * with NXE_ERROR_INVALID_STATE). A NULL entry leaves an optional input absent. A tensor may be
 * produced by one op only, and INPUT and CONSTANT tensors by none (NXE_ERROR_INVALID_GRAPH). */
NXE_API nxe_status nxe_op_bind_inputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count);
NXE_API nxe_status nxe_op_bind_outputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count);

/* ---- The op registry ------------------------------------------------------------------- */

enum nxe_attr_type {
    NXE_ATTR_INT = 1,
    NXE_ATTR_FLOAT = 2,
    NXE_ATTR_STRING = 3,
    NXE_ATTR_INTS = 4,
    NXE_ATTR_FLOATS = 5
};

typedef struct nxe_op_param_info {
    const char *name;
    const char *doc;
    uint32_t dtypes;     /* bit (1u << dtype) for each accepted enum nxe_dtype */
    int32_t optional;    /* may be left unbound (NULL) */
    int32_t variadic;    /* last parameter only: repeats (Concat inputs, Split outputs) */
} nxe_op_param_info;

typedef struct nxe_op_attr_info {
    const char *name;
    const char *doc;
    int32_t type;               /* enum nxe_attr_type */
    const char *default_value;  /* JSON text of the default; NULL when required */
} nxe_op_attr_info;

typedef struct nxe_op_info {
    uint32_t struct_size;
    const char *name;
    const char *summary;
    int32_t num_inputs;
    const nxe_op_param_info *inputs;
    int32_t num_outputs;
    const nxe_op_param_info *outputs;
    int32_t num_attrs;
    const nxe_op_attr_info *attrs;
} nxe_op_info;

/* Registry entries are static: the pointers stay valid for the life of the process.
 * An index out of range fails with NXE_ERROR_NOT_FOUND. */
NXE_API nxe_status nxe_op_registry_count(int32_t *count);
NXE_API nxe_status nxe_op_registry_get(int32_t index, const nxe_op_info **info);
NXE_API nxe_status nxe_op_registry_find(const char *op_type, const nxe_op_info **info);

/* ---- Compilation ----------------------------------------------------------------------- */

typedef struct nxe_compile_options {
    uint32_t struct_size;     /* sizeof(nxe_compile_options) */
    int32_t num_threads;      /* worker threads for the executable; 0 = one per online CPU */
    int32_t relax_precision;  /* nonzero: fp32 work may run in bf16 with fp32 accumulation */
} nxe_compile_options;
#define NXE_COMPILE_OPTIONS_INIT {sizeof(nxe_compile_options), 0, 0}

/* Infers shapes, validates the graph (cycles, unbound and unconsumed tensors, dtypes, shapes),
 * plans memory and returns an executable that is independent of the graph. `options` may be
 * NULL for defaults. After compiling, nxe_tensor_get_info reports the inferred shapes. */
NXE_API nxe_status nxe_graph_compile(nxe_graph *graph, const nxe_compile_options *options,
                                     nxe_executable **out);

/* ---- Executables ----------------------------------------------------------------------- */

NXE_API void nxe_executable_release(nxe_executable *exe);
NXE_API nxe_status nxe_executable_io_count(const nxe_executable *exe, int32_t *num_inputs,
                                           int32_t *num_outputs);
/* Shape and dtype of input/output `index` in `desc` (data = NULL, data_size = bytes needed).
 * `name` (may be NULL) receives a string owned by the executable. */
NXE_API nxe_status nxe_executable_input_desc(const nxe_executable *exe, int32_t index,
                                             nxe_tensor_desc *desc, const char **name);
NXE_API nxe_status nxe_executable_output_desc(const nxe_executable *exe, int32_t index,
                                              nxe_tensor_desc *desc, const char **name);
/* Runs once. Inputs are read from the caller's buffers; outputs are copied into the caller's
 * buffers, which must hold the output's dtype, shape and byte size. Descriptors are matched by
 * position. One run at a time per executable. The calling thread computes too: the kernels
 * use up to about 128 KiB of its stack (the library's own worker threads have the system
 * default). */
NXE_API nxe_status nxe_executable_run(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                      int32_t num_inputs, nxe_tensor_desc *outputs,
                                      int32_t num_outputs);
/* VARIABLE tensors, by name: copy the current value out, or overwrite it, between runs. */
NXE_API nxe_status nxe_executable_read_variable(nxe_executable *exe, const char *name,
                                                nxe_tensor_desc *desc);
NXE_API nxe_status nxe_executable_write_variable(nxe_executable *exe, const char *name,
                                                 const nxe_tensor_desc *desc);

typedef struct nxe_memory_info {
    uint32_t struct_size;      /* sizeof(nxe_memory_info) */
    uint64_t arena_bytes;      /* one arena shared by TRANSIENT tensors with disjoint lifetimes */
    uint64_t transient_bytes;  /* what those tensors would take without sharing */
    uint64_t constant_bytes;   /* constants and variables held by the executable */
    int32_t num_threads;
    int32_t num_steps;         /* kernel calls per run */
} nxe_memory_info;
NXE_API nxe_status nxe_executable_memory_info(const nxe_executable *exe, nxe_memory_info *info);

/* ---- Zero-copy I/O and run statistics ---------------------------------------------------
 * An executable owns a staging buffer: first the result area where outputs are produced,
 * then room for inputs the caller creates with nxe_executable_create_input. A run copies an
 * input into its staging slot unless it already lies inside the staging buffer. */

/* Allocates input `index` inside the staging buffer (64-byte aligned, after what is already
 * there) and describes it in `desc` (data, data_size, dtype, shape). The memory stays valid
 * until nxe_executable_reset_staging or release. Fails with NXE_ERROR_BUFFER_TOO_SMALL when
 * the staging buffer is full. */
NXE_API nxe_status nxe_executable_create_input(nxe_executable *exe, int32_t index,
                                               nxe_tensor_desc *desc);
/* Forgets every nxe_executable_create_input allocation; their memory may be reused. */
NXE_API nxe_status nxe_executable_reset_staging(nxe_executable *exe);
/* Runs once and describes each output in `outputs` (filled in, not read) with data pointing
 * into the executable's result buffer: no copy. Valid until the next run, reset or release of
 * the executable; the caller must not free it. */
NXE_API nxe_status nxe_executable_run_nocopy(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                             int32_t num_inputs, nxe_tensor_desc *outputs,
                                             int32_t num_outputs);

typedef struct nxe_run_stats {
    uint32_t struct_size;        /* sizeof(nxe_run_stats) */
    uint64_t runs;               /* completed runs since creation or load */
    uint64_t inputs_copied;      /* over all runs: inputs copied into staging */
    uint64_t inputs_in_place;    /* over all runs: inputs already in staging (zero-copy) */
    uint64_t bytes_copied_in;
    uint64_t bytes_copied_out;   /* outputs copied to caller buffers by nxe_executable_run */
    uint64_t staging_bytes;      /* capacity of the staging buffer */
    uint64_t staging_used;       /* the result area, the input slots and created inputs */
} nxe_run_stats;
NXE_API nxe_status nxe_executable_stats(const nxe_executable *exe, nxe_run_stats *stats);

/* ---- Compiled binaries (.nxb) -----------------------------------------------------------
 * A binary holds the plan, the weights, the memory plan, the I/O specs, the ISA and
 * kernel-ABI tag, the source model's fingerprint, checksums and the portable model it came
 * from. Loading it needs no graph building; the loader packs the weights for its CPU's kernels
 * and folds epilogues as compiling does. */

/* Compiles `graph` and serializes the result: with buffer NULL only *size is set; then call
 * again with a buffer of *size bytes (NXE_ERROR_BUFFER_TOO_SMALL reports the size needed). */
NXE_API nxe_status nxe_graph_compile_to_binary(nxe_graph *graph,
                                               const nxe_compile_options *options,
                                               void *buffer, size_t *size);

typedef struct nxe_load_options {
    uint32_t struct_size;     /* sizeof(nxe_load_options) */
    int32_t num_threads;      /* 0 = one per online CPU */
    int32_t verify;           /* nonzero: check every section's checksum before use */
    int32_t allow_recompile;  /* nonzero: a binary for an ISA or kernel ABI this machine lacks
                                 is recompiled from its embedded model; zero: that is an error */
    uint64_t staging_bytes;   /* staging capacity; 0 = the result area plus room for every
                                 input twice */
} nxe_load_options;
#define NXE_LOAD_OPTIONS_INIT {sizeof(nxe_load_options), 0, 1, 1, 0}

/* Maps the file read-only; constant data is used in place from the mapping, which lives as
 * long as the executable. */
NXE_API nxe_status nxe_executable_load_file(const char *path, const nxe_load_options *options,
                                            nxe_executable **out);
/* Loads from memory the caller keeps: `data` is copied, the caller may free it afterwards. */
NXE_API nxe_status nxe_executable_load_memory(const void *data, size_t size,
                                              const nxe_load_options *options,
                                              nxe_executable **out);

typedef struct nxe_executable_info {
    uint32_t struct_size;       /* sizeof(nxe_executable_info) */
    uint8_t fingerprint[32];    /* SHA-256 fingerprint of the source model; all zero for an
                                   executable compiled in memory from a graph not built from
                                   a model file */
    char isa[16];               /* ISA the plan's kernels need, e.g. "ref" */
    int32_t kernel_abi;         /* kernel ABI version of the plan */
    int32_t loaded;             /* nonzero: loaded from a binary */
    int32_t recompiled;         /* nonzero: the binary was recompiled from its embedded model */
    int32_t num_constants;      /* distinct constant buffers after de-duplication */
} nxe_executable_info;
NXE_API nxe_status nxe_executable_get_info(const nxe_executable *exe, nxe_executable_info *info);

/* ---- Model files (.nxm) -----------------------------------------------------------------
 * A portable graph with its weights and metadata. Its fingerprint is a SHA-256 over canonical
 * content (format major version, the graph, the metadata, and each tensor's name, dtype,
 * shape, quantization and bytes in name order), so re-aligning a file keeps it. */

typedef struct nxe_model nxe_model;

typedef struct nxe_model_options {
    uint32_t struct_size;  /* sizeof(nxe_model_options) */
    int32_t lazy;          /* nonzero: skip the tensor-data checksum and fingerprint check at
                              open; nxe_model_verify does them later */
} nxe_model_options;
#define NXE_MODEL_OPTIONS_INIT {sizeof(nxe_model_options), 0}

NXE_API nxe_status nxe_model_open_file(const char *path, const nxe_model_options *options,
                                       nxe_model **out);
/* `data` is copied. */
NXE_API nxe_status nxe_model_open_memory(const void *data, size_t size,
                                         const nxe_model_options *options, nxe_model **out);
NXE_API void nxe_model_release(nxe_model *model);
/* Checks every checksum and recomputes the fingerprint. */
NXE_API nxe_status nxe_model_verify(const nxe_model *model);
NXE_API nxe_status nxe_model_fingerprint(const nxe_model *model, uint8_t fingerprint[32]);
/* UTF-8 JSON, not NUL-terminated, owned by the model. `metadata` is part of the fingerprint;
 * `annotations` (provenance, parity reports) are not. */
NXE_API nxe_status nxe_model_metadata(const nxe_model *model, const char **json, size_t *size);
NXE_API nxe_status nxe_model_annotations(const nxe_model *model, const char **json,
                                         size_t *size);
NXE_API nxe_status nxe_model_tensor_count(const nxe_model *model, int32_t *count);
/* Describes stored tensor `index`; desc->data points into the model (read-only, valid until
 * release). info may be NULL. */
NXE_API nxe_status nxe_model_tensor(const nxe_model *model, int32_t index, nxe_tensor_info *info,
                                    nxe_tensor_desc *desc);
/* Builds a new graph from the model; the graph remembers the model's fingerprint. */
NXE_API nxe_status nxe_model_build_graph(const nxe_model *model, nxe_context *ctx,
                                         nxe_graph **out);

typedef struct nxe_model_write_options {
    uint32_t struct_size;         /* sizeof(nxe_model_write_options) */
    const char *metadata_json;    /* NULL = "{}" */
    const char *annotations_json; /* NULL = "{}" */
    uint32_t alignment;           /* of sections and tensor data: power of two >= 64; 0 = 64 */
} nxe_model_write_options;
#define NXE_MODEL_WRITE_OPTIONS_INIT {sizeof(nxe_model_write_options), NULL, NULL, 0}

/* Serializes the graph as a model file, two-call pattern as nxe_graph_compile_to_binary. */
NXE_API nxe_status nxe_graph_save_model(nxe_graph *graph, const nxe_model_write_options *options,
                                        void *buffer, size_t *size);

/* ---- CPU features and kernel dispatch --------------------------------------------------
 * The library picks one ISA level per process, the first time it needs one: the highest the
 * CPU and the OS allow, capped by the environment variable NXE_ISA=scalar|avx2|avx512|amx.
 * An NXE_ISA above what the machine allows keeps the machine's level; an unknown value is
 * ignored. Either way `reason` says so. */

/* Bits of nxe_cpu_info.features. A bit is set only when CPUID reports the feature and the OS
 * has enabled its register state (XCR0); the AMX bits also need the Linux permission
 * (arch_prctl ARCH_REQ_XCOMP_PERM), which nxe requests once per process. */
enum nxe_cpu_feature {
    NXE_CPU_FEATURE_AVX2 = 0x1,
    NXE_CPU_FEATURE_FMA = 0x2,
    NXE_CPU_FEATURE_AVX512F = 0x4,
    NXE_CPU_FEATURE_AVX512BW = 0x8,
    NXE_CPU_FEATURE_AVX512VL = 0x10,
    NXE_CPU_FEATURE_AVX512_BF16 = 0x20,
    NXE_CPU_FEATURE_AVX512_VNNI = 0x40,
    NXE_CPU_FEATURE_AVX_VNNI = 0x80,
    NXE_CPU_FEATURE_AMX_TILE = 0x100,
    NXE_CPU_FEATURE_AMX_BF16 = 0x200,
    NXE_CPU_FEATURE_AMX_INT8 = 0x400
};

typedef struct nxe_cpu_info {
    uint32_t struct_size;  /* set by the caller: sizeof(nxe_cpu_info) */
    uint64_t features;     /* enum nxe_cpu_feature bits; 0 on CPUs other than x86-64 */
    char isa[16];          /* the level chosen: "amx", "avx512", "avx2" or "scalar" */
    char reason[256];      /* why that level, e.g. "NXE_ISA=avx2 caps avx512" */
} nxe_cpu_info;
/* Describes this process's CPU features and the ISA level its kernels are chosen for. */
NXE_API nxe_status nxe_cpu_info_get(nxe_cpu_info *info);
/* The matrix kernels this process runs, one "<precision>=<kernel>" entry per precision,
 * space-separated: "f32=f32-gemm-8x48-avx512 bf16=bf16-gemm-8x48-avx512bf16
 * int8=u8s8-gemm-4x48-avx512vnni", with "reference" where a precision runs the portable
 * reference kernels (bf16 work in relax mode then runs in f32). The string is NUL-terminated and
 * lives as long as the process. Since API 0.3. */
NXE_API nxe_status nxe_cpu_kernels(const char **names);

#ifdef __cplusplus
}
#endif
#endif /* NXE_NXE_H */
