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
 * for nxe_last_error() on the calling thread. Each function's comment says which codes it
 * returns, what its out-params hold after a failure and who releases what it hands out; a
 * function may also return codes added in later versions, which callers treat as failures.
 * Objects end with their _release function, and _release(NULL) does nothing. Pointers the
 * caller passes are borrowed for the duration of the call. The library never aborts, exits,
 * prints or reads stdin: it logs only through nxe_set_log_callback.
 *
 * ABI tiers: this header is the stable tier. Within a major version its declarations are only
 * added to, never changed or removed, and each is tagged with the API version
 * (NXE_API_VERSION_MAJOR.NXE_API_VERSION_MINOR) that added it: "since 0.2". Introspection of
 * the kernels a process runs (CPU features, ISA levels, kernel names) is the experimental tier,
 * declared in nxe_experimental.h: it may change or go in any minor version.
 *
 * Threads: a graph is used from one thread at a time; an executable may be run from several
 * threads at once, each run correct on its own (see nxe_executable_run); distinct objects may
 * be used from distinct threads freely.
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

/* The library version is NXE_API_VERSION_MAJOR.NXE_API_VERSION_MINOR.NXE_VERSION_PATCH: the
 * minor grows when declarations are added, the patch counts releases that change no
 * declaration. The build reads all three from here (the meson project version, the shared
 * library's version, the Python package's version). Since 0.1; NXE_VERSION_PATCH since 0.4. */
#define NXE_API_VERSION_MAJOR 0
#define NXE_API_VERSION_MINOR 10
#define NXE_VERSION_PATCH 0
/* Most dimensions a tensor may have. Since 0.1. */
#define NXE_MAX_RANK 6

/* (major << 16) | minor of the library actually loaded; compare with the macros above. Cannot
 * fail. Since 0.1. */
NXE_API uint32_t nxe_api_version(void);
/* Library version as "MAJOR.MINOR.PATCH", the macros above of the library actually loaded;
 * static storage, never released. Cannot fail. Since 0.1. */
NXE_API const char *nxe_version_string(void);

/* ---- Status and errors ------------------------------------------------------------------ */

/* Since 0.1. */
typedef int32_t nxe_status;
/* Callers must accept codes not listed here (treat them as failures). Since 0.1. */
enum nxe_status_code {
    NXE_OK = 0,
    NXE_ERROR_INVALID_ARGUMENT = 1, /* NULL where a value is needed, out-of-range value */
    NXE_ERROR_OUT_OF_MEMORY = 2,
    NXE_ERROR_INVALID_GRAPH = 3, /* cycles, unbound or doubly-bound tensors, unknown ops */
    NXE_ERROR_SHAPE_MISMATCH = 4,
    NXE_ERROR_DTYPE_MISMATCH = 5,
    NXE_ERROR_UNSUPPORTED = 6,      /* valid request this build or op cannot do */
    NXE_ERROR_NOT_FOUND = 7,        /* no such op type, attribute, tensor or index */
    NXE_ERROR_INVALID_STATE = 8,    /* call out of order, e.g. editing a compiled graph */
    NXE_ERROR_BUFFER_TOO_SMALL = 9, /* two-call pattern: the size needed is reported back */
    NXE_ERROR_IO = 10,
    NXE_ERROR_FORMAT = 11,  /* malformed or corrupted file */
    NXE_ERROR_RUNTIME = 12, /* data-dependent failure during a run (index out of range) */
    NXE_ERROR_INTERNAL = 13,
    NXE_ERROR_BUSY = 14,     /* since 0.6: a queue or budget is full now; try again later */
    NXE_ERROR_TIMEOUT = 15,  /* since 0.6: a deadline or wait time passed */
    NXE_ERROR_CANCELLED = 16 /* since 0.6: the caller (or a shutdown) cancelled the work */
};

/* Message of the last failed call on this thread ("" if none). Owned by the library, valid
 * until the next failing call on the same thread. Cannot fail. Since 0.1. */
NXE_API const char *nxe_last_error(void);
/* Short name of a status code, e.g. "NXE_ERROR_SHAPE_MISMATCH", and "NXE_ERROR_UNKNOWN" for a
 * code this version does not know; static storage, never released. Cannot fail. Since 0.1. */
NXE_API const char *nxe_status_name(nxe_status status);

/* ---- Logging --------------------------------------------------------------------------- */

/* Since 0.1. */
enum nxe_log_level { NXE_LOG_ERROR = 0, NXE_LOG_WARNING = 1, NXE_LOG_INFO = 2, NXE_LOG_DEBUG = 3 };
/* Called from any thread of the library; `message` lives for the call only. Since 0.1. */
typedef void (*nxe_log_fn)(void *user_data, int32_t level, const char *message);
/* Sets the process-wide log callback (NULL: silence) and the most verbose level delivered;
 * `user_data` is handed to every call and stays the caller's. NXE_ERROR_INVALID_ARGUMENT when
 * max_level is not an enum nxe_log_level (the previous callback then stays). Since 0.1. */
NXE_API nxe_status nxe_set_log_callback(nxe_log_fn fn, void *user_data, int32_t max_level);

/* ---- Data types ------------------------------------------------------------------------ */

/* Since 0.1, but for the values marked otherwise. */
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
    NXE_DTYPE_F64 = 10,  /* since 0.2 */
    NXE_DTYPE_U16 = 11,  /* since 0.2 */
    NXE_DTYPE_U32 = 12,  /* since 0.2 */
    NXE_DTYPE_U64 = 13,  /* since 0.2 */
    NXE_DTYPE_COUNT = 14 /* grows as dtypes are added: do not size stored data by it */
};
/* Name ("f32", ...; static storage, never released) and element size in bytes of a dtype;
 * either out-param may be NULL. NXE_ERROR_INVALID_ARGUMENT for NXE_DTYPE_NONE or a value that
 * is not a dtype; *name is then NULL and *size_bytes 0. Since 0.1. */
NXE_API nxe_status nxe_dtype_info(int32_t dtype, const char **name, int32_t *size_bytes);

/* DLPack type codes used by nxe_tensor_desc. Since 0.1. */
enum nxe_dlpack_code {
    NXE_DL_INT = 0,
    NXE_DL_UINT = 1,
    NXE_DL_FLOAT = 2,
    NXE_DL_BFLOAT = 4,
    NXE_DL_BOOL = 6
};
/* DLPack (code, bits) of a dtype. NXE_ERROR_INVALID_ARGUMENT when an out-param is NULL or
 * dtype is not a dtype; both out-params are then 0. Since 0.1. */
NXE_API nxe_status nxe_dtype_to_dlpack(int32_t dtype, int32_t *code, int32_t *bits);
/* The dtype of a DLPack (code, bits). NXE_ERROR_INVALID_ARGUMENT when dtype is NULL,
 * NXE_ERROR_DTYPE_MISMATCH when no dtype has that code and width; *dtype is then
 * NXE_DTYPE_NONE. Since 0.1. */
NXE_API nxe_status nxe_dtype_from_dlpack(int32_t code, int32_t bits, int32_t *dtype);

/* The 80-byte tensor descriptor that crosses the ABI (the one NPU host clients use).
 * Shapes are row-major, outermost first; data is dense. Since 0.1. */
typedef struct nxe_tensor_desc {
    void *data;
    size_t data_size; /* bytes available at data */
    int32_t ndim;
    int32_t dtype_code; /* enum nxe_dlpack_code */
    int32_t dtype_bits;
    int32_t reserved; /* must be 0 */
    int64_t shape[NXE_MAX_RANK];
} nxe_tensor_desc;

#if !defined(NXE_NO_SYSTEM_HEADERS) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(nxe_tensor_desc) == 80, "nxe_tensor_desc must be 80 bytes");
#endif

/* ---- Resource limits ------------------------------------------------------------------
 * What compiling a graph, loading a binary or opening a model file may take, so that hostile
 * or careless input fails with a status instead of exhausting the process. Each field 0 means
 * its default below; a value above the hard limit of the file formats (65,536 ops, 1 TiB per
 * stored tensor) is capped there. A request beyond a limit fails before anything is allocated
 * for it, with a message naming the limit, the size asked for and the field that raises it. */

/* Defaults of the fields of nxe_limits: 1 TiB per tensor, 4 TiB per run of an executable and
 * per file, 2^24 ops per graph. Since 0.5. */
#define NXE_DEFAULT_MAX_TENSOR_BYTES 1099511627776ull
#define NXE_DEFAULT_MAX_ARENA_BYTES 4398046511104ull
#define NXE_DEFAULT_MAX_FILE_BYTES 4398046511104ull
#define NXE_DEFAULT_MAX_OPS 16777216

