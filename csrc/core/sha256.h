/* sha256.h — SHA-256 (FIPS 180-4), streaming, for model fingerprints and file checksums. */
#ifndef NXE_SHA256_H
#define NXE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct nxe_sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t block_used;
} nxe_sha256_ctx;

void nxe_sha256_init(nxe_sha256_ctx *ctx);
void nxe_sha256_update(nxe_sha256_ctx *ctx, const void *data, size_t size);
void nxe_sha256_final(nxe_sha256_ctx *ctx, uint8_t digest[32]);
/* One-shot convenience. */
void nxe_sha256(const void *data, size_t size, uint8_t digest[32]);

#endif
