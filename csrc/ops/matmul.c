/* matmul.c — the matmul op family: MatMul (numpy semantics), Gemm (ONNX) and FullyConnected.
 * Schemas, shape rules and lowering: onto the packed GEMM (kernels/gemm.h) wherever the level
 * has a microkernel, onto the reference GEMM of kernels/ref/matmul at the scalar level. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ops/op_def.h"
#include "dispatch.h"
#include "gemm.h"
#include "ref/matmul.h"

/* About this many multiply-adds per parallel task keeps scheduling overhead negligible. */
#define MATMUL_TASK_WORK 65536.0

static bool input_present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

/* Fails unless the elements of `shape` can be counted in int64: zero-sized tensors with huge
 * other dimensions would otherwise overflow row counts. */
static nxe_status check_countable(const nxe_node *node, const char *what, int32_t ndim,
                                  const int64_t *shape)
{
    int64_t numel;
    if (!nxe_shape_numel(ndim, shape, &numel)) {
        char buf[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "%s %s has more elements than int64 can count", what,
                              nxe_shape_str(ndim, shape, buf, sizeof buf));
    }
    return NXE_OK;
}

/* ---- MatMul ------------------------------------------------------------------------------ */

typedef struct matmul_params {
    int64_t m;
    int64_t n;
    int64_t k;
    int64_t batch_count;
    int32_t batch_ndim;
    int64_t batch_shape[NXE_MAX_RANK];
    int64_t a_batch_strides[NXE_MAX_RANK]; /* elements; 0 along broadcast dimensions */
    int64_t b_batch_strides[NXE_MAX_RANK];
} matmul_params;

/* Element strides of `operand`'s batch dimensions (its leading operand_batch dims), aligned
 * to the right of the broadcast batch shape, 0 where the operand repeats. An empty operand
 * is never read, and its other dimensions may not multiply within int64: all strides 0. */
static void batch_strides(const nxe_value *operand, int32_t operand_batch, int32_t batch_ndim,
                          int64_t *strides)
{
    if (nxe_value_numel(operand) == 0) {
        memset(strides, 0, (size_t)batch_ndim * sizeof(int64_t));
        return;
    }
    int64_t stride = 1;
    for (int32_t d = operand->ndim - 1; d >= operand_batch; d--) {
        stride *= operand->shape[d];
    }
    for (int32_t d = batch_ndim - 1; d >= 0; d--) {
        const int32_t od = d - (batch_ndim - operand_batch);
        if (od < 0 || operand->shape[od] == 1) {
            strides[d] = 0;
        } else {
            strides[d] = stride;
            stride *= operand->shape[od];
        }
    }
}

static nxe_status matmul_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                               nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_inputs;
    (void)num_outputs;
    matmul_params *params = params_out;
    const nxe_value *a = &inputs[0];
    const nxe_value *b = &inputs[1];
    char as[128], bs[128];
    nxe_shape_str(a->ndim, a->shape, as, sizeof as);
    nxe_shape_str(b->ndim, b->shape, bs, sizeof bs);
    if (a->ndim < 1 || b->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "inputs A and B must have rank >= 1, got A %s and B %s", as, bs);
    }
    /* numpy: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; both extra axes are dropped. */
    const int64_t m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    const int64_t k = a->shape[a->ndim - 1];
    const int64_t b_rows = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    const int64_t n = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    if (k != b_rows) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "A %s has %" PRId64 " columns but B %s has %" PRId64 " rows", as, k,
                              bs, b_rows);
    }
    const int32_t a_batch = a->ndim >= 2 ? a->ndim - 2 : 0;
    const int32_t b_batch = b->ndim >= 2 ? b->ndim - 2 : 0;
    int32_t batch_ndim = 0;
    int64_t rows_shape[NXE_MAX_RANK];
    nxe_status status =
        nxe_broadcast_shapes(node, a_batch, a->shape, b_batch, b->shape, &batch_ndim, rows_shape);
    if (status != NXE_OK) {
        return status;
    }
    int64_t batch_count;
    if (!nxe_shape_numel(batch_ndim, rows_shape, &batch_count) ||
        (batch_count > 0 && m > INT64_MAX / batch_count)) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "broadcasting A %s with B %s makes more rows than int64 can count",
                              as, bs);
    }

    nxe_value *y = &outputs[0];
    y->dtype = a->dtype;
    y->ndim = batch_ndim;
    memcpy(y->shape, rows_shape, (size_t)batch_ndim * sizeof(int64_t));
    if (a->ndim >= 2) {
        y->shape[y->ndim++] = m;
    }
    if (b->ndim >= 2) {
        y->shape[y->ndim++] = n;
    }
    status = check_countable(node, "output", y->ndim, y->shape);
    if (status != NXE_OK) {
        return status;
    }

    params->m = m;
    params->n = n;
    params->k = k;
    params->batch_count = batch_count;
    params->batch_ndim = batch_ndim;
    memcpy(params->batch_shape, rows_shape, (size_t)batch_ndim * sizeof(int64_t));
    batch_strides(a, a_batch, batch_ndim, params->a_batch_strides);
    batch_strides(b, b_batch, batch_ndim, params->b_batch_strides);
    return NXE_OK;
}

