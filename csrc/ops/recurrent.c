/* recurrent.c — the recurrent op family with ONNX semantics: RNN, GRU and LSTM layers over a
 * whole sequence (forward, reverse or bidirectional, optional per-batch lengths). Shape rules
 * and lowering only; each (direction, batch) sequence is one call of kernels/ref/recurrent. */
#include <inttypes.h>
#include <string.h>

#include "ops/op_def.h"
#include "ref/recurrent.h"

enum { IN_X, IN_W, IN_R, IN_B, IN_SEQUENCE_LENS, IN_INITIAL_H, IN_INITIAL_C, IN_P };
#define MAX_ACTIVATIONS 6 /* three per direction */

typedef struct rnn_params {
    int32_t cell;
    int32_t directions;
    int32_t reverse_only;
    int32_t batch_major; /* layout 1 */
    int32_t linear_before_reset;
    int32_t input_forget;
    int32_t has_bias;
    int32_t has_lengths;
    int32_t has_h0;
    int32_t has_c0;
    int32_t has_peepholes;
    float clip;
    int64_t steps;
    int64_t batch;
    int64_t input_size;
    int64_t hidden_size;
    nxe_rnn_activation activations[MAX_ACTIVATIONS];
} rnn_params;

static int32_t gate_count(int32_t cell)
{
    return cell == NXE_RNN_CELL_LSTM ? 4 : (cell == NXE_RNN_CELL_GRU ? 3 : 1);
}

static int32_t activation_count(int32_t cell)
{
    return cell == NXE_RNN_CELL_LSTM ? 3 : (cell == NXE_RNN_CELL_GRU ? 2 : 1);
}

static bool present(const nxe_value *inputs, int32_t num_inputs, int32_t index)
{
    return index < num_inputs && inputs[index].dtype != NXE_DTYPE_NONE;
}

typedef struct activation_name {
    const char *name;
    int32_t kind;
    int32_t uses_alpha;
    int32_t uses_beta;
    float alpha; /* ONNX defaults */
    float beta;
} activation_name;

static const activation_name activation_names[] = {
    {"Sigmoid", NXE_RNN_ACT_SIGMOID, 0, 0, 0.0f, 0.0f},
    {"Tanh", NXE_RNN_ACT_TANH, 0, 0, 0.0f, 0.0f},
    {"Relu", NXE_RNN_ACT_RELU, 0, 0, 0.0f, 0.0f},
    {"Affine", NXE_RNN_ACT_AFFINE, 1, 1, 1.0f, 0.0f},
    {"LeakyRelu", NXE_RNN_ACT_LEAKY_RELU, 1, 0, 0.01f, 0.0f},
    {"ThresholdedRelu", NXE_RNN_ACT_THRESHOLDED_RELU, 1, 0, 1.0f, 0.0f},
    {"ScaledTanh", NXE_RNN_ACT_SCALED_TANH, 1, 1, 1.0f, 1.0f},
    {"HardSigmoid", NXE_RNN_ACT_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"Elu", NXE_RNN_ACT_ELU, 1, 0, 1.0f, 0.0f},
    {"Softsign", NXE_RNN_ACT_SOFTSIGN, 0, 0, 0.0f, 0.0f},
    {"Softplus", NXE_RNN_ACT_SOFTPLUS, 0, 0, 0.0f, 0.0f},
};

/* Parses "Sigmoid,Tanh,Tanh" into per-direction activations; alpha and beta values are
 * consumed in order by the activations that take them. */
