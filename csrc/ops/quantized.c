/* quantized.c — the quantized op family with ONNX semantics: MatMulInteger, QLinearMatMul,
 * ConvInteger, QLinearConv and DynamicQuantizeLinear. Scales and zero points are tensors read
 * at run time; shape rules and lowering only, the arithmetic lives in kernels/ref/quantized. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/op_def.h"
#include "gemm.h"
#include "ref/cast.h"
#include "ref/quantized.h"

#define Q8_MASK (NXE_MASK(NXE_DTYPE_U8) | NXE_MASK(NXE_DTYPE_I8))
/* Attribute values beyond this are rejected so that index arithmetic stays within int64. */
#define QCONV_ATTR_MAX INT64_C(2147483647)
/* About this many multiply-adds per parallel task keeps scheduling overhead negligible. */
#define QUANT_TASK_WORK 65536.0
#define QUANT_GRAIN 16384

static bool present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

/* How a scale or zero point tensor applies: to the whole tensor (one element, any rank) or
 * one value per row / column / channel (1-D with `count` elements). */
static nxe_status per_axis_or_scalar(const nxe_node *node, const char *what, const nxe_value *v,
                                     int64_t count, const char *axis_name, int64_t *stride)
{
    if (nxe_value_numel(v) == 1) {
        *stride = 0;
        return NXE_OK;
    }
    if (v->ndim == 1 && v->shape[0] == count) {
        *stride = 1;
        return NXE_OK;
    }
    char vs[128];
    return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                          "%s must hold one value or be 1-D with one value per %s (%" PRId64
                          "), got shape %s",
                          what, axis_name, count, nxe_shape_str(v->ndim, v->shape, vs, sizeof vs));
}

static nxe_status scalar_only(const nxe_node *node, const char *what, const nxe_value *v)
{
    if (nxe_value_numel(v) == 1)
        return NXE_OK;
    char vs[128];
    return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                          "%s must hold exactly one value (per-tensor), got shape %s", what,
                          nxe_shape_str(v->ndim, v->shape, vs, sizeof vs));
}

/* A zero point must have its operand's dtype. */
static nxe_status zero_point_dtype(const nxe_node *node, const char *what, const nxe_value *zero,
                                   const char *operand, const nxe_value *of)
{
    if (zero->dtype == of->dtype)
        return NXE_OK;
    return nxe_node_error(node, NXE_ERROR_DTYPE_MISMATCH, "%s is %s but %s is %s; they must match",
                          what, nxe_dtype_name(zero->dtype), operand, nxe_dtype_name(of->dtype));
}

static nxe_q8_ref q8_ref(const nxe_value *v, int64_t byte_offset)
{
    nxe_q8_ref ref = {NULL, v->dtype == NXE_DTYPE_I8};
    if (v->data != NULL)
        ref.data = (const uint8_t *)v->data + byte_offset;
    return ref;
}

static nxe_q8_ref optional_ref(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    nxe_q8_ref none = {NULL, 0};
    return present(inputs, num_inputs, index) ? q8_ref(&inputs[index], 0) : none;
}

/* ---- MatMulInteger and QLinearMatMul --------------------------------------------------- */

/* Input positions, which differ between the two ops; -1 = the op has no such input. */
typedef struct qmatmul_slots {
    int32_t a, b, a_zero, b_zero, a_scale, b_scale, y_scale, y_zero;
} qmatmul_slots;

static const qmatmul_slots matmul_integer_slots = {0, 1, 2, 3, -1, -1, -1, -1};
static const qmatmul_slots qlinear_matmul_slots = {0, 3, 2, 5, 1, 4, 6, 7};

typedef struct qmatmul_params {
    qmatmul_slots slots;
    int64_t m;
    int64_t n;
    int64_t k;
    int64_t batch_count;
    int32_t batch_ndim;
    int32_t requant;
    int32_t y_signed;
    int32_t pad_;
    int64_t batch_shape[NXE_MAX_RANK];
    int64_t a_batch_strides[NXE_MAX_RANK]; /* elements; 0 along broadcast dimensions */
    int64_t b_batch_strides[NXE_MAX_RANK];
    int64_t a_zero_stride;
    int64_t b_zero_stride;
    int64_t a_scale_stride;
    int64_t b_scale_stride;
} qmatmul_params;

