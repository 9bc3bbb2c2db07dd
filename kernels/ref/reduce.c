/* reduce.c — reference reductions, arg-extremes, top-k and cumulative sums. Every output
 * element walks its input in the same order whatever range of outputs a call covers. */
#include "ref/reduce.h"

#include <math.h>
#include <string.h>

/* Offset in x of output element `out` (an index over the kept dimensions). */
static int64_t kept_offset(const nxe_reduce_geometry *g, int64_t out)
{
    int64_t offset = 0;
    for (int32_t d = g->kept_ndim - 1; d >= 0; d--) {
        offset += (out % g->kept_shape[d]) * g->kept_strides[d];
        out /= g->kept_shape[d];
    }
    return offset;
}

/* The reduced index space as runs along its innermost dimension. */
typedef struct reduced_runs {
    int64_t count;
    int64_t length;
    int64_t stride;
} reduced_runs;

static reduced_runs runs_of(const nxe_reduce_geometry *g)
{
    reduced_runs runs = {g->reduced_count == 0 ? 0 : 1, 1, 0};
    if (g->reduced_ndim > 0 && g->reduced_count > 0) {
        runs.length = g->reduced_shape[g->reduced_ndim - 1];
        runs.stride = g->reduced_strides[g->reduced_ndim - 1];
        runs.count = g->reduced_count / runs.length;
    }
    return runs;
}

/* Offset of run `run` (an index over all reduced dimensions but the innermost). */
static int64_t run_offset(const nxe_reduce_geometry *g, int64_t run)
{
    int64_t offset = 0;
    for (int32_t d = g->reduced_ndim - 2; d >= 0; d--) {
        offset += (run % g->reduced_shape[d]) * g->reduced_strides[d];
        run /= g->reduced_shape[d];
    }
    return offset;
}

