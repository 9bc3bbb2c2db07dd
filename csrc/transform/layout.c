/* layout.c — the layout pass: a plan authored channels last (NHWC activations, OHWI weights,
 * or channels-first ops between Transposes as converters export them) is rewritten to run
 * channels first, the layout the convolution kernels are fastest in, with Transposes only where
 * a region meets a tensor whose layout is public.
 *
 * Every rank-4 tensor gets a storage order: perm p says that stored axis k holds the tensor's
 * public axis p[k] (the identity for public order; {0, 3, 1, 2} for a public [N, H, W, C]
 * stored [N, C, H, W]). One walk over the steps, in plan order, decides each step's:
 * - channels-last ops (layout "NHWC": Conv2d, the 2-D and global pools, BatchNorm,
 *   InstanceNorm, DepthToSpace) become their "NCHW" twins, reading and writing channels first;
 *   a Conv2d's OHWI weight becomes OIHW;
 * - elementwise ops keep the order of their first rank-4 operand that is not a constant;
 *   Concat, Resize, Pad, Softmax and the reductions keep their input's order with their axis
 *   attributes renumbered; one whose only non-constant operand is a graph input it alone
 *   reads takes the order its readers want instead, moving the Transpose onto the input;
 * - a Transpose relabels axes without moving data: its output takes the order that keeps the
 *   bytes where they are, and the step goes, unless what reads its output demands another
 *   order (then it stays, with the perm that moves the stored bytes once);
 * - any other op, a graph input, output or variable keeps the public order.
 * Where an operand's order is not the one its step reads, a constant is permuted here, once,
 * and anything else gets a Transpose step, shared by every reader wanting that order. Then each
 * rewritten tensor records its stored shape and each step's shape rule runs again, so the plan
 * stays what a loader re-checks. */
#include <stdio.h>
#include <string.h>

#include "transform/layout.h"

#define RANK 4

typedef struct perm {
    uint8_t p[RANK];
} perm;

static const perm IDENTITY = {{0, 1, 2, 3}};
static const perm CHANNELS_FIRST = {{0, 3, 1, 2}}; /* a public [N, H, W, C] stored [N, C, H, W] */

static bool perm_equal(perm a, perm b)
{
    return memcmp(a.p, b.p, RANK) == 0;
}

static perm perm_inverse(perm a)
{
    perm r;
    for (int32_t k = 0; k < RANK; k++)
        r.p[a.p[k]] = (uint8_t)k;
    return r;
}

enum op_class {
    CLASS_OTHER,       /* reads and writes public order */
    CLASS_LAYOUT,      /* has a layout attribute */
    CLASS_ELEMENTWISE, /* any order, the same for all operands */
    CLASS_CONCAT,
    CLASS_RESIZE,
    CLASS_TRANSPOSE,
    CLASS_PAD,     /* per-axis pads */
    CLASS_REDUCE,  /* axes and keepdims */
    CLASS_SOFTMAX, /* one axis */
};

static const char *const layout_ops[] = {
    "Conv2d",    "MaxPool2d",    "AveragePool2d", "LpPool2d", "GlobalMaxPool", "GlobalAveragePool",
    "BatchNorm", "InstanceNorm", "DepthToSpace",
};

static const char *const elementwise_ops[] = {
    "Add",      "Sub",   "Mul",        "Div",         "Pow",       "Min",         "Max",
    "PRelu",    "Where", "Relu",       "LeakyRelu",   "Tanh",      "Sigmoid",     "Gelu",
    "Erf",      "Clip",  "Swish",      "Abs",         "Neg",       "Sign",        "Exp",
    "Log",      "Sqrt",  "Reciprocal", "Floor",       "Ceil",      "Round",       "Sin",
    "Cos",      "Elu",   "Selu",       "HardSigmoid", "HardSwish", "Mish",        "Softplus",
    "Softsign", "Cast",  "Equal",      "Less",        "Greater",   "LessOrEqual", "GreaterOrEqual",
    "And",      "Or",    "Xor",        "Not",         "IsNaN",     "IsInf",
};

static const char *const reduce_ops[] = {
    "ReduceSum",  "ReduceMean", "ReduceMax", "ReduceMin",
    "ReduceProd", "ReduceL1",   "ReduceL2",  "ReduceSumSquare",
};

static bool listed(const char *type, const char *const *names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(type, names[i]) == 0)
            return true;
    return false;
}

static enum op_class classify(const nxe_exe_step *step)
{
    const char *type = nxe_node_type(&step->node);
    if (listed(type, layout_ops, sizeof layout_ops / sizeof layout_ops[0]))
        return CLASS_LAYOUT;
    if (listed(type, elementwise_ops, sizeof elementwise_ops / sizeof elementwise_ops[0]))
        return CLASS_ELEMENTWISE;
    if (strcmp(type, "Concat") == 0)
        return CLASS_CONCAT;
    if (strcmp(type, "Resize") == 0)
        return CLASS_RESIZE;
    if (strcmp(type, "Transpose") == 0)
        return CLASS_TRANSPOSE;
    if (strcmp(type, "Pad") == 0)
        return CLASS_PAD;
    if (listed(type, reduce_ops, sizeof reduce_ops / sizeof reduce_ops[0]))
        return CLASS_REDUCE;
    if (strcmp(type, "Softmax") == 0 || strcmp(type, "LogSoftmax") == 0)
        return CLASS_SOFTMAX;
    return CLASS_OTHER;
}

