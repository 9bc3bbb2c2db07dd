/* attention.c — the attention op family: ScaledDotProductAttention with an optional additive or
 * boolean mask, causal masking, logit soft-capping, grouped key/value heads and keys given
 * transposed. Shape rules and lowering only: the fused blocked driver of this process's level
 * (kernels/attention.h) where it has one, else the reference rows of kernels/ref/attention. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/attention.h"

/* The driver's scratch slots in the workspace: the tasks are split into this many shares. */
#define ATTENTION_MAX_SLOTS 16

/* About this many multiply-adds per parallel task keeps scheduling overhead negligible. */
#define ATTENTION_TASK_WORK 65536.0

typedef struct sdpa_params {
    int32_t batch_ndim; /* dimensions before [L, E] */
    int32_t has_mask;
    int32_t mask_is_bool;
    int32_t causal;
    int32_t transposed_keys; /* K is [..., E, S] */
    float scale;
    float softcap;
    int64_t causal_offset;
    int64_t rows;       /* product of the batch dimensions times L */
    int64_t query_len;  /* L */
    int64_t keys;       /* S */
    int64_t head_size;  /* E */
    int64_t value_size; /* Ev */
    int64_t head_group; /* query heads per key/value head along the last batch dim */
    int64_t batch_shape[NXE_MAX_RANK];
    int64_t kv_batch_shape[NXE_MAX_RANK];
    int64_t mask_strides[NXE_MAX_RANK]; /* over (batch..., L, S); 0 where broadcast */
} sdpa_params;

static bool present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