typedef struct matmul_job {
    const matmul_params *params;
    const float *a;
    const float *b;
    float *y;
} matmul_job;

static void batch_offsets(const matmul_params *p, int64_t batch, int64_t *a_offset,
                          int64_t *b_offset)
{
    nxe_batch_offsets(p->batch_ndim, p->batch_shape, p->a_batch_strides, p->b_batch_strides, batch,
                      a_offset, b_offset);
}

/* Rows of the flattened (batch, m) range; each batch's slice is one GEMM call. */
static void matmul_rows(void *ctx, int64_t begin, int64_t end)
{
    const matmul_job *job = ctx;
    const matmul_params *p = job->params;
    int64_t row = begin;
    while (row < end) {
        const int64_t batch = row / p->m;
        const int64_t first = row % p->m;
        const int64_t last = end - row < p->m - first ? first + (end - row) : p->m;
        int64_t a_offset, b_offset;
        batch_offsets(p, batch, &a_offset, &b_offset);
        const nxe_f32_gemm_args args = {
            .m = p->m,
            .n = p->n,
            .k = p->k,
            .alpha = 1.0f,
            .beta = 0.0f,
            .a = job->a + a_offset,
            .a_stride_m = p->k,
            .a_stride_k = 1,
            .b = job->b + b_offset,
            .b_stride_k = p->n,
            .b_stride_n = 1,
            .c = NULL,
            .c_stride_m = 0,
            .c_stride_n = 0,
            .y = job->y + batch * p->m * p->n,
            .y_stride_m = p->n,
        };
        nxe_ref_f32_gemm(&args, first, last);
        row += last - first;
    }
}

static nxe_status matmul_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const matmul_params *p = params_in;
    matmul_job job = {p, inputs[0].data, inputs[1].data, outputs[0].data};
    nxe_parallel_for(pool, p->batch_count * p->m,
                     nxe_parallel_grain((double)p->n * (double)p->k, MATMUL_TASK_WORK), matmul_rows,
                     &job);
    return NXE_OK;
}