/* Whether a layout op's attribute says NHWC. */
static bool channels_last(const nxe_exe_step *step)
{
    const char *layout;
    return nxe_node_attr_string(&step->node, "layout", &layout) == NXE_OK &&
           strcmp(layout, "NHWC") == 0;
}

/* A Transpose's perm (the reversal when unset); false unless it has rank 4. */
static bool transpose_perm(const nxe_exe_step *step, perm *out)
{
    int64_t values[NXE_MAX_RANK];
    int32_t count = 0;
    if (nxe_node_attr_ints(&step->node, "perm", values, NXE_MAX_RANK, &count) != NXE_OK)
        return false;
    if (count == 0) {
        *out = (perm){{3, 2, 1, 0}};
        return true;
    }
    if (count != RANK)
        return false;
    bool seen[RANK] = {false};
    for (int32_t k = 0; k < RANK; k++) {
        if (values[k] < 0 || values[k] >= RANK || seen[values[k]])
            return false;
        seen[values[k]] = true;
        out->p[k] = (uint8_t)values[k];
    }
    return true;
}

typedef struct pass {
    nxe_layout_plan *plan;
    perm *perms;                      /* per tensor: its storage order (rank 4) */
    int32_t *store;                   /* per tensor: the tensor whose bytes hold it */
    int64_t (*logical)[NXE_MAX_RANK]; /* per tensor: its public shape */
    int32_t *logical_ndim;
    perm *demand;          /* per tensor: the order its readers want */
    uint8_t *demand_state; /* 0 none, 1 demand holds it, 2 readers disagree */
    int32_t *uses;         /* per tensor: step inputs reading it */
    int32_t *sharers;      /* per constant buffer: tensors using it */
    nxe_exe_step *steps;   /* the rewritten steps */
    int32_t num_steps;
    int32_t *copy_source; /* permuted copies made: source tensor, order, copy */
    perm *copy_perm;
    int32_t *copy_id;
    int32_t num_copies;
    int32_t tensor_capacity; /* what the plan's arrays grow to when there is work */
    int32_t constant_capacity;
} pass;

static nxe_status out_of_memory(void)
{
    return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "layout pass: out of memory");
}

/* Replaces *array (count elements of `size` bytes) by a zeroed one of `capacity`. */
static bool grow(void **array, size_t size, int32_t count, int32_t capacity)
{
    void *bigger = nxe_alloc_zeroed(size * (size_t)capacity);
    if (!bigger)
        return false;
    if (count > 0)
        memcpy(bigger, *array, size * (size_t)count);
    nxe_free(*array);
    *array = bigger;
    return true;
}

static nxe_status pass_init(pass *ps, nxe_layout_plan *plan)
{
    int64_t io = 0;
    for (int32_t s = 0; s < plan->num_steps; s++)
        io += plan->steps[s].num_inputs + plan->steps[s].num_outputs;
    /* At most one new tensor and one new step per step input and output. */
    if (io > (int64_t)INT32_MAX / 4 - plan->num_tensors - plan->num_steps)
        return out_of_memory();
    const int32_t tensors = plan->num_tensors + (int32_t)io + 1;
    const int32_t steps = plan->num_steps + (int32_t)io + 1;
    const int32_t constants = plan->num_constants + (int32_t)io + 1;
    const size_t n = (size_t)tensors;
    *ps = (pass){
        .plan = plan,
        .perms = nxe_alloc(sizeof(perm) * n),
        .store = nxe_alloc(sizeof(int32_t) * n),
        .logical = nxe_alloc(sizeof(int64_t) * NXE_MAX_RANK * n),
        .logical_ndim = nxe_alloc(sizeof(int32_t) * n),
        .demand = nxe_alloc(sizeof(perm) * n),
        .demand_state = nxe_alloc_zeroed(n),
        .uses = nxe_alloc_zeroed(sizeof(int32_t) * n),
        .sharers = nxe_alloc_zeroed(sizeof(int32_t) * (size_t)constants),
        .steps = nxe_alloc_zeroed(sizeof(nxe_exe_step) * (size_t)steps),
        .copy_source = nxe_alloc(sizeof(int32_t) * n),
        .copy_perm = nxe_alloc(sizeof(perm) * n),
        .copy_id = nxe_alloc(sizeof(int32_t) * n),
    };
    if (!ps->perms || !ps->store || !ps->logical || !ps->logical_ndim || !ps->demand ||
        !ps->demand_state || !ps->uses || !ps->sharers || !ps->steps || !ps->copy_source ||
        !ps->copy_perm || !ps->copy_id)
        return out_of_memory();
    ps->tensor_capacity = tensors;
    ps->constant_capacity = constants;
    for (int32_t i = 0; i < plan->num_tensors; i++) {
        const nxe_exe_tensor *t = &plan->tensors[i];
        ps->perms[i] = IDENTITY;
        ps->store[i] = i;
        ps->logical_ndim[i] = t->ndim;
        memcpy(ps->logical[i], t->shape, sizeof ps->logical[i]);
        if (t->kind == NXE_TENSOR_CONSTANT && t->constant >= 0)
            ps->sharers[t->constant]++;
    }
    for (int32_t s = 0; s < plan->num_steps; s++)
        for (int32_t j = 0; j < plan->steps[s].num_inputs; j++)
            if (plan->steps[s].input_ids[j] >= 0)
                ps->uses[plan->steps[s].input_ids[j]]++;
    return NXE_OK;
}

