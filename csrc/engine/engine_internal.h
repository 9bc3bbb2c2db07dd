/* engine_internal.h — what the engine (engine.c) and its built-in kinds (tensor_kind.c,
 * embedding_kind.c) share.
 * Internal; the kind sees the engine only through the public batch accessors. */
#ifndef NXE_ENGINE_INTERNAL_H
#define NXE_ENGINE_INTERNAL_H

#include "core/core.h"
#include "nxe/nxe_engine.h"

/* Registers the kind "tensor" in a new engine (nxe_engine_create does it). */
nxe_status nxe_tensor_kind_register(nxe_engine *engine);
/* Registers the kind "embedding" in a new engine (nxe_engine_create does it). */
nxe_status nxe_embedding_kind_register(nxe_engine *engine);

#endif