/* Runs `body` with `v` bound to each reduced element of the output at `base`, in order. */
#define FOR_EACH_REDUCED(type, g, base, v, body)                                                   \
    do {                                                                                           \
        const reduced_runs runs_ = runs_of(g);                                                     \
        for (int64_t r_ = 0; r_ < runs_.count; r_++) {                                             \
            const type *run_ = (base) + run_offset((g), r_);                                       \
            for (int64_t i_ = 0; i_ < runs_.length; i_++) {                                        \
                const type v = run_[i_ * runs_.stride];                                            \
                body                                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Maximum (or minimum) that turns NaN as soon as one element is NaN; log-sum-exp; one output
 * of a float reduction. f32 and f64 both accumulate in double. */
#define DEFINE_FLOAT_REDUCE(name, type)                                                            \
    static double name##_extreme(const nxe_reduce_geometry *g, const type *base, bool want_max)    \
    {                                                                                              \
        double best = want_max ? -INFINITY : INFINITY;                                             \
        FOR_EACH_REDUCED(type, g, base, v, {                                                       \
            if (isnan(v)) {                                                                        \
                return NAN;                                                                        \
            }                                                                                      \
            if (want_max ? v > best : v < best) {                                                  \
                best = v;                                                                          \
            }                                                                                      \
        });                                                                                        \
        return best;                                                                               \
    }                                                                                              \
    /* NaN stays NaN; an infinite maximum (or an empty set, -inf) is the answer itself, and  \
     * subtracting it would make inf - inf. */     \
    static double name##_log_sum_exp(const nxe_reduce_geometry *g, const type *base)               \
    {                                                                                              \
        const double max = name##_extreme(g, base, true);                                          \
        if (!isfinite(max)) {                                                                      \
            return max;                                                                            \
        }                                                                                          \
        double sum = 0.0;                                                                          \
        FOR_EACH_REDUCED(type, g, base, v, { sum += exp((double)v - max); });                      \
        return max + log(sum);                                                                     \
    }                                                                                              \
    static double name##_reduce_one(nxe_reduce_kind kind, const nxe_reduce_geometry *g,            \
                                    const type *base)                                              \
    {                                                                                              \
        double acc = 0.0;                                                                          \
        switch (kind) {                                                                            \
        case NXE_REDUCE_SUM:                                                                       \
        case NXE_REDUCE_MEAN:                                                                      \
        case NXE_REDUCE_LOG_SUM: FOR_EACH_REDUCED(type, g, base, v, { acc += v; }); break;         \
        case NXE_REDUCE_L1: FOR_EACH_REDUCED(type, g, base, v, { acc += fabs((double)v); });       \
            break;                                                                                 \
        case NXE_REDUCE_L2:                                                                        \
        case NXE_REDUCE_SUM_SQUARE:                                                                \
            FOR_EACH_REDUCED(type, g, base, v, { acc += (double)v * (double)v; });                 \
            break;                                                                                 \
        case NXE_REDUCE_PROD:                                                                      \
            acc = 1.0;                                                                             \
            FOR_EACH_REDUCED(type, g, base, v, { acc *= v; });                                     \
            break;                                                                                 \
        case NXE_REDUCE_MAX: return name##_extreme(g, base, true);                                 \
        case NXE_REDUCE_MIN: return name##_extreme(g, base, false);                                \
        case NXE_REDUCE_LOG_SUM_EXP: return name##_log_sum_exp(g, base);                           \
        }                                                                                          \
        switch (kind) {                                                                            \
        case NXE_REDUCE_MEAN: return g->reduced_count == 0 ? NAN : acc / (double)g->reduced_count; \
        case NXE_REDUCE_L2: return sqrt(acc);                                                      \
        case NXE_REDUCE_LOG_SUM: return log(acc);                                                  \
        default: return acc;                                                                       \
        }                                                                                          \
    }                                                                                              \
    void nxe_ref_##name##_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry,        \
                                 const type *x, type *y, int64_t out_begin, int64_t out_end)       \
    {                                                                                              \
        for (int64_t out = out_begin; out < out_end; out++) {                                      \
            y[out] = (type)name##_reduce_one(kind, geometry, x + kept_offset(geometry, out));      \
        }                                                                                          \
    }

DEFINE_FLOAT_REDUCE(f32, float)
DEFINE_FLOAT_REDUCE(f64, double)

/* Integer arithmetic runs in the unsigned type of the same width, where overflow wraps
 * without undefined behaviour; the bits are then read back as two's complement. */
#define DEFINE_INT_REDUCE(name, type, utype, lowest, highest)                                      \
    static utype name##_reduce_one(nxe_reduce_kind kind, const nxe_reduce_geometry *g,             \
                                   const type *base)                                               \
    {                                                                                              \
        utype acc = 0;                                                                             \
        type best = kind == NXE_REDUCE_MAX ? (lowest) : (highest);                                 \
        switch (kind) {                                                                            \
        case NXE_REDUCE_MAX:                                                                       \
            FOR_EACH_REDUCED(type, g, base, v, { best = v > best ? v : best; });                   \
            memcpy(&acc, &best, sizeof acc);                                                       \
            break;                                                                                 \
        case NXE_REDUCE_MIN:                                                                       \
            FOR_EACH_REDUCED(type, g, base, v, { best = v < best ? v : best; });                   \
            memcpy(&acc, &best, sizeof acc);                                                       \
            break;                                                                                 \
        case NXE_REDUCE_PROD:                                                                      \
            acc = 1;                                                                               \
            FOR_EACH_REDUCED(type, g, base, v, { acc *= (utype)v; });                              \
            break;                                                                                 \
        case NXE_REDUCE_L1:                                                                        \
            FOR_EACH_REDUCED(type, g, base, v,                                                     \
                             { acc += v < 0 ? (utype)0 - (utype)v : (utype)v; });                  \
            break;                                                                                 \
        case NXE_REDUCE_SUM_SQUARE:                                                                \
            FOR_EACH_REDUCED(type, g, base, v, { acc += (utype)v * (utype)v; });                   \
            break;                                                                                 \
        default: FOR_EACH_REDUCED(type, g, base, v, { acc += (utype)v; }); break;                  \
        }                                                                                          \
        return acc;                                                                                \
    }                                                                                              \
    void nxe_ref_##name##_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry,        \
                                 const type *x, type *y, int64_t out_begin, int64_t out_end)       \
    {                                                                                              \
        for (int64_t out = out_begin; out < out_end; out++) {                                      \
            const utype acc = name##_reduce_one(kind, geometry, x + kept_offset(geometry, out));   \
            memcpy(&y[out], &acc, sizeof acc);                                                     \
        }                                                                                          \
    }