static nxe_status read_activations(const nxe_node *node, rnn_params *p)
{
    static const int32_t defaults[3] = {NXE_RNN_ACT_SIGMOID, NXE_RNN_ACT_TANH, NXE_RNN_ACT_TANH};
    const char *text;
    float alphas[MAX_ACTIVATIONS], betas[MAX_ACTIVATIONS];
    int32_t num_alphas = 0, num_betas = 0;
    nxe_status status = nxe_node_attr_string(node, "activations", &text);
    if (status == NXE_OK)
        status =
            nxe_node_attr_floats(node, "activation_alpha", alphas, MAX_ACTIVATIONS, &num_alphas);
    if (status == NXE_OK)
        status = nxe_node_attr_floats(node, "activation_beta", betas, MAX_ACTIVATIONS, &num_betas);
    if (status != NXE_OK)
        return status;
    const int32_t per_direction = activation_count(p->cell);
    const int32_t first_default = p->cell == NXE_RNN_CELL_RNN ? 1 : 0; /* RNN: Tanh */
    int32_t count = 0, used_alpha = 0, used_beta = 0;
    const char *cursor = text;
    while (*cursor != '\0') {
        const char *comma = strchr(cursor, ',');
        const size_t length = comma != NULL ? (size_t)(comma - cursor) : strlen(cursor);
        const activation_name *found = NULL;
        for (size_t i = 0; i < sizeof activation_names / sizeof activation_names[0]; i++) {
            if (strlen(activation_names[i].name) == length &&
                strncmp(activation_names[i].name, cursor, length) == 0)
                found = &activation_names[i];
        }
        if (found == NULL)
            return nxe_node_error(node, NXE_ERROR_UNSUPPORTED,
                                  "attribute activations: unknown activation \"%.*s\" in \"%s\"",
                                  (int)(length > 64 ? 64 : length), cursor, text);
        if (count == MAX_ACTIVATIONS)
            return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                                  "attribute activations lists more than %d functions: \"%s\"",
                                  MAX_ACTIVATIONS, text);
        nxe_rnn_activation *act = &p->activations[count++];
        act->kind = found->kind;
        act->alpha =
            found->uses_alpha && used_alpha < num_alphas ? alphas[used_alpha++] : found->alpha;
        act->beta = found->uses_beta && used_beta < num_betas ? betas[used_beta++] : found->beta;
        cursor = comma != NULL ? comma + 1 : cursor + length;
    }
    if (count == 0) {
        for (int32_t d = 0; d < p->directions; d++)
            for (int32_t i = 0; i < per_direction; i++)
                p->activations[d * per_direction + i].kind = defaults[first_default + i];
        return NXE_OK;
    }
    if (count == per_direction && p->directions == 2) {
        memcpy(&p->activations[per_direction], &p->activations[0],
               (size_t)per_direction * sizeof p->activations[0]);
        return NXE_OK;
    }
    if (count != per_direction * p->directions)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute activations \"%s\" names %" PRId32
                              " functions; this layer needs %" PRId32 " per direction",
                              text, count, per_direction);
    return NXE_OK;
}

static nxe_status check_shape(const nxe_node *node, const char *what, const nxe_value *v,
                              int32_t ndim, const int64_t *expected)
{
    bool ok = v->ndim == ndim;
    for (int32_t d = 0; ok && d < ndim; d++)
        ok = v->shape[d] == expected[d];
    if (ok)
        return NXE_OK;
    char got[128], want[128];
    return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH, "%s must have shape %s, got %s", what,
                          nxe_shape_str(ndim, expected, want, sizeof want),
                          nxe_shape_str(v->ndim, v->shape, got, sizeof got));
}

