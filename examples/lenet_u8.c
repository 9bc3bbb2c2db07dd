/* lenet_u8.c — a LeNet built on asymmetric-u8 tensors the way the modelled runtime's LeNet
 * sample builds it: a u8 28x28x1 input with scale 1/256, Conv2d(20 5x5) -> MaxPool 2x2 ->
 * Conv2d(50 5x5) -> MaxPool 2x2 -> FullyConnected 500 -> Relu -> FullyConnected 10 ->
 * Softmax, with u8 weights (per-tensor scale and zero point), int32 biases whose scale is
 * input scale * weight scale, and an f32 result. The ordinary ops run on the integer kernels:
 * the compile log (printed) says how each was lowered. The weights are random (a fixed seed).
 *
 * The graph is run compiled, then from a compiled binary loaded back; the two must agree.
 * With a directory argument, the input, weights, results and every tensor's quantization are
 * written there (NAME.bin raw files, params.txt lines "name dtype scale zero_point shape...")
 * for a reference to check them against.
 *
 * Build: cc -std=c11 lenet_u8.c $(python -m nxe config --cflags --libs) -lm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        nxe_status status_ = (call);                                                               \
        if (status_ != NXE_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nxe_status_name(status_),       \
                    nxe_last_error());                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint32_t rng_state = 20260418u;

static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static const char *dump_dir;
static FILE *params_file;

/* Writes a tensor's bytes and a params.txt line describing it. */
static void dump(const char *name, const char *dtype, float scale, int32_t zero_point,
                 const void *data, size_t bytes, int32_t ndim, const int64_t *shape)
{
    if (!dump_dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dump_dir, name);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(data, 1, bytes, file) != bytes || fclose(file) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fprintf(params_file, "%s %s %.9g %d", name, dtype, (double)scale, zero_point);
    for (int32_t d = 0; d < ndim; d++)
        fprintf(params_file, " %lld", (long long)shape[d]);
    fprintf(params_file, "\n");
}

static nxe_tensor *add_tensor(nxe_graph *graph, const char *name, int32_t dtype, int32_t kind,
                              int32_t ndim, const int64_t *shape)
{
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = name;
    spec.dtype = dtype;
    spec.kind = kind;
    spec.ndim = ndim;
    spec.shape = shape;
    nxe_tensor *tensor = NULL;
    CHECK(nxe_graph_add_tensor(graph, &spec, &tensor));
    return tensor;
}

/* A u8 activation tensor with its quantization. */
static nxe_tensor *activation(nxe_graph *graph, const char *name, int32_t kind, float scale,
                              int32_t zero_point)
{
    nxe_tensor *tensor = add_tensor(graph, name, NXE_DTYPE_U8, kind, -1, NULL);
    CHECK(nxe_tensor_set_quant_asymmetric(tensor, scale, zero_point));
    return tensor;
}

static void add_op(nxe_graph *graph, const char *type, const char *name, nxe_tensor **inputs,
                   int32_t num_inputs, nxe_tensor *output, nxe_op **out)
{
    nxe_op *op = NULL;
    CHECK(nxe_graph_add_op(graph, type, name, &op));
    CHECK(nxe_op_bind_inputs(op, inputs, num_inputs));
    CHECK(nxe_op_bind_outputs(op, &output, 1));
    if (out)
        *out = op;
}

/* A layer: its weights' shape and its result's quantization (calibrated once on the
 * ranges this sample's image reaches). */
typedef struct layer {
    const char *name;
    int32_t ndim;
    int64_t shape[4];
    float out_scale; /* of its result */
    int32_t out_zero_point;
} layer;

/* A layer's random u8 weights [out, fan_in...] with per-tensor quantization and its int32
 * bias in units of in_scale * w_scale. */