static void pass_free(pass *ps)
{
    nxe_free(ps->perms);
    nxe_free(ps->store);
    nxe_free(ps->logical);
    nxe_free(ps->logical_ndim);
    nxe_free(ps->demand);
    nxe_free(ps->demand_state);
    nxe_free(ps->uses);
    nxe_free(ps->sharers);
    nxe_free(ps->copy_source);
    nxe_free(ps->copy_perm);
    nxe_free(ps->copy_id);
    for (int32_t s = 0; ps->steps && s < ps->num_steps; s++)
        nxe_exe_step_clear(&ps->steps[s]);
    nxe_free(ps->steps);
}

static bool is_public(const nxe_exe_tensor *t)
{
    return t->kind != NXE_TENSOR_TRANSIENT && t->kind != NXE_TENSOR_CONSTANT;
}

/* ---- what the readers of each tensor want ---- */

static void want(pass *ps, int32_t t, perm p)
{
    if (t < 0)
        return;
    if (ps->demand_state[t] == 0) {
        ps->demand[t] = p;
        ps->demand_state[t] = 1;
    } else if (ps->demand_state[t] == 1 && !perm_equal(ps->demand[t], p)) {
        ps->demand_state[t] = 2;
    }
}

/* Whether the plan has anything to rewrite, and the demands. */
static bool gather_demands(pass *ps)
{
    const nxe_layout_plan *plan = ps->plan;
    bool work = false;
    for (int32_t i = 0; i < plan->num_tensors; i++)
        if (is_public(&plan->tensors[i]))
            want(ps, i, IDENTITY);
    for (int32_t s = 0; s < plan->num_steps; s++) {
        const nxe_exe_step *step = &plan->steps[s];
        const enum op_class c = classify(step);
        const int32_t in0 = step->num_inputs > 0 ? step->input_ids[0] : -1;
        perm p;
        if (c == CLASS_LAYOUT && in0 >= 0 && ps->logical_ndim[in0] == RANK && channels_last(step)) {
            work = true;
            want(ps, in0, CHANNELS_FIRST);
        } else if (c == CLASS_TRANSPOSE && in0 >= 0 && ps->logical_ndim[in0] == RANK &&
                   transpose_perm(step, &p)) {
            /* The converters' sandwiches: NHWC -> NCHW and back. */
            work |= perm_equal(p, CHANNELS_FIRST) || perm_equal(p, perm_inverse(CHANNELS_FIRST));
        } else if (c == CLASS_LAYOUT || c == CLASS_OTHER) {
            for (int32_t j = 0; j < step->num_inputs; j++)
                want(ps, step->input_ids[j], IDENTITY);
        }
    }
    return work;
}

/* ---- new tensors and steps ---- */

static nxe_status add_tensor(pass *ps, int32_t source, int32_t kind, perm p, int32_t *out)
{
    nxe_layout_plan *plan = ps->plan;
    const int32_t id = plan->num_tensors;
    const nxe_exe_tensor *src = &plan->tensors[source];
    nxe_exe_tensor *t = &plan->tensors[id];
    *t = (nxe_exe_tensor){.kind = kind,
                          .dtype = src->dtype,
                          .quant = src->quant,
                          .bytes = src->bytes,
                          .constant = -1};
    /* Named after the tensor it stands for; the plan refers to tensors by index. */
    const size_t size = strlen(src->name) + 32;
    t->name = nxe_alloc(size);
    if (!t->name)
        return out_of_memory();
    snprintf(t->name, size, "%s#layout%d", src->name, id);
    t->ndim = RANK;
    memcpy(t->shape, ps->logical[source], sizeof t->shape);
    plan->num_tensors = id + 1;
    ps->perms[id] = p;
    ps->store[id] = id;
    ps->logical_ndim[id] = RANK;
    memcpy(ps->logical[id], ps->logical[source], sizeof ps->logical[id]);
    ps->demand_state[id] = 0;
    ps->uses[id] = 0;
    if (kind == NXE_TENSOR_TRANSIENT) {
        t->in_arena = true;
        plan->transient_bytes += t->bytes;
    }
    *out = id;
    return NXE_OK;
}

/* A Transpose step reading tensor `from` and writing `to`: output axis k is input axis q[k]. */
static nxe_status add_transpose(pass *ps, int32_t from, int32_t to, perm q, const char *name)
{
    nxe_exe_step *step = &ps->steps[ps->num_steps];
    const nxe_op_def *def = nxe_op_def_find("Transpose");
    if (!def)
        return nxe_error(NXE_ERROR_INTERNAL, "layout pass: no Transpose op");
    int64_t values[RANK];
    for (int32_t k = 0; k < RANK; k++)
        values[k] = q.p[k];
    const nxe_attr attr = {
        .name = (char *)"perm", .type = NXE_ATTR_INTS, .ints = values, .count = RANK};
    nxe_status status = nxe_node_init(&step->node, def, name);
    ps->num_steps++; /* cleared with the others on failure */
    if (status == NXE_OK)
        status = nxe_node_set_attr(&step->node, &attr, "layout pass");
    if (status != NXE_OK)
        return status;
    step->num_inputs = step->num_outputs = 1;
    step->input_ids = nxe_alloc(sizeof(int32_t) * 2);
    step->output_ids = nxe_alloc(sizeof(int32_t) * 2);
    step->input_values = nxe_alloc_zeroed(sizeof(nxe_value) * 2);
    step->output_values = nxe_alloc_zeroed(sizeof(nxe_value) * 2);
    if (!step->input_ids || !step->output_ids || !step->input_values || !step->output_values)
        return out_of_memory();
    step->input_ids[0] = from;
    step->output_ids[0] = to;
    nxe_log(NXE_LOG_DEBUG, "layout pass: Transpose '%s' [%d, %d, %d, %d] added", name, q.p[0],
            q.p[1], q.p[2], q.p[3]);
    return NXE_OK;
}

