/* device.c — the devices executables run on: the CPU as a whole, each NUMA node, core sets
 * callers make, and remote workers hosts add. One table per process, filled on first use and
 * only appended to: a device's address and index stay valid for the process's life, so
 * callers may keep the pointers, and a pointer is checked by looking it up, never by reading
 * through it. */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "core/core.h"
#include "dispatch.h"
#include "runtime/device.h"
#include "runtime/executable_internal.h"

#define MAX_DEVICES 256
#define MAX_CPUS 1024
#define NAME_CAPACITY 4096
#define REMOTE_PREFIX "remote:"

struct nxe_device {
    char *name;
    int32_t kind;
    int32_t numa_node;
    int32_t num_cores;
    int32_t *cores;
    bool has_transport;
    nxe_remote_transport transport; /* guarded by table_mutex */
};

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
static nxe_device *table[MAX_DEVICES];
static int32_t table_count; /* guarded by table_mutex after the first fill */
static nxe_status table_status = NXE_OK;
/* The CPUs this process may run on: "cpu"'s cores, and what core sets may name. */
static bool machine_cpus[MAX_CPUS];

/* Parses a Linux CPU list ("0-3,6\n") into set[]; false on a malformed list or a CPU at or
 * above MAX_CPUS. */
static bool parse_cpu_list(const char *text, bool *set)
{
    const char *p = text;
    while (*p && *p != '\n') {
        char *end;
        long first = strtol(p, &end, 10);
        if (end == p || first < 0 || first >= MAX_CPUS)
            return false;
        long last = first;
        p = end;
        if (*p == '-') {
            p++;
            last = strtol(p, &end, 10);
            if (end == p || last < first || last >= MAX_CPUS)
                return false;
            p = end;
        }
        for (long cpu = first; cpu <= last; cpu++)
            set[cpu] = true;
        if (*p == ',')
            p++;
        else if (*p && *p != '\n')
            return false;
    }
    return true;
}

/* Reads a small text file into buffer; false when it cannot. */
static bool read_text(const char *path, char *buffer, size_t capacity)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return false;
    size_t n = fread(buffer, 1, capacity - 1, file);
    fclose(file);
    buffer[n] = '\0';
    return n > 0;
}

/* "0-3,6" for the set. */
static void format_cpu_list(const int32_t *cores, int32_t count, char *out, size_t capacity)
{
    size_t used = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < count && used < capacity;) {
        int32_t j = i;
        while (j + 1 < count && cores[j + 1] == cores[j] + 1)
            j++;
        int n = j > i ? snprintf(out + used, capacity - used, "%s%d-%d", i ? "," : "", cores[i],
                                 cores[j])
                      : snprintf(out + used, capacity - used, "%s%d", i ? "," : "", cores[i]);
        if (n < 0)
            break;
        used += (size_t)n;
        i = j + 1;
    }
}

static void free_device(nxe_device *device)
{
    if (!device)
        return;
    nxe_free(device->name);
    nxe_free(device->cores);
    nxe_free(device);
}

/* A CPU device of the CPUs set in `set` (at least one). */
static nxe_device *make_cpu_device(const char *name, const bool *set, int32_t numa_node)
{
    nxe_device *device = nxe_alloc_zeroed(sizeof *device);
    if (!device)
        return NULL;
    device->kind = NXE_DEVICE_CPU;
    device->numa_node = numa_node;
    int32_t count = 0;
    for (int32_t cpu = 0; cpu < MAX_CPUS; cpu++)
        count += set[cpu];
    device->cores = nxe_alloc(sizeof(int32_t) * (size_t)(count ? count : 1));
    device->name = nxe_strdup(name);
    if (!device->cores || !device->name) {
        free_device(device);
        return NULL;
    }
    for (int32_t cpu = 0; cpu < MAX_CPUS; cpu++)
        if (set[cpu])
            device->cores[device->num_cores++] = cpu;
    return device;
}

/* Appends under table_mutex (or during the first fill). */
static nxe_status append_device(nxe_device *device, const char *where)
{
    if (!device)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", where);
    if (table_count == MAX_DEVICES) {
        free_device(device);
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: the device table is full (%d devices)",
                         where, MAX_DEVICES);
    }
    table[table_count++] = device;
    return NXE_OK;
}