/* Since 0.5. */
typedef struct nxe_limits {
    uint32_t struct_size;      /* sizeof(nxe_limits) */
    uint64_t max_tensor_bytes; /* bytes of one tensor, as declared or as a shape rule makes it:
                                  NXE_ERROR_SHAPE_MISMATCH beyond it */
    uint64_t max_arena_bytes;  /* bytes one run of an executable allocates: its arena plus its
                                  staging buffer: NXE_ERROR_OUT_OF_MEMORY beyond it */
    uint64_t max_file_bytes;   /* bytes of a model or binary file (or memory image) to open:
                                  NXE_ERROR_INVALID_ARGUMENT beyond it */
    int64_t max_ops;           /* ops of a graph to compile, or of a model's graph or a
                                  binary's plan: NXE_ERROR_INVALID_GRAPH beyond it */
} nxe_limits;
/* Every field at its default. Since 0.5. */
#define NXE_LIMITS_INIT {sizeof(nxe_limits), 0, 0, 0, 0}

/* ---- Context --------------------------------------------------------------------------- */

/* Opaque handles. Since 0.1. */
typedef struct nxe_context nxe_context;
typedef struct nxe_graph nxe_graph;
typedef struct nxe_tensor nxe_tensor;
typedef struct nxe_op nxe_op;
typedef struct nxe_executable nxe_executable;
/* A place executables run: the CPU (all of it, or one NUMA node or core set) or a remote
 * worker. Owned by the library; enumerated, never released. Since 0.10. */
typedef struct nxe_device nxe_device;

/* Creates a context; the caller releases it with nxe_context_release.
 * NXE_ERROR_INVALID_ARGUMENT (out is NULL), NXE_ERROR_OUT_OF_MEMORY; *out is then NULL.
 * Since 0.1. */
NXE_API nxe_status nxe_context_create(nxe_context **out);
/* Graphs keep their context alive: releasing it while graphs exist is safe. Since 0.1. */
NXE_API void nxe_context_release(nxe_context *ctx);
/* Sets the limits (nxe_limits, above; NULL = every default) of the context's graphs: each
 * graph refuses ops past max_ops as they are added (NXE_ERROR_INVALID_GRAPH), and a compile
 * whose options carry no limits of their own uses these. Not while a graph of the context is
 * being built or compiled in another thread. NXE_ERROR_INVALID_ARGUMENT (ctx is NULL, a short
 * struct_size, a negative max_ops); the limits are then unchanged. Since 0.5. */
NXE_API nxe_status nxe_context_set_limits(nxe_context *ctx, const nxe_limits *limits);
/* The context's limits, each field resolved (never 0). `out->struct_size` must be set.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size). Since 0.5. */
NXE_API nxe_status nxe_context_get_limits(const nxe_context *ctx, nxe_limits *out);

/* ---- Graphs and tensors ---------------------------------------------------------------- */

/* Creates an empty graph in `ctx`, which it keeps alive; the caller releases it with
 * nxe_graph_release. NXE_ERROR_INVALID_ARGUMENT (ctx or out is NULL),
 * NXE_ERROR_OUT_OF_MEMORY; *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_graph_create(nxe_context *ctx, nxe_graph **out);
/* Releases the graph with its tensors and ops. Executables compiled from it stay valid.
 * Since 0.1. */
NXE_API void nxe_graph_release(nxe_graph *graph);

/* Since 0.1. */
enum nxe_tensor_kind {
    NXE_TENSOR_INPUT = 1,     /* fed on every run */
    NXE_TENSOR_OUTPUT = 2,    /* returned by every run; shape may be left to inference */
    NXE_TENSOR_CONSTANT = 3,  /* data given with nxe_tensor_set_data, fixed at compile */
    NXE_TENSOR_TRANSIENT = 4, /* intermediate; lives in the arena; shape may be left to inference */
    NXE_TENSOR_VARIABLE = 5   /* persistent state: initial data from nxe_tensor_set_data, kept
                                 across runs, readable and writable between runs */
};

/* Since 0.1. */
typedef struct nxe_tensor_spec {
    uint32_t struct_size; /* sizeof(nxe_tensor_spec) */
    const char *name;     /* unique within the graph; NULL or "" gets a generated name */
    int32_t dtype;        /* enum nxe_dtype; NONE = inferred (OUTPUT/TRANSIENT only) */
    int32_t kind;         /* enum nxe_tensor_kind */
    int32_t ndim;         /* 0..NXE_MAX_RANK; -1 = rank unknown (OUTPUT/TRANSIENT only) */
    const int64_t *shape; /* ndim entries; -1 = dimension unknown (OUTPUT/TRANSIENT only) */
} nxe_tensor_spec;
/* Since 0.1. */
#define NXE_TENSOR_SPEC_INIT                                                                       \
    {sizeof(nxe_tensor_spec), NULL, NXE_DTYPE_F32, NXE_TENSOR_TRANSIENT, -1, NULL}

/* Adds a tensor to the graph; it belongs to the graph (no release of its own) and `spec` is
 * copied. NXE_ERROR_INVALID_ARGUMENT for a NULL argument, a short struct_size, an unknown
 * kind, a rank above NXE_MAX_RANK, a rank left unknown where it may not be, or a name already
 * used or too long; NXE_ERROR_SHAPE_MISMATCH for a negative dimension where none may be unknown or
 * a tensor too large; NXE_ERROR_DTYPE_MISMATCH for an unknown dtype or one left unknown where it may not be; NXE_ERROR_OUT_OF_MEMORY.
 * *out is then NULL and the graph is unchanged. Since 0.1. */
NXE_API nxe_status nxe_graph_add_tensor(nxe_graph *graph, const nxe_tensor_spec *spec,
                                        nxe_tensor **out);
/* The tensor named `name`, owned by the graph. NXE_ERROR_INVALID_ARGUMENT (a NULL argument),
 * NXE_ERROR_NOT_FOUND; *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_graph_find_tensor(nxe_graph *graph, const char *name, nxe_tensor **out);
/* Renames a tensor before compiling; `name` is copied and must be non-empty and unique within
 * the graph. NXE_ERROR_INVALID_ARGUMENT (NULL, empty, too long or taken),
 * NXE_ERROR_OUT_OF_MEMORY; the
 * tensor then keeps its name. Since 0.1. */
NXE_API nxe_status nxe_tensor_set_name(nxe_tensor *tensor, const char *name);
/* Switches a tensor between TRANSIENT and OUTPUT before compiling (other kinds are fixed:
 * NXE_ERROR_INVALID_ARGUMENT, as for a NULL tensor; the kind is then unchanged). Since 0.1. */
NXE_API nxe_status nxe_tensor_set_kind(nxe_tensor *tensor, int32_t kind);
/* Changes the declared shape of an INPUT, OUTPUT or TRANSIENT tensor before compiling (the
 * rules and status codes of nxe_graph_add_tensor apply): a graph built for one input size is
 * compiled for another, shapes downstream being inferred again. CONSTANT and VARIABLE tensors
 * keep theirs (NXE_ERROR_INVALID_ARGUMENT). On failure the shape is unchanged. Since 0.4. */
NXE_API nxe_status nxe_tensor_set_shape(nxe_tensor *tensor, int32_t ndim, const int64_t *shape);
/* Copies `size` bytes (exactly the tensor's byte size) into a CONSTANT or VARIABLE tensor,
 * replacing earlier data. NXE_ERROR_INVALID_ARGUMENT (a NULL argument or another kind),
 * NXE_ERROR_SHAPE_MISMATCH (another size), NXE_ERROR_OUT_OF_MEMORY; the tensor then keeps its
 * earlier data. Since 0.1. */
NXE_API nxe_status nxe_tensor_set_data(nxe_tensor *tensor, const void *data, size_t size);

/* Since 0.1. */
enum nxe_quant_type {
    NXE_QUANT_NONE = 0,
    NXE_QUANT_ASYMMETRIC = 1,            /* real = scale * (q - zero_point), per tensor */
    NXE_QUANT_SYMMETRIC_PER_CHANNEL = 2, /* real = scales[c] * q along `axis` */
    NXE_QUANT_DYNAMIC_FIXED_POINT = 3    /* real = q * 2^-fractional_length */
};
/* Set a tensor's quantization, replacing any earlier one; `scales` is copied.
 * NXE_ERROR_INVALID_ARGUMENT for a NULL tensor or scales, a scale that is not finite and
 * positive, an axis out of range, a count of zero or less, a fractional length outside
 * [-64, 64] or (since 0.10) a zero point outside the range of a u8 or i8 tensor's dtype (a
 * tensor whose dtype is left to inference is checked when compiled); the message names the
 * tensor. NXE_ERROR_SHAPE_MISMATCH when
 * count is not the size of `axis`; NXE_ERROR_OUT_OF_MEMORY. The tensor then keeps its earlier
 * quantization. Since 0.1. */