/* The copy of `t` stored in order p (a Transpose step reading t's bytes). */
static nxe_status permuted_activation(pass *ps, int32_t t, perm p, int32_t *out)
{
    for (int32_t c = 0; c < ps->num_copies; c++)
        if (ps->copy_source[c] == t && perm_equal(ps->copy_perm[c], p)) {
            *out = ps->copy_id[c];
            return NXE_OK;
        }
    int32_t id;
    nxe_status status = add_tensor(ps, t, NXE_TENSOR_TRANSIENT, p, &id);
    if (status != NXE_OK)
        return status;
    /* Output axis k is public axis p[k], stored in t's bytes at axis inverse(perms[t])[p[k]]. */
    const perm back = perm_inverse(ps->perms[t]);
    perm q;
    for (int32_t k = 0; k < RANK; k++)
        q.p[k] = back.p[p.p[k]];
    status = add_transpose(ps, ps->store[t], id, q, ps->plan->tensors[id].name);
    if (status != NXE_OK)
        return status;
    ps->copy_source[ps->num_copies] = t;
    ps->copy_perm[ps->num_copies] = p;
    ps->copy_id[ps->num_copies++] = id;
    *out = id;
    return NXE_OK;
}

/* Writes the rank-4 array `src` (public shape `shape`) stored in order p into dst. */
static void permute_bytes(const uint8_t *src, uint8_t *dst, const int64_t *shape, perm p,
                          size_t element)
{
    int64_t strides[RANK];
    strides[RANK - 1] = 1;
    for (int32_t d = RANK - 2; d >= 0; d--)
        strides[d] = strides[d + 1] * shape[d + 1];
    const int64_t n0 = shape[p.p[0]], n1 = shape[p.p[1]], n2 = shape[p.p[2]], n3 = shape[p.p[3]];
    const int64_t s0 = strides[p.p[0]], s1 = strides[p.p[1]], s2 = strides[p.p[2]],
                  s3 = strides[p.p[3]];
    size_t out = 0;
    for (int64_t i0 = 0; i0 < n0; i0++)
        for (int64_t i1 = 0; i1 < n1; i1++)
            for (int64_t i2 = 0; i2 < n2; i2++)
                for (int64_t i3 = 0; i3 < n3; i3++) {
                    const int64_t from = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
                    memcpy(dst + out, src + (size_t)from * element, element);
                    out += element;
                }
}

/* Constant t stored in order p: permuted in place when t is its buffer's only tensor and has
 * one reader, else a new constant. A constant of lower rank is first given leading 1s (as
 * broadcasting reads it). */
static nxe_status permuted_constant(pass *ps, int32_t t, perm p, int32_t *out)
{
    nxe_layout_plan *plan = ps->plan;
    for (int32_t c = 0; c < ps->num_copies; c++)
        if (ps->copy_source[c] == t && perm_equal(ps->copy_perm[c], p)) {
            *out = ps->copy_id[c];
            return NXE_OK;
        }
    nxe_exe_tensor *src = &plan->tensors[t];
    const int32_t rank = ps->logical_ndim[t];
    int64_t shape[NXE_MAX_RANK] = {0};
    for (int32_t d = 0; d < RANK; d++)
        shape[d] = d < RANK - rank ? 1 : ps->logical[t][d - (RANK - rank)];
    const size_t element = nxe_dtype_size(src->dtype);
    uint8_t *bytes = nxe_alloc(src->bytes ? src->bytes : 1);
    if (!bytes)
        return out_of_memory();
    if (src->bytes)
        permute_bytes(src->storage, bytes, shape, p, element);
    const int32_t c = src->constant;
    if (ps->uses[t] == 1 && c >= 0 && ps->sharers[c] == 1) {
        if (plan->constants[c].owned)
            nxe_free(plan->constants[c].data);
        plan->constants[c].data = bytes;
        plan->constants[c].owned = true;
        src->storage = bytes;
        plan->data[t] = bytes;
        memcpy(ps->logical[t], shape, sizeof shape);
        ps->logical_ndim[t] = RANK;
        if (src->quant.num_scales > 0)
            src->quant.axis += RANK - rank;
        ps->perms[t] = p;
        *out = t;
        return NXE_OK;
    }
    int32_t id;
    nxe_status status = add_tensor(ps, t, NXE_TENSOR_CONSTANT, p, &id);
    if (status != NXE_OK) {
        nxe_free(bytes);
        return status;
    }
    nxe_exe_tensor *copy = &plan->tensors[id];
    memcpy(ps->logical[id], shape, sizeof shape);
    if (copy->quant.num_scales > 0)
        copy->quant.axis += RANK - rank;
    const int32_t slot = plan->num_constants++;
    plan->constants[slot] = (nxe_exe_constant){.data = bytes, .bytes = copy->bytes, .owned = true};
    plan->constant_bytes += copy->bytes;
    copy->constant = slot;
    copy->storage = bytes;
    plan->data[id] = bytes;
    ps->copy_source[ps->num_copies] = t;
    ps->copy_perm[ps->num_copies] = p;
    ps->copy_id[ps->num_copies++] = id;
    *out = id;
    return NXE_OK;
}