static void weights(nxe_graph *graph, const layer *l, float in_scale, nxe_tensor **w_out,
                    nxe_tensor **b_out)
{
    int64_t count = 1;
    for (int32_t d = 0; d < l->ndim; d++)
        count *= l->shape[d];
    int64_t fan_in = count / l->shape[0];
    uint8_t *w = malloc((size_t)count);
    int32_t *b = malloc(sizeof(int32_t) * (size_t)l->shape[0]);
    if (!w || !b)
        exit(1);
    for (int64_t i = 0; i < count; i++)
        w[i] = (uint8_t)(next_random() >> 24);
    for (int64_t o = 0; o < l->shape[0]; o++)
        b[o] = (int32_t)(next_random() % 6000) - 3000;
    float w_scale = (float)(1.0 / (64.0 * sqrt((double)fan_in)));
    int32_t w_zero = 124 + (int32_t)(next_random() % 8);
    float b_scale = in_scale * w_scale;
    char name[64];
    snprintf(name, sizeof name, "%s.w", l->name);
    *w_out = add_tensor(graph, name, NXE_DTYPE_U8, NXE_TENSOR_CONSTANT, l->ndim, l->shape);
    CHECK(nxe_tensor_set_data(*w_out, w, (size_t)count));
    CHECK(nxe_tensor_set_quant_asymmetric(*w_out, w_scale, w_zero));
    dump(name, "u8", w_scale, w_zero, w, (size_t)count, l->ndim, l->shape);
    snprintf(name, sizeof name, "%s.b", l->name);
    *b_out = add_tensor(graph, name, NXE_DTYPE_I32, NXE_TENSOR_CONSTANT, 1, l->shape);
    CHECK(nxe_tensor_set_data(*b_out, b, sizeof(int32_t) * (size_t)l->shape[0]));
    CHECK(nxe_tensor_set_quant_asymmetric(*b_out, b_scale, 0));
    dump(name, "i32", b_scale, 0, b, sizeof(int32_t) * (size_t)l->shape[0], 1, l->shape);
    free(w);
    free(b);
}

static void print_log(void *user_data, int32_t level, const char *message)
{
    (void)user_data;
    (void)level;
    printf("log: %s\n", message);
}