static nxe_status sdpa_infer(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,
                             nxe_value *outputs, int32_t num_outputs, void *params)
{
    (void)num_outputs;
    sdpa_params *p = params;
    const nxe_value *q = &inputs[0], *k = &inputs[1], *v = &inputs[2];
    const nxe_value *mask = present(inputs, num_inputs, 3) ? &inputs[3] : NULL;
    double scale = 0.0, softcap = 0.0;
    int64_t causal = 0, causal_offset = 0, transposed_keys = 0;
    nxe_status status = nxe_node_attr_float(node, "scale", &scale);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "transposed_keys", &transposed_keys);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "softcap", &softcap);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "causal", &causal);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "causal_offset", &causal_offset);
    if (status != NXE_OK)
        return status;
    if (causal != 0 && causal != 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute causal must be 0 or 1, got %" PRId64, causal);
    if (transposed_keys != 0 && transposed_keys != 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute transposed_keys must be 0 or 1, got %" PRId64,
                              transposed_keys);
    if (causal_offset < -INT32_MAX || causal_offset > INT32_MAX)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute causal_offset must be within +-2^31, got %" PRId64,
                              causal_offset);
    if (!isfinite(scale) || !isfinite(softcap) || softcap < 0.0)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attributes scale (%g) and softcap (%g) must be finite, softcap "
                              ">= 0",
                              scale, softcap);

    char qs[128], ks[128], vs[128];
    nxe_shape_str(q->ndim, q->shape, qs, sizeof qs);
    nxe_shape_str(k->ndim, k->shape, ks, sizeof ks);
    nxe_shape_str(v->ndim, v->shape, vs, sizeof vs);
    if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "Q, K and V must have one rank >= 2, got Q %s, K %s, V %s", qs, ks,
                              vs);
    const int32_t nd = q->ndim;
    const int32_t bn = nd - 2;
    const int64_t head_size = q->shape[nd - 1];
    const int64_t keys = k->shape[transposed_keys ? nd - 1 : nd - 2];
    if (k->shape[transposed_keys ? nd - 2 : nd - 1] != head_size || v->shape[nd - 2] != keys)
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "K %s must be %s with Q's E, and V %s [..., S, Ev] with K's S "
                              "(Q %s)",
                              ks, transposed_keys ? "[..., E, S]" : "[..., S, E]", vs, qs);
    p->head_group = 1;
    for (int32_t d = 0; d < bn; d++) {
        if (k->shape[d] != v->shape[d])
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "K %s and V %s must have the same batch dimensions", ks, vs);
        const bool heads = d == bn - 1;
        if (heads && k->shape[d] > 0 && q->shape[d] % k->shape[d] == 0 && q->shape[d] > 0) {
            p->head_group = q->shape[d] / k->shape[d];
        } else if (q->shape[d] != k->shape[d]) {
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "batch dimension %" PRId32 " of Q %s and K %s must match (the "
                                  "last one may be a multiple: grouped key/value heads)",
                                  d, qs, ks);
        }
    }
    p->batch_ndim = bn;
    p->query_len = q->shape[nd - 2];
    p->keys = keys;
    p->head_size = head_size;
    p->value_size = v->shape[nd - 1];
    p->rows = 1;
    for (int32_t d = 0; d < bn; d++) {
        p->batch_shape[d] = q->shape[d];
        p->kv_batch_shape[d] = k->shape[d];
        p->rows *= q->shape[d];
    }
    p->rows *= p->query_len;
    p->scale = scale != 0.0 ? (float)scale
                            : (head_size > 0 ? (float)(1.0 / sqrt((double)head_size)) : 1.0f);
    p->softcap = (float)softcap;
    p->causal = (int32_t)causal;
    p->transposed_keys = (int32_t)transposed_keys;
    p->causal_offset = causal_offset;

    if (mask != NULL) {
        if (mask->ndim > nd) {
            char ms[128];
            return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                  "mask %s has a higher rank than the scores [..., L, S] (%" PRId32
                                  ")",
                                  nxe_shape_str(mask->ndim, mask->shape, ms, sizeof ms), nd);
        }
        int64_t stride = 1;
        for (int32_t d = nd - 1; d >= 0; d--) {
            const int64_t full = d == nd - 1 ? p->keys : (d == nd - 2 ? p->query_len : q->shape[d]);
            const int32_t md = d - (nd - mask->ndim);
            if (md < 0 || mask->shape[md] == 1) {
                p->mask_strides[d] = 0;
            } else if (mask->shape[md] == full) {
                p->mask_strides[d] = stride;
                stride *= full;
            } else {
                char ms[128];
                return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                                      "mask %s does not broadcast to the scores (batch..., L = "
                                      "%" PRId64 ", S = %" PRId64 ") of Q %s and K %s",
                                      nxe_shape_str(mask->ndim, mask->shape, ms, sizeof ms),
                                      p->query_len, p->keys, qs, ks);
            }
        }
        p->has_mask = 1;
        p->mask_is_bool = mask->dtype == NXE_DTYPE_BOOL;
    }

    nxe_value *y = &outputs[0];
    y->dtype = NXE_DTYPE_F32;
    y->ndim = nd;
    memcpy(y->shape, q->shape, (size_t)nd * sizeof(int64_t));
    y->shape[nd - 1] = p->value_size;
    return NXE_OK;
}

/* Where head h (an index over Q's batch dimensions) finds its K/V matrix and its mask. */
static void head_offsets(const sdpa_params *p, int64_t h, int64_t *kv_index, int64_t *mask_offset)
{
    const int32_t bn = p->batch_ndim;
    int64_t rest = h, kv_scale = 1;
    *kv_index = 0;
    *mask_offset = 0;
    for (int32_t d = bn - 1; d >= 0; d--) {
        const int64_t index = rest % p->batch_shape[d];
        rest /= p->batch_shape[d];
        const int64_t kv = d == bn - 1 ? index / p->head_group : index;
        *kv_index += kv * kv_scale;
        kv_scale *= p->kv_batch_shape[d];
        *mask_offset += index * p->mask_strides[d];
    }
}

typedef struct sdpa_job {
    const sdpa_params *p;
    const float *q;
    const float *k;
    const float *v;
    const void *mask;
    float *y;
} sdpa_job;