static nxe_status rnn_infer_common(const nxe_node *node, const nxe_value *inputs,
                                   int32_t num_inputs, nxe_value *outputs, int32_t num_outputs,
                                   rnn_params *p, int32_t cell)
{
    p->cell = cell;
    const char *direction;
    int64_t layout = 0, flag = 0;
    double clip = 0.0;
    nxe_status status = nxe_node_attr_string(node, "direction", &direction);
    if (status == NXE_OK)
        status = nxe_node_attr_int(node, "layout", &layout);
    if (status == NXE_OK)
        status = nxe_node_attr_float(node, "clip", &clip);
    if (status != NXE_OK)
        return status;
    if (strcmp(direction, "forward") == 0) {
        p->directions = 1;
    } else if (strcmp(direction, "reverse") == 0) {
        p->directions = 1;
        p->reverse_only = 1;
    } else if (strcmp(direction, "bidirectional") == 0) {
        p->directions = 2;
    } else {
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute direction must be \"forward\", \"reverse\" or "
                              "\"bidirectional\", got \"%s\"",
                              direction);
    }
    if (layout != 0 && layout != 1)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute layout must be 0 ([T, B, ...]) or 1 ([B, T, ...]), got "
                              "%" PRId64,
                              layout);
    if (!(clip >= 0.0) || clip > 3.0e38)
        return nxe_node_error(node, NXE_ERROR_INVALID_ARGUMENT,
                              "attribute clip must be >= 0 and finite, got %g", clip);
    p->batch_major = (int32_t)layout;
    p->clip = (float)clip;
    if (cell == NXE_RNN_CELL_GRU) {
        status = nxe_node_attr_int(node, "linear_before_reset", &flag);
        if (status != NXE_OK)
            return status;
        p->linear_before_reset = flag != 0;
    }
    if (cell == NXE_RNN_CELL_LSTM) {
        status = nxe_node_attr_int(node, "input_forget", &flag);
        if (status != NXE_OK)
            return status;
        p->input_forget = flag != 0;
    }
    status = read_activations(node, p);
    if (status != NXE_OK)
        return status;

    const nxe_value *x = &inputs[IN_X], *w = &inputs[IN_W], *r = &inputs[IN_R];
    if (x->ndim != 3) {
        char xs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "input X must have rank 3 (%s), got %s",
                              layout ? "[batch, seq, input]" : "[seq, batch, input]",
                              nxe_shape_str(x->ndim, x->shape, xs, sizeof xs));
    }
    const int64_t steps = x->shape[layout ? 1 : 0];
    const int64_t batch = x->shape[layout ? 0 : 1];
    const int64_t input_size = x->shape[2];
    const int64_t gates = gate_count(cell);
    if (r->ndim != 3 || r->shape[1] % gates != 0 || r->shape[1] / gates != r->shape[2]) {
        char rs[128];
        return nxe_node_error(node, NXE_ERROR_SHAPE_MISMATCH,
                              "R must have shape [directions, %" PRId64 " * hidden, hidden], got "
                              "%s",
                              gates, nxe_shape_str(r->ndim, r->shape, rs, sizeof rs));
    }
    const int64_t hidden = r->shape[2];
    const int64_t dirs = p->directions;
    const int64_t w_shape[3] = {dirs, gates * hidden, input_size};
    const int64_t r_shape[3] = {dirs, gates * hidden, hidden};
    const int64_t b_shape[2] = {dirs, 2 * gates * hidden};
    const int64_t p_shape[2] = {dirs, 3 * hidden};
    const int64_t state_shape[3] = {layout ? batch : dirs, layout ? dirs : batch, hidden};
    const int64_t lens_shape[1] = {batch};
    status = check_shape(node, "W", w, 3, w_shape);
    if (status == NXE_OK)
        status = check_shape(node, "R", r, 3, r_shape);
    if (status == NXE_OK && present(inputs, num_inputs, IN_B)) {
        status = check_shape(node, "B", &inputs[IN_B], 2, b_shape);
        p->has_bias = 1;
    }
    if (status == NXE_OK && present(inputs, num_inputs, IN_SEQUENCE_LENS)) {
        status = check_shape(node, "sequence_lens", &inputs[IN_SEQUENCE_LENS], 1, lens_shape);
        p->has_lengths = 1;
    }
    if (status == NXE_OK && present(inputs, num_inputs, IN_INITIAL_H)) {
        status = check_shape(node, "initial_h", &inputs[IN_INITIAL_H], 3, state_shape);
        p->has_h0 = 1;
    }
    if (status == NXE_OK && cell == NXE_RNN_CELL_LSTM &&
        present(inputs, num_inputs, IN_INITIAL_C)) {
        status = check_shape(node, "initial_c", &inputs[IN_INITIAL_C], 3, state_shape);
        p->has_c0 = 1;
    }
    if (status == NXE_OK && cell == NXE_RNN_CELL_LSTM && present(inputs, num_inputs, IN_P)) {
        status = check_shape(node, "P", &inputs[IN_P], 2, p_shape);
        p->has_peepholes = 1;
    }
    if (status != NXE_OK)
        return status;
    p->steps = steps;
    p->batch = batch;
    p->input_size = input_size;
    p->hidden_size = hidden;

    nxe_value *y = &outputs[0];
    y->dtype = NXE_DTYPE_F32;
    y->ndim = 4;
    if (layout) {
        const int64_t shape[4] = {batch, steps, dirs, hidden};
        memcpy(y->shape, shape, sizeof shape);
    } else {
        const int64_t shape[4] = {steps, dirs, batch, hidden};
        memcpy(y->shape, shape, sizeof shape);
    }
    for (int32_t o = 1; o < num_outputs; o++) {
        outputs[o].dtype = NXE_DTYPE_F32;
        outputs[o].ndim = 3;
        memcpy(outputs[o].shape, state_shape, sizeof state_shape);
    }
    return NXE_OK;
}

