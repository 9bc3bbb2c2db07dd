/* graph_codec.h — the GRAPH section of a model file, built from the shared records
 * (model/records.h), and the fingerprint stream over a model's content. Shared by the writer,
 * the reader and nxe_graph_fingerprint, so they cannot drift apart. docs/formats.md is the
 * specification. */
#ifndef NXE_GRAPH_CODEC_H
#define NXE_GRAPH_CODEC_H

#include "core/sha256.h"
#include "graph/graph_internal.h"
#include "model/records.h"

/* Writes the GRAPH section of `graph` (declared dtypes and shapes, never inferred ones; no
 * tensor data). Fails with NXE_ERROR_INVALID_GRAPH / INVALID_ARGUMENT for a graph that cannot
 * be saved (an op left unbound, a name over the limits); `where` names the caller. */
nxe_status nxe_graph_encode(const nxe_graph *graph, nxe_writer *w, const char *where);

/* Rebuilds a graph from GRAPH section bytes through the graph API and its rules, without
 * tensor data. `file_offset` is where the bytes start in the file, `what` names the section
 * in messages. Malformed bytes fail with NXE_ERROR_FORMAT naming the offset. */
nxe_status nxe_graph_decode(const uint8_t *bytes, size_t size, size_t file_offset, const char *what,
                            nxe_context *ctx, nxe_graph **out);

/* The fingerprint stream: begin with the graph and metadata bytes and the number of stored
 * tensors, then add each stored tensor in bytewise name order, then nxe_sha256_final. */
void nxe_fingerprint_begin(nxe_sha256_ctx *ctx, const uint8_t *graph, size_t graph_size,
                           const uint8_t *metadata, size_t metadata_size, uint32_t num_tensors);
void nxe_fingerprint_add_tensor(nxe_sha256_ctx *ctx, const char *name, int32_t dtype, int32_t ndim,
                                const int64_t *shape, const nxe_quant *quant, const void *data,
                                size_t size);

#endif