static void sdpa_rows(void *ctx, int64_t begin, int64_t end)
{
    const sdpa_job *job = ctx;
    const sdpa_params *p = job->p;
    const int32_t bn = p->batch_ndim;
    for (int64_t row = begin; row < end; row++) {
        const int64_t l = row % p->query_len;
        int64_t kv_index, mask_offset;
        head_offsets(p, row / p->query_len, &kv_index, &mask_offset);
        mask_offset += l * p->mask_strides[bn];
        int64_t limit = p->keys;
        if (p->causal) {
            const int64_t frontier = l + p->causal_offset + 1;
            limit = frontier < 0 ? 0 : frontier;
        }
        nxe_f32_attention_row_args args = {
            .keys = p->keys,
            .key_limit = limit,
            .head_size = p->head_size,
            .value_size = p->value_size,
            .scale = p->scale,
            .softcap = p->softcap,
            .q = job->q + row * p->head_size,
            .k = job->k + kv_index * p->keys * p->head_size,
            .k_stride = p->transposed_keys ? 1 : p->head_size,
            .k_element_stride = p->transposed_keys ? p->keys : 1,
            .v = job->v + kv_index * p->keys * p->value_size,
            .v_stride = p->value_size,
            .mask_f32 = NULL,
            .mask_bool = NULL,
            .mask_stride = p->mask_strides[bn + 1],
            .y = job->y + row * p->value_size,
        };
        if (p->has_mask && p->mask_is_bool)
            args.mask_bool = (const uint8_t *)job->mask + mask_offset;
        else if (p->has_mask)
            args.mask_f32 = (const float *)job->mask + mask_offset;
        nxe_ref_f32_attention_row(&args);
    }
}

static nxe_status sdpa_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                           nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const sdpa_params *p = params;
    sdpa_job job = {p,
                    inputs[0].data,
                    inputs[1].data,
                    inputs[2].data,
                    p->has_mask ? inputs[3].data : NULL,
                    outputs[0].data};
    const double row_work = (double)p->keys * (double)(p->head_size + p->value_size);
    if (p->rows > 0)
        nxe_parallel_for(pool, p->rows, nxe_parallel_grain(row_work, ATTENTION_TASK_WORK),
                         sdpa_rows, &job);
    return NXE_OK;
}

/* ---- the fused driver of this process's level ---- */

/* The f32 microkernel (relaxed work runs it too: the blocks are too small for converting each
 * to bf16 to pay), each head's K/V matrix and mask offset, and the workspace: keys given as
 * rows transposed once per run (the driver takes K^T: transposing each block of keys for
 * every block of queries instead cost a fifth of the time), then the scratch slots. */
typedef struct sdpa_prepared {
    const nxe_kernel_table *kernels;
    int64_t heads;
    int64_t kv_count;       /* K/V matrices */
    size_t transpose_bytes; /* K^T in the workspace, 0 for keys given transposed */
    size_t scratch_bytes;
    int64_t *kv_index;    /* [heads], inside this block */
    int64_t *mask_offset; /* [heads] */
} sdpa_prepared;

static nxe_status sdpa_prepare(const void *params, const nxe_value *inputs, int32_t num_inputs,
                               const nxe_prepare_context *context, void **prepared,
                               size_t *workspace_bytes)
{
    (void)inputs;
    (void)num_inputs;
    const sdpa_params *p = params;
    const nxe_kernel_table *kernels = context->kernels;
    *prepared = NULL;
    const nxe_gemm_kernel *kernel = kernels->f32_gemm_kernel;
    if (!kernel || !kernel->run_rows || !kernels->f32_attention_run || p->rows == 0 ||
        p->head_size == 0 || p->value_size == 0)
        return NXE_OK;
    const int64_t heads = p->rows / p->query_len;
    void *data;
    sdpa_prepared *sp = nxe_prepared_alloc(sizeof *sp, sizeof(int64_t) * 2 * (size_t)heads, &data);
    if (!sp)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "out of memory for attention offsets");
    sp->kernels = kernels;
    sp->heads = heads;
    sp->scratch_bytes =
        (size_t)nxe_round_up((int64_t)nxe_f32_attention_scratch_bytes(kernel, p->head_size), 64);
    sp->kv_count = 1;
    for (int32_t d = 0; d < p->batch_ndim; d++)
        sp->kv_count *= p->kv_batch_shape[d];
    sp->transpose_bytes =
        p->transposed_keys
            ? 0
            : (size_t)nxe_round_up((int64_t)sizeof(float) * sp->kv_count * p->keys * p->head_size,
                                   64);
    sp->kv_index = data;
    sp->mask_offset = sp->kv_index + heads;
    for (int64_t h = 0; h < heads; h++)
        head_offsets(p, h, &sp->kv_index[h], &sp->mask_offset[h]);
    *workspace_bytes = sp->transpose_bytes + ATTENTION_MAX_SLOTS * sp->scratch_bytes + 64;
    *prepared = sp;
    return NXE_OK;
}

