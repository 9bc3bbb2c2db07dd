/* node.h — one op instance as the layers above the ops see it: its definition, its name and the
 * attributes set on it. The graph builder and the binary loader make nodes; the shape rules,
 * the compiler and the binary writer read them. Attributes are checked against the op's schema
 * when set, and the getters fall back to the schema's defaults, so the schema is the only place
 * a default lives. */
#ifndef NXE_NODE_H
#define NXE_NODE_H

#include "core/core.h"

typedef struct nxe_op_def nxe_op_def;

typedef struct nxe_attr {
    char *name;
    int32_t type; /* enum nxe_attr_type */
    int64_t int_value;
    double float_value;
    char *string_value;
    int64_t *ints;
    float *floats;
    int32_t count; /* INTS / FLOATS */
} nxe_attr;

typedef struct nxe_node {
    const nxe_op_def *def;
    char *name;
    nxe_attr *attrs; /* in the order they were first set */
    int32_t num_attrs;
    int32_t attr_capacity;
} nxe_node;

/* A node of `def` named `name` (copied), without attributes. */
nxe_status nxe_node_init(nxe_node *node, const nxe_op_def *def, const char *name);
/* A deep copy of `node` into `copy`. */
nxe_status nxe_node_copy(nxe_node *copy, const nxe_node *node);
/* Frees what the node owns and zeroes it. */
void nxe_node_clear(nxe_node *node);
void nxe_attr_clear(nxe_attr *attr);

/* Sets `value` (name, type and value, copied) on the node, replacing an earlier value of that
 * name. Fails with NXE_ERROR_NOT_FOUND for a name the schema lacks and INVALID_ARGUMENT for
 * another type or more than NXE_LIMIT_ATTR_VALUES values; `where` names the caller. */
nxe_status nxe_node_set_attr(nxe_node *node, const nxe_attr *value, const char *where);
/* The attribute with the smallest name above `after` (NULL: the smallest of all): the
 * canonical order attributes are written in. */
const nxe_attr *nxe_node_next_attr(const nxe_node *node, const char *after);

/* The schema's parameter for input or output `index` (a variadic last one repeats). */
const nxe_op_param_info *nxe_node_param(const nxe_node *node, bool outputs, int32_t index);
/* Whether `count` tensors fit the schema's inputs or outputs: the required ones present, no
 * more than declared unless the last one repeats, at most NXE_LIMIT_OP_IO. Fails with
 * NXE_ERROR_INVALID_ARGUMENT naming the op; `where` names the caller. */
nxe_status nxe_node_check_io_count(const nxe_node *node, bool outputs, int64_t count,
                                   const char *where);

/* ---- what shape rules read ---- */

const char *nxe_node_type(const nxe_node *node);
const char *nxe_node_name(const nxe_node *node);
/* Attribute getters return the value set on the node, else the schema default. An attribute
 * without default that was not set fails with a message naming op and attribute. */
nxe_status nxe_node_attr_int(const nxe_node *node, const char *name, int64_t *value);
nxe_status nxe_node_attr_float(const nxe_node *node, const char *name, double *value);
/* The string lives as long as the node. */
nxe_status nxe_node_attr_string(const nxe_node *node, const char *name, const char **value);
/* Copies up to `capacity` values; *count receives the full count (fails if > capacity). */
nxe_status nxe_node_attr_ints(const nxe_node *node, const char *name, int64_t *values,
                              int32_t capacity, int32_t *count);
nxe_status nxe_node_attr_floats(const nxe_node *node, const char *name, float *values,
                                int32_t capacity, int32_t *count);
/* Records an error prefixed with "op 'Type' ('name'): " and returns `status`. */
nxe_status nxe_node_error(const nxe_node *node, nxe_status status, const char *fmt, ...)
    NXE_PRINTF(3, 4);

#endif
