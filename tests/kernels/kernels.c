/* kernels.c — every microkernel and dispatch row of kernels/list.h that this process can run,
 * against its reference twin, and a SKIPPED line with the reason for each one it cannot:
 * microkernels over every tile shape and ragged reductions, epilogues with every activation,
 * the vectorized math against libm, and the GEMM, convolution, depthwise and 8-bit drivers
 * against the direct reference kernels over a sweep of shapes with tails, strides, dilations,
 * padding and groups; the reference microkernels run through the portable drivers compiled at
 * the scalar level, so every build (aarch64 too) tests the drivers. Also how dispatch chooses
 * microkernels, the AMX permission included. Links the library's objects directly (kernels
 * are internal); prints one line per failure and exits nonzero if any. Tolerances are stated
 * where they are checked. */
#define _GNU_SOURCE /* M_PI, nanosleep */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nxe/nxe_experimental.h" /* nxe_cpu_info_get */
#include "core/threadpool.h"
#include "dispatch.h"
#include "gemm.h"
#include "ref/attention.h"
#include "ref/conv.h"
#include "ref/gemm.h"
#include "ref/matmul.h"

#include "check.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float uniform(void) /* in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static float *random_floats(size_t n)
{
    float *v = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        v[i] = uniform();
    return v;
}

/* What a packed element holds: the f32 value, or its bf16 rounding. */
static double as_packed(const nxe_gemm_kernel *kernel, float v)
{
    return kernel->type == NXE_GEMM_BF16 ? (double)nxe_bf16_to_f32(nxe_f32_to_bf16(v)) : (double)v;
}

/* ---- microkernels ---- */

static void test_microkernel(const nxe_gemm_kernel *kernel)
{
    const int64_t kcs[] = {1, 2, 3, 7, 16, 33, 128, 255};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
        const int64_t kc = kcs[ki];
        for (int32_t mr = 1; mr <= kernel->mr; mr++) {
            for (int32_t nr = 1; nr <= kernel->nr; nr += (nr < 17 ? 1 : 7)) {
                /* Logical A [kc x mr] and B [kc x nr], packed as the drivers do. */
                float *a = random_floats((size_t)(kc * mr)), *b = random_floats((size_t)(kc * nr));
                void *ap = malloc(nxe_gemm_packed_bytes(kernel, kc, mr, kernel->mr));
                void *bp = malloc(nxe_gemm_packed_bytes(kernel, kc, nr, kernel->nr));
                nxe_gemm_pack(kernel, kernel->mr, a, mr, 1, kc, mr, ap);
                nxe_gemm_pack(kernel, kernel->nr, b, nr, 1, kc, nr, bp);
                const void *rows[256];
                size_t group = (size_t)kernel->nr * (size_t)kernel->k_unit *
                               nxe_gemm_element_size(kernel->type);
                for (int64_t q = 0; q < (kc + kernel->k_unit - 1) / kernel->k_unit; q++)
                    rows[q] = (const char *)bp + q * group;
                const int64_t ldc = nr + 3;
                float *c = random_floats((size_t)(mr * ldc)),
                      *c0 = malloc(sizeof(float) * (size_t)(mr * ldc));
                memcpy(c0, c, sizeof(float) * (size_t)(mr * ldc));
                for (int accumulate = 0; accumulate < 2; accumulate++) {
                    memcpy(c, c0, sizeof(float) * (size_t)(mr * ldc));
                    kernel->run(mr, nr, kc, ap, rows, c, ldc, accumulate);
                    for (int32_t i = 0; i < mr; i++) {
                        for (int32_t j = 0; j < ldc; j++) {
                            if (j >= nr) {
                                CHECK(c[i * ldc + j] == c0[i * ldc + j],
                                      "%s wrote outside the tile at (%d, %d)", kernel->name, i, j);
                                continue;
                            }
                            double want = accumulate ? c0[i * ldc + j] : 0.0, mag = fabs(want);
                            for (int64_t k = 0; k < kc; k++) {
                                double p = as_packed(kernel, a[k * mr + i]) *
                                           as_packed(kernel, b[k * nr + j]);
                                want += p;
                                mag += fabs(p);
                            }
                            /* f32 accumulation of kc exact products: kc rounding steps. */
                            double tol = 2.0 * (double)(kc + 2) * 6e-8 * mag + 1e-30;
                            CHECK(fabs(c[i * ldc + j] - want) <= tol,
                                  "%s mr=%d nr=%d kc=%lld acc=%d (%d,%d): %g vs %g", kernel->name,
                                  mr, nr, (long long)kc, accumulate, i, j, c[i * ldc + j], want);
                        }
                    }
                }
                free(a);
                free(b);
                free(ap);
                free(bp);
                free(c);
                free(c0);
            }
        }
    }
}

/* The few-row variant: A rows in place (a_stride_m apart), one whole packed B panel over
 * reductions longer than a driver's block, a next panel to fetch or none; every element against
 * a double reference, and bit for bit against the _rows variant over the same reduction (the
 * same chains). */
static void test_panel_microkernel(const nxe_gemm_kernel *kernel)
{
    const int64_t ks[] = {0, 1, 2, 7, 33, 256, 300, 513};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const int64_t k = ks[ki], a_stride = k + 5;
        for (int32_t mr = 1; mr <= kernel->mr; mr++) {
            for (int32_t nr = 1; nr <= kernel->nr; nr += (nr < 17 ? 1 : 7)) {
                float *a = random_floats((size_t)(mr * a_stride)),
                      *b = random_floats((size_t)(k * nr));
                /* Two panels: the one computed and a next one to fetch. */
                float *bp =
                    malloc(2 * nxe_gemm_packed_bytes(kernel, k, kernel->nr, kernel->nr) + 4);
                nxe_gemm_pack(kernel, kernel->nr, b, nr, 1, k, nr, bp);
                const float *next = (const float *)bp + k * kernel->nr;
                const void **rows = malloc(sizeof(void *) * (size_t)(k + 1));
                for (int64_t q = 0; q < k; q++)
                    rows[q] = (const float *)bp + q * kernel->nr;
                const int64_t ldc = nr + 3;
                float *c = random_floats((size_t)(mr * ldc)),
                      *c0 = malloc(sizeof(float) * (size_t)(mr * ldc)),
                      *by_rows = malloc(sizeof(float) * (size_t)(mr * ldc));
                memcpy(c0, c, sizeof(float) * (size_t)(mr * ldc));
                memcpy(by_rows, c, sizeof(float) * (size_t)(mr * ldc));
                kernel->run_panel(mr, nr, k, a, a_stride, bp, ki % 2 ? next : NULL, c, ldc);
                kernel->run_rows(mr, nr, k, a, a_stride, rows, by_rows, ldc, 0);
                for (int32_t i = 0; i < mr; i++) {
                    for (int32_t j = 0; j < ldc; j++) {
                        if (j >= nr) {
                            CHECK(c[i * ldc + j] == c0[i * ldc + j],
                                  "%s panel wrote outside the tile at (%d, %d)", kernel->name, i,
                                  j);
                            continue;
                        }
                        double want = 0.0, mag = 0.0;
                        for (int64_t q = 0; q < k; q++) {
                            double p = (double)a[i * a_stride + q] * (double)b[q * nr + j];
                            want += p;
                            mag += fabs(p);
                        }
                        double tol = 2.0 * (double)(k + 2) * 6e-8 * mag + 1e-30;
                        CHECK(fabs(c[i * ldc + j] - want) <= tol,
                              "%s panel mr=%d nr=%d k=%lld (%d,%d): %g vs %g", kernel->name, mr, nr,
                              (long long)k, i, j, c[i * ldc + j], want);
                        CHECK(c[i * ldc + j] == by_rows[i * ldc + j],
                              "%s panel mr=%d nr=%d k=%lld (%d,%d): %g, the rows variant %g",
                              kernel->name, mr, nr, (long long)k, i, j, c[i * ldc + j],
                              by_rows[i * ldc + j]);
                    }
                }
                free(a);
                free(b);
                free(bp);
                free(rows);
                free(c);
                free(c0);
                free(by_rows);
            }
        }
    }
}

/* ---- epilogues and vectorized activations ---- */

/* Bounds of each activation's vectorized form against libm (absolute + relative). */
static double activation_tolerance(int32_t activation, double want)
{
    switch (activation) {
    case NXE_ACTIVATION_TANH: return 5e-7 + 5e-7 * fabs(want);
    case NXE_ACTIVATION_GELU_ERF:
    case NXE_ACTIVATION_GELU_TANH:
    case NXE_ACTIVATION_SIGMOID:
    case NXE_ACTIVATION_SILU:
        /* The GELU tails are ill-conditioned in f32 (the relative error of erfc(u) grows
         * like u^2 times that of u): a small absolute floor below values of 1e-9. */
        return activation == NXE_ACTIVATION_GELU_ERF || activation == NXE_ACTIVATION_GELU_TANH
                   ? 1e-9 + 3e-6 * fabs(want)
                   : 1e-37 + 1e-6 * fabs(want);
    default: return 0.0; /* piecewise linear: exact */
    }
}

