/* records.h — the byte records both file formats are built from, one encoder and one decoder
 * each: quantization, a tensor's description, an op's node (type, name, attributes) and a list
 * of tensor ids. The GRAPH section of a model file and the PLAN section of a compiled binary
 * are made of them, the writers check the limits of core/limits.h before writing and the
 * readers enforce the same ones, so the library reads every file it writes. docs/formats.md
 * is the specification. */
#ifndef NXE_RECORDS_H
#define NXE_RECORDS_H

#include "core/limits.h"
#include "model/container.h"
#include "ops/op_def.h"

/* Quantization: u32 type, then per type. */
void nxe_quant_encode(nxe_writer *w, const nxe_quant *quant);
/* Reads and checks one quantization (the setters' rules, except the axis, which the caller
 * checks against a shape). Per-channel scales go into *scales (nxe_alloc'd; caller frees) and
 * quant->scales points at them. */
nxe_status nxe_quant_decode(nxe_reader *r, nxe_quant *quant, float **scales);
bool nxe_quant_equal(const nxe_quant *a, const nxe_quant *b);

/* Whether `size` bytes are UTF-8 text without NUL. */
bool nxe_utf8_text(const uint8_t *bytes, size_t size);

/* A tensor's description: name, kind, dtype, rank, dims and quantization. */
typedef struct nxe_tensor_record {
    char *name;
    int32_t kind;
    int32_t dtype; /* NXE_DTYPE_NONE: left to inference */
    int32_t ndim;  /* -1: rank unknown */
    int64_t shape[NXE_MAX_RANK];
    nxe_quant quant;
    float *scales; /* storage behind quant.scales */
} nxe_tensor_record;

/* Fails with NXE_ERROR_INVALID_ARGUMENT, naming the limit, when a tensor's name or scales
 * exceed what the record holds; `where` names the caller. */
nxe_status nxe_tensor_record_check(const char *name, const nxe_quant *quant, const char *where);
void nxe_tensor_record_encode(nxe_writer *w, const char *name, int32_t kind, int32_t dtype,
                              int32_t ndim, const int64_t *shape, const nxe_quant *quant);
/* Reads one record and checks it on its own: a name of 1 to NXE_LIMIT_NAME bytes, a known
 * kind, a known dtype or NONE, rank -1 to NXE_MAX_RANK, dims >= -1, a valid quantization.
 * What the record means in its section is the caller's to check. */
nxe_status nxe_tensor_record_decode(nxe_reader *r, nxe_tensor_record *record);
void nxe_tensor_record_clear(nxe_tensor_record *record);

/* An op's node: its type, its name and its attributes in strictly increasing name order. */
nxe_status nxe_node_record_check(const nxe_node *node, const char *where);
void nxe_node_record_encode(nxe_writer *w, const nxe_node *node);
/* Reads a node of a registered op type; every attribute must be one the schema declares, of
 * its type (nxe_node_set_attr), and come after the previous one in name order. */
nxe_status nxe_node_record_decode(nxe_reader *r, nxe_node *node);

/* The tensors bound to a node's inputs or outputs: u32 count, count x i32 tensor ids (-1: an
 * absent optional input). The decoder checks the count against the node's schema
 * (nxe_node_check_io_count); the caller checks the ids. *ids is nxe_alloc'd. */
void nxe_ids_encode(nxe_writer *w, const int32_t *ids, int32_t count);
nxe_status nxe_ids_decode(nxe_reader *r, const nxe_node *node, bool outputs, int32_t **ids,
                          int32_t *count);

/* A rule of the library refused what a record says (`status` and the last error): the same
 * message as a format error at `item_pos`, introduced by `item` (out of memory stays what it
 * is). */
nxe_status nxe_reader_refused(const nxe_reader *r, nxe_status status, size_t item_pos,
                              const char *item);

#endif