static void fill_table(void)
{
    const char *where = "devices";
    bool any = false;
#ifdef __linux__
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int32_t cpu = 0; cpu < MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &allowed))
                machine_cpus[cpu] = any = true;
#endif
    if (!any) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (online < 1)
            online = 1;
        for (long cpu = 0; cpu < online && cpu < MAX_CPUS; cpu++)
            machine_cpus[cpu] = true;
    }
    table_status = append_device(make_cpu_device("cpu", machine_cpus, -1), where);
    if (table_status != NXE_OK)
        return;

    int32_t nodes_listed = 0;
#ifdef __linux__
    char text[NAME_CAPACITY];
    bool nodes[MAX_CPUS] = {false};
    if (read_text("/sys/devices/system/node/online", text, sizeof text) &&
        parse_cpu_list(text, nodes)) {
        for (int32_t node = 0; node < MAX_CPUS && table_status == NXE_OK; node++) {
            if (!nodes[node])
                continue;
            char path[128], name[64];
            bool cpus[MAX_CPUS] = {false};
            snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
            if (!read_text(path, text, sizeof text) || !parse_cpu_list(text, cpus))
                continue;
            bool has_cpu = false;
            for (int32_t cpu = 0; cpu < MAX_CPUS; cpu++) {
                cpus[cpu] = cpus[cpu] && machine_cpus[cpu];
                has_cpu = has_cpu || cpus[cpu];
            }
            if (!has_cpu) /* a node of memory only, or of CPUs this process may not use */
                continue;
            snprintf(name, sizeof name, "cpu:numa%d", node);
            table_status = append_device(make_cpu_device(name, cpus, node), where);
            nodes_listed++;
        }
    }
#endif
    if (table_status == NXE_OK && nodes_listed == 0)
        table_status = append_device(make_cpu_device("cpu:numa0", machine_cpus, 0), where);
}

static nxe_status ensure_table(void)
{
    pthread_once(&table_once, fill_table);
    if (table_status != NXE_OK)
        return nxe_error(table_status, "devices: listing the CPU devices failed (out of memory)");
    return NXE_OK;
}

/* The index of a device pointer in the table, -1 when the library did not hand it out. */
static int32_t index_of(const nxe_device *device)
{
    int32_t found = -1;
    pthread_mutex_lock(&table_mutex);
    for (int32_t i = 0; i < table_count && found < 0; i++)
        if (table[i] == device)
            found = i;
    pthread_mutex_unlock(&table_mutex);
    return found;
}

nxe_status nxe_device_check(const nxe_device *device, const char *where)
{
    if (!device)
        return NXE_OK;
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    if (index_of(device) < 0)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the device %p is not one the library handed out (use "
                         "nxe_device_get, nxe_device_find or nxe_device_create_cpu_set)",
                         where, (const void *)device);
    return NXE_OK;
}

bool nxe_device_is_remote(const nxe_device *device)
{
    return device && device->kind == NXE_DEVICE_REMOTE;
}

nxe_status nxe_device_transport(const nxe_device *device, const char *where,
                                nxe_remote_transport *out)
{
    pthread_mutex_lock(&table_mutex);
    bool has = device->has_transport;
    if (has)
        *out = device->transport;
    pthread_mutex_unlock(&table_mutex);
    if (!has)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "%s: the remote device '%s' was added without a transport: its host "
                         "runs it through its own client (Python: nxe.RemoteDevice.load)",
                         where, device->name);
    return NXE_OK;
}

nxe_status nxe_device_make_pool(const nxe_device *device, int32_t num_threads,
                                int32_t default_threads, nxe_thread_pool **out)
{
    if (device && device->kind == NXE_DEVICE_REMOTE) /* the local plan never runs */
        return nxe_thread_pool_create(1, out);
    if (!device)
        return nxe_thread_pool_create(num_threads ? num_threads : default_threads, out);
    int32_t threads = num_threads ? num_threads : device->num_cores;
    return nxe_thread_pool_create_pinned(threads, device->cores, device->num_cores, out);
}

NXE_API nxe_status nxe_device_count(int32_t *count)
{
    if (!count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_device_count: count is NULL");
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    pthread_mutex_lock(&table_mutex);
    *count = table_count;
    pthread_mutex_unlock(&table_mutex);
    return NXE_OK;
}

NXE_API nxe_status nxe_device_get(int32_t index, const nxe_device **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_device_get: out is NULL");
    *out = NULL;
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    pthread_mutex_lock(&table_mutex);
    int32_t count = table_count;
    if (index >= 0 && index < count)
        *out = table[index];
    pthread_mutex_unlock(&table_mutex);
    if (!*out)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_device_get: index %d is outside [0, %d)", index,
                         count);
    return NXE_OK;
}

