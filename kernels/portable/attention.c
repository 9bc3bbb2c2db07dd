/* attention.c — the fused attention driver (contract: kernels/attention.h). A task takes one
 * head's block of query rows, scaled once, through the keys a block at a time: the block's
 * scores come from the microkernel (the query rows read where they are, the keys packed into B
 * panels), become probabilities under a running maximum and sum per row, and the microkernel
 * adds probabilities times values (rows of V read in place) into the output rows, which hold
 * the running numerators; the finished rows are divided by their sums. Portable C built once
 * per ISA level (see portable.h); the loops over a block's scores vectorize. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "attention.h"
#include "portable/portable.h"
#include "portable/vmath.h"

/* A task's scratch, carved from what the caller gives. */
typedef struct attention_scratch {
    float *scores;      /* [BLOCK_M x BLOCK_N], rows BLOCK_N apart: scores, then weights */
    float *packed_keys; /* the block's keys in B panels */
    float *q;           /* the task's query rows times the scale */
    float *row_max;
    float *row_sum;
    const void **b_rows; /* the microkernel's B row pointers */
} attention_scratch;

static attention_scratch carve(const nxe_f32_attention_args *args, void *scratch)
{
    float *base = scratch;
    attention_scratch s;
    s.scores = base;
    s.packed_keys = s.scores + NXE_ATTENTION_BLOCK_M * NXE_ATTENTION_BLOCK_N;
    s.q = s.packed_keys + nxe_round_up(NXE_ATTENTION_BLOCK_N, args->kernel->nr) * args->head_size;
    s.row_max = s.q + NXE_ATTENTION_BLOCK_M * args->head_size;
    s.row_sum = s.row_max + NXE_ATTENTION_BLOCK_M;
    s.b_rows = (const void **)nxe_round_up((int64_t)(uintptr_t)(s.row_sum + NXE_ATTENTION_BLOCK_M),
                                           (int64_t)sizeof(void *));
    return s;
}

/* The block's keys [j0, j0 + n) into panels of the kernel's NR keys, element c of each key in
 * row c: rows of K^T copied, so that the microkernel reads B rows consecutive in memory (in
 * place they would be `keys` floats apart, and a stride of a few KiB maps them all to the
 * same L1 sets). */
static void pack_keys(const nxe_f32_attention_args *args, const float *k, int64_t j0, int64_t n,
                      float *packed)
{
    const int64_t e = args->head_size, width = args->kernel->nr;
    for (int64_t j = 0; j < n; j += width) {
        const int64_t w = n - j < width ? n - j : width;
        float *panel = packed + j * e;
        for (int64_t c = 0; c < e; c++)
            memcpy(panel + c * width, k + c * args->keys + j0 + j, sizeof(float) * (size_t)w);
    }
}

/* scores[0..m) x [0..n) = the scaled query rows times the block's keys starting at key j0. */
static void block_scores(const nxe_f32_attention_args *args, const attention_scratch *s,
                         const float *k, int64_t m, int64_t j0, int64_t n)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const int64_t e = args->head_size;
    pack_keys(args, k, j0, n, s->packed_keys);
    for (int64_t j = 0; j < n; j += kernel->nr) {
        const int32_t nr = (int32_t)(n - j < kernel->nr ? n - j : kernel->nr);
        const float *panel = s->packed_keys + j * e;
        for (int64_t c = 0; c < e; c++)
            s->b_rows[c] = panel + c * kernel->nr;
        for (int64_t r = 0; r < m; r += kernel->mr) {
            const int32_t mr = (int32_t)(m - r < kernel->mr ? m - r : kernel->mr);
            kernel->run_rows(mr, nr, e, s->q + r * e, e, s->b_rows,
                             s->scores + r * NXE_ATTENTION_BLOCK_N + j, NXE_ATTENTION_BLOCK_N, 0);
        }
    }
}

/* Turns row `row` (query l) of the block's n scores into weights against the row's running
 * maximum, rescaling its running sum and output row y; returns whether any weight may be
 * nonzero. */