#define RNN_INFER(fn, cell)                                                                        \
    static nxe_status fn(const nxe_node *node, const nxe_value *inputs, int32_t num_inputs,        \
                         nxe_value *outputs, int32_t num_outputs, void *params)                    \
    {                                                                                              \
        return rnn_infer_common(node, inputs, num_inputs, outputs, num_outputs, params, cell);     \
    }
RNN_INFER(rnn_infer, NXE_RNN_CELL_RNN)
RNN_INFER(gru_infer, NXE_RNN_CELL_GRU)
RNN_INFER(lstm_infer, NXE_RNN_CELL_LSTM)
#undef RNN_INFER

typedef struct rnn_job {
    const rnn_params *p;
    const nxe_value *inputs;
    nxe_value *outputs;
} rnn_job;

static const float *f32_data(const nxe_value *inputs, int32_t index, bool present_flag)
{
    return present_flag ? (const float *)inputs[index].data : NULL;
}

/* Sequences [begin, end) of the flattened (direction, batch) range. */
static void rnn_sequences(void *ctx, int64_t begin, int64_t end)
{
    const rnn_job *job = ctx;
    const rnn_params *p = job->p;
    const nxe_value *in = job->inputs;
    const int64_t hs = p->hidden_size, gates = gate_count(p->cell), B = p->batch;
    const int64_t T = p->steps, D = p->directions;
    const int32_t per_direction = activation_count(p->cell);
    for (int64_t s = begin; s < end; s++) {
        const int64_t d = s / B, b = s % B;
        const int64_t state = p->batch_major ? (b * D + d) * hs : (d * B + b) * hs;
        nxe_f32_rnn_args a;
        memset(&a, 0, sizeof a);
        a.cell = p->cell;
        a.reverse = p->reverse_only || d == 1;
        a.linear_before_reset = p->linear_before_reset;
        a.input_forget = p->input_forget;
        a.steps = p->has_lengths ? ((const int32_t *)in[IN_SEQUENCE_LENS].data)[b] : T;
        a.total_steps = T;
        a.input_size = p->input_size;
        a.hidden_size = hs;
        a.clip = p->clip;
        a.f = p->activations[d * per_direction];
        a.g = p->activations[d * per_direction + (per_direction > 1 ? 1 : 0)];
        a.h = p->activations[d * per_direction + (per_direction > 2 ? 2 : 0)];
        a.x = (const float *)in[IN_X].data + (p->batch_major ? b * T : b) * p->input_size;
        a.x_stride = (p->batch_major ? 1 : B) * p->input_size;
        a.w = (const float *)in[IN_W].data + d * gates * hs * p->input_size;
        a.r = (const float *)in[IN_R].data + d * gates * hs * hs;
        if (p->has_bias) {
            a.wb = (const float *)in[IN_B].data + d * 2 * gates * hs;
            a.rb = a.wb + gates * hs;
        }
        if (p->has_peepholes)
            a.p = (const float *)in[IN_P].data + d * 3 * hs;
        a.h0 = p->has_h0 ? f32_data(in, IN_INITIAL_H, true) + state : NULL;
        a.c0 = p->has_c0 ? f32_data(in, IN_INITIAL_C, true) + state : NULL;
        float *y = job->outputs[0].data;
        a.y = y + (p->batch_major ? (b * T * D + d) * hs : (d * B + b) * hs);
        a.y_stride = (p->batch_major ? D : D * B) * hs;
        a.y_h = (float *)job->outputs[1].data + state;
        a.y_c = p->cell == NXE_RNN_CELL_LSTM ? (float *)job->outputs[2].data + state : NULL;
        nxe_ref_f32_rnn_sequence(&a);
    }
}