static const nxe_op_param_info matmul_inputs[] = {
    {"A", "[..., M, K]; a 1-D A of shape [K] is taken as [1, K] and that axis is dropped from Y.",
     NXE_MASK_FLOAT, 0, 0},
    {"B",
     "[..., K, N]; a 1-D B of shape [K] is taken as [K, 1] and that axis is dropped from Y. "
     "The leading (batch) dimensions of A and B broadcast as in numpy.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_param_info matmul_outputs[] = {
    {"Y", "[broadcast batch..., M, N], the matrix product A @ B.", NXE_MASK_FLOAT, 0, 0},
};

/* ---- Gemm and FullyConnected --------------------------------------------------------------- */

/* One GEMM, everything nxe_f32_gemm_args holds except the data pointers. */
typedef struct gemm_params {
    int64_t m;
    int64_t n;
    int64_t k;
    float alpha;
    float beta;
    int64_t a_stride_m;
    int64_t a_stride_k;
    int64_t b_stride_k;
    int64_t b_stride_n;
    int64_t c_stride_m;
    int64_t c_stride_n;
    int32_t has_c;
} gemm_params;

static nxe_status read_transpose_flag(const nxe_node *node, const char *name, bool *value)
{
    int64_t flag;
    nxe_status status = nxe_node_attr_int(node, name, &flag);
    if (status != NXE_OK) {
        return status;
    }
    if (flag != 0 && flag != 1) {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute %s must be 0 or 1, got %" PRId64, name, flag);
    }
    *value = flag == 1;
    return NXE_OK;
}

static nxe_status gemm_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, void *params_out)
{
    (void)num_outputs;
    gemm_params *params = params_out;
    const nxe_value *a = &inputs[0];
    const nxe_value *b = &inputs[1];
    const nxe_value *c = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    bool trans_a = false, trans_b = false;
    double alpha = 0.0, beta = 0.0;
    nxe_status status = read_transpose_flag(node, "transA", &trans_a);
    if (status == NXE_OK)
        status = read_transpose_flag(node, "transB", &trans_b);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "alpha", &alpha);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "beta", &beta);
    if (status != NXE_OK) {
        return status;
    }
    char as[128], bs[128];
    nxe_shape_str(a->ndim, a->shape, as, sizeof as);
    nxe_shape_str(b->ndim, b->shape, bs, sizeof bs);
    if (a->ndim != 2 || b->ndim != 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "inputs A and B must have rank 2, got A %s and B %s", as, bs);
    }
    const int64_t m = a->shape[trans_a ? 1 : 0];
    const int64_t k = a->shape[trans_a ? 0 : 1];
    const int64_t b_k = b->shape[trans_b ? 1 : 0];
    const int64_t n = b->shape[trans_b ? 0 : 1];
    if (k != b_k) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "inner dimensions differ: A %s (transA=%d) gives K = %" PRId64
                              ", B %s (transB=%d) gives K = %" PRId64,
                              as, (int)trans_a, k, bs, (int)trans_b, b_k);
    }
    params->m = m;
    params->n = n;
    params->k = k;
    params->alpha = (float)alpha;
    params->beta = (float)beta;
    params->a_stride_m = trans_a ? 1 : k;
    params->a_stride_k = trans_a ? m : 1;
    params->b_stride_k = trans_b ? 1 : n;
    params->b_stride_n = trans_b ? k : 1;
    if (c != NULL) {
        /* C broadcasts one way onto [M, N]: right-aligned, each dimension equal or 1. */
        const int64_t target[2] = {m, n};
        int64_t c_dims[2] = {1, 1};
        bool fits = c->ndim <= 2;
        for (int32_t d = 0; fits && d < c->ndim; d++) {
            const int64_t dim = c->shape[c->ndim - 1 - d];
            c_dims[1 - d] = dim;
            fits = dim == 1 || dim == target[1 - d];
        }
        if (!fits) {
            char cs[128];
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "input C %s does not broadcast to the output [%" PRId64
                                  ", %" PRId64 "]",
                                  nxe_shape_str(c->ndim, c->shape, cs, sizeof cs), m, n);
        }
        params->has_c = 1;
        params->c_stride_m = c_dims[0] == 1 ? 0 : c_dims[1];
        params->c_stride_n = c_dims[1] == 1 ? 0 : 1;
    }
    nxe_value *y = &outputs[0];
    y->dtype = a->dtype;
    y->ndim = 2;
    y->shape[0] = m;
    y->shape[1] = n;
    return check_countable(node, "output", 2, y->shape);
}

typedef struct gemm_job {
    const gemm_params *params;
    const float *a;
    const float *b;
    const float *c;
    float *y;
} gemm_job;

static void gemm_rows(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *job = ctx;
    const gemm_params *p = job->params;
    const nxe_f32_gemm_args args = {
        .m = p->m,
        .n = p->n,
        .k = p->k,
        .alpha = p->alpha,
        .beta = p->beta,
        .a = job->a,
        .a_stride_m = p->a_stride_m,
        .a_stride_k = p->a_stride_k,
        .b = job->b,
        .b_stride_k = p->b_stride_k,
        .b_stride_n = p->b_stride_n,
        .c = job->c,
        .c_stride_m = p->c_stride_m,
        .c_stride_n = p->c_stride_n,
        .y = job->y,
        .y_stride_m = p->n,
    };
    nxe_ref_f32_gemm(&args, begin, end);
}