static bool row_weights(const nxe_f32_attention_args *args, const attention_scratch *s, int64_t h,
                        int64_t row, int64_t l, int64_t j0, int64_t n, float *y)
{
    float *x = s->scores + row * NXE_ATTENTION_BLOCK_N;
    if (args->softcap > 0.0f) {
        const float cap = args->softcap, inverse = 1.0f / args->softcap;
        for (int64_t j = 0; j < n; j++)
            x[j] = cap * nxe_vm_tanh(x[j] * inverse);
    }
    const int64_t mask_at =
        args->mask_f32 || args->mask_bool
            ? args->mask_offset[h] + l * args->mask_stride_l + j0 * args->mask_stride_s
            : 0;
    const int64_t ms = args->mask_stride_s;
    if (args->mask_f32) {
        const float *mask = args->mask_f32 + mask_at;
        if (ms == 1) {
            for (int64_t j = 0; j < n; j++)
                x[j] += mask[j];
        } else {
            for (int64_t j = 0; j < n; j++)
                x[j] += mask[j * ms];
        }
    }
    if (args->mask_bool) {
        const uint8_t *mask = args->mask_bool + mask_at;
        for (int64_t j = 0; j < n; j++)
            x[j] = mask[j * ms] ? x[j] : -INFINITY;
    }
    if (args->causal) {
        const int64_t frontier = l + args->causal_offset + 1 - j0;
        for (int64_t j = frontier < 0 ? 0 : frontier; j < n; j++)
            x[j] = -INFINITY;
    }
    const float block_max = nxe_vm_max_of(x, n);
    const float old_max = s->row_max[row];
    const float new_max = block_max > old_max ? block_max : old_max;
    if (new_max == -INFINITY) {
        /* No key so far: removed keys weigh 0, a NaN score stays to reach the sum. */
        for (int64_t j = 0; j < n; j++)
            x[j] = x[j] == -INFINITY ? 0.0f : x[j];
        const float sum = nxe_vm_sum_of(x, n);
        s->row_sum[row] += sum;
        return sum != 0.0f;
    }
    for (int64_t j = 0; j < n; j++)
        x[j] = x[j] == -INFINITY ? 0.0f : nxe_vm_exp(x[j] - new_max);
    const float sum = nxe_vm_sum_of(x, n);
    if (new_max != old_max) {
        /* exp(-inf) = 0: nothing was accumulated against an infinite maximum. */
        const float correction = expf(old_max - new_max);
        for (int64_t c = 0; c < args->value_size; c++)
            y[c] *= correction;
        s->row_sum[row] *= correction;
        s->row_max[row] = new_max;
    }
    s->row_sum[row] += sum;
    return true;
}

/* y rows [0..m) += weights times the block's values starting at key j0. */
static void block_values(const nxe_f32_attention_args *args, const attention_scratch *s,
                         const float *v, int64_t m, int64_t j0, int64_t n, float *y)
{
    const nxe_gemm_kernel *kernel = args->kernel;
    const int64_t ev = args->value_size;
    for (int64_t c0 = 0; c0 < ev; c0 += kernel->nr) {
        const int32_t nr = (int32_t)(ev - c0 < kernel->nr ? ev - c0 : kernel->nr);
        for (int64_t j = 0; j < n; j++)
            s->b_rows[j] = v + (j0 + j) * ev + c0;
        for (int64_t r = 0; r < m; r += kernel->mr) {
            const int32_t mr = (int32_t)(m - r < kernel->mr ? m - r : kernel->mr);
            kernel->run_rows(mr, nr, n, s->scores + r * NXE_ATTENTION_BLOCK_N,
                             NXE_ATTENTION_BLOCK_N, s->b_rows, y + r * ev + c0, ev, 1);
        }
    }
}

static void run_task(const nxe_f32_attention_args *args, const attention_scratch *s, int64_t task)
{
    const int64_t blocks = (args->query_len + NXE_ATTENTION_BLOCK_M - 1) / NXE_ATTENTION_BLOCK_M;
    const int64_t h = task / blocks, l0 = task % blocks * NXE_ATTENTION_BLOCK_M;
    const int64_t m =
        args->query_len - l0 < NXE_ATTENTION_BLOCK_M ? args->query_len - l0 : NXE_ATTENTION_BLOCK_M;
    const int64_t e = args->head_size, ev = args->value_size;
    const float *q = args->q + (h * args->query_len + l0) * e;
    const float *k = args->k + args->kv_index[h] * args->keys * e;
    const float *v = args->v + args->kv_index[h] * args->keys * ev;
    float *y = args->y + (h * args->query_len + l0) * ev;
    for (int64_t i = 0; i < m * e; i++)
        s->q[i] = q[i] * args->scale;
    memset(y, 0, sizeof(float) * (size_t)(m * ev));
    for (int64_t i = 0; i < m; i++) {
        s->row_max[i] = -INFINITY;
        s->row_sum[i] = 0.0f;
    }
    int64_t key_end = args->keys;
    if (args->causal) {
        /* Keys past the last row's frontier are removed for every row of the block. */
        const int64_t frontier = l0 + m + args->causal_offset;
        key_end = frontier < 0 ? 0 : frontier < key_end ? frontier : key_end;
    }
    for (int64_t j0 = 0; j0 < key_end; j0 += NXE_ATTENTION_BLOCK_N) {
        const int64_t n =
            key_end - j0 < NXE_ATTENTION_BLOCK_N ? key_end - j0 : NXE_ATTENTION_BLOCK_N;
        block_scores(args, s, k, m, j0, n);
        bool any = false;
        for (int64_t i = 0; i < m; i++)
            any |= row_weights(args, s, h, i, l0 + i, j0, n, y + i * ev);
        if (any)
            block_values(args, s, v, m, j0, n, y);
    }
    for (int64_t i = 0; i < m; i++) {
        float *row = y + i * ev;
        const float sum = s->row_sum[i];
        /* A row with no key left is zeros; NaN scores or values reaching the sum, NaN. */
        const float factor = sum > 0.0f ? 1.0f / sum : sum == 0.0f ? 0.0f : NAN;
        for (int64_t c = 0; c < ev; c++)
            row[c] = sum == 0.0f ? 0.0f : row[c] * factor;
    }
}

void NXE_ISA_NAME(nxe_f32_attention_run)(const nxe_f32_attention_args *args, void *scratch,
                                         int64_t task_begin, int64_t task_end)
{
    const attention_scratch s = carve(args, scratch);
    for (int64_t task = task_begin; task < task_end; task++)
        run_task(args, &s, task);
}