NXE_API nxe_status nxe_tensor_set_quant_asymmetric(nxe_tensor *tensor, float scale,
                                                   int32_t zero_point);
NXE_API nxe_status nxe_tensor_set_quant_per_channel(nxe_tensor *tensor, int32_t axis,
                                                    const float *scales, int32_t count);
NXE_API nxe_status nxe_tensor_set_quant_dynamic_fixed_point(nxe_tensor *tensor,
                                                            int32_t fractional_length);

/* Since 0.1. */
typedef struct nxe_tensor_info {
    uint32_t struct_size; /* set by the caller: sizeof(nxe_tensor_info) */
    const char *name;     /* owned by the graph */
    int32_t dtype;
    int32_t kind;
    int32_t ndim; /* after compile: the inferred rank */
    int64_t shape[NXE_MAX_RANK];
    int32_t quant_type;        /* enum nxe_quant_type */
    float scale;               /* ASYMMETRIC */
    int32_t zero_point;        /* ASYMMETRIC */
    int32_t axis;              /* PER_CHANNEL */
    int32_t num_scales;        /* PER_CHANNEL */
    const float *scales;       /* PER_CHANNEL; owned by the graph */
    int32_t fractional_length; /* DYNAMIC_FIXED_POINT */
} nxe_tensor_info;
/* Describes a tensor; shapes left to inference are filled in by nxe_graph_compile. The
 * pointers in *info are the graph's, valid until the tensor is renamed, requantized or the
 * graph released. NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size); *info
 * is then unchanged. Since 0.1. */
NXE_API nxe_status nxe_tensor_get_info(const nxe_tensor *tensor, nxe_tensor_info *info);

/* ---- Ops ------------------------------------------------------------------------------- */

/* Adds an op of a registered type ("Conv2d", "Add", ..., or since 0.10 one registered in the
 * graph's context, looked up first: nxe_context_register_op); `name` may be NULL (a name is
 * generated) and is copied. The op belongs to the graph. NXE_ERROR_INVALID_ARGUMENT (a NULL
 * argument), NXE_ERROR_NOT_FOUND (no such op type), NXE_ERROR_INVALID_GRAPH (since 0.5: the
 * graph already has the max_ops of its context's limits), NXE_ERROR_OUT_OF_MEMORY; *out is then
 * NULL and the graph unchanged. Since 0.1. */
NXE_API nxe_status nxe_graph_add_op(nxe_graph *graph, const char *op_type, const char *name,
                                    nxe_op **out);
/* Removes an op from the graph, undoing its bindings (e.g. after a failed attribute or
 * binding call). Tensors it produced lose their producer; the op handle becomes invalid.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_NOT_FOUND (the op is not in this
 * graph); the graph is then unchanged. Since 0.1. */
NXE_API nxe_status nxe_graph_remove_op(nxe_graph *graph, nxe_op *op);
/* Keeps the part of the graph that computes the named OUTPUT tensors and drops the rest: every
 * op none of them depends on, every tensor no kept op reads or writes (inputs, constants,
 * variables and the other outputs among them), so that one model file can hold several entry
 * points (an encoder and a decoder, say) and each be compiled alone. The other outputs of a
 * kept op stay, as TRANSIENT tensors unless named. Tensor and op handles of what was dropped
 * become invalid; the kept tensors keep their names. NXE_ERROR_INVALID_ARGUMENT (a NULL
 * argument, count < 1), NXE_ERROR_NOT_FOUND (no tensor of that name), NXE_ERROR_INVALID_GRAPH
 * (a named tensor that is not an OUTPUT), NXE_ERROR_OUT_OF_MEMORY; the graph is then unchanged.
 * Since 0.9. */
NXE_API nxe_status nxe_graph_keep_outputs(nxe_graph *graph, const char *const *names,
                                          int32_t count);
/* Attributes are checked against the op's schema: an unknown name fails with
 * NXE_ERROR_NOT_FOUND, a wrong type, a NULL argument or a count outside [0, 4096] with
 * NXE_ERROR_INVALID_ARGUMENT; the op then keeps what it had. Strings and lists are copied.
 * Setting an attribute again replaces it; after NXE_ERROR_OUT_OF_MEMORY its earlier value is
 * lost: set it again or remove the op. Since 0.1. */
NXE_API nxe_status nxe_op_set_attr_int(nxe_op *op, const char *name, int64_t value);
NXE_API nxe_status nxe_op_set_attr_float(nxe_op *op, const char *name, double value);
NXE_API nxe_status nxe_op_set_attr_string(nxe_op *op, const char *name, const char *value);
NXE_API nxe_status nxe_op_set_attr_ints(nxe_op *op, const char *name, const int64_t *values,
                                        int32_t count);
NXE_API nxe_status nxe_op_set_attr_floats(nxe_op *op, const char *name, const float *values,
                                          int32_t count);
/* Binds tensors to the op's inputs/outputs in schema order, once per op (a second call fails
 * with NXE_ERROR_INVALID_STATE). A NULL entry leaves an optional input absent. A tensor may be
 * produced by one op only, and INPUT and CONSTANT tensors by none (NXE_ERROR_INVALID_GRAPH).
 * NXE_ERROR_INVALID_ARGUMENT for a NULL op or array, a count the schema does not allow, a NULL
 * required entry or a tensor of another graph; NXE_ERROR_OUT_OF_MEMORY. On failure nothing is
 * bound. Since 0.1. */
NXE_API nxe_status nxe_op_bind_inputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count);
NXE_API nxe_status nxe_op_bind_outputs(nxe_op *op, nxe_tensor *const *tensors, int32_t count);

/* ---- The op registry ------------------------------------------------------------------- */

/* Since 0.1. */
enum nxe_attr_type {
    NXE_ATTR_INT = 1,
    NXE_ATTR_FLOAT = 2,
    NXE_ATTR_STRING = 3,
    NXE_ATTR_INTS = 4,
    NXE_ATTR_FLOATS = 5
};

/* Since 0.1. */
typedef struct nxe_op_param_info {
    const char *name;
    const char *doc;
    uint32_t dtypes;  /* bit (1u << dtype) for each accepted enum nxe_dtype */
    int32_t optional; /* may be left unbound (NULL) */
    int32_t variadic; /* last parameter only: repeats (Concat inputs, Split outputs) */
} nxe_op_param_info;

/* Since 0.1. */
typedef struct nxe_op_attr_info {
    const char *name;
    const char *doc;
    int32_t type;              /* enum nxe_attr_type */
    const char *default_value; /* JSON text of the default; NULL when required */
} nxe_op_attr_info;

/* Since 0.1. */
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

/* Registry entries are static: the pointers stay valid for the life of the process and are
 * never released. A NULL argument fails with NXE_ERROR_INVALID_ARGUMENT, an index out of
 * range or an unknown op type with NXE_ERROR_NOT_FOUND; *info is then NULL (*count is left
 * alone). Since 0.1. */
NXE_API nxe_status nxe_op_registry_count(int32_t *count);
NXE_API nxe_status nxe_op_registry_get(int32_t index, const nxe_op_info **info);
NXE_API nxe_status nxe_op_registry_find(const char *op_type, const nxe_op_info **info);

/* ---- Compilation ----------------------------------------------------------------------- */

/* How fp32 2-D convolutions with a 3x3 kernel, stride 1, dilation 1 and one group are
 * computed (nxe_compile_options.winograd). Winograd F(4x4, 3x3) does a quarter of the
 * multiply-adds; its error is larger than the direct product's (docs/architecture.md states
 * both bounds), and its rounding depends on where the 4x4 output tiles fall, so an output's
 * last bits depend on inputs up to three pixels beyond its receptive field. Since 0.7. */
typedef enum nxe_winograd_mode {
    NXE_WINOGRAD_AUTO = 0, /* a cost model chooses per layer; the environment variable
                              NXE_WINOGRAD=auto|on|off, read when compiling, may override */
    NXE_WINOGRAD_OFF = 1,  /* the direct product everywhere: every output is computed from its
                              receptive field alone */
    NXE_WINOGRAD_ON = 2    /* Winograd wherever it applies */
} nxe_winograd_mode;

/* Since 0.1, but for the fields marked otherwise. A struct_size of a 0.4 caller (without
 * `limits`) is accepted and means the context's limits; one of a 0.5 or 0.6 caller (without
 * `winograd`) means NXE_WINOGRAD_AUTO. */