/* Shared by Gemm and FullyConnected: inputs are (A, B, optional addend). */
static nxe_status gemm_run(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const gemm_params *p = params_in;
    gemm_job job = {p, inputs[0].data, inputs[1].data, p->has_c ? inputs[2].data : NULL,
                    outputs[0].data};
    nxe_parallel_for(pool, p->m, nxe_parallel_grain((double)p->n * (double)p->k, MATMUL_TASK_WORK),
                     gemm_rows, &job);
    return NXE_OK;
}

/* ---- the packed path: B packed for this level's GEMM kernel, once or at every run ---- */

enum b_source {
    B_PREPACKED,      /* a constant, packed once */
    B_PACKED_PER_RUN, /* packed into the workspace at every run */
    B_IN_PLACE,       /* f32 rows with n contiguous: the microkernel reads them where they are */
};

typedef struct gemm_prepared {
    const nxe_kernel_table *kernels;
    const nxe_gemm_kernel *kernel;
    int64_t m, n, k;
    int64_t a_stride_m, a_stride_k;
    int64_t b_stride_k, b_stride_n; /* of B as the op reads it */
    float alpha;
    float beta;
    int32_t has_c; /* input 2 is an addend, the epilogue's bias */
    int64_t c_stride_m, c_stride_n;
    int32_t b_source; /* where a run finds B: enum b_source */
    void *b_packed;   /* B_PREPACKED: inside this block */
} gemm_prepared;

static const nxe_gemm_kernel *packed_kernel(const nxe_prepare_context *context)
{
    const nxe_kernel_table *kernels = context->kernels;
    return context->relax_precision && kernels->bf16_gemm_kernel ? kernels->bf16_gemm_kernel
                                                                 : kernels->f32_gemm_kernel;
}

static size_t packed_b_bytes(const gemm_prepared *p)
{
    return nxe_gemm_packed_bytes(p->kernel, p->k, p->n, p->kernel->nr);
}

/* Whether `slots` copies of B packed fit in memory: packing rounds K and N up to the kernel's
 * units (at most 4 bytes an element), so a B whose size fits as a tensor (K near 2^63 over an
 * empty A) may not fit packed. */
static bool packed_b_fits(const gemm_prepared *p, int64_t slots)
{
    int64_t panels = p->n / p->kernel->nr + 1, k_padded, bytes;
    return !__builtin_add_overflow(p->k, (int64_t)p->kernel->k_unit, &k_padded) &&
           !__builtin_mul_overflow(panels, k_padded, &bytes) &&
           !__builtin_mul_overflow(bytes, (int64_t)p->kernel->nr * 4, &bytes) &&
           !__builtin_mul_overflow(bytes, slots, &bytes) && (uint64_t)bytes < SIZE_MAX - 64;
}

/* The prepared block for `shape`: B packed from `b` when it is given (a constant), else read in
 * place where an f32 kernel can, else packed at every run into workspace asked for here,
 * `slots` times. */
static nxe_status prepare_packed(const nxe_prepare_context *context, const gemm_prepared *shape,
                                 const float *b, int64_t slots, void **prepared,
                                 size_t *workspace_bytes)
{
    if (!packed_b_fits(shape, slots))
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                         "a B of %lld x %lld does not fit in memory once packed for the kernels",
                         (long long)shape->k, (long long)shape->n);
    const size_t bytes = b ? packed_b_bytes(shape) : 0;
    void *data;
    gemm_prepared *p = nxe_prepared_alloc(sizeof *p, bytes, &data);
    if (!p)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for %zu bytes of packed weights",
                         bytes);
    *p = *shape;
    p->kernels = context->kernels;
    if (b) {
        p->b_source = B_PREPACKED;
        p->b_packed = data;
        nxe_gemm_pack(p->kernel, p->kernel->nr, b, p->b_stride_k, p->b_stride_n, p->k, p->n,
                      p->b_packed);
    } else if (p->kernel->type == NXE_GEMM_F32 && p->b_stride_n == 1) {
        p->b_source = B_IN_PLACE;
    } else {
        p->b_source = B_PACKED_PER_RUN;
        /* At least one cache line, so that slots never sit at a NULL workspace. */
        *workspace_bytes = (size_t)slots * packed_b_bytes(p) + 64;
    }
    *prepared = p;
    return NXE_OK;
}

/* Gemm and FullyConnected: B packed once when constant, else read in place or packed at every
 * run; C, any broadcast of it, is the epilogue's bias (scaled by beta). */
