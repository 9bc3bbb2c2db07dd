/* recurrent.c — reference RNN/GRU/LSTM sequences. Each hidden unit is computed from the whole
 * previous hidden state, which sits in the previous step's output slot, so the new state can
 * be written straight into the current slot. */
#include "ref/recurrent.h"

#include <math.h>

float nxe_ref_rnn_activate(const nxe_rnn_activation *act, float x)
{
    switch (act->kind) {
    case NXE_RNN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case NXE_RNN_ACT_TANH: return tanhf(x);
    case NXE_RNN_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case NXE_RNN_ACT_AFFINE: return act->alpha * x + act->beta;
    case NXE_RNN_ACT_LEAKY_RELU: return x >= 0.0f ? x : act->alpha * x;
    case NXE_RNN_ACT_THRESHOLDED_RELU: return x > act->alpha ? x : 0.0f;
    case NXE_RNN_ACT_SCALED_TANH: return act->alpha * tanhf(act->beta * x);
    case NXE_RNN_ACT_HARD_SIGMOID: {
        const float v = act->alpha * x + act->beta;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    case NXE_RNN_ACT_ELU: return x >= 0.0f ? x : act->alpha * (expf(x) - 1.0f);
    case NXE_RNN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case NXE_RNN_ACT_SOFTPLUS: return log1pf(expf(x));
    default: return x;
    }
}

static float dot(const float *a, const float *b, int64_t n)
{
    float acc = 0.0f;
    for (int64_t i = 0; i < n; i++)
        acc += a[i] * b[i];
    return acc;
}

/* Gate row `row`: W x + R h (+ biases); h == NULL means a zero state. */
static float gate_input(const nxe_f32_rnn_args *p, int64_t row, const float *x, const float *h)
{
    float v = dot(p->w + row * p->input_size, x, p->input_size);
    if (h != NULL)
        v += dot(p->r + row * p->hidden_size, h, p->hidden_size);
    if (p->wb != NULL)
        v += p->wb[row] + p->rb[row];
    return v;
}

static float clipped(const nxe_f32_rnn_args *p, float v)
{
    if (p->clip > 0.0f)
        v = v < -p->clip ? -p->clip : (v > p->clip ? p->clip : v);
    return v;
}

static void gru_step(const nxe_f32_rnn_args *p, const float *x, const float *h_prev, float *h_out)
{
    const int64_t hs = p->hidden_size;
    float *reset = p->y_h; /* free until the sequence ends */
    for (int64_t j = 0; j < hs; j++)
        reset[j] = nxe_ref_rnn_activate(&p->f, clipped(p, gate_input(p, hs + j, x, h_prev)));
    for (int64_t j = 0; j < hs; j++) {
        const float z = nxe_ref_rnn_activate(&p->f, clipped(p, gate_input(p, j, x, h_prev)));
        const int64_t row = 2 * hs + j;
        float candidate = dot(p->w + row * p->input_size, x, p->input_size);
        const float *r_row = p->r + row * hs;
        const float wb = p->wb != NULL ? p->wb[row] : 0.0f;
        const float rb = p->wb != NULL ? p->rb[row] : 0.0f;
        if (p->linear_before_reset) {
            const float recurrent = h_prev != NULL ? dot(r_row, h_prev, hs) : 0.0f;
            candidate += reset[j] * (recurrent + rb) + wb;
        } else {
            float recurrent = 0.0f;
            for (int64_t k = 0; h_prev != NULL && k < hs; k++)
                recurrent += r_row[k] * (reset[k] * h_prev[k]);
            candidate += recurrent + rb + wb;
        }
        candidate = nxe_ref_rnn_activate(&p->g, clipped(p, candidate));
        const float previous = h_prev != NULL ? h_prev[j] : 0.0f;
        h_out[j] = (1.0f - z) * candidate + z * previous;
    }
}

static void lstm_step(const nxe_f32_rnn_args *p, const float *x, const float *h_prev, float *h_out)
{
    const int64_t hs = p->hidden_size;
    for (int64_t j = 0; j < hs; j++) {
        const float c_prev = p->y_c[j];
        float i_in = gate_input(p, j, x, h_prev);
        float o_in = gate_input(p, hs + j, x, h_prev);
        float f_in = gate_input(p, 2 * hs + j, x, h_prev);
        const float c_in = gate_input(p, 3 * hs + j, x, h_prev);
        if (p->p != NULL) {
            i_in += p->p[j] * c_prev;
            f_in += p->p[2 * hs + j] * c_prev;
        }
        const float i = nxe_ref_rnn_activate(&p->f, clipped(p, i_in));
        const float f = p->input_forget ? 1.0f - i : nxe_ref_rnn_activate(&p->f, clipped(p, f_in));
        const float candidate = nxe_ref_rnn_activate(&p->g, clipped(p, c_in));
        const float c = f * c_prev + i * candidate;
        if (p->p != NULL)
            o_in += p->p[hs + j] * c;
        const float o = nxe_ref_rnn_activate(&p->f, clipped(p, o_in));
        p->y_c[j] = c;
        h_out[j] = o * nxe_ref_rnn_activate(&p->h, c);
    }
}

void nxe_ref_f32_rnn_sequence(const nxe_f32_rnn_args *args)
{
    const nxe_f32_rnn_args *p = args;
    const int64_t hs = p->hidden_size;
    if (p->cell == NXE_RNN_CELL_LSTM) {
        for (int64_t j = 0; j < hs; j++)
            p->y_c[j] = p->c0 != NULL ? p->c0[j] : 0.0f;
    }
    const float *h_prev = p->h0;
    for (int64_t n = 0; n < p->steps; n++) {
        const int64_t t = p->reverse ? p->steps - 1 - n : n;
        const float *x = p->x + t * p->x_stride;
        float *h_out = p->y + t * p->y_stride;
        switch (p->cell) {
        case NXE_RNN_CELL_GRU: gru_step(p, x, h_prev, h_out); break;
        case NXE_RNN_CELL_LSTM: lstm_step(p, x, h_prev, h_out); break;
        default:
            for (int64_t j = 0; j < hs; j++)
                h_out[j] = nxe_ref_rnn_activate(&p->f, clipped(p, gate_input(p, j, x, h_prev)));
            break;
        }
        h_prev = h_out;
    }
    for (int64_t t = p->steps; t < p->total_steps; t++) {
        float *slot = p->y + t * p->y_stride;
        for (int64_t j = 0; j < hs; j++)
            slot[j] = 0.0f;
    }
    for (int64_t j = 0; j < hs; j++)
        p->y_h[j] = h_prev != NULL ? h_prev[j] : 0.0f;
}
