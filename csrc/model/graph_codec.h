/* graph_codec.h — the canonical byte encodings a model file is made of (GRAPH section,
 * quantization, TENSORS index entries) and the fingerprint stream over them. One encoder per
 * thing, shared by the writer, the reader and nxe_graph_fingerprint, so they cannot drift
 * apart. docs/formats.md is the specification. */
#ifndef NXE_GRAPH_CODEC_H
#define NXE_GRAPH_CODEC_H

#include "core/sha256.h"
#include "graph/graph_internal.h"
#include "model/container.h"

/* Limits shared by writer and reader: a file the writer accepts always reads back. */
#define NXE_CODEC_MAX_NAME 4096          /* tensor and op names (the graph API's own limit) */
#define NXE_CODEC_MAX_TYPE_NAME 256      /* op type and attribute names */
#define NXE_CODEC_MAX_STRING_ATTR 65536  /* bytes of a string attribute */
#define NXE_CODEC_MAX_ATTR_VALUES 4096   /* ints/floats of one attribute (the graph API's) */
#define NXE_CODEC_MAX_ATTRS 256          /* attributes of one op */
#define NXE_CODEC_MAX_OP_IO 65536        /* inputs or outputs of one op (the graph API's) */
/* Graph building checks each new tensor name against all earlier ones, so decoding costs
 * grow with the square of the tensor count: these bounds keep a hostile file's cost bounded. */
#define NXE_CODEC_MAX_TENSORS (1 << 16)  /* tensors of a graph and entries of the index */
#define NXE_CODEC_MAX_OPS (1 << 16)
#define NXE_CODEC_MAX_SCALES (1 << 24)   /* per-channel scales of one tensor */

/* Writes the GRAPH section of `graph` (declared dtypes and shapes, never inferred ones; no
 * tensor data). Fails with NXE_ERROR_INVALID_GRAPH / INVALID_ARGUMENT for a graph that cannot
 * be saved (an op left unbound, a name over the limits); `where` names the caller. */
nxe_status nxe_graph_encode(const nxe_graph *graph, nxe_writer *w, const char *where);

/* Rebuilds a graph from GRAPH section bytes through the public graph API only, without
 * tensor data. `file_offset` is where the bytes start in the file, `what` names the section
 * in messages. Malformed bytes fail with NXE_ERROR_FORMAT naming the offset. */
nxe_status nxe_graph_decode(const uint8_t *bytes, size_t size, size_t file_offset,
                            const char *what, nxe_context *ctx, nxe_graph **out);

/* One attribute: name, type, value(s) (docs/formats.md). */
void nxe_attr_encode(nxe_writer *w, const nxe_attr *attr);
/* Quantization: u32 type, then per type (docs/formats.md). */
void nxe_quant_encode(nxe_writer *w, const nxe_quant *quant);
/* Reads and checks one quantization (the setters' rules, except the axis, which the caller
 * checks against a shape). Per-channel scales go into *scales (nxe_alloc'd; caller frees) and
 * quant->scales points at them. */
nxe_status nxe_quant_decode(nxe_reader *r, nxe_quant *quant, float **scales);
bool nxe_quant_equal(const nxe_quant *a, const nxe_quant *b);

/* Whether `size` bytes are UTF-8 text without NUL. */
bool nxe_utf8_text(const uint8_t *bytes, size_t size);

/* The fingerprint stream: begin with the graph and metadata bytes and the number of stored
 * tensors, then add each stored tensor in bytewise name order, then nxe_sha256_final. */
void nxe_fingerprint_begin(nxe_sha256_ctx *ctx, const uint8_t *graph, size_t graph_size,
                           const uint8_t *metadata, size_t metadata_size, uint32_t num_tensors);
void nxe_fingerprint_add_tensor(nxe_sha256_ctx *ctx, const char *name, int32_t dtype,
                                int32_t ndim, const int64_t *shape, const nxe_quant *quant,
                                const void *data, size_t size);

#endif