static int64_t logical_numel(const pass *ps, int32_t t)
{
    int64_t n = 1;
    for (int32_t d = 0; d < ps->logical_ndim[t]; d++)
        n *= ps->logical[t][d];
    return n;
}

/* Makes input j of step read its tensor in order p. */
static nxe_status require(pass *ps, nxe_exe_step *step, int32_t j, perm p)
{
    const int32_t t = step->input_ids[j];
    if (t < 0)
        return NXE_OK;
    const bool constant = ps->plan->tensors[t].kind == NXE_TENSOR_CONSTANT;
    const bool identity = perm_equal(p, IDENTITY);
    if (ps->logical_ndim[t] != RANK) {
        /* Lower ranks broadcast from the right; a single value reads the same in any order. */
        if (constant && !identity && ps->logical_ndim[t] < RANK && logical_numel(ps, t) > 1)
            return permuted_constant(ps, t, p, &step->input_ids[j]);
        return NXE_OK;
    }
    if (perm_equal(ps->perms[t], p)) {
        step->input_ids[j] = ps->store[t];
        return NXE_OK;
    }
    if (constant && ps->store[t] == t)
        return permuted_constant(ps, t, p, &step->input_ids[j]);
    return permuted_activation(ps, t, p, &step->input_ids[j]);
}

/* ---- one step ---- */

static nxe_status set_int_attr(nxe_exe_step *step, const char *name, int64_t value)
{
    const nxe_attr attr = {.name = (char *)name, .type = NXE_ATTR_INT, .int_value = value};
    return nxe_node_set_attr(&step->node, &attr, "layout pass");
}

/* Resize's per-axis attributes, renumbered for input order p. */
static nxe_status reorder_resize(nxe_exe_step *step, perm p)
{
    float floats[2 * RANK], reordered[2 * RANK];
    int64_t ints[RANK], reordered_ints[RANK];
    int32_t count = 0;
    nxe_status status = nxe_node_attr_floats(&step->node, "scales", floats, 2 * RANK, &count);
    if (status == NXE_OK && count == RANK) {
        for (int32_t k = 0; k < RANK; k++)
            reordered[k] = floats[p.p[k]];
        const nxe_attr attr = {
            .name = (char *)"scales", .type = NXE_ATTR_FLOATS, .floats = reordered, .count = RANK};
        status = nxe_node_set_attr(&step->node, &attr, "layout pass");
    }
    if (status == NXE_OK)
        status = nxe_node_attr_ints(&step->node, "sizes", ints, RANK, &count);
    if (status == NXE_OK && count == RANK) {
        for (int32_t k = 0; k < RANK; k++)
            reordered_ints[k] = ints[p.p[k]];
        const nxe_attr attr = {
            .name = (char *)"sizes", .type = NXE_ATTR_INTS, .ints = reordered_ints, .count = RANK};
        status = nxe_node_set_attr(&step->node, &attr, "layout pass");
    }
    if (status == NXE_OK)
        status = nxe_node_attr_floats(&step->node, "roi", floats, 2 * RANK, &count);
    if (status == NXE_OK && count == 2 * RANK) {
        for (int32_t k = 0; k < RANK; k++) {
            reordered[k] = floats[p.p[k]];
            reordered[RANK + k] = floats[RANK + p.p[k]];
        }
        const nxe_attr attr = {
            .name = (char *)"roi", .type = NXE_ATTR_FLOATS, .floats = reordered, .count = 2 * RANK};
        status = nxe_node_set_attr(&step->node, &attr, "layout pass");
    }
    return status;
}

/* Pad's pads (all beginnings, then all ends), renumbered for input order p. */
static nxe_status reorder_pads(nxe_exe_step *step, perm p)
{
    int64_t pads[2 * RANK], reordered[2 * RANK];
    int32_t count = 0;
    nxe_status status = nxe_node_attr_ints(&step->node, "pads", pads, 2 * RANK, &count);
    if (status != NXE_OK || count != 2 * RANK)
        return status;
    for (int32_t k = 0; k < RANK; k++) {
        reordered[k] = pads[p.p[k]];
        reordered[RANK + k] = pads[RANK + p.p[k]];
    }
    const nxe_attr attr = {
        .name = (char *)"pads", .type = NXE_ATTR_INTS, .ints = reordered, .count = 2 * RANK};
    return nxe_node_set_attr(&step->node, &attr, "layout pass");
}

/* A reduction over a rank-4 input stored in order p: renumbers its axes and says in which
 * order its output is stored; false when the output would not be in its public order (a
 * reduction dropping axes so that the rest are out of order), which then reads the public
 * order. */