/* Element strides of an operand's batch dimensions seen through the broadcast batch shape. */
static void batch_strides(const nxe_value *operand, int32_t operand_batch, int32_t batch_ndim,
                          int64_t *strides)
{
    int64_t stride = 1;
    for (int32_t d = operand->ndim - 1; d >= operand_batch; d--)
        stride *= operand->shape[d];
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

static nxe_status qmatmul_infer_common(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, qmatmul_params *p,
                                       const qmatmul_slots *slots)
{
    p->slots = *slots;
    const nxe_value *a = &inputs[slots->a];
    const nxe_value *b = &inputs[slots->b];
    char as[128], bs[128];
    nxe_shape_str(a->ndim, a->shape, as, sizeof as);
    nxe_shape_str(b->ndim, b->shape, bs, sizeof bs);
    if (a->ndim < 1 || b->ndim < 1)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "inputs A and B must have rank >= 1, got A %s and B %s", as, bs);
    if (nxe_value_numel(a) == 0 || nxe_value_numel(b) == 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "inputs A %s and B %s must not be empty", as, bs);
    const int64_t m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    const int64_t k = a->shape[a->ndim - 1];
    const int64_t b_rows = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    const int64_t n = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    if (k != b_rows)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "A %s has %" PRId64 " columns but B %s has %" PRId64 " rows", as, k,
                              bs, b_rows);
    const int32_t a_batch = a->ndim >= 2 ? a->ndim - 2 : 0;
    const int32_t b_batch = b->ndim >= 2 ? b->ndim - 2 : 0;
    int32_t batch_ndim = 0;
    int64_t batch_shape[NXE_MAX_RANK];
    nxe_status status =
        nxe_broadcast_shapes(node, a_batch, a->shape, b_batch, b->shape, &batch_ndim, batch_shape);
    if (status != NXE_OK)
        return status;
    int64_t batch_count = 1;
    for (int32_t d = 0; d < batch_ndim; d++)
        batch_count *= batch_shape[d];

    if (slots->a_zero >= 0 && present(inputs, num_inputs, slots->a_zero)) {
        status = zero_point_dtype(node, "a_zero_point", &inputs[slots->a_zero], "A", a);
        if (status == NXE_OK)
            status = per_axis_or_scalar(node, "a_zero_point", &inputs[slots->a_zero], m, "row of A",
                                        &p->a_zero_stride);
        if (status != NXE_OK)
            return status;
    }
    if (slots->b_zero >= 0 && present(inputs, num_inputs, slots->b_zero)) {
        status = zero_point_dtype(node, "b_zero_point", &inputs[slots->b_zero], "B", b);
        if (status == NXE_OK)
            status = per_axis_or_scalar(node, "b_zero_point", &inputs[slots->b_zero], n,
                                        "column of B", &p->b_zero_stride);
        if (status != NXE_OK)
            return status;
    }
    int32_t y_dtype = NXE_DTYPE_I32;
    if (slots->y_scale >= 0) {
        status = per_axis_or_scalar(node, "a_scale", &inputs[slots->a_scale], m, "row of A",
                                    &p->a_scale_stride);
        if (status == NXE_OK)
            status = per_axis_or_scalar(node, "b_scale", &inputs[slots->b_scale], n, "column of B",
                                        &p->b_scale_stride);
        if (status == NXE_OK)
            status = scalar_only(node, "y_scale", &inputs[slots->y_scale]);
        if (status == NXE_OK && present(inputs, num_inputs, slots->y_zero))
            status = scalar_only(node, "y_zero_point", &inputs[slots->y_zero]);
        if (status != NXE_OK)
            return status;
        y_dtype =
            present(inputs, num_inputs, slots->y_zero) ? inputs[slots->y_zero].dtype : a->dtype;
        p->requant = 1;
        p->y_signed = y_dtype == NXE_DTYPE_I8;
    }

    nxe_value *y = &outputs[0];
    y->dtype = y_dtype;
    y->ndim = batch_ndim;
    memcpy(y->shape, batch_shape, (size_t)batch_ndim * sizeof(int64_t));
    if (a->ndim >= 2)
        y->shape[y->ndim++] = m;
    if (b->ndim >= 2)
        y->shape[y->ndim++] = n;
    p->m = m;
    p->n = n;
    p->k = k;
    p->batch_count = batch_count;
    p->batch_ndim = batch_ndim;
    memcpy(p->batch_shape, batch_shape, (size_t)batch_ndim * sizeof(int64_t));
    batch_strides(a, a_batch, batch_ndim, p->a_batch_strides);
    batch_strides(b, b_batch, batch_ndim, p->b_batch_strides);
    return NXE_OK;
}

static nxe_status matmul_integer_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       void *params)
{
    (void)num_outputs;
    return qmatmul_infer_common(node, inputs, num_inputs, outputs, params, &matmul_integer_slots);
}

static nxe_status qlinear_matmul_infer(const nxe_node *node, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       void *params)
{
    (void)num_outputs;
    return qmatmul_infer_common(node, inputs, num_inputs, outputs, params, &qlinear_matmul_slots);
}

typedef struct qmatmul_job {
    const qmatmul_params *p;
    const nxe_value *inputs;
    int32_t num_inputs;
    nxe_value *y;
} qmatmul_job;

static float scalar_f32(const nxe_value *v)
{
    return ((const float *)v->data)[0];
}

static int32_t zero_scalar(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    if (index < 0 || !present(inputs, num_inputs, index))
        return 0;
    const nxe_value *v = &inputs[index];
    return v->dtype == NXE_DTYPE_I8 ? ((const int8_t *)v->data)[0] : ((const uint8_t *)v->data)[0];
}

/* Where a product's results go from element y_offset on: int32, or requantized with the
 * scales and zero point the op's inputs give. */
static void output_of(const qmatmul_params *p, const nxe_value *in, int32_t num_inputs,
                      nxe_value *y, int64_t y_offset, const float **a_scale,
                      int64_t *a_scale_stride, const float **b_scale, int64_t *b_scale_stride,
                      nxe_q8_output *out)
{
    if (!p->requant) {
        out->y_i32 = (int32_t *)y->data + y_offset;
        return;
    }
    *a_scale = in[p->slots.a_scale].data;
    *a_scale_stride = p->a_scale_stride;
    *b_scale = in[p->slots.b_scale].data;
    *b_scale_stride = p->b_scale_stride;
    out->y_q8 = (uint8_t *)y->data + y_offset;
    out->y_signed = p->y_signed;
    out->y_scale = scalar_f32(&in[p->slots.y_scale]);
    out->y_zero_point = zero_scalar(in, num_inputs, p->slots.y_zero);
}

static void qmatmul_rows(void *ctx, int64_t begin, int64_t end)
{
    const qmatmul_job *job = ctx;
    const qmatmul_params *p = job->p;
    const nxe_value *in = job->inputs;
    int64_t row = begin;
    while (row < end) {
        const int64_t batch = row / p->m;
        const int64_t first = row % p->m;
        const int64_t last = end - row < p->m - first ? first + (end - row) : p->m;
        int64_t a_offset, b_offset;
        nxe_batch_offsets(p->batch_ndim, p->batch_shape, p->a_batch_strides, p->b_batch_strides,
                          batch, &a_offset, &b_offset);
        const int64_t y_offset = batch * p->m * p->n;
        nxe_q8_gemm_args args;
        memset(&args, 0, sizeof args);
        args.m = p->m;
        args.n = p->n;
        args.k = p->k;
        args.a = q8_ref(&in[p->slots.a], a_offset);
        args.a_stride_m = p->k;
        args.b = q8_ref(&in[p->slots.b], b_offset);
        args.a_zero = optional_ref(in, job->num_inputs, p->slots.a_zero);
        args.a_zero_stride = p->a_zero_stride;
        args.b_zero = optional_ref(in, job->num_inputs, p->slots.b_zero);
        args.b_zero_stride = p->b_zero_stride;
        output_of(p, in, job->num_inputs, job->y, y_offset, &args.a_scale, &args.a_scale_stride,
                  &args.b_scale, &args.b_scale_stride, &args.out);
        nxe_ref_q8_gemm(&args, first, last);
        row += last - first;
    }
}