static nxe_status gemm_prepare(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                               const nxe_prepare_context *context, void **prepared,
                               size_t *workspace_bytes)
{
    (void)num_inputs;
    const gemm_params *p = params_in;
    *prepared = NULL;
    const nxe_gemm_kernel *kernel = packed_kernel(context);
    if (!kernel || inputs[0].dtype != NXE_DTYPE_F32)
        return NXE_OK;
    const gemm_prepared shape = {
        .kernel = kernel,
        .m = p->m,
        .n = p->n,
        .k = p->k,
        .a_stride_m = p->a_stride_m,
        .a_stride_k = p->a_stride_k,
        .b_stride_k = p->b_stride_k,
        .b_stride_n = p->b_stride_n,
        .alpha = p->alpha,
        .beta = p->beta,
        .has_c = p->has_c,
        .c_stride_m = p->c_stride_m,
        .c_stride_n = p->c_stride_n,
    };
    return prepare_packed(context, &shape, inputs[1].data, 1, prepared, workspace_bytes);
}

/* MatMul. A constant B shared by every batch, over an A whose batches follow each other, is
 * packed once: one GEMM of batch * M rows. Any other B (computed at run time, as in
 * attention, or different per batch) is read in place by f32 kernels, or packed into the
 * workspace at every run (bf16), one slot per batch, at a cost of 1/M of the product. */
static nxe_status matmul_prepare(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                                 const nxe_prepare_context *context, void **prepared,
                                 size_t *workspace_bytes)
{
    (void)num_inputs;
    const matmul_params *p = params_in;
    *prepared = NULL;
    const nxe_gemm_kernel *kernel = packed_kernel(context);
    if (!kernel || inputs[0].dtype != NXE_DTYPE_F32)
        return NXE_OK;
    /* With no batches B may be empty along a batch dimension and hold no K x N matrix to pack
     * (its batch strides read 0, as for a shared B); nothing is computed either way. */
    bool shared_b = inputs[1].data != NULL && p->batch_count > 0;
    int64_t expected = p->m * p->k;
    for (int32_t d = p->batch_ndim - 1; d >= 0; d--) {
        if (p->b_batch_strides[d] != 0 ||
            (p->batch_shape[d] > 1 && p->a_batch_strides[d] != expected))
            shared_b = false;
        expected *= p->batch_shape[d];
    }
    const gemm_prepared shape = {
        .kernel = kernel,
        .m = shared_b ? p->batch_count * p->m : p->m,
        .n = p->n,
        .k = p->k,
        .a_stride_m = p->k,
        .a_stride_k = 1,
        .b_stride_k = p->n,
        .b_stride_n = 1,
        .alpha = 1.0f,
        .beta = 1.0f,
    };
    return prepare_packed(context, &shape, shared_b ? inputs[1].data : NULL, p->batch_count,
                          prepared, workspace_bytes);
}

typedef struct gemm_packed_job {
    const gemm_prepared *prepared;
    nxe_gemm_packed_args args;
    int64_t panels;       /* of B */
    int64_t panel_groups; /* 1: items are row tiles */
    int64_t panels_per_group;
    int64_t tiles; /* row tiles */
} gemm_packed_job;

/* Items are row tiles, or groups of panels, each over every row tile, when rows are too few to
 * share: a group's blocks of B are then read once, by one thread, and reused from cache by the
 * row tiles after the first. */
static void gemm_packed_tiles(void *ctx, int64_t begin, int64_t end)
{
    const gemm_packed_job *job = ctx;
    if (job->panel_groups <= 1) {
        job->prepared->kernels->gemm_packed_run(&job->args, begin, end);
        return;
    }
    for (int64_t group = begin; group < end; group++) {
        nxe_gemm_packed_args args = job->args;
        args.panel_begin = group * job->panels_per_group;
        args.panel_end = args.panel_begin + job->panels_per_group < job->panels
                             ? args.panel_begin + job->panels_per_group
                             : job->panels;
        job->prepared->kernels->gemm_packed_run(&args, 0, job->tiles);
    }
}

/* Few large chunks: a chunk's row tiles share each block of B while it is in cache. The
 * split never changes a result. */
