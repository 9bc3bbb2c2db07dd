/* attention.h — fused scaled-dot-product attention over the packed f32 GEMM microkernels
 * (kernels/gemm.h): blocks of query rows against blocks of keys with an online softmax
 * (running maximum and sum per row), Q K^T and P V as small products on the microkernel and
 * no score matrix larger than one block. The driver is portable C compiled once per level
 * (kernels/portable/attention.c); kernels/ref/attention is its reference twin. */
#ifndef NXE_KERNELS_ATTENTION_H
#define NXE_KERNELS_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

/* Query rows and keys of one block: multiples of every f32 kernel's MR (6, 8) and NR (16,
 * 48). A block's scores (48 x 144 floats) and its packed keys stay in L2; 144 keys take a
 * 128-long sequence in one block, and measured faster than 96 on longer ones. */
#define NXE_ATTENTION_BLOCK_M 48
#define NXE_ATTENTION_BLOCK_N 144

/* Attention over `heads` matrices (the product of Q's batch dimensions):
 *     y[h] = softmax(softcap(q[h] k[kv(h)]^T * scale) + mask[h]) v[kv(h)]
 * with the semantics of nxe_ref_f32_attention_row for each row (causal frontier, boolean and
 * additive masks, keys with score -inf dropping out, rows with no key left giving zeros).
 * q[h] is [query_len x head_size] at q + h * query_len * head_size, y[h] likewise with
 * value_size; K matrix kv_index[h] is given transposed, [head_size x keys] at
 * k + kv_index[h] * head_size * keys (the layout the product wants; the op transposes keys
 * given as rows once per run); V matrix kv_index[h] is [keys x value_size]. Mask element (l, j) of head h is at
 * mask_offset[h] + l * mask_stride_l + j * mask_stride_s. `kernel` is an f32 kernel with
 * run_rows. */
typedef struct nxe_f32_attention_args {
    const nxe_gemm_kernel *kernel;
    int64_t heads;
    int64_t query_len;
    int64_t keys;
    int64_t head_size;
    int64_t value_size;
    float scale;
    float softcap; /* <= 0: off */
    int32_t causal;
    int64_t causal_offset; /* query l sees keys j <= l + causal_offset */
    const float *q;
    const float *k;
    const float *v;
    const float *mask_f32;      /* NULL or additive */
    const uint8_t *mask_bool;   /* NULL or 0/1 flags, 1 = attend */
    const int64_t *kv_index;    /* [heads] */
    const int64_t *mask_offset; /* [heads], when there is a mask */
    int64_t mask_stride_l;
    int64_t mask_stride_s;
    float *y;
} nxe_f32_attention_args;

/* Tasks: (head, block of NXE_ATTENTION_BLOCK_M query rows) pairs, independent of each other. */
static inline int64_t nxe_f32_attention_tasks(const nxe_f32_attention_args *args)
{
    return args->heads * ((args->query_len + NXE_ATTENTION_BLOCK_M - 1) / NXE_ATTENTION_BLOCK_M);
}

/* Bytes of scratch one caller of the driver needs at a time (64-byte aligned by the caller):
 * a block's scores, its keys packed for the kernel, the task's scaled query rows, the per-row
 * running values and the microkernel's row pointers. */
static inline size_t nxe_f32_attention_scratch_bytes(const nxe_gemm_kernel *kernel,
                                                     int64_t head_size)
{
    const int64_t rows = head_size > NXE_ATTENTION_BLOCK_N ? head_size : NXE_ATTENTION_BLOCK_N;
    const int64_t packed_keys = nxe_round_up(NXE_ATTENTION_BLOCK_N, kernel->nr) * head_size;
    return sizeof(float) * (size_t)(NXE_ATTENTION_BLOCK_M * NXE_ATTENTION_BLOCK_N + packed_keys +
                                    NXE_ATTENTION_BLOCK_M * head_size + 2 * NXE_ATTENTION_BLOCK_M) +
           sizeof(void *) * (size_t)rows + 64;
}

/* Computes tasks [task_begin, task_end) with `scratch` (nxe_f32_attention_scratch_bytes,
 * 64-byte aligned) to itself. Each output row is computed by one task in key order, so results
 * do not depend on how tasks are split. */
typedef void nxe_f32_attention_run_fn(const nxe_f32_attention_args *args, void *scratch,
                                      int64_t task_begin, int64_t task_end);

#endif