typedef struct nxe_compile_options {
    uint32_t struct_size;     /* sizeof(nxe_compile_options) */
    int32_t num_threads;      /* worker threads for the executable; 0 = one per online CPU */
    int32_t relax_precision;  /* nonzero: fp32 work may run in bf16 with fp32 accumulation */
    const nxe_limits *limits; /* since 0.5: NULL = the graph's context's limits
                                 (nxe_context_set_limits); borrowed for the call */
    int32_t winograd;         /* since 0.7: an nxe_winograd_mode, baked into compiled binaries */
    const nxe_device *device; /* since 0.10: where the executable runs; NULL = the default CPU
                                 device (every online CPU) */
} nxe_compile_options;
/* Since 0.1. */
#define NXE_COMPILE_OPTIONS_INIT {sizeof(nxe_compile_options), 0, 0, NULL, NXE_WINOGRAD_AUTO, NULL}

/* Infers shapes, validates the graph (cycles, unbound and unconsumed tensors, dtypes, shapes),
 * plans memory and returns an executable that is independent of the graph; the caller
 * releases it with nxe_executable_release. `options` may be NULL for defaults. After
 * compiling, nxe_tensor_get_info reports the inferred shapes.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL graph or out, bad options, a bad attribute value),
 * NXE_ERROR_INVALID_GRAPH (also more ops than options->limits allow),
 * NXE_ERROR_SHAPE_MISMATCH (also a tensor above the max_tensor_bytes limit),
 * NXE_ERROR_DTYPE_MISMATCH, NXE_ERROR_UNSUPPORTED, NXE_ERROR_OUT_OF_MEMORY (also a run above
 * the max_arena_bytes limit); *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_graph_compile(nxe_graph *graph, const nxe_compile_options *options,
                                     nxe_executable **out);

/* ---- Executables ----------------------------------------------------------------------- */

/* Releases the executable with everything it owns (staging buffer, names, threads).
 * Since 0.1. */
NXE_API void nxe_executable_release(nxe_executable *exe);
/* Number of inputs and outputs. NXE_ERROR_INVALID_ARGUMENT (a NULL argument); both counts are
 * then 0. Since 0.1. */
NXE_API nxe_status nxe_executable_io_count(const nxe_executable *exe, int32_t *num_inputs,
                                           int32_t *num_outputs);
/* Shape and dtype of input/output `index` in `desc` (data = NULL, data_size = bytes needed).
 * `name` (may be NULL) receives a string owned by the executable. NXE_ERROR_INVALID_ARGUMENT
 * (exe or desc is NULL), NXE_ERROR_NOT_FOUND (index out of range); *desc is then all zero and
 * *name NULL. Since 0.1. */
NXE_API nxe_status nxe_executable_input_desc(const nxe_executable *exe, int32_t index,
                                             nxe_tensor_desc *desc, const char **name);
NXE_API nxe_status nxe_executable_output_desc(const nxe_executable *exe, int32_t index,
                                              nxe_tensor_desc *desc, const char **name);
/* Runs once. Inputs are read from the caller's buffers; outputs are copied into the caller's
 * buffers, which must hold the output's dtype, shape and byte size. Descriptors are matched by
 * position. Runs from several threads at once are each correct: each takes its own arena,
 * workspace and staging from a pool that grows to the most runs ever under way at once (plus
 * threads holding nxe_executable_run_nocopy results) and shrinks only on release; runs that
 * write a VARIABLE take turns. The calling thread computes too: the kernels
 * use up to about 144 KiB of its stack (the library's own worker threads have the system
 * default).
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument, other counts, a nonzero reserved field, NULL
 * data, an input inside the executable's input slots), NXE_ERROR_DTYPE_MISMATCH,
 * NXE_ERROR_SHAPE_MISMATCH, NXE_ERROR_BUFFER_TOO_SMALL (data_size short of the tensor),
 * NXE_ERROR_INVALID_STATE (no staging buffer), or the failing op's code (NXE_ERROR_RUNTIME for
 * data-dependent failures such as an index out of range). On failure the output buffers are
 * unchanged and the run is not counted in nxe_executable_stats. Since 0.1. */
NXE_API nxe_status nxe_executable_run(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                      int32_t num_inputs, nxe_tensor_desc *outputs,
                                      int32_t num_outputs);
/* VARIABLE tensors, by name: copy the current value out into desc->data, or overwrite it
 * from there, between runs; `desc` must match the variable as a run's descriptors do.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_NOT_FOUND (no such variable, or one
 * no op uses), and the descriptor codes of nxe_executable_run; the caller's buffer or the
 * variable is then unchanged. Since 0.1. */
NXE_API nxe_status nxe_executable_read_variable(nxe_executable *exe, const char *name,
                                                nxe_tensor_desc *desc);
NXE_API nxe_status nxe_executable_write_variable(nxe_executable *exe, const char *name,
                                                 const nxe_tensor_desc *desc);

/* Since 0.1. */
typedef struct nxe_memory_info {
    uint32_t struct_size;     /* sizeof(nxe_memory_info) */
    uint64_t arena_bytes;     /* one arena shared by TRANSIENT tensors with disjoint lifetimes */
    uint64_t transient_bytes; /* what those tensors would take without sharing */
    uint64_t constant_bytes;  /* constants and variables held by the executable */
    int32_t num_threads;
    int32_t num_steps;       /* kernel calls per run */
    uint64_t resident_bytes; /* since 0.6 (a 0.5 struct_size is accepted without it): bytes the
                                executable holds now, measured: constants (mapped or owned),
                                packed weights, and the arena, workspace and staging of every
                                run context its pool holds */
} nxe_memory_info;
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size); *info is then
 * unchanged. Since 0.1. */
NXE_API nxe_status nxe_executable_memory_info(const nxe_executable *exe, nxe_memory_info *info);

/* ---- Zero-copy I/O and run statistics ---------------------------------------------------
 * An executable owns a staging buffer: first the result area where outputs are produced,
 * then room for inputs the caller creates with nxe_executable_create_input. A run copies an
 * input into its staging slot unless it already lies inside the staging buffer. */

/* Allocates input `index` inside the staging buffer (64-byte aligned, zeroed, after what is
 * already there) and describes it in `desc` (data, data_size, dtype, shape). The memory belongs
 * to the executable, not to a thread: any thread's run may read it in place. It stays valid
 * until nxe_executable_reset_staging or release; the caller does not free it.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_NOT_FOUND (index out of range),
 * NXE_ERROR_BUFFER_TOO_SMALL (the staging buffer is full); *desc is then all zero.
 * Since 0.1. */
NXE_API nxe_status nxe_executable_create_input(nxe_executable *exe, int32_t index,
                                               nxe_tensor_desc *desc);
/* Forgets every nxe_executable_create_input allocation; their memory may be reused, so no
 * thread may still be using one. NXE_ERROR_INVALID_ARGUMENT when exe is NULL. Since 0.1. */
NXE_API nxe_status nxe_executable_reset_staging(nxe_executable *exe);
/* Runs once and describes each output in `outputs` (filled in, not read) with data pointing
 * into a result buffer of the executable: no copy. Valid until the calling thread's next run
 * of the executable (either function) or its release; other threads' runs leave it alone.
 * The caller must not free it. Status codes as nxe_executable_run; on failure the descriptors
 * are all zero (when their count was right) and the run is not counted. Since 0.1. */
NXE_API nxe_status nxe_executable_run_nocopy(nxe_executable *exe, const nxe_tensor_desc *inputs,
                                             int32_t num_inputs, nxe_tensor_desc *outputs,
                                             int32_t num_outputs);

/* Since 0.1. */
typedef struct nxe_run_stats {
    uint32_t struct_size;     /* sizeof(nxe_run_stats) */
    uint64_t runs;            /* completed runs since creation or load */
    uint64_t inputs_copied;   /* over all runs: inputs copied into staging */
    uint64_t inputs_in_place; /* over all runs: inputs already in staging (zero-copy) */
    uint64_t bytes_copied_in;
    uint64_t bytes_copied_out; /* outputs copied to caller buffers by nxe_executable_run */
    uint64_t staging_bytes;    /* capacity of the staging buffer */
    uint64_t staging_used;     /* the result area, the input slots and created inputs */
} nxe_run_stats;
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size); *stats is then
 * unchanged. Since 0.1. */
NXE_API nxe_status nxe_executable_stats(const nxe_executable *exe, nxe_run_stats *stats);

/* ---- Profiling --------------------------------------------------------------------------
 * Per-step timing of runs, off by default. While it is on, each run (nxe_executable_run or
 * nxe_executable_run_nocopy) reads the monotonic clock once per step, and the executable keeps
 * the timings of the most recent successful run that recorded them, whichever thread ran it:
 * with several threads running at once, a query returns one whole run, never a mix. Off, a run
 * pays one test of the flag. A run follows the setting it found when it started. */