static int64_t packed_grain(const gemm_prepared *p, int64_t tiles, nxe_thread_pool *pool)
{
    const double tile_work = (double)p->kernel->mr * (double)p->n * (double)p->k;
    return nxe_parallel_grain_few_chunks(pool, tiles,
                                         nxe_parallel_grain(tile_work, MATMUL_TASK_WORK));
}

static nxe_gemm_packed_args packed_args(const gemm_prepared *p, const nxe_fused_epilogue *fused,
                                        const nxe_value *inputs, nxe_value *outputs)
{
    nxe_gemm_packed_args args = {
        .kernel = p->kernel,
        .m = p->m,
        .n = p->n,
        .k = p->k,
        .a = inputs[0].data,
        .a_stride_m = p->a_stride_m,
        .a_stride_k = p->a_stride_k,
        .b_packed = p->b_packed,
        .b = p->b_source == B_IN_PLACE ? inputs[1].data : NULL,
        .b_stride_k = p->b_stride_k,
        .y = outputs[0].data,
        .y_stride_m = p->n,
        .bias = p->has_c ? inputs[2].data : NULL,
        .bias_stride_m = p->c_stride_m,
        .bias_stride_n = p->c_stride_n,
        .residual = fused->residual_input >= 0 ? inputs[fused->residual_input].data : NULL,
        .residual_stride_m = p->n,
        .epilogue = fused->epilogue,
    };
    args.epilogue.scale *= p->alpha;
    args.epilogue.bias_scale *= p->beta;
    return args;
}

/* B packed into the workspace at every run: items are panels of B. */
typedef struct pack_job {
    const gemm_prepared *prepared;
    const float *b;
    void *packed;
} pack_job;

static void pack_panels(void *ctx, int64_t begin, int64_t end)
{
    const pack_job *job = ctx;
    const gemm_prepared *p = job->prepared;
    nxe_gemm_pack_panels(p->kernel, p->kernel->nr, job->b, p->b_stride_k, p->b_stride_n, p->k, p->n,
                         begin, end, job->packed);
}

static nxe_status gemm_run_prepared(const void *params, const void *prepared_in,
                                    const nxe_fused_epilogue *fused, void *workspace,
                                    const nxe_value *inputs, int32_t num_inputs, nxe_value *outputs,
                                    int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)params;
    (void)num_inputs;
    (void)num_outputs;
    const gemm_prepared *p = prepared_in;
    gemm_packed_job job = {p, packed_args(p, fused, inputs, outputs), 0, 1, 0, 0};
    job.panels = (p->n + p->kernel->nr - 1) / p->kernel->nr;
    if (p->b_source == B_PACKED_PER_RUN) {
        pack_job pack = {p, inputs[1].data, workspace};
        nxe_parallel_for(pool, job.panels,
                         nxe_parallel_grain((double)p->k * (double)p->kernel->nr, MATMUL_TASK_WORK),
                         pack_panels, &pack);
        job.args.b_packed = workspace;
    }
    const int64_t tiles = p->kernels->gemm_packed_tiles(&job.args);
    const int64_t threads = pool ? nxe_thread_pool_size(pool) : 1;
    job.tiles = tiles;
    if ((tiles < 2 * threads || nxe_gemm_small_m(&job.args)) && threads > 1 && job.panels > 1) {
        /* Few rows (one sentence): split B's panels instead, so that the threads share the
         * reading of the weights rather than each reading all of them; the few-row path of
         * the driver streams each thread's panels in turn. */
        job.panel_groups = job.panels < 2 * threads ? job.panels : 2 * threads;
        job.panels_per_group = (job.panels + job.panel_groups - 1) / job.panel_groups;
        job.panel_groups = (job.panels + job.panels_per_group - 1) / job.panels_per_group;
        nxe_parallel_for(pool, job.panel_groups, 1, gemm_packed_tiles, &job);
        return NXE_OK;
    }
    nxe_parallel_for(pool, tiles, packed_grain(p, tiles, pool), gemm_packed_tiles, &job);
    return NXE_OK;
}

/* A MatMul whose B changes per run and per batch: read in place, or packed into workspace slots
 * first; then every (batch, row tile) item. */
typedef struct batched_job {
    const gemm_prepared *prepared;
    const matmul_params *params;
    nxe_gemm_packed_args args; /* batch 0; other batches shift a, B, y, residual */
    const float *b;
    unsigned char *slots;
    size_t slot_bytes;
    int64_t tiles_per_batch;
} batched_job;