static bool reduction_order(nxe_exe_step *step, perm p, perm *order, nxe_status *status)
{
    int64_t axes[NXE_MAX_RANK], keepdims = 1;
    int32_t count = 0;
    *status = NXE_OK;
    if (nxe_node_attr_ints(&step->node, "axes", axes, NXE_MAX_RANK, &count) != NXE_OK ||
        nxe_node_attr_int(&step->node, "keepdims", &keepdims) != NXE_OK || count > RANK)
        return false;
    const perm where = perm_inverse(p);
    bool reduced[RANK] = {false};
    for (int32_t i = 0; i < count; i++) {
        if (axes[i] < -RANK || axes[i] >= RANK)
            return false;
        axes[i] = where.p[axes[i] < 0 ? axes[i] + RANK : axes[i]];
        reduced[axes[i]] = true;
    }
    if (!keepdims) {
        /* The stored axes that remain must hold increasing public axes. */
        int32_t last = -1;
        for (int32_t k = 0; k < RANK; k++) {
            if (count > 0 && !reduced[k]) {
                if (p.p[k] < last)
                    return false;
                last = p.p[k];
            }
        }
    }
    *order = keepdims ? p : IDENTITY;
    if (count > 0) {
        const nxe_attr attr = {
            .name = (char *)"axes", .type = NXE_ATTR_INTS, .ints = axes, .count = count};
        *status = nxe_node_set_attr(&step->node, &attr, "layout pass");
    }
    return true;
}

/* The first rank-4 operand that is not a constant, or -1. */
static int32_t lead_input(const pass *ps, const nxe_exe_step *step)
{
    for (int32_t j = 0; j < step->num_inputs; j++) {
        const int32_t t = step->input_ids[j];
        if (t >= 0 && ps->logical_ndim[t] == RANK &&
            ps->plan->tensors[t].kind != NXE_TENSOR_CONSTANT)
            return t;
    }
    return -1;
}

/* The order a step reading public tensor `lead` writes in: the one its output's readers
 * want when `lead` has no other reader, so that the Transpose a region needs goes before the
 * step, onto the graph's input, rather than after it; else `order`. */
static perm toward_readers(const pass *ps, const nxe_exe_step *step, int32_t lead, perm order)
{
    const int32_t out = step->output_ids[0];
    if (lead >= 0 && is_public(&ps->plan->tensors[lead]) && ps->uses[lead] == 1 &&
        ps->logical_ndim[out] == RANK && ps->demand_state[out] == 1)
        return ps->demand[out];
    return order;
}

/* A Transpose: vanishes when its output can keep the input's bytes, else moves them once. */
static nxe_status rewrite_transpose(pass *ps, nxe_exe_step *step, perm p, bool *keep)
{
    const int32_t in = step->input_ids[0], out = step->output_ids[0];
    const perm inverse = perm_inverse(p);
    perm same; /* the output order that keeps the input's bytes where they are */
    for (int32_t k = 0; k < RANK; k++)
        same.p[k] = inverse.p[ps->perms[in].p[k]];
    const nxe_exe_tensor *t = &ps->plan->tensors[out];
    perm order = same;
    if (t->kind != NXE_TENSOR_TRANSIENT)
        order = IDENTITY;
    else if (ps->demand_state[out] == 1)
        order = ps->demand[out];
    if (t->kind == NXE_TENSOR_TRANSIENT && perm_equal(order, same)) {
        ps->store[out] = ps->store[in];
        ps->perms[out] = same;
        *keep = false;
        nxe_log(NXE_LOG_DEBUG, "layout pass: Transpose '%s' only relabels axes; removed",
                step->node.name);
        return NXE_OK;
    }
    /* Output axis k is public axis order[k] = input public axis p[order[k]]. */
    const perm back = perm_inverse(ps->perms[in]);
    perm q;
    int64_t values[RANK];
    for (int32_t k = 0; k < RANK; k++) {
        q.p[k] = back.p[p.p[order.p[k]]];
        values[k] = q.p[k];
    }
    const nxe_attr attr = {
        .name = (char *)"perm", .type = NXE_ATTR_INTS, .ints = values, .count = RANK};
    step->input_ids[0] = ps->store[in];
    ps->perms[out] = order;
    return nxe_node_set_attr(&step->node, &attr, "layout pass");
}

