/* attention.h — reference kernel for scaled dot-product attention, one query row at a time.
 * Softmax is computed online (running maximum and sum), so no score buffer is needed: the
 * output row itself is the accumulator. Portable C11: no allocation, no threads. */
#ifndef NXE_KERNELS_REF_ATTENTION_H
#define NXE_KERNELS_REF_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

/* One query row against `keys` keys:
 *   score[j] = softcap(dot(q, k[j]) * scale) + bias[j]     (softcap(x) = c * tanh(x / c), c > 0)
 *   y = sum_j softmax(score)[j] * v[j]
 * Key j takes part only when j < key_limit and, if given, mask_bool[j * mask_stride] != 0;
 * bias[j] = mask_f32[j * mask_stride] when given, else 0. Keys with score -inf drop out; a row
 * with no remaining key gives y = 0. Element c of key j is k[j * k_stride + c * k_element_stride]
 * (1 for rows of keys, the number of keys for keys transposed), v rows `value_size` floats at
 * v_stride apart; y (value_size floats) must not overlap the inputs. */
typedef struct nxe_f32_attention_row_args {
    int64_t keys;
    int64_t key_limit;
    int64_t head_size;
    int64_t value_size;
    float scale;
    float softcap; /* <= 0: off */
    const float *q;
    const float *k;
    int64_t k_stride;
    int64_t k_element_stride;
    const float *v;
    int64_t v_stride;
    const float *mask_f32;    /* NULL or additive bias */
    const uint8_t *mask_bool; /* NULL or 0/1 flags, 1 = attend */
    int64_t mask_stride;
    float *y;
} nxe_f32_attention_row_args;

void nxe_ref_f32_attention_row(const nxe_f32_attention_row_args *args);

#endif