/* Items are (batch, panel of B). */
static void pack_batches(void *ctx, int64_t begin, int64_t end)
{
    const batched_job *job = ctx;
    const gemm_prepared *p = job->prepared;
    const int64_t panels = (p->n + p->kernel->nr - 1) / p->kernel->nr;
    for (int64_t item = begin; item < end; item++) {
        const int64_t batch = item / panels, panel = item % panels;
        int64_t a_offset, b_offset;
        batch_offsets(job->params, batch, &a_offset, &b_offset);
        nxe_gemm_pack_panels(p->kernel, p->kernel->nr, job->b + b_offset, p->b_stride_k,
                             p->b_stride_n, p->k, p->n, panel, panel + 1,
                             job->slots + (size_t)batch * job->slot_bytes);
    }
}

static void batched_tiles(void *ctx, int64_t begin, int64_t end)
{
    const batched_job *job = ctx;
    while (begin < end) {
        int64_t first, last;
        const int64_t batch = nxe_batch_tile_span(begin, end, job->tiles_per_batch, &first, &last);
        int64_t a_offset, b_offset;
        batch_offsets(job->params, batch, &a_offset, &b_offset);
        nxe_gemm_packed_args args = job->args;
        const int64_t y_offset = batch * job->params->m * job->params->n;
        args.a += a_offset;
        if (args.b)
            args.b += b_offset;
        else
            args.b_packed = job->slots + (size_t)batch * job->slot_bytes;
        args.y += y_offset;
        if (args.residual)
            args.residual += y_offset;
        job->prepared->kernels->gemm_packed_run(&args, first, last);
        begin += last - first;
    }
}

static nxe_status matmul_run_prepared(const void *params, const void *prepared_in,
                                      const nxe_fused_epilogue *fused, void *workspace,
                                      const nxe_value *inputs, int32_t num_inputs,
                                      nxe_value *outputs, int32_t num_outputs,
                                      nxe_thread_pool *pool)
{
    const gemm_prepared *p = prepared_in;
    if (p->b_source == B_PREPACKED)
        return gemm_run_prepared(params, prepared_in, fused, workspace, inputs, num_inputs, outputs,
                                 num_outputs, pool);
    const matmul_params *mp = params;
    batched_job job = {
        .prepared = p,
        .params = mp,
        .args = packed_args(p, fused, inputs, outputs),
        .b = inputs[1].data,
        .slots = workspace,
        .slot_bytes = packed_b_bytes(p),
    };
    job.tiles_per_batch = p->kernels->gemm_packed_tiles(&job.args);
    if (mp->batch_count == 0 || job.tiles_per_batch == 0)
        return NXE_OK;
    if (p->b_source == B_PACKED_PER_RUN) {
        const int64_t panels = (p->n + p->kernel->nr - 1) / p->kernel->nr;
        const double pack_work = (double)p->k * (double)p->kernel->nr;
        nxe_parallel_for(pool, mp->batch_count * panels,
                         nxe_parallel_grain(pack_work, MATMUL_TASK_WORK), pack_batches, &job);
    }
    const int64_t items = mp->batch_count * job.tiles_per_batch;
    nxe_parallel_for(pool, items, packed_grain(p, items, pool), batched_tiles, &job);
    return NXE_OK;
}

