/* reduce.c — reference reductions. Every output element walks its reduced index space in the
 * same row-major order, whatever range of outputs a call covers. */
#include "reduce.h"

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

static double f32_sum(const nxe_reduce_geometry *g, const float *x)
{
    const reduced_runs runs = runs_of(g);
    double sum = 0.0;
    for (int64_t r = 0; r < runs.count; r++) {
        const float *run = x + run_offset(g, r);
        for (int64_t i = 0; i < runs.length; i++) {
            sum += run[i * runs.stride];
        }
    }
    return sum;
}

void nxe_ref_f32_reduce_sum(const nxe_reduce_geometry *geometry, const float *x, float *y,
                            int64_t out_begin, int64_t out_end)
{
    for (int64_t out = out_begin; out < out_end; out++) {
        y[out] = (float)f32_sum(geometry, x + kept_offset(geometry, out));
    }
}

void nxe_ref_f32_reduce_mean(const nxe_reduce_geometry *geometry, const float *x, float *y,
                             int64_t out_begin, int64_t out_end)
{
    for (int64_t out = out_begin; out < out_end; out++) {
        if (geometry->reduced_count == 0) {
            y[out] = NAN;
        } else {
            y[out] = (float)(f32_sum(geometry, x + kept_offset(geometry, out)) /
                             (double)geometry->reduced_count);
        }
    }
}

/* Integer sums run in the unsigned type of the same width, where overflow wraps without
 * undefined behaviour; the bits are then read back as two's complement. */
void nxe_ref_i32_reduce_sum(const nxe_reduce_geometry *geometry, const int32_t *x, int32_t *y,
                            int64_t out_begin, int64_t out_end)
{
    const reduced_runs runs = runs_of(geometry);
    for (int64_t out = out_begin; out < out_end; out++) {
        const int32_t *base = x + kept_offset(geometry, out);
        uint32_t sum = 0;
        for (int64_t r = 0; r < runs.count; r++) {
            const int32_t *run = base + run_offset(geometry, r);
            for (int64_t i = 0; i < runs.length; i++) {
                sum += (uint32_t)run[i * runs.stride];
            }
        }
        memcpy(&y[out], &sum, sizeof sum);
    }
}

void nxe_ref_i64_reduce_sum(const nxe_reduce_geometry *geometry, const int64_t *x, int64_t *y,
                            int64_t out_begin, int64_t out_end)
{
    const reduced_runs runs = runs_of(geometry);
    for (int64_t out = out_begin; out < out_end; out++) {
        const int64_t *base = x + kept_offset(geometry, out);
        uint64_t sum = 0;
        for (int64_t r = 0; r < runs.count; r++) {
            const int64_t *run = base + run_offset(geometry, r);
            for (int64_t i = 0; i < runs.length; i++) {
                sum += (uint64_t)run[i * runs.stride];
            }
        }
        memcpy(&y[out], &sum, sizeof sum);
    }
}