static nxe_status qmatmul_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                              nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_outputs;
    const qmatmul_params *p = params;
    qmatmul_job job = {p, inputs, num_inputs, &outputs[0]};
    nxe_parallel_for(pool, p->batch_count * p->m,
                     nxe_parallel_grain((double)p->n * (double)p->k, QUANT_TASK_WORK), qmatmul_rows,
                     &job);
    return NXE_OK;
}

/* The 8-bit GEMM path: B packed once when it is a constant shared by every batch, else into
 * the workspace at every run (one slot per batch: packed values, then column sums). */
typedef struct qmatmul_prepared {
    const nxe_kernel_table *kernels;
    const nxe_q8_gemm_kernel *kernel;
    int32_t b_per_run;
    int32_t b_signed;
    size_t slot_bytes; /* packed B and its column sums, 64-byte aligned */
    int8_t *b_packed;  /* inside this block when packed once */
    int32_t *b_col_sums;
} qmatmul_prepared;

static size_t packed_slot_bytes(const nxe_q8_gemm_kernel *kernel, int64_t k, int64_t n)
{
    size_t values = (nxe_q8_packed_bytes(kernel, k, n) + 63) / 64 * 64;
    return values + ((size_t)n * sizeof(int32_t) + 63) / 64 * 64;
}

static nxe_status qmatmul_prepare(const void *params_in, const nxe_value *inputs,
                                  int32_t num_inputs, const nxe_prepare_context *context,
                                  void **prepared, size_t *workspace_bytes)
{
    (void)num_inputs;
    const qmatmul_params *p = params_in;
    const nxe_q8_gemm_kernel *kernel = context->kernels->q8_gemm_kernel;
    *prepared = NULL;
    if (!kernel || p->k > NXE_Q8_MAX_K)
        return NXE_OK;
    const nxe_value *b = &inputs[p->slots.b];
    bool shared = b->data != NULL;
    for (int32_t d = 0; d < p->batch_ndim; d++)
        shared = shared && p->b_batch_strides[d] == 0;
    const size_t slot = packed_slot_bytes(kernel, p->k, p->n);
    void *data;
    qmatmul_prepared *q = nxe_prepared_alloc(sizeof *q, shared ? slot : 0, &data);
    if (!q)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for %zu bytes of packed weights",
                         slot);
    *q = (qmatmul_prepared){
        context->kernels, kernel, !shared, b->dtype == NXE_DTYPE_I8, slot, NULL, NULL};
    if (shared) {
        q->b_packed = data;
        q->b_col_sums =
            (int32_t *)(void *)((char *)data +
                                (slot - ((size_t)p->n * sizeof(int32_t) + 63) / 64 * 64));
        nxe_q8_pack_b(kernel, q8_ref(b, 0), p->n, 1, p->k, p->n, 0,
                      (p->n + kernel->nr - 1) / kernel->nr, q->b_packed, q->b_col_sums);
    } else {
        *workspace_bytes = (size_t)p->batch_count * slot + 64;
    }
    *prepared = q;
    return NXE_OK;
}

typedef struct qpacked_job {
    const qmatmul_prepared *prepared;
    const qmatmul_params *p;
    const nxe_value *inputs;
    int32_t num_inputs;
    nxe_value *y;
    unsigned char *slots;
    int64_t tiles_per_batch;
} qpacked_job;

static void slot_of(const qpacked_job *job, int64_t batch, int8_t **values, int32_t **sums)
{
    const qmatmul_prepared *q = job->prepared;
    if (!q->b_per_run) {
        *values = q->b_packed;
        *sums = q->b_col_sums;
        return;
    }
    unsigned char *slot = job->slots + (size_t)batch * q->slot_bytes;
    *values = (int8_t *)slot;
    *sums = (int32_t *)(void *)(slot + (q->slot_bytes -
                                        ((size_t)job->p->n * sizeof(int32_t) + 63) / 64 * 64));
}

/* Items are (batch, panel of B). */
static void qpack_batches(void *ctx, int64_t begin, int64_t end)
{
    const qpacked_job *job = ctx;
    const qmatmul_params *p = job->p;
    const nxe_q8_gemm_kernel *kernel = job->prepared->kernel;
    const int64_t panels = (p->n + kernel->nr - 1) / kernel->nr;
    for (int64_t item = begin; item < end; item++) {
        const int64_t batch = item / panels, panel = item % panels;
        int64_t a_offset, b_offset;
        nxe_batch_offsets(p->batch_ndim, p->batch_shape, p->a_batch_strides, p->b_batch_strides,
                          batch, &a_offset, &b_offset);
        int8_t *values;
        int32_t *sums;
        slot_of(job, batch, &values, &sums);
        nxe_q8_pack_b(kernel, q8_ref(&job->inputs[p->slots.b], b_offset), p->n, 1, p->k, p->n,
                      panel, panel + 1, values, sums);
    }
}

static void qpacked_tiles(void *ctx, int64_t begin, int64_t end)
{
    const qpacked_job *job = ctx;
    const qmatmul_params *p = job->p;
    const nxe_value *in = job->inputs;
    while (begin < end) {
        int64_t first, last;
        const int64_t batch = nxe_batch_tile_span(begin, end, job->tiles_per_batch, &first, &last);
        int64_t a_offset, b_offset;
        nxe_batch_offsets(p->batch_ndim, p->batch_shape, p->a_batch_strides, p->b_batch_strides,
                          batch, &a_offset, &b_offset);
        int8_t *values;
        int32_t *sums;
        slot_of(job, batch, &values, &sums);
        const int64_t y_offset = batch * p->m * p->n;
        nxe_q8_packed_args args = {
            .kernel = job->prepared->kernel,
            .m = p->m,
            .n = p->n,
            .k = p->k,
            .a = q8_ref(&in[p->slots.a], a_offset),
            .a_stride_m = p->k,
            .a_zero = optional_ref(in, job->num_inputs, p->slots.a_zero),
            .a_zero_stride = p->a_zero_stride,
            .b_packed = values,
            .b_col_sums = sums,
            .b_signed = job->prepared->b_signed,
            .b_zero = optional_ref(in, job->num_inputs, p->slots.b_zero),
            .b_zero_stride = p->b_zero_stride,
        };
        output_of(p, in, job->num_inputs, job->y, y_offset, &args.a_scale, &args.a_scale_stride,
                  &args.b_scale, &args.b_scale_stride, &args.out);
        job->prepared->kernels->q8_gemm_run(&args, first, last);
        begin += last - first;
    }
}