typedef struct sdpa_fused_job {
    const sdpa_prepared *prepared;
    nxe_f32_attention_args args;
    char *scratch;
    int64_t tasks;
    int64_t slots;
} sdpa_fused_job;

/* Keys given as rows, [K/V matrices, S, E], into K^T in the workspace: items are rows of K^T,
 * element c of every key of one matrix; consecutive items read the same lines of K. */
typedef struct transpose_job {
    int64_t keys;
    int64_t head_size;
    const float *k;
    float *kt;
} transpose_job;

static void transpose_keys(void *ctx, int64_t begin, int64_t end)
{
    const transpose_job *job = ctx;
    const int64_t s = job->keys, e = job->head_size;
    for (int64_t row = begin; row < end; row++) {
        const float *k = job->k + row / e * s * e + row % e;
        float *kt = job->kt + row * s;
        for (int64_t j = 0; j < s; j++)
            kt[j] = k[j * e];
    }
}

/* Slot s computes its contiguous share of the tasks with scratch slot s. */
static void sdpa_slots(void *ctx, int64_t begin, int64_t end)
{
    const sdpa_fused_job *job = ctx;
    for (int64_t slot = begin; slot < end; slot++)
        job->prepared->kernels->f32_attention_run(
            &job->args, job->scratch + (size_t)slot * job->prepared->scratch_bytes,
            slot * job->tasks / job->slots, (slot + 1) * job->tasks / job->slots);
}

static nxe_status sdpa_run_prepared(const void *params, const void *prepared_in,
                                    const nxe_fused_epilogue *fused, void *workspace,
                                    const nxe_value *inputs, int32_t num_inputs, nxe_value *outputs,
                                    int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)fused;
    (void)num_inputs;
    (void)num_outputs;
    const sdpa_params *p = params;
    const sdpa_prepared *prepared = prepared_in;
    const int32_t bn = p->batch_ndim;
    const void *mask = p->has_mask ? inputs[3].data : NULL;
    sdpa_fused_job job = {
        .prepared = prepared,
        .args =
            {
                .kernel = prepared->kernels->f32_gemm_kernel,
                .heads = prepared->heads,
                .query_len = p->query_len,
                .keys = p->keys,
                .head_size = p->head_size,
                .value_size = p->value_size,
                .scale = p->scale,
                .softcap = p->softcap,
                .causal = p->causal,
                .causal_offset = p->causal_offset,
                .q = inputs[0].data,
                .k = inputs[1].data,
                .v = inputs[2].data,
                .mask_f32 = p->has_mask && !p->mask_is_bool ? mask : NULL,
                .mask_bool = p->has_mask && p->mask_is_bool ? mask : NULL,
                .kv_index = prepared->kv_index,
                .mask_offset = prepared->mask_offset,
                .mask_stride_l = p->mask_strides[bn],
                .mask_stride_s = p->mask_strides[bn + 1],
                .y = outputs[0].data,
            },
    };
    char *aligned = (char *)nxe_round_up((int64_t)(uintptr_t)workspace, 64);
    job.scratch = aligned + prepared->transpose_bytes;
    if (!p->transposed_keys) {
        transpose_job transpose = {p->keys, p->head_size, inputs[1].data, (float *)(void *)aligned};
        nxe_parallel_for(pool, prepared->kv_count * p->head_size,
                         nxe_parallel_grain((double)p->keys, ATTENTION_TASK_WORK), transpose_keys,
                         &transpose);
        job.args.k = transpose.kt;
    }
    job.tasks = nxe_f32_attention_tasks(&job.args);
    /* Every slot the workspace holds, whatever the thread count: the pool hands slots out as
     * they are claimed, so a thread that the OS holds back delays a sixteenth of the work, not
     * its whole share; each slot's scratch is used by one claimer at a time. */
    job.slots = job.tasks < ATTENTION_MAX_SLOTS ? job.tasks : ATTENTION_MAX_SLOTS;
    if (job.slots > 0)
        nxe_parallel_for(pool, job.slots, 1, sdpa_slots, &job);
    return NXE_OK;
}

