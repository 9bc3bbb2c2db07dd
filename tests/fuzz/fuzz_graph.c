/* fuzz_graph.c — libFuzzer harness over the graph builder and compiler: the input bytes choose
 * a graph of registered ops (types, shapes with 0, 1 and huge dims, attributes within and
 * beyond their schemas, edges), built through the public API and compiled; what compiles runs
 * on small deterministic inputs, and fp32 plans again on the reference path (the kernel table's
 * scalar row), whose outputs the machine's kernels must match. Every failure must be a status
 * with a message, never a crash. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "dispatch.h" /* the reference path: the kernel table's scalar row */

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_graph: %s failed: %s\n", #cond, nxe_last_error());               \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

/* A failed call must leave a message (the ABI's promise). */
#define REQUIRE_MESSAGE(status) REQUIRE((status) == NXE_OK || nxe_last_error()[0] != '\0')

enum {
    MAX_TENSORS = 48,
    MAX_OPS = 8,
    MAX_VARIADIC = 3,
    MAX_PARAMS = 16, /* more than any schema's inputs or outputs plus MAX_VARIADIC */
    MAX_CONSTANT_ELEMENTS = 256,
    /* Graphs whose plan (arena, constants, inputs and outputs) needs more than this are
     * compiled but not run: the fuzzer looks for wrong answers to bad input, not for slow
     * kernels on big tensors. Work grows as the square of memory (a convolution's output
     * times its weights: at most (32 KiB / 4)^2 multiply-adds here), so the bound is small
     * enough that any run ends well inside libFuzzer's timeout under the sanitizers. */
    MAX_RUN_BYTES = 32 << 10,
};

/* The input bytes read front to back; past the end every read is 0, so every input is a
 * complete (if small) graph. */
typedef struct byte_source {
    const uint8_t *data;
    size_t size, pos;
} byte_source;

static uint8_t next_byte(byte_source *src)
{
    return src->pos < src->size ? src->data[src->pos++] : 0;
}

static uint32_t next_u32(byte_source *src)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | next_byte(src);
    return v;
}

static uint32_t pick(byte_source *src, uint32_t count)
{
    return count ? next_byte(src) % count : 0;
}

/* Dimensions: mostly small, with 0 and 1, now and then huge or negative. */
static int64_t next_dim(byte_source *src)
{
    static const int64_t small[] = {1, 2, 3, 4, 1, 2, 0, 5, 8, 1, 16, 3};
    static const int64_t huge[] = {(int64_t)1 << 31,
                                   (int64_t)1 << 32,
                                   (int64_t)1 << 40,
                                   (int64_t)1 << 60,
                                   INT64_MAX,
                                   INT64_MAX / 3,
                                   (int64_t)(1u << 31) - 1,
                                   -1,
                                   -7,
                                   INT64_MIN,
                                   65536,
                                   1 << 20};
    uint8_t b = next_byte(src);
    if (b < 232)
        return small[b % (sizeof small / sizeof small[0])];
    return huge[b % (sizeof huge / sizeof huge[0])];
}

/* Integer attribute and index values: within the usual range of axes, sizes and flags, or far
 * beyond it. */
static int64_t next_int(byte_source *src)
{
    static const int64_t extreme[] = {
        INT64_MAX, INT64_MIN,       (int64_t)1 << 31, -((int64_t)1 << 31), (int64_t)1 << 62,
        4096,      -4097,           1000000,          (int64_t)1 << 33,    INT32_MAX,
        INT32_MIN, (int64_t)1 << 20};
    uint8_t b = next_byte(src);
    if (b < 224)
        return (int64_t)(b % 12) - 3;
    return extreme[b % (sizeof extreme / sizeof extreme[0])];
}

static double next_float(byte_source *src)
{
    static const double special[] = {0.0, -0.0, 1e-30, 1e30, INFINITY, -INFINITY, NAN, 1e300};
    uint8_t b = next_byte(src);
    if (b < 224)
        return ((int)(b % 33) - 16) * 0.125;
    return special[b % (sizeof special / sizeof special[0])];
}

