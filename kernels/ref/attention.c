/* attention.c — reference attention row: scores, online softmax and the weighted sum of values
 * in one pass over the keys, in key order, so the result never depends on how rows are split
 * between threads. */
#include "ref/attention.h"

#include <math.h>

void nxe_ref_f32_attention_row(const nxe_f32_attention_row_args *args)
{
    const nxe_f32_attention_row_args p = *args;
    float *y = p.y;
    for (int64_t c = 0; c < p.value_size; c++)
        y[c] = 0.0f;
    float running_max = -INFINITY;
    float running_sum = 0.0f;
    const int64_t last = p.key_limit < p.keys ? p.key_limit : p.keys;
    for (int64_t j = 0; j < last; j++) {
        if (p.mask_bool != NULL && p.mask_bool[j * p.mask_stride] == 0)
            continue;
        const float *k = p.k + j * p.k_stride;
        /* Four partial sums: a single chain of head_size multiply-adds would wait on every
         * add (the scalar level runs this loop for every score). */
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int64_t c = 0;
        for (; c + 4 <= p.head_size; c += 4)
            for (int u = 0; u < 4; u++)
                part[u] += p.q[c + u] * k[(c + u) * p.k_element_stride];
        float dot = (part[0] + part[1]) + (part[2] + part[3]);
        for (; c < p.head_size; c++)
            dot += p.q[c] * k[c * p.k_element_stride];
        float score = dot * p.scale;
        if (p.softcap > 0.0f)
            score = p.softcap * tanhf(score / p.softcap);
        if (p.mask_f32 != NULL)
            score += p.mask_f32[j * p.mask_stride];
        if (score == -INFINITY)
            continue;
        if (score > running_max) {
            /* Rescale what was accumulated against the old maximum (exp(-inf) = 0 at first). */
            const float correction = expf(running_max - score);
            running_sum *= correction;
            for (int64_t c = 0; c < p.value_size; c++)
                y[c] *= correction;
            running_max = score;
        }
        const float weight = expf(score - running_max);
        running_sum += weight;
        const float *v = p.v + j * p.v_stride;
        for (int64_t c = 0; c < p.value_size; c++)
            y[c] += weight * v[c];
    }
    if (running_sum > 0.0f) {
        const float inverse = 1.0f / running_sum;
        for (int64_t c = 0; c < p.value_size; c++)
            y[c] *= inverse;
    } else if (!(running_sum == 0.0f && running_max == -INFINITY)) {
        /* NaN scores or values reached the sum: let the row say so. */
        for (int64_t c = 0; c < p.value_size; c++)
            y[c] = NAN;
    }
}