/* Each activation in double precision: the reference the f32 forms are measured against. */
static double activation_double(int32_t activation, double alpha, double beta, double v)
{
    switch (activation) {
    case NXE_ACTIVATION_TANH: return tanh(v);
    case NXE_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case NXE_ACTIVATION_GELU_ERF: return 0.5 * v * erfc(-v / sqrt(2.0));
    case NXE_ACTIVATION_GELU_TANH:
        return v / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case NXE_ACTIVATION_SILU: return v / (1.0 + exp(-v));
    default: return nxe_ref_activation(activation, (float)alpha, (float)beta, (float)v);
    }
}

static void test_activations(const nxe_kernel_table *table)
{
    enum { N = 200003 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int32_t act = NXE_ACTIVATION_RELU; act < NXE_ACTIVATION_COUNT; act++) {
        const float alpha = act == NXE_ACTIVATION_CLIP ? -0.5f : 0.1f;
        const float beta = act == NXE_ACTIVATION_CLIP ? 2.0f : 0.0f;
        for (int i = 0; i < N; i++)
            x[i] = -30.0f + 60.0f * (float)i / (float)(N - 1);
        x[0] = 0.0f;
        x[1] = -0.0f;
        x[2] = 1e-8f;
        x[3] = -100.0f;
        x[4] = 100.0f;
        table->f32_activation(act, alpha, beta, x, y, N);
        double worst = 0.0;
        int worst_i = 0;
        for (int i = 0; i < N; i++) {
            double want = activation_double(act, alpha, beta, x[i]);
            double err = fabs((double)y[i] - want) - activation_tolerance(act, want);
            if (err > worst) {
                worst = err;
                worst_i = i;
            }
        }
        CHECK(worst <= 0.0, "%s activation %d at x=%g: %g vs %g", table->name, act, x[worst_i],
              y[worst_i], activation_double(act, alpha, beta, x[worst_i]));
        /* The reference twin (libm in f32) is held to the same bound. */
        double ref_worst = 0.0;
        for (int i = 0; i < N; i += 7) {
            double want = activation_double(act, alpha, beta, x[i]);
            double err = fabs((double)nxe_ref_activation(act, alpha, beta, x[i]) - want) -
                         activation_tolerance(act, want);
            ref_worst = err > ref_worst ? err : ref_worst;
        }
        CHECK(ref_worst <= 0.0, "reference activation %d exceeds its bound by %g", act, ref_worst);
        /* NaN stays NaN. */
        float nan_in = NAN, nan_out = 0.0f;
        table->f32_activation(act, alpha, beta, &nan_in, &nan_out, 1);
        CHECK(isnan(nan_out), "%s activation %d turns NaN into %g", table->name, act, nan_out);
    }
    free(x);
    free(y);
}

static void test_epilogue(const nxe_kernel_table *table)
{
    const int32_t mr = 5, nr = 37;
    const int64_t ldc = 41, ldr = 39;
    float *bias = random_floats(64), *residual = random_floats((size_t)(mr * ldr));
    float *c = random_floats((size_t)(mr * ldc)),
          *want = malloc(sizeof(float) * (size_t)(mr * ldc));
    float *got = malloc(sizeof(float) * (size_t)(mr * ldc));
    for (int32_t act = NXE_ACTIVATION_NONE; act < NXE_ACTIVATION_COUNT; act++) {
        for (int variant = 0; variant < 8; variant++) {
            nxe_epilogue e = {
                .scale = variant & 1 ? 0.75f : 1.0f,
                .activation = act,
                .alpha = -0.3f,
                .beta = 0.6f,
                .residual_before_activation = (variant >> 2) & 1,
                .bias_scale = variant & 1 ? -1.25f : 1.0f,
            };
            if (act == NXE_ACTIVATION_LEAKY_RELU)
                e.alpha = 0.2f;
            /* Bias per column or, with variant bit 0, per row. */
            nxe_epilogue_operands ops = {
                .bias = variant & 2 ? bias : NULL,
                .bias_stride_m = variant & 1,
                .bias_stride_n = !(variant & 1),
                .residual = variant & 4 ? residual : NULL,
                .ldr = ldr,
            };
            memcpy(want, c, sizeof(float) * (size_t)(mr * ldc));
            memcpy(got, c, sizeof(float) * (size_t)(mr * ldc));
            nxe_ref_epilogue(mr, nr, want, ldc, &e, &ops);
            table->epilogue(mr, nr, got, ldc, &e, &ops);
            for (int32_t i = 0; i < mr * ldc; i++) {
                bool inside = i % ldc < nr;
                double tol =
                    inside ? activation_tolerance(act, want[i]) + 1e-6 * fabs(want[i]) : 0.0;
                CHECK(fabs((double)got[i] - want[i]) <= tol,
                      "%s epilogue act %d variant %d at %d: %g vs %g", table->name, act, variant, i,
                      got[i], want[i]);
            }
        }
    }
    free(bias);
    free(residual);
    free(c);
    free(want);
    free(got);
}

/* ---- drivers ---- */

static void test_gemm_driver(const nxe_kernel_table *table, const nxe_gemm_kernel *kernel)
{
    const int64_t shapes[][3] = {{1, 1, 1},      {7, 5, 3},      {9, 49, 17},   {33, 96, 256},
                                 {17, 100, 300}, {64, 130, 513}, {3, 1000, 20}, {20, 20, 0}};
    const double bf16 = kernel->type == NXE_GEMM_BF16;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        for (int trans = 0; trans < 2; trans++) {
            float *a = random_floats((size_t)(m * k)), *b = random_floats((size_t)(k * n));
            /* The addend as a bias per column, per row, one value or a whole matrix, in turn. */
            const int form = (int)(2 * s + (size_t)trans) % 4;
            const int64_t bias_stride_m[] = {0, 1, 0, n}, bias_stride_n[] = {1, 0, 0, 1};
            const bool in_place = kernel->type == NXE_GEMM_F32 && trans;
            float *bias = random_floats((size_t)(m * n)),
                  *residual = random_floats((size_t)(m * n));
            float *y = malloc(sizeof(float) * (size_t)(m * n + 1));
            float *ref = malloc(sizeof(float) * (size_t)(m * n + 1));
            void *packed = malloc(nxe_gemm_packed_bytes(kernel, k, n, kernel->nr) + 1);
            nxe_gemm_pack(kernel, kernel->nr, b, n, 1, k, n, packed);
            nxe_gemm_packed_args args = {
                .kernel = kernel,
                .m = m,
                .n = n,
                .k = k,
                .a = a,
                .a_stride_m = trans ? 1 : k,
                .a_stride_k = trans ? m : 1,
                /* f32 kernels read B in place in half the cases. */
                .b_packed = in_place ? NULL : packed,
                .b = in_place ? b : NULL,
                .b_stride_k = n,
                .y = y,
                .y_stride_m = n,
                .bias = bias,
                .bias_stride_m = bias_stride_m[form],
                .bias_stride_n = bias_stride_n[form],
                .residual = trans ? residual : NULL,
                .residual_stride_m = n,
                .epilogue = {.scale = 1.5f,
                             .activation = trans ? NXE_ACTIVATION_RELU : NXE_ACTIVATION_NONE,
                             .residual_before_activation = 1,
                             .bias_scale = 0.5f},
            };
            /* Split the tiles unevenly, as threads might. */
            int64_t tiles = table->gemm_packed_tiles(&args), mid = tiles / 3;
            table->gemm_packed_run(&args, 0, mid);
            table->gemm_packed_run(&args, mid, tiles);
            nxe_f32_gemm_args r = {
                .m = m,
                .n = n,
                .k = k,
                .alpha = 1.0f,
                .beta = 0.0f,
                .a = a,
                .a_stride_m = trans ? 1 : k,
                .a_stride_k = trans ? m : 1,
                .b = b,
                .b_stride_k = n,
                .b_stride_n = 1,
                .y = ref,
                .y_stride_m = n,
            };
            nxe_ref_f32_gemm(&r, 0, m);
            for (int64_t i = 0; i < m; i++) {
                for (int64_t j = 0; j < n; j++) {
                    double mag = 0.0;
                    for (int64_t kk = 0; kk < k; kk++)
                        mag += fabs(a[trans ? kk * m + i : i * k + kk] * b[kk * n + j]);
                    double v = 1.5 * ref[i * n + j] +
                               0.5 * bias[i * bias_stride_m[form] + j * bias_stride_n[form]] +
                               (trans ? residual[i * n + j] : 0.0);
                    if (trans && v < 0)
                        v = 0.0;
                    double tol = (bf16 ? 1.6e-2 : 1e-5) * 1.5 * mag + 1e-5 * (fabs(v) + 1.0);
                    CHECK(fabs(y[i * n + j] - v) <= tol,
                          "%s gemm %lldx%lldx%lld trans=%d bias form %d B in place %d (%lld,%lld): "
                          "%g vs %g",
                          kernel->name, (long long)m, (long long)n, (long long)k, trans, form,
                          in_place, (long long)i, (long long)j, y[i * n + j], v);
                }
            }
            free(a);
            free(b);
            free(bias);
            free(residual);
            free(y);
            free(ref);
            free(packed);
        }
    }
}

/* The driver's few-row path (nxe_gemm_small_m) against its blocked path (the same kernel
 * without run_panel), bit for bit: rows across the few-row limit, column and reduction tails,
 * reductions longer than a block, the epilogue with a bias per column, GELU and a residual, and
 * the panels split between two calls as the op splits them between threads. */