NXE_API nxe_status nxe_device_get_info(const nxe_device *device, nxe_device_info *info)
{
    const char *where = "nxe_device_get_info";
    if (!device || !info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", where,
                         device ? "info" : "device");
    if (info->struct_size < sizeof(nxe_device_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_device_info));
    nxe_status status = nxe_device_check(device, where);
    if (status != NXE_OK)
        return status;
    uint32_t struct_size = info->struct_size;
    *info = (nxe_device_info){.struct_size = struct_size,
                              .name = device->name,
                              .kind = device->kind,
                              .num_cores = device->num_cores,
                              .cores = device->kind == NXE_DEVICE_CPU ? device->cores : NULL,
                              .numa_node = device->numa_node};
    if (device->kind == NXE_DEVICE_CPU)
        snprintf(info->isa, sizeof info->isa, "%s", nxe_isa_level_name(nxe_cpu_detect()->level));
    return NXE_OK;
}

/* Finds a device by name under table_mutex; NULL when none. */
static nxe_device *find_locked(const char *name)
{
    for (int32_t i = 0; i < table_count; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

static nxe_status create_cpu_set(const bool *set, const char *where, const nxe_device **out)
{
    int32_t cores[MAX_CPUS], count = 0;
    for (int32_t cpu = 0; cpu < MAX_CPUS; cpu++) {
        if (!set[cpu])
            continue;
        if (!machine_cpus[cpu])
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: core %d is not one this process can run on (device 'cpu' "
                             "lists them)",
                             where, cpu);
        cores[count++] = cpu;
    }
    char name[NAME_CAPACITY];
    int n = snprintf(name, sizeof name, "cpu:cores");
    format_cpu_list(cores, count, name + n, sizeof name - (size_t)n);
    pthread_mutex_lock(&table_mutex);
    nxe_device *device = find_locked(name);
    nxe_status status = NXE_OK;
    if (!device) {
        device = make_cpu_device(name, set, -1);
        status = append_device(device, where);
        if (status != NXE_OK)
            device = NULL;
    }
    pthread_mutex_unlock(&table_mutex);
    *out = device;
    return status;
}

NXE_API nxe_status nxe_device_create_cpu_set(const int32_t *cores, int32_t num_cores,
                                             const nxe_device **out)
{
    const char *where = "nxe_device_create_cpu_set";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out is NULL", where);
    *out = NULL;
    if (!cores)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: cores is NULL", where);
    if (num_cores < 1 || num_cores > MAX_CPUS)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: num_cores %d is outside [1, %d]", where,
                         num_cores, MAX_CPUS);
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    bool set[MAX_CPUS] = {false};
    for (int32_t i = 0; i < num_cores; i++) {
        if (cores[i] < 0 || cores[i] >= MAX_CPUS || !machine_cpus[cores[i]])
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: core %d is not one this process can run on (device 'cpu' "
                             "lists them)",
                             where, cores[i]);
        if (set[cores[i]])
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: core %d is listed twice", where,
                             cores[i]);
        set[cores[i]] = true;
    }
    return create_cpu_set(set, where, out);
}

NXE_API nxe_status nxe_device_find(const char *name, const nxe_device **out)
{
    const char *where = "nxe_device_find";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out is NULL", where);
    *out = NULL;
    if (!name)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: name is NULL", where);
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    pthread_mutex_lock(&table_mutex);
    nxe_device *device = find_locked(name);
    pthread_mutex_unlock(&table_mutex);
    if (device) {
        *out = device;
        return NXE_OK;
    }
    static const char prefix[] = "cpu:cores";
    if (strncmp(name, prefix, sizeof prefix - 1) == 0) {
        const char *list = name + sizeof prefix - 1;
        bool set[MAX_CPUS] = {false};
        bool any = false;
        if (parse_cpu_list(list, set) && list[0] && !strchr(list, '\n'))
            for (int32_t cpu = 0; cpu < MAX_CPUS; cpu++)
                any = any || set[cpu];
        if (!any)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: '%.64s' is not a core list (expected e.g. 'cpu:cores0-3,6')",
                             where, name);
        return create_cpu_set(set, where, out);
    }
    return nxe_error(NXE_ERROR_NOT_FOUND, "%s: no device named '%.200s'", where, name);
}