/* The strings the op schemas use (modes, layouts, dtypes), plus ones none of them accept. */
static const char *next_string(byte_source *src, const char *schema_default)
{
    static const char *words[] = {
        "NCHW",
        "NHWC",
        "DCR",
        "CRD",
        "constant",
        "reflect",
        "edge",
        "wrap",
        "nearest",
        "linear",
        "cubic",
        "half_pixel",
        "asymmetric",
        "align_corners",
        "pytorch_half_pixel",
        "round_prefer_floor",
        "round_prefer_ceil",
        "floor",
        "ceil",
        "none",
        "tanh",
        "relu",
        "sigmoid",
        "gelu",
        "f32",
        "u8",
        "i8",
        "i64",
        "bf16",
        "forward",
        "reverse",
        "bidirectional",
        "EXPLICIT",
        "SAME_UPPER",
        "SAME_LOWER",
        "VALID",
        "zeros",
        "border",
        "reflection",
        "",
        "first",
        "last",
        "mean",
        "sum",
        "max",
        "\xff\xfe",
    };
    uint8_t b = next_byte(src);
    static char unquoted[64];
    if (b < 64 && schema_default && schema_default[0] == '"') {
        size_t n = strlen(schema_default);
        if (n >= 2 && n - 2 < sizeof unquoted) {
            memcpy(unquoted, schema_default + 1, n - 2);
            unquoted[n - 2] = '\0';
            return unquoted;
        }
    }
    return words[b % (sizeof words / sizeof words[0])];
}

static const int32_t dtypes_by_preference[] = {
    NXE_DTYPE_F32,  NXE_DTYPE_I64, NXE_DTYPE_F32, NXE_DTYPE_U8,   NXE_DTYPE_I32,
    NXE_DTYPE_BOOL, NXE_DTYPE_I8,  NXE_DTYPE_F16, NXE_DTYPE_BF16, NXE_DTYPE_F64,
    NXE_DTYPE_I16,  NXE_DTYPE_U16, NXE_DTYPE_U32, NXE_DTYPE_U64,
};

/* A dtype the parameter accepts (any dtype when the mask is empty). */
static int32_t next_dtype(byte_source *src, uint32_t mask)
{
    int32_t accepted[NXE_DTYPE_COUNT];
    int32_t count = 0;
    for (size_t i = 0; i < sizeof dtypes_by_preference / sizeof dtypes_by_preference[0]; i++)
        if (!mask || (mask & (1u << dtypes_by_preference[i])))
            accepted[count++] = dtypes_by_preference[i];
    if (count == 0)
        return NXE_DTYPE_F32;
    return accepted[pick(src, (uint32_t)count)];
}

/* Whether this input's constants hold a non-finite or huge float. Then the reference path
 * and the machine's kernels may rightly disagree where a special value meets padding or an
 * overflow (the reference skips padded taps that a GEMM multiplies by zero: NaN * 0), so
 * only elements finite on both sides are compared. */
static int extreme_constants;

/* Deterministic element values: small numbers, so indices and shapes read from them are
 * sometimes valid. */
static void fill_values(void *data, int32_t dtype, int64_t count, byte_source *src)
{
    for (int64_t i = 0; i < count; i++) {
        int64_t v = src ? next_int(src) : (i % 5) - 1;
        switch (dtype) {
        case NXE_DTYPE_F32:
            ((float *)data)[i] = src ? (float)next_float(src) : (float)v * 0.5f;
            if (!(fabsf(((float *)data)[i]) < 1e15f))
                extreme_constants = 1;
            break;
        case NXE_DTYPE_F64: ((double *)data)[i] = (double)v * 0.5; break;
        case NXE_DTYPE_F16: ((uint16_t *)data)[i] = (uint16_t)(0x3c00 + (v & 0xff)); break;
        case NXE_DTYPE_BF16: ((uint16_t *)data)[i] = (uint16_t)(0x3f80 + (v & 0x7f)); break;
        case NXE_DTYPE_I8:
        case NXE_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
        case NXE_DTYPE_BOOL: ((uint8_t *)data)[i] = (uint8_t)(v & 1); break;
        case NXE_DTYPE_I16:
        case NXE_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
        case NXE_DTYPE_I32:
        case NXE_DTYPE_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
        default: ((int64_t *)data)[i] = v; break;
        }
    }
}