static nxe_status rnn_run(const void *params, const nxe_value *inputs, int32_t num_inputs,
                          nxe_value *outputs, int32_t num_outputs, nxe_thread_pool *pool)
{
    (void)num_inputs;
    (void)num_outputs;
    const rnn_params *p = params;
    if (p->has_lengths) {
        const int32_t *lengths = inputs[IN_SEQUENCE_LENS].data;
        for (int64_t b = 0; b < p->batch; b++) {
            if (lengths[b] < 0 || lengths[b] > p->steps)
                return nxe_error(
                    NXE_ERROR_RUNTIME,
                    "op '%s': sequence_lens[%" PRId64 "] is %" PRId32 ", outside [0, %" PRId64 "]",
                    p->cell == NXE_RNN_CELL_LSTM ? "LSTM"
                                                 : (p->cell == NXE_RNN_CELL_GRU ? "GRU" : "RNN"),
                    b, lengths[b], p->steps);
        }
    }
    rnn_job job = {p, inputs, outputs};
    const int64_t gates = gate_count(p->cell);
    const double work = (double)p->steps * (double)gates * (double)p->hidden_size *
                        (double)(p->input_size + p->hidden_size);
    if (p->batch > 0)
        nxe_parallel_for(pool, p->directions * p->batch, nxe_parallel_grain(work, 65536.0),
                         rnn_sequences, &job);
    return NXE_OK;
}

/* ---- Schemas ------------------------------------------------------------------------------ */

#define F32 NXE_MASK_FLOAT

#define X_DOC "[seq, batch, input] (layout 0) or [batch, seq, input] (layout 1)."
#define LENS_DOC                                                                                   \
    "i32 [batch]: valid steps of each sequence (0..seq); later steps of Y are 0 and Y_h holds "    \
    "the state after the last valid step. A value out of range fails the run."
#define STATE_DOC                                                                                  \
    "[directions, batch, hidden] (layout 0) or [batch, directions, hidden]; absent: 0."

static const nxe_op_param_info rnn_inputs[] = {
    {"X", X_DOC, F32, 0, 0},
    {"W", "[directions, hidden, input].", F32, 0, 0},
    {"R", "[directions, hidden, hidden].", F32, 0, 0},
    {"B", "[directions, 2 * hidden]: Wb then Rb; absent: 0.", F32, 1, 0},
    {"sequence_lens", LENS_DOC, NXE_MASK(NXE_DTYPE_I32), 1, 0},
    {"initial_h", STATE_DOC, F32, 1, 0},
};
static const nxe_op_param_info gru_inputs[] = {
    {"X", X_DOC, F32, 0, 0},
    {"W", "[directions, 3 * hidden, input], gates z, r, h.", F32, 0, 0},
    {"R", "[directions, 3 * hidden, hidden], gates z, r, h.", F32, 0, 0},
    {"B", "[directions, 6 * hidden]: Wb[zrh] then Rb[zrh]; absent: 0.", F32, 1, 0},
    {"sequence_lens", LENS_DOC, NXE_MASK(NXE_DTYPE_I32), 1, 0},
    {"initial_h", STATE_DOC, F32, 1, 0},
};
static const nxe_op_param_info lstm_inputs[] = {
    {"X", X_DOC, F32, 0, 0},
    {"W", "[directions, 4 * hidden, input], gates i, o, f, c.", F32, 0, 0},
    {"R", "[directions, 4 * hidden, hidden], gates i, o, f, c.", F32, 0, 0},
    {"B", "[directions, 8 * hidden]: Wb[iofc] then Rb[iofc]; absent: 0.", F32, 1, 0},
    {"sequence_lens", LENS_DOC, NXE_MASK(NXE_DTYPE_I32), 1, 0},
    {"initial_h", STATE_DOC, F32, 1, 0},
    {"initial_c", STATE_DOC, F32, 1, 0},
    {"P", "Peepholes [directions, 3 * hidden], gates i, o, f; absent: 0.", F32, 1, 0},
};

