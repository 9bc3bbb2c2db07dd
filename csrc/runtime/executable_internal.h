/* executable_internal.h — an executable: a plan (its tensors and steps, transform/plan.h),
 * the constants, the memory plan and the run contexts that carry it out. Independent of the
 * graph it came from; the compiler and the binary loader both fill one in. */
#ifndef NXE_EXECUTABLE_INTERNAL_H
#define NXE_EXECUTABLE_INTERNAL_H

#include "core/core.h"
#include "core/file_map.h"
#include "core/threadpool.h"
#include "transform/plan.h"

/* Bump whenever the PLAN encoding (runtime/binary_writer.c) or a kernel's contract with the
 * data a plan carries changes. Op params are not stored in plans: the loader re-derives them
 * with the ops' shape rules from the recorded attributes and shapes, so a crafted plan cannot
 * hand a kernel sizes its buffers do not have. A binary carrying another version is refused
 * (or recompiled from its embedded model). */
#define NXE_KERNEL_ABI_VERSION 3
/* The ISA tag of plans this build compiles. Plans are portable: they hold no packed weights
 * and no folded steps, and every loader prepares them for its own CPU's kernels
 * (runtime/prepare.c), so "ref" is the only tag; plans carrying ISA-specific data would add
 * their tags through nxe_isa_runs_here. */
#define NXE_ISA_REF "ref"
#define NXE_ISA_TAG_CAPACITY 16

/* Whether the kernels a plan tagged `isa` needs exist in this build and run on this CPU. */
bool nxe_isa_runs_here(const char *isa);

/* What changes while runs are under way (executable.c): the run contexts, each holding what
 * one run writes (arena, workspace, staging, the steps' value descriptors) so that runs from
 * several threads at once each have their own; the created inputs handed out; the statistics;
 * the profiling flag and the kept profile; the locks. */
typedef struct nxe_run_pool nxe_run_pool;

struct nxe_executable {
    nxe_exe_tensor *tensors;
    int32_t num_tensors;
    void **data;         /* per tensor: where constants and variables live; NULL for arena
                             and I/O tensors, which each run context places in its own memory */
    nxe_exe_step *steps; /* read-only once prepared: runs never write them */
    int32_t num_steps;
    int32_t *input_ids;
    int32_t num_inputs;
    int32_t *output_ids;
    int32_t num_outputs;
    uint64_t arena_bytes;   /* per run context */
    size_t workspace_bytes; /* per run context: scratch for prepared steps (prepare.c) */
    uint64_t transient_bytes;
    uint64_t constant_bytes; /* distinct constants plus variables */
    nxe_exe_constant *constants;
    int32_t num_constants;
    nxe_thread_pool *pool;
    int32_t relax_precision;
    int32_t winograd; /* an nxe_winograd_mode */

    /* What the plan is and where it came from (nxe_executable_get_info). */
    uint8_t fingerprint[32];
    char isa[NXE_ISA_TAG_CAPACITY];
    int32_t kernel_abi;
    bool loaded;
    bool recompiled;
    nxe_file_map file; /* a loaded binary: constants point into it */

    /* Staging (layout in executable.c): each run context has [result area][input slots];
     * created inputs share one region owned by the executable. */
    uint64_t staging_bytes;   /* capacity: one run's result area and input slots plus the
                                 created-input region */
    uint64_t *output_offsets; /* per output: offset of its result in a run's staging */
    uint64_t *input_offsets;  /* per input: offset of its slot in a run's staging */
    uint64_t io_bytes;        /* a run's staging: the result area and the input slots */
    uint8_t *created;         /* the created-input region: staging_bytes - io_bytes bytes */
    bool writes_variables;    /* a step produces a VARIABLE: runs hold the variables alone */
    nxe_run_pool *runs;       /* made by nxe_executable_alloc */
    /* Placed on a remote device (runtime/device.c): runs go to the transport it had then,
     * under this handle; the plan here only describes the I/O. NULL for local executables. */
    const nxe_device *remote;
    nxe_remote_transport remote_transport;
    uint64_t remote_handle;
};

/* An executable with `num_tensors` zeroed tensor slots (constant index -1) and `num_steps`
 * zeroed steps. */
nxe_status nxe_executable_alloc(int32_t num_tensors, int32_t num_steps, nxe_executable **out);

/* Lays out staging, allocates the created-input region and the first run context once the
 * steps, tensors and I/O ids are final; `capacity` 0 means the default. A run's arena plus its
 * staging above `max_bytes` (nxe_limits.max_arena_bytes) fails with NXE_ERROR_OUT_OF_MEMORY
 * before anything is allocated. `where` names the caller in messages. */
nxe_status nxe_executable_init_staging(nxe_executable *exe, uint64_t capacity, uint64_t max_bytes,
                                       const char *where);

/* Prepares every step for this process's kernels (packing constant weights, sizing the
 * workspace), folds activations and residual additions into the steps that can apply them as
 * epilogues, then plans the arena for the steps that remain. Run by the compiler and by the
 * binary loader, so a loaded plan runs the same steps as a compiled one. */
nxe_status nxe_executable_prepare(nxe_executable *exe);
/* Gives every arena tensor an offset (largest first, lowest free offset among overlapping
 * lifetimes) from the steps as they are; each run context allocates an arena of the size. */
nxe_status nxe_executable_plan_arena(nxe_executable *exe);

/* Options of the internal compile shared by nxe_graph_compile, the binary writer and the
 * loader's recompile path. */
typedef struct nxe_compile_request {
    int32_t num_threads; /* 0 = one per online CPU */
    int32_t relax_precision;
    int32_t winograd;       /* an nxe_winograd_mode; AUTO is resolved against the environment */
    uint64_t staging_bytes; /* 0 = default */
    nxe_limits limits;      /* resolved (nxe_limits_resolve): no field is 0 */
    bool serialize_only;    /* the plan is written out, never run: constant and variable
                                 bytes are borrowed from the graph, and no arena, staging or
                                 threads are made */
    /* Where it runs: checked (runtime/device.h); NULL = the default CPU. */
    const nxe_device *device;
} nxe_compile_request;

/* Validates `options` (may be NULL; a 0.4 struct_size, without limits, is accepted) into a
 * request; `where` names the caller. Options without limits take `graph`'s context's. */
nxe_status nxe_compile_request_from(const nxe_graph *graph, const nxe_compile_options *options,
                                    const char *where, nxe_compile_request *request);
nxe_status nxe_compile_graph(nxe_graph *graph, const nxe_compile_request *request,
                             nxe_executable **out);
/* Worker threads for a thread-count option: 0 means one per online CPU. */
int32_t nxe_default_thread_count(void);

/* For bound runs (runtime/binding.c). Whether `desc` matches input or output `index` (in
 * range) as a run's descriptors must. */
nxe_status nxe_executable_check_io_desc(const nxe_executable *exe, bool input, int32_t index,
                                        const nxe_tensor_desc *desc, const char *where);
/* One run reading input i from inputs[i] and writing output i into outputs[i] in place (checked
 * by the caller), in a run context of its own; counted in the statistics when it succeeds. */
nxe_status nxe_executable_run_bound(nxe_executable *exe, void *const *inputs, void *const *outputs,
                                    const char *where);

#endif
