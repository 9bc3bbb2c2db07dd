/* engine_internal.h — what the engine (engine.c) and its built-in kinds (tensor_kind.c,
 * embedding_kind.c, asr_kind.c) share.
 * Internal; the kind sees the engine only through the public batch accessors. */
#ifndef NXE_ENGINE_INTERNAL_H
#define NXE_ENGINE_INTERNAL_H

#include "core/core.h"
#include "nxe/nxe_engine.h"

/* The bytes an executable holds now (nxe_memory_info's resident_bytes; 0 for NULL or when it
 * cannot say): what a kind adds up for its resident_bytes callback. */
static inline uint64_t nxe_engine_executable_bytes(const nxe_executable *exe)
{
    nxe_memory_info info = {.struct_size = sizeof info};
    return exe && nxe_executable_memory_info(exe, &info) == NXE_OK ? info.resident_bytes : 0;
}

/* Option values, as strings in a model's or a request's options: a boolean ("true" or "1",
 * "false" or "0") and an integer in [low, high]. Anything else is NXE_ERROR_INVALID_ARGUMENT
 * with the message "<what> <key> is '<value>', expected ..." (what: "tensor: option", say). */
nxe_status nxe_engine_parse_bool(const char *what, const char *key, const char *value,
                                 int32_t *out);
nxe_status nxe_engine_parse_int(const char *what, const char *key, const char *value, long low,
                                long high, int32_t *out);

/* Registers the kind "tensor" in a new engine (nxe_engine_create does it). */
nxe_status nxe_tensor_kind_register(nxe_engine *engine);
/* Registers the kind "embedding" in a new engine (nxe_engine_create does it). */
nxe_status nxe_embedding_kind_register(nxe_engine *engine);
/* Registers the kind "asr" in a new engine (nxe_engine_create does it). */
nxe_status nxe_asr_kind_register(nxe_engine *engine);

#endif