/* Rewrites step (moved into the new list, after any Transposes its operands need). */
static nxe_status rewrite_step(pass *ps, nxe_exe_step *step)
{
    const enum op_class c = classify(step);
    const int32_t in0 = step->num_inputs > 0 ? step->input_ids[0] : -1;
    const bool rank4 = in0 >= 0 && ps->logical_ndim[in0] == RANK;
    perm order = IDENTITY, p;
    nxe_status status = NXE_OK;
    if (c == CLASS_TRANSPOSE && rank4 && step->num_outputs == 1 && transpose_perm(step, &p)) {
        bool keep = true;
        status = rewrite_transpose(ps, step, p, &keep);
        if (status == NXE_OK && keep) {
            ps->steps[ps->num_steps++] = *step;
            *step = (nxe_exe_step){0};
        } else {
            nxe_exe_step_clear(step);
        }
        return status;
    }
    if (c == CLASS_LAYOUT && rank4 && channels_last(step)) {
        const nxe_attr attr = {
            .name = (char *)"layout", .type = NXE_ATTR_STRING, .string_value = (char *)"NCHW"};
        status = nxe_node_set_attr(&step->node, &attr, "layout pass");
        order = CHANNELS_FIRST;
        if (status == NXE_OK)
            status = require(ps, step, 0, CHANNELS_FIRST);
        /* Conv2d's weight: OHWI read as OIHW. */
        if (status == NXE_OK && strcmp(nxe_node_type(&step->node), "Conv2d") == 0 &&
            step->num_inputs > 1)
            status = require(ps, step, 1, CHANNELS_FIRST);
        const int32_t first = strcmp(nxe_node_type(&step->node), "Conv2d") == 0 ? 2 : 1;
        for (int32_t j = first; status == NXE_OK && j < step->num_inputs; j++)
            status = require(ps, step, j, IDENTITY);
    } else if ((c == CLASS_ELEMENTWISE || c == CLASS_CONCAT) && step->num_outputs == 1 &&
               ps->logical_ndim[step->output_ids[0]] == RANK && lead_input(ps, step) >= 0) {
        const int32_t lead = lead_input(ps, step);
        order = ps->perms[lead];
        bool broadcast = false; /* an operand broadcast at run time: public order */
        for (int32_t j = 0; j < step->num_inputs; j++) {
            const int32_t t = step->input_ids[j];
            if (t >= 0 && ps->plan->tensors[t].kind != NXE_TENSOR_CONSTANT &&
                ps->logical_ndim[t] != RANK && logical_numel(ps, t) > 1)
                broadcast = true;
        }
        order = broadcast           ? IDENTITY
                : c == CLASS_CONCAT ? order
                                    : toward_readers(ps, step, lead, order);
        for (int32_t j = 0; status == NXE_OK && j < step->num_inputs; j++)
            status = require(ps, step, j, order);
        int64_t axis = 0;
        if (status == NXE_OK && c == CLASS_CONCAT &&
            nxe_node_attr_int(&step->node, "axis", &axis) == NXE_OK && axis >= -RANK &&
            axis < RANK && !perm_equal(order, IDENTITY)) {
            const perm where = perm_inverse(order);
            status = set_int_attr(step, "axis", where.p[axis < 0 ? axis + RANK : axis]);
        }
    } else if (c == CLASS_PAD && rank4 && step->num_outputs == 1) {
        order = toward_readers(ps, step, in0, ps->perms[in0]);
        status = require(ps, step, 0, order);
        if (status == NXE_OK && !perm_equal(order, IDENTITY))
            status = reorder_pads(step, order);
    } else if (c == CLASS_SOFTMAX && rank4 && step->num_outputs == 1) {
        int64_t axis = -1;
        order = toward_readers(ps, step, in0, ps->perms[in0]);
        status = require(ps, step, 0, order);
        if (status == NXE_OK && !perm_equal(order, IDENTITY) &&
            nxe_node_attr_int(&step->node, "axis", &axis) == NXE_OK && axis >= -RANK && axis < RANK)
            status =
                set_int_attr(step, "axis", perm_inverse(order).p[axis < 0 ? axis + RANK : axis]);
    } else if (c == CLASS_REDUCE && rank4 && step->num_inputs == 1 && step->num_outputs == 1 &&
               reduction_order(step, ps->perms[in0], &order, &status)) {
        if (status == NXE_OK)
            status = require(ps, step, 0, ps->perms[in0]);
    } else if (c == CLASS_RESIZE && rank4 && step->num_outputs == 1) {
        order = toward_readers(ps, step, in0, ps->perms[in0]);
        status = require(ps, step, 0, order);
        if (status == NXE_OK && !perm_equal(order, IDENTITY))
            status = reorder_resize(step, order);
    } else {
        for (int32_t j = 0; status == NXE_OK && j < step->num_inputs; j++)
            status = require(ps, step, j, IDENTITY);
    }
    if (status != NXE_OK)
        return status;
    /* Outputs: stored in `order`; a public one gets it through a Transpose after the step. */
    enum { MOST = 8 }; /* the ops rewritten here have one output */
    int32_t stand_in[MOST], public_of[MOST], targets = 0;
    for (int32_t j = 0; j < step->num_outputs; j++) {
        const int32_t o = step->output_ids[j];
        if (ps->logical_ndim[o] != RANK)
            continue;
        if (!is_public(&ps->plan->tensors[o]) || perm_equal(order, IDENTITY)) {
            ps->perms[o] = order;
            continue;
        }
        if (targets == MOST)
            return nxe_error(NXE_ERROR_INTERNAL, "layout pass: op '%s' has too many outputs",
                             step->node.name);
        status = add_tensor(ps, o, NXE_TENSOR_TRANSIENT, order, &stand_in[targets]);
        if (status != NXE_OK)
            return status;
        step->output_ids[j] = stand_in[targets];
        public_of[targets++] = o;
        /* Readers that want `order` read the stand-in, not the public tensor. */
        ps->copy_source[ps->num_copies] = o;
        ps->copy_perm[ps->num_copies] = order;
        ps->copy_id[ps->num_copies++] = stand_in[targets - 1];
    }
    ps->steps[ps->num_steps++] = *step;
    *step = (nxe_exe_step){0};
    for (int32_t r = 0; status == NXE_OK && r < targets; r++)
        status = add_transpose(ps, stand_in[r], public_of[r], perm_inverse(order),
                               ps->plan->tensors[stand_in[r]].name);
    return status;
}

