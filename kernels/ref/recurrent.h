/* recurrent.h — reference kernels for the recurrent op family: one direction of one batch
 * sequence of an RNN, GRU or LSTM layer (ONNX gate equations). The recurrent state lives in
 * the caller's output buffers, so no scratch memory is needed. Portable C11, no allocation. */
#ifndef NXE_KERNELS_REF_RECURRENT_H
#define NXE_KERNELS_REF_RECURRENT_H

#include <stddef.h>
#include <stdint.h>

enum nxe_rnn_cell { NXE_RNN_CELL_RNN = 0, NXE_RNN_CELL_GRU = 1, NXE_RNN_CELL_LSTM = 2 };

/* The ONNX recurrent activation functions, with the alpha/beta each one takes. */
enum nxe_rnn_activation_kind {
    NXE_RNN_ACT_SIGMOID = 0,
    NXE_RNN_ACT_TANH,
    NXE_RNN_ACT_RELU,
    NXE_RNN_ACT_AFFINE,           /* alpha * x + beta */
    NXE_RNN_ACT_LEAKY_RELU,       /* x >= 0 ? x : alpha * x */
    NXE_RNN_ACT_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
    NXE_RNN_ACT_SCALED_TANH,      /* alpha * tanh(beta * x) */
    NXE_RNN_ACT_HARD_SIGMOID,     /* clamp(alpha * x + beta, 0, 1) */
    NXE_RNN_ACT_ELU,              /* x >= 0 ? x : alpha * (exp(x) - 1) */
    NXE_RNN_ACT_SOFTSIGN,         /* x / (1 + |x|) */
    NXE_RNN_ACT_SOFTPLUS          /* log(1 + exp(x)) */
};

typedef struct nxe_rnn_activation {
    int32_t kind; /* enum nxe_rnn_activation_kind */
    float alpha;
    float beta;
} nxe_rnn_activation;

float nxe_ref_rnn_activate(const nxe_rnn_activation *act, float x);

/* One sequence. Gate rows of w [G*H, I] and r [G*H, H] follow ONNX: RNN (i), GRU (z, r, h),
 * LSTM (i, o, f, c). wb, rb ([G*H]) and p (LSTM peepholes [3H]: i, o, f) may be NULL (zeros);
 * h0 / c0 ([H]) may be NULL (zeros). Steps run forward or reversed over the first `steps` of
 * `total_steps` time slots; slots from `steps` on are zeroed. Step t reads x + t * x_stride and
 * writes its hidden state to y + t * y_stride, which is also where the next step reads it.
 * y_h receives the last hidden state (the GRU also uses it as room for its reset gate while
 * running); y_c (LSTM) holds the cell state, updated in place. Activations: f, g, h as in
 * ONNX (RNN uses f; GRU f, g; LSTM f, g, h). clip > 0 clamps gate inputs to [-clip, clip]. */
typedef struct nxe_f32_rnn_args {
    int32_t cell;
    int32_t reverse;
    int32_t linear_before_reset; /* GRU */
    int32_t input_forget;        /* LSTM: f = 1 - i */
    int64_t steps;
    int64_t total_steps;
    int64_t input_size;
    int64_t hidden_size;
    float clip;
    nxe_rnn_activation f;
    nxe_rnn_activation g;
    nxe_rnn_activation h;
    const float *x;
    int64_t x_stride;
    const float *w;
    const float *r;
    const float *wb;
    const float *rb;
    const float *p;
    const float *h0;
    const float *c0;
    float *y;
    int64_t y_stride;
    float *y_h;
    float *y_c;
} nxe_f32_rnn_args;

void nxe_ref_f32_rnn_sequence(const nxe_f32_rnn_args *args);

#endif
