/* rechecksum.h — for the fuzzers: rewrites a mutated file's size field, section checksums and
 * header digest so that mutations get past the checksums and reach the section parsers. */
#ifndef NXE_FUZZ_RECHECKSUM_H
#define NXE_FUZZ_RECHECKSUM_H

#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"
#include "model/container.h"

/* A malloc'd copy of data with consistent checksums (as far as the table can be read). */
static uint8_t *rechecksummed_copy(const uint8_t *data, size_t size)
{
    uint8_t *file = malloc(size ? size : 1);
    if (!file)
        return NULL;
    memcpy(file, data, size);
    if (size < NXE_CONTAINER_HEADER_SIZE)
        return file;
    nxe_store_u64(file + 24, size);
    uint32_t count = nxe_load_u32(file + 20);
    size_t table = NXE_CONTAINER_HEADER_SIZE + (size_t)count * NXE_CONTAINER_ENTRY_SIZE;
    if (count > NXE_LIMIT_SECTIONS || table > size)
        return file;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *entry = file + NXE_CONTAINER_HEADER_SIZE + (size_t)i * NXE_CONTAINER_ENTRY_SIZE;
        uint64_t offset = nxe_load_u64(entry + 8), length = nxe_load_u64(entry + 16);
        if (offset <= size && length <= size - offset)
            nxe_sha256(file + offset, (size_t)length, entry + 24);
    }
    nxe_sha256_ctx ctx;
    nxe_sha256_init(&ctx);
    nxe_sha256_update(&ctx, file, 32);
    nxe_sha256_update(&ctx, file + NXE_CONTAINER_HEADER_SIZE, table - NXE_CONTAINER_HEADER_SIZE);
    nxe_sha256_final(&ctx, file + 32);
    return file;
}

#endif
