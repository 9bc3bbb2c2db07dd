/* device.h — the device table (device.c) as the compiler, the loader and the executable use
 * it: checking a device handed in, making a device's thread pool, reaching a remote device's
 * transport. */
#ifndef NXE_DEVICE_H
#define NXE_DEVICE_H

#include <stdbool.h>

#include "core/threadpool.h"
#include "nxe/nxe.h"

/* NXE_OK for NULL (the default CPU) or a device the library handed out; otherwise
 * NXE_ERROR_INVALID_ARGUMENT with a message naming `where`. Never dereferences a pointer it
 * does not know. */
nxe_status nxe_device_check(const nxe_device *device, const char *where);
/* Whether a checked device is a remote one. */
bool nxe_device_is_remote(const nxe_device *device);
/* A copy of a remote device's transport; NXE_ERROR_UNSUPPORTED when it has none. */
nxe_status nxe_device_transport(const nxe_device *device, const char *where,
                                nxe_remote_transport *out);
/* The thread pool of an executable placed on a checked CPU device (NULL: the default, no
 * pinning): num_threads 0 means the device's core count (for NULL, one per online CPU), and on
 * Linux the workers are pinned to the device's cores. */
nxe_status nxe_device_make_pool(const nxe_device *device, int32_t num_threads,
                                int32_t default_threads, nxe_thread_pool **out);

/* Makes a compiled executable (or one just loaded from `binary`, `size` bytes) run on a remote
 * device: the binary goes to the transport's load, and exe->remote and exe->remote_handle are
 * set. For a compile, `graph` and `options` give the binary (binary NULL). */
nxe_status nxe_device_place_remote(const nxe_device *device, nxe_graph *graph,
                                   const nxe_compile_options *options, const void *binary,
                                   size_t size, struct nxe_executable *exe, const char *where);
/* A run of a remote executable, its arguments already checked against its plan. */
nxe_status nxe_device_remote_run(const struct nxe_executable *exe, const nxe_tensor_desc *inputs,
                                 int32_t num_inputs, nxe_tensor_desc *outputs, int32_t num_outputs,
                                 const char *where);
/* Ends a remote executable's handle on its worker (the executable's release). */
void nxe_device_remote_unload(const struct nxe_executable *exe);

#endif