static nxe_status qmatmul_run_prepared(const void *params, const void *prepared,
                                       const nxe_fused_epilogue *fused, void *workspace,
                                       const nxe_value *inputs, int32_t num_inputs,
                                       nxe_value *outputs, int32_t num_outputs,
                                       nxe_thread_pool *pool)
{
    (void)fused; /* integer outputs fold nothing */
    (void)num_outputs;
    const qmatmul_params *p = params;
    const qmatmul_prepared *q = prepared;
    qpacked_job job = {q,
                       p,
                       inputs,
                       num_inputs,
                       &outputs[0],
                       workspace,
                       (p->m + q->kernel->mr - 1) / q->kernel->mr};
    const int64_t panels = (p->n + q->kernel->nr - 1) / q->kernel->nr;
    if (q->b_per_run)
        nxe_parallel_for(pool, p->batch_count * panels,
                         nxe_parallel_grain((double)p->k * (double)q->kernel->nr, QUANT_TASK_WORK),
                         qpack_batches, &job);
    const int64_t items = p->batch_count * job.tiles_per_batch;
    const int64_t grain =
        nxe_parallel_grain((double)q->kernel->mr * (double)p->n * (double)p->k, QUANT_TASK_WORK);
    nxe_parallel_for(pool, items, nxe_parallel_grain_few_chunks(pool, items, grain), qpacked_tiles,
                     &job);
    return NXE_OK;
}

/* ---- ConvInteger and QLinearConv ------------------------------------------------------- */

typedef struct qconv_slots {
    int32_t x, w, x_zero, w_zero, x_scale, w_scale, y_scale, y_zero, bias;
} qconv_slots;

static const qconv_slots conv_integer_slots = {0, 1, 2, 3, -1, -1, -1, -1, -1};
static const qconv_slots qlinear_conv_slots = {0, 3, 2, 5, 1, 4, 6, 7, 8};

typedef struct qconv_params {
    nxe_q8_conv2d_geometry geometry;
    qconv_slots slots;
    int32_t requant;
    int32_t y_signed;
    int32_t has_bias;
    int64_t w_zero_stride;
    int64_t w_scale_stride;
} qconv_params;

static nxe_status read_ints_exact(const nxe_node *node, const char *name, int32_t expected,
                                  int64_t min_value, int64_t *values)
{
    int64_t buffer[8];
    int32_t count = 0;
    nxe_status status = nxe_node_attr_ints(node, name, buffer, 8, &count);
    if (status != NXE_OK)
        return status;
    if (count != expected)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute %s needs %" PRId32 " values, got %" PRId32, name, expected,
                              count);
    for (int32_t i = 0; i < count; i++) {
        if (buffer[i] < min_value || buffer[i] > QCONV_ATTR_MAX)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute %s[%" PRId32 "] must be in [%" PRId64 ", %" PRId64
                                  "], got %" PRId64,
                                  name, i, min_value, QCONV_ATTR_MAX, buffer[i]);
        values[i] = buffer[i];
    }
    return NXE_OK;
}

static nxe_status conv_extent(const nxe_node *node, const char *axis, int64_t in, int64_t pads,
                              int64_t kernel, int64_t stride, int64_t dilation, int64_t *out)
{
    const int64_t span = (kernel - 1) * dilation + 1; /* both factors <= 2^31 */
    const int64_t padded = in + pads;
    if (padded < span)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s %" PRId64 " plus pads %" PRId64
                              " is smaller than the dilated kernel %" PRId64
                              ": the output would be empty",
                              axis, in, pads, span);
    *out = (padded - span) / stride + 1;
    return NXE_OK;
}