/* ---- the rewritten plan's shapes and params ---- */

static void describe(const nxe_exe_tensor *t, nxe_value *v)
{
    *v = (nxe_value){.dtype = t->dtype, .ndim = t->ndim, .quant = &t->quant};
    memcpy(v->shape, t->shape, sizeof v->shape);
}

static nxe_status settle(pass *ps)
{
    nxe_layout_plan *plan = ps->plan;
    for (int32_t i = 0; i < plan->num_tensors; i++) {
        nxe_exe_tensor *t = &plan->tensors[i];
        if (ps->logical_ndim[i] != RANK || ps->store[i] != i || perm_equal(ps->perms[i], IDENTITY))
            continue;
        const perm p = ps->perms[i];
        t->ndim = RANK;
        for (int32_t k = 0; k < RANK; k++)
            t->shape[k] = ps->logical[i][p.p[k]];
        if (t->quant.num_scales > 0)
            t->quant.axis = perm_inverse(p).p[t->quant.axis];
    }
    for (int32_t s = 0; s < ps->num_steps; s++) {
        nxe_exe_step *step = &ps->steps[s];
        for (int32_t j = 0; j < step->num_inputs; j++) {
            const int32_t id = step->input_ids[j];
            if (id < 0) {
                step->input_values[j] =
                    (nxe_value){.dtype = NXE_DTYPE_NONE, .quant = &nxe_no_quant};
                continue;
            }
            describe(&plan->tensors[id], &step->input_values[j]);
            if (plan->tensors[id].kind == NXE_TENSOR_CONSTANT)
                step->input_values[j].data = plan->tensors[id].storage;
        }
        for (int32_t j = 0; j < step->num_outputs; j++)
            describe(&plan->tensors[step->output_ids[j]], &step->output_values[j]);
        const nxe_op_def *def = step->node.def;
        nxe_free(step->params);
        step->params = nxe_alloc_zeroed(def->params_size ? def->params_size : 1);
        if (!step->params)
            return out_of_memory();
        nxe_status status = def->infer(&step->node, step->input_values, step->num_inputs,
                                       step->output_values, step->num_outputs, step->params);
        for (int32_t j = 0; j < step->num_inputs; j++)
            step->input_values[j].data = NULL;
        for (int32_t j = 0; status == NXE_OK && j < step->num_outputs; j++) {
            const nxe_exe_tensor *t = &plan->tensors[step->output_ids[j]];
            const nxe_value *v = &step->output_values[j];
            if (v->dtype != t->dtype || v->ndim != t->ndim ||
                memcmp(v->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0)
                status = nxe_error(NXE_ERROR_INTERNAL, "makes '%s' in another shape", t->name);
        }
        if (status != NXE_OK) {
            nxe_error_prefix("layout pass: op '%s' ('%s'): ", nxe_node_type(&step->node),
                             step->node.name);
            return NXE_ERROR_INTERNAL;
        }
    }
    return NXE_OK;
}

/* Moves the Transposes that read a graph input to the front of the list, in their order. They
 * depend on nothing else, and left where their reader needed them they would stand between a
 * step and the activation or residual Add that folds into it (a residual input read channels
 * first lands right before its Add). */
static void hoist_input_transposes(pass *ps)
{
    int32_t front = 0;
    for (int32_t s = 0; s < ps->num_steps; s++) {
        const nxe_exe_step *step = &ps->steps[s];
        if (classify(step) != CLASS_TRANSPOSE || step->num_inputs != 1 || step->input_ids[0] < 0 ||
            ps->plan->tensors[step->input_ids[0]].kind != NXE_TENSOR_INPUT)
            continue;
        const nxe_exe_step moved = *step;
        memmove(&ps->steps[front + 1], &ps->steps[front],
                sizeof(nxe_exe_step) * (size_t)(s - front));
        ps->steps[front++] = moved;
    }
}

nxe_status nxe_layout_pass(nxe_layout_plan *plan)
{
    pass ps;
    nxe_status status = pass_init(&ps, plan);
    if (status == NXE_OK && !gather_demands(&ps)) {
        pass_free(&ps);
        return NXE_OK;
    }
    if (status == NXE_OK &&
        (!grow((void **)&plan->tensors, sizeof(nxe_exe_tensor), plan->num_tensors,
               ps.tensor_capacity) ||
         !grow((void **)&plan->data, sizeof(void *), plan->num_tensors, ps.tensor_capacity) ||
         !grow((void **)&plan->constants, sizeof(nxe_exe_constant), plan->num_constants,
               ps.constant_capacity)))
        status = out_of_memory();
    for (int32_t s = 0; status == NXE_OK && s < plan->num_steps; s++)
        status = rewrite_step(&ps, &plan->steps[s]);
    if (status == NXE_OK)
        status = settle(&ps);
    if (status == NXE_OK) {
        hoist_input_transposes(&ps);
        /* The old list holds only moved-out (zeroed) or cleared steps. */
        nxe_exe_step *old = plan->steps;
        int32_t removed = plan->num_steps;
        plan->steps = ps.steps;
        plan->num_steps = ps.num_steps;
        ps.steps = old;
        ps.num_steps = removed;
        nxe_log(NXE_LOG_INFO, "layout pass: %d steps in, %d out", removed, plan->num_steps);
    }
    pass_free(&ps);
    return status;
}
