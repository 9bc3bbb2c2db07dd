/* quant_lower.h — lowering of ordinary ops on quantized tensors to the integer kernels
 * (quant_lower.c). */
#ifndef NXE_QUANT_LOWER_H
#define NXE_QUANT_LOWER_H

#include "graph/graph_internal.h"

/* When an op of `graph` other than the quantized family (QLinear*, *Integer, QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear) reads or writes a u8/i8/i32 tensor carrying
 * quantization, builds in *out a working copy of the graph in which those ops run on the
 * integer kernels (or through DequantizeLinear, the f32 op and QuantizeLinear where none
 * fits), logging one line per lowered op. The copy's first tensors are the graph's, at the
 * same indices. *out is NULL when nothing needs lowering. `graph` is only read. Fails with
 * NXE_ERROR_INVALID_ARGUMENT for inconsistent quantization (naming the tensor) and with
 * whatever inference of the graph reports. */
nxe_status nxe_quant_lower(const nxe_graph *graph, uint64_t max_tensor_bytes, nxe_graph **out);

/* After `lowered` (from nxe_quant_lower) compiled, records its settled dtypes and shapes as
 * `graph`'s, so that nxe_tensor_get_info reports them. */
nxe_status nxe_quant_lower_settle(nxe_graph *graph, const nxe_graph *lowered);

#endif