typedef struct fuzz_graph {
    nxe_graph *graph;
    nxe_tensor *tensors[MAX_TENSORS];
    int32_t dtypes[MAX_TENSORS];
    int consumed[MAX_TENSORS];
    int produced[MAX_TENSORS];
    int32_t count;
    int32_t names;
} fuzz_graph;

static int32_t add_tensor(fuzz_graph *g, nxe_tensor_spec *spec)
{
    if (g->count == MAX_TENSORS)
        return -1;
    char name[32];
    snprintf(name, sizeof name, "t%d", (int)g->names++);
    spec->name = name;
    nxe_tensor *t = NULL;
    nxe_status status = nxe_graph_add_tensor(g->graph, spec, &t);
    REQUIRE_MESSAGE(status);
    REQUIRE((status == NXE_OK) == (t != NULL));
    if (status != NXE_OK)
        return -1;
    g->tensors[g->count] = t;
    g->dtypes[g->count] = spec->dtype;
    return g->count++;
}

/* A new graph input or constant of a dtype in `mask`; constants carry data from the input
 * bytes and are kept small enough to hold. */
static int32_t new_leaf(fuzz_graph *g, byte_source *src, uint32_t mask)
{
    int64_t shape[NXE_MAX_RANK + 1];
    uint8_t b = next_byte(src);
    int32_t ndim = b < 250 ? (int32_t)(b % 5) : (int32_t)(b % 8);
    for (int32_t i = 0; i < ndim; i++)
        shape[i] = next_dim(src);
    nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
    spec.dtype = next_dtype(src, mask);
    spec.kind = next_byte(src) < 128 ? NXE_TENSOR_INPUT : NXE_TENSOR_CONSTANT;
    spec.ndim = ndim;
    spec.shape = shape;
    int64_t numel = 1;
    for (int32_t i = 0; i < ndim && i < NXE_MAX_RANK; i++)
        numel = shape[i] < 0 || shape[i] > MAX_CONSTANT_ELEMENTS ||
                        numel * shape[i] > MAX_CONSTANT_ELEMENTS
                    ? -1
                    : numel * shape[i];
    if (spec.kind == NXE_TENSOR_CONSTANT && numel < 0)
        spec.kind = NXE_TENSOR_INPUT;
    int32_t index = add_tensor(g, &spec);
    if (index < 0 || spec.kind != NXE_TENSOR_CONSTANT)
        return index;
    int32_t elem = 0;
    REQUIRE(nxe_dtype_info(spec.dtype, NULL, &elem) == NXE_OK);
    void *data = calloc((size_t)(numel ? numel : 1), (size_t)elem);
    REQUIRE(data != NULL);
    fill_values(data, spec.dtype, numel, src);
    REQUIRE(nxe_tensor_set_data(g->tensors[index], data, (size_t)numel * (size_t)elem) == NXE_OK);
    free(data);
    if (next_byte(src) >= 248)
        REQUIRE_MESSAGE(nxe_tensor_set_quant_asymmetric(g->tensors[index], (float)next_float(src),
                                                        (int32_t)next_int(src)));
    return index;
}

/* An existing tensor of an accepted dtype, or a new leaf. */
static nxe_tensor *choose_input(fuzz_graph *g, byte_source *src, const nxe_op_param_info *param)
{
    uint8_t b = next_byte(src);
    if (b < 176 && g->count > 0) {
        for (int32_t tries = 0, start = (int32_t)pick(src, (uint32_t)g->count); tries < g->count;
             tries++) {
            int32_t i = (start + tries) % g->count;
            /* now and then an edge the schema does not allow */
            if (b < 8 || (param->dtypes & (1u << g->dtypes[i]))) {
                g->consumed[i] = 1;
                return g->tensors[i];
            }
        }
    }
    int32_t index = new_leaf(g, src, param->dtypes);
    return index < 0 ? NULL : g->tensors[index];
}