static void test_gemm_small_m(const nxe_kernel_table *table, const nxe_gemm_kernel *kernel)
{
    nxe_gemm_kernel blocked = *kernel;
    blocked.run_panel = NULL;
    const int64_t ns[] = {1, kernel->nr - 1, kernel->nr + 1, 3 * kernel->nr + 5};
    const int64_t ks[] = {1, 9, 256, 300};
    const int64_t max_m = NXE_GEMM_SMALL_M_TILES * kernel->mr + 1;
    for (int64_t m = 1; m <= max_m; m++) {
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int64_t n = ns[ni], k = ks[(size_t)m % (sizeof ks / sizeof ks[0])];
            float *a = random_floats((size_t)(m * k)), *b = random_floats((size_t)(k * n)),
                  *bias = random_floats((size_t)n), *residual = random_floats((size_t)(m * n));
            float *y = malloc(sizeof(float) * (size_t)(m * n)),
                  *want = malloc(sizeof(float) * (size_t)(m * n));
            void *packed = malloc(nxe_gemm_packed_bytes(kernel, k, n, kernel->nr));
            nxe_gemm_pack(kernel, kernel->nr, b, n, 1, k, n, packed);
            nxe_gemm_packed_args args = {
                .kernel = kernel,
                .m = m,
                .n = n,
                .k = k,
                .a = a,
                .a_stride_m = k,
                .a_stride_k = 1,
                .b_packed = packed,
                .y = y,
                .y_stride_m = n,
                .bias = bias,
                .bias_stride_m = 0,
                .bias_stride_n = 1,
                .residual = residual,
                .residual_stride_m = n,
                .epilogue = {.scale = 1.0f,
                             .activation = NXE_ACTIVATION_GELU_ERF,
                             .residual_before_activation = 0,
                             .bias_scale = 1.0f},
            };
            CHECK(nxe_gemm_small_m(&args) == (m < max_m && m * k <= NXE_GEMM_SMALL_M_A_BYTES / 4),
                  "%s: m=%lld k=%lld few-row choice %d", kernel->name, (long long)m, (long long)k,
                  nxe_gemm_small_m(&args));
            const int64_t tiles = table->gemm_packed_tiles(&args);
            const int64_t panels = (n + kernel->nr - 1) / kernel->nr, half = (panels + 1) / 2;
            /* Panels split as the op splits them between threads. */
            for (int part = 0; part < 2; part++) {
                nxe_gemm_packed_args range = args;
                range.panel_begin = part ? half : 0;
                range.panel_end = part ? panels : half;
                if (range.panel_end > range.panel_begin)
                    table->gemm_packed_run(&range, 0, tiles);
            }
            nxe_gemm_packed_args reference = args;
            reference.kernel = &blocked;
            reference.y = want;
            table->gemm_packed_run(&reference, 0, tiles);
            int mismatches = 0;
            for (int64_t i = 0; i < m * n; i++)
                mismatches += y[i] != want[i];
            CHECK(mismatches == 0,
                  "%s few-row GEMM %lldx%lldx%lld: %d elements differ from the blocked path",
                  kernel->name, (long long)m, (long long)n, (long long)k, mismatches);
            free(a);
            free(b);
            free(bias);
            free(residual);
            free(y);
            free(want);
            free(packed);
        }
    }
}

typedef struct conv_case {
    int rank; /* spatial dims */
    int64_t n, c, o, groups;
    int64_t in[3], kernel[3], stride[3], dilation[3], pad[3];
} conv_case;

/* The geometry of a case, padded by the same amount at both ends of each axis. */
static nxe_conv_geometry geometry_of(const conv_case *cc)
{
    nxe_conv_geometry g = {cc->n, cc->c, cc->o, cc->groups, {0}, {0}, {0}, {0}, {0}, {0}};
    for (int d = 0; d < 3; d++) {
        g.in_size[d] = cc->in[d];
        g.kernel[d] = cc->kernel[d];
        g.stride[d] = cc->stride[d];
        g.dilation[d] = cc->dilation[d];
        g.pad_begin[d] = cc->pad[d];
        g.out_size[d] = (cc->in[d] + 2 * cc->pad[d] - cc->dilation[d] * (cc->kernel[d] - 1) - 1) /
                            cc->stride[d] +
                        1;
    }
    return g;
}

static void test_conv_driver(const nxe_kernel_table *table, const nxe_gemm_kernel *kernel)
{
    const conv_case cases[] = {
        {2, 1, 1, 64, 1, {1, 13, 50}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}},
        {2, 2, 3, 5, 1, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 1, 17, 33, 1, {1, 7, 97}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 0}},
        {2, 1, 8, 12, 4, {1, 10, 10}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}},
        {2, 1, 6, 6, 6, {1, 8, 53}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 1, 40, 9, 1, {1, 6, 49}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
        {2, 1, 64, 20, 1, {1, 5, 31}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {1, 2, 5, 7, 1, {1, 1, 40}, {1, 1, 4}, {1, 1, 3}, {1, 1, 2}, {0, 0, 3}},
        {3, 1, 4, 6, 2, {4, 5, 6}, {2, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1}},
    };
    const double bf16 = kernel->type == NXE_GEMM_BF16;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const conv_case *cc = &cases[ci];
        const nxe_conv_geometry g = geometry_of(cc);
        const int64_t in_px = g.in_size[0] * g.in_size[1] * g.in_size[2];
        const int64_t out_px = g.out_size[0] * g.out_size[1] * g.out_size[2];
        const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
        const int64_t cg = g.in_channels / g.groups;
        const size_t out_n = (size_t)(g.batch * g.out_channels * out_px);
        float *x = random_floats((size_t)(g.batch * g.in_channels * in_px));
        float *w = random_floats((size_t)(g.out_channels * cg * taps));
        float *bias = random_floats((size_t)g.out_channels), *res = random_floats(out_n);
        float *xabs = malloc(sizeof(float) * (size_t)(g.batch * g.in_channels * in_px));
        float *wabs = malloc(sizeof(float) * (size_t)(g.out_channels * cg * taps));
        for (int64_t i = 0; i < g.batch * g.in_channels * in_px; i++)
            xabs[i] = fabsf(x[i]);
        for (int64_t i = 0; i < g.out_channels * cg * taps; i++)
            wabs[i] = fabsf(w[i]);
        for (int last = 0; last < 2; last++) {
            /* Channels-last tensors: the same logical values, transposed. */
            float *xl = malloc(sizeof(float) * (size_t)(g.batch * g.in_channels * in_px));
            float *wl = malloc(sizeof(float) * (size_t)(g.out_channels * cg * taps));
            float *rl = malloc(sizeof(float) * out_n);
            for (int64_t n = 0; n < g.batch; n++)
                for (int64_t c = 0; c < g.in_channels; c++)
                    for (int64_t p = 0; p < in_px; p++)
                        xl[(n * in_px + p) * g.in_channels + c] =
                            x[(n * g.in_channels + c) * in_px + p];
            for (int64_t o = 0; o < g.out_channels; o++)
                for (int64_t c = 0; c < cg; c++)
                    for (int64_t t = 0; t < taps; t++)
                        wl[(o * taps + t) * cg + c] = w[(o * cg + c) * taps + t];
            for (int64_t n = 0; n < g.batch; n++)
                for (int64_t o = 0; o < g.out_channels; o++)
                    for (int64_t p = 0; p < out_px; p++)
                        rl[(n * out_px + p) * g.out_channels + o] =
                            res[(n * g.out_channels + o) * out_px + p];
            void *packed = malloc(nxe_conv_gemm_weight_bytes(kernel, &g, last));
            nxe_conv_gemm_pack_weight(kernel, &g, last, last ? wl : w, packed);
            float *y = malloc(sizeof(float) * out_n), *ref = malloc(sizeof(float) * out_n);
            float *mag = malloc(sizeof(float) * out_n);
            uint32_t *pairs = NULL;
            const void *input = last ? xl : x;
            if (bf16 && !last) {
                pairs = malloc(nxe_conv_bf16_pairs_bytes(&g));
                int64_t pair_rows = nxe_conv_bf16_pairs_rows(&g);
                table->conv_bf16_pairs(&g, x, pairs, 0, pair_rows / 2);
                table->conv_bf16_pairs(&g, x, pairs, pair_rows / 2, pair_rows);
                input = pairs;
            }
            nxe_conv_gemm_args args = {
                .kernel = kernel,
                .geometry = &g,
                .channels_last = last,
                .input = input,
                .weight_packed = packed,
                .bias = bias,
                .residual = last ? rl : res,
                .output = y,
                .epilogue = {.scale = 1.0f,
                             .activation = NXE_ACTIVATION_TANH,
                             .residual_before_activation = 1,
                             .bias_scale = 1.0f},
            };
            int64_t tiles = table->conv_gemm_tiles(&args), mid = tiles / 2 + 1;
            if (mid > tiles)
                mid = tiles;
            table->conv_gemm_run(&args, 0, mid);
            table->conv_gemm_run(&args, mid, tiles);
            const int64_t rows = g.batch * g.out_size[0] * g.out_size[1];
            nxe_ref_f32_conv_ncdhw(&g, x, w, bias, ref, 0, rows);
            nxe_ref_f32_conv_ncdhw(&g, xabs, wabs, NULL, mag, 0, rows);
            for (int64_t n = 0; n < g.batch; n++) {
                for (int64_t o = 0; o < g.out_channels; o++) {
                    for (int64_t p = 0; p < out_px; p++) {
                        size_t first = (size_t)((n * g.out_channels + o) * out_px + p);
                        size_t at = last ? (size_t)((n * out_px + p) * g.out_channels + o) : first;
                        double want = tanh((double)ref[first] + res[first]);
                        double tol = (bf16 ? 1.6e-2 : 1e-5) * (mag[first] + 1.0) + 1e-6;
                        CHECK(fabs(y[at] - want) <= tol,
                              "%s conv case %zu layout %s (n %lld, o %lld, pixel %lld): %g vs %g",
                              kernel->name, ci, last ? "last" : "first", (long long)n, (long long)o,
                              (long long)p, y[at], want);
                    }
                }
            }
            free(xl);
            free(wl);
            free(rl);
            free(packed);
            free(y);
            free(ref);
            free(mag);
            free(pairs);
        }
        free(x);
        free(w);
        free(bias);
        free(res);
        free(xabs);
        free(wabs);
    }
}

