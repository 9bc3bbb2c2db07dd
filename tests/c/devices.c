/* devices.c — devices as a C user drives them: the table ("cpu", the NUMA nodes), core sets
 * by list and by name, an executable compiled and one loaded for a core set (results equal to
 * the default device's), bad devices refused, and a remote device whose transport is this
 * program's own callbacks (here they run the binary in process, as a host's transport would
 * on its worker): its runs equal the local ones, its failures come back with their message,
 * and releasing the executable unloads it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nxe/nxe.h>

#include "expect.h"

/* y = relu(x + b) over 2x3 f32. */
static nxe_graph *make_graph(nxe_context *ctx)
{
    nxe_graph *g = NULL;
    EXPECT_OK(nxe_graph_create(ctx, &g));
    int64_t shape[2] = {2, 3};
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.name = "x";
    spec.kind = NXE_TENSOR_INPUT;
    spec.ndim = 2;
    spec.shape = shape;
    nxe_tensor *x, *b, *s, *y;
    EXPECT_OK(nxe_graph_add_tensor(g, &spec, &x));
    spec.name = "b";
    spec.kind = NXE_TENSOR_CONSTANT;
    EXPECT_OK(nxe_graph_add_tensor(g, &spec, &b));
    static const float bias[6] = {0.5f, -1.0f, 2.0f, -0.25f, 0.0f, 1.5f};
    EXPECT_OK(nxe_tensor_set_data(b, bias, sizeof bias));
    spec.name = "s";
    spec.kind = NXE_TENSOR_TRANSIENT;
    spec.ndim = -1;
    EXPECT_OK(nxe_graph_add_tensor(g, &spec, &s));
    spec.name = "y";
    spec.kind = NXE_TENSOR_OUTPUT;
    EXPECT_OK(nxe_graph_add_tensor(g, &spec, &y));
    nxe_op *add, *relu;
    EXPECT_OK(nxe_graph_add_op(g, "Add", "add0", &add));
    nxe_tensor *in[2] = {x, b};
    EXPECT_OK(nxe_op_bind_inputs(add, in, 2));
    EXPECT_OK(nxe_op_bind_outputs(add, &s, 1));
    EXPECT_OK(nxe_graph_add_op(g, "Relu", "relu0", &relu));
    EXPECT_OK(nxe_op_bind_inputs(relu, &s, 1));
    EXPECT_OK(nxe_op_bind_outputs(relu, &y, 1));
    return g;
}

static nxe_status run(nxe_executable *exe, float *x, float *y)
{
    nxe_tensor_desc in = {x, 6 * sizeof(float), 2, NXE_DL_FLOAT, 32, 0, {2, 3}};
    nxe_tensor_desc out = {y, 6 * sizeof(float), 2, NXE_DL_FLOAT, 32, 0, {2, 3}};
    return nxe_executable_run(exe, &in, 1, &out, 1);
}

/* The transport: "the worker" is this process; handles index loaded[]. */
typedef struct host {
    nxe_executable *loaded[8];
    int loads, unloads, fail_runs;
} host;

static nxe_status host_load(void *user_data, const void *binary, size_t size, uint64_t *handle)
{
    host *h = user_data;
    if (h->loads >= 8)
        return nxe_set_error_message(NXE_ERROR_BUSY, "the test host holds 8 executables");
    nxe_status status = nxe_executable_load_memory(binary, size, NULL, &h->loaded[h->loads]);
    if (status != NXE_OK)
        return status;
    *handle = (uint64_t)h->loads++;
    return NXE_OK;
}

static nxe_status host_run(void *user_data, uint64_t handle, const nxe_tensor_desc *inputs,
                           int32_t num_inputs, nxe_tensor_desc *outputs, int32_t num_outputs)
{
    host *h = user_data;
    if (h->fail_runs)
        return nxe_set_error_message(NXE_ERROR_IO, "the worker went away");
    return nxe_executable_run(h->loaded[handle], inputs, num_inputs, outputs, num_outputs);
}

static void host_unload(void *user_data, uint64_t handle)
{
    host *h = user_data;
    nxe_executable_release(h->loaded[handle]);
    h->loaded[handle] = NULL;
    h->unloads++;
}