static nxe_status qconv_infer_common(const nxe_node *node, const nxe_value *inputs,
                                     int32_t num_inputs, nxe_value *outputs, qconv_params *p,
                                     const qconv_slots *slots)
{
    p->slots = *slots;
    const nxe_value *x = &inputs[slots->x];
    const nxe_value *w = &inputs[slots->w];
    char xs[128], ws[128];
    nxe_shape_str(x->ndim, x->shape, xs, sizeof xs);
    nxe_shape_str(w->ndim, w->shape, ws, sizeof ws);
    int64_t strides[2], dilations[2], pads[4], group = 0;
    nxe_status status = read_ints_exact(node, "strides", 2, 1, strides);
    if (status == NXE_OK)
        status = read_ints_exact(node, "dilations", 2, 1, dilations);
    if (status == NXE_OK)
        status = read_ints_exact(node, "pads", 4, 0, pads);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "group", &group);
    if (status != NXE_OK)
        return status;
    if (group < 1 || group > QCONV_ATTR_MAX)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute group must be in [1, %" PRId64 "], got %" PRId64,
                              QCONV_ATTR_MAX, group);
    if (x->ndim != 4)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank 4 (NCHW), got shape %s", xs);
    if (w->ndim != 4)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W must have rank 4 (OIHW), got shape %s", ws);
    nxe_q8_conv2d_geometry g;
    memset(&g, 0, sizeof g);
    g.batch = x->shape[0];
    g.in_channels = x->shape[1];
    g.in_height = x->shape[2];
    g.in_width = x->shape[3];
    g.out_channels = w->shape[0];
    g.kernel_height = w->shape[2];
    g.kernel_width = w->shape[3];
    g.groups = group;
    if (g.in_channels < 1 || g.in_channels % group != 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s has %" PRId64
                              " channels, not a positive multiple of group %" PRId64,
                              xs, g.in_channels, group);
    if (g.out_channels < 1 || g.out_channels % group != 0)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s has %" PRId64
                              " output channels, not a positive multiple of group %" PRId64,
                              ws, g.out_channels, group);
    if (w->shape[1] != g.in_channels / group)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "weight W %s has %" PRId64 " input channels per group, but input X "
                              "%s with group %" PRId64 " needs %" PRId64,
                              ws, w->shape[1], xs, group, g.in_channels / group);
    if (g.in_height < 1 || g.in_width < 1 || g.kernel_height < 1 || g.kernel_width < 1 ||
        g.in_height > QCONV_ATTR_MAX || g.in_width > QCONV_ATTR_MAX ||
        g.kernel_height > QCONV_ATTR_MAX || g.kernel_width > QCONV_ATTR_MAX)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X %s and kernel W %s need spatial sizes in [1, 2^31)", xs, ws);
    g.pad_top = pads[0];
    g.pad_left = pads[1];
    g.stride_height = strides[0];
    g.stride_width = strides[1];
    g.dilation_height = dilations[0];
    g.dilation_width = dilations[1];
    status = conv_extent(node, "height", g.in_height, pads[0] + pads[2], g.kernel_height,
                         strides[0], dilations[0], &g.out_height);
    if (status == NXE_OK)
        status = conv_extent(node, "width", g.in_width, pads[1] + pads[3], g.kernel_width,
                             strides[1], dilations[1], &g.out_width);
    if (status != NXE_OK)
        return status;

    if (present(inputs, num_inputs, slots->x_zero)) {
        status = zero_point_dtype(node, "x_zero_point", &inputs[slots->x_zero], "X", x);
        if (status == NXE_OK)
            status = scalar_only(node, "x_zero_point", &inputs[slots->x_zero]);
        if (status != NXE_OK)
            return status;
    }
    if (present(inputs, num_inputs, slots->w_zero)) {
        status = zero_point_dtype(node, "w_zero_point", &inputs[slots->w_zero], "W", w);
        if (status == NXE_OK)
            status = per_axis_or_scalar(node, "w_zero_point", &inputs[slots->w_zero],
                                        g.out_channels, "output channel", &p->w_zero_stride);
        if (status != NXE_OK)
            return status;
    }
    int32_t y_dtype = NXE_DTYPE_I32;
    if (slots->y_scale >= 0) {
        status = scalar_only(node, "x_scale", &inputs[slots->x_scale]);
        if (status == NXE_OK)
            status = per_axis_or_scalar(node, "w_scale", &inputs[slots->w_scale], g.out_channels,
                                        "output channel", &p->w_scale_stride);
        if (status == NXE_OK)
            status = scalar_only(node, "y_scale", &inputs[slots->y_scale]);
        if (status == NXE_OK && present(inputs, num_inputs, slots->y_zero))
            status = scalar_only(node, "y_zero_point", &inputs[slots->y_zero]);
        if (status != NXE_OK)
            return status;
        if (present(inputs, num_inputs, slots->bias)) {
            const nxe_value *bias = &inputs[slots->bias];
            if (bias->ndim != 1 || bias->shape[0] != g.out_channels) {
                char bs[128];
                return nxe_node_error(
                    node, NXE_ERROR_SHAPE_MISMATCH, "bias B must have shape [%" PRId64 "], got %s",
                    g.out_channels, nxe_shape_str(bias->ndim, bias->shape, bs, sizeof bs));
            }
            p->has_bias = 1;
        }
        y_dtype =
            present(inputs, num_inputs, slots->y_zero) ? inputs[slots->y_zero].dtype : x->dtype;
        p->requant = 1;
        p->y_signed = y_dtype == NXE_DTYPE_I8;
    }
    nxe_value *y = &outputs[0];
    y->dtype = y_dtype;
    y->ndim = 4;
    y->shape[0] = g.batch;
    y->shape[1] = g.out_channels;
    y->shape[2] = g.out_height;
    y->shape[3] = g.out_width;
    p->geometry = g;
    return NXE_OK;
}

static nxe_status conv_integer_infer(const nxe_node *node, const nxe_value *inputs,
                                     int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                     void *params)
{
    (void)num_outputs;
    return qconv_infer_common(node, inputs, num_inputs, outputs, params, &conv_integer_slots);
}

static nxe_status qlinear_conv_infer(const nxe_node *node, const nxe_value *inputs,
                                     int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                     void *params)
{
    (void)num_outputs;
    return qconv_infer_common(node, inputs, num_inputs, outputs, params, &qlinear_conv_slots);
}

typedef struct qconv_job {
    nxe_q8_conv2d_args args;
} qconv_job;

static void qconv_rows(void *ctx, int64_t begin, int64_t end)
{
    const qconv_job *job = ctx;
    nxe_ref_q8_conv2d_nchw(&job->args, begin, end);
}

static nxe_status qconv_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                            nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_outputs;
    const qconv_params *p = params;
    const nxe_q8_conv2d_geometry *g = &p->geometry;
    qconv_job job;
    memset(&job, 0, sizeof job);
    nxe_q8_conv2d_args *args = &job.args;
    args->geometry = *g;
    args->x = q8_ref(&inputs[p->slots.x], 0);
    args->w = q8_ref(&inputs[p->slots.w], 0);
    args->x_zero = optional_ref(inputs, num_inputs, p->slots.x_zero);
    args->w_zero = optional_ref(inputs, num_inputs, p->slots.w_zero);
    args->w_zero_stride = p->w_zero_stride;
    if (p->requant) {
        args->x_scale = inputs[p->slots.x_scale].data;
        args->w_scale = inputs[p->slots.w_scale].data;
        args->w_scale_stride = p->w_scale_stride;
        args->bias = p->has_bias ? inputs[p->slots.bias].data : NULL;
        args->out.y_q8 = outputs[0].data;
        args->out.y_signed = p->y_signed;
        args->out.y_scale = scalar_f32(&inputs[p->slots.y_scale]);
        args->out.y_zero_point = zero_scalar(inputs, num_inputs, p->slots.y_zero);
    } else {
        args->out.y_i32 = outputs[0].data;
    }
    const double row_work = (double)g->out_channels * (double)g->out_width *
                            (double)(g->in_channels / g->groups) * (double)g->kernel_height *
                            (double)g->kernel_width;
    nxe_parallel_for(pool, g->batch * g->out_height, nxe_parallel_grain(row_work, QUANT_TASK_WORK),
                     qconv_rows, &job);
    return NXE_OK;
}

/* The 8-bit GEMM path: pixels are the rows of the product, copied from the input staged
 * channels last (kernels/gemm.h) as each row tile is packed, and the weights of each group
 * are B, packed once in the staged reduction order. The staged input lives in the workspace,
 * a 64-byte aligned block per (image, group). */
typedef struct qconv_prepared {
    const nxe_kernel_table *kernels;
    const nxe_q8_gemm_kernel *kernel;
    int64_t reduction; /* C/g x KH x KW */
    size_t slot_bytes; /* one group's packed weights and column sums */
    size_t stage_bytes;
    unsigned char *slots;
} qconv_prepared;