/* The Winograd F(4x4, 3x3) driver against the direct reference, both layouts, with tails
 * (sizes not multiples of 4, odd channel counts), padding 0, 1 and 2, several images and
 * blocks that span tile rows and images, with bias, residual and tanh. Tolerance: the bound of
 * kernels/gemm.h, (C + 20) u 861 sum |w| max |x| per output channel (max over the whole
 * input, which bounds each tile's), through the 1-Lipschitz tanh, plus tanh's own 4e-7 and
 * the reference's f32 rounding. */
static void test_winograd_driver(const nxe_kernel_table *table, const nxe_gemm_kernel *kernel)
{
    const conv_case cases[] = {
        {2, 1, 3, 5, 1, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 2, 17, 33, 1, {1, 7, 30}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
        {2, 1, 64, 20, 1, {1, 13, 50}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 3, 8, 9, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 1, 5, 7, 1, {1, 3, 6}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}},
        {2, 1, 300, 12, 1, {1, 6, 9}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const nxe_conv_geometry g = geometry_of(&cases[ci]);
        CHECK(nxe_winograd_applies(&g), "winograd case %zu does not apply", ci);
        const int64_t c_in = g.in_channels, c_out = g.out_channels;
        const int64_t in_px = g.in_size[1] * g.in_size[2], out_px = g.out_size[1] * g.out_size[2];
        const size_t in_n = (size_t)(g.batch * c_in * in_px),
                     out_n = (size_t)(g.batch * c_out * out_px);
        float *x = random_floats(in_n), *w = random_floats((size_t)(c_out * c_in * 9));
        float *bias = random_floats((size_t)c_out), *res = random_floats(out_n);
        float *ref = malloc(sizeof(float) * out_n);
        nxe_ref_f32_conv_ncdhw(&g, x, w, bias, ref, 0, g.batch * g.out_size[1]);
        /* A comparison, not fmax: GCC 12 for aarch64 fails (an internal compiler error) to
         * vectorize an fmax reduction over this loop at -O3. */
        double x_max = 0.0;
        for (size_t i = 0; i < in_n; i++)
            x_max = fabs(x[i]) > x_max ? fabs(x[i]) : x_max;
        for (int last = 0; last < 2; last++) {
            float *xl = malloc(sizeof(float) * in_n),
                  *wl = malloc(sizeof(float) * (size_t)(c_out * c_in * 9));
            float *rl = malloc(sizeof(float) * out_n), *y = malloc(sizeof(float) * out_n);
            for (int64_t n = 0; n < g.batch; n++)
                for (int64_t c = 0; c < c_in; c++)
                    for (int64_t p = 0; p < in_px; p++)
                        xl[(n * in_px + p) * c_in + c] = x[(n * c_in + c) * in_px + p];
            for (int64_t o = 0; o < c_out; o++)
                for (int64_t c = 0; c < c_in; c++)
                    for (int64_t t = 0; t < 9; t++)
                        wl[(o * 9 + t) * c_in + c] = w[(o * c_in + c) * 9 + t];
            for (int64_t n = 0; n < g.batch; n++)
                for (int64_t o = 0; o < c_out; o++)
                    for (int64_t p = 0; p < out_px; p++)
                        rl[(n * out_px + p) * c_out + o] = res[(n * c_out + o) * out_px + p];
            float *u = malloc(nxe_winograd_weight_bytes(&g));
            nxe_winograd_transform_weight(&g, last, last ? wl : w, u);
            nxe_winograd_args args = {
                .kernel = kernel,
                .geometry = &g,
                .channels_last = last,
                .tile_block = nxe_winograd_tile_block(kernel, &g),
                .input = last ? xl : x,
                .weight = u,
                .bias = bias,
                .residual = last ? rl : res,
                .output = y,
                .epilogue = {.scale = 1.0f,
                             .activation = NXE_ACTIVATION_TANH,
                             .residual_before_activation = 1,
                             .bias_scale = 1.0f},
            };
            /* Small blocks too, so that blocks span tile rows and images. */
            for (int small = 0; small < 2; small++) {
                if (small)
                    args.tile_block = kernel->nr / 2 + 1;
                void *scratch = aligned_alloc(
                    64, nxe_round_up((int64_t)nxe_winograd_scratch_bytes(&g, args.tile_block), 64));
                const int64_t blocks = table->winograd_blocks(&args), mid = blocks / 2;
                for (size_t i = 0; i < out_n; i++)
                    y[i] = NAN;
                table->winograd_run(&args, scratch, 0, mid);
                table->winograd_run(&args, scratch, mid, blocks);
                for (int64_t n = 0; n < g.batch; n++) {
                    for (int64_t o = 0; o < c_out; o++) {
                        double w_sum = 0.0;
                        for (int64_t k = 0; k < c_in * 9; k++)
                            w_sum += fabs(w[o * c_in * 9 + k]);
                        const double bound = (double)(c_in + 20) * 0x1p-24 * 861.0 * w_sum * x_max;
                        for (int64_t p = 0; p < out_px; p++) {
                            size_t first = (size_t)((n * c_out + o) * out_px + p);
                            size_t at = last ? (size_t)((n * out_px + p) * c_out + o) : first;
                            double want = tanh((double)ref[first] + res[first]);
                            double tol = bound + 4e-7 + 1e-6 * (fabs((double)ref[first]) + 1.0);
                            CHECK(fabs(y[at] - want) <= tol,
                                  "%s winograd case %zu layout %s block %lld (n %lld, o %lld, "
                                  "pixel %lld): %g vs %g",
                                  kernel->name, ci, last ? "last" : "first",
                                  (long long)args.tile_block, (long long)n, (long long)o,
                                  (long long)p, y[at], want);
                        }
                    }
                }
                free(scratch);
            }
            /* Tile ranges (depth-first runs compute a band of tile rows at a time, any range
             * in fact): the same tiles, bit for bit, as one whole run. */
            float *whole = malloc(sizeof(float) * out_n);
            args.tile_block = nxe_winograd_tile_block(kernel, &g);
            void *scratch = aligned_alloc(
                64, nxe_round_up((int64_t)nxe_winograd_scratch_bytes(&g, args.tile_block), 64));
            table->winograd_run(&args, scratch, 0, table->winograd_blocks(&args));
            memcpy(whole, y, sizeof(float) * out_n);
            const int64_t tiles = g.batch * ((g.out_size[1] + 3) / 4) * ((g.out_size[2] + 3) / 4);
            for (size_t i = 0; i < out_n; i++)
                y[i] = NAN;
            const int64_t cuts[4] = {0, tiles / 3, tiles / 3 + 1, tiles};
            for (int r = 0; r < 3; r++) {
                args.tile_begin = cuts[r];
                args.tile_end = cuts[r + 1];
                table->winograd_run(&args, scratch, 0, table->winograd_blocks(&args));
            }
            args.tile_begin = args.tile_end = 0;
            CHECK(memcmp(whole, y, sizeof(float) * out_n) == 0,
                  "%s winograd case %zu layout %s: tile ranges differ from one whole run",
                  kernel->name, ci, last ? "last" : "first");
            free(scratch);
            free(whole);
            free(xl);
            free(wl);
            free(rl);
            free(y);
            free(u);
        }
        free(x);
        free(w);
        free(bias);
        free(res);
        free(ref);
    }
}

/* The depthwise driver against the direct reference, both layouts, multipliers 1 and 2. */
static void test_depthwise(const nxe_kernel_table *table)
{
    const conv_case cases[] = {
        {2, 2, 6, 6, 6, {1, 9, 53}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}},
        {2, 1, 4, 8, 4, {1, 11, 20}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 2}},
        {2, 1, 5, 5, 5, {1, 12, 30}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 1}},
        {1, 1, 3, 3, 3, {1, 1, 40}, {1, 1, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 3}},
        {3, 1, 2, 4, 2, {3, 4, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const conv_case *cc = &cases[ci];
        const nxe_conv_geometry g = geometry_of(cc);
        CHECK(nxe_conv_is_depthwise(&g), "case %zu is not depthwise", ci);
        const int64_t in_px = g.in_size[0] * g.in_size[1] * g.in_size[2];
        const int64_t out_px = g.out_size[0] * g.out_size[1] * g.out_size[2];
        const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
        const size_t in_n = (size_t)(g.batch * g.in_channels * in_px);
        const size_t out_n = (size_t)(g.batch * g.out_channels * out_px);
        float *x = random_floats(in_n), *w = random_floats((size_t)(g.out_channels * taps));
        float *bias = random_floats((size_t)g.out_channels), *res = random_floats(out_n);
        float *ref = malloc(sizeof(float) * out_n), *y = malloc(sizeof(float) * out_n);
        float *xl = malloc(sizeof(float) * in_n), *rl = malloc(sizeof(float) * out_n);
        float *packed = malloc(sizeof(float) * (size_t)(g.out_channels * taps));
        const int64_t rows = g.batch * g.out_size[0] * g.out_size[1];
        nxe_ref_f32_conv_ncdhw(&g, x, w, bias, ref, 0, rows);
        for (int64_t n = 0; n < g.batch; n++) {
            for (int64_t c = 0; c < g.in_channels; c++)
                for (int64_t p = 0; p < in_px; p++)
                    xl[(n * in_px + p) * g.in_channels + c] =
                        x[(n * g.in_channels + c) * in_px + p];
            for (int64_t o = 0; o < g.out_channels; o++)
                for (int64_t p = 0; p < out_px; p++)
                    rl[(n * out_px + p) * g.out_channels + o] =
                        res[(n * g.out_channels + o) * out_px + p];
        }
        for (int last = 0; last < 2; last++) {
            nxe_depthwise_pack_weight(&g, last, w, packed);
            nxe_depthwise_args args = {
                .geometry = &g,
                .channels_last = last,
                .input = last ? xl : x,
                .weight = packed,
                .bias = bias,
                .residual = last ? rl : res,
                .output = y,
                .epilogue = {.scale = 1.0f, .activation = NXE_ACTIVATION_RELU, .bias_scale = 1.0f},
            };
            int64_t total = table->depthwise_rows(&args);
            table->depthwise_run(&args, 0, total / 3);
            table->depthwise_run(&args, total / 3, total);
            for (int64_t n = 0; n < g.batch; n++) {
                for (int64_t o = 0; o < g.out_channels; o++) {
                    for (int64_t p = 0; p < out_px; p++) {
                        size_t first = (size_t)((n * g.out_channels + o) * out_px + p);
                        size_t at = last ? (size_t)((n * out_px + p) * g.out_channels + o) : first;
                        double want = (ref[first] > 0 ? ref[first] : 0.0) + res[first];
                        CHECK(fabs(y[at] - want) <= 1e-5 * (fabs(want) + (double)taps),
                              "%s depthwise case %zu layout %s (o %lld, pixel %lld): %g vs %g",
                              table->name, ci, last ? "last" : "first", (long long)o, (long long)p,
                              y[at], want);
                    }
                }
            }
        }
        free(x);
        free(w);
        free(bias);
        free(res);
        free(ref);
        free(y);
        free(xl);
        free(rl);
        free(packed);
    }
}