/* The schema's count, with 1 to MAX_VARIADIC entries for a variadic last parameter. */
static int32_t param_count(byte_source *src, const nxe_op_param_info *params, int32_t num)
{
    if (num > 0 && params[num - 1].variadic)
        num += (int32_t)pick(src, MAX_VARIADIC);
    REQUIRE(num <= MAX_PARAMS);
    return num;
}

static void set_attributes(nxe_op *op, const nxe_op_info *info, byte_source *src)
{
    for (int32_t a = 0; a < info->num_attrs; a++) {
        const nxe_op_attr_info *attr = &info->attrs[a];
        uint8_t b = next_byte(src);
        /* required attributes are set most of the time, optional ones some of the time */
        if (b < (attr->default_value ? 160 : 16))
            continue;
        int32_t type = b >= 250 ? (int32_t)(b % 6) : attr->type; /* sometimes the wrong type */
        nxe_status status = NXE_OK;
        switch (type) {
        case NXE_ATTR_INT: status = nxe_op_set_attr_int(op, attr->name, next_int(src)); break;
        case NXE_ATTR_FLOAT: status = nxe_op_set_attr_float(op, attr->name, next_float(src)); break;
        case NXE_ATTR_STRING:
            status = nxe_op_set_attr_string(op, attr->name, next_string(src, attr->default_value));
            break;
        case NXE_ATTR_INTS: {
            int64_t values[8];
            int32_t count = (int32_t)pick(src, 9);
            for (int32_t i = 0; i < count; i++)
                values[i] = next_int(src);
            status = nxe_op_set_attr_ints(op, attr->name, values, count);
            break;
        }
        case NXE_ATTR_FLOATS: {
            float values[8];
            int32_t count = (int32_t)pick(src, 9);
            for (int32_t i = 0; i < count; i++)
                values[i] = (float)next_float(src);
            status = nxe_op_set_attr_floats(op, attr->name, values, count);
            break;
        }
        default: status = nxe_op_set_attr_int(op, "no_such_attribute", 1); break;
        }
        REQUIRE_MESSAGE(status);
    }
}

/* Adds one op of a registry-chosen type with its inputs, outputs and attributes; an op whose
 * binding fails is removed again. */
static void add_op(fuzz_graph *g, byte_source *src, int32_t registry_count)
{
    const nxe_op_info *info = NULL;
    REQUIRE(nxe_op_registry_get((int32_t)(next_u32(src) % (uint32_t)registry_count), &info) ==
            NXE_OK);
    nxe_op *op = NULL;
    nxe_status status = nxe_graph_add_op(g->graph, info->name, NULL, &op);
    REQUIRE(status == NXE_OK && op != NULL);
    set_attributes(op, info, src);

    nxe_tensor *inputs[MAX_PARAMS] = {0};
    int32_t num_inputs = param_count(src, info->inputs, info->num_inputs);
    for (int32_t i = 0; i < num_inputs; i++) {
        const nxe_op_param_info *param =
            &info->inputs[i < info->num_inputs ? i : info->num_inputs - 1];
        if (param->optional && next_byte(src) < 128)
            continue;
        inputs[i] = choose_input(g, src, param);
    }
    nxe_tensor *outputs[MAX_PARAMS] = {0};
    int32_t first_output = g->count;
    int32_t num_outputs = param_count(src, info->outputs, info->num_outputs);
    for (int32_t i = 0; i < num_outputs; i++) {
        nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
        spec.dtype = NXE_DTYPE_NONE;
        int64_t shape[NXE_MAX_RANK];
        if (next_byte(src) >= 240) { /* a declared output the rule may contradict */
            spec.dtype = next_dtype(src, 0);
            spec.ndim = (int32_t)pick(src, 4);
            for (int32_t d = 0; d < spec.ndim; d++)
                shape[d] = next_dim(src);
            spec.shape = shape;
        }
        int32_t index = add_tensor(g, &spec);
        if (index < 0)
            break;
        outputs[i] = g->tensors[index];
    }
    status = nxe_op_bind_inputs(op, inputs, num_inputs);
    REQUIRE_MESSAGE(status);
    if (status == NXE_OK) {
        status = nxe_op_bind_outputs(op, outputs, num_outputs);
        REQUIRE_MESSAGE(status);
    }
    if (status != NXE_OK) {
        REQUIRE(nxe_graph_remove_op(g->graph, op) == NXE_OK);
        return; /* its unbound outputs stay behind: compile must name them */
    }
    for (int32_t i = first_output; i < g->count; i++)
        g->produced[i] = 1;
}