/* Turns profiling on (enable nonzero) or off. Turning it on forgets the profile kept so far;
 * turning it off keeps it for nxe_executable_get_profile. NXE_ERROR_INVALID_ARGUMENT (exe is
 * NULL), NXE_ERROR_INVALID_STATE (no staging buffer: the executable cannot run); the setting
 * is then unchanged. Since 0.5. */
NXE_API nxe_status nxe_executable_set_profiling(nxe_executable *exe, int32_t enable);

/* Capacity of nxe_profile_step.kernel, NUL included. Since 0.5. */
#define NXE_PROFILE_KERNEL_CAPACITY 48

/* One step of the plan (one kernel call: an op with any activation or residual addition folded
 * into it) in the profiled run. Since 0.5. */
typedef struct nxe_profile_step {
    uint32_t struct_size; /* sizeof(nxe_profile_step): set in steps[0] by the caller */
    int32_t index;        /* the step's position in the plan */
    const char *op_type;  /* "Conv2d"; static storage */
    const char *op_name;  /* the op's name in the graph; owned by the executable (valid until
                             its release) */
    char kernel[NXE_PROFILE_KERNEL_CAPACITY]; /* the microkernel a prepared step runs
                                                 ("f32-gemm-8x48-avx512", "f32-depthwise-avx512"),
                                                 else "reference": the op's own code, which may
                                                 still call the vector kernels of its ISA level */
    int32_t num_inputs; /* including a folded residual operand and absent optional inputs */
    int32_t num_outputs;
    int32_t input_ndim; /* of input 0; -1 when the step has none or it is absent */
    int32_t output_ndim;
    int64_t input_shape[NXE_MAX_RANK];  /* of input 0, input_ndim dimensions, the rest 0 */
    int64_t output_shape[NXE_MAX_RANK]; /* of output 0, output_ndim dimensions, the rest 0 */
    uint64_t start_ns;                  /* since the run's first step began */
    uint64_t elapsed_ns; /* wall time of the step on the calling thread, workers included */
} nxe_profile_step;

/* Describes each step of the kept profile in steps[0 .. *count), in plan order; the elements
 * lie steps[0].struct_size bytes apart and each gets that struct_size back. With steps NULL
 * only *count is set (the plan's step count, nxe_memory_info.num_steps): two-call pattern.
 * NXE_ERROR_INVALID_ARGUMENT (exe or count NULL, a negative capacity, a positive capacity
 * with a steps[0].struct_size short of the 0.5 struct or not a multiple of its alignment),
 * NXE_ERROR_NOT_FOUND (no run has been profiled since profiling was turned on),
 * NXE_ERROR_BUFFER_TOO_SMALL (capacity below the step count; *count is then the count needed);
 * on any other failure *count is 0, and on every failure the steps are unchanged. Since 0.5. */
NXE_API nxe_status nxe_executable_get_profile(const nxe_executable *exe, nxe_profile_step *steps,
                                              int32_t capacity, int32_t *count);

/* ---- Compiled binaries (.nxb) -----------------------------------------------------------
 * A binary holds the plan, the weights, the memory plan, the I/O specs, the ISA and
 * kernel-ABI tag, the source model's fingerprint, checksums and the portable model it came
 * from. Loading it needs no graph building; the loader packs the weights for its CPU's kernels
 * and folds epilogues as compiling does. */

/* Compiles `graph` and serializes the result: with buffer NULL only *size is set; then call
 * again with a buffer of *size bytes. The codes of nxe_graph_compile, NXE_ERROR_INVALID_ARGUMENT
 * when size is NULL, and NXE_ERROR_BUFFER_TOO_SMALL, after which *size is the size needed; on
 * any other failure *size is 0. The buffer stays the caller's. Since 0.1. */
NXE_API nxe_status nxe_graph_compile_to_binary(nxe_graph *graph, const nxe_compile_options *options,
                                               void *buffer, size_t *size);

/* Since 0.1, but for the fields marked otherwise. A struct_size of a 0.4 caller (without
 * `limits`) is accepted and means the defaults. */
typedef struct nxe_load_options {
    uint32_t struct_size;     /* sizeof(nxe_load_options) */
    int32_t num_threads;      /* 0 = one per online CPU */
    int32_t verify;           /* nonzero: check every section's checksum before use */
    int32_t allow_recompile;  /* nonzero: a binary for an ISA or kernel ABI this machine lacks
                                  is recompiled from its embedded model; zero: that is an error */
    uint64_t staging_bytes;   /* staging capacity; 0 = the result area plus room for every
                                  input twice */
    const nxe_limits *limits; /* since 0.5: NULL = the defaults; borrowed for the call */
    nxe_context *context;     /* since 0.10: the custom ops the plan may name are looked up
                                 here; NULL = built-in ops only */
    const nxe_device *device; /* since 0.10: where the executable runs; NULL = the default CPU
                                 device */
} nxe_load_options;
/* Since 0.1. */
#define NXE_LOAD_OPTIONS_INIT {sizeof(nxe_load_options), 0, 1, 1, 0, NULL, NULL, NULL}

/* Maps the file read-only; constant data is used in place from the mapping, which lives as
 * long as the executable. `options` may be NULL for defaults. The caller releases the
 * executable with nxe_executable_release. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, bad
 * options, a file above the limits' max_file_bytes), NXE_ERROR_INVALID_GRAPH (a plan above
 * max_ops), NXE_ERROR_SHAPE_MISMATCH (a tensor above max_tensor_bytes), NXE_ERROR_IO (the file
 * cannot be opened or mapped), NXE_ERROR_FORMAT (malformed, truncated or failing a checksum),
 * NXE_ERROR_NOT_FOUND (since 0.10: the plan names a custom op type, one with a '.' in its name,
 * that options->context does not register; the message names it),
 * NXE_ERROR_UNSUPPORTED (another format version, or an ISA or kernel ABI this machine lacks
 * without allow_recompile), NXE_ERROR_OUT_OF_MEMORY (also a run above max_arena_bytes), or a
 * code of nxe_graph_compile when recompiling; *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_executable_load_file(const char *path, const nxe_load_options *options,
                                            nxe_executable **out);
/* Loads from memory the caller keeps: `data` is copied, the caller may free it afterwards.
 * Status codes as nxe_executable_load_file but NXE_ERROR_IO; *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_executable_load_memory(const void *data, size_t size,
                                              const nxe_load_options *options,
                                              nxe_executable **out);

/* Since 0.1. */
typedef struct nxe_executable_info {
    uint32_t struct_size;    /* sizeof(nxe_executable_info) */
    uint8_t fingerprint[32]; /* SHA-256 fingerprint of the source model; all zero for an
                                   executable compiled in memory from a graph not built from
                                   a model file */
    char isa[16];            /* ISA the plan's kernels need, e.g. "ref"; like kernel_abi, a
                                   tag to compare, whose values are experimental (they follow
                                   the kernel set, nxe_experimental.h) */
    int32_t kernel_abi;      /* kernel ABI version of the plan */
    int32_t loaded;          /* nonzero: loaded from a binary */
    int32_t recompiled;      /* nonzero: the binary was recompiled from its embedded model */
    int32_t num_constants;   /* distinct constant buffers after de-duplication */
} nxe_executable_info;
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument or a short struct_size); *info is then
 * unchanged. Since 0.1. */
NXE_API nxe_status nxe_executable_get_info(const nxe_executable *exe, nxe_executable_info *info);

/* ---- Model files (.nxm) -----------------------------------------------------------------
 * A portable graph with its weights and metadata. Its fingerprint is a SHA-256 over canonical
 * content (format major version, the graph, the metadata, and each tensor's name, dtype,
 * shape, quantization and bytes in name order), so re-aligning a file keeps it. */

/* Since 0.1. */
typedef struct nxe_model nxe_model;

/* Since 0.1, but for the fields marked otherwise. A struct_size of a 0.4 caller (without
 * `limits`) is accepted and means the defaults. */
typedef struct nxe_model_options {
    uint32_t struct_size;     /* sizeof(nxe_model_options) */
    int32_t lazy;             /* nonzero: skip the tensor-data checksum and fingerprint check
                                  at open; nxe_model_verify does them later */
    const nxe_limits *limits; /* since 0.5: max_file_bytes, max_tensor_bytes (each stored
                                  tensor) and max_ops (the graph) apply; NULL = the defaults;
                                  borrowed for the call */
} nxe_model_options;
/* Since 0.1. */
#define NXE_MODEL_OPTIONS_INIT {sizeof(nxe_model_options), 0, NULL}