/* The fused attention driver against its reference rows: one query row, block tails of query
 * rows and keys, additive and boolean masks with rows and blocks that have no key, causal
 * frontiers, soft-capping and grouped key/value heads; the tasks split in two calls. Keys are
 * K^T, as the driver takes them. */
static void test_attention_driver(const nxe_kernel_table *table, const nxe_gemm_kernel *kernel)
{
    typedef struct attention_case {
        int64_t heads, kv_heads, l, s, e, ev;
        int32_t mask; /* 0 none, 1 additive, 2 boolean */
        int32_t causal;
        int64_t offset;
        float softcap;
    } attention_case;
    const attention_case cases[] = {
        {2, 2, 1, 7, 5, 3, 0, 0, 0, 0.0f},      {1, 1, 48, 96, 8, 8, 0, 0, 0, 0.0f},
        {3, 3, 49, 97, 17, 9, 1, 0, 0, 0.0f},   {2, 1, 50, 200, 33, 49, 2, 0, 0, 0.0f},
        {4, 2, 70, 60, 12, 7, 0, 1, -5, 0.0f},  {2, 2, 100, 130, 8, 20, 1, 1, 30, 2.5f},
        {8, 2, 49, 97, 64, 64, 0, 1, 48, 0.0f},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const attention_case *c = &cases[ci];
        const size_t qn = (size_t)(c->heads * c->l * c->e), yn = (size_t)(c->heads * c->l * c->ev);
        const size_t kn = (size_t)(c->kv_heads * c->s * c->e);
        const size_t vn = (size_t)(c->kv_heads * c->s * c->ev), mn = (size_t)(c->l * c->s);
        float *q = random_floats(qn), *k = random_floats(kn), *v = random_floats(vn);
        float *mask = random_floats(mn), *ref = malloc(sizeof(float) * yn);
        float *y = malloc(sizeof(float) * yn);
        uint8_t *flags = malloc(mn);
        int64_t *kv_index = malloc(sizeof(int64_t) * (size_t)c->heads);
        int64_t *mask_offset = calloc((size_t)c->heads, sizeof(int64_t));
        for (size_t i = 0; i < mn; i++) {
            flags[i] = mask[i] > -0.4f;
            mask[i] = mask[i] < -0.8f ? -INFINITY : 2.0f * mask[i];
        }
        for (int64_t j = 0; j < c->s && c->l > 1; j++) { /* query row 1 sees no key */
            flags[c->s + j] = 0;
            mask[c->s + j] = -INFINITY;
        }
        for (int64_t i = 0; i < c->l && c->s > NXE_ATTENTION_BLOCK_N; i++) /* a block removed */
            for (int64_t j = NXE_ATTENTION_BLOCK_N; j < 2 * NXE_ATTENTION_BLOCK_N && j < c->s; j++)
                flags[i * c->s + j] = 0;
        for (int64_t h = 0; h < c->heads; h++) {
            kv_index[h] = h / (c->heads / c->kv_heads);
            for (int64_t l = 0; l < c->l; l++) {
                const int64_t frontier = l + c->offset + 1;
                nxe_f32_attention_row_args row = {
                    .keys = c->s,
                    .key_limit = c->causal ? (frontier < 0 ? 0 : frontier) : c->s,
                    .head_size = c->e,
                    .value_size = c->ev,
                    .scale = 0.3f,
                    .softcap = c->softcap,
                    .q = q + (h * c->l + l) * c->e,
                    .k = k + kv_index[h] * c->s * c->e,
                    .k_stride = 1,
                    .k_element_stride = c->s,
                    .v = v + kv_index[h] * c->s * c->ev,
                    .v_stride = c->ev,
                    .mask_f32 = c->mask == 1 ? mask + l * c->s : NULL,
                    .mask_bool = c->mask == 2 ? flags + l * c->s : NULL,
                    .mask_stride = 1,
                    .y = ref + (h * c->l + l) * c->ev,
                };
                nxe_ref_f32_attention_row(&row);
            }
        }
        nxe_f32_attention_args args = {
            .kernel = kernel,
            .heads = c->heads,
            .query_len = c->l,
            .keys = c->s,
            .head_size = c->e,
            .value_size = c->ev,
            .scale = 0.3f,
            .softcap = c->softcap,
            .causal = c->causal,
            .causal_offset = c->offset,
            .q = q,
            .k = k,
            .v = v,
            .mask_f32 = c->mask == 1 ? mask : NULL,
            .mask_bool = c->mask == 2 ? flags : NULL,
            .kv_index = kv_index,
            .mask_offset = mask_offset,
            .mask_stride_l = c->s,
            .mask_stride_s = 1,
            .y = y,
        };
        const size_t scratch_bytes =
            (size_t)nxe_round_up((int64_t)nxe_f32_attention_scratch_bytes(kernel, c->e), 64);
        void *scratch = aligned_alloc(64, scratch_bytes);
        const int64_t tasks = nxe_f32_attention_tasks(&args);
        table->f32_attention_run(&args, scratch, 0, tasks / 2);
        table->f32_attention_run(&args, scratch, tasks / 2, tasks);
        for (size_t i = 0; i < yn; i++)
            CHECK(fabs(y[i] - ref[i]) <= 1e-5 * (1.0 + fabs(ref[i])),
                  "%s attention case %zu (output %zu): %g vs %g", kernel->name, ci, i, y[i],
                  ref[i]);
        free(q);
        free(k);
        free(v);
        free(mask);
        free(ref);
        free(y);
        free(flags);
        free(kv_index);
        free(mask_offset);
        free(scratch);
    }
}

static uint8_t random_byte(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint8_t)(rng_state >> 56);
}

/* An 8-bit microkernel against the wrapping int32 sums its reference twin forms, over every
 * tile shape and ragged reductions, on random bytes and on the extremes where a u8 x s8 pair
 * sum leaves int16 (255 * -128 * 2, 255 * 127 * 2: an instruction that saturates there, such as
 * vpmaddubsw, fails this), and never writing outside the tile. */