static nxe_status qconv_prepare(const void *params_in, const nxe_value *inputs, int32_t num_inputs,
                                const nxe_prepare_context *context, void **prepared,
                                size_t *workspace_bytes)
{
    (void)num_inputs;
    const qconv_params *p = params_in;
    const nxe_q8_conv2d_geometry *g = &p->geometry;
    const nxe_q8_gemm_kernel *kernel = context->kernels->q8_gemm_kernel;
    const nxe_value *w = &inputs[p->slots.w];
    const int64_t reduction = g->in_channels / g->groups * g->kernel_height * g->kernel_width;
    const int64_t group_out = g->out_channels / g->groups;
    *prepared = NULL;
    if (!kernel || !w->data || reduction > NXE_Q8_MAX_K)
        return NXE_OK;
    const size_t slot = packed_slot_bytes(kernel, reduction, group_out);
    const size_t bytes = slot * (size_t)g->groups;
    void *data;
    qconv_prepared *q = nxe_prepared_alloc(sizeof *q, bytes, &data);
    if (!q)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for %zu bytes of packed weights",
                         bytes);
    const size_t stage = (nxe_q8_conv_stage_bytes(g) + 63) / 64 * 64;
    *q = (qconv_prepared){context->kernels, kernel, reduction, slot, stage, data};
    for (int64_t group = 0; group < g->groups; group++) {
        unsigned char *at = q->slots + (size_t)group * slot;
        nxe_q8_pack_conv_b(
            kernel, g, q8_ref(w, group * group_out * reduction), (int8_t *)at,
            (int32_t *)(void *)(at + slot - ((size_t)group_out * sizeof(int32_t) + 63) / 64 * 64));
    }
    *workspace_bytes = (size_t)(g->batch * g->groups) * stage + 64;
    *prepared = q;
    return NXE_OK;
}

typedef struct qconv_packed_job {
    const qconv_params *p;
    const qconv_prepared *q;
    const nxe_value *inputs;
    int32_t num_inputs;
    nxe_value *y;
    unsigned char *stages;     /* the workspace's staged blocks, 64-byte aligned */
    int64_t stage_rows;        /* staged rows of one (image, group) */
    int64_t tiles_per_product; /* row tiles of one (image, group) */
} qconv_packed_job;

/* Items are staged rows of every (image, group). */
static void qconv_stage_rows(void *ctx, int64_t begin, int64_t end)
{
    const qconv_packed_job *job = ctx;
    const nxe_q8_conv2d_geometry *g = &job->p->geometry;
    const int64_t group_in = g->in_channels / g->groups;
    while (begin < end) {
        int64_t first, last;
        const int64_t product = nxe_batch_tile_span(begin, end, job->stage_rows, &first, &last);
        const int64_t image = product / g->groups, group = product % g->groups;
        nxe_q8_conv_stage(
            g,
            q8_ref(&job->inputs[job->p->slots.x],
                   (image * g->in_channels + group * group_in) * g->in_height * g->in_width),
            optional_ref(job->inputs, job->num_inputs, job->p->slots.x_zero), first, last,
            job->stages + (size_t)product * job->q->stage_bytes);
        begin += last - first;
    }
}

static void qconv_packed_tiles(void *ctx, int64_t begin, int64_t end)
{
    const qconv_packed_job *job = ctx;
    const qconv_params *p = job->p;
    const qconv_prepared *q = job->q;
    const nxe_q8_conv2d_geometry *g = &p->geometry;
    const nxe_value *in = job->inputs;
    const int64_t group_out = g->out_channels / g->groups;
    const int64_t pixels = g->out_height * g->out_width;
    while (begin < end) {
        int64_t first, last;
        const int64_t product =
            nxe_batch_tile_span(begin, end, job->tiles_per_product, &first, &last);
        const int64_t image = product / g->groups, group = product % g->groups;
        const int64_t channel = group * group_out; /* the group's first output channel */
        const unsigned char *slot = q->slots + (size_t)group * q->slot_bytes;
        nxe_q8_packed_args args = {
            .kernel = q->kernel,
            .m = pixels,
            .n = group_out,
            .k = q->reduction,
            .a = {job->stages + (size_t)product * q->stage_bytes,
                  in[p->slots.x].dtype == NXE_DTYPE_I8},
            .a_zero = optional_ref(in, job->num_inputs, p->slots.x_zero),
            .b_packed = (const int8_t *)slot,
            .b_col_sums =
                (const int32_t *)(const void *)(slot + q->slot_bytes -
                                                ((size_t)group_out * sizeof(int32_t) + 63) / 64 *
                                                    64),
            .b_signed = in[p->slots.w].dtype == NXE_DTYPE_I8,
            .b_zero_stride = p->w_zero_stride,
            .y_column_stride = pixels,
            .conv = g,
        };
        if (present(in, job->num_inputs, p->slots.w_zero))
            args.b_zero = q8_ref(&in[p->slots.w_zero], channel * p->w_zero_stride);
        const int64_t y_offset = (image * g->out_channels + channel) * pixels;
        if (p->requant) {
            args.a_scale = in[p->slots.x_scale].data;
            args.b_scale = (const float *)in[p->slots.w_scale].data + channel * p->w_scale_stride;
            args.b_scale_stride = p->w_scale_stride;
            args.bias = p->has_bias ? (const int32_t *)in[p->slots.bias].data + channel : NULL;
            args.out.y_q8 = (uint8_t *)job->y->data + y_offset;
            args.out.y_signed = p->y_signed;
            args.out.y_scale = scalar_f32(&in[p->slots.y_scale]);
            args.out.y_zero_point = zero_scalar(in, job->num_inputs, p->slots.y_zero);
        } else {
            args.out.y_i32 = (int32_t *)job->y->data + y_offset;
        }
        q->kernels->q8_gemm_run(&args, first, last);
        begin += last - first;
    }
}