/* Opens a model file (mapped read-only for the model's life); `options` may be NULL for
 * defaults. A compiled binary (.nxb, since 0.5) opens as the model file it embeds. The caller releases the model with nxe_model_release. NXE_ERROR_INVALID_ARGUMENT
 * (a NULL argument, a short struct_size or a file above the limits' max_file_bytes),
 * NXE_ERROR_INVALID_GRAPH (a graph above max_ops), NXE_ERROR_SHAPE_MISMATCH (a stored tensor
 * above max_tensor_bytes), NXE_ERROR_IO (the file cannot be opened or
 * mapped), NXE_ERROR_FORMAT (malformed, truncated, or a checksum or fingerprint that does not
 * match), NXE_ERROR_UNSUPPORTED (another format major version), NXE_ERROR_OUT_OF_MEMORY;
 * *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_model_open_file(const char *path, const nxe_model_options *options,
                                       nxe_model **out);
/* `data` is copied: the caller may free it afterwards. Status codes as nxe_model_open_file
 * but NXE_ERROR_IO; *out is then NULL. Since 0.1. */
NXE_API nxe_status nxe_model_open_memory(const void *data, size_t size,
                                         const nxe_model_options *options, nxe_model **out);
/* Since 0.1. */
NXE_API void nxe_model_release(nxe_model *model);
/* Checks every checksum and recomputes the fingerprint. NXE_ERROR_INVALID_ARGUMENT (model is
 * NULL), NXE_ERROR_FORMAT (a mismatch). Since 0.1. */
NXE_API nxe_status nxe_model_verify(const nxe_model *model);
/* Copies the 32-byte fingerprint stored in the model. NXE_ERROR_INVALID_ARGUMENT (a NULL
 * argument); the caller's bytes are then unchanged. Since 0.1. */
NXE_API nxe_status nxe_model_fingerprint(const nxe_model *model, uint8_t fingerprint[32]);
/* UTF-8 JSON, not NUL-terminated, owned by the model (valid until its release); "{}" when the
 * file has none. `metadata` is part of the fingerprint; `annotations` (provenance, parity
 * reports) are not. NXE_ERROR_INVALID_ARGUMENT (a NULL argument); *json is then NULL and
 * *size 0. Since 0.1. */
NXE_API nxe_status nxe_model_metadata(const nxe_model *model, const char **json, size_t *size);
NXE_API nxe_status nxe_model_annotations(const nxe_model *model, const char **json, size_t *size);
/* NXE_ERROR_INVALID_ARGUMENT (a NULL argument); *count is then 0. Since 0.1. */
NXE_API nxe_status nxe_model_tensor_count(const nxe_model *model, int32_t *count);
/* Describes stored tensor `index`; desc->data and the pointers in *info point into the model
 * (read-only, valid until its release). info may be NULL. NXE_ERROR_INVALID_ARGUMENT (model
 * or desc is NULL, a short info->struct_size), NXE_ERROR_NOT_FOUND (index out of range);
 * *desc is then all zero and *info unchanged. Since 0.1. */
NXE_API nxe_status nxe_model_tensor(const nxe_model *model, int32_t index, nxe_tensor_info *info,
                                    nxe_tensor_desc *desc);
/* Builds a new graph from the model in `ctx`; the graph remembers the model's fingerprint,
 * holds its own copy of the weights, and is released by the caller with nxe_graph_release.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_FORMAT (a graph section that does
 * not decode), NXE_ERROR_NOT_FOUND (an op type this library lacks, or since 0.10 a custom op
 * type `ctx` does not register), the codes of
 * nxe_graph_add_tensor and the binding calls, NXE_ERROR_OUT_OF_MEMORY; *out is then NULL.
 * Since 0.1. */
NXE_API nxe_status nxe_model_build_graph(const nxe_model *model, nxe_context *ctx, nxe_graph **out);

/* Since 0.1. */
typedef struct nxe_model_write_options {
    uint32_t struct_size;         /* sizeof(nxe_model_write_options) */
    const char *metadata_json;    /* NULL = "{}" */
    const char *annotations_json; /* NULL = "{}" */
    uint32_t alignment;           /* of sections and tensor data: power of two >= 64; 0 = 64 */
} nxe_model_write_options;
/* Since 0.1. */
#define NXE_MODEL_WRITE_OPTIONS_INIT {sizeof(nxe_model_write_options), NULL, NULL, 0}

/* Serializes the graph as a model file, two-call pattern as nxe_graph_compile_to_binary:
 * NXE_ERROR_BUFFER_TOO_SMALL sets *size to the size needed, any other failure to 0.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL graph or size, bad options, JSON that is not UTF-8, a
 * graph beyond the format's limits), NXE_ERROR_INVALID_GRAPH (an op left unbound),
 * NXE_ERROR_OUT_OF_MEMORY. The buffer stays the caller's. Since 0.1. */
NXE_API nxe_status nxe_graph_save_model(nxe_graph *graph, const nxe_model_write_options *options,
                                        void *buffer, size_t *size);

/* ---- In-graph state ----------------------------------------------------------------------
 * An op may write a VARIABLE tensor, the op that reads it included (s = Add(s, x), or
 * Assign(value) -> s). When the writer depends on the variable's own value (an update), every
 * op of the run reading the variable sees the value the run started with and the write lands
 * after all of them; otherwise the writer runs first and readers see the new value. One op at
 * most writes a variable. The value is kept across runs (nxe_executable_read_variable and
 * _write_variable between runs) and survives nothing but the executable: a new compile or
 * load starts from the initial data. */

/* Sets the variable `name`, or every variable when `name` is NULL, back to the initial data it
 * was compiled (or loaded) with, under the same lock as nxe_executable_write_variable.
 * NXE_ERROR_INVALID_ARGUMENT (exe is NULL), NXE_ERROR_NOT_FOUND (no such variable, or one no
 * op uses); the variables are then unchanged. Since 0.10. */
NXE_API nxe_status nxe_executable_reset_variable(nxe_executable *exe, const char *name);

/* ---- Bound caller memory ---------------------------------------------------------------
 * A binding ties caller-owned buffers to an executable's inputs and outputs, as onnxruntime's
 * IO binding and NPU runtimes' handle tensors do: nxe_binding_run reads every input where the
 * caller's buffer lies and the steps write every output straight into the caller's buffer
 * (that buffer is the output tensor's storage for the run, also for later steps that read the
 * output). Nothing is copied in or out: nxe_executable_stats counts a bound run's inputs as in
 * place and adds no bytes copied.
 *
 * Rules for a bound buffer, checked when it is bound:
 * - its descriptor matches the input or output exactly (dtype, rank, shape), data_size is at
 *   least the tensor's bytes and data is not NULL (a tensor of 0 bytes may have NULL data);
 * - data is aligned to the dtype's element size (4 bytes for f32): kernels access elements as
 *   C objects of that type but load vectors unaligned, so no more is needed; 64-byte alignment
 *   (cache lines) is faster and is what nxe's own buffers have;
 * - an output buffer overlaps no other bound buffer of the binding, input or output (inputs
 *   may share memory with each other: they are only read);
 * - it stays valid, and the caller neither reads nor writes it, while a run of the binding is
 *   under way; between runs the caller may read outputs and refill inputs in place.
 * Only inputs and outputs can be bound: constants, variables and intermediate tensors stay in
 * the executable's memory (outputs are never placed in the arena the memory plan shares, so
 * binding one cannot alias another tensor). A failed run leaves output buffers partly written.
 * A binding is used by one call at a time (a second concurrent call on the same binding fails
 * with NXE_ERROR_INVALID_STATE); several bindings of one executable may run at once from
 * several threads, each in its own run context, as nxe_executable_run does. The executable
 * must outlive its bindings. */

/* Since 0.10. */
typedef struct nxe_binding nxe_binding;

/* A binding for `exe` with nothing bound. Release it with nxe_binding_release before the
 * executable. NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_INVALID_STATE (an
 * executable that cannot run: compiled only to be written out), NXE_ERROR_OUT_OF_MEMORY; *out is
 * then NULL. Since 0.10. */
NXE_API nxe_status nxe_binding_create(nxe_executable *exe, nxe_binding **out);
/* Releases the binding; the bound buffers stay the caller's. NULL does nothing. Since 0.10. */
NXE_API void nxe_binding_release(nxe_binding *binding);
/* Binds input or output `index` to the buffer `desc` describes (copied; the buffer is
 * borrowed until it is unbound, rebound or the binding is released). Binding an index again
 * replaces its buffer. NXE_ERROR_INVALID_ARGUMENT (a NULL binding or desc, NULL data, a nonzero
 * reserved field, data not aligned to the element size, an output overlapping another bound
 * buffer), NXE_ERROR_NOT_FOUND (index out of range), NXE_ERROR_DTYPE_MISMATCH,
 * NXE_ERROR_SHAPE_MISMATCH, NXE_ERROR_BUFFER_TOO_SMALL (data_size short of the tensor's bytes),
 * NXE_ERROR_INVALID_STATE (another call is using the binding); the binding is then unchanged.
 * Since 0.10. */