static void test_q8_microkernel(const nxe_q8_gemm_kernel *kernel)
{
    const int64_t kcs[] = {1, 2, 3, 4, 5, 7, 8, 33, 256, 1001};
    const int32_t mr_max = kernel->mr, nr_max = kernel->nr;
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
        const int64_t kc = kcs[ki], k_padded = nxe_round_up(kc, 4);
        uint8_t *a = malloc((size_t)(k_padded * mr_max));
        int8_t *b = malloc((size_t)(k_padded * nr_max));
        for (int mode = 0; mode < 3; mode++) { /* random, 255 x -128, 255 x 127 */
            /* Element x of a panel W wide holds k = x / (4 W) * 4 + x % 4; past kc it is 0. */
            for (int64_t x = 0; x < k_padded * mr_max; x++)
                a[x] = x / (4 * mr_max) * 4 + x % 4 >= kc ? 0 : mode ? 255 : random_byte();
            for (int64_t x = 0; x < k_padded * nr_max; x++)
                b[x] = x / (4 * nr_max) * 4 + x % 4 >= kc ? 0
                       : mode == 1                        ? -128
                       : mode == 2                        ? 127
                                                          : (int8_t)random_byte();
            for (int32_t mr = 1; mr <= mr_max; mr++) {
                for (int32_t nr = 1; nr <= nr_max; nr += (nr < 17 ? 1 : 7)) {
                    const int64_t ldc = nr + 3;
                    int32_t *c = malloc(sizeof(int32_t) * (size_t)(mr_max * ldc));
                    for (int64_t x = 0; x < mr_max * ldc; x++)
                        c[x] = 0x5A5A5A5A;
                    kernel->run(mr, nr, kc, a, b, c, ldc);
                    for (int32_t i = 0; i < mr_max; i++) {
                        for (int32_t j = 0; j < ldc; j++) {
                            if (i >= mr || j >= nr) {
                                CHECK(c[i * ldc + j] == 0x5A5A5A5A,
                                      "%s wrote outside the tile at (%d, %d)", kernel->name, i, j);
                                continue;
                            }
                            uint32_t want = 0; /* wraps as the contract says */
                            for (int64_t kk = 0; kk < kc; kk++)
                                want +=
                                    (uint32_t)((int32_t)a[((kk / 4) * mr_max + i) * 4 + kk % 4] *
                                               (int32_t)b[((kk / 4) * nr_max + j) * 4 + kk % 4]);
                            CHECK(c[i * ldc + j] == (int32_t)want,
                                  "%s mode %d mr=%d nr=%d kc=%lld (%d,%d): %d vs %d", kernel->name,
                                  mode, mr, nr, (long long)kc, i, j, c[i * ldc + j], (int32_t)want);
                        }
                    }
                    free(c);
                }
            }
        }
        free(a);
        free(b);
    }
}

/* The 8-bit driver against nxe_ref_q8_gemm: the same bits, for every mix of signedness, zero
 * points (absent, per tensor, per row or column) and output (int32 or requantized). */
static void test_q8_gemm(const nxe_kernel_table *table, const nxe_q8_gemm_kernel *kernel)
{
    const int64_t shapes[][3] = {{1, 1, 1},     {5, 7, 3},    {9, 49, 17},   {17, 100, 64},
                                 {33, 96, 301}, {8, 48, 700}, {21, 50, 1027}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        for (int variant = 0; variant < 16; variant++) {
            const int a_signed = variant & 1, b_signed = (variant >> 1) & 1;
            const int zeros = (variant >> 2) & 1, requant = (variant >> 3) & 1;
            uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
            uint8_t *az = malloc((size_t)m), *bz = malloc((size_t)n);
            float *as = random_floats((size_t)m), *bs = random_floats((size_t)n);
            for (int64_t i = 0; i < m * k; i++)
                a[i] = random_byte();
            for (int64_t i = 0; i < k * n; i++)
                b[i] = random_byte();
            for (int64_t i = 0; i < m; i++)
                az[i] = random_byte();
            for (int64_t i = 0; i < n; i++)
                bz[i] = random_byte();
            /* Requantization's edges: a NaN multiplier (the zero point), an infinite one, and
             * products far past 2^52 (the clamps). */
            const float edges[] = {NAN, INFINITY, 1e30f};
            for (int64_t i = 0; i < n && i < 3; i++)
                bs[i] = edges[i];
            int8_t *packed = malloc(nxe_q8_packed_bytes(kernel, k, n) + 1);
            int32_t *sums = malloc(sizeof(int32_t) * (size_t)n);
            nxe_q8_ref bref = {b, b_signed};
            const int64_t panels = (n + kernel->nr - 1) / kernel->nr;
            nxe_q8_pack_b(kernel, bref, n, 1, k, n, 0, panels / 2, packed, sums);
            nxe_q8_pack_b(kernel, bref, n, 1, k, n, panels / 2, panels, packed, sums);
            int32_t *y = malloc(sizeof(int32_t) * (size_t)(m * n));
            int32_t *ref = malloc(sizeof(int32_t) * (size_t)(m * n));
            nxe_q8_output out = {
                .y_i32 = y, .y_signed = variant & 1, .y_scale = 0.05f, .y_zero_point = 3};
            nxe_q8_output ref_out = out;
            ref_out.y_i32 = ref;
            if (requant) {
                out.y_i32 = NULL;
                out.y_q8 = y;
                ref_out.y_i32 = NULL;
                ref_out.y_q8 = ref;
            }
            nxe_q8_packed_args args = {
                .kernel = kernel,
                .m = m,
                .n = n,
                .k = k,
                .a = {a, a_signed},
                .a_stride_m = k,
                .a_zero = {zeros ? az : NULL, a_signed},
                .a_zero_stride = (variant >> 1) & 1,
                .b_packed = packed,
                .b_col_sums = sums,
                .b_signed = b_signed,
                .b_zero = {zeros ? bz : NULL, b_signed},
                .b_zero_stride = variant & 1,
                .a_scale = as,
                .a_scale_stride = 1,
                .b_scale = bs,
                .b_scale_stride = (variant >> 2) & 1,
                .out = out,
            };
            nxe_q8_gemm_args r = {
                .m = m,
                .n = n,
                .k = k,
                .a = {a, a_signed},
                .a_stride_m = k,
                .b = {b, b_signed},
                .a_zero = {zeros ? az : NULL, a_signed},
                .a_zero_stride = (variant >> 1) & 1,
                .b_zero = {zeros ? bz : NULL, b_signed},
                .b_zero_stride = variant & 1,
                .a_scale = as,
                .a_scale_stride = 1,
                .b_scale = bs,
                .b_scale_stride = (variant >> 2) & 1,
                .out = ref_out,
            };
            memset(y, 0, sizeof(int32_t) * (size_t)(m * n));
            memset(ref, 0, sizeof(int32_t) * (size_t)(m * n));
            int64_t tiles = table->q8_gemm_tiles(&args);
            table->q8_gemm_run(&args, 0, tiles / 2);
            table->q8_gemm_run(&args, tiles / 2, tiles);
            nxe_ref_q8_gemm(&r, 0, m);
            CHECK(memcmp(y, ref, requant ? (size_t)(m * n) : sizeof(int32_t) * (size_t)(m * n)) ==
                      0,
                  "%s %lldx%lldx%lld variant %d differs from the reference", kernel->name,
                  (long long)m, (long long)n, (long long)k, variant);
            free(a);
            free(b);
            free(az);
            free(bz);
            free(as);
            free(bs);
            free(packed);
            free(sums);
            free(y);
            free(ref);
        }
    }
}

/* The thread pool under back-to-back loops of every size, as a model runs them: every item
 * of every loop runs exactly once, with workers spinning, sleeping and waking in between, and
 * no chunk is still running when parallel_for returns (a caller waits for every worker that
 * joined its loop; some chunks are made slow so that workers are caught inside them). */
typedef struct pool_probe {
    _Atomic int64_t *counts;
    _Atomic int inside; /* chunks running now */
    int slow;           /* every item sleeps a little */
    _Atomic int calls;  /* chunks run */
} pool_probe;

static void count_items(void *ctx, int64_t begin, int64_t end)
{
    pool_probe *probe = ctx;
    probe->inside++;
    probe->calls++;
    for (int64_t i = begin; i < end; i++) {
        probe->counts[i]++;
        if (probe->slow) {
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        }
    }
    probe->inside--;
}

/* The 8-bit driver's convolution mode (rows copied from the input staged channels last, the
 * weights packed in the staged order) against nxe_ref_q8_conv2d_nchw: the same bits over
 * padding, strides, dilations, groups, channel counts that are not whole 4-byte groups, more
 * pixels than one row block, signedness, per-channel weight zero points (and zero points that
 * cancel B's shift, where the driver skips A's row sums), rows transposed straight from the
 * staged input or assembled first, and both outputs, one product per
 * (image, group) as the op runs it, the staging split in two row ranges. */