DEFINE_INT_REDUCE(i32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
DEFINE_INT_REDUCE(i64, int64_t, uint64_t, INT64_MIN, INT64_MAX)

void nxe_ref_bool_reduce(nxe_reduce_kind kind, const nxe_reduce_geometry *geometry,
                         const uint8_t *x, uint8_t *y, int64_t out_begin, int64_t out_end)
{
    const bool any = kind == NXE_REDUCE_MAX;
    for (int64_t out = out_begin; out < out_end; out++) {
        bool result = !any;
        FOR_EACH_REDUCED(uint8_t, geometry, x + kept_offset(geometry, out), v, {
            if ((v != 0) == any) {
                result = any;
            }
        });
        y[out] = result ? 1 : 0;
    }
}

/* ---- along one axis ------------------------------------------------------------------- */

static int64_t lane_base(int64_t lane, int64_t axis_size, int64_t inner)
{
    return (lane / inner) * axis_size * inner + lane % inner;
}

/* Order predicates: is `a` strictly beyond `b` (greater for want_max), with NaN beyond
 * every number, and are they equal (NaN equals NaN). Integers never are NaN. */
static bool f32_beyond(float a, float b, bool want_max)
{
    if (isnan(a) || isnan(b)) {
        return isnan(a) && !isnan(b);
    }
    return want_max ? a > b : a < b;
}
static bool f32_same(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}
static bool f64_beyond(double a, double b, bool want_max)
{
    if (isnan(a) || isnan(b)) {
        return isnan(a) && !isnan(b);
    }
    return want_max ? a > b : a < b;
}
static bool f64_same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}
static bool i32_beyond(int32_t a, int32_t b, bool want_max)
{
    return want_max ? a > b : a < b;
}
static bool i32_same(int32_t a, int32_t b)
{
    return a == b;
}
static bool i64_beyond(int64_t a, int64_t b, bool want_max)
{
    return want_max ? a > b : a < b;
}
static bool i64_same(int64_t a, int64_t b)
{
    return a == b;
}

/* For top-k, NaN sorts above every number: first for the largest, last for the smallest. */
static bool f32_before(float a, float b, bool largest)
{
    if (isnan(a) || isnan(b)) {
        return largest ? isnan(a) && !isnan(b) : !isnan(a) && isnan(b);
    }
    return largest ? a > b : a < b;
}
static bool f64_before(double a, double b, bool largest)
{
    if (isnan(a) || isnan(b)) {
        return largest ? isnan(a) && !isnan(b) : !isnan(a) && isnan(b);
    }
    return largest ? a > b : a < b;
}