NXE_API nxe_status nxe_binding_bind_input(nxe_binding *binding, int32_t index,
                                          const nxe_tensor_desc *desc);
NXE_API nxe_status nxe_binding_bind_output(nxe_binding *binding, int32_t index,
                                           const nxe_tensor_desc *desc);
/* Forgets every bound buffer. NXE_ERROR_INVALID_ARGUMENT (NULL), NXE_ERROR_INVALID_STATE
 * (another call is using the binding; nothing is forgotten). Since 0.10. */
NXE_API nxe_status nxe_binding_clear(nxe_binding *binding);
/* Runs the executable once on the bound buffers: inputs read in place, outputs written in
 * place. Every input and output must be bound. Runs that write a VARIABLE take turns with the
 * executable's other runs; profiling records the run as any other. A thread's
 * nxe_executable_run_nocopy results stay valid across its bound runs (a bound run writes no
 * result area). On a remote device the transport reads the bound inputs and writes the results
 * into the bound outputs. NXE_ERROR_INVALID_ARGUMENT (NULL), NXE_ERROR_INVALID_STATE (an input or output
 * not bound, or another call using the binding), NXE_ERROR_OUT_OF_MEMORY (no run context could
 * be made), or the failing op's code (NXE_ERROR_RUNTIME for data-dependent failures); a failed
 * run is not counted in nxe_executable_stats and may leave outputs partly written.
 * Since 0.10. */
NXE_API nxe_status nxe_binding_run(nxe_binding *binding);

/* ---- Custom ops ---------------------------------------------------------------------------
 * Op types a program adds to one context: a shape rule and a compute function given as
 * callbacks (nxe_context_register_op), or a subgraph of existing ops
 * (nxe_context_register_composed_op). Graphs of the context find them by name before the
 * built-in ops (nxe_graph_add_op, nxe_model_build_graph); the ONNX importer by domain and op
 * type. A compiled binary names them: nxe_executable_load_* finds them in
 * nxe_load_options.context. An op entry lives as long as the context or any graph, op or
 * executable using it: releasing the context early is safe. Callbacks may be called from any
 * thread, from several at once when executables run concurrently. */

/* The attributes of one op instance, read with nxe_custom_attr_*; valid during the call it is
 * handed to. Since 0.10. */
typedef struct nxe_custom_attrs nxe_custom_attrs;

/* One input or output as a callback sees it. Since 0.10. */
typedef struct nxe_custom_tensor {
    int32_t dtype; /* enum nxe_dtype; NXE_DTYPE_NONE: an absent optional input, or an output
                      the shape rule must set */
    int32_t ndim;  /* -1: an output the shape rule must set */
    int64_t shape[NXE_MAX_RANK];
    void *data;       /* shape rule and prepare: a CONSTANT input's bytes (read-only), else
                         NULL; compute: the tensor's bytes (inputs read-only, outputs written) */
    size_t data_size; /* bytes at data; 0 when data is NULL */
} nxe_custom_tensor;

/* What every callback receives. Since 0.10. */
typedef struct nxe_custom_call {
    uint32_t struct_size;          /* sizeof(nxe_custom_call) of the library */
    void *user_data;               /* nxe_custom_op.user_data */
    void *state;                   /* compute: what prepare made (NULL without prepare) */
    const nxe_custom_attrs *attrs; /* the op's attributes */
    const char *op_type;           /* the registered name */
    const char *op_name;           /* the op's name in the graph */
    void *pool;                    /* internal: what nxe_custom_parallel_for runs on */
} nxe_custom_call;

/* The shape rule, run when a graph compiles and when a binary loads: sets every output's
 * dtype, ndim (0..NXE_MAX_RANK) and shape (no negative dimension) from the inputs'. Returns
 * NXE_OK or a failure code (the message from nxe_custom_fail). Since 0.10. */
typedef nxe_status (*nxe_custom_infer_fn)(const nxe_custom_call *call,
                                          const nxe_custom_tensor *inputs, int32_t num_inputs,
                                          nxe_custom_tensor *outputs, int32_t num_outputs);
/* Optional: once per op of an executable, when it is compiled or loaded, after the shape rule:
 * packs constant inputs (data set for them) into *state, which each compute receives and
 * nxe_custom_release_fn frees when the executable is released. Since 0.10. */
typedef nxe_status (*nxe_custom_prepare_fn)(const nxe_custom_call *call,
                                            const nxe_custom_tensor *inputs, int32_t num_inputs,
                                            void **state);
/* Frees what prepare made (called only for a non-NULL state). Since 0.10. */
typedef void (*nxe_custom_release_fn)(void *user_data, void *state);
/* Computes the outputs, whose dtypes and shapes are those the shape rule set. Returns NXE_OK
 * or a failure code; the run then fails with that code and the message given to
 * nxe_custom_fail. Since 0.10. */
typedef nxe_status (*nxe_custom_compute_fn)(const nxe_custom_call *call,
                                            const nxe_custom_tensor *inputs, int32_t num_inputs,
                                            nxe_custom_tensor *outputs, int32_t num_outputs);

/* Since 0.10. */
typedef struct nxe_custom_op {
    uint32_t struct_size;             /* sizeof(nxe_custom_op) */
    const char *name;                 /* op type, e.g. "my.Swish": 1-63 bytes of UTF-8 with a
                                     '.' (built-in ops have none), not yet registered */
    const char *domain;               /* ONNX domain the op answers to; NULL or "" = none */
    const char *onnx_op_type;         /* ONNX op type it answers to; NULL = name */
    int32_t num_inputs;               /* 0..64 */
    int32_t num_optional_inputs;      /* the last ones of num_inputs may be left absent */
    int32_t num_outputs;              /* 1..64 */
    const nxe_op_attr_info *attrs;    /* the attributes it takes: name, type, default as JSON
                                      (NULL = required; a string attribute has none) */
    int32_t num_attrs;                /* 0..64 */
    nxe_custom_infer_fn infer;        /* required */
    nxe_custom_compute_fn compute;    /* required */
    nxe_custom_prepare_fn prepare;    /* optional */
    nxe_custom_release_fn release;    /* optional, with prepare */
    void *user_data;                  /* handed to every callback; stays the caller's */
    void (*destroy)(void *user_data); /* optional: called once the op entry is gone */
} nxe_custom_op;
/* Every field empty but struct_size. Since 0.10. */
#define NXE_CUSTOM_OP_INIT                                                                         \
    {sizeof(nxe_custom_op), NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL}

/* Registers a custom op in `ctx`; `op` and its strings are copied. Not while a graph of the
 * context is being built or compiled, or a binary loaded with it, in another thread. NXE_ERROR_INVALID_ARGUMENT
 * (a NULL argument, a short struct_size, a name that is empty, too long, not UTF-8 or without
 * a '.', counts
 * out of range, no infer or compute, an attribute of unknown type, duplicated, or with a
 * default that does not parse), NXE_ERROR_INVALID_STATE (the name is a built-in op or already
 * registered, or the domain and ONNX op type answer for another op), NXE_ERROR_OUT_OF_MEMORY;
 * nothing is then registered and `destroy` is not called. Since 0.10. */
NXE_API nxe_status nxe_context_register_op(nxe_context *ctx, const nxe_custom_op *op);

/* Registers op type `name` defined by `body`: its INPUT tensors, in the order they were added,
 * are the op's inputs, its OUTPUT tensors its outputs, its CONSTANT tensors are copied into
 * the op. The body must compile as it is (its shape rules are checked with its declared input
 * shapes); using the op in a graph expands it into the body's ops (named "op/body-op") when
 * the graph compiles, with shapes inferred from the tensors it is bound to. The body may use
 * custom and composed ops (of any context), not VARIABLE tensors; the op has no attributes.
 * `body` is copied and stays the caller's. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a bad
 * name or domain as for nxe_context_register_op, a body with VARIABLE tensors),
 * NXE_ERROR_INVALID_STATE (as for nxe_context_register_op), the codes of nxe_graph_compile for
 * a body that does not compile, NXE_ERROR_OUT_OF_MEMORY; nothing is then registered.
 * Since 0.10. */
NXE_API nxe_status nxe_context_register_composed_op(nxe_context *ctx, const char *name,
                                                    const char *domain, const nxe_graph *body);