static void test_q8_conv(const nxe_kernel_table *table, const nxe_q8_gemm_kernel *kernel)
{
    /* N, C, H, W, O, KH, KW, stride, dilation, pad, groups */
    const int64_t shapes[][11] = {
        {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},   {2, 8, 6, 5, 12, 3, 2, 2, 1, 0, 2},
        {1, 4, 9, 8, 50, 1, 1, 1, 1, 0, 1},  {1, 6, 11, 10, 9, 3, 3, 2, 2, 2, 3},
        {1, 16, 5, 5, 8, 5, 5, 1, 1, 2, 1},  {1, 5, 13, 11, 100, 3, 3, 1, 1, 1, 1},
        {1, 32, 9, 7, 64, 3, 3, 1, 1, 1, 1}, {2, 12, 8, 9, 6, 1, 3, 2, 1, 3, 1},
        {1, 8, 12, 12, 8, 3, 3, 1, 2, 2, 1}, {1, 8, 9, 17, 8, 3, 3, 2, 1, 1, 1},
        {1, 65, 6, 7, 20, 3, 3, 1, 1, 1, 1},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t *sh = shapes[si];
        nxe_q8_conv2d_geometry g = {.batch = sh[0],
                                    .in_channels = sh[1],
                                    .in_height = sh[2],
                                    .in_width = sh[3],
                                    .out_channels = sh[4],
                                    .kernel_height = sh[5],
                                    .kernel_width = sh[6],
                                    .stride_height = sh[7],
                                    .stride_width = sh[7],
                                    .dilation_height = sh[8],
                                    .dilation_width = sh[8],
                                    .pad_top = sh[9],
                                    .pad_left = sh[9],
                                    .groups = sh[10]};
        g.out_height = (g.in_height + 2 * sh[9] - (g.kernel_height - 1) * sh[8] - 1) / sh[7] + 1;
        g.out_width = (g.in_width + 2 * sh[9] - (g.kernel_width - 1) * sh[8] - 1) / sh[7] + 1;
        const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
        const int64_t red = group_in * g.kernel_height * g.kernel_width;
        const int64_t pixels = g.out_height * g.out_width;
        const int64_t x_count = g.batch * g.in_channels * g.in_height * g.in_width;
        const int64_t y_count = g.batch * g.out_channels * pixels;
        for (int variant = 0; variant < 16; variant++) {
            const int x_signed = variant & 1, w_signed = (variant >> 1) & 1;
            const int requant = (variant >> 2) & 1, symmetric = (variant >> 3) & 1;
            uint8_t *x = malloc((size_t)x_count), *w = malloc((size_t)(g.out_channels * red));
            uint8_t xz = random_byte(), *wz = malloc((size_t)g.out_channels);
            int32_t *bias = malloc(sizeof(int32_t) * (size_t)g.out_channels);
            float xs = 0.02f, *ws = random_floats((size_t)g.out_channels);
            for (int64_t i = 0; i < x_count; i++)
                x[i] = random_byte();
            for (int64_t i = 0; i < g.out_channels * red; i++)
                w[i] = random_byte();
            for (int64_t i = 0; i < g.out_channels; i++) {
                /* symmetric: the zero point the packing's shift cancels (0 for s8, 128 for u8) */
                wz[i] = symmetric ? (uint8_t)(w_signed ? 0 : 128) : random_byte();
                bias[i] = (int32_t)(random_byte() * 37) - 4000;
                ws[i] = fabsf(ws[i]) + 0.01f;
            }
            int32_t *y = malloc(sizeof(int32_t) * (size_t)y_count);
            int32_t *ref = malloc(sizeof(int32_t) * (size_t)y_count);
            memset(y, 0, sizeof(int32_t) * (size_t)y_count);
            memset(ref, 0, sizeof(int32_t) * (size_t)y_count);
            const size_t packed_bytes = nxe_q8_packed_bytes(kernel, red, group_out);
            int8_t *packed = malloc(packed_bytes * (size_t)g.groups);
            int32_t *sums = malloc(sizeof(int32_t) * (size_t)g.out_channels);
            for (int64_t group = 0; group < g.groups; group++)
                nxe_q8_pack_conv_b(kernel, &g, (nxe_q8_ref){w + group * group_out * red, w_signed},
                                   packed + group * packed_bytes, sums + group * group_out);
            const size_t stage_bytes = nxe_q8_conv_stage_bytes(&g);
            const int64_t stage_rows = nxe_q8_conv_stage_height(&g);
            uint8_t *staged = malloc(stage_bytes * (size_t)(g.batch * g.groups));
            const nxe_q8_output out = {.y_signed = x_signed, .y_scale = 0.7f, .y_zero_point = 5};
            nxe_q8_conv2d_args r = {.geometry = g,
                                    .x = {x, x_signed},
                                    .w = {w, w_signed},
                                    .x_zero = {&xz, x_signed},
                                    .w_zero = {wz, w_signed},
                                    .w_zero_stride = 1,
                                    .x_scale = &xs,
                                    .w_scale = ws,
                                    .w_scale_stride = 1,
                                    .bias = bias,
                                    .out = out};
            if (requant)
                r.out.y_q8 = ref;
            else
                r.out.y_i32 = ref;
            nxe_ref_q8_conv2d_nchw(&r, 0, g.batch * g.out_height);
            for (int64_t product = 0; product < g.batch * g.groups; product++) {
                const int64_t image = product / g.groups, group = product % g.groups;
                const int64_t channel = group * group_out;
                const int64_t y_offset = (image * g.out_channels + channel) * pixels;
                uint8_t *stage = staged + product * stage_bytes;
                const nxe_q8_ref input = {x + (image * g.in_channels + group * group_in) *
                                                  g.in_height * g.in_width,
                                          x_signed};
                nxe_q8_conv_stage(&g, input, (nxe_q8_ref){&xz, x_signed}, 0, stage_rows / 2, stage);
                nxe_q8_conv_stage(&g, input, (nxe_q8_ref){&xz, x_signed}, stage_rows / 2,
                                  stage_rows, stage);
                nxe_q8_packed_args args = {
                    .kernel = kernel,
                    .m = pixels,
                    .n = group_out,
                    .k = red,
                    .a = {stage, x_signed},
                    .a_zero = {&xz, x_signed},
                    .b_packed = packed + group * packed_bytes,
                    .b_col_sums = sums + channel,
                    .b_signed = w_signed,
                    .b_zero = {wz + channel, w_signed},
                    .b_zero_stride = 1,
                    .a_scale = &xs,
                    .b_scale = ws + channel,
                    .b_scale_stride = 1,
                    .out = out,
                    .bias = bias + channel,
                    .y_column_stride = pixels,
                    .conv = &g,
                };
                if (requant)
                    args.out.y_q8 = (uint8_t *)y + y_offset;
                else
                    args.out.y_i32 = y + y_offset;
                const int64_t tiles = table->q8_gemm_tiles(&args);
                table->q8_gemm_run(&args, 0, tiles / 2);
                table->q8_gemm_run(&args, tiles / 2, tiles);
            }
            const size_t bytes = requant ? (size_t)y_count : sizeof(int32_t) * (size_t)y_count;
            CHECK(memcmp(y, ref, bytes) == 0, "%s conv shape %zu variant %d differs", kernel->name,
                  si, variant);
            free(x);
            free(w);
            free(wz);
            free(bias);
            free(ws);
            free(y);
            free(ref);
            free(packed);
            free(sums);
            free(staged);
        }
    }
}

static void test_thread_pool(void)
{
    for (int32_t threads = 1; threads <= 3; threads++) {
        nxe_thread_pool *pool = NULL;
        CHECK(nxe_thread_pool_create(threads, &pool) == NXE_OK, "pool of %d", threads);
        enum { MAX_N = 257 };
        _Atomic int64_t counts[MAX_N];
        for (int round = 0; round < 3000; round++) {
            pool_probe probe = {counts, 0, round % 50 == 7, 0};
            const int64_t n = probe.slow ? 1 + round % 16 : 1 + round % MAX_N;
            const int64_t grain = 1 + round % 3;
            for (int64_t i = 0; i < n; i++)
                counts[i] = 0;
            nxe_parallel_for(pool, n, grain, count_items, &probe);
            CHECK(probe.inside == 0, "%d threads, round %d: %d chunks still running after the loop",
                  threads, round, (int)probe.inside);
            /* Under two grains: one inline call. From two grains on, with workers: chunks. */
            CHECK(n < 2 * grain ? probe.calls == 1 : threads == 1 || probe.calls >= 2,
                  "%d threads, n %lld, grain %lld: %d chunks", threads, (long long)n,
                  (long long)grain, (int)probe.calls);
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; i++)
                wrong += counts[i] != 1;
            CHECK(wrong == 0, "%d threads, round %d: %lld items not run exactly once", threads,
                  round, (long long)wrong);
            if (round % 500 == 499) { /* long enough idle for the workers to fall asleep */
                struct timespec pause = {0, 2000000};
                nanosleep(&pause, NULL);
            }
        }
        nxe_thread_pool_release(pool);
    }
}

/* The 32-bit depth-to-space against the reference, both modes, blocks 2 and 3. */
static void test_depth_to_space(const nxe_kernel_table *table)
{
    for (int crd = 0; crd < 2; crd++) {
        for (int64_t block = 2; block <= 3; block++) {
            nxe_depth_to_space_geometry g = {2, 3 * block * block, 5, 7, block, 0, crd};
            const size_t count = (size_t)(g.batch * g.in_channels * g.in_height * g.in_width);
            uint32_t *in = malloc(sizeof(uint32_t) * count);
            uint32_t *got = malloc(sizeof(uint32_t) * count),
                     *want = malloc(sizeof(uint32_t) * count);
            for (size_t i = 0; i < count; i++)
                in[i] = (uint32_t)(i * 2654435761u);
            const int64_t rows = g.batch * g.in_height * block;
            nxe_ref_xN_depth_to_space(&g, sizeof(uint32_t), in, want, 0, rows);
            table->x32_depth_to_space(&g, in, got, 0, rows / 2);
            table->x32_depth_to_space(&g, in, got, rows / 2, rows);
            CHECK(memcmp(got, want, sizeof(uint32_t) * count) == 0,
                  "%s depth_to_space block %lld crd %d", table->name, (long long)block, crd);
            free(in);
            free(got);
            free(want);
        }
    }
}

/* ---- how dispatch chooses microkernels ---- */

static int permission_requests;
static int permission_answer;

static int answer_permission_request(void)
{
    permission_requests++;
    return permission_answer;
}