static nxe_status qconv_run_prepared(const void *params, const void *prepared,
                                     const nxe_fused_epilogue *fused, void *workspace,
                                     const nxe_value *inputs, int32_t num_inputs,
                                     nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)fused; /* integer outputs fold nothing */
    (void)num_outputs;
    const qconv_params *p = params;
    const qconv_prepared *q = prepared;
    const nxe_q8_conv2d_geometry *g = &p->geometry;
    const int64_t pixels = g->out_height * g->out_width;
    unsigned char *stages =
        (unsigned char *)(((uintptr_t)workspace + 63) / 64 * 64); /* 64 bytes spare */
    qconv_packed_job job = {p,
                            q,
                            inputs,
                            num_inputs,
                            &outputs[0],
                            stages,
                            nxe_q8_conv_stage_height(g),
                            (pixels + q->kernel->mr - 1) / q->kernel->mr};
    const int64_t products = g->batch * g->groups;
    const double row_bytes =
        (double)nxe_q8_conv_stage_width(g) * (double)(g->in_channels / g->groups);
    nxe_parallel_for(pool, products * job.stage_rows,
                     nxe_parallel_grain(row_bytes, QUANT_TASK_WORK), qconv_stage_rows, &job);
    const int64_t items = products * job.tiles_per_product;
    const int64_t grain = nxe_parallel_grain(
        (double)q->kernel->mr * (double)(g->out_channels / g->groups) * (double)q->reduction,
        QUANT_TASK_WORK);
    nxe_parallel_for(pool, items, nxe_parallel_grain_few_chunks(pool, items, grain),
                     qconv_packed_tiles, &job);
    return NXE_OK;
}

static void qconv_kernel_name(const void *prepared, char *name, size_t size)
{
    snprintf(name, size, "%s", ((const qconv_prepared *)prepared)->kernel->name);
}

/* ---- DynamicQuantizeLinear -------------------------------------------------------------- */

typedef struct dynamic_quantize_params {
    int64_t numel;
} dynamic_quantize_params;