/* The op type registered in `ctx` that answers to ONNX (domain, op_type) (domain "" or
 * "ai.onnx" for the default domain), as a string owned by the context, valid while it lives.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument), NXE_ERROR_NOT_FOUND (none); *name is then
 * NULL. Since 0.10. */
NXE_API nxe_status nxe_context_find_onnx_op(const nxe_context *ctx, const char *domain,
                                            const char *op_type, const char **name);

/* Attribute getters for callbacks: the value set on the op, else the registered default.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a required attribute left unset),
 * NXE_ERROR_NOT_FOUND (the op declares no attribute of that name and type); the out-params
 * are then unchanged. Strings and lists are the op's, valid during the callback. Since 0.10. */
NXE_API nxe_status nxe_custom_attr_int(const nxe_custom_attrs *attrs, const char *name,
                                       int64_t *value);
NXE_API nxe_status nxe_custom_attr_float(const nxe_custom_attrs *attrs, const char *name,
                                         double *value);
NXE_API nxe_status nxe_custom_attr_string(const nxe_custom_attrs *attrs, const char *name,
                                          const char **value);
NXE_API nxe_status nxe_custom_attr_ints(const nxe_custom_attrs *attrs, const char *name,
                                        const int64_t **values, int32_t *count);
NXE_API nxe_status nxe_custom_attr_floats(const nxe_custom_attrs *attrs, const char *name,
                                          const float **values, int32_t *count);

/* Body of a parallel loop over items [begin, end). Since 0.10. */
typedef void (*nxe_custom_range_fn)(void *arg, int64_t begin, int64_t end);
/* From compute: runs fn over [0, count) on the executable's threads (the caller's included),
 * in chunks of at least `grain` items (0 = 1), and returns when all are done; results must not
 * depend on how the range is split. Elsewhere (call->pool NULL) it runs inline.
 * NXE_ERROR_INVALID_ARGUMENT (call or fn NULL, a negative count or grain). Since 0.10. */
NXE_API nxe_status nxe_custom_parallel_for(const nxe_custom_call *call, int64_t count,
                                           int64_t grain, nxe_custom_range_fn fn, void *arg);
/* For a failing callback: records `message` (NULL: none) as this thread's error message and
 * returns `status`, so that `return nxe_custom_fail(NXE_ERROR_RUNTIME, "...");` ends it. The
 * library then reports the failure prefixed with the op's type and name. Cannot fail.
 * Since 0.10. */
NXE_API nxe_status nxe_custom_fail(nxe_status status, const char *message);

/* ---- Devices ----------------------------------------------------------------------------
 * Where executables run. The library lists, once per process: "cpu", every CPU this process
 * may run on; "cpu:numa<N>", each NUMA node's CPUs (from /sys/devices/system/node; a machine
 * without that directory, or not Linux, lists one node 0 with every CPU). Core sets a caller
 * makes ("cpu:cores0-3") and remote workers a host adds ("remote:host:port") are appended.
 * Devices are owned by the library and live as long as the process; indexes never change.
 * nxe_compile_options.device and nxe_load_options.device choose one: on Linux the
 * executable's worker threads are pinned to the device's cores (pthread_setaffinity_np; the
 * thread calling a run is the caller's and is left alone), and num_threads 0 means the
 * device's core count. Elsewhere pinning is not done and the device only sets the default
 * thread count. NULL keeps the behaviour before 0.10: no pinning, one thread per online CPU. */

/* Since 0.10. */
enum nxe_device_kind { NXE_DEVICE_CPU = 1, NXE_DEVICE_REMOTE = 2 };

/* Since 0.10. */
typedef struct nxe_device_info {
    uint32_t struct_size; /* set by the caller: sizeof(nxe_device_info) */
    const char *name;     /* "cpu", "cpu:numa0", "cpu:cores0-3", "remote:127.0.0.1:5000";
                             owned by the library, lives as long as the process */
    int32_t kind;         /* enum nxe_device_kind */
    char isa[16];         /* CPU devices: the kernels' ISA level in use ("avx512", ...);
                             remote devices: "" (the worker chooses its own) */
    int32_t num_cores;    /* CPU devices: how many cores; remote devices: 0 */
    const int32_t *cores; /* num_cores CPU numbers, ascending, owned by the library (lives as
                             long as the process); NULL for remote devices */
    int32_t numa_node;    /* "cpu:numa<N>": N; every other device: -1 */
} nxe_device_info;

/* Number of devices listed now (at least 2: "cpu" and "cpu:numa0"). NXE_ERROR_INVALID_ARGUMENT
 * (count is NULL). Since 0.10. */
NXE_API nxe_status nxe_device_count(int32_t *count);
/* Device `index` (0 = "cpu", the default). NXE_ERROR_INVALID_ARGUMENT (out is NULL),
 * NXE_ERROR_NOT_FOUND (index outside [0, count)); *out is then NULL. Since 0.10. */
NXE_API nxe_status nxe_device_get(int32_t index, const nxe_device **out);
/* The device named `name`; a name "cpu:cores<list>" (a list like "0-3,6") not listed yet is
 * made as by nxe_device_create_cpu_set. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a core
 * list that does not parse or names CPUs this process cannot run on), NXE_ERROR_NOT_FOUND (no
 * such device), NXE_ERROR_OUT_OF_MEMORY (also the 256-device table full); *out is then NULL.
 * Since 0.10. */
NXE_API nxe_status nxe_device_find(const char *name, const nxe_device **out);
/* Describes a device. NXE_ERROR_INVALID_ARGUMENT (a NULL argument, a short struct_size, or a
 * device pointer the library did not hand out); *info is then unchanged. Since 0.10. */
NXE_API nxe_status nxe_device_get_info(const nxe_device *device, nxe_device_info *info);
/* The CPU device of the cores cores[0 .. num_cores) (any order, no repeats), named
 * "cpu:cores<list>"; asking for a set already listed returns that device.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL argument, num_cores outside [1, 1024], a repeated core or
 * one this process cannot run on), NXE_ERROR_OUT_OF_MEMORY (also the 256-device table full);
 * *out is then NULL. Since 0.10. */
NXE_API nxe_status nxe_device_create_cpu_set(const int32_t *cores, int32_t num_cores,
                                             const nxe_device **out);

/* How runs reach a remote worker: callbacks the host installs (Python's nxe.RemoteDevice
 * installs a gRPC client; a C host writes its own or talks to `nxe worker`, see
 * docs/architecture.md). Each returns an nxe_status; on failure it leaves its message with
 * nxe_set_error_message (below). Called from the thread that compiles, loads, runs or
 * releases; they may be called from several threads at once. Since 0.10. */
typedef struct nxe_remote_transport {
    uint32_t struct_size; /* sizeof(nxe_remote_transport) */
    void *user_data;      /* handed to every callback, the host's */
    /* Makes the compiled binary (`size` bytes, borrowed for the call) runnable on the worker
     * and sets *handle to the host's name for it. */
    nxe_status (*load)(void *user_data, const void *binary, size_t size, uint64_t *handle);
    /* Runs it: inputs and outputs in the executable's order, outputs' data buffers sized as
     * nxe_executable_output_desc says, filled by the callback. */
    nxe_status (*run)(void *user_data, uint64_t handle, const nxe_tensor_desc *inputs,
                      int32_t num_inputs, nxe_tensor_desc *outputs, int32_t num_outputs);
    /* Ends `handle` (the executable's release); cannot fail. */
    void (*unload)(void *user_data, uint64_t handle);
} nxe_remote_transport;

/* Lists the remote worker `address` ("host:port") as device "remote:<address>", its runs
 * carried by `transport` (copied; NULL: listed only, and compiling or loading for it is
 * NXE_ERROR_UNSUPPORTED). Adding an address again returns the same device with the new
 * transport, which executables placed from then on use (those placed before keep theirs).
 * An executable compiled or loaded for a remote device keeps its plan here (its I/O
 * descriptions, nxe_executable_get_info) and hands every run to the transport.
 * NXE_ERROR_INVALID_ARGUMENT (a NULL address or out, an empty or too long address, a short
 * struct_size, a transport without all three callbacks), NXE_ERROR_OUT_OF_MEMORY (also the
 * 256-device table full); *out is then NULL. Since 0.10. */
NXE_API nxe_status nxe_device_add_remote(const char *address, const nxe_remote_transport *transport,
                                         const nxe_device **out);
/* Records `message` (UTF-8, copied) as this thread's last error and returns `status`: for
 * callbacks (remote transports) reporting a failure. Cannot fail. Since 0.10. */
NXE_API nxe_status nxe_set_error_message(nxe_status status, const char *message);

#ifdef __cplusplus
}
#endif
#endif /* NXE_NXE_H */