/* A kernel that needs AMX tiles is taken, and the OS asked for the permission, only when the
 * level and the features select it; a refusal falls back to the next kernel, and the OS is
 * asked once whatever the number of such kernels. Then this build's lists: their AMX kernels
 * make the OS be asked once at the amx level, and this process asks only if it runs at amx.
 * Descriptors are stand-ins: only their names and types are read. */
static void test_choice_and_tile_permission(void)
{
    static const nxe_gemm_kernel f32 = {.name = "f32", .type = NXE_GEMM_F32};
    static const nxe_gemm_kernel f32_tiles = {.name = "f32 tiles", .type = NXE_GEMM_F32};
    static const nxe_gemm_kernel bf16_tiles = {.name = "bf16 tiles", .type = NXE_GEMM_BF16};
    const uint64_t tiles = NXE_CPU_FEATURE_AMX_TILE | NXE_CPU_FEATURE_AMX_BF16;
    const nxe_ukernel_entry entries[] = {
        {.level = NXE_ISA_LEVEL_AVX512, .gemm = &f32},
        {.level = NXE_ISA_LEVEL_AMX, .features = tiles, .gemm = &f32_tiles},
        {.level = NXE_ISA_LEVEL_AMX, .features = tiles, .gemm = &bf16_tiles},
    };
    const struct {
        nxe_isa_level level;
        uint64_t features;
        int answer;
        const nxe_gemm_kernel *f32, *bf16;
        int requests;
    } cases[] = {
        {NXE_ISA_LEVEL_AVX512, tiles, 0, &f32, NULL, 0},           /* capped below amx */
        {NXE_ISA_LEVEL_AMX, 0, 0, &f32, NULL, 0},                  /* no tile features */
        {NXE_ISA_LEVEL_AMX, tiles, 0, &f32_tiles, &bf16_tiles, 1}, /* granted: asked once */
        {NXE_ISA_LEVEL_AMX, tiles, 1, &f32, NULL, 1},              /* refused (EPERM) */
        {NXE_ISA_LEVEL_SCALAR, tiles, 0, NULL, NULL, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        nxe_kernel_table table = {.level = cases[c].level};
        bool asked;
        int refusal;
        permission_requests = 0;
        permission_answer = cases[c].answer;
        nxe_choose_ukernels(entries, 3, cases[c].level, cases[c].features,
                            answer_permission_request, &table, &asked, &refusal);
        CHECK(table.f32_gemm_kernel == cases[c].f32 && table.bf16_gemm_kernel == cases[c].bf16,
              "choice case %zu: f32 %s, bf16 %s", c,
              table.f32_gemm_kernel ? table.f32_gemm_kernel->name : "none",
              table.bf16_gemm_kernel ? table.bf16_gemm_kernel->name : "none");
        CHECK(permission_requests == cases[c].requests && asked == (cases[c].requests > 0) &&
                  refusal == (cases[c].requests ? cases[c].answer : 0),
              "choice case %zu: %d permission requests, asked %d, refusal %d", c,
              permission_requests, (int)asked, refusal);
    }
    int32_t count;
    const nxe_ukernel_entry *real = nxe_ukernel_entries(&count);
    int tile_kernels = 0;
    for (int32_t i = 0; i < count; i++)
        tile_kernels += (real[i].features & NXE_CPU_FEATURE_AMX_TILE) != 0;
    for (int level = NXE_ISA_LEVEL_AVX512; level <= NXE_ISA_LEVEL_AMX; level++) {
        nxe_kernel_table table = {.level = (nxe_isa_level)level};
        bool asked;
        int refusal;
        permission_requests = 0;
        permission_answer = 0;
        nxe_choose_ukernels(real, count, (nxe_isa_level)level, ~(uint64_t)0,
                            answer_permission_request, &table, &asked, &refusal);
        const bool wanted = level == NXE_ISA_LEVEL_AMX && tile_kernels > 0;
        const nxe_gemm_kernel *bf16 = table.bf16_gemm_kernel;
        const nxe_q8_gemm_kernel *q8 = table.q8_gemm_kernel;
        CHECK(permission_requests == (wanted ? 1 : 0) && asked == wanted,
              "this build's kernels at %s: %d permission requests", nxe_isa_level_name(level),
              permission_requests);
        CHECK(!wanted || (bf16 && strcmp(bf16->name, "bf16-gemm-16x48-amx") == 0 && q8 &&
                          strcmp(q8->name, "u8s8-gemm-16x48-amx") == 0),
              "this build's kernels at amx with the permission: bf16 %s, int8 %s",
              bf16 ? bf16->name : "none", q8 ? q8->name : "none");
    }
    const nxe_cpu_detection *d = nxe_cpu_detect();
    CHECK(d->tile_permission_asked == (d->level == NXE_ISA_LEVEL_AMX && tile_kernels > 0),
          "this process at %s asked for AMX tiles: %d", nxe_isa_level_name(d->level),
          (int)d->tile_permission_asked);
}

/* ---- the sweep ---- */

static int skipped;

/* Whether a row or microkernel runs in this process; prints why not. */
static bool runs_here(const char *name, const nxe_ukernel_entry *entry)
{
    const nxe_cpu_detection *d = nxe_cpu_detect();
    char why[160];
    bool runs = nxe_ukernel_runnable(entry, d->level, d->features, why, sizeof why);
    if (runs && (entry->features & NXE_CPU_FEATURE_AMX_TILE) && !d->tiles_granted) {
        snprintf(why, sizeof why, "the OS did not grant the AMX tile-data permission");
        runs = false;
    }
    if (runs)
        return true;
    printf("%-28s SKIPPED: %s\n", name, why);
    skipped++;
    return false;
}

/* The row a microkernel of `entry` runs in: the scalar-level portable copy for the reference
 * microkernels, else the dispatch row of its level. */
static const nxe_kernel_table *row_of(const nxe_ukernel_entry *entry, bool reference)
{
    int32_t count;
    const nxe_kernel_table *rows = nxe_kernel_rows(&count);
    if (reference)
        return nxe_scalar_portable_row();
    for (int32_t r = 0; r < count; r++)
        if (rows[r].level == entry->level)
            return &rows[r];
    return NULL;
}

static void test_microkernels(const nxe_ukernel_entry *entries, int32_t count, bool reference)
{
    for (int32_t i = 0; i < count; i++) {
        const nxe_ukernel_entry *e = &entries[i];
        const char *name = e->gemm ? e->gemm->name : e->q8->name;
        const nxe_kernel_table *row = row_of(e, reference);
        CHECK(row != NULL, "%s has no dispatch row", name);
        if (!row || !runs_here(name, e))
            continue;
        int before = failures;
        if (e->gemm) {
            test_microkernel(e->gemm);
            if (e->gemm->run_panel) {
                test_panel_microkernel(e->gemm);
                test_gemm_small_m(row, e->gemm);
            }
            test_gemm_driver(row, e->gemm);
            test_conv_driver(row, e->gemm);
            if (e->gemm->type == NXE_GEMM_F32)
                test_winograd_driver(row, e->gemm);
            if (e->gemm->type == NXE_GEMM_F32 && e->gemm->run_rows)
                test_attention_driver(row, e->gemm);
        } else {
            test_q8_microkernel(e->q8);
            test_q8_gemm(row, e->q8);
            test_q8_conv(row, e->q8);
        }
        printf("%-28s %s\n", name, failures == before ? "ok" : "FAILED");
    }
}

static void test_row(const nxe_kernel_table *row, const char *label)
{
    const nxe_ukernel_entry needs = {.level = row->level};
    if (!runs_here(label, &needs))
        return;
    int before = failures;
    test_activations(row);
    test_epilogue(row);
    test_depthwise(row);
    test_depth_to_space(row);
    printf("%-28s %s\n", label,
           failures == before ? "activations, epilogue, depthwise, depth-to-space ok"
                              : "activations, epilogue, depthwise, depth-to-space FAILED");
}

int main(void)
{
    test_thread_pool();
    printf("%-28s %s\n", "thread pool", failures ? "FAILED" : "ok");
    int before = failures;
    test_choice_and_tile_permission();
    printf("%-28s %s\n", "kernel choice", failures == before ? "ok" : "FAILED");
    const nxe_cpu_detection *d = nxe_cpu_detect();
    printf("this process runs %s: %s\n", nxe_isa_level_name(d->level), d->reason);

    int32_t count;
    const nxe_ukernel_entry *reference = nxe_ref_ukernel_entries(&count);
    test_microkernels(reference, count, true);
    const nxe_ukernel_entry *amx_emulated = nxe_amx_emulated_entries(&count);
    test_microkernels(amx_emulated, count, true);
    const nxe_ukernel_entry *twin = nxe_avxvnni_twin_entries(&count);
    test_microkernels(twin, count, false);
    const nxe_ukernel_entry *entries = nxe_ukernel_entries(&count);
    test_microkernels(entries, count, false);

    test_row(nxe_scalar_portable_row(), "portable at scalar");
    const nxe_kernel_table *rows = nxe_kernel_rows(&count);
    for (int32_t r = 0; r < count; r++)
        if (rows[r].f32_activation) /* the scalar row runs the reference kernels */
            test_row(&rows[r], rows[r].name);
    printf("%d checks, %d failures, %d skipped\n", checks, failures, skipped);
    return failures ? 1 : 0;
}