static void sdpa_kernel_name(const void *prepared_in, char *name, size_t size)
{
    const sdpa_prepared *prepared = prepared_in;
    snprintf(name, size, "f32-attention-%s", prepared->kernels->f32_gemm_kernel->name);
}

static const nxe_op_param_info sdpa_inputs[] = {
    {"Q", "Queries [batch..., H, L, E] (any rank >= 2: [..., L, E]).", NXE_MASK_FLOAT, 0, 0},
    {"K",
     "Keys [batch..., Hkv, S, E] ([..., E, S] with transposed_keys); batch dimensions equal Q's, "
     "except that Q's last one may be a "
     "multiple of K's (grouped-query attention: query head h uses key head h / (H / Hkv)).",
     NXE_MASK_FLOAT, 0, 0},
    {"V", "Values [batch..., Hkv, S, Ev], the batch dimensions and S of K.", NXE_MASK_FLOAT, 0, 0},
    {"mask",
     "Broadcasts (numpy, right-aligned) to the scores [batch..., H, L, S]: f32 is added to the "
     "scores (-inf removes a key), bool keeps the keys that are true.",
     NXE_MASK_FLOAT | NXE_MASK(NXE_DTYPE_BOOL), 1, 0},
};
static const nxe_op_param_info sdpa_outputs[] = {
    {"Y",
     "[batch..., H, L, Ev] = softmax(softcap(Q @ K^T * scale) + mask) @ V; a query row with no "
     "key left gives zeros.",
     NXE_MASK_FLOAT, 0, 0},
};
static const nxe_op_attr_info sdpa_attrs[] = {
    {"scale", "Factor on Q @ K^T; 0 means 1 / sqrt(E).", NXE_ATTR_FLOAT, "0.0"},
    {"causal", "1: query l sees only keys j <= l + causal_offset.", NXE_ATTR_INT, "0"},
    {"transposed_keys", "1: K is given transposed, [batch..., Hkv, E, S].", NXE_ATTR_INT, "0"},
    {"causal_offset",
     "Shift of the causal frontier: 0 aligns it top-left (PyTorch is_causal), S - L "
     "bottom-right (queries that follow S - L cached keys).",
     NXE_ATTR_INT, "0"},
    {"softcap", "When > 0, scores become softcap * tanh(score / softcap) before the mask.",
     NXE_ATTR_FLOAT, "0.0"},
};

static const nxe_op_def attention_defs[] = {
    {NXE_INFO(
         "ScaledDotProductAttention",
         "Attention softmax(Q @ K^T * scale + mask) @ V over the last two dimensions, with "
         "optional causal masking, soft-capping and grouped key/value heads. Computed in blocks "
         "of query rows and keys with an online softmax, so no score matrix larger than "
         "one block is stored.",
         sdpa_inputs, sdpa_outputs, sdpa_attrs),
     sizeof(sdpa_params), sdpa_infer, sdpa_run, sdpa_prepare, sdpa_run_prepared, NULL,
     sdpa_kernel_name},
};

const nxe_op_family nxe_ops_attention = {
    attention_defs, (int32_t)(sizeof attention_defs / sizeof attention_defs[0])};
