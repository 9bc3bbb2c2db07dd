/* limits.h — every size limit of graphs and of the two file formats, in one place: the graph
 * API, the writers and the readers of .nxm and .nxb files all check these, so a graph that can
 * be built can be saved within them and every file the library writes reads back. Beyond them
 * a writer refuses with NXE_ERROR_INVALID_ARGUMENT and a reader treats the file as corrupt.
 * docs/formats.md lists them; tests/test_file_limits.py round-trips each one exactly. */
#ifndef NXE_LIMITS_H
#define NXE_LIMITS_H

/* Tensor and op names, in bytes (the graph API refuses longer tensor names). */
#define NXE_LIMIT_NAME 4096
/* Op type and attribute names, in bytes: they come from the op registry. */
#define NXE_LIMIT_TYPE_NAME 256
/* Bytes of one string attribute. */
#define NXE_LIMIT_STRING_ATTR 65536
/* Values of one ints or floats attribute (the graph API refuses more). */
#define NXE_LIMIT_ATTR_VALUES 4096
/* Attributes of one op: no schema declares more. */
#define NXE_LIMIT_ATTRS 256
/* Inputs or outputs bound to one op (the graph API refuses more). */
#define NXE_LIMIT_OP_IO 65536
/* Tensors of a graph or plan (and entries of a model's tensor index): what a hostile file can
 * make a reader build stays bounded. */
#define NXE_LIMIT_TENSORS 65536
/* Ops of a graph or steps of a plan. Every op writes a tensor of its own, so a graph within
 * the tensor limit always has fewer ops: this one only bounds what a reader accepts. */
#define NXE_LIMIT_OPS NXE_LIMIT_TENSORS
/* Per-channel quantization scales of one tensor. */
#define NXE_LIMIT_SCALES 16777216
/* Bytes of one tensor a compiled binary describes (1 TiB): with at most NXE_LIMIT_TENSORS of
 * them, every sum of sizes a loader forms stays far from overflow. What a compile or a load may
 * take is further bounded by the caller's nxe_limits (nxe.h), checked as shapes settle. */
#define NXE_LIMIT_TENSOR_BYTES 1099511627776ull
/* Sections of one container, and the alignment a container may declare (a power of two). */
#define NXE_LIMIT_SECTIONS 32
#define NXE_LIMIT_MIN_ALIGNMENT 64u
#define NXE_LIMIT_MAX_ALIGNMENT 65536u

#endif
