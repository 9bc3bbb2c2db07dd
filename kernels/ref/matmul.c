/* matmul.c — reference GEMM. Two loop orders, picked by the strides of b only, so a given
 * element is always computed by the same sequence of operations. */
#include "ref/matmul.h"

void nxe_ref_f32_gemm(const nxe_f32_gemm_args *args, int64_t row_begin, int64_t row_end)
{
    const nxe_f32_gemm_args p = *args;
    for (int64_t i = row_begin; i < row_end; i++) {
        float *y_row = p.y + i * p.y_stride_m;
        if (p.k == 0) {
            /* An empty product: a and b may hold no elements at all, so are not touched. */
            for (int64_t j = 0; j < p.n; j++) {
                y_row[j] = 0.0f;
            }
        } else if (p.b_stride_n == 1) {
            /* Rows of b are contiguous: accumulate whole rows of y, walking b row by row. */
            const float *a_row = p.a + i * p.a_stride_m;
            for (int64_t j = 0; j < p.n; j++) {
                y_row[j] = 0.0f;
            }
            for (int64_t kk = 0; kk < p.k; kk++) {
                const float a_value = a_row[kk * p.a_stride_k];
                const float *b_row = p.b + kk * p.b_stride_k;
                for (int64_t j = 0; j < p.n; j++) {
                    y_row[j] += a_value * b_row[j];
                }
            }
        } else {
            const float *a_row = p.a + i * p.a_stride_m;
            for (int64_t j = 0; j < p.n; j++) {
                const float *b_column = p.b + j * p.b_stride_n;
                float acc = 0.0f;
                for (int64_t kk = 0; kk < p.k; kk++) {
                    acc += a_row[kk * p.a_stride_k] * b_column[kk * p.b_stride_k];
                }
                y_row[j] = acc;
            }
        }
        if (p.c != NULL) {
            const float *c_row = p.c + i * p.c_stride_m;
            for (int64_t j = 0; j < p.n; j++) {
                y_row[j] = p.alpha * y_row[j] + p.beta * c_row[j * p.c_stride_n];
            }
        } else if (p.alpha != 1.0f) {
            for (int64_t j = 0; j < p.n; j++) {
                y_row[j] = p.alpha * y_row[j];
            }
        }
    }
}