static const nxe_op_param_info gemm_inputs[] = {
    {"A", "[M, K], or [K, M] when transA = 1.", NXE_MASK_FLOAT, 0, 0},
    {"B", "[K, N], or [N, K] when transB = 1.", NXE_MASK_FLOAT, 0, 0},
    {"C",
     "Addend broadcast one way onto [M, N]: a scalar, [N], [1, N], [M, 1], [M, N], or with 1 "
     "in any dimension.",
     NXE_MASK_FLOAT, 1, 0},
};
static const nxe_op_param_info gemm_outputs[] = {
    {"Y", "[M, N] = alpha * op(A) @ op(B) + beta * C.", NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info gemm_attrs[] = {
    {"alpha", "Scale of the product op(A) @ op(B).", NXE_ATTR_FLOAT, "1.0"},
    {"beta", "Scale of C; unused when C is absent.", NXE_ATTR_FLOAT, "1.0"},
    {"transA", "1 to use A transposed, 0 to use it as given.", NXE_ATTR_INT, "0"},
    {"transB", "1 to use B transposed, 0 to use it as given.", NXE_ATTR_INT, "0"},
};

static nxe_status fully_connected_infer(const nxe_node *node, const nxe_value *inputs,
                                        int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                        void *params_out)
{
    (void)num_outputs;
    gemm_params *params = params_out;
    const nxe_value *x = &inputs[0];
    const nxe_value *w = &inputs[1];
    const nxe_value *bias = input_present(inputs, num_inputs, 2) ? &inputs[2] : NULL;
    char xs[128], ws[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    nxe_shape_str(w->ndim, w->shape, ws, sizeof ws);
    if (x->ndim < 1) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank >= 1, got shape %s", xs);
    }
    if (w->ndim != 2) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W must have rank 2 ([N, K]), got shape %s", ws);
    }
    const int64_t k = x->shape[x->ndim - 1];
    const int64_t n = w->shape[0];
    if (w->shape[1] != k) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s must have K = %" PRId64
                              " columns, the last dimension of input X %s",
                              ws, k, xs);
    }
    if (bias != NULL && (bias->ndim != 1 || bias->shape[0] != n)) {
        char bs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "bias B must have shape [%" PRId64 "] (the rows of W), got %s", n,
                              nxe_shape_str(bias->ndim, bias->shape, bs, sizeof bs));
    }
    int64_t m;
    if (!nxe_shape_numel(x->ndim - 1, x->shape, &m)) {
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "the leading dimensions of input X %s multiply beyond int64", xs);
    }
    nxe_value *y = &outputs[0];
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    y->shape[y->ndim - 1] = n;
    nxe_status status = check_countable(node, "output", y->ndim, y->shape);
    if (status != NXE_OK) {
        return status;
    }
    params->m = m;
    params->n = n;
    params->k = k;
    params->alpha = 1.0f;
    params->beta = 1.0f;
    params->a_stride_m = k;
    params->a_stride_k = 1;
    params->b_stride_k = 1;
    params->b_stride_n = k;
    params->has_c = bias != NULL;
    params->c_stride_m = 0;
    params->c_stride_n = 1;
    return NXE_OK;
}

static const nxe_op_param_info fully_connected_inputs[] = {
    {"X", "[..., K]; every leading dimension is a separate row.", NXE_MASK_FLOAT, 0, 0},
    {"W", "[N, K], one row of weights per output feature.", NXE_MASK_FLOAT, 0, 0},
    {"B", "Bias [N].", NXE_MASK_FLOAT, 1, 0},
};
static const nxe_op_param_info fully_connected_outputs[] = {
    {"Y", "[..., N] = X @ W^T + B.", NXE_MASK_FLOAT, 0, 0},
};

static void gemm_kernel_name(const void *prepared, char *name, size_t size)
{
    snprintf(name, size, "%s", ((const gemm_prepared *)prepared)->kernel->name);
}

static const nxe_op_def matmul_defs[] = {
    {NXE_INFO_NOATTR("MatMul",
                     "Matrix product with numpy matmul semantics: batch dimensions broadcast, "
                     "1-D operands are promoted and their axis dropped.",
                     matmul_inputs, matmul_outputs),
     sizeof(matmul_params), matmul_infer, matmul_run, matmul_prepare, matmul_run_prepared, NULL,
     gemm_kernel_name},
    {NXE_INFO("Gemm",
              "General matrix multiply Y = alpha * op(A) @ op(B) + beta * C on 2-D operands, "
              "op() optionally transposing.",
              gemm_inputs, gemm_outputs, gemm_attrs),
     sizeof(gemm_params), gemm_infer, gemm_run, gemm_prepare, gemm_run_prepared, NULL,
     gemm_kernel_name},
    {NXE_INFO_NOATTR("FullyConnected",
                     "Dense layer Y = X @ W^T + B over the last dimension of X, with W stored "
                     "[out_features, in_features].",
                     fully_connected_inputs, fully_connected_outputs),
     sizeof(gemm_params), fully_connected_infer, gemm_run, gemm_prepare, gemm_run_prepared, NULL,
     gemm_kernel_name},
};

const nxe_op_family nxe_ops_matmul = {matmul_defs,
                                      (int32_t)(sizeof matmul_defs / sizeof matmul_defs[0])};