int main(void)
{
    int32_t count = 0;
    EXPECT_OK(nxe_device_count(&count));
    EXPECT_TRUE(count >= 2);
    const nxe_device *cpu = NULL, *node = NULL;
    EXPECT_OK(nxe_device_get(0, &cpu));
    EXPECT_OK(nxe_device_find("cpu:numa0", &node));
    nxe_device_info info = {.struct_size = sizeof info};
    EXPECT_OK(nxe_device_get_info(cpu, &info));
    EXPECT_TRUE(strcmp(info.name, "cpu") == 0 && info.kind == NXE_DEVICE_CPU);
    EXPECT_TRUE(info.num_cores >= 1 && info.cores && info.isa[0] && info.numa_node == -1);
    const int32_t first_core = info.cores[0];
    EXPECT_OK(nxe_device_get_info(node, &info));
    EXPECT_TRUE(info.numa_node == 0 && info.num_cores >= 1);
    EXPECT_FAIL(nxe_device_get(count, &node), NXE_ERROR_NOT_FOUND, "outside");
    EXPECT_TRUE(node == NULL);

    const nxe_device *set = NULL, *by_name = NULL;
    EXPECT_OK(nxe_device_create_cpu_set(&first_core, 1, &set));
    char name[64];
    snprintf(name, sizeof name, "cpu:cores%d", (int)first_core);
    EXPECT_OK(nxe_device_find(name, &by_name));
    EXPECT_TRUE(set == by_name);
    const int32_t missing = 1023;
    EXPECT_FAIL(nxe_device_create_cpu_set(&missing, 1, &set), NXE_ERROR_INVALID_ARGUMENT,
                "core 1023");
    EXPECT_FAIL(nxe_device_find("cpu:cores-1", &set), NXE_ERROR_INVALID_ARGUMENT, "core list");
    EXPECT_FAIL(nxe_device_find("tpu", &set), NXE_ERROR_NOT_FOUND, "no device");
    EXPECT_FAIL(nxe_device_get_info((const nxe_device *)&count, &info), NXE_ERROR_INVALID_ARGUMENT,
                "not one the library handed out");
    EXPECT_OK(nxe_device_create_cpu_set(&first_core, 1, &set));

    nxe_context *ctx = NULL;
    EXPECT_OK(nxe_context_create(&ctx));
    nxe_graph *g = make_graph(ctx);
    float x[6] = {-1.0f, 2.0f, -3.0f, 0.5f, 0.25f, -2.0f};
    float expected[6], y[6];
    nxe_executable *exe = NULL, *local = NULL;
    EXPECT_OK(nxe_graph_compile(g, NULL, &local));
    EXPECT_OK(run(local, x, expected));

    /* A core set, compiled and loaded. */
    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.device = set;
    EXPECT_OK(nxe_graph_compile(g, &options, &exe));
    memset(y, 0, sizeof y);
    EXPECT_OK(run(exe, x, y));
    EXPECT_TRUE(memcmp(y, expected, sizeof y) == 0);
    nxe_executable_release(exe);
    size_t size = 0;
    static unsigned char binary[1 << 16];
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, NULL, &size));
    EXPECT_TRUE(size <= sizeof binary);
    EXPECT_OK(nxe_graph_compile_to_binary(g, NULL, binary, &size));
    nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
    load.device = set;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &load, &exe));
    memset(y, 0, sizeof y);
    EXPECT_OK(run(exe, x, y));
    EXPECT_TRUE(memcmp(y, expected, sizeof y) == 0);
    nxe_executable_release(exe);
    options.device = (const nxe_device *)&count;
    EXPECT_FAIL(nxe_graph_compile(g, &options, &exe), NXE_ERROR_INVALID_ARGUMENT,
                "not one the library handed out");
    EXPECT_TRUE(exe == NULL);

    /* A remote device carried by this program's callbacks. */
    host h = {0};
    nxe_remote_transport transport = {sizeof transport, &h, host_load, host_run, host_unload};
    const nxe_device *remote = NULL;
    EXPECT_OK(nxe_device_add_remote("127.0.0.1:1", &transport, &remote));
    EXPECT_OK(nxe_device_get_info(remote, &info));
    EXPECT_TRUE(strcmp(info.name, "remote:127.0.0.1:1") == 0 && info.kind == NXE_DEVICE_REMOTE);
    EXPECT_TRUE(info.cores == NULL && info.num_cores == 0);
    options.device = remote;
    EXPECT_OK(nxe_graph_compile(g, &options, &exe));
    EXPECT_TRUE(h.loads == 1);
    memset(y, 0, sizeof y);
    EXPECT_OK(run(exe, x, y));
    EXPECT_TRUE(memcmp(y, expected, sizeof y) == 0);
    h.fail_runs = 1;
    EXPECT_FAIL(run(exe, x, y), NXE_ERROR_IO, "went away");
    EXPECT_TRUE(strstr(nxe_last_error(), "remote:127.0.0.1:1") != NULL);
    h.fail_runs = 0;
    nxe_executable_release(exe);
    EXPECT_TRUE(h.unloads == 1);
    load.device = remote;
    EXPECT_OK(nxe_executable_load_memory(binary, size, &load, &exe));
    memset(y, 0, sizeof y);
    EXPECT_OK(run(exe, x, y));
    EXPECT_TRUE(memcmp(y, expected, sizeof y) == 0);
    nxe_executable_release(exe);
    EXPECT_TRUE(h.loads == 2 && h.unloads == 2);
    /* Listed without a transport: nothing can run there. */
    EXPECT_OK(nxe_device_add_remote("127.0.0.1:1", NULL, &remote));
    EXPECT_FAIL(nxe_graph_compile(g, &options, &exe), NXE_ERROR_UNSUPPORTED, "without a transport");
    transport.run = NULL;
    EXPECT_FAIL(nxe_device_add_remote("127.0.0.1:2", &transport, &remote),
                NXE_ERROR_INVALID_ARGUMENT, "callbacks");

    nxe_executable_release(local);
    nxe_graph_release(g);
    nxe_context_release(ctx);
    printf("devices: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