/* total + bytes, capped just above MAX_RUN_BYTES so that no sum of huge sizes wraps around. */
static uint64_t add_bounded(uint64_t total, uint64_t bytes)
{
    return total > MAX_RUN_BYTES || bytes > MAX_RUN_BYTES ? MAX_RUN_BYTES + 1 : total + bytes;
}

/* IEEE half to float, for comparing f16 outputs. */
static float half_to_float(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float magnitude = exponent == 0    ? ldexpf((float)mantissa, -24)
                      : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                       : ldexpf((float)(mantissa | 0x400), exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

/* Element i of a floating-point output as a double; false for the other dtypes. */
static int float_element(const nxe_tensor_desc *d, int64_t i, double *v)
{
    if ((uint64_t)i >= d->data_size / (size_t)(d->dtype_bits / 8 ? d->dtype_bits / 8 : 1))
        return 0;
    if (d->dtype_code == NXE_DL_FLOAT && d->dtype_bits == 32)
        *v = ((const float *)d->data)[i];
    else if (d->dtype_code == NXE_DL_FLOAT && d->dtype_bits == 64)
        *v = ((const double *)d->data)[i];
    else if (d->dtype_code == NXE_DL_FLOAT && d->dtype_bits == 16)
        *v = half_to_float(((const uint16_t *)d->data)[i]);
    else if (d->dtype_code == NXE_DL_BFLOAT && d->dtype_bits == 16) {
        uint32_t bits = (uint32_t)((const uint16_t *)d->data)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        *v = f;
    } else
        return 0;
    return 1;
}

/* The machine's kernels against the reference path: integer and boolean outputs must match
 * exactly; floating-point elements must be the same kind of non-finite value, or finite and
 * within 1e-3 (2e-2 for 16-bit floats) of the output's largest finite reference magnitude
 * plus one, as the kernels sum in other orders. With extreme constants only elements finite
 * on both sides are compared. */
static void compare_outputs(const nxe_tensor_desc *got, const nxe_tensor_desc *want, int32_t n)
{
    for (int32_t o = 0; o < n; o++) {
        REQUIRE(got[o].data_size == want[o].data_size && got[o].ndim == want[o].ndim);
        double scratch;
        if (want[o].data_size == 0)
            continue;
        if (!float_element(&want[o], 0, &scratch)) {
            if (memcmp(got[o].data, want[o].data, want[o].data_size) != 0) {
                fprintf(stderr, "fuzz_graph: output %d differs from the reference path\n", o);
                __builtin_trap();
            }
            continue;
        }
        const int64_t count = (int64_t)(want[o].data_size / (size_t)(want[o].dtype_bits / 8));
        double scale = 1.0;
        for (int64_t i = 0; i < count; i++) {
            double w;
            float_element(&want[o], i, &w);
            if (isfinite(w) && fabs(w) + 1.0 > scale)
                scale = fabs(w) + 1.0;
        }
        const double tolerance = (want[o].dtype_bits == 16 ? 2e-2 : 1e-3) * scale;
        for (int64_t i = 0; i < count; i++) {
            double g, w;
            float_element(&got[o], i, &g);
            float_element(&want[o], i, &w);
            if (extreme_constants && !(isfinite(g) && isfinite(w)))
                continue;
            const int same = isnan(w)   ? isnan(g)
                             : isinf(w) ? g == w
                                        : isfinite(g) && fabs(g - w) <= tolerance;
            if (!same) {
                fprintf(stderr,
                        "fuzz_graph: output %d element %lld is %.9g, the reference path gives "
                        "%.9g (tolerance %.3g)\n",
                        o, (long long)i, g, w, tolerance);
                __builtin_trap();
            }
        }
    }
}

/* Outputs sized like `descs`, data allocated; NULL when out of memory. */
static nxe_tensor_desc *alloc_outputs(const nxe_tensor_desc *descs, int32_t n)
{
    nxe_tensor_desc *out = calloc((size_t)n + 1, sizeof *out);
    for (int32_t i = 0; out && i < n; i++) {
        out[i] = descs[i];
        out[i].data = malloc(out[i].data_size ? out[i].data_size : 1);
        if (!out[i].data) {
            while (i-- > 0)
                free(out[i].data);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void free_outputs(nxe_tensor_desc *out, int32_t n)
{
    for (int32_t i = 0; out && i < n; i++)
        free(out[i].data);
    free(out);
}

/* The same graph compiled again with this process's kernel table replaced by the scalar row
 * (the reference path of every op), run on the same inputs; the outputs must agree. */
static void check_against_reference(nxe_graph *graph, const nxe_compile_options *options,
                                    const nxe_tensor_desc *in, int32_t num_inputs,
                                    const nxe_tensor_desc *got, int32_t num_outputs)
{
    int32_t rows = 0;
    const nxe_kernel_table *reference = &nxe_kernel_rows(&rows)[0];
    if (nxe_kernels()->level == reference->level)
        return; /* the machine runs the reference path already */
    const nxe_kernel_table machine = nxe_kernels_replace(reference);
    nxe_executable *exe = NULL;
    nxe_status status = nxe_graph_compile(graph, options, &exe);
    REQUIRE_MESSAGE(status);
    nxe_tensor_desc *want = alloc_outputs(got, num_outputs);
    if (exe && want) {
        status = nxe_executable_run(exe, in, num_inputs, want, num_outputs);
        REQUIRE_MESSAGE(status);
        if (status == NXE_OK)
            compare_outputs(got, want, num_outputs);
    }
    free_outputs(want, num_outputs);
    nxe_executable_release(exe);
    nxe_kernels_replace(&machine);
}

/* Runs a compiled graph on deterministic inputs when its plan is small, copying out and
 * without copies, and (fp32 plans) against the reference path. */
static void run_small(nxe_executable *exe, nxe_graph *graph, const nxe_compile_options *options)
{
    nxe_memory_info memory = {.struct_size = sizeof memory};
    REQUIRE(nxe_executable_memory_info(exe, &memory) == NXE_OK);
    uint64_t total = add_bounded(memory.arena_bytes, memory.constant_bytes);
    int32_t num_inputs = 0, num_outputs = 0;
    REQUIRE(nxe_executable_io_count(exe, &num_inputs, &num_outputs) == NXE_OK);
    nxe_tensor_desc *in = calloc((size_t)num_inputs + 1, sizeof *in);
    nxe_tensor_desc *descs = calloc((size_t)num_outputs + 1, sizeof *descs);
    REQUIRE(in && descs);
    for (int32_t i = 0; i < num_inputs; i++) {
        REQUIRE(nxe_executable_input_desc(exe, i, &in[i], NULL) == NXE_OK);
        total = add_bounded(total, in[i].data_size);
    }
    for (int32_t i = 0; i < num_outputs; i++) {
        REQUIRE(nxe_executable_output_desc(exe, i, &descs[i], NULL) == NXE_OK);
        total = add_bounded(total, descs[i].data_size);
    }
    if (total <= MAX_RUN_BYTES) {
        int ok = 1;
        for (int32_t i = 0; i < num_inputs && ok; i++) {
            int64_t numel = 1;
            for (int32_t d = 0; d < in[i].ndim; d++)
                numel *= in[i].shape[d];
            in[i].data = malloc(in[i].data_size ? in[i].data_size : 1);
            ok = in[i].data != NULL;
            /* f32 inputs get small values of both signs, the others a pattern of ones */
            if (ok && in[i].dtype_code == NXE_DL_FLOAT && in[i].dtype_bits == 32)
                fill_values(in[i].data, NXE_DTYPE_F32, numel, NULL);
            else if (ok)
                memset(in[i].data, 1, in[i].data_size);
        }
        nxe_tensor_desc *out = ok ? alloc_outputs(descs, num_outputs) : NULL;
        if (out) {
            nxe_status status = nxe_executable_run(exe, in, num_inputs, out, num_outputs);
            REQUIRE_MESSAGE(status);
            if (status == NXE_OK) {
                nxe_tensor_desc *zero_copy = calloc((size_t)num_outputs + 1, sizeof *zero_copy);
                REQUIRE(zero_copy != NULL);
                status = nxe_executable_run_nocopy(exe, in, num_inputs, zero_copy, num_outputs);
                REQUIRE_MESSAGE(status);
                free(zero_copy);
                if (!options->relax_precision)
                    check_against_reference(graph, options, in, num_inputs, out, num_outputs);
            }
        }
        free_outputs(out, num_outputs);
        for (int32_t i = 0; i < num_inputs; i++)
            free(in[i].data);
    }
    free(in);
    free(descs);
}

/* A compiled graph also serializes and loads back. */
static void round_trip_binary(nxe_graph *graph, const nxe_compile_options *options)
{
    size_t size = 0;
    nxe_status status = nxe_graph_compile_to_binary(graph, options, NULL, &size);
    if (status != NXE_ERROR_BUFFER_TOO_SMALL && status != NXE_OK) {
        REQUIRE_MESSAGE(status);
        return;
    }
    void *buffer = malloc(size ? size : 1);
    REQUIRE(buffer != NULL);
    REQUIRE(nxe_graph_compile_to_binary(graph, options, buffer, &size) == NXE_OK);
    nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
    load.num_threads = 1;
    nxe_executable *exe = NULL;
    REQUIRE(nxe_executable_load_memory(buffer, size, &load, &exe) == NXE_OK);
    nxe_executable_release(exe);
    free(buffer);
}

/* To look at a finding: FUZZ_GRAPH_SAVE=PATH writes each input's graph as a model file there
 * before it compiles (`nxe model info PATH`, nxe.Model(PATH).graph()). */
static void save_for_inspection(nxe_graph *graph)
{
    const char *path = getenv("FUZZ_GRAPH_SAVE");
    size_t size = 0;
    if (!path)
        return;
    if (nxe_graph_save_model(graph, NULL, NULL, &size) != NXE_OK) {
        fprintf(stderr, "fuzz_graph: not saved: %s\n", nxe_last_error());
        return;
    }
    void *buffer = malloc(size);
    FILE *file = fopen(path, "wb");
    if (buffer && file && nxe_graph_save_model(graph, NULL, buffer, &size) == NXE_OK)
        fwrite(buffer, 1, size, file);
    if (file)
        fclose(file);
    free(buffer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    byte_source src = {data, size, 0};
    extreme_constants = 0;
    int32_t registry_count = 0;
    REQUIRE(nxe_op_registry_count(&registry_count) == NXE_OK && registry_count > 0);
    nxe_context *ctx = NULL;
    REQUIRE(nxe_context_create(&ctx) == NXE_OK);
    fuzz_graph g = {0};
    REQUIRE(nxe_graph_create(ctx, &g.graph) == NXE_OK);

    int32_t num_ops = 1 + (int32_t)pick(&src, MAX_OPS);
    for (int32_t i = 0; i < num_ops; i++)
        add_op(&g, &src, registry_count);
    /* Results nobody consumes become graph outputs, unless the bytes ask to leave them dangling */
    int leave_dangling = next_byte(&src) >= 248;
    for (int32_t i = 0; i < g.count; i++)
        if (g.produced[i] && !g.consumed[i] && !leave_dangling)
            REQUIRE(nxe_tensor_set_kind(g.tensors[i], NXE_TENSOR_OUTPUT) == NXE_OK);

    nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
    options.num_threads = 1;
    uint8_t flags = next_byte(&src);
    options.relax_precision = flags & 1;
    save_for_inspection(g.graph);
    nxe_executable *exe = NULL;
    nxe_status status = nxe_graph_compile(g.graph, &options, &exe);
    REQUIRE_MESSAGE(status);
    REQUIRE((status == NXE_OK) == (exe != NULL));
    if (exe) {
        run_small(exe, g.graph, &options);
        nxe_executable_release(exe);
        if (flags & 2)
            round_trip_binary(g.graph, &options);
    }
    nxe_graph_release(g.graph);
    nxe_context_release(ctx);
    return 0;
}