#define Y_DOC                                                                                      \
    "Every hidden state: [seq, directions, batch, hidden] (layout 0) or [batch, seq, "             \
    "directions, hidden] (layout 1)."
static const nxe_op_param_info rnn_outputs[] = {
    {"Y", Y_DOC, F32, 0, 0},
    {"Y_h", "The last hidden state, shaped like initial_h.", F32, 0, 0},
};
static const nxe_op_param_info lstm_outputs[] = {
    {"Y", Y_DOC, F32, 0, 0},
    {"Y_h", "The last hidden state, shaped like initial_h.", F32, 0, 0},
    {"Y_c", "The last cell state, shaped like initial_c.", F32, 0, 0},
};

#define COMMON_ATTRS(default_activations)                                                          \
    {"direction", "\"forward\", \"reverse\" or \"bidirectional\" (directions = 2).",               \
     NXE_ATTR_STRING, "\"forward\""},                                                              \
        {"layout", "0: sequence-major tensors; 1: batch-major.", NXE_ATTR_INT, "0"},               \
        {"clip", "When > 0, gate inputs are clamped to [-clip, clip] before activation.",          \
         NXE_ATTR_FLOAT, "0.0"},                                                                   \
        {"activations",                                                                            \
         "Comma-separated ONNX activation names (Sigmoid, Tanh, Relu, Affine, LeakyRelu, "         \
         "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus), per direction "      \
         "(one set is reused for both); empty: " default_activations ".",                          \
         NXE_ATTR_STRING, "\"\""},                                                                 \
        {"activation_alpha",                                                                       \
         "Alpha values, consumed in order by the listed activations that take one (ONNX "          \
         "defaults otherwise).",                                                                   \
         NXE_ATTR_FLOATS, "[]"},                                                                   \
        {"activation_beta", "Beta values, consumed likewise.", NXE_ATTR_FLOATS, "[]"}

static const nxe_op_attr_info rnn_attrs[] = {COMMON_ATTRS("Tanh")};
static const nxe_op_attr_info gru_attrs[] = {
    COMMON_ATTRS("Sigmoid,Tanh"),
    {"linear_before_reset",
     "1: apply the reset gate after the recurrent product, h = g(Wh x + r * (Rh h + Rbh) + "
     "Wbh); 0: h = g(Wh x + Rh (r * h) + Rbh + Wbh).",
     NXE_ATTR_INT, "0"},
};
static const nxe_op_attr_info lstm_attrs[] = {
    COMMON_ATTRS("Sigmoid,Tanh,Tanh"),
    {"input_forget", "1: couple the forget gate to the input gate, f = 1 - i.", NXE_ATTR_INT, "0"},
};

static const nxe_op_def recurrent_defs[] = {
    {NXE_INFO("RNN",
              "Simple recurrent layer (ONNX RNN): h_t = f(W x_t + R h_{t-1} + Wb + Rb) over a "
              "sequence; the state is kept in the outputs, nothing else is allocated.",
              rnn_inputs, rnn_outputs, rnn_attrs),
     sizeof(rnn_params), rnn_infer, rnn_run},
    {NXE_INFO("GRU",
              "Gated recurrent unit layer (ONNX GRU): update gate z, reset gate r, candidate h, "
              "h_t = (1 - z) * candidate + z * h_{t-1}.",
              gru_inputs, rnn_outputs, gru_attrs),
     sizeof(rnn_params), gru_infer, rnn_run},
    {NXE_INFO("LSTM",
              "Long short-term memory layer (ONNX LSTM) with optional peepholes: gates i, o, f "
              "and cell candidate c, c_t = f * c_{t-1} + i * g(c), h_t = o * h(c_t).",
              lstm_inputs, lstm_outputs, lstm_attrs),
     sizeof(rnn_params), lstm_infer, rnn_run},
};

const nxe_op_family nxe_ops_recurrent = {
    recurrent_defs, (int32_t)(sizeof recurrent_defs / sizeof recurrent_defs[0])};
