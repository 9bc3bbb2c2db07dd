/* size_limits.c — shapes whose sizes overflow or pass the limits fail to compile with a status
 * and a message (the sanitizer pass runs this, so any wrapped size computed on the way is a
 * report), and nxe_limits set from C is enforced at its value and one past. */
#include <stdio.h>
#include <string.h>

#include <nxe/nxe.h>

static int failures;

static void expect(int line, nxe_status got, nxe_status expected, const char *needle)
{
    const char *message = got == NXE_OK ? "" : nxe_last_error();
    if (got != expected || (needle && !strstr(message, needle))) {
        fprintf(stderr, "size_limits.c:%d: got %s (\"%s\"), expected %s mentioning \"%s\"\n", line,
                nxe_status_name(got), message, nxe_status_name(expected), needle ? needle : "");
        failures++;
    }
}
#define EXPECT(call, status, needle) expect(__LINE__, (call), (status), (needle))

/* x: f32 [1] expanded to `target` by `count` Expand ops, each an output. */
static nxe_graph *expand_graph(nxe_context *ctx, const int64_t *target, int32_t rank, int count)
{
    nxe_graph *g = NULL;
    nxe_tensor *x = NULL;
    int64_t one = 1;
    nxe_graph_create(ctx, &g);
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = "x";
    spec.kind = NXE_TENSOR_INPUT;
    spec.ndim = 1;
    spec.shape = &one;
    nxe_graph_add_tensor(g, &spec, &x);
    for (int i = 0; i < count; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        nxe_tensor_spec out = NXE_TENSOR_SPEC_INIT;
        out.name = name;
        out.kind = NXE_TENSOR_OUTPUT;
        nxe_tensor *y = NULL;
        nxe_op *op = NULL;
        nxe_graph_add_tensor(g, &out, &y);
        nxe_graph_add_op(g, "Expand", NULL, &op);
        nxe_op_set_attr_ints(op, "shape", target, rank);
        nxe_op_bind_inputs(op, &x, 1);
        nxe_op_bind_outputs(op, &y, 1);
    }
    return g;
}

int main(void)
{
    nxe_context *ctx = NULL;
    nxe_context_create(&ctx);
    nxe_executable *exe = NULL;
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;

    /* Four outputs of 2^60 floats: their staging once wrapped to 128 bytes. */
    const int64_t huge[1] = {(int64_t)1 << 60};
    nxe_graph *g = expand_graph(ctx, huge, 1, 4);
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_SHAPE_MISMATCH, "per tensor");
    nxe_graph_release(g);

    /* An element count that overflows int64. */
    const int64_t wide[3] = {(int64_t)1 << 31, (int64_t)1 << 31, 4};
    g = expand_graph(ctx, wide, 3, 1);
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_SHAPE_MISMATCH,
           "more elements than fit in 64 bits");
    nxe_graph_release(g);

    /* No elements, but strides that would wrap. */
    const int64_t empty[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    g = expand_graph(ctx, empty, 3, 1);
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_SHAPE_MISMATCH,
           "more elements than fit in 64 bits");
    nxe_graph_release(g);

    /* Limits from C: 16 floats out is 64 bytes per tensor, 3 ops. */
    const int64_t sixteen[1] = {16};
    g = expand_graph(ctx, sixteen, 1, 3);
    nxe_limits limits = NXE_LIMITS_INIT;
    options.limits = &limits;
    limits.max_tensor_bytes = 64;
    limits.max_ops = 3;
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_OK, NULL);
    nxe_executable_release(exe);
    limits.max_tensor_bytes = 63;
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_SHAPE_MISMATCH,
           "nxe_limits.max_tensor_bytes");
    limits.max_tensor_bytes = 0;
    limits.max_ops = 2;
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_INVALID_GRAPH, "nxe_limits.max_ops");
    limits.max_ops = 0;
    limits.max_arena_bytes = 64;
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_OUT_OF_MEMORY,
           "nxe_limits.max_arena_bytes");
    if (exe != NULL) {
        fprintf(stderr, "size_limits.c: a failed compile left *out set\n");
        failures++;
    }
    nxe_graph_release(g);

    /* The context's limits: a graph refuses the op past max_ops as it is added, and a compile
     * without limits of its own enforces the context's. */
    nxe_limits bad = NXE_LIMITS_INIT;
    bad.max_ops = -1;
    EXPECT(nxe_context_set_limits(ctx, &bad), NXE_ERROR_INVALID_ARGUMENT, "negative");
    bad.struct_size = 8;
    EXPECT(nxe_context_set_limits(ctx, &bad), NXE_ERROR_INVALID_ARGUMENT, "struct_size");
    EXPECT(nxe_context_set_limits(NULL, &limits), NXE_ERROR_INVALID_ARGUMENT, "NULL");
    nxe_limits got = NXE_LIMITS_INIT;
    EXPECT(nxe_context_get_limits(ctx, &got), NXE_OK, NULL);
    if (got.max_ops != NXE_DEFAULT_MAX_OPS ||
        got.max_tensor_bytes != NXE_DEFAULT_MAX_TENSOR_BYTES) {
        fprintf(stderr, "size_limits.c: a new context's limits are not the defaults\n");
        failures++;
    }
    limits = (nxe_limits)NXE_LIMITS_INIT;
    limits.max_ops = 2;
    limits.max_tensor_bytes = 63;
    EXPECT(nxe_context_set_limits(ctx, &limits), NXE_OK, NULL);
    EXPECT(nxe_context_get_limits(ctx, &got), NXE_OK, NULL);
    if (got.max_ops != 2 || got.max_tensor_bytes != 63 ||
        got.max_arena_bytes != NXE_DEFAULT_MAX_ARENA_BYTES) {
        fprintf(stderr, "size_limits.c: the context's limits did not read back\n");
        failures++;
    }
    g = expand_graph(ctx, sixteen, 1, 2);
    nxe_op *third = NULL;
    EXPECT(nxe_graph_add_op(g, "Relu", "third", &third), NXE_ERROR_INVALID_GRAPH,
           "raise nxe_limits.max_ops with nxe_context_set_limits");
    options.limits = NULL; /* the context's: 16 floats are above 63 bytes */
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_ERROR_SHAPE_MISMATCH,
           "nxe_limits.max_tensor_bytes");
    nxe_limits roomy = NXE_LIMITS_INIT; /* the compile's own limits come first */
    options.limits = &roomy;
    EXPECT(nxe_graph_compile(g, &options, &exe), NXE_OK, NULL);
    nxe_executable_release(exe);
    nxe_graph_release(g);
    EXPECT(nxe_context_set_limits(ctx, NULL), NXE_OK, NULL);
    EXPECT(nxe_context_get_limits(ctx, &got), NXE_OK, NULL);
    if (got.max_ops != NXE_DEFAULT_MAX_OPS) {
        fprintf(stderr, "size_limits.c: NULL limits did not restore the defaults\n");
        failures++;
    }
    nxe_context_release(ctx);
    if (failures)
        return 1;
    printf("size_limits: ok\n");
    return 0;
}
