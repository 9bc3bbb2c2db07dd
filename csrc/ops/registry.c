/* registry.c — the list of op families and the public, queryable op registry. Adding an op
 * family means adding its table here; the schema is what Python and the docs are built from. */
#include <pthread.h>
#include <string.h>

#include "ops/op_def.h"

extern const nxe_op_family nxe_ops_conv;
extern const nxe_op_family nxe_ops_elementwise;
extern const nxe_op_family nxe_ops_matmul;
extern const nxe_op_family nxe_ops_normalization;
extern const nxe_op_family nxe_ops_reduce;
extern const nxe_op_family nxe_ops_data_movement;
extern const nxe_op_family nxe_ops_cast;
extern const nxe_op_family nxe_ops_math;
extern const nxe_op_family nxe_ops_pool;
extern const nxe_op_family nxe_ops_resize;
extern const nxe_op_family nxe_ops_recurrent;
extern const nxe_op_family nxe_ops_attention;
extern const nxe_op_family nxe_ops_quantized;
extern const nxe_op_family nxe_ops_state;

static const nxe_op_family *const families[] = {
    &nxe_ops_conv,      &nxe_ops_elementwise,   &nxe_ops_matmul,    &nxe_ops_normalization,
    &nxe_ops_reduce,    &nxe_ops_data_movement, &nxe_ops_cast,      &nxe_ops_math,
    &nxe_ops_pool,      &nxe_ops_resize,        &nxe_ops_recurrent, &nxe_ops_attention,
    &nxe_ops_quantized, &nxe_ops_state,
};
#define NUM_FAMILIES ((int32_t)(sizeof families / sizeof families[0]))

static const nxe_op_def *def_at(int32_t index)
{
    for (int32_t f = 0; f < NUM_FAMILIES; f++) {
        if (index < families[f]->count)
            return &families[f]->defs[index];
        index -= families[f]->count;
    }
    return NULL;
}

static int32_t def_count(void)
{
    int32_t count = 0;
    for (int32_t f = 0; f < NUM_FAMILIES; f++)
        count += families[f]->count;
    return count;
}

const nxe_op_def *nxe_op_def_find(const char *op_type)
{
    for (int32_t f = 0; f < NUM_FAMILIES; f++)
        for (int32_t i = 0; i < families[f]->count; i++)
            if (strcmp(families[f]->defs[i].info.name, op_type) == 0)
                return &families[f]->defs[i];
    return NULL;
}

NXE_API nxe_status nxe_op_registry_count(int32_t *count)
{
    if (!count)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_registry_count: count is NULL");
    *count = def_count();
    return NXE_OK;
}

NXE_API nxe_status nxe_op_registry_get(int32_t index, const nxe_op_info **info)
{
    if (!info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_registry_get: info is NULL");
    *info = NULL;
    const nxe_op_def *def = index >= 0 ? def_at(index) : NULL;
    if (!def)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_op_registry_get: index %d is outside [0, %d)",
                         index, def_count());
    *info = &def->info;
    return NXE_OK;
}

NXE_API nxe_status nxe_op_registry_find(const char *op_type, const nxe_op_info **info)
{
    if (!info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_registry_find: info is NULL");
    *info = NULL;
    if (!op_type)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_op_registry_find: op_type is NULL");
    const nxe_op_def *def = nxe_op_def_find(op_type);
    if (!def)
        return nxe_error(NXE_ERROR_NOT_FOUND, "nxe_op_registry_find: no op type '%s'", op_type);
    *info = &def->info;
    return NXE_OK;
}

/* String defaults are few and static; their unquoted forms are made once and kept. */
#define MAX_STRING_DEFAULTS 256
#define MAX_STRING_DEFAULT_LENGTH 64

static struct {
    const char *quoted;
    char unquoted[MAX_STRING_DEFAULT_LENGTH];
} string_defaults[MAX_STRING_DEFAULTS];
static int32_t num_string_defaults;
static pthread_mutex_t string_defaults_lock = PTHREAD_MUTEX_INITIALIZER;

const char *nxe_registry_unquoted(const char *quoted)
{
    size_t length = strlen(quoted);
    if (length < 2 || length - 2 >= MAX_STRING_DEFAULT_LENGTH)
        return NULL;
    const char *result = NULL;
    pthread_mutex_lock(&string_defaults_lock);
    for (int32_t i = 0; i < num_string_defaults && !result; i++)
        if (string_defaults[i].quoted == quoted)
            result = string_defaults[i].unquoted;
    if (!result && num_string_defaults < MAX_STRING_DEFAULTS) {
        int32_t slot = num_string_defaults++;
        string_defaults[slot].quoted = quoted;
        memcpy(string_defaults[slot].unquoted, quoted + 1, length - 2);
        string_defaults[slot].unquoted[length - 2] = '\0';
        result = string_defaults[slot].unquoted;
    }
    pthread_mutex_unlock(&string_defaults_lock);
    return result;
}
