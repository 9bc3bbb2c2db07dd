/* fuzz_binary.c — libFuzzer harness over the compiled-binary loader. Each input is tried as
 * is and with its checksums made consistent, with verification on and off, so the plan
 * decoder itself sees arbitrary bytes; whatever loads is run once on zeroed inputs. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "rechecksum.h"

#define MAX_IO 64

static void run_once(nxe_executable *exe)
{
    int32_t num_inputs = 0, num_outputs = 0;
    if (nxe_executable_io_count(exe, &num_inputs, &num_outputs) != NXE_OK || num_inputs > MAX_IO ||
        num_outputs > MAX_IO)
        return;
    nxe_tensor_desc inputs[MAX_IO], outputs[MAX_IO];
    for (int32_t i = 0; i < num_inputs; i++) {
        if (nxe_executable_create_input(exe, i, &inputs[i]) != NXE_OK)
            return;
        memset(inputs[i].data, 0, inputs[i].data_size);
    }
    nxe_executable_run_nocopy(exe, inputs, num_inputs, outputs, num_outputs);
}

static void load_and_run(const uint8_t *data, size_t size)
{
    for (int verify = 0; verify <= 1; verify++) {
        nxe_load_options options = NXE_LOAD_OPTIONS_INIT;
        options.num_threads = 1;
        options.verify = verify;
        nxe_executable *exe = NULL;
        nxe_status status = nxe_executable_load_memory(data, size, &options, &exe);
        if (status == NXE_OK) {
            run_once(exe);
            nxe_executable_release(exe);
        } else if (exe != NULL || nxe_last_error()[0] == '\0') {
            fprintf(stderr, "failed load left an out-param or no message\n");
            __builtin_trap();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_and_run(data, size);
    uint8_t *consistent = rechecksummed_copy(data, size);
    if (consistent) {
        load_and_run(consistent, size);
        free(consistent);
    }
    return 0;
}