static nxe_status dynamic_quantize_infer(const nxe_node *node, const nxe_value *inputs,
                                         int32_t num_inputs, nxe_value *outputs,
                                         int32_t num_outputs, void *params)
{
    (void)node;
    (void)num_inputs;
    (void)num_outputs;
    dynamic_quantize_params *p = params;
    const nxe_value *x = &inputs[0];
    outputs[0].dtype = NXE_DTYPE_U8;
    outputs[0].ndim = x->ndim;
    memcpy(outputs[0].shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    outputs[1].dtype = NXE_DTYPE_F32;
    outputs[1].ndim = 0;
    outputs[2].dtype = NXE_DTYPE_U8;
    outputs[2].ndim = 0;
    p->numel = nxe_value_numel(x);
    return NXE_OK;
}

typedef struct dynamic_quantize_job {
    const float *x;
    uint8_t *y;
    float scale;
    int32_t zero_point;
} dynamic_quantize_job;

static void dynamic_quantize_range(void *ctx, int64_t begin, int64_t end)
{
    const dynamic_quantize_job *job = ctx;
    nxe_ref_f32_quantize_u8(job->x + begin, job->y + begin, 1, end - begin, &job->scale,
                            job->zero_point, 0, 1);
}

static nxe_status dynamic_quantize_run(const void *params, const nxe_value *inputs,
                                       int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                       nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const dynamic_quantize_params *p = params;
    float lo, hi;
    nxe_ref_f32_minmax_with_zero(p->numel, inputs[0].data, &lo, &hi);
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float zero = 0.0f - lo / scale;
    if (!(zero >= 0.0f)) /* also catches NaN from infinite inputs */
        zero = 0.0f;
    if (zero > 255.0f)
        zero = 255.0f;
    const int32_t zero_point = (int32_t)nearbyintf(zero);
    ((float *)outputs[1].data)[0] = scale;
    ((uint8_t *)outputs[2].data)[0] = (uint8_t)zero_point;
    dynamic_quantize_job job = {inputs[0].data, outputs[0].data, scale, zero_point};
    if (p->numel > 0)
        nxe_parallel_for(pool, p->numel, QUANT_GRAIN, dynamic_quantize_range, &job);
    return NXE_OK;
}

/* ---- Schemas ------------------------------------------------------------------------------ */

#define F32_MASK NXE_MASK_FLOAT
#define I32_MASK NXE_MASK(NXE_DTYPE_I32)

static const nxe_op_param_info matmul_integer_inputs[] = {
    {"A", "u8 or i8 [..., M, K]; a 1-D A [K] is a row whose axis is dropped from Y.", Q8_MASK, 0,
     0},
    {"B",
     "u8 or i8 [..., K, N]; a 1-D B [K] is a column whose axis is dropped from Y. Batch "
     "dimensions broadcast as in numpy.",
     Q8_MASK, 0, 0},
    {"a_zero_point", "A's dtype; one value, or 1-D [M] (one per row of A). Absent: 0.", Q8_MASK, 1,
     0},
    {"b_zero_point", "B's dtype; one value, or 1-D [N] (one per column of B). Absent: 0.", Q8_MASK,
     1, 0},
};
static const nxe_op_param_info matmul_integer_outputs[] = {
    {"Y", "i32 [broadcast batch..., M, N] = (A - a_zero_point) @ (B - b_zero_point).", I32_MASK, 0,
     0},
};

static const nxe_op_param_info qlinear_matmul_inputs[] = {
    {"a", "u8 or i8 [..., M, K] (1-D promoted as in MatMul).", Q8_MASK, 0, 0},
    {"a_scale", "f32; one value, or 1-D [M] (per row of a).", F32_MASK, 0, 0},
    {"a_zero_point", "a's dtype; one value or 1-D [M]. Absent: 0.", Q8_MASK, 1, 0},
    {"b", "u8 or i8 [..., K, N]; batch dimensions broadcast against a's.", Q8_MASK, 0, 0},
    {"b_scale", "f32; one value, or 1-D [N] (per column of b).", F32_MASK, 0, 0},
    {"b_zero_point", "b's dtype; one value or 1-D [N]. Absent: 0.", Q8_MASK, 1, 0},
    {"y_scale", "f32, one value.", F32_MASK, 0, 0},
    {"y_zero_point", "u8 or i8, one value; its dtype is y's. Absent: 0 and y takes a's dtype.",
     Q8_MASK, 1, 0},
};
static const nxe_op_param_info qlinear_matmul_outputs[] = {
    {"y",
     "[broadcast batch..., M, N] = saturate(round_half_even(acc * a_scale * b_scale / y_scale) "
     "+ y_zero_point), acc the int32 product of the zero-point-shifted operands.",
     Q8_MASK, 0, 0},
};

static const nxe_op_param_info conv_integer_inputs[] = {
    {"x", "u8 or i8 [N, C, H, W].", Q8_MASK, 0, 0},
    {"w", "u8 or i8 [O, C/group, KH, KW].", Q8_MASK, 0, 0},
    {"x_zero_point", "x's dtype, one value; padding acts as this value. Absent: 0.", Q8_MASK, 1, 0},
    {"w_zero_point", "w's dtype; one value, or 1-D [O] (one per output channel). Absent: 0.",
     Q8_MASK, 1, 0},
};
static const nxe_op_param_info conv_integer_outputs[] = {
    {"y", "i32 [N, O, OH, OW], the convolution of (x - x_zero_point) with (w - w_zero_point).",
     I32_MASK, 0, 0},
};

static const nxe_op_param_info qlinear_conv_inputs[] = {
    {"x", "u8 or i8 [N, C, H, W].", Q8_MASK, 0, 0},
    {"x_scale", "f32, one value.", F32_MASK, 0, 0},
    {"x_zero_point", "x's dtype, one value; padding acts as this value. Absent: 0.", Q8_MASK, 1, 0},
    {"w", "u8 or i8 [O, C/group, KH, KW].", Q8_MASK, 0, 0},
    {"w_scale", "f32; one value, or 1-D [O] (per output channel).", F32_MASK, 0, 0},
    {"w_zero_point", "w's dtype; one value or 1-D [O]. Absent: 0.", Q8_MASK, 1, 0},
    {"y_scale", "f32, one value.", F32_MASK, 0, 0},
    {"y_zero_point", "u8 or i8, one value; its dtype is y's. Absent: 0 and y takes x's dtype.",
     Q8_MASK, 1, 0},
    {"B", "i32 bias [O], in units of x_scale * w_scale, added to the accumulator.", I32_MASK, 1, 0},
};
static const nxe_op_param_info qlinear_conv_outputs[] = {
    {"y",
     "[N, O, OH, OW] = saturate(round_half_even((acc + B) * x_scale * w_scale / y_scale) + "
     "y_zero_point).",
     Q8_MASK, 0, 0},
};

static const nxe_op_attr_info qconv_attrs[] = {
    {"strides", "Step between output positions, [stride_h, stride_w]; each >= 1.", NXE_ATTR_INTS,
     "[1, 1]"},
    {"dilations", "Spacing between kernel taps, [dilation_h, dilation_w]; each >= 1.",
     NXE_ATTR_INTS, "[1, 1]"},
    {"pads", "Padding [top, left, bottom, right] (ONNX order); each >= 0.", NXE_ATTR_INTS,
     "[0, 0, 0, 0]"},
    {"group", "Number of channel groups; divides C and O.", NXE_ATTR_INT, "1"},
};

static const nxe_op_param_info dynamic_quantize_inputs[] = {
    {"x", "f32, any shape.", F32_MASK, 0, 0},
};
static const nxe_op_param_info dynamic_quantize_outputs[] = {
    {"y", "u8, x's shape: saturate(round_half_even(x / y_scale) + y_zero_point).",
     NXE_MASK(NXE_DTYPE_U8), 0, 0},
    {"y_scale",
     "f32 scalar (rank 0): (max(0, max x) - min(0, min x)) / 255, or 1/255 when both "
     "are 0.",
     F32_MASK, 0, 0},
    {"y_zero_point",
     "u8 scalar (rank 0): round_half_even(clamp(-min(0, min x) / y_scale, 0, "
     "255)).",
     NXE_MASK(NXE_DTYPE_U8), 0, 0},
};

static void qmatmul_kernel_name(const void *prepared, char *name, size_t size)
{
    snprintf(name, size, "%s", ((const qmatmul_prepared *)prepared)->kernel->name);
}

static const nxe_op_def quantized_defs[] = {
    {NXE_INFO_NOATTR("MatMulInteger",
                     "Integer matrix product of u8/i8 operands with zero points, accumulated in "
                     "int32 (an overflowing sum wraps, two's complement). Batch dimensions "
                     "broadcast as in MatMul.",
                     matmul_integer_inputs, matmul_integer_outputs),
     sizeof(qmatmul_params), matmul_integer_infer, qmatmul_run, qmatmul_prepare,
     qmatmul_run_prepared, NULL, qmatmul_kernel_name},
    {NXE_INFO_NOATTR("QLinearMatMul",
                     "Quantized matrix product: int32 accumulation of the zero-point-shifted "
                     "operands, then requantization to u8/i8 with the multiplier a_scale * "
                     "b_scale / y_scale (formed in f32, applied in double), rounding half to "
                     "even and saturating. Scales and zero points are read at run time.",
                     qlinear_matmul_inputs, qlinear_matmul_outputs),
     sizeof(qmatmul_params), qlinear_matmul_infer, qmatmul_run, qmatmul_prepare,
     qmatmul_run_prepared, NULL, qmatmul_kernel_name},
    {NXE_INFO("ConvInteger",
              "2-D convolution (NCHW) of u8/i8 input and weights with zero points, accumulated "
              "in int32 (wrapping). Padding behaves as the input's zero point.",
              conv_integer_inputs, conv_integer_outputs, qconv_attrs),
     sizeof(qconv_params), conv_integer_infer, qconv_run, qconv_prepare, qconv_run_prepared, NULL,
     qconv_kernel_name},
    {NXE_INFO("QLinearConv",
              "Quantized 2-D convolution (NCHW): int32 accumulation plus int32 bias, then "
              "requantization to u8/i8 with x_scale * w_scale[o] / y_scale (per-tensor or per "
              "output channel weights), rounding half to even and saturating.",
              qlinear_conv_inputs, qlinear_conv_outputs, qconv_attrs),
     sizeof(qconv_params), qlinear_conv_infer, qconv_run, qconv_prepare, qconv_run_prepared, NULL,
     qconv_kernel_name},
    {NXE_INFO_NOATTR("DynamicQuantizeLinear",
                     "Quantizes f32 to u8 with a scale and zero point computed at run time from "
                     "the range of x extended to include 0 (ONNX DynamicQuantizeLinear). NaN "
                     "elements are left out of the range and quantize to the zero point.",
                     dynamic_quantize_inputs, dynamic_quantize_outputs),
     sizeof(dynamic_quantize_params), dynamic_quantize_infer, dynamic_quantize_run},
};

const nxe_op_family nxe_ops_quantized = {
    quantized_defs, (int32_t)(sizeof quantized_defs / sizeof quantized_defs[0])};