/* One run: image in, u8 logits and f32 probabilities out. */
static void run(nxe_executable *exe, uint8_t *image, uint8_t *logits, float *probs)
{
    nxe_tensor_desc input = {image, 28 * 28, 4, NXE_DL_UINT, 8, 0, {1, 1, 28, 28}};
    nxe_tensor_desc outputs[2];
    for (int32_t i = 0; i < 2; i++) {
        const char *name = NULL;
        CHECK(nxe_executable_output_desc(exe, i, &outputs[i], &name));
        outputs[i].data = strcmp(name, "fc2") == 0 ? (void *)logits : (void *)probs;
    }
    CHECK(nxe_executable_run(exe, &input, 1, outputs, 2));
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        dump_dir = argv[1];
        char path[4096];
        snprintf(path, sizeof path, "%s/params.txt", dump_dir);
        params_file = fopen(path, "w");
        if (!params_file) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
    }
    CHECK(nxe_set_log_callback(print_log, NULL, NXE_LOG_INFO));
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    CHECK(nxe_context_create(&ctx));
    CHECK(nxe_graph_create(ctx, &graph));

    const float in_scale = 1.0f / 256.0f;
    const int64_t in_shape[4] = {1, 1, 28, 28};
    nxe_tensor *x = add_tensor(graph, "input", NXE_DTYPE_U8, NXE_TENSOR_INPUT, 4, in_shape);
    CHECK(nxe_tensor_set_quant_asymmetric(x, in_scale, 0));

    const layer layers[4] = {
        {"conv1", 4, {20, 1, 5, 5}, 0.017f, 135},
        {"conv2", 4, {50, 20, 5, 5}, 0.016f, 116},
        {"fc1", 2, {500, 800}, 0.022f, 152},
        {"fc2", 2, {10, 500}, 0.006f, 193},
    };
    const int64_t pool_attr[2] = {2, 2};
    const int64_t flat_shape[2] = {1, 800};
    float scale = in_scale;
    nxe_op *op = NULL;
    for (int32_t i = 0; i < 4; i++) {
        const layer *l = &layers[i];
        nxe_tensor *w, *b;
        weights(graph, l, scale, &w, &b);
        nxe_tensor *y =
            activation(graph, l->name, i == 3 ? NXE_TENSOR_OUTPUT : NXE_TENSOR_TRANSIENT,
                       l->out_scale, l->out_zero_point);
        nxe_tensor *in[3] = {x, w, b};
        if (i < 2) {
            add_op(graph, "Conv2d", l->name, in, 3, y, NULL);
            char name[64];
            snprintf(name, sizeof name, "%s.pool", l->name);
            nxe_tensor *pooled =
                activation(graph, name, NXE_TENSOR_TRANSIENT, l->out_scale, l->out_zero_point);
            add_op(graph, "MaxPool2d", name, &y, 1, pooled, &op);
            CHECK(nxe_op_set_attr_ints(op, "kernel_shape", pool_attr, 2));
            CHECK(nxe_op_set_attr_ints(op, "strides", pool_attr, 2));
            y = pooled;
        } else {
            add_op(graph, "FullyConnected", l->name, in, 3, y, NULL);
        }
        if (i == 1) { /* flatten [1, 50, 4, 4] to [1, 800] for the dense layers */
            nxe_tensor *flat =
                activation(graph, "flatten", NXE_TENSOR_TRANSIENT, l->out_scale, l->out_zero_point);
            add_op(graph, "Reshape", "flatten", &y, 1, flat, &op);
            CHECK(nxe_op_set_attr_ints(op, "shape", flat_shape, 2));
            y = flat;
        }
        if (i == 2) {
            nxe_tensor *relu = activation(graph, "fc1.relu", NXE_TENSOR_TRANSIENT, l->out_scale,
                                          l->out_zero_point);
            add_op(graph, "Relu", "relu1", &y, 1, relu, NULL);
            y = relu;
        }
        x = y;
        scale = l->out_scale;
    }
    nxe_tensor *probs_t = add_tensor(graph, "probs", NXE_DTYPE_F32, NXE_TENSOR_OUTPUT, -1, NULL);
    add_op(graph, "Softmax", "softmax", &x, 1, probs_t, NULL);

    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    nxe_executable *exe = NULL;
    CHECK(nxe_graph_compile(graph, &options, &exe));

    uint8_t image[28 * 28];
    for (int32_t i = 0; i < 28 * 28; i++)
        image[i] = (uint8_t)(next_random() >> 24);
    uint8_t logits[10], logits_loaded[10];
    float probs[10], probs_loaded[10];
    run(exe, image, logits, probs);

    /* The same graph through a compiled binary. */
    size_t size = 0;
    CHECK(nxe_graph_compile_to_binary(graph, &options, NULL, &size));
    void *binary = malloc(size);
    if (!binary)
        return 1;
    CHECK(nxe_graph_compile_to_binary(graph, &options, binary, &size));
    nxe_executable *loaded = NULL;
    CHECK(nxe_executable_load_memory(binary, size, NULL, &loaded));
    free(binary);
    run(loaded, image, logits_loaded, probs_loaded);
    if (memcmp(logits, logits_loaded, sizeof logits) != 0 ||
        memcmp(probs, probs_loaded, sizeof probs) != 0) {
        fprintf(stderr, "the binary's results differ from the compiled graph's\n");
        return 1;
    }
    printf("binary: same results\n");

    int32_t best = 0;
    for (int32_t i = 0; i < 10; i++) {
        printf("class %d: logit %3d  p %.6f\n", i, logits[i], (double)probs[i]);
        if (probs[i] > probs[best])
            best = i;
    }
    printf("predicted class %d\n", best);

    const int64_t out_shape[2] = {1, 10};
    dump("input", "u8", in_scale, 0, image, sizeof image, 4, in_shape);
    dump("fc2", "u8", layers[3].out_scale, layers[3].out_zero_point, logits, sizeof logits, 2,
         out_shape);
    dump("probs", "f32", 1.0f, 0, probs, sizeof probs, 2, out_shape);
    dump("conv1", "u8", layers[0].out_scale, layers[0].out_zero_point, logits, 0, 0, NULL);
    dump("conv2", "u8", layers[1].out_scale, layers[1].out_zero_point, logits, 0, 0, NULL);
    dump("fc1", "u8", layers[2].out_scale, layers[2].out_zero_point, logits, 0, 0, NULL);
    if (params_file && fclose(params_file) != 0)
        return 1;

    nxe_executable_release(loaded);
    nxe_executable_release(exe);
    nxe_graph_release(graph);
    nxe_context_release(ctx);
    CHECK(nxe_set_log_callback(NULL, NULL, NXE_LOG_INFO));
    return 0;
}