#define DEFINE_AXIS_KERNELS(name, type, beyond, same, before)                                      \
    void nxe_ref_##name##_arg_extreme(const type *x, int64_t *y, int64_t axis_size, int64_t inner, \
                                      bool want_max, bool last, int64_t lane_begin,                \
                                      int64_t lane_end)                                            \
    {                                                                                              \
        for (int64_t lane = lane_begin; lane < lane_end; lane++) {                                 \
            const type *xs = x + lane_base(lane, axis_size, inner);                                \
            type best = xs[0];                                                                     \
            int64_t best_index = 0;                                                                \
            for (int64_t i = 1; i < axis_size; i++) {                                              \
                const type v = xs[i * inner];                                                      \
                if (beyond(v, best, want_max) || (last && same(v, best))) {                        \
                    best = v;                                                                      \
                    best_index = i;                                                                \
                }                                                                                  \
            }                                                                                      \
            y[lane] = best_index;                                                                  \
        }                                                                                          \
    }                                                                                              \
    void nxe_ref_##name##_top_k(const type *x, type *values, int64_t *indices, int64_t axis_size,  \
                                int64_t inner, int64_t k, bool largest, int64_t lane_begin,        \
                                int64_t lane_end)                                                  \
    {                                                                                              \
        if (k == 0) {                                                                              \
            return;                                                                                \
        }                                                                                          \
        for (int64_t lane = lane_begin; lane < lane_end; lane++) {                                 \
            const type *xs = x + lane_base(lane, axis_size, inner);                                \
            const int64_t out = lane_base(lane, k, inner);                                         \
            type *vs = values + out;                                                               \
            int64_t *is = indices + out;                                                           \
            int64_t count = 0;                                                                     \
            for (int64_t i = 0; i < axis_size; i++) {                                              \
                const type v = xs[i * inner];                                                      \
                if (count == k && !before(v, vs[(k - 1) * inner], largest)) {                      \
                    continue;                                                                      \
                }                                                                                  \
                /* Equal values stop the shift, so earlier indices stay first. */                  \
                int64_t j = count < k ? count : k - 1;                                             \
                while (j > 0 && before(v, vs[(j - 1) * inner], largest)) {                         \
                    vs[j * inner] = vs[(j - 1) * inner];                                           \
                    is[j * inner] = is[(j - 1) * inner];                                           \
                    j--;                                                                           \
                }                                                                                  \
                vs[j * inner] = v;                                                                 \
                is[j * inner] = i;                                                                 \
                if (count < k) {                                                                   \
                    count++;                                                                       \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_AXIS_KERNELS(f32, float, f32_beyond, f32_same, f32_before)
DEFINE_AXIS_KERNELS(f64, double, f64_beyond, f64_same, f64_before)
DEFINE_AXIS_KERNELS(i32, int32_t, i32_beyond, i32_same, i32_beyond)
DEFINE_AXIS_KERNELS(i64, int64_t, i64_beyond, i64_same, i64_beyond)

/* Float scans accumulate in double and round each output once. */
#define DEFINE_FLOAT_SCAN(name, type, kernel, start, OP)                                           \
    void nxe_ref_##name##_##kernel(const type *x, type *y, int64_t axis_size, int64_t inner,       \
                                   bool exclusive, bool reverse, int64_t lane_begin,               \
                                   int64_t lane_end)                                               \
    {                                                                                              \
        for (int64_t lane = lane_begin; lane < lane_end; lane++) {                                 \
            const int64_t base = lane_base(lane, axis_size, inner);                                \
            double acc = (start);                                                                  \
            for (int64_t n = 0; n < axis_size; n++) {                                              \
                const int64_t at = base + (reverse ? axis_size - 1 - n : n) * inner;               \
                if (exclusive) {                                                                   \
                    y[at] = (type)acc;                                                             \
                    acc OP x[at];                                                                  \
                } else {                                                                           \
                    acc OP x[at];                                                                  \
                    y[at] = (type)acc;                                                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_FLOAT_SCAN(f32, float, cumsum, 0.0, +=)
DEFINE_FLOAT_SCAN(f64, double, cumsum, 0.0, +=)
DEFINE_FLOAT_SCAN(f32, float, cumprod, 1.0, *=)
DEFINE_FLOAT_SCAN(f64, double, cumprod, 1.0, *=)

#define DEFINE_INT_CUMSUM(name, type, utype)                                                       \
    void nxe_ref_##name##_cumsum(const type *x, type *y, int64_t axis_size, int64_t inner,         \
                                 bool exclusive, bool reverse, int64_t lane_begin,                 \
                                 int64_t lane_end)                                                 \
    {                                                                                              \
        for (int64_t lane = lane_begin; lane < lane_end; lane++) {                                 \
            const int64_t base = lane_base(lane, axis_size, inner);                                \
            utype sum = 0;                                                                         \
            for (int64_t n = 0; n < axis_size; n++) {                                              \
                const int64_t at = base + (reverse ? axis_size - 1 - n : n) * inner;               \
                const utype v = (utype)x[at];                                                      \
                if (!exclusive) {                                                                  \
                    sum += v;                                                                      \
                }                                                                                  \
                memcpy(&y[at], &sum, sizeof sum);                                                  \
                if (exclusive) {                                                                   \
                    sum += v;                                                                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_INT_CUMSUM(i32, int32_t, uint32_t)
DEFINE_INT_CUMSUM(i64, int64_t, uint64_t)

/* utype is at least as wide as unsigned int, so the multiplication never promotes to a signed
 * type and wraps as unsigned arithmetic does. */
#define DEFINE_INT_CUMPROD(name, type, utype)                                                      \
    void nxe_ref_##name##_cumprod(const type *x, type *y, int64_t axis_size, int64_t inner,        \
                                  bool exclusive, bool reverse, int64_t lane_begin,                \
                                  int64_t lane_end)                                                \
    {                                                                                              \
        for (int64_t lane = lane_begin; lane < lane_end; lane++) {                                 \
            const int64_t base = lane_base(lane, axis_size, inner);                                \
            utype product = 1;                                                                     \
            for (int64_t n = 0; n < axis_size; n++) {                                              \
                const int64_t at = base + (reverse ? axis_size - 1 - n : n) * inner;               \
                const utype v = (utype)x[at];                                                      \
                if (!exclusive) {                                                                  \
                    product *= v;                                                                  \
                }                                                                                  \
                memcpy(&y[at], &product, sizeof product);                                          \
                if (exclusive) {                                                                   \
                    product *= v;                                                                  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_INT_CUMPROD(i32, int32_t, uint32_t)
DEFINE_INT_CUMPROD(i64, int64_t, uint64_t)
