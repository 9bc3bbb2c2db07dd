/* fuzz_sr_metadata.c — libFuzzer harness over libnxe_sr's metadata reader: any bytes must
 * parse or fail with NXE_ERROR_FORMAT and a message, and what parses must hold terminated
 * strings within their fields. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nxe/nxe_sr.h>

#include "sr/metadata.h"

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_sr_metadata: %s failed: %s\n", #cond, nxe_sr_last_error());      \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_metadata meta;
    nxe_status status = sr_read_metadata((const char *)data, size, &meta);
    REQUIRE(status == NXE_OK || status == NXE_ERROR_FORMAT);
    if (status != NXE_OK) {
        REQUIRE(nxe_sr_last_error()[0] != '\0');
        return 0;
    }
    REQUIRE(memchr(meta.task, '\0', sizeof meta.task));
    REQUIRE(memchr(meta.name, '\0', sizeof meta.name));
    REQUIRE(memchr(meta.input, '\0', sizeof meta.input));
    REQUIRE(memchr(meta.output, '\0', sizeof meta.output));
    return 0;
}