NXE_API nxe_status nxe_device_add_remote(const char *address, const nxe_remote_transport *transport,
                                         const nxe_device **out)
{
    const char *where = "nxe_device_add_remote";
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: out is NULL", where);
    *out = NULL;
    if (!address)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: address is NULL", where);
    size_t length = strlen(address);
    if (length == 0 || length > 255)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: the address is %zu bytes; expected 1 to 255", where, length);
    if (transport) {
        if (transport->struct_size < sizeof(nxe_remote_transport))
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: transport.struct_size is %u, expected at least %zu", where,
                             transport->struct_size, sizeof(nxe_remote_transport));
        if (!transport->load || !transport->run || !transport->unload)
            return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                             "%s: the transport needs load, run and unload callbacks", where);
    }
    nxe_status status = ensure_table();
    if (status != NXE_OK)
        return status;
    char name[sizeof REMOTE_PREFIX + 256];
    snprintf(name, sizeof name, "%s%s", REMOTE_PREFIX, address);
    pthread_mutex_lock(&table_mutex);
    nxe_device *device = find_locked(name);
    if (!device) {
        device = nxe_alloc_zeroed(sizeof *device);
        if (device) {
            device->kind = NXE_DEVICE_REMOTE;
            device->numa_node = -1;
            device->name = nxe_strdup(name);
            if (!device->name) {
                free_device(device);
                device = NULL;
            }
        }
        status = append_device(device, where);
        if (status != NXE_OK)
            device = NULL;
    }
    if (device) {
        device->has_transport = transport != NULL;
        if (transport)
            device->transport = *transport;
    }
    pthread_mutex_unlock(&table_mutex);
    *out = device;
    return status;
}

NXE_API nxe_status nxe_set_error_message(nxe_status status, const char *message)
{
    return nxe_error(status, "%s", message ? message : "");
}

nxe_status nxe_device_place_remote(const nxe_device *device, nxe_graph *graph,
                                   const nxe_compile_options *options, const void *binary,
                                   size_t size, nxe_executable *exe, const char *where)
{
    nxe_remote_transport transport = {0};
    nxe_status status = nxe_device_transport(device, where, &transport);
    if (status != NXE_OK)
        return status;
    void *buffer = NULL;
    if (!binary) {
        status = nxe_graph_compile_to_binary(graph, options, NULL, &size);
        if (status == NXE_OK || status == NXE_ERROR_BUFFER_TOO_SMALL) {
            buffer = nxe_alloc(size ? size : 1);
            status = buffer ? nxe_graph_compile_to_binary(graph, options, buffer, &size)
                            : nxe_error(NXE_ERROR_OUT_OF_MEMORY,
                                        "%s: out of memory for a %zu-byte binary", where, size);
        }
        binary = buffer;
    }
    uint64_t handle = 0;
    if (status == NXE_OK) {
        nxe_error(NXE_ERROR_INTERNAL, "the transport's load failed without a message");
        status = transport.load(transport.user_data, binary, size, &handle);
        if (status != NXE_OK)
            nxe_error_prefix("%s: %s: load: ", where, device->name);
    }
    nxe_free(buffer);
    if (status == NXE_OK) {
        exe->remote = device;
        exe->remote_transport = transport;
        exe->remote_handle = handle;
    }
    return status;
}

nxe_status nxe_device_remote_run(const nxe_executable *exe, const nxe_tensor_desc *inputs,
                                 int32_t num_inputs, nxe_tensor_desc *outputs, int32_t num_outputs,
                                 const char *where)
{
    const nxe_remote_transport *transport = &exe->remote_transport;
    nxe_error(NXE_ERROR_INTERNAL, "the transport's run failed without a message");
    nxe_status status = transport->run(transport->user_data, exe->remote_handle, inputs, num_inputs,
                                       outputs, num_outputs);
    if (status != NXE_OK)
        nxe_error_prefix("%s: %s: ", where, exe->remote->name);
    return status;
}

void nxe_device_remote_unload(const nxe_executable *exe)
{
    exe->remote_transport.unload(exe->remote_transport.user_data, exe->remote_handle);
}
