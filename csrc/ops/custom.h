/* custom.h — the definitions of op types a program registers in a context (the context's list
 * is graph/custom_ops.c's): ops given by callbacks and composed ops. Each is an op definition
 * owned by a reference-counted entry, which every node of the type holds (nxe_node_init,
 * nxe_node_clear), so the entry outlives its context while graphs, plans and executables use
 * it. */
#ifndef NXE_CUSTOM_H
#define NXE_CUSTOM_H

#include "ops/op_def.h"

typedef struct nxe_custom_entry nxe_custom_entry;

/* Whether `def` is a registered op (callbacks or composed); NULL is neither. */
bool nxe_custom_def_is_registered(const nxe_op_def *def);
/* Whether `def` is an op with callbacks (it has a per-step instance, see below). */
bool nxe_custom_def_has_callbacks(const nxe_op_def *def);
/* The body of a composed op, NULL for any other def. */
const nxe_graph *nxe_custom_def_body(const nxe_op_def *def);

/* What a model file's check at open decodes an op type with a '.' as when no context is at
 * hand: any inputs, outputs and attributes; its shape rule fails. */
const nxe_op_def *nxe_custom_placeholder_def(void);
bool nxe_custom_def_is_placeholder(const nxe_op_def *def);

/* Reference counting of registered defs; both ignore built-in defs and NULL. */
void nxe_custom_def_retain(const nxe_op_def *def);
void nxe_custom_def_release(const nxe_op_def *def);

/* A list of registrations (newest first): lookup by name (registered ones only) and by ONNX
 * (domain, op type) (the op's name, owned by the entry), and release. */
const nxe_op_def *nxe_custom_list_find(const nxe_custom_entry *head, const char *op_type);
const char *nxe_custom_list_find_onnx(const nxe_custom_entry *head, const char *domain,
                                      const char *op_type);
void nxe_custom_list_free(nxe_custom_entry **head);
/* nxe_context_register_op on a list: checks and copies `op`. */
nxe_status nxe_custom_list_add_op(nxe_custom_entry **head, const nxe_custom_op *op);
/* A composed op: takes `body` (a checked copy) and `input_names` (nxe_alloc'd, num_inputs
 * nxe_strdup'd names), also on failure. */
nxe_status nxe_custom_list_add_composed(nxe_custom_entry **head, const char *name,
                                        const char *domain, nxe_graph *body, int32_t num_inputs,
                                        int32_t num_outputs, char **input_names,
                                        const uint32_t *input_masks);

/* A step of an op with callbacks, once its params are made: copies the node (its attributes
 * for compute) and calls the op's prepare with the inputs (data set for constants). */
nxe_status nxe_custom_prepare_step(const nxe_node *node, void *params, const nxe_value *inputs,
                                   int32_t num_inputs);
/* Frees what nxe_custom_prepare_step made (params may be NULL or unprepared). */
void nxe_custom_step_clear(const nxe_node *node, void *params);

#endif
